#!/bin/bash
# shellcheck disable=SC2015,SC2016 # ok() never fails; $ in quotes is for the inner shell
#
# Inside a fresh Debian root (tests/package/run.sh): install the package
# with apt-get as a user would, check what it pulled in, run it, purge it.
#
# Usage: install-check.sh DEB VERSION

set -u
deb=$1 version=$2
fails=0
export DEBIAN_FRONTEND=noninteractive
ok() { echo "ok - $*"; }
words() { tr '\n' ' ' <<<"$1"; }
bad() {
	echo "not ok - $*"
	fails=$((fails + 1))
}

packages() { dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' | awk '$1 == "ii" { print $2 }' | sort; }

# Every file and directory of the root but the kernel's, the temporary and
# apt's and dpkg's own books (checked apart: dpkg-query below).
snapshot() {
	find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp \
		-o -path /run -o -path /var/cache -o -path /var/lib/apt \
		-o -path /var/lib/dpkg -o -path /var/log \) -prune -o -print | sort
}

# The names a Depends or Recommends field lists, alternatives included.
dep_names() {
	tr ',|' '\n' | sed -E 's/\(.*\)//; s/:[a-z0-9]+//; s/[[:space:]]//g' | grep .
}

before=$(packages)
files_before=$(snapshot)
apt-get install -y -qq "$deb" >/tmp/install.log 2>&1 ||
	{ cat /tmp/install.log; bad "apt-get install ./$(basename "$deb")"; exit 1; }
ok "apt-get install ./$(basename "$deb")"

# What came in is redlock, what its control file names and what those
# need (apt also installs what they recommend).
new=$(comm -13 <(echo "$before") <(packages))
direct=$( { dpkg-deb -f "$deb" Depends; echo ,; dpkg-deb -f "$deb" Recommends; } | dep_names | sort -u)
# shellcheck disable=SC2086 # one package name a word
closure=$(apt-cache depends --recurse --no-suggests --no-conflicts --no-breaks \
	--no-replaces --no-enhances $direct 2>/dev/null | grep -v '^ ' | tr -d '<>' | sort -u)
extra=$(comm -23 <(echo "$new" | grep -vx redlock) <(echo "$closure"))
echo "# installed: $(words "$new")"
echo "# the control file names: $(words "$direct")"
if [[ -z $extra ]]; then
	ok "apt-get pulled in only what the control file says"
else
	bad "apt-get pulled in packages the control file does not lead to: $(words "$extra")"
fi
for p in $direct; do
	grep -qx "$p" <<<"$(packages)" || bad "$p (named by the control file) is not installed"
done

out=$(redlock --version)
if [[ $out == "redlock $version" ]]; then
	ok "redlock --version: $out"
else
	bad "redlock --version said '$out', not 'redlock $version'"
fi

apt-get purge -y -qq --autoremove redlock >/tmp/purge.log 2>&1 || bad "apt-get purge redlock"
if [[ $(packages) == "$before" ]]; then
	ok "purge --autoremove leaves the packages as they were"
else
	bad "packages after purge differ: $(comm -3 <(echo "$before") <(packages) | tr '\n' ' ')"
fi
left=$(comm -3 <(echo "$files_before") <(snapshot))
if [[ -z $left ]]; then
	ok "purge leaves no file behind"
else
	bad "purge left the file system changed: $(words "$left")"
fi
if compgen -G '/var/lib/dpkg/info/redlock.*' >/dev/null; then
	bad "dpkg still has /var/lib/dpkg/info/redlock.*"
else
	ok "dpkg keeps no record of redlock"
fi

# In use: with man and a redis-server.
apt-get install -y -qq "$deb" man-db redis-server redis-tools >/tmp/install2.log 2>&1 ||
	{ cat /tmp/install2.log; bad "apt-get install with man-db and redis-server"; exit 1; }
page=$(man -P cat redlock 2>/dev/null | sed 's/.\x08//g')
grep -q '^EXIT STATUS' <<<"$page" && grep -q 'run a command while holding a named lock' <<<"$page" &&
	ok "man redlock shows the page" || bad "man redlock"
# The pages of section 7 that redlock(1) refers to, each with a section
# of its own.
while read -r name section; do
	page=$(man -P cat 7 "$name" 2>/dev/null | sed 's/.\x08//g')
	grep -q "^$section" <<<"$page" && grep -q "^NAME" <<<"$page" &&
		ok "man 7 $name shows the page" || bad "man 7 $name"
done <<'PAGES'
redlock-protocol QUORUM
redlock-scheduling SYSTEMD
redlock-monitoring DESCRIPTION
PAGES
for f in /usr/share/bash-completion/completions/redlock \
	/usr/share/zsh/vendor-completions/_redlock \
	/usr/share/fish/vendor_completions.d/redlock.fish \
	/lib/systemd/system/redlock-job@.service /lib/systemd/system/redlock-job@.timer \
	/usr/share/redlock/redlock.rules.yml; do
	[[ -f $f ]] || bad "$f is not installed"
done
# The first step of SYSTEMD in redlock-scheduling(7) installs a job there.
if [[ -d /etc/redlock/jobs && $(stat -c '%a %U' /etc/redlock/jobs) == '755 root' ]]; then
	ok "/etc/redlock/jobs is there, root's, mode 755"
else
	bad "/etc/redlock/jobs: $(stat -c '%a %U' /etc/redlock/jobs 2>&1)"
fi

sock=/tmp/redis.sock
redis-server --port 0 --unixsocket "$sock" --save '' --appendonly no \
	--daemonize yes --pidfile /tmp/redis.pid >/dev/null
for ((i = 0; i < 100; i++)); do
	[[ $(redis-cli -s "$sock" PING 2>/dev/null) == PONG ]] && break
	sleep 0.1
done
out=$(redlock -u "unix://$sock" package-check sh -c 'redis-cli -s "$1" EXISTS "$REDLOCK_KEY"' sh "$sock")
[[ $out == 1 ]] && ok "a lock against a local redis-server: the command ran holding it" ||
	bad "a lock against redis-server: the command saw '$out'"
redlock -u "unix://$sock" -q status package-check >/dev/null
[[ $? == 1 ]] && ok "released afterwards" || bad "the lock is still held afterwards"
kill "$(cat /tmp/redis.pid)"
# For hardening-check, outside (tests/package/run.sh).
cp /usr/bin/redlock /tmp/redlock.installed

apt-get purge -y -qq redlock >/tmp/purge2.log 2>&1 || bad "apt-get purge redlock (in use)"
for f in $(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print substr($6, 2) }'); do
	[[ -e $f ]] && bad "$f is left after purge"
done
dpkg-query -W -f '${db:Status-Abbrev}' redlock 2>/dev/null | grep -q '^[^u]' &&
	bad "dpkg still knows redlock after purge"

if ((fails)); then
	echo "install: FAIL ($fails)"
	exit 1
fi
echo "install: PASS"
