/* test_config_json.c: a Llama-family config.json with values at the edges of their types:
 * pw_arch_load refuses what would overflow an int instead of computing with it. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "pw_model.h"
#include "pw_test.h"

static const char *base = "\"model_type\": \"llama\", \"num_hidden_layers\": 1, "
                          "\"num_attention_heads\": 2, \"hidden_size\": 8, \"vocab_size\": 5, "
                          "\"max_position_embeddings\": 16, \"intermediate_size\": 8, "
                          "\"hidden_act\": \"silu\"";

/* Loads {base, extra} from dir/config.json: 0 or -1, with the message in err. */
static int load(const char *dir, const char *extra, PwArch *a, PwErr *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return pw_errf(err, "cannot write %s", path);
    fprintf(f, "{%s%s%s}\n", base, extra[0] ? ", " : "", extra);
    fclose(f);
    return pw_arch_load(a, dir, err);
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

    CHECK(load(dir, "\"head_dim\": 4", &a, &err) == 0, "head_dim = hidden_size / heads: %s",
          err.msg);
    /* head_dim * num_attention_heads overflowed an int; 2^32 + 4 read as an int was 4. */
    CHECK(load(dir, "\"head_dim\": 2000000000", &a, &err) == -1 &&
              strstr(err.msg, "key \"head_dim\" must be hidden_size / num_attention_heads"),
          "a huge head_dim: %s", err.msg);
    CHECK(load(dir, "\"head_dim\": 4294967300", &a, &err) == -1 &&
              strstr(err.msg, "key \"head_dim\" must be"), "head_dim 2^32 + 4: %s", err.msg);

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
