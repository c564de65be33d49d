/* test_cuda_model.c: the same model built through the model interface on the CPU and on the GPU
 * (fp32), for GPT-2 and for two of the Llama family (Qwen2's layout: grouped-query attention,
 * q/k/v biases, an untied LM head; Llama 3's: one key/value head, tied, llama3 rope scaling):
 * one forward with every head, one backward, one AdamW step (on the CPU's gradients) and a
 * KV-cache prefill and decode agree to 1e-5; generation gives the CPU's tokens (and the same
 * with its decode step as a CUDA graph); a GPU model saves, offloads its moments and loads back
 * unchanged; at precision bf16 forward and gradients agree to 1e-2 (GPT-2's also with GELU in
 * cuBLASLt's epilogues), and so do the logits over
 * each model's bfloat16 KV cache; with the LM head in chunks of 5 rows, at fp32 and bf16; and
 * with the forward keeping only the layers' inputs (recompute) or one layer (none); where the
 * device runs Hopper's warpgroup products, a bf16 GPT-2 with heads of 64 with its attention on
 * them. Shares of the optimiser, of the bf16 master weights and of the gradients (two GPU models
 * put together as the roles do) are the whole model's bit for bit. */
#include <sys/stat.h>

#include "cutest.h"
#include "pw_device.h"
#include "pw_generate.h"
#include "pw_model.h"

enum { B = 3, T = 12, V = 61 };

static const int mask[B * T] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,
};

typedef struct Outs {
    float logp[B * T], entropy[B * T], value[B * T], score[B], logits[B * T * V];
} Outs;

/* lm_chunk: the LM head's rows at a time (PwModelOpts.lm_chunk; 0: all); acts: what its
 * forward keeps (PwModelOpts.acts); frozen: PwModelOpts.frozen (acts none) */
static PwModel *make_frozen(PwDevice dev, const PwArch *a, PwPrecision prec, int lm_chunk,
                            PwActs acts, int frozen)
{
    PwErr err;
    PwModelOpts o = {.heads = PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE, .maxB = B, .maxT = T,
                     .device = dev, .device_id = 0, .seed = 5, .precision = prec,
                     .lm_chunk = lm_chunk, .acts = acts, .frozen = frozen};
    PwModel *m = pw_model_create(a, &o, &err);
    CHECK(m != NULL, "%s model: %s", dev == PW_DEVICE_CUDA ? "cuda" : "cpu", err.msg);
    if (!m) exit(1);
    pw_model_init_random(m, 5); /* on the host, then uploaded: the same weights on both */
    return m;
}

static PwModel *make_acts(PwDevice dev, const PwArch *a, PwPrecision prec, int lm_chunk,
                          PwActs acts)
{
    return make_frozen(dev, a, prec, lm_chunk, acts, 0);
}

static PwModel *make_chunked(PwDevice dev, const PwArch *a, PwPrecision prec, int lm_chunk)
{
    return make_acts(dev, a, prec, lm_chunk, PW_ACTS_KEEP);
}

static PwModel *make_at(PwDevice dev, const PwArch *a, PwPrecision prec)
{
    return make_chunked(dev, a, prec, 0);
}

static PwModel *make(PwDevice dev, const PwArch *a) { return make_at(dev, a, PW_PRECISION_FP32); }

/* A host copy of a model tensor wherever it lives. */
static float *host_copy(PwTensor t)
{
    size_t bytes = pw_tensor_bytes(&t);
    float *h = cu_host(bytes);
    /* the model's stream is a non-blocking one: the default stream's copy does not wait for it */
    if (t.device == PW_DEVICE_CUDA) PW_CUDA_CHECK(cudaDeviceSynchronize());
    if (t.device == PW_DEVICE_CUDA)
        PW_CUDA_CHECK(cudaMemcpy(h, t.data, bytes, cudaMemcpyDeviceToHost));
    else
        memcpy(h, t.data, bytes);
    return h;
}

static void compare_tol(const char *what, const float *got, const float *want, size_t n,
                        double tol)
{
    double e = pw_max_rel_err_ff(got, want, n, CU_FLOOR);
    CHECK(e <= tol, "%s: relative error %.3g > %.1g", what, e, tol);
    printf("  %-44s rel err %.3g\n", what, e);
}

static void compare_host(const char *what, const float *got, const float *want, size_t n)
{
    compare_tol(what, got, want, n, CU_TOL_F32);
}

/* The CPU model's gradients copied into the GPU model's, so that an AdamW step is compared on
 * the same input (the gradients themselves are compared just before). On an H100, steps on each
 * device's own gradients gave parameters 1.1e-5 and 1.5e-5 apart (relative, at parameters above
 * 1e-2) while the gradients agreed to 3.2e-7: Adam divides each gradient by |g| + eps, so an
 * element whose gradient is near eps (1e-8) turns a difference of 1e-13 between the two
 * backwards into one of 1e-5 in its update, the likely cause. */
static void same_grads(PwModel *gpu, PwModel *cpu)
{
    PwTensor gg = pw_model_grads(gpu), gc = pw_model_grads(cpu);
    CHECK(pw_tensor_bytes(&gg) == pw_tensor_bytes(&gc), "gradient buffers differ in size");
    PW_CUDA_CHECK(cudaMemcpy(gg.data, gc.data, pw_tensor_bytes(&gc), cudaMemcpyHostToDevice));
}

/* What a backward reports as ready (pw_model.h, PwGradReady). */
typedef struct Ready {
    int calls, nr, streams;
    PwGradRange r[512];
} Ready;

static void ready_record(void *ctx, const PwGradRange *r, int n, void *stream)
{
    Ready *c = ctx;
    c->calls++;
    c->streams += stream != NULL;
    for (int i = 0; i < n && c->nr < 512; i++) c->r[c->nr++] = r[i];
}

static void forward(PwModel *m, const int *tok, const int *tgt, Outs *o)
{
    PwErr err;
    PwModelInput in = {tok, mask, tgt, B, T, 1.0f};
    PwOutputs out = {0, T, o->logp, o->entropy, o->value, o->score, o->logits};
    CHECK(pw_model_forward(m, &in, &out, &err) == 0, "forward: %s", err.msg);
}

/* precision bf16: the CPU's products of rounded operands (the reference, tests/kernels) and the
 * GPU's tensor-core products agree to bf16's tolerance: both round the same operands, and only
 * the float32 accumulation order and, through it, a rare rounding boundary differ */
/* A model larger than any GPU (GPT-2 shaped, 48 layers of 12288 channels: 350 GB of float32
 * parameters, under the 1 TiB a model may hold) is refused by the allocation that fails, with
 * how much it needed and how much the device had. */
