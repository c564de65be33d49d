/* generate.c: batched generation from any model through its KV cache (pw_model.h): one pass over
 * the real prompt tokens, then one token per unfinished row per step, drawn where the model
 * computes by the kernel table's sampler (pw_sample.h) from the logits the cache leaves there,
 * and recorded there too (its `record` entry), so that the host looks at the rows only every
 * check_every steps. */
#include "pw_generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* life cycle: a table of sizes, one allocation, sliced in the order of the table */

enum { F_LOGP, F_LOGPF, NUM_F };
/* live, next, lengths and tokens first and in this order: the device keeps the same four in the
 * same order (PwGenRows), so that one copy moves them */
enum { I_LIVE, I_NEXT, I_LENGTHS, I_TOKENS, I_RMASK, I_STOPPED, NUM_I };

/* the sampler's device memory: rng (B), then rows, out, live, next, length (7 B ints) and
 * tokens (B T), then logp and logp_full (B T each) and the first logits (B V) */
static size_t sampler_bytes(size_t B, size_t T, size_t V)
{
    return B * sizeof(uint64_t) + (7 * B + B * T) * sizeof(int) +
           (2 * B * T + B * V) * sizeof(float);
}

int pw_gen_plan(const PwArch *arch, const PwModelOpts *opts, int maxB, int maxT, size_t *bytes,
                PwErr *err)
{
    PwModel *m = calloc(1, sizeof *m);
    if (!m) return pw_errf(err, "out of memory for the model struct");
    size_t kv = 0;
    int rc = pw_model_shape(m, arch, opts, err) ||
             pw_kv_plan_bytes(m, opts->device, maxB, maxT, &kv, err);
    if (!rc) *bytes = kv + sampler_bytes(maxB, maxT, arch->vocab_size);
    free(m);
    return rc ? -1 : 0;
}

PwGen *pw_gen_create(PwModel *model, int maxB, int maxT, PwErr *err)
{
    PwKVCache *cache = pw_kv_create(model, maxB, maxT, err);
    if (!cache) return NULL;
    const size_t V = pw_model_arch(model)->vocab_size, B = maxB, T = maxT;
    size_t fs[NUM_F] = {[F_LOGP] = B * T, [F_LOGPF] = B * T};
    size_t is[NUM_I] = {
        [I_LIVE] = B, [I_NEXT] = B, [I_LENGTHS] = B, [I_TOKENS] = B * T, [I_RMASK] = B * T,
        [I_STOPPED] = B,
    };
    /* 64-bit words first, then floats, then ints: each part stays aligned */
    size_t nf = 0, ni = 0;
    for (int i = 0; i < NUM_F; i++) nf += fs[i];
    for (int i = 0; i < NUM_I; i++) ni += is[i];
    size_t bytes = B * sizeof(uint64_t) + nf * sizeof(float) + ni * sizeof(int);
    size_t dbytes = sampler_bytes(B, T, V);

    PwGen *g = calloc(1, sizeof *g);
    void *mem = g ? malloc(bytes) : NULL;
    const PwOps *o = model->ops;
    void *dmem = mem ? o->alloc(o, dbytes) : NULL;
    if (!dmem) {
        if (mem && !dmem) pw_model_no_room(model, "a generator's sampler", dbytes, err);
        else pw_errf(err, "out of memory for a generator of B=%d T=%d (%zu MiB)", maxB, maxT,
                     bytes >> 20);
        free(mem);
        free(g);
        pw_kv_free(cache);
        return NULL;
    }
    cache->device_only = 1; /* the sampler reads the decode passes' logits where they are */
    g->memory = mem;
    g->d_memory = dmem;
    g->cache = cache;
    g->maxB = maxB;
    g->maxT = maxT;
    g->V = (int)V;
    g->d_rng = dmem;
    g->d_rows = (int *)(g->d_rng + B);
    g->d_out = g->d_rows + B;
    g->d.live = g->d_out + 3 * B;
    g->d.next = g->d.live + B;
    g->d.length = g->d.next + B;
    g->d.tokens = g->d.length + B;
    g->d.logp = (float *)(g->d.tokens + B * T);
    g->d.logp_full = g->d.logp + B * T;
    g->d_first = g->d.logp_full + B * T;
    g->rng = mem;
    float *f = (float *)(g->rng + B);
    float **fp[NUM_F] = {&g->logp, &g->logp_full};
    for (int i = 0; i < NUM_F; i++) {
        *fp[i] = f;
        f += fs[i];
    }
    int *n = (int *)f;
    int **ip[NUM_I] = {&g->live, &g->next, &g->lengths, &g->tokens, &g->resp_mask, &g->stopped};
    for (int i = 0; i < NUM_I; i++) {
        *ip[i] = n;
        n += is[i];
    }
    for (int b = 0; b < maxB; b++) g->next[b] = b;
    o->copy(o, g->d_rows, g->next, B * sizeof(int), PW_COPY_H2D);
    return g;
}

