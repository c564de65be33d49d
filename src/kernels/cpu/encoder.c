/* encoder.c: GPT-2's input layer on the CPU: token plus position embeddings, forward and
 * backward, and the positions of a left-padded batch. */
#include <string.h>

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

/* A counting sort: one pass counts each key's rows, the running sum places each key's first,
 * a second pass puts the rows there in ascending order. It runs at every backward: two passes
 * over the rows and one over the keys, where a comparison sort of 16384 tokens (GPT-2's
 * training batch) would take n log n comparisons of scattered rows. */
int pw_row_groups(const int *keys, int n, int nkeys, int *order, int *start, int *key,
                  int *count)
{
    memset(count, 0, ((size_t)nkeys + 1) * sizeof *count);
    for (int r = 0; r < n; r++) {
        if (keys[r] < 0 || keys[r] >= nkeys) return -1;
        count[keys[r] + 1]++;
    }
    int groups = 0;
    for (int k = 0; k < nkeys; k++) {
        if (count[k + 1]) {
            start[groups] = count[k];
            key[groups++] = k;
        }
        count[k + 1] += count[k];
    }
    start[groups] = n;
    for (int r = 0; r < n; r++) order[count[keys[r]]++] = r;
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
