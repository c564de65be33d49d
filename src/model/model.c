/* model.c: the family-neutral half of the model interface (pw_model.h): device memory through the
 * kernel table, parameters as one tensor, inputs in and gathered outputs out, AdamW, files. */
#include "model_internal.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_bf16.h"
#include "pw_file.h"
#include "pw_kernels.h" /* pw_positions_from_mask on the host copy of the mask */
#include "pw_ops_profile.h"
#include "pw_rng.h"
#include "pw_safetensors.h"

static const PwFamilyImpl *const families[PW_FAMILY_COUNT] = {&pw_gpt2_family,
                                                               &pw_llama_family};

/* ------------------------------------------------------------------------------------------ */
/* helpers the families share */

void pw_model_slice(float **ptrs, const size_t *sizes, int n, float *memory)
{
    float *p = memory;
    for (int i = 0; i < n; i++) {
        ptrs[i] = sizes[i] ? p : NULL;
        p += sizes[i];
    }
}

static size_t arena_slice(size_t n)
{
    return (n + PW_ARENA_ALIGN - 1) / PW_ARENA_ALIGN * PW_ARENA_ALIGN;
}

size_t pw_model_arena_floats(const size_t *sizes, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] > SIZE_MAX - PW_ARENA_ALIGN ||
            __builtin_add_overflow(total, arena_slice(sizes[i]), &total))
            return SIZE_MAX;
    }
    return total;
}

size_t pw_model_sum_sizes(const size_t *sizes, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        if (__builtin_add_overflow(total, sizes[i], &total)) return SIZE_MAX;
    return total;
}

/* The most float32 parameter bytes one model may hold. ppo_world has no tensor parallelism: a
 * model lives whole on one device or host, and none holds 1 TiB. Below it every size derived
 * from the config stays far inside size_t, and n_embd inside the int widths of the kernels'
 * calls (4 x n_embd rows of GPT-2's MLP). */
#define PW_MAX_PARAM_BYTES ((size_t)1 << 40)


int pw_config_need(const void *root, const char *key, const char *path, int ok, const char *what,
                   PwErr *err)
{
    if (json_object_get(root, key) && !ok)
        return pw_errf(err, "%s: key \"%s\" must be %s (ppo_world computes nothing else)", path,
                       key, what);
    return 0;
}

int pw_config_write(void *root, const char *path, PwErr *err)
{
    if (!root) return pw_errf(err, "%s: cannot build the JSON config", path);
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    json_decref(root);
    if (!text) return pw_errf(err, "%s: cannot serialise the JSON config", path);
    int rc = pw_file_write(path, text, strlen(text), err);
    free(text);
    return rc;
}

int pw_model_check_size(const size_t *sizes, int n, const char *what, PwErr *err)
{
    size_t total = pw_model_sum_sizes(sizes, n);
    if (total <= PW_MAX_PARAM_BYTES / sizeof(float)) return 0;
    return pw_errf(err, "%s: too large: the parameters would need %s%.3g bytes, more than the "
                   "%.0f TiB one model may hold (a model lives whole on one device)", what,
                   total == SIZE_MAX ? "over " : "", (double)total * sizeof(float),
                   PW_MAX_PARAM_BYTES / 1099511627776.0);
}

int pw_model_no_room(const PwModel *m, const char *what, size_t bytes, PwErr *err)
{
    size_t free_b = 0, total_b = 0;
    m->ops->mem_info(m->ops, &free_b, &total_b);
    if (total_b)
        return pw_errf(err, "%s: no room for %s: %.1f MiB needed, %.1f MiB free of %.1f MiB",
                       m->ops->name, what, bytes / 1048576.0, free_b / 1048576.0,
                       total_b / 1048576.0);
    return pw_errf(err, "%s: out of memory for %s (%.1f MiB)", m->ops->name, what,
                   bytes / 1048576.0);
}

/* Initialisation draws from the project's portable generator, so that a seed means the same
 * weights on every machine and device. */
void pw_model_fill_normal(float *x, size_t n, double std, uint64_t seed, int stream)
{
    /* one stream per tensor index: a tensor's values depend on (seed, tensor) only */
    uint64_t s = seed ^ (0xd1b54a32d192ed03ULL * (uint64_t)(stream + 1));
    for (size_t i = 0; i < n; i += 2) {
        double u1 = ((pw_rng_next(&s) >> 11) + 1.0) * (1.0 / 9007199254740993.0); /* (0, 1] */
        double u2 = (pw_rng_next(&s) >> 11) * (1.0 / 9007199254740992.0);
        double r = sqrt(-2.0 * log(u1)) * std;
        x[i] = (float)(r * cos(6.283185307179586 * u2));
        if (i + 1 < n) x[i + 1] = (float)(r * sin(6.283185307179586 * u2));
    }
}

void pw_model_fill_const(float *x, size_t n, float v)
{
    for (size_t i = 0; i < n; i++) x[i] = v;
}

void pw_model_init_heads(const PwModel *m, float *host, int heads, uint64_t seed, int scorew,
                         int valuew)
{
    double std = 1.0 / sqrt(m->arch.n_embd + 1.0);
    const int want[2] = {heads & PW_HEAD_SCORE, heads & PW_HEAD_VALUE}, at[2] = {scorew, valuew};
    for (int h = 0; h < 2; h++) {
        if (!want[h] || !m->tensor_size[at[h]]) continue;
        pw_model_fill_normal(host + m->tensor_off[at[h]], m->tensor_size[at[h]], std, seed,
                             at[h]);
        host[m->tensor_off[at[h] + 1]] = 0.0f;
    }
}

int pw_model_alloc_slices(const PwModel *m, float **memory, float **ptrs, const size_t *sizes,
                          int n, const char *what, PwErr *err)
{
    size_t bytes = pw_model_arena_floats(sizes, n) * sizeof(float);
    if (!*memory && !(*memory = m->ops->alloc(m->ops, bytes)))
        return pw_model_no_room(m, what, bytes, err);
    float *p = *memory;
    for (int i = 0; i < n; i++) {
        ptrs[i] = sizes[i] ? p : NULL;
        p += arena_slice(sizes[i]);
    }
    return 0;
}

void pw_model_mirror_refresh(PwModel *m)
{
    if (!m->params_bf16 || !m->mirror_stale) return;
    if (pw_model_keeps_all(m)) {
        m->ops->to_bf16(m->ops, m->params_bf16, m->params, m->num_params);
    } else { /* the bf16-only tensors came in bfloat16 (a load, a payload, or each rank's
              * share of an update and its all-gather): the others */
        for (int i = 0; i < m->ntensors; i++)
            if (m->stored_size[i])
                m->ops->to_bf16(m->ops, m->params_bf16 + m->mirror_off[i],
                                m->params + m->stored_off[i], m->stored_size[i]);
    }
    m->mirror_stale = 0;
}

PwWeight pw_model_weight(const PwModel *m, int i, size_t off)
{
    return (PwWeight){m->stored_size[i] ? m->params + m->stored_off[i] + off : NULL,
                      m->params_bf16 ? m->params_bf16 + m->mirror_off[i] + off : NULL};
}

void pw_model_matmul_forward(const PwModel *m, float *out, const float *inp,
                             const uint16_t *inp16, PwWeight w, const float *bias, int N, int C,
                             int OC)
{
    const PwOps *o = m->ops;
    if (m->precision == PW_PRECISION_BF16)
        o->matmul_forward_bf16(o, out, NULL, inp, inp16, w.f, w.h, bias, N, C, OC);
    else
        o->matmul_forward(o, out, inp, w.f, bias, N, C, OC);
}

void pw_model_matmul_forward_out(const PwModel *m, float *out, uint16_t *out16, const float *inp,
                                 const uint16_t *inp16, PwWeight w, const float *bias, int N,
                                 int C, int OC)
{
    const PwOps *o = m->ops;
    if (out16)
        o->matmul_forward_bf16(o, NULL, out16, inp, inp16, w.f, w.h, bias, N, C, OC);
    else
        pw_model_matmul_forward(m, out, inp, inp16, w, bias, N, C, OC);
}

void pw_model_matmul_backward(const PwModel *m, float *dinp, float *dweight, float *dbias,
                              const float *dout, const float *inp, const uint16_t *inp16,
                              PwWeight w, int N, int C, int OC, int set_dinp)
{
    const PwOps *o = m->ops;
    if (m->precision == PW_PRECISION_BF16)
        o->matmul_backward_bf16(o, dinp, dweight, dbias, dout, NULL, 0, inp, inp16, w.f, w.h, N,
                                C, OC, set_dinp);
    else
        o->matmul_backward(o, dinp, dweight, dbias, dout, inp, w.f, N, C, OC, set_dinp);
}

void pw_model_matmul_backward16(const PwModel *m, float *dinp, float *dweight, float *dbias,
                                const uint16_t *dout16, size_t dout_ld, const float *inp,
                                const uint16_t *inp16, PwWeight w, int N, int C, int OC,
                                int set_dinp)
{
    const PwOps *o = m->ops;
    o->matmul_backward_bf16(o, dinp, dweight, dbias, NULL, dout16, dout_ld, inp, inp16, w.f, w.h,
                            N, C, OC, set_dinp);
}

void pw_model_matmul_backward_either(const PwModel *m, float *dinp, float *dweight, float *dbias,
                                     const float *dout, const uint16_t *dout16, const float *inp,
                                     const uint16_t *inp16, PwWeight w, int N, int C, int OC,
                                     int set_dinp)
{
    if (dout16)
        pw_model_matmul_backward16(m, dinp, dweight, dbias, dout16, (size_t)OC, inp, inp16, w, N,
                                   C, OC, set_dinp);
    else
        pw_model_matmul_backward(m, dinp, dweight, dbias, dout, inp, inp16, w, N, C, OC,
                                 set_dinp);
}

