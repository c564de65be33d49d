/* test_config_json.c: a Llama-family config.json with values at the edges of their types:
 * pw_arch_load refuses what would overflow an int instead of computing with it. */
#include <stdio.h>
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
