/* pw_report.h: `ppo_world report`: the quickstart's table and RESULT line and the ensemble
 * experiment's table, read from run folders (config.yaml, metrics.jsonl, eval.jsonl), with PNG plots. */
#ifndef PW_REPORT_H
#define PW_REPORT_H

#include "pw_common.h"

/* `ppo_world report quickstart|ensembles ...` (argv[0] is "report"); returns the exit status:
 * 0, 1 after an error in a run folder, 2 on bad usage. Runs before and without MPI. */
int pw_report_main(int argc, char **argv);

/* One evaluation of a run (one line of eval.jsonl) as the tables and plots use it. */
typedef struct PwReportPoint {
    long step;       /* the PPO step after which the evaluation ran */
    int initial;     /* episode 0: the policy before any update (the SFT weights) */
    int is_start;    /* a curve's start (KL 0) not from the run itself: another run, or a mean */
    double proxy;    /* eval/scores: the reward models' score */
    double gold;     /* eval/gold_scores: mean gold score */
    double se;       /* its standard error */
    int se_measured; /* se from the per-response spread (else the bound sqrt(m(1-m)/n)) */
    double kl;       /* objective/kl of the policy evaluated (0 for the initial policy) */
    double len;      /* eval/sequence_lengths, NaN if absent */
    long n;          /* responses per evaluation */
} PwReportPoint;

/* One training step of a run (one line of metrics.jsonl): the columns the plots draw. */
typedef struct PwReportStep {
    long step;
    double scores, kl, rlhf_reward; /* objective/...; NaN when absent */
    int has_kl;                     /* objective/kl present and not null */
} PwReportStep;

/* The ".dat" column value the plots read: NaN written as "nan" whatever its sign bit. */
void pw_report_dat_value(FILE *f, double v);
/* n such values separated by spaces (one row of a .dat file, without its newline). */
void pw_report_dat_values(FILE *f, const double *v, int n);

/* RUN/train.dat, RUN/eval.dat and score.png, kl.png, gold.png in RUN (eval.dat starts with
 * `sft` when pts holds no evaluation of the initial policy). -1 only when a .dat file cannot
 * be written; a missing or failing gnuplot is said on stderr and skipped. */
int pw_report_plot_run(const char *run, const PwReportPoint *pts, int npts,
                       const PwReportStep *steps, int nsteps, const PwReportPoint *sft, PwErr *err);

/* Run gnuplot on `script` (the terminal line is put in front) in folder `dir`, keeping the
 * script there as `script_name`. 0 when the plots were drawn; -1 after saying on stderr why
 * not (gnuplot absent, or it failed). */
int pw_report_gnuplot(const char *dir, const char *script_name, const char *script);

#endif
