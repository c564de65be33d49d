/* pw_collective.h: collectives among the ranks of one role (all-reduce, broadcast, barrier).
 * NCCL when the role computes on CUDA and NCCL was built, MPI otherwise; one API either way. */
#ifndef PW_COLLECTIVE_H
#define PW_COLLECTIVE_H

#include "pw_comm.h"
#include "pw_message.h"

typedef enum PwReduceOp { PW_REDUCE_SUM = 0, PW_REDUCE_MEAN } PwReduceOp;

/* In place over the ranks of role r; every rank of the role calls it with the same dtype and
 * shape. Sum: f32, f64, bf16, i32, i64 (bf16 is summed in f32 on the MPI path). Mean: floating
 * dtypes only. Returns -1 with `err` for an unsupported dtype or a rank lacking the role; a
 * wait past the world's timeout aborts the job. */
int pw_allreduce(PwWorld *w, PwRole r, PwTensor *t, PwReduceOp op, PwErr *err);
/* Copies role-rank `root`'s tensor to every rank of role r, in place. */
int pw_broadcast(PwWorld *w, PwRole r, PwTensor *t, int root, PwErr *err);
/* Returns once every rank of role r has entered it. */
int pw_barrier(PwWorld *w, PwRole r, PwErr *err);

/* ---- a tensor split in blocks over the ranks of role r: role rank k's block is elements
 * [starts[k], starts[k + 1]) of it (starts: nranks + 1 non-decreasing offsets, the last within
 * the tensor), e.g. the weights each rank updates when the AdamW moments are split over them.
 * Every rank of the role calls these with the same starts; -1 with a message for starts that
 * are not such offsets or a rank lacking the role. */
/* Every block to every rank, in place: each rank's own block is read, the others written (an
 * all-gather of blocks of any sizes). NCCL for GPU tensors of GPU roles (one broadcast per
 * block, grouped in one launch), MPI otherwise. */
int pw_allgather_blocks(PwWorld *w, PwRole r, PwTensor *t, const int64_t *starts, PwErr *err);
/* Every block summed over the ranks into its owner, in place: float32 only; after it, block k
 * of t on rank k holds the sum of that block on every rank, and the rest of t is left as
 * anything (a reduce-scatter of blocks of any sizes: the gradients split over a role's ranks).
 * NCCL for GPU tensors of GPU roles (one reduction per block, grouped in one launch), MPI
 * otherwise. */
int pw_reduce_scatter_blocks(PwWorld *w, PwRole r, PwTensor *t, const int64_t *starts,
                             PwErr *err);
/* Every block to role rank `root` alone, over MPI, in host memory: `mine` holds this rank's
 * block (starts[k + 1] - starts[k] elements of `dtype`); root's `all` (starts[nranks] elements;
 * NULL on the other ranks) gets every block, its own copied from `mine`. What a checkpoint of
 * split state needs: only its writer holds the whole. */
int pw_gather_blocks(PwWorld *w, PwRole r, const void *mine, void *all, PwDtype dtype,
                     const int64_t *starts, int root, PwErr *err);

/* ---- a model's gradients summed over role r's ranks in buckets, each posted as soon as the
 * backward has finished writing it (pw_model.h, PwGradReady), so that the sum of the upper
 * layers' gradients runs while the lower ones are still in backward (docs/runtime.md, Gradient
 * buckets). Per optimiser step:
 *     PwGradSync *s = pw_grad_sync_begin(w, r, &grads, bucket_bytes, &err);
 *     ... pw_model_backward with .ready = pw_grad_sync_ready, .ready_ctx = s ...
 *     pw_grad_sync_end(s, &err);   // the rest posted, everything waited for: grads is the sum
 * Every rank of the role makes the same calls: the ranges come in the model's fixed order.
 * Buckets are posted once they hold bucket_bytes or more (a range is never split). The sum is
 * that of pw_allreduce; with more than two ranks the order of the additions may differ with the
 * pieces' sizes (float rounding). Where buckets cannot overlap anything (bucket_bytes 0, a role
 * of one rank, GPU gradients over MPI, which go through host memory), nothing is posted before
 * end, which makes one pw_allreduce of the whole tensor. Ranges never reported are summed at
 * end; a float reported twice is an error there (a model's bug, not the user's). */
typedef struct PwGradSync PwGradSync;
struct PwGradRange;
PwGradSync *pw_grad_sync_begin(PwWorld *w, PwRole r, const PwTensor *grads, size_t bucket_bytes,
                               PwErr *err);
/* A PwGradReady: ctx is the PwGradSync. */
void pw_grad_sync_ready(void *ctx, const struct PwGradRange *r, int n, void *stream);
/* Posts what is left, waits for every bucket under the watchdog, frees s; -1 with a message
 * (s freed as well) for overlapping ranges. *early (NULL: not wanted) gets the buckets posted
 * before end: what overlapped the backward. NULL s returns 0. */
int pw_grad_sync_end(PwGradSync *s, int *early, PwErr *err);

/* Role rank 0's `n` bytes to every rank of role r, in place, over the role's MPI communicator
 * under the watchdog, whatever the role's device: how the unique id of a role's NCCL
 * communicator, made on its first rank, reaches the others (on any node). Returns -1 with `err`
 * for a rank lacking the role. */
int pw_collective_share_id(PwWorld *w, PwRole r, void *id, size_t n, PwErr *err);

/* Whether GPU tensors of a role computing on `role_device` are reduced over NCCL: cuda, in a
 * build with NCCL. Host tensors of any role take MPI. */
int pw_collective_nccl_for(PwDevice role_device);
/* Which path the collectives of role r take on this rank: "nccl" or "mpi". */
const char *pw_collective_backend(const PwWorld *w, PwRole r);

#endif
