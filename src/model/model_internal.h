/* model_internal.h: what the family-neutral model code (model.c, kv.c) and a family (gpt2.c)
 * share inside src/model: the model and cache structs, and the table a family fills in. */
#ifndef PW_MODEL_INTERNAL_H
#define PW_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "pw_model.h"
#include "pw_ops.h"

#define PW_MODEL_MAX_TENSORS 32

typedef struct PwFamilyImpl PwFamilyImpl;

/* Every buffer a model computes with lives on its device (ops); h_* buffers are host memory. */
struct PwModel {
    const PwFamilyImpl *impl;
    PwArch arch;
    int heads, maxB, maxT;
    int Vp;                        /* rows of the vocabulary-sized tensors (>= arch.vocab_size) */
    int lm_rows;                   /* rows of the logits buffer: maxB x maxT, or the lm_chunk */
    PwPrecision precision;         /* of the products that pw_model_matmul_* run */
    PwKVDtype kv_dtype;            /* of its KV caches: FP32 or BF16 (AUTO resolved) */
    PwActs acts;                   /* what a batch forward keeps (pw_model_layer_slot) */
    int frozen;                    /* PwModelOpts.frozen: never written after it is made */
    int follows;                   /* PwModelOpts.follows: written only by weights received */
    const PwOps *ops;              /* closed by pw_model_free */

    /* parameters: ntensors tensors, each contiguous, one after the other in one buffer */
    int ntensors;
    size_t tensor_size[PW_MODEL_MAX_TENSORS], tensor_off[PW_MODEL_MAX_TENSORS];
    size_t tensor_real[PW_MODEL_MAX_TENSORS]; /* floats without padding rows: a prefix */
    size_t num_params, num_weights;
    /* what params holds of each tensor: all of it (stored_size = tensor_size), except in a
     * split model (a frozen or following one at bf16), where the tensors only the products
     * read (the family's tensor_bf16_only) exist in the mirror alone (stored_size 0);
     * stored_off follows */
    size_t stored_size[PW_MODEL_MAX_TENSORS], stored_off[PW_MODEL_MAX_TENSORS], num_stored;
    float *params;                 /* (num_stored): num_params but in a split model */
    /* The split layout, known for every model (a bf16 one hands its weights over in it:
     * pw_model_weights_out): the float32 of the tensors that are not bf16-only, one after the
     * other, then split_f32 rounded up to SPLIT_ALIGN floats, then the bfloat16 of the
     * bf16-only ones; split_off[i] is tensor i's offset in its part, split_b16 the bfloat16
     * part's count. A split model holds exactly this as the front of one allocation, its
     * mirror's bf16-only tensors included, and the other tensors' mirror after it. */
    size_t split_off[PW_MODEL_MAX_TENSORS], split_f32, split_f32_pad, split_b16;
    size_t mirror_off[PW_MODEL_MAX_TENSORS]; /* tensor i in params_bf16 (tensor_off unsplit) */
    int grads_spent;               /* the gradients' memory holds a payload of weights_out */
    float *grads;                  /* (num_params), NULL until the first zero_grad */
    /* pw_model_grads_split (grad_split.c): the share's summed gradient and the buffers a
     * backward sums from, in place of grads; NULL otherwise */
    struct PwGradShare *gsplit;
    float *adam_m, *adam_v;        /* (opt_hi - opt_lo) each, NULL until the first step */
    float *h_adam_m, *h_adam_v;    /* host copies while offloaded (device ones NULL then) */
    /* the floats of params whose moments this model keeps and updates: all of them, or its
     * share when the moments are split over a role's ranks (pw_model_optimizer_shard) */
    size_t opt_lo, opt_hi;
    /* A trained bf16 model with a share of the optimiser keeps the float32 master weights of
     * its bf16-only tensors for that share alone (pw_model_master_split): master holds the
     * floats of those tensors inside [opt_lo, opt_hi), in the order of the split layout's
     * bfloat16 part (element pw_model_master_before(x) - master_lo is flat float x); params then
     * holds the other tensors whole (stored_size 0 for the bf16-only ones, stored_off their
     * split_off), and the mirror, a separate allocation, every tensor at tensor_off. NULL
     * otherwise. */
    float *master;
    size_t master_lo, master_n;
    /* precision bf16: the parameters rounded to bfloat16, which the products read instead of
     * converting each weight at every call; made again from params, when stale, before a
     * forward, a backward or a cache pass (pw_model_mirror_refresh). Every writer of params
     * marks it stale: init and load (host_done), AdamW (which makes it at once), the weights
     * received (pw_model_weights_in), and pw_model_params (its caller may write through the
     * pointer). NULL at fp32. Every tensor is there, at mirror_off. */
    uint16_t *params_bf16;
    int mirror_stale;

