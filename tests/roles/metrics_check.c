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
 *   metrics_check above FILE LINE KEY MIN      |KEY| > MIN on line LINE (0-based)
 *   metrics_check is FILE LINE KEY VALUE       KEY == VALUE on line LINE; VALUE may be nan, inf
 *   metrics_check close FILE_A FILE_B FROM TO RTOL ATOL [RULE...]
 *                                              lines FROM..TO (0-based) of both files hold the
 *                                              same keys (time/, comm/, memory/ left out) and
 *                                              every number a of A is within
 *                                              max(ATOL, RTOL * |b|) of B's b; a RULE
 *                                              KEY=RTOL[,ATOL] or KEY=skip gives a key its own
 *                                              tolerance (KEY ending in '/' is a prefix, '*'
 *                                              is every key; the first rule that matches wins);
 *                                              prints each key's largest difference */
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

/* close: a key's tolerance, from the first rule that names it (or the defaults). */
typedef struct {
    const char *key; /* "name", "prefix/" or "*" */
    size_t len;
    int skip;
    double rtol, atol;
} Rule;

static int rule_parse(const char *arg, Rule *r, double atol)
{
    const char *eq = strrchr(arg, '=');
    if (!eq || eq == arg) return -1;
    r->key = arg;
    r->len = (size_t)(eq - arg);
    r->skip = !strcmp(eq + 1, "skip");
    r->atol = atol;
    if (r->skip) return 0;
    char *end;
    r->rtol = strtod(eq + 1, &end);
    if (*end == ',') r->atol = strtod(end + 1, &end);
    return *end || end == eq + 1 || r->rtol < 0 || r->atol < 0 ? -1 : 0;
}

static const Rule *rule_for(const char *k, const Rule *rules, int n, const Rule *dflt)
{
    for (int i = 0; i < n; i++) {
        const Rule *r = &rules[i];
        if ((r->len == 1 && r->key[0] == '*') ||
            (r->key[r->len - 1] == '/' ? !strncmp(k, r->key, r->len)
                                       : strlen(k) == r->len && !strncmp(k, r->key, r->len)))
            return r;
    }
    return dflt;
}

/* Every numeric key of lines FROM..TO of A within its tolerance of B. Each key's largest
 * difference (absolute, relative to |b|, and as a fraction of what its tolerance allows) is
 * printed, so that the tolerances can be calibrated from a passing run. */
