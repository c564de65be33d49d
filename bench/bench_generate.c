/* bench_generate.c: sampling throughput with the KV cache against a baseline that reruns the
 * full forward over prompt plus response at every step, for a small and the GPT-2 124M shape;
 * and with `gpu`, GPT-2 124M's sampling throughput on a GPU (bench_gpu below). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_clock.h"
#include "bench_copy.h"
#include "bench_shapes.h"
#include "pw_blas_core.h"
#include "pw_generate.h"
#include "pw_model.h"
#include "pw_ops.h"
#ifdef PW_HAVE_CUDA
#include "pw_kernels_cuda.h" /* pw_cuda_set_cache_split, _group: the kernels' rows */
#endif

enum { P = 32, R = 64, PAD = 0 };

static void die(const char *what, const PwErr *err)
{
    fprintf(stderr, "%s: %s\n", what, err->msg);
    exit(1);
}

typedef struct Row {
    double cache_s, prefill_s, nocache_s;
    int mismatches; /* response tokens where the two ways disagree (float rounding only) */
} Row;

/* The baseline: each step runs pw_model_forward on the whole (B, P + r) sequence so far and
 * samples from its last column, with the same per-row streams as pw_generate, so both ways
 * should draw the same tokens. No stop token: every row runs R steps. */
static double nocache(PwModel *m, const int *prompt, int Bn, const PwSampleConfig *sc,
                      uint64_t seed, int *out)
{
    const int W = P + R, V = pw_model_arch(m)->vocab_size;
    int *seq = malloc(sizeof(int) * Bn * W);
    float *last = malloc(sizeof(float) * Bn * V);
    double *prob = malloc(sizeof(double) * V);
    int *work = malloc(sizeof(int) * V);
    uint64_t *rng = malloc(sizeof(uint64_t) * Bn);
    PwErr err;
    for (int b = 0; b < Bn; b++) rng[b] = pw_sample_stream(seed, (uint64_t)b);
    double t0 = bench_now();
    for (int r = 0; r < R; r++) {
        int T = P + r;
        for (int b = 0; b < Bn; b++) {
            memcpy(seq + b * T, prompt + b * P, sizeof(int) * P);
            memcpy(seq + b * T + P, out + b * R, sizeof(int) * r);
        }
        PwModelInput in = {seq, NULL, NULL, Bn, T, 1.0f};
        PwOutputs o = {.col0 = T - 1, .width = 1, .logits = last};
        if (pw_model_forward(m, &in, &o, &err)) die("forward", &err);
        for (int b = 0; b < Bn; b++)
            out[b * R + r] = pw_sample_row(prob, work, last + (size_t)b * V, V, sc, &rng[b]).token;
    }
    double t = bench_now() - t0;
    free(seq);
    free(last);
    free(prob);
    free(work);
    free(rng);
    return t;
}

static Row bench(PwModel *m, PwGen *g, int Bn)
{
    const int V = pw_model_arch(m)->vocab_size;
    int *prompt = malloc(sizeof(int) * Bn * P), *base = malloc(sizeof(int) * Bn * R);
    unsigned s = 2024;
    for (int i = 0; i < Bn * P; i++) {
        s = s * 1103515245u + 12345u;
        prompt[i] = (int)((s >> 8) % (unsigned)V);
    }
    PwGenConfig cfg = {.max_new_tokens = R, .stop_token = -1, .pad_token = PAD,
                       .sample = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f}, .seed = 7};
    PwErr err;
    Row row = {0};
    double t0 = bench_now();
    if (pw_kv_prefill(g->cache, prompt, NULL, Bn, P, &err)) die("prefill", &err);
    row.prefill_s = bench_now() - t0;
    t0 = bench_now();
    if (pw_generate(g, prompt, NULL, Bn, P, NULL, &cfg, &err)) die("generate", &err);
    row.cache_s = bench_now() - t0;
    row.nocache_s = nocache(m, prompt, Bn, &cfg.sample, cfg.seed, base);
    for (int i = 0; i < Bn * R; i++) row.mismatches += base[i] != g->tokens[i];
    free(prompt);
    free(base);
    return row;
}

/* The device's copy bandwidth: the median of 5 device-to-device copies of 1 GiB, counting the
 * bytes read and written, as bench_kernels_cuda does. 0 when there is no room. */
