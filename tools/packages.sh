#!/bin/sh
#
# packages.sh - the Debian packages of tools/packages.txt, by purpose.
#
# Usage:
#   tools/packages.sh [PURPOSE...]            print the packages (one line,
#                                             each once; every purpose when
#                                             none is named)
#   tools/packages.sh --missing PURPOSE...    print those dpkg does not
#                                             have installed
#   tools/packages.sh --install PURPOSE...    install the missing ones with
#                                             apt-get when run as root on
#                                             Debian; otherwise print the
#                                             apt-get line to run and fail
#   tools/packages.sh --purposes              print the purposes
#
# Without dpkg-query (not Debian) nothing can be said to be missing: the
# build and the tests then name what they cannot find themselves.
# Exits 0 on success, 1 when --install could not install, 64 on a usage
# error (an unknown purpose included).

set -eu

list=$(dirname "$0")/packages.txt
prog=packages.sh

usage() {
	echo "$prog: $1" >&2
	echo "usage: tools/packages.sh [--missing | --install] [PURPOSE...] | --purposes" >&2
	exit 64
}

# purposes: every purpose of the list, each once, in its order.
purposes() {
	awk '!/^#/ && NF >= 2 && !seen[$1]++ { print $1 }' "$list"
}

# check_purposes PURPOSE...: a usage error unless the list has each.
check_purposes() {
	known=$(purposes)
	for p in "$@"; do
		# shellcheck disable=SC2086 # one word per purpose
		printf '%s\n' "$known" | grep -qx -- "$p" ||
			usage "no purpose '$p' in tools/packages.txt (purposes:$(printf ' %s' $known))"
	done
}

# packages PURPOSE...: the packages of these purposes (of all when none),
# one line, each once, in the list's order.
packages() {
	awk -v want=" $* " '
		!/^#/ && NF >= 2 && (want == "  " || index(want, " " $1 " ")) &&
			!seen[$2]++ { printf "%s%s", sep, $2; sep = " " }
		END { print "" }' "$list"
}

# missing PACKAGE...: those dpkg does not report as installed.
missing() {
	command -v dpkg-query >/dev/null || return 0
	# dpkg-query names unknown packages on stderr and exits 1.
	have=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "$@" 2>/dev/null |
		awk '$2 == "installed" { print $1 }') || true
	out=
	for p in "$@"; do
		printf '%s\n' "$have" | grep -qx -- "$p" || out="$out${out:+ }$p"
	done
	[ -z "$out" ] || echo "$out"
}

# install_missing PURPOSE...: apt-get install what is missing, as root.
install_missing() {
	# shellcheck disable=SC2046 # one word per package
	want=$(missing $(packages "$@"))
	[ -n "$want" ] || return 0
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		echo "redlock: missing packages ($*); run:" >&2
		echo "  sudo apt-get install $want" >&2
		exit 1
	fi
	echo "$prog: installing $want" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086 # one word per package
	apt-get install -y -qq $want >/dev/null
}

[ -r "$list" ] || { echo "$prog: cannot read $list" >&2; exit 70; }
case ${1:-} in
--purposes)
	[ $# -eq 1 ] || usage "--purposes takes no purpose"
	purposes
	;;
--missing | --install)
	mode=${1#--}
	shift
	[ $# -gt 0 ] || usage "--$mode needs a purpose"
	check_purposes "$@"
	if [ "$mode" = missing ]; then
		# shellcheck disable=SC2046 # one word per package
		missing $(packages "$@")
	else
		install_missing "$@"
	fi
	;;
-*) usage "unknown option '$1'" ;;
*)
	check_purposes "$@"
	packages "$@"
	;;
esac
