/* tb_check: a run folder's TensorBoard event files hold exactly the numbers of its JSONL lines.
 *
 *   tb_check RUN_DIR FILES [--train]
 *
 * Reads RUN_DIR/tensorboard/'s FILES event files in name order (their time first, as TensorBoard
 * orders them), checks every record's length and checksums and the first event of each file (the
 * file version), decodes the events (a decoder of its own, written from the format, not the
 * writer's), and drops what a session-start event hides (the events at its step and after, in
 * the files before it), as TensorBoard does. What is left must be, value for value as a float,
 * every number of RUN_DIR/metrics.jsonl and RUN_DIR/eval.jsonl at step + 1 (PPO; --train: sft/rm's
 * metrics.jsonl at its step), every key but "step", and one text summary (a string tensor for the
 * text plugin) for each line with sample responses. Exit 0 when they agree. */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_metrics.h"
#include "pw_tb.h"

typedef struct Scalar {
    int64_t step;
    char tag[200];
    uint32_t bits;
} Scalar;

static Scalar *got, *want;
static size_t ngot, nwant, capgot, capwant;

static void add(Scalar **v, size_t *n, size_t *cap, int64_t step, const char *tag, size_t len,
                uint32_t bits)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 256;
        *v = realloc(*v, *cap * sizeof **v);
        if (!*v) exit(2);
    }
    Scalar *s = &(*v)[(*n)++];
    s->step = step;
    if (len >= sizeof s->tag) len = sizeof s->tag - 1;
    memcpy(s->tag, tag, len);
    s->tag[len] = 0;
    s->bits = bits;
}

static void fail(const char *what, const char *file)
{
    fprintf(stderr, "tb_check: FAIL %s: %s\n", file, what);
    exit(1);
}

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Reads a varint at *p (below end); -1 past the end. */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end) return -1;
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return 0;
    }
    return -1;
}

/* One field: its number, wire type and where its value is (for bytes: the bytes; else the
 * number in *num). */
static int field(const uint8_t **p, const uint8_t *end, unsigned *num, unsigned *wire,
                 uint64_t *val, const uint8_t **bytes)
{
    uint64_t key;
    if (varint(p, end, &key)) return -1;
    *num = (unsigned)(key >> 3);
    *wire = (unsigned)(key & 7);
    switch (*wire) {
    case 0: return varint(p, end, val);
    case 1:
    case 5: {
        int n = *wire == 1 ? 8 : 4;
        if (end - *p < n) return -1;
        *val = le(*p, n);
        *p += n;
        return 0;
    }
    case 2:
        if (varint(p, end, val) || (uint64_t)(end - *p) < *val) return -1;
        *bytes = *p;
        *p += *val;
        return 0;
    default: return -1;
    }
}

static void summary(const uint8_t *p, const uint8_t *end, int64_t step, const char *file)
{
    while (p < end) {
        unsigned num, wire;
        uint64_t len;
        const uint8_t *val;
        if (field(&p, end, &num, &wire, &len, &val) || num != 1 || wire != 2)
            fail("a summary field other than value", file);
        const uint8_t *q = val, *qend = val + len, *tag = (const uint8_t *)"";
        size_t tag_len = 0;
        int have_value = 0, text = 0;
        uint32_t bits = 0;
        while (q < qend) {
            uint64_t v;
            const uint8_t *b;
            if (field(&q, qend, &num, &wire, &v, &b)) fail("a bad summary value", file);
            if (num == 1 && wire == 2) {
                tag = b;
                tag_len = v;
            } else if (num == 2 && wire == 5) {
                bits = (uint32_t)v;
                have_value = 1;
            } else if (num == 8 && wire == 2) { /* a text summary's tensor: DT_STRING first */
                if (v < 2 || b[0] != 0x08 || b[1] != 7) fail("a tensor that is not a string", file);
                text |= 1;
            } else if (num == 9 && wire == 2) { /* its metadata: plugin "text" */
                if (v != 8 || memcmp(b, "\x0a\x06\x0a\x04text", 8))
                    fail("not the text plugin", file);
                text |= 2;
            } else {
                fail("a summary value that is not a scalar or a text", file);
            }
        }
        if (text == 3 && !have_value) { /* counted as "text:TAG", value 0 */
            char name[200];
            int n = snprintf(name, sizeof name, "text:%.*s", (int)tag_len, (const char *)tag);
            add(&got, &ngot, &capgot, step, name, (size_t)n, 0);
            continue;
        }
        if (!have_value || text) fail("a summary value neither a scalar nor a text", file);
        add(&got, &ngot, &capgot, step, (const char *)tag, tag_len, bits);
    }
}

/* A session start at `step`: drop what came before at that step and after it. */
static void restart(int64_t step)
{
    size_t k = 0;
    for (size_t i = 0; i < ngot; i++)
        if (got[i].step < step) got[k++] = got[i];
    ngot = k;
}

