#!/usr/bin/env bash
# test_arith.sh: `launch/quickstart.sh --task arithmetic`, shortened (200 SFT steps, 4 GRPO steps
# of 64 responses, evaluations of 64 prompts): every stage runs, the exact-answer rates of the SFT
# and the GRPO policy are printed with their standard errors and the RESULT line, the rates are
# those of the run's eval.jsonl, a second run reuses every stage, RLOO runs with --algorithm rloo,
# and bad flags are refused with their message and exit 2 before anything runs. Learning is not
# asserted here (4 steps); the full-size figures are in docs/quickstart.md.
set -euo pipefail
: "${PPO_WORLD:?PPO_WORLD must name the ppo_world binary (meson sets it)}"
root=$(cd "$(dirname "$0")/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export QS_SFT_STEPS=200 PW_QUICKSTART_CONFIG="$root/tests/e2e/arith/grpo_short.yaml"
qs() { bash "$root/launch/quickstart.sh" "$@"; }

qs --task arithmetic --out "$work/run" > "$work/first.log" 2>&1 ||
    { cat "$work/first.log"; echo "FAIL: the arithmetic quickstart did not finish"; exit 1; }
cat "$work/first.log"
for stage in "task data (arithmetic)" "SFT policy (200 steps)" "GRPO, 2 ranks, exact-answer verifier"; do
    grep -qF "$stage" "$work/first.log" || { echo "FAIL: no stage '$stage'"; exit 1; }
done
grep -q '^exact-answer rate on 64 held-out prompts' "$work/first.log" || { echo "FAIL: no rate"; exit 1; }
result=$(grep '^RESULT ' "$work/first.log")
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< "$result"; }
# the rates are the first and last evaluation of the run (steps -1 and 3: every 2 steps)
evals="$work/run/rl/eval.jsonl"
[ "$(wc -l < "$evals")" -eq 3 ] || { cat "$evals"; echo "FAIL: expected 3 evaluations"; exit 1; }
rate() { sed -n "$1p" "$evals" | sed 's|.*"eval/gold_scores":\([^,}]*\).*|\1|'; }
awk -v a="$(field sft_exact)" -v b="$(rate 1)" -v c="$(field rl_exact)" -v d="$(rate 3)" \
    -v r="$(field rise)" 'BEGIN { ok = (a - b < 1e-4 && b - a < 1e-4 && c - d < 1e-4 && d - c < 1e-4 &&
                                     (c - a) - r < 2e-4 && r - (c - a) < 2e-4); exit !ok }' ||
    { echo "FAIL: RESULT '$result' is not the run's evaluations $(rate 1), $(rate 3)"; exit 1; }
[ "$(field algorithm)" = grpo ] || { echo "FAIL: algorithm $(field algorithm)"; exit 1; }

# a second run reuses the three stages and reports the same rates
qs --task arithmetic --out "$work/run" > "$work/second.log" 2>&1 ||
    { cat "$work/second.log"; echo "FAIL: the second run failed"; exit 1; }
reused=$(grep -c ' reused (' "$work/second.log" || true)
[ "$reused" -eq 3 ] || { cat "$work/second.log"; echo "FAIL: $reused stages reused, expected 3"; exit 1; }
[ "$(grep '^RESULT ' "$work/second.log" | sed 's/ minutes=.*//')" = "${result% minutes=*}" ] ||
    { echo "FAIL: the second run reports other rates"; exit 1; }

# RLOO: the same data and SFT policy (reused), its own reinforcement run
qs --task arithmetic --algorithm rloo --out "$work/run" > "$work/rloo.log" 2>&1 ||
    { cat "$work/rloo.log"; echo "FAIL: the RLOO run failed"; exit 1; }
grep -q '^RESULT task=arithmetic algorithm=rloo ' "$work/rloo.log" || { cat "$work/rloo.log"; exit 1; }
grep -q '"algorithm": *"rloo"\|^algorithm: rloo' "$work/run/rl/config.yaml" ||
    { echo "FAIL: the RLOO run's configuration says another algorithm"; exit 1; }

# refusals: exit 2 and the message, before any stage
refused() { # refused PATTERN ARGS...
    pat=$1; shift
    rc=0; qs --out "$work/bad" "$@" > "$work/bad.log" 2>&1 || rc=$?
    [ "$rc" -eq 2 ] || { cat "$work/bad.log"; echo "FAIL: '$*' exited $rc, expected 2"; exit 1; }
    grep -qF -- "$pat" "$work/bad.log" || { cat "$work/bad.log"; echo "FAIL: no '$pat'"; exit 1; }
    [ ! -e "$work/bad" ] || { echo "FAIL: '$*' made its run folder"; exit 1; }
}
refused "--task 'sums': expected reverse or arithmetic" --task sums
refused "use grpo or rloo" --task arithmetic --algorithm ppo
refused "--algorithm 'dpo': expected grpo or rloo" --task arithmetic --algorithm dpo
refused "ppo only (grpo and rloo run with --task arithmetic)" --algorithm grpo
refused "its SFT configuration is GPT-2" --task arithmetic --family llama
refused "--task needs reverse or arithmetic" --task
refused "--family 'gemma': expected gpt2, llama or qwen3" --family gemma
refused "--family needs gpt2, llama or qwen3" --family
echo ok
