/* test_grad_ready.c: the gradients a backward reports as ready (pw_model.h, PwGradReady), for
 * GPT-2 with every head and the Llama family tied and untied: the reports cover every float of
 * the gradients exactly once, come in the documented order (the final norm and heads, layers
 * L-1 down to 0, the embeddings), hold at report time the values the backward ends with (bit for
 * bit: nothing writes a range after its report), and pw_model_report_grads repeats the same
 * calls without a backward. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_model.h"
#include "pw_test.h"

enum { B = 2, T = 6, V = 40, MAXR = 4096 };

typedef struct Rec {
    const float *grads;
    size_t n;
    float *snap;          /* each range's values when it was reported */
    unsigned char *seen;  /* reports of each float */
    int calls, nr;
    int call_end[256];    /* ranges of calls 0..i end at call_end[i] */
    PwGradRange r[MAXR];
    int bad_stream;
} Rec;

static void record(void *ctx, const PwGradRange *r, int n, void *stream)
{
    Rec *c = ctx;
    c->bad_stream += stream != NULL; /* a CPU model's work is done: no stream */
    for (int i = 0; i < n; i++) {
        if (c->nr < MAXR) c->r[c->nr++] = r[i];
        for (size_t k = r[i].off; k < r[i].off + r[i].count && k < c->n; k++) {
            c->snap[k] = c->grads[k];
            c->seen[k]++;
        }
    }
    if (c->calls < 256) c->call_end[c->calls] = c->nr;
    c->calls++;
}

static void rec_init(Rec *c, PwModel *m)
{
    memset(c, 0, sizeof *c);
    c->grads = pw_model_grads(m).data;
    c->n = pw_model_num_params(m);
    c->snap = calloc(c->n, sizeof(float));
    c->seen = calloc(c->n, 1);
}

static void rec_free(Rec *c)
{
    free(c->snap);
    free(c->seen);
}

static size_t tensor(const PwModel *m, const char *name, size_t *count)
{
    for (int i = 0; i < pw_model_num_tensors(m); i++) {
        size_t off, n;
        if (!strcmp(pw_model_tensor_info(m, i, &off, &n), name)) {
            *count = n;
            return off;
        }
    }
    *count = 0;
    return (size_t)-1;
}

/* Whether call `call` of c reports the float at `at` */
static int in_call(const Rec *c, int call, size_t at)
{
    int lo = call ? c->call_end[call - 1] : 0;
    for (int i = lo; i < c->call_end[call]; i++)
        if (at >= c->r[i].off && at < c->r[i].off + c->r[i].count) return 1;
    return 0;
}

