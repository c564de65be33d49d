/* test_gen_cache.c: the KV-cache decode against the full forward: with the same tokens, every
 * step's logits and the generator's log-probs equal what pw_model_forward computes. */
#include <stdlib.h>
#include <string.h>

#include "pw_generate.h"
#include "pw_model.h"
#include "pw_test.h"
#include "gen_model.h"

enum { B = 10, P = 7, R = 6, W = P + R, V = 50 };

/* real prompt tokens per row: full, short, a single token, ... (left-padded to P) */
static const int prompt_len[B] = {7, 3, 1, 5, 7, 2, 7, 7, 7, 7};
/* response tokens per row: rows stop at different steps, two run to max_new_tokens */
static const int resp_len[B] = {6, 1, 3, 6, 2, 4, 5, 6, 1, 3};

static PwModel *tiny_model(int maxB, int maxT)
{
    return gen_tiny_model(V, maxB, maxT, 1234, 4.0f, 10.0f);
}

static void make_prompts(int *prompt, int *mask, unsigned long long *rng)
{
    for (int b = 0; b < B; b++)
        for (int t = 0; t < P; t++) {
            int real = t >= P - prompt_len[b];
            mask[b * P + t] = real;
            /* padding carries a token id that must never matter */
            prompt[b * P + t] = real ? (int)(pw_test_rng_next(rng) % V) : 49;
        }
}

/* Teacher forcing: drive prefill and decode with fixed response tokens, rows leaving at their
 * own steps, and compare every row's logits with the forward's at the same position. */
static void test_cache_matches_forward(void)
{
    unsigned long long rng = 7;
    int prompt[B * P], mask[B * P], resp[B * R], rmask[B * R];
    make_prompts(prompt, mask, &rng);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < R; t++) {
            resp[b * R + t] = (int)(pw_test_rng_next(&rng) % V);
            rmask[b * R + t] = t < resp_len[b];
        }
    PwModel *m = tiny_model(B, W);
    PwErr err;
    PwKVCache *c = pw_kv_create(m, B, W, &err);
    CHECK(c != NULL, "%s", err.msg);
    /* a prefill pass holds 4 full rows (52 tokens): these 53 real tokens need two passes, and
     * the logits of the first pass must survive the second */
    int real = 0, want_steps = 0;
    for (int b = 0; b < B; b++) {
        real += prompt_len[b];
        want_steps += resp_len[b];
    }
    CHECK(real > pw_kv_pass_tokens(c), "prefill fits one pass: %d real tokens, %d per pass", real,
          pw_kv_pass_tokens(c));

    float *got = calloc((size_t)B * R * V, sizeof(float));
    float *want = calloc((size_t)B * R * V, sizeof(float));
    CHECK(pw_kv_prefill(c, prompt, mask, B, P, &err) == 0, "%s", err.msg);
    for (int b = 0; b < B; b++)
        CHECK(pw_kv_len(c, b) == prompt_len[b], "row %d len %d", b, pw_kv_len(c, b));
    for (int r = 0; r < R; r++) {
        int in[B], active[B];
        if (r > 0) {
            for (int b = 0; b < B; b++) {
                in[b] = resp[b * R + r - 1];
                active[b] = r < resp_len[b];
            }
            CHECK(pw_kv_decode(c, in, active, B, &err) == 0, "%s", err.msg);
        }
        for (int b = 0; b < B; b++)
            if (r < resp_len[b])
                memcpy(got + ((size_t)b * R + r) * V, pw_kv_logits(c, b), V * sizeof(float));
    }
    for (int b = 0; b < B; b++)
        CHECK(pw_kv_len(c, b) == prompt_len[b] + resp_len[b] - 1, "row %d cached %d tokens", b,
              pw_kv_len(c, b));

    int seq[B * W], smask[B * W], targets[B * W];
    pw_gen_sequences(seq, smask, targets, prompt, mask, P, resp, rmask, R, B, 49);
    float *logits = malloc((size_t)B * R * V * sizeof(float));
    PwModelInput in = {seq, smask, NULL, B, W, 1.0f};
    PwOutputs out = {.col0 = P - 1, .width = R, .logits = logits};
    CHECK(pw_model_forward(m, &in, &out, &err) == 0, "%s", err.msg);
    int compared = 0;
    for (int b = 0; b < B; b++)
        for (int r = 0; r < resp_len[b]; r++) {
            memcpy(want + ((size_t)b * R + r) * V, logits + ((size_t)b * R + r) * V,
                   V * sizeof(float));
            compared++;
        }
    free(logits);
    CHECK(compared == want_steps, "compared %d steps", compared);
    double e = pw_max_rel_err_ff(got, want, (size_t)B * R * V, 1e-6);
    CHECK(e <= 1e-5, "cached decode logits vs full forward: rel err %.3g", e);
    printf("cache vs forward: %d (row, step) logits rows, max rel err %.3g\n", compared, e);

    pw_kv_free(c);
    pw_model_free(m);
    free(got);
    free(want);
}