static int read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail("cannot open", path);
    int events = 0;
    uint8_t head[12];
    double last_wall = 0;
    while (fread(head, 1, 12, f) == 12) {
        uint64_t n = le(head, 8);
        if ((uint32_t)le(head + 8, 4) != pw_tb_masked_crc(head, 8)) fail("length's checksum", path);
        if (n > (1u << 24)) fail("a record over 16 MiB", path);
        uint8_t *data = malloc(n + 4);
        if (fread(data, 1, n + 4, f) != n + 4) fail("a record cut short", path);
        if ((uint32_t)le(data + n, 4) != pw_tb_masked_crc(data, n)) fail("data's checksum", path);
        const uint8_t *p = data, *end = data + n;
        int64_t step = 0;
        double wall = 0;
        int version = 0;
        while (p < end) {
            unsigned num, wire;
            uint64_t v;
            const uint8_t *b = NULL;
            if (field(&p, end, &num, &wire, &v, &b)) fail("a bad event", path);
            if (num == 1 && wire == 1) memcpy(&wall, &v, 8);
            else if (num == 2 && wire == 0) step = (int64_t)v;
            else if (num == 3 && wire == 2)
                version = v == 13 && !memcmp(b, "brain.Event:2", 13);
            else if (num == 5 && wire == 2) summary(b, b + v, step, path);
            else if (num == 7 && wire == 2) {
                if (v != 2 || b[0] != 0x08 || b[1] != 1) fail("a session log but START", path);
                restart(step);
            } else if (num == 10 && wire == 2) {
                if (!events) continue;
                fail("source metadata after the first event", path);
            } else {
                fail("an event field this writer never writes", path);
            }
        }
        if (!events && !version) fail("the first event is not the file version", path);
        if (wall < 1.5e9 || wall < last_wall) fail("a wall time not now or going back", path);
        last_wall = wall;
        events++;
        free(data);
    }
    fclose(f);
    return events;
}

static uint32_t float_bits(double v)
{
    float f = (float)v;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    return bits;
}

static void read_jsonl(const char *path, int offset, int required)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        if (required) fail("missing", path);
        return;
    }
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        if (!o || !json_is_integer(json_object_get(o, "step"))) fail("a line without a step", path);
        int64_t step = json_integer_value(json_object_get(o, "step")) + offset;
        const char *key;
        json_t *val;
        double v;
        json_object_foreach(o, key, val)
            if (strcmp(key, "step") && pw_metric_get(val, &v) == 1)
                add(&want, &nwant, &capwant, step, key, strlen(key), float_bits(v));
        if (json_array_size(json_object_get(o, "eval/samples"))) /* their table, as text */
            add(&want, &nwant, &capwant, step, "text:eval/samples", 17, 0);
        json_decref(o);
    }
    free(line);
    fclose(f);
}

static int cmp(const void *a, const void *b)
{
    const Scalar *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    int c = strcmp(x->tag, y->tag);
    if (c) return c;
    return x->bits < y->bits ? -1 : x->bits > y->bits;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_events(const struct dirent *d)
{
    return strstr(d->d_name, "tfevents") != NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: tb_check RUN_DIR FILES [--train]\n");
        return 2;
    }
    int train = argc > 3 && !strcmp(argv[3], "--train");
    char dir[1100], path[1400];
    snprintf(dir, sizeof dir, "%s/tensorboard", argv[1]);
    struct dirent **list;
    int n = scandir(dir, &list, is_events, by_name);
    if (n < 0) fail("no TensorBoard folder", dir);
    if (n != atoi(argv[2])) {
        fprintf(stderr, "tb_check: FAIL %s: %d event files, expected %s\n", dir, n, argv[2]);
        return 1;
    }
    int events = 0;
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name);
        events += read_file(path);
        free(list[i]);
    }
    free(list);
    snprintf(path, sizeof path, "%s/metrics.jsonl", argv[1]);
    read_jsonl(path, train ? 0 : 1, 1);
    snprintf(path, sizeof path, "%s/eval.jsonl", argv[1]);
    if (!train) read_jsonl(path, 1, 0);
    qsort(got, ngot, sizeof *got, cmp);
    qsort(want, nwant, sizeof *want, cmp);
    for (size_t i = 0; i < ngot || i < nwant; i++)
        if (i >= ngot || i >= nwant || cmp(&got[i], &want[i])) {
            const Scalar *s = i < nwant ? &want[i] : &got[i];
            fprintf(stderr, "tb_check: FAIL %s: %zu scalars, the JSONL lines %zu; first "
                    "difference: %s at step %lld (%s)\n", dir, ngot, nwant, s->tag,
                    (long long)s->step, i < nwant ? "a JSONL value" : "an event's value");
            return 1;
        }
    printf("tb_check: %s: %d events in %d files, %zu values = the JSONL lines' numbers and "
           "sample tables\n", dir, events, n, ngot);
    return 0;
}
