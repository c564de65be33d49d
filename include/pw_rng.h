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

#endif
