/* bench_recompute.c: what a forward keeps for the backward (PwModelOpts.acts), in bytes and in
 * time. First the activation memory of GPT-2 124M (B = 16, T = 1024) and the Llama family at
 * Qwen2.5-0.5B's shape (B = 8, T = 1024) at fp32 and bf16 when every layer's activations are kept
 * (keep), when only the layers' inputs are and the backward makes each layer's again
 * (recompute: activation checkpointing), and when one layer's set serves every layer (none: a
 * model that only scores, a reference or a reward model): pw_model_plan's figures, which are
 * what the model allocates to the byte (the model suite's `memory plan`), so no model is made.
 * Then the price of recomputing: forward + backward steps of one small GPT-2 on the CPU (L = 4,
 * C = 256, V = 4096, B = 4, T = 256), keep and recompute alternating, ITERS pairs (default 5),
 * the median of the pairs' ratios; with `gpu [bf16|fp32] [llama]` the same at the full shape on
 * GPU 0. The last line: RESULT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_clock.h"
#include "bench_shapes.h"
#include "bench_stats.h"
#include "pw_blas_core.h"

#define MIB (1024.0 * 1024.0)

static void die(const char *what, const PwErr *err)
{
    fprintf(stderr, "bench_recompute: %s: %s\n", what, err->msg);
    exit(1);
}

/* activations + the backward's scratch of `a` at B x T with `acts` (none: no backward) */
static double act_mib(const PwArch *a, int B, int T, PwPrecision prec, PwActs acts)
{
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = B, .maxT = T, .precision = prec,
                     .acts = acts};
    PwModelBytes b;
    PwErr err;
    if (pw_model_plan(a, &o, &b, &err)) die("plan", &err);
    return (double)(b.activations + (acts == PW_ACTS_NONE ? 0 : b.backward)) / MIB;
}

/* One forward + backward of the mean next-token loss on m. */
static void step(PwModel *m, const int *tok, const int *tgt, float *logp, const float *dlogp,
                 int B, int T)
{
    PwErr err;
    PwModelInput in = {tok, NULL, tgt, B, T, 1.0f};
    PwOutputs out = {.col0 = 0, .width = T, .logp = logp};
    PwOutputGrads g = {.dlogp = dlogp};
    if (pw_model_forward(m, &in, &out, &err) || pw_model_zero_grad(m, &err) ||
        pw_model_backward(m, &g, &err))
        die("step", &err);
    pw_model_grads(m); /* waits for the step's queued work */
}

/* keep and recompute steps alternating, `iters` pairs after one warm-up pair: the median of the
 * pairs' ratios (recompute / keep) and of each one's seconds */
static double time_pairs(PwArch a, int B, int T, PwDevice dev, PwPrecision prec, int iters,
                         double *sec_keep, double *sec_re)
{
    PwModel *m[2];
    PwErr err;
    for (int k = 0; k < 2; k++) {
        PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = B, .maxT = T, .device = dev,
                         .precision = prec, .acts = k ? PW_ACTS_RECOMPUTE : PW_ACTS_KEEP};
        if (!(m[k] = pw_model_create(&a, &o, &err))) die("model", &err);
        pw_model_init_random(m[k], 1);
    }
    size_t n = (size_t)B * T;
    int *tok = calloc(n, sizeof(int)), *tgt = calloc(n, sizeof(int));
    float *logp = calloc(n, sizeof(float)), *w = calloc(n, sizeof(float));
    double *ratio = calloc((size_t)iters, sizeof(double));
    double *t0s = calloc((size_t)iters, sizeof(double));
    double *t1s = calloc((size_t)iters, sizeof(double));
    if (!tok || !tgt || !logp || !w || !ratio || !t0s || !t1s) {
        fprintf(stderr, "bench_recompute: out of memory\n");
        exit(1);
    }
    unsigned s = 12345;
    for (size_t i = 0; i < n; i++) tok[i] = (int)(((s = s * 1103515245u + 12345u) >> 8) %
                                                  (unsigned)a.vocab_size);
    pw_lm_next_token_targets(tgt, tok, NULL, B, T);
    pw_lm_mean_weights(w, tgt, (int)n);
    for (size_t i = 0; i < n; i++) w[i] = -w[i];
    for (int i = -1; i < iters; i++) { /* i = -1: the warm-up pair */
        double t[2];
        for (int k = 0; k < 2; k++) {
            double t0 = bench_now();
            step(m[k], tok, tgt, logp, w, B, T);
            t[k] = bench_now() - t0;
        }
        if (i < 0) continue;
        ratio[i] = t[1] / t[0];
        t0s[i] = t[0];
        t1s[i] = t[1];
    }
    double r = bench_median(ratio, iters);
    *sec_keep = bench_median(t0s, iters);
    *sec_re = bench_median(t1s, iters);
    free(tok), free(tgt), free(logp), free(w), free(ratio), free(t0s), free(t1s);
    pw_model_free(m[0]);
    pw_model_free(m[1]);
    return r;
}

