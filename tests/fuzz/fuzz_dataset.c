/* fuzz_dataset.c: libFuzzer target for JSONL data sets (pw_dataset_load): every shape, through
 * the byte tokenizer and a BPE fixture, with and without limits, then split and batched. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "pw_data.h"

static const PwTokenizer *bpe;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    PwErr err;
    bpe = pw_tokenizer_get(PW_FUZZ_SOURCE_ROOT "/tests/fixtures/bpe_llama3", &err);
    if (!bpe) {
        fprintf(stderr, "fuzz_dataset: %s\n", err.msg);
        exit(2);
    }
    return 0;
}

/* What training does with a loaded set: split it, and batch its rows (the batch size is capped
 * so that one large input cannot make the target slow for reasons of its own). */
static void use(const PwDataset *d)
{
    PwErr err;
    PwDataset train, valid;
    if (pw_dataset_split(d, 0.25, 7, &train, &valid, &err) == 0) {
        pw_dataset_free(&train);
        pw_dataset_free(&valid);
    }
    int n = d->n < 64 ? d->n : 64, idx[64];
    for (int i = 0; i < n; i++) idx[i] = d->n - 1 - i;
    (void)pw_data_response_targets(d, idx, n);
    PwBatch b = {0};
    if (pw_batch_build(&b, d, idx, n, 0, 0.0, &err) == 0) pw_batch_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write("data.jsonl", data, size);
    const PwTokenizer *bytes = pw_tokenizer_bytes();
    /* The option sets the readers take: none; every limit with each overlong policy, a prompt
     * template and the BPE's begin-of-text prefix; token ids without a tokenizer. */
    const PwDataOpts opts[] = {
        {.tok = bytes},
        {.tok = bytes, .max_prompt_len = 8, .max_response_len = 8, .max_len = 12,
         .overlong = PW_OVERLONG_ERROR},
        {.tok = bpe, .max_len = 24, .overlong = PW_OVERLONG_TRUNCATE,
         .prompt_template = "Q: " PW_PROMPT_MARK "\nA:"},
        {.tok = bpe, .max_prompt_len = 6, .max_response_len = 3, .vocab_size = 1000},
        {.tok = NULL, .vocab_size = 300},
    };
    const PwDataShape shapes[] = {PW_DATA_PROMPTS, PW_DATA_SFT, PW_DATA_PREFS};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
            PwDataOpts o = opts[i];
            o.shape = shapes[s];
            PwDataset d;
            PwErr err;
            if (pw_dataset_load(&d, path, &o, &err) == 0) {
                use(&d);
                pw_dataset_free(&d);
            }
        }
    }
    return 0;
}