static int close_main(int argc, char **argv)
{
    enum { MAX_RULES = 64, MAX_KEYS = 256 };
    Rule rules[MAX_RULES], dflt = {"*", 1, 0, atof(argv[6]), atof(argv[7])};
    int nrules = argc - 8, from = atoi(argv[4]), to = atoi(argv[5]), bad = 0;
    if (nrules > MAX_RULES) return fprintf(stderr, "metrics_check close: too many rules\n"), 2;
    for (int i = 0; i < nrules; i++)
        if (rule_parse(argv[8 + i], &rules[i], dflt.atol)) {
            fprintf(stderr, "metrics_check close: bad rule '%s' (expected KEY=RTOL[,ATOL] or "
                            "KEY=skip)\n", argv[8 + i]);
            return 2;
        }
    int na = read_lines(argv[2], lines_a), nb = read_lines(argv[3], lines_b);
    if (from < 0 || from > to || to >= na || to >= nb) {
        fprintf(stderr, "metrics_check close: lines %d..%d: %s has %d lines, %s has %d\n", from,
                to, argv[2], na, argv[3], nb);
        return 1;
    }
    const char *keys[MAX_KEYS];
    double worst_abs[MAX_KEYS], worst_rel[MAX_KEYS], worst_used[MAX_KEYS];
    int worst_line[MAX_KEYS], nkeys = 0, nvalues = 0;
    for (int i = from; i <= to; i++) {
        const char *k;
        json_t *v;
        json_object_foreach(lines_b[i], k, v) if (!measured(k) &&
                                                  !json_object_get(lines_a[i], k)) {
            fprintf(stderr, "line %d: '%s' only in %s\n", i, k, argv[3]);
            bad = 1;
        }
        json_object_foreach(lines_a[i], k, v) {
            if (measured(k)) continue;
            const Rule *r = rule_for(k, rules, nrules, &dflt);
            if (r->skip) continue;
            json_t *w = json_object_get(lines_b[i], k);
            double a, b;
            if (!w) {
                fprintf(stderr, "line %d: '%s' only in %s\n", i, k, argv[2]);
                bad = 1;
                continue;
            }
            int ka = pw_metric_get(v, &a), kb = pw_metric_get(w, &b);
            if (ka != 1 || kb != 1) { /* not numbers: equal as JSON */
                if (!json_equal(v, w)) {
                    fprintf(stderr, "line %d: '%s' differs (not a number)\n", i, k);
                    bad = 1;
                }
                continue;
            }
            double diff = a == b ? 0.0 : fabs(a - b), allowed = fmax(r->atol, r->rtol * fabs(b));
            if (!(diff <= allowed)) { /* NaN against a number fails too */
                fprintf(stderr, "line %d: '%s' differs: %.9g vs %.9g (|diff| %.3g, allowed "
                                "max(%g, %g * |b|) = %.3g)\n",
                        i, k, a, b, diff, r->atol, r->rtol, allowed);
                bad = 1;
            }
            nvalues++;
            int j = 0;
            while (j < nkeys && strcmp(keys[j], k)) j++;
            if (j == nkeys && nkeys < MAX_KEYS) {
                keys[nkeys] = k, worst_abs[nkeys] = worst_rel[nkeys] = worst_used[nkeys] = 0.0;
                worst_line[nkeys++] = i;
            }
            if (j == nkeys || diff == 0.0) continue;
            double rel = b != 0.0 ? diff / fabs(b) : INFINITY;
            double used = allowed > 0.0 ? diff / allowed : INFINITY;
            if (!(diff <= worst_abs[j])) worst_abs[j] = diff;
            if (!(rel <= worst_rel[j])) worst_rel[j] = rel;
            if (!(used <= worst_used[j])) worst_used[j] = used, worst_line[j] = i;
        }
    }
    printf("lines %d..%d: %d values compared (time/*, comm/*, memory/* left out)%s\n", from, to,
           nvalues, bad ? "; some beyond tolerance (above)" : ", all within tolerance");
    printf("  %-36s %10s %10s %10s %s\n", "largest per key:", "|a-b|", "|a-b|/|b|",
           "of allowed", "at line");
    for (int j = 0; j < nkeys; j++)
        printf("  %-36s %10.3g %10.3g %10.3g %d\n", keys[j], worst_abs[j], worst_rel[j],
               worst_used[j], worst_line[j]);
    return bad;
}

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
    if (argc == 6 && !strcmp(argv[1], "above")) {
        int n = read_lines(argv[2], lines_a), line = atoi(argv[3]);
        if (line >= n) return fprintf(stderr, "%s: %d lines, no line %d\n", argv[2], n, line), 1;
        double v = num(lines_a[line], argv[4], argv[2], line), min = atof(argv[5]);
        printf("%s line %d: %s = %.3g (more than %g)\n", argv[2], line, argv[4], v, min);
        return !(fabs(v) > min);
    }
    if (argc == 6 && !strcmp(argv[1], "is")) {
        int n = read_lines(argv[2], lines_a), line = atoi(argv[3]);
        if (line >= n) return fprintf(stderr, "%s: %d lines, no line %d\n", argv[2], n, line), 1;
        double v = num(lines_a[line], argv[4], argv[2], line), want = strtod(argv[5], NULL);
        printf("%s line %d: %s = %.17g (expected %s)\n", argv[2], line, argv[4], v, argv[5]);
        return !(v == want || (isnan(v) && isnan(want)));
    }
    if (argc >= 8 && !strcmp(argv[1], "close")) return close_main(argc, argv);
    fprintf(stderr, "metrics_check: bad arguments\n");
    return 2;
}
