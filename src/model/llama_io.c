/* llama_io.c: Llama-family checkpoints as Hugging Face writes them (llama, qwen2, mistral, qwen3):
 * config.json, model.* tensor names, q/k/v and gate/up stacked in ours and split in theirs. */
#include "llama.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_safetensors.h"

static const char *const hf_types[PW_HF_COUNT] = {"llama", "qwen2", "mistral", "qwen3"};

const char *pw_hf_type_name(int t) { return t >= 0 && t < PW_HF_COUNT ? hf_types[t] : "?"; }

/* ------------------------------------------------------------------------------------------ */
/* config.json */

static int get_int(const json_t *root, const char *key, int def, const char *path, int *out,
                   PwErr *err)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        if (def < 0) return pw_errf(err, "%s: missing key \"%s\"", path, key);
        *out = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) <= 0)
        return pw_errf(err, "%s: key \"%s\" must be a positive integer", path, key);
    /* the sizes are ints; whether they make a model that fits is pw_arch_check's to say */
    if (json_integer_value(v) > INT_MAX)
        return pw_errf(err, "%s: key \"%s\" %lld is too large: at most %d", path, key,
                       (long long)json_integer_value(v), INT_MAX);
    *out = (int)json_integer_value(v);
    return 0;
}

static int get_num(const json_t *root, const char *key, double def, const char *path,
                   double *out, PwErr *err)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_number(v) || !(json_number_value(v) > 0) || !isfinite(json_number_value(v)))
        return pw_errf(err, "%s: key \"%s\" must be a positive number", path, key);
    *out = json_number_value(v);
    return 0;
}

static int rope_scaling(PwArch *c, const json_t *rs, const char *path, PwErr *err)
{
    if (!rs || json_is_null(rs)) return 0;
    const json_t *t = json_object_get(rs, "rope_type");
    if (!t) t = json_object_get(rs, "type");
    const char *type = json_string_value(t);
    if (!json_is_object(rs) || !type)
        return pw_errf(err, "%s: key \"rope_scaling\" must be null or an object with a "
                       "\"rope_type\"", path);
    if (!strcmp(type, "default")) return 0;
    if (strcmp(type, "llama3"))
        return pw_errf(err, "%s: rope_scaling type \"%s\" is not implemented (null, default or "
                       "llama3)", path, type);
    c->rope_llama3 = 1;
    /* A length is an integer: read as a number, 1e300 would not fit the int it goes into. */
    if (get_num(rs, "factor", -1, path, &c->rope_factor, err) ||
        get_num(rs, "low_freq_factor", -1, path, &c->rope_low_freq_factor, err) ||
        get_num(rs, "high_freq_factor", -1, path, &c->rope_high_freq_factor, err) ||
        get_int(rs, "original_max_position_embeddings", -1, path, &c->rope_original_max, err))
        return -1;
    if (c->rope_factor < 0 || c->rope_low_freq_factor < 0 || c->rope_high_freq_factor < 0 ||
        !(c->rope_high_freq_factor > c->rope_low_freq_factor))
        return pw_errf(err, "%s: llama3 rope_scaling needs factor, low_freq_factor < "
                       "high_freq_factor and original_max_position_embeddings", path);
    return 0;
}

