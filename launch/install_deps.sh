#!/usr/bin/env bash
# install_deps.sh: install the Debian packages ppo_world needs, only those that are missing.
# Safe to run again; does nothing when everything is present. With --test, also what the test
# script's sanitizer build needs (tests/run_tests.sh): clang with its sanitizer and libFuzzer
# runtimes, clang's OpenMP, and llvm-symbolizer for readable stacks.
set -euo pipefail
pkgs=(gcc g++ pkg-config meson ninja-build libopenmpi-dev openmpi-bin libhwloc-dev hwloc
      libyaml-dev libopenblas-dev libjansson-dev libpcre2-dev libutf8proc-dev gnuplot-nox python3)
if [ "${1:-}" = --test ]; then
    pkgs+=(clang libclang-rt-dev libomp-dev llvm)
fi
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
