#!/bin/sh
# test_cuda_ppo.sh: a PPO run on the GPU at fp32 equals the CPU run of the same configuration.
# The tiny inputs of tests/roles (V=64, L=2, C=32; 8 prompts) and one 20-step configuration run
# twice as single-rank jobs of the real binary, started directly (an MPI singleton, no mpirun):
# once with every role `device: cpu`, once with every role `device: cuda`, both placements made
# from one template. Then metrics_check compares the two metrics.jsonl files:
#
#   step 0       every number within 1e-4 relative, floor 1e-6 absolute (a value near 0, such as
#                a loss, is compared absolutely); generator/logprob_diff, itself the rounding
#                between two code paths (1e-7 on the CPU), within 1e-4 absolute
#   steps 1..19  the metrics that the sampled tokens decide exactly (val/sequence_lengths,
#                val/num_stop_token_ids) and the counters and schedules (step, episode, epoch,
#                lr, critic/lr, objective/kl_coef) equal (1e-6 relative for the rates); the
#                clip fractions within 0.02 absolute (about one token of the 64 to 128 a step
#                trains crossing a clip bound); policy/approxkl_avg, a small difference of
#                log-probs, 1e-2 relative, floor 1e-6; generator/logprob_diff 1e-4 absolute;
#                every other number 1e-3 relative, floor 1e-5 absolute
#
# These tolerances are first choices, to be calibrated on the first GPU run: metrics_check
# prints each key's largest difference and the fraction of its allowance it used.
# Time, bytes and memory (time/*, comm/*, memory/*) are measurements, never compared.
#
# Sampled tokens: at temperature 1 a token flips when the two devices' logits, different in
# their last bits, put the uniform draw on the other side of a bucket edge; the two runs would
# then train on different data, and every later step differs by far more than rounding. So the
# runs generate greedily (generation.top_k=1: a flip needs two top logits within rounding of
# each other, which random tiny models do not make). A flip is still told apart from a wrong
# kernel: the token-decided metrics are compared first, over all 20 steps, and the message names
# the first step where they part.
#
# Last, a policy whose config.json is far too large for the device is refused before it loads.
#
# TINY_FAMILY=llama makes every model of the Llama family (tests/roles/common.sh).
# Exits 77 without a GPU (tests/cuda/gpu_probe). PW_TEST_SECOND_DEVICE=cpu runs the "cuda" side
# on the CPU too, so that everything but the GPU (both runs, the comparison, and its refusal of a
# perturbed metric) can be exercised on any machine.
# Expects PPO_WORLD, MAKE_TINY, METRICS_CHECK and GPU_PROBE in the environment (meson sets them).
. "$(dirname "$0")/../roles/common.sh"
: "${PPO_WORLD:?}" "${GPU_PROBE:?}"
SECOND=${PW_TEST_SECOND_DEVICE:-cuda}
case $SECOND in
    cuda) "$GPU_PROBE" || exit $? ;;   # 77 with its one-line reason
    cpu) echo "PW_TEST_SECOND_DEVICE=cpu: the second run is on the CPU too (no GPU used)" ;;
    *) echo "PW_TEST_SECOND_DEVICE='$SECOND': expected cuda or cpu" >&2; exit 2 ;;
esac
STEPS=20
echo "models: ${TINY_FAMILY:-gpt2} family"

make_inputs
# one template, every role on one rank and on DEV
for dev in cpu "$SECOND"; do
    placement "all_$dev" "actor: { ranks: [0], device: $dev }" \
        "reference: { ranks: [0], device: $dev }" "critic: { ranks: [0], device: $dev }" \
        "reward: { ranks: [0], device: $dev }" "generator: { ranks: [0], device: $dev }"
done

# 20 steps of 8 rollouts; two epochs of two minibatches (approxkl and the clip fractions are then
# not 0 by construction), a KL penalty, greedy generation (above).
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
run() { # NAME DEVICE
    "$PPO_WORLD" --placement "$WORK/all_$2.yaml" --config "$WORK/ppo.yaml" --out "$WORK/$1" \
        episodes=$((STEPS * 8)) ppo.epochs=2 ppo.minibatches=2 \
        ppo.initial_policy_kl_penalty=0.05 generation.top_k=1 runtime.timeout_s=300 \
        checkpoint.every=0 > "$WORK/$1.log" 2>&1 ||
        { tail -n 30 "$WORK/$1.log"; echo "FAIL: the $2 run did not finish"; exit 1; }
    "$METRICS_CHECK" lines "$WORK/$1/metrics.jsonl" "$STEPS"
}
run a cpu
run b "$SECOND"
A=$WORK/a/metrics.jsonl B=$WORK/b/metrics.jsonl