static void check_no_room(void)
{
    PwArch big = {.family = PW_FAMILY_GPT2, .n_layer = 48, .n_head = 96, .n_embd = 12288,
                  .vocab_size = 50257, .n_positions = 2048};
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = 1, .maxT = 8, .device = PW_DEVICE_CUDA};
    PwErr err = {{0}};
    PwModel *m = pw_model_create(&big, &o, &err);
    CHECK(m == NULL && strstr(err.msg, "cuda:0: no room for") && strstr(err.msg, "MiB needed") &&
              strstr(err.msg, "MiB free of"),
          "a 350 GB model on the GPU: '%s'", m ? "(created)" : err.msg);
    printf("too large for the GPU: %s\n", err.msg);
    pw_model_free(m);
}

/* The KV cache of each model (what its precision makes: fp32, or bf16 slots for a bf16 model):
 * prefill the three rows' real tokens, then two decode steps, logits against the CPU's */
static void check_cache(PwModel *cpu, PwModel *gpu, const int *tok, double tol, PwKVDtype want)
{
    PwErr err;
    PwKVCache *cc = pw_kv_create(cpu, B, T, &err), *cg = pw_kv_create(gpu, B, T, &err);
    CHECK(cc && cg, "KV caches: %s", err.msg);
    if (!cc || !cg) return;
    CHECK(pw_kv_dtype(cg) == want && pw_kv_dtype(cc) == want, "GPU cache %s, CPU cache %s, "
          "expected %s", pw_kv_dtype_name(pw_kv_dtype(cg)), pw_kv_dtype_name(pw_kv_dtype(cc)),
          pw_kv_dtype_name(want));
    enum { P = T - 2 };
    int prompt[B * P], pmask[B * P]; /* the first P columns: still left-padded rows */
    for (int b = 0; b < B; b++)
        for (int t = 0; t < P; t++) {
            prompt[b * P + t] = tok[b * T + t];
            pmask[b * P + t] = mask[b * T + t];
        }
    CHECK(pw_kv_prefill(cc, prompt, pmask, B, P, &err) == 0, "%s", err.msg);
    CHECK(pw_kv_prefill(cg, prompt, pmask, B, P, &err) == 0, "%s", err.msg);
    for (int step = 0; step < 3; step++) {
        if (step) {
            int next[B] = {7, 19, 33}, active[B] = {1, step == 1, 1};
            CHECK(pw_kv_decode(cc, next, active, B, &err) == 0, "%s", err.msg);
            CHECK(pw_kv_decode(cg, next, active, B, &err) == 0, "%s", err.msg);
        }
        for (int b = 0; b < B; b++)
            compare_tol(step ? "decode logits" : "prefill logits", pw_kv_logits(cg, b),
                        pw_kv_logits(cc, b), V, tol);
    }
    pw_kv_free(cc);
    pw_kv_free(cg);
}

static void check_bf16(const PwArch *a, const int *tok, const int *tgt, const PwOutputGrads *g)
{
    PwModel *cpu = make_at(PW_DEVICE_CPU, a, PW_PRECISION_BF16);
    PwModel *gpu = make_at(PW_DEVICE_CUDA, a, PW_PRECISION_BF16);
    static Outs oc, og;
    forward(cpu, tok, tgt, &oc);
    forward(gpu, tok, tgt, &og);
    compare_tol("bf16 forward logits", og.logits, oc.logits, (size_t)B * T * V, CU_TOL_BF16);
    compare_tol("bf16 forward logp", og.logp, oc.logp, B * T, CU_TOL_BF16);
    compare_tol("bf16 forward value", og.value, oc.value, B * T, CU_TOL_BF16);
    PwErr err;
    CHECK(pw_model_zero_grad(cpu, &err) == 0 && pw_model_backward(cpu, g, &err) == 0 &&
              pw_model_zero_grad(gpu, &err) == 0 && pw_model_backward(gpu, g, &err) == 0,
          "bf16 backward: %s", err.msg);
    compare_tol("bf16 backward: every parameter gradient", host_copy(pw_model_grads(gpu)),
                host_copy(pw_model_grads(cpu)), pw_model_num_params(cpu), CU_TOL_BF16);
    check_cache(cpu, gpu, tok, CU_TOL_BF16, PW_KV_BF16); /* a bf16 model's cache: bfloat16 */
    pw_model_free(cpu);
    pw_model_free(gpu);
}

/* The LM head 5 rows at a time (the logits of 36 rows in 8 chunks, recomputed in the backward;
 * no logits handed out), at fp32 and bf16: log-probs, entropies, the other heads and every
 * gradient against the CPU's chunked model, within each precision's tolerance. */
static void check_chunked(const PwArch *a, const int *tok, const int *tgt, const PwOutputGrads *g)
{
    for (int bf16 = 0; bf16 < 2; bf16++) {
        PwPrecision prec = bf16 ? PW_PRECISION_BF16 : PW_PRECISION_FP32;
        double tol = bf16 ? CU_TOL_BF16 : CU_TOL_F32;
        PwModel *cpu = make_chunked(PW_DEVICE_CPU, a, prec, 5);
        PwModel *gpu = make_chunked(PW_DEVICE_CUDA, a, prec, 5);
        static Outs oc, og;
        PwErr err;
        PwModelInput in = {tok, mask, tgt, B, T, 1.0f};
        PwOutputs out_c = {0, T, oc.logp, oc.entropy, oc.value, oc.score, NULL};
        PwOutputs out_g = {0, T, og.logp, og.entropy, og.value, og.score, NULL};
        CHECK(pw_model_forward(cpu, &in, &out_c, &err) == 0 &&
                  pw_model_forward(gpu, &in, &out_g, &err) == 0,
              "chunked forward: %s", err.msg);
        printf("  LM head in chunks of 5 rows, %s:\n", pw_precision_name(prec));
        compare_tol("chunked forward logp", og.logp, oc.logp, B * T, tol);
        compare_tol("chunked forward entropy", og.entropy, oc.entropy, B * T, tol);
        compare_tol("chunked forward value", og.value, oc.value, B * T, tol);
        CHECK(pw_model_zero_grad(cpu, &err) == 0 && pw_model_backward(cpu, g, &err) == 0 &&
                  pw_model_zero_grad(gpu, &err) == 0 && pw_model_backward(gpu, g, &err) == 0,
              "chunked backward: %s", err.msg);
        compare_tol("chunked backward: every parameter gradient", host_copy(pw_model_grads(gpu)),
                    host_copy(pw_model_grads(cpu)), pw_model_num_params(cpu), tol);
        pw_model_free(cpu);
        pw_model_free(gpu);
    }
}

/* A GPU model that follows another (PwModelOpts.follows), made from other weights (seed 99) */
static PwModel *make_follower(const PwArch *a, PwPrecision prec)
{
    PwErr err;
    PwModelOpts o = {.heads = PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE, .maxB = B, .maxT = T,
                     .device = PW_DEVICE_CUDA, .device_id = 0, .precision = prec,
                     .acts = PW_ACTS_NONE, .follows = 1};
    PwModel *m = pw_model_create(a, &o, &err);
    CHECK(m != NULL, "follower: %s", err.msg);
    if (!m) exit(1);
    pw_model_init_random(m, 99);
    return m;
}

