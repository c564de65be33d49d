/* test_gen_generate.c: pw_generate as callers see it: the same seed gives the same tokens,
 * a prompt's response does not depend on its batch, the draws on the model's device equal the
 * host's row by row, the host's looks at the rows every check_every steps change nothing, stop
 * and max_new_tokens, errors; and its decode steps as graphs, through a kernel table that
 * stands in for CUDA's. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pw_generate.h"
#include "pw_model.h"
#include "pw_test.h"
#include "gen_model.h"
#include "model_internal.h" /* the model's kernel table, swapped for the graph stand-in */

enum { B = 5, P = 6, R = 8, W = P + R, V = 50, PAD = 0 };

static const int prompt_len[B] = {6, 2, 4, 1, 5};

static PwModel *tiny_model(void) { return gen_tiny_model(V, B, W, 77, 4.0f, 1.0f); }

static void make_prompts(int *prompt, int *mask)
{
    unsigned long long rng = 3;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < P; t++) {
            mask[b * P + t] = t >= P - prompt_len[b];
            prompt[b * P + t] = mask[b * P + t] ? (int)(pw_test_rng_next(&rng) % V) : PAD;
        }
}

/* a copy of one generation's outputs, to compare runs */
typedef struct Out {
    int tokens[B * R], mask[B * R], lengths[B], stopped[B];
    float logp[B * R], logp_full[B * R];
} Out;

static void keep(Out *o, const PwGen *g, int row0, int n)
{
    memcpy(o->tokens + row0 * R, g->tokens, sizeof(int) * n * R);
    memcpy(o->mask + row0 * R, g->resp_mask, sizeof(int) * n * R);
    memcpy(o->lengths + row0, g->lengths, sizeof(int) * n);
    memcpy(o->stopped + row0, g->stopped, sizeof(int) * n);
    memcpy(o->logp + row0 * R, g->logp, sizeof(float) * n * R);
    memcpy(o->logp_full + row0 * R, g->logp_full, sizeof(float) * n * R);
}

/* row a of x against row b of y: tokens exactly, log-probs to float rounding (the packed rows
 * of a batch may go through the matmuls in another blocking) */
static int same_row(const Out *x, int a, const Out *y, int b, const char *what)
{
    int ok = x->lengths[a] == y->lengths[b] && x->stopped[a] == y->stopped[b];
    for (int t = 0; t < R; t++) {
        ok &= x->tokens[a * R + t] == y->tokens[b * R + t];
        ok &= x->mask[a * R + t] == y->mask[b * R + t];
        ok &= fabsf(x->logp[a * R + t] - y->logp[b * R + t]) <= 1e-5f;
        ok &= fabsf(x->logp_full[a * R + t] - y->logp_full[b * R + t]) <= 1e-5f;
    }
    CHECK(ok, "%s: row %d differs from row %d", what, a, b);
    return ok;
}

