/* fuzz_tokenizer_json.c: libFuzzer target for a Hugging Face tokenizer.json (the byte-level BPE
 * loader): any bytes are refused, or give a tokenizer that encodes and decodes any text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "fuzz_util.h"

/* Text every loaded tokenizer encodes: letters, digits, spaces and newlines for the Split
 * regexes, a few specials' spellings, multi-byte and invalid UTF-8. */
static const char sample[] = "Hello, world! 123 4567\n\n  tabs\there <|endoftext|><|pad|> "
                             "caf\xc3\xa9 na\xc3\xafve \xe2\x82\xac \xf0\x9f\x98\x80 \xff\xfe\xc3 "
                             "e\xcc\x81 <s></s>";

static void roundtrip(const PwTokenizer *t, const char *text, size_t len)
{
    PwErr err;
    int ids[512];
    int n = t->encode(t, text, len, ids, 512, &err);
    if (n <= 0) return;
    if (n > 512) n = 512;
    char back[2048];
    (void)t->decode(t, ids, n, back, sizeof back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write("tokenizer.json", data, size);
    /* The loader's own entry point: pw_tokenizer_get keeps every folder it loaded for the
     * life of the process (its callers hold the pointer), so a million inputs would be a
     * million tokenizers; this loads and frees each one. */
    PwErr err;
    PwBpe *b = pw_bpe_load(fuzz_dir_get(), &err);
    if (!b) return 0;
    roundtrip(&b->pub, sample, sizeof sample - 1);
    roundtrip(&b->pub, (const char *)data, size < 256 ? size : 256);
    /* Ids nothing encoded: the prefix the post-processor names, and the low ids, where a
     * vocabulary with gaps leaves ids without a token. */
    int ids[300 + PW_TOKENIZER_MAX_PREFIX], n = 0;
    for (int i = 0; i < b->pub.n_prefix; i++) ids[n++] = b->pub.prefix[i];
    for (int i = 0; i < 300 && i < b->pub.vocab_size; i++) ids[n++] = i;
    char text[4096];
    for (int i = 0; i < n; i++) (void)b->pub.decode(&b->pub, ids + i, 1, text, sizeof text);
    (void)b->pub.decode(&b->pub, ids, n, text, sizeof text);
    pw_bpe_free(b);
    return 0;
}
