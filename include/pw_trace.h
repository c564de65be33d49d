/* pw_trace.h: a timeline of every rank in the Chrome trace event format (trace.path): spans of
 * phases, messages and collectives, kept in memory per rank and merged by world rank 0 at the end.
 * Off (w->trace NULL) unless a run asks for it; docs/trace.md describes the file. */
#ifndef PW_TRACE_H
#define PW_TRACE_H

#include <stdint.h>

#include "pw_comm.h"
#include "pw_message.h"

/* The track (Chrome "tid") of a span: a role (0..PW_ROLE_COUNT-1), or the rank's communication. */
#define PW_TRACE_COMM PW_ROLE_COUNT

/* Events one rank keeps at most (80 bytes each): past it, spans are counted, not kept, and the
 * file says how many were dropped. trace.steps is the bound a user sets; this one guards it. */
#define PW_TRACE_MAX_EVENTS (1 << 18)

typedef struct PwTrace PwTrace;

typedef enum PwTraceCat { PW_TRACE_PHASE = 0, PW_TRACE_MESSAGE, PW_TRACE_COLLECTIVE } PwTraceCat;

/* The folder of `path` must exist and be a folder; checked before a job starts, so a typo is an
 * error naming key and folder, not a lost trace at the end. */
int pw_trace_check_path(const char *key, const char *path, PwErr *err);
/* Collective over w->comm: every rank starts recording the steps [first, first + steps), with
 * the clock's origin just after a barrier, so the ranks' timelines line up. */
void pw_trace_open(PwWorld *w, const char *path, int64_t first, int64_t steps);
/* The step that spans without one of their own (phases, collectives) are recorded under. */
void pw_trace_set_step(PwWorld *w, int64_t step);
/* A span [t0, t1] in pw_now() seconds on track `tid`, under the current step. */
void pw_trace_span(PwWorld *w, int tid, PwTraceCat cat, const char *name, double t0, double t1);
/* A message of header h, sent (dir 0) or received (dir 1) by this rank, under h's step. */
void pw_trace_message(PwWorld *w, const PwMsgHeader *h, int recv, int peer, double t0, double t1);
/* A collective of `bytes` among the ranks of role r. */
void pw_trace_collective(PwWorld *w, PwRole r, const char *name, uint64_t bytes, double t0,
                         double t1);
/* Collective over w->comm: world rank 0 gathers every rank's spans and writes the file
 * atomically. Returns 0, or -1 with `err` on rank 0 when it could not be written. Frees the
 * recorder either way (pw_world_free frees one that was never closed, and writes nothing). */
int pw_trace_close(PwWorld *w, PwErr *err);
void pw_trace_free(PwWorld *w);

#endif
