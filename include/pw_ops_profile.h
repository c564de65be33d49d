/* pw_ops_profile.h: where a program's device time goes, by kernel-table entry and shape: a
 * profiled table times each call of the table it wraps (docs/performance.md, Profiling by entry).
 * Events queued around each call on a GPU, the host clock on the CPU; no external profiler. */
#ifndef PW_OPS_PROFILE_H
#define PW_OPS_PROFILE_H

#include <stdio.h>

#include "pw_common.h"
#include "pw_ops.h"

/* The environment variable that makes pw_ops_open return profiled tables: "1", "-" or "stderr"
 * writes the process's profile to stderr as it exits; any other value is a file to write it to,
 * "%p" in it replaced by the process id (one file per rank of an MPI job); "0" or empty: off. */
#define PW_OPS_PROFILE_ENV "PW_PROFILE_OPS"

/* A table that runs each entry of `inner` and times it: on a GPU between two events queued on
 * the stream around the call (read later, when the table waits anyway: sync, copy, sumsq, free,
 * or every 4096 calls), on the CPU by the host clock. Its results are inner's, bit for bit. Its
 * graph_capture makes no graph, so captured work runs call by call and is timed too. Released
 * by pw_ops_close, which closes inner as well. NULL with a message when out of host memory. */
const PwOps *pw_ops_profiled(const PwOps *inner, PwErr *err);

/* One line of the profile: an entry of one device, at one shape, over the calls so far. */
typedef struct PwOpsProfileRow {
    char device[32];   /* the table's name, and its label if it has one: "cuda:0/actor" */
    const char *op;    /* the entry's name in PwOps: "matmul_forward_bf16" */
    char shape[72];    /* its sizes: "N=16384 C=768 OC=2304" */
    long calls;
    double ms;         /* device time: the GPU's between the events, the CPU's own */
    double host_ms;    /* time the host spent in the entry (on a GPU: queueing it) */
    double flops;      /* the products' floating-point operations (0: not counted) */
    double bytes;      /* copies' bytes (0 for the rest) */
} PwOpsProfileRow;

/* Names what a profiled table computes for (a role: "actor"), so that its lines are its own
 * ("cuda:0/actor") where several models share a device; up to 15 characters. Nothing for a
 * table that is not profiled. */
void pw_ops_profile_label(const PwOps *o, const char *label);

/* Every line so far, over all profiled tables of the process, most device time first (waits
 * for what is queued). The caller frees the array; NULL with *n = 0 when nothing was timed. */
PwOpsProfileRow *pw_ops_profile_rows(size_t *n);
/* The profile as two tables, by entry and by entry and shape (docs/performance.md). */
void pw_ops_profile_write(FILE *f);
/* Forget every line so far (a benchmark's warm-up) */
void pw_ops_profile_reset(void);
/* The environment's choice (PW_OPS_PROFILE_ENV): 1 when tables should be profiled. The first
 * call that says so arranges the report at exit. */
int pw_ops_profile_wanted(void);

#endif
