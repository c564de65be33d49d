/* test_grad_shard.c: the gradients split over the ranks of a role (optim.zero_stage 2;
 * docs/model.md, Gradients in shares). Four models, one a rank, each with a share of the
 * optimiser (cuts inside tensors, one share empty) and its gradients split, run the backwards of
 * their own rows; their reductions are done here as the role's ranks would do them (each rank's
 * buffers, recorded by a first identical backward, summed in rank order). Each share's summed
 * gradient must equal the sum of the gradients one model that keeps everything computes for the
 * four ranks' rows, bit for bit, over two micro batches (one rank with no rows in the second),
 * and the update the whole's, bit for bit; the norm is the sum of the shares' squares. For GPT-2
 * (tied LM head, padded vocabulary) and the Llama family (an LM head of its own, grouped-query,
 * biases; and tied: the embedding takes the head's gradient at the start of the backward, so it
 * keeps a buffer of its own), at fp32 and at bf16 (where the float32 master weights split too),
 * and with activation checkpointing (the layers made again between the reductions).
 * The calls such a model refuses say so, and a payload of weights_out takes the gradients' place
 * until the next zero_grad. Without room (the CPU table capped) the master weights' split, the
 * gradients' share and the payload each say what found none. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_ops.h"
#include "pw_test.h"
#include "tiny_archs.h"

enum { N = 4, B = 2, T = 8, MB = 2, NSTEPS = 2, MAXCALLS = 16 };

/* The ranks' side of the reductions: a first backward of every rank records its buffers (and
 * zeroes them, so that its share gets nothing); the second sums the recorded ones. */
typedef struct World {
    int recording;
    float *rec[N][MAXCALLS];
    size_t len[MAXCALLS];
    double v[N]; /* the sum's recorded values */
    int calls_per_backward;
} World;

typedef struct Rank {
    World *w;
    int k, calls;
} Rank;

static void reduce(void *ctx, float *buf, const int64_t *starts)
{
    Rank *r = ctx;
    World *w = r->w;
    const int c = r->calls++;
    const size_t n = (size_t)starts[N];
    CHECK(c < MAXCALLS && starts[0] == 0, "call %d: blocks from %lld", c, (long long)starts[0]);
    if (c >= MAXCALLS) return;
    if (w->recording) {
        free(w->rec[r->k][c]);
        w->rec[r->k][c] = malloc((n ? n : 1) * sizeof(float));
        memcpy(w->rec[r->k][c], buf, n * sizeof(float));
        memset(buf, 0, n * sizeof(float));
        w->len[c] = n;
        return;
    }
    CHECK(w->len[c] == n, "rank %d call %d: a buffer of %zu floats, recorded %zu", r->k, c, n,
          w->len[c]);
    for (size_t x = (size_t)starts[r->k]; x < (size_t)starts[r->k + 1]; x++) {
        float s = w->rec[0][c][x];
        for (int j = 1; j < N; j++) s += w->rec[j][c][x];
        buf[x] = s;
    }
}

static double sum(void *ctx, double v)
{
    Rank *r = ctx;
    World *w = r->w;
    if (w->recording) return w->v[r->k] = v;
    double s = w->v[0];
    for (int j = 1; j < N; j++) s += w->v[j];
    return s;
}

static PwModelOpts opts(PwPrecision p)
{
    return (PwModelOpts){.heads = PW_HEAD_LM | PW_HEAD_VALUE, .maxB = B, .maxT = T,
                         .precision = p, .vocab_multiple = 8};
}

