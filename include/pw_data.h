/* pw_data.h: JSONL data sets (prompts, SFT pairs, preference pairs) turned into token ids by a
 * tokenizer, their train/valid split, per-epoch order, sharding over ranks and padded batches. */
#ifndef PW_DATA_H
#define PW_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "pw_common.h"
#include "pw_tokenizer.h"

/* ============================================================================ data sets === */

/* The three shapes users bring (docs/data.md):
 *   prompts: {"prompt": "..."} or {"input_ids": [ids]}                       (PPO)
 *   sft:     {"prompt": "...", "response": "..."} ("completion" also accepted)
 *   prefs:   {"prompt": "...", "chosen": "...", "rejected": "..."}, or Anthropic-HH style
 *            {"chosen": "<full text>", "rejected": "<full text>"} where the prompt is the
 *            shared prefix up to and including the last "\n\nAssistant:" of "chosen". */
typedef enum PwDataShape { PW_DATA_PROMPTS = 0, PW_DATA_SFT, PW_DATA_PREFS } PwDataShape;

/* What happens to an example over a length limit. */
typedef enum PwOverlong {
    PW_OVERLONG_DROP = 0, /* skip it and count it (d->dropped); the default */
    PW_OVERLONG_ERROR,    /* fail naming file:line and the lengths */
    PW_OVERLONG_TRUNCATE  /* keep the prompt's last tokens (SEP stays) and the response's first */
} PwOverlong;

/* "drop" | "error" | "truncate"; -1 with a message naming the valid values. */
int pw_overlong_parse(const char *name, PwOverlong *out, PwErr *err);
const char *pw_data_shape_name(PwDataShape s);

typedef struct PwDataOpts {
    PwDataShape shape;
    const PwTokenizer *tok;
    int max_prompt_len;   /* prompt tokens, SEP included; 0 = no limit of its own */
    int max_response_len; /* response tokens, EOS included; 0 = no limit of its own */
    int max_len;          /* prompt + response (each of chosen/rejected); 0 = no limit. Set it
                           * to the model's n_positions so every kept example fits. */
    PwOverlong overlong;
    int vocab_size;       /* every id (given or encoded) must lie in [0, vocab_size): the model's
                           * vocabulary; 0 = the tokenizer's. Required when tok is NULL, which
                           * only PW_DATA_PROMPTS files of {"input_ids"} lines allow. */
    const char *prompt_template; /* NULL or "": none; else text with one {prompt}, where each
                           * text prompt goes before it is encoded (data.prompt_template) */
} PwDataOpts;

/* Where a prompt goes in data.prompt_template (the configuration checks it is there once). */
#define PW_PROMPT_MARK "{prompt}"

/* Token layout: prompt = encode(prompt) + [SEP]; response = encode(response) + [EOS] (a
 * tokenizer without SEP or EOS omits it). "input_ids" prompts are taken verbatim. Examples are
 * stored back to back in `tok`; example i has its prompt at prompt_off[i] (prompt_len[i] ids)
 * and nresp responses at resp_off[i*nresp + k] (resp_len[...] ids): k = 0 the SFT response or
 * the chosen one, k = 1 the rejected one. */
typedef struct PwDataset {
    PwDataShape shape;
    char path[512];        /* for messages; "a.jsonl[valid]" for a split part */
    int n;                 /* examples kept */
    int nresp;             /* responses per example: 0 prompts, 1 sft, 2 prefs */
    int *prompt_off, *prompt_len;   /* (n) */
    int *resp_off, *resp_len;       /* (n * nresp) */
    int *tok;              /* (ntok) */
    size_t ntok;
    int *line;             /* (n) the file line each example came from, for messages */
    int lines;             /* non-blank lines read */
    int dropped;           /* over a limit with PW_OVERLONG_DROP */
    int truncated;         /* cut with PW_OVERLONG_TRUNCATE */
    int max_total;         /* longest kept prompt + response: a batch width that fits all */
    int pad_id;            /* the tokenizer's PAD (0 if it has none): what batches pad with */
} PwDataset;

/* Reads one JSONL file of the given shape. A malformed line (bad JSON, a missing or mistyped
 * field, an id outside the vocabulary, an HH pair whose texts do not share the prompt) fails
 * with "FILE:LINE: field \"name\": what is wrong"; an empty file or one whose every example was
 * dropped also fails ("'FILE' holds no prompt|example"). Blank lines are skipped. */