static void test_determinism_and_batches(PwGen *g)
{
    int prompt[B * P], mask[B * P];
    make_prompts(prompt, mask);
    PwErr err;
    PwGenConfig cfg = {.max_new_tokens = R, .stop_token = -1, .pad_token = PAD,
                       .sample = {.temperature = 0.8f, .top_k = 20, .top_p = 0.9f}, .seed = 99};
    static Out base, again, other, perm_out, split;
    /* rows that end at different steps: the stop token is what row 1 draws third without one */
    CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == 0, "%s", err.msg);
    cfg.stop_token = g->tokens[1 * R + 2];
    CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == 0, "%s", err.msg);
    keep(&base, g, 0, B);
    CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == 0, "%s", err.msg);
    keep(&again, g, 0, B);
    for (int b = 0; b < B; b++) same_row(&again, b, &base, b, "same seed");
    cfg.seed = 100;
    CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == 0, "%s", err.msg);
    keep(&other, g, 0, B);
    CHECK(memcmp(other.tokens, base.tokens, sizeof base.tokens) != 0, "another seed, same tokens");
    cfg.seed = 99;

    /* a different batch order, each prompt keeping its sample id */
    const int perm[B] = {3, 0, 4, 1, 2};
    int pprompt[B * P], pmask[B * P];
    uint64_t ids[B];
    for (int i = 0; i < B; i++) {
        memcpy(pprompt + i * P, prompt + perm[i] * P, sizeof(int) * P);
        memcpy(pmask + i * P, mask + perm[i] * P, sizeof(int) * P);
        ids[i] = (uint64_t)perm[i];
    }
    CHECK(pw_generate(g, pprompt, pmask, B, P, ids, &cfg, &err) == 0, "%s", err.msg);
    keep(&perm_out, g, 0, B);
    for (int i = 0; i < B; i++) same_row(&perm_out, i, &base, perm[i], "permuted batch");

    /* the batch split in three: one row alone, then two, then two */
    const int cut[4] = {0, 1, 3, 5};
    for (int c = 0; c < 3; c++) {
        int n = cut[c + 1] - cut[c];
        for (int i = 0; i < n; i++) ids[i] = (uint64_t)(cut[c] + i);
        CHECK(pw_generate(g, prompt + cut[c] * P, mask + cut[c] * P, n, P, ids, &cfg, &err) == 0,
              "%s", err.msg);
        keep(&split, g, cut[c], n);
    }
    for (int b = 0; b < B; b++) same_row(&split, b, &base, b, "split batch");

    /* outputs are well formed: real tokens first, then padding with zero log-probs */
    int longest = 0, nstop = 0, bitwise = 0;
    for (int b = 0; b < B; b++) {
        nstop += base.stopped[b];
        longest = base.lengths[b] > longest ? base.lengths[b] : longest;
        for (int t = 0; t < R; t++) {
            int real = t < base.lengths[b];
            CHECK(base.mask[b * R + t] == real, "mask (%d, %d)", b, t);
            if (!real) CHECK(base.tokens[b * R + t] == PAD && base.logp[b * R + t] == 0.0f,
                             "padding (%d, %d)", b, t);
            else CHECK(base.logp[b * R + t] <= 0.0f &&
                       base.logp[b * R + t] >= base.logp_full[b * R + t],
                       "filtered logp >= unfiltered logp at (%d, %d)", b, t);
        }
    }
    bitwise = !memcmp(split.logp, base.logp, sizeof base.logp) &&
              !memcmp(perm_out.logp, base.logp, sizeof base.logp);
    CHECK(nstop >= 1 && base.lengths[1] <= 3, "stop token %d: %d rows stopped", cfg.stop_token,
          nstop);
    printf("batch invariance: %d rows, %d stopped, longest response %d of %d, split logp "
           "bitwise equal: %d\n", B, nstop, longest, R, bitwise);
}

/* The generator draws on the model's device through the kernel table's sampler, from the
 * prefill's logits uploaded once and then from each decode pass's logits where the pass left
 * them. The same draws row by row on the host, from a cache of its own that brings every pass's
 * logits back (pw_kv_logits) and pw_sample_row: every token and log-prob bit for bit, rows
 * leaving at different steps, and every row's stream advanced once per token. */
static void test_against_host_rows(PwModel *m, PwGen *g)
{
    int prompt[B * P], mask[B * P];
    make_prompts(prompt, mask);
    PwErr err;
    PwGenConfig cfg = {.max_new_tokens = R, .stop_token = -1, .pad_token = PAD,
                       .sample = {.temperature = 1.1f, .top_k = 30, .top_p = 0.95f}, .seed = 5};
    const uint64_t ids[B] = {40, 41, 7, 1000, 3};
    CHECK(pw_generate(g, prompt, mask, B, P, ids, &cfg, &err) == 0, "%s", err.msg);
    cfg.stop_token = g->tokens[3 * R + 1]; /* row 3 stops at its second token */
    CHECK(pw_generate(g, prompt, mask, B, P, ids, &cfg, &err) == 0, "%s", err.msg);

    PwKVCache *c = pw_kv_create(m, B, W, &err);
    CHECK(c && pw_kv_prefill(c, prompt, mask, B, P, &err) == 0, "%s", err.msg);
    if (!c) return;
    double prob[V];
    int work[V], next[B], live[B], len[B] = {0}, bad = 0, nlive = B;
    uint64_t st[B];
    for (int b = 0; b < B; b++) {
        st[b] = pw_sample_stream(cfg.seed, ids[b]);
        live[b] = 1;
    }
    for (int r = 0; r < R && nlive; r++) {
        if (r > 0) CHECK(pw_kv_decode(c, next, live, B, &err) == 0, "%s", err.msg);
        for (int b = 0; b < B; b++) {
            if (!live[b]) continue;
            PwSample x = pw_sample_row(prob, work, pw_kv_logits(c, b), V, &cfg.sample, &st[b]);
            bad += g->tokens[b * R + r] != x.token || g->logp[b * R + r] != x.logp ||
                   g->logp_full[b * R + r] != x.logp_full || !g->resp_mask[b * R + r];
            next[b] = x.token;
            len[b]++;
            if (x.token == cfg.stop_token) live[b] = 0, nlive--;
        }
    }
    int lens = 0, streams = 0;
    for (int b = 0; b < B; b++) {
        lens += g->lengths[b] != len[b];
        streams += g->rng[b] != st[b];
    }
    CHECK(bad == 0 && lens == 0 && streams == 0 && len[3] == 2 && nlive < B,
          "device draws against host rows: %d draws, %d lengths, %d streams differ (row 3: %d "
          "tokens)", bad, lens, streams, len[3]);
    pw_kv_free(c);
}