/* from's weights into f: packed in from's gradients' memory and copied device to device, or
 * (in_place) packed straight into f's, as for a generator on the actor's rank */
static void hand_over(PwModel *from, PwModel *f, int in_place)
{
    PwErr err;
    PwTensor out, in = pw_model_weights_in(f);
    CHECK(pw_model_weights_out(from, in_place ? in.data : NULL, &out, &err) == 0,
          "weights_out: %s", err.msg);
    if (out.data == in.data) return;
    size_t n = pw_tensor_bytes(&out);
    CHECK(n == pw_tensor_bytes(&in) && out.device == PW_DEVICE_CUDA, "payload: %zu bytes out, "
          "%zu in", n, pw_tensor_bytes(&in));
    if (n == pw_tensor_bytes(&in))
        PW_CUDA_CHECK(cudaMemcpy(in.data, out.data, n, cudaMemcpyDeviceToDevice));
}

/* What the forward keeps (PwModelOpts.acts) on the GPU against the CPU's model that keeps every
 * layer: recompute (activation checkpointing) gives the same outputs and gradients within the
 * precision's tolerance (its first norms made unfused from the kept inputs, where the forward's
 * came fused into the residual add: the last bit may differ), none the same outputs and a
 * refused backward; and a frozen model (its matrices in bfloat16 alone at bf16, rounded on the
 * host as it loads where the others' mirror is rounded by the GPU) none's outputs bit for bit;
 * so does a model that follows none, made from other weights, once none's weights (at bf16
 * packed on the GPU, its matrices' bfloat16 as the GPU rounded them) were handed over. */
static void check_acts(const PwArch *a, const int *tok, const int *tgt, const PwOutputGrads *g)
{
    for (int bf16 = 0; bf16 < 2; bf16++) {
        PwPrecision prec = bf16 ? PW_PRECISION_BF16 : PW_PRECISION_FP32;
        double tol = bf16 ? CU_TOL_BF16 : CU_TOL_F32;
        PwModel *cpu = make_acts(PW_DEVICE_CPU, a, prec, 0, PW_ACTS_KEEP);
        PwModel *re = make_acts(PW_DEVICE_CUDA, a, prec, 0, PW_ACTS_RECOMPUTE);
        PwModel *none = make_acts(PW_DEVICE_CUDA, a, prec, 0, PW_ACTS_NONE);
        PwModel *frozen = make_frozen(PW_DEVICE_CUDA, a, prec, 0, PW_ACTS_NONE, 1);
        static Outs oc, orc, on, of;
        forward(cpu, tok, tgt, &oc);
        forward(re, tok, tgt, &orc);
        forward(none, tok, tgt, &on);
        forward(frozen, tok, tgt, &of);
        CHECK(!memcmp(&of, &on, sizeof on), "frozen, %s: outputs differ from none's",
              pw_precision_name(prec));
        for (int in_place = 0; in_place < 2; in_place++) {
            PwModel *fol = make_follower(a, prec);
            static Outs ofo;
            hand_over(none, fol, in_place);
            forward(fol, tok, tgt, &ofo);
            CHECK(!memcmp(&ofo, &on, sizeof on), "follower (%s), %s: outputs differ from the "
                  "sender's", in_place ? "in place" : "copied", pw_precision_name(prec));
            pw_model_free(fol);
        }
        printf("  activations made again (recompute) and not kept (none), %s:\n",
               pw_precision_name(prec));
        compare_tol("recompute forward logp", orc.logp, oc.logp, B * T, tol);
        compare_tol("recompute forward value", orc.value, oc.value, B * T, tol);
        compare_tol("none forward logp", on.logp, oc.logp, B * T, tol);
        compare_tol("none forward score", on.score, oc.score, B, tol);
        PwErr err;
        CHECK(pw_model_zero_grad(cpu, &err) == 0 && pw_model_backward(cpu, g, &err) == 0 &&
                  pw_model_zero_grad(re, &err) == 0 && pw_model_backward(re, g, &err) == 0,
              "recompute backward: %s", err.msg);
        compare_tol("recompute backward: every parameter gradient",
                    host_copy(pw_model_grads(re)), host_copy(pw_model_grads(cpu)),
                    pw_model_num_params(cpu), tol);
        CHECK(pw_model_backward(none, g, &err) == -1 && strstr(err.msg, "forwards only"),
              "none: a backward was not refused");
        pw_model_free(cpu);
        pw_model_free(re);
        pw_model_free(none);
        pw_model_free(frozen);
    }
}

/* Generation on the GPU against the CPU: the same weights, 6 left-padded prompts, 16 new tokens,
 * top-k on, a stop token that row 1 draws fourth. The GPU looks at its rows every 16 steps (its
 * own default) and the CPU at every step; then the GPU again with each decode step captured as a
 * CUDA graph. Every token, length and stop must be the same, the log-probs within 1e-4 of the
 * CPU's, and the graph's run bit for bit the launched one's (the same kernels in the same
 * order). */
enum { GB = 6, GP = 6, GR = 16 };
typedef struct GenOut {
    int tokens[GB * GR], lengths[GB], stopped[GB];
    float logp[GB * GR], logp_full[GB * GR];
} GenOut;

static void generate(PwGen *g, const int *prompt, const int *pm, PwGenConfig *cfg, GenOut *o)
{
    PwErr err;
    CHECK(pw_generate(g, prompt, pm, GB, GP, NULL, cfg, &err) == 0, "generate: %s", err.msg);
    memcpy(o->tokens, g->tokens, sizeof o->tokens);
    memcpy(o->lengths, g->lengths, sizeof o->lengths);
    memcpy(o->stopped, g->stopped, sizeof o->stopped);
    memcpy(o->logp, g->logp, sizeof o->logp);
    memcpy(o->logp_full, g->logp_full, sizeof o->logp_full);
}

/* 16 new tokens, temperature 1, top-k 20, no stop token (yet), seed 3 */
static PwGenConfig gen_config(void)
{
    return (PwGenConfig){.max_new_tokens = GR, .stop_token = -1, .pad_token = 0,
                         .sample = {.temperature = 1.0f, .top_k = 20, .top_p = 1.0f}, .seed = 3};
}

/* the 6 prompts: row b left-padded by b % 4 */
static void gen_prompts(int *prompt, int *pm)
{
    unsigned long long rng = 31;
    for (int b = 0; b < GB; b++)
        for (int t = 0; t < GP; t++) {
            pm[b * GP + t] = t >= b % 4;
            prompt[b * GP + t] = pm[b * GP + t] ? (int)(pw_test_uniform(&rng) * V) : 0;
        }
}

