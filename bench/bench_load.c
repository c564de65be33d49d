/* bench_load.c: how fast pw_model_load brings a sharded bfloat16 Hugging Face checkpoint of
 * Qwen2.5-0.5B's shape into float32 parameters, against the floor of reading the same files
 * once with read(), on all OpenMP threads and on one, and how much memory the load holds beyond
 * the parameters themselves. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_clock.h"
#include "bench_shapes.h"
#include "bench_stats.h"
#include "pw_model.h"
#include "pw_safetensors.h"

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "bench_load: %s: %s\n", what, msg);
    exit(1);
}

/* ---- the checkpoint folder, removed at exit whatever happens */

static char folder[4096];

static void remove_folder(void)
{
    if (!folder[0]) return;
    DIR *d = opendir(folder);
    struct dirent *e;
    char path[4400];
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", folder, e->d_name);
            unlink(path);
        }
    if (d) closedir(d);
    rmdir(folder);
    folder[0] = '\0';
}

/* The safetensors files of the folder, sorted (shard order), and their total size. */
typedef struct Files {
    int n;
    char path[256][4400];
    size_t bytes;
} Files;

static int name_cmp(const void *a, const void *b) { return strcmp(a, b); }

static void list_files(Files *f)
{
    DIR *d = opendir(folder);
    if (!d) die(folder, strerror(errno));
    struct dirent *e;
    char names[256][256];
    f->n = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 12 && len < 256 && !strcmp(e->d_name + len - 12, ".safetensors") && f->n < 256)
            snprintf(names[f->n++], 256, "%s", e->d_name);
    }
    closedir(d);
    qsort(names, f->n, sizeof names[0], name_cmp);
    f->bytes = 0;
    for (int i = 0; i < f->n; i++) {
        struct stat sb;
        snprintf(f->path[i], sizeof f->path[i], "%s/%.255s", folder, names[i]);
        if (stat(f->path[i], &sb)) die(f->path[i], strerror(errno));
        f->bytes += (size_t)sb.st_size;
    }
}

/* ---- memory: the kernel's own high-water mark, reset before each load (Linux >= 4.0) */

static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t k = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, k) && line[k] == ':') v = atol(line + k + 1);
    if (f) fclose(f);
    return v;
}

static int reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    int ok = f && fputs("5", f) >= 0;
    if (f && fclose(f)) ok = 0;
    return ok;
}

/* ---- what is timed */

/* Every file read() whole into buf, back to back: what any loader that reads the bytes once
 * must at least spend. */
static void read_all(const Files *f, unsigned char *buf)
{
    size_t at = 0;
    for (int i = 0; i < f->n; i++) {
        int fd = open(f->path[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0) die(f->path[i], strerror(errno));
        ssize_t r;
        while ((r = read(fd, buf + at, 1 << 24)) > 0) at += (size_t)r;
        if (r < 0) die(f->path[i], strerror(errno));
        close(fd);
    }
    if (at != f->bytes) die(folder, "the files changed size while being read");
}

/* A digest of the parameters, order-sensitive, on their bit patterns: the loaded model must
 * equal the saved one rounded to bfloat16, and holding a copy to compare would count in the
 * memory the benchmark measures. */
static uint64_t digest(const float *x, size_t n, int round)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        float v = round ? pw_bf16_to_f32(pw_bf16_from_f32(x[i])) : x[i];
        uint32_t b;
        memcpy(&b, &v, 4);
        h = (h ^ b) * 1099511628211ull;
    }
    return h;
}

/* Where a load's time goes, with as many threads as the loader has (OpenMP): the first write
 * to every page of fresh memory the size of the float32 parameters (the kernel hands out zeroed
 * pages one fault at a time), and the bfloat16 -> float32 widening alone, from memory already
 * read into memory already touched. */
static double first_touch(size_t bytes)
{
    double t0 = bench_now();
    unsigned char *p = malloc(bytes);
    if (!p) die("first touch", "out of memory");
    long page = sysconf(_SC_PAGESIZE);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < bytes; i += (size_t)page) p[i] = 1;
    double t = bench_now() - t0;
    free(p);
    return t;
}

