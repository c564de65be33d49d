#!/bin/sh
# bench_sass.py on a hand-written loop (tests/fixtures/sass/loop.sass): its fast path, counted
# by hand, is the head (ISETP, BRA), the 16-byte copies (2 LDGSTS, BRA), the products (BAR,
# HMMA, the BRA that skips the masked FSEL) and the tail (MUFU, FADD, the backward BRA): 11
# instructions, 1 HMMA. The path through the 2-byte copies makes no 16-byte copy and so is
# not a tile's; the FSEL is not on the path. Then its errors: a kernel not there, tiles whose
# copies no path makes, tile rows not a number, a file not there, an unknown option, each a
# non-zero exit.
# Usage: test_bench_sass.sh SOURCE_DIR
src=${1:?usage: test_bench_sass.sh SOURCE_DIR}
py=${PYTHON:-python3}
prog="$src/bench/bench_sass.py"
fix="$src/tests/fixtures/sass/loop.sass"
fail=0
check() { # name, condition result
    if [ "$2" = 0 ]; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi
}

out=$("$py" "$prog" "$fix" --kernel pw_flash_tc_fwd_32); rc=$?
echo "$out"
check "exit 0" "$rc"
echo "$out" | grep -Eq '^pw_flash_tc_fwd_32 +A +11 +1 +1 +1 +1 +0 +2 +5 +0 +0 +11\.00$'
check "the fast path: 11 instructions by kind, 11 per HMMA" $?
[ "$(echo "$out" | tail -n 1)" = "RESULT fwd_32_per_hmma=11.00" ]
check "the RESULT line last" $?

out=$("$py" "$prog" "$fix" "$fix" --kernel pw_flash_tc_fwd_32); rc=$?
check "two objects: exit 0" "$rc"
echo "$out" | grep -Eq 'B/A +1\.000'
check "two objects: B over A" $?

out=$("$py" "$prog" "$fix" --kernel pw_flash_tc_dq_32 2>&1); rc=$?
[ "$rc" != 0 ] && echo "$out" | grep -q "pw_flash_tc_dq_32 *A *not in loop.sass"
check "a kernel not in the object: said, exit $rc" $?

out=$("$py" "$prog" "$src/tests/fixtures/sass/none.sass" 2>&1); rc=$?
[ "$rc" != 0 ] && echo "$out" | grep -q "none.sass: no such file"
check "a file not there: said, exit $rc" $?

out=$("$py" "$prog" "$fix" --kernel pw_flash_tc_fwd_32:64 2>&1); rc=$?
[ "$rc" != 0 ] && echo "$out" | grep -q "no loop of HMMA making 4 copies a tile (64 rows)"
check "tiles of 64 rows: no path makes their 4 copies, said, exit $rc" $?

out=$("$py" "$prog" "$fix" --kernel pw_flash_tc_fwd_32:many 2>&1); rc=$?
[ "$rc" != 0 ] && echo "$out" | grep -q "expected NAME\[:ROWS\[,ROWS_B\]\]"
check "tile rows not a number: said, exit $rc" $?

out=$("$py" "$prog" "$fix" --bogus 2>&1); rc=$?
[ "$rc" != 0 ] && echo "$out" | grep -q "unknown option --bogus"
check "an unknown option: said, exit $rc" $?

exit $fail