    /* the last forward: its shape, and its integer inputs on both sides */
    int B, T;                      /* 0 before any forward */
    int col0, width;               /* its gathered columns: the layout backward reads */
    float inv_temperature;         /* its LM-head logit scale (1 = none) */
    int *h_int, *d_int;            /* inputs, mask, pos, targets (maxB, maxT), last (maxB) */
    int *h_inputs, *h_mask, *h_pos, *h_targets, *h_last;
    int *d_inputs, *d_mask, *d_pos, *d_targets;
    /* the rows grouped by token (rows[0]) and by position (rows[1]) for the embeddings'
     * backward, made at each backward (h_rows, counted in h_rows_count: max(Vp, maxT) + 1) and
     * copied up (d_rows, where rows[] point) */
    int *h_rows, *d_rows, *h_rows_count;
    PwRowGroups rows[2];
    float *h_stage;                /* (maxB, maxT) host staging of gathers and scatters */
    float *d_dout;                 /* (3 maxB maxT + maxB): dlogp, dentropy, dvalue, dscore */

    void *fam;                     /* the family's own state (activations and their slices) */

    /* the backward's PwGradReady (grad_ready.c): NULL outside a backward that asked for it */
    PwGradReady ready;
    void *ready_ctx;
    unsigned char *ready_done;     /* (ntensors, max(L, 1)): which slices were reported */
};

/* A KV cache and the packed tokens of one pass of the layers over it. */
struct PwKVCache {
    PwModel *m;
    int maxB, maxT, maxN;
    int *len;                      /* (maxB) host: tokens cached per row */
    float *logits;                 /* (maxB, V) host: next-token logits of each row */
    float *h_head;                 /* (maxB, Vp) host staging of one pass's logits */
    const float *d_head;           /* (nseg, Vp) on the device: the last pass's logits */
    int device_only;               /* decode passes leave their logits on the device (the
                                    * generator's cache: it samples there); 0: every
                                    * pass brings them to the host rows, as pw_kv_logits says */
    int host_stale;                /* the last pass's logits are not on the host yet: made so
                                    * when pw_kv_logits asks (the rows of that pass only) */
    /* the pass: ntok tokens in nseg segments (segment s: row seg_row[s], its tokens
     * seg_off[s] .. seg_off[s+1]-1 going to slots seg_slot0[s], ...; seg_last[s] its last) */
    int nseg, ntok;
    size_t npass;                  /* ints in h_pass and d_pass, the slices below in order */
    int *h_pass, *d_pass;
    int *h_tok, *h_pos, *h_seg_row, *h_seg_off, *h_seg_slot0, *h_seg_last;
    int *d_tok, *d_pos, *d_seg_row, *d_seg_off, *d_seg_slot0, *d_seg_last;
    /* the keys and values of every layer, (L, maxB, NKV, maxT, hs) each, of m->kv_dtype: one
     * allocation, v at v_off bytes (16-byte aligned rows for the GPU's vector loads); scores:
     * the CPU attention's scratch (maxB, NH, maxT) floats, NULL on a GPU */
    void *kv;
    size_t v_off, layer_elems;
    float *scores;
    void *fam;
};

/* A family's layer l over the cache's pass: the pass's tokens' k and v (in qkv, rows of
 * (NH + 2 NKV) hs, as the model's heads) stored into layer l's slots, and out (ntok, NH hs)
 * their attention over everything their rows cached (kv.c); with out16 (a bf16 model: what its
 * projection reads), the attention rounded to bfloat16 there instead (a bfloat16 cache's kernel
 * writes it so; over a float32 cache, out rounded). */
