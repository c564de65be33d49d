/* pw_message.h: typed tensor messages between roles, the only way roles exchange data.
 * A message is a small header (kind, step, dtype, shape, bytes) and a payload; see docs/runtime.md. */
#ifndef PW_MESSAGE_H
#define PW_MESSAGE_H

#include <stddef.h>
#include <stdint.h>

#include "pw_comm.h"
#include "pw_tensor.h" /* PwTensor, PwDtype */

/* What a message carries; one value per arrow of the PPO step in docs/architecture.md. */
typedef enum PwMsgKind {
    PW_MSG_TOKENS = 0,
    PW_MSG_LOGP_REF,
    PW_MSG_LOGP_GEN,   /* the generator's log-probs, for generator/logprob_diff; the actor
                          always computes logp_old itself and never trains on these */
    PW_MSG_VERSIONS,   /* per row, the weights version (actor updates) that sampled it */
    PW_MSG_VALUES,
    PW_MSG_SCORES,
    PW_MSG_RETURNS,
    PW_MSG_WEIGHTS,
    PW_MSG_REPORT,     /* measurements for the step's metrics: timings, losses */
    PW_MSG_CONTROL,    /* coordination without data: "my part of the checkpoint is written" */
    PW_MSG_TEST,       /* free for tests and benchmarks */
    PW_MSG_KIND_COUNT
} PwMsgKind;

const char *pw_msg_kind_name(PwMsgKind k);

/* The header as it travels: fixed size, little-endian hosts only (one job, one architecture). */
#define PW_MSG_MAGIC 0x50574d53u /* "PWMS" */
/* 2: the unused kinds prompts and mask were removed, which renumbered every kind; a version-1
 * header's kind byte means something else, so it is refused as not a header of this build. */
/* 3: the kind versions was added after logp_gen, which renumbered the kinds after it. */
#define PW_MSG_VERSION 3
typedef struct PwMsgHeader {
    uint32_t magic;
    uint16_t version;
    uint8_t kind;
    uint8_t dtype;
    int32_t src_role, src_idx, dst_role, dst_idx;
    int64_t step;
    int32_t ndim, pad_;
    int64_t shape[PW_MAX_DIMS];
    uint64_t nbytes;
} PwMsgHeader;

/* Compares a received header with the expected one. Returns 0, or -1 with one sentence in `err`
 * naming the receiver, the sender, the message, and the field that differs ("wrong kind",
 * "wrong step", "wrong dtype", "wrong shape", "wrong byte count"). Pure: no MPI. */
int pw_msg_header_check(const PwMsgHeader *got, const PwMsgHeader *want, PwErr *err);

/* A message in flight. Filled by pw_msg_isend / pw_msg_irecv, finished by pw_msg_wait. */
typedef struct PwMsgReq {
    int active, is_recv, local;
    int collective;            /* a broadcast (pw_fanout.h): cannot be cancelled or drained */
    MPI_Request req[3];        /* header, payload, payload tail (payloads over 2 GiB) */
    PwMsgHeader hdr;           /* sent header, or the received one */
    PwMsgHeader want;          /* receives: what the caller expects */
    PwTensor tensor;           /* the caller's tensor */
    void *stage;               /* pinned host copy of a GPU tensor when MPI cannot take it */
    size_t stage_bytes;
    int peer;                  /* world rank of the other side */
    int tag;
} PwMsgReq;

/* Starts sending tensor t from this rank's `src` role to rank `dst_idx` of role `dst`. The
 * tensor must stay untouched until pw_msg_wait. A destination on this same rank gets a copy at
 * once (the send is then already complete). */
int pw_msg_isend(PwWorld *w, PwRole src, PwRole dst, int dst_idx, PwMsgKind kind, int64_t step,
                 const PwTensor *t, PwMsgReq *req, PwErr *err);
/* Starts receiving into t (its dtype and shape are what is expected) a message of `kind` and
 * `step` sent by rank `src_idx` of role `src` to this rank's `dst` role. */
int pw_msg_irecv(PwWorld *w, PwRole dst, PwRole src, int src_idx, PwMsgKind kind, int64_t step,
                 PwTensor *t, PwMsgReq *req, PwErr *err);
/* Finishes one message. Receives check the header: -1 with the mismatch in `err`. A wait past
 * the world's timeout aborts the job (watchdog). */
int pw_msg_wait(PwWorld *w, PwMsgReq *req, PwErr *err);
/* Finishes n messages, all at once for the watchdog; the first mismatch is reported. */
int pw_msg_waitall(PwWorld *w, int n, PwMsgReq *reqs, PwErr *err);

/* Blocking forms for role code: any error ends the job with the message. */
void pw_send(PwWorld *w, PwRole src, PwRole dst, int dst_idx, PwMsgKind kind, int64_t step,
             const PwTensor *t);
void pw_recv(PwWorld *w, PwRole dst, PwRole src, int src_idx, PwMsgKind kind, int64_t step,
             PwTensor *t);

/* A batch routed between roles (pw_route_*): `local` holds this rank's block of a global batch
 * of `nrows` rows along dimension 0 (local->shape[0] == pw_block(...).count). The sender
 * slices its block for every consumer it overlaps; the receiver fills its block in row order.
 * Both block until their part is done; errors end the job. */
void pw_batch_send(PwWorld *w, PwRole src, PwRole dst, PwMsgKind kind, int64_t step,
                   int64_t nrows, const PwTensor *local);
void pw_batch_recv(PwWorld *w, PwRole dst, PwRole src, PwMsgKind kind, int64_t step,
                   int64_t nrows, PwTensor *local);

/* The MPI tag of (kind, src role, dst role, header or payload); distinct for every triple. */
int pw_msg_tag(PwMsgKind kind, PwRole src, PwRole dst, int payload);

#endif
