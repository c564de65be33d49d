/* st_set.c: a model's weights as Hugging Face publishes them: one model.safetensors, or shards
 * named by model.safetensors.index.json; every file mapped and validated once, tensors by name.
 * And the writer of such a set, in float32 or bfloat16, split at a maximum shard size. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_file.h"
#include "pw_model.h" /* PW_WEIGHT_LIMIT: what a weight may hold */
#include "pw_safetensors.h"

/* Shards of the largest published models number in the hundreds; more is a broken index. */
#define PW_ST_MAX_SHARDS 4096

struct PwStSet {
    char *label;            /* the file messages name: model.safetensors or the index */
    int nfiles;
    PwSafetensors **files;  /* the shards, in the order the index first names them */
    int nmap;               /* sharded: weight_map entries, sorted by name */
    char **map_name;
    int *map_file;
};

void pw_st_set_close(PwStSet *s)
{
    if (!s) return;
    for (int i = 0; i < s->nfiles; i++) pw_st_close(s->files[i]);
    for (int i = 0; i < s->nmap; i++) free(s->map_name[i]);
    free(s->files);
    free(s->map_name);
    free(s->map_file);
    free(s->label);
    free(s);
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* A shard is a file name next to the index: no folder part, so an index cannot point outside
 * the checkpoint's folder. */
static int plain_name(const char *s)
{
    return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

typedef struct MapEntry {
    const char *name;
    int file;
} MapEntry;

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const MapEntry *)a)->name, ((const MapEntry *)b)->name);
}

static int open_sharded(PwStSet *s, const char *dir, const char *index, PwErr *err)
{
    json_t *root = pw_file_json(index, PW_FILE_MAX_JSON, JSON_REJECT_DUPLICATES, err);
    if (!root) return -1;
    int rc = -1;
    MapEntry *entries = NULL;
    const char **shard = NULL;
    json_t *wm = json_is_object(root) ? json_object_get(root, "weight_map") : NULL;
    if (!json_is_object(wm) || json_object_size(wm) == 0) {
        pw_errf(err, "%s: expected an object with a non-empty \"weight_map\" of tensor name -> "
                "shard file", index);
        goto done;
    }
    size_t n = json_object_size(wm);
    entries = calloc(n, sizeof *entries);
    shard = calloc(n, sizeof *shard);
    if (!entries || !shard) {
        pw_errf(err, "%s: out of memory", index);
        goto done;
    }
    const char *key;
    json_t *val;
    int nshards = 0;
    size_t k = 0;
    json_object_foreach(wm, key, val) {
        const char *f = json_string_value(val);
        if (!f || !plain_name(f)) {
            pw_errf(err, "%s: weight_map[\"%s\"] must be the file name of a shard in the same "
                    "folder", index, key);
            goto done;
        }
        int id = -1;
        for (int i = 0; i < nshards && id < 0; i++)
            if (!strcmp(shard[i], f)) id = i;
        if (id < 0) {
            if (nshards == PW_ST_MAX_SHARDS) {
                pw_errf(err, "%s: more than %d shards", index, PW_ST_MAX_SHARDS);
                goto done;
            }
            id = nshards;
            shard[nshards++] = f;
        }
        entries[k++] = (MapEntry){key, id};
    }
    if (!(s->files = calloc((size_t)nshards, sizeof *s->files))) {
        pw_errf(err, "%s: out of memory", index);
        goto done;
    }
    for (int i = 0; i < nshards; i++, s->nfiles++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, shard[i]);
        if (!exists(path)) {
            pw_errf(err, "%s: shard \"%s\" named by the index is missing (%s)", index, shard[i],
                    strerror(errno));
            goto done;
        }
        if (pw_st_open(&s->files[i], path, err)) goto done;
    }
    qsort(entries, n, sizeof *entries, entry_cmp);
    s->map_name = calloc(n, sizeof *s->map_name);
    s->map_file = calloc(n, sizeof *s->map_file);
    if (!s->map_name || !s->map_file) {
        pw_errf(err, "%s: out of memory", index);
        goto done;
    }
    for (size_t i = 0; i < n; i++, s->nmap++) {
        const PwSafetensors *f = s->files[entries[i].file];
        if (!pw_st_find(f, entries[i].name)) {
            pw_errf(err, "%s: the index puts tensor \"%s\" in %s, which has no such tensor",
                    index, entries[i].name, pw_st_path(f));
            goto done;
        }
        if (!(s->map_name[i] = strdup(entries[i].name))) {
            pw_errf(err, "%s: out of memory", index);
            goto done;
        }
        s->map_file[i] = entries[i].file;
    }
    rc = 0;
