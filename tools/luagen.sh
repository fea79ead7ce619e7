#!/bin/sh
#
# luagen.sh - assemble the server-side Lua scripts of src/lua/ into the
# C file that embeds them (src/scripts.c, committed; the Makefile
# regenerates it when a .lua file changes, and `make lint` checks that
# it is up to date and runs luacheck over the assembled text and over
# each file alone).
#
# Each src/lua/NAME.lua is one script, compiled to `const char
# lua_NAME[]`; src/lua/lib/*.lua define the functions that scripts
# share (src/lua/README says how to write either).  Assembling a file:
#
#   - a line whose first non-blank characters are `--` (a comment), and
#     an empty line, is left out: the text sent to the server is the
#     code alone, so comments never change a script's SHA-1 (its
#     EVALSHA name, which tests/unit.c checks against a reference list);
#   - `--@include lib/FILE.lua` is replaced by FILE's assembled text,
#     once a script; the older `--@include lib/FILE.lua NAME=VALUE...`
#     pastes it every time, its {{NAME}} filled with VALUE (a VALUE with
#     spaces is written in double quotes; {{...}} in a VALUE is filled
#     first, so a fragment passes its own parameters on);
#   - {{NAME}} elsewhere is an include parameter or a number constant of
#     src/proto.h (#define PROTO_... digits), e.g. {{PROTO_CLAIM_MS}};
#     an unknown NAME is an error;
#   - a script that names no KEYS[n] or ARGV[n] by number gets, before
#     its first line of code, a local for each name of its --@keys and
#     --@argv lines that its own code reads (a last `x...`: the index
#     where that list starts);
#   - a function of lib/ that the script never calls is left out.
#   Nothing else is touched: lines are copied byte for byte.
#
# A script's contract is named once, in its own file, by comment lines
# that the header mode turns into C (src/script_args.h):
#
#   --@keys NAME...    its KEYS, in order, each a key of struct keys
#                      (K fence meta wake waiting holders hmeta xwait
#                      xwake stop stopped done): SCRIPT_KEYS_SCRIPT, the
#                      letters proto.c's args_script() sends them by
#                      (when each is a key of struct keys), and
#                      NKEYS_SCRIPT, their count
#   --@argv NAME...    its ARGV, in order (a bare --@argv: none):
#                      ARG_SCRIPT_NAME is NAME's
#                      position (1-based, for args_put()), ARGC_SCRIPT
#                      their count; a last NAME... is a list of any
#                      length that starts there (not counted)
#   --@reply NAME...   the elements of its array reply, in order:
#                      REPLY_SCRIPT_NAME is NAME's index (0-based),
#                      NREPLY_SCRIPT their count
#   --@variant V KEY...  the script again as SCRIPT_SCRIPT_V, sent with
#                      these keys only
#   --@caller-keys     its keys are not of struct keys: an enum entry
#                      all the same, whose caller gives the keys
#                      (args_script_keys(), as fair.c does)
#
# and the C file's mode checks that the assembled script uses no
# KEYS[n] or ARGV[n] beyond what they declare.  The header also gets
# lua_NAME's declaration and enum script (an entry for each script whose
# keys are all of struct keys or that says --@caller-keys, and each
# variant); the C file gets the
# table args_script() sends them from (script_table[]).
#
# To add a script: write src/lua/NAME.lua, run `make`, commit
# src/scripts.c and src/script_args.h with it, and add its SHA-1 to the
# reference list in tests/unit.c.
#
# Usage: tools/luagen.sh c          the C file, on standard output
#        tools/luagen.sh h          the contracts' C header, likewise
#        tools/luagen.sh lua DIR    each assembled script as DIR/NAME.lua
#        tools/luagen.sh check      luacheck over each file of src/lua/
#                                   alone (make lint)
# Exits non-zero on an unknown {{NAME}}, a missing include or a bad
# directive (check: on a warning).

set -eu
cd "$(dirname "$0")/.."

usage() {
	echo "usage: tools/luagen.sh c | h | check | lua DIR" >&2
	exit 64
}
[ $# -ge 1 ] || usage
mode=$1
case $mode in
c | h | check) [ $# -eq 1 ] || usage ;;
lua) [ $# -eq 2 ] || usage ;;
*) usage ;;
esac

