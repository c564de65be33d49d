/* file.c: the one way ppo_world opens a file a user named: checked to be a regular file of
 * bounded size before it is read, with a message that says what the path really is. */
#include "pw_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a path that is not a regular file is, for messages. */
static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISREG(m)) return "a regular file";
    return "neither a file nor a directory";
}

/* Why stat or open failed, in words that say what the path is. */
static int path_error(const char *path, int e, const char *verb, PwErr *err)
{
    struct stat ls;
    switch (e) {
    case ENOENT:
        /* A link whose target is missing exists itself: say so, it is a different mistake. */
        if (lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode))
            return pw_errf(err, "%s: is a symbolic link to something that does not exist", path);
        return pw_errf(err, "%s: does not exist", path);
    case ELOOP:
        return pw_errf(err, "%s: too many symbolic links (a loop of links?)", path);
    case ENOTDIR:
        return pw_errf(err, "%s: does not exist (a part of the path is not a directory)", path);
    default:
        return pw_errf(err, "%s: cannot %s: %s", path, verb, strerror(e));
    }
}

/* "1 MiB", "16 GiB": the limits are powers of two, and a reader compares sizes at a glance. */
static void fmt_size(uint64_t n, char *buf, size_t len)
{
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && n >= 1024 && n % 1024 == 0) {
        n /= 1024;
        u++;
    }
    snprintf(buf, len, "%" PRIu64 " %s", n, unit[u]);
}

static int check_stat(const char *path, const struct stat *st, uint64_t max_bytes, PwErr *err)
{
    if (S_ISDIR(st->st_mode)) return pw_errf(err, "%s: is a directory; expected a file", path);
    if (!S_ISREG(st->st_mode))
        return pw_errf(err, "%s: not a regular file (%s)", path, kind_of(st->st_mode));
    if ((uint64_t)st->st_size > max_bytes) {
        char m[32];
        fmt_size(max_bytes, m, sizeof m);
        return pw_errf(err, "%s: %" PRIu64 " bytes, more than the %s this file may have", path,
                       (uint64_t)st->st_size, m);
    }
    return 0;
}

int pw_file_open(const char *path, uint64_t max_bytes, uint64_t *size, PwErr *err)
{
    struct stat st;
    /* By name first: opening a device can act on it (a tape rewinds, a watchdog device arms),
     * so whatever is not a regular file is refused before it is opened. */
    if (stat(path, &st) != 0) return path_error(path, errno, "open", err);
    if (check_stat(path, &st, max_bytes, err)) return -1;
    /* Non-blocking: if the path was swapped for a FIFO since, the open returns at once and
     * the check by descriptor below refuses it. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return path_error(path, errno, "open", err);
    int flags;
    if (fstat(fd, &st) != 0 || (flags = fcntl(fd, F_GETFL)) < 0 ||
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        return pw_errf(err, "%s: cannot open: %s", path, strerror(e));
    }
    if (check_stat(path, &st, max_bytes, err)) {
        close(fd);
        return -1;
    }
    if (size) *size = (uint64_t)st.st_size;
    return fd;
}

FILE *pw_file_fopen(const char *path, uint64_t max_bytes, PwErr *err)
{
    int fd = pw_file_open(path, max_bytes, NULL, err);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        pw_errf(err, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

char *pw_file_read(const char *path, uint64_t max_bytes, size_t *len, PwErr *err)
{
    uint64_t size = 0;
    int fd = pw_file_open(path, max_bytes, &size, err);
    if (fd < 0) return NULL;
    /* The size is a first guess: a file still being written may grow (and some files, such as
     * those of /proc, say 0), so the buffer grows too, to one byte past the cap at most. */
    size_t n = 0, cap = (size_t)size + 1;
    char *buf = malloc(cap);
    int rc = buf ? 0 : pw_errf(err, "%s: out of memory for %zu bytes", path, cap);
    while (!rc) {
        if (n + 1 == cap) {
            if ((uint64_t)n > max_bytes) {
                char m[32];
                fmt_size(max_bytes, m, sizeof m);
                rc = pw_errf(err, "%s: more than the %s this file may have (it grew while it "
                             "was read)", path, m);
                break;
            }
            size_t want = cap < 2048 ? 4096 : 2 * cap;
            if ((uint64_t)want > max_bytes + 2) want = (size_t)(max_bytes + 2);
            char *bigger = realloc(buf, want);
            if (!bigger) {
                rc = pw_errf(err, "%s: out of memory for %zu bytes", path, want);
                break;
            }
            buf = bigger;
            cap = want;
        }
        ssize_t got = read(fd, buf + n, cap - 1 - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) rc = pw_errf(err, "%s: cannot read: %s", path, strerror(errno));
        if (got <= 0) break;
        n += (size_t)got;
    }
    close(fd);
    if (rc) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

int pw_dir_check(const char *path, PwErr *err)
{
    struct stat st;
    if (stat(path, &st) != 0) return path_error(path, errno, "read", err);
    if (!S_ISDIR(st.st_mode))
        return pw_errf(err, "%s: not a directory (%s)", path, kind_of(st.st_mode));
    return 0;
}

json_t *pw_file_json(const char *path, uint64_t max_bytes, size_t flags, PwErr *err)
{
    size_t len = 0;
    char *text = pw_file_read(path, max_bytes, &len, err);
    if (!text) return NULL;
    json_error_t je;
    json_t *j = json_loadb(text, len, flags, &je);
    free(text);
    if (!j) {
        if (je.line < 1) pw_errf(err, "%s: not valid JSON: %s", path, je.text);
        else pw_errf(err, "%s:%d: not valid JSON: %s", path, je.line, je.text);
    }
    return j;
}
