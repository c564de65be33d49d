/* report_internal.h: the file functions the report commands share (report.c owns them): JSONL
 * rows, paths inside run folders. Not for other layers. */
#ifndef PW_REPORT_INTERNAL_H
#define PW_REPORT_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "pw_common.h"
#include "pw_config.h"

/* The JSON objects of a JSONL file, blank lines skipped; an error names path:line. */
typedef struct Rows {
    json_t **row;
    int n;
} Rows;

int pw_report_read_jsonl(const char *path, Rows *out, PwErr *err);
void pw_report_rows_free(Rows *r);
/* Nothing at all at the name (anything else there is refused when it is opened, by what it is) */
int pw_report_missing(const char *path);
/* dir/name without doubling a trailing slash of dir (as a shell user may type it) */
void pw_report_join(char *out, size_t size, const char *dir, const char *name);

/* RUN/config.yaml over the defaults (a run's saved configuration); err names what failed */
int pw_report_run_config(const char *run, PwConfig *cfg, PwErr *err);

/* OUT/gantt_NAME.dat rows "start_ms end_ms track color" and gantt_NAME.png (gnuplot) of one step of
 * DIR/trace.json (a Chrome trace); 0 when drawn, 1 when DIR has no trace, -1 on a bad trace. */
int pw_report_gantt(const char *out, const char *name, const char *dir, PwErr *err);

/* `ppo_world report placements OUT NAME=RUN ...` (report_placements.c) */
int pw_report_placements(int argc, char **argv);

#endif
