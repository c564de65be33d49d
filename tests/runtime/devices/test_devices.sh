#!/usr/bin/env bash
# test_devices.sh: `ppo_world devices` (docs/cuda.md, The architectures) on whatever this machine
# is: the build line in the form of a CUDA build (runtime version, gpu_arch, the machine code and
# PTX it holds) or a CPU one; the CPU line (instruction set, OpenBLAS kernels and who chose them);
# then "GPUs: 0 (why)" with one of the reasons the runtime's checks
# give, or one line a GPU saying whether it runs the build. Its refusal of an argument (exit 2)
# and its --help (exit 0). Needs no GPU. Usage: test_devices.sh PPO_WORLD. With NATIVE=1 (a
# GPU the build is made for: tests/cuda/gpu_checks.sh) there must be a GPU, and each must run
# the build's machine code.
set -uo pipefail
exe=$1
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The report is stdout; stderr apart, where a sanitizer build may print its own report at exit
# (LeakSanitizer's "Suppressions used" table came first once and hid the build line).
"$exe" devices > "$out" 2> "$err" || fail "devices: exit $?"
cat "$out" "$err"
cpu='CPU only \(ppo_world built without CUDA'
sm='sm_[0-9]+a?'
code="machine code $sm(, $sm)*; PTX compute_[0-9]+"
cuda="CUDA runtime [0-9]+\\.[0-9]+, gpu_arch [0-9]+(,[0-9]+)* \\($code\\)"
nccl='(, NCCL [0-9]+\.[0-9]+\.[0-9]+|, no NCCL)'
head -1 "$out" | grep -Eq "^build: ($cpu|$cuda$nccl)" || fail "devices: the build line"
# the CPU line: the instruction set, OpenBLAS's version and kernels, and who chose them
isa='(SSE|AVX|AVX2|AVX-512|not x86-64)'
set_by='set by ppo_world: OpenBLAS picked [^ ]+ for this CPU'
who="OPENBLAS_CORETYPE=[^,]+, (from the environment|$set_by)"
who="($who|OpenBLAS's own pick( for this CPU|, built in))"
sed -n 2p "$out" | grep -Eq "^CPU: $isa; BLAS: OpenBLAS [0-9.]+, [^ ]+ kernels \($who\)$" ||
    fail "devices: the CPU line"
n=$(sed -n 's/^GPUs: \([0-9]*\).*/\1/p' "$out")
if [ -z "$n" ]; then
    fail "devices: no 'GPUs:' line"
elif [ "$n" = 0 ]; then
    old='the NVIDIA driver supports CUDA up to [0-9.]+ and this build.s CUDA runtime is [0-9.]+'
    why="no GPU found|no NVIDIA driver found|ppo_world built without CUDA|$old: .*"
    grep -Eq "^GPUs: 0 \\(($why)\\)$" "$out" ||
        fail "devices: no GPU, and no reason among those known"
else
    what='compute capability [0-9]+\.[0-9]+, [0-9]+ SMs, [0-9.]+ GiB'
    runs='runs this build.s (machine code|PTX)|does not run this build: '
    k=$(grep -Ec "^GPU [0-9]+: .*, $what: ($runs)" "$out")
    [ "$k" = "$n" ] || fail "devices: $n GPUs but $k lines in the form"
fi
if [ "${NATIVE:-0}" = 1 ]; then
    k=$(grep -Ec "^GPU [0-9]+: .*: runs this build.s machine code" "$out")
    [ -n "$n" ] && [ "$n" -gt 0 ] && [ "$k" = "$n" ] ||
        fail "devices: NATIVE=1 but $k of ${n:-no} GPUs run the build's machine code"
fi

rc=0
"$exe" devices extra > "$out" 2>&1 || rc=$?
[ $rc = 2 ] && grep -q "unexpected argument 'extra'" "$out" || fail "devices extra: exit $rc"
rc=0
"$exe" devices --help > "$out" 2>&1 || rc=$?
[ $rc = 0 ] && grep -q "^usage: ppo_world devices" "$out" || fail "devices --help: exit $rc"

[ $fails = 0 ] || { echo "$fails failed"; exit 1; }
echo "devices: ok"
