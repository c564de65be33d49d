/* test_cuda_sample.c: the CUDA sampler against its CPU twin (pw_sample_rows) on the same logits
 * and streams: GPT-2's V = 50257 in rows 50304 apart (the padded vocabulary, NaN in the padding)
 * and small V; temperature alone, top-k, top-p and both; rows with ties (logits on a grid of
 * few values), -inf tokens, a peaked row, a flat row, logits far from 0; the streams taken
 * through a permutation. The tokens must be the same (both keep the same sets and walk the ids
 * in order; only the order of the sums differs), the log-probs within 1e-5, and every stream
 * advanced by exactly one draw. Then the rows' bookkeeping after a draw (`record`). */
#include <math.h>

#include "cutest.h"
#include "pw_rng.h"
#include "sample_case.h"

static void run(int n, int V, int ld, PwSampleConfig sc, unsigned long long *rng)
{
    printf("n=%d V=%d ld=%d T=%g top_k=%d top_p=%g\n", n, V, ld, (double)sc.temperature,
           sc.top_k, (double)sc.top_p);
    float *logits = cu_host(sizeof(float) * (size_t)n * ld);
    sample_case_logits(logits, n, V, ld, rng);
    int *rows = cu_host(sizeof(int) * n);
    uint64_t *streams = cu_host(sizeof(uint64_t) * n), *want_st = cu_host(sizeof(uint64_t) * n);
    sample_case_rows(rows, streams, n);
    for (int i = 0; i < n; i++) want_st[i] = streams[i];
    int *tok = cu_host(sizeof(int) * n);
    float *lp = cu_host(sizeof(float) * n), *lpf = cu_host(sizeof(float) * n);
    pw_sample_rows(logits, ld, n, V, rows, &sc, want_st, tok, lp, lpf);

    float *d_logits = cu_upload(logits, sizeof(float) * (size_t)n * ld);
    int *d_rows = cu_upload(rows, sizeof(int) * n);
    uint64_t *d_st = cu_upload(streams, sizeof(uint64_t) * n);
    int *d_tok = cu_dev(sizeof(int) * n);
    float *d_lp = cu_dev(sizeof(float) * n), *d_lpf = cu_dev(sizeof(float) * n);
    cu_poison(d_tok, sizeof(int) * n);
    pw_sample_rows_cuda(d_logits, ld, n, V, d_rows, &sc, d_st, d_tok, d_lp, d_lpf, 0);
    int *got = cu_host(sizeof(int) * n);
    uint64_t *got_st = cu_host(sizeof(uint64_t) * n);
    cu_download(got, d_tok, sizeof(int) * n);
    cu_download(got_st, d_st, sizeof(uint64_t) * n);
    int diff = 0;
    for (int i = 0; i < n; i++) diff += got[i] != tok[i];
    CHECK(diff == 0, "%d of %d tokens differ from the CPU's", diff, n);
    int moved = 0;
    for (int i = 0; i < n; i++) moved += got_st[i] != want_st[i];
    CHECK(moved == 0, "%d streams differ from the CPU's after one draw each", moved);
    cu_compare("logp", d_lp, lp, n, CU_TOL_F32);
    cu_compare("logp_full", d_lpf, lpf, n, CU_TOL_F32);
    cu_release();
}

/* The rows' bookkeeping after a draw (pw_sample_record_cuda) against the CPU's on the same
 * state: n rows of which about a third already stopped, draws in a permuted pass order, a stop
 * token drawn by some, a pass advanced (and once none, as after the prefill). Every value must
 * be equal: nothing is computed, only copied and counted. */