static void check_generate(PwModel *cpu, PwModel *gpu)
{
    int prompt[GB * GP], pm[GB * GP];
    gen_prompts(prompt, pm);
    PwErr err;
    PwGen *gc = pw_gen_create(cpu, GB, GP + GR, &err), *gg = pw_gen_create(gpu, GB, GP + GR, &err);
    CHECK(gc && gg, "generators: %s", err.msg);
    if (!gc || !gg) return;
    PwGenConfig cfg = gen_config();
    static GenOut want, got, graphed;
    generate(gc, prompt, pm, &cfg, &want);
    cfg.stop_token = want.tokens[1 * GR + 3];
    generate(gc, prompt, pm, &cfg, &want);
    generate(gg, prompt, pm, &cfg, &got);
    cfg.graph = 1;
    generate(gg, prompt, pm, &cfg, &graphed);
    int tok = 0, nstop = 0;
    for (int i = 0; i < GB * GR; i++) tok += got.tokens[i] != want.tokens[i];
    for (int b = 0; b < GB; b++) {
        tok += got.lengths[b] != want.lengths[b] || got.stopped[b] != want.stopped[b];
        nstop += want.stopped[b];
    }
    CHECK(tok == 0 && nstop >= 1, "generation on the GPU: %d tokens, lengths or stops differ "
          "from the CPU's (%d rows stopped)", tok, nstop);
    compare_tol("generation logp", got.logp, want.logp, GB * GR, 1e-4);
    compare_tol("generation logp_full", got.logp_full, want.logp_full, GB * GR, 1e-4);
    CHECK(!memcmp(&graphed, &got, sizeof got), "the decode step as a CUDA graph: another output "
          "than launched kernel by kernel");
    printf("generation: cuda = cpu (%d rows stopped), graph = launched\n", nstop);
    pw_gen_free(gc);
    pw_gen_free(gg);
}

/* A bf16 GPU model's generation with the few-row products of our own kernel
 * (pw_cuda_set_skinny: every product of a cache pass but the LM head's has 6 rows here) launched
 * and captured as CUDA graphs: the graph's run bit for bit the launched one's, whose first
 * decode step made the kernel's workspace and counters (a graph replays counters the kernel
 * set back to zero); the same again with programmatic dependent launch (pw_cuda_set_pdl: the
 * decode's kernels each placed before the one ahead of it ends, pdl.cuh), launched and captured,
 * bit for bit the plain launches' where the device takes it; and the bf16 model's forward,
 * backward and cache against the CPU with it (check_bf16). */
static void check_skinny(const PwArch *a, const int *tok, const int *tgt, const PwOutputGrads *g)
{
    unsigned long c0 = pw_cuda_skinny_calls();
    pw_cuda_set_skinny(1);
    check_bf16(a, tok, tgt, g);
    PwModel *gpu = make_at(PW_DEVICE_CUDA, a, PW_PRECISION_BF16);
    int prompt[GB * GP], pm[GB * GP];
    gen_prompts(prompt, pm);
    PwErr err;
    PwGen *gg = pw_gen_create(gpu, GB, GP + GR, &err);
    CHECK(gg != NULL, "generator: %s", err.msg);
    if (gg) {
        PwGenConfig cfg = gen_config();
        static GenOut launched, graphed;
        generate(gg, prompt, pm, &cfg, &launched);
        cfg.graph = 1;
        generate(gg, prompt, pm, &cfg, &graphed);
        CHECK(!memcmp(&graphed, &launched, sizeof launched), "the few-row products' decode as a "
              "CUDA graph: another output than launched kernel by kernel");
        static GenOut dep, dep_graphed;
        unsigned long d0 = pw_cuda_pdl_launches();
        pw_cuda_set_pdl(1);
        cfg.graph = 0;
        generate(gg, prompt, pm, &cfg, &dep);
        unsigned long d1 = pw_cuda_pdl_launches();
        cfg.graph = 1;
        generate(gg, prompt, pm, &cfg, &dep_graphed);
        pw_cuda_set_pdl(0);
        CHECK(!memcmp(&dep, &launched, sizeof launched), "the decode with dependent launches: "
              "another output than launched plainly");
        CHECK(!memcmp(&dep_graphed, &launched, sizeof launched), "the decode with dependent "
              "launches as a CUDA graph: another output than launched plainly");
        int arch = pw_cuda_device_code_arch();
        printf("  dependent launches: %lu of the decode's kernels (code for sm_%d)\n", d1 - d0,
               arch / 10);
        CHECK(arch < 900 || d1 > d0, "dependent launch on: no kernel of the decode launched so on "
              "code for sm_%d", arch / 10);
        pw_gen_free(gg);
    }
    pw_model_free(gpu);
    pw_cuda_set_skinny(0);
    unsigned long c1 = pw_cuda_skinny_calls();
    printf("  bf16 with the few-row products' kernel: %lu calls took it\n", c1 - c0);
    CHECK(c1 > c0, "the few-row products' kernel took no call of a bf16 model with C = %d",
          a->n_embd);
}

/* Everything above for one architecture: its models on both devices, fp32 then bf16; the
 * checkpoint goes to DIR/cuda_model_<name>. */
/* The attention on Hopper's warpgroup products (pw_cuda_set_flash_wgmma) inside the bf16 model,
 * where the device runs them: a GPT-2 with heads of 64 (the kernels' size) through check_bf16
 * against the CPU's bf16 model, the count saying its attention took them (a forward and a
 * backward a layer at least) */