void pw_kv_attend(const PwKVCache *c, int l, float *out, uint16_t *out16, const float *qkv);

/* pw_kv_decode in parts, for a decode loop that keeps its rows on the device: _plan builds and
 * uploads the pass of the active rows (at their next positions); then each step runs the pass
 * as it stands on the device, which the kernel table's `record` (pw_sample.h) advances there
 * (each segment's token, position and slot one further), so the pass runs again without an
 * upload. A step is _check (every row of the pass has room for one more token), _device (the
 * family's layers over the pass, device work only, so that it can be captured as a graph;
 * returns the (nseg, Vp) logits, segment s those of row d_seg_row[s]) and _done (the host's
 * side: lengths, where the logits are) after each run of the device work. */
int pw_kv_decode_plan(PwKVCache *c, const int *tokens, const int *active, int B, PwErr *err);
int pw_kv_decode_check(const PwKVCache *c, PwErr *err);
const float *pw_kv_decode_device(PwKVCache *c);
void pw_kv_decode_done(PwKVCache *c, const float *head);

/* Device pointers of the outputs of the last forward, (B,T) dense at the front of each buffer:
 * NULL for an output the model does not have. */
typedef struct PwFamilyOutputs {
    float *logp, *entropy, *value, *score, *logits;
} PwFamilyOutputs;

struct PwFamilyImpl {
    PwFamily family;
    const char *name;              /* "gpt2", "llama" */
    const char *const *model_types;/* the config.json model_type values it reads (NULL-ended) */
    int ntensors;
    const char *const *tensor_names;
    const unsigned char *tensor_decays; /* 1: AdamW weight decay applies */
    const unsigned char *tensor_ready;  /* PW_READY_*: when a backward is done with its gradient */
    /* 1: read by the products alone (pw_model_weight), never by another kernel in float32: a
     * frozen bf16 model keeps it in bfloat16 only */
    const unsigned char *tensor_bf16_only;
    /* the tensor that holds the LM head's weights (and takes its gradient): an embedding when
     * the head is tied to it */
    int (*lm_tensor)(const PwModel *m);

    int (*arch_check)(const PwArch *a, PwErr *err);
    /* parse an open config.json (a jansson object) into a */
    int (*arch_from_json)(PwArch *a, const void *json_root, const char *path, PwErr *err);
    /* floats of each tensor when the vocabulary-sized ones have Vp rows */
    void (*tensor_sizes)(size_t *sizes, const PwArch *a, int heads, size_t Vp);
    double (*flops_per_token)(const PwModel *m, int T);
    /* device bytes the first forward allocates (its activations) and the first backward (its
     * scratch): pw_model_activation_bytes is their sum */
    size_t (*forward_bytes)(const PwModel *m);
    size_t (*backward_bytes)(const PwModel *m);
    /* device bytes attach allocates (NULL: none) */
    size_t (*attach_bytes)(const PwArch *a);
    /* device bytes kv_attach allocates for c (shaped by kv.c, nothing allocated) */
    size_t (*kv_bytes)(const PwKVCache *c);

    /* state: attach after the parameters exist; activations may come later (ensure_acts) */
    int (*attach)(PwModel *m, PwErr *err);
    void (*detach)(PwModel *m);
    /* init on a host copy of the parameters (all heads selected by `heads`) */
    void (*init_random)(const PwModel *m, float *host, uint64_t seed);
    void (*init_heads)(const PwModel *m, float *host, int heads, uint64_t seed);

    /* forward over m->B, m->T with the device inputs in m->d_*; backward from device gradients
     * of the outputs ((B,T) dense, NULL = zero), accumulating into m->grads */
    int (*forward)(PwModel *m, PwErr *err);
    void (*outputs)(PwModel *m, PwFamilyOutputs *out);
    int (*backward)(PwModel *m, const float *dlogp, const float *dentropy, const float *dvalue,
                    const float *dscore, PwErr *err);

    /* the Hugging Face layout, on a host copy of the parameters */
    int (*save)(const PwModel *m, const float *host, const char *dir, const PwSaveOpts *opts,
                PwErr *err);
    /* fills host from dir (config.json already read into m->arch); *missing gets the heads the
     * folder lacks */
    int (*load)(const PwModel *m, float *host, const char *dir, int value_from_score,
                int *missing, PwErr *err);

