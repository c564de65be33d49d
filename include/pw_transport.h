/* pw_transport.h: which transport each transfer of the PPO step takes for a placement and the
 * GPUs its ranks were given (the table --dry-run prints after the placement table), and the
 * check that refuses a placement NCCL would refuse (two ranks of one communicator on one GPU).
 * The answers follow what message.c and collective.c do; docs/placement.md, Transports. */
#ifndef PW_TRANSPORT_H
#define PW_TRANSPORT_H

#include <stdio.h>

#include "pw_common.h"
#include "pw_placement.h"

typedef enum PwTransport {
    PW_TRANSPORT_NONE = 0,      /* nothing moves: the all-reduce of a one-rank role */
    PW_TRANSPORT_MEMORY,        /* same rank, host tensor: the mailbox copy */
    PW_TRANSPORT_MEMORY_STAGED, /* same rank, GPU tensor: device -> host mailbox -> device */
    PW_TRANSPORT_MPI,           /* host tensors over MPI (point-to-point or collective) */
    PW_TRANSPORT_MPI_STAGED,    /* GPU tensors copied through host memory around MPI */
    PW_TRANSPORT_MPI_CUDA,      /* GPU tensors handed to a CUDA-aware MPI as device pointers */
    PW_TRANSPORT_NCCL,          /* all-reduce of GPU tensors over the role's NCCL communicator */
    PW_TRANSPORT_DEVICE_COPY,   /* same rank, a GPU side: one copy straight into the receiver's
                                 * buffer (the weights' bound generator, pw_fanout.h) */
    PW_TRANSPORT_COUNT
} PwTransport;

const char *pw_transport_name(PwTransport t);

/* What the placement cannot say. */
typedef struct PwTransportOpts {
    int nccl;       /* built with NCCL (pw_collective_nccl_for) */
    int cuda_aware; /* MPI takes device pointers: 1 yes, 0 no, -1 not known (planned without
                     * MPI: GPU tensors between ranks are then shown staged, as with 0) */
} PwTransportOpts;

/* This build, and cuda_aware as given. */
PwTransportOpts pw_transport_opts(int cuda_aware);

/* The GPU a rank was given: host name, its CUDA ordinal (-1 for none) and PCI address ("" where
 * not known). Two ranks share a GPU where host and address are the same, or, where an address
 * is not known, host and ordinal: ranks that CUDA_VISIBLE_DEVICES gives one GPU each may all
 * call theirs 0. Plain characters, so that the ranks can exchange them in one MPI_Allgather. */
typedef struct PwRankGpu {
    char host[64];
    int gpu;
    char pci[24];
} PwRankGpu;

/* One transfer of the step over one transport: `from` ranks to `to` ranks for a message (the
 * pairs "4->0,5->1"), or the ranks of role `from` (== to) joining an all-reduce ("0+1"). */
typedef struct PwTransfer {
    const char *phase; /* generate, evaluate, advantages, train, weights, report */
    char data[48];     /* the message kinds (pw_msg_kind_name), or "gradients" */
    PwRole from, to;
    int allreduce;
    int broadcast;     /* one broadcast from `from` to the listed ranks (pw_fanout.h) */
    PwTransport transport;
    char ranks[200];   /* at most 16 pairs or ranks, then "+N" for the rest */
} PwTransfer;

/* The transfers of one PPO step in step order, one entry per (transfer, transport); returns how
 * many there are, filling at most `max` of `out`. */
int pw_transfers(const PwPlacement *p, const PwTransportOpts *o, PwTransfer *out, int max);

/* The transport table, after the placement table (rank 0). */
void pw_transport_report(FILE *f, const PwPlacement *p, const PwTransportOpts *o);

/* Refuses a role whose all-reduce would run over NCCL with two of its ranks on one GPU of one
 * host (NCCL fails with "Duplicate GPU detected"). gpus[] has one entry per world rank. The
 * error names the file, line and column of the role's `ranks:` and both world ranks. */
int pw_transport_check(const PwPlacement *p, const PwTransportOpts *o, const PwRankGpu *gpus,
                       PwErr *err);

#endif
