#!/usr/bin/env bash
#
# make package-check: the Debian package, from a clean clone, in fresh
# Debian 12 roots (debootstrap), as a distribution would build, check,
# install and run it.  Needs root, a network and, on the host, debootstrap,
# lintian, blhc, devscripts (hardening-check), autopkgtest and
# systemd-container (systemd-nspawn).
#
#   build      apt-get build-dep, then dpkg-buildpackage -us -uc -b as a
#              user, the suite running in dh_auto_test
#   lintian    lintian --fail-on error,warning on the .changes
#   blhc       blhc --all --debian on the build log
#   autopkgtest  debian/tests against the .deb, in a root of its own
#   install    apt-get install ./redlock_*.deb pulls in only what the
#              control file names (and what those need); purge leaves the
#              root as it was; hardening-check on the installed binary;
#              redlock --version, man redlock, a lock against redis-server
#   systemd    a root booted with systemd-nspawn -b runs
#              tests/package/systemd-check.sh (a Type=notify unit waiting
#              for a held lock; the shipped units: systemd-analyze verify
#              and security, the timer, skips in the journal, a hung job
#              stopped at the start timeout); skipped, saying so,
#              when systemd-nspawn cannot boot on this machine
#
# Ends with "package-check: PASS" or "package-check: FAIL (...)" and a
# non-zero status on failure.
#
# Environment:
#   PACKAGE_CHECK_DIR    work directory (default build/package); emptied
#   PACKAGE_CHECK_CACHE  the debootstrap tarball and apt's downloads, kept
#                        between runs (default build/package-cache)
#   PACKAGE_TESTS        the bats files of the suite at build time and in
#                        autopkgtest (REDLOCK_TESTS of tests/run.sh); empty:
#                        the whole suite, some ten minutes each.  The
#                        default is a quick set that runs every form, TLS
#                        (libssl loaded by the installed binary), systemd's
#                        protocol, the man page's and completions' sync,
#                        make install and the shipped units.

set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${PACKAGE_CHECK_DIR:-$repo/build/package}
cache=${PACKAGE_CHECK_CACHE:-$repo/build/package-cache}
suite=bookworm
tests=${PACKAGE_TESTS-cli.bats run.bats verbs.bats tls.bats sd-notify.bats cron.bats names.bats credentials.bats reentrance.bats undelivered.bats manpage-sync.bats completion.bats install.bats units.bats}

t_start=$SECONDS
failures=()
mounted=()

say() { printf '==> %s (%ds)\n' "$*" $((SECONDS - t_start)); }
fail() {
	printf 'package-check: FAILED: %s\n' "$*" >&2
	failures+=("$1")
}
die() {
	fail "$*"
	exit 1
}

# --- roots ---------------------------------------------------------------

