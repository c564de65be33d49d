/* pw_metrics.h: how a number is written into a run folder's JSONL files (metrics.jsonl,
 * eval.jsonl) and read back, for the writers (src/roles) and the readers (src/report, the tests).
 * JSON has no NaN or infinity, and jansson's json_real refuses them, which once made a diverged
 * run's metrics lose their keys without a word; such a value is written as the string "nan",
 * "inf" or "-inf" instead, so a key is never left out. null stays "no such value" (no
 * validation set, no step yet). Header-only over jansson, which every user links already. */
#ifndef PW_METRICS_H
#define PW_METRICS_H

#include <jansson.h>
#include <math.h>
#include <string.h>

/* The string a non-finite value is written as; NULL for a finite one (written as a number). */
static inline const char *pw_metric_nonfinite_name(double v)
{
    if (isnan(v)) return "nan";
    if (isinf(v)) return v > 0 ? "inf" : "-inf";
    return NULL;
}

/* A value for json_object_set_new: a real, or the string of a non-finite value. */
static inline json_t *pw_metric_json(double v)
{
    const char *name = pw_metric_nonfinite_name(v);
    return name ? json_string(name) : json_real(v);
}

/* Reads a value back: 1 and *v for a number or one of the three strings, 0 for null or a
 * missing value (j NULL), -1 for anything else. */
static inline int pw_metric_get(const json_t *j, double *v)
{
    if (!j || json_is_null(j)) return 0;
    if (json_is_number(j)) {
        *v = json_number_value(j);
        return 1;
    }
    const char *s = json_string_value(j);
    if (!s) return -1;
    if (!strcmp(s, "nan")) *v = NAN;
    else if (!strcmp(s, "inf")) *v = INFINITY;
    else if (!strcmp(s, "-inf")) *v = -INFINITY;
    else return -1;
    return 1;
}

#endif
