/* pw_model.h: the one model interface every role, training mode and benchmark uses: a model is a
 * family, a device and a set of heads behind a table of operations (docs/model.md). */
#ifndef PW_MODEL_H
#define PW_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "pw_common.h"
#include "pw_tensor.h"

/* ---- architecture: what a config.json says that changes the function */
typedef enum PwFamily { PW_FAMILY_GPT2 = 0, PW_FAMILY_LLAMA, PW_FAMILY_COUNT } PwFamily;

enum { PW_ARCH_MAX_EOS = 8 }; /* ids of config.json's eos_token_id list */

typedef struct PwArch {
    PwFamily family;
    int n_layer;     /* L */
    int n_head;      /* NH */
    int n_embd;      /* C; n_embd % n_head == 0 unless head_dim is set (the Llama family) */
    int vocab_size;  /* V */
    int n_positions; /* maximum T */
    /* the Llama family (Llama 3, Qwen2, Mistral, SmolLM); GPT-2 leaves them 0 */
    int n_kv_head;         /* key/value heads of grouped-query attention; n_head % n_kv_head == 0 */
    int n_inner;           /* the SwiGLU MLP's width (intermediate_size) */
    float norm_eps;        /* RMSNorm eps */
    double rope_theta;
    int rope_llama3;       /* 1: rope_scaling of type llama3, with the four numbers below */
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_max;
    int tied;              /* the LM head is the embedding */
    int qkv_bias;          /* q, k, v projections have biases (Qwen2; attention_bias) */
    int o_bias;            /* the attention's output projection has one (attention_bias) */
    int head_dim;          /* a head's width; 0: n_embd / n_head (pw_arch_head_size) */
    int qk_norm;           /* an RMSNorm over each query and key head before the rotation
                            * (Qwen3) */
    int hf_type;           /* PwHfType: which model_type wrote it (for saving) */
    /* config.json's special token ids, carried from the folder read to the folders written
     * (nothing ppo_world computes reads them: transformers and vLLM do). has_*: 1 given, -1
     * null, 0 absent (a model made without a config.json has none); eos_token_id holds n_eos
     * ids, eos_list where the file gave a list */
    int has_bos, bos_token_id, has_pad, pad_token_id;
    int has_eos, n_eos, eos_list, eos_token_id[PW_ARCH_MAX_EOS];
} PwArch;

/* The Llama family's Hugging Face model_types (PwArch.hf_type) */
typedef enum PwHfType {
    PW_HF_LLAMA = 0,
    PW_HF_QWEN2,
    PW_HF_MISTRAL,
    PW_HF_QWEN3,
    PW_HF_COUNT
} PwHfType;
/* "llama", "qwen2", "mistral", "qwen3"; "?" for a value outside the enum */
const char *pw_hf_type_name(int t);

/* A head's width: head_dim where the config sets it, else n_embd / n_head. The attention's width
 * (q heads, and the output projection's input) is n_head times it, which need not be n_embd. */
static inline int pw_arch_head_size(const PwArch *a)
{
    return a->head_dim > 0 ? a->head_dim : a->n_embd / a->n_head;
}

/* "gpt2"; "?" for a value outside the enum */
const char *pw_family_name(PwFamily f);
/* 0 if the architecture is usable, else -1 with a message naming the bad field. */
int pw_arch_check(const PwArch *a, PwErr *err);
/* Read dir/config.json (the family from "model_type"). Messages name the file and the key. */
int pw_arch_load(PwArch *a, const char *dir, PwErr *err);

/* ---- heads: a model carries any subset. The LM head is tied to the embedding (no parameters
 * of its own); the score head (reward model) and the value head (critic) are Linear(C, 1). */
enum {
    PW_HEAD_LM = 1,    /* log-prob and entropy of given targets (and logits on request) */
    PW_HEAD_SCORE = 2, /* one score per row, read at its last real token */
    PW_HEAD_VALUE = 4, /* a value at every position */
};

/* ---- the arithmetic of the matrix products (docs/model.md, Precision) */
typedef enum PwPrecision {
    PW_PRECISION_FP32 = 0, /* float32 everywhere */
    PW_PRECISION_BF16,     /* bfloat16 operands of the trunk's and the LM head's products,
                            * float32 accumulation, results, weights, gradients and moments */
    PW_PRECISION_COUNT
} PwPrecision;
/* "fp32", "bf16"; "?" outside the enum */
const char *pw_precision_name(PwPrecision p);