/* forward of rank k's rows of step s, micro batch u, and the backward of a loss of them */
static void pass(PwModel *m, const PwArch *a, int s, int u, int k)
{
    PwErr err;
    int tok[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = (i * 7 + 3 * s + 5 * u + 11 * k) % a->vocab_size;
    pw_lm_next_token_targets(tgt, tok, NULL, B, T);
    float lv[2 * B * T], ent[B * T], dlogp[B * T], dval[B * T];
    for (int i = 0; i < B * T; i++) {
        dlogp[i] = 0.05f * (float)((i + s + k) % 5) - 0.1f;
        dval[i] = 0.01f * (float)((i + u) % 3);
    }
    PwModelInput in = {tok, NULL, tgt, B, T, 1.0f};
    PwOutputs out = {0, T, lv, ent, lv + B * T, NULL, NULL};
    PwOutputGrads g = {.dlogp = dlogp, .dvalue = dval};
    CHECK(pw_model_forward(m, &in, &out, &err) == 0 && pw_model_backward(m, &g, &err) == 0,
          "pass: %s", err.msg);
}

/* rank k has no rows in the last micro batch of the last step */
static int idle(int s, int u, int k) { return s == NSTEPS && u == MB - 1 && k == N - 1; }

/* every rank's block of the weights to every rank, as the role's all-gather does */
static void allgather(PwModel **share, const size_t *cut, PwPrecision p, size_t P)
{
    if (p == PW_PRECISION_FP32) {
        float *all = malloc(P * sizeof *all);
        for (int k = 0; k < N; k++)
            memcpy(all + cut[k], (float *)pw_model_params(share[k]).data + cut[k],
                   (cut[k + 1] - cut[k]) * sizeof *all);
        for (int k = 0; k < N; k++) memcpy(pw_model_params(share[k]).data, all, P * sizeof *all);
        free(all);
        return;
    }
    size_t K = (size_t)pw_model_kept(share[0]).shape[0];
    uint16_t *g16 = malloc(P * sizeof *g16);
    float *gk = malloc((K ? K : 1) * sizeof *gk);
    for (int k = 0; k < N; k++) {
        size_t k0 = cut[k] - pw_model_master_before(share[k], cut[k]);
        size_t k1 = cut[k + 1] - pw_model_master_before(share[k], cut[k + 1]);
        memcpy(g16 + cut[k], (uint16_t *)pw_model_mirror(share[k]).data + cut[k],
               (cut[k + 1] - cut[k]) * sizeof *g16);
        memcpy(gk + k0, (float *)pw_model_kept(share[k]).data + k0, (k1 - k0) * sizeof *gk);
    }
    for (int k = 0; k < N; k++) {
        memcpy(pw_model_mirror(share[k]).data, g16, P * sizeof *g16);
        memcpy(pw_model_kept(share[k]).data, gk, K * sizeof *gk);
    }
    free(g16);
    free(gk);
}

static void refusals(const PwArch *a)
{
    PwErr err;
    PwModelOpts o = opts(PW_PRECISION_BF16);
    World w = {0};
    Rank r = {&w, 0, 0};
    PwGradSplit fn = {reduce, sum, NULL, &r};
    PwModel *m = tiny_model(a, &o, 7);
    const size_t P = pw_model_num_params(m);
    int64_t sh[3] = {0, (int64_t)(P / 2), (int64_t)P};
    CHECK(pw_model_grads_split(m, sh, 2, 0, &fn, &err) == -1 &&
              strstr(err.msg, "is not the optimiser's share"),
          "a block that is not the share: '%s'", err.msg);
    CHECK(pw_model_optimizer_shard(m, 0, P / 2, &err) == 0, "%s", err.msg);
    int64_t short_sh[3] = {0, (int64_t)(P / 2), (int64_t)P - 1};
    CHECK(pw_model_grads_split(m, short_sh, 2, 0, &fn, &err) == -1 &&
              strstr(err.msg, "not the model's"),
          "blocks short of the parameters: '%s'", err.msg);
    CHECK(pw_model_backward_idle(m, &err) == -1 && strstr(err.msg, "not split"),
          "idle backward of a model not split: '%s'", err.msg);
    CHECK(pw_model_grads_split(m, sh, 2, 0, &fn, &err) == 0, "%s", err.msg);
    CHECK(pw_model_grads_are_split(m), "the gradients are not split");
    CHECK(pw_model_grads_split(m, sh, 2, 0, &fn, &err) == -1 && strstr(err.msg, "split once"),
          "split twice: '%s'", err.msg);
    float h[1];
    CHECK(pw_model_grads_get(m, h, &err) == -1 && strstr(err.msg, "no backward"),
          "the share before a backward: '%s'", err.msg);
    CHECK(pw_model_report_grads(m, NULL, NULL, &err) == -1 &&
              strstr(err.msg, "pw_model_backward_idle"),
          "reports of split gradients: '%s'", err.msg);
    pw_model_free(m);

    PwModel *made = tiny_model(a, &o, 7);
    CHECK(pw_model_optimizer_shard(made, 0, P / 2, &err) == 0 &&
              pw_model_zero_grad(made, &err) == 0, "%s", err.msg);
    CHECK(pw_model_grads_split(made, sh, 2, 0, &fn, &err) == -1 &&
              strstr(err.msg, "before they exist"),
          "split after the gradients were made: '%s'", err.msg);
    pw_model_free(made);

    PwModelOpts fo = o;
    fo.frozen = 1;
    fo.acts = PW_ACTS_NONE;
    PwModel *frozen = tiny_model(a, &fo, 7);
    CHECK(pw_model_grads_split(frozen, sh, 2, 0, &fn, &err) == -1 &&
              strstr(err.msg, "trained model"),
          "a frozen model's gradients: '%s'", err.msg);
    pw_model_free(frozen);
    printf("  refusals: a block not the share, blocks short, split twice or late, a frozen "
           "model, reports, the share before a backward\n");
}

/* the reductions of a rank whose others add nothing, for any number of ranks */
static void own_only(void *ctx, float *buf, const int64_t *starts)
{
    (void)ctx, (void)buf, (void)starts;
}
static double own_sum(void *ctx, double v) { return (void)ctx, v; }

/* Without room (the CPU table capped, as a full GPU refuses): each allocation of the splits says
 * what found none, and what can go on does. */
static void no_room(const PwArch *a)
{
    PwErr err;
    PwModelOpts o = opts(PW_PRECISION_BF16);
    PwModelBytes plan;
    size_t base = pw_cpu_table_bytes();
    /* the float32 master weights' split, after the whole float32 has gone */
    PwModel *m = tiny_model(a, &o, 7);
    const size_t P = pw_model_num_params(m), lo = P / 3, hi = 2 * P / 3;
    CHECK(pw_model_plan_share(a, &o, lo, hi, &plan, &err) == 0, "%s", err.msg);
    size_t live = pw_cpu_table_bytes();
    pw_cpu_table_cap(live - P * sizeof(float) + plan.params - 1);
    CHECK(pw_model_optimizer_shard(m, lo, hi, &err) == -1 &&
              strstr(err.msg, "out of memory for the float32 weights' share") &&
              strstr(err.msg, "the model can only be freed"),
          "the master weights' split without room: '%s'", err.msg);
    pw_cpu_table_cap(0);
    pw_model_free(m);
    CHECK(pw_cpu_table_bytes() == base, "%zu bytes left after a failed split",
          pw_cpu_table_bytes() - base);

    /* the gradients' share and buffers: refused, then made once there is room */
    PwGradSplit fn = {own_only, own_sum, NULL, NULL};
    int64_t sh[3] = {0, (int64_t)P / 2, (int64_t)P};
    o.precision = PW_PRECISION_FP32;
    m = tiny_model(a, &o, 7);
    CHECK(pw_model_optimizer_shard(m, 0, P / 2, &err) == 0 &&
              pw_model_grads_split(m, sh, 2, 0, &fn, &err) == 0 &&
              pw_model_plan_split(a, &o, 0, P / 2, &plan, &err) == 0, "%s", err.msg);
    pw_cpu_table_cap(pw_cpu_table_bytes() + plan.grads - 1);
    CHECK(pw_model_zero_grad(m, &err) == -1 &&
              strstr(err.msg, "out of memory for the gradients' share and the buffers"),
          "the split gradients without room: '%s'", err.msg);
    pw_cpu_table_cap(0);
    CHECK(pw_model_zero_grad(m, &err) == 0, "%s", err.msg);
    pw_model_free(m);

    /* the generators' payload where the split gradients were */
    o.precision = PW_PRECISION_BF16;
    m = tiny_model(a, &o, 7);
    CHECK(pw_model_optimizer_shard(m, 0, P / 2, &err) == 0 &&
              pw_model_grads_split(m, sh, 2, 0, &fn, &err) == 0 &&
              pw_model_plan_split(a, &o, 0, P / 2, &plan, &err) == 0, "%s", err.msg);
    pass(m, a, 1, 0, 0);
    PwTensor t;
    pw_cpu_table_cap(pw_cpu_table_bytes() - plan.grads + plan.transfer - 1);
    CHECK(pw_model_weights_out(m, NULL, &t, &err) == -1 &&
              strstr(err.msg, "out of memory for the gradients (which the weights handed over"),
          "the payload without room: '%s'", err.msg);
    pw_cpu_table_cap(0);
    pass(m, a, 1, 0, 0); /* the gradients are made again */
    CHECK(pw_model_weights_out(m, NULL, &t, &err) == 0, "%s", err.msg);
    pw_model_free(m);
    CHECK(pw_cpu_table_bytes() == base, "%zu bytes left", pw_cpu_table_bytes() - base);
    printf("  without room: the master weights' split (then only freed), the gradients' share, "
           "the payload; each named, the latter two made once there is room\n");
}

static void family(const char *name, const PwArch *a, PwPrecision prec, PwActs acts)
{
    printf("%s %s%s\n", name, prec == PW_PRECISION_BF16 ? "bf16" : "fp32",
           acts == PW_ACTS_RECOMPUTE ? ", activation checkpointing" : "");
    PwErr err;
    PwModelOpts o = opts(prec);
    o.acts = acts;
    PwModel *whole = tiny_model(a, &o, 7), *share[N];
    const size_t P = pw_model_num_params(whole);
    const size_t cut[N + 1] = {0, 301, P / 2 + 7, P, P};
    int64_t sh[N + 1];
    for (int k = 0; k <= N; k++) sh[k] = (int64_t)cut[k];
    World w = {0};
    Rank rk[N];
    for (int k = 0; k < N; k++) {
        rk[k] = (Rank){&w, k, 0};
        PwGradSplit fn = {reduce, sum, NULL, &rk[k]};
        share[k] = tiny_model(a, &o, 7);
        CHECK(pw_model_optimizer_shard(share[k], cut[k], cut[k + 1], &err) == 0 &&
                  pw_model_grads_split(share[k], sh, N, k, &fn, &err) == 0,
              "%s", err.msg);
    }
    PwAdamWConfig opt = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                         .weight_decay = 0.1f, .grad_clip = 0.0f};
    float *gj = malloc(N * P * sizeof *gj), *total = malloc(P * sizeof *total);
    float *got = malloc(P * sizeof *got);
    const int L = a->n_layer;
    for (int s = 1; s <= NSTEPS; s++) {
        memset(total, 0, P * sizeof *total);
        for (int k = 0; k < N; k++)
            CHECK(pw_model_zero_grad(share[k], &err) == 0, "%s", err.msg);
        for (int u = 0; u < MB; u++) {
            /* the whole's gradient of each rank's rows, summed in rank order */
            for (int k = 0; k < N; k++) {
                CHECK(pw_model_zero_grad(whole, &err) == 0, "%s", err.msg);
                if (!idle(s, u, k)) pass(whole, a, s, u, k);
                memcpy(gj + k * P, pw_model_grads(whole).data, P * sizeof *gj);
            }
            for (size_t x = 0; x < P; x++) {
                float v = gj[x];
                for (int k = 1; k < N; k++) v += gj[k * P + x];
                total[x] += v;
            }
            for (w.recording = 1; w.recording >= 0; w.recording--)
                for (int k = 0; k < N; k++) {
                    rk[k].calls = 0;
                    if (idle(s, u, k))
                        CHECK(pw_model_backward_idle(share[k], &err) == 0, "%s", err.msg);
                    else
                        pass(share[k], a, s, u, k);
                    CHECK(rk[k].calls == L + 2, "rank %d: %d reductions in a backward, not %d",
                          k, rk[k].calls, L + 2);
                }
        }
        size_t bad = P;
        for (int k = 0; k < N; k++) {
            CHECK(pw_model_grads_get(share[k], got + cut[k], &err) == 0, "%s", err.msg);
            for (size_t x = cut[k]; x < cut[k + 1] && bad == P; x++)
                if (memcmp(&got[x], &total[x], sizeof *got)) bad = x;
        }
        CHECK(bad == P, "%s step %d: the shares' gradient differs from the whole's sum at float "
              "%zu of %zu (%.9g, not %.9g)", name, s, bad, P, bad < P ? got[bad] : 0.0,
              bad < P ? total[bad] : 0.0);

        /* the whole's step on the summed gradient; the shares' norm is the sum of their
         * squares (recorded on every rank, then summed) */
        memcpy(pw_model_grads(whole).data, total, P * sizeof *total);
        double nw = 0.0, ns = 0.0;
        CHECK(pw_model_adamw_step(whole, &opt, s, &nw, &err) == PW_ADAMW_APPLIED, "%s", err.msg);
        w.recording = 1;
        for (int k = 0; k < N; k++) (void)pw_model_grad_norm(share[k]);
        w.recording = 0;
        for (int k = 0; k < N; k++) {
            CHECK(pw_model_adamw_step(share[k], &opt, s, &ns, &err) == PW_ADAMW_APPLIED, "%s",
                  err.msg);
            CHECK(fabs(ns - nw) <= 1e-12 * nw && nw > 0, "%s step %d rank %d: norm %.12g, the "
                  "whole's %.12g", name, s, k, ns, nw);
        }
        allgather(share, cut, prec, P);
        /* every rank's weights are the whole's, bit for bit: a forward reads them all */
        float lw[2 * B * T], lk[2 * B * T], ent[B * T];
        int tok[B * T];
        for (int i = 0; i < B * T; i++) tok[i] = (i * 3 + s) % a->vocab_size;
        PwModelInput in = {tok, NULL, NULL, B, T, 1.0f};
        PwOutputs out = {0, T, NULL, ent, lw + B * T, NULL, NULL};
        int tgt[B * T];
        pw_lm_next_token_targets(tgt, tok, NULL, B, T);
        in.targets = tgt;
        out.logp = lw;
        CHECK(pw_model_forward(whole, &in, &out, &err) == 0, "%s", err.msg);
        for (int k = 0; k < N; k++) {
            out.logp = lk;
            out.value = lk + B * T;
            CHECK(pw_model_forward(share[k], &in, &out, &err) == 0, "%s", err.msg);
            CHECK(!memcmp(lw, lk, sizeof lw), "%s step %d rank %d: the forward after the update "
                  "differs from the whole's", name, s, k);
        }
        if (prec == PW_PRECISION_FP32) {
            const float *pw = pw_model_params(whole).data, *pk = pw_model_params(share[1]).data;
            CHECK(!memcmp(pw, pk, P * sizeof *pw), "%s step %d: the weights differ", name, s);
        }
    }
    printf("  %d steps of %d micro batches, shares of %zu, %zu, %zu and %zu floats, one rank "
           "idle once: gradients, update and forward the whole's bit for bit\n", NSTEPS, MB,
           cut[1] - cut[0], cut[2] - cut[1], cut[3] - cut[2], cut[4] - cut[3]);

    if (prec == PW_PRECISION_BF16) {
        /* the payload for the generators takes the gradients' place, and is the whole's */
        PwTensor pw_, ps;
        CHECK(pw_model_weights_out(whole, NULL, &pw_, &err) == 0 &&
                  pw_model_weights_out(share[2], NULL, &ps, &err) == 0, "%s", err.msg);
        CHECK(pw_tensor_bytes(&pw_) == pw_tensor_bytes(&ps) &&
                  !memcmp(pw_.data, ps.data, pw_tensor_bytes(&ps)),
              "%s: the weights handed over differ from the whole's", name);
        CHECK(pw_model_backward_idle(share[2], &err) == -1 &&
                  strstr(err.msg, "pw_model_weights_out"),
              "a backward while the payload holds the gradients' place: '%s'", err.msg);
        CHECK(pw_model_zero_grad(share[2], &err) == 0 &&
                  pw_model_grads_get(share[2], got, &err) == 0, "%s", err.msg);
        printf("  the weights handed over are the whole's; a backward waits for zero_grad\n");
    }
    for (int k = 0; k < N; k++)
        for (int c = 0; c < MAXCALLS; c++) free(w.rec[k][c]);
    free(gj);
    free(total);
    free(got);
    for (int k = 0; k < N; k++) pw_model_free(share[k]);
    pw_model_free(whole);
}