/* The host looks at the rows every check_every steps; between looks the rows that stopped stay
 * in the decode pass, drawn from but recording nothing. Any check_every gives the same tokens,
 * log-probs, lengths and stops bit for bit (the rows' streams are their own, and a row's logits
 * do not depend on the other rows of the pass up to float rounding: compared to 1e-5 where a
 * pass holds other rows), and the streams of the rows that never stopped are the same. */
/* the prompts and a config under which row 2 stops at its second token, the others later */
static PwGenConfig row2_stops(PwGen *g, int *prompt, int *mask)
{
    make_prompts(prompt, mask);
    PwErr err;
    PwGenConfig cfg = {.max_new_tokens = R, .stop_token = -1, .pad_token = PAD,
                       .sample = {.temperature = 1.2f, .top_k = 0, .top_p = 1.0f}, .seed = 5};
    CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == 0, "%s", err.msg);
    cfg.stop_token = g->tokens[2 * R + 1];
    return cfg;
}

static void test_check_every(PwGen *g)
{
    int prompt[B * P], mask[B * P];
    PwGenConfig cfg = row2_stops(g, prompt, mask);
    PwErr err;
    static Out base, got;
    uint64_t rng0[B];
    cfg.check_every = 1;
    CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == 0, "%s", err.msg);
    keep(&base, g, 0, B);
    memcpy(rng0, g->rng, sizeof rng0);
    int nstop = 0, lens[B];
    for (int b = 0; b < B; b++) nstop += base.stopped[b], lens[b] = base.lengths[b];
    CHECK(nstop >= 1 && nstop < B && base.lengths[2] == 2,
          "rows stopping at different steps: %d of %d stopped, row 2 after %d tokens", nstop, B,
          base.lengths[2]);
    const int every[4] = {2, 3, R - 1, R + 5};
    for (int i = 0; i < 4; i++) {
        cfg.check_every = every[i];
        CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == 0, "%s", err.msg);
        keep(&got, g, 0, B);
        char what[48];
        snprintf(what, sizeof what, "check_every %d", every[i]);
        int streams = 0;
        for (int b = 0; b < B; b++) {
            same_row(&got, b, &base, b, what);
            streams += !base.stopped[b] && g->rng[b] != rng0[b];
        }
        CHECK(streams == 0, "%s: %d streams of unstopped rows differ", what, streams);
    }
    printf("check_every 1, 2, 3, %d, %d: the same responses (%d rows stopped, lengths %d %d %d "
           "%d %d)\n", R - 1, R + 5, nstop, lens[0], lens[1], lens[2], lens[3], lens[4]);
    /* graphs asked of a table without them: the steps are launched, the same output */
    cfg.check_every = 3;
    cfg.graph = 1;
    CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == 0, "%s", err.msg);
    keep(&got, g, 0, B);
    for (int b = 0; b < B; b++) same_row(&got, b, &base, b, "graph 1 on the CPU");
    cfg.graph = 2;
    CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == -1 &&
          strstr(err.msg, "graph must be 0 or 1"), "graph 2 accepted");
    cfg.graph = 0;
    cfg.check_every = -1;
    CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == -1 &&
          strstr(err.msg, "check_every must be >= 0"), "check_every -1 accepted");
}