int pw_llama_arch_from_json(PwArch *arch, const void *json_root, const char *path, PwErr *err)
{
    const json_t *root = json_root;
    PwArch c = {.family = PW_FAMILY_LLAMA};
    const char *type = json_string_value(json_object_get(root, "model_type"));
    for (int i = 0; i < PW_HF_COUNT; i++)
        if (type && !strcmp(type, hf_types[i])) c.hf_type = i;
    double eps = 0, theta = 0;
    if (get_int(root, "num_hidden_layers", -1, path, &c.n_layer, err) ||
        get_int(root, "num_attention_heads", -1, path, &c.n_head, err) ||
        get_int(root, "hidden_size", -1, path, &c.n_embd, err) ||
        get_int(root, "vocab_size", -1, path, &c.vocab_size, err) ||
        get_int(root, "max_position_embeddings", -1, path, &c.n_positions, err) ||
        get_int(root, "intermediate_size", -1, path, &c.n_inner, err) ||
        get_int(root, "num_key_value_heads", c.n_head, path, &c.n_kv_head, err) ||
        get_num(root, "rms_norm_eps", 1e-6, path, &eps, err))
        return -1;
    /* transformers up to 4.x: rope_theta and rope_scaling; 5.x: rope_parameters holds both */
    const json_t *rp = json_object_get(root, "rope_parameters");
    if (rp && !json_is_null(rp)) {
        if (get_num(rp, "rope_theta", 10000.0, path, &theta, err) ||
            rope_scaling(&c, rp, path, err))
            return -1;
    } else if (get_num(root, "rope_theta", 10000.0, path, &theta, err) ||
               rope_scaling(&c, json_object_get(root, "rope_scaling"), path, err)) {
        return -1;
    }
    c.norm_eps = (float)eps;
    c.rope_theta = theta;
    const json_t *tie = json_object_get(root, "tie_word_embeddings");
    c.tied = tie ? json_is_true(tie) : 0; /* transformers' Llama/Qwen2/Mistral default: untied */
    /* transformers: Qwen2's q, k and v always have biases, its o_proj never; Llama's and
     * Qwen3's attention_bias gives all four one; Mistral's layers have none */
    int att_bias = json_is_true(json_object_get(root, "attention_bias"));
    c.qkv_bias = c.hf_type == PW_HF_QWEN2 || (att_bias && c.hf_type != PW_HF_MISTRAL);
    c.o_bias = att_bias && (c.hf_type == PW_HF_LLAMA || c.hf_type == PW_HF_QWEN3);
    c.qk_norm = c.hf_type == PW_HF_QWEN3;
    /* head_dim: absent or null means hidden_size / num_attention_heads, except for Qwen3,
     * whose config class defaults it to 128 */
    const json_t *hd = json_object_get(root, "head_dim");
    if (hd && !json_is_null(hd)) {
        if (get_int(root, "head_dim", -1, path, &c.head_dim, err)) return -1;
    } else if (c.hf_type == PW_HF_QWEN3) {
        c.head_dim = 128;
    }
    const json_t *sw = json_object_get(root, "sliding_window");
    if (pw_config_need(root, "hidden_act", path,
             json_string_value(json_object_get(root, "hidden_act")) &&
                 !strcmp(json_string_value(json_object_get(root, "hidden_act")), "silu"),
             "\"silu\"", err) ||
        pw_config_need(root, "mlp_bias", path, !json_is_true(json_object_get(root, "mlp_bias")),
             "false", err) ||
        pw_config_need(root, "use_sliding_window", path,
             !json_is_true(json_object_get(root, "use_sliding_window")), "false", err) ||
        pw_config_need(root, "sliding_window", path,
             c.hf_type == PW_HF_QWEN2 || c.hf_type == PW_HF_QWEN3 || json_is_null(sw) ||
                 (json_is_integer(sw) && json_integer_value(sw) >= c.n_positions),
             "null or at least max_position_embeddings", err) ||
        pw_config_need(root, "head_dim", path, c.head_dim % 2 == 0,
             "an even number (rotary embeddings turn pairs)", err) ||
        pw_config_need(root, "pretraining_tp", path,
             json_integer_value(json_object_get(root, "pretraining_tp")) == 1, "1", err))
        return -1;
    const json_t *lt = json_object_get(root, "layer_types");
    for (size_t i = 0; json_is_array(lt) && i < json_array_size(lt); i++)
        if (!json_string_value(json_array_get(lt, i)) ||
            strcmp(json_string_value(json_array_get(lt, i)), "full_attention"))
            return pw_errf(err, "%s: layer_types[%zu] must be \"full_attention\" (no sliding "
                           "window attention in ppo_world)", path, i);
    if ((!c.head_dim && c.n_embd % c.n_head) || c.n_head % c.n_kv_head)
        return pw_errf(err, "%s: hidden_size (%d) must be a multiple of num_attention_heads (%d) "
                       "unless head_dim is given, and that of num_key_value_heads (%d)", path,
                       c.n_embd, c.n_head, c.n_kv_head);
    *arch = c;
    return 0;
}

/* The float eps as the shortest decimal that reads back as the same float (1e-05, not the
 * double 9.9999997473787516e-06 the float widens to): config.json stays what a person wrote. */
