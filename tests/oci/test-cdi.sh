#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctctl cdi generate, without a container runtime: the CDI spec it
# writes (read here by Python's json, as an independent reader), the
# files it mounts and where, LD_PRELOAD, the config and the socket it
# takes and the ones it refuses (a config the interposer would ignore or
# not understand, a socket the interposer would not look for), the file
# written atomically and readable by all, and the usage errors. No daemon
# is needed: the command never connects. test-cdi-podman.sh gives the
# spec to podman.
#
# Environment: MEMACCTD, MEMACCTCTL, INTERPOSER (the build's
# libmemacct-cuda.so), CDI_DEFAULT_CONFIG (the config path memacctctl was
# built with).

set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

: "${INTERPOSER:?INTERPOSER must name the libmemacct-cuda.so of the build}"
: "${CDI_DEFAULT_CONFIG:?CDI_DEFAULT_CONFIG must name the config memacctctl defaults to}"

LIBDIR=$(cd "$(dirname "$INTERPOSER")/.." && pwd)
INTERPOSER_ABS=$(cd "$(dirname "$INTERPOSER")" && pwd)/$(basename "$INTERPOSER")

# gen ARGS...: cdi generate ARGS (RC, OUT, ERR).
gen() {
        run "$MEMACCTCTL" cdi generate "$@"
}

# spec EXPR: EXPR on the spec in $OUT (bound to d; e the one device's edits).
spec() {
        "$PY" -I -S -c '
import json, sys
d = json.loads(sys.stdin.read())
e = d["devices"][0]["containerEdits"]
v = eval(sys.argv[1])
print(json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v)' "$1" <<<"$OUT"
}

# mounts: "HOST CONTAINER OPTIONS TYPE" a line, of the spec in $OUT.
mounts() {
        spec '"\n".join(" ".join([m["hostPath"], m["containerPath"], ",".join(m["options"]), m["type"]])
                        for m in e["mounts"])'
}

RO=ro,nosuid,nodev,bind
PRELOAD=LD_PRELOAD=/usr/lib/memacct/libmemacct-cuda.so

# ---- a config the interposer trusts, naming the test's socket ----

CONF=$TMP/cuda.conf
printf '[interposer]\nsocket = %s\non-unreachable = deny\n' "$SOCK" >"$CONF"
chmod 0644 "$CONF"
TRUSTED=1
[[ $(id -u) == 0 ]] || TRUSTED=0

if [[ $TRUSTED == 1 ]]; then
        gen --output - --interposer "$INTERPOSER" --config "$CONF"
        check_eq "generate to stdout: exit status (stderr: $ERR)" "$RC" 0
        check_eq "cdiVersion, podman 4.3's newest" "$(spec 'd["cdiVersion"]')" 0.5.0
        check_eq "kind" "$(spec 'd["kind"]')" memacct.io/gpu
        check_eq "one device, all" "$(spec '[x["name"] for x in d["devices"]]')" '["all"]'
        check_eq "only the fields CDI 0.5 knows" "$(spec 'sorted(d)'):$(spec 'sorted(d["devices"][0])'):$(spec 'sorted(e)')" \
                '["cdiVersion", "devices", "kind"]:["containerEdits", "name"]:["env", "mounts"]'
        check_eq "env: the interposer preloaded, the config named" "$(spec 'e["env"]')" \
                "[\"$PRELOAD\", \"MEMACCT_CUDA_CONFIG=/etc/memacct/cuda.conf\"]"
        check_eq "mounts: interposer, config, socket directory" "$(mounts)" \
                "$INTERPOSER_ABS /usr/lib/memacct/libmemacct-cuda.so $RO bind