int main(int argc, char **argv)
{
    pw_blas_core_remedy(argv); /* the OpenBLAS kernels ppo_world runs (docs/kernels.md) */
    int iters = argc > 1 ? atoi(argv[1]) : 5;
    if (iters < 1) iters = 1;
    int gpu = argc > 2 && !strcmp(argv[2], "gpu"), llama = 0;
    PwPrecision gprec = PW_PRECISION_BF16;
    if (argc > 2 && !gpu) {
        fprintf(stderr, "bench_recompute: '%s': expected gpu\n", argv[2]);
        return 2;
    }
    if (gpu && bench_gpu_args(argc, argv, 3, "bench_recompute", &gprec, &llama)) return 2;

    const PwArch shapes[2] = {BENCH_GPT2_124M, BENCH_QWEN_05B};
    const char *const names[2] = {"gpt2-124M, B=16 T=1024", "qwen2.5-0.5B shape, B=8 T=1024"};
    const int Bs[2] = {16, 8};
    double ratio_re[2][2], ratio_none[2][2];
    printf("activations + the backward's scratch, MiB (pw_model_plan: what is allocated)\n");
    printf("%-32s %-5s %10s %10s %10s %8s %8s\n", "model", "prec", "keep", "recompute", "none",
           "re/keep", "none/keep");
    for (int s = 0; s < 2; s++)
        for (int p = 0; p < 2; p++) {
            PwPrecision prec = p ? PW_PRECISION_BF16 : PW_PRECISION_FP32;
            double k = act_mib(&shapes[s], Bs[s], 1024, prec, PW_ACTS_KEEP);
            double r = act_mib(&shapes[s], Bs[s], 1024, prec, PW_ACTS_RECOMPUTE);
            double z = act_mib(&shapes[s], Bs[s], 1024, prec, PW_ACTS_NONE);
            ratio_re[s][p] = r / k;
            ratio_none[s][p] = z / k;
            printf("%-32s %-5s %10.1f %10.1f %10.1f %8.3f %8.3f\n", names[s],
                   pw_precision_name(prec), k, r, z, r / k, z / k);
        }

    PwArch a = {.family = PW_FAMILY_GPT2, .n_layer = 4, .n_head = 4, .n_embd = 256,
                .vocab_size = 4096, .n_positions = 256};
    int B = 4, T = 256;
    PwDevice dev = PW_DEVICE_CPU;
    PwPrecision prec = PW_PRECISION_FP32;
    const char *where = "the CPU, a GPT-2 of L=4 C=256 V=4096, B=4 T=256, fp32";
    if (gpu) {
        a = bench_shape(llama);
        B = llama ? 8 : 16;
        T = 1024;
        dev = PW_DEVICE_CUDA;
        prec = gprec;
        where = llama == 2 ? "cuda:0, Qwen3-0.6B's shape, B=8 T=1024"
                : llama    ? "cuda:0, Qwen2.5-0.5B's shape, B=8 T=1024"
                           : "cuda:0, GPT-2 124M, B=16 T=1024";
    }
    double sk, sr, r = time_pairs(a, B, T, dev, prec, iters, &sk, &sr);
    printf("\nforward + backward on %s%s%s: %d pairs after one warm-up, medians\n", where,
           gpu ? ", " : "", gpu ? pw_precision_name(prec) : "", iters);
    printf("%-10s %10s\n%-10s %10.4f\n%-10s %10.4f\n%-10s %10.3f\n\n", "acts", "s/step", "keep",
           sk, "recompute", sr, "ratio", r);
    printf("RESULT gpt2_bf16_recompute_vs_keep=%.3f gpt2_bf16_none_vs_keep=%.3f "
           "qwen_bf16_recompute_vs_keep=%.3f qwen_bf16_none_vs_keep=%.3f device=%s "
           "time_recompute_vs_keep=%.3f\n",
           ratio_re[0][1], ratio_none[0][1], ratio_re[1][1], ratio_none[1][1],
           gpu ? "cuda" : "cpu", r);
    return 0;
}
