#!/bin/bash
# test_cli.sh: the command lines of ppo_world. sft/rm read a YAML file and key=value overrides,
# write the effective configuration to out/config.yaml, and that file reruns the same training;
# a bad configuration is refused under mpirun with one message and exit 2, before any file is
# written; every command's flags (getopt_long) name an unknown flag or a missing value exactly.
. "$(dirname "$0")/common.sh"
make_sft "$WORK/sft_train.jsonl" 64 1

# ---- a file, overrides over it, and the run folder's copy
cat > "$WORK/sft.yaml" <<'YAML'
model:
  n_embd: 32
  n_positions: 32
train:
  steps: 50          # the command line says 3
  batch_size: 4
optim.lr: 3.0e-3
YAML
"$PPO_WORLD" sft --config "$WORK/sft.yaml" --out "$WORK/a" "data.dir=$WORK" train.steps=3 \
    eval.every=0 seed=4 > "$WORK/a.log" 2>&1 || { cat "$WORK/a.log"; fail "sft exited $?"; }
grep -q '^ppo_world sft: done: 3 steps' "$WORK/a.log" || { cat "$WORK/a.log"; fail "no final line"; }
grep -q ' model gpt2 L=2 H=2 C=32 T=32 ' "$WORK/a.log" || fail "the model size of the file was not used"
for line in 'seed: 4' '  dir: "'"$WORK"'"' '  n_embd: 32' '  steps: 3' '  batch_size: 4' \
    '  lr: 0.003' '  warmup_steps: auto' '  every: 0'; do
    grep -qxF -- "$line" "$WORK/a/config.yaml" || { cat "$WORK/a/config.yaml"; fail "config.yaml lacks '$line'"; }
done
"$PPO_WORLD" sft --config "$WORK/a/config.yaml" --out "$WORK/b" > "$WORK/b.log" 2>&1 ||
    { cat "$WORK/b.log"; fail "rerun from config.yaml exited $?"; }
cmp "$WORK/a/model.safetensors" "$WORK/b/model.safetensors" ||
    fail "the rerun from config.yaml trained other weights"
cmp "$WORK/a/config.yaml" "$WORK/b/config.yaml" || fail "the rerun's config.yaml differs"

# ---- a bad configuration under mpirun: exit 2, one line from rank 0, no run folder
printf 'train:\n  steps: many\n' > "$WORK/bad.yaml"
refused() { # WANT mpirun-args...
    local want=$1
    shift
    timeout 60 "$MPIRUN" -np 2 "$PPO_WORLD" "$@" > "$WORK/r.out" 2> "$WORK/r.err"
    local rc=$?
    [ $rc -ne 124 ] || fail "$*: hung"
    [ $rc -ne 0 ] || fail "$*: exit 0"
    [ "$(grep -c '^ppo_world' "$WORK/r.err")" -eq 1 ] && [ "$(grep -cxF -- "$want" "$WORK/r.err")" -eq 1 ] ||
        { cat "$WORK/r.err"; fail "$*: expected the one line '$want'"; }
    [ ! -e "$WORK/c" ] || fail "$*: the refused run created its folder"
}
refused "ppo_world rm: $WORK/bad.yaml:2:10: train.steps: expected an integer, got 'many'" \
    rm --config "$WORK/bad.yaml" --out "$WORK/c" "data.dir=$WORK"
refused "ppo_world sft: override 'optim.lr=1e-3x': optim.lr: expected a number, got '1e-3x'" \
    sft --out "$WORK/c" "data.dir=$WORK" optim.lr=1e-3x
refused "ppo_world sft: optim.warmup_steps (20) must not exceed train.steps (5)" \
    sft --out "$WORK/c" "data.dir=$WORK" train.steps=5 optim.warmup_steps=20
refused "ppo_world sft: unknown flag '--steps'" sft --out "$WORK/c" "data.dir=$WORK" --steps 3
refused "ppo_world: unknown flag '--bogus'" --placement configs/none.yaml --bogus
# ... and only rank 0 fails with it: another rank exiting 2 first would have mpirun kill rank 0
# before it spoke (src/main.c); seen through the launcher's variable, without a job
for r in 0 1; do
    rc=0
    OMPI_COMM_WORLD_RANK=$r "$PPO_WORLD" --placement configs/none.yaml --bogus > "$WORK/r.out" \
        2>&1 || rc=$?
    said=$(grep -c "^ppo_world: unknown flag '--bogus'" "$WORK/r.out" || true)
    [ "$r:$rc:$said" = 0:2:1 ] || [ "$r:$rc:$(wc -c < "$WORK/r.out")" = 1:0:0 ] ||
        { cat "$WORK/r.out"; fail "rank $r of a bad command line: exit $rc (0: 2, said; 1: 0)"; }
