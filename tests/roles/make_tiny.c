/* make_tiny.c: writes the test inputs of the roles tests: a random tiny checkpoint (GPT-2, or the
 * Llama family; with or without a score head) and a prompts JSONL file, from a seed. Usage:
 *   make_tiny model DIR SEED VOCAB [score] [llama|qwen3] [fill=X]
 *                                      L=2, C=32, NH=2, n_positions=32 (llama: a Qwen2 of 4
 *                                      query over 2 key/value heads; qwen3: heads of 12 with
 *                                      q/k norms and attention biases); fill: every weight X
 *                                      instead, for a
 *                                      model that is valid (|X| <= 1e16) but whose forward
 *                                      overflows float32; size=L,C,NH,POS: a GPT-2 of
 *                                      that shape instead (the placement experiments' models)
 *   make_tiny prompts FILE SEED VOCAB COUNT MINLEN MAXLEN */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pw_model.h"

static int write_model(const char *dir, unsigned long long seed, int vocab, int score,
                       int llama, const char *fill, const char *size)
{
    PwErr err;
    PwArch c = {.family = PW_FAMILY_GPT2, .n_layer = 2, .n_head = 2, .n_embd = 32,
                .vocab_size = vocab, .n_positions = 32};
    if (size && sscanf(size, "%d,%d,%d,%d", &c.n_layer, &c.n_embd, &c.n_head, &c.n_positions) != 4) {
        fprintf(stderr, "make_tiny: size=%s: expected L,C,NH,POS\n", size);
        return 2;
    }
    if (llama)
        c = (PwArch){.family = PW_FAMILY_LLAMA, .n_layer = 2, .n_head = 4, .n_embd = 32,
                     .vocab_size = vocab, .n_positions = 32, .n_kv_head = 2, .n_inner = 48,
                     .norm_eps = 1e-5f, .rope_theta = 10000.0, .tied = 1, .qkv_bias = 1,
                     .hf_type = 1};
    if (llama == 2) c.hf_type = 3, c.o_bias = 1, c.qk_norm = 1, c.head_dim = 12;
    PwModelOpts o = {.heads = PW_HEAD_LM | (score ? PW_HEAD_SCORE : 0), .maxB = 1, .maxT = 8};
    PwModel *m = pw_model_create(&c, &o, &err);
    if (!m) {
        fprintf(stderr, "make_tiny: %s\n", err.msg);
        return 1;
    }
    pw_model_init_random(m, seed);
    if (fill) { /* a CPU model: the parameters are host memory */
        float *p = pw_model_params(m).data, x = strtof(fill, NULL);
        for (size_t i = 0; i < pw_model_num_params(m); i++) p[i] = x;
    }
    mkdir(dir, 0755);
    int rc = pw_model_save(m, dir, &err);
    if (rc) fprintf(stderr, "make_tiny: %s\n", err.msg);
    pw_model_free(m);
    return rc ? 1 : 0;
}

static int write_prompts(const char *path, unsigned long long seed, int vocab, int count, int lo,
                         int hi)
{
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    unsigned long long s = seed * 2654435761ull + 1;
    for (int i = 0; i < count; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int len = lo + (int)((s >> 33) % (unsigned long long)(hi - lo + 1));
        fprintf(f, "{\"input_ids\": [");
        for (int t = 0; t < len; t++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            /* never the last id: that is the stop token of the tests' models */
            fprintf(f, "%s%d", t ? ", " : "", (int)((s >> 33) % (unsigned long long)(vocab - 1)));
        }
        fprintf(f, "]}\n");
    }
    return fclose(f) ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && !strcmp(argv[1], "model")) {
        int score = 0, llama = 0;
        const char *fill = NULL, *size = NULL;
        for (int i = 5; i < argc; i++) {
            score |= !strcmp(argv[i], "score");
            if (!strcmp(argv[i], "llama")) llama = 1;
            if (!strcmp(argv[i], "qwen3")) llama = 2;
            if (!strncmp(argv[i], "fill=", 5)) fill = argv[i] + 5;
            if (!strncmp(argv[i], "size=", 5)) size = argv[i] + 5;
        }
        return write_model(argv[2], strtoull(argv[3], NULL, 10), atoi(argv[4]), score, llama,
                           fill, size);
    }
    if (argc == 8 && !strcmp(argv[1], "prompts"))
        return write_prompts(argv[2], strtoull(argv[3], NULL, 10), atoi(argv[4]), atoi(argv[5]),
                             atoi(argv[6]), atoi(argv[7]));
    fprintf(stderr, "usage: make_tiny model DIR SEED VOCAB [score] | "
                    "make_tiny prompts FILE SEED VOCAB COUNT MINLEN MAXLEN\n");
    return 2;
}
