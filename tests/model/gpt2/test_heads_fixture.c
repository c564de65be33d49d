/* test_heads_fixture.c: the proof that our score and value heads are Hugging Face's: load a
 * ForSequenceClassification folder as a reward model (score head) and as a critic made from it
 * (value head = its score), compare scores, values and every parameter gradient with transformers'
 * (fixtures written by tests/fixtures/make_heads_fixture.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pw_kernels.h" /* pw_positions_from_mask */
#include "pw_model.h"
#include "pw_safetensors.h"
#include "pw_test.h"

#define OUT_TOL 1e-5
#define LOSS_TOL 1e-5
#define GRAD_TOL 1e-4

typedef struct Fixture {
    PwSafetensors *ref;
    int B, T;
    int *inp, *mask, *pos;
    float *score, *score_coef, *values, *value_coef, loss, value_loss;
} Fixture;

static int read_tensor(const PwSafetensors *st, const char *name, const int64_t *shape, int ndim,
                       void *dst, int is_int)
{
    PwErr err;
    int rc = is_int ? pw_st_read_i32(st, name, shape, ndim, dst, &err)
                    : pw_st_read_f32(st, name, shape, ndim, dst, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    return rc;
}

static int fixture_read(Fixture *f)
{
    const int B = f->B, T = f->T, BT = B * T;
    int64_t bt[2] = {B, T}, b1[1] = {B}, one[1] = {1};
    f->inp = malloc(BT * sizeof(int)), f->mask = malloc(BT * sizeof(int));
    f->pos = malloc(BT * sizeof(int));
    f->score = malloc(B * sizeof(float)), f->score_coef = malloc(B * sizeof(float));
    f->values = malloc(BT * sizeof(float)), f->value_coef = malloc(BT * sizeof(float));
    return read_tensor(f->ref, "input_ids", bt, 2, f->inp, 1) ||
           read_tensor(f->ref, "attention_mask", bt, 2, f->mask, 1) ||
           read_tensor(f->ref, "position_ids", bt, 2, f->pos, 1) ||
           read_tensor(f->ref, "score", b1, 1, f->score, 0) ||
           read_tensor(f->ref, "score_coef", b1, 1, f->score_coef, 0) ||
           read_tensor(f->ref, "loss", one, 1, &f->loss, 0) ||
           read_tensor(f->ref, "values", bt, 2, f->values, 0) ||
           read_tensor(f->ref, "value_coef", bt, 2, f->value_coef, 0) ||
           read_tensor(f->ref, "value_loss", one, 1, &f->value_loss, 0);
}

/* Largest |ours - ref| over the positions with sel != 0 (all where sel is NULL), relative to the
 * largest |ref| there. */
static double rel_err(const float *a, const float *r, const int *sel, int n, double *maxdiff,
                      double *maxref)
{
    *maxdiff = 0.0, *maxref = 0.0;
    for (int i = 0; i < n; i++) {
        if (sel && !sel[i]) continue;
        if (!isfinite(a[i])) *maxdiff = INFINITY;
        *maxdiff = fmax(*maxdiff, fabs((double)a[i] - r[i]));
        *maxref = fmax(*maxref, fabs((double)r[i]));
    }
    return *maxdiff / fmax(*maxref, 1e-12);
}

/* Every parameter gradient of m against the fixture's `prefix`<Hugging Face name>. Our gradients
 * go through the checkpoint writer (a model whose parameters are the gradients), which puts each
 * one under its Hugging Face name and layout, q/k/v and gate/up split. `head` is our file name of
 * the head's weight, which transformers calls score.weight; the head's bias has no counterpart
 * there (transformers' score Linear has none, our loader reads it as 0), so its gradient is
 * checked against its closed form: the sum of the output gradients `bias_grad`. */
static void check_grads(PwModel *m, int heads, const Fixture *f, const char *prefix,
                        const char *head, const char *bias, double bias_grad, const char *dir)
{
    PwErr err;
    PwModelOpts gopts = {.heads = heads, .maxB = 1, .maxT = 1};
    PwModel *g = pw_model_create(pw_model_arch(m), &gopts, &err);
    CHECK(g != NULL, "%s", err.msg);
    if (!g) return;
    CHECK(pw_model_num_params(g) == pw_model_num_params(m), "gradient model has %zu parameters, "
          "the model %zu", pw_model_num_params(g), pw_model_num_params(m));
    memcpy(pw_model_params(g).data, pw_model_grads(m).data,
           pw_model_num_params(m) * sizeof(float));
    mkdir(dir, 0755);
    PwSafetensors *ours = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (pw_model_save(g, dir, &err) || pw_st_open(&ours, path, &err)) {
        CHECK(0, "%s", err.msg);
        pw_model_free(g);
        return;
    }
    int compared = 0, ref_grads = 0;
    double worst = 0.0;
    const char *worst_name = "";
    const size_t plen = strlen(prefix);
    for (int i = 0; i < pw_st_count(ours); i++) {
        const PwStTensor *t = pw_st_get(ours, i);
        float *a = malloc(t->numel * sizeof(float)), *r = malloc(t->numel * sizeof(float));
        CHECK(pw_st_read_f32(ours, t->name, t->shape, t->ndim, a, &err) == 0, "%s", err.msg);
        if (!strcmp(t->name, bias)) {
            double e = fabs(a[0] - bias_grad) / fmax(fabs(bias_grad), 1e-12);
            printf("  %s: %.8g, sum of the output gradients %.8g, rel err %.3g\n", bias, a[0],
                   bias_grad, e);
            CHECK(e < GRAD_TOL, "%s rel err %.3g", bias, e);
        } else {
            char rname[256];
            snprintf(rname, sizeof rname, "%s%s", prefix,
                     !strcmp(t->name, head) ? "score.weight" : t->name);
            if (pw_st_read_f32(f->ref, rname, t->shape, t->ndim, r, &err)) {
                CHECK(0, "%s", err.msg);
            } else {
                double e = pw_max_rel_err_ff(a, r, (size_t)t->numel, 1e-12);
                CHECK(e < GRAD_TOL, "%s rel err %.3g", rname, e);
                if (e > worst) worst = e, worst_name = t->name;
                compared++;
            }
        }
        free(a);
        free(r);
    }
    /* and the other way: every gradient of the fixture has a counterpart here */
    for (int i = 0; i < pw_st_count(f->ref); i++) {
        const char *n = pw_st_get(f->ref, i)->name;
        if (strncmp(n, prefix, plen)) continue;
        ref_grads++;
        CHECK(pw_st_find(ours, !strcmp(n + plen, "score.weight") ? head : n + plen) != NULL,
              "fixture gradient %s has no counterpart", n);
    }
    printf("  %s gradients: %d tensors compared (fixture has %d), worst rel err %.3g in %s "
           "(tol %g)\n", prefix, compared, ref_grads, worst, worst_name, GRAD_TOL);
    CHECK(compared > 0 && compared == ref_grads, "compared %d of %d gradients", compared,
          ref_grads);
    pw_st_close(ours);
    pw_model_free(g);
}

static PwModel *load(const char *modeldir, int heads, int value_from_score, const Fixture *f)
{
    PwErr err;
    PwModelOpts opts = {.heads = heads, .maxB = f->B, .maxT = f->T,
                        .value_from_score = value_from_score, .seed = 1};
    PwModel *m = pw_model_load(modeldir, &opts, &err);
    CHECK(m != NULL, "load %s: %s", modeldir, err.msg);
    return m;
}

/* The reward model: a score per row at its last real token, and the gradients of
 * loss = sum_b c_b score_b. */
static void score_head(const char *modeldir, const Fixture *f, const char *scratch)
{
    const int B = f->B, T = f->T;
    PwModel *m = load(modeldir, PW_HEAD_SCORE, 0, f);
    if (!m) return;
    PwErr err;
    float *score = calloc(B, sizeof(float));
    PwModelInput in = {f->inp, f->mask, NULL, B, T, 1.0f};
    PwOutputs out = {.col0 = 0, .width = T, .score = score};
    CHECK(pw_model_forward(m, &in, &out, &err) == 0, "forward: %s", err.msg);
    double maxdiff, maxref, loss = 0.0, bias_grad = 0.0;
    double e = rel_err(score, f->score, NULL, B, &maxdiff, &maxref);
    printf("score head:\n  scores:");
    for (int b = 0; b < B; b++) printf(" %.6f (ref %.6f)", score[b], f->score[b]);
    printf("\n  max |diff| %.3g, max |ref| %.3g, rel err %.3g (tol %g)\n", maxdiff, maxref, e,
           OUT_TOL);
    CHECK(e < OUT_TOL, "scores rel err %.3g", e);
    for (int b = 0; b < B; b++) loss += (double)f->score_coef[b] * score[b];
    double le = fabs(loss - f->loss) / fabs(f->loss);
    printf("  loss sum c*score: ours %.8f, reference %.8f, rel err %.3g (tol %g)\n", loss,
           f->loss, le, LOSS_TOL);
    CHECK(le < LOSS_TOL, "score loss rel err %.3g", le);

    CHECK(pw_model_zero_grad(m, &err) == 0, "%s", err.msg);
    PwOutputGrads dout = {.dscore = f->score_coef};
    CHECK(pw_model_backward(m, &dout, &err) == 0, "backward: %s", err.msg);
    for (int b = 0; b < B; b++) bias_grad += f->score_coef[b]; /* every row has a real token */
    check_grads(m, PW_HEAD_SCORE, f, "grad.", "score.weight", "score.bias", bias_grad, scratch);
    free(score);
    pw_model_free(m);
}

/* The critic made from the reward model's folder: a value at every position, and the gradients
 * of loss = sum over real positions of d[b,t] v[b,t]. */
static void value_head(const char *modeldir, const Fixture *f, const char *scratch)
{
    const int B = f->B, T = f->T, BT = B * T;
    PwModel *m = load(modeldir, PW_HEAD_VALUE, 1, f);
    if (!m) return;
    PwErr err;
    float *value = calloc(BT, sizeof(float));
    PwModelInput in = {f->inp, f->mask, NULL, B, T, 1.0f};
    PwOutputs out = {.col0 = 0, .width = T, .value = value};
    CHECK(pw_model_forward(m, &in, &out, &err) == 0, "forward: %s", err.msg);
    double maxdiff, maxref, loss = 0.0, bias_grad = 0.0;
    double e = rel_err(value, f->values, f->mask, BT, &maxdiff, &maxref);
    printf("value head (critic from the score folder):\n  values at real positions: max |diff| "
           "%.3g, max |ref| %.3g, rel err %.3g (tol %g)\n", maxdiff, maxref, e, OUT_TOL);
    CHECK(e < OUT_TOL, "values rel err %.3g", e);
    for (int i = 0; i < BT; i++) {
        if (!f->mask[i]) {
            CHECK(f->value_coef[i] == 0.0f, "value coefficient %d at padding is not 0", i);
            continue;
        }
        loss += (double)f->value_coef[i] * value[i];
        bias_grad += f->value_coef[i];
    }
    double le = fabs(loss - f->value_loss) / fabs(f->value_loss);
    printf("  loss sum d*v: ours %.8f, reference %.8f, rel err %.3g (tol %g)\n", loss,
           f->value_loss, le, LOSS_TOL);
    CHECK(le < LOSS_TOL, "value loss rel err %.3g", le);

    CHECK(pw_model_zero_grad(m, &err) == 0, "%s", err.msg);
    PwOutputGrads dout = {.dvalue = f->value_coef};
    CHECK(pw_model_backward(m, &dout, &err) == 0, "backward: %s", err.msg);
    check_grads(m, PW_HEAD_VALUE, f, "vgrad.", "value_head.weight", "value_head.bias", bias_grad,
                scratch);
    free(value);
    pw_model_free(m);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FIXTURE_DIR [SCRATCH_DIR]\n", argv[0]);
        return 2;
    }
    char path[4200], modeldir[4096], scratch[4096], gdir[4200];
    snprintf(modeldir, sizeof modeldir, "%s/model", argv[1]);
    snprintf(path, sizeof path, "%s/reference.safetensors", argv[1]);
    snprintf(scratch, sizeof scratch, "%s", argc > 2 ? argv[2] : ".");
    struct stat sb;
    if (stat(path, &sb) != 0) {
        printf("no fixture at %s: skipped\n", path);
        return PW_SKIP_CODE;
    }
    PwErr err;
    Fixture f = {0};
    if (pw_st_open(&f.ref, path, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const PwStTensor *ti = pw_st_find(f.ref, "input_ids");
    if (!ti || ti->ndim != 2) {
        fprintf(stderr, "%s: input_ids (B,T) missing\n", path);
        return 1;
    }
    f.B = (int)ti->shape[0], f.T = (int)ti->shape[1];
    if (fixture_read(&f)) return 1;
    printf("fixture %s: B=%d T=%d\n", argv[1], f.B, f.T);

    /* the positions the model computes from the mask are the fixture's position_ids */
    int *pos = malloc(f.B * f.T * sizeof(int)), pos_ok = 1;
    pw_positions_from_mask(pos, f.mask, f.B, f.T);
    for (int i = 0; i < f.B * f.T; i++)
        if (f.mask[i]) pos_ok &= pos[i] == f.pos[i];
    CHECK(pos_ok, "positions from the mask differ from the fixture's position_ids");

    mkdir(scratch, 0755);
    snprintf(gdir, sizeof gdir, "%s/score_grads", scratch);
    score_head(modeldir, &f, gdir);
    snprintf(gdir, sizeof gdir, "%s/value_grads", scratch);
    value_head(modeldir, &f, gdir);

    pw_st_close(f.ref);
    free(pos), free(f.inp), free(f.mask), free(f.pos), free(f.score), free(f.score_coef);
    free(f.values), free(f.value_coef);
    return pw_test_done("test_heads_fixture");
}
