#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The documentation matches the code: `redlock --help` is the
# text in tests/golden/help.txt (whoever changes --help regenerates it
# with `make golden` and reviews the diff), and every number the man page
# states for a limit - the TTL minimum, the NAME length maximum, the
# DURATION maximum, the -E range - is the one the binary enforces.  The
# numbers are read from man/redlock.1 (rendered by mandoc when it is
# installed), so that the test fails when either side drifts.  The binary
# is probed against a dead port: a value it accepts gets as far as
# connecting (69), one it refuses is a usage error (64).  redlock(1) and
# the pages of section 7 (man/*.7) name one another as one set.

load helpers

lifecycle main
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	MAN_TEXT=$(man_text)
	export MAN_TEXT
}
test_setup() {
	DEAD="redis://127.0.0.1:$(dead_port 1)"
}

# man_text: the man page as one line of plain text.
man_text() {
	local page=$REPO_DIR/man/redlock.1
	if command -v mandoc >/dev/null; then
		mandoc -T ascii "$page" | col -b
	else
		# Roughly: drop comments, macro names and font escapes.
		sed -E '/^\.\\"/d; s/^\.[A-Z][a-z]+ ?//; s/\\f[BIRP]//g' "$page"
	fi | tr -s ' \t\n' '   '
}

# man_number REGEX: the first capture group of REGEX (ERE) in the man page;
# fails, naming the phrase, if the man page no longer says it.
man_number() {
	if [[ $MAN_TEXT =~ $1 ]]; then
		echo "${BASH_REMATCH[1]}"
	else
		echo "man_number: the man page no longer matches /$1/" >&2
		return 1
	fi
}

# probe ARGS...: the status of redlock ARGS against the dead port
# (bounded: an accepted value must fail to connect within seconds).
probe() {
	local st=0
	timeout 20 "$RL" -u "$DEAD" "$@" </dev/null >/dev/null 2>&1 || st=$?
	echo "$st"
}

# assert_accepts WHAT ARGS... / assert_refuses WHAT ARGS...
assert_accepts() {
	local what=$1 st
	shift
	st=$(probe "$@")
	[[ $st == 69 ]] || fail "the man page allows $what, but redlock $* exits $st (want 69: parsed, then no server)"
}
assert_refuses() {
	local what=$1 st
	shift
	st=$(probe "$@")
	[[ $st == 64 ]] || fail "the man page forbids $what, but redlock $* exits $st (want 64)"
}

@test "redlock --help is the text in tests/golden/help.txt (after a change: make golden, review the diff)" {
	run -0 --separate-stderr redlock --help
	local want
	want=$(cat "$TESTS_DIR/golden/help.txt")
	[[ $output == "$want" ]] ||
		fail "--help differs from tests/golden/help.txt:
$(diff <(echo "$want") <(echo "$output"))"
	assert_equal "$stderr" ''
}

@test "the TTL minimum in the man page is the one redlock enforces" {
	local min unit ms
	min=$(man_number 'At least ([0-9]+(ms|s))[;.]')
	ms=$(to_ms "$min")
	assert_accepts "-t $min" -t "${ms}ms" -n n true
	assert_refuses "no -t below $min" -t "$((ms - 1))ms" -n n true
	# acquire enforces the same minimum.
	assert_accepts "acquire -t $min" acquire -t "${ms}ms" n
	assert_refuses "no acquire -t below $min" acquire -t "$((ms - 1))ms" n
}

@test "the NAME length maximum in the man page is the one redlock enforces" {
	local max name
	max=$(man_number 'string of 1 to ([0-9]+) bytes')
	printf -v name '%*s' "$max" ''
	name=${name// /n}
	assert_accepts "a NAME of $max bytes" -n "$name" true
	assert_refuses "a NAME of $((max + 1)) bytes" -n "${name}n" true
	assert_accepts "acquire of a NAME of $max bytes" acquire "$name"
	assert_refuses "acquire of a NAME of $((max + 1)) bytes" acquire "${name}n"
}

@test "the DURATION maximum in the man page is the one redlock enforces" {
	local days ms
	days=$(man_number 'may exceed ([0-9]+) days')
	ms=$((days * 86400000))
	assert_accepts "--max-time of $days days" --max-time "${ms}ms" -n n true
	assert_refuses "--max-time over $days days" --max-time "$((ms + 1))ms" -n n true
	assert_accepts "-w of $days days" -w "${ms}ms" n true
	assert_refuses "-w over $days days" -w "$((ms + 1))ms" n true
	assert_accepts "-w of $((days * 24))h" -w "$((days * 24))h" n true
}

@test "the -E range in the man page is the one redlock enforces" {
	local lo hi
	lo=$(man_number 'An integer from ([0-9]+) to [0-9]+')
	hi=$(man_number 'An integer from [0-9]+ to ([0-9]+)')
	assert_accepts "-E $lo" -E "$lo" -n n true
	assert_accepts "-E $hi" -E "$hi" -n n true
	assert_refuses "-E $((hi + 1))" -E "$((hi + 1))" -n n true
	assert_refuses "-E $((lo - 1))" -E "$((lo - 1))" -n n true
}

@test "the default TTL in the man page is the one redlock uses" {
	local def ms
	def=$(man_number 'the default is ([0-9]+(ms|s))\.')
	ms=$(to_ms "$def")
	run -0 --separate-stderr redlock n sh -c 'redis-cli -s "$1" PTTL "$REDLOCK_KEY"' sh "$REDIS_SOCK"
	((output <= ms && output > ms - 2000)) || fail "PTTL $output ms under the default TTL, the man page says $def"
}

# see_also PAGE: the lines of PAGE's SEE ALSO section.
see_also() {
	awk '/^\.Sh / { on = ($0 == ".Sh SEE ALSO"); next } on' "$1"
}

@test "redlock(1) and the pages of section 7 are one set: named as their files, naming only pages that exist, each in the others' SEE ALSO" {
	local page base name sec xr
	local -a pages=("$REPO_DIR"/man/*.7)
	[[ -f ${pages[0]} ]] || fail "no page of section 7 in man/"
	for page in "$REPO_DIR/man/redlock.1" "${pages[@]}"; do
		base=${page##*/} name=${base%.*} sec=${base##*.}
		grep -qxF ".Dt ${name^^} $sec" "$page" || fail "$base has no '.Dt ${name^^} $sec'"
		grep -qxF ".Nm $name" "$page" || fail "$base has no '.Nm $name'"
		while read -r xr; do
			[[ -f $REPO_DIR/man/$xr ]] || fail "$base names $xr, which is not in man/"
		done < <(grep -oE 'Xr redlock[-a-z]* [0-9]' "$page" | awk '{ print $2 "." $3 }' | sort -u)
		[[ $sec == 7 ]] || continue
		see_also "$REPO_DIR/man/redlock.1" | grep -qxE "\.Xr $name 7( ,)?" ||
			fail "the SEE ALSO of redlock(1) does not name $name(7)"
		see_also "$page" | grep -qxE '\.Xr redlock 1( ,)?' ||
			fail "the SEE ALSO of $base does not name redlock(1)"
		# Past NAME, .Nm alone would print the page's own name, not the
		# command's: the section-7 pages write .Nm redlock.
		run -0 awk '/^\.Sh / { past = ($0 != ".Sh NAME") }
			past && /(^\.| )Nm( |$)/ && !/(^\.| )Nm redlock( |$)/ { print FILENAME ":" FNR ": " $0 }' "$page"
		assert_output ''
	done
}
