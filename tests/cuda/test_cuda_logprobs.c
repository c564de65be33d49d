/* test_cuda_logprobs.c: the CUDA log-probs, entropies and cross-entropy against the CPU twin on
 * the same logits: V = 50257 and small V, offset, peaked and flat rows, skipped rows, every NULL
 * combination of dlogp/dentropy/entropy, poisoned outputs, and dlogits aliasing logits; the
 * statistics the forward keeps (the CPU's within tolerance), and the backward given them (fp32
 * and bf16, over the logits) bit for bit the one that makes them again. */
#include "cutest.h"

/* Rows ld apart (the padded vocabulary, ld >= V; ld = V is the dense layout); the padding
 * columns hold NaN, which nothing may read, and backward must write 0 there. */
static void run(int N, int V, int ld, unsigned long long *rng)
{
    printf("N=%d V=%d ld=%d\n", N, V, ld);
    size_t NV = (size_t)N * ld;
    float *logits = cu_randn(NV, 2.0, rng);
    int *targets = cu_host(sizeof(int) * N);
    for (int i = 0; i < N; i++) {
        targets[i] = (int)(pw_test_rng_next(rng) % (unsigned)V);
        float *x = logits + (size_t)i * ld;
        for (int v = V; v < ld; v++) x[v] = NAN;
        switch (i % 5) {
        case 1: targets[i] = -1; break; /* skipped row */
        case 2:
            for (int v = 0; v < V; v++) x[v] += 1000.0f;
            break; /* far from zero */
        case 3: x[targets[i]] += 50.0f; break; /* peaked: p_t ~ 1 */
        case 4:
            for (int v = 0; v < V; v++) x[v] = 0.25f;
            break; /* flat */
        default: break;
        }
    }
    float *dlogp = cu_randn(N, 1.0, rng), *dent = cu_randn(N, 1.0, rng);
    int *d_targets = cu_upload(targets, sizeof(int) * N);
    float *d_logits = cu_upload(logits, sizeof(float) * NV);
    float *d_dlogp = cu_upload(dlogp, sizeof(float) * N),
          *d_dent = cu_upload(dent, sizeof(float) * N);
    float *logp = cu_host(sizeof(float) * N), *ent = cu_host(sizeof(float) * N);
    float *d_logp = cu_dev(sizeof(float) * N), *d_ent = cu_dev(sizeof(float) * N);

    pw_logprobs_forward(logp, ent, NULL, logits, targets, N, V, ld);
    cu_poison(d_logp, sizeof(float) * N);
    cu_poison(d_ent, sizeof(float) * N);
    pw_logprobs_forward_cuda(d_logp, d_ent, NULL, d_logits, d_targets, N, V, ld, 0);
    cu_compare("logprobs forward logp", d_logp, logp, N, CU_TOL_F32);
    cu_compare("logprobs forward entropy", d_ent, ent, N, CU_TOL_F32);
    cu_poison(d_logp, sizeof(float) * N);
    pw_logprobs_forward_cuda(d_logp, NULL, NULL, d_logits, d_targets, N, V, ld, 0);
    cu_compare("logprobs forward logp (entropy NULL)", d_logp, logp, N, CU_TOL_F32);

    /* backward, written (poisoned first): dlogp and dentropy each present or NULL */
    float *dlogits = cu_host(sizeof(float) * NV), *d_dlogits = cu_dev(sizeof(float) * NV);
    for (int sel = 0; sel < 4; sel++) {
        const float *g = sel & 1 ? dlogp : NULL, *h = sel & 2 ? dent : NULL;
        pw_logprobs_backward(dlogits, logits, NULL, targets, g, h, N, V, ld);
        cu_poison(d_dlogits, sizeof(float) * NV);
        pw_logprobs_backward_cuda(d_dlogits, d_logits, NULL, d_targets,
                                  sel & 1 ? d_dlogp : NULL, sel & 2 ? d_dent : NULL, N, V, ld, 0);
        cu_comparef(d_dlogits, dlogits, NV, CU_TOL_F32, "logprobs backward sel %d", sel);
    }
    /* dlogits aliasing logits */
    float *d_alias = cu_upload(logits, sizeof(float) * NV);
    pw_logprobs_backward(dlogits, logits, NULL, targets, dlogp, dent, N, V, ld);
    pw_logprobs_backward_cuda(d_alias, d_alias, NULL, d_targets, d_dlogp, d_dent, N, V, ld, 0);
    cu_compare("logprobs backward (dlogits = logits)", d_alias, dlogits, NV, CU_TOL_F32);

    float *st = cu_host(sizeof(float) * N * PW_LP_STATS);
    float *d_st = cu_dev(sizeof(float) * N * PW_LP_STATS);
    pw_logprobs_forward(logp, ent, st, logits, targets, N, V, ld);
    cu_poison(d_st, sizeof(float) * N * PW_LP_STATS);
    pw_logprobs_forward_cuda(d_logp, d_ent, d_st, d_logits, d_targets, N, V, ld, 0);
    { /* each column apart: the max exact, log Z within tolerance, H the entropy's bits */
        float *got = cu_host(sizeof(float) * N * PW_LP_STATS), *ge = cu_host(sizeof(float) * N);
        float *col = cu_host(sizeof(float) * 2 * N), *ref = col + N;
        cu_download(got, d_st, sizeof(float) * N * PW_LP_STATS);
        cu_download(ge, d_ent, sizeof(float) * N);
        size_t bad = 0;
        for (int i = 0; i < N; i++) {
            const float *k = got + (size_t)i * PW_LP_STATS, *c = st + (size_t)i * PW_LP_STATS;
            bad += k[0] != c[0] || memcmp(&k[2], &ge[i], sizeof(float)) != 0;
            col[i] = k[1], ref[i] = c[1];
        }
        CHECK(bad == 0, "logprobs forward statistics: %zu rows' max or entropy differ", bad);
        double e = pw_max_rel_err_ff(col, ref, N, CU_FLOOR);
        CHECK(e <= CU_TOL_F32, "logprobs forward statistics: log Z relative error %.3g", e);
        printf("  %-44s max and H exact, log Z rel err %.3g\n", "logprobs forward statistics", e);
    }
    cu_compare("logprobs forward logp (statistics kept)", d_logp, logp, N, CU_TOL_F32);
    float *made = cu_host(sizeof(float) * NV);
    cu_download(made, d_alias, sizeof(float) * NV);
    float *d_kept = cu_upload(logits, sizeof(float) * NV);
    pw_logprobs_backward_cuda(d_kept, d_kept, d_st, d_targets, d_dlogp, d_dent, N, V, ld, 0);
    cu_same_bits16("logprobs backward (statistics kept)", (const uint16_t *)d_kept,
                   (const uint16_t *)made, 2 * NV);
    /* the bf16 form over the logits, with and without them: the float32 gradient rounded */
    uint16_t *h16 = cu_host(sizeof(float) * NV);
    for (int kept = 0; kept < 2; kept++) {
        float *d_over = cu_upload(logits, sizeof(float) * NV);
        pw_logprobs_backward_bf16_cuda((pw_bf16 *)d_over, d_over, kept ? d_st : NULL, d_targets,
                                       d_dlogp, d_dent, N, V, ld, 1.0f, 0);
        for (int i = 0; i < N; i++)
            for (int v = 0; v < ld; v++)
                h16[(size_t)i * 2 * ld + v] = pw_bf16_from_f32(made[(size_t)i * ld + v]);
        /* compare the ld halves of each row only: the rest of the row is the logits' */
        uint16_t *got = cu_host(sizeof(float) * NV);
        cu_download(got, d_over, sizeof(float) * NV);
        size_t bad = 0;
        for (int i = 0; i < N; i++)
            for (int v = 0; v < ld; v++)
                bad += got[(size_t)i * 2 * ld + v] != h16[(size_t)i * 2 * ld + v];
        CHECK(bad == 0, "logprobs backward bf16 (kept %d): %zu values are not the float32 "
              "gradient rounded", kept, bad);
        printf("  %-44s %zu differ\n", kept ? "logprobs backward bf16 (statistics kept)"
                                              : "logprobs backward bf16", bad);
    }

    if (ld != V) { /* the cross-entropy has no padded form */
        cu_release();
        return;
    }
    /* cross-entropy, with per-row weights */
    float *loss = cu_host(sizeof(float) * N), *d_loss = cu_dev(sizeof(float) * N);
    pw_crossentropy_forward(loss, logits, targets, N, V);
    cu_poison(d_loss, sizeof(float) * N);
    pw_crossentropy_forward_cuda(d_loss, d_logits, d_targets, N, V, 0);
    cu_compare("crossentropy forward", d_loss, loss, N, CU_TOL_F32);
    pw_crossentropy_backward(dlogits, logits, targets, dlogp, N, V);
    cu_poison(d_dlogits, sizeof(float) * NV);
    pw_crossentropy_backward_cuda(d_dlogits, d_logits, d_targets, d_dlogp, N, V, 0);
    cu_compare("crossentropy backward", d_dlogits, dlogits, NV, CU_TOL_F32);

    cu_release();
}

int main(void)
{
    cu_require_gpu("test_cuda_logprobs");
    unsigned long long rng = 17;
    run(12, 50257, 50257, &rng);
    run(12, 50257, 50304, &rng); /* GPT-2's vocabulary padded to a multiple of 64 */
    run(37, 1000, 1000, &rng);
    run(13, 7, 7, &rng); /* fewer logits than threads: empty partial statistics */
    run(13, 7, 64, &rng);
    return pw_test_done("test_cuda_logprobs");
}
