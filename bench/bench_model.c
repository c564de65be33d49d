/* bench_model.c: GPT-2 forward+backward throughput on the CPU, through the model interface, next
 * to plain sgemm in the same run, so the model's GFLOP/s reads as a fraction of what BLAS does;
 * and with `gpu`, training steps of GPT-2 124M or of the Llama family at Qwen2.5-0.5B's shape on a
 * GPU and their MFU (bench_gpu below). */
#include <cblas.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"
#include "bench_rss.h"
#include "bench_shapes.h"
#include "pw_blas_core.h"
#include "pw_model.h"
#include "pw_ops_profile.h"
#ifdef PW_HAVE_CUDA
#include "pw_kernels_cuda.h" /* pw_cuda_set_flash_blocks: BENCH_FLASH_BLOCKS */
#endif

/* the batch: B = 4, T = 256 on the CPU; the GPU mode's default is B = 16, T = 1024 */
static int B = 4, T = 256;

/* What the process holds before any model: code, libraries, OpenBLAS's thread buffers. The
 * model's own footprint is the peak above this. */
static double baseline_mib;

typedef struct Row {
    const char *name;
    size_t params;
    double sec_per_iter, tokens_per_s, gflops, rss_mib;
    double bound_mib; /* params x 16 bytes (weights, grads, two AdamW moments) + activations */
    double sgemm;     /* best plain-sgemm GFLOP/s measured right before and after this model */
} Row;

static double bench_sgemm(void);

static void die(const char *what, const PwErr *err)
{
    fprintf(stderr, "%s: %s\n", what, err->msg);
    exit(1);
}

/* One forward + backward of the mean next-token loss, as SFT runs it: logp (B,T) comes back
 * gathered, dlogp = -w goes in. */
static double step(PwModel *m, const int *inp, const int *targets, const float *w, float *logp,
                   const float *dlogp)
{
    PwErr err;
    PwModelInput in = {inp, NULL, targets, B, T, 1.0f};
    PwOutputs out = {.col0 = 0, .width = T, .logp = logp};
    if (pw_model_forward(m, &in, &out, &err)) die("forward", &err);
    double loss = pw_lm_loss(logp, w, targets, B * T);
    PwOutputGrads g = {.dlogp = dlogp};
    if (pw_model_zero_grad(m, &err) || pw_model_backward(m, &g, &err)) die("backward", &err);
    return loss;
}

/* B x T random tokens of a vocabulary of V, their next-token targets, the mean-loss weights w,
 * dlogp = -w, and room for the log-probs */
typedef struct Batch {
    int *inp, *targets;
    float *w, *logp, *dlogp;
} Batch;

static Batch make_batch(int V)
{
    size_t n = (size_t)B * T;
    Batch b = {calloc(n, sizeof(int)), calloc(n, sizeof(int)), calloc(n, sizeof(float)),
               calloc(n, sizeof(float)), calloc(n, sizeof(float))};
    if (!b.inp || !b.targets || !b.w || !b.logp || !b.dlogp) {
        fprintf(stderr, "out of memory for a batch of %zu tokens\n", n);
        exit(1);
    }
    unsigned s = 12345;
    for (size_t i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        b.inp[i] = (int)((s >> 8) % (unsigned)V);
    }
    pw_lm_next_token_targets(b.targets, b.inp, NULL, B, T);
    pw_lm_mean_weights(b.w, b.targets, B * T);
    for (size_t i = 0; i < n; i++) b.dlogp[i] = -b.w[i];
    return b;
}

static void free_batch(Batch *b)
{
    free(b->inp);
    free(b->targets);
    free(b->w);
    free(b->logp);
    free(b->dlogp);
}

