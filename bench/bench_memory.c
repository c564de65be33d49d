/* bench_memory.c: what a training step's activations take at fp32, at bf16, and at bf16 with
 * the LM head in chunks of 256 rows (PwModelOpts.lm_chunk), for GPT-2 124M and the Llama family
 * at Qwen2.5-0.5B's shape (random weights, LM head): the bytes the model
 * allocates for what its forward keeps and its backward's scratch (pw_model_activation_bytes:
 * on the GPU this is the one device allocation), and the CPU process's resident high-water mark
 * over one forward+backward, measured; with `cuda`, on GPU 0, the device memory the kernel tables
 * held at most (pw_cuda_peak_bytes) instead. Then a model that only scores (a reference: one
 * layer's activations, one forward) at bf16, as it was (float32 weights beside their bfloat16
 * copy) and frozen (PwModelOpts.frozen: its layers' matrices in bfloat16 alone). Each (model,
 * setting) runs in a child process of its own, so that each peak is its own.
 *   bench_memory [B T] [cuda]     default B = 4, T = 256 (cuda: B = 8, T = 1024) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_rss.h"
#include "bench_shapes.h"
#include "pw_model.h"
#ifdef PW_HAVE_CUDA
#include "pw_kernels_cuda.h"
#endif

static PwArch arch(int which) { return which == 0 ? bench_gpt2_124m() : bench_qwen_05b(); }

static const char *const names[2] = {"gpt2-124M", "qwen2.5-0.5B shape"};

/* what a child's model does: trains (a forward and a backward), or only scores (one forward,
 * PW_ACTS_NONE), as it was or frozen */
enum { TRAIN, SCORE, SCORE_FROZEN };

/* The child: one model at one precision, one forward+backward of the mean next-token loss (or
 * a forward alone); prints "activation_bytes params peak_mib" for the parent. */
static int one(int which, PwPrecision prec, int chunk, int B, int T, int cuda, int mode)
{
    double base = rss_now_mib();
    PwArch cfg = arch(which);
    PwErr err;
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = B, .maxT = T, .precision = prec,
                     .lm_chunk = chunk,
                     .device = cuda ? PW_DEVICE_CUDA : PW_DEVICE_CPU,
                     .acts = mode == TRAIN ? PW_ACTS_KEEP : PW_ACTS_NONE,
                     .frozen = mode == SCORE_FROZEN};
    PwModel *m = pw_model_create(&cfg, &o, &err);
    if (!m) {
        fprintf(stderr, "%s: %s\n", names[which], err.msg);
        return 1;
    }
    pw_model_init_random(m, 1);
    size_t n = (size_t)B * T;
    int *inp = calloc(n, sizeof *inp), *tgt = calloc(n, sizeof *tgt);
    float *w = calloc(n, sizeof *w), *logp = calloc(n, sizeof *logp);
    float *dlogp = calloc(n, sizeof *dlogp);
    if (!inp || !tgt || !w || !logp || !dlogp) {
        fprintf(stderr, "out of memory for a batch of %zu tokens\n", n);
        return 1;
    }
    for (size_t i = 0; i < n; i++) inp[i] = (int)((i * 7919 + 13) % (size_t)cfg.vocab_size);
    pw_lm_next_token_targets(tgt, inp, NULL, B, T);
    pw_lm_mean_weights(w, tgt, (int)n);
    for (size_t i = 0; i < n; i++) dlogp[i] = -w[i];
    PwModelInput in = {inp, NULL, tgt, B, T, 1.0f};
    PwOutputs out = {.col0 = 0, .width = T, .logp = logp};
    PwOutputGrads g = {.dlogp = dlogp};
    if (pw_model_forward(m, &in, &out, &err) ||
        (mode == TRAIN && (pw_model_zero_grad(m, &err) || pw_model_backward(m, &g, &err)))) {
        fprintf(stderr, "%s: %s\n", names[which], err.msg);
        return 1;
    }
    double peak = peak_rss_mib() - base;
#ifdef PW_HAVE_CUDA
    if (cuda) {
        /* waits for the queued work (a forward alone is done: its outputs came back) */
        if (mode == TRAIN) pw_model_sync(m);
        peak = pw_cuda_peak_bytes() / (1024.0 * 1024.0);
    }
#endif
    /* what it holds once loaded and run: the CPU's resident set now (a frozen model's load
     * passes through a float32 host copy, which the high-water mark keeps); on a GPU the peak */
    double held = cuda ? peak : rss_now_mib() - base;
    printf("%zu %zu %.1f %.1f\n", pw_model_activation_bytes(m), pw_model_num_params(m), peak,
           held);
    pw_model_free(m);
    free(inp), free(tgt), free(w), free(logp), free(dlogp);
    return 0;
}

typedef struct Row {
    double act_mib, peak_mib, held_mib, params;
} Row;