static double copy_gbs(void)
{
    const size_t n = (size_t)1 << 30;
    double s = bench_copy_seconds(PW_DEVICE_CUDA, n, 5);
    return s > 0 ? 2.0 * (double)n / s / 1e9 : 0.0;
}

/* Bn prompts of GP tokens spread over the vocabulary, the GPU rows' inputs */
static int *gpu_prompts(int Bn, int GP, int V)
{
    int *prompt = malloc(sizeof(int) * Bn * GP);
    if (!prompt) {
        fprintf(stderr, "bench_generate: out of host memory\n");
        exit(1);
    }
    for (int i = 0; i < Bn * GP; i++) prompt[i] = (i * 7919 + 13) % V;
    return prompt;
}

/* tokens/s of a bf16 model (the weights of seed 1) at batch Bn with a float32 KV cache, the
 * better of two runs */
static double fp32_cache_tps(const PwArch *a, const PwModelOpts *opts, int GP, int GR, int Bn)
{
    PwErr err;
    PwModelOpts o = *opts;
    o.kv_dtype = PW_KV_FP32;
    PwModel *m = pw_model_create(a, &o, &err);
    if (!m) die("gpt2-124M with a float32 KV cache", &err);
    pw_model_init_random(m, 1);
    PwGen *g = pw_gen_create(m, Bn, GP + GR, &err);
    if (!g) die("generator", &err);
    int *prompt = gpu_prompts(Bn, GP, a->vocab_size);
    PwGenConfig cfg = {.max_new_tokens = GR, .stop_token = -1, .pad_token = PAD,
                       .sample = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f}, .seed = 1};
    double best = 1e30;
    for (int rep = 0; rep < 2; rep++) {
        double t0 = bench_now();
        if (pw_generate(g, prompt, NULL, Bn, GP, NULL, &cfg, &err)) die("generate", &err);
        double t = bench_now() - t0;
        best = t < best ? t : best;
    }
    printf("%6d %10.3f %12.0f   (a float32 KV cache)\n", Bn, best, (double)Bn * GR / best);
    free(prompt);
    pw_gen_free(g);
    pw_model_free(m);
    return (double)Bn * GR / best;
}

/* `bench_generate gpu [bf16|fp32] [llama|qwen3]`: the GPU shape, GPT-2 124M on GPU 0
 * sampling 512 new tokens after 64-token prompts at batch 64 and 256 (temperature 1, no stop
 * token), through pw_generate as the generator role runs it; then batch 256 with the host looking
 * at the rows every 1, 4 and 64 steps instead of 16, with each decode step a CUDA graph, and with
 * the cache attention's tile kernel, and with a float32 cache. With `llama`, the Llama family at
 * Qwen2.5-0.5B's shape instead, batch 64 and 256, then 256 through the cache attention's group
 * kernel (pw_cuda_set_cache_group, the default) and then through its split kernel: its 2
 * key/value heads make the cache 7 times smaller a token than its 14 query heads would, so the
 * weights (1 GB in bfloat16) weigh most. With `qwen3`,
 * Qwen3-0.6B's shape the same way (16 query over 8 key/value heads of 128, each q and k head
 * normed). BENCH_GEN_BATCH=N samples at batch N alone, without the variations (a profile of one
 * batch's decode: PW_PROFILE_OPS, docs/performance.md). The decode's products with a bias go
 * through cuBLASLt's epilogue: BENCH_LT_TUNE=1 times the heuristic's algorithms on each shape's
 * first call (pw_cuda_set_lt_tune: at 64 and 256 rows the heuristic's first may not be the best;
 * batch 256 is run that way, and with K split in 4, in any case), BENCH_LT_BIAS16=0 keeps their
 * bias float32 (pw_cuda_set_lt_bias16), BENCH_LT_GELU=0 takes GPT-2's GELU from a kernel of its
 * own instead of the MLP product's epilogue (pw_cuda_set_lt_gelu, on by default), BENCH_SKINNY=1
 * takes the products of at most 256 rows through the few-row kernel of our own
 * (pw_cuda_set_skinny; batch 256 is run that way, launched and as graphs, in any case),
 * BENCH_PDL=1 launches the decode's kernels of our own as programmatic dependents
 * (pw_cuda_set_pdl: every row of the run; with BENCH_SKINNY=1, every kernel of a layer is ours; a
 * run of its own, so that a failure of it takes no figure of the plain run with it), BENCH_LN_VEC=1
 * takes LayerNorm's forward 16 bytes a load (pw_cuda_set_ln_vec).
 * Without a GPU it stops at the model's creation. */