int pw_dataset_load(PwDataset *d, const char *path, const PwDataOpts *o, PwErr *err);
void pw_dataset_free(PwDataset *d);

/* A new data set of the rows idx[0..n) of src, in that order (tokens copied). */
int pw_dataset_subset(PwDataset *out, const PwDataset *src, const int *idx, int n, PwErr *err);

/* Train/valid split of one file: the rows are shuffled from `seed`, the first
 * round(valid_fraction * n) of that order (at least 1 and at most n - 1 when 0 < fraction < 1)
 * go to valid, the rest to train; each part keeps the file's order. */
int pw_dataset_split(const PwDataset *all, double valid_fraction, uint64_t seed,
                     PwDataset *train, PwDataset *valid, PwErr *err);

/* ============================================================================ ordering === */


/* perm := the order of epoch `epoch` of n rows: a Fisher-Yates shuffle drawn from
 * (seed, epoch) alone, so every rank computes the same order without talking. */
void pw_data_epoch_order(int *perm, int n, uint64_t seed, int64_t epoch);

/* The training stream: global position p (0, 1, 2, ...) is row perm_{p / n}[p % n]; the batch
 * of step s is positions [s*B, s*B + B), so a batch may run across an epoch boundary. */
typedef struct PwSampler {
    int n;
    uint64_t seed;
    int64_t epoch;  /* epoch held in perm; -1 none */
    int *perm;      /* (n) */
} PwSampler;

int pw_sampler_init(PwSampler *s, int n, uint64_t seed, PwErr *err);
void pw_sampler_free(PwSampler *s);
/* Row of global position p. */
int pw_sampler_row(PwSampler *s, int64_t p);
/* rows (B) := the rows of positions [step*B, step*B + B). */
void pw_sampler_batch(PwSampler *s, int64_t step, int B, int *rows);

/* ============================================================================ sharding === */

/* Data parallel: a global batch of nrows rows is split in contiguous blocks over nranks ranks;
 * rank r takes rows [start, start + count), the first nrows % nranks ranks one row more. Every
 * row lands on exactly one rank; a rank may get none when nrows < nranks. */
void pw_data_shard(int64_t nrows, int nranks, int rank, int64_t *start, int64_t *count);

/* ============================================================================= batches === */

/* A left-padded batch: row b holds its real tokens at the right end of tokens[b*T..], PAD
 * before them with mask 0. For SFT, targets (next token, -1 where none) and weights (1/count on
 * the positions whose target is a response token, 0 on prompt targets and padding). For prefs,
 * 2n rows: rows [0, n) the chosen sequences, rows [n, 2n) the rejected ones. */
typedef struct PwBatch {
    int B, T;
    int *tokens;      /* (B,T) */
    int *mask;        /* (B,T) 1 real, 0 padding */
    int *targets;     /* (B,T) SFT only: tokens[b,t+1] where both real, else -1 */
    float *weights;   /* (B,T) SFT only */
    int *prompt_len;  /* (B) prompt tokens of each row */
    int *len;         /* (B) real tokens of each row */
    double count;     /* SFT: response targets of these rows */
    int cap;          /* allocated B*T */
    int capB;
} PwBatch;

void pw_batch_free(PwBatch *b);

/* Width of the rows idx[0..n): the longest prompt + response (prefs: of either pair member). */
int pw_data_width(const PwDataset *d, const int *idx, int n);
/* Response targets of the rows idx[0..n) (SFT: the sum of response lengths): the normaliser
 * of a global batch, computed by every rank from the global row list without communication. */
double pw_data_response_targets(const PwDataset *d, const int *idx, int n);

/* Builds the batch of rows idx[0..n) at width T (0: pw_data_width of these rows; a row longer
 * than T is an error). Prompts: prompt only. SFT: prompt + response with weights 1/normaliser
 * (normaliser <= 0: this batch's own response-target count, i.e. the mean). Prefs: 2n rows. */
int pw_batch_build(PwBatch *b, const PwDataset *d, const int *idx, int n, int T,
                   double normaliser, PwErr *err);

#endif
