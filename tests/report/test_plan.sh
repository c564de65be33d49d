#!/usr/bin/env bash
# test_plan.sh: `ppo_world plan` on the committed profile tests/fixtures/plan_profile against
# numbers worked by hand from the model of docs/planner.md, the search's count, and bad input.
# Expects PPO_WORLD and FIXTURES in the environment (meson sets them).
set -eu
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
PROFILE=$FIXTURES/plan_profile
fail() { echo "FAIL: $*" >&2; exit 1; }

placement() {
    name=$1; shift
    { echo "version: 1"; echo "bind: none"; echo "roles:"; for l in "$@"; do echo "  $l"; done; } \
        > "$WORK/$name.yaml"
}
placement one 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'critic: { ranks: [0] }' \
    'reward: { ranks: [0] }' 'generator: { ranks: [0] }'
placement two 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'critic: { ranks: [0] }' \
    'reward: { ranks: [0] }' 'generator: { ranks: [1] }'
placement five 'actor: { ranks: [0] }' 'reference: { ranks: [1] }' 'critic: { ranks: [2] }' \
    'reward: { ranks: [3] }' 'generator: { ranks: [4] }'
placement dp 'actor: { ranks: [0, 1] }' 'reference: { ranks: [0, 1] }' \
    'critic: { ranks: [0, 1] }' 'reward: { ranks: [0, 1] }' 'generator: { ranks: [0, 1] }'
placement nocritic 'actor: { ranks: [0] }' 'reward: { ranks: [0] }'

# Messages free (bandwidth 1e6 GB/s, no latency) unless a case says otherwise; two cores.
FREE="--cores 2 --params 1 --latency-us 0 --bandwidth 1e6"

# expect NAME SYNC ASYNC [flags...]: the RESULT line of `plan --placement NAME.yaml`
expect() {
    name=$1 sync=$2 async=$3; shift 3
    out=$("$PPO_WORLD" plan --profile "$PROFILE" --placement "$WORK/$name.yaml" "$@") ||
        fail "$name: plan failed"
    line=$(echo "$out" | grep '^RESULT')
    want="RESULT sync_steps_per_s=$sync async_steps_per_s=$async"
    [ "$line" = "$want" ] || fail "$name: got '$line', expected '$want'"
    echo "ok $name $line"
}

# Per-sample costs of the profile (4 rows, steps 1 and 2 averaged, step 0 left out):
# generate 0.1; evaluate actor 0.05, reference, critic, reward 0.025 each; train actor 0.1,
# critic 0.05 (seconds per row).
# one rank: 0.4 + 0.5 + 0.6 = 1.5 s per step in both modes
expect one 0.6667 0.6667 $FREE
# generator alone: sync 0.4 then 1.1 on rank 0 = 1.5 s; async overlaps them: max(0.4, 1.1)
expect two 0.6667 0.9091 $FREE
# five ranks on two cores, sync: generate 0.4; evaluate 0.2 / 0.1 / 0.1 / 0.1 on four ranks at
# 2/4 of a core each until 0.2 s, then the actor's last 0.1 alone (0.3); train 0.4 and 0.2 on
# two ranks (0.4): 1.1 s. Async, from the actor's end of a step: generate (0.4) and the actor's
# evaluate (0.2) at full speed until 0.2; actor train 0.4, critic train 0.2 and generate's last
# 0.2 at 2/3 until 0.5; then the next batch's evaluations of reference, reward, critic (0.1
# each) beside the actor's last 0.2, four at 1/2 until 0.7; the actor's last 0.1 alone: 0.8 s.
expect five 0.9091 1.2500 $FREE
# every role data-parallel over two ranks, 1e8 parameters at 1 GB/s: each rank samples 0.2,
# rank 1 only after the 0.4 GB weight message (0.4 s), so both evaluate from 0.6 to 0.85 and
# train 0.3 plus two all-reduces (actor, critic: 2(n-1)/n x 0.4 GB / 1 GB/s = 0.4 s each) to
# 1.95 s, in both modes
expect dp 0.5128 0.5128 --cores 2 --params 1e8 --latency-us 0 --bandwidth 1
# waiting ranks that take a whole core each: five ranks always share two cores at 2/5, so the
# sync step is 0.4 / 0.4 + 0.2 / 0.4 + 0.4 / 0.4 = 2.5 s; async: the actor's evaluate and
# train, (0.2 + 0.4) / 0.4 = 1.5 s, hide the generator's 1 s
expect five 0.4000 0.6667 $FREE --wait-load 1 --world-size 5

