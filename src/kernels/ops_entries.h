/* ops_entries.h: the kernel entries of a PwOps table (private to src/kernels): both tables name
 * their wrappers alike in their own file, so one list fills either and neither can miss one. */
#ifndef PW_OPS_ENTRIES_H
#define PW_OPS_ENTRIES_H

#define PW_OPS_KERNEL_ENTRIES                                                                \
    .encoder_forward = encoder_fwd, .encoder_backward = encoder_bwd,                         \
    .layernorm_forward = layernorm_fwd, .layernorm_backward = layernorm_bwd,                 \
    .matmul_forward = matmul_fwd, .matmul_backward = matmul_bwd,                             \
    .matmul_forward_bf16 = matmul_fwd_bf16, .matmul_backward_bf16 = matmul_bwd_bf16,         \
    .to_bf16 = to_bf16_entry, .from_bf16 = from_bf16_entry,                                  \
    .layernorm_forward_bf16 = layernorm_fwd_bf16,                                            \
    .rmsnorm_forward_bf16 = rmsnorm_fwd_bf16, .gelu_forward_bf16 = gelu_fwd_bf16,            \
    .residual_layernorm_forward = residual_layernorm_fwd,                                    \
    .residual_rmsnorm_forward = residual_rmsnorm_fwd,                                        \
    .swiglu_forward_bf16 = swiglu_fwd_bf16, .gelu_backward_bf16 = gelu_bwd_bf16,             \
    .swiglu_backward_bf16 = swiglu_bwd_bf16,                                                 \
    .matmul_gelu_forward_bf16 = matmul_gelu_fwd_bf16,                                        \
    .matmul_backward_gelu_bf16 = matmul_bwd_gelu_bf16,                                       \
    .matmul_swiglu_forward_bf16 = matmul_swiglu_fwd_bf16,                                    \
    .attention_forward = attention_fwd, .attention_backward = attention_bwd,                 \
    .gelu_forward = gelu_fwd, .gelu_backward = gelu_bwd, .residual_forward = residual_fwd,   \
    .logprobs_forward = logprobs_fwd, .logprobs_backward = logprobs_bwd,                     \
    .logprobs_backward_bf16 = logprobs_bwd_bf16,                                             \
    .gather_rows = gather, .adamw_update = adamw, .sumsq = sumsq, .scale = scale,          \
    .sample = sample_rows, .record = record_rows,                                            \
    .rmsnorm_forward = rmsnorm_fwd, .rmsnorm_backward = rmsnorm_bwd,                         \
    .head_rmsnorm_forward = head_rmsnorm_fwd, .head_rmsnorm_backward = head_rmsnorm_bwd,     \
    .rope_forward = rope_fwd, .rope_backward = rope_bwd, .swiglu_forward = swiglu_fwd,       \
    .swiglu_backward = swiglu_bwd, .attention_gqa_forward = attention_gqa_fwd,               \
    .attention_gqa_backward = attention_gqa_bwd,                                             \
    .attention_gqa_forward_bf16 = attention_gqa_fwd_bf16,                                    \
    .attention_gqa_backward_bf16 = attention_gqa_bwd_bf16,                                   \
    .attention_cache_gqa_forward = attention_cache_gqa_fwd,                                  \
    .attention_cache_gqa_forward_bf16 = attention_cache_gqa_fwd_bf16

#endif