/* ---- what a KV cache stores (docs/model.md, KV cache) */
typedef enum PwKVDtype {
    PW_KV_AUTO = 0, /* the model's precision: bfloat16 for a bf16 model, float32 for fp32 */
    PW_KV_FP32,     /* float32 keys and values */
    PW_KV_BF16,     /* bfloat16 keys and values (rounded to nearest even as they are stored),
                     * half the bytes per decode step; the attention computes in float32 */
    PW_KV_COUNT
} PwKVDtype;
/* "auto", "fp32", "bf16"; "?" outside the enum */
const char *pw_kv_dtype_name(PwKVDtype d);

/* ---- what a batch forward keeps for the backward (docs/model.md, Activation memory) */
typedef enum PwActs {
    PW_ACTS_KEEP = 0,  /* every layer's activations, which the backward reads */
    PW_ACTS_RECOMPUTE, /* the layers' inputs alone: the backward makes each layer's activations
                        * again, one layer at a time, before its gradients (activation
                        * checkpointing: one more forward's work, a layer's memory) */
    PW_ACTS_NONE,      /* one layer's, reused by every layer: a model that never runs a
                        * backward (a reference, a reward model); pw_model_backward refuses */
    PW_ACTS_COUNT
} PwActs;

/* ---- where a model lives and what it must hold */
typedef struct PwModelOpts {
    int heads;           /* PW_HEAD_* bits */
    int maxB, maxT;      /* the largest batch a forward takes (activations are sized for it) */
    PwDevice device;     /* PW_DEVICE_CPU or PW_DEVICE_CUDA */
    int device_id;       /* the GPU of a CUDA model */
    uint64_t seed;       /* random initialisation, and heads a loaded folder lacks */
    int value_from_score;/* loading: the value head is the folder's score head (a critic made
                          * from a reward model); the folder must have one */
    int fresh_heads;     /* loading: the PW_HEAD_SCORE / PW_HEAD_VALUE heads the folder may lack,
                          * initialised from seed then (rm from an SFT folder, a critic on the SFT
                          * trunk); any other head it lacks is an error */
    PwPrecision precision;
    int vocab_multiple;  /* the vocabulary-sized tensors (embedding, LM head, logits) hold
                          * round_up(V, this) rows; 0 = PW_VOCAB_MULTIPLE, 1 = exactly V */
    PwKVDtype kv_dtype;  /* what its KV caches store (pw_kv_create) */
    PwActs acts;         /* what a batch forward keeps for the backward */
    int lm_chunk;        /* rows of the LM head's logits made at once (0: every row of the
                          * batch): below maxB x maxT the logits buffer holds that many rows,
                          * the backward makes them again a chunk at a time (one more LM-head
                          * product, less the last chunk), and a forward cannot hand logits out
                          * (docs/model.md, The LM head in chunks) */
    int frozen;          /* its weights are never written after they are loaded (a reference, a
                          * reward model): no gradients, no optimizer, pw_model_params and saving
                          * refused, acts must be PW_ACTS_NONE. At bf16 the weights that only the
                          * products read (every matrix of the layers, an untied LM head) are
                          * kept in their bfloat16 copy alone, 2 bytes a weight instead of 6, and
                          * compute bit for bit as they would with float32 beside them
                          * (docs/model.md, Frozen models) */
    int follows;         /* its weights are another model's, received whole with
                          * pw_model_weights_in after that model's updates (a generator follows
                          * the actor): no gradients, no optimizer, pw_model_params and saving
                          * refused. At bf16 it keeps what a frozen model keeps, and receives
                          * the float32 of the other tensors and the bfloat16 of the matrices
                          * (docs/model.md, Models that follow) */
} PwModelOpts;

/* The padded vocabulary: V = 50257 leaves every row of the LM head's (B T, V) output at an odd
 * offset, which sends cuBLAS down a slow path; 50304 rows do not (docs/model.md, Padded
 * vocabulary). The rows past V are zero, never updated, masked out of the softmax, and never
 * written to a checkpoint. */
#define PW_VOCAB_MULTIPLE 64
#define PW_VOCAB_MULTIPLE_MAX 4096

/* The LM head's product runs on PW_LM_TILE rows at a time at most, from each chunk's first row
 * (docs/model.md, The LM head in chunks): the same rows go through the same product shape
 * whatever a model's chunk, when its chunk is 0 (every row) or a multiple of the tile, so a model
 * that makes its logits a tile at a time (the reference) gives the log-probs of one that makes
 * them all at once (the actor) bit for bit. */
