/* folder_files.c: the files a model folder this project writes carries besides its weights and
 * config.json, copied from the folders the run read, as TRL, OpenRLHF and NeMo-Aligner save them
 * beside every checkpoint, so that transformers and vLLM load the trained folder alone and
 * generate as from the model it started from:
 *   - the tokenizer's files (pw_tokenizer_save, include/pw_tokenizer.h);
 *   - the starting model's generation_config.json (pw_model_generation_config,
 *     include/pw_model.h): its stop tokens (Llama 3 Instruct stops on <|eot_id|> through it) and
 *     sampling defaults, which generate() reads before config.json's ids (those config.json
 *     carries as the folder read had them: pw_arch_write_ids); for a model that started without
 *     one, one made of the tokenizer's bos, eos and pad ids, so it stops all the same.
 * Files are copied byte for byte, never rewritten: what the run read is what the folder gets. */
#include <jansson.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pw_file.h"
#include "pw_model.h"
#include "pw_safetensors.h"
#include "pw_tokenizer.h"

/* Copies src_dir/name into dst_dir/name, written atomically: 0. An optional file that src_dir
 * does not have at all is no error: 1, nothing written (anything else at the name is read, or
 * refused, by pw_file). -1 with `err` on failure. */
static int copy_file(const char *src_dir, const char *dst_dir, const char *name, int required,
                     PwErr *err)
{
    char src[4096], dst[4096];
    snprintf(src, sizeof src, "%s/%s", src_dir, name);
    struct stat st;
    if (!required && lstat(src, &st) != 0 && errno == ENOENT) return 1;
    size_t len = 0;
    char *buf = pw_file_read(src, PW_FILE_MAX_TOKENIZER, &len, err);
    if (!buf) return -1;
    snprintf(dst, sizeof dst, "%s/%s", dst_dir, name);
    int rc = pw_file_write(dst, buf, len, err);
    free(buf);
    return rc;
}

/* tokenizer.json is required (the tokenizer cannot be without it); the others are copied where
 * the folder has them: the special tokens and options, the older transformers' special-token
 * file, and the chat template newer transformers keep in a file of its own. */
static const char *const tokenizer_files[] = {"tokenizer.json", "tokenizer_config.json",
                                              "special_tokens_map.json", "chat_template.jinja"};

int pw_tokenizer_save(const char *name, const char *dir, PwErr *err)
{
    if (!name || !*name || !strcmp(name, "bytes")) return 0; /* no files: nothing to copy */
    for (size_t i = 0; i < sizeof tokenizer_files / sizeof *tokenizer_files; i++)
        if (copy_file(name, dir, tokenizer_files[i], i == 0, err) < 0) return -1;
    return 0;
}

/* generation_config.json from the tokenizer's special ids, keys sorted as transformers writes
 * them; nothing for a tokenizer without an EOS, or the byte tokenizer (no Hugging Face model
 * generates over it). */
static int write_from_tokenizer(const char *tokenizer, const char *dst_dir, PwErr *err)
{
    if (!tokenizer || !*tokenizer || !strcmp(tokenizer, "bytes")) return 0;
    const PwTokenizer *t = pw_tokenizer_get(tokenizer, err);
    if (!t) return -1;
    if (t->eos_id < 0) return 0;
    json_t *o = json_object();
    if (t->bos_id >= 0) json_object_set_new(o, "bos_token_id", json_integer(t->bos_id));
    json_object_set_new(o, "eos_token_id", json_integer(t->eos_id));
    if (t->pad_id >= 0) json_object_set_new(o, "pad_token_id", json_integer(t->pad_id));
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!text) return pw_errf(err, "%s: out of memory", dst_dir);
    char dst[4096];
    snprintf(dst, sizeof dst, "%s/generation_config.json", dst_dir);
    size_t n = strlen(text);
    text[n] = '\n'; /* json_dumps leaves room for its NUL: the newline takes it */
    int rc = pw_file_write(dst, text, n + 1, err);
    free(text);
    return rc;
}

int pw_model_generation_config(const char *src_dir, const char *tokenizer, const char *dst_dir,
                               PwErr *err)
{
    if (!src_dir || !*src_dir) return write_from_tokenizer(tokenizer, dst_dir, err);
    if (!strcmp(src_dir, dst_dir)) return 0; /* its own file stays as it is */
    int rc = copy_file(src_dir, dst_dir, "generation_config.json", 0, err);
    return rc == 1 ? write_from_tokenizer(tokenizer, dst_dir, err) : rc;
}
