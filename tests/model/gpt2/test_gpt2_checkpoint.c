/* test_gpt2_checkpoint.c: save/load round trips (bit-identical forward, BF16/F16 files, heads
 * present or initialised, critic from reward model) and the loader's error messages. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pw_model.h"
#include "pw_file.h"
#include "pw_safetensors.h"
#include "pw_test.h"

enum { B = 2, T = 8 };
static const PwArch cfg = {.family = PW_FAMILY_GPT2, .n_layer = 2, .n_head = 2, .n_embd = 16,
                           .vocab_size = 24, .n_positions = 16};
static const int ALL = PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE;
static const char *root;

static const char *dir_of(const char *name)
{
    static char buf[8][4096];
    static int k = 0;
    char *d = buf[k++ % 8];
    snprintf(d, 4096, "%s/ckpt_%s", root, name);
    mkdir(d, 0755);
    return d;
}

static PwModelOpts opts(int heads, uint64_t seed)
{
    return (PwModelOpts){.heads = heads, .maxB = B, .maxT = T, .seed = seed};
}

static PwModel *make(int heads, uint64_t seed)
{
    PwErr err;
    PwModelOpts o = opts(heads, seed);
    PwModel *m = pw_model_create(&cfg, &o, &err);
    if (!m) {
        fprintf(stderr, "create: %s\n", err.msg);
        exit(1);
    }
    pw_model_init_random(m, seed);
    return m;
}

static PwModel *load(const char *dir, int heads, uint64_t seed, int value_from_score,
                     PwErr *err)
{
    PwModelOpts o = opts(heads, seed);
    o.value_from_score = value_from_score;
    return pw_model_load(dir, &o, err);
}

/* The same, allowing the score and value heads to be made fresh where the folder lacks them. */
static PwModel *load_fresh(const char *dir, int heads, uint64_t seed, PwErr *err)
{
    PwModelOpts o = opts(heads, seed);
    o.fresh_heads = PW_HEAD_SCORE | PW_HEAD_VALUE;
    return pw_model_load(dir, &o, err);
}

static void save(PwModel *m, const char *dir)
{
    PwErr err;
    if (pw_model_save(m, dir, &err)) {
        fprintf(stderr, "save: %s\n", err.msg);
        exit(1);
    }
}

/* The parameters (host memory: CPU models), and one tensor of them by its name (NULL when the
 * model lacks it). */
static float *params(PwModel *m) { return pw_model_params(m).data; }
static float *tensor(PwModel *m, const char *name)
{
    for (int i = 0; i < pw_model_num_tensors(m); i++) {
        size_t off, n;
        const char *t = pw_model_tensor_info(m, i, &off, &n);
        if (!strcmp(t, name)) return n ? params(m) + off : NULL;
    }
    return NULL;
}

/* All outputs of a forward of the test batch. */
typedef struct Out {
    float logits[B * T * 24], logp[B * T], entropy[B * T], value[B * T], score[B];
} Out;
static void forward_all(PwModel *m, Out *o)
{
    static const int inp[B * T] = {1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 9, 10, 11, 23, 12};
    static const int mask[B * T] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1};
    int targets[B * T];
    pw_lm_next_token_targets(targets, inp, mask, B, T);
    PwModelInput in = {inp, mask, targets, B, T, 1.0f};
    PwOutputs out = {0, T, o->logp, o->entropy, o->value, o->score, o->logits};
    PwErr err;
    CHECK(pw_model_forward(m, &in, &out, &err) == 0, "forward: %s", err.msg);
}

