/* test_cuda_encoder.c: the CUDA embeddings against the CPU twin on the same random data:
 * positions of left-padded rows, forward with and without pos, accumulating backward (the rows
 * grouped by token and position and summed in row order: the CPU's sums bit for bit). */
#include <stdint.h>

#include "cutest.h"

/* rows 0 .. n-1 grouped by keys (pw_row_groups) with the arrays on the device */
static PwRowGroups dev_groups(const int *keys, int nkeys, int n)
{
    int *h = cu_host(sizeof(int) * (3 * (size_t)n + 1));
    int *scratch = cu_host(sizeof(int) * ((size_t)nkeys + 1));
    int ng = pw_row_groups(keys, n, nkeys, h, h + n, h + 2 * n + 1, scratch);
    int *d = cu_upload(h, sizeof(int) * (3 * (size_t)n + 1));
    return (PwRowGroups){d, d + n, d + 2 * n + 1, ng};
}

static void same_bits(const char *what, const float *d_got, const float *want, size_t n)
{
    float *got = cu_host(sizeof(float) * n);
    cu_download(got, d_got, sizeof(float) * n);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += memcmp(&got[i], &want[i], sizeof *got) != 0;
    printf("  %-44s %zu of %zu differ from the CPU's\n", what, bad, n);
    CHECK(bad == 0, "%s: %zu of %zu differ from the CPU's bits", what, bad, n);
}

static void run(int B, int T, int C, int Vt, const int *pads, int npads, int use_mask,
                unsigned long long *rng)
{
    printf("B=%d T=%d C=%d vocab=%d mask=%d\n", B, T, C, Vt, use_mask);
    size_t BT = (size_t)B * T, BTC = BT * C;
    int *mask = use_mask ? cu_left_mask(B, T, pads, npads) : NULL;
    int *inp = cu_host(sizeof(int) * BT);
    /* a small vocabulary makes tokens repeat, so dwte rows receive many additions */
    for (size_t i = 0; i < BT; i++) inp[i] = (int)(pw_test_rng_next(rng) % (unsigned)Vt);
    float *wte = cu_randn((size_t)Vt * C, 1.0, rng), *wpe = cu_randn((size_t)T * C, 1.0, rng);
    float *dout = cu_randn(BTC, 1.0, rng);
    float *dwte0 = cu_randn((size_t)Vt * C, 1.0, rng), *dwpe0 = cu_randn((size_t)T * C, 1.0, rng);

    int *d_mask = mask ? cu_upload(mask, sizeof(int) * BT) : NULL;
    int *d_inp = cu_upload(inp, sizeof(int) * BT);
    float *d_wte = cu_upload(wte, sizeof(float) * Vt * C),
          *d_wpe = cu_upload(wpe, sizeof(float) * T * C);
    float *d_dout = cu_upload(dout, sizeof(float) * BTC);

    /* positions: exact */
    int *pos = cu_host(sizeof(int) * BT), *got = cu_host(sizeof(int) * BT);
    pw_positions_from_mask(pos, mask, B, T);
    int *d_pos = cu_dev(sizeof(int) * BT);
    cu_poison(d_pos, sizeof(int) * BT);
    pw_positions_from_mask_cuda(d_pos, d_mask, B, T, 0);
    cu_download(got, d_pos, sizeof(int) * BT);
    int diff = 0;
    for (size_t i = 0; i < BT; i++) diff += pos[i] != got[i];
    CHECK(diff == 0, "positions: %d of %zu differ", diff, BT);

    for (int with_pos = 0; with_pos < 2; with_pos++) {
        const int *p = with_pos ? pos : NULL;
        const int *dp = with_pos ? d_pos : NULL;
        float *out = cu_host(sizeof(float) * BTC);
        pw_encoder_forward(out, inp, p, wte, wpe, B, T, C);
        float *d_out = cu_dev(sizeof(float) * BTC);
        cu_poison(d_out, sizeof(float) * BTC);
        pw_encoder_forward_cuda(d_out, d_inp, dp, d_wte, d_wpe, B, T, C, 0);
        cu_compare(with_pos ? "forward (pos)" : "forward (pos NULL)", d_out, out, BTC, CU_TOL_F32);

        /* the rows by token, and by position (the column where pos is NULL) */
        int *pk = cu_host(sizeof(int) * BT);
        for (size_t i = 0; i < BT; i++) pk[i] = p ? p[i] : (int)(i % T);
        PwRowGroups tg = dev_groups(inp, Vt, (int)BT), pg = dev_groups(pk, T, (int)BT);
        /* both gradients, then each alone (the other NULL) */
        for (int which = 0; which < 3; which++) {
            float *dwte = cu_copy(dwte0, (size_t)Vt * C), *dwpe = cu_copy(dwpe0, (size_t)T * C);
            float *d_dwte = cu_upload(dwte0, sizeof(float) * Vt * C);
            float *d_dwpe = cu_upload(dwpe0, sizeof(float) * T * C);
            int te = which != 2, pe = which != 1;
            pw_encoder_backward(te ? dwte : NULL, pe ? dwpe : NULL, dout, inp, p, B, T, C);
            pw_encoder_backward_cuda(te ? d_dwte : NULL, pe ? d_dwpe : NULL, d_dout, &tg, &pg, C,
                                     0);
            /* bit for bit; a NULL gradient must stay untouched (its pre-filled values) */
            same_bits("backward dwte (+=)", d_dwte, dwte, (size_t)Vt * C);
            same_bits("backward dwpe (+=)", d_dwpe, dwpe, (size_t)T * C);
        }
    }
    cu_release();
}

int main(void)
{
    cu_require_gpu("test_cuda_encoder");
    unsigned long long rng = 11;
    int pads[] = {0, 3, 17, 40, 64};
    run(4, 32, 48, 5, pads, 5, 0, &rng);
    run(5, 64, 72, 13, pads, 5, 1, &rng);
    run(3, 1024, 64, 50, pads, 5, 1, &rng);
    return pw_test_done("test_cuda_encoder");
}