/* End to end: pw_generate's log-probs at a temperature, without filters, are what the actor
 * recomputes with the forward at that temperature on pw_gen_sequences' layout. Stopping rows
 * are made by choosing
 * as stop token the token row 0 draws at step 2 in a run without stop token: the same stream
 * draws it again, so row 0 must end there. */
static void test_generate_logp_matches_forward(float temperature)
{
    unsigned long long rng = 11;
    int prompt[B * P], mask[B * P];
    make_prompts(prompt, mask, &rng);
    PwModel *m = tiny_model(B, W);
    PwErr err;
    PwGen *g = pw_gen_create(m, B, W, &err);
    PwGenConfig cfg = {.max_new_tokens = R, .stop_token = -1, .pad_token = 49,
                       .sample = {.temperature = temperature, .top_k = 0, .top_p = 1.0f},
                       .seed = 5};
    CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == 0, "%s", err.msg);
    int first[B * R];
    memcpy(first, g->tokens, sizeof first);
    for (int b = 0; b < B; b++) CHECK(g->lengths[b] == R && !g->stopped[b], "row %d", b);
    cfg.stop_token = first[0 * R + 2];
    CHECK(pw_generate(g, prompt, mask, B, P, NULL, &cfg, &err) == 0, "%s", err.msg);
    int end0 = 0;
    while (first[end0] != cfg.stop_token) end0++;
    CHECK(g->lengths[0] == end0 + 1 && g->stopped[0], "row 0 length %d", g->lengths[0]);

    int nstop = 0;
    for (int b = 0; b < B; b++) {
        nstop += g->stopped[b];
        for (int t = 0; t < R; t++) {
            int real = t < g->lengths[b];
            CHECK(g->resp_mask[b * R + t] == real, "mask (%d, %d)", b, t);
            /* until its stop the row draws what the first run drew */
            if (real) CHECK(g->tokens[b * R + t] == first[b * R + t], "token (%d, %d)", b, t);
            else CHECK(g->tokens[b * R + t] == 49 && g->logp[b * R + t] == 0.0f,
                       "padding (%d, %d)", b, t);
            CHECK(g->logp[b * R + t] == g->logp_full[b * R + t], "filters off: same logp");
        }
        if (g->stopped[b]) CHECK(g->tokens[b * R + g->lengths[b] - 1] == cfg.stop_token, "stop");
    }

    int seq[B * W], smask[B * W], targets[B * W];
    pw_gen_sequences(seq, smask, targets, prompt, mask, P, g->tokens, g->resp_mask, R, B, 49);
    float got[B * R], want[B * R];
    PwModelInput in = {seq, smask, targets, B, W, temperature};
    PwOutputs out = {.col0 = P - 1, .width = R, .logp = want}; /* 0 after each row's end */
    CHECK(pw_model_forward(m, &in, &out, &err) == 0, "%s", err.msg);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < R; t++) got[b * R + t] = g->logp_full[b * R + t];
    double e = pw_max_rel_err_ff(got, want, B * R, 1e-3);
    CHECK(e <= 1e-5, "generator logp vs forward logp: rel err %.3g", e);
    printf("generate vs forward logp at temperature %g: %d rows stopped early, max rel err %.3g\n",
           temperature, nstop, e);

    pw_gen_free(g);
    pw_model_free(m);
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "llama") || !strcmp(argv[1], "qwen3")))
        gen_family = PW_FAMILY_LLAMA;
    gen_qwen3 = argc > 1 && !strcmp(argv[1], "qwen3");
    test_cache_matches_forward();
    test_generate_logp_matches_forward(1.0f);
    test_generate_logp_matches_forward(0.7f);
    return pw_test_done("test_gen_cache");
}