size_t pw_model_kept_floats(PwPrecision precision, size_t n)
{
    return precision == PW_PRECISION_BF16 ? n / 2 + n % 2 : 0;
}

void pw_model_attention_forward(const PwModel *m, float *out, uint16_t *out16, float *lse,
                                const float *qkv, const uint16_t *qkv16, const int *mask, int B,
                                int T, int NH, int NKV, int hs)
{
    const PwOps *o = m->ops;
    if (m->precision == PW_PRECISION_BF16)
        o->attention_gqa_forward_bf16(o, out, out16, lse, qkv16, mask, B, T, NH, NKV, hs);
    else
        o->attention_gqa_forward(o, out, lse, qkv, mask, B, T, NH, NKV, hs);
}

void pw_model_attention_backward(const PwModel *m, float *dqkv, uint16_t *dqkv16,
                                 const float *dout, const float *qkv, const uint16_t *qkv16,
                                 const uint16_t *out16, const float *lse, const int *mask, int B,
                                 int T, int NH, int NKV, int hs)
{
    const PwOps *o = m->ops;
    if (m->precision == PW_PRECISION_BF16) { /* sets */
        o->attention_gqa_backward_bf16(o, dqkv, dqkv16, dout, qkv16, out16, lse, mask, B, T,
                                       NH, NKV, hs);
        return;
    }
    o->zero(o, dqkv, (size_t)B * T * (NH + 2 * NKV) * hs * sizeof(float));
    o->attention_gqa_backward(o, dqkv, dout, qkv, lse, mask, B, T, NH, NKV, hs);
}

const char *pw_precision_name(PwPrecision p)
{
    static const char *const names[PW_PRECISION_COUNT] = {"fp32", "bf16"};
    return (int)p >= 0 && p < PW_PRECISION_COUNT ? names[p] : "?";
}

const char *pw_kv_dtype_name(PwKVDtype d)
{
    static const char *const names[PW_KV_COUNT] = {"auto", "fp32", "bf16"};
    return (int)d >= 0 && d < PW_KV_COUNT ? names[d] : "?";
}

/* ------------------------------------------------------------------------------------------ */
/* architecture */

const char *pw_family_name(PwFamily f)
{
    return ((int)f >= 0 && f < PW_FAMILY_COUNT) ? families[f]->name : "?";
}

static const PwFamilyImpl *family_of(const PwArch *a, PwErr *err)
{
    if ((int)a->family < 0 || a->family >= PW_FAMILY_COUNT)
        return pw_errf(err, "model family %d is not one of ppo_world's", (int)a->family), NULL;
    return families[a->family];
}

int pw_arch_check(const PwArch *a, PwErr *err)
{
    const PwFamilyImpl *f = family_of(a, err);
    return f ? f->arch_check(a, err) : -1;
}

/* One of config.json's special token ids into *id: *has 1, or -1 for null, 0 absent; -1 with a
 * message for anything but an integer of int's range. */
static int read_id(const json_t *v, const char *key, const char *path, int *has, int *id,
                   PwErr *err)
{
    *has = !v ? 0 : json_is_null(v) ? -1 : 1;
    if (*has <= 0) return 0;
    json_int_t x = json_is_integer(v) ? json_integer_value(v) : 0;
    if (!json_is_integer(v) || x < INT_MIN || x > INT_MAX)
        return pw_errf(err, "%s: key \"%s\" must be null or a token id (an integer)%s", path,
                       key, strcmp(key, "eos_token_id") ? "" : ", or a list of token ids");
    *id = (int)x;
    return 0;
}

/* bos_token_id, eos_token_id (one id or a list of at most PW_ARCH_MAX_EOS) and pad_token_id,
 * kept as they are, nulls included: a folder ppo_world writes says what the one it read said
 * (pw_arch_write_ids), and transformers reads a key left out as its class's default (Llama's
 * bos 1 and eos 2), not as null. */
static int read_special_ids(PwArch *a, const json_t *root, const char *path, PwErr *err)
{
    const json_t *eos = json_object_get(root, "eos_token_id");
    a->n_eos = a->eos_list = 0;
    if (read_id(json_object_get(root, "bos_token_id"), "bos_token_id", path, &a->has_bos,
                &a->bos_token_id, err) ||
        read_id(json_object_get(root, "pad_token_id"), "pad_token_id", path, &a->has_pad,
                &a->pad_token_id, err))
        return -1;
    if (!json_is_array(eos)) {
        if (read_id(eos, "eos_token_id", path, &a->has_eos, &a->eos_token_id[0], err)) return -1;
        a->n_eos = a->has_eos > 0;
        return 0;
    }
    if (json_array_size(eos) > PW_ARCH_MAX_EOS)
        return pw_errf(err, "%s: key \"eos_token_id\" lists %zu ids: at most %d", path,
                       json_array_size(eos), PW_ARCH_MAX_EOS);
    a->has_eos = a->eos_list = 1;
    for (size_t i = 0; i < json_array_size(eos); i++) {
        int has;
        if (read_id(json_array_get(eos, i), "eos_token_id", path, &has,
                    &a->eos_token_id[a->n_eos], err))
            return -1;
        if (has < 0)
            return pw_errf(err, "%s: key \"eos_token_id\": element %zu is null: expected a "
                           "token id", path, i);
        a->n_eos++;
    }
    return 0;
}

/* one id as read_id found it: the id, null, or nothing */
static void write_id(json_t *root, const char *key, int has, int id)
{
    if (has) json_object_set_new(root, key, has > 0 ? json_integer(id) : json_null());
}

void pw_arch_write_ids(const PwArch *a, void *json_root)
{
    json_t *root = json_root;
    if (!root) return;
    write_id(root, "bos_token_id", a->has_bos, a->bos_token_id);
    if (a->eos_list) {
        json_t *l = json_array();
        for (int i = 0; i < a->n_eos; i++)
            json_array_append_new(l, json_integer(a->eos_token_id[i]));
        json_object_set_new(root, "eos_token_id", l);
    } else {
        write_id(root, "eos_token_id", a->has_eos, a->eos_token_id[0]);
    }
    write_id(root, "pad_token_id", a->has_pad, a->pad_token_id);
}

