/* tokenizer_files.c: a Hugging Face tokenizer folder's files copied into a model folder this
 * project writes (include/pw_tokenizer.h, pw_tokenizer_save), as TRL, OpenRLHF and NeMo-Aligner
 * save the tokenizer beside every checkpoint: transformers' AutoTokenizer and vLLM then load the
 * trained model's folder alone. The files are copied byte for byte, never rewritten: what the
 * run read is what the folder gets. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pw_file.h"
#include "pw_safetensors.h"
#include "pw_tokenizer.h"

/* tokenizer.json is required (the tokenizer cannot be without it); the others are copied where
 * the folder has them: the special tokens and options, the older transformers' special-token
 * file, and the chat template newer transformers keep in a file of its own. */
static const char *const files[] = {"tokenizer.json", "tokenizer_config.json",
                                    "special_tokens_map.json", "chat_template.jinja"};

int pw_tokenizer_save(const char *name, const char *dir, PwErr *err)
{
    if (!name || !*name || !strcmp(name, "bytes")) return 0; /* no files: nothing to copy */
    char src[4096], dst[4096];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(src, sizeof src, "%s/%s", name, files[i]);
        struct stat st;
        if (i > 0 && lstat(src, &st) != 0 && errno == ENOENT) continue; /* an optional file */
        size_t len = 0;
        char *buf = pw_file_read(src, PW_FILE_MAX_TOKENIZER, &len, err);
        if (!buf) return -1;
        snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
        int rc = pw_write_file_atomic(dst, buf, len, err);
        free(buf);
        if (rc) return -1;
    }
    return 0;
}
