/* encoder.c: GPT-2's input layer on the CPU: token plus position embeddings, forward and
 * backward, and the positions of a left-padded batch. */
#include <stdlib.h>

#include "pw_kernels.h"

/* Channels per OpenMP task in the backward pass: one task owns a slice of every embedding row,
 * so two rows that share a token never race. 64 floats keep a slice on whole cache lines. */
#define ENC_CHUNK 64

/* Left padding shifts every sequence, so a token's position is the number of real tokens before
 * it (Hugging Face: cumsum(mask) - 1); padding gets 0 because its embedding never matters. */
void pw_positions_from_mask(int *pos, const int *mask, int B, int T)
{
    for (int b = 0; b < B; b++) {
        int seen = 0;
        for (int t = 0; t < T; t++) {
            int real = mask ? mask[b * T + t] != 0 : 1;
            pos[b * T + t] = real ? seen : 0;
            seen += real;
        }
    }
}

/* pos may be NULL for an unpadded batch: then the position of column t is t. */
void pw_encoder_forward(float *out, const int *inp, const int *pos, const float *wte,
                        const float *wpe, int B, int T, int C)
{
#pragma omp parallel for schedule(static)
    for (int bt = 0; bt < B * T; bt++) {
        const float *te = wte + (size_t)inp[bt] * C;
        const float *pe = wpe + (size_t)(pos ? pos[bt] : bt % T) * C;
        float *o = out + (size_t)bt * C;
#pragma omp simd
        for (int c = 0; c < C; c++) o[c] = te[c] + pe[c];
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* A row packed under its key sorts by key, then by row: qsort's order need not be stable, but
 * no two packed values are equal. */
int pw_row_groups(const int *keys, int n, int *order, int *start, int *key, uint64_t *scratch)
{
    for (int r = 0; r < n; r++) scratch[r] = (uint64_t)(uint32_t)keys[r] << 32 | (uint32_t)r;
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_u64);
    int groups = 0;
    for (int i = 0; i < n; i++) {
        int k = (int)(scratch[i] >> 32);
        order[i] = (int)(uint32_t)scratch[i];
        if (i == 0 || k != key[groups - 1]) {
            start[groups] = i;
            key[groups++] = k;
        }
    }
    start[groups] = n;
    return groups;
}

void pw_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp,
                         const int *pos, int B, int T, int C)
{
    int nchunks = (C + ENC_CHUNK - 1) / ENC_CHUNK;
#pragma omp parallel for schedule(static)
    for (int k = 0; k < nchunks; k++) {
        int c0 = k * ENC_CHUNK, c1 = c0 + ENC_CHUNK < C ? c0 + ENC_CHUNK : C;
        for (int bt = 0; bt < B * T; bt++) {
            const float *d = dout + (size_t)bt * C;
            if (dwte) {
                float *g = dwte + (size_t)inp[bt] * C;
#pragma omp simd
                for (int c = c0; c < c1; c++) g[c] += d[c];
            }
            if (dwpe) {
                float *g = dwpe + (size_t)(pos ? pos[bt] : bt % T) * C;
#pragma omp simd
                for (int c = c0; c < c1; c++) g[c] += d[c];
            }
        }
    }
}
