#!/usr/bin/env bash
# install_deps.sh: install the Debian packages ppo_world needs, only those that are missing.
# Safe to run again; does nothing when everything is present. With --test, also what the test
# script's sanitizer build needs (tests/run_tests.sh): clang with its sanitizer and libFuzzer
# runtimes, clang's OpenMP, and llvm-symbolizer for readable stacks, and Slurm with munge for
# the one-node cluster of tests/e2e/test_slurm.sh. With --slurm, only Slurm and munge.
set -euo pipefail
pkgs=(gcc g++ pkg-config meson ninja-build libopenmpi-dev openmpi-bin libhwloc-dev hwloc
      libyaml-dev libopenblas-dev libjansson-dev libpcre2-dev libutf8proc-dev gnuplot-nox python3)
slurm=(slurmctld slurmd slurm-client munge)
case ${1:-} in
--test) pkgs+=(clang libclang-rt-dev libomp-dev llvm "${slurm[@]}") ;;
--slurm) pkgs=("${slurm[@]}") ;;
esac
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
