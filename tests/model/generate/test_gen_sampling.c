/* test_gen_sampling.c: the sampling filters on hand-made logits (exact kept sets, ties, p at a
 * boundary), the two log-probs, the inverse CDF, the streams and the frequencies of draws. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pw_generate.h"
#include "pw_ops.h"
#include "pw_test.h"

#define MAXV 6000

static double prob[MAXV];
static int work[MAXV];

/* Run the filters on logits and compare the kept set with the expected token ids. */
static void expect_kept(const char *what, const float *logits, int V, float T, int k, float p,
                        const int *want, int nwant)
{
    PwSampleConfig sc = {.temperature = T, .top_k = k, .top_p = p};
    int kept = pw_sample_distribution(prob, work, NULL, logits, V, &sc);
    CHECK(kept == nwant, "%s: kept %d tokens, want %d", what, kept, nwant);
    int in[64] = {0};
    for (int i = 0; i < nwant; i++) in[want[i]] = 1;
    double sum = 0.0;
    for (int v = 0; v < V; v++) {
        CHECK((prob[v] > 0.0) == in[v], "%s: token %d kept=%d", what, v, prob[v] > 0.0);
        sum += prob[v];
    }
    CHECK(fabs(sum - 1.0) < 1e-12, "%s: kept mass %.17g", what, sum);
}

static void logs_of(float *logits, const double *p, int V)
{
    for (int v = 0; v < V; v++) logits[v] = (float)log(p[v]);
}

static void test_top_k(void)
{
    /* sorted: 3 3 3 2 2 1 0 -1 */
    const float x[8] = {1, 3, 3, 2, 0, 3, -1, 2};
    expect_kept("top_k=1 keeps the 3-way tie", x, 8, 1.0f, 1, 1.0f, (int[]){1, 2, 5}, 3);
    expect_kept("top_k=2 keeps the 3-way tie", x, 8, 1.0f, 2, 1.0f, (int[]){1, 2, 5}, 3);
    expect_kept("top_k=3", x, 8, 1.0f, 3, 1.0f, (int[]){1, 2, 5}, 3);
    expect_kept("top_k=4 widens over the 2s", x, 8, 1.0f, 4, 1.0f, (int[]){1, 2, 3, 5, 7}, 5);
    expect_kept("top_k=6", x, 8, 1.0f, 6, 1.0f, (int[]){0, 1, 2, 3, 5, 7}, 6);
    expect_kept("top_k=V", x, 8, 1.0f, 8, 1.0f, (int[]){0, 1, 2, 3, 4, 5, 6, 7}, 8);
    expect_kept("top_k>V", x, 8, 1.0f, 100, 1.0f, (int[]){0, 1, 2, 3, 4, 5, 6, 7}, 8);
    expect_kept("top_k=0 is off", x, 8, 0.5f, 0, 1.0f, (int[]){0, 1, 2, 3, 4, 5, 6, 7}, 8);
    /* temperature never changes what top-k keeps */
    expect_kept("top_k=4 at T=7", x, 8, 7.0f, 4, 1.0f, (int[]){1, 2, 3, 5, 7}, 5);

    /* the kept probabilities are the softmax renormalised over the kept set */
    PwSampleConfig sc = {.temperature = 2.0f, .top_k = 4, .top_p = 1.0f};
    pw_sample_distribution(prob, work, NULL, x, 8, &sc);
    double z = 3 * exp(1.5) + 2 * exp(1.0);
    CHECK(fabs(prob[1] - exp(1.5) / z) < 1e-14 && fabs(prob[3] - exp(1.0) / z) < 1e-14,
          "renormalised top-k probabilities %.17g %.17g", prob[1], prob[3]);
}

