/* test_encoder.c: positions of a left-padded batch, and the token + position embedding against
 * a float64 reference: forward, accumulating backward with repeated tokens, finite differences. */
#include "kref.h"
#include "pw_kernels.h"

static void ref_forward(double *out, const int *inp, const int *pos, const double *wte,
                        const double *wpe, int BT, int C)
{
    for (int i = 0; i < BT; i++)
        for (int c = 0; c < C; c++)
            out[(size_t)i * C + c] = wte[(size_t)inp[i] * C + c] + wpe[(size_t)pos[i] * C + c];
}

typedef struct FdCtx {
    double *wte, *wpe, *dout, *out;
    const int *inp, *pos;
    int BT, C;
} FdCtx;

static double fd_loss(const void *p)
{
    const FdCtx *c = p;
    ref_forward(c->out, c->inp, c->pos, c->wte, c->wpe, c->BT, c->C);
    return kref_dot(c->dout, c->out, (size_t)c->BT * c->C);
}

static void check_positions(void)
{
    enum { B = 4, T = 5 };
    const int mask[B * T] = {1, 1, 1, 1, 1,  0, 0, 1, 1, 1,  0, 0, 0, 0, 1,  0, 0, 0, 0, 0};
    const int want[B * T] = {0, 1, 2, 3, 4,  0, 0, 0, 1, 2,  0, 0, 0, 0, 0,  0, 0, 0, 0, 0};
    int pos[B * T];
    pw_positions_from_mask(pos, mask, B, T);
    CHECK(memcmp(pos, want, sizeof pos) == 0, "positions of a left-padded mask");
    pw_positions_from_mask(pos, NULL, B, T);
    int ok = 1;
    for (int i = 0; i < B * T; i++) ok &= pos[i] == i % T;
    CHECK(ok, "positions with a NULL mask are 0..T-1");
}

int main(void)
{
    check_positions();

    enum { B = 3, T = 4, C = 70, V = 5, P = 6 };
    unsigned long long rng = 7;
    const int mask[B * T] = {1, 1, 1, 1,  0, 1, 1, 1,  0, 0, 0, 1};
    int inp[B * T], pos[B * T];
    for (int i = 0; i < B * T; i++) inp[i] = (int)(pw_test_uniform(&rng) * V); /* repeats */
    inp[0] = inp[5] = inp[11] = 2;
    pw_positions_from_mask(pos, mask, B, T);
    size_t nte = (size_t)V * C, npe = (size_t)P * C, no = (size_t)B * T * C;
    float *wte = kref_randn(nte, 1.0, &rng), *wpe = kref_randn(npe, 1.0, &rng);
    float *dout = kref_randn(no, 1.0, &rng), *out = kref_alloc(no * sizeof *out);
    float *dwte = kref_randn(nte, 1.0, &rng), *dwpe = kref_randn(npe, 1.0, &rng);
    float *dwte0 = kref_copy(dwte, nte), *dwpe0 = kref_copy(dwpe, npe);
    double *wted = kref_to_double(wte, nte), *wped = kref_to_double(wpe, npe);
    double *doutd = kref_to_double(dout, no), *outd = kref_alloc(no * sizeof *outd);
    double *dwted = kref_alloc(nte * sizeof *dwted), *dwped = kref_alloc(npe * sizeof *dwped);

    pw_encoder_forward(out, inp, pos, wte, wpe, B, T, C);
    ref_forward(outd, inp, pos, wted, wped, B * T, C);
    double e_o = pw_max_rel_err(out, outd, no, 1e-6);
    CHECK(e_o < KREF_TOL, "encoder out rel err %.3g", e_o);

    for (int i = 0; i < B * T; i++)
        for (int c = 0; c < C; c++) {
            dwted[(size_t)inp[i] * C + c] += doutd[(size_t)i * C + c];
            dwped[(size_t)pos[i] * C + c] += doutd[(size_t)i * C + c];
        }
    pw_encoder_backward(dwte, dwpe, dout, inp, pos, B, T, C);
    double *wte_want = kref_plus(dwte0, dwted, nte), *wpe_want = kref_plus(dwpe0, dwped, npe);
    double e_te = pw_max_rel_err(dwte, wte_want, nte, 1e-6);
    double e_pe = pw_max_rel_err(dwpe, wpe_want, npe, 1e-6);
    CHECK(e_te < KREF_TOL, "dwte rel err %.3g", e_te);
    CHECK(e_pe < KREF_TOL, "dwpe rel err %.3g", e_pe);

    FdCtx c = {wted, wped, doutd, outd, inp, pos, B * T, C};
    double e_fte = kref_fd_err(wted, nte, dwted, fd_loss, &c);
    double e_fpe = kref_fd_err(wped, npe, dwped, fd_loss, &c);
    CHECK(e_fte < KREF_FD_TOL, "reference dwte vs finite differences %.3g", e_fte);
    CHECK(e_fpe < KREF_FD_TOL, "reference dwpe vs finite differences %.3g", e_fpe);

    /* pos NULL means position t; dwpe NULL is skipped */
    int pos_t[B * T];
    pw_positions_from_mask(pos_t, NULL, B, T);
    float *out2 = kref_alloc(no * sizeof *out2), *out3 = kref_alloc(no * sizeof *out3);
    pw_encoder_forward(out2, inp, NULL, wte, wpe, B, T, C);
    pw_encoder_forward(out3, inp, pos_t, wte, wpe, B, T, C);
    CHECK(memcmp(out2, out3, no * sizeof *out2) == 0, "pos NULL differs from pos = t");
    float *dwte2 = kref_copy(dwte0, nte);
    pw_encoder_backward(dwte2, NULL, dout, inp, pos, B, T, C);
    CHECK(pw_max_rel_err(dwte2, wte_want, nte, 1e-6) < KREF_TOL, "dwte alone differs");

    /* rows grouped by key, worked by hand: keys 7 2 7 0 2 7 -> 0: {3}, 2: {1, 4}, 7: {0, 2, 5} */
    const int keys[6] = {7, 2, 7, 0, 2, 7}, want_order[6] = {3, 1, 4, 0, 2, 5};
    const int want_start[4] = {0, 1, 3, 6}, want_key[3] = {0, 2, 7};
    int order[6], start[7], key[6], count[9];
    int ng = pw_row_groups(keys, 6, 8, order, start, key, count);
    CHECK(ng == 3 && !memcmp(order, want_order, sizeof want_order) &&
              !memcmp(start, want_start, sizeof want_start) &&
              !memcmp(key, want_key, sizeof want_key),
          "row groups: %d groups, order %d %d %d %d %d %d", ng, order[0], order[1], order[2],
          order[3], order[4], order[5]);
    CHECK(pw_row_groups(keys, 0, 8, order, start, key, count) == 0 && start[0] == 0,
          "no rows: no groups");
    CHECK(pw_row_groups(keys, 6, 7, order, start, key, count) == -1, "key 7 of 7 accepted");

    printf("encoder out %.2g dwte %.2g dwpe %.2g\n", e_o, e_te, e_pe);
    free(wte); free(wpe); free(dout); free(out); free(dwte); free(dwpe); free(dwte0); free(dwpe0);
    free(wted); free(wped); free(doutd); free(outd); free(dwted); free(dwped); free(wte_want);
    free(wpe_want); free(out2); free(out3); free(dwte2);
    return pw_test_done("test_encoder");
}
