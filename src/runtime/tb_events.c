/* tb_events.c: TensorBoard event files (include/pw_tb.h).
 *
 * An event file is a stream of records: the data's length (uint64, little-endian), the masked
 * CRC-32C of those 8 bytes, the data, the masked CRC-32C of the data. Each record's data is a
 * serialized protobuf `Event`. Written here by hand, on purpose: Debian has protobuf-c and
 * ISA-L's CRC-32C, but this writer needs nine small messages with eighteen fields among them
 * and one checksum, and the libraries would add a code generator to the build and two shared
 * libraries to every machine that runs ppo_world, for about a hundred lines. The test compares
 * what this file writes, byte for byte, with files TensorBoard's own writer made
 * (tests/fixtures/tensorboard/, tests/runtime/log/test_tb_events.c).
 *
 * The fields written (TensorBoard's event.proto and summary.proto numbers; proto3, so a field at
 * its zero value is left out, as every protobuf library does, except simple_value, which is in a
 * oneof and always written):
 *   Event:          1 wall_time (double), 2 step (int64), 3 file_version (string),
 *                   5 summary (Summary), 7 session_log (SessionLog), 10 source_metadata
 *   Summary:        1 value (repeated Value)
 *   Value:          1 tag (string), 2 simple_value (float), 8 tensor, 9 metadata (text only)
 *   TensorProto:    1 dtype (DT_STRING = 7), 2 tensor_shape (empty), 8 string_val
 *   SummaryMetadata: 1 plugin_data: 1 plugin_name ("text")
 *   SessionLog:     1 status (enum, START = 1)    SourceMetadata: 1 writer (string)           */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pw_file.h"
#include "pw_metrics.h"
#include "pw_tb.h"

struct PwTb {
    FILE *f;
    int ok;
    char path[1200];
};

/* ---- the checksum ---------------------------------------------------------------------- */

/* CRC-32C, reflected polynomial 0x82f63b78, bit by bit: a step's event is a few kilobytes, so
 * a table would save microseconds a step. */
uint32_t pw_tb_crc32c(const void *data, size_t n)
{
    const uint8_t *p = data;
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
    }
    return ~crc;
}

