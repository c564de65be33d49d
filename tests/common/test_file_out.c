/* test_file_out.c: pw_file_out_open / pw_file_out_close / pw_file_write (src/common/file_out.c):
 * a file appears whole or not at all, whatever stands at its name, and every failure leaves the
 * old file as it was, no temporary file behind, and a message naming the path and the step. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_file.h"
#include "pw_test.h"

static char dir[256];

/* the file's whole text, or "" when it cannot be read */
static const char *text_of(const char *path)
{
    static char buf[4096];
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* how many temporary files (NAME.tmp.XXXXXX) the folder holds */
static int leftovers(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: a write blocked (a FIFO opened?)\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

int main(void)
{
    const char *tmpdir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof dir, "%s/pw_file_out_XXXXXX", tmpdir);
    CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    char path[400];
    snprintf(path, sizeof path, "%s/a.txt", dir);
    PwErr err = {{0}};

    /* a new file, then the same name replaced; readable by all (mkstemp's 0600 undone) */
    CHECK(pw_file_write(path, "first\n", 6, &err) == 0, "%s", err.msg);
    CHECK(!strcmp(text_of(path), "first\n"), "new file: '%s'", text_of(path));
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0044) == 0044,
          "mode %o: not readable by group and others", st.st_mode & 0777);
    CHECK(pw_file_write(path, "second\n", 7, &err) == 0, "%s", err.msg);
    CHECK(!strcmp(text_of(path), "second\n"), "replaced: '%s'", text_of(path));
    CHECK(leftovers() == 0, "%d temporary files left", leftovers());

    /* a stream: what the caller writes appears only at the close */
    PwFileOut o;
    FILE *f = pw_file_out_open(&o, path, &err);
    CHECK(f != NULL, "%s", err.msg);
    if (f) {
        fprintf(f, "third %d\n", 3);
        fflush(f);
        CHECK(!strcmp(text_of(path), "second\n"), "visible before the close: '%s'",
              text_of(path));
        CHECK(pw_file_out_close(&o, 0, &err) == 0, "%s", err.msg);
    }
    CHECK(!strcmp(text_of(path), "third 3\n"), "stream: '%s'", text_of(path));

    /* the caller's own failure: the old file stands, the caller's message stays */
    f = pw_file_out_open(&o, path, &err);
    if (f) {
        fputs("half of a", f);
        snprintf(err.msg, sizeof err.msg, "the caller's reason");
        CHECK(pw_file_out_close(&o, 1, &err) == -1, "a failed write was committed");
    }
    CHECK(!strcmp(text_of(path), "third 3\n"), "after a failure: '%s'", text_of(path));
    CHECK(!strcmp(err.msg, "the caller's reason"), "message replaced: %s", err.msg);
    CHECK(leftovers() == 0, "%d temporary files left after a failure", leftovers());

    /* a FIFO at the name is replaced, never opened (an open for writing would wait for ever) */
    char fifo[400];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    CHECK(mkfifo(fifo, 0644) == 0, "mkfifo: %s", strerror(errno));
    signal(SIGALRM, on_alarm);
    alarm(20);
    CHECK(pw_file_write(fifo, "x\n", 2, &err) == 0, "%s", err.msg);
    alarm(0);
    CHECK(stat(fifo, &st) == 0 && S_ISREG(st.st_mode), "the FIFO was not replaced by a file");
    /* a file opened for appending (metrics.jsonl): a FIFO there is replaced too, and what a
     * resumption keeps comes first */
    unlink(fifo);
    CHECK(mkfifo(fifo, 0644) == 0, "mkfifo: %s", strerror(errno));
    alarm(20);
    f = pw_file_append(fifo, "kept\n", 5, &err);
    alarm(0);
    CHECK(f != NULL, "%s", err.msg);
    if (f) {
        fputs("appended\n", f);
        fclose(f);
    }
    CHECK(!strcmp(text_of(fifo), "kept\nappended\n"), "append: '%s'", text_of(fifo));

    /* a folder at the name: the rename cannot replace it */
    char sub[400];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    CHECK(mkdir(sub, 0755) == 0, "mkdir: %s", strerror(errno));
    CHECK(pw_file_write(sub, "x", 1, &err) == -1, "a folder was written over");
    CHECK(strstr(err.msg, "/sub: cannot rename the temporary file over it: Is a directory"),
          "folder: %s", err.msg);
    CHECK(leftovers() == 0, "%d temporary files left after a failed rename", leftovers());

    /* a folder that does not exist */
    char none[400];
    snprintf(none, sizeof none, "%s/no/such/folder/x.json", dir);
    CHECK(pw_file_write(none, "x", 1, &err) == -1, "a missing folder was written into");
    CHECK(strstr(err.msg, "x.json: cannot create a temporary file next to it: No such file or "
                          "directory"), "missing folder: %s", err.msg);

    /* a write the system refuses (a file size limit, as a full disk would): the old file stands */
    struct rlimit old_lim, lim;
    getrlimit(RLIMIT_FSIZE, &old_lim);
    lim = old_lim;
    lim.rlim_cur = 4096;
    signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &lim) == 0) {
        static char big[1 << 16];
        memset(big, 'z', sizeof big);
        CHECK(pw_file_write(path, big, sizeof big, &err) == -1, "a refused write was committed");
        CHECK(strstr(err.msg, "a.txt: cannot write: File too large"), "refused: %s", err.msg);
        f = pw_file_out_open(&o, path, &err);
        if (f) {
            fwrite(big, 1, sizeof big, f); /* the error stays on the stream */
            CHECK(pw_file_out_close(&o, 0, &err) == -1, "a stream's error was committed");
            CHECK(strstr(err.msg, "a.txt: cannot write: "), "stream refused: %s", err.msg);
        }
        setrlimit(RLIMIT_FSIZE, &old_lim);
        CHECK(!strcmp(text_of(path), "third 3\n"), "after a refused write: '%s'", text_of(path));
        CHECK(leftovers() == 0, "%d temporary files left after a refused write", leftovers());
    }

    unlink(path), unlink(fifo), rmdir(sub), rmdir(dir);
    return pw_test_done("file_out");
}
