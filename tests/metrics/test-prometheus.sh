#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The shipped Prometheus and Grafana files against the real thing:
# promtool checks and unit-tests docs/prometheus/memacctd-rules.yml; every
# metric the rules and docs/grafana/memacctd.json name is in a live scrape
# of memacctd; a real Prometheus (/usr/bin/prometheus, not the distro
# service: its own storage, config and loopback port) scrapes a memacctd
# with a charged group every second, its HTTP API answers the group's
# usage as memacctctl shows it and a request rate, and it lists the rules
# loaded and healthy. Skips when prometheus or promtool is missing.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
RULES=$SRC/docs/prometheus/memacctd-rules.yml
DASHBOARD=$SRC/docs/grafana/memacctd.json
PROMETHEUS=${PROMETHEUS:-/usr/bin/prometheus}
M=$((1024 * 1024))

[[ -x $PROMETHEUS ]] || skip_test "prometheus is not installed ($PROMETHEUS; Debian package prometheus)"
command -v promtool >/dev/null || skip_test "promtool is not installed (Debian package prometheus)"

free_port() {
        "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# get URL: the body, or "get-failed: why".
get() {
        "$PY" -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1" 2>&1 || echo "get-failed"
}

# ---- promtool ----

check_run "promtool check rules" 0 promtool check rules "$RULES"
RC=0
OUT=$(cd "$SRC/docs/prometheus" && promtool test rules memacctd-rules-test.yml 2>&1) || RC=$?
check_eq "promtool test rules passes ($OUT)" "$RC" 0

# ---- a daemon with a charged group ----

MPORT=$(free_port)
check_start_daemon --metrics "127.0.0.1:$MPORT"
check_run "create /prom" 0 ctl create /prom max=8M
check_run "charge /prom" 0 ctl charge /prom 3M
check_eq "memacctctl shows the charge" "$(field /prom 'd["current"]')" $((3 * M))
SCRAPE=$TMP/scrape.txt
# series=basic: the shipped rules and dashboard need no more than that.
get "http://127.0.0.1:$MPORT/metrics?series=basic" >"$SCRAPE"
check_match "the daemon is scraped directly" "$(<"$SCRAPE")" '^memacct_group_usage_bytes\{group="/prom"\} '

check_eq "a basic scrape leaves out the stat family" "$(grep -c '^memacct_group_stat_bytes' "$SCRAPE" || :)" 0
# Every metric an expression names is a sample name of the basic scrape
# (recording rules, with a ":", and up are Prometheus's own).
RC=0
OUT=$("$PY" - "$DASHBOARD" "$RULES" "$SCRAPE" <<'PYEOF' 2>&1) || RC=$?
import json, re, sys
dash = json.load(open(sys.argv[1]))
exprs = []
def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            # Panel queries, and the template variables' label_values().
            if k in ("expr", "definition") and isinstance(v, str):
                exprs.append(v)
            else:
                walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(dash)
assert len(exprs) >= 8, f"only {len(exprs)} panel expressions"
rules = [m.group(1) for m in re.finditer(r'^\s+expr: (.*)$', open(sys.argv[2]).read(), re.M)]
assert len(rules) >= 10, f"only {len(rules)} rule expressions"
have = {line.split("{")[0].split(" ")[0] for line in open(sys.argv[3]) if line and not line.startswith("#")}
missing = set()
for e in exprs + rules:
    for name in re.findall(r'(?<![\w:"])(memacct[a-z_]*)(?![\w:"])', e):
        if name not in have:
            missing.add(name)
assert not missing, f"not in the scrape: {sorted(missing)}"
print(f"{len(exprs)} panel and {len(rules)} rule expressions, every metric exported")
PYEOF
check_eq "the dashboard parses and names only exported metrics ($OUT)" "$RC" 0

# ---- a real Prometheus ----

PPORT=$(free_port)
cat >"$TMP/prometheus.yml" <<CONF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $RULES
scrape_configs:
  - job_name: memacctd
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
CONF
bg "$TMP/prometheus.log" "$PROMETHEUS" --config.file="$TMP/prometheus.yml" \
        --storage.tsdb.path="$TMP/tsdb" --web.listen-address="127.0.0.1:$PPORT"
PROM_PID=$BG_PID
PROM=http://127.0.0.1:$PPORT

# query EXPR: the JSON answer of /api/v1/query.
query() {
        get "$PROM/api/v1/query?query=$("$PY" -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$1")"
}
# has_result EXPR: the query has at least one sample.
has_result() {
        query "$1" | "$PY" -c 'import json, sys; sys.exit(0 if json.load(sys.stdin)["data"]["result"] else 1)' 2>/dev/null
}
# rules_healthy: every rule of the file loaded and evaluated without error.
rules_healthy() {
        get "$PROM/api/v1/rules" | "$PY" -c 'import json, sys
rules = [r for g in json.load(sys.stdin)["data"]["groups"] for r in g["rules"]]
sys.exit(0 if len(rules) == 10 and all(r["health"] == "ok" for r in rules) else 1)' 2>/dev/null
}

if wait_for 30 has_result 'memacct_group_usage_bytes{group="/prom"}'; then
        pass
else
        fail "Prometheus scraped the daemon within 30 s (log: $(tail -5 "$TMP/prometheus.log"))"
fi
check_eq "the target is up" "$(query 'up{job="memacctd"}' | jget 'd["data"]["result"][0]["value"][1]')" 1
check_eq "Prometheus's usage of /prom is memacctctl's current" \
        "$(query 'memacct_group_usage_bytes{group="/prom"}' | jget 'd["data"]["result"][0]["value"][1]')" \
        "$(field /prom 'd["current"]')"
# A charge while Prometheus watches: its counter rises between two scrapes.
check_run "charge /prom again" 0 ctl charge /prom 1M
if wait_for 15 has_result 'rate(memacctd_requests_total{op="charge"}[10s]) > 0'; then
        pass
else
        fail "a request-rate series for charge is present: $(query 'memacctd_requests_total')"
fi
# Recorded at each evaluation (every second): the new usage soon shows.
if wait_for 15 has_result 'memacct_group:usage_max:ratio{group="/prom"} == 0.5'; then
        pass
else
        fail "the usage ratio of /prom is recorded as 4M of 8M: $(query 'memacct_group:usage_max:ratio')"
fi
if wait_for 15 rules_healthy; then
        pass
else
        fail "Prometheus lists the 10 rules healthy: $(get "$PROM/api/v1/rules")"
fi

rc=0
stop_bg "$PROM_PID" TERM 20 || rc=$?
check_eq "Prometheus stops on SIGTERM" "$rc" 0
check_stop_daemon