static int bench_gpu(PwPrecision prec, int llama)
{
    enum { GP = 64, GR = 512 };
    int batches[] = {64, 256}, nb = 2;
    const char *one = getenv("BENCH_GEN_BATCH");
    if (one && *one) {
        char *end = NULL;
        long v = strtol(one, &end, 10);
        batches[0] = v >= 1 && v <= 1 << 20 && !*end ? (int)v : 0;
        nb = 1;
        if (batches[0] < 1) {
            fprintf(stderr, "bench_generate: BENCH_GEN_BATCH=%s: expected a batch size >= 1\n",
                    one);
            return 2;
        }
    }
    const char *tune = getenv("BENCH_LT_TUNE"), *b16 = getenv("BENCH_LT_BIAS16");
    int lt_tune = tune && atoi(tune) > 0, lt_bias16 = !(b16 && *b16 && atoi(b16) == 0);
    const char *ge = getenv("BENCH_LT_GELU");
    int lt_gelu = ge && *ge ? atoi(ge) > 0 : 1;
    const char *sk = getenv("BENCH_SKINNY"), *dl = getenv("BENCH_PDL");
    const char *lv = getenv("BENCH_LN_VEC");
    int ln_vec = lv && atoi(lv) > 0;
    int skinny = sk && atoi(sk) > 0, pdl = dl && atoi(dl) > 0;
#ifdef PW_HAVE_CUDA
    pw_cuda_set_skinny(skinny);
    pw_cuda_set_pdl(pdl);
    pw_cuda_set_lt_tune(lt_tune);
    pw_cuda_set_lt_bias16(lt_bias16);
    pw_cuda_set_lt_gelu(lt_gelu);
    pw_cuda_set_ln_vec(ln_vec);
#endif
    const PwArch arch = bench_shape(llama);
    const char *name = bench_shape_name(llama);
    const char *key = llama == 2 ? "qwen3-0.6b" : llama ? "qwen2.5-0.5b" : "gpt2-124m";
    PwErr err;
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = 1, .maxT = GP + GR, .device = PW_DEVICE_CUDA,
                     .precision = prec};
    PwModel *m = pw_model_create(&arch, &o, &err);
    if (!m) die(name, &err);
    pw_model_init_random(m, 1);
    double tps[2] = {0, 0}, roof[2] = {0, 0}, ck[5] = {0, 0, 0, 0, 0}, gbs = copy_gbs();
    /* the products timed, split, timed and graphed; the few-row kernel, and graphed */
    double split_cache_tps = 0.0, prod_tps[5] = {0, 0, 0, 0, 0};
    /* The roofline of the anchors: each decode step reads the bf16 weights and the bf16
     * KV cache of every row (a key and a value of each key/value head and layer per cached
     * token, 64 + 256 tokens on average over the 512 steps) at the copy bandwidth; tokens/s =
     * B / (bytes per step / bandwidth). */
    const double wbytes = 2.0 * (double)pw_model_num_weights(m);
    const int kv_heads = arch.n_kv_head > 0 ? arch.n_kv_head : arch.n_head;
    const double kv_width = (double)kv_heads * pw_arch_head_size(&arch);
    printf("generation on cuda:0 at %s, KV cache %s: %s, prompt %d tokens, %d new tokens "
           "per row, temperature 1, no stop token; device copy %.0f GB/s (read + write); bias "
           "products: %s, bias %s, GELU %s, few-row products %s\n%6s %10s %12s %14s %9s\n",
           pw_precision_name(prec),
           prec == PW_PRECISION_BF16 ? "bf16" : "fp32", name, GP, GR, gbs,
           lt_tune ? "algorithms timed" : "the heuristic's first", lt_bias16 ? "bf16" : "float32",
           lt_gelu ? "in the epilogue" : "a kernel", skinny ? "our kernel" : "cuBLAS", "B",
           "seconds", "tokens/s",
           "roofline tok/s", "fraction");
    for (int bi = 0; bi < nb; bi++) {
        int Bn = batches[bi];
        PwGen *g = pw_gen_create(m, Bn, GP + GR, &err);
        if (!g) die("generator", &err);
        int *prompt = gpu_prompts(Bn, GP, arch.vocab_size);
        PwGenConfig cfg = {.max_new_tokens = GR, .stop_token = -1, .pad_token = PAD,
                           .sample = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f},
                           .seed = 1};
        double best = 1e30;
        for (int rep = 0; rep < 2; rep++) { /* the first also warms the device up */
            double t0 = bench_now();
            if (pw_generate(g, prompt, NULL, Bn, GP, NULL, &cfg, &err)) die("generate", &err);
            double t = bench_now() - t0;
            best = t < best ? t : best;
        }
        tps[bi] = (double)Bn * GR / best;
        double kvbytes = 2.0 * 2 * arch.n_layer * kv_width * (double)Bn * (GP + GR / 2.0);
        double roof_tps = gbs > 0 ? Bn / ((wbytes + kvbytes) / (gbs * 1e9)) : 0.0;
        roof[bi] = roof_tps > 0 ? tps[bi] / roof_tps : 0.0;
        printf("%6d %10.3f %12.0f %14.0f %9.3f\n", Bn, best, tps[bi], roof_tps, roof[bi]);
        /* what the host's looks at the rows cost (PwGenConfig.check_every; the default on a GPU
         * is 16, the row above), the decode step as a CUDA graph (PwGenConfig.graph), and the
         * cache attention's tile kernel in place of its split kernel: once each at the largest
         * batch, the device warm */
