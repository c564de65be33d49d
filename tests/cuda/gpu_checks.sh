#!/usr/bin/env bash
# gpu_checks.sh: the GPU checks of docs/cuda.md ("What has been verified, what waits for a GPU")
# in their order, on a machine with a GPU and a build made with CUDA, each step's output in a
# log of its own and one summary: what ran, its exit status, and the benchmarks' RESULT lines.
#   bash tests/cuda/gpu_checks.sh [PART ...]   PART: tests, sanitize, bench, ops, profile, ab,
#                                              bisect, waiting (default: the first five)
# BUILD is the build folder (default: build), OUT where the logs go (default: gpu_checks),
# MESON the meson command (default: meson), SANITIZER compute-sanitizer's path and NCU Nsight
# Compute's (default: found on PATH), PYTHON a python3 that runs without the project's library
# path (default: env -u LD_LIBRARY_PATH python3). Each step has a time limit (STEP_S seconds,
# default 540) so that one hang does not take the rest; a step that fails does not stop the
# others. BUDGET_S (default: none) bounds the whole run: a step gets what is left of it, and
# the steps it leaves no time for are listed as not run (a GPU lent by the minute: name the
# parts in the order they matter). The ab part runs the decode and the training step of BASE,
# the build folder of an older tree, and of BUILD, alternately in the same call: a figure that
# moved between two machines of the same kind says nothing until both trees ran on one. The
# bisect part runs the decode at batch 256 of each build folder under BISECT (older trees',
# each named by its commit) and of BUILD, twice, alternating: where a regression came in. The
# waiting part runs what docs/cuda.md lists as waiting for a GPU, in its order, in about five
# minutes: the twins and the quickstart of what changed, the bisect part when BISECT is set,
# then the benchmarks that decide defaults and the issue's figures, and the profiles.
# ARCHIVE (a file path; default: none) is written at the end
# as one .tar.gz of the whole OUT folder, for a machine that gives back a few files only.
# Exit status: 0 when every step that
# ran passed or skipped (77); the benchmarks that cannot skip fail without a GPU.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
OUT=${OUT:-gpu_checks}
MESON=${MESON:-meson}
STEP_S=${STEP_S:-540}
BUDGET_S=${BUDGET_S:-0}
SAN=${SANITIZER:-$(command -v compute-sanitizer || true)}
NCU=${NCU:-$(command -v ncu || true)}
read -r -a PY <<< "${PYTHON:-env -u LD_LIBRARY_PATH python3}"
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(tests sanitize bench ops profile)
for p in "${parts[@]}"; do
    case "$p" in tests|sanitize|bench|ops|profile|ab|bisect|waiting) ;; *)
        echo "gpu_checks: unknown part '$p';" \
             "expected tests, sanitize, bench, ops, profile, ab, bisect or waiting" >&2
        exit 2 ;;
    esac
    if [ "$p" = bisect ] && { [ -z "${BISECT:-}" ] || [ ! -d "$BISECT" ]; }; then
        echo "gpu_checks: the bisect part needs BISECT, a folder of older trees' build folders" \
             "(BISECT='${BISECT:-}')" >&2
        exit 2
    fi
    if [ "$p" = ab ] && { [ -z "${BASE:-}" ] || [ ! -x "$BASE/bench/bench_generate" ] ||
                          [ ! -x "$BASE/bench/bench_model" ]; }; then
        echo "gpu_checks: the ab part needs BASE, an older tree's build folder with" \
             "bench/bench_generate and bench/bench_model (BASE='${BASE:-}')" >&2
        exit 2
    fi
done
if [ ! -f "$BUILD/build.ninja" ]; then
    echo "gpu_checks: $BUILD is not a meson build folder (set BUILD)" >&2
    exit 2
fi
mkdir -p "$OUT"
summary="$OUT/summary.txt"
: > "$summary"
# the device the figures belong to (an H100 and an H200 differ in memory bandwidth by 1.4x)
if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
        --format=csv,noheader 2>&1 | sed 's/^/device: /' | tee -a "$summary"
fi
failed=0

