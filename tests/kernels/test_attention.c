/* test_attention.c: causal multi-head attention with left padding against a float64 reference:
 * forward, accumulating backward, and the reference's backward by central differences. */
#include "attention_ref.h"

int main(void)
{
    Shape small = {4, 9, 3, 3, 4};
    int pads_small[4] = {0, 3, 8, 9};
    int *m_small = att_left_pad_mask(pads_small, 4, 9);
    att_check("small, no mask", small, NULL, 1, 1, 1);
    att_check("small, left pads 0/3/8/9", small, m_small, 1, 2, 1);

    /* a hole inside a sequence (not produced by left padding, but the contract allows it) */
    int *m_hole = att_left_pad_mask(pads_small, 4, 9);
    m_hole[1 * 9 + 5] = 0;
    m_hole[0 * 9 + 0] = 0;
    att_check("small, holes in the mask", small, m_hole, 1, 3, 1);

    /* T past several row blocks, pads that do not fall on a block edge */
    Shape big = {3, 150, 2, 2, 8};
    int pads_big[3] = {0, 37, 101};
    int *m_big = att_left_pad_mask(pads_big, 3, 150);
    att_check("T=150, no mask", big, NULL, 0, 4, 1);
    att_check("T=150, left pads 0/37/101", big, m_big, 0, 5, 1);

    /* T = 1024: 4 MB of scratch per head, so the backward works through its heads in groups */
    Shape longT = {2, 1024, 3, 3, 2};
    int pads_long[2] = {0, 700};
    int *m_long = att_left_pad_mask(pads_long, 2, 1024);
    att_check("T=1024, left pads 0/700", longT, m_long, 0, 6, 1);

    free(m_small); free(m_hole); free(m_big); free(m_long);
    return pw_test_done("test_attention");
}