static void test_top_p(void)
{
    float x[4];
    logs_of(x, (double[]){0.5, 0.3, 0.2}, 3);
    expect_kept("p=0.8 reaches the mass at two tokens", x, 3, 1.0f, 0, 0.8f, (int[]){0, 1}, 2);
    expect_kept("p=0.5 is reached by the first token", x, 3, 1.0f, 0, 0.5f, (int[]){0}, 1);
    expect_kept("p=0.81 needs all three", x, 3, 1.0f, 0, 0.81f, (int[]){0, 1, 2}, 3);
    expect_kept("p=0.79", x, 3, 1.0f, 0, 0.79f, (int[]){0, 1}, 2);
    expect_kept("p tiny keeps the top token", x, 3, 1.0f, 0, 1e-6f, (int[]){0}, 1);
    expect_kept("p=1 is off", x, 3, 1.0f, 0, 1.0f, (int[]){0, 1, 2}, 3);

    /* order of the vocabulary does not matter: the same probabilities shuffled */
    logs_of(x, (double[]){0.2, 0.5, 0.3}, 3);
    expect_kept("p=0.8 shuffled", x, 3, 1.0f, 0, 0.8f, (int[]){1, 2}, 2);

    /* a tie at the boundary is kept whole: 0.4 then the 0.2s reach 0.5 */
    logs_of(x, (double[]){0.2, 0.4, 0.2, 0.2}, 4);
    expect_kept("p=0.5 widens over a tie", x, 4, 1.0f, 0, 0.5f, (int[]){0, 1, 2, 3}, 4);
    expect_kept("p=0.4 stops before the tie", x, 4, 1.0f, 0, 0.4f, (int[]){1}, 1);
    /* every token tied: the nucleus is the whole vocabulary */
    float flat[5] = {0, 0, 0, 0, 0};
    expect_kept("flat", flat, 5, 1.0f, 0, 0.1f, (int[]){0, 1, 2, 3, 4}, 5);

    /* top-p runs on what top-k left: 0.4 0.3 0.2 0.1 reach 0.75 at three tokens, but after
     * top_k=3 the masses are 4/9, 3/9, 2/9 and two tokens reach it */
    logs_of(x, (double[]){0.4, 0.3, 0.2, 0.1}, 4);
    expect_kept("p=0.75 alone", x, 4, 1.0f, 0, 0.75f, (int[]){0, 1, 2}, 3);
    expect_kept("top_k=3 then p=0.75", x, 4, 1.0f, 3, 0.75f, (int[]){0, 1}, 2);
    PwSampleConfig sc = {.temperature = 1.0f, .top_k = 3, .top_p = 0.75f};
    pw_sample_distribution(prob, work, NULL, x, 4, &sc);
    CHECK(fabs(prob[0] - 4.0 / 7.0) < 1e-6 && fabs(prob[1] - 3.0 / 7.0) < 1e-6,
          "nucleus renormalised: %.9g %.9g", prob[0], prob[1]);
    /* temperature flattens before top-p: at T=100 the 4 tokens are nearly equal */
    expect_kept("T=100 then p=0.5", x, 4, 100.0f, 0, 0.5f, (int[]){0, 1}, 2);
}

/* The filters against a plain reference on a large random vocabulary: sort everything
 * (descending, ties by id), walk the mass, keep what is at least as likely as the boundary.
 * This covers the shortcut that only sorts the candidates above (1 - p) / n. */
static const double *ref_key;
static int ref_cmp(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    if (ref_key[i] != ref_key[j]) return ref_key[i] > ref_key[j] ? -1 : 1;
    return i - j;
}

static void test_filters_vs_reference(void)
{
    enum { V = 5000 };
    static float x[V];
    static double y[V], e[V];
    static int id[V];
    unsigned long long rng = 99;
    const int ks[] = {0, 1, 40, 4999};
    const float ps[] = {1.0f, 0.9f, 0.5f, 0.99f, 0.01f};
    int mismatches = 0;
    for (int trial = 0; trial < 3; trial++) {
        /* heavy ties in trial 2: logits rounded to a coarse grid */
        for (int v = 0; v < V; v++) {
            double r = pw_test_normal(&rng) * (trial == 0 ? 1.0 : 4.0);
            x[v] = trial == 2 ? (float)floor(r * 2.0) / 2.0f : (float)r;
        }
        for (size_t ki = 0; ki < PW_ARRAY_LEN(ks); ki++)
            for (size_t pi = 0; pi < PW_ARRAY_LEN(ps); pi++) {
                const float T = 0.7f;
                double m = -INFINITY;
                for (int v = 0; v < V; v++) {
                    y[v] = (double)x[v] / T;
                    m = y[v] > m ? y[v] : m;
                    id[v] = v;
                }
                ref_key = y;
                qsort(id, V, sizeof(int), ref_cmp);
                int k = ks[ki] ? ks[ki] : V;
                double kth = y[id[k - 1]], z = 0.0;
                for (int v = 0; v < V; v++) {
                    e[v] = y[v] >= kth ? exp(y[v] - m) : 0.0;
                    z += e[v];
                }
                double boundary = 0.0, cum = 0.0;
                if (ps[pi] < 1.0f)
                    for (int i = 0; i < V; i++) {
                        cum += e[id[i]] / z;
                        if (cum >= ps[pi] - PW_SAMPLE_TOP_P_SLACK) {
                            boundary = e[id[i]];
                            break;
                        }
                    }
                PwSampleConfig sc = {.temperature = T, .top_k = ks[ki], .top_p = ps[pi]};
                pw_sample_distribution(prob, work, NULL, x, V, &sc);
                for (int v = 0; v < V; v++) {
                    int want = e[v] > 0.0 && e[v] >= boundary;
                    mismatches += (prob[v] > 0.0) != want;
                }
            }
    }
    CHECK(mismatches == 0, "%d tokens kept differently from the sorted reference", mismatches);
}

