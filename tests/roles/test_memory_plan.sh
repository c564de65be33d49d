#!/bin/sh
# test_memory_plan.sh: the memory plan (`ppo_world --dry-run --config ...`) is what each rank's
# kernel table then holds at most, to the byte, on the CPU (which counts its buffers as the GPU's
# table does): every role on one rank; five roles on three ranks, and with activation
# checkpointing; the moments split over data-parallel ranks (optim.zero_stage 1), at bf16 with
# the float32 weights of the layers' matrices, and the gradients too (stage 2); no generator
# (the actor samples) at bf16; a reward ensemble with the gold model of the evaluations. The
# driver prints the plan, runs two steps and compares each rank's high-water mark with its plan
# (PPO_DRIVER_MEMORY_PLAN=1). Then ppo_world's dry run prints the same table, and a bad
# configuration gets the run's own message and exit 1. Last, a policy whose config.json claims
# 206G parameters (its weights file the tiny one's): the dry run says DOES NOT FIT, and the run
# on three ranks is refused before anything loads, one message for the three ranks' plans.
. "$(dirname "$0")/common.sh"
make_inputs
"$MAKE_TINY" model "$WORK/rm2" 23 64 score ${TINY_FAMILY:-}
placement three 'actor: { ranks: [0] }' 'reference: { ranks: [1] }' 'critic: { ranks: [0] }' \
    'reward: { ranks: [2] }' 'generator: { ranks: [1] }'
placement nogen 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'critic: { ranks: [1] }' \
    'reward: { ranks: [1] }'

# plan NP PLACEMENT OUT [key=value ...]: the run, and every rank's "planned X, held at most X"
plan() {
    np=$1 pl=$2 out=$3
    shift 3
    PPO_DRIVER_MEMORY_PLAN=1 run_ppo "$np" "$pl" "$out" episodes=16 "$@" > "$WORK/$out.log" 2>&1 ||
        { cat "$WORK/$out.log"; echo "FAIL: $pl: the planned run failed"; exit 1; }
    n=$(grep -c '^memory plan: rank [0-9]*: planned \([0-9]*\) bytes, held at most \1$' \
        "$WORK/$out.log" || true)
    [ "$n" = "$np" ] ||
        { cat "$WORK/$out.log"; echo "FAIL: $pl: $n of $np ranks as planned"; exit 1; }
    grep '^memory plan: rank' "$WORK/$out.log"
}
plan 1 single one
plan 3 three three
plan 2 nogen nogen model.precision=bf16
plan 3 three three16 model.precision=bf16
plan 3 three ckpt model.activation_checkpointing=true
# the AdamW moments split over the actor's two ranks and the critic's three (optim.zero_stage 1):
# each rank plans its own share, the last critic rank's the smallest
placement dp 'actor: { ranks: [0, 1] }' 'reference: { ranks: [2] }' \
    'critic: { ranks: [0, 1, 2] }' 'reward: { ranks: [2] }' 'generator: { ranks: [1] }'
plan 3 dp dp optim.zero_stage=1
grep -q '^memory plan (MiB; .*; optim.offload_adam_states false; optim.zero_stage 1):$' \
    "$WORK/dp.log" || { cat "$WORK/dp.log"; echo "FAIL: the plan's header lacks the stage"; exit 1; }
# at bf16 each rank keeps its share's float32 of the layers' matrices too (the model suite's
# `memory plan` counts it to the byte): rank 0 (an actor's and a critic's share) plans and
# holds it as planned, less than with everything whole
plan 3 dp dp16 optim.zero_stage=1 model.precision=bf16
held0() { sed -n 's/^memory plan: rank 0: planned \([0-9]*\) bytes.*/\1/p' "$WORK/$1.log"; }
plan 3 dp dp16w model.precision=bf16
a=$(held0 dp16) b=$(held0 dp16w)
[ -n "$a" ] && [ "$a" -lt "$b" ] ||
    { cat "$WORK/dp16.log"; echo "FAIL: rank 0 planned $a bytes split, $b whole"; exit 1; }
# optim.zero_stage 2: the gradients split too (their share and the two buffers a backward sums
# from); at bf16 actor rank 0 packs the generator's weights where its gradients were. Each rank
# holds what it plans, rank 0 less than at stage 1
plan 3 dp dp2 optim.zero_stage=2
plan 3 dp dp162 optim.zero_stage=2 model.precision=bf16
c=$(held0 dp162)
[ -n "$c" ] && [ "$c" -lt "$a" ] ||
    { cat "$WORK/dp162.log"; echo "FAIL: rank 0 planned $c bytes at stage 2, $a at 1"; exit 1; }
plan 1 single ens "model.reward=[$WORK/rm,$WORK/rm2]" model.gold="$WORK/rm2" eval.every=1 \
    eval.num_prompts=4
grep -q '^    0  cpu    gold ' "$WORK/ens.log" ||
    { cat "$WORK/ens.log"; echo "FAIL: no gold row"; exit 1; }

# ppo_world --dry-run with the configuration: the placement's table, then the plan
"$PPO_WORLD" --placement "$WORK/three.yaml" --dry-run --world-size 3 --config "$WORK/ppo.yaml" \
    > "$WORK/dry.log" 2>&1 || { cat "$WORK/dry.log"; echo "FAIL: the dry run failed"; exit 1; }