    /* KV cache: its buffers, and one pass over c's packed tokens leaving the logits of each
     * segment's last token in a device (nseg, Vp) buffer, returned */
    int (*kv_attach)(PwKVCache *c, PwErr *err);
    void (*kv_detach)(PwKVCache *c);
    const float *(*kv_pass)(PwKVCache *c);
};

/* When a backward has written a tensor's gradient for the last time (grad_ready.c):
 * PW_READY_LAYER, L equal slices, slice l after layer l; PW_READY_TOP after the heads and the
 * final norm; PW_READY_BOTTOM at the end (the embeddings, and an LM head tied to them). */
enum { PW_READY_LAYER = 0, PW_READY_TOP, PW_READY_BOTTOM };
/* Called by the family's backward when a backward asked for them (no-ops otherwise): the TOP
 * tensors' gradients are final, layer l's slices are final. pw_model_backward reports what is
 * left when the family's backward returns (pw_model_ready_end). Every family calls them in one
 * order, top then layers L-1 down to 0, which pw_model_report_grads repeats: the ranks of a role
 * must report alike whether or not they ran a backward. */
void pw_model_ready_top(PwModel *m);
void pw_model_ready_layer(PwModel *m, int l);
/* Around the family's backward: begin (-1 with a message when out of memory), end. */
int pw_model_ready_begin(PwModel *m, PwGradReady fn, void *ctx, PwErr *err);
void pw_model_ready_end(PwModel *m);

/* What a backward or an optimiser step (%s) says while the gradients' memory holds a payload
 * of pw_model_weights_out (payload.c) */
#define PW_GRADS_SPENT "%s after pw_model_weights_out, whose weights the gradients' memory " \
                       "holds now: zero the gradients first"

/* The gradients a family's backward writes (grad_split.c): for layer l in [0, L), each
 * tensor's slice of layer l for the tensors made layer by layer (PW_READY_LAYER) and the whole
 * of the others; for l < 0 the whole of every tensor, NULL for a layered one of a model whose
 * gradients are split (its slices exist one layer at a time). NULL for a tensor of size 0. */
void pw_model_grad_view(const PwModel *m, int l, float **ptrs);
/* Model whose gradients are split (grad_split.c): allocate or zero them (pw_model_zero_grad),
 * reduce the top's, a layer's or the bottom's buffer into the share (pw_model_ready_top,
 * pw_model_ready_layer and pw_model_ready_end call these), and what the rest of model.c asks of
 * the share. */
int pw_grad_split_zero(PwModel *m, PwErr *err);
void pw_grad_split_top(PwModel *m);
void pw_grad_split_layer(PwModel *m, int l);
void pw_grad_split_bottom(PwModel *m);
void pw_grad_split_clear(PwModel *m);         /* buffers to zero after a failed backward */
void pw_grad_split_release(PwModel *m);       /* frees the buffers (a payload takes their place) */
float *pw_grad_split_share(const PwModel *m); /* NULL before the first zero_grad */
double pw_grad_split_sumsq(PwModel *m);       /* the summed gradient's squares, all ranks */
void pw_grad_split_free(PwModel *m);
/* floats of the share's gradient and of the buffers a backward sums from, for a model shaped
 * as m with the share [lo, hi) */
size_t pw_grad_split_floats(const PwModel *m, size_t lo, size_t hi);

extern const PwFamilyImpl pw_gpt2_family;
extern const PwFamilyImpl pw_llama_family;

/* A product's weight from float `off` of parameter tensor i on: its float32 values (f: NULL in a
 * frozen bf16 model that keeps the tensor in bfloat16 only) and its bfloat16 mirror (h: NULL at
 * fp32), which the bf16 products read instead of f. */
typedef struct PwWeight {
    const float *f;
    const uint16_t *h;
} PwWeight;
PwWeight pw_model_weight(const PwModel *m, int i, size_t off);