#define PW_LM_TILE 1024

typedef struct PwModel PwModel;

/* ---- life cycle */
/* A model of the given architecture with zero parameters. NULL with a message on bad arguments
 * or when the device has no room (the message says how much was needed and how much free). At
 * precision bf16 it also holds a bfloat16 copy of the parameters for its products, made again
 * when they were written (docs/model.md, Precision). */
PwModel *pw_model_create(const PwArch *arch, const PwModelOpts *opts, PwErr *err);
/* The family's initialisation, deterministic from seed, the same on every device. */
void pw_model_init_random(PwModel *m, uint64_t seed);
/* Load dir/config.json and the weights in the family's Hugging Face layout. A score or value
 * head the folder lacks is an error ("DIR has no score.weight: it is not a reward model"), or
 * initialised from opts->seed where opts->fresh_heads allows it. */
PwModel *pw_model_load(const char *dir, const PwModelOpts *opts, PwErr *err);
/* 0 if dir's weights hold the score (score.weight) and value (value_head.weight) heads among
 * `heads`, else -1 with pw_model_load's message; reads the files' headers only, so that every
 * rank can check a folder it will not load. */
int pw_model_check_heads(const char *dir, int heads, PwErr *err);
/* Write dir/config.json and dir/model.safetensors atomically in that layout. Refused, leaving
 * the folder as it was, when a parameter is not a valid weight (PW_WEIGHT_LIMIT below). */
int pw_model_save(PwModel *m, const char *dir, PwErr *err);
/* How pw_model_save_opts writes the weights; zeroed, it writes what pw_model_save does. */
typedef struct PwSaveOpts {
    int bf16;               /* stored as bfloat16 (rounded to nearest even), as most published
                             * checkpoints are: half the bytes; loading widens them exactly */
    size_t max_shard_bytes; /* 0: one model.safetensors; else shards of at most this many bytes
                             * of tensor data and model.safetensors.index.json, as
                             * save_pretrained(max_shard_size=...) writes them */
} PwSaveOpts;
/* pw_model_save with options (NULL = zeroed); files of an earlier save in another layout or
 * shard count are removed (pw_st_set_write). */
int pw_model_save_opts(PwModel *m, const char *dir, const PwSaveOpts *opts, PwErr *err);
void pw_model_free(PwModel *m);
/* The model folder dst_dir's generation_config.json (the stop tokens and sampling defaults
 * transformers and vLLM generate with, which config.json does not carry), so a trained model
 * stops as the model it started from did: src_dir's (the starting folder; NULL or "" for a
 * random model) copied byte for byte where it has one; else one of the tokenizer's bos, eos and
 * pad ids where `tokenizer` (data.tokenizer) is a Hugging Face folder with an EOS; else none.
 * Written atomically; src_dir equal to dst_dir is left as it is. 0, or -1 with `err` naming the
 * file (folder_files.c). */
int pw_model_generation_config(const char *src_dir, const char *tokenizer, const char *dst_dir,
                               PwErr *err);
/* What the model computes for (a role's name), for the profile by kernel-table entry
 * (PW_PROFILE_OPS, pw_ops_profile.h): its lines are then "cuda:0/actor"; nothing otherwise. */
void pw_model_profile_label(PwModel *m, const char *label);

/* ---- what it is */
const PwArch *pw_model_arch(const PwModel *m);
PwDevice pw_model_device(const PwModel *m);
int pw_model_device_id(const PwModel *m); /* the GPU of a CUDA model, else 0 */
PwPrecision pw_model_precision(const PwModel *m);
/* Floats of the parameter tensor (pw_model_params), padding rows included: what buffers of
 * parameters, gradients and moments hold. */
size_t pw_model_num_params(const PwModel *m);
/* The model's weights without the padding rows: what a checkpoint holds and the count a user
 * reads (GPT-2 small: 124,439,808). */
size_t pw_model_num_weights(const PwModel *m);
/* Rows of the vocabulary-sized tensors: round_up(V, vocab_multiple); V when unpadded. */
int pw_model_vocab_padded(const PwModel *m);
/* Name (the family's own, e.g. "qkvw"), first float and float count of parameter tensor i,
 * i < pw_model_num_tensors(m); 0 floats for a head the model lacks. A vocabulary-sized
 * tensor's count includes its padding rows, which follow its V real rows. */
