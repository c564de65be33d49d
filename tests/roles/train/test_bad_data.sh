#!/bin/bash
# test_bad_data.sh: a malformed data file stops `ppo_world sft` and `rm` under mpirun on every
# rank with a message naming file and line, a non-zero exit, and no hang. So does a model too
# large for this host, before it is made, its message said once.
. "$(dirname "$0")/common.sh"
make_sft "$WORK/sft_train.jsonl" 20 1
echo '{"prompt": "1+1=", "response": 2}' >> "$WORK/sft_train.jsonl"   # line 21: not a string
make_prefs "$WORK/prefs_train.jsonl" 4 1
echo '{"prompt": "x", "chosen": "y", "rejected": "z"' >> "$WORK/prefs_train.jsonl"  # line 5: bad JSON
for mode in sft rm; do
    want="sft_train.jsonl:21: field \"response\""
    [ $mode = rm ] && want="prefs_train.jsonl:5: not valid JSON"
    timeout 60 "$MPIRUN" -np 2 "$PPO_WORLD" $mode --out "$WORK/out" "data.dir=$WORK" train.steps=2 \
        > "$WORK/$mode.out" 2> "$WORK/$mode.err"
    rc=$?
    cat "$WORK/$mode.err"
    [ $rc -eq 124 ] && fail "$mode: hung (killed by timeout)"
    [ $rc -ne 0 ] || fail "$mode: exit 0 on a bad file"
    n=$(grep -cF "$want" "$WORK/$mode.err")
    [ "$n" -eq 2 ] || fail "$mode: expected the message on both ranks, got $n lines of '$want'"
done
# A model too large for this host: 64 layers of 8192 (51.5G parameters, about 770 GiB to train
# in float32 with AdamW), which no test machine has; nothing of it is allocated.
mkdir "$WORK/good"
make_sft "$WORK/good/sft_train.jsonl" 20 1
make_prefs "$WORK/good/prefs_train.jsonl" 20 1
for mode in sft rm; do
    timeout 60 "$MPIRUN" -np 2 "$PPO_WORLD" $mode --out "$WORK/big_$mode" "data.dir=$WORK/good" \
        train.steps=2 model.n_layer=64 model.n_embd=8192 model.n_head=64 \
        > "$WORK/big.out" 2> "$WORK/big.err"
    rc=$?
    [ $rc -eq 124 ] && fail "$mode: a model too large hung (killed by timeout)"
    [ $rc -ne 0 ] || fail "$mode: exit 0 with a model too large"
    want="^ppo_world $mode: rank 0 on .*: not enough memory: the memory plan needs [0-9.]* MiB of"
    want="$want the host's memory (ranks 0: [0-9.]* MiB, 1: [0-9.]* MiB), which has [0-9.]* MiB"
    [ "$(grep -c "$want" "$WORK/big.err")" = 1 ] && [ "$(grep -c "^ppo_world" "$WORK/big.err")" = 1 ] ||
        { cat "$WORK/big.err"; fail "$mode: a model too large: not refused once"; }
    [ ! -e "$WORK/big_$mode/metrics.jsonl" ] || fail "$mode: a refused run wrote its metrics"
    cut -c1-150 "$WORK/big.err"
done
# Bad usage is said once and exits 2.
"$PPO_WORLD" sft train.steps=3 > /dev/null 2> "$WORK/usage.err"
[ $? -eq 2 ] || fail "missing --out: expected exit 2"
grep -q -- "--out DIR is required" "$WORK/usage.err" || fail "usage message"
echo "bad data: ok"
