/* test_st_invalid.c: every kind of broken safetensors file is refused by pw_st_open with its own
 * message naming the file and the tensor; reads with the wrong name, shape or dtype fail too. */
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

#include "pw_safetensors.h"
#include "pw_test.h"
#include "st_tmpdir.h"

static char g_dir[4096];
static char g_path[4200];

/* Writes g_path/<name> as: 8-byte length `hlen` (the real header length when hlen is -1),
 * the header text, then `ndata` zero bytes of data. */
static const char *put_file(const char *name, long long hlen, const char *hdr, size_t ndata)
{
    snprintf(g_path, sizeof g_path, "%s/%s", g_dir, name);
    FILE *f = fopen(g_path, "wb");
    if (!f) {
        perror(g_path);
        exit(2);
    }
    uint64_t n = hlen < 0 ? (uint64_t)strlen(hdr) : (uint64_t)hlen;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)(n >> (8 * i));
    fwrite(len8, 1, 8, f);
    fwrite(hdr, 1, strlen(hdr), f);
    for (size_t i = 0; i < ndata; i++) fputc(0, f);
    fclose(f);
    return g_path;
}

/* Opening must fail, and the message must hold the file's path and every needle given. */
static void expect_refused(const char *path, const char *needle1, const char *needle2)
{
    PwSafetensors *st = (PwSafetensors *)&st;   /* poison: open must set NULL */
    PwErr err = {{0}};
    int rc = pw_st_open(&st, path, &err);
    CHECK(rc == -1 && st == NULL, "%s: opened a broken file", path);
    CHECK(strstr(err.msg, path) != NULL, "message does not name the file: %s", err.msg);
    CHECK(strstr(err.msg, needle1) != NULL, "want '%s' in: %s", needle1, err.msg);
    if (needle2) CHECK(strstr(err.msg, needle2) != NULL, "want '%s' in: %s", needle2, err.msg);
    if (rc == 0) pw_st_close(st);
}

#define ENTRY(name, dtype, shape, b, e) \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

static void test_container(void)
{
    /* shorter than the length field */
    snprintf(g_path, sizeof g_path, "%s/short.safetensors", g_dir);
    FILE *f = fopen(g_path, "wb");
    fwrite("\x10\0\0\0\0", 1, 5, f);
    fclose(f);
    expect_refused(g_path, "shorter than the 8-byte header length", NULL);

    expect_refused(put_file("hlen_past_end.st", 1000, "{}", 0), "header length 1000",
                   "runs past the end of the file");
    expect_refused(put_file("hlen_huge.st", (long long)1 << 62, "{}", 0),
                   "runs past the end of the file", NULL);

    /* A length that fits the file but is absurd: a sparse 120 MB file costs no disk. */
    put_file("hlen_absurd.st", 110 * 1000 * 1000, "{}", 0);
    int fd = open(g_path, O_WRONLY);
    CHECK(fd >= 0 && ftruncate(fd, 120 * 1000 * 1000) == 0, "cannot make a sparse file");
    if (fd >= 0) close(fd);
    expect_refused(g_path, "header length 110000000 is larger than", NULL);

    expect_refused(put_file("bad_json.st", -1, "{\"w\":{\"dtype\":\"F32\",", 0),
                   "header is not valid JSON", NULL);
    expect_refused(put_file("not_object.st", -1, "[1,2]", 0), "header is not a JSON object", NULL);
    expect_refused(put_file("empty_header.st", -1, "", 0), "header is not valid JSON", NULL);

    /* Neither a FIFO (no writer: opening it would wait for ever) nor a device is opened. */
    snprintf(g_path, sizeof g_path, "%s/fifo.st", g_dir);
    CHECK(mkfifo(g_path, 0600) == 0, "mkfifo %s", g_path);
    expect_refused(g_path, "not a regular file (a FIFO)", NULL);
    expect_refused("/dev/zero", "not a regular file (a character device)", NULL);

    snprintf(g_path, sizeof g_path, "%s/does_not_exist.st", g_dir);
    expect_refused(g_path, "does_not_exist.st: does not exist", NULL);
}

/* One broken header a row: the file name, the header, the data bytes after it, and the two
 * phrases the message must hold (the second may be NULL). */