for want in '^memory plan (MiB; model.precision fp32; models at 4 rows x ' \
            '; optim.offload_adam_states false; optim.zero_stage 0):$' \
            '^    0  cpu    actor  ' '^    1  cpu    generator  ' '^    2  cpu    at most ' \
            '^  this host: cpu ranks 0, 1, 2 at most [0-9.]* MiB together of the .* (.*)$'; do
    grep -q "$want" "$WORK/dry.log" || { cat "$WORK/dry.log"; echo "FAIL: no '$want'"; exit 1; }
done
# the weights the actor hands the generator each step, counted by hand: GPT-2 (V 64, C 32, L 2,
# 32 positions) has 3968 floats outside its layers' matrices and 24576 in them; the Llama
# family's tiny one (tied, 4 query heads over 2 of 8, MLP 48) 2336, padded to 2368, and 15360.
# fp32: 4 bytes each; bf16: 4 for the first (padded to 64 floats), 2 for the matrices.
want32=114176 want16=65024
if [ "${TINY_FAMILY:-}" = llama ]; then want32=70784 want16=40192; fi
grep -q "^  actor -> generator weights: $want32 bytes a step (.*: the float32 parameters)\$" \
    "$WORK/dry.log" || { cat "$WORK/dry.log"; echo "FAIL: no $want32-byte transfer"; exit 1; }
"$PPO_WORLD" --placement "$WORK/three.yaml" --dry-run --world-size 3 --config "$WORK/ppo.yaml" \
    model.precision=bf16 > "$WORK/dry16.log" 2>&1 ||
    { cat "$WORK/dry16.log"; echo "FAIL: the bf16 dry run failed"; exit 1; }
grep -q "^  actor -> generator weights: $want16 bytes a step (.*, the rest in float32)\$" \
    "$WORK/dry16.log" || { cat "$WORK/dry16.log"; echo "FAIL: no $want16-byte transfer"; exit 1; }
# a configuration the run would refuse is refused by the plan, with the run's message
rc=0
"$PPO_WORLD" --placement "$WORK/three.yaml" --dry-run --world-size 3 --config "$WORK/ppo.yaml" \
    data.prompts="$WORK/none.jsonl" > "$WORK/bad.log" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "data.prompts" "$WORK/bad.log" ||
    { cat "$WORK/bad.log"; echo "FAIL: a missing prompt file: exit $rc"; exit 1; }

# the plan against this host: a config.json of 4 layers of 65536 (206G parameters, about 3.8 TiB
# planned for the actor's rank), which no test machine has; the weights file is never read
"$MAKE_TINY" model "$WORK/big" 11 64
sed -i 's/"n_embd": [0-9]*/"n_embd": 65536/; s/"n_layer": [0-9]*/"n_layer": 4/' \
    "$WORK/big/config.json"
rc=0
"$PPO_WORLD" --placement "$WORK/three.yaml" --dry-run --world-size 3 --config "$WORK/ppo.yaml" \
    model.sft="$WORK/big" > "$WORK/bigdry.log" 2>&1 || rc=$?
want="^  this host: cpu ranks 0, 1, 2 at most [0-9.]* MiB together of the [0-9.]* MiB"
want="$want available (.*): DOES NOT FIT\$"
[ "$rc" = 1 ] && grep -q "$want" "$WORK/bigdry.log" &&
    grep -q "the planned memory is more than this host's memory has" "$WORK/bigdry.log" ||
    { cat "$WORK/bigdry.log"; echo "FAIL: big dry run: exit $rc"; exit 1; }
grep "DOES NOT FIT" "$WORK/bigdry.log"
# the same dry run under mpirun: every rank's host is known, this one holds all three
rc=0
"$MPIRUN" -np 3 "$PPO_WORLD" --placement "$WORK/three.yaml" --dry-run --config "$WORK/ppo.yaml" \
    model.sft="$WORK/big" > "$WORK/bigdry3.log" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "$want" "$WORK/bigdry3.log" ||
    { cat "$WORK/bigdry3.log"; echo "FAIL: big dry run on 3 ranks: exit $rc"; exit 1; }
rc=0
"$MPIRUN" -np 3 "$PPO_WORLD" --placement "$WORK/three.yaml" --config "$WORK/ppo.yaml" \
    --out "$WORK/bigrun" model.sft="$WORK/big" > "$WORK/bigrun.log" 2>&1 || rc=$?
want='^ppo_world: rank 0 on .*: not enough memory: the memory plan needs [0-9.]* MiB of the '
want="${want}host's memory (ranks 0: [0-9.]* MiB, 1: [0-9.]* MiB, 2: [0-9.]* MiB), which has "
[ "$rc" = 1 ] && [ "$(grep -c "$want" "$WORK/bigrun.log")" = 1 ] &&
    ! grep -q "loading\|MPI_ABORT" "$WORK/bigrun.log" ||
    { cat "$WORK/bigrun.log"; echo "FAIL: the big run: exit $rc, not refused once"; exit 1; }
grep "^ppo_world: rank 0" "$WORK/bigrun.log" | cut -c1-200
echo ok