/* vocab_multiple: 0 pads the vocabulary to a multiple of 64 (the default), 1 leaves it at V */
static Row bench_model(const char *name, PwArch cfg, int iters, int vocab_multiple)
{
    PwErr err;
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = B, .maxT = T, .vocab_multiple = vocab_multiple};
    PwModel *m = pw_model_create(&cfg, &o, &err);
    if (!m) die(name, &err);
    pw_model_init_random(m, 1);
    Batch bt = make_batch(cfg.vocab_size);
    int *inp = bt.inp, *targets = bt.targets;
    float *w = bt.w, *logp = bt.logp, *dlogp = bt.dlogp;

    /* warm-up: first touch of every buffer, and one AdamW step so that the optimiser's moments
     * count in the peak memory as they do in training */
    double loss = step(m, inp, targets, w, logp, dlogp);
    PwAdamWConfig opt = {.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.1f, .grad_clip = 1.0f};
    int rc = pw_model_adamw_step(m, &opt, 1, NULL, &err);
    if (rc == PW_ADAMW_SKIPPED) pw_errf(&err, "the gradient is not finite");
    if (rc != PW_ADAMW_APPLIED) die("AdamW", &err);
    /* The machine is shared: the best iteration, and the best sgemm window around the model,
     * compare the two at their least disturbed. */
    double sgemm = bench_sgemm(), sec = 1e30;
    for (int i = 0; i < iters; i++) {
        double t0 = bench_now();
        loss = step(m, inp, targets, w, logp, dlogp);
        double t = bench_now() - t0;
        if (t < sec) sec = t;
    }
    double after = bench_sgemm();
    if (after > sgemm) sgemm = after;
    /* activations: what forward keeps and backward's one-layer scratch (the model says), plus
     * the CPU attention backward's bounded work space (16 MiB) */
    double acts = (double)pw_model_activation_bytes(m) + 16.0 * 1024 * 1024;
    size_t np = pw_model_num_params(m); /* the buffers hold the padding rows too */
    double bound = (16.0 * (double)np + acts) / (1024.0 * 1024.0);
    Row r = {name, pw_model_num_weights(m), sec, B * T / sec, pw_model_flops_per_token(m, T) * B * T / sec * 1e-9,
             peak_rss_mib() - baseline_mib, bound, sgemm};
    fprintf(stderr, "%s: loss %.4f (ln V = %.4f)\n", name, loss, __builtin_log(cfg.vocab_size));
    free_batch(&bt);
    pw_model_free(m);
    /* the next row's high-water mark is its own model's: glibc keeps freed blocks of this one
     * resident in its heap (6 MiB after the two small rows, counted in the 124M row's RSS) */
    malloc_trim(0);
    return r;
}

/* OpenBLAS touches its work buffers (about 90 MiB with 2 threads) only on large products, so
 * run the LM head's three products once before the baseline is read: the memory that remains
 * is the library's, not the model's. The operands are freed again. */
static void warm_openblas(int V, int C)
{
    const int N = B * T;
    float *x = calloc((size_t)N * C, sizeof(float)), *w = calloc((size_t)V * C, sizeof(float));
    float *y = calloc((size_t)N * V, sizeof(float));
    if (!x || !w || !y) {
        fprintf(stderr, "out of memory warming OpenBLAS\n");
        exit(1);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, V, C, 1.0f, x, C, w, C, 0.0f, y, V);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, V, 1.0f, y, V, w, C, 0.0f, x, C);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, C, N, 1.0f, y, V, x, C, 0.0f, w, C);
    free(x);
    free(w);
    free(y);
}

/* out (1024, 768) = inp (1024, 768) . W (768, 768)^T, the shape of the model's attention
 * projection at B*T = 1024 tokens. */