# mirrors: "URI SUITE" for the suite and its -updates and -security, as
# this machine's apt sources name them (one-line and deb822 formats).
mirrors() {
	{ cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		/etc/apt/sources.list.d/*.sources 2>/dev/null || true; } | awk -v s="$suite" '
		function want(x) { return x == s || x == s "-updates" || x == s "-security" }
		/^deb / { i = 2; if ($2 ~ /^\[/) while ($i !~ /\]$/) i++; if ($2 ~ /^\[/) i++
			if (want($(i + 1))) print $i, $(i + 1); next }
		/^Types:/ { deb = / deb( |$)/ }
		/^URIs:/ { uri = $2 }
		/^Suites:/ { if (deb) for (i = 2; i <= NF; i++) if (want($i)) print uri, $i }
	' | sort -u
}

# mount_root ROOT: what a chroot needs of the kernel's file systems.
mount_root() {
	local r=$1
	mount -t proc proc "$r/proc"
	mounted+=("$r/proc")
	mount -t sysfs -o ro sysfs "$r/sys"
	mounted+=("$r/sys")
	mount --rbind /dev "$r/dev"
	mount --make-rslave "$r/dev"
	mounted+=("$r/dev")
	mkdir -p "$cache/archives/partial"
	mount --bind "$cache/archives" "$r/var/cache/apt/archives"
	mounted+=("$r/var/cache/apt/archives")
}

# Stop what runs inside our roots (processes this script started there),
# then unmount them.
cleanup() {
	local p root i
	for p in /proc/[0-9]*; do
		root=$(readlink "$p/root" 2>/dev/null) || continue
		[[ $root == "$work"/* ]] && kill -KILL "${p#/proc/}" 2>/dev/null
	done
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -R "${mounted[i]}" 2>/dev/null || umount -lR "${mounted[i]}" || true
	done
	mounted=()
}

# base_root: a minimal Debian root with this machine's mirrors and apt's
# lists, from the debootstrap tarball in the cache (made on the first
# run; CI starts without one).  Services never start inside it
# (redis-server's would listen on this machine's port 6379).
base_root() {
	local r=$work/base tarball=$cache/$suite-minbase.tgz line
	if [[ ! -s $tarball ]]; then
		say "debootstrap --make-tarball ($main_mirror)"
		mkdir -p "$cache"
		debootstrap --variant=minbase --make-tarball="$tarball.tmp" \
			"$suite" "$work/tarball-root" "$main_mirror" >"$work/debootstrap.log" 2>&1 ||
			die "debootstrap --make-tarball failed: see $work/debootstrap.log"
		mv "$tarball.tmp" "$tarball"
		rm -rf --one-file-system "$work/tarball-root"
	fi
	say "debootstrap --unpack-tarball"
	debootstrap --variant=minbase --unpack-tarball="$tarball" "$suite" "$r" \
		"$main_mirror" >>"$work/debootstrap.log" 2>&1 ||
		die "debootstrap failed: see $work/debootstrap.log"
	printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
	chmod 755 "$r/usr/sbin/policy-rc.d"
	while read -r line; do
		echo "deb $line main"
	done <<<"$all_mirrors" >"$r/etc/apt/sources.list"
	cp /etc/resolv.conf "$r/etc/resolv.conf"
	# debootstrap writes no /etc/hosts (an installer or schroot does), and
	# the tests reach servers by the name localhost.
	printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$r/etc/hosts"
	mount_root "$r"
	in_root "$r" apt-get update -qq >/dev/null || die "apt-get update failed"
	cleanup
}

# new_root NAME: a copy of the base root, mounted for chroot.
new_root() {
	local r=$work/$1
	cp -a --reflink=auto "$work/base" "$r"
	echo "package-check-$1" >"$r/etc/hostname"
	mount_root "$r"
}

# in_root ROOT CMD...: CMD as root inside ROOT, with a plain environment.
in_root() {
	local r=$1
	shift
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 \
		DEBIAN_FRONTEND=noninteractive chroot "$r" "$@"
}

# --- steps -----------------------------------------------------------------

# The source: a clone of the committed tree (what a user would download).
clone() {
	say "clean clone of $(git -C "$repo" rev-parse --short HEAD)"
	if [[ -n $(git -C "$repo" status --porcelain --untracked-files=no) ]]; then
		echo "# note: uncommitted changes are not in the package"
	fi
	git clone -q "$repo" "$work/src"
	version=$(cd "$work/src" && dpkg-parsechangelog -SVersion)
	local mv
	mv=$(sed -n 's/^VERSION *= *//p' "$work/src/Makefile")
	[[ $version == "$mv" ]] ||
		fail "debian/changelog says $version, the Makefile's VERSION $mv"
}

build() {
	local r=$work/build
	new_root build
	say "build: apt-get build-dep"
	in_root "$r" useradd -m -d /home/builder builder
	mkdir -p "$r/build"
	cp -a "$work/src" "$r/build/redlock-$version"
	in_root "$r" chown -R builder: /build
	in_root "$r" apt-get build-dep -y -qq "/build/redlock-$version" >"$work/build-dep.log" 2>&1 ||
		die "apt-get build-dep failed: see $work/build-dep.log"
	say "build: dpkg-buildpackage -us -uc -b (tests: ${tests:-all})"
	if ! in_root "$r" chroot --userspec=builder:builder / env HOME=/home/builder \
		REDLOCK_TESTS="$tests" sh -c \
		"cd /build/redlock-$version && dpkg-buildpackage -us -uc -b" \
		>"$work/build.log" 2>&1; then
		tail -30 "$work/build.log"
		die "dpkg-buildpackage failed: see $work/build.log"
	fi
	grep -E '^[0-9]+ passed, [0-9]+ failed$' "$work/build.log" || true
	mkdir -p "$work/out"
	cp "$r"/build/*.deb "$r"/build/*.changes "$r"/build/*.buildinfo "$work/out/"
	deb=$(ls "$work/out/redlock_${version}_"*.deb)
	changes=$(ls "$work/out/redlock_${version}_"*.changes)
}

check_lintian() {
	local st=0 overrides
	say "lintian --fail-on error,warning"
	lintian --fail-on error,warning "$changes" >"$work/lintian.log" 2>&1 || st=$?
	grep -v 'running with root privileges is not recommended' "$work/lintian.log" || true
	overrides=$(find "$work/src/debian" -name '*lintian-overrides*')
	if ((st != 0)); then
		fail "lintian"
	elif [[ -n $overrides ]]; then
		echo "lintian: clean, with the overrides of $overrides"
	else
		echo "lintian: clean, no overrides"
	fi
}

check_blhc() {
	say "blhc --all --debian"
	# --debian: Debian's gcc builds position-independent executables
	# without -fPIE on the command line (blhc(1)).
	if blhc --all --debian "$work/build.log"; then
		echo "blhc: clean"
	else
		fail "blhc"
	fi
}

check_autopkgtest() {
	local r=$work/autopkgtest
	new_root autopkgtest
	say "autopkgtest (tests: ${tests:-all})"
	if autopkgtest -q --env=REDLOCK_TESTS="$tests" \
		--output-dir="$work/autopkgtest-out" -B "$deb" "$work/src/" \
		-- chroot "$r" >"$work/autopkgtest.log" 2>&1; then
		grep -E '^[0-9]+ passed, [0-9]+ failed$|^suite +PASS' "$work/autopkgtest.log" || true
		echo "autopkgtest: PASS"
	else
		tail -40 "$work/autopkgtest.log"
		fail "autopkgtest (see $work/autopkgtest.log)"
	fi
}

check_install() {
	local r=$work/install
	new_root install
	say "install: apt-get install ./$(basename "$deb")"
	cp "$deb" "$r/tmp/"
	cp "$here/install-check.sh" "$r/tmp/"
	if in_root "$r" /bin/bash /tmp/install-check.sh "/tmp/$(basename "$deb")" "$version"; then
		:
	else
		fail "install (see above)"
	fi
	say "hardening-check on the installed binary"
	# Control-flow protection (CET) cannot be had on Debian 12: its C
	# start files carry no IBT/SHSTK property (see debian/rules).
	if [[ -f $r/tmp/redlock.installed ]] &&
		hardening-check --nocfprotection "$r/tmp/redlock.installed"; then
		:
	else
		fail "hardening-check"
	fi
}

check_systemd() {
	local r=$work/systemd out
	new_root systemd
	say "systemd: a root with systemd, redis-server and the package"
	cp "$deb" "$r/tmp/"
	in_root "$r" apt-get install -y -qq systemd systemd-sysv redis-server \
		redis-tools man-db "/tmp/$(basename "$deb")" >"$work/systemd-apt.log" 2>&1 ||
		die "installing systemd in its root failed: see $work/systemd-apt.log"
	rm -f "$r/usr/sbin/policy-rc.d"
	install -m 755 "$here/systemd-check.sh" "$r/root/systemd-check.sh"
	cat >"$r/etc/systemd/system/package-check.service" <<'EOF'
[Unit]
Description=redlock package-check under systemd
After=redis-server.service

[Service]
Type=oneshot
ExecStart=/root/systemd-check.sh
ExecStopPost=/bin/systemctl poweroff --no-block
EOF
	mkdir -p "$r/etc/systemd/system/multi-user.target.wants"
	ln -sf ../package-check.service "$r/etc/systemd/system/multi-user.target.wants/"
	cleanup # the booted root mounts its own /proc, /sys and /dev
	say "systemd: systemd-nspawn -b"
	out=0
	timeout 300 systemd-nspawn -q -b -D "$r" --register=no --keep-unit \
		--private-network --console=read-only >"$work/nspawn.log" 2>&1 || out=$?
	if [[ ! -e $r/root/booted ]]; then
		tail -20 "$work/nspawn.log"
		echo "SKIP systemd: systemd-nspawn cannot boot a Debian root on this machine (status $out; see $work/nspawn.log)"
		systemd_skipped=1
		return 0
	fi
	cat "$r/root/systemd-check.log" 2>/dev/null || true
	grep -qx PASS "$r/root/result" 2>/dev/null ||
		fail "systemd (status $out; see $r/root/systemd-check.log)"
}

# --- main ------------------------------------------------------------------

# However it ends, nothing stays mounted or running, and the last line
# says how it went.
finish() {
	local st=$?
	trap - EXIT
	cleanup
	if ((st != 0)) || ((${#failures[@]})); then
		echo "package-check: FAIL (${failures[*]:-status $st}) after $((SECONDS - t_start))s"
		exit 1
	fi
	echo "package-check: PASS after $((SECONDS - t_start))s$( ((systemd_skipped)) &&
		echo ' (systemd test SKIPPED: systemd-nspawn cannot boot here)')"
}
systemd_skipped=0
trap finish EXIT
[[ $(id -u) == 0 ]] || die "needs root (debootstrap, chroot, systemd-nspawn)"
missing=
for t in debootstrap lintian blhc hardening-check autopkgtest systemd-nspawn \
	dpkg-parsechangelog git; do
	command -v "$t" >/dev/null || missing+=" $t"
done
[[ -z $missing ]] || die "cannot find$missing (apt-get install $("$repo/tools/packages.sh" package))"

all_mirrors=$(mirrors)
main_mirror=$(awk -v s="$suite" '$2 == s { print $1; exit }' <<<"$all_mirrors")
if [[ -z $main_mirror ]]; then
	main_mirror=http://deb.debian.org/debian
	all_mirrors="$main_mirror $suite"
fi

if [[ -e $work ]]; then
	# What a run that was killed left mounted (only this script mounts
	# there), deepest first; rm must not reach through a bind mount.
	{ findmnt -rn -o TARGET | grep "^$work/" || true; } | sort -r |
		while read -r m; do umount -l "$m"; done
	if findmnt -rn -o TARGET | grep -q "^$work/"; then
		die "cannot unmount what is mounted under $work"
	fi
	rm -rf --one-file-system "$work"
fi
mkdir -p "$work"
clone
base_root
build
check_lintian
check_blhc
check_autopkgtest
check_install
check_systemd
