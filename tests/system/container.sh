# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A booted systemd-nspawn container of the host's own OS, for the system
# tests (sourced after lib.sh). The caller sets MACHINE, NSPAWN_LOG,
# NSPAWN_PID= and LEADER=, and CONTAINER_OPTS: how the root is made
# (--directory=, --volatile=, overlays, binds). The container boots basic.target only
# (sockets.target included), with a private network, unregistered, and is
# reached through nsenter on its PID 1.

# c CMD...: CMD inside the container, in all its namespaces, with a clean
# environment: nothing of ours (MEMACCT_SOCKET, DBUS_*, TMPDIR) may point
# the clients elsewhere than their defaults.
c() {
        nsenter -t "$LEADER" -a -- /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
                LANG=C.UTF-8 SYSTEMD_PAGER= SYSTEMD_COLORS=0 "$@"
}

# as_nobody CMD...: CMD inside, as uid and gid 65534 with no groups.
as_nobody() {
        c setpriv --reuid 65534 --regid 65534 --clear-groups -- "$@"
}

# boot: start nspawn in the background; LEADER is the container's PID 1 once
# it is there. Return: 1 (the reason in BOOT_WHY) when nspawn exits first
# or no systemd shows up within 30 s.
BOOT_WHY=
boot() {
        local deadline=$((SECONDS + 30)) child extra=()

        # systemd-analyze verify runs man for each Documentation= page, and
        # man-db cannot run without its configuration, which the empty /etc
        # lacks.
        if [[ -e /etc/manpath.config ]]; then
                extra+=(--bind-ro=/etc/manpath.config)
        fi
        # systemd-firstboot masked: the tmpfs /etc has no locale, and the
        # firstboot wizard would fail for want of a console to ask on.
        systemd-nspawn --quiet "${CONTAINER_OPTS[@]}" --machine="$MACHINE" \
                --register=no --keep-unit --private-network --console=pipe \
                "${extra[@]}" \
                --boot systemd.unit=basic.target systemd.mask=systemd-firstboot.service \
                </dev/null >"$NSPAWN_LOG" 2>&1 &
        NSPAWN_PID=$!
        while :; do
                if ! kill -0 "$NSPAWN_PID" 2>/dev/null; then
                        local rc=0

                        wait "$NSPAWN_PID" || rc=$?
                        NSPAWN_PID=
                        BOOT_WHY="systemd-nspawn exited with status $rc before booting: $(tail -n 3 "$NSPAWN_LOG" | tr '\n' ' ')"
                        return 1
                fi
                child=$(pgrep -P "$NSPAWN_PID" | head -n 1) || true
                if [[ -n $child && $(cat "/proc/$child/comm" 2>/dev/null) == systemd ]] &&
                        nsenter -t "$child" -a -- /usr/bin/true 2>/dev/null; then
                        LEADER=$child
                        return 0
                fi
                if ((SECONDS >= deadline)); then
                        BOOT_WHY="no systemd answering in the container within 30 s: $(tail -n 3 "$NSPAWN_LOG" | tr '\n' ' ')"
                        return 1
                fi
                sleep 0.1
        done
}

# shutdown_container: systemctl poweroff inside, and nspawn's exit status
# in NSPAWN_RC (124 when it had to be killed).
NSPAWN_RC=
shutdown_container() {
        local deadline=$((SECONDS + 30))

        [[ -n $NSPAWN_PID ]] || return 0
        # SIGRTMIN+4 is systemd's own poweroff request, for when systemctl
        # cannot reach it (not booted far enough).
        if [[ -n $LEADER ]] && ! c systemctl --no-block poweroff >/dev/null 2>&1; then
                kill -RTMIN+4 "$LEADER" 2>/dev/null || true
        elif [[ -z $LEADER ]]; then
                kill -TERM "$NSPAWN_PID" 2>/dev/null || true
        fi
        while kill -0 "$NSPAWN_PID" 2>/dev/null && ((SECONDS < deadline)); do
                sleep 0.1
        done
        if kill -0 "$NSPAWN_PID" 2>/dev/null; then
                # nspawn takes a second SIGTERM as "terminate now".
                kill -TERM "$NSPAWN_PID" 2>/dev/null || true
                sleep 1
                kill -KILL "$NSPAWN_PID" 2>/dev/null || true
                wait "$NSPAWN_PID" 2>/dev/null || true
                NSPAWN_RC=124
        else
                NSPAWN_RC=0
                wait "$NSPAWN_PID" || NSPAWN_RC=$?
        fi
        NSPAWN_PID=
        LEADER=
}

