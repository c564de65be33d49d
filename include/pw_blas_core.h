/* pw_blas_core.h: which OpenBLAS kernels the CPU products run on, and the remedy where OpenBLAS
 * picks older kernels than the CPU runs (docs/kernels.md, OpenBLAS's core type). A build of
 * OpenBLAS with DYNAMIC_ARCH (Debian's) picks its kernels once, when the library loads, from the
 * CPU's family and model; a model newer than the library falls back to older kernels:
 * OpenBLAS 0.3.21 runs an Intel Emerald Rapids on its SSE3 "Prescott" kernels (a third of the
 * speed of its AVX-512 ones) and an AMD Zen 5 on its AVX2 "Haswell" ones (half). The variable
 * OPENBLAS_CORETYPE overrides the choice, but only before the library loads. */
#ifndef PW_BLAS_CORE_H
#define PW_BLAS_CORE_H

#include <stdio.h>

/* Instruction-set classes, each running the kernels of the ones below it. */
typedef enum {
    PW_ISA_UNKNOWN = -1, /* not an x86 core name this table knows */
    PW_ISA_SSE = 0,      /* Prescott, Core2, Nehalem, Barcelona, ... */
    PW_ISA_AVX = 1,      /* Sandybridge, Bulldozer, Piledriver, Steamroller */
    PW_ISA_AVX2 = 2,     /* Haswell, Zen, Excavator */
    PW_ISA_AVX512 = 3,   /* SkylakeX, Cooperlake, SapphireRapids */
} PwIsa;

/* The class of an OpenBLAS core name as openblas_get_corename() gives it ("Prescott" from a
 * DYNAMIC_ARCH build, "HASWELL" from one built for a single core), case ignored. */
PwIsa pw_blas_core_isa(const char *core);
/* The widest class this CPU and its operating system run (AVX-512: F, CD, BW, DQ and VL, as
 * OpenBLAS's Skylake-X kernels use them); PW_ISA_UNKNOWN off x86-64. */
PwIsa pw_cpu_isa(void);
/* The OPENBLAS_CORETYPE to ask for: the core name of class `cpu` where the library picks its
 * kernels when it loads (`dynamic`) and its own pick `core` is of a known class below `cpu`;
 * NULL where there is nothing to mend. */
const char *pw_blas_core_better(const char *core, PwIsa cpu, int dynamic);
/* First thing in main(): where OPENBLAS_CORETYPE is unset and pw_blas_core_better names a core,
 * sets it, records the library's own pick in PW_BLAS_CORE_PICKED (for the report, and so that
 * the program never runs this twice) and executes the program again with the same arguments:
 * the same process, before MPI or anything else has started. Returns where there was nothing to
 * do, or where the exec failed (a warning on stderr then names the variable to set by hand). */
void pw_blas_core_remedy(char **argv);
/* One line for `ppo_world devices`: the CPU's class, OpenBLAS's version, the kernels in use and
 * who chose them. */
void pw_blas_core_report(FILE *f);

#endif