int pw_arch_load(PwArch *a, const char *dir, PwErr *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    /* a key given twice is refused, not last-one-wins */
    json_t *root = pw_file_json(path, PW_FILE_MAX_JSON, JSON_REJECT_DUPLICATES, err);
    if (!root) return -1;
    int rc = -1;
    if (!json_is_object(root)) {
        pw_errf(err, "%s: the top level must be a JSON object", path);
        goto done;
    }
    /* the family is model_type's; a config without one is GPT-2's, as the first files were */
    const json_t *type = json_object_get(root, "model_type");
    const PwFamilyImpl *f = families[PW_FAMILY_GPT2];
    if (type) {
        f = NULL;
        for (int i = 0; i < PW_FAMILY_COUNT && json_is_string(type); i++)
            for (const char *const *t = families[i]->model_types; *t; t++)
                if (!strcmp(json_string_value(type), *t)) f = families[i];
        if (!f) {
            char names[256] = "";
            for (int i = 0; i < PW_FAMILY_COUNT; i++)
                for (const char *const *t = families[i]->model_types; *t; t++)
                    snprintf(names + strlen(names), sizeof names - strlen(names), "%s\"%s\"",
                             names[0] ? ", " : "", *t);
            pw_errf(err, "%s: key \"model_type\" must be one of %s (the families ppo_world "
                    "implements)", path, names);
            goto done;
        }
    }
    rc = f->arch_from_json(a, root, path, err);
    if (rc == 0) rc = read_special_ids(a, root, path, err);
    /* the sizes too, so that whoever reads a config.json refuses an absurd one before it
     * allocates anything sized by it */
    PwErr cerr;
    if (rc == 0 && pw_arch_check(a, &cerr)) rc = pw_errf(err, "%s: %s", path, cerr.msg);
done:
    json_decref(root);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* life cycle */

static int check_opts(const PwArch *a, const PwModelOpts *o, PwErr *err)
{
    if (o->heads & ~(PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE))
        return pw_errf(err, "unknown head bits 0x%x", (unsigned)o->heads);
    if (o->maxB <= 0 || o->maxT <= 0 || o->maxT > a->n_positions)
        return pw_errf(err, "activation capacity B=%d T=%d must be positive with T <= "
                       "n_positions=%d", o->maxB, o->maxT, a->n_positions);
    if ((int64_t)o->maxB * o->maxT > INT_MAX) /* B x T positions are counted in an int */
        return pw_errf(err, "activation capacity B=%d T=%d: B x T is more than an int counts",
                       o->maxB, o->maxT);
    if (a->vocab_size > INT_MAX - PW_VOCAB_MULTIPLE_MAX) /* padded, it must stay an int */
        return pw_errf(err, "vocab_size %d is more than %d", a->vocab_size,
                       INT_MAX - PW_VOCAB_MULTIPLE_MAX);
    if ((int)o->precision < 0 || o->precision >= PW_PRECISION_COUNT)
        return pw_errf(err, "precision %d is not fp32 (0) or bf16 (1)", (int)o->precision);
    if ((int)o->kv_dtype < 0 || o->kv_dtype >= PW_KV_COUNT)
        return pw_errf(err, "kv_dtype %d is not auto (0), fp32 (1) or bf16 (2)", (int)o->kv_dtype);
    if ((int)o->acts < 0 || o->acts >= PW_ACTS_COUNT)
        return pw_errf(err, "acts %d is not keep (0), recompute (1) or none (2)", (int)o->acts);
    if (o->frozen && o->acts != PW_ACTS_NONE)
        return pw_errf(err, "a frozen model never trains: its forward keeps one layer's "
                       "activations (acts none), not %s", o->acts ? "its layers' inputs" : "all");
    if (o->frozen && o->follows)
        return pw_errf(err, "a model is frozen (never written) or follows another (written by "
                       "the weights it receives), not both");
    if (o->lm_chunk < 0)
        return pw_errf(err, "lm_chunk %d: expected 0 (every row at once) or a row count",
                       o->lm_chunk);
    if (o->vocab_multiple < 0 || o->vocab_multiple > PW_VOCAB_MULTIPLE_MAX)
        return pw_errf(err, "vocab_multiple %d must be 0 (the default, %d), 1 (no padding) or "
                       "up to %d", o->vocab_multiple, PW_VOCAB_MULTIPLE, PW_VOCAB_MULTIPLE_MAX);
    return 0;
}

/* V rounded up to the multiple (PW_VOCAB_MULTIPLE when 0); vocab_size is at most INT_MAX -
 * PW_VOCAB_MULTIPLE_MAX (the families' arch checks bound it far lower), so the sum fits. */
static int padded_vocab(int V, int multiple)
{
    int k = multiple ? multiple : PW_VOCAB_MULTIPLE;
    return (int)(((int64_t)V + k - 1) / k * k);
}

/* Zero the padding rows of every vocabulary-sized tensor of host copy h: an initialisation
 * fills whole tensors, and the rows past V must hold 0 (docs/model.md, Padded vocabulary). */
static void zero_padding(const PwModel *m, float *h)
{
    for (int i = 0; i < m->ntensors; i++)
        memset(h + m->tensor_off[i] + m->tensor_real[i], 0,
               (m->tensor_size[i] - m->tensor_real[i]) * sizeof(float));
}

void pw_model_profile_label(PwModel *m, const char *label)
{
    if (m) pw_ops_profile_label(m->ops, label);
}

void pw_model_free(PwModel *m)
{
    if (!m) return;
    const PwOps *o = m->ops;
    if (m->impl && m->impl->detach) m->impl->detach(m);
    if (o) {
        o->free(o, m->params);
        if (!pw_model_is_split(m)) /* else inside params' allocation */
            o->free(o, m->params_bf16);
        o->free(o, m->grads);
        pw_grad_split_free(m);
        o->free(o, m->master);
        o->free(o, m->adam_m);
        o->free(o, m->adam_v);
        o->free(o, m->d_int);
        o->free(o, m->d_dout);
    }
    free(m->h_adam_m);
    free(m->h_adam_v);
    free(m->ready_done);
    free(m->h_int);
    free(m->h_stage);
    free(m->h_rows_count);
    pw_ops_close(o);
    free(m);
}

int pw_model_shape(PwModel *m, const PwArch *arch, const PwModelOpts *opts, PwErr *err)
{
    const PwFamilyImpl *f = family_of(arch, err);
    if (!f || pw_arch_check(arch, err) || check_opts(arch, opts, err)) return -1;
    m->impl = f;
    m->arch = *arch;
    m->heads = opts->heads;
    m->maxB = opts->maxB;
    m->maxT = opts->maxT;
    m->ntensors = f->ntensors;
    m->Vp = padded_vocab(arch->vocab_size, opts->vocab_multiple);
    m->lm_rows = opts->maxB * opts->maxT; /* checked to fit an int */
    if (opts->lm_chunk > 0 && opts->lm_chunk < m->lm_rows) m->lm_rows = opts->lm_chunk;
    m->precision = opts->precision;
    m->acts = opts->acts;
    m->frozen = opts->frozen != 0;
    m->follows = opts->follows != 0;
    /* the products of a bf16 model that is never trained read the mirror: nothing else reads
     * the bf16-only tensors in float32 */
    int split = (m->frozen || m->follows) && m->precision == PW_PRECISION_BF16;
    m->kv_dtype = opts->kv_dtype != PW_KV_AUTO ? opts->kv_dtype
                  : m->precision == PW_PRECISION_BF16 ? PW_KV_BF16 : PW_KV_FP32;
    f->tensor_sizes(m->tensor_size, arch, opts->heads, (size_t)m->Vp);
    f->tensor_sizes(m->tensor_real, arch, opts->heads, (size_t)arch->vocab_size);
    for (int i = 0; i < m->ntensors; i++) {
        m->tensor_off[i] = m->num_params;
        m->num_params += m->tensor_size[i];
        m->num_weights += m->tensor_real[i];
        size_t *part = f->tensor_bf16_only[i] ? &m->split_b16 : &m->split_f32;
        m->split_off[i] = *part;
        *part += m->tensor_size[i];
    }
    m->split_f32_pad = (m->split_f32 + PW_SPLIT_ALIGN - 1) / PW_SPLIT_ALIGN * PW_SPLIT_ALIGN;
    for (int i = 0; i < m->ntensors; i++) {
        int only = f->tensor_bf16_only[i];
        m->stored_size[i] = split && only ? 0 : m->tensor_size[i];
        m->stored_off[i] = !split ? m->tensor_off[i] : only ? 0 : m->split_off[i];
        m->mirror_off[i] = !split ? m->tensor_off[i]
                           : only ? m->split_off[i]
                                  : m->split_b16 + m->split_off[i];
    }
    m->num_stored = split ? m->split_f32 : m->num_params;
    m->opt_lo = 0;
    m->opt_hi = m->num_params;
    return 0;
}

/* the keys pw_row_groups counts: tokens (Vp) or positions (maxT) */
static int rows_keys(const PwModel *m) { return m->Vp > m->maxT ? m->Vp : m->maxT; }

/* the device's int buffer: inputs, mask, positions and targets (maxB x maxT), each row's last
 * (maxB), and the rows grouped by token and by position for the embeddings' backward (two of
 * 3 x maxB x maxT + 1); its float buffer: the outputs' gradients (3 maxB x maxT + maxB) */
static size_t int_bytes(const PwModelOpts *o)
{
    size_t cap = (size_t)o->maxB * o->maxT;
    return (4 * cap + o->maxB + 2 * (3 * cap + 1)) * sizeof(int);
}
static size_t dout_bytes(const PwModelOpts *o)
{
    return (3 * (size_t)o->maxB * o->maxT + o->maxB) * sizeof(float);
}

/* Whether a model of these options, given the optimiser's share [lo, hi), keeps the float32
 * master weights of that share alone (pw_model_master_split) */
static int splits_master(const PwModel *m, size_t lo, size_t hi)
{
    return m->precision == PW_PRECISION_BF16 && !m->frozen && !m->follows &&
           !(lo == 0 && hi == m->num_params);
}

int pw_model_plan(const PwArch *arch, const PwModelOpts *opts, PwModelBytes *b, PwErr *err)
{
    return pw_model_plan_share(arch, opts, 0, (size_t)-1, b, err);
}

int pw_model_plan_share(const PwArch *arch, const PwModelOpts *opts, size_t lo, size_t hi,
                        PwModelBytes *b, PwErr *err)
{
    PwModel *m = calloc(1, sizeof *m);
    if (!m) return pw_errf(err, "out of memory for the model struct");
    if (pw_model_shape(m, arch, opts, err)) {
        free(m);
        return -1;
    }
    const PwFamilyImpl *f = m->impl;
    size_t P = m->num_params;
    if (hi > P) hi = P;
    if (lo > hi) lo = hi;
    size_t kept = pw_model_is_split(m) ? pw_model_split_f32_bytes(m)
                                       : m->num_stored * sizeof(float);
    if (splits_master(m, lo, hi)) /* the tensors kept whole, and the share of the others */
        kept = (m->split_f32 + pw_model_master_before(m, hi) - pw_model_master_before(m, lo)) *
               sizeof(float);
    *b = (PwModelBytes){
        .params = kept,
        .params_bf16 = m->precision == PW_PRECISION_BF16 ? P * sizeof(uint16_t) : 0,
        .buffers = int_bytes(opts) + dout_bytes(opts) + (f->attach_bytes ? f->attach_bytes(arch)
                                                                         : 0),
        .activations = f->forward_bytes(m),
        .backward = f->backward_bytes(m),
        .grads = P * sizeof(float),
        .moments = 2 * (hi - lo) * sizeof(float),
        .transfer = pw_model_payload_bytes(m),
    };
    /* a split of the master weights (split_master) is made once the whole float32 has gone to
     * the host: the most is the whole's */
    b->load = (splits_master(m, lo, hi) ? P * sizeof(float) : b->params) + b->params_bf16 +
              b->buffers;
    free(m);
    return 0;
}

size_t pw_model_bytes_most(const PwModelBytes *b)
{
    size_t trained = b->params + b->params_bf16 + b->buffers + b->activations + b->backward +
                     b->grads + b->moments;
    return b->load > trained ? b->load : trained;
}

int pw_model_plan_split(const PwArch *arch, const PwModelOpts *opts, size_t lo, size_t hi,
                        PwModelBytes *b, PwErr *err)
{
    if (pw_model_plan_share(arch, opts, lo, hi, b, err)) return -1;
    PwModel *m = calloc(1, sizeof *m);
    if (!m) return pw_errf(err, "out of memory for the model struct");
    if (pw_model_shape(m, arch, opts, err)) {
        free(m);
        return -1;
    }
    size_t P = m->num_params;
    if (hi > P) hi = P;
    if (lo > hi) lo = hi;
    b->grads = pw_grad_split_floats(m, lo, hi) * sizeof(float);
    free(m);
    return 0;
}

PwModel *pw_model_create(const PwArch *arch, const PwModelOpts *opts, PwErr *err)
{
    PwModel *m = calloc(1, sizeof *m);
    if (!m) return pw_errf(err, "out of memory for the model struct"), NULL;
    const PwOps *ops = NULL;
    if (pw_model_shape(m, arch, opts, err) ||
        !(ops = pw_ops_open(opts->device, opts->device_id, err))) {
        free(m);
        return NULL;
    }
    m->ops = ops;
    size_t BT = (size_t)opts->maxB * opts->maxT;
    size_t pbytes = m->num_stored * sizeof(float), ibytes = int_bytes(opts);
    size_t dbytes = dout_bytes(opts), mbytes = m->num_params * sizeof(uint16_t);
    if (pw_model_is_split(m)) { /* one allocation: the payload it receives is its front */
        size_t fb = pw_model_split_f32_bytes(m);
        if (!(m->params = ops->alloc(ops, fb + mbytes))) {
            pw_model_no_room(m, "the parameters and their bfloat16 copy", fb + mbytes, err);
            goto fail;
        }
        m->params_bf16 = (uint16_t *)((char *)m->params + fb);
    } else if (!(m->params = ops->alloc(ops, pbytes))) {
        pw_model_no_room(m, "the parameters", pbytes, err);
        goto fail;
    }
    if (m->precision == PW_PRECISION_BF16 && !m->params_bf16 &&
        !(m->params_bf16 = ops->alloc(ops, mbytes))) {
        pw_model_no_room(m, "the parameters' bfloat16 copy", mbytes, err);
        goto fail;
    }
    m->mirror_stale = 1;
    if (!(m->d_int = ops->alloc(ops, ibytes)) || !(m->d_dout = ops->alloc(ops, dbytes))) {
        pw_model_no_room(m, "the input and gradient buffers", ibytes + dbytes, err);
        goto fail;
    }
    m->h_int = calloc(1, ibytes);
    m->h_stage = calloc(BT, sizeof(float));
    m->h_rows_count = calloc(rows_keys(m) + 1, sizeof(int));
    if (!m->h_int || !m->h_stage || !m->h_rows_count) {
        pw_errf(err, "out of host memory: %zu parameters", m->num_params);
        goto fail;
    }
    m->h_inputs = m->h_int;
    m->h_mask = m->h_inputs + BT;
    m->h_pos = m->h_mask + BT;
    m->h_targets = m->h_pos + BT;
    m->h_last = m->h_targets + BT;
    m->d_inputs = m->d_int;
    m->d_mask = m->d_inputs + BT;
    m->d_pos = m->d_mask + BT;
    m->d_targets = m->d_pos + BT;
    m->h_rows = m->h_targets + BT + m->maxB;
    m->d_rows = m->d_targets + BT + m->maxB;
    if (m->impl->attach(m, err)) goto fail;
    return m;
fail:
    pw_model_free(m);
    return NULL;
}

/* A split model's mirror is rounded on the host and goes up this many weights at a time (8 MiB
 * of bfloat16 in host memory): nothing of it needs device memory beyond the model's own, and
 * the whole float32 parameters never exist on the device. */
#define SPLIT_CHUNK ((size_t)4 << 20)

/* Host copy h (full layout) into a split model: the tensors it stores in float32 into params,
 * and every tensor into the mirror, rounded on the host as the table's to_bf16 rounds
 * (pw_bf16.h: to nearest, ties to even, as __float2bfloat16_rn), so that the model computes bit
 * for bit as one that keeps float32 beside its mirror. -1: out of host memory. */
static int split_upload(PwModel *m, const float *h)
{
    const PwOps *o = m->ops;
    uint16_t *b = malloc(SPLIT_CHUNK * sizeof *b);
    if (!b) return -1;
    for (int i = 0; i < m->ntensors; i++) {
        const float *src = h + m->tensor_off[i];
        size_t n = m->tensor_size[i];
        if (m->stored_size[i])
            o->copy(o, m->params + m->stored_off[i], src, n * sizeof(float), PW_COPY_H2D);
        for (size_t k = 0; k < n; k += SPLIT_CHUNK) {
            size_t c = n - k < SPLIT_CHUNK ? n - k : SPLIT_CHUNK;
            for (size_t j = 0; j < c; j++) b[j] = pw_bf16_from_f32(src[k + j]);
            /* copy returns when done, so b is free again */
            o->copy(o, m->params_bf16 + m->mirror_off[i] + k, b, c * sizeof *b, PW_COPY_H2D);
        }
    }
    free(b);
    m->mirror_stale = 0;
    return 0;
}

/* The parameters on the host: the buffer itself on the CPU (unless a split model keeps some in
 * bfloat16 only), else a copy (fetched from the device when `fetch`: never asked of a split
 * model, which saving and checking turn away first). host_done uploads it when `upload` and
 * frees a copy. */
static float *host_params(PwModel *m, int fetch)
{
    if (m->ops->device == PW_DEVICE_CPU && pw_model_keeps_all(m)) return m->params;
    if (fetch && !pw_model_keeps_all(m)) return NULL; /* its float32 is not all there to fetch */
    /* zeroed: a load fills the real rows only, and the padding rows must upload as 0 */
    float *h = fetch ? malloc(m->num_params * sizeof(float))
                     : calloc(m->num_params, sizeof(float));
    if (h && fetch)
        m->ops->copy(m->ops, h, m->params, m->num_params * sizeof(float), PW_COPY_D2H);
    return h;
}

/* -1 where a split model found no host memory to round its weights in */
static int host_done(PwModel *m, float *h, int upload)
{
    int rc = 0;
    if (pw_model_is_split(m)) {
        if (upload) rc = split_upload(m, h); /* the mirror is made here, whole */
        free(h);
        return rc;
    }
    m->mirror_stale = 1;
    if (h == m->params) return 0;
    if (upload) m->ops->copy(m->ops, m->params, h, m->num_params * sizeof(float), PW_COPY_H2D);
    free(h);
    return 0;
}

void pw_model_init_random(PwModel *m, uint64_t seed)
{
    if (m->master) { /* its float32 of the other shares is on other ranks: a caller bug */
        fprintf(stderr, "pw_model_init_random: the model's master weights are split over a "
                "role's ranks (pw_model_optimizer_shard): initialise it before the split\n");
        abort();
    }
    float *h = host_params(m, 0);
    if (!h) {
        fprintf(stderr, "pw_model_init_random: out of host memory\n");
        abort(); /* no caller can go on with unset weights */
    }
    m->impl->init_random(m, h, seed);
    zero_padding(m, h);
    if (host_done(m, h, 1)) {
        fprintf(stderr, "pw_model_init_random: out of host memory\n");
        abort();
    }
}

/* A head asked for that the folder lacks: a folder without a score head is not a reward model,
 * and a random one in its place would score noise without a word. */
static int missing_head(const char *dir, int heads, PwErr *err)
{
    if (heads & PW_HEAD_SCORE)
        return pw_errf(err, "%s has no score.weight: it is not a reward model (only a run that "
                       "trains one, ppo_world rm, starts a score head from scratch)", dir);
    return pw_errf(err, "%s has no value_head.weight: it is not a critic (a critic starts from "
                   "a reward model's score head, or from a critic a run saved)", dir);
}

int pw_model_check_heads(const char *dir, int heads, PwErr *err)
{
    PwStSet *st = NULL;
    if (pw_st_set_open(&st, dir, err)) return -1;
    int lacks = 0;
    if ((heads & PW_HEAD_SCORE) && !pw_st_set_find(st, "score.weight", NULL))
        lacks |= PW_HEAD_SCORE;
    if ((heads & PW_HEAD_VALUE) && !pw_st_set_find(st, "value_head.weight", NULL))
        lacks |= PW_HEAD_VALUE;
    pw_st_set_close(st);
    return lacks ? missing_head(dir, lacks, err) : 0;
}

PwModel *pw_model_load(const char *dir, const PwModelOpts *opts, PwErr *err)
{
    PwArch arch;
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (pw_arch_load(&arch, dir, err)) return NULL;
    if (opts->value_from_score && !(opts->heads & PW_HEAD_VALUE))
        return pw_errf(err, "%s: a critic needs the value head", dir), NULL;
    PwErr cerr;
    PwModel *m = pw_model_create(&arch, opts, &cerr);
    if (!m) return pw_errf(err, "%s: %s", path, cerr.msg), NULL;
    float *h = host_params(m, 0);
    int missing = 0;
    if (!h) {
        pw_errf(err, "%s: out of host memory while loading", dir);
        goto fail;
    }
    if (m->impl->load(m, h, dir, opts->value_from_score, &missing, err)) {
        host_done(m, h, 0);
        goto fail;
    }
    if (missing & ~opts->fresh_heads) {
        host_done(m, h, 0);
        missing_head(dir, missing & ~opts->fresh_heads, err);
        goto fail;
    }
    if (missing) m->impl->init_heads(m, h, missing, opts->seed);
    zero_padding(m, h); /* on the CPU h is the parameters themselves, zeroed when made */
    if (host_done(m, h, 1)) {
        pw_errf(err, "%s: out of host memory while loading", dir);
        goto fail;
    }
    return m;
fail:
    pw_model_free(m);
    return NULL;
}

/* Whether host copy h holds a parameter that is not a valid weight; err then names the first,
 * its tensor and element. */
static int find_bad_param(const PwModel *m, const float *h, PwErr *err)
{
    for (int i = 0; i < m->ntensors; i++) {
        size_t n = m->tensor_size[i], at = pw_weights_first_bad(h + m->tensor_off[i], n);
        if (at == n) continue;
        char v[64];
        pw_errf(err, "parameter tensor \"%s\" element %zu is %s (a weight must be finite and at "
                "most %g in magnitude)", m->impl->tensor_names[i], at,
                pw_weight_describe(h[m->tensor_off[i] + at], v, sizeof v), PW_WEIGHT_LIMIT);
        return 1;
    }
    return 0;
}

/* A model with split master weights: the float32 of the tensors it keeps whole into h (host,
 * the full layout), each where pw_model_params would hold it */
static void kept_to_host(PwModel *m, float *h)
{
    for (int i = 0; i < m->ntensors; i++)
        if (m->stored_size[i])
            m->ops->copy(m->ops, h + m->tensor_off[i], m->params + m->stored_off[i],
                         m->tensor_size[i] * sizeof(float), PW_COPY_D2H);
}

/* Such a model in float32 in the full layout on the host, for a check: the tensors it keeps
 * whole, its share of the others (the master weights of flat floats [opt_lo, opt_hi)), zeros
 * elsewhere (a valid weight). NULL: out of host memory. */
static float *master_host(PwModel *m)
{
    float *h = calloc(m->num_params, sizeof *h);
    float *hm = malloc((m->master_n ? m->master_n : 1) * sizeof *hm);
    if (!h || !hm) {
        free(h);
        free(hm);
        return NULL;
    }
    m->ops->copy(m->ops, hm, m->master, m->master_n * sizeof *hm, PW_COPY_D2H);
    kept_to_host(m, h);
    for (int i = 0; i < m->ntensors; i++) {
        size_t a = m->tensor_off[i], b = a + m->tensor_size[i];
        a = a > m->opt_lo ? a : m->opt_lo;
        b = b < m->opt_hi ? b : m->opt_hi;
        if (!m->stored_size[i] && a < b)
            memcpy(h + a, hm + (pw_model_master_before(m, a) - m->master_lo), (b - a) * sizeof *h);
    }
    free(hm);
    return h;
}

/* Writes h (the full layout on the host) as pw_model_save does, after the check of its weights */
static int save_host(PwModel *m, const float *h, const char *dir, const PwSaveOpts *opts,
                     PwErr *err)
{
    PwSaveOpts none = {0};
    /* Checked before anything is written: a diverged model must never replace a good checkpoint
     * in the folder, and whoever loads the folder would refuse it anyway. */
    PwErr bad;
    return find_bad_param(m, h, &bad)
               ? pw_errf(err, "%s: not saved: %s; the folder keeps what it held", dir, bad.msg)
               : m->impl->save(m, h, dir, opts ? opts : &none, err);
}

int pw_model_save_master(PwModel *m, const char *dir, float *h, const PwSaveOpts *opts,
                         PwErr *err)
{
    if (!m->master)
        return pw_errf(err, "%s: not saved: the model's float32 weights are not split "
                       "(pw_model_save writes them)", dir);
    kept_to_host(m, h); /* beside the caller's split tensors */
    return save_host(m, h, dir, opts, err);
}

int pw_model_save_opts(PwModel *m, const char *dir, const PwSaveOpts *opts, PwErr *err)
{
    if (m->frozen) /* at bf16 it holds the matrices rounded: a checkpoint would lose bits */
        return pw_errf(err, "%s: not saved: a frozen model is never written, its folder is "
                       "where it came from (at bf16 it keeps its products' weights in bfloat16 "
                       "only)", dir);
    if (m->follows) /* the model it follows is the one to save */
        return pw_errf(err, "%s: not saved: a model that follows another holds that model's "
                       "weights (at bf16 its products' weights in bfloat16 only): save that "
                       "one", dir);
    if (m->master) /* one rank has its share of the float32 alone */
        return pw_errf(err, "%s: not saved: this model keeps the float32 weights of its share "
                       "of the optimiser alone (floats %zu to %zu of %zu): the whole weights are "
                       "written from all the shares (pw_model_save_master)", dir, m->opt_lo,
                       m->opt_hi, m->num_params);
    float *h = host_params(m, 1);
    if (!h) return pw_errf(err, "%s: out of host memory while saving", dir);
    int rc = save_host(m, h, dir, opts, err);
    host_done(m, h, 0);
    return rc;
}

int pw_model_check_params(PwModel *m, PwErr *err)
{
    /* Every |w| <= the norm, so a finite norm within the limit clears all of them at the cost
     * of one reduction; the sum is in double, where even 3e38 squared is finite. */
    /* never written since it loaded, or written by what a checked model handed over */
    if (m->frozen || m->follows) return 0;
    /* split master weights: the tensors kept whole and this model's share (the other ranks
     * check theirs) */
    double sq = m->ops->sumsq(m->ops, m->params, m->num_stored);
    if (m->master) sq += m->ops->sumsq(m->ops, m->master, m->master_n);
    if (sqrt(sq) <= PW_WEIGHT_LIMIT) return 0;
    float *h = m->master ? master_host(m) : host_params(m, 1);
    if (!h) return pw_errf(err, "out of host memory to look for the bad weight");
    /* A norm beyond the limit from many large but valid weights is no reason to stop. */
    int rc = find_bad_param(m, h, err) ? -1 : 0;
    if (m->master) free(h);
    else host_done(m, h, 0);
    return rc;
}

int pw_model_save(PwModel *m, const char *dir, PwErr *err)
{
    return pw_model_save_opts(m, dir, NULL, err);
}

/* ------------------------------------------------------------------------------------------ */
/* what it is */

const PwArch *pw_model_arch(const PwModel *m) { return &m->arch; }
PwDevice pw_model_device(const PwModel *m) { return m->ops->device; }
int pw_model_device_id(const PwModel *m) { return m->ops->device_id; }
PwPrecision pw_model_precision(const PwModel *m) { return m->precision; }
size_t pw_model_num_params(const PwModel *m) { return m->num_params; }
size_t pw_model_num_weights(const PwModel *m) { return m->num_weights; }
int pw_model_vocab_padded(const PwModel *m) { return m->Vp; }
int pw_model_num_tensors(const PwModel *m) { return m->ntensors; }

const char *pw_model_tensor_info(const PwModel *m, int i, size_t *offset, size_t *count)
{
    if (i < 0 || i >= m->ntensors) return NULL;
    if (offset) *offset = m->tensor_off[i];
    if (count) *count = m->tensor_size[i];
    return m->impl->tensor_names[i];
}

double pw_model_flops_per_token(const PwModel *m, int T) { return m->impl->flops_per_token(m, T); }
size_t pw_model_activation_bytes(const PwModel *m)
{
    return m->impl->forward_bytes(m) + m->impl->backward_bytes(m);
}

static PwTensor flat(const PwModel *m, float *data)
{
    int64_t shape[1] = {(int64_t)m->num_params};
    return pw_tensor_on(data, PW_DTYPE_F32, 1, shape, m->ops->device, m->ops->device_id);
}

PwTensor pw_model_params(PwModel *m)
{
    if (m->master) { /* its float32 is not all there: a caller bug */
        fprintf(stderr, "pw_model_params: the model's master weights are split over a role's "
                "ranks (pw_model_master_split): pw_model_mirror and pw_model_kept hold its "
                "weights\n");
        abort();
    }
    if (m->frozen || m->follows) { /* a caller that would write it so is a bug */
        fprintf(stderr, "pw_model_params: the model %s: its weights are %s\n",
                m->frozen ? "is frozen (PwModelOpts.frozen)" : "follows another "
                "(PwModelOpts.follows)", m->frozen ? "not written after it is made"
                : "written by pw_model_weights_in alone");
        abort();
    }
    m->ops->sync(m->ops);
    m->mirror_stale = 1; /* the caller may write through it */
    return flat(m, m->params);
}

void pw_model_sync(PwModel *m) { m->ops->sync(m->ops); }

PwTensor pw_model_grads(PwModel *m)
{
    if (m->gsplit) { /* a caller bug: its share is all there is (pw_model_grads_get) */
        fprintf(stderr, "pw_model_grads: the model's gradients are split over its role's ranks "
                "(pw_model_grads_split): no rank holds them whole\n");
        abort();
    }
    m->ops->sync(m->ops);
    return flat(m, m->grads);
}

/* ------------------------------------------------------------------------------------------ */
/* forward and backward */

static int check_batch(const PwModel *m, const PwModelInput *b, const PwOutputs *out, PwErr *err)
{
    const int V = m->arch.vocab_size, B = b->B, T = b->T;
    if (!(b->temperature >= 0.0f) || isinf(b->temperature))
        return pw_errf(err, "temperature %g must be finite and positive (0 = none)",
                       b->temperature);
    if (B <= 0 || T <= 0 || B > m->maxB || T > m->maxT)
        return pw_errf(err, "forward of B=%d T=%d exceeds the model's capacity B=%d T=%d", B, T,
                       m->maxB, m->maxT);
    for (int i = 0; i < B * T; i++) {
        if (b->tokens[i] < 0 || b->tokens[i] >= V)
            return pw_errf(err, "token id %d at (b=%d, t=%d) is outside the vocabulary [0, %d)",
                           b->tokens[i], i / T, i % T, V);
        if (b->targets && b->targets[i] >= V)
            return pw_errf(err, "target %d at (b=%d, t=%d) is outside the vocabulary [0, %d)",
                           b->targets[i], i / T, i % T, V);
    }
    if (out && (out->col0 < 0 || out->width < 0 || out->col0 + out->width > T))
        return pw_errf(err, "output columns [%d, %d) are outside the batch's %d", out->col0,
                       out->col0 + out->width, T);
    struct { const void *want; int head; const char *name; } need[] = {
        {out ? out->logp : NULL, PW_HEAD_LM, "log-probs (the LM head)"},
        {out ? out->entropy : NULL, PW_HEAD_LM, "entropies (the LM head)"},
        {out ? out->logits : NULL, PW_HEAD_LM, "logits (the LM head)"},
        {out ? out->value : NULL, PW_HEAD_VALUE, "values (the value head)"},
        {out ? out->score : NULL, PW_HEAD_SCORE, "scores (the score head)"},
    };
    for (size_t i = 0; i < PW_ARRAY_LEN(need); i++)
        if (need[i].want && !(m->heads & need[i].head))
            return pw_errf(err, "the model has no head for the %s asked for", need[i].name);
    if (out && out->logits && b->B * T > m->lm_rows)
        return pw_errf(err, "logits of %d rows asked for, but the LM head makes %d at a time "
                       "(lm_chunk) and keeps none: ask with lm_chunk 0, or for log-probs",
                       b->B * T, m->lm_rows);
    return 0;
}

/* out (B, width) = the columns [col0, col0 + width) of the device (B, T) array src, through the
 * host staging buffer; zero where the target is negative when zero_untargeted. */
static void gather(PwModel *m, float *out, const float *src, int col0, int width,
                   int zero_untargeted)
{
    const int B = m->B, T = m->T;
    m->ops->copy(m->ops, m->h_stage, src, (size_t)B * T * sizeof(float), PW_COPY_D2H);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < width; t++) {
            size_t i = (size_t)b * T + col0 + t;
            out[(size_t)b * width + t] = zero_untargeted && m->h_targets[i] < 0 ? 0.0f
                                                                                 : m->h_stage[i];
        }
}