void pw_gen_free(PwGen *g)
{
    if (!g) return;
    const PwOps *o = g->cache->m->ops;
    o->free(o, g->d_memory);
    pw_kv_free(g->cache);
    free(g->memory);
    free(g);
}

/* Draws one token for each of n rows of logits (row i at logits + i * ld, its stream
 * d_rng[rows[i]]) and records them (pw_sample_record), all on the model's device; pass: the
 * decode pass the logits came from, made the rows' next step (NULL: the prefill's). */
static void draw(PwGen *g, const float *logits, int ld, int n, const int *rows,
                 const PwSampleConfig *sc, const PwKVCache *pass)
{
    const PwOps *o = g->cache->m->ops;
    const int mb = g->maxB;
    int *tok = g->d_out;
    float *lp = (float *)(tok + mb), *lpf = lp + mb;
    o->sample(o, logits, ld, n, g->V, rows, sc, g->d_rng, tok, lp, lpf);
    o->record(o, &g->d, n, rows, tok, lp, lpf, pass ? pass->d_tok : NULL,
              pass ? pass->d_pos : NULL, pass ? pass->d_seg_slot0 : NULL);
}

/* One decode step's device work: the planned pass, the draw from its logits, the bookkeeping.
 * Nothing in it depends on the step's number, so a graph of it replays as the next steps. */
typedef struct Step {
    PwGen *g;
    const PwSampleConfig *sc;
    const float *head; /* the pass's logits: the same buffer at every step */
} Step;

static void decode_step(void *arg)
{
    Step *s = arg;
    PwKVCache *c = s->g->cache;
    s->head = pw_kv_decode_device(c);
    draw(s->g, s->head, (int)c->m->Vp, c->nseg, c->d_seg_row, s->sc, c);
}

/* ------------------------------------------------------------------------------------------ */
/* the sampling loop */