static double float_as_written(float x)
{
    char s[32];
    snprintf(s, sizeof s, "%.9g", (double)x);
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, (double)x);
        if (strtof(s, NULL) == x) break;
    }
    return strtod(s, NULL);
}

static int config_save(const PwArch *c, const char *dtype, const char *path, PwErr *err)
{
    static const char *const arch_names[PW_HF_COUNT] = {"LlamaForCausalLM", "Qwen2ForCausalLM",
                                                     "MistralForCausalLM", "Qwen3ForCausalLM"};
    json_t *root = json_pack(
        "{s:s, s:[s], s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:b, s:s, s:f, s:s}",
        "model_type", hf_types[c->hf_type], "architectures", arch_names[c->hf_type],
        "num_hidden_layers", c->n_layer, "num_attention_heads", c->n_head,
        "num_key_value_heads", c->n_kv_head, "hidden_size", c->n_embd, "intermediate_size",
        c->n_inner, "vocab_size", c->vocab_size, "max_position_embeddings", c->n_positions,
        "rms_norm_eps", float_as_written(c->norm_eps), "rope_theta", c->rope_theta,
        "tie_word_embeddings", c->tied, "hidden_act", "silu", "initializer_range", 0.02,
        "torch_dtype", dtype);
    if (root && (c->hf_type == PW_HF_LLAMA || c->hf_type == PW_HF_QWEN3))
        json_object_set_new(root, "attention_bias", json_boolean(c->qkv_bias));
    if (root && c->head_dim) json_object_set_new(root, "head_dim", json_integer(c->head_dim));
    if (root && c->rope_llama3)
        json_object_set_new(
            root, "rope_scaling",
            json_pack("{s:s, s:f, s:f, s:f, s:i}", "rope_type", "llama3", "factor",
                      c->rope_factor, "low_freq_factor", c->rope_low_freq_factor,
                      "high_freq_factor", c->rope_high_freq_factor,
                      "original_max_position_embeddings", c->rope_original_max));
    pw_arch_write_ids(c, root);
    return pw_config_write(root, path, err);
}

/* ------------------------------------------------------------------------------------------ */
/* the tensor map: one row per file tensor, driving save and load alike. A per-layer tensor of
 * ours is split into parts along its rows: q, k, v of qkvw/qkvb and gate, up of fcw. */

typedef struct Part {
    int index;          /* into PwLlamaParams */
    const char *fmt;    /* Hugging Face name; %d is the layer */
    int per_layer;
    int part;           /* which row block: 0 q/gate/whole, 1 k/up, 2 v */
} Part;

static const Part parts[] = {
    {0, "model.embed_tokens.weight", 0, 0},
    {2, "model.layers.%d.self_attn.q_proj.weight", 1, 0},
    {3, "model.layers.%d.self_attn.q_proj.bias", 1, 0},
    {2, "model.layers.%d.self_attn.k_proj.weight", 1, 1},
    {3, "model.layers.%d.self_attn.k_proj.bias", 1, 1},
    {2, "model.layers.%d.self_attn.v_proj.weight", 1, 2},
    {3, "model.layers.%d.self_attn.v_proj.bias", 1, 2},
    {4, "model.layers.%d.self_attn.o_proj.weight", 1, 0},
    {14, "model.layers.%d.self_attn.o_proj.bias", 1, 0},
    {15, "model.layers.%d.self_attn.q_norm.weight", 1, 0},
    {16, "model.layers.%d.self_attn.k_norm.weight", 1, 0},
    {6, "model.layers.%d.mlp.gate_proj.weight", 1, 0},
    {6, "model.layers.%d.mlp.up_proj.weight", 1, 1},
    {7, "model.layers.%d.mlp.down_proj.weight", 1, 0},
    {1, "model.layers.%d.input_layernorm.weight", 1, 0},
    {5, "model.layers.%d.post_attention_layernorm.weight", 1, 0},
    {8, "model.norm.weight", 0, 0},
    {9, "lm_head.weight", 0, 0},
    {10, "score.weight", 0, 0},
    {11, "score.bias", 0, 0},
    {12, "value_head.weight", 0, 0},
    {13, "value_head.bias", 0, 0},
};

/* Files list tensors as transformers' state_dict does, which decides what goes into which
 * shard: the embedding (slot 0), layer by layer (slots 1..L), then the final norm and the heads
 * (slot L + 1). Whether part i belongs to slot s, and with which layer. */
