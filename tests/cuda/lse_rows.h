/* lse_rows.h: where a causal attention's log-sum-exp went wrong, row by row, and what each wrong
 * value is instead; and where its backward's gradient rows did (grad_rows, below). An attention
 * kernel that fails its lse check says only by how much; this says which rows (by the warpgroup of
 * a block of 128 queries that owns them, by how many key tiles of 64 they see, by sequence: their
 * padding differs) and, for each, which plausible mistake reproduces the wrong value: a key tile
 * left out (the diagonal one or an earlier one), a tile counted twice, a tile's keys those of the
 * tile two before it (what a product reading its double buffer before the new tile landed would
 * see), the causal mask not applied inside the diagonal tile or up to the block's last query, only
 * the diagonal tile counted. Computed on the host from the bfloat16 qkv the kernel read (layout of
 * flash_common.cuh's flash_at: per row NH query heads, NKV key heads, NKV value heads), in double.
 * Used by test_cuda_attention_bf16.c where a GPU's kernel fails, and checked by
 * test_flash_wg_emu.c against lse values and gradient rows made wrong on purpose. */
#ifndef PW_TEST_CUDA_LSE_ROWS_H
#define PW_TEST_CUDA_LSE_ROWS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pw_bf16.h" /* pw_bf16_to_f32 */

#define LSE_TILE 64    /* keys a tile */
#define LSE_BLOCK 128  /* queries a block: two warpgroups of 64 */
#define LSE_MATCH 1e-4 /* a candidate within this of the wrong value explains it */
#define LSE_SEQS 4     /* sequences counted apart (padding differs between them) */

enum {
    LSE_NONE,      /* no candidate below explains it */
    LSE_NO_DIAG,   /* the diagonal tile (the one holding the query's own key) left out */
    LSE_NO_EARLY,  /* one earlier tile left out */
    LSE_TWICE,     /* one tile counted twice */
    LSE_STALE,     /* one tile's keys those of the tile two before (the same buffer) */
    LSE_UNMASKED,  /* the diagonal tile's later keys counted (no causal mask inside it) */
    LSE_TO_BLOCK,  /* keys up to the block's last query counted */
    LSE_DIAG_ONLY, /* the diagonal tile alone */
    LSE_KINDS
};

static const char *const lse_kind_names[LSE_KINDS] = {
    "none of these",           "the diagonal tile left out", "an earlier tile left out",
    "a tile twice",            "a tile two before instead",  "the diagonal tile unmasked",
    "keys to the block's end", "the diagonal tile alone"};

typedef struct LseRows {
    size_t rows, wrong;
    size_t by_wg[2];      /* the first or second 64 queries of a block of 128 */
    size_t by_tiles[3];   /* key tiles seen: 1, 2, 3 or more */
    size_t by_seq[LSE_SEQS]; /* by sequence (the last counts every later one too) */
    size_t by_kind[LSE_KINDS];
    int first_b, first_h, first_t; /* the first wrong row (-1: none) */
    double first_got, first_want;
} LseRows;

/* log(sum exp(s[j])) over j in [j0, j1) where use[j] (s in the lse's units), and how many */
static inline double lse_over(const double *s, const int *use, int j0, int j1, int *n)
{
    double mx = -INFINITY, z = 0.0;
    *n = 0;
    for (int j = j0; j < j1; j++)
        if (use[j] && s[j] > mx) mx = s[j];
    for (int j = j0; j < j1; j++)
        if (use[j]) {
            z += exp(s[j] - mx);
            (*n)++;
        }
    return *n ? mx + log(z) : -INFINITY;
}

/* log of exp(a) + exp(b) - exp(c) style sums, in the lse's units */
static inline double lse_add(double a, double b)
{
    if (a == -INFINITY) return b;
    if (b == -INFINITY) return a;
    double m = a > b ? a : b;
    return m + log(exp(a - m) + exp(b - m));
}
static inline double lse_sub(double a, double b) /* a > b */
{
    if (b == -INFINITY) return a;
    return a + log1p(-exp(b - a));
}

/* the kind of mistake that gives `got` for query t of (b, h) given its scores s[0..T) (scale
 * applied), use[] the real keys at or before t and real[] every real key */