# NAME=VALUE of the number constants the scripts may use.
consts=$(sed -n 's/^#define \(PROTO_[A-Z0-9_]*\) *\([0-9][0-9]*\)$/\1=\2/p' \
	src/proto.h | tr '\n' ' ')

# decl FILE keys|argv: the names of FILE's --@keys or --@argv line.
decl() {
	sed -n "s/^--@$2\([ \t]\(.*\)\)\{0,1\}\$/\2/p" "$1" | head -n 1
}

# expand FILE: FILE's assembled text on standard output.
expand() {
	awk -v consts="$consts" -v top="$1" -v keys="$(decl "$1" keys)" \
	    -v argv="$(decl "$1" argv)" '
	function fail(msg) {
		printf "luagen: %s\n", msg > "/dev/stderr"
		exit 1
	}
	# The VALUE of NAME in params ("\034NAME=VALUE" each), or "\001".
	function lookup(name, params,    i, v) {
		if ((i = index(params, "\034" name "=")) == 0)
			return "\001"
		v = substr(params, i + length(name) + 2)
		if ((i = index(v, "\034")) > 0)
			v = substr(v, 1, i - 1)
		return v
	}
	# Line s with its {{NAME}} filled from params, else the constants.
	function fill(s, params, where,    out, name, v) {
		out = ""
		while (match(s, /\{\{[A-Za-z_][A-Za-z0-9_]*\}\}/)) {
			name = substr(s, RSTART + 2, RLENGTH - 4)
			if ((v = lookup(name, params)) == "\001" &&
			    (v = lookup(name, cparams)) == "\001")
				fail(where ": unknown {{" name "}}")
			out = out substr(s, 1, RSTART - 1) v
			s = substr(s, RSTART + RLENGTH)
		}
		return out s
	}
	# The parameters of an include directive ("NAME=VALUE..." after the
	# file), as "\034NAME=VALUE" each.
	function args(s, where,    out, name, v, i) {
		out = ""
		sub(/^[ \t]+/, "", s)
		while (s != "") {
			if (!match(s, /^[A-Za-z_][A-Za-z0-9_]*=/))
				fail(where ": bad parameter: " s)
			name = substr(s, 1, RLENGTH - 1)
			s = substr(s, RLENGTH + 1)
			if (substr(s, 1, 1) == "\"") {
				if ((i = index(substr(s, 2), "\"")) == 0)
					fail(where ": unterminated \"")
				v = substr(s, 2, i - 1)
				s = substr(s, i + 2)
			} else {
				match(s, /^[^ \t]*/)
				v = substr(s, 1, RLENGTH)
				s = substr(s, RLENGTH + 1)
			}
			out = out "\034" name "=" v
			sub(/^[ \t]+/, "", s)
		}
		return out
	}
	function expand(file, params, depth,    line, n, where, rest, inc, rc) {
		if (depth > 8)
			fail(file ": includes nested too deep")
		# A fragment that defines functions is pasted once per
		# script; one that takes parameters (an older kind) each
		# time it is included.
		if (file in pasted && params == "")
			return
		pasted[file] = 1
		n = 0
		while ((rc = (getline line < file)) > 0) {
			where = file ":" ++n
			if (line ~ /^[ \t]*--@include[ \t]/) {
				rest = fill(line, params, where)
				sub(/^[ \t]*--@include[ \t]+/, "", rest)
				inc = rest
				sub(/[ \t].*/, "", inc)
				rest = substr(rest, length(inc) + 1)
				expand("src/lua/" inc, args(rest, where), depth + 1)
				continue
			}
			if (line ~ /^[ \t]*(--.*)?$/)
				continue
			if (depth == 0 && named) {
				prologue()
				named = 0
			}
			print fill(line, params, where)
		}
		if (rc < 0)
			fail(file ": cannot read it")
		close(file)
	}
	# Whether the script s itself (its own lines, not its fragments,
	# comments and string literals left out) reads word w as a name.
	function reads(w) {
		return (" " w " ") in used
	}
	# Read the top file once for the names its own code uses (into
	# used), and whether it still names a KEYS[n] or ARGV[n] by number.
	function scan(file,    line, s, numbered) {
		numbered = 0
		while ((getline line < file) > 0) {
			if (line ~ /^[ \t]*(--.*)?$/)
				continue
			if (line ~ /(KEYS|ARGV)\[[0-9]/)
				numbered = 1
			s = line
			gsub(/\047[^\047]*\047|"[^"]*"|--.*/, " ", s)
			gsub(/\.[A-Za-z_][A-Za-z0-9_]*/, " ", s)
			gsub(/[^A-Za-z0-9_]+/, " ", s)
			n = split(s, w, " ")
			for (i = 1; i <= n; i++)
				used[" " w[i] " "] = 1
		}
		close(file)
		return numbered
	}
	# The prologue, before the first line of the script itself (after
	# the functions it includes, which take what they need as
	# parameters): a local for each of KEYS and ARGV that it reads by
	# name; a last ARGV name "x..." is the index where that
	# list starts.  Only names read are made, so the server builds no
	# local it never reads, and luacheck sees no unused one.
	function prologue(    nk, na, k, a, i, names, vals, v) {
		nk = split(keys, k, " ")
		na = split(argv, a, " ")
		names = vals = ""
		for (i = 1; i <= nk; i++)
			if (reads(k[i])) {
				names = names ", " k[i]
				vals = vals ", KEYS[" i "]"
			}
		if (names != "")
			print "local " substr(names, 3) " = " substr(vals, 3)
		names = vals = ""
		for (i = 1; i <= na; i++) {
			v = a[i]
			if (sub(/\.\.\.$/, "", v)) {
				if (reads(v))
					print "local " v " = " i
			} else if (reads(v)) {
				names = names ", " v
				vals = vals ", ARGV[" i "]"
			}
		}
		if (names != "")
			print "local " substr(names, 3) " = " substr(vals, 3)
	}
	BEGIN {
		nc = split(consts, c, " ")
		cparams = ""
		for (i = 1; i <= nc; i++)
			cparams = cparams "\034" c[i]
		named = top !~ /\/lib\// && !scan(top)
		expand(top, "", 0)
	}'
}

# prune: standard input (an assembled script) without the functions of
# lib/ that it never calls, so that a script pays (in bytes at load,
# in closures at every call) only for the helpers it uses.  A
# function of lib/ starts with `local function NAME(` and ends at the
# first `end` at the start of a line.
prune() {
	awk -v libs="$(sed -n 's/^local function \([A-Za-z_0-9]*\)(.*/\1/p' \
	    src/lua/lib/*.lua | tr '\n' ' ')" '
	{ line[++n] = $0 }
	END {
		split(libs, l, " ")
		for (i in l)
			lib[l[i]] = 1
		do {
			changed = 0
			for (i = 1; i <= n; i++) {
				if (gone[i] || !match(line[i], /^local function [A-Za-z_0-9]+\(/))
					continue
				name = substr(line[i], 16, RLENGTH - 16)
				if (!(name in lib))
					continue
				for (e = i; e <= n && line[e] != "end"; e++)
					;
				if (!called(name, i, e)) {
					for (j = i; j <= e; j++)
						gone[j] = 1
					changed = 1
				}
			}
		} while (changed)
		for (i = 1; i <= n; i++)
			if (!gone[i])
				print line[i]
	}
	# Whether a line outside lines a to b (and not pruned) calls name.
	function called(name, a, b,    i, s) {
		for (i = 1; i <= n; i++) {
			if (gone[i] || (i >= a && i <= b))
				continue
			s = " " line[i] " "
			if (s ~ ("[^A-Za-z_0-9.]" name "[^A-Za-z_0-9]"))
				return 1
		}
		return 0
	}'
}

# contract FILE: FILE's --@keys, --@argv and --@reply lines as C (the
# header mode); with a second argument, instead check that the
# assembled text on standard input uses no KEYS[n] or ARGV[n] past
# what they declare.
contract() {
	awk -v file="$1" -v check="${2:-}" '
	function fail(msg) {
		printf "luagen: %s: %s\n", file, msg > "/dev/stderr"
		exit 1
	}
	BEGIN {
		n = split("K:k fence:f meta:m wake:w waiting:a holders:h " \
		    "hmeta:H xwait:q xwake:x stop:s stopped:d done:o", kv, " ")
		for (i = 1; i <= n; i++) {
			split(kv[i], p, ":")
			letter[p[1]] = p[2]
		}
		name = file
		sub(/.*\//, "", name)
		sub(/\.lua$/, "", name)
		up = toupper(name)
		while ((getline line < file) > 0) {
			if (line ~ /^--@keys[ \t]/) {
				nk = split(substr(line, 9), keys, " ")
				known = 1
				for (i = 1; i <= nk; i++)
					known = known && (keys[i] in letter)
			} else if (line ~ /^--@argv([ \t]|$)/) {
				na = split(substr(line, 9), argv, " ")
				sawargv = 1
			}
			else if (line ~ /^--@reply[ \t]/)
				nr = split(substr(line, 10), reply, " ")
		}
		if (nk == 0 || !sawargv)
			fail("no --@keys or --@argv line")
		fixed = na
		if (argv[na] ~ /\.\.\.$/)
			fixed = na - 1
		if (check != "")
			next_check()
		else
			emit()
	}
	function emit(    i, s, v) {
		printf "\n/* %s.lua */\n", name
		if (known) {
			s = ""
			for (i = 1; i <= nk; i++)
				s = s letter[keys[i]]
			printf "#define SCRIPT_KEYS_%s \"%s\"\n", up, s
		}
		printf "#define NKEYS_%s %d\n", up, nk
		for (i = 1; i <= na; i++) {
			v = argv[i]
			sub(/\.\.\.$/, "", v)
			printf "#define ARG_%s_%s %d\n", up, toupper(v), i
		}
		printf "#define ARGC_%s %d\n", up, fixed
		for (i = 1; i <= nr; i++)
			printf "#define REPLY_%s_%s %d\n", up, toupper(reply[i]),
			    i - 1
		if (nr > 0)
			printf "#define NREPLY_%s %d\n", up, nr
	}
	function next_check(    line, s, k) {
		while ((getline line) > 0) {
			s = line
			while (match(s, /(KEYS|ARGV)\[[0-9]+\]/)) {
				k = substr(s, RSTART, RLENGTH)
				s = substr(s, RSTART + RLENGTH)
				if (k ~ /^KEYS/ && substr(k, 6) + 0 > nk)
					fail(k " past its " nk " --@keys")
				if (k ~ /^ARGV/ && fixed == na &&
				    substr(k, 6) + 0 > na)
					fail(k " past its " na " --@argv")
			}
		}
	}'
}

# entries: one line for each script that args_script() can send (each
# of its keys is one of struct keys): its enum name (the file's name,
# then _VARIANT for a --@variant line), its file's name and its key
# letters.  A `--@variant NAME KEY...` line makes the same script an
# entry of its own with fewer keys (renew.lua's lease: K alone).
entries() {
	awk '
	BEGIN {
		n = split("K:k fence:f meta:m wake:w waiting:a holders:h " \
		    "hmeta:H xwait:q xwake:x stop:s stopped:d done:o", kv, " ")
		for (i = 1; i <= n; i++) {
			split(kv[i], p, ":")
			letter[p[1]] = p[2]
		}
	}
	# The letters of the keys named in s (after its first n words),
	# or "" when one is not of struct keys.
	function letters(s, n,    w, i, c, out) {
		c = split(s, w, " ")
		out = ""
		for (i = n + 1; i <= c; i++) {
			if (!(w[i] in letter))
				return ""
			out = out letter[w[i]]
		}
		return out
	}
	FNR == 1 {
		name = FILENAME
		sub(/.*\//, "", name)
		sub(/\.lua$/, "", name)
	}
	/^--@keys[ \t]/ && (l = letters($0, 1)) != "" {
		print name, name, l
	}
	/^--@variant[ \t]/ && (l = letters($0, 2)) != "" {
		print name "_" $2, name, l
	}
	# Keys that are not of struct keys, given by the caller
	# (args_script_keys(): the queue of fair.c).
	/^--@caller-keys([ \t]|$)/ {
		print name, name, ""
	}' src/lua/*.lua
}

# exports FILE: the functions FILE defines for others (its top-level
# `local function NAME`).
exports() {
	sed -n 's/^local function \([A-Za-z_0-9]*\)(.*/\1/p' "$1"
}

# outside FILE: the names FILE reads that it does not define, one a
# line: a script's KEYS and ARGV names (its prologue) and the functions
# of the fragments it includes, theirs included.
outside() {
	case $1 in
	*/lib/*) ;;
	*)
		for n in $(decl "$1" keys) $(decl "$1" argv); do
			echo "${n%...}"
		done
		;;
	esac
	sed -n 's/^[ \t]*--@include[ \t]\{1,\}\([^ \t]*\).*/\1/p' "$1" |
		while read -r inc; do
			exports "src/lua/$inc"
			outside "src/lua/$inc"
		done
}

# The C string literal lines of standard input's lines.
c_lines() {
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$/\\n"/'
}

case $mode in
h)
	echo '/* script_args.h - generated by tools/luagen.sh from the --@keys,'
	echo ' * --@argv and --@reply lines of src/lua/: do not edit; edit the'
	echo ' * .lua files and run make. */'
	echo '#ifndef REDLOCK_SCRIPT_ARGS_H'
	echo '#define REDLOCK_SCRIPT_ARGS_H'
	for f in src/lua/*.lua; do
		contract "$f"
	done
	echo
	echo '/* The text of each script (scripts.c). */'
	for f in src/lua/*.lua; do
		echo "extern const char lua_$(basename "$f" .lua)[];"
	done
	echo
	echo '/* The scripts that args_script() sends (proto.c), by name. */'
	echo 'enum script {'
	entries | while read -r e _ l; do
		up=$(echo "$e" | tr '[:lower:]' '[:upper:]')
		printf '\tSCRIPT_%s,\n' "$up"
	done
	echo '	SCRIPT_COUNT'
	echo '};'
	entries | while read -r e f l; do
		[ "$e" = "$f" ] && continue
		up=$(echo "$e" | tr '[:lower:]' '[:upper:]')
		printf '#define SCRIPT_KEYS_%s "%s"\n' "$up" "$l"
	done
	echo
	echo '#endif'
	;;
check)
	# Each file alone, as luacheck sees it: a script's names, what its
	# fragments define and the {{PROTO_...}} numbers (a table of a
	# name, to luacheck) are given; a fragment's own functions may go
	# unused (its includers call them).
	status=0
	for f in src/lua/*.lua src/lua/lib/*.lua; do
		set -- --quiet --codes --formatter plain
		for n in $(outside "$f" | sort -u) $(echo "$consts" |
		    sed 's/=[0-9]*//g'); do
			set -- "$@" --read-globals "$n"
		done
		for n in $(exports "$f"); do
			case $f in */lib/*) set -- "$@" --ignore "211/$n" ;; esac
		done
		luacheck "$@" -- "$f" || status=1
	done
	exit "$status"
	;;
lua)
	mkdir -p "$2"
	for f in src/lua/*.lua; do
		expand "$f" | prune >"$2/$(basename "$f")"
	done
	;;
c)
	echo '/* scripts.c - generated by tools/luagen.sh from the files of src/lua/:'
	echo ' * do not edit; edit the .lua files and run make. */'
	echo '#include "scripts.h"'
	for f in src/lua/*.lua; do
		name=$(basename "$f" .lua)
		text=$(expand "$f" | prune)
		printf '%s\n' "$text" | contract "$f" check
		echo
		echo "const char lua_${name}[] ="
		printf '%s\n' "$text" | c_lines | sed '$s/$/;/'
	done
	echo
	echo 'const struct lua_script lua_scripts[] = {'
	for f in src/lua/*.lua; do
		name=$(basename "$f" .lua)
		printf '\t{ "%s", lua_%s },\n' "$name" "$name"
	done
	echo '	{ 0, 0 }'
	echo '};'
	echo
	# Each entry's SHA-1 (its EVALSHA name) beside its text: hashing
	# the scripts at every start cost a run more instructions than all
	# the rest of it (tests/unit checks each against its text).
	echo 'const struct script_entry script_table[SCRIPT_COUNT] = {'
	entries | while read -r e f l; do
		up=$(echo "$e" | tr '[:lower:]' '[:upper:]')
		sha=$(printf '%s\n' "$(expand "src/lua/$f.lua" | prune)" | sha1sum)
		printf '\t[SCRIPT_%s] = { lua_%s, "%s", "%s" },\n' "$up" "$f" \
		    "${sha%% *}" "$l"
	done
	echo '};'
	;;
esac
