/* test_optim_shard.c: the optimiser's share (ZeRO stage 1, docs/model.md). Models that each keep
 * the moments of one share of the parameters, stepped on the same gradients and put together
 * after each step as an all-gather would, must hold the weights and moments of one model that
 * keeps all of them, bit for bit; their moments, written as one file, must be that model's file
 * byte for byte (also written a few floats at a time from the shares, as a role's rank 0 writes
 * them while it gathers, where a NaN is refused and the file kept), and load back as each
 * share. Shares cut through tensors (a decayed one next to
 * one that is not), one share is empty, and the vocabulary is padded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_model.h"
#include "pw_test.h"

enum { B = 2, T = 4, NSTEPS = 6 };
/* V = 37 padded to 40: the padding rows are in the parameters but not in the files */
static const PwArch cfg = {.family = PW_FAMILY_GPT2, .n_layer = 2, .n_head = 2, .n_embd = 16,
                           .vocab_size = 37, .n_positions = 8};

/* A source of the whole moments for pw_model_optimizer_write_from that reads every piece from
 * the share that holds each float (pw_model_optimizer_get_part), as the role's gather does, and
 * counts the pieces; `poison` (>= 0): that float of adam_v reads as NaN. */
typedef struct Pieces {
    PwModel **share;
    const size_t *cut;
    int n, calls;
    size_t largest;
    long poison;
} Pieces;

static void from_shares(void *ctx, int which, size_t off, size_t n, float *dst)
{
    Pieces *p = ctx;
    PwErr err;
    p->calls++;
    p->largest = n > p->largest ? n : p->largest;
    for (int k = 0; k < p->n; k++) {
        size_t a = off > p->cut[k] ? off : p->cut[k];
        size_t b = off + n < p->cut[k + 1] ? off + n : p->cut[k + 1];
        if (a < b)
            CHECK(pw_model_optimizer_get_part(p->share[k], which, a, b - a, dst + (a - off),
                                              &err) == 0, "%s", err.msg);
    }
    if (which == 1 && p->poison >= 0 && (size_t)p->poison >= off &&
        (size_t)p->poison < off + n)
        dst[(size_t)p->poison - off] = NAN;
}

static PwModel *make(void)
{
    PwErr err;
    PwModelOpts o = {.heads = PW_HEAD_LM | PW_HEAD_VALUE, .maxB = B, .maxT = T,
                     .vocab_multiple = 8};
    PwModel *m = pw_model_create(&cfg, &o, &err);
    if (!m) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    pw_model_init_random(m, 5);
    return m;
}

/* The gradient of step s: the same on every model, as after the all-reduce; large on the odd
 * steps, so that those are clipped and the even ones are not. */
static void set_grads(PwModel *m, int s)
{
    PwErr err;
    CHECK(pw_model_zero_grad(m, &err) == 0, "%s", err.msg);
    float *g = pw_model_grads(m).data;
    size_t n = pw_model_num_params(m);
    double scale = s % 2 ? 1.0 : 1e-4;
    for (size_t i = 0; i < n; i++) g[i] = (float)(scale * sin(0.37 * (double)i + 1.3 * s));
}

