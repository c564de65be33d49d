/* bench_shapes.h: the full-size shapes the benchmarks measure, with random weights: GPT-2 124M
 * (the anchors were measured at it), the Llama family at Qwen2.5-0.5B's config.json (24
 * layers, 14 query over 2 key/value heads of 64, MLP 4864, vocabulary 151936, the LM head tied to
 * the embedding, q/k/v biases, rope_theta 1e6) and at Qwen3-0.6B's (28 layers, 16 query over 8
 * key/value heads of 128: an attention of 2048 over 1024 channels, q/k norms, MLP 3072, the same
 * vocabulary, tied, no biases, rope_theta 1e6); and the words that pick one on a GPU. */
#ifndef PW_BENCH_SHAPES_H
#define PW_BENCH_SHAPES_H

#include <stdio.h>
#include <string.h>

#include "pw_model.h"

/* as initializers, for tables of shapes */
#define BENCH_GPT2_124M                                                                           \
    {.family = PW_FAMILY_GPT2, .n_layer = 12, .n_head = 12, .n_embd = 768, .vocab_size = 50257,  \
     .n_positions = 1024}
#define BENCH_QWEN_05B                                                                            \
    {.family = PW_FAMILY_LLAMA, .n_layer = 24, .n_head = 14, .n_embd = 896,                      \
     .vocab_size = 151936, .n_positions = 32768, .n_kv_head = 2, .n_inner = 4864,                \
     .norm_eps = 1e-6f, .rope_theta = 1e6, .tied = 1, .qkv_bias = 1, .hf_type = PW_HF_QWEN2}

#define BENCH_QWEN3_06B                                                                           \
    {.family = PW_FAMILY_LLAMA, .n_layer = 28, .n_head = 16, .n_embd = 1024,                     \
     .vocab_size = 151936, .n_positions = 40960, .n_kv_head = 8, .n_inner = 3072,                \
     .norm_eps = 1e-6f, .rope_theta = 1e6, .tied = 1, .head_dim = 128, .qk_norm = 1,             \
     .hf_type = PW_HF_QWEN3}

static inline PwArch bench_gpt2_124m(void) { return (PwArch)BENCH_GPT2_124M; }
static inline PwArch bench_qwen_05b(void) { return (PwArch)BENCH_QWEN_05B; }
static inline PwArch bench_qwen3_06b(void) { return (PwArch)BENCH_QWEN3_06B; }
/* 0 GPT-2 124M, 1 Qwen2.5-0.5B, 2 Qwen3-0.6B (bench_gpu_args' `llama`) */
static inline PwArch bench_shape(int which)
{
    return which == 2 ? bench_qwen3_06b() : which ? bench_qwen_05b() : bench_gpt2_124m();
}
static inline const char *bench_shape_name(int which)
{
    return which == 2 ? "Qwen3-0.6B shape" : which ? "Qwen2.5-0.5B shape" : "GPT-2 124M";
}

/* The words after `gpu` (argv[first..]): bf16 or fp32 (the precision; bf16 by default) and
 * llama or qwen3 (the second or third shape: *llama 1 or 2). 0, or 2 with a message naming the
 * word it did not expect. */
static inline int bench_gpu_args(int argc, char **argv, int first, const char *prog,
                                 PwPrecision *prec, int *llama)
{
    *prec = PW_PRECISION_BF16;
    *llama = 0;
    for (int i = first; i < argc; i++) {
        if (!strcmp(argv[i], "fp32") || !strcmp(argv[i], "bf16"))
            *prec = argv[i][0] == 'f' ? PW_PRECISION_FP32 : PW_PRECISION_BF16;
        else if (!strcmp(argv[i], "llama") || !strcmp(argv[i], "qwen3"))
            *llama = argv[i][0] == 'l' ? 1 : 2;
        else {
            fprintf(stderr, "%s: '%s': expected bf16, fp32, llama or qwen3 after gpu\n", prog,
                    argv[i]);
            return 2;
        }
    }
    return 0;
}

#endif
