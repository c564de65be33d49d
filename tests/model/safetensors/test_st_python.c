/* test_st_python.c: files written by Python's safetensors library (the committed GPT-2 fixture)
 * open cleanly, with the names, shapes, dtypes and metadata the fixture script gives them. */
#include <math.h>
#include <stdint.h>

#include "pw_safetensors.h"
#include "pw_test.h"

enum { B = 4, T = 16, V = 96, C = 64, L = 2 };

static PwSafetensors *open_or_fail(const char *dir, const char *file)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    PwSafetensors *st = NULL;
    PwErr err = {{0}};
    CHECK(pw_st_open(&st, path, &err) == 0, "%s", err.msg);
    return st;
}

/* save_pretrained's file: HF names and layout ((in, out) Conv1D weights), no tied lm_head. */
static void test_model_file(const PwSafetensors *st)
{
    CHECK(pw_st_count(st) == 4 + 12 * L, "model file has %d tensors, want %d", pw_st_count(st),
          4 + 12 * L);
    const char *fmt = pw_st_metadata(st, "format");
    CHECK(fmt && strcmp(fmt, "pt") == 0, "metadata format = %s", fmt ? fmt : "(null)");
    CHECK(pw_st_find(st, "lm_head.weight") == NULL, "the tied lm_head should not be stored");
    static float w[4 * C * C];    /* the largest: an MLP weight */
    PwErr err = {{0}};
    CHECK(pw_st_read_f32(st, "transformer.wte.weight", (int64_t[]){V, C}, 2, w, &err) == 0, "%s",
          err.msg);
    CHECK(pw_st_read_f32(st, "transformer.h.1.attn.c_attn.weight", (int64_t[]){C, 3 * C}, 2, w,
                         &err) == 0,
          "%s", err.msg);
    CHECK(pw_st_read_f32(st, "transformer.h.0.mlp.c_proj.weight", (int64_t[]){4 * C, C}, 2, w,
                         &err) == 0,
          "%s", err.msg);
    /* LayerNorm gains were drawn as 1 + N(0, 0.1^2): all near one, not all equal to it. */
    CHECK(pw_st_read_f32(st, "transformer.ln_f.weight", (int64_t[]){C}, 1, w, &err) == 0, "%s",
          err.msg);
    int near = 1, ones = 1;
    for (int i = 0; i < C; i++) {
        near &= fabsf(w[i] - 1.0f) < 0.6f;
        ones &= w[i] == 1.0f;
    }
    CHECK(near && !ones, "ln_f.weight is not 1 + small noise");
}

/* The reference: the batch must be the left-padded one the script describes, and every
 * parameter of the model file must have a gradient of the same shape. */
static void test_reference(const PwSafetensors *ref, const PwSafetensors *model)
{
    int32_t ids[B * T], mask[B * T], pos[B * T], labels[B * T];
    const int64_t bt[2] = {B, T};
    PwErr err = {{0}};
    CHECK(pw_st_read_i32(ref, "input_ids", bt, 2, ids, &err) == 0, "%s", err.msg);
    CHECK(pw_st_read_i32(ref, "attention_mask", bt, 2, mask, &err) == 0, "%s", err.msg);
    CHECK(pw_st_read_i32(ref, "position_ids", bt, 2, pos, &err) == 0, "%s", err.msg);
    CHECK(pw_st_read_i32(ref, "labels", bt, 2, labels, &err) == 0, "%s", err.msg);
    const int pads[B] = {0, 3, 7, 1};
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            int i = b * T + t, real = t >= pads[b];
            CHECK(mask[i] == real, "mask[%d,%d] = %d", b, t, mask[i]);
            CHECK(pos[i] == (real ? t - pads[b] : 0), "position_ids[%d,%d] = %d", b, t, pos[i]);
            /* the first real token of a padded row is predicted from padding: no target */
            int target = real && (t == 0 || mask[i - 1]);
            CHECK(labels[i] == (target ? ids[i] : -100), "labels[%d,%d] = %d", b, t, labels[i]);
            CHECK(ids[i] >= 0 && ids[i] < V, "input_ids[%d,%d] = %d", b, t, ids[i]);
        }
    }
    static float logits[B * T * V];
    CHECK(pw_st_read_f32(ref, "logits", (int64_t[]){B, T, V}, 3, logits, &err) == 0, "%s",
          err.msg);
    float loss = NAN;
    CHECK(pw_st_read_f32(ref, "loss", (int64_t[]){1}, 1, &loss, &err) == 0, "%s", err.msg);
    CHECK(loss > 0.0f && loss < 50.0f, "loss = %g", loss);

    int ngrad = 0;
    for (int i = 0; i < pw_st_count(model); i++) {
        const PwStTensor *p = pw_st_get(model, i);
        char name[512];
        snprintf(name, sizeof name, "grad.%s", p->name);
        const PwStTensor *g = pw_st_find(ref, name);
        CHECK(g && g->dtype == PW_DT_F32 && g->ndim == p->ndim &&
                  memcmp(g->shape, p->shape, sizeof p->shape) == 0,
              "'%s' missing or not shaped like '%s'", name, p->name);
        ngrad += g != NULL;
    }
    CHECK(pw_st_count(ref) == 6 + ngrad, "reference has %d tensors, want %d",
          pw_st_count(ref), 6 + ngrad);
    CHECK(pw_st_metadata(ref, "generator") != NULL, "reference lacks its generator metadata");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FIXTURE_DIR (tests/fixtures/gpt2_tiny)\n", argv[0]);
        return 2;
    }
    PwSafetensors *model = open_or_fail(argv[1], "model/model.safetensors");
    PwSafetensors *ref = open_or_fail(argv[1], "reference.safetensors");
    if (model) test_model_file(model);
    if (model && ref) test_reference(ref, model);
    pw_st_close(model);
    pw_st_close(ref);
    return pw_test_done("test_st_python");
}
