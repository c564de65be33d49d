#!/bin/sh
# test_bench_gpu_args.sh: the GPU modes of bench_model, bench_generate and bench_recompute take
# bf16, fp32, llama and qwen3 after `gpu` and refuse any other word with a message naming it
# (exit 2), as bench_generate refuses a BENCH_GEN_BATCH below 1;
# where no GPU can be seen (GPU_PROBE, when the build has the CUDA backend), `gpu llama` stops at
# the model's creation with the shape's name and exit 1 instead of running. bench_recompute's CPU
# mode (one pair of steps) ends with its RESULT line.
# MODEL, GENERATE and RECOMPUTE name the three programs (meson sets them).
set -u
: "${MODEL:?}" "${GENERATE:?}" "${RECOMPUTE:?}"
fail=0
gpu=0
if [ -n "${GPU_PROBE:-}" ] && "$GPU_PROBE" > /dev/null 2>&1; then gpu=1; fi
check() { # WANT_RC PATTERN CMD...
    want=$1 pat=$2
    shift 2
    err=$("$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" -ne "$want" ] || ! printf '%s\n' "$err" | grep -q "$pat"; then
        echo "FAIL: $*: exit $rc (expected $want), message: $err"; fail=1
    fi
}
check 2 "bench_model: 'x': expected bf16, fp32, llama or qwen3 after gpu" "$MODEL" 1 gpu llama x
check 2 "bench_model: 'fp16': expected bf16, fp32, llama or qwen3 after gpu" "$MODEL" 1 gpu fp16
check 2 "bench_generate: 'lama': expected bf16, fp32, llama or qwen3 after gpu" "$GENERATE" gpu lama
check 2 "bench_generate: BENCH_GEN_BATCH=0: expected a batch size >= 1" \
    env BENCH_GEN_BATCH=0 "$GENERATE" gpu
check 2 "bench_generate: BENCH_GEN_BATCH=12x: expected a batch size >= 1" \
    env BENCH_GEN_BATCH=12x "$GENERATE" gpu
check 2 "bench_recompute: 'x': expected bf16, fp32, llama or qwen3 after gpu" "$RECOMPUTE" 1 gpu x
check 2 "bench_recompute: 'cpu': expected gpu" "$RECOMPUTE" 1 cpu
"$RECOMPUTE" 1 2>&1 | grep -q '^RESULT gpt2_bf16_recompute_vs_keep=0.541 .* device=cpu time_' ||
    { echo "FAIL: bench_recompute 1: no RESULT line with the planned ratio 0.541"; fail=1; }
if [ "$gpu" = 0 ]; then
    check 1 "^Qwen2.5-0.5B shape: " "$MODEL" 1 gpu fp32 llama
    check 1 "^Qwen2.5-0.5B shape: " "$GENERATE" gpu llama
    check 1 "^Qwen3-0.6B shape: " "$MODEL" 1 gpu qwen3
    check 1 "^Qwen3-0.6B shape: " "$GENERATE" gpu qwen3
    check 1 "^GPT-2 124M: " "$MODEL" 1 gpu
    check 1 "^bench_recompute: model: " "$RECOMPUTE" 1 gpu
fi
[ "$fail" -eq 0 ] && echo "test_bench_gpu_args: ok"
exit "$fail"