static const struct {
    const char *file, *hdr;
    size_t ndata;
    const char *needle1, *needle2;
} bad_entries[] = {
    {"entry_not_object.st", "{\"w\":5}", 0, "tensor 'w'", "entry is not a JSON object"},
    {"no_dtype.st", "{\"w\":{\"shape\":[],\"data_offsets\":[0,4]}}", 4, "tensor 'w'",
     "\"dtype\" is missing"},
    {"unknown_dtype.st", "{" ENTRY("w", "F17", "[1]", 0, 4) "}", 4, "tensor 'w'",
     "unknown dtype 'F17'"},
    {"shape_not_array.st", "{" ENTRY("w", "F32", "3", 0, 12) "}", 12, "tensor 'w'",
     "\"shape\" is missing or not an array"},
    {"shape_negative.st", "{" ENTRY("w", "F32", "[2,-1]", 0, 0) "}", 0, "tensor 'w'",
     "shape[1] is not a non-negative integer"},
    {"shape_float.st", "{" ENTRY("w", "F32", "[2.5]", 0, 0) "}", 0, "tensor 'w'",
     "shape[0] is not a non-negative integer"},
    {"shape_9d.st", "{" ENTRY("w", "F32", "[1,1,1,1,1,1,1,1,1]", 0, 4) "}", 4, "tensor 'w'",
     "shape has 9 dimensions"},
    /* 2^32 * 2^32 * 4 elements wraps a 64-bit product to 0: it must not slip through. */
    {"shape_overflow.st", "{" ENTRY("w", "F32", "[4294967296,4294967296,4]", 0, 0) "}", 0,
     "tensor 'w'", "overflows"},
    {"offsets_one.st", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4,
     "tensor 'w'", "\"data_offsets\" is not two non-negative integers"},
    {"offsets_reversed.st", "{" ENTRY("w", "F32", "[1]", 8, 4) "}", 8, "tensor 'w'",
     "begin after end"},
    {"offset_out_of_range.st", "{" ENTRY("w", "F32", "[4]", 0, 16) "}", 8, "tensor 'w'",
     "end 16 is past the end of the data buffer (8 bytes)"},
    {"size_mismatch.st", "{" ENTRY("w", "F32", "[3]", 0, 8) "}", 8, "tensor 'w'",
     "span 8 bytes but dtype F32 shape [3] needs 12 bytes"},
    {"size_mismatch_bf16.st", "{" ENTRY("w", "BF16", "[2,2]", 0, 16) "}", 16, "tensor 'w'",
     "dtype BF16 shape [2, 2] needs 8 bytes"},
    {"overlap.st", "{" ENTRY("a", "F32", "[2]", 0, 8) "," ENTRY("b", "F32", "[2]", 4, 12) "}", 12,
     "tensor 'b' (bytes [4, 12)) overlaps tensor 'a' (bytes [0, 8))", NULL},
    {"gap.st", "{" ENTRY("a", "F32", "[2]", 0, 8) "," ENTRY("b", "F32", "[2]", 12, 20) "}", 20,
     "tensor 'b'", "gap of 4 unused bytes"},
    {"trailing.st", "{" ENTRY("a", "F32", "[2]", 0, 8) "}", 12,
     "4 trailing bytes after the last tensor", NULL},
    {"duplicate.st", "{" ENTRY("a", "F32", "[1]", 0, 4) "," ENTRY("a", "F32", "[1]", 4, 8) "}", 8,
     "duplicate object key", "\"a\""},
    {"meta_not_string.st", "{\"__metadata__\":{\"step\":3}}", 0, "__metadata__ key 'step'",
     "not a string"},
    {"meta_not_object.st", "{\"__metadata__\":[]}", 0, "__metadata__ is not a JSON object", NULL},
};

static void test_entries(void)
{
    for (size_t i = 0; i < PW_ARRAY_LEN(bad_entries); i++)
        expect_refused(put_file(bad_entries[i].file, -1, bad_entries[i].hdr, bad_entries[i].ndata),
                       bad_entries[i].needle1, bad_entries[i].needle2);
}

