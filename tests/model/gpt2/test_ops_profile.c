/* test_ops_profile.c: a profiled kernel table (PW_PROFILE_OPS, pw_ops_profile.h) changes nothing
 * a model computes, and counts what it runs. Two child processes run the same work, one without
 * the variable and one with it: GPT-2 and the Llama family, fp32 and bf16, each a forward of a
 * left-padded batch, a backward, a clipped AdamW step, a second forward and a sampled generation
 * through the KV cache. Every output must match bit for bit. The profiled child also checks the
 * calls of one fp32 GPT-2 forward against counts worked out by hand from gpt2.c, that every
 * kernel entry these models use was timed at least once (each wrapper passes its arguments on:
 * a swapped pair would change the outputs above), and its report at exit lands in the file the
 * variable names, "%p" replaced by its process id (a path that cannot be written: a message and
 * the report on stderr); a labelled model's lines carry its label.
 * The table-level behaviour (marks, graphs, flops, bytes, reset) is checked here too, on the
 * CPU table. */
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pw_generate.h"
#include "pw_ops_profile.h"
#include "pw_test.h"
#include "tiny_archs.h"

enum { B = 3, T = 10, V = 50, P = 4, R = 5, NCASE = 4 };

typedef struct Out {
    float logp[2][B * T], ent[B * T], val[B * T];
    double norm;
    int tokens[B * R];
    float glogp[B * R];
} Out;

/* one model through a training step and a generation */
static void run_case(const PwArch *a, PwPrecision prec, Out *o)
{
    PwModelOpts opts = {.heads = PW_HEAD_LM | PW_HEAD_VALUE, .maxB = B, .maxT = T,
                        .precision = prec, .seed = 7};
    PwModel *m = tiny_model(a, &opts, 11);
    int tok[B * T], mask[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) {
        int r = i / T, t = i % T, pad = r == 1 ? 3 : r == 2 ? 1 : 0;
        tok[i] = (i * 7 + 3) % V;
        mask[i] = t >= pad;
    }
    pw_lm_next_token_targets(tgt, tok, mask, B, T);
    /* a temperature: the LM head's logits divided by it are the `scale` entry's calls */
    PwModelInput in = {tok, mask, tgt, B, T, 0.8f};
    PwOutputs out = {0, T, o->logp[0], o->ent, o->val, NULL, NULL};
    PwErr err;
    CHECK(pw_model_zero_grad(m, &err) == 0, "zero_grad: %s", err.msg);
    CHECK(pw_model_forward(m, &in, &out, &err) == 0, "forward: %s", err.msg);
    float dlogp[B * T], dval[B * T];
    for (int i = 0; i < B * T; i++) dlogp[i] = 0.1f * (float)(i % 5) - 0.2f, dval[i] = 0.05f;
    PwOutputGrads g = {dlogp, NULL, dval, NULL, NULL, NULL};
    CHECK(pw_model_backward(m, &g, &err) == 0, "backward: %s", err.msg);
    PwAdamWConfig ac = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.01f, 0.5f};
    CHECK(pw_model_adamw_step(m, &ac, 1, &o->norm, &err) == PW_ADAMW_APPLIED, "adamw: %s",
          err.msg);
    out.logp = o->logp[1];
    out.entropy = NULL, out.value = NULL;
    CHECK(pw_model_forward(m, &in, &out, &err) == 0, "forward 2: %s", err.msg);
    PwGen *gen = pw_gen_create(m, B, P + R, &err);
    CHECK(gen, "gen_create: %s", err.msg);
    PwGenConfig gc = {.max_new_tokens = R, .stop_token = -1, .pad_token = 0,
                      .sample = {1.0f, 0, 0.9f}, .seed = 5, .graph = 1};
    int prompt[B * P], pmask[B * P];
    for (int i = 0; i < B * P; i++) prompt[i] = (i * 3 + 1) % V, pmask[i] = i % P >= i / P;
    CHECK(pw_generate(gen, prompt, pmask, B, P, NULL, &gc, &err) == 0, "generate: %s", err.msg);
    memcpy(o->tokens, gen->tokens, sizeof o->tokens);
    memcpy(o->glogp, gen->logp, sizeof o->glogp);
    pw_gen_free(gen);
    pw_model_free(m);
}

