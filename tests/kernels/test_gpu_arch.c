/* test_gpu_arch.c: which of a build's device code a GPU runs (pw_gpu_arch.h), case by case as
 * NVIDIA's compatibility rules give it by hand: machine code for major.y runs on major.z with
 * z >= y (sm_90a on 9.0 alone), the PTX of the highest architecture on any newer device; and
 * the words the user reads where nothing runs. No GPU needed: the check is plain C. */
#include "pw_gpu_arch.h"
#include "pw_test.h"

static void fit(const char *archs, int major, int minor, PwArchFit want, int want_code)
{
    int code = -1;
    PwArchFit got = pw_gpu_arch_fit(archs, major, minor, &code);
    CHECK(got == want && code == want_code, "'%s' on %d.%d: fit %d code %d, expected %d code %d",
          archs, major, minor, (int)got, code, (int)want, want_code);
}

/* the check's verdict, and that its message (err, or the notice) holds each of the words */
static void words(const char *archs, int major, int minor, int want_rc, const char *const *has)
{
    PwErr err = {{0}};
    char notice[512] = "x";
    int rc = pw_gpu_arch_check(archs, "cuda:1", "NVIDIA Test GPU", major, minor, notice,
                               sizeof notice, &err);
    const char *text = rc ? err.msg : notice;
    CHECK(rc == want_rc, "'%s' on %d.%d: rc %d, expected %d (%s)", archs, major, minor, rc,
          want_rc, text);
    for (int i = 0; has[i]; i++)
        CHECK(strstr(text, has[i]) != NULL, "'%s' on %d.%d: \"%s\" lacks \"%s\"", archs, major,
              minor, text, has[i]);
}

int main(void)
{
    /* Hopper's build (the default, sm_90a + compute_90) */
    fit("90", 9, 0, PW_ARCH_NATIVE, 90);
    fit("90", 8, 0, PW_ARCH_NONE, 0);
    fit("90", 8, 9, PW_ARCH_NONE, 0);
    fit("90", 10, 0, PW_ARCH_JIT, 90); /* Blackwell: the PTX */
    fit("90", 12, 0, PW_ARCH_JIT, 90);
    fit("90", 7, 5, PW_ARCH_NONE, 0);
    /* Ampere's: sm_80 runs on every 8.x, its PTX on anything newer */
    fit("80", 8, 0, PW_ARCH_NATIVE, 80);
    fit("80", 8, 6, PW_ARCH_NATIVE, 80);
    fit("80", 8, 9, PW_ARCH_NATIVE, 80);
    fit("80", 9, 0, PW_ARCH_JIT, 80);
    fit("86", 8, 0, PW_ARCH_NONE, 0); /* 8.6's code is newer than 8.0 */
    fit("86", 8, 9, PW_ARCH_NATIVE, 86);
    /* a list: the newest machine code that runs, else the highest's PTX */
    fit("80,90", 9, 0, PW_ARCH_NATIVE, 90);
    fit("80,90", 8, 9, PW_ARCH_NATIVE, 80);
    fit("80,86,90", 8, 9, PW_ARCH_NATIVE, 86);
    fit("80,90", 10, 0, PW_ARCH_JIT, 90);
    fit("90,80", 8, 0, PW_ARCH_NATIVE, 80); /* any order */
    /* Blackwell's: sm_100 on 10.x, not on 12.0 (another major) where its PTX runs */
    fit("100", 10, 3, PW_ARCH_NATIVE, 100);
    fit("100", 12, 0, PW_ARCH_JIT, 100);
    fit("120", 10, 0, PW_ARCH_NONE, 0);
    fit("100", 9, 0, PW_ARCH_NONE, 0);
    /* not a list of compute capabilities */
    const char *bad[] = {"", "8O", "80,", ",80", "80,,90", "9", "1000", "sm_90", "90a", " 90"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) fit(bad[i], 9, 0, PW_ARCH_BAD, 0);
    fit(NULL, 9, 0, PW_ARCH_BAD, 0);

    /* what the user reads */
    const char *const native[] = {NULL};
    words("90", 9, 0, 0, native);
    PwErr e0 = {{0}};
    char n0[64] = "x";
    CHECK(pw_gpu_arch_check("90", "cuda:0", "H", 9, 0, n0, sizeof n0, &e0) == 0 && !n0[0],
          "a device the build has code for gets no notice: \"%s\"", n0);
    const char *const a100[] = {"cuda:1 (NVIDIA Test GPU)", "compute capability 8.0",
                                "for '90' (meson option gpu_arch)", "-Dgpu_arch=80 (",
                                "-Dgpu_arch=80,90 to keep '90' too", NULL};
    words("90", 8, 0, -1, a100);
    words("90,80", 8, 9, 0, native); /* 8.9 runs sm_80 */
    words("86,90", 8, 0, -1, (const char *const[]){"-Dgpu_arch=80,86,90", NULL});
    words("90", 8, 9, -1, (const char *const[]){"compute capability 8.9", "-Dgpu_arch=89 (",
                                                 "-Dgpu_arch=89,90 ", NULL});
    const char *const t4[] = {"compute capability 7.5", "need 8.0 or newer", "device: cpu", NULL};
    words("90", 7, 5, -1, t4);
    words("80,90", 7, 0, -1, t4 + 1);
    const char *const b200[] = {"compute capability 10.0 has no machine code",
                                "compiles its PTX (compute_90) at first use",
                                "without Hopper's warpgroup products", "-Dgpu_arch=100", NULL};
    words("90", 10, 0, 0, b200);
    const char *const ampere_on_hopper[] = {"compute_80", "-Dgpu_arch=90", NULL};
    words("80", 9, 0, 0, ampere_on_hopper);
    PwErr e1 = {{0}};
    char n1[512];
    pw_gpu_arch_check("80", "cuda:0", "H100", 9, 0, n1, sizeof n1, &e1);
    CHECK(!strstr(n1, "warpgroup"), "compute_80's PTX is not said to lack what it never had: %s",
          n1);
    words("9O", 9, 0, -1, (const char *const[]){"gpu_arch '9O' is not a list", NULL});

    /* the build in words */
    char d[128];
    pw_gpu_arch_describe("90,80", d, sizeof d);
    CHECK(!strcmp(d, "machine code sm_90a, sm_80; PTX compute_90"), "90,80 described as \"%s\"", d);
    pw_gpu_arch_describe("100", d, sizeof d);
    CHECK(!strcmp(d, "machine code sm_100; PTX compute_100"), "100 described as \"%s\"", d);
    pw_gpu_arch_describe("9O", d, sizeof d);
    CHECK(!d[0], "9O described as \"%s\"", d);

    /* this build's own gpu_arch: empty without CUDA, else a list the check reads */
    const char *mine = pw_gpu_archs();
    int code = 0;
    CHECK(!mine[0] || pw_gpu_arch_fit(mine, 9, 0, &code) != PW_ARCH_BAD,
          "this build's gpu_arch '%s' does not parse", mine);
    printf("this build's gpu_arch: '%s'\n", mine);
    return pw_test_done("gpu_arch");
}
