#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# Credentials and settings from outside argv (redlock(1), SYNOPSIS; redlock(1), TLS and Passwords): the password
# file and the order of the password sources, options from REDLOCK_*
# variables, what a server that wants a password says, and the details
# of URLs (unknown query parameters, IPv6 zones, a server given twice).

load helpers

PW='Cred-Secret-8d41c2'

lifecycle main --tcp -- auth --tcp --requirepass "$PW"
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	rcli_at auth ACL SETUSER locker on '>Locker-Pw-5' '~*' '&*' '+@all' >/dev/null
	use_redis main
}
test_setup() {
	unset REDLOCK_PASSWORD_FILE REDLOCK_TTL REDLOCK_WAIT REDLOCK_TLS
}

auth_url() { echo "redis://${1:+$1@}127.0.0.1:$(redis_port auth)"; }

# A URL where nothing listens: a run that got that far would say 69.
dead_url() { echo "redis://127.0.0.1:$(dead_port)"; }

# pwfile NAME CONTENT: a file holding CONTENT (printf %b), its path on
# stdout.
pwfile() {
	printf '%b' "$2" >"$BATS_TEST_TMPDIR/$1"
	echo "$BATS_TEST_TMPDIR/$1"
}

# The lock key on the auth server while the command runs.
AUTH_CHECK='redis-cli -s "$1" --no-auth-warning -a "$2" EXISTS "$REDLOCK_KEY"'

# --- the password file ---------------------------------------------------------

@test "--password-file authenticates with the first line of the file" {
	local f
	f=$(pwfile pw "$PW\nnot the password\n")
	run -0 --separate-stderr redlock --password-file "$f" -u "$(auth_url)" job \
		sh -c "$AUTH_CHECK" sh "$(redis_sock auth)" "$PW"
	assert_output 1
	assert_equal "$stderr" ''
}

@test "the line end of the password file is not part of the password" {
	local f
	for f in "$(pwfile lf "$PW\n")" "$(pwfile crlf "$PW\r\n")" "$(pwfile none "$PW")"; do
		run -0 redlock --password-file "$f" -u "$(auth_url)" job true
	done
	# A blank at the end is part of it.
	run -69 redlock --password-file "$(pwfile blank "$PW \n")" -u "$(auth_url)" job true
}

@test "a password from the environment or a file is no error for a server that wants none: a quorum can mix them" {
	local main
	main="unix://$(redis_sock main)"
	REDLOCK_PASSWORD=$PW run -0 --separate-stderr redlock -u "$main" job echo ran
	assert_output ran
	assert_equal "$stderr" ''
	REDLOCK_PASSWORD=$PW run -0 redlock -u "$(auth_url)" -u "$main" job echo ran
	assert_output ran
	run -0 redlock --password-file "$(pwfile pw "$PW\n")" -u "$main" -u "$(auth_url)" job echo ran
	# Wrong for the server that wants one, it is still refused there.
	REDLOCK_PASSWORD=wrong run -69 --separate-stderr redlock -u "$(auth_url)" -u "$main" job true
	assert_regex "$stderr" 'authentication failed'
}

@test "REDLOCK_PASSWORD_FILE authenticates like --password-file" {
	REDLOCK_PASSWORD_FILE=$(pwfile pw "$PW\n") run -0 redlock -u "$(auth_url)" job true
}

