#!/bin/sh
#
# luagen.sh - assemble the server-side Lua scripts of src/lua/ into the
# C file that embeds them (src/scripts.c, committed; the Makefile
# regenerates it when a .lua file changes, and `make lint` checks that
# it is up to date and runs luacheck over the assembled text).
#
# Each src/lua/NAME.lua is one script, compiled to `const char
# lua_NAME[]` (declared in src/scripts.h); src/lua/lib/*.lua are the
# fragments that scripts share.  Assembling a file:
#
#   - a line whose first non-blank characters are `--` (a comment), and
#     an empty line, is left out: the text sent to the server is the
#     code alone, so comments never change a script's SHA-1 (its
#     EVALSHA name, which tests/unit.c checks against a reference list);
#   - `--@include lib/FILE.lua NAME=VALUE...` is replaced by FILE's
#     assembled text, its {{NAME}} filled with VALUE (a VALUE with
#     spaces is written in double quotes; {{...}} in a VALUE is filled
#     first, so a fragment passes its own parameters on);
#   - {{NAME}} elsewhere is an include parameter or a number constant of
#     src/proto.h (#define PROTO_... digits), e.g. {{PROTO_CLAIM_MS}};
#     an unknown NAME is an error.
#   Nothing else is touched: lines are copied byte for byte, indentation
#   included, so a fragment is written at the indentation it has in
#   every script that includes it.
#
# To add a script: write src/lua/NAME.lua (a comment header giving its
# KEYS, ARGV and replies), declare lua_NAME in src/scripts.h with its
# argument positions, run `make` (or tools/luagen.sh c >src/scripts.c),
# commit src/scripts.c with it, and add its SHA-1 to the reference list
# in tests/unit.c.
#
# Usage: tools/luagen.sh c          the C file, on standard output
#        tools/luagen.sh lua DIR    each assembled script as DIR/NAME.lua
# Exits non-zero on an unknown {{NAME}}, a missing include or a bad
# directive.

set -eu
cd "$(dirname "$0")/.."

usage() {
	echo "usage: tools/luagen.sh c | tools/luagen.sh lua DIR" >&2
	exit 64
}
[ $# -ge 1 ] || usage
mode=$1
case $mode in
c) [ $# -eq 1 ] || usage ;;
lua) [ $# -eq 2 ] || usage ;;
*) usage ;;
esac

# NAME=VALUE of the number constants the scripts may use.
consts=$(sed -n 's/^#define \(PROTO_[A-Z0-9_]*\) *\([0-9][0-9]*\)$/\1=\2/p' \
	src/proto.h | tr '\n' ' ')

# expand FILE: FILE's assembled text on standard output.
expand() {
	awk -v consts="$consts" -v top="$1" '
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
			print fill(line, params, where)
		}
		if (rc < 0)
			fail(file ": cannot read it")
		close(file)
	}
	BEGIN {
		nc = split(consts, c, " ")
		cparams = ""
		for (i = 1; i <= nc; i++)
			cparams = cparams "\034" c[i]
		expand(top, "", 0)
	}'
}

# The C string literal lines of standard input's lines.
c_lines() {
	sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$/\\n"/'
}

case $mode in
lua)
	mkdir -p "$2"
	for f in src/lua/*.lua; do
		expand "$f" >"$2/$(basename "$f")"
	done
	;;
c)
	echo '/* scripts.c - generated by tools/luagen.sh from the files of src/lua/:'
	echo ' * do not edit; edit the .lua files and run make. */'
	echo '#include "scripts.h"'
	for f in src/lua/*.lua; do
		name=$(basename "$f" .lua)
		text=$(expand "$f")
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
	;;
esac