static void check_wgmma(void)
{
    if (!pw_cuda_wgmma_ok()) {
        printf("---- no warpgroup products on this device: their model not run\n");
        return;
    }
    printf("---- gpt2, heads of 64, attention on the warpgroup products\n");
    PwArch a = {.family = PW_FAMILY_GPT2, .n_layer = 2, .n_head = 2, .n_embd = 128,
                .vocab_size = V, .n_positions = 32};
    unsigned long long rng = 9;
    int tok[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = (int)(pw_test_uniform(&rng) * V);
    pw_lm_next_token_targets(tgt, tok, mask, B, T);
    float dlogp[B * T], dent[B * T], dval[B * T], dscore[B];
    for (int i = 0; i < B * T; i++) {
        dlogp[i] = tgt[i] >= 0 ? (float)pw_test_normal(&rng) : 0.0f;
        dent[i] = 0.0f;
        dval[i] = mask[i] ? (float)pw_test_normal(&rng) : 0.0f;
    }
    for (int b = 0; b < B; b++) dscore[b] = (float)pw_test_normal(&rng);
    PwOutputGrads g = {.dlogp = dlogp, .dentropy = dent, .dvalue = dval, .dscore = dscore};
    unsigned long c0 = pw_cuda_flash_wgmma_calls();
    pw_cuda_set_flash_wgmma(1);
    check_bf16(&a, tok, tgt, &g);
    pw_cuda_set_flash_wgmma(0);
    unsigned long n = pw_cuda_flash_wgmma_calls() - c0;
    printf("  attention calls on the warpgroup products: %lu\n", n);
    CHECK(n >= 2 * (unsigned long)a.n_layer, "the warpgroup attention took %lu calls", n);
}

/* Host floats into a model tensor wherever it lives. */
static void put(PwTensor t, const float *h)
{
    size_t bytes = pw_tensor_bytes(&t);
    if (t.device == PW_DEVICE_CUDA) { /* done before the model's stream reads it */
        PW_CUDA_CHECK(cudaDeviceSynchronize());
        PW_CUDA_CHECK(cudaMemcpy(t.data, h, bytes, cudaMemcpyHostToDevice));
        PW_CUDA_CHECK(cudaDeviceSynchronize());
    } else {
        memcpy(t.data, h, bytes);
    }
}

/* ---- the optimiser's share (docs/model.md, The optimiser's share): two GPU models that each
 * update one share of the parameters, cut inside a tensor at a multiple of 64 floats as the
 * roles cut them, put together after each step as the all-gather does, hold the weights and the
 * moments of a GPU model that updates all of them, bit for bit: the update is the same kernel on
 * each float. The second step runs after a share's moments went to the host and back, and a
 * share loads its part of the whole model's moments file. `grads`: any gradient (the CPU
 * model's), the same for the three. */
static void check_shares(const PwArch *a, const float *grads, const char *dir, const char *name)
{
    PwErr err;
    PwModel *whole = make(PW_DEVICE_CUDA, a), *sh[2] = {make(PW_DEVICE_CUDA, a),
                                                        make(PW_DEVICE_CUDA, a)};
    size_t P = pw_model_num_params(whole), cut[3] = {0, (P / 2 + 63) / 64 * 64, P};
    for (int k = 0; k < 2; k++)
        CHECK(pw_model_optimizer_shard(sh[k], cut[k], cut[k + 1], &err) == 0, "%s", err.msg);
    PwAdamWConfig opt = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.1f, .grad_clip = 0.5f};
    float *stitched = cu_host(P * sizeof(float));
    PwModel *all[3] = {whole, sh[0], sh[1]};
    for (int s = 1; s <= 2; s++) {
        for (int k = 0; k < 3; k++) {
            CHECK(pw_model_zero_grad(all[k], &err) == 0, "%s", err.msg);
            put(pw_model_grads(all[k]), grads);
        }
        if (s == 2)
            CHECK(pw_model_optimizer_offload(sh[1], &err) == 0 &&
                      pw_model_optimizer_reload(sh[1], &err) == 0, "%s", err.msg);
        for (int k = 0; k < 3; k++)
            CHECK(pw_model_adamw_step(all[k], &opt, s, NULL, &err) == PW_ADAMW_APPLIED,
                  "share step %d: %s", s, err.msg);
        for (int k = 0; k < 2; k++) {
            const float *p = host_copy(pw_model_params(sh[k]));
            memcpy(stitched + cut[k], p + cut[k], (cut[k + 1] - cut[k]) * sizeof(float));
        }
        for (int k = 0; k < 2; k++) put(pw_model_params(sh[k]), stitched);
        CHECK(!memcmp(host_copy(pw_model_params(whole)), stitched, P * sizeof(float)),
              "step %d: two shares' weights differ from the whole's", s);
    }
    float *wm = cu_host(P * sizeof(float)), *wv = cu_host(P * sizeof(float));
    float *gm = cu_host(P * sizeof(float)), *gv = cu_host(P * sizeof(float));
    CHECK(pw_model_optimizer_get(whole, wm, wv, &err) == 0, "%s", err.msg);
    for (int k = 0; k < 2; k++)
        CHECK(pw_model_optimizer_get(sh[k], gm + cut[k], gv + cut[k], &err) == 0, "%s", err.msg);
    CHECK(!memcmp(wm, gm, P * sizeof(float)) && !memcmp(wv, gv, P * sizeof(float)),
          "two shares' moments differ from the whole's");
    char path[4096];
    snprintf(path, sizeof path, "%s/cuda_model_%s_moments.safetensors", dir, name);
    CHECK(pw_model_optimizer_save(whole, path, &err) == 0, "%s", err.msg);
    /* the file has no padding rows, which load as 0: a share gets its part of what a whole
     * model loads */
    PwModel *lw = make(PW_DEVICE_CUDA, a), *back = make(PW_DEVICE_CUDA, a);
    CHECK(pw_model_optimizer_load(lw, path, &err) == 0 &&
              pw_model_optimizer_get(lw, wm, wv, &err) == 0, "%s", err.msg);
    CHECK(pw_model_optimizer_shard(back, cut[1], P, &err) == 0 &&
              pw_model_optimizer_load(back, path, &err) == 0, "%s", err.msg);
    CHECK(pw_model_optimizer_get(back, gm, gv, &err) == 0, "%s", err.msg);
    CHECK(!memcmp(gm, wm + cut[1], (P - cut[1]) * sizeof(float)) &&
              !memcmp(gv, wv + cut[1], (P - cut[1]) * sizeof(float)),
          "a share's moments loaded from the whole's file differ");
    printf("  %-44s bit for bit (shares of %zu and %zu)\n", "two optimiser shares, 2 steps",
           cut[1], P - cut[1]);
    remove(path);
    pw_model_free(lw);
    pw_model_free(back);
    for (int k = 0; k < 3; k++) pw_model_free(all[k]);
}

/* ---- at bf16 the float32 master weights split too (docs/model.md, The optimiser's share):
 * two bf16 GPU models that each keep one share's float32 of the layers' matrices, put together
 * after each step as the all-gather does (pw_model_mirror, pw_model_kept), hold the bfloat16 copy
 * and the float32 of a bf16 GPU model that keeps everything, bit for bit; their forward and
 * backward are its own then (they read the bfloat16 copy, never the float32 they lack). */
