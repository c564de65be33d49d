/* bench_logprobs.c: the CPU log-prob kernels at GPT-2's vocabulary, what PPO reads off the LM
 * head every step: pw_logprobs_forward (log-probs and entropies, keeping each row's statistics)
 * and pw_logprobs_backward (in place over the logits, both gradients on), the backward making
 * the statistics again and reading the forward's, for N rows of V = 50257 logits, the median of
 * R timed calls after one warm-up. Threads: OMP_NUM_THREADS (one per row block).
 * Run: bench_logprobs [N] [R]. Prints a table, then `RESULT forward_ms=... backward_ms=...
 * backward_kept_ms=... kept_speedup=... ns_per_logit=...` (the backward's, kept). */
#include <stdio.h>
#include <stdlib.h>

#include "bench_clock.h"
#include "bench_stats.h"
#include "pw_kernels.h"

int main(int argc, char **argv)
{
    const int V = 50257;
    int N = argc > 1 ? atoi(argv[1]) : 64, R = argc > 2 ? atoi(argv[2]) : 9;
    if (N < 1 || R < 1 || R > 1000) {
        fprintf(stderr, "bench_logprobs: N (rows, >= 1) and R (repeats, 1 to 1000), got %s %s\n",
                argc > 1 ? argv[1] : "", argc > 2 ? argv[2] : "");
        return 2;
    }
    size_t n = (size_t)N * V;
    float *x = malloc(sizeof(float) * n), *dx = malloc(sizeof(float) * n);
    int *t = malloc(sizeof(int) * N);
    float *g = malloc(sizeof(float) * (4 + PW_LP_STATS) * N), *h = g + N, *lp = g + 2 * N,
          *H = g + 3 * N, *st = g + 4 * N;
    double *tf = malloc(sizeof(double) * 3 * R), *tb = tf + R, *tk = tf + 2 * R;
    if (!x || !dx || !t || !g || !tf) {
        fprintf(stderr, "bench_logprobs: out of memory for %d rows\n", N);
        return 1;
    }
    unsigned long long s = 1;
    for (size_t i = 0; i < n; i++) { /* logits of spread about 3, as a trained head's */
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((s >> 40) % 2000) / 333.0f;
    }
    for (int i = 0; i < N; i++) t[i] = (i * 7919) % V, g[i] = 1.0f, h[i] = 0.01f;
    for (int r = -1; r < R; r++) {
        double t0 = bench_now();
        pw_logprobs_forward(lp, H, st, x, t, N, V, V);
        double t1 = bench_now();
        for (size_t i = 0; i < n; i++) dx[i] = x[i];
        double t2 = bench_now();
        pw_logprobs_backward(dx, dx, NULL, t, g, h, N, V, V);
        double t3 = bench_now();
        for (size_t i = 0; i < n; i++) dx[i] = x[i];
        double t4 = bench_now();
        pw_logprobs_backward(dx, dx, st, t, g, h, N, V, V);
        double t5 = bench_now();
        if (r >= 0) tf[r] = 1e3 * (t1 - t0), tb[r] = 1e3 * (t3 - t2), tk[r] = 1e3 * (t5 - t4);
    }
    double f = bench_median(tf, R), b = bench_median(tb, R), k = bench_median(tk, R);
    printf("%-34s %10s %10s\n", "kernel (N x V = 50257)", "median ms", "best ms");
    printf("%-34s %10.2f %10.2f\n", "logprobs + entropy forward", f, tf[0]);
    printf("%-34s %10.2f %10.2f\n", "logprobs backward (in place)", b, tb[0]);
    printf("%-34s %10.2f %10.2f\n", "  the same, kept statistics", k, tk[0]);
    printf("RESULT forward_ms=%.3f backward_ms=%.3f backward_kept_ms=%.3f kept_speedup=%.2f "
           "ns_per_logit=%.3f\n", f, b, k, b / k, 1e6 * k / (double)n);
    free(x), free(dx), free(t), free(g), free(tf);
    return 0;
}