int pw_model_num_tensors(const PwModel *m);
const char *pw_model_tensor_info(const PwModel *m, int i, size_t *offset, size_t *count);
/* Floating-point operations of one forward+backward per token at length T (6 x matmul
 * parameters plus attention), for benchmarks. */
double pw_model_flops_per_token(const PwModel *m, int T);
/* Bytes of device memory a forward keeps for backward plus backward's scratch, at the capacity
 * (maxB, maxT) the model was made with: with the parameters, gradients and moments (16 bytes a
 * parameter), what training the model holds. */
size_t pw_model_activation_bytes(const PwModel *m);

/* The bytes a model of `arch` made with `opts` holds on its device, known before it is made
 * (the kernel table's own scratch and the libraries' workspaces aside). A model that only scores
 * holds the first four; training adds the rest (activations + backward is
 * pw_model_activation_bytes). */
typedef struct PwModelBytes {
    size_t params;      /* float32 parameters, the padded vocabulary's rows included */
    size_t params_bf16; /* their bfloat16 copy (precision bf16), else 0 */
    size_t buffers;     /* inputs, masks, positions, targets, the outputs' gradients, and what the
                         * family keeps beside them (the rotary frequencies) */
    size_t activations; /* from the first forward */
    size_t backward;    /* the backward's scratch, from the first backward */
    size_t grads;       /* from the first zero_grad or backward */
    size_t moments;     /* AdamW's two, from the first step (on the host while offloaded) */
    size_t transfer;    /* the weights as pw_model_weights_out hands them over */
    size_t load;        /* the most held before the first forward: params, params_bf16 and
                         * buffers, but for a share that splits the float32 master weights
                         * (pw_model_plan_share at bf16), which is made from the whole float32
                         * and its bfloat16 copy: those */
} PwModelBytes;
/* The most a model so planned holds at once: its load, or everything a trained one holds (the
 * parameters, buffers, activations, scratch, gradients and moments), whichever is more. */
size_t pw_model_bytes_most(const PwModelBytes *b);
/* 0, or -1 with pw_model_create's message for an architecture or options it would refuse. */
int pw_model_plan(const PwArch *arch, const PwModelOpts *opts, PwModelBytes *b, PwErr *err);
/* The same for a model given the optimiser's share [lo, hi) of its parameters
 * (pw_model_optimizer_shard; hi past the end: to the end): its moments are the share's, and at
 * bf16 a trained model's params are the tensors it keeps whole and the share's master weights. */
int pw_model_plan_share(const PwArch *arch, const PwModelOpts *opts, size_t lo, size_t hi,
                        PwModelBytes *b, PwErr *err);
/* The same with the gradients split too (pw_model_grads_split): grads counts the share's
 * gradient and the buffers a backward sums from. */
int pw_model_plan_split(const PwArch *arch, const PwModelOpts *opts, size_t lo, size_t hi,
                        PwModelBytes *b, PwErr *err);

/* ---- parameters and gradients: one contiguous float32 tensor each on the model's device, so
 * all-reduce, weight transfer and checkpoints need no knowledge of the family. The model's
 * queued work is finished when these return. Writing into params (e.g. receiving weights) is
 * allowed between calls; the next forward sees the new values. */
PwTensor pw_model_params(PwModel *m);
/* The gradient tensor (allocated by the first pw_model_zero_grad; data NULL before). */
PwTensor pw_model_grads(PwModel *m);
/* Waits for the model's queued work and nothing more: where pw_model_params would do for a
 * wait, it hands out the weights to be written, so a bf16 model makes its bfloat16 copy again
 * before the next forward (a pass over every weight) */
void pw_model_sync(PwModel *m);

/* ---- the weights from one model to another of the same architecture and options (the actor's
 * to its generators after each update), in one buffer: at fp32 the float32 parameters
 * (pw_model_params' tensor); at bf16 the float32 of the tensors that are not products' weights
 * alone, then the bfloat16 copy of those that are, which is all a bf16 forward reads: 2 bytes
 * for each weight of the layers' matrices instead of 4 (docs/model.md, Models that follow). */