done:
    free(entries);
    free(shard); /* the names point into root, which goes now */
    json_decref(root);
    return rc;
}

int pw_st_set_open(PwStSet **out, const char *dir, PwErr *err)
{
    *out = NULL;
    char single[4096], index[4096];
    snprintf(single, sizeof single, "%s/model.safetensors", dir);
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
    PwStSet *s = calloc(1, sizeof *s);
    int sharded = !exists(single) && exists(index);
    if (!s || !(s->label = strdup(sharded ? index : single))) {
        free(s);
        return pw_errf(err, "%s: out of memory", dir);
    }
    int rc;
    if (sharded) {
        rc = open_sharded(s, dir, index, err);
    } else {
        rc = (s->files = calloc(1, sizeof *s->files)) ? pw_st_open(&s->files[0], single, err)
                                                       : pw_errf(err, "%s: out of memory", dir);
        if (!rc) s->nfiles = 1;
    }
    if (rc) {
        pw_st_set_close(s);
        return -1;
    }
    *out = s;
    return 0;
}

const char *pw_st_set_label(const PwStSet *s) { return s->label; }
int pw_st_set_nfiles(const PwStSet *s) { return s->nfiles; }
const PwSafetensors *pw_st_set_file(const PwStSet *s, int i) { return s->files[i]; }

const PwStTensor *pw_st_set_find(const PwStSet *s, const char *name,
                                 const PwSafetensors **file)
{
    const PwSafetensors *f = s->files[0];
    if (s->nmap) { /* sharded: the index says where */
        int lo = 0, hi = s->nmap - 1, at = -1;
        while (lo <= hi && at < 0) {
            int mid = (lo + hi) / 2, c = strcmp(name, s->map_name[mid]);
            if (c == 0) at = mid;
            else if (c < 0) hi = mid - 1;
            else lo = mid + 1;
        }
        if (at < 0) return NULL;
        f = s->files[s->map_file[at]];
    }
    if (file) *file = f;
    return pw_st_find(f, name);
}

static void shape_text(char *buf, size_t n, const int64_t *shape, int ndim)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

int pw_st_set_read_f32(const PwStSet *s, const char *name, const int64_t *shape, int ndim,
                       float *dst, PwErr *err)
{
    const PwSafetensors *f = NULL;
    const PwStTensor *t = pw_st_set_find(s, name, &f);
    if (!t) return pw_errf(err, "%s: tensor \"%s\" is missing", s->label, name);
    int ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = t->shape[i] == shape[i];
    if (!ok) {
        char got[128], want[128];
        shape_text(got, sizeof got, t->shape, t->ndim);
        shape_text(want, sizeof want, shape, ndim);
        return pw_errf(err, "%s: tensor \"%s\" has shape %s but config.json implies %s",
                       pw_st_path(f), name, got, want);
    }
    if (pw_st_read_f32_once(f, name, shape, ndim, dst, err)) return -1;
    /* After the conversion, so that an F16 or BF16 infinity and a value F64 rounds to an
     * infinity are seen as what the model would compute with. */
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    size_t at = pw_weights_first_bad(dst, n);
    if (at == n) return 0;
    char v[64];
    return pw_errf(err, "%s: tensor \"%s\" element %zu is %s (a weight must be finite and at "
                   "most %g in magnitude)", pw_st_path(f), name, at,
                   pw_weight_describe(dst[at], v, sizeof v), PW_WEIGHT_LIMIT);
}

