/* collective_internal.h: what collective.c shares with grad_sync.c, the bucketed all-reduce of a
 * model's gradients: the watchdog's description of a collective, the role check, the role's NCCL
 * communicator and stream, and the byte and trace accounting. */
#ifndef PW_COLLECTIVE_INTERNAL_H
#define PW_COLLECTIVE_INTERNAL_H

#include "pw_collective.h"

/* What the watchdog prints when a collective never completes: usually a rank of the role that
 * did not call it (crashed, or its schedule differs). */
typedef struct PwCollCtx {
    const PwWorld *w;
    PwRole role;
    const char *op;
    const PwTensor *t;
    const char *backend;
} PwCollCtx;
void pw_coll_describe(const void *ctx, char *buf, size_t len); /* a PwDescribeFn of a PwCollCtx */

/* 0 when this rank holds role r, else -1 with a message */
int pw_coll_check_role(const PwWorld *w, PwRole r, PwErr *err);
/* The most elements one MPI call of the gathers of blocks moves (INT_MAX, MPI's counts being
 * ints); a test lowers it to run the pieces' path with small tensors. */
extern int64_t pw_coll_piece_max;
/* bytes_coll and the trace's span of one collective that began at t0 */
void pw_coll_account(PwWorld *w, PwRole r, const char *name, uint64_t bytes, double t0);

#ifdef PW_HAVE_NCCL
/* Whether t (NULL: any tensor) of role r goes over NCCL */
int pw_coll_use_nccl(const PwWorld *w, PwRole r, const PwTensor *t);
/* The role's ncclComm_t, made on first use (collective over the role); its stream is
 * w->nccl_stream[r]. */
void *pw_coll_nccl_comm(PwWorld *w, PwRole r);
/* Waits under the watchdog for everything queued on the role's NCCL stream */
void pw_coll_nccl_wait(PwWorld *w, PwRole r, PwCollCtx *ctx);
#endif

#endif