# --gantt: the simulated schedule of five ranks, async, as a trace and the Gantt rows of one step
# (ms from its first event): reference, critic and reward score batch 2 in the 0.2 s after the
# generator's batch arrived (0.5 s into the step before, at 1/2 core beside the actor's train);
# 0.3 s later the actor's step begins: generate 0.5 s (0.2 alone with the actor's evaluate, 0.2
# at 2/3), the actor's evaluate 0.2 then train 0.6, the critic's train 0.3 at 2/3
"$PPO_WORLD" plan --profile "$PROFILE" --placement "$WORK/five.yaml" $FREE --gantt "$WORK/g" \
    > /dev/null || fail "--gantt"
cat > "$WORK/want.dat" <<'DAT'
300.0000 800.0000 4 0
300.0000 500.0000 0 1
0.0000 200.0000 1 1
0.0000 200.0000 2 1
0.0000 200.0000 3 1
500.0000 1100.0000 0 2
500.0000 800.0000 2 2
DAT
grep -v '^#' "$WORK/g/gantt_predicted_async.dat" | diff "$WORK/want.dat" - || fail "--gantt rows"
grep -q '"name": "generator"' "$WORK/g/predicted_sync/trace.json" || fail "--gantt trace names"
echo "ok gantt"

# --search 2: 5 roles in at most 2 groups (1 + 15 partitions, one split of the ranks each) and
# the 4 roles without a generator (1 + 7): 24 placements, the best first
out=$("$PPO_WORLD" plan --profile "$PROFILE" --search 2 $FREE --top 3)
echo "$out" | grep -q '^placements of 2 ranks: 24 ' || fail "search: $out"
[ "$(echo "$out" | grep -c '^[0-9]  ')" = 3 ] || fail "search --top 3: $out"
# the best is every role on both ranks: each does half of 1.5 s
echo "$out" | grep -q '^RESULT best="actor+reference+critic+reward x2" sync_steps_per_s=1.3333' ||
    fail "search best: $out"
echo "ok search"

# bad input: each refused with a message naming the problem, exit 1 (inputs) or 2 (usage)
refuse() {
    want_rc=$1 pattern=$2; shift 2
    set +e
    msg=$("$PPO_WORLD" plan "$@" 2>&1 >/dev/null)
    rc=$?
    set -e
    [ "$rc" = "$want_rc" ] || fail "plan $*: exit $rc, expected $want_rc ($msg)"
    echo "$msg" | grep -q -- "$pattern" || fail "plan $*: message '$msg' lacks '$pattern'"
    echo "ok refused: $pattern"
}
refuse 1 "the placement has no critic (the planner models ppo placements" --profile "$PROFILE" --placement "$WORK/nocritic.yaml" \
    --params 1
refuse 1 "names no model.sft" --profile "$PROFILE" --placement "$WORK/one.yaml"
refuse 1 "missing $WORK/nothing/config.yaml" --profile "$WORK/nothing" --search 2
refuse 2 "give one of --placement" --profile "$PROFILE"
refuse 2 "give one of --placement" --profile "$PROFILE" --search 2 --placement "$WORK/one.yaml"
refuse 2 "\-\-gantt goes with \-\-placement" --profile "$PROFILE" --search 2 --gantt "$WORK/x"
refuse 2 "unknown flag '--bogus'" --profile "$PROFILE" --search 2 --bogus
refuse 2 "\-\-bandwidth 0: expected" --profile "$PROFILE" --search 2 --bandwidth 0
refuse 2 "\-\-search 99: expected an integer 1..64" --profile "$PROFILE" --search 99
mkdir "$WORK/badrun"
cp "$PROFILE/config.yaml" "$WORK/badrun/"
printf '{"step": 0, "time/actor/train": "slow"}\n' > "$WORK/badrun/metrics.jsonl"
refuse 1 "metrics.jsonl:1: time/actor/train is not a time in seconds" \
    --profile "$WORK/badrun" --search 1 --params 1
printf '{"step": 0, "time/step": 1}\n' > "$WORK/badrun/metrics.jsonl"
refuse 1 "has no time/actor/\* keys" --profile "$WORK/badrun" --search 1 --params 1
printf 'model:\n  sft: %s\n' "$WORK/nomodel" >> "$WORK/badrun/config.yaml"
refuse 1 "cannot size the weights from $WORK/nomodel/model.safetensors" \
    --profile "$WORK/badrun" --search 1
echo "all plan checks passed"