/* A sound file read with the wrong expectations. */
static void test_reads(void)
{
    const char *p = put_file("good.st", -1,
                             "{" ENTRY("w", "F32", "[2,3]", 0, 24) "," ENTRY("ids", "I32", "[2]", 24,
                                                                             32) "," ENTRY("big", "I64", "[1]", 32, 40) "}",
                             40);
    PwSafetensors *st = NULL;
    PwErr err = {{0}};
    if (pw_st_open(&st, p, &err) != 0) {
        CHECK(0, "open: %s", err.msg);
        return;
    }
    float f[8];
    int32_t i[8];
    CHECK(pw_st_read_f32(st, "w", (int64_t[]){3, 2}, 2, f, &err) == -1 &&
              strstr(err.msg, "tensor 'w' has shape [2, 3], expected [3, 2]") &&
              strstr(err.msg, p),
          "wrong shape: %s", err.msg);
    CHECK(pw_st_read_f32(st, "w", (int64_t[]){6}, 1, f, &err) == -1 &&
              strstr(err.msg, "has shape [2, 3], expected [6]"),
          "wrong rank: %s", err.msg);
    CHECK(pw_st_read_f32(st, "zz", (int64_t[]){1}, 1, f, &err) == -1 &&
              strstr(err.msg, "no tensor 'zz'"),
          "missing: %s", err.msg);
    CHECK(pw_st_read_f32(st, "ids", (int64_t[]){2}, 1, f, &err) == -1 &&
              strstr(err.msg, "tensor 'ids' has dtype I32, expected F32, F16, BF16 or F64"),
          "wrong dtype: %s", err.msg);
    CHECK(pw_st_read_i32(st, "w", (int64_t[]){2, 3}, 2, i, &err) == -1 &&
              strstr(err.msg, "tensor 'w' has dtype F32, expected I32 or I64"),
          "wrong dtype: %s", err.msg);
    CHECK(pw_st_read_i32(st, "big", (int64_t[]){1}, 1, i, &err) == 0, "%s", err.msg);
    pw_st_close(st);

    /* An int64 outside int32 is named, not truncated. */
    const int64_t big[2] = {5, 1LL << 40};
    const PwStWriteTensor w = {.name = "big", .ndim = 1, .shape = {2}, .data = big,
                               .dtype = PW_DT_I64};
    snprintf(g_path, sizeof g_path, "%s/big.st", g_dir);
    CHECK(pw_st_write(g_path, &w, 1, NULL, &err) == 0, "%s", err.msg);
    CHECK(pw_st_open(&st, g_path, &err) == 0, "%s", err.msg);
    if (st) {
        CHECK(pw_st_read_i32(st, "big", (int64_t[]){2}, 1, i, &err) == -1 &&
                  strstr(err.msg, "element 1 = 1099511627776 does not fit in int32"),
              "overflow: %s", err.msg);
        pw_st_close(st);
    }
}

/* The writer refuses what it could not write as a valid file, and leaves nothing behind. */
static void test_writer_errors(void)
{
    const float x[2] = {1, 2};
    PwErr err = {{0}};
    snprintf(g_path, sizeof g_path, "%s/writer_out.st", g_dir);
    const PwStWriteTensor dup[2] = {{.name = "a", .ndim = 1, .shape = {2}, .data = x},
                                    {.name = "a", .ndim = 1, .shape = {2}, .data = x}};
    CHECK(pw_st_write(g_path, dup, 2, NULL, &err) == -1 && strstr(err.msg, "'a' given twice"),
          "duplicate: %s", err.msg);
    const char *const kv[] = {"k", NULL};
    CHECK(pw_st_write(g_path, dup, 1, kv, &err) == -1 && strstr(err.msg, "key 'k' has no value"),
          "metadata: %s", err.msg);
    const PwStWriteTensor neg = {.name = "n", .ndim = 1, .shape = {-2}, .data = x};
    CHECK(pw_st_write(g_path, &neg, 1, NULL, &err) == -1 && strstr(err.msg, "tensor 'n'"),
          "negative shape: %s", err.msg);
    const PwStWriteTensor nodata = {.name = "d", .ndim = 1, .shape = {2}};
    CHECK(pw_st_write(g_path, &nodata, 1, NULL, &err) == -1 && strstr(err.msg, "no data"),
          "no data: %s", err.msg);
    snprintf(g_path, sizeof g_path, "%s/no_such_folder/writer_out.st", g_dir);
    CHECK(pw_st_write(g_path, dup, 1, NULL, &err) == -1 &&
              strstr(err.msg, "cannot create a temporary file"),
          "missing folder: %s", err.msg);
    CHECK(st_tmpdir_count(g_dir, "writer_out") == 0, "the writer left a file after an error");
}

