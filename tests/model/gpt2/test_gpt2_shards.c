/* test_gpt2_shards.c: a checkpoint split into shards with model.safetensors.index.json, as
 * Hugging Face publishes large models, loads to the same parameters; each broken index or shard
 * set is refused with a message naming the file and what was expected. Our own saver writes
 * such sets, in float32 or bfloat16, and they load back exactly (both families). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* ---- the saver's shards */

static int exists(const char *path) { return access(path, F_OK) == 0; }

/* Shard files model-*-of-*.safetensors in dir. */
static int count_shards(const char *dir)
{
    int n = 0;
    char leaf[64];
    for (int cnt = 1; cnt <= 64; cnt++)
        for (int i = 1; i <= cnt; i++) {
            snprintf(leaf, sizeof leaf, "model-%05d-of-%05d.safetensors", i, cnt);
            n += exists(path_of(dir, leaf));
        }
    return n;
}

/* The index agrees with the shards: total_size is the sum of the tensor bytes, every tensor is
 * BF16 and in the shard the index says, and no shard holds more than max bytes unless it holds
 * one tensor. Returns the number of shards. */
static int check_index(const char *dir, size_t max, int ntensors)
{
    json_t *ix = json_load_file(path_of(dir, "model.safetensors.index.json"), 0, NULL);
    CHECK(ix != NULL, "%s: no readable index", dir);
    if (!ix) return 0;
    json_t *wm = json_object_get(ix, "weight_map");
    json_int_t total = json_integer_value(json_object_get(json_object_get(ix, "metadata"),
                                                          "total_size"));
    CHECK((int)json_object_size(wm) == ntensors, "the index names %zu tensors, not %d",
          json_object_size(wm), ntensors);
    int nshards = count_shards(dir);
    size_t sum = 0;
    char leaf[64];
    for (int i = 1; i <= nshards; i++) {
        PwSafetensors *st;
        PwErr err;
        snprintf(leaf, sizeof leaf, "model-%05d-of-%05d.safetensors", i, nshards);
        CHECK(pw_st_open(&st, path_of(dir, leaf), &err) == 0, "%s", err.msg);
        if (!st) continue;
        size_t bytes = 0;
        for (int k = 0; k < pw_st_count(st); k++) {
            const PwStTensor *t = pw_st_get(st, k);
            bytes += t->nbytes;
            CHECK(t->dtype == PW_DT_BF16, "%s in %s is %s", t->name, leaf,
                  pw_st_dtype_name(t->dtype));
            const char *f = json_string_value(json_object_get(wm, t->name));
            CHECK(f && !strcmp(f, leaf), "the index puts %s in %s, not %s", t->name,
                  f ? f : "no shard", leaf);
        }
        CHECK(bytes <= max || pw_st_count(st) == 1, "%s holds %zu bytes in %d tensors (max %zu)",
              leaf, bytes, pw_st_count(st), max);
        sum += bytes;
        pw_st_close(st);
    }
    CHECK((size_t)total == sum, "total_size %lld, the shards hold %zu bytes", (long long)total,
          sum);
    json_decref(ix);
    return nshards;
}

/* The parameters loaded from dir equal those of b rounded to bfloat16 (round = 1) or
 * as they are. */
static void expect_params(const char *dir, const PwModelOpts *o, PwModel *b, int round,
                          const char *what)
{
    PwErr err;
    PwModel *a = pw_model_load(dir, o, &err);
    CHECK(a != NULL, "%s: %s", what, err.msg);
    if (!a) return;
    size_t n = pw_model_num_params(b), bad = 0;
    const float *x = pw_model_params(a).data, *y = pw_model_params(b).data;
    for (size_t i = 0; i < n && pw_model_num_params(a) == n; i++) {
        float want = round ? pw_bf16_to_f32(pw_bf16_from_f32(y[i])) : y[i];
        bad += memcmp(&x[i], &want, sizeof want) != 0;
    }
    CHECK(pw_model_num_params(a) == n && bad == 0, "%s: %zu of %zu parameters differ", what, bad,
          n);
    pw_model_free(a);
}