static inline int lse_explain(double got, const double *s, const int *use, const int *real,
                              int t, int T)
{
    int n, nd = t / LSE_TILE; /* the diagonal tile */
    double all = lse_over(s, use, 0, t + 1, &n);
    double diag = lse_over(s, use, nd * LSE_TILE, t + 1, &n);
    if (nd > 0 && fabs(lse_over(s, use, 0, nd * LSE_TILE, &n) - got) < LSE_MATCH)
        return LSE_NO_DIAG;
    for (int j = 0; j <= nd; j++) {
        int j1 = (j + 1) * LSE_TILE < t + 1 ? (j + 1) * LSE_TILE : t + 1;
        double tile = lse_over(s, use, j * LSE_TILE, j1, &n);
        if (!n) continue;
        if (j < nd && fabs(lse_sub(all, tile) - got) < LSE_MATCH) return LSE_NO_EARLY;
        if (fabs(lse_add(all, tile) - got) < LSE_MATCH) return LSE_TWICE;
        if (j < 2) continue;
        /* tile j's places (its causal mask and flags) over tile j - 2's keys */
        double mx = -INFINITY, z = 0.0;
        for (int u = j * LSE_TILE; u < j1; u++)
            if (use[u] && real[u - 2 * LSE_TILE] && s[u - 2 * LSE_TILE] > mx)
                mx = s[u - 2 * LSE_TILE];
        for (int u = j * LSE_TILE; u < j1; u++)
            if (use[u] && real[u - 2 * LSE_TILE]) z += exp(s[u - 2 * LSE_TILE] - mx);
        double stale = z > 0.0 ? mx + log(z) : -INFINITY;
        if (fabs(lse_add(lse_sub(all, tile), stale) - got) < LSE_MATCH) return LSE_STALE;
    }
    int end = (nd + 1) * LSE_TILE < T ? (nd + 1) * LSE_TILE : T;
    if (end > t + 1 && fabs(lse_add(all, lse_over(s, real, t + 1, end, &n)) - got) < LSE_MATCH)
        return LSE_UNMASKED;
    int bend = (t / LSE_BLOCK + 1) * LSE_BLOCK < T ? (t / LSE_BLOCK + 1) * LSE_BLOCK : T;
    if (bend > end && fabs(lse_add(all, lse_over(s, real, t + 1, bend, &n)) - got) < LSE_MATCH)
        return LSE_TO_BLOCK;
    if (nd > 0 && fabs(diag - got) < LSE_MATCH) return LSE_DIAG_ONLY;
    return LSE_NONE;
}

/* Every real query row of lse laid out (B, NH, T): wrong where |got - want| > tol, and why */
static inline LseRows lse_rows(const float *got, const float *want, const uint16_t *qkv16,
                               const int *mask, int B, int T, int NH, int NKV, int hs, double tol)
{
    LseRows r = {0};
    r.first_b = r.first_h = r.first_t = -1;
    const size_t W = (size_t)(NH + 2 * NKV) * hs;
    const double scale = 1.0 / sqrt((double)hs);
    double *s = malloc(sizeof(double) * (size_t)T);
    int *use = malloc(sizeof(int) * (size_t)T), *real = malloc(sizeof(int) * (size_t)T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const int kv = h / (NH / NKV);
            for (int t = 0; t < T; t++) {
                if (mask && !mask[(size_t)b * T + t]) continue;
                size_t i = ((size_t)b * NH + h) * T + t;
                r.rows++;
                if (fabs((double)got[i] - (double)want[i]) <= tol) continue;
                r.wrong++;
                r.by_wg[t % LSE_BLOCK / LSE_TILE]++;
                r.by_tiles[t / LSE_TILE < 2 ? t / LSE_TILE : 2]++;
                r.by_seq[b < LSE_SEQS ? b : LSE_SEQS - 1]++;
                const uint16_t *q = qkv16 + ((size_t)b * T + t) * W + (size_t)h * hs;
                for (int j = 0; j < T; j++) {
                    real[j] = !mask || mask[(size_t)b * T + j];
                    use[j] = real[j] && j <= t;
                    s[j] = 0.0;
                    if (!real[j]) continue;
                    const uint16_t *k = qkv16 + ((size_t)b * T + j) * W + (size_t)(NH + kv) * hs;
                    for (int d = 0; d < hs; d++)
                        s[j] += (double)pw_bf16_to_f32(q[d]) * pw_bf16_to_f32(k[d]);
                    s[j] *= scale;
                }
                r.by_kind[lse_explain(got[i], s, use, real, t, T)]++;
                if (r.first_t < 0) {
                    r.first_b = b, r.first_h = h, r.first_t = t;
                    r.first_got = got[i], r.first_want = want[i];
                }
            }
        }
    free(s);
    free(use);
    free(real);
    return r;
}