int pw_model_forward(PwModel *m, const PwModelInput *b, PwOutputs *out, PwErr *err)
{
    if (check_batch(m, b, out, err)) return -1;
    pw_model_mirror_refresh(m);
    const PwOps *o = m->ops;
    const int B = b->B, T = b->T, BT = B * T;
    /* keep our own copies: backward runs later, after the caller may have reused its arrays */
    memcpy(m->h_inputs, b->tokens, (size_t)BT * sizeof(int));
    for (int i = 0; i < BT; i++) {
        m->h_mask[i] = b->mask ? (b->mask[i] != 0) : 1;
        m->h_targets[i] = b->targets ? b->targets[i] : -1;
    }
    pw_positions_from_mask(m->h_pos, m->h_mask, B, T);
    for (int r = 0; r < B; r++) { /* each row's last real token, where its score is read */
        m->h_last[r] = -1;
        for (int t = T - 1; t >= 0 && m->h_last[r] < 0; t--)
            if (m->h_mask[r * T + t]) m->h_last[r] = t;
    }
    /* the four (B,T) arrays are maxB*maxT apart on both sides: one upload per array */
    size_t cap = (size_t)m->maxB * m->maxT;
    for (int k = 0; k < 4; k++)
        o->copy(o, m->d_int + k * cap, m->h_int + k * cap, (size_t)BT * sizeof(int), PW_COPY_H2D);
    m->B = B;
    m->T = T;
    m->inv_temperature = b->temperature > 0.0f ? 1.0f / b->temperature : 1.0f;
    m->col0 = out ? out->col0 : 0;
    m->width = out ? out->width : T;
    if (m->impl->forward(m, err)) {
        m->B = m->T = 0;
        return -1;
    }
    if (!out) return 0;
    PwFamilyOutputs fo;
    m->impl->outputs(m, &fo);
    const int c0 = out->col0, w = out->width, tg = b->targets != NULL;
    if (out->logp) gather(m, out->logp, fo.logp, c0, w, 0);
    if (out->entropy) gather(m, out->entropy, fo.entropy, c0, w, 0);
    if (out->value) gather(m, out->value, fo.value, c0, w, tg);
    if (out->score) o->copy(o, out->score, fo.score, (size_t)B * sizeof(float), PW_COPY_D2H);
    if (out->logits) { /* the V real columns of each position's Vp */
        size_t V = m->arch.vocab_size, Vp = m->Vp;
        for (int r = 0; r < B; r++)
            for (int t = 0; t < w; t++)
                o->copy(o, out->logits + ((size_t)r * w + t) * V,
                        fo.logits + ((size_t)r * T + c0 + t) * Vp, V * sizeof(float),
                        PW_COPY_D2H);
    }
    return 0;
}

