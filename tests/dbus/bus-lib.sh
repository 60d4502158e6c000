# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# Sourced by the D-Bus tests after tests/integration/lib.sh (checks,
# memacctctl, the daemon, launch_bus): a private dbus-daemon for the test,
# with the system bus's default policy and the project's own
# org.memacct1.conf included, and busctl against it.
#
# Environment (tests/dbus/meson.build): MEMACCT_SOURCE_ROOT.

: "${MEMACCT_SOURCE_ROOT:?MEMACCT_SOURCE_ROOT must name the source tree}"

# need PROGRAM...: skip the test (exit 77) when one is missing.
need() {
        for p in "$@"; do
                if ! command -v "$p" >/dev/null; then
                        echo "$p is not installed: skipped"
                        trap - EXIT
                        rm -rf "$TMP"
                        exit 77
                fi
        done
}

# start_bus [POLICY [SERVICEDIR]]: a private bus daemon (launch_bus, from
# tests/lib.sh) with the system bus's default policy (tests/bus-conf.sh
# system: everyone connects, nobody owns or calls anything unless a policy
# file allows it), then POLICY included; BUS_ADDR is its address. POLICY
# defaults to the source tree's units/org.memacct1.conf.
start_bus() {
        local policy=${1:-$MEMACCT_SOURCE_ROOT/units/org.memacct1.conf}

        sh "$MEMACCT_SOURCE_ROOT/tests/bus-conf.sh" system "$TMP/bus.sock" "$policy" ${2:+"$2"} \
                >"$TMP/bus.conf" || return 1
        launch_bus "$TMP/bus.conf"
}

# stop_bus: stop the bus daemon (after the daemon: memacctd exits with a
# failure when it loses its bus).
stop_bus() {
        if [[ -n $BUS_PID ]]; then
                stop_bg "$BUS_PID" TERM || true
                BUS_PID=
        fi
}

bctl() {
        busctl --address="$BUS_ADDR" "$@"
}

# mcall METHOD SIGNATURE ARGS...: call a Manager method.
mcall() {
        bctl call org.memacct1 /org/memacct1 org.memacct1.Manager "$@"
}

# objpath GROUP: the object path of a group, as sd_bus_path_encode() makes
# it (every byte but [A-Za-z0-9] as _xx).
objpath() {
        local s=$1 out=/org/memacct1/group/ c i

        for ((i = 0; i < ${#s}; i++)); do
                c=${s:i:1}
                if [[ $c == [A-Za-z0-9] ]]; then
                        out+=$c
                else
                        out+=$(printf '_%02x' "'$c")
                fi
        done
        printf '%s\n' "$out"
}

# prop GROUP PROPERTY: busctl get-property's output ("t 1024"), or its
# error message; never fails.
prop() {
        bctl get-property org.memacct1 "$(objpath "$1")" org.memacct1.Group "$2" 2>&1 || true
}

# propv GROUP PROPERTY: the value alone of a "t" property.
propv() {
        local v

        v=$(prop "$1" "$2")
        printf '%s\n' "${v#t }"
}

as_nobody() {
        setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}