size_t pw_model_weights_bytes(const PwModel *m);
/* m's current weights so laid out, in m's device memory: at fp32 its parameters, and a split
 * model's (frozen or following, at bf16) its own buffer; any other bf16 model packs them into
 * `into` (pw_model_weights_bytes on m's device: a receiver's pw_model_weights_in on the same
 * device, written in place) or, where into is NULL, into its gradients' memory (made if there
 * is none yet), free between an update and the next zero_grad: valid until then, and a
 * backward or an optimiser step before that zero_grad is refused. The model's queued work is
 * done when it returns. -1 with a message when there is no room. */
int pw_model_weights_out(PwModel *m, void *into, PwTensor *out, PwErr *err);
/* Where a model that follows (PwModelOpts.follows) receives such a payload: its own memory,
 * which the next forward reads. For any other model it is a programming error (the message
 * says so, then abort). */
PwTensor pw_model_weights_in(PwModel *m);

/* ---- forward and backward over a batch of rows (host arrays) */
typedef struct PwModelInput {
    const int *tokens;  /* (B,T) token ids in [0, V) */
    const int *mask;    /* (B,T) 1 real, 0 padding; rows are left-padded; NULL = all real */
    const int *targets; /* (B,T) the tokens whose log-prob the LM head reports; < 0 skips the
                         * position; NULL = none */
    int B, T;
    float temperature;  /* the LM head's logits are divided by it before the log-softmax, as
                         * when sampling at that temperature; 0 or 1 = none */
} PwModelInput;

/* What a caller gets back, already gathered on the host: the columns [col0, col0 + width) of
 * every row (col0 = 0, width = T for all of them). Any pointer may be NULL (not wanted).
 *   logp, entropy (B, width): log p(target) and the entropy of the next-token distribution, 0
 *       where the target is negative (LM head);
 *   value (B, width): the value head; 0 where the target is negative when targets are given;
 *   score (B): the score head at each row's last real token (0 for a row of padding only);
 *   logits (B, width, V): the LM head's logits. */
typedef struct PwOutputs {
    int col0, width;
    float *logp, *entropy, *value, *score, *logits;
} PwOutputs;

/* Runs the forward and fills `out`. -1 with a message if B or T exceed the capacity, a token or
 * target is outside the vocabulary, or `out` asks for a head the model lacks. */
int pw_model_forward(PwModel *m, const PwModelInput *batch, PwOutputs *out, PwErr *err);

/* Gradients as they become final. A backward given `ready` calls it on the calling thread in a
 * fixed order (the heads and the final norm, then layers L-1 down to 0, then the embeddings)
 * with the ranges of the gradient tensor (floats from its start) that this backward will not
 * write again; over one backward the ranges cover every float of the gradients exactly once.
 * The work that wrote them is queued on `stream` (the model's CUDA stream; NULL on the CPU,
 * where it is done), so a consumer on another stream orders itself after that stream first.
 * This lets a role all-reduce the upper layers' gradients while the lower ones are still in
 * backward (docs/model.md, Gradients as they are ready). */
typedef struct PwGradRange {
    size_t off, count;
} PwGradRange;
typedef void (*PwGradReady)(void *ctx, const PwGradRange *r, int n, void *stream);

/* Gradients of a loss with respect to the outputs of the last forward, in the same gathered
 * layout (col0, width as that forward's; NULL = zero): dlogp, dentropy, dvalue (B, width),
 * dscore (B). ACCUMULATES into the gradients. -1 if no forward came first. `ready` (NULL: not
 * wanted) is called with ready_ctx as above. */
typedef struct PwOutputGrads {
    const float *dlogp, *dentropy, *dvalue, *dscore;
    PwGradReady ready;
    void *ready_ctx;
} PwOutputGrads;
int pw_model_backward(PwModel *m, const PwOutputGrads *g, PwErr *err);

/* What a backward with `fn` would report, in the same order and ranges, without computing
 * anything: a rank with no rows in a minibatch keeps step with the ranks that ran a backward
 * (their sums are matched call by call). -1 with a message when out of memory. */
int pw_model_report_grads(PwModel *m, PwGradReady fn, void *ctx, PwErr *err);

/* Zero the gradients (allocating them on first use). */
int pw_model_zero_grad(PwModel *m, PwErr *err);

/* ---- optimiser: AdamW with decoupled weight decay on the family's 2D weights (embeddings and
 * Linear weights, the heads' included), never on biases or norm parameters. */
typedef struct PwAdamWConfig {
    float lr, beta1, beta2, eps, weight_decay;
    float grad_clip; /* global L2 norm to clip gradients to; <= 0 disables clipping */
} PwAdamWConfig;

