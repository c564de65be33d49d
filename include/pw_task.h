/* pw_task.h: the embedded synthetic tasks: reverse a short string of letters (the default), and
 * multi-digit arithmetic. Prompts from a seed, a verifiable gold scorer, imperfect demonstrations,
 * noisy pairs (docs/task.md). */
#ifndef PW_TASK_H
#define PW_TASK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pw_common.h"

/* ---- the task's shape */
#define PW_TASK_MAX_LEN 16 /* letters in a prompt, and bytes a corrupted answer may reach */

#define PW_TASK_ARITH_MAX_DIGITS 6 /* per operand: "999999-999999" fits PW_TASK_MAX_LEN */

typedef enum PwTaskKind { PW_TASK_REVERSE = 0, PW_TASK_ARITHMETIC } PwTaskKind;

typedef struct PwTaskSpec {
    int min_len, max_len; /* reverse: letters per prompt, 1 <= min <= max <= PW_TASK_MAX_LEN;
                           * arithmetic: digits per operand, 1 <= min <= max <=
                           * PW_TASK_ARITH_MAX_DIGITS */
    int alphabet;         /* reverse: the first `alphabet` lowercase letters, 2..26 */
    PwTaskKind kind;
} PwTaskSpec;

/* 4..8 letters from a..z: short enough for a 64-token context, long enough to have errors in. */
PwTaskSpec pw_task_spec_default(void);
/* Arithmetic: operands of 1..2 digits, + or - (docs/task.md, Arithmetic). */
PwTaskSpec pw_task_arith_spec_default(void);
int pw_task_spec_check(const PwTaskSpec *s, PwErr *err);

/* ---- random streams: every record of every data set draws from its own stream, named by
 * (seed, set, index), so one set's size never changes another set's contents. */
uint64_t pw_task_stream(uint64_t seed, uint64_t set, uint64_t index);
int pw_task_below(uint64_t *state, int n); /* uniform in 0..n-1, from pw_rng_uniform */

/* ---- prompts and answers */
/* A random prompt of the spec's task (out: PW_TASK_MAX_LEN + 1 bytes, NUL-terminated); returns
 * its length. */
int pw_task_prompt(const PwTaskSpec *s, uint64_t *rng, char *out);
/* Arithmetic: "A+B" or "A-B", each operand of min_len..max_len digits (uniform), no leading
 * zero, the operator uniform. */
int pw_task_arith_prompt(const PwTaskSpec *s, uint64_t *rng, char *out);
/* The correct answer to a task prompt, whichever task it belongs to (their prompts are disjoint):
 *   "A+B" / "A-B" (decimal, no sign, no leading zero, at most PW_TASK_ARITH_MAX_DIGITS digits):
 *       the result in decimal, "-" before a negative one ("12-40" -> "-28")
 *   anything else without digits, '+' or '-': its bytes in reverse order
 * pw_task_answer writes out (and a NUL when there is room) and returns the answer's length; -1
 * for a malformed prompt (digits that are no sum, say) or when cap is too small. The _ints forms
 * work on byte values as ints (token ids of the byte tokenizer); pw_task_arith_answer only
 * accepts sums. */
int pw_task_answer(const char *prompt, size_t plen, char *out, size_t cap);
int pw_task_answer_ints(const int *prompt, int n, int *out, int cap);
int pw_task_arith_answer(const int *prompt, int n, int *out, int cap);

/* ---- the gold scorer */
/* Edit distance with adjacent transpositions (optimal string alignment): the fewest
 * substitutions, deletions, insertions and swaps of two neighbours that turn a into b. */
size_t pw_task_distance(const char *a, size_t na, const char *b, size_t nb);

/* gold = 2^-d, d = pw_task_distance(response, answer): 1.0 for the exact answer, 0.5 for one
 * error of any kind, 0.25 for two, ...; always in (0, 1]. The response is the finished text,
 * without its stop token. */
double pw_task_gold(const char *prompt, size_t plen, const char *response, size_t rlen);

/* The same score on token ids in the byte tokenizer's layout (pw_tokenizer.h):
 *   prompt:   [PAD ...] prompt bytes [SEP]   PAD tokens are skipped, a last SEP is dropped
 *   response: response bytes EOS [anything]  the first EOS ends it; what follows is ignored
 * A response without EOS (it ran out of tokens) scores 0: no answer was given. A special token
 * inside the response counts as a wrong character; one inside the prompt (other than the above)
 * means it is no task prompt: 0. */
