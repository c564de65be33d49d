/* tiny_archs.h: the two-layer, 32-wide GPT-2 and Llama-family architectures the model tests of
 * precision and of the LM head's chunks share (V: the vocabulary, T <= 16 positions), and their
 * way of making one. */
#ifndef PW_TESTS_TINY_ARCHS_H
#define PW_TESTS_TINY_ARCHS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pw_model.h"

/* A model of a with options o, initialised from seed; a refusal ends the test (exit 1). */
static inline PwModel *tiny_model(const PwArch *a, const PwModelOpts *o, uint64_t seed)
{
    PwErr err;
    PwModel *m = pw_model_create(a, o, &err);
    if (!m) {
        fprintf(stderr, "create: %s\n", err.msg);
        exit(1);
    }
    pw_model_init_random(m, seed);
    return m;
}

#define TINY_GPT2(V)                                                                          \
    {.family = PW_FAMILY_GPT2, .n_layer = 2, .n_head = 2, .n_embd = 32, .vocab_size = (V),     \
     .n_positions = 16}
/* grouped-query (4 heads over 2), an untied LM head and q/k/v biases: Qwen2's options */
#define TINY_LLAMA(V)                                                                         \
    {.family = PW_FAMILY_LLAMA, .n_layer = 2, .n_head = 4, .n_embd = 32, .vocab_size = (V),    \
     .n_positions = 16, .n_kv_head = 2, .n_inner = 40, .norm_eps = 1e-5f, .rope_theta = 10000.0, \
     .tied = 0, .qkv_bias = 1, .o_bias = 1}

#endif