#ifdef PW_HAVE_CUDA
        /* the Llama shape's grouped heads through the split kernel instead of the group kernel
         * (the default since an H200 timed both): once at the largest batch, the device warm */
        if (bi == 1 && nb == 2 && llama) {
            pw_cuda_set_cache_group(0);
            double t0 = bench_now();
            if (pw_generate(g, prompt, NULL, Bn, GP, NULL, &cfg, &err)) die("generate", &err);
            double t = bench_now() - t0;
            pw_cuda_set_cache_group(1);
            split_cache_tps = (double)Bn * GR / t;
            printf("%6d %10.3f %12.0f   (the cache attention's split kernel, the group kernel "
                   "off)\n", Bn, t, split_cache_tps);
        }
        /* the products' algorithms timed on each shape's first call, split forms among them
         * (the decode's products have a few dozen tiles for 132 SMs), K split in 4 on the
         * heuristic's first, and timed again with each step a CUDA graph (the generator role's
         * way: its plans made by the first row): a warm-up run makes the timed plans, then one
         * run each; then the few-row products' kernel of our own (pw_cuda_set_skinny: K split
         * in parts summed in the same launch), launched and as graphs */
        for (int k = 0; bi == 1 && nb == 2 && k < 5; k++) {
            pw_cuda_set_lt_tune(k == 0 || k == 2 ? 1 : lt_tune);
            pw_cuda_set_lt_split(k == 1 ? 4 : 0);
            pw_cuda_set_skinny(k >= 3 ? 1 : skinny);
            cfg.graph = k == 2 || k == 4;
            if (k == 0 && pw_generate(g, prompt, NULL, Bn, GP, NULL, &cfg, &err))
                die("generate", &err);
            double t0 = bench_now();
            if (pw_generate(g, prompt, NULL, Bn, GP, NULL, &cfg, &err)) die("generate", &err);
            double t = bench_now() - t0;
            pw_cuda_set_lt_tune(lt_tune);
            pw_cuda_set_lt_split(0);
            pw_cuda_set_skinny(skinny);
            cfg.graph = 0;
            prod_tps[k] = (double)Bn * GR / t;
            static const char *const what[5] = {
                "algorithms timed, split forms among them", "K split in 4",
                "algorithms timed; each step a CUDA graph", "the few-row kernel of our own",
                "the few-row kernel; each step a CUDA graph"};
            printf("%6d %10.3f %12.0f   (the products: %s)\n", Bn, t, prod_tps[k], what[k]);
        }
