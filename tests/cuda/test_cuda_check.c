/* test_cuda_check.c: PW_CUDA_CHECK and PW_CUBLAS_CHECK (pw_cuda_check.h) name the file, the line
 * and the call; an installed handler gets the failure; without one the process exits 1. No GPU. */
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cublas_v2.h>

#include "pw_cuda_check.h"
#include "pw_test.h"

/* Calls that fail the same way on any machine, with or without a GPU. */
static cudaError_t bad_cuda_call(void) { return cudaErrorInvalidValue; }
static cublasStatus_t bad_cublas_call(void) { return CUBLAS_STATUS_INVALID_VALUE; }

static jmp_buf back;
static char got_file[256], got_msg[1024];
static int got_line, handler_calls;

/* A handler must not return; this one jumps back to the test instead. */
static void record(const char *file, int line, const char *msg)
{
    snprintf(got_file, sizeof got_file, "%s", file);
    snprintf(got_msg, sizeof got_msg, "%s", msg);
    got_line = line;
    handler_calls++;
    longjmp(back, 1);
}

static void check_handler(void)
{
    volatile int line = 0;
    CHECK(pw_cuda_set_fail_handler(record) == NULL, "a handler was installed before the test");
    PW_CUDA_CHECK(cudaSuccess);
    PW_CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS);
    CHECK(handler_calls == 0, "a successful call reached the handler");

    if (!setjmp(back)) {
        line = __LINE__; PW_CUDA_CHECK(bad_cuda_call());
    }
    CHECK(handler_calls == 1 && got_line == line && strstr(got_file, "test_cuda_check.c"),
          "CUDA failure at %s:%d, expected line %d", got_file, got_line, line);
    CHECK(strstr(got_msg, "CUDA call bad_cuda_call() failed: ") &&
              strstr(got_msg, cudaGetErrorString(cudaErrorInvalidValue)),
          "message '%s'", got_msg);

    if (!setjmp(back)) {
        line = __LINE__; PW_CUBLAS_CHECK(bad_cublas_call());
    }
    CHECK(handler_calls == 2 && got_line == line, "cuBLAS failure at line %d, expected %d",
          got_line, line);
    CHECK(strstr(got_msg, "cuBLAS call bad_cublas_call() failed: ") &&
              strstr(got_msg, cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE)),
          "message '%s'", got_msg);
    CHECK(pw_cuda_set_fail_handler(NULL) == record, "the handler did not stay installed");
}

/* What the child process below runs, and the line its message must name. */
static void fail_here(void) { PW_CUDA_CHECK(bad_cuda_call()); }
static const int fail_here_line = __LINE__ - 1;

/* Without a handler: one line on stderr naming the place and the call, then exit status 1. */
static void check_default(void)
{
    int fds[2];
    if (pipe(fds)) {
        perror("pipe");
        exit(2);
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        fail_here();
        _exit(0); /* not reached when the check works */
    }
    close(fds[1]);
    char out[2048] = "";
    size_t n = 0;
    ssize_t k;
    while (n + 1 < sizeof out && (k = read(fds[0], out + n, sizeof out - 1 - n)) > 0) n += (size_t)k;
    out[n] = '\0';
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    char want[128];
    snprintf(want, sizeof want, "test_cuda_check.c:%d: CUDA call bad_cuda_call() failed: ",
             fail_here_line);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1, "child status %#x, expected exit 1",
          status);
    CHECK(strncmp(out, "[ppo_world] ", 12) == 0 && strstr(out, want), "stderr '%s', expected '%s'",
          out, want);
}

int main(void)
{
    check_handler();
    check_default();
    return pw_test_done("test_cuda_check");
}
