#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Fleet scale: one connection per holder and per waiter, so
# that holders up to the server's maxclients all survive renewal and a
# full server refuses new commands (69) instead of killing running ones;
# nothing left forever per name; fences that still strictly increase
# although their counter expires (redlock(1), "Running a command under the lock"); scripts by SHA with a
# fallback that a SCRIPT FLUSH cannot turn into a false loss.
#
# The server "main" listens on TCP with a small maxclients, so that the
# connections of each holder can be told apart (by client port and the
# owning process); FLEET_MAX is that maxclients.

load helpers

FLEET_MAX=30

lifecycle main --tcp --maxclients "$FLEET_MAX"
test_setup() {
	REDLOCK_URL="redis://127.0.0.1:$(redis_port main)"
	export REDLOCK_URL
}

# session_conns PORT SID...: for each session SID (bg_start gives every
# job a session of its own: redlock, its guard and its command), the
# number of established TCP connections to 127.0.0.1:PORT held by its
# processes, one number a line.  A socket shared by two processes of
# the session is one connection.
session_conns() {
	/usr/bin/python3 - "$@" <<'EOF'
import os, sys
port, sids = int(sys.argv[1]), sys.argv[2:]
want = {}                       # socket inode -> connected to port
for f in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        lines = open(f).read().splitlines()[1:]
    except OSError:
        continue
    for l in lines:
        x = l.split()
        rport = int(x[2].rsplit(":", 1)[1], 16)
        if rport == port and x[3] == "01":
            want[x[9]] = 1
per = {s: set() for s in sids}
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        st = open("/proc/%s/stat" % p).read()
        sid = st.rsplit(")", 1)[1].split()[3]
        if sid not in per:
            continue
        for fd in os.listdir("/proc/%s/fd" % p):
            t = os.readlink("/proc/%s/fd/%s" % (p, fd))
            if t.startswith("socket:[") and t[8:-1] in want:
                per[sid].add(t[8:-1])
    except OSError:
        continue
for s in sids:
    print(len(per[s]))
EOF
}

# cmdstat COMMAND [STATS]: how many times the server ran COMMAND (0 if
# never), from STATS (an INFO commandstats reply) or asked now.  (The
# INFO that asks is not counted in its own reply.)
cmdstat() {
	local s=${2:-$(rcli INFO commandstats)}
	s=$(tr -d '\r' <<<"$s" | sed -n "s/^cmdstat_$1:calls=\([0-9]*\),.*/\1/p")
	echo "${s:-0}"
}

# redlock_keys: every key on the server, one a line, as Python shows
# bytes (auxiliary keys contain a NUL byte), with its PTTL in ms.
redlock_keys() {
	SNAP_SOCK=$REDIS_SOCK /usr/bin/python3 - <<'EOF'
import os, redis
r = redis.Redis(unix_socket_path=os.environ["SNAP_SOCK"])
for k in sorted(r.scan_iter(count=1000)):
    print(repr(k), r.pttl(k))
EOF
}

# raw_key COMMAND NAME SUFFIX [ARG...]: run COMMAND on the auxiliary key
# {redlock:NAME}\0SUFFIX (which redis-cli cannot spell) and print the reply.
raw_key() {
	SNAP_SOCK=$REDIS_SOCK /usr/bin/python3 - "$@" <<'EOF'
import os, sys, redis
r = redis.Redis(unix_socket_path=os.environ["SNAP_SOCK"])
cmd, name, suffix = sys.argv[1:4]
key = b"{redlock:" + name.encode() + b"}\0" + suffix.encode()
x = r.execute_command(cmd, key, *sys.argv[4:])
print(int(x) if isinstance(x, bool) else x)
EOF
}

# fence_of [OPTION...] NAME: acquire NAME, print "FENCE TOKEN".
fence_of() {
	local vars
	vars=$(redlock acquire --env "$@") || return 1
	(
		eval "$vars"
		echo "$REDLOCK_FENCE $REDLOCK_TOKEN"
	)
}

# server_us: the current server's clock in microseconds.
server_us() {
	local s us
	{ read -r s && read -r us; } < <(rcli TIME)
	echo $((s * 1000000 + us))
}

# fill_server TAG: open connections to the current server until it
# refuses one (maxclients), and keep them until unfill_server TAG.
fill_server() {
	local d=$BATS_TEST_TMPDIR
	rm -f "$d/$1.full" "$d/$1.stop"
	bg_start "$1" /usr/bin/python3 -c '
import os, socket, sys, time
port, full, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3]
keep = []
for i in range(1000):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"PING\r\n")
    if not s.recv(100).startswith(b"+PONG"):
        s.close()
        break
    keep.append(s)