int pw_generate(PwGen *g, const int *prompt, const int *mask, int B, int P,
                const uint64_t *sample_ids, const PwGenConfig *cfg, PwErr *err)
{
    const int V = g->V, R = cfg->max_new_tokens;
    if (pw_sample_config_check(&cfg->sample, err)) return -1;
    if (R <= 0) return pw_errf(err, "max_new_tokens must be positive, got %d", R);
    if (cfg->pad_token < 0 || cfg->pad_token >= V)
        return pw_errf(err, "pad token %d is outside the vocabulary [0, %d)", cfg->pad_token, V);
    if (cfg->stop_token < -1 || cfg->stop_token >= V)
        return pw_errf(err, "stop token %d is outside the vocabulary [0, %d) (-1 = none)",
                       cfg->stop_token, V);
    if (cfg->check_every < 0)
        return pw_errf(err, "check_every must be >= 0 (0 = the device's own), got %d",
                       cfg->check_every);
    if (cfg->graph != 0 && cfg->graph != 1)
        return pw_errf(err, "graph must be 0 or 1, got %d", cfg->graph);
    if (P > g->maxT)
        return pw_errf(err, "prompt width P=%d exceeds the generator's capacity of %d tokens", P,
                       g->maxT);
    if (P + R > g->maxT)
        return pw_errf(err, "prompt width P=%d + max_new_tokens=%d = %d exceeds the generator's "
                       "capacity of %d tokens", P, R, P + R, g->maxT);
    if (pw_kv_prefill(g->cache, prompt, mask, B, P, err)) return -1;

    PwKVCache *c = g->cache;
    const PwOps *o = c->m->ops;
    const int mb = g->maxB;
    const int every = cfg->check_every ? cfg->check_every
                      : o->device == PW_DEVICE_CUDA ? PW_GEN_CHECK_EVERY_GPU : 1;
    g->B = B;
    g->R = R;
    g->d.R = R;
    g->d.stop_token = cfg->stop_token;
    for (int b = 0; b < B; b++) {
        g->rng[b] = pw_sample_stream(cfg->seed, sample_ids ? sample_ids[b] : (uint64_t)b);
        g->live[b] = 1;
        g->next[b] = g->lengths[b] = 0;
    }
    for (int i = 0; i < B * R; i++) g->tokens[i] = cfg->pad_token;
    /* the rows' state, the streams and the prefill's logits (on the host after its passes) go
     * to the device once; live, next, lengths and tokens are one block on both sides */
    o->copy(o, g->d.live, g->live, (3 * (size_t)mb + (size_t)B * R) * sizeof(int), PW_COPY_H2D);
    o->zero(o, g->d.logp, (size_t)B * R * sizeof(float));
    o->zero(o, g->d.logp_full, (size_t)B * R * sizeof(float));
    o->copy(o, g->d_rng, g->rng, (size_t)B * sizeof(uint64_t), PW_COPY_H2D);
    o->copy(o, g->d_first, pw_kv_logits(c, 0), (size_t)B * V * sizeof(float), PW_COPY_H2D);

    /* Step 0 draws every row from the prefill's logits; each later step runs the decode pass
     * of the rows it holds and draws from its logits. `record` writes each live row's token at
     * its column and makes the pass the rows' next step, all on the device. Every `every` steps
     * the host brings back which rows are going and their next tokens (2 maxB ints): it ends
     * when none is, and plans the pass again without the rows that stopped. Until then those
     * rows stay in the pass, drawn from but recording nothing, so every check_every gives the
     * same tokens. With cfg->graph, a step's device work is captured once per planned pass and
     * replayed (a table without graphs, the CPU's, returns none: the step is then launched). The
     * pass's first step is launched and the capture made at its second, so that what a call
     * makes on its first use (cuBLASLt's plans, chosen by timing where asked, which a capture
     * cannot do; the few-row kernel's buffers, zeroed by a memset) is made outside the capture;
     * the same kernels either way. */
    Step st = {g, &cfg->sample, NULL};
    void *graph = NULL; /* the captured step of the pass as planned; NULL: none (yet) */
    int launched = 0;   /* a step of the pass as planned has been launched */
    for (int r = 0; r < R; r++) {
        if (r == 0) {
            draw(g, g->d_first, V, B, g->d_rows, &cfg->sample, NULL);
        } else {
            if (pw_kv_decode_check(c, err)) {
                o->graph_free(o, graph);
                return -1;
            }
            if (cfg->graph && !graph && launched) graph = o->graph_capture(o, decode_step, &st);
            if (graph) o->graph_run(o, graph);
            else decode_step(&st);
            launched = 1;
            pw_kv_decode_done(c, st.head);
        }
        if (r == R - 1 || r % every) continue;
        o->copy(o, g->live, g->d.live, 2 * (size_t)mb * sizeof(int), PW_COPY_D2H);
        int nlive = 0;
        for (int b = 0; b < B; b++) nlive += g->live[b];
        if (!nlive) break;
        if (r == 0 || nlive < c->nseg) {
            o->graph_free(o, graph); /* the pass changes: its graph with it */
            graph = NULL;
            launched = 0;
            if (pw_kv_decode_plan(c, g->next, g->live, B, err)) return -1;
        }
    }
    o->graph_free(o, graph);
    o->copy(o, g->live, g->d.live, (3 * (size_t)mb + (size_t)B * R) * sizeof(int), PW_COPY_D2H);
    o->copy(o, g->logp, g->d.logp, (size_t)B * R * sizeof(float), PW_COPY_D2H);
    o->copy(o, g->logp_full, g->d.logp_full, (size_t)B * R * sizeof(float), PW_COPY_D2H);
    o->copy(o, g->rng, g->d_rng, (size_t)B * sizeof(uint64_t), PW_COPY_D2H);
    for (int b = 0; b < B; b++) {
        g->stopped[b] = !g->live[b];
        for (int t = 0; t < R; t++) g->resp_mask[b * R + t] = t < g->lengths[b];
    }
    return 0;
}

void pw_gen_sequences(int *seq, int *seq_mask, int *targets, const int *prompt,
                      const int *prompt_mask, int P, const int *resp, const int *resp_mask, int R,
                      int B, int pad_token)
{
    const int W = P + R;
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < P; t++) {
            int real = prompt_mask ? prompt_mask[b * P + t] != 0 : 1;
            seq[b * W + t] = real ? prompt[b * P + t] : pad_token;
            seq_mask[b * W + t] = real;
        }
        for (int t = 0; t < R; t++) {
            int real = resp_mask[b * R + t] != 0;
            seq[b * W + P + t] = real ? resp[b * R + t] : pad_token;
            seq_mask[b * W + P + t] = real;
        }
        if (!targets) continue;
        for (int t = 0; t < W; t++) targets[b * W + t] = -1;
        for (int t = 0; t < R; t++)
            if (resp_mask[b * R + t]) targets[b * W + P - 1 + t] = resp[b * R + t];
    }
}
