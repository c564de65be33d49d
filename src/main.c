/* main.c: the ppo_world command: parse the flags (getopt_long), build the world of ranks and
 * roles from the placement file, and run the roles this rank holds. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pw_blas_core.h"
#include "pw_cli.h"
#include "pw_comm.h"
#include "pw_config.h"
#include "pw_device.h"
#include "pw_plan.h"
#include "pw_report.h"
#include "pw_roles.h"
#include "pw_startup.h"
#include "pw_task.h"
#include "pw_train.h"

#define PW_MAX_OVERRIDES 64

typedef struct PwArgs {
    const char *placement;
    const char *config; /* --config: the run configuration (read by the config layer) */
    const char *out;    /* --out: the run folder */
    int resume;         /* --resume: continue from the latest checkpoint in --out */
    int dry_run;
    int world_size;
    int noverrides;
    const char *overrides[PW_MAX_OVERRIDES]; /* key=value, applied on top of --config */
} PwArgs;

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np N ppo_world --placement p.yaml [--config c.yaml] [--out DIR]\n"
               "                 [--resume] [key=value ...]\n"
               "       ppo_world --placement p.yaml --dry-run [--world-size N] [--config c.yaml]\n"
               "                 [key=value ...]\n"
               "       ppo_world gen-task --out DIR [flags]  (the synthetic task's data sets:\n"
               "                 docs/task.md; ppo_world gen-task --help)\n"
               "       [mpirun -np N] ppo_world sft|rm [--config FILE] --out DIR [key=value ...]\n"
               "                 (training modes: docs/training.md; ppo_world sft --help)\n"
               "       ppo_world report quickstart|ensembles|placements ...  (tables and plots\n"
               "                 from run folders: docs/report.md)\n"
               "       ppo_world plan --profile RUN_DIR --placement p.yaml | --search N\n"
               "                 (predicted steps/s of placements: docs/planner.md)\n"
               "       ppo_world devices  (this build's CUDA and gpu_arch, the driver, each GPU\n"
               "                 and whether it runs the build: docs/cuda.md)\n"
               "       ppo_world --help\n"
               "\n"
               "  --placement FILE  which ranks hold which roles, devices, threads, binding\n"
               "                    (docs/placement.md)\n"
               "  --dry-run         print rank -> roles -> device -> cores/NUMA -> GPU and exit;\n"
               "                    with --config or key=value, each rank's planned memory too\n"
               "  --world-size N    the job size to check the file for; alone (no mpirun) plans\n"
               "                    N ranks on this host without launching them\n"
               "  --config FILE, --out DIR, --resume, key=value: the run (docs/launch.md)\n");
}

/* The launcher's rank, read before MPI_Init so that only one process complains about flags;
 * -1 when no launcher started this process. */
static int launcher_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v);
    }
    return -1;
}

static int bad_usage(const char *fmt, const char *arg)
{
    if (launcher_rank() <= 0) {
        fprintf(stderr, "ppo_world: ");
        fprintf(stderr, fmt, arg);
        fprintf(stderr, "\n");
        usage(stderr);
    }
    return 2;
}

