/* profile_internal.h: what the profiled table's entries (profile_entries.c) share with its
 * bookkeeping (profile.c): a span around each call of the wrapped table. */
#ifndef PW_PROFILE_INTERNAL_H
#define PW_PROFILE_INTERNAL_H

#include "pw_ops.h"

typedef struct PwProfSpan {
    void *from;   /* the mark queued before the call (NULL on the CPU) */
    double host0; /* the host clock then, ms */
} PwProfSpan;

/* before and after a call of o->inner's entry: the span is summed into the row of (o's device,
 * op, the shape printf'd from fmt) with its flops and bytes */
void pw_prof_begin(const PwOps *o, PwProfSpan *s);
void pw_prof_end(const PwOps *o, PwProfSpan *s, const char *op, double flops, double bytes,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* read the times of o's spans so far (waits for the last) */
void pw_prof_resolve(const PwOps *o);
/* o's entries: the profiled ones, and inner's device, stream, name and marks */
void pw_prof_fill(PwOps *o, const PwOps *inner);
/* resolve, then free the profiled table (not inner) */
void pw_prof_release(const PwOps *o);

#endif