static double widen(float *dst, const unsigned char *src, size_t n)
{
    double t0 = bench_now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, 2);
        dst[i] = pw_bf16_to_f32(h);
    }
    return bench_now() - t0;
}

static double best(const double *t, int k)
{
    double b = t[0];
    for (int i = 1; i < k; i++)
        if (t[i] < b) b = t[i];
    return b;
}

int main(int argc, char **argv)
{
    /* [reps] [max shard MB] [parent folder]: MB are 10^6 bytes, as max_shard_size="400MB" */
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    double shard_mb = argc > 2 ? atof(argv[2]) : 400;
    const char *parent = argc > 3 ? argv[3] : getenv("TMPDIR");
    if (!parent || !*parent) parent = "/tmp";
    if (reps < 1 || !(shard_mb > 0)) die("usage", "bench_load [reps >= 1] [max shard MB > 0] "
                                         "[parent folder]");

    PwArch qwen = bench_qwen_05b(); /* as bench_model's llama mode */
    /* the LM head only (tied: no tensor of its own), and the smallest batch: the load's memory
     * is then the parameters and nothing else */
    PwModelOpts o = {.heads = PW_HEAD_LM, .maxB = 1, .maxT = 1, .device = PW_DEVICE_CPU};

    snprintf(folder, sizeof folder, "%s/pw_bench_load.XXXXXX", parent);
    if (!mkdtemp(folder)) {
        folder[0] = '\0';
        die(parent, strerror(errno));
    }
    atexit(remove_folder);

    /* ---- the checkpoint: random weights saved as bfloat16 shards */
    PwErr err;
    PwModel *m = pw_model_create(&qwen, &o, &err);
    if (!m) die("create", err.msg);
    pw_model_init_random(m, 1);
    size_t np = pw_model_num_params(m);
    uint64_t want = digest(pw_model_params(m).data, np, 1);
    PwSaveOpts so = {.bf16 = 1, .max_shard_bytes = (size_t)(shard_mb * 1e6)};
    double t0 = bench_now();
    if (pw_model_save_opts(m, folder, &so, &err)) die("save", err.msg);
    double save_s = bench_now() - t0;
    pw_model_free(m);
    Files *files = calloc(1, sizeof *files);
    if (!files) die("files", "out of memory");
    list_files(files);
    double file_mb = files->bytes / 1e6, params_mb = np * 4.0 / 1e6;

    /* ---- read(): one buffer for every repetition, touched by the first (untimed) read, which
     * also leaves every page of the files in the page cache */
    unsigned char *buf = malloc(files->bytes);
    if (!buf) die("read buffer", "out of memory");
    read_all(files, buf);
    double *read_t = calloc(reps, sizeof *read_t), *load_t = calloc(reps, sizeof *load_t);
    double *touch_t = calloc(reps, sizeof *touch_t), *widen_t = calloc(reps, sizeof *widen_t);
    float *wide = malloc(files->bytes * 2);
    if (!read_t || !load_t || !touch_t || !widen_t || !wide) die("timings", "out of memory");
    size_t nwide = files->bytes / 2; /* the files' bytes as bfloat16, headers included */
    widen(wide, buf, nwide);
    for (int r = 0; r < reps; r++) {
        t0 = bench_now();
        read_all(files, buf);
        read_t[r] = bench_now() - t0;
        touch_t[r] = first_touch(np * sizeof(float));
        widen_t[r] = widen(wide, buf, nwide);
    }
    free(wide);
    free(buf); /* before the loads, so that their memory is their own */

    /* ---- pw_model_load: the model made on the CPU, the files converted into it; each
     * repetition also loads on one thread, in alternating order, so that the two compare on
     * the same (shared, noisy) machine at the same moment */
    int peak_ok = 1, threads = omp_get_max_threads();
    double peak_mb = 0, *load1_t = calloc(reps, sizeof *load1_t);
    long faults = 0;
    if (!load1_t) die("timings", "out of memory");
    for (int r = 0; r < 2 * reps; r++) {
        int one = (r % 2) ^ (r / 2 % 2); /* N 1, 1 N, N 1, ... */
        omp_set_num_threads(one ? 1 : threads);
        peak_ok &= reset_peak();
        long before_kb = status_kb("VmRSS");
        struct rusage u0, u1;
        getrusage(RUSAGE_SELF, &u0);
        t0 = bench_now();
        PwModel *l = pw_model_load(folder, &o, &err);
        (one ? load1_t : load_t)[r / 2] = bench_now() - t0;
        getrusage(RUSAGE_SELF, &u1);
        if (!l) die("load", err.msg);
        double mb = (status_kb("VmHWM") - before_kb) * 1024.0 / 1e6;
        if (mb > peak_mb) peak_mb = mb;
        faults = u1.ru_minflt - u0.ru_minflt;
        if (digest(pw_model_params(l).data, np, 0) != want)
            die("load", "the loaded parameters are not the saved ones rounded to bfloat16");
        pw_model_free(l);
    }
    omp_set_num_threads(threads);

    double read_best = best(read_t, reps), load_best = best(load_t, reps);
    double read_med = bench_median(read_t, reps), load_med = bench_median(load_t, reps);
    double gb = files->bytes / 1e9;

    printf("Loading a sharded bfloat16 checkpoint of Qwen2.5-0.5B's shape (random weights): %zu "
           "parameters,\n%d files, %.1f MB (shards of at most %.0f MB), saved in %.2f s; best "
           "and median of %d repetitions.\nThe page cache is warm in every case: every file is "
           "read once before any timing (dropping the\ncache needs root), so this is memory "
           "and CPU work, not the disk. MB = 10^6 bytes.\n\n", np, files->n, file_mb, shard_mb,
           save_s, reps);
    printf("%-44s %9s %9s %12s %12s\n", "", "best s", "median s", "GB/s best", "GB/s median");
    printf("%-44s %9.3f %9.3f %12.2f %12.2f\n", "read() every file into one buffer", read_best,
           read_med, gb / read_best, gb / read_med);
    printf("%-44s %9.3f %9.3f %12.2f %12.2f\n", "pw_model_load (bf16 files -> f32 params)",
           load_best, load_med, gb / load_best, gb / load_med);
    printf("%-44s %9.2f %9.2f\n", "ratio load / read", load_best / read_best,
           load_med / read_med);
    double one_best = best(load1_t, reps), one_med = bench_median(load1_t, reps);
    printf("%-44s %9.3f %9.3f %12.2f %12.2f\n", "pw_model_load on one thread", one_best,
           one_med, gb / one_best, gb / one_med);
    printf("%-44s %9.2f %9.2f\n\n", "ratio one thread / all", one_best / load_best,
           one_med / load_med);
    printf("Where a load's time goes (%d OpenMP threads, as the loader):\n", threads);
    printf("%-44s %9.3f %9.3f\n", "first write to every page of fresh f32 memory",
           best(touch_t, reps), bench_median(touch_t, reps));
    printf("%-44s %9.3f %9.3f %12.2f %12.2f\n\n", "bf16 -> f32, memory to touched memory",
           best(widen_t, reps), bench_median(widen_t, reps), gb / best(widen_t, reps),
           gb / bench_median(widen_t, reps));
    printf("Peak RSS of a load, above what the process held before it: %.0f MB%s; the float32\n"
           "parameters are %.0f MB, the files %.0f MB. Minor page faults of one load: %ld.\n",
           peak_mb, peak_ok ? "" : " (the peak could not be reset: the process's own peak)",
           params_mb, file_mb, faults);
    printf("GB/s = file bytes / seconds for both rows.\n");
    printf("RESULT load_s=%.3f read_s=%.3f load_gbps=%.2f read_gbps=%.2f ratio=%.2f file_mb=%.0f "
           "peak_rss_mb=%.0f params_mb=%.0f load_1thread_s=%.3f threads=%d\n", load_best,
           read_best, gb / load_best, gb / read_best, load_best / read_best, file_mb, peak_mb,
           params_mb, one_best, threads);
    free(read_t);
    free(load_t);
    free(load1_t);
    free(touch_t);
    free(widen_t);
    free(files);
    return 0;
}
