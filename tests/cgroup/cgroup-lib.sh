# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# What only the tests on REAL kernel cgroups need, on top of tests/lib.sh
# (which this sources first), as
#   source cgroup-lib.sh PREFIX WHAT
# (PREFIX: the name of the test's cgroup before "-<pid>", memacct-test;
# WHAT: the test for its SKIP line, "the cgroup test"). It skips the test
# (exit 77) with the reason when it cannot run at all: not root, no memory
# controller (v1 at /sys/fs/cgroup/memory, else in cgroup2), the kernel
# refuses to make a cgroup. Otherwise HIER is the memory hierarchy and
# VERSION its cgroup version (1 or 2), $HIER/$NAME the test's cgroup
# (made; every cgroup in MADE is removed on exit, also on failure).
#
# Environment (tests/cgroup/meson.build): MEMACCTD, MEMACCTCTL,
# MEMACCT_SOURCE_ROOT.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

[[ $(id -u) == 0 ]] || skip_test "$2 needs root (it makes kernel cgroups)"

V1=/sys/fs/cgroup/memory
V2=
# Where cgroup2 is mounted: /sys/fs/cgroup/unified on a hybrid host, the
# root on a unified one.
while read -r _ mnt type _; do
        if [[ $type == cgroup2 ]]; then
                V2=$mnt
                break
        fi
done </proc/self/mounts

NAME=$1-$$
if [[ -e $V1/memory.limit_in_bytes ]]; then
        HIER=$V1
        VERSION=1
elif [[ -n $V2 ]] && grep -qw memory "$V2/cgroup.controllers" 2>/dev/null; then
        HIER=$V2
        VERSION=2
else
        skip_test "no memory cgroup controller on this host (neither v1 at $V1 nor in cgroup2${V2:+ at $V2})"
fi
if ! mkdir "$HIER/$NAME" 2>/dev/null; then
        skip_test "the kernel refuses to make a cgroup in $HIER: $(mkdir "$HIER/$NAME" 2>&1)"
fi

SKIPPED=0
MADE=("$HIER/$NAME") # cgroups made, parents first
# The mirror of the test's cgroup: write_config's prefix, then its path
# in the hierarchy.
# shellcheck disable=SC2034 # for the tests that source this
MIRROR=/k/$NAME
echo "memory hierarchy: cgroup v$VERSION at $HIER; test cgroups under $HIER/$NAME"

# skip WHAT: a part that cannot run here, said and counted (SKIPPED), never
# passed.
skip() {
        SKIPPED=$((SKIPPED + 1))
        echo "SKIP: $*"
}

# Move every process out of our cgroups into the hierarchy's root, then
# remove them leaves first; a cgroup whose last process is still exiting
# takes a few tries. Run on every exit.
cleanup_cgroups() {
        local i d tries

        for ((i = ${#MADE[@]} - 1; i >= 0; i--)); do
                d=${MADE[i]}
                [[ -d $d ]] || continue
                for ((tries = 0; tries < 10; tries++)); do
                        while read -r pid; do
                                [[ -n $pid ]] && echo "$pid" >"$HIER/cgroup.procs" 2>/dev/null
                        done <"$d/cgroup.procs"
                        rmdir "$d" 2>/dev/null && break
                        sleep 0.2
                done
                [[ -d $d ]] && echo "WARNING: cannot remove cgroup $d" >&2
        done
        return 0
}
on_exit cleanup_cgroups

# make_cgroup SUBPATH: the kernel cgroup $HIER/$NAME$SUBPATH, removed on
# exit.
make_cgroup() {
        mkdir "$HIER/$NAME$1" && MADE+=("$HIER/$NAME$1")
}

# write_config [LINE...]: the daemon's configuration: mirrors under /k,
# sampled every second, then each LINE in [cgroup].
write_config() {
        printf '[cgroup]\nprefix = /k\nsample-interval = 1\n' >"$TMP/memacctd.conf"
        if (($# > 0)); then
                printf '%s\n' "$@" >>"$TMP/memacctd.conf"
        fi
}

# try_bus [PROGRAM...]: a private system bus (start_bus) when dbus-daemon
# and every PROGRAM are installed. BUS_ARGS is the daemon's --bus option
# either way (--bus none without one); BUS_ADDR is empty without one.
try_bus() {
        local p

        BUS_ARGS=(--bus none)
        for p in "${DBUS_DAEMON:-dbus-daemon}" "$@"; do
                command -v "$p" >/dev/null || return 0
        done
        if start_bus; then
                BUS_ARGS=(--bus "$BUS_ADDR")
        fi
}

# start_memacctd: start_daemon on write_config's file and BUS_ARGS
# (try_bus), answering on the socket.
start_memacctd() {
        start_daemon --config "$TMP/memacctd.conf" "${BUS_ARGS[@]}"
}
