#!/bin/sh
#
# build-variant.sh - build redlock (and the unit test binary) with other
# compiler flags into build/VARIANT/, leaving the normal build's src/*.o
# and ./redlock alone.  Used by `make sanitize` and `make lint`.
#
# Usage: tools/build-variant.sh VARIANT
# Environment:
#   CC        compiler (default: cc)
#   CFLAGS    optimisation, debugging and sanitizer flags (default: -O2 -g)
#   LDFLAGS   extra link flags (sanitizer runtimes)
#   VERSION   the version string (default: tools/version.sh's, as the
#             Makefile's build says)
# Writes build/VARIANT/redlock, build/VARIANT/unit and build/VARIANT/*.o.
# Every src/*.c is compiled, so a new source file needs no change here.
# The Makefile's warnings and defines are always added, as there.
# Exits non-zero if anything fails to compile or link.

set -eu

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: tools/build-variant.sh VARIANT" >&2
	exit 64
fi
variant=$1
case $variant in
*/* | .*)
	echo "build-variant.sh: bad VARIANT '$variant'" >&2
	exit 64
	;;
esac

cd "$(dirname "$0")/.."
CC=${CC:-cc}
CFLAGS=${CFLAGS:--O2 -g}
LDFLAGS=${LDFLAGS:-}
if [ -z "${VERSION:-}" ]; then
	VERSION=$(tools/version.sh)
fi
pkg_cflags=$(pkg-config --cflags hiredis uuid openssl 2>/dev/null || true)
pkg_libs=$(pkg-config --libs hiredis uuid 2>/dev/null || echo '-lhiredis -luuid')

out=build/$variant
mkdir -p "$out"
# build/ holds generated files only: keep it out of git without needing
# an entry in the top-level .gitignore.
[ -f build/.gitignore ] || echo '*' >build/.gitignore
rm -f "$out"/*.o "$out/redlock" "$out/unit"

# The Makefile's mandatory flags (override CFLAGS += ...), after the
# caller's, as there.
# shellcheck disable=SC2086 # word splitting of flag lists is intended
set -- $CFLAGS -std=c11 -D_GNU_SOURCE -pthread -Wall -Wextra \
	"-DREDLOCK_VERSION=\"$VERSION\"" $pkg_cflags

echo "build-variant: $variant: $CC $*"
objs=
for src in src/*.c; do
	obj=$out/$(basename "$src" .c).o
	"$CC" "$@" -c -o "$obj" "$src"
	objs="$objs $obj"
done
# shellcheck disable=SC2086
"$CC" "$@" $LDFLAGS -o "$out/redlock" $objs $pkg_libs -pthread
# The unit tests need only the pure parsers (no hiredis, no OpenSSL).
# shellcheck disable=SC2086
"$CC" "$@" -Isrc $LDFLAGS -o "$out/unit" tests/unit.c "$out/url.o" \
	"$out/url_redact.o" "$out/clock.o" "$out/lease.o" "$out/config.o" \
	"$out/config_args.o" "$out/config_pass.o" "$out/config_env.o" "$out/config_opts.o" \
	"$out/log.o" "$out/scripts.o" "$out/sha1.o" "$out/fmt.o" \
	"$out/proto.o" "$out/slot.o" "$out/utf8.o" -pthread
echo "build-variant: $variant: built $out/redlock and $out/unit"
