/* gpt2_resave.c: load a model folder of any family and save it again with every head (or, given
 * "score", as the reward model it is), for the test that Hugging Face transformers reads what we
 * write (test_hf_load.py); given MAX_SHARD_BYTES, in bfloat16 shards of at most that size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pw_model.h"

int main(int argc, char **argv)
{
    int score = argc == 4 && !strcmp(argv[3], "score");
    long shard = argc == 4 && !score ? atol(argv[3]) : 0;
    if (argc != 3 && !(argc == 4 && (score || shard > 0))) {
        fprintf(stderr, "usage: %s SRC_DIR DST_DIR [score | MAX_SHARD_BYTES]\n", argv[0]);
        return 2;
    }
    PwErr err;
    /* a ForSequenceClassification folder has no LM head to load (an untied one no lm_head) */
    int heads = score ? PW_HEAD_SCORE : PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE;
    PwModelOpts o = {.heads = heads, .maxB = 1, .maxT = 1, .seed = 7,
                     .fresh_heads = PW_HEAD_SCORE | PW_HEAD_VALUE};
    PwModel *m = pw_model_load(argv[1], &o, &err);
    if (!m) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    mkdir(argv[2], 0755);
    PwSaveOpts so = {.bf16 = shard > 0, .max_shard_bytes = (size_t)shard};
    int rc = pw_model_save_opts(m, argv[2], &so, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    pw_model_free(m);
    return rc ? 1 : 0;
}