/* ------------------------------------------------------------------------------------------ */
/* writing a set */

/* "model-00001-of-00003.safetensors" -> 1 and 3; 0 for any other name. */
static int shard_name(const char *s, int *index, int *count)
{
    int a, b, len = 0;
    if (sscanf(s, "model-%5d-of-%5d.safetensors%n", &a, &b, &len) != 2 || len != 32 ||
        s[len] != '\0')
        return 0;
    *index = a;
    *count = b;
    return 1;
}

/* Remove what a reader could take for the set just written: model.safetensors (which the
 * reader prefers) after a sharded save, the index after a single file, and shard files that
 * are not the nshards just written (shards of an earlier save with another count). */
static int remove_stale(const char *dir, int nshards, PwErr *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir,
             nshards > 1 ? "model.safetensors" : "model.safetensors.index.json");
    if (unlink(path) != 0 && errno != ENOENT)
        return pw_errf(err, "%s: cannot remove it after writing the new weights: %s", path,
                       strerror(errno));
    DIR *d = opendir(dir);
    if (!d) return pw_errf(err, "%s: cannot list the folder: %s", dir, strerror(errno));
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        int i, cnt;
        if (!shard_name(e->d_name, &i, &cnt) || (nshards > 1 && cnt == nshards && i >= 1 &&
                                                 i <= nshards))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0 && errno != ENOENT)
            rc = pw_errf(err, "%s: cannot remove this shard of an earlier save: %s", path,
                         strerror(errno));
    }
    closedir(d);
    return rc;
}

/* Bytes tensor t takes stored as dtype, or 0 with *bad set if the shape is unusable (the
 * writer then names the tensor). */
static size_t stored_bytes(const PwStWriteTensor *t, PwDType dtype, int *bad)
{
    size_t n = pw_st_dtype_size(dtype);
    if (!n || t->ndim < 0 || t->ndim > PW_ST_MAX_NDIM) *bad = 1;
    for (int d = 0; !*bad && d < t->ndim; d++) {
        if (t->shape[d] < 0 || (t->shape[d] && n > SIZE_MAX / (size_t)t->shape[d])) *bad = 1;
        else n *= (size_t)t->shape[d];
    }
    return *bad ? 0 : n;
}

/* One shard: the tensors with shard[i] == s, float32 ones converted to bfloat16 into a buffer
 * of this shard only when dtype says so. */
static int write_shard(const char *path, const PwStWriteTensor *t, int n, const int *shard, int s,
                       const size_t *size, PwDType dtype, const char *const *kv, PwErr *err)
{
    int k = 0;
    size_t convert = 0;
    for (int i = 0; i < n; i++)
        if (shard[i] == s) {
            k++;
            if (t[i].dtype == PW_DT_F32 && dtype == PW_DT_BF16) convert += size[i];
        }
    PwStWriteTensor *w = calloc((size_t)k + 1, sizeof *w);
    uint16_t *buf = convert ? malloc(convert) : NULL;
    if (!w || (convert && !buf)) {
        free(w);
        return pw_errf(err, "%s: out of memory for %zu bytes of bfloat16", path, convert);
    }
    uint16_t *p = buf;
    k = 0;
    for (int i = 0; i < n; i++) {
        if (shard[i] != s) continue;
        w[k] = t[i];
        if (t[i].dtype == PW_DT_F32 && dtype == PW_DT_BF16) {
            const float *src = t[i].data;
            size_t numel = size[i] / 2;
            for (size_t j = 0; j < numel; j++) p[j] = pw_bf16_from_f32(src[j]);
            w[k].data = p;
            w[k].dtype = PW_DT_BF16;
            p += numel;
        }
        k++;
    }
    int rc = pw_st_write(path, w, k, kv, err);
    free(buf);
    free(w);
    return rc;
}

