#!/usr/bin/env bash
# test_slurm.sh: launch/slurm.sbatch through a real one-node Slurm cluster that this test starts
# (munged, slurmctld, slurmd on this host, the machine's own core count) and stops, whatever
# happens. A 2-rank PPO run gives the metrics of launch/run.sh; a bad placement fails in the
# dry-run step with its file:line:column and a non-zero job exit code; scancel leaves no rank,
# no shared-memory segment and no process, and --resume from the job's run folder continues
# bit for bit. Skips (77) only where the Slurm packages cannot be installed.
. "$(dirname "$0")/../roles/common.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export PPO_WORLD

pids=() job=
# alive PID: running, not a zombie (a daemon that ended stays one until the shell waits for it)
alive() { [ -r "/proc/$1/stat" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2> /dev/null; }
cleanup() {
    rc=$?
    set +e
    [ -n "$job" ] && scancel "$job" 2> /dev/null
    # slurmd first (it ends the steps it started), then the controller (and its slurmscriptd),
    # then munge; whatever does not end within 10 s is killed
    kids=$(for p in "${pids[@]}"; do pgrep -P "$p"; done)
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[i]}" 2> /dev/null; done
    for p in "${pids[@]}" $kids; do
        for _ in $(seq 100); do alive "$p" || break; sleep 0.1; done
        kill -KILL "$p" 2> /dev/null
    done
    wait 2> /dev/null
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }

# (nproc without the OpenMP limits that the test environment sets, which it would report)
[ "$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)" -ge 2 ] ||
    { echo "SKIP: two cores are needed for a 2-task job"; exit 77; }
# --- the packages: installed where missing (launch/install_deps.sh --slurm), else a skip
if ! command -v slurmctld > /dev/null || ! command -v slurmd > /dev/null ||
    ! command -v sbatch > /dev/null || ! command -v munged > /dev/null; then
    if ! bash "$ROOT/launch/install_deps.sh" --slurm > "$WORK/install.log" 2>&1; then
        echo "SKIP: Slurm (slurmctld, slurmd, slurm-client, munge) is not installed and could" \
            "not be: $(tail -n 2 "$WORK/install.log" | tr '\n' ' ')"
        exit 77
    fi
fi

# --- the cluster, all of it under $WORK/slurm: keys, sockets, state, spool, logs
S=$WORK/slurm
mkdir -p "$S/munge/key" "$S/state" "$S/spool" "$S/log"
# munged wants a socket folder everyone may enter and a key only its user can read
chmod 755 "$WORK" "$S" "$S/munge"
chmod 700 "$S/munge/key"
head -c 1024 /dev/urandom > "$S/munge/key/munge.key"
chmod 400 "$S/munge/key/munge.key"
munged --foreground --socket="$S/munge/sock" --key-file="$S/munge/key/munge.key" \
    --log-file="$S/log/munged.log" --pid-file="$S/munge/pid" --seed-file="$S/munge/seed" \
    > "$S/log/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$S/munge/sock" ] && break; sleep 0.1; done
[ -S "$S/munge/sock" ] || { cat "$S/log/munged.out"; fail "munged did not start"; }

