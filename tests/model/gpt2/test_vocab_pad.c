/* test_vocab_pad.c: the padded vocabulary (docs/model.md, Padded vocabulary). For GPT-2 (tied
 * LM head) and an untied Llama, a model whose vocabulary-sized tensors hold round_up(V, 64)
 * rows computes what the same model with exactly V rows computes: log-probs, entropies, values,
 * scores, logits, gradients and three AdamW steps; its padding rows are 0 after init and stay 0
 * after the steps (weights, gradients, moments); padding rows poisoned with large values change
 * no log-prob, entropy or logit, and sampling never draws a token >= V; checkpoints and AdamW
 * moments keep the true size both ways (a padded model's files load into an unpadded one and
 * back, bit for bit). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pw_generate.h"
#include "pw_model.h"
#include "pw_safetensors.h"
#include "pw_test.h"

/* max |a - b| over max |b| (pw_test.h) */
#define REL(a, b, n) pw_max_rel_err_ff((a), (b), (n), 1e-30)

enum { B = 3, T = 7, ALL = PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE };
/* V = 37: padded to 64, 27 padding rows. The forward's matmuls over 64 columns against 37 may
 * take other blocking paths in BLAS: the sums are the same terms, compared to float rounding. */
#define TOL 1e-5

static const PwArch gpt2 = {.family = PW_FAMILY_GPT2, .n_layer = 2, .n_head = 2, .n_embd = 16,
                            .vocab_size = 37, .n_positions = 16};
static const PwArch llama = {.family = PW_FAMILY_LLAMA, .n_layer = 2, .n_head = 4, .n_embd = 16,
                             .vocab_size = 37, .n_positions = 16, .n_kv_head = 2, .n_inner = 20,
                             .norm_eps = 1e-5f, .rope_theta = 10000.0, .tied = 0, .qkv_bias = 1,
                             .o_bias = 1, .hf_type = 0};
static const char *root;

static PwModel *make(const PwArch *a, int multiple, int heads)
{
    PwErr err;
    PwModelOpts o = {.heads = heads, .maxB = B, .maxT = T, .vocab_multiple = multiple};
    PwModel *m = pw_model_create(a, &o, &err);
    if (!m) {
        fprintf(stderr, "create: %s\n", err.msg);
        exit(1);
    }
    pw_model_init_random(m, 11);
    return m;
}

static float *params(PwModel *m) { return pw_model_params(m).data; } /* CPU: host memory */

