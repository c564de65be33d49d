/* gpt2_io.c: GPT-2 checkpoints as Hugging Face writes them: config.json plus model.safetensors
 * with transformer.* names and Conv1D weights stored (in, out), so folders move both ways. */
#include "gpt2.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_safetensors.h"

/* ------------------------------------------------------------------------------------------ */
/* config.json */

static int json_int_key(const json_t *root, const char *key, const char *path, int *out,
                        PwErr *err)
{
    const json_t *v = json_object_get(root, key);
    if (!v) return pw_errf(err, "%s: missing key \"%s\"", path, key);
    if (!json_is_integer(v))
        return pw_errf(err, "%s: key \"%s\" must be an integer", path, key);
    json_int_t x = json_integer_value(v);
    if (x <= 0)
        return pw_errf(err, "%s: key \"%s\" must be a positive integer, got %lld", path, key,
                       (long long)x);
    /* the sizes are ints; whether they make a model that fits is pw_arch_check's to say */
    if (x > INT_MAX)
        return pw_errf(err, "%s: key \"%s\" %lld is too large: at most %d", path, key,
                       (long long)x, INT_MAX);
    *out = (int)x;
    return 0;
}

int pw_gpt2_arch_from_json(PwArch *arch, const void *json_root, const char *path, PwErr *err)
{
    const json_t *root = json_root;
    int rc = -1;
    PwArch c = {.family = PW_FAMILY_GPT2};
    if (json_int_key(root, "n_layer", path, &c.n_layer, err) ||
        json_int_key(root, "n_head", path, &c.n_head, err) ||
        json_int_key(root, "n_embd", path, &c.n_embd, err) ||
        json_int_key(root, "vocab_size", path, &c.vocab_size, err) ||
        json_int_key(root, "n_positions", path, &c.n_positions, err))
        goto done;
    if (c.n_embd % c.n_head) {
        pw_errf(err, "%s: n_embd (%d) must be a multiple of n_head (%d)", path, c.n_embd,
                c.n_head);
        goto done;
    }
    /* keys that, if present, would make transformers compute a function we do not */
    const json_t *v;
    const char *act = json_string_value(json_object_get(root, "activation_function"));
    const json_t *inner = json_object_get(root, "n_inner");
    char inner_what[64];
    snprintf(inner_what, sizeof inner_what, "null or 4 * n_embd = %lld", 4LL * c.n_embd);
    if ((v = json_object_get(root, "model_type")) &&
        (!json_is_string(v) || strcmp(json_string_value(v), "gpt2"))) {
        pw_errf(err, "%s: key \"model_type\" must be \"gpt2\"", path);
        goto done;
    }
    /* gelu_pytorch_tanh and gelu_fast are transformers' other spellings of the tanh GELU */
    if (pw_config_need(root, "activation_function", path,
             act && (!strcmp(act, "gelu_new") || !strcmp(act, "gelu_pytorch_tanh") ||
                     !strcmp(act, "gelu_fast")),
             "\"gelu_new\", \"gelu_pytorch_tanh\" or \"gelu_fast\"", err) ||
        pw_config_need(root, "layer_norm_epsilon", path,
             json_is_number(v = json_object_get(root, "layer_norm_epsilon")) &&
                 fabs(json_number_value(v) - 1e-5) <= 1e-12,
             "1e-05", err) ||
        pw_config_need(root, "tie_word_embeddings", path,
             json_is_true(json_object_get(root, "tie_word_embeddings")),
             "true", err) ||
        pw_config_need(root, "n_inner", path,
             json_is_null(inner) ||
                 (json_is_integer(inner) && json_integer_value(inner) == 4LL * c.n_embd),
             inner_what, err) ||
        /* false, or null (falsy to transformers), leaves the scores unscaled by 1/sqrt(hs) */
        pw_config_need(root, "scale_attn_weights", path,
             json_is_true(json_object_get(root, "scale_attn_weights")), "true", err) ||
        pw_config_need(root, "scale_attn_by_inverse_layer_idx", path,
             !json_is_true(json_object_get(root, "scale_attn_by_inverse_layer_idx")), "false",
             err) ||
        /* cross-attention layers belong to an encoder-decoder model */
        pw_config_need(root, "add_cross_attention", path,
             !json_is_true(json_object_get(root, "add_cross_attention")), "false", err))
        goto done;
    /* Accepted as they are: reorder_and_upcast_attn only reorders half-precision arithmetic
     * (ppo_world computes in float32), the dropouts act in training mode only (PPO trains
     * without them), summary_* belong to GPT2DoubleHeadsModel. */
    *arch = c;
    rc = 0;
done:
    return rc;
}

