#!/usr/bin/env bash
# test_bench_ppo_gpu.sh: bench_ppo_gpu at its tiny shapes on the CPU (seconds), so that the GPU
# benchmark is known to run before a GPU session does: its table and RESULT line, the bytes of
# the weight transfer (worked by hand below), no TRL comparison off the anchor's shape, its
# refusals of bad options, and, without a GPU, the runtime's refusal of --device cuda.
set -euo pipefail
: "${BENCH:?BENCH must name the bench_ppo_gpu binary (meson sets it)}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { cat "$work/out" 2>/dev/null || true; echo "FAIL: $*"; exit 1; }

# The tiny GPT-2 (V = 512, a multiple of 64: no padding rows; L = 2, C = 64, n_positions = 64):
# wte 512*64 = 32768, wpe 64*64 = 4096, per layer 2*64 + 3*64*64 + 3*64 + 64*64 + 64 + 2*64
# + 4*64*64 + 4*64 + 4*64*64 + 64 = 49984, twice, and the final LayerNorm 128: 136960 floats,
# 547840 bytes of fp32.
BYTES=547840

TMPDIR=$work "$BENCH" --device cpu --shape tiny --steps 2 --epochs-list 1,4 > "$work/out" 2>&1 ||
    fail "the tiny CPU run exited $?"
cat "$work/out"
grep -qF "weight transfer: $BYTES bytes" "$work/out" || fail "not $BYTES bytes of weights"
result=$(grep '^RESULT ' "$work/out" | tail -n 1)
[ "$(tail -n 1 "$work/out")" = "$result" ] || fail "RESULT is not the last line"
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< "$result"; }
if [ "$(field device)" != cpu ] || [ "$(field shape)" != tiny ] ||
   [ "$(field prompts)" != 16 ] || [ "$(field precision)" != fp32 ]; then
    fail "RESULT does not name the run: $result"
fi
if [ "$(field vs_trl_e1)" != - ] || [ "$(field vs_trl_e4)" != - ]; then
    fail "a tiny CPU run compared with TRL's H100 figures"
fi
awk -v a="$(field s_per_step_e1)" -v b="$(field s_per_step_e4)" -v w="$(field weights_gbps)" \
    -v c="$(field copy_gbps)" -v r="$(field weights_vs_copy)" -v p="$(field host_peak_mib)" \
    'BEGIN { exit !(a > 0 && b > 0 && w > 0 && c > 0 && r > 0 && p > 0 &&
                    (r - w / c) ^ 2 < 1e-6 * r ^ 2 + 1e-12) }' ||
    fail "a RESULT figure is not positive, or weights_vs_copy is not weights_gbps / copy_gbps"
# the memory plan beside the peak, and in RESULT
grep -q '^planned (ppo_world --dry-run.s memory plan: .*): [0-9]* MiB' "$work/out" &&
    awk -v p="$(field planned_mib)" 'BEGIN { exit !(p > 0) }' || fail "no memory plan"
[ "$(field micro)" = 4 ] && [ "$(field gen_batch)" = 4 ] ||
    fail "the generation batch is not the micro batch by default: $result"
grep -qF "micro batch 4, generation batch 4;" "$work/out" || fail "the header does not say the batches"
# the per-step rows: epochs 1 and 4 at 16 prompts, vs TRL "-"
[ "$(grep -cE '^ +[14] +16 .* -$' "$work/out")" = 2 ] || fail "not one busy row per epochs entry"
left() { compgen -G "$work/bench_ppo_gpu.*" > /dev/null; }
if left; then fail "the temporary folder was left behind"; fi
# generation as one batch of the 16 prompts, passes in micro batches of 4
TMPDIR=$work "$BENCH" --device cpu --shape tiny --steps 2 --epochs-list 1 --micro 4 \
    --gen-batch 16 > "$work/out" 2>&1 || fail "the --gen-batch run exited $?"