static double bench_sgemm(void)
{
    /* best of five 0.2 s windows */
    const int M = 1024, K = 768, N = 768;
    float *a = malloc((size_t)M * K * sizeof(float)), *bm = malloc((size_t)N * K * sizeof(float));
    float *c = malloc((size_t)M * N * sizeof(float));
    for (size_t i = 0; i < (size_t)M * K; i++) a[i] = (float)((i * 7) % 13) * 0.01f;
    for (size_t i = 0; i < (size_t)N * K; i++) bm[i] = (float)((i * 5) % 11) * 0.01f;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, bm, K, 0.0f, c, N);
    double best = 0.0;
    for (int win = 0; win < 5; win++) {
        int reps = 0;
        double t0 = bench_now(), t;
        do {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, bm, K,
                        0.0f, c, N);
            reps++;
        } while ((t = bench_now() - t0) < 0.2);
        double gf = 2.0 * M * N * K * reps / t * 1e-9;
        if (gf > best) best = gf;
    }
    free(a);
    free(bm);
    free(c);
    return best;
}

/* The H100's dense bf16 peak (989 TFLOP/s, SXM), the denominator of the GPU mode's MFU */
#define GPU_PEAK_TFLOPS 989.0

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && atoi(v) > 0 ? atoi(v) : dflt;
}

/* the bias products cuBLASLt's epilogue has taken and not taken so far, and the MLP products
 * its GELU epilogues have taken (none without CUDA) */
static void epilogue_calls(unsigned long *fused, unsigned long *unfused, unsigned long *gelu)
{
#ifdef PW_HAVE_CUDA
    pw_cuda_epilogue_calls(fused, unfused);
    pw_cuda_gelu_epilogue_calls(gelu, NULL);
#else
    *fused = *unfused = *gelu = 0;
#endif
}

/* `bench_model ITERS gpu [bf16|fp32] [llama]`: training steps on GPU 0 (forward, backward,
 * AdamW) of GPT-2 124M at B = BENCH_B (16), T = BENCH_T (1024), or with `llama` of the Llama
 * family at Qwen2.5-0.5B's shape (random weights) at B = BENCH_B (8), T = BENCH_T (1024); the LM
 * head BENCH_LM_CHUNK rows at a time (0, the default: all; PwModelOpts.lm_chunk), the
 * tensor-core attention's build for BENCH_FLASH_BLOCKS blocks an SM (2, the default, or 3:
 * pw_cuda_set_flash_blocks), the bias-epilogue products' algorithms timed on first use with
 * BENCH_LT_TUNE=1 (pw_cuda_set_lt_tune), the bf16-output ones' bias kept in float32 with
 * BENCH_LT_BIAS16=0 (pw_cuda_set_lt_bias16; rounded to bfloat16 by default), GPT-2's GELU in
 * the MLP products' epilogues unless BENCH_LT_GELU=0 (pw_cuda_set_lt_gelu; on by default), the
 * attention's backward with dq fused into its dk/dv kernel with BENCH_FLASH_FUSED_BWD=1
 * (pw_cuda_set_flash_fused_bwd; off by default), the attention on Hopper's warpgroup products
 * with BENCH_FLASH_WGMMA=1 (pw_cuda_set_flash_wgmma; off by default), LayerNorm's forward 16 bytes
 * a load with BENCH_LN_VEC=1 (pw_cuda_set_ln_vec; off by default), the bias gradients' column
 * sums 2 bytes a thread a row with BENCH_COLSUM_VEC=0 (pw_cuda_set_colsum_vec; 8 columns a thread
 * by default), the backward's products through cuBLASLt with BENCH_LT_ALL=1 (pw_cuda_set_lt_all:
 * with BENCH_LT_TUNE=1 the weight gradients' plans timed too, split-K forms among them), each
 * cuBLASLt plan and what its timing found printed with BENCH_LT_REPORT=1; MFU
 * with the model's flops per token (6 x matmul parameters + 12 L C T) over the bf16 peak. The
 * RESULT line counts the timed steps' bias products that cuBLASLt's epilogue took and those it
 * did not, the MLP products its GELU epilogues took, and cuBLASLt's plans (with
 * BENCH_LT_TUNE=1 split-K forms are among the timed ones) and those that split K. A profile
 * (PW_PROFILE_OPS) leaves the warm-up out. Without a GPU it stops at the model's creation, with
 * its message. */
