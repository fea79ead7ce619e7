#!/bin/sh
#
# version.sh - the version a build of this tree says it is (`redlock
# --version`; the Makefile's BUILD_VERSION).
#
#   VERSION                    the Makefile's VERSION, when the tree is
#                              the commit that set it (a release), or
#                              when there is no git checkout to ask (a
#                              tarball, the Debian package's build)
#   VERSION+git.N.HASH         N commits after that one, HEAD being HASH
#                              (its first 12 hex digits)
#   VERSION+git.N.HASH.dirty   ... and a tracked file changed since HEAD
#
# The release is found as the last commit that changed the Makefile's
# VERSION line, not by a tag, so every clone with that history gives the
# same answer and a release needs nothing beyond its commit.
# Usage: tools/version.sh                   (prints one line)

set -eu
cd "$(dirname "$0")/.."

version=$(sed -n 's/^VERSION *= *//p' Makefile)
if [ -z "$version" ]; then
	echo "version.sh: the Makefile has no VERSION line" >&2
	exit 70
fi

# Only a checkout whose top is this tree: a copy of it inside another
# checkout (make deb's build/deb) has no history of its own.
top=$(git rev-parse --show-toplevel 2>/dev/null) || top=
if [ "$top" != "$(pwd -P)" ]; then
	echo "$version"
	exit 0
fi

release=$(git log -1 --format=%H -G '^VERSION *=' -- Makefile)
n=$(git rev-list --count "${release:+$release..}HEAD")
dirty=
git diff --quiet HEAD -- 2>/dev/null || dirty=.dirty
if [ "$n" = 0 ] && [ -z "$dirty" ]; then
	echo "$version"
else
	echo "$version+git.$n.$(git rev-parse HEAD | cut -c1-12)$dirty"
fi
