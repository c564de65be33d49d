/* test_nonfinite.c: weights that are NaN, infinite or absurdly large never enter or leave a model:
 * crafted checkpoints are refused naming the file and tensor, a bad model is not saved over a good
 * folder, bad AdamW moments are neither loaded nor saved, and a non-finite gradient is no step. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pw_model.h"
#include "pw_safetensors.h"
#include "pw_test.h"

enum { B = 2, T = 8 };
static const PwArch gpt2 = {.family = PW_FAMILY_GPT2, .n_layer = 2, .n_head = 2, .n_embd = 16,
                            .vocab_size = 24, .n_positions = 16};
static const PwArch llama = {.family = PW_FAMILY_LLAMA, .n_layer = 2, .n_head = 4, .n_embd = 16,
                             .vocab_size = 24, .n_positions = 16, .n_kv_head = 2, .n_inner = 20,
                             .norm_eps = 1e-5f, .rope_theta = 10000.0, .tied = 1, .qkv_bias = 1,
                             .hf_type = 1};
static const int ALL = PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE;
static const char *root;

static const char *dir_of(const char *name)
{
    static char buf[8][4096];
    static int k = 0;
    char *d = buf[k++ % 8];
    snprintf(d, 4096, "%s/nonfinite_%s", root, name);
    mkdir(d, 0755);
    return d;
}

static PwModel *make(const PwArch *a, uint64_t seed)
{
    PwErr err;
    PwModelOpts o = {.heads = ALL, .maxB = B, .maxT = T};
    PwModel *m = pw_model_create(a, &o, &err);
    if (!m) {
        fprintf(stderr, "create: %s\n", err.msg);
        exit(1);
    }
    pw_model_init_random(m, seed);
    return m;
}

static PwModel *load(const char *dir, PwErr *err)
{
    PwModelOpts o = {.heads = ALL, .maxB = B, .maxT = T};
    return pw_model_load(dir, &o, err);
}

static float *params(PwModel *m) { return pw_model_params(m).data; } /* CPU: host memory */

static void save_or_die(PwModel *m, const char *dir)
{
    PwErr err;
    if (pw_model_save(m, dir, &err)) {
        fprintf(stderr, "save: %s\n", err.msg);
        exit(1);
    }
}