/* Random damage to the length and header of a sound file: every result is a clean refusal
 * with a message, or a file whose every tensor can be read in full (under a sanitizer this
 * also proves no read leaves the mapping). */
static void test_mutations(void)
{
    const float a[6] = {1, 2, 3, 4, 5, 6};
    const int64_t b[3] = {7, 8, 9};
    const uint16_t c[5] = {0x3C00, 0x4000, 0x4200, 0x4400, 0x4500};
    const PwStWriteTensor w[3] = {
        {.name = "a", .ndim = 2, .shape = {2, 3}, .data = a},
        {.name = "b", .ndim = 1, .shape = {3}, .data = b, .dtype = PW_DT_I64},
        {.name = "c", .ndim = 1, .shape = {5}, .data = c, .dtype = PW_DT_F16},
    };
    const char *const meta[] = {"format", "pt", NULL};
    char good_path[4200];
    snprintf(good_path, sizeof good_path, "%s/sound.st", g_dir);
    PwErr err = {{0}};
    CHECK(pw_st_write(good_path, w, 3, meta, &err) == 0, "%s", err.msg);
    unsigned char good[1024], buf[1024];
    FILE *f = fopen(good_path, "rb");
    size_t len = f ? fread(good, 1, sizeof good, f) : 0;
    if (f) fclose(f);
    size_t hend = 8 + (size_t)good[0] + 256 * (size_t)good[1];   /* end of header */
    CHECK(len > 64 && hend < len, "sound file of %zu bytes", len);

    static const char pool[] = "0123456789[]{},:\"-.eE \x01\xff";
    unsigned long long rng = 99;
    int opened = 0, refused = 0;
    for (int it = 0; it < 1000 && len > 64; it++) {
        memcpy(buf, good, len);
        size_t n = len;
        int kind = (int)(pw_test_rng_next(&rng) % 8);
        if (kind == 0) {
            n = pw_test_rng_next(&rng) % len;                     /* cut short */
        } else {
            for (int k = 0; k <= kind % 3; k++) {               /* 1 to 3 bytes replaced */
                size_t at = pw_test_rng_next(&rng) % hend;
                buf[at] = (unsigned char)pool[pw_test_rng_next(&rng) % (sizeof pool - 1)];
            }
        }
        snprintf(g_path, sizeof g_path, "%s/mutant.st", g_dir);
        FILE *m = fopen(g_path, "wb");
        fwrite(buf, 1, n, m);
        fclose(m);
        PwSafetensors *st = NULL;
        err.msg[0] = '\0';
        if (pw_st_open(&st, g_path, &err) != 0) {
            refused++;
            if (!strstr(err.msg, g_path)) CHECK(0, "mutant %d: message '%s'", it, err.msg);
            continue;
        }
        opened++;
        float fb[64];
        int32_t ib[64];
        unsigned sum = 0;
        for (int i = 0; i < pw_st_count(st); i++) {
            const PwStTensor *t = pw_st_get(st, i);
            for (size_t k = 0; k < t->nbytes; k++) sum += ((const unsigned char *)t->data)[k];
            if (t->numel <= 64) {
                (void)pw_st_read_f32(st, t->name, t->shape, t->ndim, fb, &err);
                (void)pw_st_read_i32(st, t->name, t->shape, t->ndim, ib, &err);
            }
        }
        (void)sum;
        pw_st_close(st);
    }
    CHECK(refused > 0 && opened > 0, "mutants: %d opened, %d refused", opened, refused);
    printf("mutants: %d opened, %d refused\n", opened, refused);
}

int main(void)
{
    st_tmpdir_make(g_dir, sizeof g_dir, "st_invalid");
    test_container();
    test_entries();
    test_reads();
    test_writer_errors();
    test_mutations();
    st_tmpdir_remove(g_dir);
    return pw_test_done("test_st_invalid");
}