STEP0_RULES="generator/logprob_diff=0,1e-4"
TOKEN_RULES="val/sequence_lengths=0,0 val/num_stop_token_ids=0,0"
LATER_RULES="$TOKEN_RULES step=0,0 episode=0,0 epoch=0,0 lr=1e-6,0 critic/lr=1e-6,0
    objective/kl_coef=1e-6,0 policy/clipfrac_avg=0,0.02 val/clipfrac_avg=0,0.02
    policy/approxkl_avg=1e-2,1e-6 generator/logprob_diff=0,1e-4"
last=$((STEPS - 1))

# The comparison must be able to fail: step 0 of A against a copy whose objective/scores is
# moved by 1e-3 relative (ten times the step-0 tolerance) is refused.
sed -n 1p "$A" > "$WORK/a0.jsonl"
awk -v k='"objective/scores":' '{ i = index($0, k); if (!i) exit 1
    rest = substr($0, i + length(k)); if (!match(rest, /^ *-?[0-9.eE+-]+/)) exit 1
    v = substr(rest, RSTART, RLENGTH) + 0
    print substr($0, 1, i + length(k) - 1) " " sprintf("%.9g", v == 0 ? 1e-3 : v * 1.001) \
        substr(rest, RLENGTH + 1) }' "$WORK/a0.jsonl" > "$WORK/a0_perturbed.jsonl" ||
    { echo "FAIL: no number objective/scores in step 0 to perturb"; exit 1; }
if "$METRICS_CHECK" close "$WORK/a0_perturbed.jsonl" "$WORK/a0.jsonl" 0 0 1e-4 1e-6 \
    $STEP0_RULES > "$WORK/perturbed.log" 2>&1; then
    cat "$WORK/perturbed.log"; echo "FAIL: a metric moved by 1e-3 relative passed the comparison"
    exit 1
fi
grep -q "'objective/scores' differs" "$WORK/perturbed.log" ||
    { cat "$WORK/perturbed.log"; echo "FAIL: the perturbed key was not named"; exit 1; }
echo "self-check: a perturbed objective/scores is refused"

echo "step 0 ($SECOND against cpu):"
"$METRICS_CHECK" close "$B" "$A" 0 0 1e-4 1e-6 $STEP0_RULES ||
    { echo "FAIL: step 0 on $SECOND differs from the CPU beyond 1e-4 relative"; exit 1; }

# the sampled tokens first: a difference there is a flip (or a wrong generator), not rounding
if ! "$METRICS_CHECK" close "$B" "$A" 0 "$last" 0 0 $TOKEN_RULES '*=skip' > "$WORK/tokens.log" 2>&1; then
    first=$(sed -n "s/^line \([0-9]*\):.*/\1/p" "$WORK/tokens.log" | head -n 1)
    cat "$WORK/tokens.log"
    echo "FAIL: the sampled tokens differ from step $first on (greedy generation): a top-2 tie" \
         "within rounding, or the generator on $SECOND choosing other tokens; the metrics of" \
         "later steps are not comparable"
    exit 1
fi
echo "steps 1..$last ($SECOND against cpu):"
# shellcheck disable=SC2086
"$METRICS_CHECK" close "$B" "$A" 1 "$last" 1e-3 1e-5 $LATER_RULES ||
    { echo "FAIL: steps 1..$last on $SECOND differ from the CPU beyond the tolerances"; exit 1; }

# A policy too large for the device (its config.json says 206G parameters; the weights file is
# the tiny one's, never read) is refused before anything loads, saying what it needs and has.
"$MAKE_TINY" model "$WORK/big" 11 64
sed -i 's/"n_embd": [0-9]*/"n_embd": 65536/; s/"n_layer": [0-9]*/"n_layer": 4/' \
    "$WORK/big/config.json"
case $SECOND in
    cuda) mem='cuda:0 (rank 0: [0-9.]* MiB), which has [0-9.]* MiB free (cudaMemGetInfo)' ;;
    *) mem="the host's memory (rank 0: [0-9.]* MiB), which has [0-9.]* MiB free (" ;;
esac
rc=0
"$PPO_WORLD" --placement "$WORK/all_$SECOND.yaml" --config "$WORK/ppo.yaml" --out "$WORK/big_run" \
    model.sft="$WORK/big" > "$WORK/big.log" 2>&1 || rc=$?
want="^ppo_world: rank 0 on .*: not enough memory: the memory plan needs [0-9.]* MiB of $mem"
[ "$rc" = 1 ] && grep -q "$want" "$WORK/big.log" && ! grep -q "loading" "$WORK/big.log" ||
    { cat "$WORK/big.log"; echo "FAIL: a model too large for $SECOND: exit $rc"; exit 1; }
grep "^ppo_world:" "$WORK/big.log" | cut -c1-160
echo ok