int pw_st_set_write(const char *dir, const PwStWriteTensor *t, int n,
                    const char *const *metadata_kv, const PwStSetWriteOpts *o, PwErr *err)
{
    PwStSetWriteOpts def = {0};
    if (!o) o = &def;
    if (o->dtype != PW_DT_F32 && o->dtype != PW_DT_BF16)
        return pw_errf(err, "%s: weights can be written as F32 or BF16, not %s", dir,
                       pw_st_dtype_name(o->dtype));
    if (n < 0) return pw_errf(err, "%s: negative tensor count %d", dir, n);
    size_t *size = calloc((size_t)n + 1, sizeof *size);
    int *shard = calloc((size_t)n + 1, sizeof *shard);
    json_t *wm = NULL;
    int rc = -1, nshards = 1;
    if (!size || !shard) {
        pw_errf(err, "%s: out of memory", dir);
        goto done;
    }
    /* A shard is closed when the next tensor would take it past the limit; a tensor larger
     * than the limit is alone in its shard. */
    size_t used = 0, total = 0, max = o->max_shard_bytes;
    int cur = max ? -1 : 0;
    nshards = max ? 0 : 1;
    for (int i = 0; i < n; i++) {
        int bad = 0;
        size[i] = stored_bytes(&t[i], t[i].dtype == PW_DT_F32 ? o->dtype : t[i].dtype, &bad);
        if (bad || !t[i].name) {
            pw_errf(err, "%s: tensor %d (%s): no name, or a bad dtype, ndim or shape", dir, i,
                    t[i].name ? t[i].name : "no name");
            goto done;
        }
        total += size[i];
        if (max && (cur < 0 || used + size[i] > max)) {
            cur = nshards++;
            used = 0;
        }
        shard[i] = cur;
        used += size[i];
        if (max && size[i] > max) cur = -1;
    }
    if (nshards == 0) nshards = 1; /* no tensors: one empty file */
    if (nshards > 99999) {
        pw_errf(err, "%s: %d shards; the names have room for 99999", dir, nshards);
        goto done;
    }
    /* the index first, so that a name given twice (pw_st_write sees one shard only) is
     * refused before any file changes */
    wm = json_object();
    for (int i = 0; i < n && nshards > 1; i++) {
        char leaf[64];
        snprintf(leaf, sizeof leaf, "model-%05d-of-%05d.safetensors", shard[i] + 1, nshards);
        if (json_object_get(wm, t[i].name)) {
            pw_errf(err, "%s: tensor '%s' given twice", dir, t[i].name);
            goto done;
        }
        if (json_object_set_new(wm, t[i].name, json_string(leaf))) {
            pw_errf(err, "%s: tensor '%s': cannot add it to the index", dir, t[i].name);
            goto done;
        }
    }
    char path[4096];
    for (int s = 0; s < nshards; s++) {
        if (nshards == 1) snprintf(path, sizeof path, "%s/model.safetensors", dir);
        else
            snprintf(path, sizeof path, "%s/model-%05d-of-%05d.safetensors", dir, s + 1,
                     nshards);
        if (write_shard(path, t, n, shard, s, size, o->dtype, metadata_kv, err)) goto done;
    }
    if (nshards > 1) {
        /* as transformers writes it: keys sorted, two-space indent */
        json_t *index = json_pack("{s:{s:I}, s:O}", "metadata", "total_size", (json_int_t)total,
                                  "weight_map", wm);
        char *text = index ? json_dumps(index, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
        json_decref(index);
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        if (!text) {
            pw_errf(err, "%s: cannot build the index", path);
            goto done;
        }
        rc = pw_file_write(path, text, strlen(text), err);
        free(text);
        if (rc) goto done;
        rc = -1;
    }
    rc = remove_stale(dir, nshards, err);
done:
    json_decref(wm);
    free(size);
    free(shard);
    return rc;
}
