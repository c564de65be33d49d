#!/usr/bin/env bash
# test_gpu_checks.sh: the GPU check runner without a GPU, with a stand-in for Nsight Compute:
# an unknown part is refused (exit 2); the profile part's shares come out of ncu_shares.py
# summed by kernel name (names with commas and argument lists, a thousands separator, the share
# worked by hand: 1000 + 10.5 of 1030.5 is 98.06%), a CSV without kernels or without the
# time column refused; BUDGET_S that leaves no time lists every
# step as not run and fails the run (exit 1), the profile part's seven and the ops part's five;
# ARCHIVE gets every log in one .tar.gz, also from inside OUT; the waiting part's eighteen steps
# and the bisect part's listed likewise; the ab part without BASE and the bisect part without
# BISECT are refused (exit 2); wg_rows.awk keeps a log's failing warpgroup cases only. BUILD: a
# meson build folder (meson sets it).
set -uo pipefail
: "${BUILD:?BUILD must name a meson build folder (meson sets it)}"
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { cat "$work"/out* 2>/dev/null; echo "FAIL: $*"; exit 1; }

cat > "$work/ncu" <<'NCU'
#!/bin/sh
# a stand-in for ncu: a profile "succeeds" writing nothing; --import prints a raw-page CSV
case "$*" in *--import*)
    printf '%s\n' 'ID,"Kernel Name","gpu__time_duration.sum"' ',,"usecond"' \
        '1,"foo(float *, int)","10.5"' '2,"bar(int)","20"' '3,"foo(float *, int)","1,000.0"' ;;
esac
NCU
chmod +x "$work/ncu"
run() { BUILD=$BUILD OUT=$work/o NCU=$work/ncu bash "$root/tests/cuda/gpu_checks.sh" "$@"; }

rc=0
run tests plots > "$work/out1" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "unknown part 'plots'" "$work/out1" || fail "unknown part: exit $rc"

rc=0
ARCHIVE=$work/logs.tgz run profile > "$work/out2" 2>&1 || rc=$?
[ "$rc" = 0 ] || fail "profile with a stand-in ncu: exit $rc"
tar tzf "$work/logs.tgz" > "$work/list" 2>&1 && grep -qx "o/summary.txt" "$work/list" &&
    grep -qx "o/ncu_model_shares.log" "$work/list" ||
    { cat "$work/list"; fail "ARCHIVE: the summary and the logs are not in it"; }
shares=$work/o/ncu_model_shares.log
grep -Eq '^ *98\.06% +2 +1010\.5  foo$' "$shares" && grep -Eq '^ *1\.94% +1 +20\.0  bar$' "$shares" ||
    { cat "$shares"; fail "the shares are not foo 98.06% (2 calls), bar 1.94%"; }
grep -q "^total 1030.5 usecond over 3 kernels, 2 names$" "$shares" || fail "no total line"

# ncu_shares.py's refusals: no kernel rows, no time column
py() { env -u LD_LIBRARY_PATH python3 "$root/tests/cuda/ncu_shares.py"; }
printf 'ID,"Kernel Name","gpu__time_duration.sum"\n' | py > "$work/out4" 2>&1 &&
    fail "a CSV without kernels was summed"
grep -q "no kernels in the CSV" "$work/out4" || fail "no kernels: not its message"
printf 'ID,"Kernel Name"\n,\n1,"k()"\n' | py > "$work/out5" 2>&1 && fail "no time column accepted"
grep -q "lacks 'Kernel Name' or 'gpu__time_duration.sum'" "$work/out5" || fail "no column: message"

rc=0
BUDGET_S=1 run profile > "$work/out3" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "BUDGET_S=1: exit $rc, expected 1"
[ "$(grep -c 'not run (BUDGET_S)' "$work/o/summary.txt")" = 7 ] ||
    { cat "$work/o/summary.txt"; fail "not every step listed as not run"; }
# the ops part (PW_PROFILE_OPS, no ncu): five steps, none run without time
rc=0
BUDGET_S=1 run ops > "$work/out6" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "ops with BUDGET_S=1: exit $rc, expected 1"
[ "$(grep -c 'not run (BUDGET_S)' "$work/o/summary.txt")" = 5 ] &&
    grep -q '^ops_ppo ' "$work/o/summary.txt" ||
    { cat "$work/o/summary.txt"; fail "the ops part's five steps are not listed as not run"; }
# the waiting part: its eighteen steps (no BISECT: no bisect steps), none run without time
rc=0
BUDGET_S=1 run waiting > "$work/out8" 2>&1 || rc=$?
[ "$rc" = 1 ] && [ "$(grep -c 'not run (BUDGET_S)' "$work/o/summary.txt")" = 18 ] &&
    grep -q '^ops_model ' "$work/o/summary.txt" && grep -q '^devices ' "$work/o/summary.txt" ||
    { cat "$work/o/summary.txt"; fail "the waiting part's eighteen steps are not all not run"; }
