# shellcheck shell=bash
#
# monitor_helpers.bash - the real components that look at redlock's runs
# (redlock-monitoring(7)): Debian's prometheus-node-exporter over a textfile
# directory, promtool, a second "host" (a UTS namespace with a host name
# of its own) and an HTTP recorder for the hooks (httprec.py).  Used by
# metrics.bats, record.bats and hooks.bats.  Load after helpers.

NODE_EXPORTER=${NODE_EXPORTER:-prometheus-node-exporter}

# start_node_exporter DIR: node_exporter with only its textfile collector,
# over DIR, on a free loopback port (NE_PORT); waits until it answers.
start_node_exporter() {
	local dir=$1 attempt port
	command -v "$NODE_EXPORTER" >/dev/null ||
		{ echo "prometheus-node-exporter is not installed" >&2; return 1; }
	for ((attempt = 0; attempt < 5; attempt++)); do
		port=$(free_port)
		"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$port" \
			--collector.disable-defaults --collector.textfile \
			--collector.textfile.directory="$dir" \
			>"$BATS_FILE_TMPDIR/node-exporter.log" 2>&1 </dev/null 3>&- &
		echo $! >"$BATS_FILE_TMPDIR/node-exporter.pid"
		NE_PORT=$port
		if wait_until -t 10 scrape_ok; then
			export NE_PORT
			return 0
		fi
		stop_node_exporter
	done
	cat "$BATS_FILE_TMPDIR/node-exporter.log" >&2
	return 1
}

scrape_ok() { curl -fsS -o /dev/null "http://127.0.0.1:$NE_PORT/metrics" 2>/dev/null; }

# stop_node_exporter: the one this file started, by pid.
stop_node_exporter() {
	local f=$BATS_FILE_TMPDIR/node-exporter.pid pid
	[[ -f $f ]] || return 0
	pid=$(cat "$f")
	rm -f "$f"
	grep -q node-exporter "/proc/$pid/cmdline" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null
	wait_until -t 10 pid_dead "$pid" || kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
}

# scrape FILE: node_exporter's /metrics into FILE.
scrape() {
	curl -fsS "http://127.0.0.1:$NE_PORT/metrics" >"$1"
}

# mval FILE SERIES: the value of SERIES (as node_exporter writes it:
# labels sorted by name) in FILE; fails when it is not there.  The
# labels prefix and servers of --metrics-dir's series are left out of
# the match unless SERIES names them.
mval() {
	SERIES=$2 awk '{ line = $0 }
		index(ENVIRON["SERIES"], "prefix=") == 0 {
			gsub(/,prefix="[^"]*"/, "", line); gsub(/,servers="[^"]*"/, "", line) }
		index(line, ENVIRON["SERIES"] " ") == 1 { print $NF; found = 1; exit }
		END { exit !found }' "$1"
}

# assert_metric FILE SERIES VALUE: SERIES is VALUE (compared as numbers).
assert_metric() {
	local v
	v=$(mval "$1" "$2") || fail "no $2 in the scrape:
$(grep -F "${2%%\{*}" "$1")"
	awk -v a="$v" -v b="$3" 'BEGIN { exit !(a + 0 == b + 0) }' ||
		fail "$2 is $v, not $3"
}

# assert_promtool_clean [FILE]: promtool check metrics on FILE (or stdin)
# says nothing and exits 0.
assert_promtool_clean() {
	local out st=0
	if (($#)); then
		out=$(promtool check metrics <"$1" 2>&1) || st=$?
	else
		out=$(promtool check metrics 2>&1) || st=$?
	fi
	[[ $st == 0 && -z $out ]] || fail "promtool check metrics (status $st): $out"
}

# make_as_host: the script as-host HOST CMD [ARG...] on PATH (next to
# the redlock shim), which runs CMD in a UTS namespace whose host name is
# HOST: a second machine, as far as the holder's record can tell.  As
# root a UTS namespace alone; otherwise through a user namespace.  It
# execs CMD in place, so a background job's pid is CMD's.
make_as_host() {
	cat >"$BATS_FILE_TMPDIR/bin/as-host" <<'SH'
#!/bin/sh
host=$1
shift
if [ "$(id -u)" = 0 ]; then
	exec unshare --uts sh -c 'hostname "$0" && exec "$@"' "$host" "$@"
fi
exec unshare --user --map-root-user --uts sh -c 'hostname "$0" && exec "$@"' "$host" "$@"
SH
	chmod +x "$BATS_FILE_TMPDIR/bin/as-host"
}

# can_be_another_host: as-host works here.
can_be_another_host() {
	[[ $(as-host web-x hostname 2>/dev/null) == web-x ]]
}

# start_prometheus RULES TARGET: Debian's prometheus on a free loopback
# port (PROM_PORT), with a configuration and storage of its own under
# BATS_FILE_TMPDIR, scraping TARGET (host:port) and evaluating the rules
# file RULES every second (so that a test sees a change within seconds,
# not the minute of a real set-up); waits until it is ready.
start_prometheus() {
	local rules=$1 target=$2 d=$BATS_FILE_TMPDIR/prometheus attempt port
	command -v prometheus >/dev/null ||
		{ echo "prometheus is not installed (Debian: prometheus)" >&2; return 1; }
	mkdir -p "$d"
	cat >"$d/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $rules
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['$target']
YML
	for ((attempt = 0; attempt < 5; attempt++)); do
		port=$(free_port)
		rm -rf "$d/data"
		prometheus --config.file="$d/prometheus.yml" \
			--storage.tsdb.path="$d/data" \
			--web.listen-address="127.0.0.1:$port" \
			>"$d/log" 2>&1 </dev/null 3>&- &
		echo $! >"$d/pid"
		PROM_PORT=$port
		if wait_until -t 30 prometheus_ready; then
			export PROM_PORT
			return 0
		fi
		stop_prometheus
	done
	cat "$d/log" >&2
	return 1
}

prometheus_ready() { curl -fsS -o /dev/null "http://127.0.0.1:$PROM_PORT/-/ready" 2>/dev/null; }

# stop_prometheus: the one this file started, by pid.
stop_prometheus() {
	local f=$BATS_FILE_TMPDIR/prometheus/pid pid
	[[ -f $f ]] || return 0
	pid=$(cat "$f")
	rm -f "$f"
	grep -q prometheus "/proc/$pid/cmdline" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null
	wait_until -t 20 pid_dead "$pid" || kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
}

# prom_api PATH: GET the Prometheus HTTP API's PATH (e.g. alerts) as JSON.
prom_api() {
	curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/$1"
}
