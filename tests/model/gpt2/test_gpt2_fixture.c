/* test_gpt2_fixture.c: the proof that a family of ours is Hugging Face's (GPT-2, Llama, Qwen2):
 * load a fixture's model/, compare logits, loss and every parameter gradient with transformers'. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pw_kernels.h" /* pw_positions_from_mask */
#include "pw_model.h"
#include "pw_safetensors.h"
#include "pw_test.h"

#define LOGITS_TOL 1e-5
#define LOSS_TOL 1e-5
#define GRAD_TOL 1e-4

static int read_i32_2d(const PwSafetensors *st, const char *name, int B, int T, int *dst)
{
    PwErr err;
    int64_t shape[2] = {B, T};
    if (pw_st_read_i32(st, name, shape, 2, dst, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
        return 2;
    }
    char path[4200], modeldir[4096];
    snprintf(modeldir, sizeof modeldir, "%s/model", argv[1]);
    snprintf(path, sizeof path, "%s/reference.safetensors", argv[1]);
    struct stat sb;
    if (stat(path, &sb) != 0) {
        printf("no fixture at %s: skipped\n", path);
        return PW_SKIP_CODE;
    }
    PwErr err;
    PwSafetensors *ref = NULL;
    if (pw_st_open(&ref, path, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const PwStTensor *ti = pw_st_find(ref, "input_ids");
    if (!ti || ti->ndim != 2) {
        fprintf(stderr, "%s: input_ids (B,T) missing\n", path);
        return 1;
    }
    const int B = (int)ti->shape[0], T = (int)ti->shape[1];

    PwModelOpts opts = {.heads = PW_HEAD_LM, .maxB = B, .maxT = T};
    PwModel *m = pw_model_load(modeldir, &opts, &err);
    if (!m) {
        fprintf(stderr, "load: %s\n", err.msg);
        return 1;
    }
    const PwArch *arch = pw_model_arch(m);
    const int V = arch->vocab_size, BT = B * T;
    printf("fixture: L=%d NH=%d C=%d V=%d, B=%d T=%d, %zu parameters\n", arch->n_layer,
           arch->n_head, arch->n_embd, V, B, T, pw_model_num_params(m));

    int *inp = malloc(BT * sizeof(int)), *mask = malloc(BT * sizeof(int));
    int *posref = malloc(BT * sizeof(int)), *labels = malloc(BT * sizeof(int));
    int *targets = malloc(BT * sizeof(int)), *ours = malloc(BT * sizeof(int));
    float *logits_ref = malloc((size_t)BT * V * sizeof(float)), loss_ref;
    float *w = malloc(BT * sizeof(float)), *logp = malloc(BT * sizeof(float));
    float *logits = malloc((size_t)BT * V * sizeof(float));
    int *pos = malloc(BT * sizeof(int));
    if (read_i32_2d(ref, "input_ids", B, T, inp) || read_i32_2d(ref, "attention_mask", B, T, mask) ||
        read_i32_2d(ref, "position_ids", B, T, posref) || read_i32_2d(ref, "labels", B, T, labels))
        return 1;
    int64_t lshape[3] = {B, T, V}, one = 1;
    if (pw_st_read_f32(ref, "logits", lshape, 3, logits_ref, &err) ||
        pw_st_read_f32(ref, "loss", &one, 1, &loss_ref, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }

    /* Hugging Face shifts labels: logits at t predict labels at t+1 */
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            targets[b * T + t] = (t + 1 < T && labels[b * T + t + 1] >= 0) ? labels[b * T + t + 1]
                                                                            : -1;
    /* those must be exactly the next-token targets of the real tokens (a target read from a
     * padding position would compare hidden states that padding leaves undefined) */
    pw_lm_next_token_targets(ours, inp, mask, B, T);
    int same = 1;
    for (int i = 0; i < BT; i++) same &= ours[i] == targets[i];
    CHECK(same, "the fixture's shifted labels are not the next-token targets of real positions: "
                "a label at the first real token of a left-padded row is predicted from a "
                "padding position, whose hidden state a fully masked attention row leaves to "
                "each implementation; the fixture should set it to -100");

    /* ---- forward: positions and logits at real tokens */
    PwModelInput in = {inp, mask, targets, B, T, 1.0f};
    PwOutputs out = {.col0 = 0, .width = T, .logp = logp, .logits = logits};
    if (pw_model_forward(m, &in, &out, &err)) {
        fprintf(stderr, "forward: %s\n", err.msg);
        return 1;
    }
    pw_positions_from_mask(pos, mask, B, T); /* what the model computes its positions with */
    int pos_ok = 1;
    for (int i = 0; i < BT; i++)
        if (mask[i]) pos_ok &= pos[i] == posref[i];
    CHECK(pos_ok, "positions from the mask differ from the fixture's position_ids");
    double maxdiff = 0.0, maxref = 0.0;
    for (int i = 0; i < BT; i++) {
        if (!mask[i]) continue;
        for (int v = 0; v < V; v++) {
            double a = logits[(size_t)i * V + v], r = logits_ref[(size_t)i * V + v];
            if (!isfinite(a)) maxdiff = INFINITY;
            maxdiff = fmax(maxdiff, fabs(a - r));
            maxref = fmax(maxref, fabs(r));
        }
    }
    double logits_err = maxdiff / fmax(maxref, 1e-12);
    printf("logits at real positions: max |diff| %.3g, max |ref| %.3g, rel err %.3g (tol %g)\n",
           maxdiff, maxref, logits_err, LOGITS_TOL);
    CHECK(logits_err < LOGITS_TOL, "logits rel err %.3g", logits_err);

    /* ---- loss: mean cross-entropy over the real next-token targets */
    int count = pw_lm_mean_weights(w, targets, BT);
    double loss = pw_lm_loss(logp, w, targets, BT);
    double loss_err = fabs(loss - loss_ref) / fabs(loss_ref);
    printf("loss: ours %.8f, reference %.8f over %d targets, rel err %.3g (tol %g)\n", loss,
           loss_ref, count, loss_err, LOSS_TOL);
    CHECK(loss_err < LOSS_TOL, "loss rel err %.3g", loss_err);

    /* ---- backward: every parameter gradient. Our gradients go through the checkpoint writer
     * (a model whose parameters are the gradients), which puts each one under its Hugging Face
     * name in Hugging Face's layout, transposes included. */
    CHECK(pw_model_zero_grad(m, &err) == 0, "%s", err.msg);
    for (int i = 0; i < BT; i++) logp[i] = -w[i]; /* d loss / d logp */
    PwOutputGrads dout = {.dlogp = logp};
    CHECK(pw_model_backward(m, &dout, &err) == 0, "%s", err.msg);
    PwModelOpts gopts = {.heads = PW_HEAD_LM, .maxB = 1, .maxT = 1};
    PwModel *g = pw_model_create(arch, &gopts, &err);
    memcpy(pw_model_params(g).data, pw_model_grads(m).data,
           pw_model_num_params(m) * sizeof(float));
    char gdir[4000];
    if (argc > 2) mkdir(argv[2], 0755);
    snprintf(gdir, sizeof gdir, "%s/grads", argc > 2 ? argv[2] : ".");
    mkdir(gdir, 0755);
    if (pw_model_save(g, gdir, &err)) {
        fprintf(stderr, "save: %s\n", err.msg);
        return 1;
    }
    PwSafetensors *ours_st = NULL;
    snprintf(path, sizeof path, "%s/model.safetensors", gdir);
    if (pw_st_open(&ours_st, path, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int compared = 0;
    double worst = 0.0;
    const char *worst_name = "";
    for (int i = 0; i < pw_st_count(ours_st); i++) {
        const PwStTensor *t = pw_st_get(ours_st, i);
        char rname[256];
        snprintf(rname, sizeof rname, "grad.%s", t->name);
        float *a = malloc(t->numel * sizeof(float)), *r = malloc(t->numel * sizeof(float));
        if (pw_st_read_f32(ours_st, t->name, t->shape, t->ndim, a, &err) ||
            pw_st_read_f32(ref, rname, t->shape, t->ndim, r, &err)) {
            CHECK(0, "%s", err.msg);
        } else {
            double e = pw_max_rel_err_ff(a, r, (size_t)t->numel, 1e-12);
            CHECK(e < GRAD_TOL, "%s rel err %.3g", rname, e);
            if (e > worst) {
                worst = e;
                worst_name = t->name;
            }
            compared++;
        }
        free(a);
        free(r);
    }
    /* and the other way: every gradient of the fixture has a counterpart here */
    int ref_grads = 0;
    for (int i = 0; i < pw_st_count(ref); i++) {
        const char *n = pw_st_get(ref, i)->name;
        if (strncmp(n, "grad.", 5)) continue;
        ref_grads++;
        if (!strcmp(n, "grad.lm_head.weight")) continue; /* tied: it is wte's gradient */
        CHECK(pw_st_find(ours_st, n + 5) != NULL, "fixture gradient %s has no counterpart", n);
    }
    printf("gradients: %d tensors compared (fixture has %d), worst rel err %.3g in %s (tol %g)\n",
           compared, ref_grads, worst, worst_name, GRAD_TOL);
    CHECK(compared > 0 && compared >= ref_grads - 1, "compared %d of %d gradients", compared,
          ref_grads);

    pw_st_close(ours_st);
    pw_st_close(ref);
    pw_model_free(g);
    pw_model_free(m);
    free(inp), free(mask), free(posref), free(labels), free(targets), free(ours);
    free(logits_ref), free(w), free(logp), free(logits), free(pos);
    return pw_test_done("test_gpt2_fixture");
}
