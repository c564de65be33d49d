/* gen_model.h: the tiny random GPT-2 the generation tests run on (2 layers, 32 wide, 4 heads,
 * 32 positions), with weights scaled up so that its next-token distributions are not flat. */
#ifndef PW_TEST_GEN_MODEL_H
#define PW_TEST_GEN_MODEL_H

#include <stdio.h>
#include <stdlib.h>

#include "pw_model.h"

/* GPT-2's init makes logits and attention nearly uniform; wte_scale spreads the logits (draws
 * then differ from row to row) and qkv_scale sharpens attention (so a wrong key shows). */
static PwGPT2 *gen_tiny_model(int V, int maxB, int maxT, uint64_t seed, float wte_scale,
                              float qkv_scale)
{
    PwGPT2Config cfg = {.n_layer = 2, .n_head = 4, .n_embd = 32, .vocab_size = V,
                        .n_positions = 32};
    PwErr err;
    PwGPT2 *m = pw_gpt2_create(&cfg, PW_HEAD_LM, maxB, maxT, &err);
    if (!m) {
        fprintf(stderr, "tiny model: %s\n", err.msg);
        exit(1);
    }
    pw_gpt2_init_random(m, seed);
    for (size_t i = 0; i < m->param_sizes[0]; i++) m->params.wte[i] *= wte_scale;
    for (size_t i = 0; i < m->param_sizes[4]; i++) m->params.qkvw[i] *= qkv_scale;
    return m;
}

#endif