static int bench_gpu(int iters, PwPrecision prec, int llama)
{
    PwArch arch = bench_shape(llama);
    const char *name = bench_shape_name(llama);
    B = env_int("BENCH_B", llama ? 8 : 16);
    T = env_int("BENCH_T", 1024);
    if (T > arch.n_positions) arch.n_positions = T;
    PwErr err;
    int chunk = getenv("BENCH_LM_CHUNK") ? atoi(getenv("BENCH_LM_CHUNK")) : 0;
    int blocks = env_int("BENCH_FLASH_BLOCKS", 2);
    int tune = env_int("BENCH_LT_TUNE", 0);
    const char *b16 = getenv("BENCH_LT_BIAS16"); /* 0 turns the default bf16 bias off */
    int bias16 = b16 && *b16 ? atoi(b16) != 0 : 1;
    int gelu = env_int("BENCH_LT_GELU", 1);
    int fused_bwd = env_int("BENCH_FLASH_FUSED_BWD", 0);
    int wgmma = env_int("BENCH_FLASH_WGMMA", 0);
    int ln_vec = env_int("BENCH_LN_VEC", 0);
    int colsum_vec = env_int("BENCH_COLSUM_VEC", 1);
    int lt_all = env_int("BENCH_LT_ALL", 0), lt_report = env_int("BENCH_LT_REPORT", 0);
    unsigned long wg_calls = 0; /* the attention calls the warpgroup kernels took */
#ifdef PW_HAVE_CUDA
    pw_cuda_set_lt_all(lt_all);
    pw_cuda_set_flash_fused_bwd(fused_bwd);
    pw_cuda_set_flash_wgmma(wgmma);
    pw_cuda_set_ln_vec(ln_vec);
    pw_cuda_set_colsum_vec(colsum_vec);
    wg_calls = pw_cuda_flash_wgmma_calls();
    pw_cuda_set_flash_blocks(blocks);
    pw_cuda_set_lt_tune(tune);
    pw_cuda_set_lt_bias16(bias16);
    pw_cuda_set_lt_gelu(gelu);
#endif
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = B, .maxT = T, .device = PW_DEVICE_CUDA,
                     .precision = prec, .lm_chunk = chunk > 0 ? chunk : 0};
    PwModel *m = pw_model_create(&arch, &o, &err);
    if (!m) die(name, &err);
    pw_model_init_random(m, 1);
    size_t n = (size_t)B * T;
    Batch bt = make_batch(arch.vocab_size);
    PwAdamWConfig opt = {.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.1f, .grad_clip = 1.0f};
    double sec = 1e30, loss = 0.0;
    unsigned long fused0 = 0, unfused0 = 0, fused1 = 0, unfused1 = 0, gelu0 = 0, gelu1 = 0;
    for (int i = 0; i <= iters; i++) { /* i = 0: the warm-up */
        double t0 = bench_now();
        loss = step(m, bt.inp, bt.targets, bt.w, bt.logp, bt.dlogp);
        if (pw_model_adamw_step(m, &opt, i + 1, NULL, &err) != PW_ADAMW_APPLIED)
            die("AdamW", &err);
        pw_model_sync(m); /* the step's queued work done */
        double t = bench_now() - t0;
        if (i > 0 && t < sec) sec = t;
        if (i == 0) pw_ops_profile_reset(); /* a profile (PW_PROFILE_OPS) of the timed steps */
        if (i == 0) epilogue_calls(&fused0, &unfused0, &gelu0);
    }
    epilogue_calls(&fused1, &unfused1, &gelu1);
    unsigned long plans = 0, split = 0; /* cuBLASLt's plans, and those that split K */
#ifdef PW_HAVE_CUDA
    pw_cuda_lt_plans(&plans, &split);
    wg_calls = pw_cuda_flash_wgmma_calls() - wg_calls;