/* A product of the trunk or the LM head in the model's precision: the table's matmul entries
 * (pw_ops.h), the bf16 ones at PW_PRECISION_BF16. The value and score heads (one output
 * channel, a dot product per position) stay float32 at every precision. inp16 (NULL: none) is
 * the input kept in bfloat16 (an activation made so, below), read instead of inp at
 * PW_PRECISION_BF16; it is always NULL at PW_PRECISION_FP32. */
void pw_model_matmul_forward(const PwModel *m, float *out, const float *inp,
                             const uint16_t *inp16, PwWeight w, const float *bias, int N, int C,
                             int OC);
/* The same into out16 instead, rounded to bfloat16, where out16 is not NULL (PW_PRECISION_BF16
 * only: what a bf16 model keeps of q, k, v and of the MLP's pre-activation; the float32 product
 * and bias rounded once, no float32 result written), else into out */
void pw_model_matmul_forward_out(const PwModel *m, float *out, uint16_t *out16, const float *inp,
                                 const uint16_t *inp16, PwWeight w, const float *bias, int N,
                                 int C, int OC);
void pw_model_matmul_backward(const PwModel *m, float *dinp, float *dweight, float *dbias,
                              const float *dout, const float *inp, const uint16_t *inp16,
                              PwWeight w, int N, int C, int OC, int set_dinp);
/* The same at PW_PRECISION_BF16 for a dout that is bfloat16 already, rows dout_ld apart (the LM
 * head's from logprobs_backward_bf16, 2 Vp halves apart) */
void pw_model_matmul_backward16(const PwModel *m, float *dinp, float *dweight, float *dbias,
                                const uint16_t *dout16, size_t dout_ld, const float *inp,
                                const uint16_t *inp16, PwWeight w, int N, int C, int OC,
                                int set_dinp);
/* pw_model_matmul_backward16 on dout16 (dense rows, rounded by the backward that made them: the
 * norms', the activations', the attention's or the rotation's) where it is not NULL, else
 * pw_model_matmul_backward on dout */
void pw_model_matmul_backward_either(const PwModel *m, float *dinp, float *dweight, float *dbias,
                                     const float *dout, const uint16_t *dout16, const float *inp,
                                     const uint16_t *inp16, PwWeight w, int N, int C, int OC,
                                     int set_dinp);

/* Activations made and kept in bfloat16. At PW_PRECISION_BF16 the batch forward's producers of
 * the inputs of the trunk's products that nothing but those products reads again (the
 * normalised inputs of the attention and of the MLP, the MLP's activation) write them rounded
 * to bfloat16 and nowhere in float32 (the table's layernorm/rmsnorm/gelu/swiglu_forward_bf16):
 * the products and the backward's weight gradients read what they would have rounded their
 * operand to. pw_model_kept_floats is the float slots of n such values (0 at fp32). */
size_t pw_model_kept_floats(PwPrecision precision, size_t n);

/* The per-layer activations of the batch forward (PwActs): with PW_ACTS_KEEP every layer has
 * its own slots; otherwise one set serves every layer in turn (pw_model_layer_slot is then 0,
 * pw_model_layer_slots 1). The layers' outputs, the next layers' inputs, are kept by each layer
 * unless nothing runs a backward (PW_ACTS_NONE: one slot, each layer's output written over its
 * input, which nothing reads after the layer's first residual add has made res2). */
static inline size_t pw_model_layer_slots(const PwModel *m)
{
    return m->acts == PW_ACTS_KEEP ? (size_t)m->arch.n_layer : 1;
}
static inline size_t pw_model_layer_slot(const PwModel *m, int l)
{
    return m->acts == PW_ACTS_KEEP ? (size_t)l : 0;
}
static inline size_t pw_model_out_slots(const PwModel *m)
{
    return m->acts != PW_ACTS_NONE ? (size_t)m->arch.n_layer : 1;
}
static inline size_t pw_model_out_slot(const PwModel *m, int l)
{
    return m->acts != PW_ACTS_NONE ? (size_t)l : 0;
}

/* The attention of a batch (grouped-query; GPT-2's is NKV = NH) in the model's precision: the
 * table's attention_gqa entries on qkv into out, or at PW_PRECISION_BF16 the bf16 ones (tensor
 * cores on the GPU) on q, k and v kept in bfloat16 (qkv16), the output rounded into out16 (out
 * NULL: none in float32), which their backward reads too. The backward sets dqkv (B T rows of
 * (NH + 2 NKV) hs), or at bf16 with dqkv16 (NULL: none) its rounding to bfloat16 there instead
 * (the qkv product's dout). */
