#!/usr/bin/env bash
# install_deps.sh: install the Debian packages ppo_world needs, only those that are missing.
# Safe to run again; does nothing when everything is present.
set -euo pipefail
pkgs=(gcc g++ pkg-config meson ninja-build libopenmpi-dev openmpi-bin libhwloc-dev hwloc
      libyaml-dev libopenblas-dev libjansson-dev libpcre2-dev libutf8proc-dev gnuplot-nox python3)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
echo "install_deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
