/* bench_model.c: GPT-2 forward+backward throughput on the CPU kernels, next to plain sgemm in
 * the same run, so the model's GFLOP/s reads as a fraction of what the GEMM library can do. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "pw_model.h"

enum { B = 4, T = 256 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static double peak_rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0; /* Linux reports KiB */
}

typedef struct Row {
    const char *name;
    size_t params;
    double sec_per_iter, tokens_per_s, gflops, rss_mib;
} Row;

/* One forward + backward of the mean next-token loss, as SFT runs it. */
static double step(PwGPT2 *m, const int *inp, const int *targets, float *w)
{
    PwErr err;
    if (pw_gpt2_forward(m, inp, NULL, targets, B, T, &err)) {
        fprintf(stderr, "forward: %s\n", err.msg);
        exit(1);
    }
    pw_gpt2_zero_grad(m);
    return pw_gpt2_lm_loss_backward(m, w);
}

static Row bench_model(const char *name, PwGPT2Config cfg, int iters)
{
    PwErr err;
    PwGPT2 *m = pw_gpt2_create(&cfg, PW_HEAD_LM, B, T, &err);
    if (!m) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        exit(1);
    }
    pw_gpt2_init_random(m, 1);
    int *inp = malloc(B * T * sizeof(int)), *targets = malloc(B * T * sizeof(int));
    float *w = malloc(B * T * sizeof(float));
    unsigned s = 12345;
    for (int i = 0; i < B * T; i++) {
        s = s * 1103515245u + 12345u;
        inp[i] = (int)((s >> 8) % (unsigned)cfg.vocab_size);
    }
    pw_gpt2_next_token_targets(targets, inp, NULL, B, T);
    pw_gpt2_mean_weights(w, targets, B * T);

    double loss = step(m, inp, targets, w); /* warm-up: first touch of every buffer */
    double t0 = now();
    for (int i = 0; i < iters; i++) loss = step(m, inp, targets, w);
    double sec = (now() - t0) / iters;
    Row r = {name, m->num_params, sec, B * T / sec,
             pw_gpt2_flops_per_token(m, T) * B * T / sec * 1e-9, peak_rss_mib()};
    fprintf(stderr, "%s: loss %.4f (ln V = %.4f)\n", name, loss, __builtin_log(cfg.vocab_size));
    free(inp);
    free(targets);
    free(w);
    pw_gpt2_free(m);
    return r;
}

/* out (1024, 768) = inp (1024, 768) . W (768, 768)^T, the shape of the model's attention
 * projection at B*T = 1024 tokens. */
static double bench_sgemm(void)
{
    const int M = 1024, K = 768, N = 768;
    float *a = malloc((size_t)M * K * sizeof(float)), *bm = malloc((size_t)N * K * sizeof(float));
    float *c = malloc((size_t)M * N * sizeof(float));
    for (size_t i = 0; i < (size_t)M * K; i++) a[i] = (float)((i * 7) % 13) * 0.01f;
    for (size_t i = 0; i < (size_t)N * K; i++) bm[i] = (float)((i * 5) % 11) * 0.01f;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, bm, K, 0.0f, c, N);
    int reps = 0;
    double t0 = now(), t;
    do {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, bm, K, 0.0f,
                    c, N);
        reps++;
    } while ((t = now() - t0) < 1.0);
    free(a);
    free(bm);
    free(c);
    return 2.0 * M * N * K * reps / t * 1e-9;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 2;
    if (iters < 1) iters = 1;
    const char *threads = getenv("OPENBLAS_NUM_THREADS");
    printf("GPT-2 forward+backward, B=%d T=%d, %d timed iterations after one warm-up, "
           "OPENBLAS_NUM_THREADS=%s\n\n", B, T, iters, threads ? threads : "(default)");

    double sgemm = bench_sgemm();
    PwGPT2Config small = {.n_layer = 4, .n_head = 4, .n_embd = 256, .vocab_size = 50257,
                          .n_positions = 1024};
    PwGPT2Config gpt2 = {.n_layer = 12, .n_head = 12, .n_embd = 768, .vocab_size = 50257,
                         .n_positions = 1024};
    Row rows[2];
    rows[0] = bench_model("small (4x256)", small, iters);
    rows[1] = bench_model("gpt2-124M (12x768)", gpt2, iters);

    printf("%-20s %12s %12s %12s %10s %14s\n", "model", "parameters", "s/iter", "tokens/s",
           "GFLOP/s", "peak RSS MiB");
    for (int i = 0; i < 2; i++)
        printf("%-20s %12zu %12.3f %12.1f %10.2f %14.0f\n", rows[i].name, rows[i].params,
               rows[i].sec_per_iter, rows[i].tokens_per_s, rows[i].gflops, rows[i].rss_mib);
    printf("%-20s %12s %12s %12s %10.2f\n", "sgemm 1024x768x768", "", "", "", sgemm);
    printf("\nGFLOP/s count 6 x matmul parameters (incl. the tied LM head) x tokens plus "
           "attention 12 x L x C x T per token; peak RSS is the process's high-water mark so "
           "far.\n");
    printf("RESULT model_gflops=%.2f sgemm_gflops=%.2f ratio=%.3f\n", rows[1].gflops, sgemm,
           rows[1].gflops / sgemm);
    return 0;
}