static void run_all(Out *o)
{
    const PwArch gpt2 = TINY_GPT2(V), llama = TINY_LLAMA(V);
    for (int c = 0; c < NCASE; c++)
        run_case(c < 2 ? &gpt2 : &llama, c % 2 ? PW_PRECISION_BF16 : PW_PRECISION_FP32, &o[c]);
}

static const PwOpsProfileRow *find(const PwOpsProfileRow *r, size_t n, const char *op,
                                   const char *shape)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(r[i].op, op) && (!shape || !strcmp(r[i].shape, shape))) return &r[i];
    return NULL;
}

static long calls_of(const PwOpsProfileRow *r, size_t n, const char *op)
{
    long c = 0;
    for (size_t i = 0; i < n; i++) c += strcmp(r[i].op, op) ? 0 : r[i].calls;
    return c;
}

/* The calls of one fp32 GPT-2 forward of (B, T) with L = 2 layers, read off gpt2.c: the
 * embeddings; per layer ln_1 (the first a plain LayerNorm, the others fused with the residual
 * add before them), the qkv product, the attention, its projection, the residual add fused with
 * ln_2, the MLP's two products and its GELU; ln_f fused with the last residual add; the LM head
 * (one product: B T = 30 rows, under a tile) and its log-probs; the value head's product. */
