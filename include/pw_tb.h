/* pw_tb.h: TensorBoard event files (log.tensorboard): the numbers of a run's metrics.jsonl and
 * eval.jsonl lines (and of sft/rm's metrics.jsonl) as TensorBoard scalars, so `tensorboard
 * --logdir runs/` draws every run's curves as users of NeMo-Aligner, OpenRLHF and TRL are used
 * to. One writer per process (the rank that writes the JSONL files); docs/roles.md, TensorBoard,
 * describes the files. */
#ifndef PW_TB_H
#define PW_TB_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "pw_common.h"

typedef struct PwTb PwTb;

/* Seconds since the epoch (the real-time clock): an event's wall_time. */
double pw_tb_now(void);

/* Whether `dir` can hold the event files: a folder this process can write in, or nothing yet
 * (pw_tb_open makes it; its parent must exist then). 0, or -1 with `err` naming `dir` and what
 * stands there (pw_dir_check's words, as for the checkpoints' folder): checked on
 * every rank before a model loads, so a bad folder stops the job before it trains. */
int pw_tb_check_folder(const char *dir, PwErr *err);
/* Makes the folder `dir` if it is missing (its parent must exist) and a new event file in it,
 * events.out.tfevents.<seconds>.<host>.<pid>.ppo_world, whose first event is the file version
 * TensorBoard reads ("brain.Event:2") at `wall`. NULL with `err` naming the path on failure. */
PwTb *pw_tb_open(const char *dir, double wall, PwErr *err);
/* The path of the event file. */
const char *pw_tb_path(const PwTb *tb);

/* One event of n scalars (tags[i], vals[i]) at `step` (>= 0 in ppo_world's files; any int64 is
 * encoded) and `wall`, flushed so a running TensorBoard sees it. A value is stored as a float,
 * NaN and infinities included. Returns 0, or -1 with `err` when the file could not be written;
 * after a failure the writer writes nothing more (pw_tb_ok says so). */
int pw_tb_scalars(PwTb *tb, int64_t step, double wall, int n, const char *const *tags,
                  const double *vals, PwErr *err);
/* One event of a text summary: `text` (markdown, UTF-8) under `tag`, which TensorBoard's text
 * dashboard draws at `step` (a table, for the evaluation's sample responses). */
int pw_tb_text(PwTb *tb, int64_t step, double wall, const char *tag, const char *text,
               PwErr *err);
/* The numbers of one JSONL line as one event: every key whose value is a number or one of the
 * strings "nan", "inf", "-inf" (pw_metrics.h), in the line's order, except the key "step";
 * null, other strings, arrays and objects are left out. A line with no number writes nothing. */
int pw_tb_json(PwTb *tb, int64_t step, double wall, const json_t *line, PwErr *err);
/* A session-start event at `step`: TensorBoard drops what earlier files hold at this step and
 * after it, as it does for a restarted job. A resumed run writes one before its first step. */
int pw_tb_restart(PwTb *tb, int64_t step, double wall, PwErr *err);
/* 1 while every write so far has succeeded. */
int pw_tb_ok(const PwTb *tb);
/* After a failed write: warns once on stderr ("WHO: warning: <err>; no more TensorBoard events
 * this run (metrics.jsonl goes on)"), closes the writer and sets *tb to NULL, so the run goes on
 * without it. */
void pw_tb_give_up(PwTb **tb, const char *who, const PwErr *err);
/* Closes the file (NULL: nothing). */
void pw_tb_close(PwTb *tb);

/* The record format's checksum, for the tests: CRC-32C (Castagnoli) of n bytes, and its masked
 * form ((crc >> 15 | crc << 17) + 0xa282ead8) that each record stores. */
uint32_t pw_tb_crc32c(const void *data, size_t n);
uint32_t pw_tb_masked_crc(const void *data, size_t n);

#endif