grep -qF "micro batch 4, generation batch 16;" "$work/out" || fail "--gen-batch 16 not in the header"
grep -q '^RESULT .* micro=4 gen_batch=16 ' "$work/out" || fail "--gen-batch 16 not in RESULT"

# The Llama family's tiny shape (Qwen2's layout: L = 2, C = 64, 4 query heads over 2 key/value
# heads of 16, MLP 96, V = 512, tied, q/k/v biases): per layer two RMSNorm weights 2*64, q
# 64*64 + 64, k and v 2*(32*64 + 32), o 64*64, gate, up and down 3*96*64: 30976, twice, the
# embedding 512*64 = 32768 and the final norm 64: 94784 floats, 379136 bytes.
TMPDIR=$work "$BENCH" --device cpu --shape tiny-llama --steps 2 --epochs-list 1 > "$work/out" \
    2>&1 || fail "the tiny-llama CPU run exited $?"
grep -qF "shape tiny-llama (llama L=2 C=64 NH=4 KV=2 V=512" "$work/out" ||
    fail "the header does not describe the Llama shape"
grep -qF "weight transfer: 379136 bytes" "$work/out" || fail "tiny-llama: not 379136 bytes"
grep -q '^RESULT device=cpu shape=tiny-llama .* s_per_step_e1=[0-9.]* ' "$work/out" ||
    fail "tiny-llama: no RESULT with its step time"

# Qwen3's tiny shape: as tiny-llama but heads of 24 (q 96 rows, k and v 48 each) with q/k norms
# and an o_proj bias: per layer 2*64 + q 96*64 + 96, k and v 2*(48*64 + 48), o 64*96 + 64,
# q_norm and k_norm 2*24, MLP 3*96*64: 37296, twice, 32768 and 64: 107424 floats, 429696 bytes.
TMPDIR=$work "$BENCH" --device cpu --shape tiny-qwen3 --steps 2 --epochs-list 1 > "$work/out" \
    2>&1 || fail "the tiny-qwen3 CPU run exited $?"
grep -qF "weight transfer: 429696 bytes" "$work/out" || fail "tiny-qwen3: not 429696 bytes"
grep -q '^RESULT device=cpu shape=tiny-qwen3 .* s_per_step_e1=[0-9.]* ' "$work/out" ||
    fail "tiny-qwen3: no RESULT with its step time"

# Bad options: exit 2 with a message naming the option.
for bad in "--prompts 6:--prompts: a multiple of 4" "--device gpu:--device: expected cuda or cpu" \
           "--steps 1:--steps: '1' is not a whole number" "--epochs-list 1,x:--epochs-list: 'x'" \
           "--gen-batch 0:--gen-batch: '0' is not a whole number" \
           "--shape llama:--shape: expected gpt2-124m, qwen2.5-0.5b, qwen3-0.6b, tiny, tiny-llama" \
           "--shape qwen3:or tiny-qwen3"; do
    args=${bad%%:*} want=${bad#*:}
    rc=0
    # shellcheck disable=SC2086
    "$BENCH" $args > "$work/out" 2>&1 || rc=$?
    [ "$rc" = 2 ] || fail "$args: exit $rc, expected 2"
    grep -qF -- "$want" "$work/out" || fail "$args: no '$want'"
done

# --device cuda (the default) without a GPU: the runtime's message, exit 1, nothing left behind.
if [ -n "${GPU_PROBE:-}" ] && "$GPU_PROBE" > /dev/null; then
    echo "a GPU is visible: the refusal without one is not checked here"
else
    rc=0
    TMPDIR=$work "$BENCH" > "$work/out" 2>&1 || rc=$?
    [ "$rc" = 1 ] || fail "--device cuda without a GPU: exit $rc, expected 1"
    grep -q "key 'roles.actor.device': device cuda but rank 0 on host .* sees no GPU" \
        "$work/out" || fail "--device cuda without a GPU: not the runtime's message"
    if left; then fail "the refusal left its temporary folder behind"; fi
fi
echo ok