int pw_model_zero_grad(PwModel *m, PwErr *err)
{
    if (m->frozen) return pw_errf(err, "a frozen model has no gradients (PwModelOpts.frozen)");
    if (m->follows)
        return pw_errf(err, "a model that follows another has no gradients: it takes that "
                       "model's weights (PwModelOpts.follows)");
    size_t bytes = m->num_params * sizeof(float);
    m->grads_spent = 0;
    if (m->gsplit) return pw_grad_split_zero(m, err);
    if (!m->grads) {
        if (!(m->grads = m->ops->alloc(m->ops, bytes)))
            return pw_model_no_room(m, "the gradients", bytes, err);
        return 0;
    }
    m->ops->zero(m->ops, m->grads, bytes);
    return 0;
}

/* Whether a zero_grad made the gradients (and no payload holds their place since) */
static int grads_made(const PwModel *m)
{
    return m->gsplit ? pw_grad_split_share(m) != NULL : m->grads != NULL;
}

/* dst (B, T) on the device = 0 except the columns [col0, col0 + width) = src (B, width). */
static float *scatter(PwModel *m, float *dst, const float *src, int col0, int width)
{
    if (!src) return NULL;
    const int B = m->B, T = m->T;
    memset(m->h_stage, 0, (size_t)B * T * sizeof(float));
    for (int b = 0; b < B; b++)
        for (int t = 0; t < width; t++)
            m->h_stage[(size_t)b * T + col0 + t] = src[(size_t)b * width + t];
    m->ops->copy(m->ops, dst, m->h_stage, (size_t)B * T * sizeof(float), PW_COPY_H2D);
    return dst;
}