static void test_logp_and_pick(void)
{
    /* inverse CDF in id order never lands on a zero-probability token */
    const double p[4] = {0.0, 0.25, 0.0, 0.75};
    CHECK(pw_sample_pick(p, 4, 0.0) == 1, "u=0");
    CHECK(pw_sample_pick(p, 4, 0.2499) == 1, "u<0.25");
    CHECK(pw_sample_pick(p, 4, 0.25) == 3, "u=0.25");
    CHECK(pw_sample_pick(p, 4, 0.9999999999999999) == 3, "u just below 1");
    const double q[3] = {0.5, 0.5 - 1e-12, 0.0}; /* mass a hair short of 1 */
    CHECK(pw_sample_pick(q, 3, 0.9999999999999999) == 1, "rounding falls back to last kept");

    /* both log-probs of a drawn token: logits 0, log 2, log 3, log 4 at T=0.5 with top_k=2 */
    float x[4] = {0.0f, (float)log(2.0), (float)log(3.0), (float)log(4.0)};
    PwSampleConfig sc = {.temperature = 0.5f, .top_k = 2, .top_p = 1.0f};
    double full[4], zf = 0.0;
    for (int v = 0; v < 4; v++) zf += exp((double)x[v] / 0.5);
    for (int v = 0; v < 4; v++) full[v] = (double)x[v] / 0.5 - log(zf);
    int seen[4] = {0};
    uint64_t st = pw_sample_stream(3, 0);
    for (int i = 0; i < 200; i++) {
        PwSample s = pw_sample_row(prob, work, x, 4, &sc, &st);
        seen[s.token]++;
        /* kept: tokens 2 and 3 with masses 9 and 16 (x/T doubles the log) */
        double want = s.token == 3 ? log(16.0 / 25.0) : log(9.0 / 25.0);
        CHECK(s.token >= 2, "top_k=2 drew token %d", s.token);
        CHECK(fabs(s.logp - want) < 1e-6, "logp %.9g want %.9g", s.logp, want);
        CHECK(fabs(s.logp_full - full[s.token]) < 1e-6, "logp_full %.9g want %.9g", s.logp_full,
              full[s.token]);
    }
    CHECK(seen[2] > 0 && seen[3] > 0, "both kept tokens drawn: %d %d", seen[2], seen[3]);
}

static void test_streams(void)
{
    /* same (seed, id): same numbers; any other seed or id: another stream */
    uint64_t a = pw_sample_stream(42, 7), b = pw_sample_stream(42, 7);
    for (int i = 0; i < 10; i++)
        CHECK(pw_sample_uniform(&a) == pw_sample_uniform(&b), "same stream differs at %d", i);
    uint64_t s[4] = {pw_sample_stream(42, 7), pw_sample_stream(42, 8), pw_sample_stream(43, 7),
                     pw_sample_stream(43, 6)};
    double first[4];
    for (int i = 0; i < 4; i++) first[i] = pw_sample_uniform(&s[i]);
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            CHECK(first[i] != first[j], "streams %d and %d start alike", i, j);
    /* uniforms stay in [0, 1) with mean 1/2 */
    uint64_t st = pw_sample_stream(1, 1);
    double sum = 0.0, lo = 1.0, hi = 0.0;
    for (int i = 0; i < 100000; i++) {
        double u = pw_sample_uniform(&st);
        sum += u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
    }
    CHECK(lo >= 0.0 && hi < 1.0 && fabs(sum / 100000 - 0.5) < 0.005, "uniforms: mean %.4f",
          sum / 100000);
}

/* Draw many tokens from a small fixed distribution and compare counts with a chi-square bound
 * far above its 99.99% quantile (4 degrees of freedom: 23.5), so a seed cannot fail it by luck
 * while a wrong CDF (off by one token, unnormalised, filtered wrongly) fails by thousands. */
