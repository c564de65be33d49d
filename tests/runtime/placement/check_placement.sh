#!/usr/bin/env bash
# check_placement.sh: run `ppo_world --placement F --dry-run` (under mpirun, or alone with
# --world-size) with a time limit, then check the exit status and what it printed.
#
#   check_placement.sh MPIRUN PPO_WORLD NP FILE ok   'ROW'...    rows: "rank roles device gpu models"
#                      or "rank roles device threads cores numa gpu models" to check binding too,
#                      or a row of the transport table "phase data from to transport ranks"
#   check_placement.sh MPIRUN PPO_WORLD NP FILE fail 'REGEX'     one error line on stderr
#   check_placement.sh MPIRUN PPO_WORLD NP FILE cuda 'REGEX'     fail, or skip (77) if a GPU works
#   check_placement.sh MPIRUN PPO_WORLD 0 FILE core 'REGEX'      bind core with cores+1 ranks
#   NP "plan:N" runs ppo_world alone with --world-size N (no mpirun).
set -u
mpirun=$1 ppo=$2 np=$3 file=$4 mode=$5
shift 5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
limit=60 # seconds: far above a normal run (about 1 s), so only a hang reaches it

if [ "$mode" = core ]; then
    # More ranks than this machine has cores, whatever the machine: write the file here.
    cores=$(hwloc-calc --number-of core machine:0 2>/dev/null || nproc)
    np=$((cores + 1))
    if [ "$np" -gt 17 ]; then echo "SKIP: $cores cores, too many ranks to oversubscribe"; exit 77; fi
    ranks=$(seq -s, 0 $((np - 1)))
    cp "$file" "$tmp/bind_core.yaml"
    sed -i "s/RANKS/[$ranks]/" "$tmp/bind_core.yaml"
    file=$tmp/bind_core.yaml
fi

case $np in
plan:*) cmd=("$ppo" --placement "$file" --dry-run --world-size "${np#plan:}") ;;
*) cmd=("$mpirun" -np "$np" "$ppo" --placement "$file" --dry-run) ;;
esac
timeout -k 5 "$limit" "${cmd[@]}" >"$tmp/out" 2>"$tmp/err"
rc=$?
echo "\$ ${cmd[*]}  (exit $rc)"
cat "$tmp/out"
sed 's/^/stderr: /' "$tmp/err"
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "FAIL: no exit within ${limit}s (a rank hung)"; exit 1; fi

fail=0
case $mode in
ok)
    if [ $rc -ne 0 ] && grep -q "bind core but host .* cores" "$tmp/err"; then
        echo "SKIP: this machine has fewer cores than the file has ranks"
        exit 77
    fi
    [ $rc -eq 0 ] || { echo "FAIL: exit $rc, expected 0"; exit 1; }
    for row in "$@"; do # the list is expanded once: `set --` below does not disturb it
        set -- $row
        if ! [[ $1 =~ ^[0-9]+$ ]]; then
            # A transport row: the lines after "transports:", blanks squeezed, must hold it.
            awk '/^transports: / { t = 1; next } t { $1 = $1; print }' "$tmp/out" |
                grep -qxF -- "$row" || { echo "FAIL: no transport row '$row'"; fail=1; }
            continue
        fi
        # Columns: rank host local roles device threads cores numa gpu reward_models
        if [ $# -eq 8 ]; then cols='$1, $4, $5, $6, $7, $8, $9, $10'; else cols='$1, $4, $5, $9, $10'; fi
        got=$(awk -v r="$1" 'NF == 10 && $1 == r && $2 != "host" { print '"$cols"' }' "$tmp/out")
        if [ "$got" != "$row" ]; then
            echo "FAIL: rank $1: got '$got', expected '$row'"
            fail=1
        fi
    done
    if grep -q '^placement .* bind core' "$tmp/out"; then
        # bind core: no two ranks of one host share a processing unit.
        dup=$(awk 'NF == 10 && $1 ~ /^[0-9]+$/ { print $2, $7 }' "$tmp/out" | sort | uniq -d)
        [ -z "$dup" ] || { echo "FAIL: bind core gave two ranks the same cores: $dup"; fail=1; }
    fi
    want=${np#plan:}
    n=$(awk 'NF == 10 && $1 ~ /^[0-9]+$/' "$tmp/out" | wc -l)
    [ "$n" -eq "$want" ] || { echo "FAIL: $n rows, expected $want"; fail=1; }
    ;;
fail | cuda | core)
    if [ "$mode" = cuda ] && [ $rc -eq 0 ]; then echo "SKIP: a GPU is usable here"; exit 77; fi
    [ $rc -ne 0 ] || { echo "FAIL: exit 0, expected an error"; exit 1; }
    n=$(grep -c '^ppo_world: ' "$tmp/err")
    [ "$n" -eq 1 ] || { echo "FAIL: $n error lines, expected exactly one (from rank 0)"; fail=1; }
    for re in "$@"; do
        grep -qE -- "$re" "$tmp/err" || { echo "FAIL: stderr lacks /$re/"; fail=1; }
    done
    ;;
*)
    echo "FAIL: unknown mode $mode"
    exit 2
    ;;
esac
[ $fail -eq 0 ] && echo PASS
exit $fail
