/* grads.h: a model's gradients summed over the ranks of a role in buckets while its backward
 * runs (pw_collective.h, PwGradSync): the calls the PPO roles (actor, critic) and the supervised
 * modes (sft, rm) share. Internal to src/roles. */
#ifndef PW_ROLES_GRADS_H
#define PW_ROLES_GRADS_H

#include "pw_collective.h"
#include "pw_model.h"

/* Before the backward whose gradients are summed (the last micro batch's): NULL for a role of
 * one rank (nothing to sum) or split gradients (each backward sums its own), else the sync to
 * give that backward (PwOutputGrads.ready = pw_grad_sync_ready, .ready_ctx = it) and to end
 * with pw_grad_sync_end before the step. Ends the job on an error (the role and dtype are the
 * caller's own). */
PwGradSync *pw_grads_begin(PwWorld *w, PwRole role, PwModel *m, size_t bucket_bytes);
/* For a rank that runs no backward for those gradients (no rows): the same reports a backward
 * makes, so that its sums match the other ranks' one by one. NULL gs does nothing. */
void pw_grads_idle(PwModel *m, PwGradSync *gs);
/* optim.zero_stage 2 (pw_model_grads_split): each backward sums its gradients over the role's
 * ranks, so every rank must run as many before a step. Before a minibatch's backwards, with
 * this rank's count: the most any rank of the role runs (every rank calls it; the count itself
 * for a model whose gradients are whole, without a collective). After them, the missing ones
 * as backwards of nothing (pw_model_backward_idle; nothing for whole gradients). */
int pw_grads_most(PwWorld *w, PwRole role, PwModel *m, int backwards);
void pw_grads_even(PwModel *m, int missing, const char *who);

#endif
