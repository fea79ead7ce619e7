#!/usr/bin/env bats
#
# The shell completions, the man page and tests/check-options.sh: the
# bash completion is driven through _redlock with COMP_WORDS/COMP_CWORD;
# the zsh and fish files are syntax-checked by their shells.  Needs no
# Redis server: lock names come from a stub `redlock` on PATH.

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

setup() {
	REPO=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
	BASH_COMPLETION=/usr/share/bash-completion/bash_completion
}

# Complete the last of WORDS as bash would, in a clean bash, and print
# COMPREPLY one per line.  With BC=1, bash-completion is loaded first.
complete_words() {
	bash --norc --noprofile -c '
		bc=$1 file=$2
		shift 2
		if [[ $bc == 1 ]]; then
			source /usr/share/bash-completion/bash_completion
		fi
		source "$file"
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"
		COMP_POINT=${#COMP_LINE}
		# compopt complains outside a real completion; COMPREPLY is
		# what matters.
		_redlock 2>/dev/null
		printf "%s\n" "${COMPREPLY[@]}"
	' complete_words "${BC:-0}" "$REPO/completions/redlock.bash" "$@"
}

@test "bash completes an option prefix to the long option" {
	run complete_words redlock --on-l
	assert_success
	assert_output --on-lost
}

@test "bash completes the actions of --on-lost" {
	run complete_words redlock --on-lost ''
	assert_success
	assert_line term
	assert_line kill
	assert_line ignore
	assert_equal "${#lines[@]}" 3
}

@test "bash completes --on-lost=VALUE split at the equals sign" {
	run complete_words redlock --on-lost = te
	assert_success
	assert_output term
}

@test "bash suggests durations for --ttl and units after a number" {
	run complete_words redlock --ttl ''
	assert_success
	assert_line 10s
	assert_line 30s
	assert_line 5m
	run complete_words redlock -t 5
	assert_line 5s
	assert_line 5ms
}

@test "bash completes a verb as the first operand" {
	run complete_words redlock acq
	assert_success
	assert_output acquire
}

@test "bash offers every verb after the options" {
	run complete_words redlock -n -t 5s ''
	assert_success
	for verb in run acquire release extend status list break stop; do
		assert_line "$verb"
	done
}

@test "bash completes the shared-lock options and the numbers of --limit" {
	run complete_words redlock --sh
	assert_output --shared
	run complete_words redlock --limit ''
	assert_line 2
	assert_line 4
	run complete_words redlock -s --limit 3 mylock ech
	assert_line echo
}

@test "bash completes lock names after stop" {
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	cat >"$BATS_TEST_TMPDIR/bin/redlock" <<-'EOF'
		#!/bin/sh
		echo '{"name":"backup","key":"redlock:backup","held":true}'
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/redlock"
	PATH=$BATS_TEST_TMPDIR/bin:$PATH run complete_words redlock stop b
	assert_success
	assert_output backup
}

@test "bash completes the wrapped command after NAME" {
	run complete_words redlock mylock ech
	assert_success
	assert_line echo
}

@test "bash completes the wrapped command after run NAME and options" {
	run complete_words redlock -n run --ttl 10s mylock ech
	assert_success
	assert_line echo
}

@test "bash offers only -c after NAME for a word starting with a dash" {
	run complete_words redlock mylock -
	assert_success
	assert_line -c
	assert_line --command
	refute_line --on-lost
}

@test "bash completes the wrapped command with bash-completion's _command_offset" {
	[[ -r $BASH_COMPLETION ]] || skip "bash-completion is not installed"
	BC=1 run complete_words redlock mylock ech
	assert_success
	assert_line echo
}

@test "bash completes lock names after a verb from redlock list" {
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	cat >"$BATS_TEST_TMPDIR/bin/redlock" <<-'EOF'
		#!/bin/sh
		echo "$*" >"${0%/*}/args"
		[ "$1" = list ] || exit 64
		echo '{"name":"deploy","key":"redlock:deploy","held":true}'
		echo '{"name":"backup nightly","key":"redlock:backup nightly","held":true}'
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/redlock"
	PATH=$BATS_TEST_TMPDIR/bin:$PATH run complete_words redlock -p x: status ''
	assert_success
	assert_line deploy
	assert_line 'backup\ nightly'
	run cat "$BATS_TEST_TMPDIR/bin/args"
	assert_output 'list --json -q -p x:'
}

# The URLs each shell offers after -u, with REDLOCK_URL holding a
# Sentinel URL (commas among its hosts), a blank and a URL with a
# password: each URL whole, and none with user information.
ENV_URLS='redis+sentinel://s1:26379,s2:26379/mymaster, redis://r3:6379,redis://:pw-9f3@h:1'
assert_env_urls() {
	assert_line 'redis+sentinel://s1:26379,s2:26379/mymaster'
	assert_line 'redis://r3:6379'
	refute_line 's2:26379/mymaster'
	refute_output --partial 'pw-9f3'
}

@test "bash offers the URLs of REDLOCK_URL whole after -u, split only where a scheme starts, and none with a password" {
	REDLOCK_URL=$ENV_URLS run complete_words redlock -u ''
	assert_success
	assert_env_urls
}

@test "zsh and fish offer the URLs of REDLOCK_URL as bash does" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	command -v fish >/dev/null || skip "fish is not installed"
	# zsh: the completion's function, with _wanted printing what it adds.
	REDLOCK_URL=$ENV_URLS run zsh -fc '
		compdef() { :; }; _arguments() { :; }
		source "$1" >/dev/null 2>&1
		_wanted() { local a=${@[-1]}; print -l -- ${(P)a}; }
		_redlock_urls' zsh "$REPO/completions/_redlock"
	assert_success
	assert_env_urls
	# shellcheck disable=SC2016 # fish's $argv, in fish
	REDLOCK_URL=$ENV_URLS run fish -c 'source $argv[1]; __redlock_urls' "$REPO/completions/redlock.fish"
	assert_success
	assert_env_urls
}