void pw_model_attention_forward(const PwModel *m, float *out, uint16_t *out16, float *lse,
                                const float *qkv, const uint16_t *qkv16, const int *mask, int B,
                                int T, int NH, int NKV, int hs);
void pw_model_attention_backward(const PwModel *m, float *dqkv, uint16_t *dqkv16,
                                 const float *dout, const float *qkv, const uint16_t *qkv16,
                                 const uint16_t *out16, const float *lse, const int *mask, int B,
                                 int T, int NH, int NKV, int hs);

/* A split model (frozen or following, at bf16): some tensors exist in its bfloat16 mirror alone
 * (stored_size 0), which is laid out as the payload (split_off) in params' own allocation */
static inline int pw_model_is_split(const PwModel *m)
{
    return m->num_stored != m->num_params && !m->master;
}
/* Whether params holds every tensor in float32: not in a split model, nor in one whose master
 * weights are split over a role's ranks (master) */
static inline int pw_model_keeps_all(const PwModel *m) { return m->num_stored == m->num_params; }
/* A split model's mirror starts this many floats (256 bytes) into its allocation at least, as
 * a separate allocation would be aligned for the vector loads of the products' kernels. */
#define PW_SPLIT_ALIGN 64
/* The float32 part of the split layout in bytes (its padding included) */
static inline size_t pw_model_split_f32_bytes(const PwModel *m)
{
    return m->split_f32_pad * sizeof(float);
}
/* What pw_model_weights_out hands over: at bf16 the split layout's two parts (a split model
 * allocates them as one, the mirror of its other tensors after them), at fp32 the parameters */
static inline size_t pw_model_payload_bytes(const PwModel *m)
{
    return m->precision == PW_PRECISION_BF16
               ? pw_model_split_f32_bytes(m) + m->split_b16 * sizeof(uint16_t)
               : m->num_params * sizeof(float);
}

/* Makes params_bf16 from params if it is stale (one conversion on the model's stream). */
void pw_model_mirror_refresh(PwModel *m);

/* Out-of-room message for `what` of `bytes` on the model's device (with its free memory). */
int pw_model_no_room(const PwModel *m, const char *what, size_t bytes, PwErr *err);

/* x (n) ~ N(0, std^2) from its own stream (seed, stream): a tensor's values depend on (seed,
 * tensor) only. And x (n) = v. */
void pw_model_fill_normal(float *x, size_t n, double std, uint64_t seed, int stream);
void pw_model_fill_const(float *x, size_t n, float v);

/* Where a family keeps its heads' buffers (device memory, (B,T) dense at the front, lnf (B,T,C)
 * its final hidden states) and weights, with the gradients of those weights. */
typedef struct PwHeads {
    float *lnf, *logits, *logp, *entropy, *value, *score; /* logits (B, T, Vp) */
    float *lpstats; /* (B, T, PW_LP_STATS): the forward's log-softmax statistics, the backward's */
    PwWeight lmw;
    const float *scorew, *scoreb, *valuew, *valueb;
    float *dlmw, *dscorew, *dscoreb, *dvaluew, *dvalueb;
} PwHeads;
/* The heads the model has over m->B x m->T rows (heads.c); logits are divided by the input's
 * temperature before the log-softmax, m->lm_rows rows at a time. Returns 1 when the logits
 * buffer then holds every row's (one chunk did them all), 0 otherwise. */
int pw_model_heads_forward(const PwModel *m, const PwHeads *h);
/* dlnf (B,T,C) = the heads' gradient of lnf (written, not accumulated); the head weights'
 * gradients accumulate. The logits buffer takes dlogits (chunk by chunk, the logits made again
 * where the forward's are gone): returns 1 when it did (the logits are gone), 0 otherwise. */
int pw_model_heads_backward(const PwModel *m, const PwHeads *h, float *dlnf, const float *dlogp,
                            const float *dentropy, const float *dvalue, const float *dscore);