const PwRowGroups *pw_model_row_groups(PwModel *m, int by_position)
{
    const int BT = m->B * m->T, per = 3 * BT + 1;
    m->rows[1] = (PwRowGroups){0};
    for (int k = 0; k <= by_position; k++) {
        int *h = m->h_rows + (size_t)k * per, *d = m->d_rows + (size_t)k * per;
        /* tokens are inside the vocabulary (check_batch), positions below maxT */
        int n = pw_row_groups(k ? m->h_pos : m->h_inputs, BT, k ? m->maxT : m->Vp, h, h + BT,
                              h + 2 * BT + 1, m->h_rows_count);
        m->rows[k] = (PwRowGroups){d, d + BT, d + 2 * BT + 1, n};
    }
    m->ops->copy(m->ops, m->d_rows, m->h_rows, (by_position ? 2 : 1) * (size_t)per * sizeof(int),
                 PW_COPY_H2D);
    return m->rows;
}

int pw_model_backward(PwModel *m, const PwOutputGrads *g, PwErr *err)
{
    if (m->acts == PW_ACTS_NONE)
        return pw_errf(err, "backward of a model made to run forwards only (acts: none keeps no "
                       "activations for it)");
    if (m->B == 0) return pw_errf(err, "backward without a forward before it");
    if (m->gsplit && g->ready)
        return pw_errf(err, "a model whose gradients are split sums them itself "
                       "(pw_model_grads_split), not through PwOutputGrads.ready");
    if (m->grads_spent) return pw_errf(err, PW_GRADS_SPENT, "a backward");
    if (!grads_made(m) && pw_model_zero_grad(m, err)) return -1;
    const size_t cap = (size_t)m->maxB * m->maxT;
    const int c0 = m->col0, w = m->width;
    float *dlogp = scatter(m, m->d_dout, g->dlogp, c0, w);
    float *dent = scatter(m, m->d_dout + cap, g->dentropy, c0, w);
    float *dval = scatter(m, m->d_dout + 2 * cap, g->dvalue, c0, w);
    float *dscore = NULL;
    if (g->dscore) {
        dscore = m->d_dout + 3 * cap;
        m->ops->copy(m->ops, dscore, g->dscore, (size_t)m->B * sizeof(float), PW_COPY_H2D);
    }
    if (pw_model_ready_begin(m, g->ready, g->ready_ctx, err)) return -1;
    pw_model_mirror_refresh(m); /* the weights of its forward, unless written since */
    int rc = m->impl->backward(m, dlogp, dent, dval, dscore, err);
    if (rc) { /* nothing more is reported of a failed backward */
        m->ready = NULL;
        if (m->gsplit) pw_grad_split_clear(m);
    } else {
        pw_model_ready_end(m);
    }
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* optimiser */


double pw_model_grad_norm(PwModel *m)
{
    if (m->gsplit) return sqrt(pw_grad_split_sumsq(m));
    if (!m->grads) return 0.0;
    return sqrt(m->ops->sumsq(m->ops, m->grads, m->num_params));
}

/* Bytes of one moment: this model's share of the parameters (all of them unless split). */
static size_t moment_bytes(const PwModel *m) { return (m->opt_hi - m->opt_lo) * sizeof(float); }

static int alloc_moments(PwModel *m, PwErr *err)
{
    size_t bytes = moment_bytes(m);
    /* an empty share (more ranks than blocks of parameters) still gets a float, so that the
     * moments' pointers say "a step was taken" as they do everywhere else */
    size_t ab = bytes ? bytes : sizeof(float);
    if (!(m->adam_m = m->ops->alloc(m->ops, ab)) || !(m->adam_v = m->ops->alloc(m->ops, ab))) {
        m->ops->free(m->ops, m->adam_m);
        m->adam_m = NULL;
        return pw_model_no_room(m, "the AdamW moments", 2 * bytes, err);
    }
    return 0;
}

int pw_model_has_optimizer(const PwModel *m) { return m->adam_m || m->h_adam_m; }

size_t pw_model_master_before(const PwModel *m, size_t x)
{
    size_t n = 0;
    for (int i = 0; i < m->ntensors; i++)
        if (m->impl->tensor_bf16_only[i] && x > m->tensor_off[i]) {
            size_t in = x - m->tensor_off[i];
            n += in < m->tensor_size[i] ? in : m->tensor_size[i];
        }
    return n;
}

/* The float32 that an update of the share's part [a, b) of tensor i writes: params where the
 * tensor is kept whole, else the master share */
static float *master_of(PwModel *m, int i, size_t a)
{
    return m->stored_size[i] ? m->params + m->stored_off[i] + (a - m->tensor_off[i])
                             : m->master + (pw_model_master_before(m, a) - m->master_lo);
}

/* A trained bf16 model given a share: its float32 of the bf16-only tensors goes, but for the
 * share's floats (master); the other tensors stay whole in a smaller params, and the mirror,
 * made from the whole float32 first, stays as it is (docs/model.md, The optimiser's share).
 * What stays goes through host memory while the whole float32 goes and the split's buffers come,
 * so that the device never holds both (for Llama 3 8B on four ranks that would be 8.6 GB more
 * than the whole, the most a rank would hold with its gradients split too). No room for the
 * split's buffers once the whole has gone (they are smaller, so only other users of the device
 * or a fragmented one leave none): a message, and the model can only be freed. */
static int split_master(PwModel *m, PwErr *err)
{
    const PwOps *o = m->ops;
    size_t glo = pw_model_master_before(m, m->opt_lo), ghi = pw_model_master_before(m, m->opt_hi);
    size_t nm = ghi - glo, nk = m->split_f32, kb = nk * sizeof(float);
    float *h = malloc((nk + nm) * sizeof *h);
    if (!h)
        return pw_errf(err, "out of host memory for the float32 weights while they split "
                       "(%.1f MiB)", (nk + nm) * sizeof *h / 1048576.0);
    pw_model_mirror_refresh(m); /* the bfloat16 of every tensor, before its float32 goes */
    for (int i = 0; i < m->ntensors; i++) { /* the kept tensors, then the share's float32 */
        size_t a = m->tensor_off[i], b = a + m->tensor_size[i];
        if (!m->impl->tensor_bf16_only[i]) {
            o->copy(o, h + m->split_off[i], m->params + a, (b - a) * sizeof *h, PW_COPY_D2H);
            continue;
        }
        a = a > m->opt_lo ? a : m->opt_lo;
        b = b < m->opt_hi ? b : m->opt_hi;
        if (a < b) o->copy(o, h + nk + (pw_model_master_before(m, a) - glo), m->params + a,
                           (b - a) * sizeof *h, PW_COPY_D2H);
    }
    o->sync(o);
    o->free(o, m->params);
    m->params = NULL;
    float *kept = o->alloc(o, kb), *master = o->alloc(o, (nm ? nm : 1) * sizeof(float));
    if (!kept || !master) {
        o->free(o, kept);
        o->free(o, master);
        free(h);
        pw_model_no_room(m, "the float32 weights' share", kb + nm * sizeof(float), err);
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, " (the whole float32 has gone: the model can "
                 "only be freed)");
        return -1;
    }
    o->copy(o, kept, h, kb, PW_COPY_H2D);
    o->copy(o, master, h + nk, nm * sizeof *h, PW_COPY_H2D);
    o->sync(o);
    free(h);
    m->master = master;
    m->master_lo = glo;
    m->master_n = nm;
    m->params = kept;
    for (int i = 0; i < m->ntensors; i++) {
        int only = m->impl->tensor_bf16_only[i];
        m->stored_size[i] = only ? 0 : m->tensor_size[i];
        m->stored_off[i] = only ? 0 : m->split_off[i];
    }
    m->num_stored = m->split_f32;
    m->mirror_stale = 0;
    return 0;
}

