/* test_config_json.c: a Llama-family config.json with values at the edges of their types:
 * pw_arch_load refuses what would overflow an int instead of computing with it. And the special
 * token ids (bos_token_id, eos_token_id as one id or a list, pad_token_id) that a folder ppo_world
 * writes carries from the one it read, for both families; bad ones are refused by key. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pw_model.h"
#include "pw_test.h"

static const char *base = "\"num_hidden_layers\": 1, "
                          "\"num_attention_heads\": 2, \"hidden_size\": 8, \"vocab_size\": 5, "
                          "\"max_position_embeddings\": 16, \"intermediate_size\": 8, "
                          "\"hidden_act\": \"silu\"";

/* Loads {model_type, base, extra} from dir/config.json: 0 or -1, with the message in err. */
static int load_type(const char *dir, const char *type, const char *extra, PwArch *a,
                     PwErr *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return pw_errf(err, "cannot write %s", path);
    fprintf(f, "{\"model_type\": \"%s\", %s%s%s}\n", type, base, extra[0] ? ", " : "", extra);
    fclose(f);
    return pw_arch_load(a, dir, err);
}
static int load(const char *dir, const char *extra, PwArch *a, PwErr *err)
{
    return load_type(dir, "llama", extra, a, err);
}

/* What each model_type makes of attention_bias and head_dim (transformers' classes) */
static void types(const char *dir)
{
    PwArch a;
    PwErr err = {{0}};
    static const struct {
        const char *type, *extra;
        int qkv_bias, o_bias, qk_norm, head_size;
    } cases[] = {
        {"llama", "", 0, 0, 0, 4},
        {"llama", "\"attention_bias\": true", 1, 1, 0, 4},
        {"qwen2", "", 1, 0, 0, 4},
        {"qwen2", "\"attention_bias\": true", 1, 0, 0, 4},
        {"mistral", "\"attention_bias\": true", 0, 0, 0, 4},
        {"qwen3", "", 0, 0, 1, 128}, /* Qwen3Config's head_dim is 128 unless given */
        {"qwen3", "\"head_dim\": null", 0, 0, 1, 128},
        {"qwen3", "\"head_dim\": 6, \"attention_bias\": true", 1, 1, 1, 6},
        {"llama", "\"head_dim\": 10", 0, 0, 0, 10},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = load_type(dir, cases[i].type, cases[i].extra, &a, &err);
        CHECK(rc == 0 && a.qkv_bias == cases[i].qkv_bias && a.o_bias == cases[i].o_bias &&
                  a.qk_norm == cases[i].qk_norm && pw_arch_head_size(&a) == cases[i].head_size,
              "%s {%s}: rc %d (%s), q/k/v bias %d o bias %d q/k norm %d head size %d; want "
              "%d %d %d %d", cases[i].type, cases[i].extra, rc, rc ? err.msg : "ok", a.qkv_bias,
              a.o_bias, a.qk_norm, pw_arch_head_size(&a), cases[i].qkv_bias, cases[i].o_bias,
              cases[i].qk_norm, cases[i].head_size);
    }
    CHECK(!strcmp(pw_hf_type_name(PW_HF_QWEN3), "qwen3") && !strcmp(pw_hf_type_name(9), "?") &&
              !strcmp(pw_hf_type_name(-1), "?"), "pw_hf_type_name");
    /* a model none of the types describes is refused by name, never saved as another */
    PwArch bad = {.family = PW_FAMILY_LLAMA, .n_layer = 1, .n_head = 2, .n_embd = 8,
                  .vocab_size = 5, .n_positions = 16, .n_kv_head = 2, .n_inner = 8,
                  .norm_eps = 1e-5f, .rope_theta = 1e4, .qkv_bias = 1};
    CHECK(pw_arch_check(&bad, &err) == -1 && strstr(err.msg, "attention_bias gives q, k, v and "
                                                    "o_proj one each"),
          "llama with q/k/v biases alone: %s", err.msg);
    bad.hf_type = 1, bad.o_bias = 1;
    CHECK(pw_arch_check(&bad, &err) == -1 && strstr(err.msg, "no o_proj bias"),
          "qwen2 with an o_proj bias: %s", err.msg);
    bad.hf_type = 0, bad.qk_norm = 1;
    CHECK(pw_arch_check(&bad, &err) == -1 && strstr(err.msg, "only qwen3 has them"),
          "llama with q/k norms: %s", err.msg);
    bad.hf_type = 3, bad.qk_norm = 0;
    CHECK(pw_arch_check(&bad, &err) == -1 && strstr(err.msg, "only qwen3 has them (and always)"),
          "qwen3 without q/k norms: %s", err.msg);
    bad.qk_norm = 1;
    CHECK(pw_arch_check(&bad, &err) == 0, "qwen3 with attention biases: %s", err.msg);
    PwArch gpt2 = {.family = PW_FAMILY_GPT2, .n_layer = 1, .n_head = 2, .n_embd = 8,
                   .vocab_size = 5, .n_positions = 16, .head_dim = 8};
    CHECK(pw_arch_check(&gpt2, &err) == -1 && strstr(err.msg, "the Llama family's"),
          "gpt2 with a head_dim: %s", err.msg);
}