/* Global L2 norm of the gradients (double accumulation). */
double pw_model_grad_norm(PwModel *m);
/* What pw_model_adamw_step did: the update, or nothing because the gradient's norm is NaN or
 * infinite. A NaN or infinity in one gradient makes the norm non-finite, and applying it would
 * write NaN into the weights and both moments, where no later step can remove it; the caller
 * decides whether to go on (docs/model.md, Optimiser). */
enum { PW_ADAMW_APPLIED = 0, PW_ADAMW_SKIPPED = 1 };
/* Clip to cfg->grad_clip (if > 0), then AdamW step t (>= 1), allocating the moments on first
 * use. *norm (NULL: not wanted) gets the gradient's norm before clipping. Returns
 * PW_ADAMW_APPLIED, PW_ADAMW_SKIPPED (that norm is not finite: weights and moments are left as
 * they were), or -1 with a message. */
int pw_model_adamw_step(PwModel *m, const PwAdamWConfig *cfg, int t, double *norm, PwErr *err);
/* Whether the moments exist (after a step or a load). */
int pw_model_has_optimizer(const PwModel *m);
/* Move the moments to host memory and free them on the device (e.g. during generation), and
 * back. On the CPU both are no-ops. The next step reloads them itself if needed. */
int pw_model_optimizer_offload(PwModel *m, PwErr *err);
int pw_model_optimizer_reload(PwModel *m, PwErr *err);
/* The moments as path (safetensors "adam_m", "adam_v", num_params floats each), atomically;
 * a model without moments writes nothing and returns 0. Load replaces the moments. Both refuse
 * a moment that is NaN or infinite, and load a negative second moment (a mean of squares),
 * naming the file, the moment and the element. */
int pw_model_optimizer_save(PwModel *m, const char *path, PwErr *err);
int pw_model_optimizer_load(PwModel *m, const char *path, PwErr *err);

/* ---- the moments split over the ranks of a role (ZeRO stage 1; docs/model.md, The optimiser's
 * share): the model keeps and updates the moments of floats [lo, hi) of pw_model_params alone.
 * Every rank still holds the whole gradient (summed over the ranks; pw_model_grads_split keeps
 * the share's alone: below) and the whole parameters (at fp32; a trained bf16 model splits its
 * float32 master weights too: below); pw_model_adamw_step takes the norm of the whole gradient,
 * clips and updates the share, and
 * leaves the rest of params as it was: the caller puts the shares together (an all-gather into
 * pw_model_params). Set before the moments exist; -1 with a message for a range outside the
 * parameters or moments already made. A load keeps the share of the file's whole moments;
 * pw_model_optimizer_save refuses a share (one rank cannot write the whole file). */
int pw_model_optimizer_shard(PwModel *m, size_t lo, size_t hi, PwErr *err);
void pw_model_optimizer_range(const PwModel *m, size_t *lo, size_t *hi);

/* ---- at bf16 the float32 master weights split too: a trained model (neither frozen nor
 * following) at precision bf16 given a share that is not the whole keeps the float32 of its
 * products' weights (the layers' matrices, an LM head of its own: the tensors a split model keeps
 * in bfloat16 alone) for the share's floats alone, as ZeRO stage 1 splits the master weights;
 * its forward and backward read their bfloat16 copy, which it keeps whole. The share is then set
 * once. pw_model_params aborts on such a model (its float32 is not all there), and
 * pw_model_save refuses it: the role's first rank gathers the shares and writes them with
 * pw_model_save_master. An update writes the share's float32 and its bfloat16 copy (and the
 * share of the tensors kept whole); the caller's all-gather puts the rest together:
 *   pw_model_mirror: the bfloat16 copy of every tensor (num_params, the flat layout of
 *       pw_model_params: the share [lo, hi) is its elements lo .. hi - 1);
 *   pw_model_kept: the float32 of the tensors kept whole, one after the other in order: the
 *       share [lo, hi) is its elements lo - pw_model_master_before(lo) ..
 *       hi - pw_model_master_before(hi) - 1.
 * Both wait for the model's queued work; writing into them is allowed until the next call. */
int pw_model_master_split(const PwModel *m);
/* Floats of the products' weights (those split) before flat float x of the parameters: the
 * share [lo, hi) is elements master_before(lo) .. master_before(hi) - 1 of all their master
 * weights, master_before(pw_model_num_params) floats in all. */
