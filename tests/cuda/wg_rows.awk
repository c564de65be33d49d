# wg_rows.awk: from cuda_attention_bf16's output (a meson test log), the warpgroup attention's
# failing cases (tests/cuda/lse_rows.h's lines): each case whose lse or gradient rows are wrong,
# its "rows wrong" lines, the classes of its wrong lse values and its first wrong row, indented
# for gpu_checks.sh's summary. Cases with no wrong row and the other attentions' cases print
# nothing.
/^attention on the warpgroup products/ { on = 1; next }
on && /^test_cuda_attention_bf16:/ { on = 0 }
on && /^B=/ { head = $0; shown = 0; next }
on && /rows wrong: [1-9]/ { if (!shown) print "  wgmma " head; shown = 1; print "  " $0 }
on && shown && (/^    [a-z].* [0-9]+$/ || /^    first:/) { print "  " $0 }