static double chi_square(const PwSampleConfig *sc, const double *p, const double *want, int V,
                         int N, uint64_t seed)
{
    float x[8];
    logs_of(x, p, V);
    int count[8] = {0};
    uint64_t st = pw_sample_stream(seed, 0);
    for (int i = 0; i < N; i++) count[pw_sample_row(prob, work, x, V, sc, &st).token]++;
    double chi = 0.0;
    for (int v = 0; v < V; v++) {
        if (want[v] == 0.0) {
            if (count[v]) return INFINITY;
            continue;
        }
        double d = count[v] - N * want[v];
        chi += d * d / (N * want[v]);
    }
    return chi;
}

static void test_frequencies(void)
{
    const double p[5] = {0.1, 0.2, 0.3, 0.25, 0.15};
    PwSampleConfig plain = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f};
    double chi = chi_square(&plain, p, p, 5, 100000, 2024);
    CHECK(chi < 30.0, "plain draws: chi-square %.2f", chi);
    /* top_k=3 keeps 0.3, 0.25, 0.2 renormalised over 0.75 */
    PwSampleConfig k3 = {.temperature = 1.0f, .top_k = 3, .top_p = 1.0f};
    const double wk[5] = {0.0, 0.2 / 0.75, 0.3 / 0.75, 0.25 / 0.75, 0.0};
    chi = chi_square(&k3, p, wk, 5, 100000, 2025);
    CHECK(chi < 30.0, "top_k draws: chi-square %.2f", chi);
    /* top_p=0.7 keeps 0.3, 0.25, 0.2 as well (0.55 < 0.7 <= 0.75) */
    PwSampleConfig p7 = {.temperature = 1.0f, .top_k = 0, .top_p = 0.7f};
    chi = chi_square(&p7, p, wk, 5, 100000, 2026);
    CHECK(chi < 30.0, "top_p draws: chi-square %.2f", chi);
    /* T=2 gives p^(1/2) renormalised */
    PwSampleConfig t2 = {.temperature = 2.0f, .top_k = 0, .top_p = 1.0f};
    double wt[5], z = 0.0;
    for (int v = 0; v < 5; v++) z += sqrt(p[v]);
    for (int v = 0; v < 5; v++) wt[v] = sqrt(p[v]) / z;
    chi = chi_square(&t2, p, wt, 5, 100000, 2027);
    CHECK(chi < 30.0, "T=2 draws: chi-square %.2f", chi);
}

static void test_config_errors(void)
{
    PwErr err;
    PwSampleConfig bad[] = {
        {.temperature = 0.0f, .top_k = 0, .top_p = 1.0f},
        {.temperature = -1.0f, .top_k = 0, .top_p = 1.0f},
        {.temperature = NAN, .top_k = 0, .top_p = 1.0f},
        {.temperature = INFINITY, .top_k = 0, .top_p = 1.0f},
        {.temperature = 1.0f, .top_k = -1, .top_p = 1.0f},
        {.temperature = 1.0f, .top_k = 0, .top_p = 0.0f},
        {.temperature = 1.0f, .top_k = 0, .top_p = 1.5f},
        {.temperature = 1.0f, .top_k = 0, .top_p = NAN},
    };
    const char *field[] = {"temperature", "temperature", "temperature", "temperature", "top_k",
                           "top_p", "top_p", "top_p"};
    for (size_t i = 0; i < PW_ARRAY_LEN(bad); i++) {
        err.msg[0] = 0;
        CHECK(pw_sample_config_check(&bad[i], &err) == -1 && strstr(err.msg, field[i]),
              "bad config %zu: '%s'", i, err.msg);
    }
    PwSampleConfig ok = {.temperature = 0.7f, .top_k = 50, .top_p = 0.95f};
    CHECK(pw_sample_config_check(&ok, &err) == 0, "good config refused: %s", err.msg);
}

/* n rows at once (pw_sample_rows and the CPU table's `sample` entry, what the generator calls):
 * row i read ld floats after row i - 1 (NaN in between, never read), drawing from the stream
 * rows[i] names: the tokens, log-probs and streams of pw_sample_row on each row alone. */