static void run_record(int n, int R, int with_pass, unsigned long long *rng)
{
    printf("record: n=%d R=%d pass=%d\n", n, R, with_pass);
    const int r = R / 2, stop = 3;
    int *live = cu_host(sizeof(int) * 3 * n), *tok = cu_host(sizeof(int) * n);
    int *rows = cu_host(sizeof(int) * n), *pass = cu_host(sizeof(int) * 3 * n);
    int *tokens = cu_host(sizeof(int) * (size_t)n * R);
    float *lps = cu_host(sizeof(float) * 2 * (size_t)n * R), *lp = cu_host(sizeof(float) * 2 * n);
    for (int i = 0; i < n; i++) {
        live[i] = pw_test_rng_next(rng) % 3 != 0;
        live[n + i] = (int)(pw_test_rng_next(rng) % 50);      /* next */
        live[2 * n + i] = r;                                  /* length: the column */
        tok[i] = (int)(pw_test_rng_next(rng) % 8);            /* 3 is the stop token */
        rows[i] = (i * 7 + 2) % n;
        lp[i] = -(float)i / 7.0f, lp[n + i] = -(float)i / 5.0f;
        for (int k = 0; k < 3; k++) pass[k * n + i] = (int)(pw_test_rng_next(rng) % 100);
    }
    for (size_t i = 0; i < (size_t)n * R; i++) tokens[i] = -1, lps[i] = lps[n * R + i] = 0.5f;
    int *d_state = cu_upload(live, sizeof(int) * 3 * n), *d_tokens =
        cu_upload(tokens, sizeof(int) * (size_t)n * R);
    float *d_lps = cu_upload(lps, sizeof(float) * 2 * (size_t)n * R);
    int *d_rows = cu_upload(rows, sizeof(int) * n), *d_tok = cu_upload(tok, sizeof(int) * n);
    float *d_lp = cu_upload(lp, sizeof(float) * 2 * n);
    int *d_pass = cu_upload(pass, sizeof(int) * 3 * n);
    PwGenRows h = {live, live + n, live + 2 * n, tokens, lps, lps + (size_t)n * R, R, stop};
    PwGenRows d = {d_state, d_state + n, d_state + 2 * n, d_tokens, d_lps,
                   d_lps + (size_t)n * R, R, stop};
    pw_sample_record(&h, n, rows, tok, lp, lp + n, with_pass ? pass : NULL,
                     with_pass ? pass + n : NULL, with_pass ? pass + 2 * n : NULL);
    pw_sample_record_cuda(&d, n, d_rows, d_tok, d_lp, d_lp + n, with_pass ? d_pass : NULL,
                          with_pass ? d_pass + n : NULL, with_pass ? d_pass + 2 * n : NULL, 0);
    int *got = cu_host(sizeof(int) * ((size_t)n * R + 6 * n));
    float *gotf = cu_host(sizeof(float) * 2 * (size_t)n * R);
    cu_download(got, d_tokens, sizeof(int) * (size_t)n * R);
    cu_download(got + (size_t)n * R, d_state, sizeof(int) * 3 * n);
    cu_download(got + (size_t)n * R + 3 * n, d_pass, sizeof(int) * 3 * n);
    cu_download(gotf, d_lps, sizeof(float) * 2 * (size_t)n * R);
    int bad = 0, nrec = 0;
    for (size_t i = 0; i < (size_t)n * R; i++) bad += got[i] != tokens[i], nrec += tokens[i] >= 0;
    for (int i = 0; i < 3 * n; i++) bad += got[(size_t)n * R + i] != live[i];
    for (int i = 0; i < 3 * n; i++) bad += got[(size_t)n * R + 3 * n + i] != pass[i];
    for (size_t i = 0; i < 2 * (size_t)n * R; i++) bad += gotf[i] != lps[i];
    CHECK(bad == 0 && nrec > 0, "record: %d values differ from the CPU's (%d recorded)", bad, nrec);
    cu_release();
}

int main(void)
{
    cu_require_gpu("test_cuda_sample");
    unsigned long long rng = 23;
    for (int c = 0; c < SAMPLE_CASE_NCONFIGS; c++) {
        run(64, 50257, 50304, sample_case_configs[c], &rng);
        run(37, 1000, 1000, sample_case_configs[c], &rng);
        run(7, 7, 64, sample_case_configs[c], &rng); /* fewer logits than threads */
    }
    run_record(300, 16, 1, &rng); /* more rows than a block's threads */
    run_record(5, 4, 0, &rng);
    return pw_test_done("test_cuda_sample");
}