static void check_forward_counts(void)
{
    const PwArch a = TINY_GPT2(V);
    PwModelOpts opts = {.heads = PW_HEAD_LM | PW_HEAD_VALUE, .maxB = B, .maxT = T, .seed = 7};
    PwModel *m = tiny_model(&a, &opts, 11);
    int tok[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = (i * 7 + 3) % V;
    pw_lm_next_token_targets(tgt, tok, NULL, B, T);
    float logp[B * T], val[B * T];
    PwModelInput in = {tok, NULL, tgt, B, T, 1.0f};
    PwOutputs out = {0, T, logp, NULL, val, NULL, NULL};
    PwErr err;
    pw_model_profile_label(m, "actor"); /* its lines: "cpu/actor" */
    pw_ops_profile_reset();
    CHECK(pw_model_forward(m, &in, &out, &err) == 0, "forward: %s", err.msg);
    size_t n = 0;
    PwOpsProfileRow *r = pw_ops_profile_rows(&n);
    const int L = 2, N = B * T;
    struct {
        const char *op;
        long calls;
    } want[] = {{"encoder_forward", 1}, {"layernorm_forward", 1},
                {"residual_layernorm_forward", 2 * L}, {"matmul_forward", 4 * L + 2},
                {"attention_gqa_forward", L}, {"gelu_forward", L}, {"logprobs_forward", 1}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        CHECK(calls_of(r, n, want[i].op) == want[i].calls, "one forward: %s called %ld times, "
              "counted %ld by hand", want[i].op, calls_of(r, n, want[i].op), want[i].calls);
    char shape[72];
    snprintf(shape, sizeof shape, "N=%d C=32 OC=96", N); /* qkv: 3 C wide */
    const PwOpsProfileRow *q = find(r, n, "matmul_forward", shape);
    CHECK(q && q->calls == L, "the qkv products: no row '%s' of %d calls", shape, L);
    CHECK(q && q->flops == (double)L * 2 * N * 32 * 96, "qkv flops %g, want %g", q ? q->flops : 0,
          (double)L * 2 * N * 32 * 96);
    snprintf(shape, sizeof shape, "N=%d C=32 OC=%d", N, 64); /* the LM head: V padded to 64 */
    q = find(r, n, "matmul_forward", shape);
    CHECK(q && q->calls == 1, "the LM head's product: no row '%s'", shape);
    for (size_t i = 0; i < n; i++)
        CHECK(!strcmp(r[i].device, "cpu/actor"), "a labelled model's line on '%s'", r[i].device);
    /* no kernel of the CPU table queues anything: device time is the host's own */
    for (size_t i = 0; i < n; i++)
        CHECK(r[i].ms == r[i].host_ms && r[i].ms >= 0, "%s: device %g ms, host %g ms", r[i].op,
              r[i].ms, r[i].host_ms);
    for (size_t i = 1; i < n; i++)
        CHECK(r[i - 1].ms >= r[i].ms, "rows not in order of time at %zu", i);
    free(r);
    pw_model_free(m);
}

/* the table by itself: results, graphs, marks, flops, bytes, the report, reset */
static void check_table(void)
{
    PwErr err;
    const PwOps *c = pw_ops_cpu(), *p = pw_ops_profiled(c, &err);
    CHECK(p && p->inner == c && p->device == PW_DEVICE_CPU && !strcmp(p->name, "cpu"),
          "profiled table of the CPU's");
    CHECK(p->graph_capture(p, NULL, NULL) == NULL, "a profiled table made a graph");
    enum { N = 8, C = 16, OC = 24 };
    float x[N * C], w[OC * C], y0[N * OC], y1[N * OC], dx0[N * C] = {0}, dx1[N * C] = {0};
    for (int i = 0; i < N * C; i++) x[i] = (float)((i * 37) % 11) - 5.0f;
    for (int i = 0; i < OC * C; i++) w[i] = 0.25f * (float)((i * 13) % 7) - 0.75f;
    pw_ops_profile_reset();
    c->matmul_forward(c, y0, x, w, NULL, N, C, OC);
    p->matmul_forward(p, y1, x, w, NULL, N, C, OC);
    p->matmul_forward(p, y1, x, w, NULL, N, C, OC);
    CHECK(!memcmp(y0, y1, sizeof y0), "matmul_forward through the profiled table differs");
    c->matmul_backward(c, dx0, NULL, NULL, y0, x, w, N, C, OC, 1);
    p->matmul_backward(p, dx1, NULL, NULL, y0, x, w, N, C, OC, 1);
    CHECK(!memcmp(dx0, dx1, sizeof dx0), "matmul_backward through the profiled table differs");
    p->copy(p, y1, y0, 400, PW_COPY_H2D);
    /* a batch: two pieces copied, a zero fill, an empty piece; the bytes around left alone */
    unsigned char bs[64], bd[64], bw[64];
    for (int i = 0; i < 64; i++) bs[i] = (unsigned char)(i + 1), bd[i] = bw[i] = 0xee;
    void *to[4] = {bd, bd + 20, bd + 40, bd + 60};
    const void *from[4] = {bs + 3, bs + 20, NULL, bs};
    size_t nb[4] = {10, 7, 5, 0};
    memcpy(bw, bs + 3, 10), memcpy(bw + 20, bs + 20, 7), memset(bw + 40, 0, 5);
    p->copy_batch(p, to, from, nb, 4);
    CHECK(!memcmp(bd, bw, sizeof bd), "copy_batch through the profiled table");
    void *a = p->mark_new(p), *b = p->mark_new(p);
    p->mark_record(p, a);
    p->mark_record(p, b);
    CHECK(p->mark_ms(p, a, b) >= 0, "marks in the wrong order");
    p->mark_free(p, a), p->mark_free(p, b);
    size_t n = 0;
    PwOpsProfileRow *r = pw_ops_profile_rows(&n);
    CHECK(n == 4, "%zu rows, want 4 (forward, backward, the two copies)", n);
    const PwOpsProfileRow *f = find(r, n, "matmul_forward", "N=8 C=16 OC=24");
    CHECK(f && f->calls == 2 && f->flops == 2.0 * 2 * N * C * OC, "matmul_forward's row");
    f = find(r, n, "matmul_backward", "N=8 C=16 OC=24 dinp");
    CHECK(f && f->calls == 1 && f->flops == 2.0 * N * C * OC, "matmul_backward's row (dinp "
          "alone: one product)");
    f = find(r, n, "copy", "H2D");
    CHECK(f && f->bytes == 400, "copy's row");
    f = find(r, n, "copy_batch", "n=4");
    CHECK(f && f->calls == 1 && f->bytes == 22 && f->flops == 0, "copy_batch's row");
    free(r);
    FILE *t = tmpfile();
    pw_ops_profile_write(t);
    rewind(t);
    char buf[8192];
    size_t got = fread(buf, 1, sizeof buf - 1, t);
    buf[got] = '\0';
    fclose(t);
    CHECK(strstr(buf, "by entry\n") && strstr(buf, "by entry and shape\n") &&
              strstr(buf, "matmul_forward N=8 C=16 OC=24\n") && strstr(buf, "5 calls"),
          "the report:\n%s", buf);
    pw_ops_profile_reset();
    r = pw_ops_profile_rows(&n);
    CHECK(n == 0 && !r, "%zu rows after a reset", n);
    pw_ops_close(p); /* frees the profiled table; the CPU table stays */
    CHECK(pw_ops_cpu() == c, "the CPU table");
}

/* Runs the work in a child with PW_PROFILE_OPS = env (NULL: unset); its outputs into o. */
static pid_t child(const char *env, Out *o, int *status)
{
    int fd[2];
    CHECK(pipe(fd) == 0, "pipe");
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        pw_test_failures = 0; /* its own, not the parent's so far */
        if (env) setenv(PW_OPS_PROFILE_ENV, env, 1);
        else unsetenv(PW_OPS_PROFILE_ENV);
        Out mine[NCASE];
        memset(mine, 0, sizeof mine);
        int profiled = env && strcmp(env, "0");
        CHECK(pw_ops_profile_wanted() == profiled, "PW_PROFILE_OPS=%s: wanted %d",
              env ? env : "(unset)", pw_ops_profile_wanted());
        if (profiled) { /* first: each resets the profile, which the report should not show */
            check_table();
            check_forward_counts();
            pw_ops_profile_reset();
        }
        run_all(mine);
        if (profiled) {
            size_t n = 0;
            PwOpsProfileRow *r = pw_ops_profile_rows(&n);
            /* the entries two families at two precisions use; `attention_forward` and
             * `_backward` (GPT-2's own, before grouped queries) and the float32 rope-free
             * entries' bf16 twins not listed are the CPU table's and the tests' alone; GPT-2's
             * bf16 GELU entries are called by the MLP's product-and-GELU entries, inside the
             * table, not through it */
            const char *used[] = {"encoder_forward", "encoder_backward", "layernorm_forward",
                "layernorm_backward", "matmul_forward", "matmul_backward",
                "matmul_forward_bf16", "matmul_backward_bf16", "to_bf16",
                "layernorm_forward_bf16", "rmsnorm_forward_bf16", "matmul_gelu_forward_bf16",
                "residual_layernorm_forward", "residual_rmsnorm_forward",
                "swiglu_forward_bf16", "matmul_backward_gelu_bf16", "swiglu_backward_bf16",
                "matmul_swiglu_forward_bf16",
                "gelu_forward", "gelu_backward", "logprobs_forward", "logprobs_backward",
                "logprobs_backward_bf16", "gather_rows", "adamw_update", "sumsq", "scale",
                "sample", "record", "rmsnorm_forward", "rmsnorm_backward", "rope_forward",
                "rope_backward", "swiglu_forward", "swiglu_backward", "attention_gqa_forward",
                "attention_gqa_backward", "attention_gqa_forward_bf16",
                "attention_gqa_backward_bf16", "attention_cache_gqa_forward",
                "attention_cache_gqa_forward_bf16", "alloc", "free", "copy", "zero"};
            for (size_t i = 0; i < sizeof used / sizeof *used; i++)
                CHECK(calls_of(r, n, used[i]) > 0, "%s was never timed", used[i]);
            free(r);
        }
        ssize_t w = write(fd[1], mine, sizeof mine);
        exit(w == (ssize_t)sizeof mine && pw_test_failures == 0 ? 0 : 1); /* the report */
    }
    close(fd[1]);
    size_t got = 0;
    while (got < NCASE * sizeof *o) {
        ssize_t k = read(fd[0], (char *)o + got, NCASE * sizeof *o - got);
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd[0]);
    waitpid(pid, status, 0);
    CHECK(got == NCASE * sizeof *o, "child (%s) sent %zu bytes", env ? env : "unset", got);
    return pid;
}

/* A path that cannot be written (`value`: a missing folder, a FIFO): the report goes to stderr
 * instead, after a message naming the variable, the path (`shown`) and why; the run itself is
 * neither stopped nor held (a FIFO is never waited on: the child has 20 s). */
static void check_unwritable(const char *dir, const char *value, const char *shown)
{
    char errpath[4200];
    snprintf(errpath, sizeof errpath, "%s/ops_profile_stderr.txt", dir);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *e = freopen(errpath, "w", stderr);
        if (!e) _exit(3);
        alarm(20);
        setenv(PW_OPS_PROFILE_ENV, value, 1);
        PwErr err;
        const PwOps *o = pw_ops_open(PW_DEVICE_CPU, 0, &err);
        float x[4] = {1, 2, 3, 4}, w[4] = {1, 0, 0, 1}, y[4];
        if (!o || !o->inner) _exit(4);
        o->matmul_forward(o, y, x, w, NULL, 2, 2, 2);
        pw_ops_close(o);
        exit(0); /* the report at exit */
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child with an unwritable path: status %d",
          st);
    FILE *f = fopen(errpath, "r");
    char buf[8192] = "";
    size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[got] = '\0';
    if (f) fclose(f);
    char want[4400];
    snprintf(want, sizeof want, "PW_PROFILE_OPS=%s: cannot write %s", value, shown);
    CHECK(strstr(buf, want) && strstr(buf, "the profile goes to stderr") &&
              strstr(buf, "matmul_forward N=2 C=2 OC=2\n"),
          "an unwritable path's message and report on stderr:\n%s", buf);
    unlink(errpath);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    char pattern[4096], path[4200];
    snprintf(pattern, sizeof pattern, "%s/ops_profile_%%p.txt", dir);
    static Out plain[NCASE], timed[NCASE], off[NCASE];
    int st = 0;
    child(NULL, plain, &st);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child without profiling failed");
    pid_t pid = child(pattern, timed, &st);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the profiled child failed");
    child("0", off, &st);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child with PW_PROFILE_OPS=0 failed");
    check_unwritable(dir, "/nonexistent-dir/ops_%p.txt", "/nonexistent-dir/ops_");
    char fifo[4200];
    snprintf(fifo, sizeof fifo, "%s/ops_profile_fifo", dir);
    unlink(fifo);
    if (mkfifo(fifo, 0644) == 0) {
        char shown[4300];
        snprintf(shown, sizeof shown, "%s (No such device or address)", fifo);
        check_unwritable(dir, fifo, shown);
        unlink(fifo);
    }
    const char *names[NCASE] = {"gpt2 fp32", "gpt2 bf16", "llama fp32", "llama bf16"};
    for (int c = 0; c < NCASE; c++) {
        CHECK(!memcmp(&plain[c], &timed[c], sizeof plain[c]), "%s: profiled outputs differ",
              names[c]);
        CHECK(!memcmp(&plain[c], &off[c], sizeof plain[c]), "%s: PW_PROFILE_OPS=0 differs",
              names[c]);
        CHECK(plain[c].norm > 0 && plain[c].logp[0][T + 5] != plain[c].logp[1][T + 5],
              "%s: the step changed nothing", names[c]);
    }
    /* the report at exit, in the file named with the child's pid */
    snprintf(path, sizeof path, "%s/ops_profile_%ld.txt", dir, (long)pid);
    FILE *f = fopen(path, "r");
    CHECK(f, "no report at %s", path);
    if (f) {
        char buf[1 << 16];
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        buf[got] = '\0';
        fclose(f);
        char head[64];
        snprintf(head, sizeof head, "ops profile, process %ld: ", (long)pid);
        CHECK(!strncmp(buf, head, strlen(head)), "the report begins:\n%.200s", buf);
        CHECK(strstr(buf, " attention_gqa_backward_bf16 B=3 T=10 NH=4 NKV=2 hs=8\n"),
              "the Llama bf16 attention's backward is not in the report");
        unlink(path);
    }
    return pw_test_done("ops profile");
}