#endif
    double tflops = pw_model_flops_per_token(m, T) * (double)n / sec * 1e-12;
    printf("%s training step on cuda:0 at %s, B=%d T=%d, LM head %d rows at a time, "
           "attention built for %d blocks an SM, epilogue products %s, bf16-output ones with a "
           "%s bias, GELU %s, attention backward %s, attention on %s, best of %d after one "
           "warm-up (loss %.4f)\n\n",
           name, pw_precision_name(prec), B, T, chunk > 0 && chunk < B * T ? chunk : B * T,
           blocks, tune ? "timed on first use" : "the heuristic's first",
           bias16 ? "bfloat16" : "float32", gelu ? "in the epilogues" : "in kernels",
           fused_bwd ? "with dq fused" : "in two kernels",
           wgmma ? "warpgroup products where the device has them" : "mma.sync", iters, loss);
#ifdef PW_HAVE_CUDA
    if (lt_report) { /* what each product's plan is, and what timing found (BENCH_LT_TUNE=1) */
        pw_cuda_lt_plan_report(stdout);
        printf("\n");
    }
#else
    (void)lt_report;
#endif
    printf("%-10s %9s %12s %9s %7s\n", "precision", "s/step", "tokens/s", "TFLOP/s", "MFU");
    printf("%-10s %9.4f %12.0f %9.1f %6.1f%%\n\n", pw_precision_name(prec), sec, n / sec, tflops,
           100.0 * tflops / GPU_PEAK_TFLOPS);
    printf("RESULT gpu_mfu=%.4f tokens_per_s=%.0f tflops=%.2f shape=%s lt_tune=%d lt_bias16=%d "
           "lt_gelu=%d flash_fused_bwd=%d flash_wgmma=%d wgmma_calls=%lu epilogue_fused=%lu "
           "epilogue_unfused=%lu gelu_fused=%lu lt_plans=%lu lt_plans_split=%lu ln_vec=%d "
           "colsum_vec=%d lt_all=%d\n",
           tflops / GPU_PEAK_TFLOPS, n / sec, tflops,
           llama == 2 ? "qwen3-0.6b" : llama ? "qwen2.5-0.5b" : "gpt2-124m", tune, bias16, gelu,
           fused_bwd, wgmma, wg_calls, fused1 - fused0, unfused1 - unfused0, gelu1 - gelu0, plans,
           split, ln_vec, colsum_vec, lt_all);
    free_batch(&bt);
    pw_model_free(m);
    return 0;
}

