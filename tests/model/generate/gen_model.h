/* gen_model.h: the tiny random GPT-2 the generation tests run on (2 layers, 32 wide, 4 heads,
 * 32 positions), with weights scaled up so that its next-token distributions are not flat. */
#ifndef PW_TEST_GEN_MODEL_H
#define PW_TEST_GEN_MODEL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_model.h"

/* Multiply parameter tensor `name` of a CPU model by s. */
static void gen_scale_tensor(PwModel *m, const char *name, float s)
{
    float *p = pw_model_params(m).data;
    for (int i = 0; i < pw_model_num_tensors(m); i++) {
        size_t off, n;
        if (strcmp(pw_model_tensor_info(m, i, &off, &n), name)) continue;
        for (size_t k = 0; k < n; k++) p[off + k] *= s;
    }
}

/* The family the tests build (a test's main may switch it to the Llama family). */
static PwFamily gen_family = PW_FAMILY_GPT2;
static int gen_qwen3; /* the Llama family as Qwen3: q/k norms, heads of 12 over 32 channels */

/* GPT-2's init makes logits and attention nearly uniform; wte_scale spreads the logits (draws
 * then differ from row to row) and qkv_scale sharpens attention (so a wrong key shows). */
static PwModel *gen_tiny_model(int V, int maxB, int maxT, uint64_t seed, float wte_scale,
                               float qkv_scale)
{
    PwArch cfg = {.family = PW_FAMILY_GPT2, .n_layer = 2, .n_head = 4, .n_embd = 32,
                  .vocab_size = V, .n_positions = 32};
    if (gen_family == PW_FAMILY_LLAMA) /* 4 query heads over 2 key/value heads, untied */
        cfg = (PwArch){.family = PW_FAMILY_LLAMA, .n_layer = 2, .n_head = 4, .n_embd = 32,
                       .vocab_size = V, .n_positions = 32, .n_kv_head = 2, .n_inner = 40,
                       .norm_eps = 1e-5f, .rope_theta = 10000.0, .qkv_bias = 1,
                       .o_bias = 1};
    if (gen_qwen3) cfg.hf_type = 3, cfg.qk_norm = 1, cfg.head_dim = 12;
    PwErr err;
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = maxB, .maxT = maxT};
    PwModel *m = pw_model_create(&cfg, &o, &err);
    if (!m) {
        fprintf(stderr, "tiny model: %s\n", err.msg);
        exit(1);
    }
    pw_model_init_random(m, seed);
    gen_scale_tensor(m, "wte", wte_scale);
    gen_scale_tensor(m, "qkvw", qkv_scale);
    return m;
}

#endif