open(full, "w").write("%d\n" % len(keep))
for i in range(1200):
    if os.path.exists(stop):
        break
    time.sleep(0.05)
' "$(redis_port main)" "$d/$1.full" "$d/$1.stop"
	wait_for_file "$d/$1.full" 20
}

unfill_server() {
	: >"$BATS_TEST_TMPDIR/$1.stop"
	bg_wait "$1" 20
}

# connections_ok N SID...: every session holds exactly one connection,
# and the server counts N clients in all.
connections_ok() {
	local want=$1 c n=0
	shift
	while read -r c; do
		n=$((n + 1))
		[[ $c == 1 ]] || {
			echo "a holder has $c connections" >&2
			return 1
		}
	done < <(session_conns "$(redis_port main)" "$@")
	[[ $n == "$#" ]] || return 1
	c=$(clients_count)
	[[ $c == "$want" ]] || {
		echo "the server counts $c clients, not $want" >&2
		return 1
	}
}

@test "maxclients - 10 holders of distinct names renew on one connection each and exit with their command's status" {
	local n=$((FLEET_MAX - 10)) i d=$BATS_TEST_TMPDIR base rounds=0
	local -a sids=()
	for ((i = 0; i < n; i++)); do
		bg_start "h$i" "$RL" -t 1s "fleet-$i" sh -c \
			': >"$1"; sleep 3; . "$TESTS_DIR/lib/await.sh"
			await_file "$2"
			exit 7' holder "$d/h$i.held" "$d/go"
		sids+=("$BG_PID")
	done
	for ((i = 0; i < n; i++)); do
		wait_for_file "$d/h$i.held" 20
	done
	# Until every holder has renewed three times (a renewal every
	# 333 ms): each holds one connection, and the server sees those
	# and ours (redis-cli) only.
	base=$(cmdstat evalsha)
	for ((i = 0; i < 400; i++)); do
		connections_ok $((n + 1)) "${sids[@]}" || fail "round $i"
		(($(cmdstat evalsha) - base >= 3 * n)) && break
		sleep 0.05
	done
	(($(cmdstat evalsha) - base >= 3 * n)) || fail "fewer than $((3 * n)) renewals"
	: >"$d/go"
	for ((i = 0; i < n; i++)); do
		bg_wait "h$i" 20
		[[ $BG_STATUS == 7 ]] || fail "holder $i exited $BG_STATUS: $(bg_err "h$i")"
		[[ -z $(bg_err "h$i") ]] || fail "holder $i said: $(bg_err "h$i")"
	done
	run -0 rcli --scan --pattern 'redlock:fleet-*'
	assert_output ''
}

waiter_blocked() { rcli CLIENT LIST | grep -q 'cmd=blpop'; }
waiter_conns_not_one() {
	[[ $(session_conns "$(redis_port main)" "$WAITER") != 1 ]]
}

@test "a waiter holds one connection while it waits" {
	hold_lock h busy
	bg_start w "$RL" busy sh -c 'exit 5'
	WAITER=$BG_PID
	wait_until waiter_blocked
	# The waiter blocks in BLPOP, wakes by its poll interval and tries
	# again, all on the connection it has: never more, never none.
	assert stays_false -t 1.5 waiter_conns_not_one
	release_lock h
	assert_equal "$BG_STATUS" 0
	bg_wait w 10
	assert_equal "$BG_STATUS" 5
}

@test "a holder keeps its lock on its one connection while the server refuses new ones" {
	local d=$BATS_TEST_TMPDIR
	bg_start h "$RL" -t 1s full sh -c ': >"$1"; . "$TESTS_DIR/lib/await.sh"
		await_file "$2"
		exit 7' holder "$d/h.held" "$d/h.go"
	local h=$BG_PID
	wait_for_file "$d/h.held" 20
	fill_server fill
	# Over two TTLs, six renewals: a renewal that needed a connection of
	# its own would be refused and the command stopped.
	assert stays_false -t 2 pid_dead "$h"
	: >"$d/h.go"
	bg_wait h 20
	assert_equal "$BG_STATUS" 7
	assert_equal "$(bg_err h)" ''
	unfill_server fill
	# The release went out on the same connection.
	assert key_absent redlock:full
}

