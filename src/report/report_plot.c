/* report_plot.c: the PNG plots of `ppo_world report`: .dat files and a gnuplot script written
 * into the run folder, then gnuplot run there; without gnuplot the report goes on unplotted. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pw_file.h"
#include "pw_report.h"

void pw_report_dat_value(FILE *f, double v)
{
    /* printf spells a negative NaN "-nan"; gnuplot and the tables want one spelling */
    if (isnan(v))
        fputs("nan", f);
    else
        fprintf(f, "%.6g", v);
}

void pw_report_dat_values(FILE *f, const double *v, int n)
{
    for (int i = 0; i < n; i++) {
        if (i) fputc(' ', f);
        pw_report_dat_value(f, v[i]);
    }
}

/* The gnuplot executable on PATH (into buf), or NULL. Looked up here rather than left to exec
 * so that its absence is one clear message and not a failed child. */
static const char *find_gnuplot(char *buf, size_t size)
{
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        if (len == 0)
            snprintf(buf, size, "./gnuplot");
        else
            snprintf(buf, size, "%.*s/gnuplot", (int)len, path);
        if (access(buf, X_OK) == 0) return buf;
        if (!end) break;
        path = end + 1;
    }
    return NULL;
}

/* Run exe with args in dir, its stdout thrown away and its stderr (and stdout when
 * keep_stdout) collected into out. Returns the exit status, or -1 if it could not start. */
static int run_child(const char *exe, char *const args[], const char *dir, int keep_stdout,
                     char *out, size_t out_size)
{
    int fds[2];
    if (pipe(fds)) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) dup2(null, STDIN_FILENO);
        dup2(keep_stdout ? fds[1] : null, STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        if (dir && chdir(dir)) _exit(126);
        execv(exe, args);
        _exit(127);
    }
    close(fds[1]);
    size_t used = 0;
    char chunk[4096];
    ssize_t r;
    while ((r = read(fds[0], chunk, sizeof chunk)) != 0) {
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        /* read to the end even when full, so that the child never blocks on a full pipe */
        size_t take = (size_t)r;
        if (out && used + 1 < out_size) {
            if (take > out_size - 1 - used) take = out_size - 1 - used;
            memcpy(out + used, chunk, take);
            used += take;
        }
    }
    if (out && out_size) out[used] = '\0';
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int pw_report_gnuplot(const char *dir, const char *script_name, const char *script)
{
    char exe[4096];
    if (!find_gnuplot(exe, sizeof exe)) {
        fprintf(stderr, "ppo_world report: gnuplot not found: no plots\n");
        return -1;
    }
    /* pngcairo draws smoother lines and honours the font; plain png is the fallback that
     * every gnuplot build with libgd has */
    static char probe_out[1 << 16];
    char *probe[] = {exe, "-e", "set terminal", NULL};
    run_child(exe, probe, NULL, 1, probe_out, sizeof probe_out);
    const char *term = strstr(probe_out, "pngcairo") ? "pngcairo size 900,560 font ',11'"
                                                     : "png size 900,560";

    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, script_name);
    PwFileOut o;
    PwErr e;
    FILE *f = pw_file_out_open(&o, path, &e);
    if (f) fprintf(f, "set terminal %s\n%s", term, script); /* an error stays on the stream */
    if (!f || pw_file_out_close(&o, 0, &e)) {
        fprintf(stderr, "ppo_world report: %s\n", e.msg);
        return -1;
    }
    static char errors[1 << 16];
    char *args[] = {exe, (char *)script_name, NULL};
    int rc = run_child(exe, args, dir, 0, errors, sizeof errors);
    if (rc != 0) {
        fprintf(stderr, "ppo_world report: gnuplot failed:\n%s", errors);
        if (!*errors || errors[strlen(errors) - 1] != '\n') fputc('\n', stderr);
        return -1;
    }
    return 0;
}

/* a data file of the plots, whole or not at all (pw_file.h); pw_file_out_close ends it */
static FILE *open_dat(PwFileOut *o, const char *run, const char *name, const char *header,
                      PwErr *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", run, name);
    FILE *f = pw_file_out_open(o, path, err);
    if (f) fprintf(f, "# %s\n", header);
    return f;
}

/* one eval.dat row: x is the number of updates the evaluated policy has had */
static void eval_row(FILE *f, long updates, const PwReportPoint *p)
{
    fprintf(f, "%ld ", updates);
    pw_report_dat_values(f, (const double[]){p->proxy, p->gold, p->se, p->kl}, 4);
    fputc('\n', f);
}

static const char run_script[] =
    "set key bottom right\n"
    "set grid\n"
    "set xlabel 'PPO step'\n"
    "set output 'score.png'\n"
    "set title 'Proxy reward-model score (training batches and evaluation prompts)'\n"
    "set ylabel 'score'\n"
    "plot 'train.dat' using 1:2 with lines lw 1 title 'training batch', \\\n"
    "     'eval.dat' using 1:2 with linespoints lw 2 pt 7 title 'evaluation'\n"
    "set output 'kl.png'\n"
    "set title 'KL to the SFT policy (sum over response tokens, mean over responses)'\n"
    "set ylabel 'KL (nats)'\n"
    "set key top left\n"
    "plot 'train.dat' using 1:3 with lines lw 2 title 'objective/kl'\n"
    "set output 'gold.png'\n"
    "set title 'Gold score on held-out prompts (error bars: 1 standard error)'\n"
    "set ylabel 'gold score (2^{-edit distance})'\n"
    "set key bottom right\n"
    "plot 'eval.dat' using 1:3:4 with yerrorlines lw 2 pt 7 title 'gold'\n";

int pw_report_plot_run(const char *run, const PwReportPoint *pts, int npts,
                       const PwReportStep *steps, int nsteps, const PwReportPoint *sft, PwErr *err)
{
    PwFileOut o;
    FILE *f = open_dat(&o, run, "train.dat", "step score kl rlhf_reward", err);
    if (!f) return -1;
    for (int i = 0; i < nsteps; i++) {
        fprintf(f, "%ld ", steps[i].step);
        pw_report_dat_values(f, (const double[]){steps[i].scores, steps[i].kl, steps[i].rlhf_reward}, 3);
        fputc('\n', f);
    }
    if (pw_file_out_close(&o, 0, err)) return -1;

    f = open_dat(&o, run, "eval.dat", "updates proxy gold gold_se kl", err);
    if (!f) return -1;
    if (npts > 0 && !pts[0].initial) {
        PwReportPoint start = *sft;
        start.kl = 0.0;
        eval_row(f, 0, &start);
    }
    for (int i = 0; i < npts; i++) eval_row(f, pts[i].initial ? 0 : pts[i].step + 1, &pts[i]);
    if (pw_file_out_close(&o, 0, err)) return -1;

    pw_report_gnuplot(run, "plots.gp", run_script);
    return 0;
}