size_t pw_model_master_before(const PwModel *m, size_t x);
PwTensor pw_model_mirror(PwModel *m);
PwTensor pw_model_kept(PwModel *m);
/* The share's master weights (master_before(hi) - master_before(lo) floats) into host memory. */
int pw_model_master_get(PwModel *m, float *h, PwErr *err);
/* The model saved as pw_model_save_opts would, from h: host memory of pw_model_num_params
 * floats, the flat layout, in which the caller has put together every share's master weights
 * of the split tensors (a float x of them where pw_model_params would hold it); the model
 * writes the tensors it keeps whole into h, then saves it. */
int pw_model_save_master(PwModel *m, const char *dir, float *h, const PwSaveOpts *opts,
                         PwErr *err);
/* The share's moments (hi - lo floats each) into host memory, wherever they are; -1 when no
 * step made them yet. */
int pw_model_optimizer_get(PwModel *m, float *hm, float *hv, PwErr *err);
/* Whole moments (pw_model_num_params floats each, in host memory, the flat layout) as path, as
 * pw_model_optimizer_save writes them. */
int pw_model_optimizer_write(const PwModel *m, const char *path, const float *hm,
                             const float *hv, PwErr *err);
/* The same file from moments that nobody holds whole (split over a role's ranks): it is written
 * as `source(ctx, which, off, n, dst)` fills dst, a piece at a time, with floats [off, off + n)
 * of moment `which` (0: adam_m, 1: adam_v) in the flat layout: pieces of at most
 * pw_model_stream_floats floats inside one tensor's real rows, adam_m's then adam_v's, in the
 * file's order. With path NULL the same calls are made and nothing is written (a role's other
 * ranks, whose source hands their parts to the writer). A moment that is NaN or infinite, or a
 * negative adam_v, is refused, naming the element, and the file keeps what it held; every piece
 * is asked for all the same. -1 with a message (before any call only when there is no host
 * memory for a piece). */
typedef void (*PwMomentSource)(void *ctx, int which, size_t off, size_t n, float *dst);
extern size_t pw_model_stream_floats; /* 16M (64 MiB); tests make it small */
int pw_model_optimizer_write_from(const PwModel *m, const char *path, PwMomentSource source,
                                  void *ctx, PwErr *err);
/* Floats [off, off + n) of the flat layout of moment `which` (0: adam_m, 1: adam_v) into host
 * memory, from this model's share (off and n within it), wherever the moments are; -1 when no
 * step made them yet, or the range is not in the share. */
int pw_model_optimizer_get_part(PwModel *m, int which, size_t off, size_t n, float *h,
                                PwErr *err);

/* ---- the gradients split too (optim.zero_stage 2, ZeRO stage 2; docs/model.md, Gradients in
 * shares): a model with the optimiser's share [lo, hi) keeps the summed gradient of that share
 * alone, accumulated over its backwards, instead of the whole gradient. A backward writes each
 * group of gradients that becomes final at one point (the heads and final norm, each layer's,
 * the embeddings) into a buffer they take turns in, which the role's ranks sum block by block
 * as soon as the group is final (`reduce`: L + 2 a backward), each rank adding its block into
 * its share and the buffer going to the next group; an embedding that is the LM head too has a
 * buffer of its own (it takes the head's gradient first and its own last). */
typedef struct PwGradSplit {
    /* Sums buf (starts[nranks] floats) over the ranks: after it, floats [starts[k],
     * starts[k + 1]) of buf on rank k hold the sum of theirs on every rank; the rest of buf is
     * left as anything. The model's queued work is done when it is called, and the sum must be
     * done when it returns. Every rank calls it the same number of times, in the same order. */
    void (*reduce)(void *ctx, float *buf, const int64_t *starts);
    /* The sum of v over the ranks (the gradient's squared norm). */
    double (*sum)(void *ctx, double v);
    void (*release)(void *ctx); /* NULL, or called once with ctx when the model is freed */
    void *ctx;
} PwGradSplit;
/* Split m's gradients: shares (nranks + 1 offsets into the parameters) are the role's blocks,
 * rank's block the model's optimiser share (pw_model_optimizer_shard first). Set before the
 * gradients exist. From then on every backward calls s->reduce (nothing is summed by
 * PwOutputGrads.ready, which such a model refuses), pw_model_grads aborts (the whole gradient is
 * nowhere), and pw_model_grad_norm and pw_model_adamw_step sum the share's squares with s->sum,
 * so every rank calls them alike. -1 with a message for shares that are not the model's, or
 * gradients already made. */