/* ---- bit-identical round trip */
static void test_round_trip(void)
{
    PwModel *m = make(ALL, 3);
    const char *dir = dir_of("roundtrip");
    save(m, dir);
    PwErr err;
    PwModel *l = load(dir, ALL, 99, 0, &err);
    CHECK(l != NULL, "load: %s", err.msg);
    if (!l) return;
    size_t np = pw_model_num_params(m);
    CHECK(pw_model_num_params(l) == np && !memcmp(params(l), params(m), np * sizeof(float)),
          "parameters differ after save + load");
    static Out a, b;
    forward_all(m, &a);
    forward_all(l, &b);
    const size_t bt = B * T * sizeof(float);
    CHECK(!memcmp(a.logits, b.logits, sizeof a.logits), "logits differ");
    CHECK(!memcmp(a.logp, b.logp, bt) && !memcmp(a.entropy, b.entropy, bt),
          "logp/entropy differ");
    CHECK(!memcmp(a.value, b.value, bt), "values differ");
    CHECK(!memcmp(a.score, b.score, B * sizeof(float)), "scores differ");
    pw_model_free(l);

    /* fewer heads than the file has: the trunk alone, and the same function */
    l = load(dir, PW_HEAD_LM, 0, 0, &err);
    CHECK(l && tensor(l, "scorew") == NULL && tensor(l, "valuew") == NULL, "LM-only load");
    if (l) {
        size_t trunk = pw_model_num_params(l);
        CHECK(trunk == np - 2 * (cfg.n_embd + 1), "LM-only size %zu", trunk);
        CHECK(!memcmp(params(l), params(m), trunk * sizeof(float)), "trunk differs");
        pw_model_free(l);
    }
    pw_model_free(m);
}

/* ---- heads the file lacks are an error, or initialised where asked for; a critic copies the
 * reward model's score head */
static void test_heads(void)
{
    PwErr err;
    const size_t C = cfg.n_embd;
    PwModel *lm = make(PW_HEAD_LM, 4);
    const char *dir = dir_of("lm_only");
    save(lm, dir);
    /* a folder without a score head is no reward model: never a random head in silence */
    PwModel *l = load(dir, PW_HEAD_SCORE, 5, 0, &err);
    CHECK(!l && strstr(err.msg, dir) &&
              strstr(err.msg, "has no score.weight: it is not a reward model"),
          "score head from an LM folder: %s", l ? "loaded" : err.msg);
    pw_model_free(l);
    l = load(dir, PW_HEAD_VALUE, 5, 0, &err);
    CHECK(!l && strstr(err.msg, dir) &&
              strstr(err.msg, "has no value_head.weight: it is not a critic"),
          "value head from an LM folder: %s", l ? "loaded" : err.msg);
    pw_model_free(l);
    CHECK(pw_model_check_heads(dir, PW_HEAD_SCORE, &err) == -1 &&
              strstr(err.msg, "has no score.weight"), "check_heads: %s", err.msg);
    CHECK(pw_model_check_heads(dir, PW_HEAD_LM, &err) == 0, "check_heads LM: %s", err.msg);
    l = load_fresh(dir, ALL, 5, &err);
    CHECK(l != NULL, "load: %s", err.msg);
    PwModel *fresh = make(ALL, 5);
    if (l) {
        CHECK(!memcmp(tensor(l, "scorew"), tensor(fresh, "scorew"), C * sizeof(float)) &&
                  tensor(l, "scoreb")[0] == 0.0f,
              "missing score head not initialised from the seed");
        CHECK(!memcmp(tensor(l, "valuew"), tensor(fresh, "valuew"), C * sizeof(float)) &&
                  tensor(l, "valueb")[0] == 0.0f,
              "missing value head not initialised from the seed");
        double ss = 0.0;
        const float *sw = tensor(l, "scorew");
        for (size_t i = 0; i < C; i++) ss += sw[i] * sw[i];
        /* std 1/sqrt(C+1): the mean square should be near 1/(C+1) */
        CHECK(ss / C > 0.2 / (C + 1) && ss / C < 5.0 / (C + 1), "head init scale %g", ss / C);
        pw_model_free(l);
    }
    /* the critic from the reward model */
    PwModel *rm = make(PW_HEAD_SCORE, 6);
    tensor(rm, "scoreb")[0] = 0.25f;
    const char *rmdir_ = dir_of("reward");
    save(rm, rmdir_);
    CHECK(pw_model_check_heads(rmdir_, PW_HEAD_SCORE, &err) == 0, "check_heads: %s", err.msg);
    CHECK(pw_model_check_heads(rmdir_, PW_HEAD_VALUE, &err) == -1 &&
              strstr(err.msg, "has no value_head.weight"), "check_heads value: %s", err.msg);
    PwModel *critic = load(rmdir_, PW_HEAD_VALUE, 0, 1, &err);
    CHECK(critic != NULL, "critic: %s", err.msg);
    if (critic) {
        CHECK(!memcmp(tensor(critic, "valuew"), tensor(rm, "scorew"), C * sizeof(float)) &&
                  tensor(critic, "valueb")[0] == 0.25f,
              "critic value head is not the reward model's score head");
        CHECK(!memcmp(params(critic), params(rm),
                      (pw_model_num_params(critic) - C - 1) * sizeof(float)),
              "critic trunk differs from the reward model's");
        pw_model_free(critic);
    }
    critic = load(dir, PW_HEAD_VALUE, 0, 1, &err);
    CHECK(!critic && strstr(err.msg, "\"score.weight\" is missing"),
          "critic from an LM checkpoint: %s", critic ? "loaded" : err.msg);
    critic = load(rmdir_, PW_HEAD_SCORE, 0, 1, &err);
    CHECK(!critic && strstr(err.msg, "a critic needs the value head"),
          "critic without a value head: %s", critic ? "loaded" : err.msg);
    pw_model_free(rm);
    pw_model_free(fresh);
    pw_model_free(lm);
}