# bisect_runs: the decode at batch 256 (BENCH_GEN_BATCH=256 bench_generate gpu) of each build
# folder under BISECT (older trees', named by their commits) and of BUILD, twice, alternating:
# where a regression came in, in one call. GELU stays a kernel, as the older trees had it.
bisect_runs() {
    local r d
    for r in 1 2; do
        for d in "$BISECT"/*/; do
            [ -x "$d/bench/bench_generate" ] || continue
            step "bisect_$(basename "$d")_$r" env BENCH_GEN_BATCH=256 BENCH_LT_GELU=0 \
                "$d/bench/bench_generate" gpu
        done
        step "bisect_this_$r" env BENCH_GEN_BATCH=256 BENCH_LT_GELU=0 \
            "$BUILD/bench/bench_generate" gpu
    done
}

# wg_rows: from the twins' log, the warpgroup attention's wrong rows (cuda_attention_bf16, through
# tests/cuda/lse_rows.h: each failing case, its counts and classes; wg_rows.awk) into the
# summary, which comes back even where the logs do not: the line of each case of the modes'
# sweep first, then at most 48 lines of the failing cases
wg_rows() {
    local tl="$OUT/waiting_twins.testlog.txt"
    [ -f "$tl" ] || return 0
    awk -f tests/cuda/wg_rows.awk "$tl" > "$OUT/wg_rows.txt"
    grep '^  wgmma mode ' "$OUT/wg_rows.txt" >> "$summary"
    grep -v '^  wgmma mode ' "$OUT/wg_rows.txt" | head -48 >> "$summary"
}

# step NAME CMD...: runs CMD under the time limit into $OUT/NAME.log, records the verdict.
step() {
    local name=$1
    shift
    local t0=$SECONDS limit=$STEP_S
    if [ "$BUDGET_S" -gt 0 ]; then
        local left=$((BUDGET_S - SECONDS))
        if [ "$left" -lt 10 ]; then
            printf '%-28s %-22s\n' "$name" "not run (BUDGET_S)" | tee -a "$summary"
            failed=1
            return
        fi
        [ "$left" -lt "$limit" ] && limit=$left
    fi
    touch "$OUT/.started"
    timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    # meson prints the last 100 lines of a failed test's output; its log has all of it
    local tl="$BUILD/meson-logs/testlog.txt"
    if [ "$tl" -nt "$OUT/.started" ]; then cp "$tl" "$OUT/$name.testlog.txt"; fi
    local verdict=ok
    case $rc in
    0) ;;
    77) verdict="skipped (no GPU)" ;;
    124) verdict="timed out after ${limit}s"; failed=1 ;;
    *) verdict="exit $rc"; failed=1 ;;
    esac
    printf '%-28s %-22s %4ds\n' "$name" "$verdict" $((SECONDS - t0)) | tee -a "$summary"
    grep -h '^RESULT ' "$OUT/$name.log" >> "$summary" || true
}

# The kernel twins, the model interface, the sampler; then the whole runs (slow: minutes).
twins=(cuda_encoder cuda_layernorm cuda_matmul cuda_attention cuda_attention_cache cuda_gelu
       cuda_residual cuda_logprobs cuda_adamw cuda_norm cuda_rmsnorm cuda_rope cuda_swiglu
       cuda_attention_gqa cuda_attention_bf16 cuda_sample cuda_check cuda_model)
mtest=("$MESON" test -C "$BUILD" --no-rebuild --print-errorlogs)

for p in "${parts[@]}"; do
    case "$p" in
    tests)
        step cuda_twins "${mtest[@]}" "${twins[@]}"
        step comm_gpu "${mtest[@]}" "comm gpu np1" "comm fanout np1"
        # the PPO run on the GPU, and at fp32 against the same run on the CPU, GPT-2 and Llama
        step cuda_ppo "${mtest[@]}" "cuda ppo" "cuda ppo cpu twin" "cuda ppo llama" \
            "cuda ppo llama cpu twin"
        # verbose: their standard errors over SFT are in the test's own output
        step quickstart_gpu "${mtest[@]}" --verbose "quickstart gpu"
        step quickstart_gpu_llama "${mtest[@]}" --verbose "quickstart gpu llama"
        ;;
    sanitize)
        if [ -z "$SAN" ]; then
            echo "sanitize: compute-sanitizer not found (set SANITIZER)" | tee -a "$summary"
            failed=1
            continue
        fi
        step memcheck "${mtest[@]}" --wrap="$SAN --error-exitcode=1 --tool memcheck" "${twins[@]}"
        # cuBLAS's own nvjet kernels report hazards of their own making: left out
        step racecheck "${mtest[@]}" --wrap="$SAN --error-exitcode=1 --tool racecheck \
--kernel-name-exclude kns=nvjet" cuda_sample cuda_attention cuda_attention_gqa \
            cuda_attention_bf16 cuda_logprobs cuda_norm cuda_layernorm
        ;;
    bench)
        # first what the issue's goals are measured by: the kernels, GPT-2 124M's training MFU,
        # its decoding against the roofline, and the PPO step against TRL's (the 128 prompts
        # sampled as one batch, then as the default's batches of 32)
        step bench_kernels_cuda "$BUILD/bench/bench_kernels_cuda"
        step bench_model_bf16 "$BUILD/bench/bench_model" 10 gpu
        step bench_generate_gpu "$BUILD/bench/bench_generate" gpu
        step bench_ppo_gpu_gen128 "$BUILD/bench/bench_ppo_gpu" --gen-batch 128
        step bench_ppo_gpu "$BUILD/bench/bench_ppo_gpu"
        # the bias-epilogue products' algorithms timed on first use (pw_cuda_set_lt_tune):
        # whether the bf16-output forward products reach the backward's rate
        step bench_model_lt_tune env BENCH_LT_TUNE=1 "$BUILD/bench/bench_model" 10 gpu
        # ... and with the bf16-output products' bias kept in float32 (the slow kernel the
        # default bf16 bias avoids: pw_cuda_set_lt_bias16)
        step bench_model_bias32 env BENCH_LT_BIAS16=0 "$BUILD/bench/bench_model" 10 gpu
        # the decode's products (64 and 256 rows) with their algorithms timed on first use
        step bench_generate_lt_tune env BENCH_LT_TUNE=1 "$BUILD/bench/bench_generate" gpu
        # the tensor-core attention built for three blocks an SM: whether it becomes the default
        step bench_model_flash3 env BENCH_FLASH_BLOCKS=3 "$BUILD/bench/bench_model" 10 gpu
        # the Llama family at Qwen2.5-0.5B's shape: training (B = 8, T = 1024), decoding, and
        # the PPO step (micro batches of 8)
        step bench_model_llama "$BUILD/bench/bench_model" 10 gpu llama
        step bench_generate_llama "$BUILD/bench/bench_generate" gpu llama
        step bench_ppo_gpu_qwen "$BUILD/bench/bench_ppo_gpu" --shape qwen2.5-0.5b \
            --gen-batch 128 --steps 3
        step bench_ppo_gpu_qwen3 "$BUILD/bench/bench_ppo_gpu" --shape qwen3-0.6b \
            --gen-batch 128 --steps 3
        step bench_model_fp32 "$BUILD/bench/bench_model" 10 gpu fp32
        # activation checkpointing: the step with each layer made again in the backward
        step bench_recompute_gpu "$BUILD/bench/bench_recompute" 5 gpu
        # the LM head 2048 rows at a time: what the recomputed logits cost the step
        step bench_model_lm_chunk env BENCH_LM_CHUNK=2048 "$BUILD/bench/bench_model" 10 gpu
        # activations and device memory at fp32 and bf16, GPT-2 124M and Qwen2.5-0.5B's shape
        step bench_memory_gpu "$BUILD/bench/bench_memory" cuda
        # 512 prompts a step (3 steps: 5 of both epoch counts took over 150 s with generation
        # in batches of 32)
        step bench_ppo_gpu_512 "$BUILD/bench/bench_ppo_gpu" --prompts 512 --gen-batch 512 \
            --steps 3
        ;;
    ops)
        # each kernel-table entry's device time by shape (PW_PROFILE_OPS: events around each
        # call, no ncu, seconds): the training step (the warm-up left out), one batch's decode,
        # and the PPO step; each report is $OUT/ops_*.txt. The events add a little time to
        # each call: read the shares, not the benchmarks' own figures.
        prof() { local name=$1; shift; step "$name" env PW_PROFILE_OPS="$OUT/$name.txt" "$@"; }
        prof ops_model "$BUILD/bench/bench_model" 3 gpu
        prof ops_decode env BENCH_GEN_BATCH=256 "$BUILD/bench/bench_generate" gpu
        prof ops_decode_llama env BENCH_GEN_BATCH=256 "$BUILD/bench/bench_generate" gpu llama
        prof ops_model_llama "$BUILD/bench/bench_model" 3 gpu llama
        prof ops_ppo "$BUILD/bench/bench_ppo_gpu" --gen-batch 128 --steps 2 --epochs-list 1
        ;;
    waiting)
        # the build against this GPU (ppo_world devices: its line must say machine code)
        step devices env NATIVE=1 bash tests/runtime/devices/test_devices.sh \
            "$BUILD/src/ppo_world"
        step waiting_twins "${mtest[@]}" cuda_encoder cuda_model cuda_layernorm cuda_matmul \
            cuda_attention_bf16 cuda_attention_gqa cuda_switches cuda_adamw
        wg_rows
        step waiting_quickstart_gpu "${mtest[@]}" --verbose "quickstart gpu"
        # the decode at batch 256 of older trees' builds, alternating with this one's
        if [ -n "${BISECT:-}" ]; then bisect_runs; fi
        step bench_kernels_cuda "$BUILD/bench/bench_kernels_cuda"
        step bench_model_bf16 "$BUILD/bench/bench_model" 10 gpu
        # LayerNorm's forward 16 bytes a load (pw_cuda_set_ln_vec, off by default)
        step bench_model_ln_vec env BENCH_LN_VEC=1 "$BUILD/bench/bench_model" 10 gpu
        # the bias gradients' column sums 2 bytes a thread a row (pw_cuda_set_colsum_vec(0))
        step bench_model_colsum_scalar env BENCH_COLSUM_VEC=0 "$BUILD/bench/bench_model" 10 gpu
        # the backward's products through cuBLASLt (pw_cuda_set_lt_all), with the heuristic's
        # plans, then each timed with its split-K forms: the weight gradients' few tiles over
        # K = 16384; each plan's timing printed (the heuristic's first against the kept one)
        step bench_model_lt_all env BENCH_LT_ALL=1 BENCH_LT_REPORT=1 "$BUILD/bench/bench_model" \
            10 gpu
        step bench_model_lt_all_tune env BENCH_LT_ALL=1 BENCH_LT_TUNE=1 BENCH_LT_REPORT=1 \
            "$BUILD/bench/bench_model" 10 gpu
        # the timed plans of the products that add to their output (the weight gradients)
        grep -h ' added .*timed' "$OUT/bench_model_lt_all_tune.log" 2>/dev/null | head -30 |
            sed 's/^/  plan /' >> "$summary" || true
        step bench_generate_b256 env BENCH_GEN_BATCH=256 "$BUILD/bench/bench_generate" gpu
        step bench_generate_ln_vec env BENCH_LN_VEC=1 BENCH_GEN_BATCH=256 \
            "$BUILD/bench/bench_generate" gpu
        # GPT-2's GELU from kernels of its own (pw_cuda_set_lt_gelu(0); the epilogues by default)
        step bench_model_nogelu env BENCH_LT_GELU=0 "$BUILD/bench/bench_model" 10 gpu
        # the Llama shape's decode with its split-cache row (the group kernel the default)
        step bench_generate_llama "$BUILD/bench/bench_generate" gpu llama
        step bench_ppo_gpu_gen128 "$BUILD/bench/bench_ppo_gpu" --gen-batch 128 --steps 3 \
            --epochs-list 1,4
        step ops_model env PW_PROFILE_OPS="$OUT/ops_model.txt" "$BUILD/bench/bench_model" 3 gpu
        step ops_decode env PW_PROFILE_OPS="$OUT/ops_decode.txt" BENCH_GEN_BATCH=256 \
            "$BUILD/bench/bench_generate" gpu
        # the attention's forward on the warpgroup products (pw_cuda_set_flash_wgmma, off)
        step bench_model_wgmma env BENCH_FLASH_WGMMA=1 "$BUILD/bench/bench_model" 10 gpu
        step bench_generate_qwen3 env BENCH_GEN_BATCH=256 "$BUILD/bench/bench_generate" gpu qwen3
        ;;
    bisect)
        bisect_runs
        ;;
    ab)
        # twice each, alternating, so that a drift of the machine shows as itself
        for r in 1 2; do
            step "ab_generate_base_$r" "$BASE/bench/bench_generate" gpu
            step "ab_generate_$r" "$BUILD/bench/bench_generate" gpu
        done
        step ab_model_base "$BASE/bench/bench_model" 10 gpu
        step ab_model "$BUILD/bench/bench_model" 10 gpu
        ;;
    profile)
        if [ -z "$NCU" ]; then
            echo "profile: ncu not found (set NCU)" | tee -a "$summary"
            failed=1
            continue
        fi
        # shares REPORT: a command line (run under `step` through bash -c, a pipe)
        shares() {
            printf '"%s" --import "%s" --csv --page raw' "$NCU" "$1"
            printf ' --metrics gpu__time_duration.sum' 
            printf ' | %s tests/cuda/ncu_shares.py 40' "${PY[*]}"
        }
        # each kernel's share of a training step (the warm-up step and one more; ncu fixes the
        # clocks, so the shares, not the times, are what to read)
        step ncu_model "$NCU" --metrics gpu__time_duration.sum -f -o "$OUT/ncu_model" \
            "$BUILD/bench/bench_model" 1 gpu
        step ncu_model_shares bash -c "$(shares "$OUT/ncu_model.ncu-rep")"
        # 500 kernels in the middle of batch 64's generation: the decode step's kernels
        step ncu_decode "$NCU" --metrics gpu__time_duration.sum --launch-skip 3000 \
            --launch-count 500 --kill yes -f -o "$OUT/ncu_decode" "$BUILD/bench/bench_generate" gpu
        step ncu_decode_shares bash -c "$(shares "$OUT/ncu_decode.ncu-rep")"
        # the tensor-core attention at GPT-2's shape, every section: occupancy, stall reasons,
        # memory and pipe use; kept as a report with the sources (the build has -lineinfo), then
        # read back twice: every section, and each source line and SASS instruction's counters
        # (the stall samples by line). The first three launches are the default build's fwd,
        # dq and dkv (bench_kernels_cuda times it before the three-block build).
        step ncu_attention "$NCU" --set full --import-source yes \
            -k 'regex:pw_flash_tc_(fwd|dq|dkv)_64' --launch-count 3 --kill yes -f \
            -o "$OUT/ncu_attention" "$BUILD/bench/bench_kernels_cuda" 1
        step ncu_attention_details "$NCU" --import "$OUT/ncu_attention.ncu-rep" --page details
        step ncu_attention_source "$NCU" --import "$OUT/ncu_attention.ncu-rep" --page source \
            --csv --print-source cuda,sass
        ;;
    esac
done
echo "gpu_checks: logs in $OUT, summary in $summary"
if [ -n "${ARCHIVE:-}" ]; then
    # written beside, then moved: an ARCHIVE inside OUT would otherwise be read as it grows
    part=$(mktemp)
    if tar czf "$part" -C "$(dirname "$OUT")" "$(basename "$OUT")" && mv "$part" "$ARCHIVE"; then
        echo "gpu_checks: every log in $ARCHIVE"
    else
        echo "gpu_checks: could not write $ARCHIVE" >&2
        failed=1
    fi
fi
exit $failed
