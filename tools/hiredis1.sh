#!/usr/bin/env bash
#
# hiredis1.sh - build redlock against a hiredis 1.x source tree and run
# the test suite with that binary (`make hiredis1 HIREDIS_SRC=DIR`).
# Debian's libhiredis-dev is 0.14, which `make check` covers; this keeps
# the 1.x API working too.  The tree is copied to build/hiredis1/, built
# there as a static library, and found through a pkg-config file of our
# own, so neither the tree nor the normal build is touched.
#
# Usage: tools/hiredis1.sh DIR
#   DIR   a hiredis source tree (git clone of redis/hiredis, 1.0 or later)
# Environment:
#   HIREDIS1_FILTER   a bats --filter regex (default: the whole suite)
# Exits 0 when the build and every test passed.
set -eu -o pipefail
cd "$(dirname "$0")/.."
repo=$PWD

if [[ $# -ne 1 || ! -f $1/hiredis.h ]]; then
	echo "usage: tools/hiredis1.sh HIREDIS-SOURCE-DIR (a tree with hiredis.h)" >&2
	exit 64
fi
major=$(sed -n 's/^#define HIREDIS_MAJOR \([0-9]*\).*/\1/p' "$1/hiredis.h")
if [[ -z $major || $major -lt 1 ]]; then
	echo "hiredis1.sh: $1 is hiredis ${major:-?}.x, not 1.x" >&2
	exit 64
fi

out=$repo/build/hiredis1
rm -rf "$out"
mkdir -p "$out/include" "$out/pkgconfig"
[[ -f build/.gitignore ]] || echo '*' >build/.gitignore
cp -R "$1" "$out/src"
rm -rf "$out/src/.git"
echo "# hiredis1: building hiredis $major.x from $1"
# LIBRARY_PATH and the like would only confuse its install paths; we
# build, never install.
# Clean first: a .so left in the tree would be linked instead.
{ make -C "$out/src" clean && make -C "$out/src" static; } >"$out/build.log" 2>&1 || {
	cat "$out/build.log" >&2
	exit 1
}
ln -s ../src "$out/include/hiredis"
cat >"$out/pkgconfig/hiredis.pc" <<EOF
Name: hiredis
Description: hiredis from $1, for tools/hiredis1.sh
Version: $major
Libs: -L$out/src -lhiredis
Cflags: -I$out/include
EOF
# The warnings are errors here: the 1.x headers must not bring any.
PKG_CONFIG_PATH=$out/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} \
	CFLAGS='-O2 -g -Werror' tools/build-variant.sh hiredis1
# (grep reads all of nm's output: -q would stop early, and pipefail
# would then take nm's SIGPIPE for a failure.)
if ! nm "build/hiredis1/redlock" | grep hiredisAllocFns >/dev/null; then
	echo "hiredis1.sh: build/hiredis1/redlock did not link hiredis 1.x" >&2
	exit 1
fi
echo "# hiredis1: unit tests"
build/hiredis1/unit
echo "# hiredis1: bats suite with REDLOCK=build/hiredis1/redlock"
REDLOCK=$repo/build/hiredis1/redlock tests/run.sh "${HIREDIS1_FILTER:-}"
