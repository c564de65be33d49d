/* bpe.h: the byte-level BPE tokenizer of a Hugging Face folder (tokenizer.json and
 * tokenizer_config.json), shared by its loader (bpe_load.c) and its encoder (bpe.c). */
#ifndef PW_BPE_H
#define PW_BPE_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>

#include "bpe_map.h"
#include "pw_tokenizer.h"

enum { PW_BPE_MAX_SPLITS = 4 };

typedef struct PwBpeAdded {
    const char *content; /* points into the token's bytes (tok[id]) */
    int len, id;
} PwBpeAdded;

typedef struct PwBpe {
    PwTokenizer pub; /* first, so the public pointer is the struct's */
    PwStrMap vocab;  /* raw bytes (the byte-to-unicode map undone) -> id */
    PwPairMap merges;
    char **tok;      /* id -> raw bytes (NULL for ids no entry names) */
    int *tok_len;
    int byte_id[256]; /* the one-byte tokens every piece starts from; -1 when missing */
    PwBpeAdded *added; /* matched in the text before pre-tokenization */
    int n_added;
    pcre2_code *split[PW_BPE_MAX_SPLITS]; /* applied in turn, each Isolated */
    int n_split;
    int prefix_space, ignore_merges;
    int nfc;          /* the NFC normalizer: text is composed before it is split */
    /* Encoding state behind one lock: encode takes a const tokenizer that callers may share. */
    pthread_mutex_t lock;
    pcre2_match_data *md;
    PwStrMap cache; /* piece -> offset in pool: pool[off] = n, then n ids */
    int *pool;
    size_t pool_n, pool_cap;
    int *syms, *ranks; /* scratch of the merge loop */
    size_t scratch_cap;
    char *buf;         /* the segment with its prefix space */
    size_t buf_cap;
    char *norm;        /* the segment in NFC */
    size_t norm_cap;
} PwBpe;

/* Loads dir/tokenizer.json and dir/tokenizer_config.json; NULL with err naming the file. */
PwBpe *pw_bpe_load(const char *dir, PwErr *err);
void pw_bpe_free(PwBpe *b);

int pw_bpe_encode(const PwTokenizer *t, const char *text, size_t len, int *ids, int cap,
                  PwErr *err);
int pw_bpe_decode(const PwTokenizer *t, const int *ids, int n, char *out, size_t cap);

#endif
