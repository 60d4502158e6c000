# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# Sourced by the integration scripts: a private memacctd on a temporary
# socket and state directory, memacctctl against it; the checks, the
# background processes and the cleanup are tests/lib.sh's.
#
# Environment (set by tests/integration/meson.build):
#   MEMACCTD, MEMACCTCTL   the binaries under test
#   MEMACCT_TEST_HELPER    tests/integration/test-helper.c, built

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# Others may traverse it: the non-root test reaches the socket through it.
chmod 0755 "$TMP"
SOCK=$TMP/run/memacctd.sock

# ---- the client ----

ctl() {
        "$MEMACCTCTL" --socket "$SOCK" "$@"
}

# field PATH EXPR [SHOW-OPTIONS...]: EXPR on `show --json PATH`; prints
# "show-failed" when show fails, so that a comparison fails clearly.
field() {
        local path=$1 expr=$2 json

        shift 2
        json=$(ctl --json show "$path" "$@" 2>&1) || {
                echo "show-failed: $json"
                return 0
        }
        jget "$expr" <<<"$json" 2>&1 || echo "json-failed: $json"
}

# ---- the daemon ----

daemon_answers() {
        [[ -S $SOCK ]] && ctl show /
}

# start_daemon [OPTIONS...]: a daemon on $SOCK with state in $STATE,
# answering requests when this returns 0.
start_daemon() {
        echo "--- start_daemon $*" >>"$DAEMON_LOG"
        "$MEMACCTD" --socket "$SOCK" --state-dir "$STATE" --workers 2 "$@" >>"$DAEMON_LOG" 2>&1 &
        DAEMON_PID=$!
        await_daemon "$SOCK" daemon_answers
}

# check_start_daemon / check_stop_daemon: start_daemon and stop_daemon,
# counted as checks.
check_start_daemon() {
        if start_daemon "$@"; then
                pass
        else
                fail "the daemon starts (options: $*)"
                return 1
        fi
}

check_stop_daemon() {
        local rc=0

        stop_daemon "$@" || rc=$?
        check_eq "the daemon exits 0 on SIG${1:-TERM}" "$rc" 0
}