static void check_master_shares(const PwArch *a, const float *grads, const int *tok,
                                const int *tgt, const PwOutputGrads *g)
{
    PwErr err;
    PwModel *whole = make_at(PW_DEVICE_CUDA, a, PW_PRECISION_BF16);
    PwModel *sh[2] = {make_at(PW_DEVICE_CUDA, a, PW_PRECISION_BF16),
                      make_at(PW_DEVICE_CUDA, a, PW_PRECISION_BF16)};
    size_t P = pw_model_num_params(whole), cut[3] = {0, (P / 2 + 63) / 64 * 64, P};
    for (int k = 0; k < 2; k++)
        CHECK(pw_model_optimizer_shard(sh[k], cut[k], cut[k + 1], &err) == 0 &&
                  pw_model_master_split(sh[k]), "master share %d: %s", k, err.msg);
    const size_t M = pw_model_master_before(whole, P), K = P - M;
    PwAdamWConfig opt = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.1f, .grad_clip = 0.5f};
    uint16_t *s16 = cu_host(P * sizeof *s16);
    float *sk = cu_host(K * sizeof *sk), *sm = cu_host(M * sizeof *sm);
    PwModel *all[3] = {whole, sh[0], sh[1]};
    for (int s = 1; s <= 2; s++) {
        for (int k = 0; k < 3; k++) {
            CHECK(pw_model_zero_grad(all[k], &err) == 0, "%s", err.msg);
            put(pw_model_grads(all[k]), grads);
            CHECK(pw_model_adamw_step(all[k], &opt, s, NULL, &err) == PW_ADAMW_APPLIED,
                  "master share step %d: %s", s, err.msg);
        }
        for (int k = 0; k < 2; k++) {
            const uint16_t *m16 = (const uint16_t *)host_copy(pw_model_mirror(sh[k]));
            const float *kf = host_copy(pw_model_kept(sh[k]));
            size_t g0 = pw_model_master_before(sh[k], cut[k]);
            size_t g1 = pw_model_master_before(sh[k], cut[k + 1]);
            memcpy(s16 + cut[k], m16 + cut[k], (cut[k + 1] - cut[k]) * sizeof *s16);
            memcpy(sk + cut[k] - g0, kf + cut[k] - g0, (cut[k + 1] - g1 - (cut[k] - g0)) * 4);
            CHECK(pw_model_master_get(sh[k], sm + g0, &err) == 0, "%s", err.msg);
        }
        for (int k = 0; k < 2; k++) {
            put(pw_model_mirror(sh[k]), (const float *)s16);
            put(pw_model_kept(sh[k]), sk);
        }
        /* the whole's bfloat16 copy is fresh after its step; then its float32 */
        const uint16_t *w16 = (const uint16_t *)host_copy(pw_model_mirror(whole));
        const float *wf = host_copy(pw_model_params(whole));
        size_t bad16 = P, badf = P;
        for (size_t x = 0, kx = 0; x < P; x++) {
            if (bad16 == P && w16[x] != s16[x]) bad16 = x;
            size_t gx = pw_model_master_before(whole, x);
            const float *got = pw_model_master_before(whole, x + 1) == gx ? &sk[kx++] : &sm[gx];
            if (badf == P && memcmp(got, &wf[x], sizeof *got)) badf = x;
        }
        CHECK(bad16 == P && badf == P, "master shares step %d: the bfloat16 differ from float "
              "%zu, the float32 from float %zu (of %zu)", s, bad16, badf, P);
    }
    static Outs ow, os;
    forward(whole, tok, tgt, &ow);
    forward(sh[1], tok, tgt, &os);
    CHECK(!memcmp(ow.logp, os.logp, sizeof ow.logp) && !memcmp(ow.value, os.value,
                                                                 sizeof ow.value),
          "a master share's forward differs from the whole's");
    CHECK(pw_model_zero_grad(whole, &err) == 0 && pw_model_backward(whole, g, &err) == 0 &&
              pw_model_zero_grad(sh[1], &err) == 0 && pw_model_backward(sh[1], g, &err) == 0,
          "master shares backward: %s", err.msg);
    CHECK(!memcmp(host_copy(pw_model_grads(whole)), host_copy(pw_model_grads(sh[1])),
                  P * sizeof(float)), "a master share's gradients differ from the whole's");
    printf("  %-44s bit for bit (%zu split, %zu kept whole)\n", "two bf16 master shares, 2 steps",
           M, K);
    for (int k = 0; k < 3; k++) pw_model_free(all[k]);
}

/* ---- the gradients split too (docs/model.md, Gradients in shares): two bf16 GPU models with
 * their gradients split, both on the test's batch, their reductions done here (each one's
 * buffers, on the GPU, recorded by a first backward, then summed on the host), hold in each
 * share the sum of a whole GPU model's two gradients, g + g, bit for bit, and their update (its
 * norm a sum of the shares' squares) is the whole's on that sum: the bfloat16 copy bit for
 * bit. */
enum { GS_CALLS = 64 };
typedef struct GradRanks {
    int recording, calls[2];
    float *rec[2][GS_CALLS];
    double v[2];
} GradRanks;
typedef struct GradRank {
    GradRanks *all;
    int k;
} GradRank;

static void gs_reduce(void *ctx, float *buf, const int64_t *starts)
{
    GradRank *r = ctx;
    GradRanks *g = r->all;
    int c = g->calls[r->k]++;
    size_t n = (size_t)starts[2];
    CHECK(c < GS_CALLS, "%d reductions", c + 1);
    if (c >= GS_CALLS) return;
    if (g->recording) {
        free(g->rec[r->k][c]);
        g->rec[r->k][c] = malloc((n ? n : 1) * sizeof(float));
        PW_CUDA_CHECK(cudaMemcpy(g->rec[r->k][c], buf, n * sizeof(float), cudaMemcpyDeviceToHost));
        PW_CUDA_CHECK(cudaMemset(buf, 0, n * sizeof(float)));
        /* done before returning, as PwGradSplit asks: the model's stream does not wait for the
         * default stream's work */
        PW_CUDA_CHECK(cudaDeviceSynchronize());
        return;
    }
    size_t a = (size_t)starts[r->k], b = (size_t)starts[r->k + 1];
    float *sum = malloc((b > a ? b - a : 1) * sizeof *sum);
    for (size_t x = a; x < b; x++) sum[x - a] = g->rec[0][c][x] + g->rec[1][c][x];
    PW_CUDA_CHECK(cudaMemcpy(buf + a, sum, (b - a) * sizeof *sum, cudaMemcpyHostToDevice));
    PW_CUDA_CHECK(cudaDeviceSynchronize()); /* a pageable copy may still be on its way */
    free(sum);
}

static double gs_sum(void *ctx, double v)
{
    GradRank *r = ctx;
    if (r->all->recording) return r->all->v[r->k] = v;
    return r->all->v[0] + r->all->v[1];
}