/* A model of `a` saved to dir/out and its config.json loaded again: the ids come back. */
static PwArch round_trip(const char *dir, const PwArch *a, char *text, size_t n)
{
    PwErr err = {{0}};
    char out[4200], path[4300];
    snprintf(out, sizeof out, "%s/out", dir);
    mkdir(out, 0755);
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = 1, .maxT = 4};
    PwModel *m = pw_model_create(a, &o, &err);
    CHECK(m != NULL, "%s", err.msg);
    if (!m) exit(1);
    CHECK(pw_model_save(m, out, &err) == 0, "save: %s", err.msg);
    pw_model_free(m);
    PwArch b;
    CHECK(pw_arch_load(&b, out, &err) == 0, "the saved config.json: %s", err.msg);
    snprintf(path, sizeof path, "%s/config.json", out);
    FILE *f = fopen(path, "r");
    size_t got = f ? fread(text, 1, n - 1, f) : 0;
    text[got] = '\0';
    if (f) fclose(f);
    return b;
}

static void special_ids(const char *dir)
{
    PwArch a, b;
    PwErr err = {{0}};
    char text[4096];
    /* Llama 3 Instruct's shape of them: an eos list; and a pad given as null, which stays null
     * (left out, transformers would read its class's default) */
    CHECK(load(dir, "\"bos_token_id\": 3, \"eos_token_id\": [4, 1, 2], \"pad_token_id\": null",
               &a, &err) == 0, "%s", err.msg);
    CHECK(a.has_bos == 1 && a.bos_token_id == 3 && a.eos_list && a.n_eos == 3 &&
              a.eos_token_id[0] == 4 && a.eos_token_id[2] == 2 && a.has_pad == -1,
          "ids read: bos %d/%d, eos list %d of %d, pad %d", a.has_bos, a.bos_token_id,
          a.eos_list, a.n_eos, a.has_pad);
    b = round_trip(dir, &a, text, sizeof text);
    CHECK(b.has_bos == 1 && b.bos_token_id == 3 && b.eos_list && b.n_eos == 3 &&
              b.eos_token_id[0] == 4 && b.eos_token_id[1] == 1 && b.eos_token_id[2] == 2 &&
              b.has_pad == -1 && strstr(text, "\"pad_token_id\": null"),
          "llama ids after a save (a null kept null): %s", text);
    /* GPT-2's: one eos id, and a pad */
    const char *gpt2 = "{\"model_type\": \"gpt2\", \"n_layer\": 1, \"n_head\": 2, "
                       "\"n_embd\": 8, \"vocab_size\": 5, \"n_positions\": 16, "
                       "\"bos_token_id\": 4, \"eos_token_id\": 4, \"pad_token_id\": 0}\n";
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(gpt2, f) >= 0, "cannot write %s", path);
    if (f) fclose(f);
    CHECK(pw_arch_load(&a, dir, &err) == 0, "%s", err.msg);
    b = round_trip(dir, &a, text, sizeof text);
    CHECK(b.family == PW_FAMILY_GPT2 && b.has_bos == 1 && b.bos_token_id == 4 &&
              !b.eos_list && b.has_eos == 1 && b.n_eos == 1 && b.eos_token_id[0] == 4 &&
              b.has_pad == 1 && b.pad_token_id == 0,
          "gpt2 ids after a save: %s", text);
    /* none given: none written */
    CHECK(load(dir, "", &a, &err) == 0, "%s", err.msg);
    b = round_trip(dir, &a, text, sizeof text);
    CHECK(!b.has_bos && !b.has_eos && !b.n_eos && !b.has_pad && !strstr(text, "token_id"),
          "no ids, yet the saved config.json has some: %s", text);
    /* refused, naming the key */
    static const struct {
        const char *extra, *want;
    } bad[] = {
        {"\"bos_token_id\": \"<s>\"", "key \"bos_token_id\" must be null or a token id"},
        {"\"pad_token_id\": 1.5", "key \"pad_token_id\" must be null or a token id"},
        {"\"eos_token_id\": 4294967296", "key \"eos_token_id\" must be null or a token id "
                                          "(an integer), or a list"},
        {"\"eos_token_id\": [1, \"x\"]", "key \"eos_token_id\" must be null"},
        {"\"eos_token_id\": [1, null]", "key \"eos_token_id\": element 1 is null"},
        {"\"eos_token_id\": [1, 2, 3, 4, 5, 6, 7, 8, 9]", "key \"eos_token_id\" lists 9 ids: "
                                                       "at most 8"},
    };
    for (size_t i = 0; i < PW_ARRAY_LEN(bad); i++)
        CHECK(load(dir, bad[i].extra, &a, &err) == -1 && strstr(err.msg, bad[i].want) &&
                  strstr(err.msg, "config.json"),
              "{%s}: %s", bad[i].extra, err.msg);
}

