/* blas_core.c: the OpenBLAS kernels the CPU products run on (pw_blas_core.h). OpenBLAS answers
 * which core it picked (openblas_get_corename) but not why, and offers no call to change it once
 * loaded: the one lever is OPENBLAS_CORETYPE in the environment of a process that has not yet
 * loaded it, so the remedy is to set it and execute the program again. */
#include "pw_blas_core.h"

#include <cblas.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Where ppo_world records the core OpenBLAS picked before it was overruled. */
#define PICKED_VAR "PW_BLAS_CORE_PICKED"

/* OpenBLAS's x86 core names (its driver/others/dynamic.c and the names OPENBLAS_CORETYPE takes)
 * by the widest instructions their kernels use. */
static const struct {
    const char *name;
    PwIsa isa;
} cores[] = {
    {"Katmai", PW_ISA_SSE},         {"Coppermine", PW_ISA_SSE}, {"Northwood", PW_ISA_SSE},
    {"Prescott", PW_ISA_SSE},       {"Banias", PW_ISA_SSE},     {"Core2", PW_ISA_SSE},
    {"Penryn", PW_ISA_SSE},         {"Dunnington", PW_ISA_SSE}, {"Nehalem", PW_ISA_SSE},
    {"Atom", PW_ISA_SSE},           {"Athlon", PW_ISA_SSE},     {"Opteron", PW_ISA_SSE},
    {"Opteron(SSE3)", PW_ISA_SSE},  {"Barcelona", PW_ISA_SSE},  {"Nano", PW_ISA_SSE},
    {"Bobcat", PW_ISA_SSE},         {"Sandybridge", PW_ISA_AVX}, {"Bulldozer", PW_ISA_AVX},
    {"Piledriver", PW_ISA_AVX},     {"Steamroller", PW_ISA_AVX}, {"Haswell", PW_ISA_AVX2},
    {"Zen", PW_ISA_AVX2},           {"Excavator", PW_ISA_AVX2}, {"SkylakeX", PW_ISA_AVX512},
    {"Cooperlake", PW_ISA_AVX512},  {"SapphireRapids", PW_ISA_AVX512},
};

/* The name asked for per class: the oldest core of the class that every CPU of it runs. */
static const char *const class_core[] = {"Prescott", "Sandybridge", "Haswell", "SkylakeX"};

PwIsa pw_blas_core_isa(const char *core)
{
    if (!core) return PW_ISA_UNKNOWN;
    for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++)
        if (!strcasecmp(core, cores[i].name)) return cores[i].isa;
    return PW_ISA_UNKNOWN;
}

PwIsa pw_cpu_isa(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    /* libgcc's (and compiler-rt's) answers count a feature only where the OS saves its
     * registers (XGETBV), so a VM that hides the AVX-512 state reads as AVX2 here too. */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        return PW_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return PW_ISA_AVX2;
    if (__builtin_cpu_supports("avx")) return PW_ISA_AVX;
    return PW_ISA_SSE;
#else
    return PW_ISA_UNKNOWN;
#endif
}

const char *pw_blas_core_better(const char *core, PwIsa cpu, int dynamic)
{
    PwIsa have = pw_blas_core_isa(core);
    if (!dynamic || cpu == PW_ISA_UNKNOWN || have == PW_ISA_UNKNOWN || have >= cpu) return NULL;
    return class_core[cpu];
}

static int is_dynamic(void)
{
    const char *config = openblas_get_config();
    return config && strstr(config, "DYNAMIC_ARCH") != NULL;
}

void pw_blas_core_remedy(char **argv)
{
    const char *set = getenv("OPENBLAS_CORETYPE");
    if ((set && *set) || getenv(PICKED_VAR)) return;
    const char *picked = openblas_get_corename();
    const char *want = pw_blas_core_better(picked, pw_cpu_isa(), is_dynamic());
    if (!want) return;
    if (setenv(PICKED_VAR, picked, 1) || setenv("OPENBLAS_CORETYPE", want, 1)) return;
    execv("/proc/self/exe", argv);
    /* Still here: run on, slower, and say how to mend it by hand. */
    fprintf(stderr,
            "%s: warning: OpenBLAS runs its %s kernels on a CPU that runs its %s ones, and "
            "executing this program again with OPENBLAS_CORETYPE=%s failed (%s): set that "
            "variable before starting it, for up to 3x faster products (docs/kernels.md)\n",
            program_invocation_short_name, picked, want, want, strerror(errno));
    unsetenv("OPENBLAS_CORETYPE");
}

static const char *isa_name(PwIsa isa)
{
    switch (isa) {
    case PW_ISA_SSE: return "SSE";
    case PW_ISA_AVX: return "AVX";
    case PW_ISA_AVX2: return "AVX2";
    case PW_ISA_AVX512: return "AVX-512";
    default: return "not x86-64";
    }
}

void pw_blas_core_report(FILE *f)
{
    /* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...": the first two words are its version */
    const char *config = openblas_get_config();
    int vlen = 0;
    if (config) {
        const char *sp = strchr(config, ' ');
        const char *sp2 = sp ? strchr(sp + 1, ' ') : NULL;
        vlen = sp2 ? (int)(sp2 - config) : (int)strlen(config);
    }
    const char *core = openblas_get_corename();
    fprintf(f, "CPU: %s; BLAS: %.*s, %s kernels (", isa_name(pw_cpu_isa()), vlen,
            config ? config : "OpenBLAS", core ? core : "?");
    const char *set = getenv("OPENBLAS_CORETYPE");
    const char *picked = getenv(PICKED_VAR);
    if (set && *set && picked)
        fprintf(f, "OPENBLAS_CORETYPE=%s, set by ppo_world: OpenBLAS picked %s for this CPU", set,
                picked);
    else if (set && *set)
        fprintf(f, "OPENBLAS_CORETYPE=%s, from the environment", set);
    else
        fprintf(f, "OpenBLAS's own pick%s", is_dynamic() ? " for this CPU" : ", built in");
    fprintf(f, ")\n");
}
