# wg_rows.awk: from cuda_attention_bf16's output (a meson test log), the warpgroup attention's
# failing cases (tests/cuda/lse_rows.h's lines): each case whose lse or gradient rows are wrong,
# its "rows wrong" lines, the classes of its wrong lse values and its first wrong row, indented
# for gpu_checks.sh's summary. Cases with no wrong row and the other attentions' cases print
# nothing. After a "warpgroup mode N" line (the sweep of pw_cuda_set_flash_wgmma_mode), one line
# a case, failing or not: its wrong rows' counts of lse, dq, dk and dv, with how many lie in each
# half of their block of 128 rows ("halves a/b": lse_rows.h's "by warpgroup", which are the
# warpgroups of mode 0; with SWAP the second warpgroup makes the first half, with ONE_GROUP each
# half is a block of its own).
function flush() {
    if (mode != "" && head != "") print "  wgmma mode " mode " " head ": " acc
    head = ""
    acc = ""
}
/^attention on the warpgroup products/ { on = 1; next }
on && /^test_cuda_attention_bf16:/ { flush(); on = 0 }
on && /^warpgroup mode / { flush(); mode = $3; next }
on && /^B=/ { flush(); head = $0; shown = 0; next }
on && mode != "" && /^  [a-z]+ rows wrong: / {
    n = $6
    sub(/;$/, "", n)
    w = $1 " " $4 "/" n
    if (match($0, /by warpgroup [0-9]+ \/ [0-9]+/)) {
        g = substr($0, RSTART + 13, RLENGTH - 13)
        gsub(/ /, "", g)
        w = w " (halves " g ")"
    }
    acc = acc == "" ? w : acc ", " w
    next
}
on && mode == "" && /rows wrong: [1-9]/ {
    if (!shown) print "  wgmma " head
    shown = 1
    print "  " $0
}
on && mode == "" && shown && (/^    [a-z].* [0-9]+$/ || /^    first:/) { print "  " $0 }