static void check_family(const char *what, const PwArch *arch, int heads)
{
    PwErr err;
    PwModelOpts o = {.heads = heads, .maxB = B, .maxT = T};
    PwModel *m = pw_model_create(arch, &o, &err);
    CHECK(m != NULL, "%s: %s", what, err.msg);
    if (!m) return;
    pw_model_init_random(m, 11);
    const int L = arch->n_layer;
    unsigned long long s = 5;
    int tok[B * T], tgt[B * T], mask[B * T];
    float dlogp[B * T], dent[B * T], dval[B * T], dscore[B];
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int)(pw_test_rng_next(&s) % V);
        tgt[i] = (int)(pw_test_rng_next(&s) % V);
        mask[i] = !(i / T == 1 && i % T < 2); /* row 1 left-padded */
        dlogp[i] = (float)pw_test_normal(&s);
        dent[i] = (float)pw_test_normal(&s);
        dval[i] = (float)pw_test_normal(&s);
    }
    for (int b = 0; b < B; b++) dscore[b] = (float)pw_test_normal(&s);
    PwModelInput in = {tok, mask, tgt, B, T, 1.0f};
    float lp[B * T], en[B * T], va[B * T], sc[B];
    PwOutputs out = {.col0 = 0, .width = T, .logp = lp, .entropy = en,
                     .value = heads & PW_HEAD_VALUE ? va : NULL,
                     .score = heads & PW_HEAD_SCORE ? sc : NULL};
    CHECK(pw_model_zero_grad(m, &err) == 0, "%s", err.msg);
    Rec c;
    rec_init(&c, m);
    PwOutputGrads g = {.dlogp = dlogp, .dentropy = dent,
                       .dvalue = heads & PW_HEAD_VALUE ? dval : NULL,
                       .dscore = heads & PW_HEAD_SCORE ? dscore : NULL,
                       .ready = record, .ready_ctx = &c};
    /* twice: the second backward accumulates, and reports afresh */
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            rec_free(&c);
            rec_init(&c, m);
        }
        CHECK(pw_model_forward(m, &in, &out, &err) == 0, "%s: %s", what, err.msg);
        CHECK(pw_model_backward(m, &g, &err) == 0, "%s: %s", what, err.msg);
        size_t once = 0, nonzero = 0;
        for (size_t k = 0; k < c.n; k++) {
            once += c.seen[k] == 1;
            nonzero += c.grads[k] != 0.0f;
        }
        CHECK(once == c.n, "%s pass %d: %zu of %zu gradient floats reported once", what, pass,
              once, c.n);
        CHECK(nonzero > c.n / 2, "%s: only %zu of %zu gradients are non-zero", what, nonzero,
              c.n);
        CHECK(memcmp(c.snap, c.grads, c.n * sizeof(float)) == 0,
              "%s pass %d: a range changed after it was reported ready", what, pass);
        CHECK(c.calls == L + 2, "%s: %d reports for %d layers (expected L + 2)", what, c.calls, L);
        CHECK(c.bad_stream == 0, "%s: a CPU model reported a stream", what);
        /* the order: the final norm first, layer l's slices at call L - l, the embedding last */
        size_t n, lnf = tensor(m, "lnfw", &n), wte = tensor(m, "wte", &n);
        size_t qkv = tensor(m, "qkvw", &n), per = n / (size_t)L;
        CHECK(in_call(&c, 0, lnf) && !in_call(&c, 0, wte), "%s: first report", what);
        for (int l = 0; l < L; l++)
            CHECK(in_call(&c, L - l, qkv + (size_t)l * per) &&
                      in_call(&c, L - l, qkv + (size_t)(l + 1) * per - 1) &&
                      (l == 0 || !in_call(&c, L - l, qkv + (size_t)(l - 1) * per)),
                  "%s: layer %d's qkvw is not report %d", what, l, L - l);
        CHECK(in_call(&c, L + 1, wte), "%s: the embedding is not the last report", what);
    }

    /* the same calls without a backward */
    Rec d;
    rec_init(&d, m);
    CHECK(pw_model_report_grads(m, record, &d, &err) == 0, "%s: %s", what, err.msg);
    CHECK(d.calls == c.calls && d.nr == c.nr &&
              !memcmp(d.call_end, c.call_end, (size_t)c.calls * sizeof(int)) &&
              !memcmp(d.r, c.r, (size_t)c.nr * sizeof(PwGradRange)),
          "%s: pw_model_report_grads differs from a backward's reports (%d calls, %d ranges "
          "against %d, %d)", what, d.calls, d.nr, c.calls, c.nr);

    /* a backward without `ready` reports nothing */
    Rec e;
    rec_init(&e, m);
    PwOutputGrads quiet = {.dlogp = dlogp};
    CHECK(pw_model_forward(m, &in, &out, &err) == 0 && pw_model_backward(m, &quiet, &err) == 0,
          "%s: %s", what, err.msg);
    CHECK(e.calls == 0, "%s: %d reports without a callback", what, e.calls);
    rec_free(&c);
    rec_free(&d);
    rec_free(&e);
    pw_model_free(m);
}

int main(void)
{
    PwArch gpt2 = {.family = PW_FAMILY_GPT2, .n_layer = 3, .n_head = 2, .n_embd = 16,
                   .vocab_size = V, .n_positions = 16};
    check_family("gpt2", &gpt2, PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE);
    PwArch llama = {.family = PW_FAMILY_LLAMA, .n_layer = 3, .n_head = 4, .n_embd = 16,
                    .vocab_size = V, .n_positions = 16, .n_kv_head = 2, .n_inner = 24,
                    .norm_eps = 1e-5f, .rope_theta = 10000.0, .qkv_bias = 1, .o_bias = 1};
    check_family("llama untied, attention biases", &llama, PW_HEAD_LM | PW_HEAD_VALUE);
    llama.tied = 1;
    llama.qkv_bias = llama.o_bias = 0;
    check_family("llama tied", &llama, PW_HEAD_LM | PW_HEAD_SCORE);
    /* Qwen3: heads wider than hidden_size / heads, q/k norms (tensors after the heads) */
    llama.hf_type = 3, llama.qk_norm = 1, llama.head_dim = 6;
    check_family("qwen3, head_dim 6, q/k norms", &llama, PW_HEAD_LM | PW_HEAD_VALUE);
    return pw_test_done("test_grad_ready");
}
