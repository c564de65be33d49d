/* sample_case.h: the sampler's test rows, shared by the GPU twin test (test_cuda_sample.c) and
 * the emulated one (test_sample_emu.c): logits of six kinds of rows, the configurations, the
 * draw order and the streams. */
#ifndef PW_TEST_SAMPLE_CASE_H
#define PW_TEST_SAMPLE_CASE_H

#include <math.h>
#include <stdint.h>

#include "pw_sample.h"
#include "pw_test.h"

/* n rows of V logits, ld apart (NaN in the padding between V and ld), normal with sd 3, and by
 * row: plain, ties (a grid of values), ruled-out tokens (-inf), a peak, flat, far from 0 */
static inline void sample_case_logits(float *logits, int n, int V, int ld, unsigned long long *rng)
{
    for (int i = 0; i < n; i++) {
        float *x = logits + (size_t)i * ld;
        for (int v = 0; v < V; v++) x[v] = (float)(3.0 * pw_test_normal(rng));
        for (int v = V; v < ld; v++) x[v] = NAN;
        switch (i % 6) {
        case 1: /* ties: a grid of 9 values */
            for (int v = 0; v < V; v++) x[v] = 0.5f * (float)((int)(x[v] * 1.3f) % 5);
            break;
        case 2: /* ruled-out tokens */
            for (int v = 0; v < V; v += 3) x[v] = -INFINITY;
            break;
        case 3: x[(i * 7919) % V] += 40.0f; break; /* peaked */
        case 4:
            for (int v = 0; v < V; v++) x[v] = -2.0f; /* flat */
            break;
        case 5:
            for (int v = 0; v < V; v++) x[v] += 500.0f; /* far from 0 */
            break;
        default: break;
        }
    }
}

/* the order of the draws and each row's stream: a permutation, so that no two rows of a call
 * draw from one stream (the GPU's blocks run at once and would race on it: the emulated race
 * check found all five rows of n = 5 on stream 3 when the step was 5 for every n) */
static inline void sample_case_rows(int *rows, uint64_t *streams, int n)
{
    int step = 5; /* the first step from 5 that shares no factor with n */
    for (;;) {
        int a = step, b = n;
        while (b) {
            int r = a % b;
            a = b, b = r;
        }
        if (a == 1) break;
        step++;
    }
    for (int i = 0; i < n; i++) {
        rows[i] = (i * step + 3) % n;
        streams[i] = pw_sample_stream(99, (uint64_t)i);
    }
}

/* temperature alone (1 and 1.7), top-k, top-p, both, greedy by top-k = 1, a tiny top-p */
static const PwSampleConfig sample_case_configs[] = {
    {1.0f, 0, 1.0f}, {1.7f, 0, 1.0f}, {0.7f, 50, 1.0f}, {1.0f, 0, 0.9f},
    {1.3f, 40, 0.8f}, {1.0f, 1, 1.0f}, {1.0f, 0, 0.05f},
};
#define SAMPLE_CASE_NCONFIGS ((int)(sizeof sample_case_configs / sizeof *sample_case_configs))

#endif