int pw_model_optimizer_shard(PwModel *m, size_t lo, size_t hi, PwErr *err)
{
    if (lo > hi || hi > m->num_params)
        return pw_errf(err, "the optimiser's share [%zu, %zu) is not a range of the model's %zu "
                       "parameters", lo, hi, m->num_params);
    if (pw_model_has_optimizer(m))
        return pw_errf(err, "the optimiser's share is set before its moments exist (before the "
                       "first step or a load of the moments)");
    if (m->master)
        return pw_errf(err, "the optimiser's share is set once: this model's float32 weights "
                       "of the other shares are gone already (floats %zu to %zu kept)",
                       m->opt_lo, m->opt_hi);
    size_t olo = m->opt_lo, ohi = m->opt_hi;
    m->opt_lo = lo;
    m->opt_hi = hi;
    if (splits_master(m, lo, hi) && split_master(m, err)) {
        m->opt_lo = olo;
        m->opt_hi = ohi;
        return -1;
    }
    return 0;
}

int pw_model_master_split(const PwModel *m) { return m->master != NULL; }

static PwTensor on_device(const PwModel *m, void *data, PwDtype dt, size_t n)
{
    int64_t shape[1] = {(int64_t)n};
    return pw_tensor_on(data, dt, 1, shape, m->ops->device, m->ops->device_id);
}

PwTensor pw_model_mirror(PwModel *m)
{
    m->ops->sync(m->ops);
    return on_device(m, m->params_bf16, PW_DTYPE_BF16, m->params_bf16 ? m->num_params : 0);
}

PwTensor pw_model_kept(PwModel *m)
{
    m->ops->sync(m->ops);
    return on_device(m, m->params, PW_DTYPE_F32, m->num_stored);
}

int pw_model_master_get(PwModel *m, float *h, PwErr *err)
{
    if (!m->master) return pw_errf(err, "the model's float32 weights are not split");
    m->ops->copy(m->ops, h, m->master, m->master_n * sizeof(float), PW_COPY_D2H);
    return 0;
}

void pw_model_optimizer_range(const PwModel *m, size_t *lo, size_t *hi)
{
    *lo = m->opt_lo;
    *hi = m->opt_hi;
}

static int whole_optimizer(const PwModel *m)
{
    return m->opt_lo == 0 && m->opt_hi == m->num_params;
}

int pw_model_adamw_step(PwModel *m, const PwAdamWConfig *cfg, int t, double *norm_out,
                        PwErr *err)
{
    const PwOps *o = m->ops;
    if (!grads_made(m))
        return pw_errf(err, "an optimiser step needs gradients (no backward ran)");
    if (m->grads_spent) return pw_errf(err, PW_GRADS_SPENT, "an optimiser step");
    if (m->h_adam_m && pw_model_optimizer_reload(m, err)) return -1;
    if (!m->adam_m && alloc_moments(m, err)) return -1;
    double norm = pw_model_grad_norm(m);
    if (norm_out) *norm_out = norm;
    /* The norm is a sum over every gradient, so this one test sees a NaN or infinity anywhere;
     * clipping cannot repair it (inf / inf is NaN), and the moments would keep it for good. */
    if (!isfinite(norm)) return PW_ADAMW_SKIPPED;
    /* Only the share is updated, and the gradients are left as they are (clipping scales each
     * as the update reads it). Each float of the share goes through the same operations as in
     * an update of the whole, so the shares of N ranks put together are the whole's update bit
     * for bit. */
    size_t lo = m->opt_lo, hi = m->opt_hi;
    /* the share's gradient: in the whole one, or all a model with split gradients has */
    float *gs = m->gsplit ? pw_grad_split_share(m) : m->grads + lo;
    /* clipping: each gradient times this as the update reads it */
    float gscale = cfg->grad_clip > 0.0f && norm > cfg->grad_clip ? (float)(cfg->grad_clip / norm)
                                                                  : 1.0f;
    /* one update per tensor (the part of it in the share): each tensor is contiguous and
     * decays or not as a whole. At bf16 the update writes the share's bfloat16 copy too,
     * rounded as pw_model_mirror_refresh would round it: whatever follows an update reads that
     * copy (the next minibatch's forward, or the weights handed to the generators), and made in
     * the update it costs a write of 2 bytes a weight, not a pass over the float32. */
    for (int i = 0; i < m->ntensors; i++) {
        size_t a = m->tensor_off[i], b = a + m->tensor_size[i];
        a = a > lo ? a : lo;
        b = b < hi ? b : hi;
        if (a >= b) continue;
        float *w = m->master ? master_of(m, i, a) : m->params + a;
        uint16_t *w16 =
            m->params_bf16 ? m->params_bf16 + m->mirror_off[i] + (a - m->tensor_off[i]) : NULL;
        o->adamw_update(o, w, w16, gs + (a - lo), gscale, m->adam_m + (a - lo),
                        m->adam_v + (a - lo), b - a, cfg->lr, cfg->beta1, cfg->beta2, cfg->eps,
                        m->impl->tensor_decays[i] ? cfg->weight_decay : 0.0f, t);
    }
    /* The whole optimiser's update made every tensor's copy. A share waits for the other ranks'
     * shares: the caller's all-gather writes them into params through pw_model_params, which
     * makes the copy stale, or, with split master weights, brings the others' copies along
     * (pw_model_mirror). */
    m->mirror_stale = !m->master && !whole_optimizer(m);
    return PW_ADAMW_APPLIED;
}

int pw_model_optimizer_offload(PwModel *m, PwErr *err)
{
    if (m->ops->device == PW_DEVICE_CPU || !m->adam_m) return 0;
    size_t bytes = moment_bytes(m);
    if (!(m->h_adam_m = malloc(bytes ? bytes : 1)) || !(m->h_adam_v = malloc(bytes ? bytes : 1))) {
        free(m->h_adam_m);
        m->h_adam_m = NULL;
        return pw_errf(err, "out of host memory for the AdamW moments (%.1f MiB)",
                       2.0 * bytes / 1048576.0);
    }
    m->ops->copy(m->ops, m->h_adam_m, m->adam_m, bytes, PW_COPY_D2H);
    m->ops->copy(m->ops, m->h_adam_v, m->adam_v, bytes, PW_COPY_D2H);
    m->ops->free(m->ops, m->adam_m);
    m->ops->free(m->ops, m->adam_v);
    m->adam_m = m->adam_v = NULL;
    return 0;
}