@test "with the server refusing connections a command is refused with 69 and never started" {
	fill_server fill
	run -69 --separate-stderr redlock next touch "$BATS_TEST_TMPDIR/ran"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	assert_equal "$output" ''
	assert_regex "$stderr" '^redlock: .*max number of clients'
	run -69 redlock -w 1h next touch "$BATS_TEST_TMPDIR/ran"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	unfill_server fill
	run -0 redlock next touch "$BATS_TEST_TMPDIR/ran"
	assert [ -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "released names leave no lock or holder key, and every key left expires within a minute" {
	local i tok n=40
	for ((i = 0; i < n; i++)); do
		redlock "item-$i" true || fail "run $i"
	done
	tok=$(redlock acquire verb)
	redlock release verb "$tok"
	redlock acquire -t 200ms expired >/dev/null
	# (Every counter expires 50 s after it was seeded, whatever became
	# of the lock.)
	redlock acquire -t 1s broken >/dev/null
	redlock break broken 2>/dev/null
	redlock --min-hold 200ms held true
	wait_for_no_key redlock:expired
	wait_for_no_key redlock:held
	# A lock that expired leaves its holder's record for at most one
	# more TTL (the record outlives the lock: see proto.c).
	wait_until -t 10 eval '[[ $(raw_key EXISTS expired holder) == 0 ]]'
	run -0 redlock_keys
	local fences=0 k t
	while read -r k t; do
		case $k in
		*'\x00fence'\')
			fences=$((fences + 1))
			[[ $t -gt 0 && $t -le 50000 ]] || fail "$k: PTTL $t" ;;
		*'\x00wake'\')
			[[ $t -gt 0 && $t -le 10000 ]] || fail "$k: PTTL $t" ;;
		*) fail "key left behind: $k (PTTL $t)" ;;
		esac
	done <<<"$output"
	# Every name's counter is still there for its linger (and no more).
	assert_equal "$fences" $((n + 4))
}

@test "fences strictly increase across release, expiry, counter expiry and a restart without persistence" {
	start_redis again
	use_redis again
	local f=() tok x t0
	read -r x tok < <(fence_of -t 1m f) && f+=("$x")
	redlock release f "$tok"
	read -r x tok < <(fence_of -t 200ms f) && f+=("$x")
	wait_for_no_key redlock:f
	# The counter expires while the lock is held, then after release.
	read -r x tok < <(fence_of -t 1m f) && f+=("$x")
	assert_equal "$(raw_key PEXPIRE f fence 1)" 1
	wait_until eval '[[ $(raw_key EXISTS f fence) == 0 ]]'
	redlock release f "$tok"
	read -r x tok < <(fence_of -t 1m f) && f+=("$x")
	redlock release f "$tok"
	assert_equal "$(raw_key PEXPIRE f fence 1)" 1
	wait_until eval '[[ $(raw_key EXISTS f fence) == 0 ]]'
	# A reseeded counter starts from the server clock (µs).
	t0=$(server_us)
	read -r x tok < <(fence_of -t 1m f) && f+=("$x")
	assert [ "$x" -gt "$t0" ]
	redlock release f "$tok"
	assert_equal "$(raw_key DEL f fence)" 1
	read -r x tok < <(fence_of -t 1m f) && f+=("$x")
	redlock release f "$tok"
	stop_redis again
	start_redis again
	read -r x tok < <(fence_of -t 1m f) && f+=("$x")
	assert_equal "${#f[@]}" 7
	for ((x = 1; x < ${#f[@]}; x++)); do
		((f[x] > f[x - 1])) || fail "fence ${f[x]} after ${f[x - 1]} (all: ${f[*]})"
	done
	stop_redis again
}

@test "a run sends its scripts by SHA and asks no INFO" {
	run -0 redlock warm true
	rcli CONFIG RESETSTAT >/dev/null
	run -0 redlock -t 1s warm true
	local s
	s=$(rcli INFO commandstats)
	assert_equal "$(cmdstat evalsha "$s")" 2
	assert_equal "$(cmdstat eval "$s")" 0
	assert_equal "$(cmdstat info "$s")" 0
}

# lock_and_record_pttl NAME: the PTTLs of redlock:NAME and of its
# holder's record, read at one instant (MULTI).
lock_and_record_pttl() {
	SNAP_SOCK=$REDIS_SOCK /usr/bin/python3 - "$1" <<'EOF'
import os, sys, redis
r = redis.Redis(unix_socket_path=os.environ["SNAP_SOCK"])
k = b"redlock:" + sys.argv[1].encode()
p = r.pipeline(transaction=True)
p.pttl(k)
p.pttl(b"{" + k + b"}\0holder")
print(*p.execute())
EOF
}

@test "renewals extend the holder's record only every few times, and the record outlives the lock while it is held" {
	local d=$BATS_TEST_TMPDIR i k r s renewals pexpires
	bg_start h "$RL" -t 600ms recorded sh -c ': >"$1"; . "$TESTS_DIR/lib/await.sh"
		await_file "$2"
		exit 7' holder "$d/h.held" "$d/h.go"
	wait_for_file "$d/h.held" 20
	rcli CONFIG RESETSTAT >/dev/null
	# About 3 s of renewals every 200 ms; at every look the record lives
	# at least as long as the lock.
	for ((i = 0; i < 30; i++)); do
		read -r k r < <(lock_and_record_pttl recorded)
		((k > 0 && r >= k)) || fail "lock PTTL $k, record PTTL $r"
		s=$(rcli INFO commandstats)
		(($(cmdstat evalsha "$s") >= 12)) && break
		sleep 0.1
	done
	renewals=$(cmdstat evalsha "$s") pexpires=$(cmdstat pexpire "$s")
	((renewals >= 12)) || fail "only $renewals renewals"
	# One PEXPIRE of the lock each time, one of the record every third
	# time or so (it lives two TTLs from each refresh).
	((pexpires >= renewals && pexpires <= renewals + renewals / 2 + 1)) ||
		fail "$pexpires PEXPIREs in $renewals renewals"
	: >"$d/h.go"
	bg_wait h 20
	assert_equal "$BG_STATUS" 7
	assert_equal "$(bg_err h)" ''
}

@test "SCRIPT FLUSH while a command holds the lock is no loss, and the next run works" {
	local d=$BATS_TEST_TMPDIR i e
	bg_start h "$RL" -t 300ms flushed sh -c ': >"$1"; . "$TESTS_DIR/lib/await.sh"
		await_file "$2"
		exit 7' holder "$d/h.held" "$d/h.go"
	wait_for_file "$d/h.held" 20
	for ((i = 0; i < 4; i++)); do
		e=$(cmdstat eval)
		assert_equal "$(rcli SCRIPT FLUSH)" OK
		# The next renewal finds no script and sends the body.
		wait_until eval '(($(cmdstat eval) > e))'
	done
	: >"$d/h.go"
	bg_wait h 20
	assert_equal "$BG_STATUS" 7
	assert_equal "$(bg_err h)" ''
	assert key_absent redlock:flushed
	rcli SCRIPT FLUSH >/dev/null
	run -0 --separate-stderr redlock flushed sh -c 'exit 0'
	assert_equal "$stderr" ''
	run -3 redlock flushed sh -c 'exit 3'
}

# rpush_calls: how many RPUSHes the server ran (scripts' calls count)
# since its statistics were reset.
rpush_calls() {
	rcli INFO commandstats | tr -d '\r' |
		sed -n 's/^cmdstat_rpush:calls=\([0-9]*\),.*/\1/p' | grep . || echo 0
}

@test "a release nobody waits for pushes no wake-up; a waiter joins the waiters, is woken, and leaves them" {
	rcli CONFIG RESETSTAT >/dev/null
	redlock solo true
	# Only the fence counter is left: no wake list, no waiters' set.
	run -0 redlock_keys
	assert_equal "$(grep -c solo <<<"$output")" 1
	assert_output --regexp "b'\{redlock:solo\}\\\\x00fence' [0-9]+"
	assert_equal "$(rpush_calls)" 0
	hold_lock h busy
	bg_start w "$RL" -w 20 busy true
	wait_until -t 10 eval 'redlock_keys | grep -q "busy}.x00waiting"'
	release_lock h
	bg_wait w 20
	assert_equal "$BG_STATUS" 0
	# The release pushed one wake-up; the waiter left the set when it
	# got the lock.
	assert_equal "$(rpush_calls)" 1
	run -0 redlock_keys
	refute_output --partial 'busy}\x00waiting'
}

# reads_of CMD...: how many reads of its clients' sockets the server
# made for CMD (INFO stats, total_reads_processed, which counts a
# close too).  Two INFO queries around CMD cost two of their own: the
# close of the first and the query of the second.
reads_of() {
	local a b
	a=$(redis_info_field stats total_reads_processed)
	"$@"
	b=$(redis_info_field stats total_reads_processed)
	echo "$((b - a - 2))"
}

@test "a plain run is one connection, whose cluster probe and first attempt the server reads at once: three reads (attempt, release, close)" {
	local conns0 conns1 reads
	# A first run loads the scripts (NOSCRIPT, then the body: a round
	# trip more each); the run measured has them.
	"$RL" oneread true
	conns0=$(redis_info_field stats total_connections_received)
	reads=$(reads_of "$RL" oneread true)
	conns1=$(redis_info_field stats total_connections_received)
	assert_equal "$reads" 3
	# The run, and the three INFO queries of reads_of and this test.
	assert_equal "$((conns1 - conns0))" 4
}
