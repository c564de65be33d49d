/* st_set.c: a model's weights as Hugging Face publishes them: one model.safetensors, or shards
 * named by model.safetensors.index.json; every file mapped and validated once, tensors by name. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    if (pw_st_read_f32(f, name, shape, ndim, dst, err)) return -1;
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