static void test_rows(void)
{
    enum { N = 9, VR = 40, LD = 64 };
    float x[N * LD];
    unsigned long long r = 11;
    for (int i = 0; i < N * LD; i++)
        x[i] = i % LD < VR ? (float)(pw_test_rng_next(&r) % 1000) / 150.0f : NAN;
    for (int v = 0; v < VR; v += 4) x[2 * LD + v] = 1.0f; /* a row of ties */
    const int rows[N] = {4, 0, 8, 2, 6, 1, 5, 3, 7};
    const PwSampleConfig cfgs[3] = {{1.0f, 0, 1.0f}, {0.6f, 7, 1.0f}, {1.4f, 12, 0.85f}};
    for (int c = 0; c < 3; c++) {
        uint64_t a[N], b[N], d[N];
        for (int i = 0; i < N; i++) a[i] = b[i] = d[i] = pw_sample_stream(3, (uint64_t)i);
        int tok[N], tok2[N], bad = 0;
        float lp[N], lpf[N], lp2[N], lpf2[N];
        pw_sample_rows(x, LD, N, VR, rows, &cfgs[c], a, tok, lp, lpf);
        const PwOps *o = pw_ops_cpu();
        o->sample(o, x, LD, N, VR, rows, &cfgs[c], d, tok2, lp2, lpf2);
        double prob[VR];
        int work[VR];
        for (int i = 0; i < N; i++) {
            PwSample s = pw_sample_row(prob, work, x + i * LD, VR, &cfgs[c], &b[rows[i]]);
            bad += s.token != tok[i] || s.logp != lp[i] || s.logp_full != lpf[i];
            bad += tok2[i] != tok[i] || lp2[i] != lp[i] || lpf2[i] != lpf[i];
        }
        for (int i = 0; i < N; i++) bad += a[i] != b[i] || d[i] != b[i];
        CHECK(bad == 0, "config %d: %d differences between the rows at once and one by one", c,
              bad);
    }
}

/* The rows' bookkeeping after a draw (pw_sample_record and the CPU table's `record`), worked by
 * hand: 4 rows, R = 3, stop token 9, every row one token long (so the step's column is 1); the
 * draws come in the pass's order (rows 2, 0, 3, 1). Row 1 had already stopped (records
 * nothing), row 3 draws the stop token (records it and leaves); the pass's segments take the
 * drawn tokens and move one position and slot further. */
static void test_record(void)
{
    for (int entry = 0; entry < 2; entry++) {
        int live[4] = {1, 0, 1, 1}, next[4] = {5, 9, 6, 7}, length[4] = {1, 1, 1, 1};
        int tokens[12], ptok[4] = {0}, ppos[4] = {10, 11, 12, 13}, pslot[4] = {3, 4, 5, 6};
        float logp[12], logpf[12];
        for (int i = 0; i < 12; i++) tokens[i] = -1, logp[i] = logpf[i] = 0.0f;
        PwGenRows g = {live, next, length, tokens, logp, logpf, 3, 9};
        const int rows[4] = {2, 0, 3, 1}, tok[4] = {4, 8, 9, 2};
        const float lp[4] = {-0.5f, -1.0f, -1.5f, -2.0f}, lpf[4] = {-0.6f, -1.1f, -1.6f, -2.1f};
        if (entry) {
            const PwOps *o = pw_ops_cpu();
            o->record(o, &g, 4, rows, tok, lp, lpf, ptok, ppos, pslot);
        } else {
            pw_sample_record(&g, 4, rows, tok, lp, lpf, ptok, ppos, pslot);
        }
        const int want_tokens[12] = {-1, 8, -1, -1, -1, -1, -1, 4, -1, -1, 9, -1};
        const float want_logp[12] = {0, -1.0f, 0, 0, 0, 0, 0, -0.5f, 0, 0, -1.5f, 0};
        const float want_logpf[12] = {0, -1.1f, 0, 0, 0, 0, 0, -0.6f, 0, 0, -1.6f, 0};
        int bad = 0;
        for (int i = 0; i < 12; i++)
            bad += tokens[i] != want_tokens[i] || logp[i] != want_logp[i] ||
                   logpf[i] != want_logpf[i];
        const int want_live[4] = {1, 0, 1, 0}, want_next[4] = {8, 9, 4, 9},
                  want_len[4] = {2, 1, 2, 2};
        for (int b = 0; b < 4; b++)
            bad += live[b] != want_live[b] || next[b] != want_next[b] || length[b] != want_len[b];
        for (int i = 0; i < 4; i++)
            bad += ptok[i] != tok[i] || ppos[i] != 11 + i || pslot[i] != 4 + i;
        CHECK(bad == 0, "record (%s): %d values differ from the hand-worked ones",
              entry ? "the CPU table" : "pw_sample_record", bad);
        /* the prefill's draws: no pass to advance */
        pw_sample_record(&g, 1, rows + 1, tok, lp, lpf, NULL, NULL, NULL);
        CHECK(tokens[2] == 4 && length[0] == 3 && next[0] == 4, "record without a pass");
    }
}

int main(void)
{
    test_top_k();
    test_top_p();
    test_filters_vs_reference();
    test_logp_and_pick();
    test_streams();
    test_frequencies();
    test_config_errors();
    test_rows();
    test_record();
    return pw_test_done("test_gen_sampling");
}
