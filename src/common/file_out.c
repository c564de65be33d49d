/* file_out.c: the one way ppo_world writes a file: under a temporary name next to its target,
 * synced, then renamed over it and the folder synced, so that a crash, a full disk or a killed
 * rank leaves the old file or the whole new one, never half of one, and a reader (a resumption,
 * the launcher, a plotting script) never sees a partial write. stdio has no such call, and
 * neither has any library ppo_world links; it is a dozen system calls in a fixed order. */
#include "pw_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

FILE *pw_file_out_open(PwFileOut *o, const char *path, PwErr *err)
{
    o->f = NULL;
    o->path = strdup(path);
    size_t len = strlen(path);
    o->tmp = malloc(len + 16);
    if (!o->path || !o->tmp) {
        free(o->path), free(o->tmp);
        o->path = o->tmp = NULL;
        pw_errf(err, "%s: out of memory", path);
        return NULL;
    }
    /* a name of its own per writer (mkstemp): two writers of one path never share a file, and
     * whatever stands at the target (a FIFO would block an open for writing) is replaced by the
     * rename, never written through */
    memcpy(o->tmp, path, len);
    memcpy(o->tmp + len, ".tmp.XXXXXX", 12);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        pw_errf(err, "%s: cannot create a temporary file next to it: %s", path, strerror(errno));
        free(o->path), free(o->tmp);
        o->path = o->tmp = NULL;
        return NULL;
    }
    /* mkstemp makes the file private (0600); what ppo_world writes is read like any file */
    (void)fchmod(fd, 0644);
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        pw_errf(err, "%s: cannot open %s: %s", path, o->tmp, strerror(errno));
        close(fd);
        pw_file_out_close(o, 1, NULL);
        return NULL;
    }
    return o->f;
}

/* The rename is durable only once the folder itself is synced. */
static int sync_folder(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir) return ENOMEM;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), e = 0;
    /* some file systems cannot sync a folder (EINVAL); the data itself is synced by then */
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL)) e = errno;
    if (fd >= 0) close(fd);
    free(dir);
    return e;
}

int pw_file_out_close(PwFileOut *o, int failed, PwErr *err)
{
    if (!o->path) return -1; /* the open failed and said why */
    const char *step = NULL;
    int e = 0;
    if (o->f) {
        if (!failed && ferror(o->f)) step = "cannot write", e = EIO;
        else if (!failed && (fflush(o->f) != 0 || fsync(fileno(o->f)) != 0))
            step = "cannot write", e = errno;
        if (fclose(o->f) != 0 && !failed && !step) step = "cannot write", e = errno;
        o->f = NULL;
    }
    if (!failed && !step && rename(o->tmp, o->path) != 0)
        step = "cannot rename the temporary file over it", e = errno;
    int renamed = !failed && !step;
    if (renamed && (e = sync_folder(o->path)) != 0) step = "cannot sync its folder";
    if (!renamed) unlink(o->tmp);
    /* the caller's own failure keeps the caller's message */
    if (step && err) pw_errf(err, "%s: %s: %s", o->path, step, strerror(e ? e : EIO));
    free(o->path), free(o->tmp);
    o->path = o->tmp = NULL;
    return failed || step ? -1 : 0;
}

FILE *pw_file_append(const char *path, const void *keep, size_t n, PwErr *err)
{
    /* the rename puts a regular file at the name first: an open for writing of whatever stood
     * there (a FIFO) would block */
    if (pw_file_write(path, keep, n, err)) return NULL;
    FILE *f = fopen(path, "a");
    if (!f) pw_errf(err, "%s: cannot open for appending: %s", path, strerror(errno));
    return f;
}

int pw_file_write(const char *path, const void *buf, size_t n, PwErr *err)
{
    PwFileOut o;
    FILE *f = pw_file_out_open(&o, path, err);
    if (!f) return -1;
    if (n && fwrite(buf, 1, n, f) != n) {
        int e = errno ? errno : EIO;
        pw_file_out_close(&o, 1, NULL);
        return pw_errf(err, "%s: cannot write: %s", path, strerror(e));
    }
    return pw_file_out_close(&o, 0, err);
}
