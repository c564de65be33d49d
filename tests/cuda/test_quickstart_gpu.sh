#!/usr/bin/env bash
# test_quickstart_gpu.sh: `launch/quickstart.sh --device cuda` at full size (the quickstart's own
# configuration: SFT and three reward models on the GPU (model.device=cuda), then PPO as one
# process with every role on the GPU): the PPO policy beats the SFT policy on the gold score by at
# least 5 standard errors, (ppo_gold - sft_gold) / gold_se of the RESULT line (on the CPU: 15.2,
# docs/quickstart.md). Every training stage runs at model.precision=bf16 (the script's default
# with --device cuda).
# QS_FAMILY=llama runs it with `--family llama` (every model of the Llama family: Qwen2's layout).
# Without a GPU (tests/cuda/gpu_probe) it checks what it can, that --device cuda is refused with
# ppo_world's message and a non-zero exit before any stage runs, and then exits 77 (skip).
set -euo pipefail
: "${PPO_WORLD:?PPO_WORLD must name the ppo_world binary (meson sets it)}" "${GPU_PROBE:?}"
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
MIN_SE=5
FAMILY=${QS_FAMILY:-gpt2}
case $FAMILY in
    gpt2|llama) ;;
    *) echo "QS_FAMILY='$FAMILY': expected gpt2 or llama" >&2; exit 2 ;;
esac

gpu=1
"$GPU_PROBE" || { rc=$?; [ "$rc" = 77 ] || exit "$rc"; gpu=0; }
qs() {
    bash "$root/launch/quickstart.sh" --device cuda --family "$FAMILY" --out "$work/run" \
        > "$work/qs.log" 2>&1
}

if [ "$gpu" = 0 ]; then
    if qs; then cat "$work/qs.log"; echo "FAIL: --device cuda ran without a GPU"; exit 1; fi
    grep -q "key 'roles.actor.device': device cuda but rank 0 on host .* sees no GPU" \
        "$work/qs.log" || { cat "$work/qs.log"; echo "FAIL: not ppo_world's message"; exit 1; }
    if grep -q '^\[ 3/9\]' "$work/qs.log"; then
        cat "$work/qs.log"; echo "FAIL: a stage ran before the refusal"; exit 1
    fi
    echo "without a GPU, --device cuda is refused before any stage (checked); the run needs one:" \
         "skipped"
    exit 77
fi

qs || { cat "$work/qs.log"; echo "FAIL: the quickstart with --device cuda did not finish"; exit 1; }
cat "$work/qs.log"
grep -qF "PPO, 1 rank, every role on the GPU" "$work/qs.log" ||
    { echo "FAIL: no PPO stage on the GPU in the log"; exit 1; }
[ "$(grep -c 'device: cuda }' "$work/run/placement_cuda.yaml")" -eq 5 ] ||
    { cat "$work/run/placement_cuda.yaml"; echo "FAIL: not every role on the GPU"; exit 1; }
result=$(grep '^RESULT ' "$work/qs.log" | tail -n 1)
[ -n "$result" ] || { echo "FAIL: no RESULT line"; exit 1; }
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< "$result"; }
sft=$(field sft_gold) ppo=$(field ppo_gold) se=$(field gold_se)
awk -v f="$FAMILY" -v s="$sft" -v p="$ppo" -v e="$se" -v m="$MIN_SE" 'BEGIN {
    z = e > 0 ? (p - s) / e : 0
    printf "gold (%s): SFT %.4f, PPO on the GPU %.4f, +%.4f = %.1f standard errors", f, s, p,
        p - s, z
    printf " (at least %d)\n", m
    exit !(e > 0 && z >= m) }' ||
    { echo "FAIL: PPO on the GPU does not beat SFT by $MIN_SE standard errors"; exit 1; }
echo ok
