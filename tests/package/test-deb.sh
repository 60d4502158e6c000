#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The Debian packages: dpkg-buildpackage -us -uc -b in a clone of the
# committed tree (what a package build sees: nothing uncommitted, no build
# directory), lintian on the .changes without an error, and each .deb's file
# list (dpkg -c) holding the files that package is for, and not the others'.
#
# Usage: test-deb.sh SOURCE_ROOT. Takes about a minute on 2 cores.
set -uo pipefail

src=${1:?usage: test-deb.sh SOURCE_ROOT}
for tool in dpkg-buildpackage dh git; do
        if ! command -v "$tool" >/dev/null; then
                echo "SKIP: $tool not installed (apt-get install dpkg-dev debhelper git)"
                exit 77
        fi
done
if ! git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
        echo "SKIP: $src is not a git checkout (the package is built from a clone)"
        exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
check() { # check WHAT COND...: one result line; a failure is counted
        local what=$1; shift
        if "$@"; then
                echo "ok: $what"
        else
                echo "FAIL: $what"
                failed=$((failed + 1))
        fi
}

git clone -q "$src" "$tmp/src" || { echo "FAIL: git clone $src"; exit 1; }
if ! (cd "$tmp/src" && dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1; then
        tail -40 "$tmp/build.log"
        echo "FAIL: dpkg-buildpackage -us -uc -b"
        exit 1
fi
echo "ok: dpkg-buildpackage -us -uc -b"

changes=$(ls "$tmp"/memacctd_*.changes)
if command -v lintian >/dev/null; then
        lintian "$changes" >"$tmp/lintian.log" 2>&1
        cat "$tmp/lintian.log"
        check "lintian reports no error" eval '! grep -q "^E:" "$tmp/lintian.log"'
else
        echo "lintian not installed: not run"
fi

# has DEB PATH...: every PATH (an extended regex of dpkg -c's file column,
# anchored) is in DEB.
has() {
        local deb=$1 list; shift
        list=$(dpkg -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')
        for p in "$@"; do
                check "$(basename "$deb") holds $p" grep -Eq "^$p\$" <<<"$list"
        done
}
# lacks DEB PATH...: no PATH in DEB.
lacks() {
        local deb=$1 list; shift
        list=$(dpkg -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')
        for p in "$@"; do
                check "$(basename "$deb") does not hold $p" eval '! grep -Eq "^$p\$" <<<"$list"'
        done
}
deb() { ls "$tmp"/"$1"_*.deb 2>/dev/null | head -1; }

for p in memacctd libmemacct0 libmemacct-dev memacctctl memacct-cuda; do
        check "$p was built" test -n "$(deb "$p")"
done
[ "$failed" -eq 0 ] || exit 1

ma='/usr/lib/[a-z0-9_]+-linux-gnu[a-z0-9_]*'
has "$(deb memacctd)" /usr/sbin/memacctd \
        /lib/systemd/system/memacctd.service /lib/systemd/system/memacctd.socket \
        /lib/systemd/system/memacctd-metrics.socket /usr/lib/sysusers.d/memacctd.conf \
        /usr/share/dbus-1/system.d/org.memacct1.conf \
        /usr/share/dbus-1/system-services/org.memacct1.service \
        /usr/share/dbus-1/interfaces/org.memacct1.xml \
        /usr/share/containers/oci/hooks.d/memacct-create.json \
        /usr/share/containers/oci/hooks.d/memacct-delete.json \
        /usr/share/doc/memacctd/examples/memacctd.conf /usr/share/doc/memacctd/copyright \
        '/usr/share/man/man8/memacctd\.8\.gz' '/usr/share/man/man5/memacctd\.conf\.5\.gz' \
        '/usr/share/man/man5/org\.memacct1\.5\.gz' '/usr/share/man/man7/memacct\.7\.gz' \
        /usr/share/memacctd/prometheus/memacctd-rules.yml /usr/share/memacctd/grafana/memacctd.json \
        /usr/lib/systemd/catalog/memacctd.catalog
lacks "$(deb memacctd)" /usr/bin/memacctctl "$ma/libmemacct\.so.*"
has "$(deb libmemacct0)" "$ma/libmemacct\.so\.0" "$ma/libmemacct\.so\.0\.1\.0"
lacks "$(deb libmemacct0)" "$ma/libmemacct\.so" /usr/include/memacct.h
has "$(deb libmemacct-dev)" /usr/include/memacct.h /usr/include/memacct-cgroup.h /usr/include/memacct-region.h /usr/include/memacct/v1/memacct.proto \
        "$ma/libmemacct\.so" "$ma/pkgconfig/memacct\.pc" '/usr/share/man/man3/libmemacct\.3\.gz' \
        '/usr/share/man/man3/memacct_connect\.3\.gz'
has "$(deb memacctctl)" /usr/bin/memacctctl '/usr/share/man/man1/memacctctl\.1\.gz' \
        /usr/share/bash-completion/completions/memacctctl /usr/share/zsh/vendor-completions/_memacctctl
lacks "$(deb memacctctl)" /usr/sbin/memacctd
has "$(deb memacct-cuda)" "$ma/memacct/libmemacct-cuda\.so" '/usr/share/man/man8/libmemacct-cuda\.8\.gz'
lacks "$(deb memacct-cuda)" "$ma/libmemacct\.so\.0"

# The installed unit names the packaged daemon, and systemd's directory.
dpkg-deb -x "$(deb memacctd)" "$tmp/root"
check "memacctd.service runs /usr/sbin/memacctd" \
        grep -q '^ExecStart=/usr/sbin/memacctd ' "$tmp/root/lib/systemd/system/memacctd.service"
check "the OCI hooks run /usr/bin/memacctctl" \
        grep -q '"/usr/bin/memacctctl"' "$tmp/root/usr/share/containers/oci/hooks.d/memacct-create.json"

echo "$failed failed"
[ "$failed" -eq 0 ]
