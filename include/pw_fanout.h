/* pw_fanout.h: one rank's tensor to every rank of a role, as ONE broadcast over a communicator
 * made for it: how the actor's weights reach the generators each step (docs/runtime.md,
 * Broadcasts). A message like any other for the waits (pw_msg_waitall, the watchdog, the header
 * check, host staging of GPU tensors); a receiver on the sender's own rank is written directly. */
#ifndef PW_FANOUT_H
#define PW_FANOUT_H

#include "pw_message.h"

typedef struct PwFanout {
    PwRole src, dst;
    int src_idx;    /* the sending rank of role src */
    int root;       /* its world rank */
    int nremote;    /* receivers on other ranks than the sender's */
    int local;      /* the sender's rank holds a rank of dst too */
    MPI_Comm comm;  /* the sender (rank 0 in it) and the nremote receivers; MPI_COMM_NULL on
                     * the other ranks, and everywhere when nremote is 0 */
    PwTensor bound; /* the local receiver's buffer (pw_fanout_bind), or data NULL */
} PwFanout;

/* Collective over the world: every rank calls it with the same arguments, whatever its roles.
 * Returns -1 with `err` for a role without ranks or a src_idx out of range. */
int pw_fanout_init(PwWorld *w, PwRole src, int src_idx, PwRole dst, PwFanout *f, PwErr *err);
void pw_fanout_free(PwFanout *f);

/* On the sender's rank, where it holds a receiver too: that receiver's tensor. Each send then
 * writes straight into it (one copy, device to device for GPU tensors) instead of through the
 * mailbox, and the receive only checks the header; a send of the bound tensor itself (the
 * sender made it there, in place) copies nothing. The caller makes sure nothing reads the
 * tensor between a send and its receive. */
void pw_fanout_bind(PwFanout *f, const PwTensor *t);

/* On the sender's rank: starts the broadcast of t (unchanged until the wait) to every receiver.
 * A request with nothing on other ranks is left inactive (pw_msg_waitall skips it). */
int pw_fanout_isend(PwWorld *w, PwFanout *f, PwMsgKind kind, int64_t step, const PwTensor *t,
                    PwMsgReq *req, PwErr *err);
/* On a receiver's rank: starts receiving the broadcast into t (its dtype and shape are what is
 * expected). Every receiver posts its receives in the sender's order of sends. */
int pw_fanout_irecv(PwWorld *w, PwFanout *f, PwMsgKind kind, int64_t step, PwTensor *t,
                    PwMsgReq *req, PwErr *err);

#endif