static inline void lse_rows_print(const LseRows *r)
{
    printf("  lse rows wrong: %zu of %zu", r->wrong, r->rows);
    if (!r->wrong) {
        printf("\n");
        return;
    }
    printf("; by warpgroup %zu / %zu; by key tiles seen 1: %zu, 2: %zu, 3+: %zu; by sequence",
           r->by_wg[0], r->by_wg[1], r->by_tiles[0], r->by_tiles[1], r->by_tiles[2]);
    for (int b = 0; b < LSE_SEQS; b++) printf(" %zu", r->by_seq[b]);
    printf("\n");
    for (int k = 0; k < LSE_KINDS; k++)
        if (r->by_kind[k]) printf("    %-28s %zu\n", lse_kind_names[k], r->by_kind[k]);
    printf("    first: b %d head %d query %d: %.6f, want %.6f\n", r->first_b, r->first_h,
           r->first_t, r->first_got, r->first_want);
}

/* The backward's gradient rows: for each of dq, dk and dv (the query, key and value parts of a
 * row of dqkv, laid out as qkv), the rows where some element is further than tol times the
 * largest reference value from it, counted by the warpgroup of its block of 128 rows (queries
 * for dq, keys for dk and dv: the same split in the dq and dk/dv kernels), by its tile of 64 (0,
 * 1, 2 or later) and by sequence. */
typedef struct GradRows {
    size_t wrong[3], by_wg[3][2], by_tile[3][3], by_seq[3][LSE_SEQS];
} GradRows;

static inline GradRows grad_rows(const float *got, const float *want, int B, int T, int NH,
                                 int NKV, int hs, double tol)
{
    GradRows g = {0};
    const size_t W = (size_t)(NH + 2 * NKV) * hs, n = (size_t)B * T * W;
    double big = 0.0;
    for (size_t i = 0; i < n; i++) big = fabs(want[i]) > big ? fabs(want[i]) : big;
    const size_t lo[3] = {0, (size_t)NH * hs, (size_t)(NH + NKV) * hs};
    const size_t hi[3] = {(size_t)NH * hs, (size_t)(NH + NKV) * hs, W};
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int part = 0; part < 3; part++) {
                const size_t at = ((size_t)b * T + t) * W;
                int bad = 0;
                for (size_t i = at + lo[part]; i < at + hi[part] && !bad; i++)
                    bad = !(fabs((double)got[i] - want[i]) <= tol * big); /* NaN is wrong */
                if (!bad) continue;
                g.wrong[part]++;
                g.by_wg[part][t % LSE_BLOCK / LSE_TILE]++;
                g.by_tile[part][t / LSE_TILE < 2 ? t / LSE_TILE : 2]++;
                g.by_seq[part][b < LSE_SEQS ? b : LSE_SEQS - 1]++;
            }
    return g;
}

static inline void grad_rows_print(const GradRows *g, int B, int T)
{
    static const char *const name[3] = {"dq", "dk", "dv"};
    for (int p = 0; p < 3; p++) {
        printf("  %s rows wrong: %zu of %d", name[p], g->wrong[p], B * T);
        if (g->wrong[p]) {
            printf("; by warpgroup %zu / %zu; by tile 0: %zu, 1: %zu, 2+: %zu; by sequence",
                   g->by_wg[p][0], g->by_wg[p][1], g->by_tile[p][0], g->by_tile[p][1],
                   g->by_tile[p][2]);
            for (int b = 0; b < LSE_SEQS; b++) printf(" %zu", g->by_seq[p][b]);
        }
        printf("\n");
    }
}

#endif
