# shellcheck shell=bash disable=SC2016,SC2030,SC2031,SC2034,SC2154
#
# Helpers for the --fair files (fair.bats, fair-rounds.bats,
# fair-quorum.bats, fair-sentinel.bats), on top of helpers.bash (load
# that first): the order file and the servers' options (test_setup,
# which lifecycle calls), the queue's length as status shows it, a
# --fair waiter, and one round of eight waiters.

# shellcheck disable=SC2317 # called by lifecycle
test_setup() {
	ORDER=$BATS_TEST_TMPDIR/order
	: >"$ORDER"
	SRV=(-u "unix://$REDIS_SOCK")
}

# queued NAME: how many wait in NAME's queue, as status shows it.
queued() {
	"$RL" "${SRV[@]}" status "$1" 2>/dev/null |
		sed -n 's/^queue: *\([0-9]*\) waiting.*/\1/p' | grep . || echo 0
}
queued_is() { [[ $(queued "$1") == "$2" ]]; }
lines_are() { [[ $(wc -l <"$ORDER") -ge $1 ]]; }

# waiter TAG [OPTION...]: a --fair waiter of NAME "job" whose command
# appends TAG to the order file; returns once it is in the queue
# (queue length N, the caller's count).
waiter() {
	local tag=$1 n=$2
	shift 2
	bg_start "w$tag" "$RL" "${SRV[@]}" --fair -w 60s "$@" job \
		sh -c 'echo "$1" >>"$2"' sh "$tag" "$ORDER"
	wait_until -t 10 queued_is job "$n"
}

# one_round: a holder, eight waiters joining one after another (each
# once the one before is queued), then the release; prints the order.
one_round() {
	: >"$ORDER"
	hold_lock h "${SRV[@]}" job
	local i
	for i in 1 2 3 4 5 6 7 8; do
		waiter "$i" "$i"
	done
	release_lock h
	for i in 1 2 3 4 5 6 7 8; do
		bg_wait "w$i" 30
		assert_equal "$BG_STATUS" 0
	done
	tr '\n' ' ' <"$ORDER"
}