@test "REDLOCK_URL reaches the command without its passwords; a nested redlock then takes its password from a file" {
	local pw
	pw=$(printf '%s' "$PW" | sed 's/-/%2D/g')
	# The command sees the servers, not the passwords, of the URLs: the
	# -u ones when there are (a user is kept), else REDLOCK_URL's.
	REDLOCK_URL="redis://:$pw@127.0.0.1:$(redis_port auth),redis://locker:Locker-Pw-5@127.0.0.1:1" \
		run -0 --separate-stderr redlock -u "$(auth_url "default:$PW")" job sh -c 'echo "$REDLOCK_URL"'
	assert_output "redis://default@127.0.0.1:$(redis_port auth)"
	REDLOCK_URL="redis://:$pw@127.0.0.1:$(redis_port auth)" \
		run -0 --separate-stderr redlock job sh -c 'echo "$REDLOCK_URL"'
	assert_output "redis://127.0.0.1:$(redis_port auth)"
	# Re-entrance through REDLOCK_URL needs the password from elsewhere.
	REDLOCK_URL="redis://:$pw@127.0.0.1:$(redis_port auth)" run -0 --separate-stderr \
		redlock job sh -c 'redlock job echo inner; echo "status $?"'
	assert_output 'status 69'
	assert_regex "$stderr" 'authentication required'
	REDLOCK_PASSWORD_FILE=$(pwfile pw "$PW\n") REDLOCK_URL="redis://127.0.0.1:$(redis_port auth)" \
		run -0 --separate-stderr redlock job sh -c 'redlock job echo inner'
	assert_output inner
}

@test "--password-file reaches the command as REDLOCK_PASSWORD_FILE (absolute): a nested redlock re-enters" {
	pwfile pw "$PW\n" >/dev/null
	cd "$BATS_TEST_TMPDIR"
	REDLOCK_PASSWORD_FILE=/nonexistent run -0 --separate-stderr redlock --password-file pw \
		-u "$(auth_url)" job sh -c 'cd /; echo "$REDLOCK_PASSWORD_FILE"
		redlock -n job echo inner; echo "inner $?"'
	assert_output "$BATS_TEST_TMPDIR/pw"$'\ninner\ninner 0'
	assert_equal "$stderr" ''
}

@test "the password comes from the URL, then --password-file, then REDLOCK_PASSWORD, then REDISCLI_AUTH" {
	local good bad
	good=$(pwfile good "$PW\n")
	bad=$(pwfile bad 'wrong-pw\n')
	run -0 redlock --password-file "$bad" -u "$(auth_url ":$PW")" job true
	REDLOCK_PASSWORD=wrong run -0 redlock --password-file "$good" -u "$(auth_url)" job true
	REDLOCK_PASSWORD=$PW run -69 redlock --password-file "$bad" -u "$(auth_url)" job true
	REDLOCK_PASSWORD=$PW REDISCLI_AUTH=wrong run -0 redlock -u "$(auth_url)" job true
	REDISCLI_AUTH=$PW run -0 redlock -u "$(auth_url)" job true
	# The command line's file wins over the environment's.
	REDLOCK_PASSWORD_FILE=$bad run -0 redlock --password-file "$good" -u "$(auth_url)" job true
	REDLOCK_PASSWORD_FILE=$good run -69 redlock --password-file "$bad" -u "$(auth_url)" job true
	REDLOCK_PASSWORD_FILE=$good REDLOCK_PASSWORD=wrong run -0 redlock -u "$(auth_url)" job true
}

@test "the password file is for the URLs without a password, with a user name too" {
	local f
	f=$(pwfile user 'Locker-Pw-5\n')
	run -0 redlock --password-file "$f" -u "$(auth_url locker)" job true
}

@test "a password file that cannot be used is a usage error naming it, before any connection" {
	local f
	for f in "$BATS_TEST_TMPDIR/missing" "$BATS_TEST_TMPDIR" "$(pwfile empty '')" \
		"$(pwfile emptyline '\nsecond')" "$(pwfile crlf-only '\r\n')"; do
		run -64 --separate-stderr redlock --password-file "$f" -u "$(dead_url)" job true
		assert_usage_error
		assert_regex "${stderr_lines[0]}" "^redlock: --password-file '$f': "
		REDLOCK_PASSWORD_FILE=$f run -64 --separate-stderr redlock -u "$(dead_url)" job true
		assert_usage_error
		assert_regex "${stderr_lines[0]}" "^redlock: REDLOCK_PASSWORD_FILE '$f': "
	done
}

