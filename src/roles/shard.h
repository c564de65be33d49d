/* shard.h: the AdamW moments of a trained model split over the ranks of its role
 * (optim.zero_stage 1, ZeRO stage 1; docs/model.md, The optimiser's share). Each rank keeps
 * the moments of one block of the parameters (at bf16 that block's float32 master weights of the
 * layers' matrices too) and updates those weights alone; the gradient is still summed whole on
 * every rank (grads.h) at stage 1, and at stage 2 into each rank's block by every backward
 * (docs/model.md, Gradients in shares); after each update an all-gather hands every rank the
 * others' blocks. The calls the PPO roles (actor, critic) and the supervised modes (sft, rm)
 * share. Internal to src/roles. */
#ifndef PW_ROLES_SHARD_H
#define PW_ROLES_SHARD_H

#include <stdint.h>

#include "pw_comm.h"
#include "pw_model.h"

/* The blocks: nranks of them over the parameters, each a multiple of 64 floats (256 bytes, as the
 * device's kernels align their vectors), as equal as that allows, the last ones shorter or empty.
 * For the plans of memory: what a model of `arch` and `o` holds on rank k of `nranks` at
 * `zero_stage` (pw_model_plan_share of its block, pw_model_plan_split at stage 2; pw_model_plan
 * for stage 0 or a role of one rank, as pw_shard_begin decides): its share of the moments, at
 * bf16 of the float32 weights, and at stage 2 of the gradients. 0, or -1 with pw_model_plan's
 * message. */
int pw_shard_plan(int zero_stage, int nranks, int k, const PwArch *arch, const PwModelOpts *o,
                  PwModelBytes *b, PwErr *err);
/* For a model of role `role` just loaded, before its moments exist: NULL (every rank keeps all
 * of them) for stage 0 or a role of one rank (which `who`, "the actor" or "the run", says once
 * on stderr at stage 1 or 2); else its blocks (malloc'd, free them), this rank's set on the
 * model, and at stage 2 its gradients split over the role's ranks (pw_model_grads_split, with
 * the role's reduce-scatter and sum). Ends the job on an error. */
int64_t *pw_shard_begin(PwWorld *w, PwRole role, PwModel *m, int zero_stage, const char *who);
/* After an applied update: every rank's block of the weights to every rank (NULL starts: nothing
 * to do). Ends the job on an error. */
void pw_shard_gather_weights(PwWorld *w, PwRole role, PwModel *m, const int64_t *starts);
/* For a checkpoint of a model whose float32 master weights are split (bf16;
 * pw_model_master_split): all of them on the role's rank 0, which gets them in the flat layout
 * (pw_model_num_params floats, malloc'd: free them; pw_model_save_master adds the tensors kept
 * whole and writes them); NULL on the other ranks, and everywhere when they are not split.
 * Every rank of the role calls it. */
float *pw_shard_gather_master(PwWorld *w, PwRole role, PwModel *m, const int64_t *starts);
/* For a checkpoint: the whole moments written as `path` (optimizer.safetensors) by the role's
 * rank 0 as it gathers them, a piece at a time (pw_model_optimizer_write_from), so that no rank
 * holds them whole; nothing when they are not split (NULL starts: pw_model_optimizer_save
 * writes them) or no update made them yet. Every rank of the role calls it; path is read on
 * rank 0 alone. Ends the job on an error. */
void pw_shard_write_moments(PwWorld *w, PwRole role, PwModel *m, const int64_t *starts,
                            const char *path);

#endif