static void check_grad_shares(const PwArch *a, const int *tok, const int *tgt,
                              const PwOutputGrads *given)
{
    PwErr err;
    /* a model whose gradients are split reports none ready: it sums them itself */
    PwOutputGrads gs = *given;
    gs.ready = NULL;
    gs.ready_ctx = NULL;
    const PwOutputGrads *g = &gs;
    static GradRanks gr;
    memset(&gr, 0, sizeof gr);
    GradRank rk[2] = {{&gr, 0}, {&gr, 1}};
    PwModel *whole = make_at(PW_DEVICE_CUDA, a, PW_PRECISION_BF16);
    PwModel *sh[2] = {make_at(PW_DEVICE_CUDA, a, PW_PRECISION_BF16),
                      make_at(PW_DEVICE_CUDA, a, PW_PRECISION_BF16)};
    size_t P = pw_model_num_params(whole), cut[3] = {0, (P / 2 + 63) / 64 * 64, P};
    int64_t shares[3] = {0, (int64_t)cut[1], (int64_t)P};
    for (int k = 0; k < 2; k++) {
        PwGradSplit fn = {gs_reduce, gs_sum, NULL, &rk[k]};
        CHECK(pw_model_optimizer_shard(sh[k], cut[k], cut[k + 1], &err) == 0 &&
                  pw_model_grads_split(sh[k], shares, 2, k, &fn, &err) == 0,
              "grad share %d: %s", k, err.msg);
    }
    static Outs o;
    CHECK(pw_model_zero_grad(whole, &err) == 0, "%s", err.msg);
    forward(whole, tok, tgt, &o);
    CHECK(pw_model_backward(whole, g, &err) == 0, "%s", err.msg);
    float *total = host_copy(pw_model_grads(whole)), *got = cu_host(P * sizeof(float));
    for (size_t x = 0; x < P; x++) total[x] += total[x];
    for (gr.recording = 1; gr.recording >= 0; gr.recording--)
        for (int k = 0; k < 2; k++) {
            gr.calls[k] = 0;
            if (gr.recording) CHECK(pw_model_zero_grad(sh[k], &err) == 0, "%s", err.msg);
            forward(sh[k], tok, tgt, &o);
            CHECK(pw_model_backward(sh[k], g, &err) == 0, "grad share backward: %s", err.msg);
            CHECK(gr.calls[k] == a->n_layer + 2, "%d reductions in a backward", gr.calls[k]);
        }
    for (int k = 0; k < 2; k++)
        CHECK(pw_model_grads_get(sh[k], got + cut[k], &err) == 0, "%s", err.msg);
    CHECK(!memcmp(got, total, P * sizeof(float)),
          "the shares' gradients differ from the whole's sum");
    PwAdamWConfig opt = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.1f, .grad_clip = 0.0f};
    put(pw_model_grads(whole), total);
    double nw = 0.0, ns = 0.0;
    CHECK(pw_model_adamw_step(whole, &opt, 1, &nw, &err) == PW_ADAMW_APPLIED, "%s", err.msg);
    gr.recording = 1;
    for (int k = 0; k < 2; k++) (void)pw_model_grad_norm(sh[k]);
    gr.recording = 0;
    const uint16_t *w16 = (const uint16_t *)host_copy(pw_model_mirror(whole));
    for (int k = 0; k < 2; k++) {
        CHECK(pw_model_adamw_step(sh[k], &opt, 1, &ns, &err) == PW_ADAMW_APPLIED, "%s", err.msg);
        CHECK(ns > 0 && fabs(ns - nw) <= 1e-6 * nw, "grad share %d: norm %.9g, the whole's %.9g",
              k, ns, nw);
        const uint16_t *s16 = (const uint16_t *)host_copy(pw_model_mirror(sh[k]));
        CHECK(!memcmp(s16 + cut[k], w16 + cut[k], (cut[k + 1] - cut[k]) * sizeof *s16),
              "grad share %d: the updated bfloat16 differ from the whole's", k);
    }
    printf("  %-44s bit for bit (norm %.9g, the whole's %.9g)\n",
           "two bf16 gradient shares, a step", ns, nw);
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < GS_CALLS; c++) free(gr.rec[k][c]);
    pw_model_free(whole);
    for (int k = 0; k < 2; k++) pw_model_free(sh[k]);
}

