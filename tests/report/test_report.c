/* test_report.c: `ppo_world report` on small run folders made here with hand-chosen numbers:
 * the tables, the RESULT line, the .dat files, the plots, and the errors for bad run folders. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_config.h"
#include "pw_test.h"

static const char *exe; /* the ppo_world binary under test */
static char root[256];  /* this test's temporary folder */
static char out_text[1 << 16], err_text[1 << 16];

static const char *at(const char *rel)
{
    static char bufs[8][512];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, 512, "%s/%s", root, rel);
    return b;
}

static void put(const char *rel, const char *text)
{
    const char *path = at(rel);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f)) {
        perror(path);
        exit(1);
    }
}

static void slurp(const char *path, char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* A run folder: config.yaml as a run writes it (every key), with eval.num_prompts 100 and
 * an evaluation prompt file of 25 lines, so that n = 25 responses per evaluation. */
static void make_run(const char *rel, const char *metrics, const char *evals)
{
    mkdir(at(rel), 0755);
    PwConfig cfg;
    PwErr err;
    if (pw_config_defaults(&cfg)) exit(1);
    cfg.eval.num_prompts = 100;
    free(cfg.data.eval_prompts);
    cfg.data.eval_prompts = strdup(at("prompts_eval.jsonl"));
    char path[512];
    snprintf(path, sizeof path, "%s/config.yaml", at(rel));
    if (pw_config_save_yaml(&cfg, path, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    pw_config_free(&cfg);
    char name[256];
    snprintf(name, sizeof name, "%s/metrics.jsonl", rel);
    put(name, metrics);
    if (evals) {
        snprintf(name, sizeof name, "%s/eval.jsonl", rel);
        put(name, evals);
    }
}

/* Run `ppo_world report ARGS` with PATH set to `path_env` (NULL: unchanged); stdout and stderr
 * land in out_text and err_text. Returns the exit status. */
static int report(const char *path_env, const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s%s%s'%s' report %s >'%s' 2>'%s'", path_env ? "PATH='" : "",
             path_env ? path_env : "", path_env ? "' " : "", exe, args, at("stdout"), at("stderr"));
    int st = system(cmd);
    slurp(at("stdout"), out_text, sizeof out_text);
    slurp(at("stderr"), err_text, sizeof err_text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int has(const char *text, const char *want)
{
    if (strstr(text, want)) return 1;
    fprintf(stderr, "expected to find:\n%s\nin:\n%s\n", want, text);
    return 0;
}

static int is_png(const char *path)
{
    unsigned char sig[8] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(sig, 1, 8, f);
    fclose(f);
    static const unsigned char png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    return n == 8 && !memcmp(sig, png, 8);
}

static int have_gnuplot(void)
{
    return system("command -v gnuplot >/dev/null 2>&1") == 0;
}

/* The heads of table.md's two tables: one row per run, then one per objective. */
#define TABLE_HEAD                                                                                         \
    "| objective | seed | steps | final KL | final proxy score | final gold +- SE | best gold +- SE (at KL) |\n" \
    "|---|---|---|---|---|---|---|\n"
#define SUMMARY_HEAD                                                                                       \
    "\n| objective | runs | final gold, mean over seeds (min - max) | final KL, mean |\n|---|---|---|---|\n"

/* The rows of two runs of objective `a` that both ensembles tests make (ten_steps, and final
 * gold 0.7 with a measured SE, 0.4 with the bound), and their summary row. */
#define A_RUN_ROWS                                                                    \
    "| a | 1 | 10 | 0.90 | 0.200 | 0.700 +- 0.100 | 0.700 +- 0.100 (0.90) |\n" \
    "| a | 2 | 10 | 0.90 | 0.400 | 0.400 +- 0.098 | 0.800 +- 0.080 (0.50) |\n"
#define A_SUMMARY_ROW "| a | 2 | 0.550 (0.400 - 0.700) | 0.90 |\n"

/* metrics.jsonl of steps 0 to 9 with objective/kl = step / 10 */
static const char *ten_steps(void)
{
    static char metrics[4096];
    if (!metrics[0])
        for (int s = 0; s < 10; s++) {
            char line[200];
            snprintf(line, sizeof line, "{\"step\": %d, \"objective/kl\": %g}\n", s, s / 10.0);
            strcat(metrics, line);
        }
    return metrics;
}

/* `ppo_world report ensembles EXP NAME=EXP/DIR ...` for n arguments "NAME=DIR", DIR under EXP */
static int report_ensembles(const char *exp, const char *const *named, int n)
{
    char args[4096];
    int len = snprintf(args, sizeof args, "ensembles '%s'", at(exp));
    for (int i = 0; i < n && len < (int)sizeof args; i++) {
        const char *eq = strchr(named[i], '=');
        len += snprintf(args + len, sizeof args - (size_t)len, " '%.*s=%s/%s'", (int)(eq - named[i]), named[i],
                        at(exp), eq + 1);
    }
    return report(NULL, args);
}

/* report_ensembles, then the exit status and the table, printed and in EXP/table.md */
static void check_ensembles(const char *exp, const char *const *named, int n, const char *want)
{
    int rc = report_ensembles(exp, named, n);
    CHECK(rc == 0, "ensembles in %s: exit %d: %s", exp, rc, err_text);
    CHECK(!strcmp(out_text, want), "table:\n%s", out_text);
    char path[256], text[4096];
    snprintf(path, sizeof path, "%s/table.md", exp);
    slurp(at(path), text, sizeof text);
    CHECK(!strcmp(text, want), "table.md:\n%s", text);
}

/* OUT/ppo with an initial evaluation (gold 0.5) and a final one (gold 0.9), n = 25:
 *   SE(SFT) = sqrt(0.5 * 0.5 / 25) = 0.1, SE(PPO) = sqrt(0.9 * 0.1 / 25) = 0.06,
 *   improvement 0.4 +- sqrt(0.01 + 0.0036) = 0.11662 = 3.43 standard errors;
 *   PPO's KL: the evaluation after step 1 sees step 2's batch, absent, so step 1's: 0.25;
 *   reward models: the last valid/accuracy of each, 0.7 and 0.8, mean 0.75. */
static void test_quickstart(void)
{
    mkdir(at("qs"), 0755);
    mkdir(at("qs/task"), 0755);
    put("qs/task/prefs_valid.jsonl", "{}\n{}\n\n{}\n{}\n");
    make_run("qs/ppo",
             "{\"step\": 0, \"objective/kl\": 0.0, \"objective/scores\": -1.0, \"objective/rlhf_reward\": -1.0}\n"
             "{\"step\": 1, \"objective/kl\": 0.25, \"objective/scores\": -0.5, \"objective/rlhf_reward\": -0.6}\n",
             "{\"step\": 0, \"episode\": 0, \"eval/scores\": -1.0, \"eval/gold_scores\": 0.5, \"eval/sequence_lengths\": 7.0}\n"
             "\n"
             "{\"step\": 1, \"episode\": 20, \"eval/scores\": -0.5, \"eval/gold_scores\": 0.9, \"eval/sequence_lengths\": 6.5}\n");
    mkdir(at("rm1"), 0755);
    mkdir(at("rm2"), 0755);
    put("rm1/metrics.jsonl", "{\"step\": 1, \"valid/accuracy\": 0.6}\n{\"step\": 2, \"valid/accuracy\": 0.7}\n"
                             "{\"step\": 3, \"train/loss\": 0.5}\n");
    put("rm2/metrics.jsonl", "{\"step\": 1, \"valid/accuracy\": 0.8}\n");

    char args[2048];
    snprintf(args, sizeof args, "quickstart '%s' --minutes 1.25 --rms '%s' '%s'", at("qs"), at("rm1"),
             at("rm2"));
    int rc = report(NULL, args);
    CHECK(rc == 0, "quickstart exit %d: %s", rc, err_text);
    CHECK(has(out_text, "(25 held-out prompts)"), "n = min(eval.num_prompts, prompt lines)");
    CHECK(has(out_text, "  SFT     0.500 +- 0.100       -1.000       0.00              7.0\n"), "SFT row");
    CHECK(has(out_text, "  PPO     0.900 +- 0.060       -0.500       0.25              6.5\n"), "PPO row");
    CHECK(has(out_text, "  gold improvement +0.400 +- 0.117 = 3.4 standard errors (standard errors: upper "
                        "bound sqrt(m(1-m)/n), eval.jsonl has no per-response spread)\n"),
          "improvement line");
    CHECK(has(out_text, "  reward models: held-out accuracy 0.700 0.800 (mean 0.750, 4 pairs, chance 0.5)\n"),
          "reward-model line");
    CHECK(has(out_text, "  PPO: 2 steps, last training batch KL 0.25\n"), "steps line");
    CHECK(has(out_text, "checkpoints, score.png, kl.png, gold.png)\n"), "files line");
    CHECK(has(out_text, "RESULT sft_gold=0.5000 ppo_gold=0.9000 gold_se=0.1166 rm_accuracy=0.7500 "
                        "minutes=1.25\n"),
          "RESULT line");
    char dat[4096];
    slurp(at("qs/ppo/eval.dat"), dat, sizeof dat);
    CHECK(has(dat, "# updates proxy gold gold_se kl\n0 -1 0.5 0.1 0\n2 -0.5 0.9 0.06 0.25\n"), "eval.dat");
    slurp(at("qs/ppo/train.dat"), dat, sizeof dat);
    CHECK(has(dat, "# step score kl rlhf_reward\n0 -1 0 -1\n1 -0.5 0.25 -0.6\n"), "train.dat");
    if (have_gnuplot()) {
        CHECK(is_png(at("qs/ppo/score.png")), "score.png");
        CHECK(is_png(at("qs/ppo/kl.png")), "kl.png");
        CHECK(is_png(at("qs/ppo/gold.png")), "gold.png");
    } else {
        printf("gnuplot not found: the PNG checks are skipped\n");
    }

    /* without gnuplot: said on stderr, no plots, the table all the same; and a run that wrote
     * TensorBoard events (log.tensorboard) has its folder in the files line */
    mkdir(at("qs/ppo/tensorboard"), 0755);
    rc = report(at("no_such_bin"), args);
    CHECK(rc == 0, "quickstart without gnuplot: exit %d: %s", rc, err_text);
    CHECK(has(err_text, "gnuplot not found: no plots"), "missing gnuplot said");
    CHECK(has(out_text, "RESULT sft_gold=0.5000"), "table without gnuplot");
    CHECK(has(out_text, "gold.png, tensorboard/)\n"), "files line with the TensorBoard folder");

    /* no initial evaluation and no --sft-eval: said, with the file */
    make_run("qs2", "{\"step\": 0, \"objective/kl\": 0.1}\n",
             "{\"step\": 0, \"episode\": 20, \"eval/scores\": 0.1, \"eval/gold_scores\": 0.5}\n");
    mkdir(at("qs2/task"), 0755);
    rename(at("qs2"), at("qs2_ppo"));
    mkdir(at("qs2"), 0755);
    rename(at("qs2_ppo"), at("qs2/ppo"));
    snprintf(args, sizeof args, "quickstart '%s' --minutes 1 --rms '%s'", at("qs2"), at("rm1"));
    rc = report(NULL, args);
    CHECK(rc == 1, "no initial evaluation: exit %d", rc);
    CHECK(has(err_text, "eval.jsonl has no evaluation of the initial policy; give --sft-eval"), "message");
}

/* An evaluation that carries its own KL to the reference (eval/kl) is plotted at that KL, not
 * at the next training batch's objective/kl (which would be 0.5 and 0.9 here). */
static void test_eval_kl(void)
{
    const char *metrics = ten_steps();
    mkdir(at("expkl"), 0755);
    make_run("expkl/s1", metrics,
             "{\"step\": 4, \"episode\": 640, \"eval/scores\": 0.1, \"eval/gold_scores\": 0.6, \"eval/kl\": 0.33}\n"
             "{\"step\": 9, \"episode\": 1280, \"eval/scores\": 0.2, \"eval/gold_scores\": 0.7, \"eval/kl\": 0.77}\n");
    static const char *const named[1] = {"b@1=s1"};
    int rc = report_ensembles("expkl", named, 1);
    CHECK(rc == 0, "eval/kl run exit %d: %s", rc, err_text);
    char text[4096];
    slurp(at("expkl/b_1.dat"), text, sizeof text);
    CHECK(has(text, "\n0.33 0.6 ") && has(text, "\n0.77 0.7 "), "b_1.dat uses eval/kl:\n%s", text);
}

/* Run folders of the version before eval.jsonl began with the initial evaluation: a@sft, a run
 * whose first evaluation scored the SFT policy, is the start of the others' curves; a@1 carries
 * the measured spread (std 0.5, n 25: SE 0.1); a@2 does not (bound). KL of an evaluation after
 * step s: metrics' step s + 1 (kl = step / 10), the last step at the end. */
static void test_ensembles_old_sft(void)
{
    const char *metrics = ten_steps();
    mkdir(at("exp"), 0755);
    make_run("exp/sft", "{\"step\": 0, \"objective/kl\": 0.0}\n",
             "{\"step\": 0, \"episode\": 128, \"eval/scores\": -1.0, \"eval/gold_scores\": 0.5}\n");
    make_run("exp/s1", metrics,
             "{\"step\": 4, \"episode\": 640, \"eval/scores\": 0.1, \"eval/gold_scores\": 0.6, \"eval/gold_scores_std\": 0.5}\n"
             "{\"step\": 9, \"episode\": 1280, \"eval/scores\": 0.2, \"eval/gold_scores\": 0.7, \"eval/gold_scores_std\": 0.5}\n");
    make_run("exp/s2", metrics,
             "{\"step\": 4, \"episode\": 640, \"eval/scores\": 0.3, \"eval/gold_scores\": 0.8}\n"
             "{\"step\": 9, \"episode\": 1280, \"eval/scores\": 0.4, \"eval/gold_scores\": 0.4}\n");
    static const char *const named[3] = {"a@sft=sft", "a@1=s1", "a@2=s2"};
    check_ensembles("exp", named, 3,
        TABLE_HEAD
        "| a: SFT policy | | 0 | 0 | -1.000 | 0.500 +- 0.100 | |\n"
        A_RUN_ROWS
        SUMMARY_HEAD
        A_SUMMARY_ROW);
    char text[4096];
    slurp(at("exp/a_1.dat"), text, sizeof text);
    CHECK(has(text, "# kl gold gold_se proxy updates\n0 0.5 0.1 -1 0\n0.5 0.6 0.1 0.1 5\n0.9 0.7 0.1 0.2 10\n"),
          "a_1.dat");
    if (have_gnuplot()) {
        CHECK(is_png(at("exp/gold_vs_kl.png")), "gold_vs_kl.png");
        CHECK(is_png(at("exp/gold_vs_step.png")), "gold_vs_step.png");
    }
}

/* Runs whose eval.jsonl starts with the initial evaluation (step -1, episode 0, eval/kl 0), as
 * ensembles.sh makes them: the SFT row of an objective is the mean over its runs' initial
 * evaluations, each run's curve starts at its own, and "best gold" leaves that point out.
 *   a: initial gold 0.5 and 0.6, SE 0.1 each (std 0.5, n 25): mean 0.55 +- sqrt(0.02) / 2
 *      = 0.0707, proxy (-1.0 - 0.8) / 2 = -0.9;
 *   b: one run, initial gold 0.9 (SE bound sqrt(0.09 / 25) = 0.06) above both later ones, so
 *      its best gold is 0.4 after step 9 (SE sqrt(0.24 / 25) = 0.098), not the SFT point. */
static void test_ensembles_initial(void)
{
    static const char *const dirs[3] = {"expi/a1", "expi/a2", "expi/b1"};
    static const char *const evals[3] = {
        "{\"step\": -1, \"episode\": 0, \"eval/scores\": -1.0, \"eval/gold_scores\": 0.5, \"eval/gold_scores_std\": 0.5, \"eval/kl\": 0}\n"
        "{\"step\": 4, \"episode\": 640, \"eval/scores\": 0.1, \"eval/gold_scores\": 0.6, \"eval/gold_scores_std\": 0.5}\n"
        "{\"step\": 9, \"episode\": 1280, \"eval/scores\": 0.2, \"eval/gold_scores\": 0.7, \"eval/gold_scores_std\": 0.5}\n",
        "{\"step\": -1, \"episode\": 0, \"eval/scores\": -0.8, \"eval/gold_scores\": 0.6, \"eval/gold_scores_std\": 0.5, \"eval/kl\": 0}\n"
        "{\"step\": 4, \"episode\": 640, \"eval/scores\": 0.3, \"eval/gold_scores\": 0.8}\n"
        "{\"step\": 9, \"episode\": 1280, \"eval/scores\": 0.4, \"eval/gold_scores\": 0.4}\n",
        "{\"step\": -1, \"episode\": 0, \"eval/scores\": 2.0, \"eval/gold_scores\": 0.9, \"eval/kl\": 0}\n"
        "{\"step\": 4, \"episode\": 640, \"eval/scores\": 2.5, \"eval/gold_scores\": 0.3}\n"
        "{\"step\": 9, \"episode\": 1280, \"eval/scores\": 3.0, \"eval/gold_scores\": 0.4}\n"};
    mkdir(at("expi"), 0755);
    for (int k = 0; k < 3; k++) make_run(dirs[k], ten_steps(), evals[k]);
    static const char *const named[3] = {"a@1=a1", "a@2=a2", "b@1=b1"};
    check_ensembles("expi", named, 3,
        TABLE_HEAD
        "| a: SFT policy | mean of 2 | 0 | 0 | -0.900 | 0.550 +- 0.071 | |\n"
        "| b: SFT policy | mean of 1 | 0 | 0 | 2.000 | 0.900 +- 0.060 | |\n"
        A_RUN_ROWS
        "| b | 1 | 10 | 0.90 | 3.000 | 0.400 +- 0.098 | 0.400 +- 0.098 (0.90) |\n"
        SUMMARY_HEAD
        A_SUMMARY_ROW
        "| b | 1 | 0.400 (0.400 - 0.400) | 0.90 |\n");
    /* each curve from its own run's initial evaluation, once (not also the mean) */
    char text[4096];
    slurp(at("expi/a_1.dat"), text, sizeof text);
    CHECK(!strcmp(text, "# kl gold gold_se proxy updates\n0 0.5 0.1 -1 0\n0.5 0.6 0.1 0.1 5\n0.9 0.7 0.1 0.2 10\n"),
          "a_1.dat:\n%s", text);
    slurp(at("expi/a_2.dat"), text, sizeof text);
    CHECK(has(text, "# kl gold gold_se proxy updates\n0 0.6 0.1 -0.8 0\n0.5 0.8 0.08 0.3 5\n"), "a_2.dat");
}

/* A diverged run writes "nan", "inf" and "-inf" for values JSON cannot hold (pw_metrics.h): the
 * report reads them as those numbers, shows them, and does not stop at them. */
static void test_nonfinite(void)
{
    mkdir(at("expnan"), 0755);
    make_run("expnan/s1",
             "{\"step\": 0, \"objective/kl\": 0.5, \"objective/scores\": \"nan\"}\n"
             "{\"step\": 1, \"objective/kl\": \"inf\", \"objective/scores\": \"-inf\"}\n",
             "{\"step\": 0, \"episode\": 8, \"eval/scores\": \"nan\", \"eval/gold_scores\": 0.5, "
             "\"eval/kl\": \"-inf\"}\n"
             "{\"step\": 1, \"episode\": 16, \"eval/scores\": 0.25, \"eval/gold_scores\": 0.5}\n");
    static const char *const named[1] = {"a@1=s1"};
    int rc = report_ensembles("expnan", named, 1);
    CHECK(rc == 0, "a run with nan/inf values: exit %d: %s", rc, err_text);
    char text[4096];
    slurp(at("expnan/a_1.dat"), text, sizeof text);
    CHECK(has(text, "\n-inf 0.5 0.1 nan 1\n") && has(text, "\ninf 0.5 0.1 0.25 2\n"),
          "a_1.dat keeps nan and the infinities:\n%s", text);
}

static void test_errors(void)
{
    char args[2048];
    /* a malformed line: the file and its line number */
    make_run("bad", "{\"step\": 0, \"objective/kl\": 0.0}\n",
             "{\"step\": 0, \"episode\": 0, \"eval/scores\": 0.1, \"eval/gold_scores\": 0.5}\n"
             "{\"step\": 1, \"eval/scores\": 0.1,\n");
    snprintf(args, sizeof args, "ensembles '%s' 'a@1=%s'", at("exp"), at("bad"));
    int rc = report(NULL, args);
    char want[600];
    snprintf(want, sizeof want, "%s/eval.jsonl:2: not JSON", at("bad"));
    CHECK(rc == 1, "malformed line: exit %d", rc);
    CHECK(has(err_text, want), "file:line named");

    /* no eval.jsonl */
    make_run("noeval", "{\"step\": 0, \"objective/kl\": 0.0}\n", NULL);
    snprintf(args, sizeof args, "ensembles '%s' 'a@1=%s'", at("exp"), at("noeval"));
    rc = report(NULL, args);
    snprintf(want, sizeof want, "missing %s/eval.jsonl", at("noeval"));
    CHECK(rc == 1, "missing eval.jsonl: exit %d", rc);
    CHECK(has(err_text, want), "missing file named");

    /* no gold scores: the run had no model.gold */
    make_run("nogold", "{\"step\": 0}\n", "{\"step\": 0, \"episode\": 0, \"eval/scores\": 0.1}\n");
    snprintf(args, sizeof args, "ensembles '%s' 'a@1=%s'", at("exp"), at("nogold"));
    rc = report(NULL, args);
    CHECK(rc == 1 && has(err_text, "no eval/gold_scores (is model.gold set?)"), "no gold: exit %d", rc);

    rc = report(NULL, "quickstart");
    CHECK(rc == 2 && has(err_text, "usage: ppo_world report"), "bad usage: exit %d", rc);
    rc = report(NULL, "plots");
    CHECK(rc == 2 && has(err_text, "unknown command 'plots'"), "unknown command: exit %d", rc);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_report PPO_WORLD\n");
        return 2;
    }
    exe = argv[1];
    const char *base = getenv("TMPDIR");
    if (!base || !*base || strlen(base) > 150) base = "/tmp";
    snprintf(root, sizeof root, "%s/pw_report_XXXXXX", base);
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    /* the evaluation prompt file: 25 prompts, fewer than eval.num_prompts */
    char prompts[25 * 4 + 1] = "";
    for (int i = 0; i < 25; i++) strcat(prompts, "{}\n");
    put("prompts_eval.jsonl", prompts);

    test_quickstart();
    test_ensembles_old_sft();
    test_ensembles_initial();
    test_eval_kl();
    test_nonfinite();
    test_errors();

    if (!pw_test_failures) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        if (system(cmd)) fprintf(stderr, "could not remove %s\n", root);
    } else {
        fprintf(stderr, "files kept in %s\n", root);
    }
    return pw_test_done("report");
}