/* Whether two files hold the same bytes. */
static int files_equal(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb, ca, cb;
    while (same && (ca = getc(fa)) != EOF) same = ca == (cb = getc(fb));
    if (same) same = getc(fb) == EOF;
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

/* Whether the real prefix of every tensor of a (padded) equals that of b (unpadded) within tol
 * relative to the tensor's largest value (tol 0: bit for bit), and a's padding is all 0. */
static int same_real(PwModel *a, const float *pa, PwModel *b, const float *pb, double tol,
                     const char *what, int *pad_zero)
{
    int ok = 1;
    *pad_zero = 1;
    for (int i = 0; i < pw_model_num_tensors(a); i++) {
        size_t oa, na, ob, nb;
        const char *name = pw_model_tensor_info(a, i, &oa, &na);
        pw_model_tensor_info(b, i, &ob, &nb);
        double big = 1e-30, err = 0.0;
        for (size_t k = 0; k < nb; k++) big = fmax(big, fabs(pb[ob + k]));
        for (size_t k = 0; k < nb; k++) err = fmax(err, fabs(pa[oa + k] - pb[ob + k]));
        if (tol == 0.0 ? memcmp(pa + oa, pb + ob, nb * sizeof(float)) != 0 : err / big > tol) {
            fprintf(stderr, "%s: tensor %s differs: max abs err %.3g of %.3g\n", what, name, err,
                    big);
            ok = 0;
        }
        for (size_t k = nb; k < na; k++) *pad_zero &= pa[oa + k] == 0.0f;
    }
    return ok;
}

typedef struct Outs {
    float logp[B * T], ent[B * T], value[B * T], score[B], logits[B * T * 37];
} Outs;

static void inputs(int *tok, int *mask, int *tgt)
{
    for (int i = 0; i < B * T; i++) {
        tok[i] = (i * 7 + 3) % 37;
        mask[i] = !(i / T == 1 && i % T < 2); /* row 1 left-padded by 2 */
    }
    pw_lm_next_token_targets(tgt, tok, mask, B, T);
}

static void forward(PwModel *m, Outs *o, float temperature, int heads)
{
    int tok[B * T], mask[B * T], tgt[B * T];
    inputs(tok, mask, tgt);
    PwModelInput in = {tok, mask, tgt, B, T, temperature};
    PwOutputs out = {0, T, o->logp, o->ent, heads & PW_HEAD_VALUE ? o->value : NULL,
                     heads & PW_HEAD_SCORE ? o->score : NULL, o->logits};
    PwErr err;
    if (pw_model_forward(m, &in, &out, &err)) {
        fprintf(stderr, "forward: %s\n", err.msg);
        exit(1);
    }
}

/* padded against unpadded: outputs, gradients, three AdamW steps */
static void test_same_numbers(const PwArch *arch, const char *fam)
{
    PwModel *p = make(arch, 0, ALL), *u = make(arch, 1, ALL);
    const int V = arch->vocab_size;
    CHECK(pw_model_vocab_padded(p) == 64 && pw_model_vocab_padded(u) == V,
          "%s: padded rows %d and %d, expected 64 and %d", fam, pw_model_vocab_padded(p),
          pw_model_vocab_padded(u), V);
    size_t pad_rows = (size_t)(64 - V) * arch->n_embd * (arch->tied || arch->family ==
                                                         PW_FAMILY_GPT2 ? 1 : 2);
    CHECK(pw_model_num_params(p) == pw_model_num_params(u) + pad_rows,
          "%s: %zu parameters padded, %zu unpadded, expected %zu more", fam,
          pw_model_num_params(p), pw_model_num_params(u), pad_rows);
    CHECK(pw_model_num_weights(p) == pw_model_num_params(u) &&
              pw_model_num_weights(u) == pw_model_num_params(u),
          "%s: weights %zu and %zu, expected %zu", fam, pw_model_num_weights(p),
          pw_model_num_weights(u), pw_model_num_params(u));
    int pz;
    CHECK(same_real(p, params(p), u, params(u), 0.0, "init", &pz) && pz,
          "%s: the padded model's init is not the unpadded one plus zero rows", fam);

    /* eps 1e-3: Adam's m / sqrt(v) turns a gradient of 1e-9 into a step of lr, and with it the
     * rounding that tells two gradients of 1e-9 apart; a larger eps leaves those steps small */
    PwAdamWConfig cfg = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-3f,
                         .weight_decay = 0.1f, .grad_clip = 1.0f};
    double worst = 0.0;
    for (int step = 1; step <= 3; step++) {
        static Outs op, ou;
        float tau = step == 2 ? 0.7f : 1.0f; /* a temperature scales the padded logits too */
        forward(p, &op, tau, ALL);
        forward(u, &ou, tau, ALL);
        double e[5] = {REL(op.logp, ou.logp, B * T), REL(op.ent, ou.ent, B * T),
                       REL(op.value, ou.value, B * T), REL(op.score, ou.score, B),
                       REL(op.logits, ou.logits, (size_t)B * T * V)};
        for (int k = 0; k < 5; k++) worst = fmax(worst, e[k]);
        CHECK(e[0] < TOL && e[1] < TOL && e[2] < TOL && e[3] < TOL && e[4] < TOL,
              "%s step %d: padded vs unpadded logp %.3g entropy %.3g value %.3g score %.3g "
              "logits %.3g", fam, step, e[0], e[1], e[2], e[3], e[4]);
        float dlogp[B * T], dent[B * T], dval[B * T], dscore[B];
        for (int i = 0; i < B * T; i++) {
            dlogp[i] = 0.1f * (float)((i % 5) - 2);
            dent[i] = 0.01f * (float)((i % 3) - 1);
            dval[i] = 0.05f * (float)((i % 4) - 1.5);
        }
        for (int b = 0; b < B; b++) dscore[b] = 0.3f * (b - 1);
        PwOutputGrads g = {.dlogp = dlogp, .dentropy = dent, .dvalue = dval, .dscore = dscore};
        PwErr err;
        CHECK(pw_model_zero_grad(p, &err) == 0 && pw_model_zero_grad(u, &err) == 0 &&
                  pw_model_backward(p, &g, &err) == 0 && pw_model_backward(u, &g, &err) == 0,
              "%s: backward: %s", fam, err.msg);
        CHECK(same_real(p, pw_model_grads(p).data, u, pw_model_grads(u).data, 1e-5, "grads", &pz),
              "%s step %d: gradients differ", fam, step);
        CHECK(pz, "%s step %d: a padding row has a gradient", fam, step);
        double np = 0.0, nu = 0.0;
        CHECK(pw_model_adamw_step(p, &cfg, step, &np, &err) == PW_ADAMW_APPLIED &&
                  pw_model_adamw_step(u, &cfg, step, &nu, &err) == PW_ADAMW_APPLIED,
              "%s: step: %s", fam, err.msg);
        CHECK(fabs(np - nu) <= 1e-5 * nu, "%s step %d: gradient norms %.9g and %.9g", fam, step,
              np, nu);
        CHECK(same_real(p, params(p), u, params(u), 1e-5, "params", &pz), "%s step %d: weights "
              "differ after the update", fam, step);
        CHECK(pz, "%s step %d: a padding row of the weights moved", fam, step);
    }
    printf("%s: padded (Vp=64) vs unpadded (V=%d) over 3 steps: outputs within %.2g, padding "
           "rows 0\n", fam, V, worst);

    /* the moments travel without padding: the padded model's file loads into the unpadded
     * model bit for bit, and back */
    char path[4200], path2[4200];
    snprintf(path, sizeof path, "%s/vocab_pad_%s_opt.safetensors", root, fam);
    snprintf(path2, sizeof path2, "%s/vocab_pad_%s_opt2.safetensors", root, fam);
    PwErr err;
    PwModel *u2 = make(arch, 1, ALL), *p2 = make(arch, 0, ALL);
    CHECK(pw_model_optimizer_save(p, path, &err) == 0, "%s: %s", fam, err.msg);
    PwSafetensors *st = NULL;
    const PwStTensor *t = NULL;
    CHECK(pw_st_open(&st, path, &err) == 0 && (t = pw_st_find(st, "adam_m")) &&
              t->shape[0] == (int64_t)pw_model_num_weights(p),
          "%s: adam_m in the file has %lld floats, expected %zu", fam,
          t ? (long long)t->shape[0] : -1LL, pw_model_num_weights(p));
    pw_st_close(st);
    CHECK(pw_model_optimizer_load(u2, path, &err) == 0, "%s: %s", fam, err.msg);
    CHECK(pw_model_optimizer_save(u2, path2, &err) == 0 &&
              pw_model_optimizer_load(p2, path2, &err) == 0, "%s: %s", fam, err.msg);
    char path3[4200];
    snprintf(path3, sizeof path3, "%s/vocab_pad_%s_opt3.safetensors", root, fam);
    CHECK(pw_model_optimizer_save(p2, path3, &err) == 0, "%s: %s", fam, err.msg);
    CHECK(files_equal(path, path2) && files_equal(path, path3),
          "%s: the moments changed on their way through an unpadded model", fam);
    pw_model_free(u2);
    pw_model_free(p2);
    pw_model_free(p);
    pw_model_free(u);
}