int main(int argc, char **argv)
{
    pw_blas_core_remedy(argv); /* the OpenBLAS kernels ppo_world runs (docs/kernels.md) */
    /* [iters] [gpt2|llama|qwen3]: GPT-2 small and 124M (the default), or the Llama family at
     * Qwen2.5-0.5B's shape (random weights), alone, so that its peak memory is its own; or at
     * Qwen3-0.6B's, then the same shape without the q/k norms (what they cost, in one run) */
    int iters = argc > 1 ? atoi(argv[1]) : 3;
    if (iters < 1) iters = 1;
    if (argc > 2 && !strcmp(argv[2], "gpu")) {
        PwPrecision prec;
        int llama;
        if (bench_gpu_args(argc, argv, 3, "bench_model", &prec, &llama)) return 2;
        return bench_gpu(iters, prec, llama);
    }
    int llama = argc > 2 && !strcmp(argv[2], "llama")   ? 1
                : argc > 2 && !strcmp(argv[2], "qwen3") ? 2
                                                        : 0;
    const char *threads = getenv("OPENBLAS_NUM_THREADS");
    printf("%s forward+backward, B=%d T=%d, best of %d iterations after one warm-up, "
           "OPENBLAS_NUM_THREADS=%s\n\n", llama ? "Llama family" : "GPT-2", B, T, iters,
           threads ? threads : "(default)");

    PwArch small = {.family = PW_FAMILY_GPT2, .n_layer = 4, .n_head = 4, .n_embd = 256,
                    .vocab_size = 50257, .n_positions = 1024};
    PwArch gpt2 = bench_gpt2_124m(), qwen = bench_shape(llama ? llama : 1);
    /* the LM head's products are as wide as the padded vocabulary (a multiple of 64) */
    int V = llama ? qwen.vocab_size : gpt2.vocab_size;
    warm_openblas((V + PW_VOCAB_MULTIPLE - 1) / PW_VOCAB_MULTIPLE * PW_VOCAB_MULTIPLE,
                  llama ? qwen.n_embd : gpt2.n_embd);
    baseline_mib = rss_now_mib();
    Row rows[3];
    int n = 0;
    double pad_speedup = 0.0, norm_cost = 0.0;
    if (llama == 2) {
        /* the smaller first: RSS is the process's high-water mark, so the second row's is its
         * own only when it is the larger */
        PwArch plain = qwen;
        plain.qk_norm = 0, plain.hf_type = PW_HF_LLAMA;
        rows[n++] = bench_model("qwen3 no q/k norms", plain, iters, 0);
        rows[n++] = bench_model("qwen3-0.6B shape", qwen, iters, 0);
        norm_cost = rows[1].sec_per_iter / rows[0].sec_per_iter;
    } else if (llama) {
        rows[n++] = bench_model("qwen2.5-0.5B shape", qwen, iters, 0);
    } else {
        /* the padded vocabulary (50304 rows) against exactly 50257, in the same run */
        rows[n++] = bench_model("small, V unpadded", small, iters, 1);
        rows[n++] = bench_model("small (4x256)", small, iters, 0);
        pad_speedup = rows[0].sec_per_iter / rows[1].sec_per_iter;
        rows[n++] = bench_model("gpt2-124M (12x768)", gpt2, iters, 0);
    }

    printf("%-20s %11s %8s %10s %9s %11s %7s %9s %10s\n", "model", "parameters", "s/iter",
           "tokens/s", "GFLOP/s", "sgemm GF/s", "ratio", "model MiB", "bound MiB");
    for (int i = 0; i < n; i++)
        printf("%-20s %11zu %8.3f %10.1f %9.2f %11.2f %7.3f %9.0f %10.0f%s\n", rows[i].name,
               rows[i].params, rows[i].sec_per_iter, rows[i].tokens_per_s, rows[i].gflops,
               rows[i].sgemm, rows[i].gflops / rows[i].sgemm, rows[i].rss_mib, rows[i].bound_mib,
               rows[i].rss_mib > rows[i].bound_mib ? "  OVER" : "");
    printf("\nGFLOP/s count 6 x matmul parameters (incl. the LM head, at the true V) x tokens "
           "plus attention 12 x L x C x T per token; parameters are the true count, the buffers\n"
           "hold the vocabulary padded to a multiple of 64 (except the unpadded row). sgemm is a 1024x768x768 product (the attention\n"
           "projection's shape) timed in 0.2 s windows just before and after each model. RSS is "
           "the model's: the process's high-water mark less what it held before any model (%.0f MiB of\n"
           "code, libraries and OpenBLAS buffers); bound = parameters x 16 bytes + activations.\n",
           baseline_mib);
    const Row *r = &rows[n - 1];
    printf("RESULT %s=%.2f sgemm_gflops=%.2f ratio=%.3f rss_mib=%.0f bound_mib=%.0f",
           llama == 2 ? "qwen3_gflops" : llama ? "llama_gflops" : "model_gflops", r->gflops,
           r->sgemm, r->gflops / r->sgemm, r->rss_mib, r->bound_mib);
    if (pad_speedup > 0.0) printf(" padded_vs_unpadded_small=%.3f", pad_speedup);
    if (norm_cost > 0.0) printf(" qk_norm_time_ratio=%.3f", norm_cost);
    printf("\n");
    return 0;
}