# the bisect part: two older builds and this one, twice each; without BISECT, refused
mkdir -p "$work/bis/aaa/bench" "$work/bis/bbb/bench"
for d in aaa bbb; do printf '#!/bin/sh\n' > "$work/bis/$d/bench/bench_generate"; done
chmod +x "$work/bis/aaa/bench/bench_generate" "$work/bis/bbb/bench/bench_generate"
rc=0
BISECT=$work/bis BUDGET_S=1 run bisect > "$work/out9" 2>&1 || rc=$?
[ "$rc" = 1 ] && [ "$(grep -c 'not run (BUDGET_S)' "$work/o/summary.txt")" = 6 ] &&
    grep -q '^bisect_bbb_2 ' "$work/o/summary.txt" &&
    grep -q '^bisect_this_1 ' "$work/o/summary.txt" ||
    { cat "$work/o/summary.txt"; fail "the bisect part's six steps are not listed"; }
rc=0
BISECT=$work/none run bisect > "$work/out10" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "the bisect part needs BISECT" "$work/out10" || fail "bisect: exit $rc"
# an ARCHIVE inside OUT: written once the logs are, not read as it grows
rc=0
ARCHIVE=$work/o/all.tgz BUDGET_S=1 run ops > "$work/out11" 2>&1 || rc=$?
tar tzf "$work/o/all.tgz" > "$work/list2" 2>&1 && grep -qx "o/summary.txt" "$work/list2" ||
    { cat "$work/out11" "$work/list2"; fail "ARCHIVE inside OUT: not written whole"; }
# the ab part without an older build to compare with: refused before anything runs
rc=0
BASE=$work/none run ab > "$work/out7" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "the ab part needs BASE" "$work/out7" || fail "ab without BASE: exit $rc"
# wg_rows.awk: of a log's warpgroup cases, only the failing one, its wrong rows' lines, classes
# and first row; the tensor-core case before the section and the passing case print nothing;
# after a "warpgroup mode" line, a line a case, passing or not
cat > "$work/tl" <<'LOG'
tensor-core kernels
B=2 T=16 NH=6 NKV=2 hs=5 mask=0
  lse rows wrong: 3 of 9
attention on the warpgroup products
B=2 T=1024 NH=4 NKV=2 hs=64 mask=1
  forward lse                                  rel err 0.195
  lse rows wrong: 300 of 5000; by warpgroup 100 / 200; by sequence 0 300 0 0
    a tile two before instead    280
    none of these                20
    first: b 1 head 0 query 700: 5.1, want 5.3
  forward out                                  rel err 0.585
  dq rows wrong: 10 of 2048; by warpgroup 1 / 9
  dk rows wrong: 0 of 2048
B=1 T=64 NH=2 NKV=2 hs=64 mask=0
  lse rows wrong: 0 of 128
warpgroup mode 2
B=3 T=130 NH=4 NKV=1 hs=64 mask=1
  forward lse                                  rel err 1e-07
  lse rows wrong: 0 of 1560
  dq rows wrong: 0 of 390
warpgroup mode 8
B=3 T=130 NH=4 NKV=1 hs=64 mask=1
  lse rows wrong: 64 of 1560; by warpgroup 64 / 0; by key tiles seen 1: 0, 2: 64, 3+: 0
    a tile two before instead    64
  dq rows wrong: 5 of 390; by warpgroup 5 / 0; by tile 0: 5, 1: 0, 2+: 0; by sequence 5 0 0
test_cuda_attention_bf16: 158 checks, 6 failed
LOG
awk -f "$root/tests/cuda/wg_rows.awk" "$work/tl" > "$work/wg"
case='B=3 T=130 NH=4 NKV=1 hs=64 mask=1'
[ "$(wc -l < "$work/wg")" = 8 ] && head -1 "$work/wg" | grep -q '^  wgmma B=2 T=1024 ' &&
    grep -q '^      a tile two before instead    280$' "$work/wg" &&
    grep -q '^    dq rows wrong: 10 of 2048' "$work/wg" && ! grep -q 'T=64\|T=16' "$work/wg" &&
    grep -qx "  wgmma mode 2 $case: lse 0/1560, dq 0/390" "$work/wg" &&
    grep -qx "  wgmma mode 8 $case: lse 64/1560 (halves 64/0), dq 5/390 (halves 5/0)" "$work/wg" ||
    { cat "$work/wg"; fail "wg_rows.awk: not the failing case's six lines and a line a mode"; }
echo "test_gpu_checks: ok"
