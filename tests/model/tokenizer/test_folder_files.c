/* test_folder_files: what a saved model folder carries besides its weights (folder_files.c).
 * pw_tokenizer_save copies a Hugging Face tokenizer folder's files into a model folder byte for
 * byte (tokenizer.json always; tokenizer_config.json, special_tokens_map.json and
 * chat_template.jinja where the folder has them, nothing else), writes nothing for the byte
 * tokenizer, replaces what a folder held before, and names the file when it cannot;
 * pw_model_generation_config copies generation_config.json where the starting folder has one and
 * otherwise writes the tokenizer's ids. Argument: the fixtures folder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_model.h"
#include "pw_test.h"
#include "pw_tokenizer.h"

static int exists(const char *dir, const char *name)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

/* dir/name holds exactly the bytes of src/name */
static int same(const char *src, const char *dir, const char *name)
{
    char a[1200], b[1200];
    snprintf(a, sizeof a, "%s/%s", src, name);
    snprintf(b, sizeof b, "%s/%s", dir, name);
    size_t na = 0, nb = 0;
    char *x = pw_test_slurp(a, &na), *y = pw_test_slurp(b, &nb);
    int ok = x && y && na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return ok;
}

static void put(const char *dir, const char *name, const char *text)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_tokenizer_files FIXTURES\n");
        return 2;
    }
    char base[] = "/tmp/pw_tokfiles_XXXXXX";
    if (!mkdtemp(base)) return 2;
    char fix[1200], out[1200], src[1200], cmd_dir[1300];
    snprintf(fix, sizeof fix, "%s/bpe_llama3", argv[1]);
    PwErr err;

    /* the fixture folder: tokenizer.json and tokenizer_config.json, nothing else of the list */
    snprintf(out, sizeof out, "%s/a", base);
    mkdir(out, 0755);
    put(out, "tokenizer.json", "an older file, replaced");
    CHECK(pw_tokenizer_save(fix, out, &err) == 0, "%s", err.msg);
    CHECK(same(fix, out, "tokenizer.json") && same(fix, out, "tokenizer_config.json"),
          "the two files, byte for byte");
    CHECK(!exists(out, "special_tokens_map.json") && !exists(out, "chat_template.jinja") &&
              !exists(out, "heldout_ids.u16"),
          "only the tokenizer's files");

    /* a folder with the two optional files too */
    snprintf(src, sizeof src, "%s/src", base);
    mkdir(src, 0755);
    put(src, "tokenizer.json", "{\"model\": {}}\n");
    put(src, "special_tokens_map.json", "{\"eos_token\": \"<|im_end|>\"}\n");
    put(src, "chat_template.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}\n");
    snprintf(out, sizeof out, "%s/b", base);
    mkdir(out, 0755);
    CHECK(pw_tokenizer_save(src, out, &err) == 0, "%s", err.msg);
    CHECK(same(src, out, "tokenizer.json") && same(src, out, "special_tokens_map.json") &&
              same(src, out, "chat_template.jinja") && !exists(out, "tokenizer_config.json"),
          "tokenizer.json and the optional files the folder has");

    /* the byte tokenizer, or none: nothing written */
    snprintf(out, sizeof out, "%s/c", base);
    mkdir(out, 0755);
    CHECK(pw_tokenizer_save("bytes", out, &err) == 0 && pw_tokenizer_save("", out, &err) == 0 &&
              pw_tokenizer_save(NULL, out, &err) == 0 && !exists(out, "tokenizer.json"),
          "bytes writes no file");

    /* errors name the file */
    snprintf(src, sizeof src, "%s/nothing", base);
    CHECK(pw_tokenizer_save(src, out, &err) == -1 &&
              strstr(err.msg, "nothing/tokenizer.json: does not exist"), "%s", err.msg);
    snprintf(src, sizeof src, "%s/src", base);
    snprintf(out, sizeof out, "%s/no/such/folder", base);
    CHECK(pw_tokenizer_save(src, out, &err) == -1 && strstr(err.msg, "no/such/folder"), "%s",
          err.msg);

    /* generation_config.json: the starting folder's, byte for byte, whatever the tokenizer */
    snprintf(src, sizeof src, "%s/src", base);
    put(src, "generation_config.json", "{\"eos_token_id\": [128001, 128009], \"top_p\": 0.9}\n");
    snprintf(out, sizeof out, "%s/d", base);
    mkdir(out, 0755);
    CHECK(pw_model_generation_config(src, fix, out, &err) == 0, "%s", err.msg);
    CHECK(same(src, out, "generation_config.json"), "generation_config.json byte for byte");
    CHECK(pw_model_generation_config(src, fix, src, &err) == 0 &&
              same(src, out, "generation_config.json"), "a folder onto itself: left as it is");
    /* none to copy: the tokenizer's ids (the Llama 3-style fixture: <|begin_of_text|> 4,
     * <|endoftext|> 0, <|pad|> 1; the NFC one has no BOS), keys sorted as transformers writes */
    snprintf(out, sizeof out, "%s/e", base);
    mkdir(out, 0755);
    CHECK(pw_model_generation_config(NULL, fix, out, &err) == 0, "%s", err.msg);
    snprintf(cmd_dir, sizeof cmd_dir, "%s/generation_config.json", out);
    char *text = pw_test_slurp(cmd_dir, NULL);
    CHECK(text && !strcmp(text, "{\n  \"bos_token_id\": 4,\n  \"eos_token_id\": 0,\n"
                                "  \"pad_token_id\": 1\n}\n"), "from the tokenizer: %s", text);
    free(text);
    char nfc[1300];
    snprintf(nfc, sizeof nfc, "%s/bpe_nfc", argv[1]);
    CHECK(pw_model_generation_config(fix, nfc, out, &err) == 0, "%s", err.msg); /* fix has none */
    text = pw_test_slurp(cmd_dir, NULL);
    CHECK(text && !strcmp(text, "{\n  \"eos_token_id\": 0,\n  \"pad_token_id\": 1\n}\n"),
          "no BOS: %s", text);
    free(text);
    /* nothing without a tokenizer folder (bytes, none) and no file to copy */
    snprintf(out, sizeof out, "%s/f", base);
    mkdir(out, 0755);
    CHECK(pw_model_generation_config(NULL, "bytes", out, &err) == 0 &&
              pw_model_generation_config("", NULL, out, &err) == 0 &&
              !exists(out, "generation_config.json"),
          "nothing for bytes or no tokenizer");
    /* something that is not a file at the name is refused, named */
    snprintf(src, sizeof src, "%s/dirgen", base);
    mkdir(src, 0755);
    snprintf(cmd_dir, sizeof cmd_dir, "%s/generation_config.json", src);
    mkdir(cmd_dir, 0755);
    CHECK(pw_model_generation_config(src, fix, out, &err) == -1 &&
              strstr(err.msg, "dirgen/generation_config.json: is a directory"), "%s", err.msg);

    char cmd[1300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
    return pw_test_done("folder_files");
}
