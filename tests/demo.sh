#!/bin/sh
# demo.sh - show redlock at work: two contending commands take turns, and
# a -n run skips while the lock is busy.  Uses $REDLOCK_URL if set, else a
# throwaway redis-server on a unix socket, which it stops afterwards.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
redlock="$here/redlock"
dir=
pid=

cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
	if [ -n "$dir" ]; then rm -rf "$dir"; fi
}
trap cleanup EXIT INT TERM

if [ -z "${REDLOCK_URL:-}" ]; then
	if ! command -v redis-server >/dev/null; then
		echo "demo: redis-server is missing; run: apt-get install redis-server" >&2
		exit 1
	fi
	dir=$(mktemp -d)
	redis-server --port 0 --unixsocket "$dir/redis.sock" --save '' \
		--appendonly no --daemonize yes --pidfile "$dir/redis.pid" \
		--logfile "$dir/redis.log"
	i=0
	while [ ! -s "$dir/redis.pid" ] || [ ! -S "$dir/redis.sock" ]; do
		i=$((i + 1))
		if [ $i -gt 100 ]; then echo "demo: redis-server did not start" >&2; exit 1; fi
		sleep 0.05
	done
	pid=$(cat "$dir/redis.pid")
	REDLOCK_URL="unix://$dir/redis.sock"
	export REDLOCK_URL
	echo "== a throwaway redis-server (pid $pid) on $dir/redis.sock"
fi

echo "== two hosts run the same job; the lock makes them take turns"
"$redlock" demo-job -c 'echo "  A: got the lock, working 2s"; sleep 2; echo "  A: done"' &
a=$!
# Let A take the lock first (wait until the key exists, at most 5 s).
i=0
until "$redlock" status -q demo-job >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -le 100 ] || break; sleep 0.05
done
"$redlock" demo-job -c 'echo "  B: got the lock after A released it"' &
b=$!

echo "== meanwhile a cron-style run with -n skips instead of waiting"
status=0
"$redlock" -n demo-job -c 'echo "  C: this never prints"' || status=$?
echo "  C: skipped, exit status $status (the -E default for a busy lock)"

echo "== who holds it? (redlock status)"
"$redlock" status demo-job | sed 's/^/  /' || true

wait "$a" "$b"
echo "== both runs are done; the lock is free again:"
"$redlock" status demo-job | sed 's/^/  /' || true