@test "a password from a file is never printed, not even with -v" {
	local f wrong=Wrong-From-File-3x
	f=$(pwfile wrong "$wrong\n")
	run -69 --separate-stderr redlock -v --password-file "$f" -u "$(auth_url)" job true
	[[ $stderr != *"$wrong"* && $output != *"$wrong"* ]] || fail "password printed: $stderr"
	f=$(pwfile good "$PW\n")
	run -0 --separate-stderr redlock -v --password-file "$f" -u "$(auth_url)" job \
		sh -c 'env'
	[[ $stderr != *"$PW"* && $output != *"$PW"* ]] || fail "password printed"
}

# --- authentication messages ------------------------------------------------------

@test "no password for a server that wants one: 69 and one line saying authentication is required" {
	local port
	port=$(redis_port auth)
	local -a forms=("job true" "acquire job" "status job" "list" "break job"
		"release job 0b8e3f66-8b1e-4d5c-9a52-3c6f0f0e1d2a"
		"extend job 0b8e3f66-8b1e-4d5c-9a52-3c6f0f0e1d2a")
	local f
	for f in "${forms[@]}"; do
		# shellcheck disable=SC2086 # the words of one form
		run -69 --separate-stderr redlock -u "$(auth_url)" $f
		assert_equal "${#stderr_lines[@]}" 1
		assert_regex "${stderr_lines[0]}" "^redlock: .*127\.0\.0\.1:$port: authentication required"
		[[ $stderr != *Protocol* && $stderr != *NOAUTH* ]] || fail "$f: $stderr"
	done
}

@test "a wrong password: 69 and one line saying authentication failed" {
	local port
	port=$(redis_port auth)
	run -69 --separate-stderr redlock -u "$(auth_url :wrong-pw)" job true
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" "^redlock: .*127\.0\.0\.1:$port: authentication failed"
	REDLOCK_PASSWORD=wrong-pw run -69 --separate-stderr redlock -u "$(auth_url)" list
	assert_regex "${stderr_lines[0]}" "^redlock: .*127\.0\.0\.1:$port: authentication failed"
	run -69 --separate-stderr redlock -u "$(auth_url locker:wrong-pw)" status job
	assert_regex "${stderr_lines[0]}" "^redlock: .*127\.0\.0\.1:$port: authentication failed"
}

@test "a URL's user without a password authenticates as that user, never as the default one" {
	local port main
	port=$(redis_port auth) main=$(redis_port main)
	# A user that has a password: refused, saying none was given.
	run -69 --separate-stderr redlock -u "$(auth_url locker)" job touch "$BATS_TEST_TMPDIR/ran"
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "${stderr_lines[0]}" "^redlock: .*127\.0\.0\.1:$port: authentication failed: .*no password given"
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	# A nopass user is that user: its key limits hold (the default user
	# would have taken the lock).
	rcli_at main ACL SETUSER fenced on nopass '~other:*' '+@all' >/dev/null
	rcli_at main ACL SETUSER open on nopass '~*' '+@all' >/dev/null
	run -69 --separate-stderr redlock -u "redis://fenced@127.0.0.1:$main" job true
	assert_regex "$stderr" 'permission|NOPERM'
	run -0 redlock -u "redis://open@127.0.0.1:$main" job \
		sh -c 'redis-cli -p "$1" CLIENT LIST | grep -c " user=open "' sh "$main"
	assert_output 1
	rcli_at main ACL DELUSER fenced open >/dev/null
}