# Two free ports for the daemons, so that a second cluster (another test, a real Slurm) never
# meets this one.
port_free() { ! (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; }
port=$((20000 + $$ % 20000))
while ! port_free "$port" || ! port_free $((port + 1)); do port=$((port + 2)); done
node=$(hostname -s)
# The node as slurmd sees it (CPUs, sockets, cores, threads), without RealMemory: memory that
# is in use when slurmd starts would drain the node.
hw=$(slurmd -C | head -n 1 | tr ' ' '\n' | grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=' | tr '\n' ' ')
cat > "$S/slurm.conf" << EOF
ClusterName=pwtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S/munge/sock
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
KillWait=5
MinJobAge=600
NodeName=$node NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=pw Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$S/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" > "$S/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" > "$S/log/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 300); do [ "$(sinfo -h -o %T 2> /dev/null)" = idle ] && break; sleep 0.1; done
[ "$(sinfo -h -o %T 2> /dev/null)" = idle ] ||
    { tail -n 20 "$S"/log/*; fail "the node did not come up idle within 30 s"; }
echo "cluster: node $node, $hw, ports $port-$((port + 1)), srun --mpi=list:" \
    "$(srun --mpi=list 2>&1 | grep -v 'MPI plugin' | tr -s '\n\t' ' ')"

make_inputs
cd "$ROOT" # slurm.sbatch runs in the submit folder: the repository root
steps=1000
set -- episodes=$((8 * steps)) checkpoint.every=10 checkpoint.keep=0
# Two ranks, one per core: Slurm 22.05 refuses --ntasks-per-node above a node's CPUs, even with
# --overcommit. Rank 0 holds actor, reference and generator, rank 1 critic and reward.
placement two 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'generator: { ranks: [0] }' \
    'critic: { ranks: [1] }' 'reward: { ranks: [1] }'
# sub NAME PLACEMENT [ppo_world args...]: sbatch 2 tasks on this node (the script's #SBATCH
# lines overridden), without waiting; the job id goes to $job, its output to $WORK/NAME.out.
sub() {
    name=$1 pl=$2; shift 2
    job=$(PLACEMENT=$WORK/$pl.yaml sbatch --parsable -N1 --ntasks-per-node=2 -c1 -J "pw_$name" \
        -o "$WORK/$name.out" launch/slurm.sbatch --config "$WORK/ppo.yaml" "$@")
}
# finish: wait for $job to leave the queue; prints its state and exit code ("COMPLETED 0:0").
finish() {
    while squeue -h -j "$job" 2> /dev/null | grep -q .; do sleep 0.2; done
    scontrol show job "$job" | grep -o -E 'JobState=[A-Z_]+|ExitCode=[0-9:]+' | cut -d= -f2 | tr '\n' ' '
    job=
}

# --- a run through sbatch gives the metrics of launch/run.sh, bit for bit
bash launch/run.sh 2 --placement "$WORK/two.yaml" --config "$WORK/ppo.yaml" --out "$WORK/ref" \
    "$@" > "$WORK/ref.log" 2>&1 || { cat "$WORK/ref.log"; fail "launch/run.sh"; }
sub good two --out "$WORK/good" "$@"
st=$(finish)
echo "good: $st"
[ "$st" = "COMPLETED 0:0 " ] || { cat "$WORK/good.out"; fail "the sbatch run ended $st"; }
"$METRICS_CHECK" lines "$WORK/good/metrics.jsonl" "$steps"
"$METRICS_CHECK" same "$WORK/ref/metrics.jsonl" "$WORK/good/metrics.jsonl"
grep -q 'launcher: pmix (srun --mpi=pmix' "$WORK/good.out" ||
    { cat "$WORK/good.out"; fail "not srun --mpi=pmix"; }
grep -q "placement $WORK/two.yaml: 2 ranks on 1 host" "$WORK/good.out" ||
    { cat "$WORK/good.out"; fail "no placement table in the job's output"; }
for r in 0:actor+reference+generator 1:critic+reward; do
    grep -q "task ${r%%:*} -> node 0 $node -> rank ${r%%:*} -> ${r#*:}\$" "$WORK/good.out" ||
        { cat "$WORK/good.out"; fail "no map line for task ${r%%:*}"; }
done
sed -n '/^slurm task/,/^task 1/p' "$WORK/good.out"
# the dry-run step had the run's configuration: each rank's memory plan, no map line from it
for want in '^memory plan (MiB; ' '^    0  cpu    at most ' '^    1  cpu    at most '; do
    grep -q "$want" "$WORK/good.out" || { cat "$WORK/good.out"; fail "no '$want' in the job"; }
done
[ "$(grep -c '^task [0-9]* -> node' "$WORK/good.out")" = 2 ] ||
    { cat "$WORK/good.out"; fail "not one map line per task"; }

# --- the fallback where Slurm has no PMIx: mpirun inside the allocation, the same metrics
PW_SLURM_LAUNCHER=mpirun sub mpirun two --out "$WORK/mpirun" "$@"
st=$(finish)
echo "mpirun: $st"
[ "$st" = "COMPLETED 0:0 " ] || { cat "$WORK/mpirun.out"; fail "the mpirun job ended $st"; }
grep -q 'launcher: mpirun (env PPO_WORLD=.* bash launch/run.sh 2' "$WORK/mpirun.out" ||
    { cat "$WORK/mpirun.out"; fail "not mpirun"; }
"$METRICS_CHECK" same "$WORK/ref/metrics.jsonl" "$WORK/mpirun/metrics.jsonl"

# --- a bad placement fails in the dry-run step with the message of a dry run by hand
placement bad 'actor: { ranks: [0] }' 'reference: { ranks: [0] }' 'generator: { ranks: [0] }' \
    'critic: { ranks: [7] }' 'reward: { ranks: [1] }'
"$PPO_WORLD" --placement "$WORK/bad.yaml" --dry-run --world-size 2 > "$WORK/bad.hand" 2>&1 &&
    fail "the bad placement passed a dry run by hand"
want=$(head -n 1 "$WORK/bad.hand")
case $want in *"$WORK/bad.yaml:"[0-9]*:[0-9]*:*) ;; *) fail "no file:line:column in: $want" ;; esac
sub bad bad --out "$WORK/bad" "$@"
st=$(finish)
echo "bad: $st; $want"
case $st in FAILED\ [1-9]*) ;; *) cat "$WORK/bad.out"; fail "the bad job ended $st, not FAILED" ;; esac
grep -qF "$want" "$WORK/bad.out" || { cat "$WORK/bad.out"; fail "not in the job's output: $want"; }
grep -q 'the dry run failed' "$WORK/bad.out" || fail "not stopped at the dry run"
[ ! -e "$WORK/bad" ] || fail "the run step started: $WORK/bad exists"

# --- scancel mid-run: every rank gone within the watchdog's timeout (runtime.timeout_s, 60 s in
# common.sh), nothing left behind; --resume from the job's folder gives the reference metrics
ls /dev/shm > "$WORK/shm.before"
sub cut two --out "$WORK/cut" "$@"
cut=$job
for _ in $(seq 1200); do
    [ -e "$WORK/cut/checkpoints/step_20/state.json" ] && break
    squeue -h -j "$job" | grep -q . || break
    sleep 0.1
done
[ -e "$WORK/cut/checkpoints/step_20/state.json" ] || { cat "$WORK/cut.out"; fail "no step_20 checkpoint"; }
job_procs() {
    for e in /proc/[0-9]*/environ; do
        { tr '\0' '\n' < "$e"; } 2> /dev/null | grep -q -x "SLURM_JOB_ID=$cut" &&
            { p=${e#/proc/}; echo "${p%/environ}"; }
    done
    true
}
shm=${TMPDIR:-/tmp}/ppo_world-shm.$cut
n=$(job_procs | wc -l)
[ "$n" -gt 2 ] || fail "only $n processes of job $cut found while it runs"
ls "$shm" | grep -q vader_segment || fail "no shared-memory segment in $shm while the job runs"
scancel "$job"
t0=$(date +%s%N)
left=
for _ in $(seq 600); do
    left=$(job_procs)
    [ -z "$left" ] && break
    sleep 0.1
done
gone=$((($(date +%s%N) - t0) / 1000000))
[ -z "$left" ] || fail "processes of job $cut still alive 60 s after scancel: $left"
st=$(finish)
echo "cut: $st; its $n processes gone ${gone} ms after scancel; $(wc -l < "$WORK/cut/metrics.jsonl") steps written"
case $st in CANCELLED*) ;; *) cat "$WORK/cut.out"; fail "the job ended $st, not CANCELLED" ;; esac
[ ! -e "$shm" ] || fail "the job's shared-memory folder is left"
# (the test runs alone: is_parallel false in tests/e2e/meson.build)
new=$(ls /dev/shm | comm -13 "$WORK/shm.before" -)
[ -z "$new" ] || fail "new files in /dev/shm after the cancelled job: $new"
[ "$(wc -l < "$WORK/cut/metrics.jsonl")" -lt "$steps" ] || fail "the run ended before scancel"
PW_SLURM_LAUNCHER= sub resume two --out "$WORK/cut" --resume "$@"
st=$(finish)
echo "resume: $st"
[ "$st" = "COMPLETED 0:0 " ] || { cat "$WORK/resume.out"; fail "the resumed job ended $st"; }
"$METRICS_CHECK" same "$WORK/ref/metrics.jsonl" "$WORK/cut/metrics.jsonl"
echo ok