int pw_model_grads_split(PwModel *m, const int64_t *shares, int nranks, int rank,
                         const PwGradSplit *s, PwErr *err);
int pw_model_grads_are_split(const PwModel *m);
/* What a backward of no rows does on such a model: its reductions with nothing added, so that
 * a rank with fewer micro batches keeps step with the others (each backward is one round of
 * reductions). */
int pw_model_backward_idle(PwModel *m, PwErr *err);
/* The share's summed gradient (hi - lo floats) into host memory; -1 before any backward. */
int pw_model_grads_get(PwModel *m, float *h, PwErr *err);

/* ---- what a weight may hold: a finite value at most PW_WEIGHT_LIMIT in magnitude. Trained
 * weights stay far below it (those of published LLMs below 1e4); a larger value comes from a
 * diverged run or a broken file, and float32 arithmetic overflows on it within a few orders
 * more (a norm squares its inputs: values near 1e19 sum past float32's 3.4e38). Loading refuses
 * a tensor that breaks it (naming the file and the tensor), pw_model_save refuses to write one,
 * and pw_model_check_params finds one after an update. */
#define PW_WEIGHT_LIMIT 1e16
/* Index of the first of x (n) that is NaN, infinite or beyond PW_WEIGHT_LIMIT; n when none is. */
size_t pw_weights_first_bad(const float *x, size_t n);
/* A value in words for messages: "NaN", "inf", "-inf" or the number ("-3e+38"). */
const char *pw_weight_describe(float v, char *buf, size_t n);
/* 0 when every parameter is a valid weight; else -1 with a message naming the tensor (the
 * family's name), the element and its value. One reduction over the parameters on the model's
 * device when they are fine (cheap enough for every optimiser step); the scan that names the
 * culprit runs only when they are not. */
int pw_model_check_params(PwModel *m, PwErr *err);

/* ---- incremental decoding: the same layers as the forward, over a KV cache */
typedef struct PwKVCache PwKVCache;
/* A cache for up to maxB rows of maxT tokens (prompt plus new tokens, <= n_positions). */
PwKVCache *pw_kv_create(PwModel *m, int maxB, int maxT, PwErr *err);
void pw_kv_free(PwKVCache *c);
/* What the cache stores (PW_KV_FP32 or PW_KV_BF16, never AUTO) and its keys' and values' bytes
 * (all layers, maxB rows of maxT slots). */
PwKVDtype pw_kv_dtype(const PwKVCache *c);
size_t pw_kv_bytes(const PwKVCache *c);
/* Tokens one pass of the layers may carry (a prefill pass packs whole prompts up to this). */
int pw_kv_pass_tokens(const PwKVCache *c);
/* Tokens cached for row b. */
int pw_kv_len(const PwKVCache *c, int b);
/* Cache the real tokens of B left-padded prompts (B, P) (mask NULL = all real; every row has a
 * real token) and leave each row's next-token logits in pw_kv_logits. */
int pw_kv_prefill(PwKVCache *c, const int *prompt, const int *mask, int B, int P, PwErr *err);
/* Append tokens[b] to every row with active[b] (NULL = all) at its next position; those rows'
 * logits are overwritten, the others keep theirs. */
int pw_kv_decode(PwKVCache *c, const int *tokens, const int *active, int B, PwErr *err);
/* Row b's next-token logits (V floats, host memory) after the last prefill or decode. */
const float *pw_kv_logits(const PwKVCache *c, int b);

/* ---- LM-loss helpers on host arrays (SFT, tests) */
/* targets[b,t] = inp[b,t+1] where mask[b,t] and mask[b,t+1] are real, else -1 (last column -1):
 * next-token prediction the way Hugging Face shifts labels. */
void pw_lm_next_token_targets(int *targets, const int *inp, const int *mask, int B, int T);
/* w = 1/count on positions with a target >= 0, 0 elsewhere (mean over real targets); returns
 * count. Zeroing w on prompt positions first gives SFT's response-only loss. */
int pw_lm_mean_weights(float *w, const int *targets, int N);
/* -sum over positions with a target >= 0 of w * logp (double accumulation). */
double pw_lm_loss(const float *logp, const float *w, const int *targets, int N);

#endif