int main(int argc, char **argv)
{
    CHECK(argc == 2, "usage: test_config_json TMP_DIR");
    if (argc != 2) return pw_test_done("config_json");
    char dir[4100];
    snprintf(dir, sizeof dir, "%s/config_json", argv[1]);
    mkdir(dir, 0755);
    PwArch a;
    PwErr err = {{0}};
    types(dir);
    special_ids(dir);

    CHECK(load(dir, "\"head_dim\": 4", &a, &err) == 0, "head_dim = hidden_size / heads: %s",
          err.msg);
    /* head_dim * num_attention_heads overflowed an int; 2^32 + 4 read as an int was 4. */
    CHECK(load(dir, "\"head_dim\": 2000000000", &a, &err) == -1 &&
              strstr(err.msg, "head_dim 2000000000: too large"),
          "a huge head_dim: %s", err.msg);
    CHECK(load(dir, "\"head_dim\": 4294967300", &a, &err) == -1 &&
              strstr(err.msg, "key \"head_dim\" 4294967300 is too large"),
          "head_dim 2^32 + 4: %s", err.msg);
    /* heads wider than hidden_size / heads (Qwen3's shapes): the attention is NH x head_dim */
    CHECK(load(dir, "\"head_dim\": 6", &a, &err) == 0 && pw_arch_head_size(&a) == 6,
          "head_dim 6 over hidden_size / heads 4: %s", err.msg);
    CHECK(load(dir, "\"head_dim\": 5", &a, &err) == -1 &&
              strstr(err.msg, "key \"head_dim\" must be an even number"),
          "an odd head_dim: %s", err.msg);
    CHECK(load(dir, "\"head_dim\": 0", &a, &err) == -1 &&
              strstr(err.msg, "key \"head_dim\" must be a positive integer"),
          "head_dim 0: %s", err.msg);

    /* original_max_position_embeddings went through a double into an int: 1e300 did not fit. */
    const char *rope = "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, "
                       "\"low_freq_factor\": 1, \"high_freq_factor\": 4, "
                       "\"original_max_position_embeddings\": %s}";
    char extra[512];
    snprintf(extra, sizeof extra, rope, "8");
    CHECK(load(dir, extra, &a, &err) == 0 && a.rope_llama3 && a.rope_original_max == 8,
          "llama3 rope scaling: %s", err.msg);
    const char *bad[] = {"1e300", "0.5", "-3", "0"};
    for (size_t i = 0; i < PW_ARRAY_LEN(bad); i++) {
        snprintf(extra, sizeof extra, rope, bad[i]);
        CHECK(load(dir, extra, &a, &err) == -1 &&
                  strstr(err.msg, "key \"original_max_position_embeddings\" must be a positive "
                         "integer"),
              "original_max_position_embeddings %s: %s", bad[i], err.msg);
    }
    return pw_test_done("config_json");
}