#endif
        for (int k = 0; bi == 1 && nb == 2 && !llama && k < 5; k++) {
            const int every[5] = {1, 4, 64, 16, 16}, graph[5] = {0, 0, 0, 1, 0};
            cfg.check_every = every[k];
            cfg.graph = graph[k];
#ifdef PW_HAVE_CUDA
            pw_cuda_set_cache_split(k != 4);
#else
            if (k == 4) break;
#endif
            double t0 = bench_now();
            if (pw_generate(g, prompt, NULL, Bn, GP, NULL, &cfg, &err)) die("generate", &err);
            double t = bench_now() - t0;
            ck[k] = (double)Bn * GR / t;
            printf("%6d %10.3f %12.0f   (the host looks every %d steps%s)\n", Bn, t, ck[k],
                   every[k], graph[k] ? "; each step a CUDA graph"
                             : k == 4 ? "; the cache attention's tile kernel" : "");
        }
#ifdef PW_HAVE_CUDA
        pw_cuda_set_cache_split(1);
#endif
        cfg.check_every = cfg.graph = 0;
        free(prompt);
        pw_gen_free(g);
    }
    pw_model_free(m);
    unsigned long plans = 0, split = 0, sk_calls = 0, sk_gelu = 0, sk_swiglu = 0, pdl_n = 0;
#ifdef PW_HAVE_CUDA
    pw_cuda_lt_plans(&plans, &split);
    pdl_n = pw_cuda_pdl_launches();
    sk_calls = pw_cuda_skinny_calls();
    sk_gelu = pw_cuda_skinny_gelu_calls(); /* GPT-2's MLP up-projection with GELU fused */
    sk_swiglu = pw_cuda_skinny_swiglu_calls(); /* the Llama family's [gate | up] with SwiGLU */
#endif
    if (nb == 1) {
        printf("RESULT shape=%s gpu_gen_tokens_per_s_b%d=%.0f roofline_fraction_b%d=%.3f "
               "copy_gbs=%.0f lt_gelu=%d pdl=%d pdl_launches=%lu ln_vec=%d\n",
               key, batches[0], tps[0], batches[0], roof[0], gbs, lt_gelu, pdl, pdl_n, ln_vec);
        return 0;
    }
    if (llama) {
        printf("RESULT shape=%s gpu_gen_tokens_per_s_b64=%.0f "
               "gpu_gen_tokens_per_s_b256=%.0f roofline_fraction_b64=%.3f "
               "roofline_fraction_b256=%.3f copy_gbs=%.0f b256_split_cache=%.0f b256_timed=%.0f "
               "b256_split4=%.0f b256_timed_graph=%.0f b256_skinny=%.0f b256_skinny_graph=%.0f "
               "lt_plans=%lu lt_plans_split=%lu skinny_calls=%lu skinny_swiglu_calls=%lu pdl=%d "
               "pdl_launches=%lu ln_vec=%d\n",
               key, tps[0], tps[1], roof[0], roof[1], gbs, split_cache_tps, prod_tps[0],
               prod_tps[1], prod_tps[2], prod_tps[3], prod_tps[4], plans, split, sk_calls,
               sk_swiglu, pdl, pdl_n, ln_vec);
        return 0;
    }
    /* what the bfloat16 cache buys: the same weights at batch 256 with a float32 cache */
    double f32 = prec == PW_PRECISION_BF16 ? fp32_cache_tps(&arch, &o, GP, GR, 256) : 0.0;
    /* the graph row's fraction of batch 256's roofline: the generator role's own decode (it
     * captures each step as a graph by default) */
    double graph_roof = tps[1] > 0 ? ck[3] * roof[1] / tps[1] : 0.0;
    printf("RESULT gpu_gen_tokens_per_s_b64=%.0f gpu_gen_tokens_per_s_b256=%.0f "
           "roofline_fraction_b64=%.3f roofline_fraction_b256=%.3f copy_gbs=%.0f "
           "b256_tokens_per_s_check1=%.0f check4=%.0f check64=%.0f graph=%.0f "
           "roofline_fraction_graph=%.3f cache_tiles=%.0f fp32_cache=%.0f lt_gelu=%d "
           "b256_timed=%.0f b256_split4=%.0f b256_timed_graph=%.0f "
           "roofline_fraction_timed_graph=%.3f b256_skinny=%.0f b256_skinny_graph=%.0f "
           "roofline_fraction_skinny_graph=%.3f lt_plans=%lu lt_plans_split=%lu "
           "skinny_calls=%lu skinny_gelu_calls=%lu pdl=%d pdl_launches=%lu ln_vec=%d\n", tps[0],
           tps[1],
           roof[0], roof[1], gbs, ck[0], ck[1], ck[2], ck[3], graph_roof, ck[4], f32, lt_gelu,
           prod_tps[0], prod_tps[1], prod_tps[2],
           tps[1] > 0 ? prod_tps[2] * roof[1] / tps[1] : 0.0, prod_tps[3], prod_tps[4],
           tps[1] > 0 ? prod_tps[4] * roof[1] / tps[1] : 0.0, plans, split, sk_calls, sk_gelu,
           pdl, pdl_n, ln_vec);
    return 0;
}

