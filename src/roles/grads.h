/* grads.h: a model's gradients summed over the ranks of a role in buckets while its backward
 * runs (pw_collective.h, PwGradSync): the calls the PPO roles (actor, critic) and the supervised
 * modes (sft, rm) share. Internal to src/roles. */
#ifndef PW_ROLES_GRADS_H
#define PW_ROLES_GRADS_H

#include "pw_collective.h"
#include "pw_model.h"

/* Before the backward whose gradients are summed (the last micro batch's): NULL for a role of
 * one rank (nothing to sum), else the sync to give that backward (PwOutputGrads.ready =
 * pw_grad_sync_ready, .ready_ctx = it) and to end with pw_grad_sync_end before the step. Ends
 * the job on an error (the role and dtype are the caller's own). */
PwGradSync *pw_grads_begin(PwWorld *w, PwRole role, PwModel *m, size_t bucket_bytes);
/* For a rank that runs no backward for those gradients (no rows): the same reports a backward
 * makes, so that its sums match the other ranks' one by one. NULL gs does nothing. */
void pw_grads_idle(PwModel *m, PwGradSync *gs);

#endif
