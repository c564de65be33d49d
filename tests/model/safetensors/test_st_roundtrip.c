/* test_st_roundtrip.c: tensors of every dtype and the metadata written by pw_st_write come back
 * from pw_st_open unchanged, and F16/BF16/F64/I64 convert to the hand-computed values, in
 * tensors of one element or of millions. */
#include <math.h>
#include <stdint.h>

#include "pw_file.h"
#include "pw_safetensors.h"
#include "pw_test.h"
#include "st_tmpdir.h"

/* Reads a whole small file into buf; returns its length or -1. */
static long slurp(const char *path, unsigned char *buf, long cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    long n = (long)fread(buf, 1, (size_t)cap, f);
    fclose(f);
    return n;
}

static void test_all_dtypes(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/all.safetensors", dir);

    unsigned long long rng = 7;
    float f32[6];
    for (int i = 0; i < 6; i++) f32[i] = (float)pw_test_normal(&rng);
    const double f64[4] = {1.5, -2.25, 1e-3, 1e40};
    /* bf16 is the top 16 bits of a float: 1, -3, 1.5, +inf, 0, 0.33203125 */
    const uint16_t bf16[6] = {0x3F80, 0xC040, 0x3FC0, 0x7F80, 0x0000, 0x3EAA};
    const float bf16_want[6] = {1.0f, -3.0f, 1.5f, INFINITY, 0.0f, 0.33203125f};
    /* IEEE half: 1, -2, 1/3 rounded, smallest subnormal 2^-24, largest finite 65504,
     * smallest normal 2^-14, largest subnormal 1023 * 2^-24, -inf, -0, NaN */
    const uint16_t f16[10] = {0x3C00, 0xC000, 0x3555, 0x0001, 0x7BFF,
                              0x0400, 0x03FF, 0xFC00, 0x8000, 0x7E00};
    const float f16_want[8] = {1.0f, -2.0f, 0.333251953125f, 5.9604644775390625e-08f, 65504.0f,
                               6.103515625e-05f, 6.097555160522461e-05f, -INFINITY};
    const int32_t i32[3] = {-7, 0, 2147483647};
    const int64_t i64[4] = {-1, 2147483647, -2147483648LL, 42};
    const int64_t i64big[1] = {1LL << 40};
    const uint8_t u8[3] = {0, 128, 255};
    const float scalar = 3.5f;

    const PwStWriteTensor w[] = {
        {.name = "f32", .ndim = 2, .shape = {2, 3}, .data = f32},
        {.name = "f64", .ndim = 1, .shape = {4}, .data = f64, .dtype = PW_DT_F64},
        {.name = "bf16", .ndim = 2, .shape = {3, 2}, .data = bf16, .dtype = PW_DT_BF16},
        {.name = "f16", .ndim = 1, .shape = {10}, .data = f16, .dtype = PW_DT_F16},
        {.name = "i32", .ndim = 1, .shape = {3}, .data = i32, .dtype = PW_DT_I32},
        {.name = "i64", .ndim = 2, .shape = {2, 2}, .data = i64, .dtype = PW_DT_I64},
        {.name = "i64big", .ndim = 1, .shape = {1}, .data = i64big, .dtype = PW_DT_I64},
        {.name = "u8", .ndim = 1, .shape = {3}, .data = u8, .dtype = PW_DT_U8},
        {.name = "scalar", .ndim = 0, .data = &scalar},
        {.name = "empty", .ndim = 2, .shape = {0, 4}, .data = NULL},
    };
    const int n = (int)PW_ARRAY_LEN(w);
    const char *const meta[] = {"format", "pt", "step", "42", NULL};
    PwErr err = {{0}};
    CHECK(pw_st_write(path, w, n, meta, &err) == 0, "write: %s", err.msg);
    CHECK(st_tmpdir_count(dir, ".tmp.") == 0, "a temporary file was left behind");

    /* The header is padded so that the data buffer starts 8-byte aligned. */
    unsigned char raw[4096];
    long len = slurp(path, raw, sizeof raw);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | raw[i];
    CHECK(len > 8 && hlen % 8 == 0, "header length %llu is not a multiple of 8",
          (unsigned long long)hlen);

    PwSafetensors *st = NULL;
    if (pw_st_open(&st, path, &err) != 0) {
        CHECK(0, "open: %s", err.msg);
        return;
    }
    CHECK(pw_st_count(st) == n, "count %d, want %d", pw_st_count(st), n);
    for (int i = 0; i < n; i++) {
        const PwStTensor *t = pw_st_find(st, w[i].name);
        if (!t) {
            CHECK(0, "tensor '%s' is missing", w[i].name);
            continue;
        }
        CHECK(t->dtype == w[i].dtype && t->ndim == w[i].ndim, "'%s': dtype/ndim differ",
              t->name);
        for (int d = 0; d < t->ndim; d++)
            CHECK(t->shape[d] == w[i].shape[d], "'%s': shape[%d] differs", t->name, d);
        /* The writer puts larger elements first, so each tensor is aligned to its size. */
        size_t el = pw_st_dtype_size(t->dtype);
        CHECK((uintptr_t)t->data % el == 0, "'%s' is not %zu-byte aligned", t->name, el);
    }
    /* pw_st_get walks the data buffer in order. */
    for (int i = 1; i < pw_st_count(st); i++)
        CHECK((const char *)pw_st_get(st, i)->data >= (const char *)pw_st_get(st, i - 1)->data,
              "tensor %d lies before tensor %d", i, i - 1);
    CHECK(pw_st_get(st, n) == NULL && pw_st_get(st, -1) == NULL, "get out of range");
    CHECK(pw_st_find(st, "nope") == NULL, "find of a missing name");
    CHECK(strcmp(pw_st_path(st), path) == 0, "path");

    const char *v = pw_st_metadata(st, "format");
    CHECK(v && strcmp(v, "pt") == 0, "metadata format = %s", v ? v : "(null)");
    v = pw_st_metadata(st, "step");
    CHECK(v && strcmp(v, "42") == 0, "metadata step = %s", v ? v : "(null)");
    CHECK(pw_st_metadata(st, "missing") == NULL, "metadata of a missing key");

    float got[10];
    CHECK(pw_st_read_f32(st, "f32", (int64_t[]){2, 3}, 2, got, &err) == 0, "%s", err.msg);
    CHECK(memcmp(got, f32, sizeof f32) == 0, "f32 values differ");

    CHECK(pw_st_read_f32(st, "f64", (int64_t[]){4}, 1, got, &err) == 0, "%s", err.msg);
    for (int i = 0; i < 4; i++)
        CHECK(got[i] == (float)f64[i], "f64[%d] = %g, want %g", i, got[i], (double)(float)f64[i]);

    CHECK(pw_st_read_f32(st, "bf16", (int64_t[]){3, 2}, 2, got, &err) == 0, "%s", err.msg);
    for (int i = 0; i < 6; i++)
        CHECK(got[i] == bf16_want[i], "bf16[%d] = %.9g, want %.9g", i, got[i], bf16_want[i]);

    CHECK(pw_st_read_f32(st, "f16", (int64_t[]){10}, 1, got, &err) == 0, "%s", err.msg);
    for (int i = 0; i < 8; i++)
        CHECK(got[i] == f16_want[i], "f16[%d] = %.9g, want %.9g", i, got[i], f16_want[i]);
    CHECK(got[8] == 0.0f && signbit(got[8]), "f16 0x8000 should be -0, got %g", got[8]);
    CHECK(isnan(got[9]), "f16 0x7E00 should be NaN, got %g", got[9]);

    CHECK(pw_st_read_f32(st, "scalar", NULL, 0, got, &err) == 0, "%s", err.msg);
    CHECK(got[0] == 3.5f, "scalar = %g", got[0]);
    CHECK(pw_st_read_f32(st, "empty", (int64_t[]){0, 4}, 2, got, &err) == 0, "%s", err.msg);

    int32_t gi[4];
    CHECK(pw_st_read_i32(st, "i32", (int64_t[]){3}, 1, gi, &err) == 0, "%s", err.msg);
    CHECK(memcmp(gi, i32, sizeof i32) == 0, "i32 values differ");
    CHECK(pw_st_read_i32(st, "i64", (int64_t[]){2, 2}, 2, gi, &err) == 0, "%s", err.msg);
    for (int i = 0; i < 4; i++) CHECK(gi[i] == (int32_t)i64[i], "i64[%d] = %d", i, gi[i]);

    const PwStTensor *t = pw_st_find(st, "u8");
    CHECK(t && t->nbytes == 3 && memcmp(t->data, u8, 3) == 0, "u8 bytes differ");
    pw_st_close(st);
}