/* ---- half-precision files: rewrite our file in BF16/F16, load, compare with rounded values */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
    return (uint16_t)(u >> 16);
}
static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void copy_file(const char *from, const char *to)
{
    FILE *f = fopen(from, "rb");
    char buf[1 << 14];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    PwErr err;
    if (!n || pw_file_write(to, buf, n, &err)) {
        fprintf(stderr, "copy %s -> %s failed\n", from, to);
        exit(1);
    }
}

/* Rewrite src_dir's checkpoint into dst_dir: tensors in dtype dt (F32, BF16 or F16), names
 * without "transformer." if strip, plus the tensors Hugging Face files may carry and we ignore
 * (lm_head.weight, a causal-mask buffer) if extras. */
static void rewrite(const char *src_dir, const char *dst_dir, PwDType dt, int strip, int extras)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", src_dir);
    PwSafetensors *st;
    PwErr err;
    if (pw_st_open(&st, path, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    int n = pw_st_count(st), k = 0;
    PwStWriteTensor *wt = calloc(n + 2, sizeof *wt);
    void **bufs = calloc(n, sizeof *bufs);
    for (int i = 0; i < n; i++) {
        const PwStTensor *t = pw_st_get(st, i);
        float *f = malloc(t->numel * sizeof(float));
        pw_st_read_f32(st, t->name, t->shape, t->ndim, f, &err);
        uint16_t *h = dt == PW_DT_F32 ? NULL : malloc(t->numel * sizeof(uint16_t));
        for (int64_t j = 0; h && j < t->numel; j++) {
#ifdef __FLT16_MAX__
            if (dt == PW_DT_F16) {
                _Float16 x = (_Float16)f[j];
                memcpy(&h[j], &x, 2);
                continue;
            }
#endif
            h[j] = to_bf16(f[j]);
        }
        if (h) {
            free(f);
            bufs[i] = h;
        } else {
            bufs[i] = f;
        }
        wt[k] = (PwStWriteTensor){.name = t->name, .ndim = t->ndim, .data = bufs[i], .dtype = dt};
        if (strip && !strncmp(t->name, "transformer.", 12)) wt[k].name = t->name + 12;
        memcpy(wt[k].shape, t->shape, sizeof t->shape);
        k++;
    }
    static float junk[4 * 4];
    if (extras) {
        /* wrong on purpose: a loader that read them would break the round trip */
        wt[k++] = (PwStWriteTensor){.name = "lm_head.weight", .ndim = 2, .shape = {4, 4},
                                    .data = junk};
        wt[k++] = (PwStWriteTensor){.name = "h.0.attn.bias", .ndim = 4, .shape = {1, 1, 4, 4},
                                    .data = junk};
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dst_dir);
    if (pw_st_write(path, wt, k, NULL, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    for (int i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    free(wt);
    pw_st_close(st);
    char from[4200], to[4200];
    snprintf(from, sizeof from, "%s/config.json", src_dir);
    snprintf(to, sizeof to, "%s/config.json", dst_dir);
    copy_file(from, to);
}

/* dt: half-precision files load as the rounded values; F32 with strip and extras: a file in
 * bare GPT2Model names with tensors we ignore loads exactly */
static void test_rewritten(PwDType dt, int strip, int extras, const char *name)
{
    PwModel *m = make(ALL, 8);
    const char *src = dir_of("rewrite_src"), *dst = dir_of(name);
    save(m, src);
    rewrite(src, dst, dt, strip, extras);
    PwErr err;
    PwModel *l = load(dst, ALL, 0, 0, &err);
    CHECK(l != NULL, "%s load: %s", name, err.msg);
    if (!l) return;
    size_t bad = 0;
    const float *pm = params(m), *pl = params(l);
    for (size_t i = 0; i < pw_model_num_params(m); i++) {
        float x = pm[i], want = x;
        if (dt == PW_DT_BF16) want = from_bf16(to_bf16(x));
#ifdef __FLT16_MAX__
        if (dt == PW_DT_F16) want = (float)(_Float16)x;
#endif
        bad += pl[i] != want;
    }
    CHECK(bad == 0, "%s: %zu parameters differ from the (rounded) originals", name, bad);
    pw_model_free(l);
    pw_model_free(m);
}

/* ---- loader errors: one broken folder per case, each with its own message */
static void edit_config(const char *dir, const char *key, json_t *value)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *rootj = json_load_file(path, 0, NULL);
    if (value)
        json_object_set_new(rootj, key, value);
    else
        json_object_del(rootj, key);
    char *text = json_dumps(rootj, JSON_INDENT(2));
    PwErr err;
    pw_file_write(path, text, strlen(text), &err);
    free(text);
    json_decref(rootj);
}

/* Rewrite dir/model.safetensors without tensor `name`, adding `extra` (if not NULL) instead. */
static void replace_tensor(const char *dir, const char *name, const PwStWriteTensor *extra)
{
    char path[4200], tmp[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    snprintf(tmp, sizeof tmp, "%s/model.tmp.safetensors", dir);
    PwSafetensors *st;
    PwErr err;
    if (pw_st_open(&st, path, &err)) exit(1);
    int n = pw_st_count(st), k = 0;
    PwStWriteTensor *wt = calloc(n + 1, sizeof *wt);
    for (int i = 0; i < n; i++) {
        const PwStTensor *t = pw_st_get(st, i);
        if (!strcmp(t->name, name)) continue;
        wt[k] = (PwStWriteTensor){.name = t->name, .ndim = t->ndim, .data = t->data,
                                  .dtype = t->dtype};
        memcpy(wt[k].shape, t->shape, sizeof t->shape);
        k++;
    }
    if (extra) wt[k++] = *extra;
    if (pw_st_write(tmp, wt, k, NULL, &err)) exit(1);
    pw_st_close(st);
    free(wt);
    rename(tmp, path);
}

static void expect_error(const char *dir, const char *file, const char *want, const char *what)
{
    PwErr err = {{0}};
    PwModel *m = load(dir, ALL, 0, 0, &err);
    CHECK(m == NULL, "%s: loaded", what);
    pw_model_free(m);
    CHECK(strstr(err.msg, want) != NULL && strstr(err.msg, file) != NULL,
          "%s: message \"%s\" should name %s and say %s", what, err.msg, file, want);
    printf("  %-28s -> %s\n", what, err.msg);
}

static void test_errors(void)
{
    PwModel *m = make(ALL, 9);
    const char *d;
    printf("loader errors:\n");

    /* config.json edits: key, new value (NULL deletes; a string value is written as a string,
     * anything else as an integer), the file the message must name, and what it must say */
    static const struct {
        const char *dir, *key, *str;
        long long num;
        int del;
        const char *file, *want, *what;
    } cases[] = {
        {"err_nokey", "n_head", NULL, 0, 1, "config.json", "missing key \"n_head\"",
         "missing config key"},
        {"err_type", "n_embd", "16", 0, 0, "config.json", "key \"n_embd\" must be an integer",
         "wrong type"},
        {"err_zero", "n_layer", NULL, 0, 0, "config.json",
         "key \"n_layer\" must be a positive integer, got 0", "non-positive value"},
        {"err_heads", "n_head", NULL, 3, 0, "config.json",
         "n_embd (16) must be a multiple of n_head (3)", "n_embd % n_head"},
        {"err_act", "activation_function", "relu", 0, 0, "config.json",
         "\"activation_function\" must be \"gelu_new\"", "other activation"},
        {"err_family", "model_type", "bert", 0, 0, "config.json",
         "key \"model_type\" must be one of \"gpt2\"", "unknown model family"},
        {"err_shape", "n_positions", NULL, 32, 0, "model.safetensors",
         "tensor \"transformer.wpe.weight\" has shape [16, 16] but config.json implies [32, 16]",
         "shape mismatch (n_positions)"},
        {"err_shape2", "n_embd", NULL, 32, 0, "model.safetensors",
         "tensor \"transformer.wte.weight\" has shape [24, 16] but config.json implies [24, 32]",
         "shape mismatch (n_embd)"},
        {"err_layers", "n_layer", NULL, 3, 0, "model.safetensors",
         "tensor \"transformer.h.2.ln_1.weight\" is missing", "more layers than tensors"},
    };
    for (size_t i = 0; i < PW_ARRAY_LEN(cases); i++) {
        d = dir_of(cases[i].dir);
        save(m, d);
        edit_config(d, cases[i].key,
                    cases[i].del   ? NULL
                    : cases[i].str ? json_string(cases[i].str)
                                   : json_integer(cases[i].num));
        expect_error(d, cases[i].file, cases[i].want, cases[i].what);
    }

    d = dir_of("err_missing");
    save(m, d);
    replace_tensor(d, "transformer.h.1.mlp.c_fc.bias", NULL);
    expect_error(d, "model.safetensors", "tensor \"transformer.h.1.mlp.c_fc.bias\" is missing",
                 "missing tensor");

    d = dir_of("err_headshape");
    save(m, d);
    {
        /* a head tensor of the wrong width is an error too, not a silent re-init */
        float w[8] = {0};
        PwStWriteTensor narrow = {.name = "value_head.weight", .ndim = 2, .shape = {1, 8},
                                  .data = w};
        replace_tensor(d, "value_head.weight", &narrow);
    }
    expect_error(d, "model.safetensors",
                 "tensor \"value_head.weight\" has shape [1, 8] but config.json implies [1, 16]",
                 "head shape mismatch");

    d = dir_of("err_dupkey");
    save(m, d);
    {
        /* a key given twice: transformers' json reader keeps the last, ours refuses */
        char cfgpath[4200];
        snprintf(cfgpath, sizeof cfgpath, "%s/config.json", d);
        static const char text[] = "{\"n_layer\": 2, \"n_head\": 2, \"n_embd\": 16, "
                                   "\"vocab_size\": 24, \"n_positions\": 16, \"n_layer\": 1}";
        PwErr werr;
        pw_file_write(cfgpath, text, strlen(text), &werr);
    }
    expect_error(d, "config.json", "duplicate object key", "key given twice");

    d = dir_of("err_noconfig");
    save(m, d);
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", d);
    remove(path);
    expect_error(d, "config.json", "config.json: does not exist", "no config.json");

    /* What stands at a file's name but is no file: a FIFO (no writer: opening it would wait
     * for ever), a directory. Each is refused by what it is, before it is read. */
    static const struct {
        const char *dir, *file, *want, *what;
        int fifo;
    } odd[] = {
        {"err_fifo_config", "config.json", "config.json: not a regular file (a FIFO)",
         "config.json a FIFO", 1},
        {"err_fifo_weights", "model.safetensors", "model.safetensors: not a regular file (a FIFO)",
         "model.safetensors a FIFO", 1},
        {"err_dir_config", "config.json", "config.json: is a directory", "config.json a folder",
         0},
    };
    for (size_t i = 0; i < PW_ARRAY_LEN(odd); i++) {
        d = dir_of(odd[i].dir);
        save(m, d);
        snprintf(path, sizeof path, "%s/%s", d, odd[i].file);
        remove(path);
        CHECK((odd[i].fifo ? mkfifo(path, 0600) : mkdir(path, 0755)) == 0, "make %s", path);
        expect_error(d, odd[i].file, odd[i].want, odd[i].what);
        remove(path); /* the next run saves here again */
    }
    pw_model_free(m);
}

/* ---- config.json keys whose other values transformers computes and we do not: each is refused
 * by name; the values that mean our function load */
static void test_function_keys(void)
{
    PwModel *m = make(ALL, 10);
    printf("keys of another function:\n");
    /* kind: b bool, s string, i integer, f float, n null */
    static const struct {
        const char *key;
        char kind;
        const char *str;
        double num;
        const char *want; /* NULL: loads */
    } cases[] = {
        {"scale_attn_weights", 'b', NULL, 0, "key \"scale_attn_weights\" must be true"},
        {"scale_attn_by_inverse_layer_idx", 'b', NULL, 1,
         "key \"scale_attn_by_inverse_layer_idx\" must be false"},
        {"add_cross_attention", 'b', NULL, 1, "key \"add_cross_attention\" must be false"},
        {"activation_function", 's', "gelu", 0, "key \"activation_function\" must be \"gelu_new\""},
        {"activation_function", 's', "quick_gelu", 0,
         "key \"activation_function\" must be \"gelu_new\""},
        {"n_inner", 'i', NULL, 32, "key \"n_inner\" must be null or 4 * n_embd = 64"},
        {"layer_norm_epsilon", 'f', NULL, 1e-6, "key \"layer_norm_epsilon\" must be 1e-05"},
        {"tie_word_embeddings", 'b', NULL, 0, "key \"tie_word_embeddings\" must be true"},
        {"scale_attn_weights", 'n', NULL, 0, "key \"scale_attn_weights\" must be true"},
        /* the same function under other names, or settings that do not change it */
        {"activation_function", 's', "gelu_pytorch_tanh", 0, NULL},
        {"activation_function", 's', "gelu_fast", 0, NULL},
        {"n_inner", 'i', NULL, 64, NULL},
        {"n_inner", 'n', NULL, 0, NULL},
        {"scale_attn_weights", 'b', NULL, 1, NULL},
        {"reorder_and_upcast_attn", 'b', NULL, 1, NULL},
        {"resid_pdrop", 'f', NULL, 0.1, NULL},
    };
    for (size_t i = 0; i < PW_ARRAY_LEN(cases); i++) {
        char name[32], what[96];
        snprintf(name, sizeof name, "function_%zu", i);
        const char *d = dir_of(name);
        save(m, d);
        json_t *v = cases[i].kind == 'b'   ? json_boolean(cases[i].num != 0)
                    : cases[i].kind == 's' ? json_string(cases[i].str)
                    : cases[i].kind == 'i' ? json_integer((json_int_t)cases[i].num)
                    : cases[i].kind == 'f' ? json_real(cases[i].num)
                                           : json_null();
        edit_config(d, cases[i].key, v);
        snprintf(what, sizeof what, "%s %s", cases[i].key,
                 cases[i].kind == 's' ? cases[i].str : cases[i].kind == 'n' ? "null" : "");
        if (cases[i].want) {
            expect_error(d, "config.json", cases[i].want, what);
        } else {
            PwErr err;
            PwModel *l = load(d, ALL, 0, 0, &err);
            CHECK(l != NULL, "%s: %s", what, err.msg);
            pw_model_free(l);
        }
    }
    pw_model_free(m);
}

/* ---- absurd sizes: refused by name from config.json alone, before anything is allocated */
static const PwArch llama_cfg = {.family = PW_FAMILY_LLAMA, .n_layer = 2, .n_head = 2,
                                 .n_embd = 16, .vocab_size = 24, .n_positions = 16,
                                 .n_kv_head = 1, .n_inner = 32, .norm_eps = 1e-5f,
                                 .rope_theta = 10000.0};

static void test_too_large(void)
{
    PwErr err;
    PwModelOpts o = opts(PW_HEAD_LM, 1);
    PwModel *gpt2 = make(PW_HEAD_LM, 1), *llama = pw_model_create(&llama_cfg, &o, &err);
    CHECK(llama != NULL, "llama: %s", err.msg);
    if (!llama) return;
    pw_model_init_random(llama, 1);
    printf("absurd sizes:\n");
    /* a folder, up to two config.json keys set, and what the message must name */
    static const struct {
        int llama;
        const char *key1;
        long long v1;
        const char *key2;
        long long v2;
        const char *want;
    } cases[] = {
        {0, "n_embd", 1073741824, NULL, 0, "n_embd 1073741824"},
        {0, "n_layer", 1000000, "n_embd", 1024, "n_layer 1000000"},
        {0, "vocab_size", 2147483647, "n_embd", 1024, "vocab_size 2147483647"},
        {0, "n_embd", 2147483646, NULL, 0, "n_embd 2147483646"},
        {1, "hidden_size", 1073741824, NULL, 0, "hidden_size 1073741824"},
        {1, "num_hidden_layers", 1000000, "hidden_size", 1024, "num_hidden_layers 1000000"},
        {1, "vocab_size", 2147483647, "hidden_size", 1024, "vocab_size 2147483647"},
        {1, "intermediate_size", 2147483647, NULL, 0, "intermediate_size 2147483647"},
    };
    for (size_t i = 0; i < PW_ARRAY_LEN(cases); i++) {
        char name[32], what[96];
        snprintf(name, sizeof name, "too_large_%zu", i);
        const char *d = dir_of(name);
        save(cases[i].llama ? llama : gpt2, d);
        edit_config(d, cases[i].key1, json_integer(cases[i].v1));
        if (cases[i].key2) edit_config(d, cases[i].key2, json_integer(cases[i].v2));
        snprintf(what, sizeof what, "%s %lld", cases[i].key1, cases[i].v1);
        PwArch a;
        CHECK(pw_arch_load(&a, d, &err) == -1 && strstr(err.msg, "config.json") &&
                  strstr(err.msg, cases[i].want) && strstr(err.msg, "too large"),
              "%s: pw_arch_load: %s", what, err.msg);
        expect_error(d, "config.json", "too large", what);
    }
    /* a head_dim of 2^32 + 8 would read as 8 through an int: it must be refused, not matched */
    const char *d = dir_of("head_dim_wraps");
    save(llama, d);
    edit_config(d, "head_dim", json_integer(4294967304LL));
    expect_error(d, "config.json", "key \"head_dim\" 4294967304 is too large",
                 "head_dim 2^32 + 8");
    /* the sizes of a model that does fit are left alone */
    PwArch big = {.family = PW_FAMILY_GPT2, .n_layer = 48, .n_head = 25, .n_embd = 1600,
                  .vocab_size = 50257, .n_positions = 1024};
    CHECK(pw_arch_check(&big, &err) == 0, "GPT-2 XL refused: %s", err.msg);
    pw_model_free(llama);
    pw_model_free(gpt2);
}

/* ---- a trunk tensor the config does not describe is refused, never dropped: a Llama saved with
 * attention biases read as one without, a Qwen3 file called qwen2, a layer past the count */
static void test_unread(void)
{
    printf("tensors the config does not describe:\n");
    PwErr err;
    PwModelOpts o = opts(PW_HEAD_LM, 1);
    PwArch biased = llama_cfg, qwen3 = llama_cfg;
    biased.qkv_bias = biased.o_bias = 1;
    qwen3.hf_type = 3, qwen3.qk_norm = 1, qwen3.head_dim = 10;
    PwModel *a = pw_model_create(&biased, &o, &err), *b = pw_model_create(&qwen3, &o, &err);
    CHECK(a && b, "create: %s", err.msg);
    if (!a || !b) return;
    pw_model_init_random(a, 3);
    pw_model_init_random(b, 4);
    const char *d = dir_of("unread_o_bias");
    save(a, d);
    PwModel *m = load(d, PW_HEAD_LM, 0, 0, &err);
    CHECK(m != NULL, "attention_bias true loads: %s", err.msg);
    pw_model_free(m);
    edit_config(d, "attention_bias", json_false());
    expect_error(d, "model.safetensors", "tensor \"model.layers.0.self_attn.q_proj.bias\" is "
                 "not part of the llama model its config.json describes "
                 "(num_hidden_layers 2): loading would drop it",
                 "attention_bias false over biases");
    d = dir_of("unread_qwen3");
    save(b, d);
    edit_config(d, "model_type", json_string("qwen2"));
    edit_config(d, "head_dim", json_integer(8));
    expect_error(d, "model.safetensors", "tensor \"model.layers.0.self_attn.q_norm.weight\" is "
                 "not part of the qwen2 model", "qwen3 called qwen2");
    d = dir_of("unread_layers");
    save(b, d);
    edit_config(d, "num_hidden_layers", json_integer(1));
    expect_error(d, "model.safetensors", "tensor \"model.layers.1.", "a layer past the count");
    pw_model_free(a);
    pw_model_free(b);
}

int main(int argc, char **argv)
{
    root = argc > 1 ? argv[1] : ".";
    test_unread();
    test_round_trip();
    test_heads();
    test_rewritten(PW_DT_BF16, 0, 0, "bf16");
#ifdef __FLT16_MAX__
    test_rewritten(PW_DT_F16, 0, 0, "f16");
#endif
    test_rewritten(PW_DT_F32, 1, 1, "bare_names");
    test_errors();
    test_function_keys();
    test_too_large();
    return pw_test_done("test_gpt2_checkpoint");
}