int main(void)
{
    const PwArch gpt2 = TINY_GPT2(61), llama = TINY_LLAMA(64);
    PwArch tied = llama;
    tied.tied = 1;
    family("gpt2", &gpt2, PW_PRECISION_FP32, PW_ACTS_KEEP);
    family("llama", &llama, PW_PRECISION_FP32, PW_ACTS_KEEP);
    family("llama tied", &tied, PW_PRECISION_FP32, PW_ACTS_KEEP);
    family("gpt2", &gpt2, PW_PRECISION_BF16, PW_ACTS_KEEP);
    family("llama", &llama, PW_PRECISION_BF16, PW_ACTS_KEEP);
    family("llama tied", &tied, PW_PRECISION_BF16, PW_ACTS_KEEP);
    /* Qwen3: a norm over each head, its two weights per layer after the others */
    PwArch qwen3 = llama;
    qwen3.hf_type = 3, qwen3.qk_norm = 1, qwen3.head_dim = 12;
    family("qwen3", &qwen3, PW_PRECISION_FP32, PW_ACTS_KEEP);
    family("qwen3", &qwen3, PW_PRECISION_BF16, PW_ACTS_KEEP);
    /* the layers made again inside the backward, between the reductions */
    family("gpt2", &gpt2, PW_PRECISION_BF16, PW_ACTS_RECOMPUTE);
    family("llama", &llama, PW_PRECISION_FP32, PW_ACTS_RECOMPUTE);
    refusals(&llama);
    no_room(&llama);
    return pw_test_done("test_grad_shard");
}
