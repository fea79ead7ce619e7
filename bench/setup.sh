#!/bin/bash
# bench/setup.sh - install what `make bench` measures with, from Debian's
# packages (the bench purpose of tools/packages.txt): hyperfine, GNU
# time, redis-server and redis-cli (required), and the optional
# comparators python3-redis (redis-py Lock) and etcd-server +
# etcd-client (`etcdctl lock`), where the distribution has them.  Packages already installed are left alone; a package that the
# archive does not have is skipped with a note.  Needs root (or sudo).
set -u -o pipefail

read -r -a want <<<"$("$(dirname "$0")/../tools/packages.sh" bench)"

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		exec sudo "$0" "$@"
	fi
	echo "bench/setup.sh: run as root: apt-get install ${want[*]}" >&2
	exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "bench/setup.sh: no apt-get; install by hand: ${want[*]}" >&2
	exit 1
fi

installed() {
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

missing=()
for p in "${want[@]}"; do
	installed "$p" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
	echo "bench/setup.sh: everything is installed"
	exit 0
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || exit 1
get=()
for p in "${missing[@]}"; do
	cand=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ { print $2 }')
	if [ -z "$cand" ] || [ "$cand" = "(none)" ]; then
		echo "bench/setup.sh: $p is not in this distribution's archive; skipped" >&2
	else
		get+=("$p")
	fi
done
[ "${#get[@]}" -eq 0 ] && exit 0
echo "bench/setup.sh: installing ${get[*]}"
apt-get install -y -qq --no-install-recommends "${get[@]}" >/dev/null || exit 1
exit 0
