/* tokenizer.c: the byte-level tokenizer, the embedded default's vocabulary (256 bytes and three
 * specials), and the lookup that also loads Hugging Face BPE folders (bpe_load.c) by path. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bpe.h"
#include "pw_file.h"
#include "pw_tokenizer.h"

static int bytes_encode(const PwTokenizer *t, const char *text, size_t len, int *ids, int cap,
                        PwErr *err)
{
    (void)t;
    if (len > (size_t)0x7fffffff) return pw_errf(err, "text of %zu bytes is too long", len);
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len && (int)i < cap; i++) ids[i] = s[i];
    return (int)len;
}

static int bytes_decode(const PwTokenizer *t, const int *ids, int n, char *out, size_t cap)
{
    (void)t;
    size_t need = 0;
    for (int i = 0; i < n; i++) {
        const char *special = NULL;
        char one[2] = {0, 0};
        if (ids[i] >= 0 && ids[i] < 256) {
            one[0] = (char)ids[i];
        } else if (ids[i] == PW_BYTE_EOS) {
            special = "<eos>";
        } else if (ids[i] == PW_BYTE_PAD) {
            special = "<pad>";
        } else if (ids[i] == PW_BYTE_SEP) {
            special = "<sep>";
        } else {
            return -1;
        }
        const char *piece = special ? special : one;
        size_t plen = special ? strlen(special) : 1;
        for (size_t k = 0; k < plen; k++, need++)
            if (cap > 0 && need < cap - 1) out[need] = piece[k];
    }
    if (cap > 0) out[need < cap - 1 ? need : cap - 1] = '\0';
    return (int)need;
}

static const PwTokenizer byte_tokenizer = {
    .name = "bytes",
    .vocab_size = PW_BYTE_VOCAB,
    .eos_id = PW_BYTE_EOS,
    .pad_id = PW_BYTE_PAD,
    .sep_id = PW_BYTE_SEP,
    .bos_id = -1,
    .encode = bytes_encode,
    .decode = bytes_decode,
    .impl = NULL,
};

const PwTokenizer *pw_tokenizer_bytes(void) { return &byte_tokenizer; }

/* Folders loaded so far: callers keep the returned pointer for as long as they run and never
 * free it (as with the static byte tokenizer), so each folder loads once and stays loaded. */
typedef struct Loaded {
    PwBpe *bpe;
    char *path;
    struct Loaded *next;
} Loaded;
static Loaded *loaded;
static pthread_mutex_t loaded_lock = PTHREAD_MUTEX_INITIALIZER;

static const PwTokenizer *load_folder(const char *path, PwErr *err)
{
    pthread_mutex_lock(&loaded_lock);
    const PwTokenizer *t = NULL;
    for (Loaded *l = loaded; l && !t; l = l->next)
        if (!strcmp(l->path, path)) t = &l->bpe->pub;
    if (!t) {
        Loaded *l = calloc(1, sizeof *l);
        if (!l || !(l->path = strdup(path))) {
            pw_errf(err, "out of memory");
        } else if ((l->bpe = pw_bpe_load(path, err))) {
            l->next = loaded;
            loaded = l;
            t = &l->bpe->pub;
            l = NULL;
        }
        if (l) free(l->path);
        free(l);
    }
    pthread_mutex_unlock(&loaded_lock);
    return t;
}

const PwTokenizer *pw_tokenizer_get(const char *name, PwErr *err)
{
    if (name && !strcmp(name, "bytes")) return &byte_tokenizer;
    struct stat st;
    if (!name || !*name || (stat(name, &st) && errno == ENOENT)) {
        pw_errf(err, "unknown tokenizer '%s' (known: bytes, or the path of a Hugging Face "
                "tokenizer folder holding tokenizer.json)", name ? name : "(null)");
        return NULL;
    }
    PwErr e;
    if (pw_dir_check(name, &e)) { /* a loop of links, a file, a device: say which */
        pw_errf(err, "tokenizer %s: name the Hugging Face tokenizer folder that holds "
                "tokenizer.json", e.msg);
        return NULL;
    }
    return load_folder(name, err);
}