@test "a failed AUTH or SELECT stops the request: nothing runs as the default user or in database 0" {
	local main f u
	main=$(redis_port main)
	rcli_at main ACL SETUSER lim on '>Lim-Pw-3' '~*' '+@all' '-select' >/dev/null
	# The server knows every script first (a NOSCRIPT would stop the
	# request by itself).
	for f in "break other" "release other other-token" "stop -n other" \
		"extend other other-token" "other true"; do
		# shellcheck disable=SC2086 # the words of one form
		redlock -q -u "redis://127.0.0.1:$main" $f || true
	done
	rcli_at main FLUSHALL >/dev/null
	rcli_at main SET redlock:victim other-token PX 60000 >/dev/null
	# The default user needs no password here: a command sent behind a
	# refused AUTH, or behind a SELECT refused or of a database that does
	# not exist, would act on database 0.
	for u in "redis://lim:wrong@127.0.0.1:$main" "redis://lim:Lim-Pw-3@127.0.0.1:$main/3" \
		"redis://127.0.0.1:$main/16"; do
		for f in "break victim" "release victim other-token" "stop -n victim" \
			"extend victim other-token" "free touch $BATS_TEST_TMPDIR/ran"; do
			# shellcheck disable=SC2086 # the words of one form
			run -69 --separate-stderr redlock -u "$u" $f
			assert_regex "$stderr" 'authentication failed|NOPERM|DB index is out of range'
		done
	done
	assert_equal "$(rcli_at main GET redlock:victim)" other-token
	assert [ ! -e "$BATS_TEST_TMPDIR/ran" ]
	# Not even a fencing counter of NAME's.
	assert_equal "$(rcli_at main --scan | LC_ALL=C sort | paste -sd' ')" 'redlock:victim'
	# With a user that may SELECT, the same request goes through.
	run -0 redlock -u "redis://lim:Lim-Pw-3@127.0.0.1:$main" break victim
	assert_equal "$(rcli_at main EXISTS redlock:victim)" 0
	rcli_at main ACL DELUSER lim >/dev/null
}

# --- options from the environment -----------------------------------------------------

@test "REDLOCK_TTL sets the time-to-live, and -t on the command line wins" {
	local pttl='redis-cli -s "$1" PTTL "$REDLOCK_KEY"'
	REDLOCK_TTL=10m run -0 redlock job sh -c "$pttl" sh "$REDIS_SOCK"
	assert [ "$output" -gt 590000 ] && assert [ "$output" -le 600000 ]
	REDLOCK_TTL=10m run -0 redlock -t 20s job sh -c "$pttl" sh "$REDIS_SOCK"
	assert [ "$output" -gt 10000 ] && assert [ "$output" -le 20000 ]
	# The command line wins even over a bad value.
	REDLOCK_TTL=garbage run -0 redlock -t 20s job true
}

@test "a bad value in a REDLOCK_ variable is a usage error naming the variable" {
	local url kv
	url=$(dead_url)
	for kv in REDLOCK_TTL=garbage REDLOCK_TTL=5ms REDLOCK_WAIT=soon \
		REDLOCK_ON_LOST=explode REDLOCK_CONFLICT_EXIT_CODE=300 \
		REDLOCK_KILL_AFTER=-1 REDLOCK_MIN_HOLD=1e3 REDLOCK_MAX_TIME=0 \
		REDLOCK_TLS=maybe 'REDLOCK_SNI=a b' REDLOCK_TLS_CERT=/c.pem; do
		run -64 --separate-stderr env "$kv" "$RL" -u "$url" job true
		assert_usage_error
		assert_regex "${stderr_lines[0]}" "${kv%%=*}"
	done
}

@test "REDLOCK_WAIT, REDLOCK_CONFLICT_EXIT_CODE and REDLOCK_MAX_TIME act as their options" {
	hold_lock h job
	REDLOCK_WAIT=0 REDLOCK_CONFLICT_EXIT_CODE=7 run -7 redlock job true
	local t0 t1
	t0=$(now_ms)
	REDLOCK_WAIT=0 run -1 redlock -w 300ms job true
	t1=$(now_ms)
	assert [ $((t1 - t0)) -ge 250 ]
	REDLOCK_WAIT=5s run -1 redlock -n job true
	# --timeout is a long name of -w: REDLOCK_TIMEOUT, unless
	# REDLOCK_WAIT is set too (redlock(1), ENVIRONMENT).
	t0=$(now_ms)
	REDLOCK_TIMEOUT=300ms run -1 redlock job true
	t1=$(now_ms)
	assert [ $((t1 - t0)) -ge 250 ]
	REDLOCK_TIMEOUT=0 REDLOCK_CONFLICT_EXIT_CODE=7 run -7 redlock job true
	REDLOCK_TIMEOUT=soon REDLOCK_WAIT=0 run -1 redlock job true
	REDLOCK_TIMEOUT=soon run -64 --separate-stderr redlock job true
	assert_regex "$stderr" "REDLOCK_TIMEOUT"
	release_lock h
	REDLOCK_MAX_TIME=200ms run -124 redlock job sleep 5
	REDLOCK_ON_LOST=kill REDLOCK_KILL_AFTER=0 REDLOCK_MIN_HOLD=0 run -0 redlock job true
}

