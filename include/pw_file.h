/* pw_file.h: reading the files a user names (placements, configurations, data sets, model and
 * tokenizer folders, run folders): each is checked before a byte of it is read; and writing
 * every file ppo_world makes, whole or not at all (src/common/file_out.c). */
#ifndef PW_FILE_H
#define PW_FILE_H

#include <stdint.h>
#include <stdio.h>

#include "pw_common.h"

/* The most a file of each use may hold (docs/architecture.md, Files ppo_world reads). A size is
 * known before reading, so these only refuse what no real file of that kind comes near; they
 * exist so that a wrong path (a device, a log that keeps growing) fails at once with a message
 * instead of filling memory. */
#define PW_FILE_MAX_YAML ((uint64_t)1 << 20)          /* placements, run configurations */
#define PW_FILE_MAX_JSON ((uint64_t)16 << 20)         /* config.json, state.json, indexes */
#define PW_FILE_MAX_TOKENIZER ((uint64_t)256 << 20)   /* tokenizer.json */
#define PW_FILE_MAX_JSONL ((uint64_t)16 << 30)        /* data sets, metrics.jsonl, eval.jsonl */
#define PW_FILE_MAX_WEIGHTS ((uint64_t)1 << 40)       /* one safetensors file */

/* Opens `path` for reading once it is known to be a regular file of at most `max_bytes` bytes.
 * The file is checked by name first and by descriptor after opening (non-blocking, so a FIFO
 * put there meanwhile cannot stall the open), so neither a FIFO nor a device is ever waited on
 * or read. Returns the descriptor (blocking again, close-on-exec) and its size in `*size`
 * (may be NULL), or -1 after filling `err` with one of
 *   "PATH: does not exist", "PATH: too many symbolic links", "PATH: is a directory",
 *   "PATH: not a regular file (a FIFO)", "PATH: N bytes, more than the M this file may have",
 *   "PATH: cannot open: <the system's reason>". */
int pw_file_open(const char *path, uint64_t max_bytes, uint64_t *size, PwErr *err);
/* The same as a stdio stream, for readers that go line by line. */
FILE *pw_file_fopen(const char *path, uint64_t max_bytes, PwErr *err);
/* The whole file in one allocation with a NUL after its last byte (`*len` bytes before it;
 * `len` may be NULL). A file that grows past `max_bytes` while it is read is refused too. */
char *pw_file_read(const char *path, uint64_t max_bytes, size_t *len, PwErr *err);

/* Checks that `path` is a folder: 0, or -1 with "PATH: does not exist", "PATH: too many
 * symbolic links", "PATH: not a folder (a regular file)"... in `err`. */
int pw_dir_check(const char *path, PwErr *err);

/* A JSON file read through pw_file_read and parsed with jansson's `flags`. NULL with `err`
 * holding the file's error, or "PATH:LINE: not valid JSON: <jansson's message>". */
struct json_t *pw_file_json(const char *path, uint64_t max_bytes, size_t flags, PwErr *err);

/* A file being written: under a temporary name next to `path` (PATH.tmp.XXXXXX, one per
 * writer), renamed over `path` when it is whole. */
typedef struct PwFileOut {
    char *path, *tmp;
    FILE *f;
} PwFileOut;

/* Starts writing `path`: the stream to write to, or NULL with "PATH: cannot create a temporary
 * file next to it: <the system's reason>" in `err`. Whatever stands at `path` (a file, a FIFO, a
 * link) is replaced at the close, never opened. */
FILE *pw_file_out_open(PwFileOut *o, const char *path, PwErr *err);
/* Ends the write. With `failed` 0: flushes and syncs the stream, renames it over `path`, syncs
 * the folder, and returns 0; or -1 with "PATH: cannot write: <reason>" (an error on the stream
 * included), "PATH: cannot rename the temporary file over it: <reason>" or "PATH: cannot sync
 * its folder: <reason>" in `err` (may be NULL). With `failed` 1 (the caller's own error, whose
 * message `err` keeps): removes the temporary file and returns -1; `path` is untouched. */
int pw_file_out_close(PwFileOut *o, int failed, PwErr *err);
/* `path` replaced by buf[0..n) through the two above. */
int pw_file_write(const char *path, const void *buf, size_t n, PwErr *err);
/* A file that grows line by line while a run goes on (metrics.jsonl): `path` replaced by
 * keep[0..n) (what a resumption keeps; n = 0 for a new run) as pw_file_write does, then opened
 * for appending. NULL with `err` set on failure. */
FILE *pw_file_append(const char *path, const void *keep, size_t n, PwErr *err);

#endif