static int in_slot(size_t i, int s, int L, int *l)
{
    *l = parts[i].per_layer ? s - 1 : 0;
    if (parts[i].per_layer) return s >= 1 && s <= L;
    return i == 0 ? s == 0 : s == L + 1;
}

/* Where part p of layer l sits in the parameter buffer view, and its file shape. */
static float *locate(const PwModel *m, float *const *view, const Part *p, int l, int64_t *shape,
                     int *ndim)
{
    const PwArch *a = &m->arch;
    int64_t C = a->n_embd, hs = pw_arch_head_size(a), F = a->n_inner;
    int64_t qrows = a->n_head * hs, kvrows = a->n_kv_head * hs, Q = qrows + 2 * kvrows;
    int64_t rows, cols, row0 = 0, lrows; /* lrows, cols: the whole per-layer tensor */
    switch (p->index) {
    case 0: case 9: rows = a->vocab_size, cols = C, lrows = rows; break;
    case 2: case 3:
        rows = p->part == 0 ? qrows : kvrows;
        row0 = p->part == 0 ? 0 : p->part == 1 ? qrows : qrows + kvrows;
        cols = p->index == 2 ? C : 0, lrows = Q;
        break;
    case 4: rows = C, cols = qrows, lrows = C; break;
    case 15: case 16: rows = hs, cols = 0, lrows = hs; break;
    case 6: rows = F, row0 = p->part * F, cols = C, lrows = 2 * F; break;
    case 7: rows = C, cols = F, lrows = C; break;
    case 10: case 12: rows = 1, cols = C, lrows = 1; break;
    case 11: case 13: rows = 1, cols = 0, lrows = 1; break;
    default: rows = C, cols = 0, lrows = C; break; /* the RMSNorm weights */
    }
    *ndim = cols ? 2 : 1;
    shape[0] = rows;
    shape[1] = cols;
    size_t width = cols ? (size_t)cols : 1;
    return view[p->index] + ((size_t)l * lrows + row0) * width;
}

#define NAME_LEN 96

int pw_llama_save(const PwModel *m, const float *host, const char *dir, const PwSaveOpts *opts,
                  PwErr *err)
{
    const int L = m->arch.n_layer;
    int cap = (int)PW_ARRAY_LEN(parts) * L;
    PwStWriteTensor *wt = calloc(cap, sizeof *wt);
    char(*names)[NAME_LEN] = calloc(cap, NAME_LEN);
    int rc = -1, n = 0;
    if (!wt || !names) {
        pw_errf(err, "%s: out of memory while saving", dir);
        goto done;
    }
    PwLlamaParams view = pw_llama_view(m, (float *)host);
    float *const *v = (float *const *)&view;
    for (int s = 0; s < L + 2; s++) {
        for (size_t i = 0; i < PW_ARRAY_LEN(parts); i++) {
            const Part *p = &parts[i];
            int l;
            if (!in_slot(i, s, L, &l) || !v[p->index]) continue; /* a tensor the model lacks */
            PwStWriteTensor *t = &wt[n];
            snprintf(names[n], NAME_LEN, p->fmt, l);
            t->name = names[n];
            t->data = locate(m, v, p, l, t->shape, &t->ndim);
            t->dtype = PW_DT_F32;
            n++;
        }
    }
    static const char *const meta[] = {"format", "pt", NULL};
    PwStSetWriteOpts wo = {opts->bf16 ? PW_DT_BF16 : PW_DT_F32, opts->max_shard_bytes};
    if (pw_st_set_write(dir, wt, n, meta, &wo, err)) goto done;
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (config_save(&m->arch, opts->bf16 ? "bfloat16" : "float32", path, err)) goto done;
    rc = 0;
done:
    free(wt);
    free(names);
    return rc;
}

/* Whether the file tensor `name` is one this model reads (parts whose tensor it has). */
static int model_reads(const PwModel *m, float *const *view, const char *name)
{
    char want[NAME_LEN];
    for (size_t i = 0; i < PW_ARRAY_LEN(parts); i++) {
        if (!view[parts[i].index]) continue;
        if (!parts[i].per_layer) {
            if (!strcmp(name, parts[i].fmt)) return 1;
            continue;
        }
        int l;
        if (sscanf(name, "model.layers.%d.", &l) != 1 || l < 0 || l >= m->arch.n_layer) continue;
        snprintf(want, sizeof want, parts[i].fmt, l);
        if (!strcmp(name, want)) return 1;
    }
    return 0;
}

