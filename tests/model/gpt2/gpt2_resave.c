/* gpt2_resave.c: load a GPT-2 folder and save it again with every head, for the test that
 * Hugging Face transformers reads what we write (test_hf_load.py). */
#include <stdio.h>
#include <sys/stat.h>

#include "pw_model.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s SRC_DIR DST_DIR\n", argv[0]);
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
    int rc = pw_model_save(m, argv[2], &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    pw_model_free(m);
    return rc ? 1 : 0;
}