/* A kernel table with graphs, standing in for CUDA's on the CPU table: a capture keeps fn and
 * arg without running them (as CUDA records without running), a run calls fn(arg). It counts the
 * draws made outside a graph since the pass was last planned (generate frees its graph, or
 * NULL, each time it plans a pass), and at each capture how many there were: the generator
 * launches a pass's first decode step and captures its second, so every capture finds at least
 * two (the prefill's draw or a launched step, then a launched step). */
typedef struct Graph {
    void (*fn)(void *);
    void *arg;
} Graph;
static PwOps graph_ops;
static int in_graph, launched_draws, graph_draws, captures, early_captures;
static void stand_in_sample(const PwOps *o, const float *logits, int ld, int n, int V,
                            const int *rows, const PwSampleConfig *sc, uint64_t *rng, int *token,
                            float *logp, float *logp_full)
{
    pw_ops_cpu()->sample(o, logits, ld, n, V, rows, sc, rng, token, logp, logp_full);
    if (in_graph) graph_draws++;
    else launched_draws++;
}
static void *stand_in_capture(const PwOps *o, void (*fn)(void *), void *arg)
{
    (void)o;
    Graph *gr = malloc(sizeof *gr);
    if (!gr) return NULL;
    *gr = (Graph){fn, arg};
    captures++;
    early_captures += launched_draws < 1;
    return gr;
}
static void stand_in_run(const PwOps *o, void *graph)
{
    (void)o;
    Graph *gr = graph;
    in_graph = 1;
    gr->fn(gr->arg);
    in_graph = 0;
}
static void stand_in_free(const PwOps *o, void *graph)
{
    (void)o;
    free(graph);
    launched_draws = 0; /* a pass is planned (or generation ends) */
}

/* With the stand-in table and graph = 1: the same output bit for bit as launched, each pass's
 * graph captured only after one of its steps was launched, and replayed for the rest. */
static void test_graphs(PwModel *m, PwGen *g)
{
    int prompt[B * P], mask[B * P];
    PwGenConfig cfg = row2_stops(g, prompt, mask); /* a pass replanned when row 2 stops */
    PwErr err;
    static Out base, got;
    for (int every = 1; every <= 4; every += 3) {
        cfg.check_every = every;
        cfg.graph = 0;
        CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == 0, "%s", err.msg);
        keep(&base, g, 0, B);
        const PwOps *own = m->ops;
        graph_ops = *own;
        graph_ops.sample = stand_in_sample;
        graph_ops.graph_capture = stand_in_capture;
        graph_ops.graph_run = stand_in_run;
        graph_ops.graph_free = stand_in_free;
        m->ops = &graph_ops;
        launched_draws = graph_draws = captures = early_captures = 0;
        cfg.graph = 1;
        CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == 0, "%s", err.msg);
        m->ops = own;
        keep(&got, g, 0, B);
        char what[48];
        snprintf(what, sizeof what, "graphs, check_every %d", every);
        for (int b = 0; b < B; b++) same_row(&got, b, &base, b, what);
        CHECK(captures >= 1 && graph_draws >= 1, "%s: %d captures, %d draws in graphs", what,
              captures, graph_draws);
        CHECK(early_captures == 0, "%s: %d of %d captures before a step of the pass was "
              "launched", what, early_captures, captures);
        printf("%s: the same responses, %d captures, %d draws in graphs\n", what, captures,
               graph_draws);
    }
    cfg.graph = 0;
    cfg.check_every = 0;
}

static void test_max_new_tokens(PwGen *g)
{
    int prompt[B * P], mask[B * P];
    make_prompts(prompt, mask);
    PwErr err;
    PwGenConfig cfg = {.max_new_tokens = 3, .stop_token = -1, .pad_token = PAD,
                       .sample = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f}, .seed = 1};
    CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == 0, "%s", err.msg);
    CHECK(g->B == B && g->R == 3, "output shape (%d, %d)", g->B, g->R);
    for (int b = 0; b < B; b++) {
        CHECK(g->lengths[b] == 3 && !g->stopped[b], "row %d: length %d stopped %d", b,
              g->lengths[b], g->stopped[b]);
        for (int t = 0; t < 3; t++) CHECK(g->resp_mask[b * 3 + t] == 1, "mask (%d, %d)", b, t);
    }
}

