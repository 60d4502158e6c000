#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Install what tools/apt-packages.txt lists (Debian 12, as root).
set -euo pipefail
cd "$(dirname "$0")"
mapfile -t pkgs < <(grep -v -E '^\s*(#|$)' apt-packages.txt)
missing=()
for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