$CONF /etc/memacct/cuda.conf $RO bind
$TMP/run $TMP/run $RO bind"
        check_match "the socket directory not there yet: a note" "$ERR" "note: $TMP/run does not exist yet"
        mkdir -p "$TMP/run"
        gen --output - --interposer "$INTERPOSER" --config "$CONF" --socket "$SOCK"
        check_eq "--socket the config's: exit status (stderr: $ERR)" "$RC" 0
        check_eq "and no note once the directory is there" "$ERR" ""
        STDOUT_SPEC=$OUT

        # ---- the file: atomic, 0644, its directory made ----

        gen --output "$TMP/cdi/memacct.json" --interposer "$INTERPOSER" --config "$CONF"
        check_eq "generate to a file: exit status (stderr: $ERR)" "$RC" 0
        check_eq "says where and what to pass podman" "$OUT" \
                "cdi generate: wrote $TMP/cdi/memacct.json: --device memacct.io/gpu=all"
        check_eq "the file is the spec of stdout" "$(cat "$TMP/cdi/memacct.json")" "$STDOUT_SPEC"
        check_eq "readable by all (rootless podman reads it)" "$(stat -c %a "$TMP/cdi/memacct.json")" 644
        echo stale >"$TMP/cdi/memacct.json"
        gen --output "$TMP/cdi/memacct.json" --interposer "$INTERPOSER" --config "$CONF"
        check_eq "replaced: exit status" "$RC" 0
        check_eq "replaced whole" "$(cat "$TMP/cdi/memacct.json")" "$STDOUT_SPEC"
        check_eq "no temporary file left" "$(ls -A "$TMP/cdi")" memacct.json
        gen --output "$TMP/no/such/dir/memacct.json" --interposer "$INTERPOSER" --config "$CONF"
        check_eq "a directory two levels short: exit status" "$RC" 1
        check_match "says which" "$ERR" "cannot make its directory $TMP/no/such/dir"

        # ---- refused: a config the interposer would not use ----

        gen --output - --interposer "$INTERPOSER" --config "$CONF" --socket /run/other/memacctd.sock
        check_eq "--socket against the config: exit status" "$RC" 1
        check_match "says what the container would look for" "$ERR" \
                "--socket /run/other/memacctd.sock: the interposer's config $CONF names $SOCK"
        chmod 0664 "$CONF"
        gen --output - --interposer "$INTERPOSER" --config "$CONF"
        check_eq "a group-writable config: exit status" "$RC" 1
        check_match "says the interposer would ignore it" "$ERR" "config $CONF: not root's alone"
        chmod 0644 "$CONF"
        printf '[interposer]\nsocket = relative.sock\n' >"$TMP/bad.conf"
        gen --output - --interposer "$INTERPOSER" --config "$TMP/bad.conf"
        check_eq "a config the interposer does not understand: exit status" "$RC" 1
        check_match "names the line" "$ERR" "config $TMP/bad.conf, line 2: the interposer would not understand it"
        printf '[other]\nanything = goes\n[interposer]\non-unreachable = allow\n' >"$TMP/sys.conf"
        gen --output - --interposer "$INTERPOSER" --config "$TMP/sys.conf"
        check_eq "a config without a socket: exit status (stderr: $ERR)" "$RC" 0
        check_eq "mounts the system socket's directory" "$(mounts | tail -n 1)" "/run/memacctd /run/memacctd $RO bind"
else
        echo "SKIP (the specs with a config): not root, the interposer trusts only root's config"
fi

# ---- without a config: the interposer's defaults ----

if [[ ! -e $CDI_DEFAULT_CONFIG ]]; then
        gen --output - --interposer "$INTERPOSER"
        check_eq "no config: exit status (stderr: $ERR)" "$RC" 0
        check_eq "no config: LD_PRELOAD alone" "$(spec 'e["env"]')" "[\"$PRELOAD\"]"
        check_eq "no config: the system socket's directory" "$(mounts | tail -n 1)" \
                "/run/memacctd /run/memacctd $RO bind"
        check_eq "no config: two mounts, the interposer and the socket's directory" "$(mounts | wc -l)" 2
        gen --output - --interposer "$INTERPOSER" --socket "$SOCK"
        check_eq "no config, another socket: exit status" "$RC" 1
        check_match "says to write a config" "$ERR" \
                "without a config the interposer looks for /run/memacctd/memacctd.sock: write 'socket = $SOCK'"
else
        echo "SKIP (no config): $CDI_DEFAULT_CONFIG exists"
fi

# ---- refused: files missing ----

gen --output - --interposer "$TMP/nowhere/libmemacct-cuda.so" --config "$CONF"
check_eq "no interposer: exit status" "$RC" 1
check_match "says so" "$ERR" "interposer $TMP/nowhere/libmemacct-cuda.so: No such file or directory"
mkdir -p "$TMP/alone/memacct"
cp "$INTERPOSER" "$TMP/alone/memacct/"
gen --output - --interposer "$TMP/alone/memacct/libmemacct-cuda.so" --config "$CONF"
check_eq "an interposer alone, copied anywhere, is enough: exit status (stderr: $ERR)" "$RC" 0
check_nomatch "its needs: libc, not libmemacct, libsystemd, protobuf-c or inih" \
        "$(readelf -d "$INTERPOSER" | grep NEEDED)" 'libmemacct|libsystemd|libprotobuf|libinih'
gen --output - --interposer "$INTERPOSER" --config "$TMP/none.conf"
check_eq "--config that is not there: exit status" "$RC" 1
check_match "says so" "$ERR" "config $TMP/none.conf: No such file or directory"
gen --output - --interposer "$TMP" --config "$CONF"
check_eq "an interposer that is a directory: exit status" "$RC" 1
check_match "says so" "$ERR" "not a regular file"

# ---- usage errors: exit 2 ----

check_run "cdi without an action" 2 "$MEMACCTCTL" cdi
check_match "says so" "$ERR" "cdi: missing action"
check_run "cdi frobnicate" 2 "$MEMACCTCTL" cdi frobnicate
check_run "cdi generate extra" 2 "$MEMACCTCTL" cdi generate extra
check_run "cdi generate --bus" 2 "$MEMACCTCTL" cdi generate --bus
check_match "says why" "$ERR" "--bus and --user do not apply"
check_run "cdi generate --socket relative" 2 "$MEMACCTCTL" cdi generate --socket x.sock --output - \
        --interposer "$INTERPOSER"
check_run "--output for show" 2 "$MEMACCTCTL" show / --output x
check_match "says whose it is" "$ERR" "only for cdi generate"
check_run "--interposer for oci-hook" 2 "$MEMACCTCTL" oci-hook create --interposer x </dev/null
check_run "cdi generate --output ''" 2 "$MEMACCTCTL" cdi generate --output ''
check_run "help cdi" 0 "$MEMACCTCTL" help cdi
check_match "help cdi names the device" "$OUT" "memacct.io/gpu=all"