/* Make the stop token win every draw: the final LayerNorm's output gets a large constant part
 * (its bias) and the stop token's embedding row points along it, so its logit is about 10 C
 * above every other. The generator was built before the change, which also checks that it
 * reads the weights at each call. */
static void test_forced_stop(PwModel *m, PwGen *g)
{
    const int STOP = 13, C = pw_model_arch(m)->n_embd;
    float *p = pw_model_params(m).data; /* host memory: a CPU model */
    size_t lnfb = 0, wte = 0;
    for (int i = 0; i < pw_model_num_tensors(m); i++) {
        size_t off;
        const char *name = pw_model_tensor_info(m, i, &off, NULL);
        if (!strcmp(name, "lnfb")) lnfb = off;
        if (!strcmp(name, "wte")) wte = off;
    }
    for (int c = 0; c < C; c++) {
        p[lnfb + c] = 10.0f;
        p[wte + (size_t)STOP * C + c] = 1.0f;
    }
    int prompt[B * P], mask[B * P];
    make_prompts(prompt, mask);
    PwErr err;
    PwGenConfig cfg = {.max_new_tokens = R, .stop_token = STOP, .pad_token = PAD,
                       .sample = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f}, .seed = 4};
    CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == 0, "%s", err.msg);
    for (int b = 0; b < B; b++) {
        CHECK(g->lengths[b] == 1 && g->stopped[b] == 1, "row %d: length %d stopped %d", b,
              g->lengths[b], g->stopped[b]);
        CHECK(g->tokens[b * R] == STOP && g->resp_mask[b * R] == 1, "row %d first token %d", b,
              g->tokens[b * R]);
        CHECK(g->logp[b * R] == 0.0f, "stop drawn with probability 1: logp %g", g->logp[b * R]);
        for (int t = 1; t < R; t++)
            CHECK(g->tokens[b * R + t] == PAD && g->resp_mask[b * R + t] == 0 &&
                  g->logp_full[b * R + t] == 0.0f, "padding after stop (%d, %d)", b, t);
    }
    /* the same with filters on */
    cfg.sample = (PwSampleConfig){.temperature = 0.5f, .top_k = 5, .top_p = 0.5f};
    CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == 0, "%s", err.msg);
    for (int b = 0; b < B; b++) CHECK(g->lengths[b] == 1 && g->stopped[b], "filtered row %d", b);
}

static void expect_error(int rc, const PwErr *err, const char *part, const char *what)
{
    CHECK(rc == -1 && strstr(err->msg, part), "%s: rc %d, message '%s' lacks '%s'", what, rc,
          err->msg, part);
}