/* Checkpoints hold V rows; loading either way gives the same weights, padding 0. */
static void test_checkpoint(const PwArch *arch, const char *fam)
{
    PwModel *p = make(arch, 0, ALL);
    char dir[4200], dir2[4200], path[4300];
    snprintf(dir, sizeof dir, "%s/vocab_pad_%s_ckpt", root, fam);
    snprintf(dir2, sizeof dir2, "%s/vocab_pad_%s_ckpt2", root, fam);
    mkdir(dir, 0755);
    mkdir(dir2, 0755);
    PwErr err;
    CHECK(pw_model_save(p, dir, &err) == 0, "%s: %s", fam, err.msg);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    PwSafetensors *st = NULL;
    const PwStTensor *t = NULL;
    const char *emb =
        arch->family == PW_FAMILY_GPT2 ? "transformer.wte.weight" : "model.embed_tokens.weight";
    CHECK(pw_st_open(&st, path, &err) == 0 && (t = pw_st_find(st, emb)) &&
              t->shape[0] == arch->vocab_size,
          "%s: %s has %lld rows in the file, expected %d", fam, emb,
          t ? (long long)t->shape[0] : -1LL, arch->vocab_size);
    if (arch->family == PW_FAMILY_LLAMA && !arch->tied) {
        t = st ? pw_st_find(st, "lm_head.weight") : NULL;
        CHECK(t && t->shape[0] == arch->vocab_size, "%s: lm_head.weight has %lld rows", fam,
              t ? (long long)t->shape[0] : -1LL);
    }
    pw_st_close(st);
    PwModelOpts ou = {.heads = ALL, .maxB = B, .maxT = T, .vocab_multiple = 1};
    PwModelOpts op = {.heads = ALL, .maxB = B, .maxT = T};
    PwModel *u = pw_model_load(dir, &ou, &err);
    CHECK(u != NULL, "%s: %s", fam, err.msg);
    int pz = 0;
    if (u) {
        CHECK(same_real(p, params(p), u, params(u), 0.0, "load unpadded", &pz),
              "%s: the unpadded load differs", fam);
        CHECK(pw_model_save(u, dir2, &err) == 0, "%s: %s", fam, err.msg);
        PwModel *p2 = pw_model_load(dir2, &op, &err);
        CHECK(p2 && !memcmp(params(p2), params(p), pw_model_num_params(p) * sizeof(float)),
              "%s: padded -> unpadded -> padded is not the same parameter buffer", fam);
        pw_model_free(p2);
        pw_model_free(u);
    }
    pw_model_free(p);
    printf("%s: checkpoints hold %d rows; padded and unpadded loads agree\n", fam,
           arch->vocab_size);
}