double pw_task_gold_tokens(const int *prompt, int plen, const int *response, int rlen);

/* 1 when the response is exactly the answer (gold == 1): the verifier's "correct". */
int pw_task_correct_tokens(const int *prompt, int plen, const int *response, int rlen);

/* The two above over n rows, as the reward role holds them: prompt (n, P) left-padded rows,
 * response (n, R) rows as generated (EOS, then padding). gold (n) receives the scores, correct
 * (n, may be NULL) 1 for exact answers. Returns the number of exact answers. */
int pw_task_gold_rows(const int *prompt, int P, const int *response, int R, int n, float *gold,
                      int *correct);

/* ---- the corruption model: the errors an imperfect demonstrator or policy makes */
enum {
    PW_TASK_ERR_SUBST,  /* one letter replaced by another */
    PW_TASK_ERR_DELETE, /* one letter dropped */
    PW_TASK_ERR_INSERT, /* one letter added */
    PW_TASK_ERR_SWAP,   /* two neighbouring letters exchanged */
    PW_TASK_NUM_ERR
};
/* Applies one error of `kind` to s (len bytes, room for PW_TASK_MAX_LEN) in place; returns the new
 * length, or -1 where the kind cannot apply (delete from empty, insert at full length, swap
 * fewer than two letters). A swap of two equal letters changes nothing; callers check. */
int pw_task_apply_error(const PwTaskSpec *s, char *str, int len, int kind, uint64_t *rng);
/* A copy of answer (alen bytes) with exactly k errors: random kinds at random places, redrawn
 * until pw_task_distance(out, answer) == k, so that its gold is exactly 2^-k. out: PW_TASK_MAX_LEN
 * + 1 bytes. Returns the length, or -1 if no such copy turned up (k too large for the length). */
int pw_task_corrupt(const PwTaskSpec *s, const char *answer, int alen, int k, uint64_t *rng,
                    char *out);

/* ---- the data sets */
typedef struct PwTaskGenOpts {
    const char *out;        /* folder (created if missing) */
    uint64_t seed;
    PwTaskSpec spec;
    int n_train, n_eval;    /* PPO prompts, gold evaluation prompts (held out of every other set) */
    int n_sft, n_valid;     /* SFT demonstrations; n_valid of each of sft_valid and prefs_valid */
    int n_pairs;            /* preference pairs for reward-model training */
    double sft_error_rate;  /* fraction of demonstrations carrying errors */
    int sft_max_errors;     /* a corrupted demonstration has 1..sft_max_errors errors, uniform */
    int pair_max_errors;    /* each side of a pair has 0..pair_max_errors errors, never equal */
    double label_noise;     /* fraction of pairs whose chosen and rejected are exchanged */
} PwTaskGenOpts;

/* Defaults sized for the quickstart (docs/task.md). */
PwTaskGenOpts pw_task_gen_defaults(void);

/* What the writer drew, to check the rates against (and recorded in DIR/task.json). */
typedef struct PwTaskGenStats {
    int sft_total, sft_corrupted; /* demonstrations, those with errors (train and valid) */
    double sft_gold_mean;         /* mean gold of the demonstrations */
    int pairs_total, pairs_flipped; /* pairs, those whose labels were exchanged */
} PwTaskGenStats;

/* Writes DIR/prompts_train.jsonl, prompts_eval.jsonl ({"prompt"}), sft_train.jsonl,
 * sft_valid.jsonl ({"prompt", "response"}), prefs_train.jsonl, prefs_valid.jsonl ({"prompt",
 * "chosen", "rejected"}) and task.json (the options and these statistics). Each file is written
 * under a temporary name and renamed. stats may be NULL. */
int pw_task_write_sets(const PwTaskGenOpts *o, PwTaskGenStats *stats, PwErr *err);

/* One JSON object per line: n keys with byte strings (vals[i], lens[i] bytes). jansson escapes
 * quotes, backslashes, control bytes and NUL; the text must be valid UTF-8 (ASCII always is). */
int pw_task_write_record(FILE *f, const char *const *keys, const char *const *vals,
                         const size_t *lens, int n, PwErr *err);

/* `ppo_world gen-task [--out DIR] [--seed S] ...`: argv[0] is "gen-task". Returns the exit code. */
int pw_task_gen_main(int argc, char **argv);

#endif
