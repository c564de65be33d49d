#!/bin/bash
# test_bad_data.sh: a malformed data file stops `ppo_world sft` and `rm` under mpirun on every
# rank with a message naming file and line, a non-zero exit, and no hang.
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
# Bad usage is said once and exits 2.
"$PPO_WORLD" sft train.steps=3 > /dev/null 2> "$WORK/usage.err"
[ $? -eq 2 ] || fail "missing --out: expected exit 2"
grep -q -- "--out DIR is required" "$WORK/usage.err" || fail "usage message"
echo "bad data: ok"
