/* test_sample_emu.c: the GPU's sampler kernel (src/kernels/cuda/sample_kernel.cuh), the very
 * source nvcc compiles, built here as C and run under the host emulation of emu.h (512 threads
 * a row, their warp sums through emulated shuffles) against the CPU's pw_sample_rows on the
 * rows of sample_case.h: the same tokens, the log-probs within 1e-5, every stream advanced by
 * one draw. Needs no GPU, so the kernel's logic (the bit-by-bit thresholds of top-k and top-p,
 * the scan of the runs, the walk) is checked on every machine; cuda_sample repeats it on a GPU
 * with more and longer rows. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "emu.h"

#include "sample_kernel.cuh"

#include "pw_sample.h"
#include "pw_test.h"
#include "sample_case.h"

typedef struct Args {
    const float *logits;
    int ld, V;
    const int *rows;
    PwSampleConfig sc;
    uint64_t *rng;
    int *token;
    float *logp, *logp_full;
} Args;

static void body(void *p)
{
    Args *a = p;
    sample_kernel(a->logits, a->ld, a->V, a->rows, (double)a->sc.temperature, a->sc.top_k,
                  (double)a->sc.top_p, a->rng, a->token, a->logp, a->logp_full);
}

static void run(int n, int V, int ld, PwSampleConfig sc, unsigned long long *rng)
{
    float *logits = malloc(sizeof(float) * (size_t)n * ld);
    int *rows = malloc(sizeof(int) * n), *tok = malloc(sizeof(int) * n);
    int *etok = malloc(sizeof(int) * n);
    uint64_t *st = malloc(sizeof(uint64_t) * n), *est = malloc(sizeof(uint64_t) * n);
    float *lp = malloc(sizeof(float) * 4 * n), *lpf = lp + n, *elp = lp + 2 * n, *elpf = lp + 3 * n;
    sample_case_logits(logits, n, V, ld, rng);
    sample_case_rows(rows, st, n);
    for (int i = 0; i < n; i++) est[i] = st[i], etok[i] = -1, elp[i] = elpf[i] = NAN;
    pw_sample_rows(logits, ld, n, V, rows, &sc, st, tok, lp, lpf);

    Args a = {logits, ld, V, rows, sc, est, etok, elp, elpf};
    emu_launch((EmuDim3){(unsigned)n, 1, 1}, (EmuDim3){SAMPLE_THREADS, 1, 1}, body, &a);
    int diff = 0, moved = 0;
    for (int i = 0; i < n; i++) diff += etok[i] != tok[i], moved += est[i] != st[i];
    double e_lp = pw_max_rel_err_ff(elp, lp, n, 1e-6);
    double e_lpf = pw_max_rel_err_ff(elpf, lpf, n, 1e-6);
    printf("n=%d V=%d ld=%d T=%g top_k=%d top_p=%g: tokens differ %d, logp %.2e, logp_full %.2e\n",
           n, V, ld, (double)sc.temperature, sc.top_k, (double)sc.top_p, diff, e_lp, e_lpf);
    CHECK(diff == 0, "%d of %d tokens differ from the CPU's", diff, n);
    CHECK(moved == 0, "%d streams differ from the CPU's after one draw each", moved);
    CHECK(e_lp <= 1e-5, "logp: rel err %.3g", e_lp);
    CHECK(e_lpf <= 1e-5, "logp_full: rel err %.3g", e_lpf);
    free(logits);
    free(rows);
    free(tok);
    free(etok);
    free(st);
    free(est);
    free(lp);
}

int main(void)
{
    unsigned long long rng = 1125;
    for (int c = 0; c < SAMPLE_CASE_NCONFIGS; c++) {
        run(7, 1000, 1000, sample_case_configs[c], &rng); /* every kind of row, and a plain one */
        run(5, 7, 64, sample_case_configs[c], &rng);      /* fewer logits than threads */
    }
    run(6, 50257, 50304, sample_case_configs[4], &rng); /* GPT-2's padded vocabulary */
    return pw_test_done("sample_emu");
}
