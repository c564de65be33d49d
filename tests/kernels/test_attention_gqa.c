/* test_attention_gqa.c: grouped-query causal attention with left padding against a float64
 * reference (forward, accumulating backward, the reference's backward by central differences),
 * and equal to pw_attention_* when every query head has its own key and value head. */
#include "attention_ref.h"

int main(void)
{
    int pads[4] = {0, 3, 8, 9};
    int *m = att_left_pad_mask(pads, 4, 9);
    att_check("NH=6 NKV=2 hs=5, no mask", (Shape){4, 9, 6, 2, 5}, NULL, 1, 1, 0);
    att_check("NH=6 NKV=2 hs=5, pads 0/3/8/9", (Shape){4, 9, 6, 2, 5}, m, 1, 2, 0);
    att_check("NH=3 NKV=1 hs=7, pads 0/3/8/9", (Shape){4, 9, 3, 1, 7}, m, 1, 3, 0);
    att_check("NH=NKV=3 hs=4, pads 0/3/8/9", (Shape){4, 9, 3, 3, 4}, m, 1, 4, 0);
    int pads_big[3] = {0, 37, 101};
    int *m_big = att_left_pad_mask(pads_big, 3, 150);
    att_check("T=150 NH=4 NKV=2, pads 0/37/101", (Shape){3, 150, 4, 2, 8}, m_big, 0, 5, 0);
    att_check("T=150 NH=NKV=2, pads 0/37/101", (Shape){3, 150, 2, 2, 8}, m_big, 0, 6, 0);
    free(m); free(m_big);
    return pw_test_done("test_attention_gqa");
}
