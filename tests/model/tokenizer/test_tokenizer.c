/* test_tokenizer.c: the byte tokenizer against hand-worked ids: lossless round trips of ASCII,
 * UTF-8 and binary bytes, specials rendered by name, truncation and bad ids reported. */
#include "pw_test.h"
#include "pw_tokenizer.h"

int main(void)
{
    PwErr err;
    const PwTokenizer *t = pw_tokenizer_get("bytes", &err);
    CHECK(t != NULL, "lookup");
    CHECK(t == pw_tokenizer_bytes(), "one instance");
    CHECK(t->vocab_size == 259 && t->eos_id == 256 && t->pad_id == 257 && t->sep_id == 258,
          "ids %d %d %d %d", t->vocab_size, t->eos_id, t->pad_id, t->sep_id);
    CHECK(pw_tokenizer_get("gpt2-bpe", &err) == NULL && strstr(err.msg, "unknown tokenizer 'gpt2-bpe'"),
          "unknown name: %s", err.msg);

    /* "Hé!" is 48 C3 A9 21 in UTF-8: four byte tokens. */
    int ids[16];
    const char *text = "H\xc3\xa9!";
    CHECK(t->encode(t, text, strlen(text), ids, 16, &err) == 4, "utf-8 length");
    CHECK(ids[0] == 72 && ids[1] == 195 && ids[2] == 169 && ids[3] == 33, "utf-8 ids %d %d %d %d",
          ids[0], ids[1], ids[2], ids[3]);

    /* Truncation: the full length is returned, only cap ids are written. */
    ids[2] = -7;
    CHECK(t->encode(t, "abcdef", 6, ids, 2, &err) == 6 && ids[0] == 97 && ids[1] == 98 && ids[2] == -7,
          "truncation");

    /* Every byte value survives the round trip, NUL included. */
    int all[256];
    char bytes[256], back[257];
    for (int i = 0; i < 256; i++) bytes[i] = (char)i;
    CHECK(t->encode(t, bytes, 256, all, 256, &err) == 256, "all bytes");
    CHECK(t->decode(t, all, 256, back, sizeof back) == 256 && !memcmp(back, bytes, 256), "round trip");

    /* Specials by name; a short buffer is NUL-terminated and the needed length returned. */
    int seq[] = {'1', '+', '2', PW_BYTE_SEP, '3', PW_BYTE_EOS, PW_BYTE_PAD};
    char out[64];
    CHECK(t->decode(t, seq, 7, out, sizeof out) == 19 && !strcmp(out, "1+2<sep>3<eos><pad>"), "specials: %s", out);
    CHECK(t->decode(t, seq, 7, out, 6) == 19 && !strcmp(out, "1+2<s"), "short buffer: %s", out);
    int bad[] = {65, 259};
    CHECK(t->decode(t, bad, 2, out, sizeof out) == -1, "id past the vocabulary");
    return pw_test_done("test_tokenizer");
}