static void saver_shards(const PwArch *arch, const char *name)
{
    PwErr err;
    PwModelOpts o = {.heads = PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE, .maxB = 1, .maxT = 4};
    PwModel *m = pw_model_create(arch, &o, &err);
    CHECK(m != NULL, "%s", err.msg);
    if (!m) return;
    pw_model_init_random(m, 5);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/saved_%s", root, name);
    mkdir(dir, 0755);
    /* a float32 file first: the sharded save must replace it, or the reader would prefer it */
    CHECK(pw_model_save(m, dir, &err) == 0, "%s", err.msg);
    PwSafetensors *st;
    CHECK(pw_st_open(&st, path_of(dir, "model.safetensors"), &err) == 0, "%s", err.msg);
    int ntensors = st ? pw_st_count(st) : 0;
    pw_st_close(st);

    const size_t max = 1024;
    PwSaveOpts so = {.bf16 = 1, .max_shard_bytes = max};
    CHECK(pw_model_save_opts(m, dir, &so, &err) == 0, "%s", err.msg);
    CHECK(!exists(path_of(dir, "model.safetensors")), "%s: model.safetensors left beside shards",
          name);
    int nshards = check_index(dir, max, ntensors);
    CHECK(nshards > 2, "%s: %d shards at %zu bytes", name, nshards, max);
    json_t *cfgj = json_load_file(path_of(dir, "config.json"), 0, NULL);
    const char *dt = json_string_value(json_object_get(cfgj, "torch_dtype"));
    CHECK(dt && !strcmp(dt, "bfloat16"), "%s: config.json torch_dtype %s", name, dt ? dt : "-");
    json_decref(cfgj);
    expect_params(dir, &o, m, 1, "bf16 shards");
    printf("  %-6s bf16, %zu-byte shards: %d shards, %d tensors, loaded exactly rounded\n", name,
           max, nshards, ntensors);

    /* another shard count: the first save's shards go */
    so.max_shard_bytes = 4 * max;
    CHECK(pw_model_save_opts(m, dir, &so, &err) == 0, "%s", err.msg);
    int again = check_index(dir, 4 * max, ntensors);
    CHECK(again > 1 && again < nshards, "%s: %d shards, then %d", name, nshards, again);
    expect_params(dir, &o, m, 1, "bf16 shards, resaved");

    /* one file again (everything fits): index and shards go, float32 loads bit-identically */
    CHECK(pw_model_save(m, dir, &err) == 0, "%s", err.msg);
    CHECK(exists(path_of(dir, "model.safetensors")) &&
              !exists(path_of(dir, "model.safetensors.index.json")) && count_shards(dir) == 0,
          "%s: a single-file save left the sharded set", name);
    expect_params(dir, &o, m, 0, "float32 after shards");
    so.max_shard_bytes = 0;
    CHECK(pw_model_save_opts(m, dir, &so, &err) == 0, "%s", err.msg);
    expect_params(dir, &o, m, 1, "bf16 single file");
    pw_model_free(m);
}

/* Rounding as torch's .to(torch.bfloat16): nearest, ties to even, NaN stays NaN, overflow to
 * infinity. */
static void bf16_rounding(void)
{
    static const uint32_t cases[][2] = {
        {0x3f800000u, 0x3f80}, /* 1 */
        {0x3f808000u, 0x3f80}, /* halfway, down to even */
        {0x3f818000u, 0x3f82}, /* halfway, up to even */
        {0x3f808001u, 0x3f81}, /* above halfway */
        {0xbf7fffffu, 0xbf80}, /* -0.99999994 -> -1 */
        {0x7f7fffffu, 0x7f80}, /* FLT_MAX -> inf */
        {0xff800000u, 0xff80}, /* -inf */
        {0x00000001u, 0x0000}, /* the smallest subnormal -> 0 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float x;
        memcpy(&x, &cases[i][0], 4);
        CHECK(pw_bf16_from_f32(x) == cases[i][1], "bf16(0x%08x) = 0x%04x, want 0x%04x",
              cases[i][0], pw_bf16_from_f32(x), cases[i][1]);
    }
    uint32_t nan_bits = 0x7f800001u; /* a NaN whose payload would round away */
    float nan;
    memcpy(&nan, &nan_bits, 4);
    CHECK(isnan(pw_bf16_to_f32(pw_bf16_from_f32(nan))), "a NaN rounds to a non-NaN");
}

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

    /* ---- our saver: bfloat16, split at a maximum shard size, for both families */
    printf("saved shards:\n");
    bf16_rounding();
    saver_shards(&cfg, "gpt2");
    const PwArch qwen = {.family = PW_FAMILY_LLAMA, .n_layer = 2, .n_head = 4, .n_embd = 16,
                         .vocab_size = 24, .n_positions = 16, .n_kv_head = 2, .n_inner = 40,
                         .norm_eps = 1e-6f, .rope_theta = 1e4, .tied = 1, .qkv_bias = 1,
                         .hf_type = 1};
    saver_shards(&qwen, "qwen2");

    pw_model_free(m);
    return pw_test_done("test_gpt2_shards");
}
