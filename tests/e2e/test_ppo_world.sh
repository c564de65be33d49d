#!/bin/sh
# test_ppo_world.sh: the real binary end to end: `mpirun -np 3 ppo_world --placement --config
# --out key=value` on a co-located placement without world_size runs 3 steps, writes finite
# metrics with exact zeros at step 0, and gives the numbers of the roles' own driver.
. "$(dirname "$0")/../roles/common.sh"
make_inputs
placement colo 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'critic: { ranks: [1] }' \
    'reward: { ranks: [1] }' 'generator: { ranks: [2] }'
set -- ppo.epochs=2 ppo.minibatches=2 ppo.initial_policy_kl_penalty=0.05
"$MPIRUN" -np 3 "$PPO_WORLD" --placement "$WORK/colo.yaml" --config "$WORK/ppo.yaml" \
    --out "$WORK/bin" "$@" > "$WORK/bin.log" 2>&1 || { cat "$WORK/bin.log"; exit 1; }
"$METRICS_CHECK" lines "$WORK/bin/metrics.jsonl" 3
"$METRICS_CHECK" zero "$WORK/bin/metrics.jsonl" 0 objective/kl
test -s "$WORK/bin/config.yaml"
test -f "$WORK/bin/checkpoints/step_3/state.json"
# devices.txt: when and where the run started, then the report of `ppo_world devices`
head -n 1 "$WORK/bin/devices.txt" | grep -Eq '^# started [0-9T:-]+Z, on ' &&
    grep -q '^build: ' "$WORK/bin/devices.txt" &&
    grep -q '^CPU: .*; BLAS: ' "$WORK/bin/devices.txt" &&
    grep -q '^GPUs: ' "$WORK/bin/devices.txt" || { cat "$WORK/bin/devices.txt"; exit 1; }
grep -q '"time/step"' "$WORK/bin/metrics.jsonl"
run_ppo 3 colo drv "$@"
"$METRICS_CHECK" same "$WORK/drv/metrics.jsonl" "$WORK/bin/metrics.jsonl"

# A bad override is refused by every rank before anything runs, and said once.
if "$MPIRUN" -np 3 "$PPO_WORLD" --placement "$WORK/colo.yaml" --config "$WORK/ppo.yaml" \
    --out "$WORK/bad" ppo.minibatches=3 > "$WORK/bad.log" 2>&1; then
    echo "FAIL: ppo.minibatches=3 (does not divide 8) was accepted"; exit 1
fi
grep -q "ppo.minibatches" "$WORK/bad.log" || { cat "$WORK/bad.log"; exit 1; }
echo ok