static void read_file(const char *path, char **buf, long *n)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) exit(1);
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    rewind(f);
    *buf = malloc((size_t)*n);
    CHECK(fread(*buf, 1, (size_t)*n, f) == (size_t)*n, "cannot read %s", path);
    fclose(f);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    PwErr err;
    PwModel *whole = make();
    const size_t P = pw_model_num_params(whole);
    /* four shares: cuts inside tensors (wte's padded rows, a layer's weights), one empty */
    enum { N = 4 };
    size_t cut[N + 1] = {0, 301, P / 2 + 7, P, P};
    PwModel *share[N];
    for (int k = 0; k < N; k++) {
        share[k] = make();
        CHECK(pw_model_optimizer_shard(share[k], cut[k], cut[k + 1], &err) == 0, "%s", err.msg);
        size_t lo, hi;
        pw_model_optimizer_range(share[k], &lo, &hi);
        CHECK(lo == cut[k] && hi == cut[k + 1], "share %d: range [%zu, %zu)", k, lo, hi);
    }
    /* refusals: a range outside the parameters */
    PwModel *bad = make();
    CHECK(pw_model_optimizer_shard(bad, 10, P + 1, &err) == -1 && strstr(err.msg, "not a range"),
          "a range past the end: %s", err.msg);
    CHECK(pw_model_optimizer_shard(bad, 20, 10, &err) == -1, "a reversed range accepted");

    PwAdamWConfig opt = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.1f, .grad_clip = 1.0f};
    float *gathered = malloc(P * sizeof(float));
    for (int s = 1; s <= NSTEPS; s++) {
        double nw = 0.0;
        set_grads(whole, s);
        CHECK(pw_model_adamw_step(whole, &opt, s, &nw, &err) == PW_ADAMW_APPLIED, "whole step");
        for (int k = 0; k < N; k++) {
            double ns = 0.0;
            set_grads(share[k], s);
            CHECK(pw_model_adamw_step(share[k], &opt, s, &ns, &err) == PW_ADAMW_APPLIED,
                  "share %d step %d: %s", k, s, err.msg);
            CHECK(ns == nw, "share %d step %d: norm %.9g, the whole's %.9g", k, s, ns, nw);
            const float *p = pw_model_params(share[k]).data;
            memcpy(gathered + cut[k], p + cut[k], (cut[k + 1] - cut[k]) * sizeof(float));
        }
        for (int k = 0; k < N; k++) /* the all-gather */
            memcpy(pw_model_params(share[k]).data, gathered, P * sizeof(float));
        const float *pw = pw_model_params(whole).data;
        size_t first = P;
        for (size_t i = 0; i < P && first == P; i++)
            if (memcmp(&pw[i], &gathered[i], sizeof(float))) first = i;
        CHECK(first == P, "step %d: float %zu of the shares' weights is %.9g, the whole's %.9g",
              s, first, first < P ? gathered[first] : 0.0, first < P ? pw[first] : 0.0);
    }
    printf("%d steps, %zu parameters in shares of %zu, %zu, %zu and %zu: the weights are the "
           "whole's bit for bit\n", NSTEPS, P, cut[1] - cut[0], cut[2] - cut[1], cut[3] - cut[2],
           cut[4] - cut[3]);

    /* the moments: the shares put together are the whole's */
    float *wm = malloc(P * sizeof(float)), *wv = malloc(P * sizeof(float));
    float *gm = malloc(P * sizeof(float)), *gv = malloc(P * sizeof(float));
    CHECK(pw_model_optimizer_get(whole, wm, wv, &err) == 0, "%s", err.msg);
    for (int k = 0; k < N; k++)
        CHECK(pw_model_optimizer_get(share[k], gm + cut[k], gv + cut[k], &err) == 0, "%s",
              err.msg);
    CHECK(!memcmp(wm, gm, P * sizeof(float)) && !memcmp(wv, gv, P * sizeof(float)),
          "the shares' moments differ from the whole's");

    /* one file from the shares; a share alone refuses to write it */
    char pw_path[1024], ps_path[1024], no_path[1024];
    snprintf(pw_path, sizeof pw_path, "%s/shard_whole.safetensors", dir);
    snprintf(ps_path, sizeof ps_path, "%s/shard_parts.safetensors", dir);
    snprintf(no_path, sizeof no_path, "%s/shard_refused.safetensors", dir);
    remove(no_path);
    CHECK(pw_model_optimizer_save(whole, pw_path, &err) == 0, "%s", err.msg);
    CHECK(pw_model_optimizer_write(share[0], ps_path, gm, gv, &err) == 0, "%s", err.msg);
    CHECK(pw_model_optimizer_save(share[1], no_path, &err) == -1 && strstr(err.msg, "a share") &&
              strstr(err.msg, no_path),
          "a share saved alone: %s", err.msg);
    FILE *f = fopen(no_path, "rb");
    CHECK(f == NULL, "a refused save left %s", no_path);
    if (f) fclose(f);
    char *a, *b;
    long na, nb;
    read_file(pw_path, &a, &na);
    read_file(ps_path, &b, &nb);
    CHECK(na == nb && !memcmp(a, b, (size_t)na), "the shares' file (%ld bytes) is not the "
          "whole's (%ld bytes)", nb, na);
    free(a);
    free(b);

    /* written as the pieces come, 7 floats at most, each from the shares that hold it: the
     * same file; the other ranks' calls (no path) ask for the same pieces */
    char pp_path[1024];
    snprintf(pp_path, sizeof pp_path, "%s/shard_pieces.safetensors", dir);
    size_t keep = pw_model_stream_floats;
    pw_model_stream_floats = 7;
    Pieces pc = {share, cut, N, 0, 0, -1};
    CHECK(pw_model_optimizer_write_from(share[2], pp_path, from_shares, &pc, &err) == 0, "%s",
          err.msg);
    int calls = pc.calls;
    read_file(pw_path, &a, &na);
    read_file(pp_path, &b, &nb);
    CHECK(na == nb && !memcmp(a, b, (size_t)na) && pc.largest == 7,
          "the file written in pieces (%ld bytes, pieces up to %zu floats) is not the whole's",
          nb, pc.largest);
    free(b);
    pc.calls = 0;
    CHECK(pw_model_optimizer_write_from(share[3], NULL, from_shares, &pc, &err) == 0 &&
              pc.calls == calls, "no path: %d pieces asked for, %d with one", pc.calls, calls);
    /* a NaN in adam_v's element 40: refused, named, the file as it was, every piece asked for */
    pc = (Pieces){share, cut, N, 0, 0, 0};
    size_t x40 = 0; /* the flat float that is file element 40 (the padding rows skipped) */
    for (int i = 0, seen = 0; i < pw_model_num_tensors(whole); i++) {
        size_t off, cnt;
        pw_model_tensor_info(whole, i, &off, &cnt);
        if (seen + (long)cnt > 40) {
            x40 = off + (size_t)(40 - seen);
            break;
        }
        seen += (int)cnt;
    }
    pc.poison = (long)x40;
    CHECK(pw_model_optimizer_write_from(share[0], pp_path, from_shares, &pc, &err) == -1 &&
              strstr(err.msg, "adam_v element 40 is NaN") && strstr(err.msg, "not saved") &&
              pc.calls == calls, "a NaN moment in pieces: '%s' (%d pieces of %d)", err.msg,
          pc.calls, calls);
    read_file(pp_path, &b, &nb);
    CHECK(na == nb && !memcmp(a, b, (size_t)na), "a refused file changed what was there");
    free(a);
    free(b);
    pw_model_stream_floats = keep;
    printf("moments written in %d pieces of at most 7 floats, from the shares: the whole's file "
           "byte for byte; a NaN refused, the file kept\n", calls);

    /* the shares' moments made after the first step: setting a share is refused now */
    CHECK(pw_model_optimizer_shard(share[1], 0, P, &err) == -1 &&
              strstr(err.msg, "before its moments exist"),
          "a share changed after the first step: %s", err.msg);

    /* load: each fresh share keeps its part of what a whole model loads (the file has no
     * padding rows: they load as 0) */
    PwModel *lw = make();
    CHECK(pw_model_optimizer_load(lw, pw_path, &err) == 0, "%s", err.msg);
    CHECK(pw_model_optimizer_get(lw, wm, wv, &err) == 0, "%s", err.msg);
    pw_model_free(lw);
    for (int k = 0; k < N; k++) {
        PwModel *m = make();
        CHECK(pw_model_optimizer_shard(m, cut[k], cut[k + 1], &err) == 0, "%s", err.msg);
        CHECK(pw_model_optimizer_load(m, pw_path, &err) == 0, "%s", err.msg);
        size_t n = cut[k + 1] - cut[k];
        float *lm = malloc((n ? n : 1) * sizeof(float)), *lv = malloc((n ? n : 1) * sizeof(float));
        CHECK(pw_model_optimizer_get(m, lm, lv, &err) == 0, "%s", err.msg);
        CHECK(!memcmp(lm, wm + cut[k], n * sizeof(float)) &&
                  !memcmp(lv, wv + cut[k], n * sizeof(float)),
              "share %d: the loaded moments differ from the file's", k);
        free(lm);
        free(lv);
        pw_model_free(m);
    }
    /* a model without a step has no moments to give */
    CHECK(pw_model_optimizer_get(bad, gm, gv, &err) == -1 && strstr(err.msg, "no AdamW moments"),
          "moments of a model that never stepped: %s", err.msg);
    remove(pw_path);
    remove(ps_path);
    free(gathered);
    free(wm);
    free(wv);
    free(gm);
    free(gv);
    for (int k = 0; k < N; k++) pw_model_free(share[k]);
    pw_model_free(bad);
    pw_model_free(whole);
    return pw_test_done("test_optim_shard");
}