/* Tensors of several conversion blocks (1 << 20 elements; the reader spreads them over the
 * OpenMP threads), of a length that is no multiple of a block, convert element for element, and
 * stay readable after pw_st_read_f32_once has given their pages back. */
static void test_large(const char *dir)
{
    enum { N = (5 << 19) + 77 }; /* 2.5 blocks and a few */
    char path[4200];
    snprintf(path, sizeof path, "%s/large.safetensors", dir);
    float *f32 = malloc(N * sizeof *f32), *got = malloc(N * sizeof *got);
    double *f64 = malloc(N * sizeof *f64);
    uint16_t *bf16 = malloc(N * sizeof *bf16), *f16 = malloc(N * sizeof *f16);
    if (!f32 || !got || !f64 || !bf16 || !f16) {
        CHECK(0, "out of memory");
        return;
    }
    for (uint32_t i = 0; i < N; i++) {
        uint32_t h = i * 2654435761u; /* every bit pattern, NaNs included, in some order */
        bf16[i] = (uint16_t)(h >> 16);
        f16[i] = (uint16_t)((h >> 16) & 0x3bff); /* finite, normal and subnormal */
        f64[i] = (double)i * 0.37 - 1e5;
        memcpy(&f32[i], &h, 4);
    }
    const PwStWriteTensor w[] = {
        {.name = "f32", .ndim = 1, .shape = {N}, .data = f32},
        {.name = "f64", .ndim = 2, .shape = {1, N}, .data = f64, .dtype = PW_DT_F64},
        {.name = "bf16", .ndim = 1, .shape = {N}, .data = bf16, .dtype = PW_DT_BF16},
        {.name = "f16", .ndim = 1, .shape = {N}, .data = f16, .dtype = PW_DT_F16},
    };
    PwErr err = {{0}};
    CHECK(pw_st_write(path, w, 4, NULL, &err) == 0, "write: %s", err.msg);
    PwSafetensors *st = NULL;
    if (pw_st_open(&st, path, &err) != 0) {
        CHECK(0, "open: %s", err.msg);
        return;
    }
    /* once, once more after the pages went back, and through the plain reader */
    for (int pass = 0; pass < 3; pass++) {
        int (*rd)(const PwSafetensors *, const char *, const int64_t *, int, float *,
                  PwErr *) = pass < 2 ? pw_st_read_f32_once : pw_st_read_f32;
        size_t bad[4] = {0};
        CHECK(rd(st, "f32", (int64_t[]){N}, 1, got, &err) == 0, "%s", err.msg);
        bad[0] = memcmp(got, f32, N * sizeof *got) != 0;
        CHECK(rd(st, "f64", (int64_t[]){1, N}, 2, got, &err) == 0, "%s", err.msg);
        for (int i = 0; i < N; i++) bad[1] += got[i] != (float)f64[i];
        CHECK(rd(st, "bf16", (int64_t[]){N}, 1, got, &err) == 0, "%s", err.msg);
        for (int i = 0; i < N; i++) {
            uint32_t b;
            memcpy(&b, &got[i], 4);
            bad[2] += b != (uint32_t)bf16[i] << 16;
        }
        CHECK(rd(st, "f16", (int64_t[]){N}, 1, got, &err) == 0, "%s", err.msg);
        for (int i = 0; i < N; i++) {
            int ex = (f16[i] >> 10) & 31, man = f16[i] & 1023;
            float want = ex ? ldexpf(1.0f + man / 1024.0f, ex - 15) : ldexpf((float)man, -24);
            bad[3] += got[i] != want;
        }
        CHECK(!bad[0] && !bad[1] && !bad[2] && !bad[3],
              "pass %d: f32 %s, f64 %zu, bf16 %zu, f16 %zu of %d elements differ", pass,
              bad[0] ? "differs" : "equal", bad[1], bad[2], bad[3], N);
    }
    pw_st_close(st);
    free(f32);
    free(got);
    free(f64);
    free(bf16);
    free(f16);
}

