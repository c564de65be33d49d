/* fuzz_tokenize.c: libFuzzer target for encoding arbitrary bytes with the committed tokenizers
 * (byte-level BPE fixtures, the byte tokenizer): ids in range, the whole count past a short
 * buffer, and decode(encode(text)) == text where the tokenizer keeps the text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "pw_tokenizer.h"

static struct {
    const char *name;
    int keeps; /* bpe_nfc composes the text (NFC) on purpose: no round trip */
    const PwTokenizer *t;
} toks[] = {{"bytes", 1, NULL}, {"bpe_llama3", 1, NULL}, {"bpe_gpt2", 1, NULL},
            {"bpe_nfc", 0, NULL}};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    for (size_t i = 0; i < sizeof toks / sizeof toks[0]; i++) {
        char dir[512];
        if (strcmp(toks[i].name, "bytes"))
            snprintf(dir, sizeof dir, "%s/tests/fixtures/%s", PW_FUZZ_SOURCE_ROOT, toks[i].name);
        else
            snprintf(dir, sizeof dir, "bytes");
        PwErr err;
        if (!(toks[i].t = pw_tokenizer_get(dir, &err))) {
            fprintf(stderr, "fuzz_tokenize: %s\n", err.msg);
            exit(2);
        }
    }
    return 0;
}

/* A broken promise of pw_tokenizer.h: abort, so that libFuzzer keeps the input. */
static void fail(const char *name, const char *what)
{
    fprintf(stderr, "fuzz_tokenize: %s: %s\n", name, what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    for (size_t k = 0; k < sizeof toks / sizeof toks[0]; k++) {
        const PwTokenizer *t = toks[k].t;
        PwErr err;
        /* One id per byte is room for all but NFC's expansions; a second call with the count
         * the first returned gets the rest. */
        int cap = (int)size + 1;
        int *ids = malloc(sizeof(int) * (size_t)cap);
        if (!ids) exit(2);
        int n = t->encode(t, text, size, ids, cap, &err);
        if (n < 0) fail(toks[k].name, "encode refused bytes (every byte string is text)");
        if (n > cap) {
            free(ids);
            if (!(ids = malloc(sizeof(int) * (size_t)n))) exit(2);
            if (t->encode(t, text, size, ids, n, &err) != n)
                fail(toks[k].name, "a larger buffer changes the count");
        }
        for (int i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= t->vocab_size) fail(toks[k].name, "id out of range");
        /* A short buffer: the same count, and nothing written past it. */
        if (n > 1) {
            int *few = malloc(sizeof(int) * (size_t)(n / 2 + 1));
            if (!few) exit(2);
            few[n / 2] = -7;
            if (t->encode(t, text, size, few, n / 2, &err) != n)
                fail(toks[k].name, "a short buffer changes the count");
            if (few[n / 2] != -7 || memcmp(few, ids, sizeof(int) * (size_t)(n / 2)))
                fail(toks[k].name, "a short buffer changes the ids or is overrun");
            free(few);
        }
        size_t bcap = size * 4 + 64;
        char *back = malloc(bcap);
        if (!back) exit(2);
        int len = t->decode(t, ids, n, back, bcap);
        if (len < 0) fail(toks[k].name, "its own ids do not decode");
        if (toks[k].keeps && ((size_t)len != size || memcmp(back, text, size)))
            fail(toks[k].name, "decode(encode(text)) is not the text");
        free(back);
        free(ids);
    }
    return 0;
}
