# redlock - GNU make.  Respects CC, CPPFLAGS, CFLAGS, LDFLAGS, PKG_CONFIG,
# PREFIX and DESTDIR; the warnings below are kept whatever CFLAGS says.
# `make` only builds: it never installs packages (a package build runs it
# as root without a network).  `make check`, `make demo` and the other
# targets that need tools install what is missing first (see deps).

# The version: named here only.  debian/changelog's newest entry and
# NEWS's follow it (tests/version.bats).  `redlock --version` says
# BUILD_VERSION: VERSION itself when built from the commit that set it
# or from a tree without git (the Debian package's build), else
# VERSION+git.N.HASH (tools/version.sh).
VERSION   = 0.4.0
ifeq ($(origin BUILD_VERSION),undefined)
BUILD_VERSION := $(or $(shell tools/version.sh),$(VERSION))
endif
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
MANDIR   ?= $(PREFIX)/share/man
DATADIR  ?= $(PREFIX)/share
# redlock(1) describes the command line; the pages of section 7 the
# concepts it refers to (the protocol, scheduling, monitoring).
MAN7PAGES = $(notdir $(wildcard man/*.7))
# Debian's zsh reads packages' completions from vendor-completions and
# keeps site-functions for the local administrator (debian/rules).
ZSHCOMPDIR ?= $(DATADIR)/zsh/site-functions
UNITDIR  ?= $(PREFIX)/lib/systemd/system
# The jobs of the units (systemd/): /etc/redlock/jobs whatever PREFIX is,
# as redlock-scheduling(7) tells the administrator (its SYSTEMD section).
SYSCONFDIR ?= /etc
JOBDIR    = $(SYSCONFDIR)/redlock/jobs
PKG_CONFIG ?= pkg-config
PKGS      = hiredis uuid
# OpenSSL's headers only: src/tls.c loads libssl with dlopen() when a TLS
# URL is used, so that plain runs do not pay for it (see src/tls.c).
TLS_PKG   = openssl
# The Debian packages, by purpose, are listed in tools/packages.txt only.
BUILD_PKGS = $(shell tools/packages.sh toolchain build)

CFLAGS   ?= -O2 -g
WERROR   ?=
override CFLAGS += -std=c11 -D_GNU_SOURCE -pthread -Wall -Wextra $(WERROR) \
	-DREDLOCK_VERSION='"$(BUILD_VERSION)"' $(shell $(PKG_CONFIG) --cflags $(PKGS) $(TLS_PKG) 2>/dev/null)
# hiredis and libuuid are linked statically when their archives are
# installed (Debian's -dev packages ship them): the dynamic loader then
# maps two libraries fewer, about a tenth of a short run's cost
# (see bench/).  STATIC_DEPS=no links them dynamically, as the Debian
# package does.
STATIC_DEPS ?= $(shell for l in hiredis uuid; do \
	[ -f "$$($(CC) -print-file-name=lib$$l.a)" ] || { echo no; exit; }; \
	done; echo yes)
ifeq ($(STATIC_DEPS),yes)
override LDLIBS += $(filter -L%,$(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)) \
	-Wl,-Bstatic -lhiredis -luuid -Wl,-Bdynamic -pthread
else
override LDLIBS += $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -pthread
endif

# The link order is the layout of the binary's code and constant data.
# A page fault on a program's file maps the whole 64 KiB window around
# the page (the kernel's fault-around, and the page cache's 64 KiB
# folios of a freshly written file), so a plain run's memory is the
# windows it touches, not the pages.  HOT_SRCS are what a plain run
# (no TLS, hooks, metrics, record, other verbs) executes, linked first
# and followed at once by hiredis and libuuid, which it also uses;
# COLD_SRCS, the server scripts' texts last, come after, in windows of
# their own.  (Aligning the segments to 64 KiB would save a window
# more, for 4 bits less of the load address's randomness: not taken.)
# bench/ row D.
HOT_SRCS = src/main.c src/run.c src/fmt.c src/config.c src/config_opts.c src/config_env.c \
	src/config_args.c src/config_pass.c src/url.c src/url_redact.c src/conn.c src/exec.c src/proto.c src/route.c \
	src/cluster.c src/lock.c src/hold.c src/wait.c src/holder.c src/lease.c \
	src/guard.c src/child.c src/supervise.c src/failover.c src/outcome.c \
	src/monitor.c src/sig.c src/quorum.c src/notify.c src/log.c src/slot.c \
	src/clock.c src/topology.c
COLD_SRCS = src/tls.c src/hooks.c src/renew.c src/metrics.c src/prom.c \
	src/record.c src/runs.c src/tree.c src/fair.c src/once.c src/replace.c \
	src/respawn.c src/refused.c src/inspect.c src/scan.c src/status.c \
	src/stop.c src/print.c src/verbs.c src/utf8.c src/sentinel.c src/sha1.c \
	src/scripts.c src/url_label.c
SRCS = $(HOT_SRCS) $(COLD_SRCS)
OBJS = $(SRCS:.c=.o)
# The unit tests link the pure parsers alone: no hiredis, no OpenSSL.
UNIT_OBJS = src/url.o src/url_redact.o src/clock.o src/lease.o src/config.o src/config_args.o \
	src/config_pass.o \
	src/config_env.o src/log.o
UNIT_OBJS += src/config_opts.o src/scripts.o src/sha1.o src/fmt.o src/proto.o \
	src/slot.o src/utf8.o

all: redlock

redlock: $(OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(HOT_SRCS:.c=.o) $(LDLIBS) \
		$(COLD_SRCS:.c=.o) $(LDLIBS)

%.o: %.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(OBJS): src/*.h | have-deps

# The guard that shares redlock's memory must not bind a library call
# lazily (the dynamic linker would run on its small stack, beside
# redlock): guard.c calls the library through the GOT, bound at start.
src/guard.o: override CFLAGS += -fno-plt

# main.c prints the version: compiled again when BUILD_VERSION changes
# (a commit), which build/version records only then.
build/version: FORCE
	@mkdir -p build && { [ -f build/.gitignore ] || echo '*' >build/.gitignore; }
	@echo '$(BUILD_VERSION)' | cmp -s - $@ || echo '$(BUILD_VERSION)' >$@
src/main.o: build/version

# The server scripts' C file (src/lua/README): committed, and made again
# when a script changes; `make lint` checks that it is up to date.
src/scripts.c: tools/luagen.sh src/proto.h $(wildcard src/lua/*.lua src/lua/lib/*.lua)
	tools/luagen.sh c >$@.tmp && mv $@.tmp $@

# Each script's KEYS, ARGV and reply elements by name (tools/luagen.sh,
# from the scripts' --@keys, --@argv and --@reply lines): committed too.
src/script_args.h: tools/luagen.sh $(wildcard src/lua/*.lua)
	tools/luagen.sh h >$@.tmp && mv $@.tmp $@

# A plain build installs nothing: it names the pkg-config modules it
# cannot find and stops.
have-deps:
	@missing=; for m in $(PKGS) $(TLS_PKG); do \
		$(PKG_CONFIG) --exists $$m 2>/dev/null || missing="$$missing $$m"; \
	done; [ -z "$$missing" ] && exit 0; \
	echo "redlock: cannot find$$missing with $(PKG_CONFIG); install them" \
		"(Debian: apt-get install $(BUILD_PKGS)), or run 'make deps' as root" >&2; \
	exit 1

# The targets that may install packages (check, demo, ...) first build in
# a new make, which reads pkg-config's answers after the installation.
# As root on Debian, install what is missing of tools/packages.txt's
# purposes; otherwise print the apt-get line and fail.
deps:
	@tools/packages.sh --install toolchain build

# The test tools (bats, redis-server, python3-redis, promtool...), git for
# the test against an earlier build, and the chaos harness's tools.
test-deps: deps
	@tools/packages.sh --install test check chaos

tests/unit: tests/unit.c $(UNIT_OBJS)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Isrc $(LDFLAGS) -o $@ tests/unit.c $(UNIT_OBJS)

# The suite's redis-cli (tests/tools/rcli.c): a hiredis client that starts
# several times faster than Debian's redis-cli, which the tests call tens
# of thousands of times; tests/helpers.bash puts it first on their PATH.
# Test tooling: never installed.
tests/tools/rcli: tests/tools/rcli.c | have-deps
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ tests/tools/rcli.c $(LDLIBS)

# The tests' launcher of background jobs (tests/tools/spawn.c), in C for
# the same reason: the Python fallback costs 25 ms of CPU a job.
tests/tools/spawn: tests/tools/spawn.c
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ tests/tools/spawn.c

TEST_TOOLS = tests/tools/rcli tests/tools/spawn

check: test-deps
	$(MAKE) --no-print-directory -B -j$$(nproc 2>/dev/null || echo 2) WERROR=-Werror redlock tests/unit \
		$(TEST_TOOLS)
	tests/run.sh

# The staged Sentinel failovers of tests/sentinel-staged-*.bats, SOAK times each,
# and RESPAWN_ROUNDS takeovers of each kind of tests/respawn.bats (half
# an hour together; CI does not run it).
SOAK ?= 10
RESPAWN_ROUNDS ?= 100

soak: test-deps
	@$(MAKE) --no-print-directory redlock
	REDLOCK_SOAK=$(SOAK) bats --tap --filter 'staged loss' tests/sentinel-staged-loss.bats \
		tests/sentinel-staged-waiters.bats
	REDLOCK_RESPAWN_ROUNDS=$(RESPAWN_ROUNDS) bats --tap \
		--filter 'three standbys' tests/respawn.bats

# Faults on simulated hosts (tests/chaos/chaos.sh): network namespaces,
# partitions, lossy links, pauses, servers that forget, failovers and
# clock skew, each scenario judged for overlapping holders and stale
# fenced writes.  As root; about ten minutes.  CHAOS_SEED=N replays the
# mixed scenario's faults.
CHAOS_SEED ?=
chaos: test-deps
	@$(MAKE) --no-print-directory redlock
	tests/chaos/chaos.sh $(if $(CHAOS_SEED),-s $(CHAOS_SEED))

# The expected `redlock --help` of tests/manpage-sync.bats: regenerate it
# after changing usage_text (src/main.c), then review the diff.
golden: redlock
	./redlock --help >tests/golden/help.txt

demo: test-deps
	@$(MAKE) --no-print-directory redlock
	@tests/demo.sh

# Hardening: sanitizer builds, valgrind, fuzzing, static checks (tools/,
# fuzz/).  Variant builds go to build/ (tools/build-variant.sh), never to
# src/*.o or ./redlock.
FUZZ_SECONDS ?= 60

sanitize: test-deps
	@tools/packages.sh --install sanitize
	tools/sanitize.sh

valgrind: test-deps
	@tools/packages.sh --install valgrind
	@$(MAKE) --no-print-directory redlock
	REDLOCK=./redlock tools/valgrind.sh

fuzz: deps
	@tools/packages.sh --install fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) tools/fuzz.sh

lint: deps
	@tools/packages.sh --install lint
	tools/lint.sh

# The suite against a redlock built with a hiredis 1.x source tree
# (Debian's is 0.14): make hiredis1 HIREDIS_SRC=~/src/hiredis
hiredis1: test-deps
	tools/hiredis1.sh "$(HIREDIS_SRC)"

# Speed and memory against flock(1) and other lock tools; see bench/.
bench: redlock
	bench/run.sh

# The Debian package (debian/), built in a copy of the tree under
# build/deb so that its files land there rather than in the parent
# directory; DEB_BUILD_OPTIONS=nocheck skips the suite.  The package's
# version is debian/changelog's, which tests/version.bats keeps VERSION.
deb:
	@tools/packages.sh --install deb
	rm -rf build/deb
	mkdir -p build/deb/redlock-$(VERSION)
	tar -cf - --exclude=./build --exclude=./.git --exclude=./redlock \
		--exclude='*.o' --exclude=./tests/unit --exclude=./tests/tools/rcli --exclude=./tests/tools/spawn . | \
		tar -C build/deb/redlock-$(VERSION) -xf -
	cd build/deb/redlock-$(VERSION) && dpkg-buildpackage -us -uc -b
	@ls build/deb/redlock_$(VERSION)_*.deb

# The package built from a clean copy of the tree in a fresh Debian 12
# root, checked (lintian, blhc, hardening-check, autopkgtest), installed,
# purged, and run under a booted systemd: see tests/package/run.sh.
# Takes a few minutes and needs root and a network; CI runs it.
package-check:
	@tools/packages.sh --install package
	tests/package/run.sh

# The Prometheus alerting rules go to DATADIR/redlock, where a
# prometheus.yml names them in rule_files (redlock-monitoring(7)).
install: redlock
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man7 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions \
		$(DESTDIR)$(ZSHCOMPDIR) \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(DATADIR)/redlock $(DESTDIR)$(JOBDIR)
	install -m 755 redlock $(DESTDIR)$(BINDIR)/redlock
	install -m 644 man/redlock.1 $(DESTDIR)$(MANDIR)/man1/redlock.1
	install -m 644 $(addprefix man/,$(MAN7PAGES)) $(DESTDIR)$(MANDIR)/man7
	install -m 644 completions/redlock.bash \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/redlock
	install -m 644 completions/_redlock \
		$(DESTDIR)$(ZSHCOMPDIR)/_redlock
	install -m 644 completions/redlock.fish \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d/redlock.fish
	for u in redlock-job@.service redlock-job@.timer; do \
		sed -e 's|/usr/bin/redlock|$(BINDIR)/redlock|' \
			-e 's|/etc/redlock/jobs/|$(JOBDIR)/|' systemd/$$u \
			>$(DESTDIR)$(UNITDIR)/$$u && \
		chmod 644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; \
	done
	install -m 644 monitoring/redlock.rules.yml \
		$(DESTDIR)$(DATADIR)/redlock/redlock.rules.yml

# The jobs' directory goes only if no job is left in it.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/redlock $(DESTDIR)$(MANDIR)/man1/redlock.1 \
		$(addprefix $(DESTDIR)$(MANDIR)/man7/,$(MAN7PAGES)) \
		$(DESTDIR)$(DATADIR)/bash-completion/completions/redlock \
		$(DESTDIR)$(ZSHCOMPDIR)/_redlock \
		$(DESTDIR)$(DATADIR)/fish/vendor_completions.d/redlock.fish \
		$(DESTDIR)$(UNITDIR)/redlock-job@.service \
		$(DESTDIR)$(UNITDIR)/redlock-job@.timer \
		$(DESTDIR)$(DATADIR)/redlock/redlock.rules.yml
	rmdir $(DESTDIR)$(DATADIR)/redlock 2>/dev/null || true
	rmdir $(DESTDIR)$(JOBDIR) $(DESTDIR)$(SYSCONFDIR)/redlock 2>/dev/null || true

clean:
	rm -f redlock tests/unit $(TEST_TOOLS) src/*.o
	rm -rf build

.PHONY: FORCE all have-deps deps test-deps check chaos golden soak demo bench sanitize \
	valgrind fuzz lint hiredis1 deb package-check install uninstall clean
