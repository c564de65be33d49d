/* metrics_check.c: assertions on metrics.jsonl files for the roles tests. Usage:
 *   metrics_check lines FILE N                 N lines, every number finite (none written as
 *                                              "nan", "inf" or "-inf")
 *   metrics_check zero FILE LINE KEY...        those keys are exactly 0 on line LINE (0-based)
 *   metrics_check same FILE_A FILE_B [TOL]     identical lines, keys under time/, comm/ and
 *                                              memory/ left out (measurements of the placement,
 *                                              not of the algorithm); with TOL numbers may
 *                                              differ by TOL * max(1, |b|)
 *   metrics_check rises FILE KEY N DELTA       mean of the last N lines - first N >= DELTA
 *   metrics_check below FILE LINE KEY MAX      |KEY| <= MAX on line LINE (0-based)
 *   metrics_check is FILE LINE KEY VALUE       KEY == VALUE on line LINE; VALUE may be nan, inf */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_metrics.h"

#define MAX_LINES 10000

/* Keys that measure where and how fast the run ran, which differ between placements. */
static int measured(const char *k)
{
    return !strncmp(k, "time/", 5) || !strncmp(k, "comm/", 5) || !strncmp(k, "memory/", 7);
}

static int read_lines(const char *path, json_t **out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "metrics_check: cannot open %s\n", path);
        exit(1);
    }
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (getline(&line, &cap, f) >= 0 && n < MAX_LINES) {
        json_error_t je;
        out[n] = json_loads(line, 0, &je);
        if (!json_is_object(out[n])) {
            fprintf(stderr, "metrics_check: %s:%d: not a JSON object: %s\n", path, n + 1, je.text);
            exit(1);
        }
        n++;
    }
    free(line);
    fclose(f);
    return n;
}

/* A number, or "nan" / "inf" / "-inf" as a diverged run writes them (pw_metrics.h). */
static double num(json_t *o, const char *key, const char *path, int line)
{
    double v = 0.0;
    if (pw_metric_get(json_object_get(o, key), &v) != 1) {
        fprintf(stderr, "metrics_check: %s:%d: no number '%s'\n", path, line + 1, key);
        exit(1);
    }
    return v;
}

static json_t *lines_a[MAX_LINES], *lines_b[MAX_LINES];

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "lines")) {
        int n = read_lines(argv[2], lines_a), bad = n != atoi(argv[3]);
        if (bad) fprintf(stderr, "%s: %d lines, expected %s\n", argv[2], n, argv[3]);
        for (int i = 0; i < n; i++) {
            const char *k;
            json_t *v;
            double x;
            json_object_foreach(lines_a[i], k, v) if (pw_metric_get(v, &x) == 1 && !isfinite(x)) {
                fprintf(stderr, "%s:%d: %s is not finite\n", argv[2], i + 1, k);
                bad = 1;
            }
        }
        return bad;
    }
    if (argc >= 5 && !strcmp(argv[1], "zero")) {
        int n = read_lines(argv[2], lines_a), line = atoi(argv[3]), bad = 0;
        if (line >= n) return fprintf(stderr, "%s: no line %d\n", argv[2], line), 1;
        for (int i = 4; i < argc; i++) {
            double v = num(lines_a[line], argv[i], argv[2], line);
            printf("%s line %d: %s = %.17g\n", argv[2], line, argv[i], v);
            if (v != 0.0) bad = 1;
        }
        return bad;
    }
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "same")) {
        double tol = argc == 5 ? atof(argv[4]) : 0.0;
        int na = read_lines(argv[2], lines_a), nb = read_lines(argv[3], lines_b), bad = na != nb;
        if (bad) fprintf(stderr, "line counts differ: %d and %d\n", na, nb);
        for (int i = 0; i < na && i < nb; i++) {
            const char *k;
            json_t *v;
            json_object_foreach(lines_a[i], k, v) {
                if (measured(k)) continue;
                json_t *w = json_object_get(lines_b[i], k);
                int close = w && json_is_number(v) && json_is_number(w) &&
                            fabs(json_number_value(v) - json_number_value(w)) <=
                                tol * fmax(1.0, fabs(json_number_value(w)));
                if (!w || (!json_equal(v, w) && !(tol > 0 && close))) {
                    fprintf(stderr, "line %d: '%s' differs: %.17g vs %.17g\n", i + 1, k,
                            json_number_value(v), w ? json_number_value(w) : NAN);
                    bad = 1;
                }
            }
            json_object_foreach(lines_b[i], k, v) if (!measured(k) &&
                                                      !json_object_get(lines_a[i], k)) {
                fprintf(stderr, "line %d: '%s' only in %s\n", i + 1, k, argv[3]);
                bad = 1;
            }
        }
        if (!bad && tol > 0)
            printf("%d lines within %g (time/*, comm/*, memory/* left out)\n", na, tol);
        else if (!bad) printf("%d lines identical (time/*, comm/*, memory/* left out)\n", na);
        return bad;
    }
    if (argc == 6 && !strcmp(argv[1], "rises")) {
        int n = read_lines(argv[2], lines_a), k = atoi(argv[4]);
        if (n < 2 * k) return fprintf(stderr, "%s: %d lines, need %d\n", argv[2], n, 2 * k), 1;
        double first = 0, last = 0;
        for (int i = 0; i < k; i++) {
            first += num(lines_a[i], argv[3], argv[2], i) / k;
            last += num(lines_a[n - 1 - i], argv[3], argv[2], n - 1 - i) / k;
        }
        printf("%s: mean of the first %d steps %.4f, of the last %d steps %.4f\n", argv[3], k,
               first, k, last);
        return !(last - first >= atof(argv[5]));
    }
    if (argc == 6 && !strcmp(argv[1], "below")) {
        int n = read_lines(argv[2], lines_a), line = atoi(argv[3]);
        if (line >= n) return fprintf(stderr, "%s: %d lines, no line %d\n", argv[2], n, line), 1;
        double v = num(lines_a[line], argv[4], argv[2], line), max = atof(argv[5]);
        printf("%s line %d: %s = %.3g (at most %g)\n", argv[2], line, argv[4], v, max);
        return !(fabs(v) <= max);
    }
    if (argc == 6 && !strcmp(argv[1], "is")) {
        int n = read_lines(argv[2], lines_a), line = atoi(argv[3]);
        if (line >= n) return fprintf(stderr, "%s: %d lines, no line %d\n", argv[2], n, line), 1;
        double v = num(lines_a[line], argv[4], argv[2], line), want = strtod(argv[5], NULL);
        printf("%s line %d: %s = %.17g (expected %s)\n", argv[2], line, argv[4], v, argv[5]);
        return !(v == want || (isnan(v) && isnan(want)));
    }
    fprintf(stderr, "metrics_check: bad arguments\n");
    return 2;
}
