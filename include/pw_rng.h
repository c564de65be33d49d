/* pw_rng.h: the project's one pseudo-random generator, splitmix64: a counter-based stream that
 * gives the same numbers on every machine, for weight init, sampling, shuffles and tests. */
#ifndef PW_RNG_H
#define PW_RNG_H

#include <stdint.h>

/* The splitmix64 finaliser: a bijective mix of 64 bits. Mixing a tuple through it one element
 * at a time gives unrelated streams for nearby tuples. */
static inline uint64_t pw_rng_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Next 64 random bits of the stream whose state is *state. */
static inline uint64_t pw_rng_next(uint64_t *state)
{
    return pw_rng_mix(*state += 0x9e3779b97f4a7c15ULL);
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double pw_rng_uniform(uint64_t *state)
{
    return (double)(pw_rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* A stream named by a tuple: each number goes through a full round before the next is folded
 * in, so nearby tuples ((seed, 3, 4) and (seed, 4, 3)) give unrelated streams. */
static inline uint64_t pw_rng_tuple(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t s = a;
    uint64_t h = pw_rng_next(&s);
    s = h ^ b;
    h = pw_rng_next(&s);
    s = h ^ c;
    return pw_rng_next(&s);
}

/* perm := a uniformly shuffled 0..n-1 (Fisher-Yates) drawn from the stream `state`. The modulo
 * bias is below 2^-32 for any n that fits an int: not worth a rejection loop. */
static inline void pw_rng_shuffle(int *perm, int n, uint64_t state)
{
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(pw_rng_next(&state) % (uint64_t)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

#endif