# _arguments passes its own flags (-J GROUP, ...) before the action's
# words, so -z may come anywhere among the arguments.
@test "zsh offers 0 for the durations that allow it (-w), called as _arguments calls it, and not for -t" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	run zsh -fc '
		compdef() { :; }; _arguments() { :; }
		source "$1" >/dev/null 2>&1
		_wanted() { local a=${@[-1]}; print -l -- ${(P)a}; }
		print -- "-w:"; _redlock_durations -J -default- -z
		print -- "-t:"; _redlock_durations -J -default-' zsh \
	    "$REPO/completions/_redlock"
	assert_success
	assert_equal "$(sed -n '/^-w:/,/^-t:/p' <<<"$output" | grep -cx 0)" 1
	assert_equal "$(sed -n '/^-t:/,$p' <<<"$output" | grep -cx 0)" 0
}

@test "the bash completion passes shellcheck" {
	command -v shellcheck >/dev/null || skip "shellcheck is not installed"
	run shellcheck "$REPO/completions/redlock.bash"
	assert_success
}

@test "zsh accepts the zsh completion" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	run zsh -n "$REPO/completions/_redlock"
	assert_success
	assert_output ''
}

@test "fish accepts the fish completion" {
	command -v fish >/dev/null || skip "fish is not installed"
	run fish -n "$REPO/completions/redlock.fish"
	assert_success
	assert_output ''
}

@test "mandoc -Tlint finds nothing in the man pages of sections 1 and 7" {
	command -v mandoc >/dev/null || skip "mandoc is not installed"
	# In man/, where mandoc finds the pages that .Xr names in one another.
	cd "$REPO/man"
	run mandoc -Tlint redlock.1 ./*.7
	# Lines about the system's own manual database are not about ours.
	refute_output --regexp 'redlock[-a-z]*\.[17]:'
	assert_success
}

@test "the README's examples are the man page's" {
	man_examples=$(awk '
		/^\.Sh EXAMPLES/ { on = 1; next }
		/^\.S[hs] / && on { exit }
		on && /^\.Bd -literal/ { inside = 1; next }
		on && /^\.Ed/ { inside = 0; print "--"; next }
		inside { gsub(/\\&/, ""); gsub(/\\e/, "\\"); print }
	' "$REPO/man/redlock.1")
	readme_examples=$(awk '
		/^## Examples/ { on = 1; next }
		/^## / && on { exit }
		on && /^```/ { if (inside) { inside = 0; print "--" } else inside = 1; next }
		inside { print }
	' "$REPO/README.md")
	[[ -n $man_examples ]]
	assert_equal "$readme_examples" "$man_examples"
}

@test "every long option of --help is in the man page and the completions" {
	local redlock=${REDLOCK:-$REPO/redlock}
	[[ -x $redlock ]] || skip "redlock is not built"
	REDLOCK=$redlock run "$REPO/tests/check-options.sh"
	assert_success
}