/* 0: run; 1: --help printed; 2: bad usage (already said). */
static int parse_args(int argc, char **argv, PwArgs *a)
{
    static const struct option flags[] = {
        {"placement", required_argument, NULL, 'p'},
        {"config", required_argument, NULL, 'c'},
        {"out", required_argument, NULL, 'o'},
        {"resume", no_argument, NULL, 'r'},
        {"dry-run", no_argument, NULL, 'd'},
        {"world-size", required_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    PwCli cli;
    pw_cli_init(&cli, argc, argv, "h", flags);
    for (int o; (o = pw_cli_next(&cli)) != PW_CLI_END;) {
        switch (o) {
        case 'p': a->placement = cli.arg; break;
        case 'c': a->config = cli.arg; break;
        case 'o': a->out = cli.arg; break;
        case 'r': a->resume = 1; break;
        case 'd': a->dry_run = 1; break;
        case 'w': {
            char *end;
            long n = strtol(cli.arg, &end, 10);
            if (!*cli.arg || *end || n < 1 || n > PW_MAX_RANKS)
                return bad_usage("--world-size %s: expected 1..4096", cli.arg);
            a->world_size = (int)n;
            break;
        }
        case 'h':
            if (launcher_rank() <= 0) usage(stdout);
            return 1;
        case PW_CLI_OPERAND:
            if (!strchr(cli.arg, '=') || cli.arg[0] == '=')
                return bad_usage("unexpected argument '%s' (expected key=value)", cli.arg);
            if (a->noverrides == PW_MAX_OVERRIDES)
                return bad_usage("too many key=value overrides at %s", cli.arg);
            a->overrides[a->noverrides++] = cli.arg;
            break;
        default: return bad_usage("%s", cli.msg);
        }
    }
    if (!a->placement) return bad_usage("%s", "--placement is required");
    if (!a->dry_run && !a->out) return bad_usage("%s", "--out DIR is required for a run");
    return 0;
}

/* The run itself: configuration (defaults, --config, key=value), then the role loops. Both
 * return the same verdict on every rank, so rank 0 alone reports an error. */
static int run(const PwArgs *a, PwStartup *s, PwErr *err)
{
    PwConfig cfg;
    if (pw_config_build(&cfg, a->config, a->overrides, a->noverrides, err)) return 1;
    int rc = pw_ppo_run(&cfg, &s->place, MPI_COMM_WORLD, s->binding.gpu, a->out, a->resume,
                        err);
    pw_config_free(&cfg);
    return rc ? 1 : 0;
}

/* --dry-run with a configuration: the memory each rank will hold (pw_ppo_memory_plan) */
static int memory_plan(const PwArgs *a, PwStartup *s, PwErr *err)
{
    PwConfig cfg;
    if (pw_config_build(&cfg, a->config, a->overrides, a->noverrides, err)) return 1;
    int rc = pw_ppo_memory_plan(&cfg, &s->place, s->all, stdout, NULL, err);
    pw_config_free(&cfg);
    return rc ? 1 : 0;
}

/* Every rank's heartbeat thread calls MPI beside the main thread (docs/runtime.md, Heartbeat);
 * a library that offers less still runs, with the watchdog's timeout alone. */
static void init_mpi(int *argc, char ***argv)
{
    int provided = MPI_THREAD_SINGLE;
    PW_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
}

/* `ppo_world sft|rm ...`: the supervised modes need no placement file: every rank of the job is
 * one data-parallel worker. MPI is set up here so that the modes, like roles, never call it. */
static int train_mode(int argc, char **argv)
{
    int (*entry)(int, char **, MPI_Comm, int, int) =
        !strcmp(argv[1], "sft") ? pw_sft_main : pw_rm_main;
    init_mpi(&argc, &argv);
    int size = 1, local_rank = 0;
    PW_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    /* ranks sharing memory share a node, as startup.c counts them for a PPO run's GPUs */
    MPI_Comm node;
    PW_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                     &node));
    PW_MPI_CHECK(MPI_Comm_rank(node, &local_rank));
    PW_MPI_CHECK(MPI_Comm_free(&node));
    int rc = entry(argc - 1, argv + 1, MPI_COMM_WORLD, size, local_rank);
    PW_MPI_CHECK(MPI_Finalize());
    return rc;
}

/* `ppo_world devices`: no MPI job, no flags */
static int devices_cmd(int argc, char **argv)
{
    if (argc == 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
        printf("usage: ppo_world devices\n"
               "  the build (CUDA runtime, gpu_arch, NCCL), the CPU's instruction set and the\n"
               "  OpenBLAS kernels in use, the NVIDIA driver, and each GPU this process sees with\n"
               "  whether it runs the build's code (docs/cuda.md); run folders keep it as\n"
               "  devices.txt\n");
        return 0;
    }
    if (argc > 2) {
        fprintf(stderr, "ppo_world devices: unexpected argument '%s' (it takes none)\n", argv[2]);
        return 2;
    }
    pw_device_report(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    /* Before MPI or anything else: where OpenBLAS picked kernels older than this CPU runs, this
     * executes ppo_world again with OPENBLAS_CORETYPE set (docs/kernels.md). */
    pw_blas_core_remedy(argv);
    /* writing data sets is no MPI job: it runs before (and without) MPI_Init */
    if (argc > 1 && !strcmp(argv[1], "gen-task")) return pw_task_gen_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "report")) return pw_report_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "plan")) return pw_plan_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "devices")) return devices_cmd(argc, argv);
    if (argc > 1 && (!strcmp(argv[1], "sft") || !strcmp(argv[1], "rm")))
        return train_mode(argc, argv);
    PwArgs a;
    int rc = parse_args(argc, argv, &a);
    /* A bad command line is said by rank 0 alone (bad_usage), and only rank 0 fails with it:
     * mpirun ends the job at the first non-zero exit, and another rank, silent, exiting 2 first
     * got rank 0 killed before it spoke (the message lost in 9 of 20 jobs of two ranks on a
     * loaded machine). The job still exits 2, rank 0's code, and mpirun names rank 0. */
    if (rc == 2 && launcher_rank() > 0) return 0;
    if (rc) return rc == 1 ? 0 : rc;

    /* Alone with --dry-run there is no job to join: plan --world-size ranks on this host.
     * Anything else initialises MPI (a process started without mpirun becomes a job of one). */
    int use_mpi = !(a.dry_run && launcher_rank() < 0);
    if (use_mpi) init_mpi(&argc, &argv);
    PwStartupOpts o = {a.placement, a.world_size, use_mpi, stdout};
    PwStartup s;
    PwErr err = {{0}};
    rc = 0;
    if (pw_startup(&o, &s, &err)) {
        if (s.rank == 0) fprintf(stderr, "ppo_world: %s\n", err.msg);
        rc = 1;
    } else if (!a.dry_run) {
        rc = run(&a, &s, &err);
        if (rc && s.rank == 0) fprintf(stderr, "ppo_world: %s\n", err.msg);
    } else if ((a.config || a.noverrides) && s.rank == 0) {
        rc = memory_plan(&a, &s, &err);
        if (rc) fprintf(stderr, "ppo_world: %s\n", err.msg);
    }
    pw_startup_free(&s);
    if (use_mpi) PW_MPI_CHECK(MPI_Finalize());
    return rc;
}