int pw_model_optimizer_reload(PwModel *m, PwErr *err)
{
    if (!m->h_adam_m) return 0;
    if (alloc_moments(m, err)) return -1;
    size_t bytes = moment_bytes(m);
    m->ops->copy(m->ops, m->adam_m, m->h_adam_m, bytes, PW_COPY_H2D);
    m->ops->copy(m->ops, m->adam_v, m->h_adam_v, bytes, PW_COPY_H2D);
    free(m->h_adam_m);
    free(m->h_adam_v);
    m->h_adam_m = m->h_adam_v = NULL;
    return 0;
}

/* The moments on the host: where they are, or a fresh copy (*copied = 1; free both). */
static int host_moments(PwModel *m, float **hm, float **hv, int *copied, PwErr *err)
{
    *copied = 0;
    if (m->h_adam_m || m->ops->device == PW_DEVICE_CPU) {
        *hm = m->h_adam_m ? m->h_adam_m : m->adam_m;
        *hv = m->h_adam_v ? m->h_adam_v : m->adam_v;
        return 0;
    }
    size_t bytes = moment_bytes(m);
    *hm = malloc(bytes ? bytes : 1);
    *hv = malloc(bytes ? bytes : 1);
    if (!*hm || !*hv) {
        free(*hm);
        free(*hv);
        return pw_errf(err, "out of host memory for the AdamW moments");
    }
    *copied = 1;
    m->ops->copy(m->ops, *hm, m->adam_m, bytes, PW_COPY_D2H);
    m->ops->copy(m->ops, *hv, m->adam_v, bytes, PW_COPY_D2H);
    return 0;
}

/* 0 when both moments are finite and the second is not negative (a mean of squares); else -1
 * with a message naming `what` (the file) and the element. A moment has no size limit: the
 * second one of a large gradient is legitimately huge. */
static int check_moments(size_t n, const float *hm, const float *hv, const char *what,
                         PwErr *err)
{
    const float *mom[2] = {hm, hv};
    static const char *const names[2] = {"adam_m", "adam_v"};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < n; i++)
            if (!isfinite(mom[k][i]) || (k == 1 && mom[k][i] < 0.0f)) {
                char v[64];
                return pw_errf(err, "%s: %s element %zu is %s (the AdamW moments must be finite, "
                               "and adam_v, a mean of squares, not negative)", what, names[k], i,
                               pw_weight_describe(mom[k][i], v, sizeof v));
            }
    return 0;
}

/* The moments travel in files without the padding rows, as the weights do, so that a file
 * does not depend on the vocab_multiple of the model that wrote it: the file holds the real
 * prefix of each tensor (pw_model_optimizer_write_from writes them so), and dst (num_params)
 * gets them back, padding rows 0. */
static void unpack_real(const PwModel *m, float *dst, const float *src)
{
    for (int i = 0; i < m->ntensors; i++) {
        float *t = dst + m->tensor_off[i];
        memcpy(t, src, m->tensor_real[i] * sizeof(float));
        memset(t + m->tensor_real[i], 0, (m->tensor_size[i] - m->tensor_real[i]) * sizeof(float));
        src += m->tensor_real[i];
    }
}

int pw_model_optimizer_get(PwModel *m, float *hm, float *hv, PwErr *err)
{
    if (!pw_model_has_optimizer(m)) return pw_errf(err, "no AdamW moments yet (no step taken)");
    size_t bytes = moment_bytes(m);
    if (m->h_adam_m) {
        memcpy(hm, m->h_adam_m, bytes);
        memcpy(hv, m->h_adam_v, bytes);
    } else {
        m->ops->copy(m->ops, hm, m->adam_m, bytes, PW_COPY_D2H);
        m->ops->copy(m->ops, hv, m->adam_v, bytes, PW_COPY_D2H);
    }
    return 0;
}

int pw_model_optimizer_get_part(PwModel *m, int which, size_t off, size_t n, float *h,
                                PwErr *err)
{
    if (!pw_model_has_optimizer(m)) return pw_errf(err, "no AdamW moments yet (no step taken)");
    if (off < m->opt_lo || off > m->opt_hi || n > m->opt_hi - off)
        return pw_errf(err, "floats [%zu, %zu) of the moments are not in the share [%zu, %zu)",
                       off, off + n, m->opt_lo, m->opt_hi);
    const float *src = which ? (m->h_adam_v ? m->h_adam_v : m->adam_v)
                             : (m->h_adam_m ? m->h_adam_m : m->adam_m);
    src += off - m->opt_lo;
    if (m->h_adam_m) memcpy(h, src, n * sizeof *h);
    else m->ops->copy(m->ops, h, src, n * sizeof *h, PW_COPY_D2H);
    return 0;
}

size_t pw_model_stream_floats = (size_t)1 << 24;

int pw_model_optimizer_write_from(const PwModel *m, const char *path, PwMomentSource source,
                                  void *ctx, PwErr *err)
{
    static const char *const names[2] = {"adam_m", "adam_v"};
    static const char *const meta[] = {"format", "ppo_world adamw moments", "version", "1", NULL};
    const size_t n = m->num_weights, piece = pw_model_stream_floats ? pw_model_stream_floats : 1;
    size_t most = 0;
    for (int i = 0; i < m->ntensors; i++)
        most = m->tensor_real[i] > most ? m->tensor_real[i] : most;
    most = most < piece ? most : piece;
    float *buf = malloc((most ? most : 1) * sizeof *buf);
    if (!buf)
        return pw_errf(err, "%s: out of host memory for a piece of the AdamW moments (%.1f MiB)",
                       path ? path : "the moments", most * sizeof *buf / 1048576.0);
    PwStWriteTensor t[2] = {{"adam_m", 1, {(int64_t)n}, NULL, PW_DT_F32},
                            {"adam_v", 1, {(int64_t)n}, NULL, PW_DT_F32}};
    PwStStream *st = path ? pw_st_stream_open(path, t, 2, meta, err) : NULL;
    int bad = 0;
    /* every piece is asked for, whatever happened to the file: the source's calls may be the
     * role's collectives, which every rank makes alike */
    for (int k = 0; k < 2; k++) {
        size_t x = 0; /* the piece's first element in the file */
        for (int i = 0; i < m->ntensors; i++)
            for (size_t o = 0; o < m->tensor_real[i]; o += piece) {
                size_t c = m->tensor_real[i] - o < piece ? m->tensor_real[i] - o : piece;
                source(ctx, k, m->tensor_off[i] + o, c, buf);
                for (size_t j = 0; st && !bad && j < c; j++)
                    if (!isfinite(buf[j]) || (k == 1 && buf[j] < 0.0f)) {
                        char v[64];
                        bad = pw_errf(err, "%s: not saved: %s element %zu is %s (the AdamW moments "
                                      "must be finite, and adam_v, a mean of squares, not "
                                      "negative); the file keeps what it held", path, names[k],
                                      x + j, pw_weight_describe(buf[j], v, sizeof v));
                    }
                if (st && !bad) pw_st_stream_write(st, buf, c * sizeof *buf);
                x += c;
            }
    }
    free(buf);
    if (!path) return 0;
    return st ? pw_st_stream_close(st, path, bad != 0, err) : -1;
}

/* a source over whole moments in host memory (flat layout) */
static void host_source(void *ctx, int which, size_t off, size_t n, float *dst)
{
    const float *const *mom = ctx;
    memcpy(dst, mom[which] + off, n * sizeof *dst);
}

int pw_model_optimizer_write(const PwModel *m, const char *path, const float *hm,
                             const float *hv, PwErr *err)
{
    const float *mom[2] = {hm, hv};
    return pw_model_optimizer_write_from(m, path, host_source, (void *)mom, err);
}

int pw_model_optimizer_save(PwModel *m, const char *path, PwErr *err)
{
    if (!pw_model_has_optimizer(m)) return 0;
    if (!whole_optimizer(m))
        return pw_errf(err, "%s: this model keeps a share of the AdamW moments (floats %zu to "
                       "%zu of %zu): the file is written from all the shares "
                       "(pw_model_optimizer_write)", path, m->opt_lo, m->opt_hi, m->num_params);
    float *hm, *hv;
    int copied;
    if (host_moments(m, &hm, &hv, &copied, err)) return -1;
    int rc = pw_model_optimizer_write(m, path, hm, hv, err);
    if (copied) {
        free(hm);
        free(hv);
    }
    return rc;
}

int pw_model_optimizer_load(PwModel *m, const char *path, PwErr *err)
{
    PwSafetensors *st = NULL;
    int64_t shape[1] = {(int64_t)m->num_weights};
    size_t bytes = m->num_params * sizeof(float), fbytes = m->num_weights * sizeof(float);
    float *hm = malloc(bytes), *hv = malloc(bytes), *fm = malloc(fbytes), *fv = malloc(fbytes);
    int rc = -1;
    if (!hm || !hv || !fm || !fv) {
        pw_errf(err, "%s: out of host memory for the AdamW moments", path);
        goto done;
    }
    if (pw_st_open(&st, path, err) || pw_st_read_f32(st, "adam_m", shape, 1, fm, err) ||
        pw_st_read_f32(st, "adam_v", shape, 1, fv, err) ||
        check_moments(m->num_weights, fm, fv, path, err))
        goto done;
    unpack_real(m, hm, fm);
    unpack_real(m, hv, fv);
    free(m->h_adam_m);
    free(m->h_adam_v);
    m->h_adam_m = m->h_adam_v = NULL;
    if (!m->adam_m && alloc_moments(m, err)) goto done;
    /* the whole file is read; a model with a share keeps its part */
    m->ops->copy(m->ops, m->adam_m, hm + m->opt_lo, moment_bytes(m), PW_COPY_H2D);
    m->ops->copy(m->ops, m->adam_v, hv + m->opt_lo, moment_bytes(m), PW_COPY_H2D);
    rc = 0;
done:
    pw_st_close(st);
    free(hm);
    free(hv);
    free(fm);
    free(fv);
    return rc;
}
