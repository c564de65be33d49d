/* test_blas_core.c: the OpenBLAS core remedy (pw_blas_core.h). The table of core names and the
 * choice, case by case by hand; then, on an x86-64 CPU with AVX2 or more and a DYNAMIC_ARCH
 * OpenBLAS (Debian's), the remedy itself in child processes of this program: one made to load
 * OpenBLAS on its Prescott kernels (OPENBLAS_CORETYPE=Prescott, dropped from the environment
 * before the remedy runs, as if OpenBLAS had picked them) must come back, through one exec,
 * running the kernels of the CPU's class with its arguments intact and the report saying who
 * chose; one that keeps OPENBLAS_CORETYPE=Prescott set must be left as it is. */
#include <cblas.h>
#include <sys/wait.h>

#include "pw_blas_core.h"
#include "pw_test.h"

#define ARG_WITH_SPACES "an argument with spaces"

static void isa(const char *core, PwIsa want)
{
    PwIsa got = pw_blas_core_isa(core);
    CHECK(got == want, "core '%s': class %d, expected %d", core ? core : "(null)", (int)got,
          (int)want);
}

static void better(const char *core, PwIsa cpu, int dynamic, const char *want)
{
    const char *got = pw_blas_core_better(core, cpu, dynamic);
    CHECK((!got && !want) || (got && want && !strcmp(got, want)),
          "core '%s' on class %d (dynamic %d): asks for '%s', expected '%s'", core, (int)cpu,
          dynamic, got ? got : "nothing", want ? want : "nothing");
}

static char *report(void)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    pw_blas_core_report(f);
    fclose(f);
    return buf;
}

/* A child: `forced` runs with OpenBLAS loaded on Prescott and the variable then dropped, so the
 * remedy must exec; after the exec PW_BLAS_CORE_PICKED is set and the checks run. */
static int child(const char *mode, int argc, char **argv)
{
    if (!strcmp(mode, "forced") && !getenv("PW_BLAS_CORE_PICKED")) {
        if (strcmp(openblas_get_corename(), "Prescott")) {
            fprintf(stderr, "FAIL: OPENBLAS_CORETYPE=Prescott loaded '%s'\n",
                    openblas_get_corename());
            return 1;
        }
        unsetenv("OPENBLAS_CORETYPE");
        pw_blas_core_remedy(argv);
        fprintf(stderr, "FAIL: the remedy returned instead of executing the program again\n");
        return 1;
    }
    CHECK(argc == 4 && !strcmp(argv[3], ARG_WITH_SPACES), "the arguments after the exec: %d",
          argc);
    const char *core = openblas_get_corename();
    char *line = report();
    printf("%s: %s", mode, line);
    if (!strcmp(mode, "forced")) {
        const char *picked = getenv("PW_BLAS_CORE_PICKED");
        CHECK(picked && !strcmp(picked, "Prescott"), "PW_BLAS_CORE_PICKED '%s'",
              picked ? picked : "(unset)");
        CHECK(pw_blas_core_isa(core) == pw_cpu_isa(), "after the exec: '%s' (class %d), CPU %d",
              core, (int)pw_blas_core_isa(core), (int)pw_cpu_isa());
        CHECK(strstr(line, "set by ppo_world: OpenBLAS picked Prescott for this CPU") != NULL,
              "the report: %s", line);
    } else {
        CHECK(!strcmp(core, "Prescott"), "a set OPENBLAS_CORETYPE was overruled: '%s'", core);
        CHECK(!getenv("PW_BLAS_CORE_PICKED"), "PW_BLAS_CORE_PICKED set without an exec");
        CHECK(strstr(line, "Prescott kernels (OPENBLAS_CORETYPE=Prescott, from the environment)"),
              "the report: %s", line);
    }
    free(line);
    return pw_test_failures ? 1 : 0;
}

static void run_child(const char *self, const char *mode)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("OPENBLAS_CORETYPE", "Prescott", 1);
        unsetenv("PW_BLAS_CORE_PICKED");
        execl(self, self, "child", mode, ARG_WITH_SPACES, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait for the %s child", mode);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the %s child: status 0x%x", mode,
          status);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "child")) return child(argv[2], argc, argv);

    /* names as dynamic builds give them, as single-core builds do, and unknown ones */
    isa("Prescott", PW_ISA_SSE);
    isa("Nehalem", PW_ISA_SSE);
    isa("Opteron(SSE3)", PW_ISA_SSE);
    isa("Sandybridge", PW_ISA_AVX);
    isa("HASWELL", PW_ISA_AVX2);
    isa("Zen", PW_ISA_AVX2);
    isa("skylakex", PW_ISA_AVX512);
    isa("Cooperlake", PW_ISA_AVX512);
    isa("SapphireRapids", PW_ISA_AVX512);
    isa("NEOVERSEN1", PW_ISA_UNKNOWN);
    isa("", PW_ISA_UNKNOWN);
    isa(NULL, PW_ISA_UNKNOWN);

    /* OpenBLAS 0.3.21 on an Emerald Rapids (Prescott) and on a Zen 5 (Haswell) */
    better("Prescott", PW_ISA_AVX512, 1, "SkylakeX");
    better("Haswell", PW_ISA_AVX512, 1, "SkylakeX");
    better("Prescott", PW_ISA_AVX2, 1, "Haswell");
    better("Sandybridge", PW_ISA_AVX2, 1, "Haswell");
    better("Prescott", PW_ISA_AVX, 1, "Sandybridge");
    /* nothing to mend: a pick of the CPU's class or wider, an SSE-only CPU, an unknown core or
     * CPU, a library built for one core (OPENBLAS_CORETYPE does nothing there) */
    better("Cooperlake", PW_ISA_AVX512, 1, NULL);
    better("Zen", PW_ISA_AVX2, 1, NULL);
    better("SkylakeX", PW_ISA_AVX2, 1, NULL);
    better("Prescott", PW_ISA_SSE, 1, NULL);
    better("NEOVERSEN1", PW_ISA_AVX512, 1, NULL);
    better("Prescott", PW_ISA_UNKNOWN, 1, NULL);
    better("PRESCOTT", PW_ISA_AVX512, 0, NULL);

    /* the report of this process, whatever this machine is */
    char *line = report();
    printf("this process: %s", line);
    CHECK(!strncmp(line, "CPU: ", 5) && strstr(line, "; BLAS: OpenBLAS ") &&
              strstr(line, " kernels ("),
          "the report line: %s", line);
    free(line);

    const char *config = openblas_get_config();
    if (pw_cpu_isa() >= PW_ISA_AVX2 && config && strstr(config, "DYNAMIC_ARCH")) {
        run_child("/proc/self/exe", "forced");
        run_child("/proc/self/exe", "kept");
    } else {
        printf("the remedy's exec not tried: CPU class %d, OpenBLAS '%s'\n", (int)pw_cpu_isa(),
               config ? config : "?");
    }
    return pw_test_done("blas_core");
}