uint32_t pw_tb_masked_crc(const void *data, size_t n)
{
    uint32_t crc = pw_tb_crc32c(data, n);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/* ---- protobuf's wire format, the part these messages use -------------------------------- */

typedef struct Buf {
    uint8_t *p;
    size_t n, cap;
    int oom;
} Buf;

static void put(Buf *b, const void *src, size_t n)
{
    if (b->oom || !n) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_varint(Buf *b, uint64_t v)
{
    uint8_t out[10];
    int n = 0;
    for (; v >= 0x80; v >>= 7) out[n++] = (uint8_t)(v | 0x80);
    out[n++] = (uint8_t)v;
    put(b, out, (size_t)n);
}

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_BYTES = 2, WIRE_FIXED32 = 5 };

static void put_key(Buf *b, unsigned field, unsigned wire)
{
    put_varint(b, (uint64_t)(field << 3 | wire));
}

static void put_le(Buf *b, uint64_t v, int bytes)
{
    uint8_t out[8];
    for (int i = 0; i < bytes; i++) out[i] = (uint8_t)(v >> (8 * i));
    put(b, out, (size_t)bytes);
}

static void put_bytes(Buf *b, unsigned field, const void *p, size_t n)
{
    put_key(b, field, WIRE_BYTES);
    put_varint(b, n);
    put(b, p, n);
}

/* A double as the float field holds it: rounded, and past the largest float an infinity (the
 * conversion C leaves undefined there). */
static void put_float(Buf *b, unsigned field, double d)
{
    float v = isfinite(d) && fabs(d) > FLT_MAX ? (float)copysign(INFINITY, d) : (float)d;
    uint32_t bits;
    memcpy(&bits, &v, 4);
    put_key(b, field, WIRE_FIXED32);
    put_le(b, bits, 4);
}

/* Event's first two fields, each left out at zero (wall_time by its bits: -0.0 is written). */
static void put_event_head(Buf *b, double wall, int64_t step)
{
    uint64_t bits;
    memcpy(&bits, &wall, 8);
    if (bits) {
        put_key(b, 1, WIRE_FIXED64);
        put_le(b, bits, 8);
    }
    if (step) {
        put_key(b, 2, WIRE_VARINT);
        put_varint(b, (uint64_t)step); /* a negative int64 takes ten bytes, as protobuf's */
    }
}

/* ---- records ----------------------------------------------------------------------------- */

static int write_record(PwTb *tb, Buf *data, PwErr *err)
{
    if (data->oom) {
        free(data->p);
        tb->ok = 0;
        return pw_errf(err, "%s: out of memory for an event", tb->path);
    }
    Buf rec = {0};
    put_le(&rec, data->n, 8);
    put_le(&rec, pw_tb_masked_crc(rec.p, 8), 4);
    put(&rec, data->p, data->n);
    put_le(&rec, pw_tb_masked_crc(data->p, data->n), 4);
    free(data->p);
    int bad = rec.oom || fwrite(rec.p, 1, rec.n, tb->f) != rec.n || fflush(tb->f) != 0;
    int e = errno;
    free(rec.p);
    if (!bad) return 0;
    tb->ok = 0;
    return pw_errf(err, "%s: cannot write: %s", tb->path,
                   rec.oom ? "out of memory" : strerror(e));
}

/* Appends the message `inner` (freed) as field `field` of `b`. */
static void put_message(Buf *b, unsigned field, Buf *inner)
{
    put_bytes(b, field, inner->p, inner->n);
    b->oom |= inner->oom;
    free(inner->p);
}

/* An event of wall time, step and one message field (the summary, the session log). */
static int write_event(PwTb *tb, double wall, int64_t step, unsigned field, Buf *inner,
                       PwErr *err)
{
    Buf b = {0};
    put_event_head(&b, wall, step);
    put_message(&b, field, inner);
    return write_record(tb, &b, err);
}

double pw_tb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int pw_tb_check_folder(const char *dir, PwErr *err)
{
    struct stat st;
    if (lstat(dir, &st) != 0 && errno == ENOENT) return 0; /* nothing there yet */
    if (pw_dir_check(dir, err)) return -1; /* a file, a dangling link, a loop: says which */
    if (access(dir, W_OK | X_OK) != 0)
        return pw_errf(err, "%s: the TensorBoard folder cannot be written: %s", dir,
                       strerror(errno));
    return 0;
}

/* The folder: made if missing; anything else at the name is an error naming it. */
static int make_folder(const char *dir, PwErr *err)
{
    if (mkdir(dir, 0777) == 0) return 0;
    if (errno != EEXIST)
        return pw_errf(err, "%s: cannot make the TensorBoard folder: %s", dir, strerror(errno));
    return pw_tb_check_folder(dir, err);
}

PwTb *pw_tb_open(const char *dir, double wall, PwErr *err)
{
    if (make_folder(dir, err)) return NULL;
    char host[256] = "localhost";
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = 0;
    PwTb *tb = calloc(1, sizeof *tb);
    if (!tb) {
        pw_errf(err, "%s: out of memory", dir);
        return NULL;
    }
    /* TensorBoard's own name: seconds, host, process and a count within the process (a new
     * name for each file, never an old one overwritten: O_EXCL). */
    static int count;
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 1000; tries++) {
        snprintf(tb->path, sizeof tb->path, "%s/events.out.tfevents.%010lld.%s.%ld.%d", dir,
                 (long long)wall, host, (long)getpid(), count++);
        fd = open(tb->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0 || !(tb->f = fdopen(fd, "wb"))) {
        pw_errf(err, "%s: cannot make a TensorBoard event file: %s", tb->path, strerror(errno));
        if (fd >= 0) close(fd);
        free(tb);
        return NULL;
    }
    tb->ok = 1;
    Buf b = {0};
    put_event_head(&b, wall, 0);
    put_bytes(&b, 3, "brain.Event:2", 13);
    Buf meta = {0};
    put_bytes(&meta, 1, "ppo_world", 9);
    put_message(&b, 10, &meta);
    if (write_record(tb, &b, err)) {
        pw_tb_close(tb);
        return NULL;
    }
    return tb;
}

const char *pw_tb_path(const PwTb *tb)
{
    return tb->path;
}

int pw_tb_ok(const PwTb *tb)
{
    return tb && tb->ok;
}

int pw_tb_scalars(PwTb *tb, int64_t step, double wall, int n, const char *const *tags,
                  const double *vals, PwErr *err)
{
    if (!tb->ok) return pw_errf(err, "%s: an earlier write failed", tb->path);
    Buf sum = {0}, val = {0};
    for (int i = 0; i < n; i++) {
        val.n = 0;
        if (*tags[i]) put_bytes(&val, 1, tags[i], strlen(tags[i])); /* proto3: "" left out */
        put_float(&val, 2, vals[i]);
        put_bytes(&sum, 1, val.p, val.n);
        sum.oom |= val.oom;
    }
    free(val.p); /* reused for each value: put_message would free it each time */
    return write_event(tb, wall, step, 5, &sum, err);
}

int pw_tb_text(PwTb *tb, int64_t step, double wall, const char *tag, const char *text,
               PwErr *err)
{
    if (!tb->ok) return pw_errf(err, "%s: an earlier write failed", tb->path);
    Buf tensor = {0}, plugin = {0}, meta = {0}, val = {0}, sum = {0};
    put_key(&tensor, 1, WIRE_VARINT);
    put_varint(&tensor, 7);               /* DT_STRING */
    put_bytes(&tensor, 2, NULL, 0);       /* a shape of no dimensions: one string */
    put_bytes(&tensor, 8, text, strlen(text));
    put_bytes(&plugin, 1, "text", 4);     /* the plugin that draws it */
    put_message(&meta, 1, &plugin);
    if (*tag) put_bytes(&val, 1, tag, strlen(tag));
    put_message(&val, 8, &tensor);
    put_message(&val, 9, &meta);
    put_message(&sum, 1, &val);
    return write_event(tb, wall, step, 5, &sum, err);
}

int pw_tb_json(PwTb *tb, int64_t step, double wall, const json_t *line, PwErr *err)
{
    size_t cap = json_object_size(line);
    if (!cap) return 0;
    const char **tags = malloc(cap * sizeof *tags);
    double *vals = malloc(cap * sizeof *vals);
    if (!tags || !vals) {
        free(tags);
        free(vals);
        return pw_errf(err, "%s: out of memory", tb->path);
    }
    int n = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)line, key, v) /* jansson keeps the keys' order */
        if (strcmp(key, "step") && pw_metric_get(v, &vals[n]) == 1) tags[n++] = key;
    int rc = n ? pw_tb_scalars(tb, step, wall, n, tags, vals, err) : 0;
    free(tags);
    free(vals);
    return rc;
}

int pw_tb_restart(PwTb *tb, int64_t step, double wall, PwErr *err)
{
    if (!tb->ok) return pw_errf(err, "%s: an earlier write failed", tb->path);
    Buf log = {0};
    put_key(&log, 1, WIRE_VARINT);
    put_varint(&log, 1); /* SessionLog.START */
    return write_event(tb, wall, step, 7, &log, err);
}

void pw_tb_give_up(PwTb **tb, const char *who, const PwErr *err)
{
    fprintf(stderr, "%s: warning: %s; no more TensorBoard events this run (metrics.jsonl "
            "goes on)\n", who, err->msg);
    pw_tb_close(*tb);
    *tb = NULL;
}

void pw_tb_close(PwTb *tb)
{
    if (!tb) return;
    if (tb->f) fclose(tb->f);
    free(tb);
}