static int config_save(const PwArch *cfg, const char *dtype, const char *path, PwErr *err)
{
    /* what GPT2Config.save_pretrained writes, with dropout off: PPO runs without it */
    json_t *root = json_pack(
        "{s:s, s:[s], s:i, s:i, s:i, s:i, s:i, s:i, s:n, s:s, s:f, s:b, s:f, s:f, s:f, s:f,"
        " s:b, s:b, s:b, s:s}",
        "model_type", "gpt2", "architectures", "GPT2LMHeadModel", "n_layer", cfg->n_layer,
        "n_head", cfg->n_head, "n_embd", cfg->n_embd, "vocab_size", cfg->vocab_size,
        "n_positions", cfg->n_positions, "n_ctx", cfg->n_positions, "n_inner",
        "activation_function", "gelu_new", "layer_norm_epsilon", 1e-5, "tie_word_embeddings", 1,
        "resid_pdrop", 0.0, "embd_pdrop", 0.0, "attn_pdrop", 0.0, "initializer_range", 0.02,
        "scale_attn_weights", 1, "scale_attn_by_inverse_layer_idx", 0,
        "reorder_and_upcast_attn", 0, "torch_dtype", dtype);
    pw_arch_write_ids(cfg, root);
    return pw_config_write(root, path, err);
}

/* ------------------------------------------------------------------------------------------ */
/* the tensor map: our (tensor, layer) -> Hugging Face name, shape, and whether Conv1D
 * transposes it. One table drives save and load so that the two cannot drift apart. */

typedef struct TensorMap {
    int index;          /* into PwGPT2Params */
    const char *fmt;    /* Hugging Face name; %d is the layer */
    int per_layer;
    int transposed;     /* Conv1D: file holds (in, out) = our (OC, C) transposed */
} TensorMap;

static const TensorMap trunk_map[] = {
    {0, "transformer.wte.weight", 0, 0},
    {1, "transformer.wpe.weight", 0, 0},
    {2, "transformer.h.%d.ln_1.weight", 1, 0},
    {3, "transformer.h.%d.ln_1.bias", 1, 0},
    {4, "transformer.h.%d.attn.c_attn.weight", 1, 1},
    {5, "transformer.h.%d.attn.c_attn.bias", 1, 0},
    {6, "transformer.h.%d.attn.c_proj.weight", 1, 1},
    {7, "transformer.h.%d.attn.c_proj.bias", 1, 0},
    {8, "transformer.h.%d.ln_2.weight", 1, 0},
    {9, "transformer.h.%d.ln_2.bias", 1, 0},
    {10, "transformer.h.%d.mlp.c_fc.weight", 1, 1},
    {11, "transformer.h.%d.mlp.c_fc.bias", 1, 0},
    {12, "transformer.h.%d.mlp.c_proj.weight", 1, 1},
    {13, "transformer.h.%d.mlp.c_proj.bias", 1, 0},
    {14, "transformer.ln_f.weight", 0, 0},
    {15, "transformer.ln_f.bias", 0, 0},
};

/* Our shape of one layer's slice of tensor `index` as (rows, cols); cols = 0 for a vector. */
static void our_shape(const PwArch *c, int index, int64_t *rows, int64_t *cols)
{
    int64_t C = c->n_embd;
    switch (index) {
    case 0: *rows = c->vocab_size; *cols = C; break;
    case 1: *rows = c->n_positions; *cols = C; break;
    case 4: *rows = 3 * C; *cols = C; break;
    case 5: *rows = 3 * C; *cols = 0; break;
    case 6: *rows = C; *cols = C; break;
    case 10: *rows = 4 * C; *cols = C; break;
    case 11: *rows = 4 * C; *cols = 0; break;
    case 12: *rows = C; *cols = 4 * C; break;
    case 16: case 18: *rows = 1; *cols = C; break;
    case 17: case 19: *rows = 1; *cols = 0; break;
    default: *rows = C; *cols = 0; break; /* LayerNorm weights/biases and C-wide biases */
    }
}

