/* bench_tokenizer.c: encoding speed of the byte-level BPE tokenizers (and of "bytes") over the
 * held-out fixture text repeated to about 10 MB; bench_tokenizer.py measures the library's.
 * Run from the repository root: bench_tokenizer [fixtures folder] [rounds]. Prints a table, then
 * `RESULT tokenizer_mbs=... tokenizer_gpt2_mbs=... tokenizer_nfc_mbs=... bytes_mbs=...`
 * (tokenizer_mbs: Llama-3 style; nfc: with the NFC normalizer and a prefix space). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_clock.h"
#include "pw_tokenizer.h"

enum { TARGET = 10 << 20, MAX_ROUNDS = 51 };

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct Row {
    const char *name;
    double load_ms, best_mbs, median_mbs;
    int ids;
} Row;

/* rounds encodes of the whole text; speeds in MB/s (10^6 bytes) for the best and median. */
static Row measure(const char *name, const char *spec, const char *text, size_t len, int rounds)
{
    PwErr err;
    Row r = {name, 0, 0, 0, 0};
    double t0 = bench_now();
    const PwTokenizer *t = pw_tokenizer_get(spec, &err);
    r.load_ms = 1e3 * (bench_now() - t0);
    if (!t) {
        fprintf(stderr, "bench_tokenizer: %s\n", err.msg);
        exit(1);
    }
    int cap = (int)len + 1;
    int *ids = malloc(sizeof(int) * (size_t)cap);
    double mbs[MAX_ROUNDS];
    for (int i = 0; i < rounds; i++) {
        t0 = bench_now();
        r.ids = t->encode(t, text, len, ids, cap, &err);
        mbs[i] = (double)len / 1e6 / (bench_now() - t0);
        if (r.ids < 0) {
            fprintf(stderr, "bench_tokenizer: %s\n", err.msg);
            exit(1);
        }
    }
    qsort(mbs, (size_t)rounds, sizeof *mbs, cmp);
    r.best_mbs = mbs[rounds - 1];
    r.median_mbs = mbs[rounds / 2];
    free(ids);
    return r;
}

int main(int argc, char **argv)
{
    const char *fixtures = argc > 1 ? argv[1] : "tests/fixtures";
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    if (rounds < 1 || rounds > MAX_ROUNDS) rounds = 5;
    char path[4096], llama[4096], gpt2[4096], nfc[4096];
    snprintf(path, sizeof path, "%s/bpe_heldout.txt", fixtures);
    snprintf(llama, sizeof llama, "%s/bpe_llama3", fixtures);
    snprintf(gpt2, sizeof gpt2, "%s/bpe_gpt2", fixtures);
    snprintf(nfc, sizeof nfc, "%s/bpe_nfc", fixtures);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bench_tokenizer: cannot open %s (run from the repository root, or name "
                "the fixtures folder)\n", path);
        return 1;
    }
    char *one = malloc(1 << 20);
    size_t n = fread(one, 1, 1 << 20, f);
    fclose(f);
    size_t copies = (TARGET + n - 1) / n, len = copies * n;
    char *text = malloc(len);
    for (size_t i = 0; i < copies; i++) memcpy(text + i * n, one, n);

    Row rows[4] = {measure("bpe_llama3", llama, text, len, rounds),
                   measure("bpe_gpt2", gpt2, text, len, rounds),
                   measure("bpe_nfc", nfc, text, len, rounds),
                   measure("bytes", "bytes", text, len, rounds)};
    printf("encoding %zu bytes (%zu copies of %s), %d rounds, one thread\n", len, copies, path,
           rounds);
    printf("%-12s %10s %10s %12s %12s\n", "tokenizer", "load_ms", "ids", "best_MB/s", "median_MB/s");
    for (int i = 0; i < 4; i++)
        printf("%-12s %10.2f %10d %12.2f %12.2f\n", rows[i].name, rows[i].load_ms, rows[i].ids,
               rows[i].best_mbs, rows[i].median_mbs);
    printf("RESULT tokenizer_mbs=%.2f tokenizer_gpt2_mbs=%.2f tokenizer_nfc_mbs=%.2f "
           "bytes_mbs=%.2f\n", rows[0].best_mbs, rows[1].best_mbs, rows[2].best_mbs,
           rows[3].best_mbs);
    free(one);
    free(text);
    return 0;
}