@test "REDLOCK_PREFIX and the variables that describe a lock are not mixed up" {
	REDLOCK_KEY=not-an-option REDLOCK_TOKEN=x REDLOCK_FENCE=y REDLOCK_NAME=z \
		REDLOCK_PREFIX=env: run -0 redlock job printenv REDLOCK_KEY
	assert_output env:job
	REDLOCK_PREFIX='' run -0 redlock job printenv REDLOCK_KEY
	assert_output job
}

# --- URLs --------------------------------------------------------------------------------

@test "an unknown query parameter is a usage error naming it" {
	run -64 --separate-stderr redlock -u "redis://127.0.0.1:$(redis_port main)/1?x=y" job true
	assert_usage_error
	assert_regex "${stderr_lines[0]}" "unknown query parameter 'x'"
	run -64 --separate-stderr redlock -u "unix://$REDIS_SOCK?db=1&timeout=5" job true
	assert_usage_error
	assert_regex "${stderr_lines[0]}" "unknown query parameter 'timeout'"
}

@test "an IPv6 zone in brackets is decoded" {
	run -69 --separate-stderr redlock -n -u 'redis://[fe80::1%25lo]:1' job true
	assert_regex "${stderr_lines[0]}" '\[fe80::1%lo\]:1'
	run -64 --separate-stderr redlock -u 'redis://[fe80::1%zz]:1' job true
	assert_usage_error
}

@test "the same server given twice is a usage error before anything is sent" {
	local port
	port=$(redis_port main)
	local -a pairs=(
		"redis://127.0.0.1:$port redis://127.0.0.1:$port"
		"redis://LOCALHOST:$port redis://localhost:$port/0"
		"unix://$REDIS_SOCK unix://$REDIS_SOCK?db=0"
		"redis://:pw@127.0.0.1:$port rediss://127.0.0.1:$port"
	)
	local p a b
	for p in "${pairs[@]}"; do
		read -r a b <<<"$p"
		run -64 --separate-stderr redlock -u "$a" -u "$b" -u "unix://$REDIS_SOCK?db=5" job true
		assert_usage_error
		assert_regex "${stderr_lines[0]}" 'given twice'
		[[ $stderr != *:pw@* ]] || fail "password printed: $stderr"
	done
	# Nothing was written to the one server named once.
	assert_equal "$(rcli -n 5 DBSIZE)" 0
	# Other databases of one server are still that server (its run id).
	run -64 --separate-stderr redlock -u "unix://$REDIS_SOCK?db=1" \
		-u "unix://$REDIS_SOCK?db=2" -u "redis://127.0.0.1:$port/3" job true
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" '^redlock: .* are the same server'
	assert_equal "$(rcli -n 1 DBSIZE)" 0
}

@test "a bad TLS file from the environment names its variable; REDLOCK_TLS's error lists what it accepts; REDLOCK_LIMIT is documented" {
	local url kv
	url=$(dead_url)
	for kv in REDLOCK_CACERT=/nonexistent/ca.pem REDLOCK_CACERTDIR=/nonexistent; do
		run -64 --separate-stderr env "$kv" "$RL" -u "$url" job true
		assert_regex "${stderr_lines[0]}" "${kv%%=*}"
		refute_regex "${stderr_lines[0]}" -- '--cacert|--cert'
	done
	REDLOCK_TLS=maybe run -64 --separate-stderr redlock -u "$url" job true
	assert_regex "${stderr_lines[0]}" 'yes, true, on'
	REDLOCK_LIMIT=2 run -64 --separate-stderr redlock -u "$url" --limit x job true
	run -0 grep -c 'REDLOCK_LIMIT' "$REPO_DIR/man/redlock.1"
}
