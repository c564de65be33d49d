/* pw_common.h: what every layer of ppo_world shares: the error record and a few helpers.
 * Header-only so that the lowest layer (kernels) can use it without a library of its own. */
#ifndef PW_COMMON_H
#define PW_COMMON_H

#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>

/* An error travels up as a message that already names the file, line, key or tensor and what
 * was expected; functions that can fail return 0 on success and -1 after filling a PwErr. */
typedef struct PwErr {
    char msg[1024];
} PwErr;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static inline int pw_errf(PwErr *e, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

#define PW_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