/* Padding rows that hold large values (as a broken file or a bug would leave them) change no
 * output, and sampling never draws a padding token. */
static void test_masked(const PwArch *arch, const char *fam)
{
    PwModel *p = make(arch, 0, PW_HEAD_LM), *clean = make(arch, 0, PW_HEAD_LM);
    float *w = params(p);
    for (int i = 0; i < pw_model_num_tensors(p); i++) {
        size_t off, n;
        const char *name = pw_model_tensor_info(p, i, &off, &n);
        size_t real = n;
        if (!strcmp(name, "wte") || !strcmp(name, "lmw")) /* both families' vocabulary rows */
            real = (size_t)arch->vocab_size * arch->n_embd;
        for (size_t k = real; k < n; k++) w[off + k] = 50.0f; /* logit 50 * sum(h): huge */
    }
    static Outs a, b;
    forward(p, &a, 1.0f, PW_HEAD_LM);
    forward(clean, &b, 1.0f, PW_HEAD_LM);
    CHECK(!memcmp(a.logp, b.logp, sizeof a.logp) && !memcmp(a.ent, b.ent, sizeof a.ent) &&
              !memcmp(a.logits, b.logits, sizeof a.logits),
          "%s: poisoned padding rows changed log-probs, entropies or logits", fam);
    PwErr err;
    PwGen *g = pw_gen_create(p, B, 16, &err);
    CHECK(g != NULL, "%s: %s", fam, err.msg);
    int prompt[B * 2] = {1, 2, 3, 4, 5, 6}, over = 0, drawn = 0;
    PwGenConfig cfg = {.max_new_tokens = 12, .stop_token = -1, .pad_token = 0,
                       .sample = {.temperature = 3.0f, .top_k = 0, .top_p = 1.0f}, .seed = 5};
    for (int rep = 0; g && rep < 20; rep++) {
        cfg.seed = 5 + rep;
        CHECK(pw_generate(g, prompt, NULL, B, 2, NULL, &cfg, &err) == 0, "%s: %s", fam, err.msg);
        for (int i = 0; i < B * cfg.max_new_tokens; i++) {
            over += g->tokens[i] >= arch->vocab_size || g->tokens[i] < 0;
            drawn++;
        }
    }
    CHECK(over == 0, "%s: %d of %d sampled tokens are outside [0, %d)", fam, over, drawn,
          arch->vocab_size);
    printf("%s: poisoned padding rows: outputs unchanged, %d tokens sampled, none >= V\n", fam,
           drawn);
    pw_gen_free(g);
    pw_model_free(p);
    pw_model_free(clean);
}

static void test_bad_multiple(void)
{
    PwErr err;
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = B, .maxT = T, .vocab_multiple = -2};
    CHECK(pw_model_create(&gpt2, &o, &err) == NULL && strstr(err.msg, "vocab_multiple -2"),
          "vocab_multiple -2: %s", err.msg);
    o.vocab_multiple = 128; /* any multiple up to the limit */
    PwModel *m = pw_model_create(&gpt2, &o, &err);
    CHECK(m && pw_model_vocab_padded(m) == 128, "vocab_multiple 128: %s",
          m ? "wrong rows" : err.msg);
    pw_model_free(m);
}

int main(int argc, char **argv)
{
    root = argc > 1 ? argv[1] : ".";
    test_same_numbers(&gpt2, "gpt2");
    test_same_numbers(&llama, "llama");
    test_checkpoint(&gpt2, "gpt2");
    test_checkpoint(&llama, "llama");
    test_masked(&gpt2, "gpt2");
    test_masked(&llama, "llama");
    test_bad_multiple();
    return pw_test_done("test_vocab_pad");
}