int main(int argc, char **argv)
{
    pw_blas_core_remedy(argv); /* the OpenBLAS kernels ppo_world runs (docs/kernels.md) */
    if (argc > 1 && !strcmp(argv[1], "gpu")) {
        PwPrecision prec;
        int llama;
        if (bench_gpu_args(argc, argv, 2, "bench_generate", &prec, &llama)) return 2;
        return bench_gpu(prec, llama);
    }
    /* [small|124M|all] [max batch]: the no-cache baseline at 124M and batch 32 takes hours on a
     * couple of cores, so a small machine runs a subset */
    const char *only = argc > 1 ? argv[1] : "all";
    int maxbatch = argc > 2 ? atoi(argv[2]) : 32;
    struct {
        const char *name;
        PwArch cfg;
    } shapes[] = {
        {"small", {.family = PW_FAMILY_GPT2, .n_layer = 4, .n_head = 4, .n_embd = 256,
                   .vocab_size = 8192, .n_positions = 256}},
        {"124M", {.family = PW_FAMILY_GPT2, .n_layer = 12, .n_head = 12, .n_embd = 768,
                  .vocab_size = 50257, .n_positions = 1024}},
    };
    const int batches[] = {1, 8, 32};
    double last_speedup = 0.0, last_tok = 0.0, last_base = 0.0;
    const char *last_shape = "none";
    int last_batch = 0;

    printf("generation: prompt %d tokens, %d new tokens per row, temperature 1, no stop token\n",
           P, R);
    printf("%-6s %4s %10s %12s %12s %14s %8s %9s\n", "shape", "B", "prefill_s", "cache_tok/s",
           "decode_tok/s", "no-cache_tok/s", "speedup", "mismatch");
    for (int si = 0; si < 2; si++) {
        if (strcmp(only, "all") && strcmp(only, shapes[si].name)) continue;
        PwErr err;
        PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = 32, .maxT = P + R};
        PwModel *m = pw_model_create(&shapes[si].cfg, &o, &err);
        if (!m) die(shapes[si].name, &err);
        pw_model_init_random(m, 1);
        PwGen *g = pw_gen_create(m, 32, P + R, &err);
        if (!g) die(shapes[si].name, &err);
        for (int bi = 0; bi < 3 && batches[bi] <= maxbatch; bi++) {
            int Bn = batches[bi];
            Row row = bench(m, g, Bn);
            double tok = (double)Bn * R;
            double speedup = row.nocache_s / row.cache_s;
            printf("%-6s %4d %10.4f %12.1f %12.1f %14.1f %8.2f %9d\n", shapes[si].name, Bn,
                   row.prefill_s, tok / row.cache_s, tok / (row.cache_s - row.prefill_s),
                   tok / row.nocache_s, speedup, row.mismatches);
            fflush(stdout);
            last_speedup = speedup;
            last_tok = tok / row.cache_s;
            last_base = tok / row.nocache_s;
            last_shape = shapes[si].name;
            last_batch = Bn;
        }
        pw_gen_free(g);
        pw_model_free(m);
    }
    /* the headline is the last (largest) configuration run */
    printf("RESULT cache_speedup=%.2f shape=%s batch=%d cache_tok_s=%.1f nocache_tok_s=%.1f\n",
           last_speedup, last_shape, last_batch, last_tok, last_base);
    return 0;
}
