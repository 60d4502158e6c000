#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The defaults, as systemctl's: with no option, memacctctl and
# memacct_connect(NULL) reach the system daemon at
# /run/memacctd/memacctd.sock whoever runs them, uid 65534 included;
# --user (memacct_connect_user()) asks for the user's own daemon under
# $XDG_RUNTIME_DIR and says so when there is none. The daemon, started
# as root with no --socket and a umask of 077, makes the socket 0666 and
# its directory 0755 all the same.
#
# The host's /run is never touched: the script runs itself again in a
# private mount namespace with a tmpfs over /run, the daemon inside.

if [[ -z ${MEMACCT_DEFAULTS_NS:-} ]]; then
        if [[ $(id -u) != 0 ]]; then
                echo "SKIP: not root: cannot switch uids or mount"
                exit 77
        fi
        for tool in unshare mount setpriv; do
                if ! command -v "$tool" >/dev/null; then
                        echo "SKIP: $tool is not installed"
                        exit 77
                fi
        done
        if ! why=$(unshare -m sh -c 'mount --make-rprivate / && mount -t tmpfs tmpfs /run' 2>&1); then
                echo "SKIP: a private mount namespace with a tmpfs on /run is not permitted: $why"
                exit 77
        fi
        exec unshare -m env MEMACCT_DEFAULTS_NS=1 bash "$0" "$@"
fi

# Inside the namespace: nothing mounted here propagates to the host.
mount --make-rprivate / || exit 1
mount -t tmpfs -o mode=0755 tmpfs /run || exit 1

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

: "${MEMACCT_TEST_HELPER:?MEMACCT_TEST_HELPER must name memacct-test-helper}"
SYS_SOCK=/run/memacctd/memacctd.sock
NOBODY=65534
# Nobody's environment, bare: no socket or bus named, no runtime directory.
as_nobody() {
        setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
                env -u MEMACCT_SOCKET -u MEMACCT_BUS -u XDG_RUNTIME_DIR -u MEMACCT_GROUP "$@"
}

check_eq "/run is the namespace's own tmpfs" "$(stat -f -c %T /run)" tmpfs
check_run "no /run/memacctd before the daemon" 1 test -e /run/memacctd

# A root daemon with no --socket: the system path. The umask would make
# the directory 0700 and the socket 0600 if the daemon left modes to it.
echo "--- start_daemon (defaults)" >>"$DAEMON_LOG"
(
        umask 077
        exec env -u RUNTIME_DIRECTORY "$MEMACCTD" --state-dir "$STATE" --workers 2 --bus none \
                >>"$DAEMON_LOG" 2>&1
) &
DAEMON_PID=$!
if await_daemon "$SYS_SOCK" env -u MEMACCT_SOCKET "$MEMACCTCTL" show /; then
        pass
else
        fail "the daemon answers on $SYS_SOCK: $(<"$DAEMON_LOG")"
        exit 1
fi

check_eq "the socket is 0666" "$(stat -c %a "$SYS_SOCK")" 666
check_eq "it is a socket" "$(stat -c %F "$SYS_SOCK")" socket
check_eq "its directory is 0755" "$(stat -c %a /run/memacctd)" 755

"$MEMACCTCTL" --socket "$SYS_SOCK" create /pub max=8M
"$MEMACCTCTL" --socket "$SYS_SOCK" charge /pub 1M

# ---- memacctctl with no options, as nobody ----

check_run "nobody: memacctctl tree with no options" 0 as_nobody "$MEMACCTCTL" tree
check_match "it lists the system daemon's groups" "$OUT" '^  pub '
check_run "nobody: --json tree" 0 as_nobody "$MEMACCTCTL" --json tree /
check_eq "the system daemon's usage" "$(jget '[g["current"] for g in d if g["path"] == "/pub"][0]' <<<"$OUT")" \
        $((1024 * 1024))
check_run "nobody: show /pub" 0 as_nobody "$MEMACCTCTL" show /pub
check_run "nobody is still refused what the rules refuse" 1 as_nobody "$MEMACCTCTL" create /mine
check_match "by the daemon, in its words" "$ERR" 'refused: '
check_run "root: tree with no options" 0 env -u MEMACCT_SOCKET "$MEMACCTCTL" tree
check_match "the same daemon" "$OUT" '^  pub '

# ---- $MEMACCT_SOCKET still wins ----

check_run "nobody: \$MEMACCT_SOCKET elsewhere" 1 \
        as_nobody MEMACCT_SOCKET="$TMP/none.sock" "$MEMACCTCTL" tree
check_match "it names that socket" "$ERR" "cannot connect to memacctd at $TMP/none.sock"

# ---- --user: the user's own daemon ----

check_run "nobody: --user without XDG_RUNTIME_DIR" 1 as_nobody "$MEMACCTCTL" --user tree
check_match "says XDG_RUNTIME_DIR is not set" "$ERR" 'XDG_RUNTIME_DIR is not set'
check_run "nobody: --user with XDG_RUNTIME_DIR but no user daemon" 1 \
        as_nobody XDG_RUNTIME_DIR="$TMP/xdg" "$MEMACCTCTL" --user tree
check_match "it names the user socket" "$ERR" "cannot connect to memacctd at $TMP/xdg/memacctd/memacctd.sock"
check_run "--user with --socket is a usage error" 2 "$MEMACCTCTL" --user --socket "$SYS_SOCK" tree

# A user daemon of nobody's own, under its runtime directory.
mkdir -m 0700 "$TMP/xdg"
chown $NOBODY:$NOBODY "$TMP/xdg"
bg "$TMP/user-daemon.log" setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
        env -u RUNTIME_DIRECTORY XDG_RUNTIME_DIR="$TMP/xdg" HOME="$TMP/xdg" \
        "$MEMACCTD" --state-dir "$TMP/xdg/state" --workers 1 --bus none
user_daemon=$BG_PID
if wait_for 30 as_nobody XDG_RUNTIME_DIR="$TMP/xdg" "$MEMACCTCTL" --user show /; then
        pass
else
        fail "nobody's own daemon answers on --user: $(<"$TMP/user-daemon.log")"
fi
check_run "nobody: --user tree" 0 as_nobody XDG_RUNTIME_DIR="$TMP/xdg" "$MEMACCTCTL" --user tree
check_match "is the user's daemon: an empty tree" "$OUT" '^/ +0 '
check_nomatch "not the system's" "$OUT" ' pub '
check_run "nobody: with no options, still the system daemon" 0 \
        as_nobody XDG_RUNTIME_DIR="$TMP/xdg" "$MEMACCTCTL" tree
check_match "the system's groups" "$OUT" '^  pub '

# ---- libmemacct, as nobody ----

check_run "nobody: memacct_connect(NULL)" 0 as_nobody "$MEMACCT_TEST_HELPER" - owner /pub
check_eq "reads the system daemon's group: root's" "$OUT" 0
check_run "nobody: memacct_connect_user() without XDG_RUNTIME_DIR" 1 \
        as_nobody "$MEMACCT_TEST_HELPER" +user owner /
check_match "says XDG_RUNTIME_DIR is not set" "$ERR" 'No such device or address: XDG_RUNTIME_DIR is not set'
check_run "nobody: memacct_connect_user()" 0 \
        as_nobody XDG_RUNTIME_DIR="$TMP/xdg" "$MEMACCT_TEST_HELPER" +user owner /
check_run "the user daemon has no /pub" 1 \
        as_nobody XDG_RUNTIME_DIR="$TMP/xdg" "$MEMACCT_TEST_HELPER" +user owner /pub

stop_bg "$user_daemon" TERM || true
check_stop_daemon
exit 0