/* A tensor of the trunk ("model.") that this model does not read would be dropped without a
 * word: a bias or a norm of an architecture config.json does not describe (attention_bias false
 * over a file with o_proj biases, a Qwen3 file called qwen2), a layer past num_hidden_layers.
 * Refused, naming it; the rotary frequencies older files kept as a buffer are computed here. */
static int check_unread(const PwModel *m, float *const *view, const PwStSet *st, PwErr *err)
{
    static const char *const rotary = "rotary_emb.inv_freq";
    for (int f = 0; f < pw_st_set_nfiles(st); f++) {
        const PwSafetensors *file = pw_st_set_file(st, f);
        for (int i = 0; i < pw_st_count(file); i++) {
            const char *name = pw_st_get(file, i)->name;
            size_t n = strlen(name), r = strlen(rotary);
            if (strncmp(name, "model.", 6) || (n >= r && !strcmp(name + n - r, rotary)))
                continue;
            if (!model_reads(m, view, name))
                return pw_errf(err, "%s: tensor \"%s\" is not part of the %s model its "
                               "config.json describes (num_hidden_layers %d%s%s%s): loading would "
                               "drop it",
                               pw_st_path(file), name, pw_hf_type_name(m->arch.hf_type),
                               m->arch.n_layer, m->arch.qkv_bias ? ", q/k/v biases" : "",
                               m->arch.o_bias ? ", an o_proj bias" : "",
                               m->arch.qk_norm ? ", q/k norms" : "");
        }
    }
    return 0;
}

int pw_llama_load(const PwModel *m, float *host, const char *dir, int value_from_score,
                  int *missing, PwErr *err)
{
    PwStSet *st = NULL;
    if (pw_st_set_open(&st, dir, err)) return -1;
    PwLlamaParams view = pw_llama_view(m, host);
    float *const *v = (float *const *)&view;
    int rc = -1;
    *missing = 0;
    if (check_unread(m, v, st, err)) goto done;
    /* the files' own order, so that each shard's pages are read front to back */
    for (int s = 0; s < m->arch.n_layer + 2; s++) {
        for (size_t i = 0; i < PW_ARRAY_LEN(parts); i++) {
            Part p = parts[i];
            int l;
            if (!in_slot(i, s, m->arch.n_layer, &l) || !v[p.index]) continue;
            int head = p.index >= PW_LLAMA_SCOREW && p.index <= PW_LLAMA_VALUEB;
            int bias = p.index == PW_LLAMA_SCOREB || p.index == PW_LLAMA_VALUEB;
            /* a critic from a reward model */
            if (value_from_score && (p.index == PW_LLAMA_VALUEW || p.index == PW_LLAMA_VALUEB))
                p.fmt = p.index == PW_LLAMA_VALUEW ? "score.weight" : "score.bias";
            if (head && !pw_st_set_find(st, p.fmt, NULL)) {
                if (bias) { /* LlamaForSequenceClassification's score has no bias: 0 */
                    *locate(m, v, &p, 0, (int64_t[2]){0}, &(int){0}) = 0.0f;
                    continue;
                }
                if (value_from_score && p.index == 12) {
                    pw_errf(err, "%s: tensor \"score.weight\" is missing (a critic copies the "
                            "reward model's score head)", pw_st_set_label(st));
                    goto done;
                }
                *missing |= p.index == 10 ? PW_HEAD_SCORE : PW_HEAD_VALUE;
                continue;
            }
            if (head && *missing & (p.index == 11 ? PW_HEAD_SCORE : PW_HEAD_VALUE)) continue;
            char name[NAME_LEN];
            int64_t shape[2];
            int ndim;
            float *dst = locate(m, v, &p, l, shape, &ndim);
            snprintf(name, sizeof name, p.fmt, l);
            if (pw_st_set_read_f32(st, name, shape, ndim, dst, err)) goto done;
        }
    }
    rc = 0;
done:
    pw_st_set_close(st);
    return rc;
}