/* Replacing a file goes through a temporary name; the new content wins and nothing is left. */
static void test_atomic(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    PwErr err = {{0}};
    CHECK(pw_file_write(path, "{\"a\": 1}", 8, &err) == 0, "%s", err.msg);
    CHECK(pw_file_write(path, "{}", 2, &err) == 0, "%s", err.msg);
    unsigned char buf[64];
    long n = slurp(path, buf, sizeof buf);
    CHECK(n == 2 && memcmp(buf, "{}", 2) == 0, "replaced file holds %ld bytes", n);
    CHECK(st_tmpdir_count(dir, ".tmp.") == 0, "a temporary file was left behind");

    /* No metadata and no tensors is still a valid file: "{}" padded to 8. */
    snprintf(path, sizeof path, "%s/none.safetensors", dir);
    CHECK(pw_st_write(path, NULL, 0, NULL, &err) == 0, "%s", err.msg);
    PwSafetensors *st = NULL;
    CHECK(pw_st_open(&st, path, &err) == 0, "%s", err.msg);
    if (st) {
        CHECK(pw_st_count(st) == 0, "count %d", pw_st_count(st));
        CHECK(pw_st_metadata(st, "format") == NULL, "metadata in a file without any");
        pw_st_close(st);
    }
}

int main(void)
{
    char dir[4096];
    st_tmpdir_make(dir, sizeof dir, "st_roundtrip");
    test_all_dtypes(dir);
    test_large(dir);
    test_atomic(dir);
    st_tmpdir_remove(dir);
    return pw_test_done("test_st_roundtrip");
}