static int file_equal(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
        if (ca == EOF || cb == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

/* Rewrite dir/model.safetensors with tensor `name` replaced by `fill` (same shape) in dtype dt:
 * element `at` alone when at >= 0, every element when at < 0; the others keep their values. */
static void poison(const char *dir, const char *name, PwDType dt, double fill, int64_t at)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    PwSafetensors *st;
    PwErr err;
    if (pw_st_open(&st, path, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    int n = pw_st_count(st), found = 0;
    PwStWriteTensor *wt = calloc(n, sizeof *wt);
    void *mine = NULL;
    for (int i = 0; i < n; i++) {
        const PwStTensor *t = pw_st_get(st, i);
        wt[i] = (PwStWriteTensor){.name = t->name, .ndim = t->ndim, .data = t->data,
                                  .dtype = t->dtype};
        memcpy(wt[i].shape, t->shape, sizeof t->shape);
        if (strcmp(t->name, name)) continue;
        found = 1;
        float *f = malloc(t->numel * sizeof(float));
        pw_st_read_f32(st, t->name, t->shape, t->ndim, f, &err);
        size_t es = pw_st_dtype_size(dt);
        unsigned char *out = malloc((size_t)t->numel * es);
        for (int64_t j = 0; j < t->numel; j++) {
            double v = (at < 0 || j == at) ? fill : f[j];
            float x = (float)v;
            uint32_t u;
            memcpy(&u, &x, 4);
            if (dt == PW_DT_F32) {
                memcpy(out + j * es, &x, 4);
            } else if (dt == PW_DT_F64) {
                memcpy(out + j * es, &v, 8);
            } else if (dt == PW_DT_BF16) {
                uint16_t h = (uint16_t)(u >> 16); /* truncation keeps inf, NaN and 0 exact */
                memcpy(out + j * es, &h, 2);
            } else { /* F16: the values used here are 0-ish weights, +-inf and NaN */
                uint16_t h = isnan(x) ? 0x7e00 : isinf(x) ? (x > 0 ? 0x7c00 : 0xfc00) : 0;
                memcpy(out + j * es, &h, 2);
            }
        }
        free(f);
        mine = out;
        wt[i].data = out;
        wt[i].dtype = dt;
    }
    if (!found) {
        fprintf(stderr, "%s: no tensor %s\n", path, name);
        exit(1);
    }
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s/model.tmp.safetensors", dir);
    if (pw_st_write(tmp, wt, n, NULL, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    pw_st_close(st);
    free(mine);
    free(wt);
    rename(tmp, path);
}

/* A folder of `a` with tensor `name` poisoned must be refused with a message naming the file,
 * the tensor and `want`. */
static void expect_refused(const PwArch *a, const char *label, const char *name, PwDType dt,
                           double fill, int64_t at, const char *want)
{
    PwModel *m = make(a, 3);
    const char *dir = dir_of(label);
    save_or_die(m, dir);
    pw_model_free(m);
    poison(dir, name, dt, fill, at);
    PwErr err = {{0}};
    PwModel *l = load(dir, &err);
    char quoted[200];
    snprintf(quoted, sizeof quoted, "tensor \"%s\"", name);
    CHECK(l == NULL, "%s: a checkpoint with %s loaded", label, want);
    CHECK(strstr(err.msg, "model.safetensors") && strstr(err.msg, quoted) &&
              strstr(err.msg, want),
          "%s: message \"%s\" should name model.safetensors, %s and say %s", label, err.msg,
          quoted, want);
    printf("  %-12s -> %s\n", label, err.msg);
    pw_model_free(l);
}

static void test_load(void)
{
    printf("checkpoints refused:\n");
    expect_refused(&gpt2, "one_nan", "transformer.h.1.attn.c_attn.weight", PW_DT_F32, NAN, 7,
                   "element 7 is NaN");
    expect_refused(&gpt2, "all_nan", "transformer.ln_f.bias", PW_DT_F32, NAN, -1,
                   "element 0 is NaN");
    expect_refused(&gpt2, "all_inf_bf16", "transformer.wpe.weight", PW_DT_BF16, INFINITY, -1,
                   "element 0 is inf");
    expect_refused(&gpt2, "huge", "transformer.wte.weight", PW_DT_F32, 3e38, -1,
                   "is 3e+38 (a weight must be finite and at most 1e+16");
    expect_refused(&gpt2, "head_f16", "score.weight", PW_DT_F16, -INFINITY, 5,
                   "element 5 is -inf");
    /* F64 rounds 1e300 to float32's infinity: what the model would compute with */
    expect_refused(&gpt2, "f64_overflow", "value_head.bias", PW_DT_F64, 1e300, 0,
                   "element 0 is inf");
    expect_refused(&llama, "llama", "model.layers.1.mlp.gate_proj.weight", PW_DT_F32, NAN, 3,
                   "element 3 is NaN");

    /* the limit itself is a weight: 1e15 everywhere loads and keeps its value */
    PwModel *m = make(&gpt2, 4);
    const char *dir = dir_of("large_ok");
    save_or_die(m, dir);
    pw_model_free(m);
    poison(dir, "transformer.h.0.mlp.c_proj.bias", PW_DT_F32, 1e15, -1);
    PwErr err;
    PwModel *l = load(dir, &err);
    CHECK(l != NULL, "weights of 1e15 refused: %s", err.msg);
    pw_model_free(l);
}

/* A model whose weights went bad is not written, and the folder keeps the good checkpoint. */
static void test_save(void)
{
    PwModel *m = make(&gpt2, 5);
    const char *dir = dir_of("save"), *ref = dir_of("save_ref");
    save_or_die(m, dir);
    save_or_die(m, ref);
    float *p = params(m);
    size_t off, n;
    pw_model_tensor_info(m, 4, &off, &n); /* the third tensor of layer 0, whatever its name */
    float keep = p[off + 2];
    p[off + 2] = NAN;
    PwErr err = {{0}};
    CHECK(pw_model_save(m, dir, &err) != 0, "a model holding NaN was saved");
    CHECK(strstr(err.msg, dir) && strstr(err.msg, pw_model_tensor_info(m, 4, NULL, NULL)) &&
              strstr(err.msg, "element 2 is NaN") && strstr(err.msg, "not saved"),
          "save message \"%s\"", err.msg);
    printf("save refused: %s\n", err.msg);
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/model.safetensors", dir);
    snprintf(b, sizeof b, "%s/model.safetensors", ref);
    CHECK(file_equal(a, b), "the refused save changed %s", a);
    p[off + 2] = 1e20f;
    CHECK(pw_model_save(m, dir, &err) != 0 && strstr(err.msg, "is 1e+20"),
          "a weight of 1e20 was saved (%s)", err.msg);
    p[off + 2] = keep;
    CHECK(pw_model_save(m, dir, &err) == 0, "the repaired model was refused: %s", err.msg);
    pw_model_free(m);
}

/* optimizer.safetensors with a NaN first moment or a negative second moment is refused. */
static void test_moments_load(void)
{
    PwModel *m = make(&gpt2, 6);
    size_t np = pw_model_num_weights(m); /* the file has no padding rows */
    float *mm = calloc(np, sizeof *mm), *vv = calloc(np, sizeof *vv);
    const char *dir = dir_of("moments");
    char path[4200];
    snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
    struct {
        size_t which, at;
        float v;
        const char *want;
    } cases[] = {{0, 11, NAN, "adam_m element 11 is NaN"},
                 {1, 3, INFINITY, "adam_v element 3 is inf"},
                 {1, 0, -1.0f, "adam_v element 0 is -1"}};
    for (size_t c = 0; c < PW_ARRAY_LEN(cases); c++) {
        memset(mm, 0, np * sizeof *mm);
        memset(vv, 0, np * sizeof *vv);
        (cases[c].which ? vv : mm)[cases[c].at] = cases[c].v;
        PwStWriteTensor t[2] = {{"adam_m", 1, {(int64_t)np}, mm, PW_DT_F32},
                                {"adam_v", 1, {(int64_t)np}, vv, PW_DT_F32}};
        PwErr err = {{0}};
        if (pw_st_write(path, t, 2, NULL, &err)) exit(1);
        CHECK(pw_model_optimizer_load(m, path, &err) != 0, "moments with %s loaded",
              cases[c].want);
        CHECK(strstr(err.msg, path) && strstr(err.msg, cases[c].want), "message \"%s\"",
              err.msg);
        printf("moments refused: %s\n", err.msg);
    }
    free(mm);
    free(vv);
    pw_model_free(m);
}

static void fill_grads(PwModel *m, float v)
{
    PwErr err;
    CHECK(pw_model_zero_grad(m, &err) == 0, "%s", err.msg);
    float *g = pw_model_grads(m).data;
    for (size_t i = 0; i < pw_model_num_params(m); i++) g[i] = v;
}

/* A NaN or an infinity in the gradient: the step is skipped, nothing moves. */
static void test_step(void)
{
    PwModel *m = make(&gpt2, 7);
    size_t np = pw_model_num_params(m);
    PwAdamWConfig opt = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.1f, .grad_clip = 1.0f};
    PwErr err;
    fill_grads(m, 0.01f);
    CHECK(pw_model_adamw_step(m, &opt, 1, NULL, &err) == PW_ADAMW_APPLIED, "healthy step");
    CHECK(pw_model_check_params(m, &err) == 0, "healthy weights refused: %s", err.msg);
    const char *dir = dir_of("step");
    char before[4200], after[4200];
    snprintf(before, sizeof before, "%s/before.safetensors", dir);
    snprintf(after, sizeof after, "%s/after.safetensors", dir);
    CHECK(pw_model_optimizer_save(m, before, &err) == 0, "%s", err.msg);
    float *keep = malloc(np * sizeof *keep);
    memcpy(keep, params(m), np * sizeof *keep);
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (size_t k = 0; k < PW_ARRAY_LEN(bad); k++) {
        fill_grads(m, 0.01f);
        ((float *)pw_model_grads(m).data)[np / 2] = bad[k];
        double norm = 0.0;
        int rc = pw_model_adamw_step(m, &opt, 2, &norm, &err);
        CHECK(rc == PW_ADAMW_SKIPPED && !isfinite(norm), "gradient with %g: rc %d, norm %g",
              bad[k], rc, norm);
        CHECK(!memcmp(keep, params(m), np * sizeof *keep), "a skipped step moved the weights");
        CHECK(pw_model_optimizer_save(m, after, &err) == 0 && file_equal(before, after),
              "a skipped step changed the moments");
    }
    /* the check after a step: a bad weight is named, a large valid one passes */
    float *p = params(m);
    p[np - 1] = 1e15f;
    CHECK(pw_model_check_params(m, &err) == 0, "1e15 refused: %s", err.msg);
    p[np - 1] = -INFINITY;
    CHECK(pw_model_check_params(m, &err) != 0 && strstr(err.msg, "is -inf") &&
              strstr(err.msg, pw_model_tensor_info(m, pw_model_num_tensors(m) - 1, NULL, NULL)),
          "check of -inf: \"%s\"", err.msg);
    printf("check after a step: %s\n", err.msg);
    p[np - 1] = 3e17f;
    CHECK(pw_model_check_params(m, &err) != 0 && strstr(err.msg, "is 3e+17"),
          "check of 3e17: \"%s\"", err.msg);
    memcpy(params(m), keep, np * sizeof *keep);

    /* Without clipping a finite gradient of 1e20 squares past float32 in the second moment
     * (the weights stay finite: the step is m / sqrt(inf) = 0): such moments are not saved. */
    opt.grad_clip = 0.0f;
    fill_grads(m, 1e20f);
    CHECK(pw_model_adamw_step(m, &opt, 2, NULL, &err) == PW_ADAMW_APPLIED, "1e20 gradient");
    CHECK(pw_model_optimizer_save(m, before, &err) != 0 && strstr(err.msg, "adam_v") &&
              strstr(err.msg, "is inf") && strstr(err.msg, "not saved"),
          "moments holding inf: \"%s\"", err.msg);
    printf("moments not saved: %s\n", err.msg);
    CHECK(file_equal(before, after), "the refused save changed %s", before);
    free(keep);
    pw_model_free(m);
}

int main(int argc, char **argv)
{
    root = argc > 1 ? argv[1] : ".";
    test_load();
    test_save();
    test_moments_load();
    test_step();
    return pw_test_done("test_nonfinite");
}
