/* gpu_arch.c: which of this build's device code a GPU runs (pw_gpu_arch.h). Said here, before
 * the first launch, because the CUDA runtime's own answer comes only at that launch and names
 * neither the device nor the build ("no kernel image is available for execution on the
 * device"), and a build for another GPU is the usual reason for it. */
#include "pw_gpu_arch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARCHS 16
#define MIN_ARCH 80 /* bfloat16 tensor-core products and cp.async: compute capability 8.0 */

/* archs as numbers ("80,90" -> 80, 90); the count, or -1 where it is not such a list */
static int parse(const char *archs, int *out)
{
    int n = 0;
    const char *p = archs;
    if (!p || !*p) return -1;
    for (;;) {
        char *end = NULL;
        if (*p < '0' || *p > '9') return -1;
        long a = strtol(p, &end, 10);
        if (a < 10 || a > 999 || n == MAX_ARCHS) return -1;
        out[n++] = (int)a;
        if (*end == '\0') return n;
        if (*end != ',') return -1;
        p = end + 1;
    }
}

/* machine code built for arch a runs on major.minor: the same major and a minor no newer;
 * sm_90a (what 90 is built as) on 9.0 alone */
static int runs_native(int a, int major, int minor)
{
    if (a == 90) return major == 9 && minor == 0;
    return a / 10 == major && a % 10 <= minor;
}

PwArchFit pw_gpu_arch_fit(const char *archs, int major, int minor, int *code)
{
    int list[MAX_ARCHS], n = parse(archs, list), best = 0, ptx = 0;
    *code = 0;
    if (n < 0) return PW_ARCH_BAD;
    for (int i = 0; i < n; i++) {
        if (runs_native(list[i], major, minor) && list[i] > best) best = list[i];
        if (list[i] > ptx) ptx = list[i];
    }
    if (best) {
        *code = best;
        return PW_ARCH_NATIVE;
    }
    if (ptx <= major * 10 + minor) { /* the PTX is the highest arch's */
        *code = ptx;
        return PW_ARCH_JIT;
    }
    return PW_ARCH_NONE;
}

static int by_value(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* archs with d added, in order ("90" and 86: "86,90"; d is not in it: the fit said so) */
static void with_arch(char *out, size_t n, const char *archs, int d)
{
    int list[MAX_ARCHS + 1], k = parse(archs, list);
    k = k < 0 ? 0 : k;
    list[k++] = d;
    qsort(list, (size_t)k, sizeof list[0], by_value);
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < k && used < n; i++)
        used += (size_t)snprintf(out + used, n - used, "%s%d", i ? "," : "", list[i]);
}

int pw_gpu_arch_check(const char *archs, const char *where, const char *name, int major,
                      int minor, char *notice, size_t notice_len, PwErr *err)
{
    int code = 0, d = major * 10 + minor;
    if (notice_len) notice[0] = '\0';
    switch (pw_gpu_arch_fit(archs, major, minor, &code)) {
    case PW_ARCH_NATIVE:
        return 0;
    case PW_ARCH_JIT:
        if (notice_len)
            snprintf(notice, notice_len,
                     "%s (%s): compute capability %d.%d has no machine code in this build "
                     "(gpu_arch '%s'): the driver compiles its PTX (compute_%d) at first use%s; "
                     "-Dgpu_arch=%d builds for it",
                     where, name, major, minor, archs, code,
                     code == 90 ? ", without Hopper's warpgroup products" : "", d);
        return 0;
    case PW_ARCH_BAD:
        return pw_errf(err, "%s: this build's gpu_arch '%s' is not a list of compute "
                            "capabilities (meson.build makes it one: a damaged build?)",
                       where, archs ? archs : "(none)");
    case PW_ARCH_NONE:
        break;
    }
    if (d < MIN_ARCH)
        return pw_errf(err, "%s (%s): compute capability %d.%d; ppo_world's CUDA kernels need "
                            "%d.%d or newer (bfloat16 tensor-core products, cp.async): use "
                            "device: cpu",
                       where, name, major, minor, MIN_ARCH / 10, MIN_ARCH % 10);
    char both[96];
    with_arch(both, sizeof both, archs, d);
    return pw_errf(err, "%s (%s): compute capability %d.%d, and this build's device code is "
                        "for '%s' (meson option gpu_arch): build again with -Dgpu_arch=%d (or "
                        "-Dgpu_arch=%s to keep '%s' too)",
                   where, name, major, minor, archs, d, both, archs);
}

void pw_gpu_arch_describe(const char *archs, char *buf, size_t n)
{
    int list[MAX_ARCHS], k = parse(archs, list), ptx = 0;
    size_t used = 0;
    if (n) buf[0] = '\0';
    for (int i = 0; i < k && used < n; i++) {
        used += (size_t)snprintf(buf + used, n - used, "%ssm_%d%s", i ? ", " : "machine code ",
                                 list[i], list[i] == 90 ? "a" : "");
        if (list[i] > ptx) ptx = list[i];
    }
    if (k > 0 && used < n) snprintf(buf + used, n - used, "; PTX compute_%d", ptx);
}

const char *pw_gpu_archs(void)
{
#ifdef PW_GPU_ARCHS
    return PW_GPU_ARCHS;
#else
    return "";
#endif
}
