#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2034,SC2154
#
# The Prometheus alerting rules that ship with redlock
# (monitoring/redlock.rules.yml; redlock-monitoring(7), Alerting rules):
# promtool accepts them and passes their tests
# (monitoring/redlock.rules.test.yml), and, end to end, real redlock runs
# write a textfile directory that Debian's prometheus-node-exporter
# reads and Debian's prometheus scrapes and evaluates the rules over: a
# failing job makes its alert fire, a good run resolves it.

load helpers
load monitor_helpers

RULES=$REPO_DIR/monitoring/redlock.rules.yml
RULES_TEST=$REPO_DIR/monitoring/redlock.rules.test.yml

# How long Prometheus may take to show a change of a textfile: a scrape
# and an evaluation, a second each here, plus the load of a shared
# machine; a quiet one takes two to three seconds.
ALERT_WAIT=60

lifecycle main
# shellcheck disable=SC2317 # called by lifecycle
file_setup() {
	command -v promtool >/dev/null || { echo "promtool is not installed (Debian: prometheus)" >&2; return 1; }
	export MDIR=$BATS_FILE_TMPDIR/textfile
	mkdir -p "$MDIR"
	start_node_exporter "$MDIR" || return 1
	start_prometheus "$RULES" "127.0.0.1:$NE_PORT"
}
file_teardown() {
	stop_prometheus
	stop_node_exporter
}

# alerts: the alerts Prometheus has pending or firing, one a line:
# ALERTNAME STATE then the labels as k=v, sorted.
alerts() {
	prom_api alerts | /usr/bin/python3 -c '
import json, sys
for a in json.load(sys.stdin)["data"]["alerts"]:
    l = a["labels"]
    print(l["alertname"], a["state"],
          " ".join("%s=%s" % kv for kv in sorted(l.items()) if kv[0] != "alertname"))'
}

# alert_on ALERTNAME NAME STATE: ALERTNAME is in STATE for the lock NAME
# ("none": Prometheus has no such alert, pending or firing).
alert_on() {
	local out
	out=$(alerts) || return 1
	if [[ $3 == none ]]; then
		! grep -qE "^$1 [a-z]+ .*\<name=$2( |$)" <<<"$out"
	else
		grep -qE "^$1 $3 .*\<name=$2( |$)" <<<"$out"
	fi
}

# publish: the fleet's run record into the textfile directory, as the
# redlock-monitoring(7) has one host do from cron.
publish() {
	redlock runs --prom >"$MDIR/.fleet" && mv "$MDIR/.fleet" "$MDIR/redlock-fleet.prom"
}

@test "promtool check rules accepts the shipped rules" {
	run -0 promtool check rules "$RULES"
	assert_output --partial SUCCESS
}

@test "promtool test rules: every alert fires where it must, and not elsewhere" {
	run -0 promtool test rules "$RULES_TEST"
	assert_output --partial SUCCESS
}

# query_value EXPR: the value of the one sample of the instant query EXPR
# (fails when there is none).
query_value() {
	curl -fsS --get --data-urlencode "query=$1" \
		"http://127.0.0.1:$PROM_PORT/api/v1/query" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
sys.exit(1) if len(r) != 1 else print(r[0]["value"][1])'
}

# has_value EXPR VALUE: the instant query EXPR gives one sample, VALUE.
has_value() { [[ $(query_value "$1") == "$2" ]]; }

@test "a threshold set for one NAME by a line in the textfile directory, as the man page shows" {
	echo 'redlock_threshold_hold_seconds{name="reindex"} 14400' >"$MDIR/thresholds.prom"
	wait_until -t "$ALERT_WAIT" has_value 'redlock:threshold_hold_seconds{name="reindex"}' 14400
	rm "$MDIR/thresholds.prom"
}

@test "a real Prometheus: a failed run fires RedlockJobFailed for its NAME and host; a good run resolves it" {
	run -3 redlock --metrics-dir "$MDIR" --record backup sh -c 'exit 3'
	run -0 redlock --metrics-dir "$MDIR" --record report true
	publish
	wait_until -t "$ALERT_WAIT" alert_on RedlockJobFailed backup firing
	run -0 alerts
	# The host's file labels its series with the key prefix and the
	# servers too (redlock-monitoring(7)), and the alert keeps them.
	assert_line --regexp "^RedlockJobFailed firing host=127\.0\.0\.1 instance=127\.0\.0\.1:$NE_PORT job=node name=backup outcome=failed prefix=redlock: servers=[^ ]+ severity=warning\$"
	# The job that succeeded, and every other alert, stay quiet.
	assert_equal "${#lines[@]}" 1
	# Every rule evaluates without an error over what redlock wrote
	# (the fleet's record and each host's file side by side).
	run -0 sh -c 'curl -fsS "http://127.0.0.1:$0/api/v1/rules" | /usr/bin/python3 -c "
import json, sys
for g in json.load(sys.stdin)[\"data\"][\"groups\"]:
    for r in g[\"rules\"]:
        print(r[\"name\"], r[\"health\"], r.get(\"lastError\", \"\"))"' "$PROM_PORT"
	refute_output --regexp ' (err|unknown)'
	assert_equal "${#lines[@]}" 13
	run -0 redlock --metrics-dir "$MDIR" --record backup true
	publish
	wait_until -t "$ALERT_WAIT" alert_on RedlockJobFailed backup none
	run -0 alerts
	assert_output ''
}