static void check_arch(const char *name, const PwArch *arch, const char *dir)
{
    /* on both streams: a failure (stderr) is then read under the architecture it is of */
    printf("---- %s (%s)\n", name, pw_family_name(arch->family));
    fprintf(stderr, "---- %s (%s)\n", name, pw_family_name(arch->family));
    unsigned long long rng = 8;
    PwModel *cpu = make(PW_DEVICE_CPU, arch), *gpu = make(PW_DEVICE_CUDA, arch);
    CHECK(pw_model_device(gpu) == PW_DEVICE_CUDA && pw_model_params(gpu).device == PW_DEVICE_CUDA,
          "the GPU model's parameters are not on the GPU");
    size_t np = pw_model_num_params(cpu);
    /* the process's device high-water mark holds at least the GPU model's parameters */
    CHECK(pw_device_peak_bytes() >= np * sizeof(float), "device peak %zu bytes, below the %zu "
          "bytes of the parameters", pw_device_peak_bytes(), np * sizeof(float));
    compare_host("parameters after init", host_copy(pw_model_params(gpu)),
                 host_copy(pw_model_params(cpu)), np);

    int tok[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = (int)(pw_test_uniform(&rng) * V);
    pw_lm_next_token_targets(tgt, tok, mask, B, T);

    /* ---- forward, every head */
    static Outs oc, og;
    forward(cpu, tok, tgt, &oc);
    forward(gpu, tok, tgt, &og);
    compare_host("forward logits", og.logits, oc.logits, (size_t)B * T * V);
    compare_host("forward logp", og.logp, oc.logp, B * T);
    compare_host("forward entropy", og.entropy, oc.entropy, B * T);
    compare_host("forward value", og.value, oc.value, B * T);
    compare_host("forward score", og.score, oc.score, B);

    /* ---- backward from random gradients of every output */
    float dlogp[B * T], dent[B * T], dval[B * T], dscore[B];
    for (int i = 0; i < B * T; i++) {
        dlogp[i] = tgt[i] >= 0 ? (float)pw_test_normal(&rng) : 0.0f;
        dent[i] = tgt[i] >= 0 ? (float)(0.1 * pw_test_normal(&rng)) : 0.0f;
        dval[i] = mask[i] ? (float)pw_test_normal(&rng) : 0.0f;
    }
    for (int b = 0; b < B; b++) dscore[b] = (float)pw_test_normal(&rng);
    /* both report their gradients as they are ready: the same ranges, in the same calls, the
     * GPU's with its stream (the sums of a role order themselves after it) */
    static Ready rc, rg;
    rc = rg = (Ready){0}; /* static for its size; each architecture counts afresh */
    PwOutputGrads g = {.dlogp = dlogp, .dentropy = dent, .dvalue = dval, .dscore = dscore,
                       .ready = ready_record, .ready_ctx = &rc};
    PwErr err;
    CHECK(pw_model_zero_grad(cpu, &err) == 0 && pw_model_backward(cpu, &g, &err) == 0, "%s",
          err.msg);
    g.ready_ctx = &rg;
    CHECK(pw_model_zero_grad(gpu, &err) == 0 && pw_model_backward(gpu, &g, &err) == 0, "%s",
          err.msg);
    CHECK(rc.calls > 2 && rg.calls == rc.calls && rg.nr == rc.nr &&
              !memcmp(rg.r, rc.r, (size_t)rc.nr * sizeof *rc.r),
          "gradients ready: GPU %d calls, %d ranges; CPU %d, %d", rg.calls, rg.nr, rc.calls,
          rc.nr);
    CHECK(rc.streams == 0 && rg.streams == rg.calls,
          "gradients ready: streams CPU %d, GPU %d of %d calls", rc.streams, rg.streams, rg.calls);
    compare_host("backward: every parameter gradient", host_copy(pw_model_grads(gpu)),
                 host_copy(pw_model_grads(cpu)), np);
    double nc = pw_model_grad_norm(cpu), ng = pw_model_grad_norm(gpu);
    CHECK(fabs(nc - ng) <= 1e-5 * nc, "gradient norm %g (cpu) vs %g (cuda)", nc, ng);

    /* ---- one AdamW step, clipping on */
    PwAdamWConfig opt = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.1f, .grad_clip = 0.5f};
    same_grads(gpu, cpu);
    CHECK(pw_model_adamw_step(cpu, &opt, 1, NULL, &err) == PW_ADAMW_APPLIED, "%s", err.msg);
    CHECK(pw_model_adamw_step(gpu, &opt, 1, NULL, &err) == PW_ADAMW_APPLIED, "%s", err.msg);
    compare_host("AdamW step: parameters", host_copy(pw_model_params(gpu)),
                 host_copy(pw_model_params(cpu)), np);

    check_cache(cpu, gpu, tok, CU_TOL_F32, PW_KV_FP32);
    check_generate(cpu, gpu);

    /* ---- moments offloaded and back, a second step; then save and load on the GPU */
    CHECK(pw_model_optimizer_offload(gpu, &err) == 0, "%s", err.msg);
    CHECK(pw_model_optimizer_reload(gpu, &err) == 0, "%s", err.msg);
    CHECK(pw_model_zero_grad(cpu, &err) == 0 && pw_model_zero_grad(gpu, &err) == 0, "%s", err.msg);
    forward(cpu, tok, tgt, &oc);
    forward(gpu, tok, tgt, &og);
    CHECK(pw_model_backward(cpu, &g, &err) == 0 && pw_model_backward(gpu, &g, &err) == 0, "%s",
          err.msg);
    same_grads(gpu, cpu);
    CHECK(pw_model_adamw_step(cpu, &opt, 2, NULL, &err) == PW_ADAMW_APPLIED, "%s", err.msg);
    CHECK(pw_model_adamw_step(gpu, &opt, 2, NULL, &err) == PW_ADAMW_APPLIED, "%s", err.msg);
    compare_host("second step after offload + reload", host_copy(pw_model_params(gpu)),
                 host_copy(pw_model_params(cpu)), np);
    char ckpt[4096];
    snprintf(ckpt, sizeof ckpt, "%s/cuda_model_%s", dir, name);
    mkdir(ckpt, 0755);
    CHECK(pw_model_save(gpu, ckpt, &err) == 0, "save: %s", err.msg);
    PwModelOpts lo = {.heads = PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE, .maxB = B, .maxT = T,
                      .device = PW_DEVICE_CUDA};
    PwModel *back = pw_model_load(ckpt, &lo, &err);
    CHECK(back != NULL, "load: %s", err.msg);
    if (back) {
        float *p0 = host_copy(pw_model_params(gpu)), *p1 = host_copy(pw_model_params(back));
        CHECK(!memcmp(p0, p1, np * sizeof(float)), "a GPU model saved and loaded differs");
        pw_model_free(back);
    }
    check_shares(arch, host_copy(pw_model_grads(cpu)), dir, name);
    check_master_shares(arch, host_copy(pw_model_grads(cpu)), tok, tgt, &g);
    check_grad_shares(arch, tok, tgt, &g);
    unsigned long f0, f1, f2;
    pw_cuda_gelu_epilogue_calls(&f0, NULL);
    check_bf16(arch, tok, tgt, &g); /* GELU in cuBLASLt's epilogues, the default */
    pw_cuda_gelu_epilogue_calls(&f1, NULL);
    if (arch->family == PW_FAMILY_GPT2) { /* again, GELU from kernels of its own */
        pw_cuda_set_lt_gelu(0);
        check_bf16(arch, tok, tgt, &g);
        pw_cuda_set_lt_gelu(1);
        pw_cuda_gelu_epilogue_calls(&f2, NULL);
        printf("  bf16 with GELU in the epilogues: %lu calls fused; off: %lu\n", f1 - f0,
               f2 - f1);
        CHECK(f2 == f1, "GELU's epilogues switched off took %lu calls", f2 - f1);
    }
    check_skinny(arch, tok, tgt, &g);
    check_chunked(arch, tok, tgt, &g);
    check_acts(arch, tok, tgt, &g);
    pw_model_free(cpu);
    pw_model_free(gpu);
    cu_release();
}

int main(int argc, char **argv)
{
    cu_require_gpu("test_cuda_model");
    const char *dir = argc > 1 ? argv[1] : ".";
    PwArch gpt2 = {.family = PW_FAMILY_GPT2, .n_layer = 2, .n_head = 4, .n_embd = 32,
                   .vocab_size = V, .n_positions = 32};
    /* Qwen2's layout: 4 query heads over 2 key/value heads, q/k/v biases, its own LM head */
    PwArch qwen2 = {.family = PW_FAMILY_LLAMA, .n_layer = 2, .n_head = 4, .n_embd = 32,
                    .vocab_size = V, .n_positions = 32, .n_kv_head = 2, .n_inner = 48,
                    .norm_eps = 1e-6f, .rope_theta = 1e6, .qkv_bias = 1, .hf_type = 1};
    /* Llama 3's: 4 over 1 (every query head reads the one cache head), no biases, the LM head
     * tied, llama3 rope scaling (its factors applied to the frequencies of heads of 8) */
    PwArch llama3 = {.family = PW_FAMILY_LLAMA, .n_layer = 2, .n_head = 4, .n_embd = 32,
                     .vocab_size = V, .n_positions = 32, .n_kv_head = 1, .n_inner = 40,
                     .norm_eps = 1e-5f, .rope_theta = 500000.0, .rope_llama3 = 1,
                     .rope_factor = 8.0, .rope_low_freq_factor = 1.0,
                     .rope_high_freq_factor = 4.0, .rope_original_max = 16, .tied = 1};
    /* Qwen3's: q/k norms (the head norm kernels), heads of 16 whose 4 make an attention 64
     * wide over 32 channels, q, k, v and o_proj biases */
    PwArch qwen3 = qwen2;
    qwen3.hf_type = 3, qwen3.qk_norm = 1, qwen3.head_dim = 16, qwen3.o_bias = 1;
    check_arch("gpt2", &gpt2, dir);
    check_arch("qwen2", &qwen2, dir);
    check_arch("llama3", &llama3, dir);
    check_arch("qwen3", &qwen3, dir);
    check_wgmma();
    check_no_room();
    cu_release();
    return pw_test_done("test_cuda_model");
}