static void transpose(float *dst, const float *src, int64_t rows, int64_t cols)
{
    /* src (rows, cols) -> dst (cols, rows) */
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < cols; k++) dst[k * rows + r] = src[r * cols + k];
}

/* ------------------------------------------------------------------------------------------ */
/* save */

#define NAME_LEN 96

int pw_gpt2_save(const PwModel *m, const float *host, const char *dir, const PwSaveOpts *opts,
                 PwErr *err)
{
    const PwArch *c = &m->arch;
    const int L = c->n_layer;
    int ntrunk = 0;
    for (size_t i = 0; i < PW_ARRAY_LEN(trunk_map); i++) ntrunk += trunk_map[i].per_layer ? L : 1;
    int nmax = ntrunk + 4;
    PwStWriteTensor *wt = calloc(nmax, sizeof *wt);
    char(*names)[NAME_LEN] = calloc(nmax, NAME_LEN);
    /* the transposed Conv1D weights need their own copy: 12 C^2 floats per layer */
    float *tbuf = malloc((size_t)L * 12 * c->n_embd * c->n_embd * sizeof(float));
    int rc = -1, n = 0;
    if (!wt || !names || !tbuf) {
        pw_errf(err, "%s: out of memory while saving", dir);
        goto done;
    }
    float *tp = tbuf;
    PwGPT2Params view = pw_gpt2_view(m, (float *)host);
    const float *const *params = (const float *const *)&view;
    /* in the order of transformers' state_dict, which decides what goes into which shard:
     * wte and wpe (slot 0), layer by layer (slots 1..L), then ln_f (slot L + 1) */
    for (int slot = 0; slot < L + 2; slot++) {
        for (size_t i = 0; i < PW_ARRAY_LEN(trunk_map); i++) {
            const TensorMap *tm = &trunk_map[i];
            int l = tm->per_layer ? slot - 1 : 0;
            if (tm->per_layer ? slot < 1 || slot > L : slot != (tm->index < 2 ? 0 : L + 1))
                continue;
            int64_t rows, cols;
            our_shape(c, tm->index, &rows, &cols);
            size_t per = (size_t)rows * (cols ? cols : 1);
            const float *src = params[tm->index] + (size_t)l * per;
            PwStWriteTensor *t = &wt[n];
            snprintf(names[n], NAME_LEN, tm->fmt, l);
            t->name = names[n];
            t->dtype = PW_DT_F32;
            if (!cols) {
                t->ndim = 1;
                t->shape[0] = rows;
                t->data = src;
            } else if (tm->transposed) {
                t->ndim = 2;
                t->shape[0] = cols;
                t->shape[1] = rows;
                transpose(tp, src, rows, cols);
                t->data = tp;
                tp += per;
            } else {
                t->ndim = 2;
                t->shape[0] = rows;
                t->shape[1] = cols;
                t->data = src;
            }
            n++;
        }
    }
    /* heads: Linear(C, 1) as torch stores it, weight (1, C) and bias (1) */
    static const char *const head_names[4] = {"score.weight", "score.bias", "value_head.weight",
                                              "value_head.bias"};
    for (int h = 0; h < 4; h++) {
        int index = 16 + h;
        if (!params[index]) continue;
        PwStWriteTensor *t = &wt[n++];
        t->name = head_names[h];
        t->dtype = PW_DT_F32;
        t->ndim = (h % 2 == 0) ? 2 : 1;
        t->shape[0] = 1;
        t->shape[1] = c->n_embd;
        t->data = params[index];
    }

    char path[4096];
    static const char *const meta[] = {"format", "pt", NULL};
    PwStSetWriteOpts wo = {opts->bf16 ? PW_DT_BF16 : PW_DT_F32, opts->max_shard_bytes};
    if (pw_st_set_write(dir, wt, n, meta, &wo, err)) goto done;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (config_save(c, opts->bf16 ? "bfloat16" : "float32", path, err)) goto done;
    rc = 0;
done:
    free(wt);
    free(names);
    free(tbuf);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* load */

/* Find name, or the same name without "transformer." as a bare GPT2Model file spells it; *file
 * is the file (of one or several) that holds it. */
static const PwStTensor *find_tensor(const PwStSet *st, const char *name,
                                     const PwSafetensors **file)
{
    const PwStTensor *t = pw_st_set_find(st, name, file);
    if (!t && !strncmp(name, "transformer.", 12)) t = pw_st_set_find(st, name + 12, file);
    return t;
}

/* Read one tensor into dst (our layout) after checking it exists with the expected shape: the
 * file's shape is ours, or ours transposed for a Conv1D weight. */
static int read_tensor(const PwStSet *set, const char *name, int64_t rows, int64_t cols,
                       int transposed, float *dst, float *tmp, PwErr *err)
{
    const PwStTensor *t = find_tensor(set, name, NULL);
    if (!t) return pw_errf(err, "%s: tensor \"%s\" is missing", pw_st_set_label(set), name);
    int64_t want[2] = {cols && transposed ? cols : rows, cols && transposed ? rows : cols};
    int flip = transposed && cols;
    if (pw_st_set_read_f32(set, t->name, want, cols ? 2 : 1, flip ? tmp : dst, err)) return -1;
    if (flip) transpose(dst, tmp, cols, rows);
    return 0;
}

/* A head from the file's tensors wname/bname into weight w (1, C) and bias b (1). Returns 1 if
 * the file has the head, 0 if it does not, -1 on error. A missing bias reads as 0: Hugging
 * Face's GPT2ForSequenceClassification has score.weight only. */
static int read_head(const PwStSet *st, int C, const char *wname, const char *bname,
                     float *w, float *b, PwErr *err)
{
    if (!pw_st_set_find(st, wname, NULL)) return 0;
    if (read_tensor(st, wname, 1, C, 0, w, NULL, err)) return -1;
    if (pw_st_set_find(st, bname, NULL)) {
        if (read_tensor(st, bname, 1, 0, 0, b, NULL, err)) return -1;
    } else {
        b[0] = 0.0f;
    }
    return 1;
}

int pw_gpt2_load(const PwModel *m, float *host, const char *dir, int value_from_score,
                 int *missing, PwErr *err)
{
    const PwArch *cfg = &m->arch;
    PwStSet *st = NULL;
    int rc = -1;
    float *tmp = malloc((size_t)4 * cfg->n_embd * cfg->n_embd * sizeof(float));
    if (!tmp) {
        pw_errf(err, "%s: out of memory while loading", dir);
        goto done;
    }
    if (pw_st_set_open(&st, dir, err)) goto done;

    PwGPT2Params view = pw_gpt2_view(m, host);
    float *const *params = (float *const *)&view;
    for (size_t i = 0; i < PW_ARRAY_LEN(trunk_map); i++) {
        const TensorMap *tm = &trunk_map[i];
        int64_t rows, cols;
        our_shape(cfg, tm->index, &rows, &cols);
        size_t per = (size_t)rows * (cols ? cols : 1);
        for (int l = 0; l < (tm->per_layer ? cfg->n_layer : 1); l++) {
            char name[NAME_LEN];
            snprintf(name, sizeof name, tm->fmt, l);
            if (read_tensor(st, name, rows, cols, tm->transposed, params[tm->index] + l * per,
                            tmp, err))
                goto done;
        }
    }
    /* heads the model has: from the file when it has them, else the caller initialises them */
    *missing = 0;
    if (view.scorew) {
        int r = read_head(st, cfg->n_embd, "score.weight", "score.bias", view.scorew,
                          view.scoreb, err);
        if (r < 0) goto done;
        if (!r) *missing |= PW_HEAD_SCORE;
    }
    if (view.valuew) {
        int r = value_from_score
                    ? read_head(st, cfg->n_embd, "score.weight", "score.bias", view.valuew,
                                view.valueb, err)
                    : read_head(st, cfg->n_embd, "value_head.weight", "value_head.bias",
                                view.valuew, view.valueb, err);
        if (r < 0) goto done;
        if (!r && value_from_score) {
            pw_errf(err, "%s: tensor \"score.weight\" is missing (a critic copies the reward "
                         "model's score head)", pw_st_set_label(st));
            goto done;
        }
        if (!r) *missing |= PW_HEAD_VALUE;
    }
    rc = 0;
done:
    pw_st_set_close(st);
    free(tmp);
    return rc;
}
