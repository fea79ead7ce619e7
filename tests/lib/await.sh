# shellcheck shell=sh
#
# await.sh - for the shell commands that tests run under redlock:
#
#     sh -c '. "$TESTS_DIR/lib/await.sh"; : >"$1"; await_file "$2"' ...
#
# await_file PATH [SECONDS]: returns 0 once PATH exists, 1 after SECONDS
# (default 60) without it.  It polls every 50 ms in the calling shell
# itself, so the command's process tree stays that shell and a 50 ms
# sleep: a signal that ends the shell leaves nothing running for long
# (a holder's tree is what redlock waits for and kills).
await_file() {
	_await_left=$((${2:-60} * 20))
	while [ ! -e "$1" ] && [ "$_await_left" -gt 0 ]; do
		sleep 0.05
		_await_left=$((_await_left - 1))
	done
	[ -e "$1" ]
}
