/* gpt2_resave.c: load a folder (any family) and save it again with every head, for the test that
 * Hugging Face transformers reads what we write (test_hf_load.py); with MAX_SHARD_BYTES, in
 * bfloat16 shards of at most that size. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "pw_model.h"

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s SRC_DIR DST_DIR [MAX_SHARD_BYTES]\n", argv[0]);
        return 2;
    }
    PwErr err;
    PwModelOpts o = {.heads = PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE, .maxB = 1, .maxT = 1,
                     .seed = 7};
    PwModel *m = pw_model_load(argv[1], &o, &err);
    if (!m) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    mkdir(argv[2], 0755);
    PwSaveOpts so = {.bf16 = argc == 4, .max_shard_bytes = argc == 4 ? atol(argv[3]) : 0};
    int rc = pw_model_save_opts(m, argv[2], &so, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    pw_model_free(m);
    return rc ? 1 : 0;
}