done

# a file where out/tensorboard goes (log.tensorboard): refused before training, nothing written
mkdir "$WORK/tbf"
: > "$WORK/tbf/tensorboard"
timeout 60 "$PPO_WORLD" sft --out "$WORK/tbf" "data.dir=$WORK" train.steps=2 log.tensorboard=true \
    > /dev/null 2> "$WORK/tbf.err"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a file at out/tensorboard: exit $rc"
grep -qF "ppo_world sft: log.tensorboard: $WORK/tbf/tensorboard: not a directory (a regular file)" \
    "$WORK/tbf.err" || { cat "$WORK/tbf.err"; fail "a file at out/tensorboard: no message"; }
[ ! -e "$WORK/tbf/metrics.jsonl" ] && [ ! -e "$WORK/tbf/config.yaml" ] ||
    fail "a file at out/tensorboard: the refused run wrote its files"

# The same verdict alone (no mpirun): exit 2 exactly.
"$PPO_WORLD" sft --config "$WORK/bad.yaml" --out "$WORK/c" > /dev/null 2>&1
[ $? -eq 2 ] || fail "a bad configuration: expected exit 2"

# ---- flags of every command: exit 2 and the first line of stderr, exactly
usage_error() { # WANT args...
    local want=$1
    shift
    "$PPO_WORLD" "$@" > /dev/null 2> "$WORK/u.err"
    local rc=$?
    [ $rc -eq 2 ] || { cat "$WORK/u.err"; fail "ppo_world $*: exit $rc, expected 2"; }
    [ "$(head -n 1 "$WORK/u.err")" = "$want" ] ||
        fail "ppo_world $*: got '$(head -n 1 "$WORK/u.err")', expected '$want'"
    grep -q '^usage: ' "$WORK/u.err" || fail "ppo_world $*: no usage after the message"
}
usage_error "ppo_world sft: --out needs a value" sft --out
usage_error "ppo_world sft: --config needs a value" sft --out "$WORK/c" --config
usage_error "ppo_world sft: --out DIR is required" sft "data.dir=$WORK"
usage_error "ppo_world rm: '--help=1': --help takes no value" rm --help=1
usage_error "ppo_world rm: unknown flag '-x'" rm -x
usage_error "ppo_world: --config needs a value" --placement p.yaml --config
usage_error "ppo_world: --world-size 0: expected 1..4096" --placement p.yaml --world-size 0
usage_error "ppo_world: unexpected argument 'run' (expected key=value)" --placement p.yaml run
usage_error "ppo_world: --placement is required" --out "$WORK/c"
usage_error "ppo_world gen-task: unknown flag '--nope'" gen-task --nope 1
usage_error "ppo_world gen-task: --seed needs a value" gen-task --seed
usage_error "ppo_world gen-task: unexpected argument 'extra'" gen-task --out "$WORK/c" extra
usage_error "ppo_world report: unknown flag '--bogus'" report quickstart OUT --bogus
usage_error "ppo_world report: --rms needs a value" report quickstart OUT --minutes 1 --rms
usage_error "ppo_world report: --sft-eval needs a value" report ensembles EXP --sft-eval
[ ! -e "$WORK/c" ] || fail "a refused command created a folder"

# --help: exit 0, the usage and every key with its default
"$PPO_WORLD" rm --help > "$WORK/help" || fail "rm --help exited $?"
grep -q '^usage: \[mpirun -np N\] ppo_world rm \[--config FILE\] --out DIR \[key=value ...\]' "$WORK/help" ||
    fail "rm --help: no usage line"
grep -Eq '^  optim.warmup_steps +auto +linear warm-up steps' "$WORK/help" || fail "rm --help: no key list"
[ "$(grep -c '^  [a-z_]*\.\?[a-z_]* ' "$WORK/help")" -ge 28 ] || fail "rm --help: keys missing"
echo "cli: ok"
