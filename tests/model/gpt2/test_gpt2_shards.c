/* test_gpt2_shards.c: a checkpoint split into shards with model.safetensors.index.json, as
 * Hugging Face publishes large models, loads to the same parameters; each broken index or shard
 * set is refused with a message naming the file and what was expected. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pw_model.h"
#include "pw_safetensors.h"
#include "pw_test.h"

static const PwArch cfg = {.family = PW_FAMILY_GPT2, .n_layer = 2, .n_head = 2, .n_embd = 16,
                           .vocab_size = 24, .n_positions = 16};
static const PwModelOpts opts = {.heads = PW_HEAD_LM | PW_HEAD_SCORE, .maxB = 1, .maxT = 4};
static const char *root;
static const char *const shard_names[2] = {"model-00001-of-00002.safetensors",
                                           "model-00002-of-00002.safetensors"};

static char *path_of(const char *dir, const char *leaf)
{
    static char buf[4][4200];
    static int k = 0;
    char *p = buf[k++ % 4];
    snprintf(p, 4200, "%s/%s", dir, leaf);
    return p;
}

static void copy_config(const char *from, const char *to)
{
    json_t *j = json_load_file(path_of(from, "config.json"), 0, NULL);
    CHECK(j && json_dump_file(j, path_of(to, "config.json"), 0) == 0, "copy config.json");
    json_decref(j);
}

/* dir/shards: the tensors of the single file in two shards (even and odd positions), and an
 * index. `edit` may change the index's weight_map before it is written. */
static const char *split(const char *single, const char *name, void (*edit)(json_t *wm))
{
    static char dir[8][4096];
    static int k = 0;
    char *d = dir[k++ % 8];
    snprintf(d, 4096, "%s/%s", root, name);
    mkdir(d, 0755);
    PwErr err;
    PwSafetensors *st;
    CHECK(pw_st_open(&st, path_of(single, "model.safetensors"), &err) == 0, "%s", err.msg);
    int n = pw_st_count(st), cnt[2] = {0, 0};
    PwStWriteTensor *wt[2] = {calloc(n, sizeof **wt), calloc(n, sizeof **wt)};
    json_t *wm = json_object();
    for (int i = 0; i < n; i++) {
        const PwStTensor *t = pw_st_get(st, i);
        PwStWriteTensor *w = &wt[i % 2][cnt[i % 2]++];
        *w = (PwStWriteTensor){.name = t->name, .ndim = t->ndim, .data = t->data,
                               .dtype = t->dtype};
        memcpy(w->shape, t->shape, sizeof t->shape);
        json_object_set_new(wm, t->name, json_string(shard_names[i % 2]));
    }
    for (int s = 0; s < 2; s++)
        CHECK(pw_st_write(path_of(d, shard_names[s]), wt[s], cnt[s], NULL, &err) == 0, "%s",
              err.msg);
    if (edit) edit(wm);
    json_t *index = json_pack("{s:{s:i}, s:o}", "metadata", "total_size", 0, "weight_map", wm);
    CHECK(json_dump_file(index, path_of(d, "model.safetensors.index.json"), JSON_INDENT(2)) == 0,
          "write the index");
    json_decref(index);
    copy_config(single, d);
    free(wt[0]);
    free(wt[1]);
    pw_st_close(st);
    return d;
}

static void expect_error(const char *dir, const char *want, const char *what)
{
    PwErr err = {{0}};
    PwModel *m = pw_model_load(dir, &opts, &err);
    CHECK(!m, "%s: loaded", what);
    pw_model_free(m);
    CHECK(strstr(err.msg, want) != NULL, "%s: message \"%s\" should say %s", what, err.msg, want);
    printf("  %-34s -> %s\n", what, err.msg);
}

static void wrong_shard(json_t *wm)
{
    json_object_set_new(wm, "transformer.wte.weight", json_string(shard_names[1]));
}
static void outside(json_t *wm)
{
    json_object_set_new(wm, "transformer.wpe.weight", json_string("../model.safetensors"));
}
static void dropped(json_t *wm) { json_object_del(wm, "transformer.h.1.ln_2.bias"); }

int main(int argc, char **argv)
{
    root = argc > 1 ? argv[1] : ".";
    PwErr err;
    PwModel *m = pw_model_create(&cfg, &opts, &err);
    CHECK(m != NULL, "%s", err.msg);
    pw_model_init_random(m, 3);
    char single[4096];
    snprintf(single, sizeof single, "%s/shards_single", root);
    mkdir(single, 0755);
    CHECK(pw_model_save(m, single, &err) == 0, "%s", err.msg);

    /* ---- two shards load to exactly the parameters of the one file */
    const char *d = split(single, "shards_ok", NULL);
    PwModel *l = pw_model_load(d, &opts, &err);
    CHECK(l != NULL, "sharded load: %s", err.msg);
    if (l) {
        size_t n = pw_model_num_params(m);
        CHECK(pw_model_num_params(l) == n &&
                  !memcmp(pw_model_params(l).data, pw_model_params(m).data, n * sizeof(float)),
              "the sharded checkpoint loads other parameters");
        pw_model_free(l);
    }

    /* ---- broken sets */
    printf("sharded checkpoint errors:\n");
    d = split(single, "shards_missing", NULL);
    remove(path_of(d, shard_names[1]));
    expect_error(d, "shard \"model-00002-of-00002.safetensors\" named by the index is missing",
                 "a shard missing");
    d = split(single, "shards_wrong", wrong_shard);
    expect_error(d, "the index puts tensor \"transformer.wte.weight\" in", "a tensor in no shard");
    d = split(single, "shards_outside", outside);
    expect_error(d, "weight_map[\"transformer.wpe.weight\"] must be the file name of a shard in "
                    "the same folder", "a shard outside the folder");
    d = split(single, "shards_dropped", dropped);
    expect_error(d, "model.safetensors.index.json: tensor \"transformer.h.1.ln_2.bias\" is missing",
                 "a tensor the index lacks");
    d = split(single, "shards_bad_json", NULL);
    FILE *f = fopen(path_of(d, "model.safetensors.index.json"), "w");
    fputs("{\"weight_map\": {\"a\": \"b\",}\n", f);
    fclose(f);
    expect_error(d, "model.safetensors.index.json:1:", "malformed index JSON");
    f = fopen(path_of(d, "model.safetensors.index.json"), "w");
    fputs("{\"weight_map\": {\"a\": \"b\", \"a\": \"c\"}}\n", f);
    fclose(f);
    expect_error(d, "duplicate object key", "a tensor named twice");
    f = fopen(path_of(d, "model.safetensors.index.json"), "w");
    fputs("{\"metadata\": {}}\n", f);
    fclose(f);
    expect_error(d, "non-empty \"weight_map\"", "no weight_map");

    pw_model_free(m);
    return pw_test_done("test_gpt2_shards");
}
