/* pw_tokenizer.h: turning text into token ids and back. The embedded default is byte-level
 * (one token per byte plus a few special tokens); Hugging Face byte-level BPE folders (GPT-2,
 * Llama 3, Qwen2, SmolLM) implement the same table (docs/tokenizer.md). */
#ifndef PW_TOKENIZER_H
#define PW_TOKENIZER_H

#include <stddef.h>

#include "pw_common.h"

/* The byte tokenizer's ids: 0..255 are the bytes themselves, then the specials. */
enum {
    PW_BYTE_EOS = 256, /* end of response: the stop token */
    PW_BYTE_PAD = 257, /* padding (never attended, never a target) */
    PW_BYTE_SEP = 258, /* between prompt and response, the last prompt token */
    PW_BYTE_VOCAB = 259,
};

enum { PW_TOKENIZER_MAX_PREFIX = 4 };

typedef struct PwTokenizer PwTokenizer;
struct PwTokenizer {
    const char *name;
    int vocab_size;
    int eos_id, pad_id, sep_id, bos_id; /* -1 where the tokenizer has none */
    /* The ids a sequence starts with, before its first text (Llama 3: <|begin_of_text|>): what
     * Hugging Face's encode(text) puts in front with add_special_tokens. encode() never adds
     * them; the data sets put them before each prompt (docs/tokenizer.md). */
    int prefix[PW_TOKENIZER_MAX_PREFIX], n_prefix;
    /* Encodes text (len bytes) into at most cap ids; returns the number of ids the whole text
     * needs (which may exceed cap: nothing past cap is written), or -1 with err on bad input. */
    int (*encode)(const PwTokenizer *t, const char *text, size_t len, int *ids, int cap,
                  PwErr *err);
    /* Decodes n ids into out (cap bytes, always NUL-terminated when cap > 0); special tokens
     * render as <eos>, <pad>, <sep> (bytes) or their text (BPE: <|endoftext|>); returns the
     * length the whole text needs, -1 on a bad id. */
    int (*decode)(const PwTokenizer *t, const int *ids, int n, char *out, size_t cap);
    void *impl;
};

/* The byte-level tokenizer (a static instance: nothing to free). */
const PwTokenizer *pw_tokenizer_bytes(void);

/* Looks a tokenizer up by name: "bytes", or the path of a Hugging Face folder holding
 * tokenizer.json (byte-level BPE) and tokenizer_config.json (bos/eos/pad/sep tokens; sep_id is
 * -1 unless it names sep_token). A folder loads once per process and is never freed, so the
 * pointer stays valid; NULL with err naming the file and what was expected otherwise. */
const PwTokenizer *pw_tokenizer_get(const char *name, PwErr *err);

/* Copies the tokenizer `name` names into the model folder `dir`, so the folder loads in
 * transformers (AutoTokenizer) and vLLM with its tokenizer: for a Hugging Face folder,
 * tokenizer.json, and tokenizer_config.json, special_tokens_map.json and chat_template.jinja
 * where the folder has them, byte for byte, each replaced atomically; nothing for "bytes" or an
 * empty name. 0, or -1 with `err` naming the file. */
int pw_tokenizer_save(const char *name, const char *dir, PwErr *err);

#endif