static int run_child(const char *self, int which, int prec, int chunk, int B, int T, int cuda,
                     int mode, Row *r)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' --one %d %d %d %d %d %d %d", self, which, prec, chunk, B, T,
             cuda, mode);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t act = 0, np = 0;
    int got = fscanf(p, "%zu %zu %lf %lf", &act, &np, &r->peak_mib, &r->held_mib);
    int rc = pclose(p);
    if (got != 4 || rc != 0) return -1;
    r->act_mib = act / (1024.0 * 1024.0);
    r->params = (double)np;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 9 && !strcmp(argv[1], "--one"))
        return one(atoi(argv[2]), (PwPrecision)atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
                   atoi(argv[6]), atoi(argv[7]), atoi(argv[8]));
    int cuda = argc > 1 && !strcmp(argv[argc - 1], "cuda");
    int nargs = argc - 1 - cuda;
    int B = nargs == 2 ? atoi(argv[1]) : cuda ? 8 : 4;
    int T = nargs == 2 ? atoi(argv[2]) : cuda ? 1024 : 256;
    if ((nargs != 0 && nargs != 2) || B < 1 || T < 2 || T > 1024) {
        fprintf(stderr, "usage: bench_memory [B T] [cuda] (B >= 1, 2 <= T <= 1024)\n");
        return 2;
    }
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, "bench_memory: cannot find its own executable\n");
        return 1;
    }
    self[len] = '\0';
    printf("One forward+backward on %s, B=%d T=%d, each in a process of its own\n\n",
           cuda ? "cuda:0" : "the CPU", B, T);
    printf("%-20s %-16s %15s %10s %14s\n", "model", "setting", "activations MiB", "peak MiB",
           "params+grads");
    /* fp32; bf16; bf16 with the LM head 256 rows at a time */
    static const char *const settings[3] = {"fp32", "bf16", "bf16, lm 256"};
    Row r[2][3];
    for (int m = 0; m < 2; m++)
        for (int p = 0; p < 3; p++) {
            PwPrecision prec = p ? PW_PRECISION_BF16 : PW_PRECISION_FP32;
            if (run_child(self, m, prec, p == 2 ? 256 : 0, B, T, cuda, TRAIN, &r[m][p])) {
                fprintf(stderr, "bench_memory: %s at %s failed\n", names[m], settings[p]);
                return 1;
            }
            printf("%-20s %-16s %15.0f %10.0f %14.0f\n", names[m], settings[p], r[m][p].act_mib,
                   r[m][p].peak_mib, r[m][p].params * 8.0 / (1024.0 * 1024.0));
        }
    /* a model that only scores, at bf16: as it was, and frozen */
    printf("\n%-20s %-22s %15s %10s %10s\n", "model", "setting", "activations MiB", "held MiB",
           "peak MiB");
    Row sc[2][2];
    for (int m = 0; m < 2; m++)
        for (int f = 0; f < 2; f++) {
            const char *what = f ? "bf16, scores, frozen" : "bf16, scores";
            if (run_child(self, m, PW_PRECISION_BF16, 0, B, T, cuda, f ? SCORE_FROZEN : SCORE,
                          &sc[m][f])) {
                fprintf(stderr, "bench_memory: %s at %s failed\n", names[m], what);
                return 1;
            }
            printf("%-20s %-22s %15.0f %10.0f %10.0f\n", names[m], what, sc[m][f].act_mib,
                   sc[m][f].held_mib, sc[m][f].peak_mib);
        }
    printf("\nactivations: what the model allocates for its forward's kept tensors and its "
           "backward's scratch,\nthe same allocation on either device.\npeak: %s, measured:\n"
           "parameters, gradients, a bf16 model's bfloat16 copy of its weights, %s.\n"
           "params+grads: 8 bytes a parameter. scores: one forward of a model that only "
           "scores (one layer's\nactivations); frozen: its layers' matrices in bfloat16 alone; "
           "held: %s.\n",
           cuda ? "the device memory the kernel tables held at most"
                : "the process's resident high-water mark above what it held before the model",
           cuda ? "the bf16 operand workspaces and the cuBLASLt workspace"
                : "and the CPU bf16 products' rounded copies of their operands",
           cuda ? "the device peak" : "resident after the forward, above what it held before");
    printf("RESULT gpt2_act_bf16_vs_fp32=%.3f gpt2_peak_bf16_vs_fp32=%.3f "
           "gpt2_act_chunked_vs_fp32=%.3f qwen_act_bf16_vs_fp32=%.3f "
           "qwen_peak_bf16_vs_fp32=%.3f qwen_act_chunked_vs_fp32=%.3f "
           "gpt2_held_frozen_vs_scoring=%.3f qwen_held_frozen_vs_scoring=%.3f\n",
           r[0][1].act_mib / r[0][0].act_mib, r[0][1].peak_mib / r[0][0].peak_mib,
           r[0][2].act_mib / r[0][0].act_mib, r[1][1].act_mib / r[1][0].act_mib,
           r[1][1].peak_mib / r[1][0].peak_mib, r[1][2].act_mib / r[1][0].act_mib,
           sc[0][1].held_mib / sc[0][0].held_mib, sc[1][1].held_mib / sc[1][0].held_mib);
    return 0;
}