static void test_errors(PwModel *m, PwGen *g)
{
    PwErr err;
    CHECK(pw_gen_create(m, 2, 33, &err) == NULL && strstr(err.msg, "n_positions 32"),
          "create past n_positions: '%s'", err.msg);
    CHECK(pw_gen_create(m, 0, 8, &err) == NULL && strstr(err.msg, "capacity"),
          "create with B=0: '%s'", err.msg);

    int prompt[B * 16], mask[B * 16];
    for (int i = 0; i < B * 16; i++) {
        prompt[i] = 1;
        mask[i] = 1;
    }
    PwGenConfig cfg = {.max_new_tokens = R, .stop_token = -1, .pad_token = PAD,
                       .sample = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f}, .seed = 1};
    expect_error(pw_generate(g, prompt, mask, B, W + 1, NULL, &cfg, &err), &err,
                 "prompt width P=15 exceeds the generator's capacity of 14 tokens", "long prompt");
    expect_error(pw_generate(g, prompt, mask, B, P + 1, NULL, &cfg, &err), &err,
                 "P=7 + max_new_tokens=8 = 15 exceeds the generator's capacity of 14 tokens",
                 "prompt + new tokens");
    expect_error(pw_generate(g, prompt, mask, B + 1, P, NULL, &cfg, &err), &err,
                 "batch B=6 is outside the generator's capacity [1, 5]", "batch");
    mask[2 * P + 3] = 0;
    expect_error(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err), &err,
                 "prompt row 2 is not left-padded: padding at column 3", "right padding");
    for (int t = 0; t < P; t++) mask[1 * P + t] = 0;
    expect_error(pw_generate(g, prompt, mask, 2, P, NULL, &cfg, &err), &err,
                 "prompt row 1 has no real token", "empty row");
    for (int i = 0; i < B * P; i++) mask[i] = 1;
    prompt[4] = V;
    expect_error(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err), &err,
                 "prompt token 50 at (b=0, t=4) is outside the vocabulary", "token id");
    prompt[4] = 1;

    PwGenConfig bad = cfg;
    bad.pad_token = V;
    expect_error(pw_generate(g, prompt, mask, B, P, NULL, &bad, &err), &err, "pad token 50",
                 "pad");
    bad = cfg;
    bad.stop_token = -2;
    expect_error(pw_generate(g, prompt, mask, B, P, NULL, &bad, &err), &err, "stop token -2",
                 "stop");
    bad = cfg;
    bad.max_new_tokens = 0;
    expect_error(pw_generate(g, prompt, mask, B, P, NULL, &bad, &err), &err,
                 "max_new_tokens must be positive", "R=0");
    bad = cfg;
    bad.sample.temperature = 0.0f;
    expect_error(pw_generate(g, prompt, mask, B, P, NULL, &bad, &err), &err, "temperature",
                 "temperature");

    /* decode past the cache: fill one row to capacity by hand */
    CHECK(pw_kv_prefill(g->cache, prompt, mask, 1, P, &err) == 0, "%s", err.msg);
    int tok[1] = {2}, rc = 0;
    for (int i = 0; i < W - P && rc == 0; i++) rc = pw_kv_decode(g->cache, tok, NULL, 1, &err);
    CHECK(rc == 0 && pw_kv_len(g->cache, 0) == W, "filled the row: len %d",
          pw_kv_len(g->cache, 0));
    expect_error(pw_kv_decode(g->cache, tok, NULL, 1, &err), &err,
                 "row 0 already holds 14 tokens, the generator's capacity", "decode past end");
    tok[0] = -1;
    expect_error(pw_kv_decode(g->cache, tok, NULL, 1, &err), &err, "decode token -1 of row 0",
                 "decode token");
    /* a model without the LM head has nothing to decode with */
    PwArch a = *pw_model_arch(m);
    PwModelOpts vo = {.heads = PW_HEAD_VALUE, .maxB = 1, .maxT = 4};
    PwModel *critic = pw_model_create(&a, &vo, &err);
    CHECK(critic && pw_kv_create(critic, 1, 4, &err) == NULL &&
              strstr(err.msg, "decoding needs the LM head"),
          "cache of a value-only model: '%s'", err.msg);
    pw_model_free(critic);
}

/* The arenas' slices (activations, scratch, caches) start 64 floats apart, worked by hand: a
 * batch of 3 scores no longer leaves the next slice 12 bytes off 16 */
static void test_arena(PwModel *m)
{
    const size_t sizes[4] = {3, 0, 65, 64};
    CHECK(pw_model_arena_floats(sizes, 4) == 64 + 128 + 64, "arena of 3, 0, 65, 64 floats: %zu",
          pw_model_arena_floats(sizes, 4));
    const size_t huge[2] = {SIZE_MAX - 10, 1};
    CHECK(pw_model_arena_floats(huge, 2) == SIZE_MAX, "an arena past size_t is SIZE_MAX");
    float *memory = NULL, *p[4];
    PwErr err;
    CHECK(pw_model_alloc_slices(m, &memory, p, sizes, 4, "a test arena", &err) == 0, "%s",
          err.msg);
    CHECK(p[1] == NULL && p[2] - p[0] == 64 && p[3] - p[0] == 192, "slices at 0, -, %td, %td",
          p[2] - p[0], p[3] - p[0]);
    m->ops->free(m->ops, memory);
}

int main(void)
{
    PwModel *m = tiny_model();
    test_arena(m);
    PwErr err;
    PwGen *g = pw_gen_create(m, B, W, &err);
    if (!g) {
        fprintf(stderr, "generator: %s\n", err.msg);
        return 1;
    }
    test_determinism_and_batches(g);
    test_against_host_rows(m, g);
    test_check_every(g);
    test_graphs(m, g);
    test_max_new_tokens(g);
    test_errors(m, g);
    test_forced_stop(m, g);
    pw_gen_free(g);
    pw_model_free(m);
    return pw_test_done("test_gen_generate");
}