/* The score and value heads (weights at tensor indices scorew and valuew, each bias the next
 * tensor) selected by `heads`, on a host copy: N(0, 1/sqrt(C+1)) from the weight's own stream,
 * bias 0. Every family's heads are Linear(C, 1). */
void pw_model_init_heads(const PwModel *m, float *host, int heads, uint64_t seed, int scorew,
                         int valuew);

/* The rows of the last forward grouped by token (the result's [0]) and by position ([1])
 * (pw_row_groups), made on the host and copied up, for the embeddings' backward, which sums
 * each group in row order: the same bits on every run, on the GPU as on the CPU. A family's
 * backward asks just before that entry, so that the counting overlaps the layers' work queued
 * on the device; by_position 0 (no position table) leaves [1] empty. */
const PwRowGroups *pw_model_row_groups(PwModel *m, int by_position);

/* One device allocation of the n slices `sizes` (floats) into *memory (made on the first call,
 * kept after), and ptrs pointed at the slices, each starting PW_ARENA_ALIGN floats apart (the
 * allocation's size: pw_model_arena_floats). The message names `what` when there is no room. */
int pw_model_alloc_slices(const PwModel *m, float **memory, float **ptrs, const size_t *sizes,
                          int n, const char *what, PwErr *err);

/* Point each of n float pointers at its slice of memory, in order (NULL for an empty slice). */
void pw_model_slice(float **ptrs, const size_t *sizes, int n, float *memory);
/* Activations, scratch and caches start each slice on 256 bytes: the kernels load 16 bytes at
 * a time where a row's start allows it, and the warpgroup attention takes q, k and v only so
 * (after a slice of an odd count of floats, such as the scores of a batch of 3, none did). The
 * parameters stay packed (pw_model_slice). */
#define PW_ARENA_ALIGN 64
/* The floats of n slices laid out PW_ARENA_ALIGN apart, SIZE_MAX when it would not fit. */
size_t pw_model_arena_floats(const size_t *sizes, int n);
/* The sum of n sizes, SIZE_MAX when it would not fit. */
/* pw_model_create's checks and every size it decides, on m (zeroed), nothing allocated (no
 * table either): what the plans read (pw_model_plan, pw_gen_plan) */
int pw_model_shape(PwModel *m, const PwArch *arch, const PwModelOpts *opts, PwErr *err);
/* the device bytes pw_kv_create allocates for a model so shaped, on device dev; -1 with its
 * message for what it would refuse */
int pw_kv_plan_bytes(PwModel *shape, PwDevice dev, int maxB, int maxT, size_t *bytes,
                     PwErr *err);
size_t pw_model_sum_sizes(const size_t *sizes, int n);

/* a * b, or SIZE_MAX when the product would not fit: a size computed from a config.json
 * saturates instead of wrapping to a small number, so the check against the largest model
 * (pw_model_check_size) sees an absurd config as one. */
static inline size_t pw_size_mul(size_t a, size_t b)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* 0 if the n parameter tensors `sizes` (floats, from the family's tensor_sizes with every head)
 * fit the largest model ppo_world holds, else -1 with "<what>: too large: the parameters would
 * need N bytes ..."; `what` spells the sizes with the family's config.json names. */
int pw_model_check_size(const size_t *sizes, int n, const char *what, PwErr *err);

/* config.json (a jansson object, as void * so that families' headers need no jansson): a key
 * whose other values would change the function must, when present, hold what ppo_world computes
 * (ok), else "PATH: key "K" must be WHAT (ppo_world computes nothing else)". */
int pw_config_need(const void *root, const char *key, const char *path, int ok, const char *what,
                   PwErr *err);
/* Writes the object root (its reference is taken) as PATH atomically, numbers with 15
 * significant digits: every decimal a config file holds prints as written and reads back as
 * the same double (17 would print 1e-5 as 1.0000000000000001e-05). NULL root: out of memory. */
int pw_config_write(void *root, const char *path, PwErr *err);
/* The special token ids pw_arch_load read (bos_token_id, eos_token_id, pad_token_id) into a
 * config.json being built (a json_t object; NULL: nothing), as the folder read had them. */
void pw_arch_write_ids(const PwArch *a, void *root);

#endif
