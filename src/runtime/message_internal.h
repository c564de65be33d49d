/* message_internal.h: what message.c shares with fanout.c, the broadcast form of a message:
 * the header, host staging of GPU tensors, the same-rank mailbox and the large-payload type. */
#ifndef PW_MESSAGE_INTERNAL_H
#define PW_MESSAGE_INTERNAL_H

#include "pw_message.h"

void pw_msg_fill_header(PwMsgHeader *h, PwMsgKind kind, int64_t step, PwRole src, int src_idx,
                        PwRole dst, int dst_idx, const PwTensor *t);
/* The buffer MPI reads or writes for req->tensor: a pinned host stage for a GPU tensor when MPI
 * cannot take device pointers (req->stage, returned by the wait), else the tensor itself. */
void *pw_msg_stage(PwWorld *w, PwMsgReq *req);
/* memcpy, or a CUDA copy in any direction when a GPU buffer is involved. */
void pw_msg_copy_bytes(void *dst, const void *src, size_t n, int device_involved);
/* Queues a message to a role of this same rank. `data` (malloc'd, owned by the mailbox from
 * now on) is its payload; NULL with `direct` set: the sender wrote the payload into the
 * receiver's buffer `direct` already, and the receive checks it names that buffer. */
void pw_msg_mailbox_push(PwWorld *w, int tag, const PwMsgHeader *h, void *data, void *direct);
/* The same with a private copy of t's h->nbytes bytes as the payload: the send is complete at
 * once, like a buffered send. */
void pw_msg_mailbox_copy(PwWorld *w, int tag, const PwMsgHeader *h, const PwTensor *t);
/* MPI_BYTE blocks of PW_MSG_BIG_BLOCK: payloads over INT_MAX bytes travel as blocks plus a tail,
 * since MPI counts are ints. */
#define PW_MSG_BIG_BLOCK (1u << 20)
MPI_Datatype pw_msg_big_block_type(void);

#endif
