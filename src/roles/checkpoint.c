/* checkpoint.c: RUN_DIR/checkpoints/step_N: actor and critic weights with their AdamW moments,
 * the generator's queue of batches sampled ahead in async mode, and the run state; --resume
 * continues from the newest. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pw_file.h"
#include "pw_safetensors.h"
#include "roles.h"
#include "shard.h"

/* Nothing else is needed to continue bit for bit: prompts, sampling streams and minibatches
 * are functions of (seed, step, row), so the step number is the data position and the RNG. */

static void ckpt_path(char *buf, size_t n, const char *out_dir, int64_t step, const char *leaf)
{
    snprintf(buf, n, "%s/checkpoints/step_%lld%s%s", out_dir, (long long)step, leaf ? "/" : "",
             leaf ? leaf : "");
}

/* A folder of the checkpoint, made or already there; anything else there, or a folder that
 * cannot be made, is said at once with the system's reason, not later as a missing file. */
static int make_dir(const char *path, PwErr *err)
{
    if (mkdir(path, 0755) == 0) return 0;
    if (errno != EEXIST) return pw_errf(err, "cannot create %s: %s", path, strerror(errno));
    return pw_dir_check(path, err);
}

static void make_dir_or_die(const char *path)
{
    PwErr err;
    if (make_dir(path, &err)) pw_comm_fatal(__FILE__, __LINE__, "checkpoint: %s", err.msg);
}

int pw_ckpt_prepare(const char *out_dir, PwErr *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/checkpoints", out_dir);
    PwErr e;
    if (make_dir(out_dir, &e) || make_dir(path, &e)) return pw_errf(err, "--out: %s", e.msg);
    return 0;
}

/* A model folder, with the run's tokenizer beside the weights (data.tokenizer: a folder's files;
 * none for bytes) and, for the policy, the generation_config.json of the model it started from
 * (gen_from; NULL: none, for a model that does not generate) or one of the tokenizer's ids, so
 * it loads and generates in transformers and vLLM as it is. Those
 * copies are conveniences: one that fails (a tokenizer folder removed during the run) is a
 * warning, and the checkpoint, which resumes without them, is kept. */
static void save_model(PwModel *m, const char *dir, const char *tokenizer, const char *gen_from,
                       int with_optimizer, float *hw)
{
    PwErr err;
    make_dir_or_die(dir);
    /* split float32 weights (hw: gathered whole) make the same files */
    if (hw ? pw_model_save_master(m, dir, hw, NULL, &err) : pw_model_save(m, dir, &err))
        pw_comm_fatal(__FILE__, __LINE__, "checkpoint: %s", err.msg);
    if (pw_tokenizer_save(tokenizer, dir, &err) ||
        (gen_from && pw_model_generation_config(gen_from, tokenizer, dir, &err)))
        fprintf(stderr, "ppo_world: warning: checkpoint %s: %s (the weights are saved)\n", dir,
                err.msg);
    if (!with_optimizer) return;
    char path[1400];
    snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
    if (pw_model_optimizer_save(m, path, &err))
        pw_comm_fatal(__FILE__, __LINE__, "checkpoint: %s", err.msg);
}

/* optim.zero_stage 1: the moments split over the role's ranks written by its rank 0 as they
 * are gathered (into the role's folder, made first), the same file as whole moments make;
 * every rank of the role calls it. 0 when they are not split (save_model writes them). */
static int write_split_moments(PwRun *r, PwRole role, PwModel *m, const char *out_dir,
                               int64_t done)
{
    const int64_t *starts = r->shard[role];
    if (!starts) return 0;
    char dir[1300], path[1400] = "";
    if (r->w.role_rank[role] == 0) {
        ckpt_path(dir, sizeof dir, out_dir, done, pw_role_name(role));
        make_dir_or_die(dir);
        snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
    }
    pw_shard_write_moments(&r->w, role, m, starts, path);
    return 1;
}

void pw_ckpt_load_optimizer(PwModel *m, const char *dir)
{
    PwErr err;
    char path[1300];
    snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
    if (access(path, F_OK) != 0) return; /* saved before the first update: no moments yet */
    if (pw_model_optimizer_load(m, path, &err))
        pw_comm_fatal(__FILE__, __LINE__, "resume: %s", err.msg);
}

static void remove_model(const char *dir)
{
    static const char *const files[] = {"config.json", "model.safetensors",
                                        "optimizer.safetensors", "queue.safetensors"};
    char path[1400];
    for (size_t i = 0; i < PW_ARRAY_LEN(files); i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* Steps of the checkpoints on disk that are complete (state.json is written last). */
static int list_steps(const char *out_dir, int64_t *steps, int max)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/checkpoints", out_dir);
    DIR *d = opendir(path);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        if (strncmp(e->d_name, "step_", 5)) continue;
        long long s = strtoll(e->d_name + 5, &end, 10);
        char state[1300];
        ckpt_path(state, sizeof state, out_dir, s, "state.json");
        if (*end || access(state, F_OK) != 0) continue;
        if (n < max) steps[n++] = s;
    }
    closedir(d);
    return n;
}

int64_t pw_ckpt_latest(const char *out_dir)
{
    int64_t steps[4096], best = -1;
    int n = list_steps(out_dir, steps, 4096);
    for (int i = 0; i < n; i++)
        if (steps[i] > best) best = steps[i];
    return best;
}

static void prune(PwRun *r, const char *out_dir, int64_t newest)
{
    if (r->s.checkpoint_keep <= 0) return;
    int64_t steps[4096];
    int n = list_steps(out_dir, steps, 4096);
    for (int i = 0; i < n; i++) {
        int newer = 0;
        for (int j = 0; j < n; j++) newer += steps[j] > steps[i];
        if (newer < r->s.checkpoint_keep || steps[i] == newest) continue;
        char path[1300];
        ckpt_path(path, sizeof path, out_dir, steps[i], "state.json");
        unlink(path); /* first: a half-removed checkpoint must never look complete */
        static const char *const parts[] = {"actor", "critic", "generator"};
        for (size_t k = 0; k < PW_ARRAY_LEN(parts); k++) {
            ckpt_path(path, sizeof path, out_dir, steps[i], parts[k]);
            remove_model(path);
        }
        ckpt_path(path, sizeof path, out_dir, steps[i], NULL);
        rmdir(path);
    }
}

static const int gen_root[1] = {0};

/* Async: the batches the generator sampled ahead, gathered whole (N rows each) from its ranks
 * by its rank 0, which writes generator/queue.safetensors: for each queued batch B the tensors
 * batch_B.tokens (N, R) I32, batch_B.logp (N, R) F32 and batch_B.version (1) I32. Whole
 * batches, not a rank's block: the file does not depend on how many ranks generate. */
static void save_queue(PwRun *r, const char *dir)
{
    PwWorld *w = &r->w;
    int N = r->s.N, R = r->R, nq = r->queue_n, me = w->role_rank[PW_ROLE_GENERATOR];
    PwGroup gen = pw_run_group(r, PW_ROLE_GENERATOR), root = {PW_ROLE_GENERATOR, 1, gen_root};
    size_t per = (size_t)N * R;
    int32_t *tok = NULL, *ver = NULL;
    float *lp = NULL;
    PwXfer x = {0};
    for (int j = 0; j < nq; j++) {
        PwQueued *q = &r->queue[j];
        PwTensor t = pw_tensor2(q->rows.tokens, PW_DTYPE_I32, q->rows.n, R);
        PwTensor l = pw_tensor2(q->logp, PW_DTYPE_F32, q->rows.n, R);
        pw_xfer_send_rows(&x, w, gen, me, root, PW_MSG_TOKENS, q->batch, N, &t);
        pw_xfer_send_rows(&x, w, gen, me, root, PW_MSG_LOGP_GEN, q->batch, N, &l);
    }
    if (me == 0) {
        tok = pw_roles_alloc((nq ? nq : 1) * per * sizeof *tok);
        lp = pw_roles_alloc((nq ? nq : 1) * per * sizeof *lp);
        ver = pw_roles_alloc((size_t)(nq ? nq : 1) * sizeof *ver);
        for (int j = 0; j < nq; j++) {
            PwTensor t = pw_tensor2(tok + j * per, PW_DTYPE_I32, N, R);
            PwTensor l = pw_tensor2(lp + j * per, PW_DTYPE_F32, N, R);
            pw_xfer_recv_rows(&x, w, gen, root, 0, PW_MSG_TOKENS, r->queue[j].batch, N, &t);
            pw_xfer_recv_rows(&x, w, gen, root, 0, PW_MSG_LOGP_GEN, r->queue[j].batch, N, &l);
            ver[j] = (int32_t)r->queue[j].version;
        }
    }
    pw_xfer_wait(&x, w);
    pw_xfer_free(&x);
    if (me != 0) return;
    PwStWriteTensor *t = pw_roles_alloc((size_t)(3 * nq + 1) * sizeof *t);
    char (*names)[48] = pw_roles_alloc((size_t)(3 * nq + 1) * sizeof *names);
    for (int j = 0; j < nq; j++) {
        long long b = (long long)r->queue[j].batch;
        snprintf(names[3 * j], sizeof names[0], "batch_%lld.tokens", b);
        snprintf(names[3 * j + 1], sizeof names[0], "batch_%lld.logp", b);
        snprintf(names[3 * j + 2], sizeof names[0], "batch_%lld.version", b);
        t[3 * j] = (PwStWriteTensor){names[3 * j], 2, {N, R}, tok + j * per, PW_DT_I32};
        t[3 * j + 1] = (PwStWriteTensor){names[3 * j + 1], 2, {N, R}, lp + j * per, PW_DT_F32};
        t[3 * j + 2] = (PwStWriteTensor){names[3 * j + 2], 1, {1}, ver + j, PW_DT_I32};
    }
    PwErr err;
    char path[1400];
    make_dir_or_die(dir);
    snprintf(path, sizeof path, "%s/queue.safetensors", dir);
    if (pw_st_write(path, t, 3 * nq, NULL, &err))
        pw_comm_fatal(__FILE__, __LINE__, "checkpoint: %s", err.msg);
    free(t);
    free(names);
    free(tok);
    free(lp);
    free(ver);
}

int pw_ckpt_load_queue(PwRun *r, const char *out_dir, PwErr *err)
{
    char path[1400];
    ckpt_path(path, sizeof path, out_dir, r->first_step, "generator/queue.safetensors");
    PwSafetensors *st;
    PwErr e;
    if (pw_st_open(&st, path, &e))
        return pw_errf(err, "--resume: %s (an async run's checkpoint holds the generator's "
                       "queue)", e.msg);
    int64_t f = r->first_step, last = f + r->k - 1 < r->s.steps - 1 ? f + r->k - 1 : r->s.steps - 1;
    int want = last >= f ? (int)(last - f + 1) : 0, N = r->s.N, R = r->R, rc = 0;
    if (pw_st_count(st) != 3 * want) {
        rc = pw_errf(err, "--resume: %s: %d tensors: expected the %d batches %lld..%lld of "
                     "async.max_staleness %d, 3 tensors each", path, pw_st_count(st), want,
                     (long long)f, (long long)last, r->k);
        want = 0;
    }
    int32_t *tok = pw_roles_alloc((size_t)N * R * sizeof *tok);
    float *lp = pw_roles_alloc((size_t)N * R * sizeof *lp);
    for (int j = 0; j < want && !rc; j++) {
        int64_t b = f + j, shape[2] = {N, R}, one = 1;
        int32_t ver;
        char name[3][48];
        snprintf(name[0], sizeof name[0], "batch_%lld.tokens", (long long)b);
        snprintf(name[1], sizeof name[1], "batch_%lld.logp", (long long)b);
        snprintf(name[2], sizeof name[2], "batch_%lld.version", (long long)b);
        if (pw_st_read_i32(st, name[0], shape, 2, tok, &e) ||
            pw_st_read_f32(st, name[1], shape, 2, lp, &e) ||
            pw_st_read_i32(st, name[2], &one, 1, &ver, &e)) {
            rc = pw_errf(err, "--resume: %s", e.msg);
            break;
        }
        int64_t want_ver = b > r->k ? b - r->k : 0;
        if (ver != want_ver) {
            rc = pw_errf(err, "--resume: %s: %s is %d: expected %lld (batch %lld, "
                         "async.max_staleness %d)", path, name[2], (int)ver, (long long)want_ver,
                         (long long)b, r->k);
            break;
        }
        PwQueued *q = &r->queue[r->queue_n++];
        memset(q, 0, sizeof *q);
        q->batch = b;
        q->version = ver;
        pw_ppo_block_rows(r, &q->rows, b, PW_ROLE_GENERATOR);
        q->logp = pw_roles_alloc((size_t)(q->rows.n > 0 ? q->rows.n : 1) * R * sizeof(float));
        memcpy(q->rows.tokens, tok + q->rows.r0 * R, (size_t)q->rows.n * R * sizeof(int));
        memcpy(q->logp, lp + q->rows.r0 * R, (size_t)q->rows.n * R * sizeof(float));
    }
    free(tok);
    free(lp);
    pw_st_close(st);
    return rc;
}

/* After step `done - 1`: rank 0 of actor and critic (and of the generator in async mode) write
 * their part, tell actor rank 0, which then writes state.json, the mark of a whole checkpoint. */
void pw_ckpt_save(PwRun *r, const char *out_dir, int64_t done)
{
    PwWorld *w = &r->w;
    PwXfer x = {0};
    char path[1300];
    ckpt_path(path, sizeof path, out_dir, 0, NULL);
    *strrchr(path, '/') = '\0';
    make_dir_or_die(path);
    ckpt_path(path, sizeof path, out_dir, done, NULL);
    make_dir_or_die(path);
    double one = 1.0, got[PW_ROLE_COUNT];
    int64_t shape[1] = {1};
    if (r->async && pw_world_has_role(w, PW_ROLE_GENERATOR)) {
        ckpt_path(path, sizeof path, out_dir, done, "generator");
        save_queue(r, path);
    }
    /* optim.zero_stage 1: each rank of the actor and of the critic hands its share of the
     * moments (and at bf16 of the float32 weights) to the role's rank 0, which writes them
     * (critic first, on every rank alike) */
    float *cw = NULL, *aw = NULL;
    int csplit = 0, asplit = 0;
    if (pw_world_has_role(w, PW_ROLE_CRITIC)) {
        cw = pw_shard_gather_master(w, PW_ROLE_CRITIC, r->critic, r->shard[PW_ROLE_CRITIC]);
        csplit = write_split_moments(r, PW_ROLE_CRITIC, r->critic, out_dir, done);
    }
    if (pw_world_has_role(w, PW_ROLE_ACTOR)) {
        aw = pw_shard_gather_master(w, PW_ROLE_ACTOR, r->actor, r->shard[PW_ROLE_ACTOR]);
        asplit = write_split_moments(r, PW_ROLE_ACTOR, r->actor, out_dir, done);
    }
    static const PwRole writers[] = {PW_ROLE_CRITIC, PW_ROLE_GENERATOR};
    for (size_t i = 0; i < PW_ARRAY_LEN(writers); i++) {
        PwRole role = writers[i];
        if (!pw_world_has_role(w, role) || w->role_rank[role] != 0) continue;
        if (role == PW_ROLE_GENERATOR && !r->async) continue;
        if (role == PW_ROLE_CRITIC) {
            ckpt_path(path, sizeof path, out_dir, done, "critic");
            save_model(r->critic, path, r->s.tokenizer, NULL, !csplit, cw);
        }
        PwTensor t = pw_tensor_host(&one, PW_DTYPE_F64, 1, shape);
        pw_xfer_send(&x, w, role, PW_ROLE_ACTOR, 0, PW_MSG_CONTROL, done, &t);
    }
    if (pw_world_has_role(w, PW_ROLE_ACTOR) && w->role_rank[PW_ROLE_ACTOR] == 0) {
        ckpt_path(path, sizeof path, out_dir, done, "actor");
        save_model(r->actor, path, r->s.tokenizer, r->s.sft, !asplit, aw);
        for (size_t i = 0; i < PW_ARRAY_LEN(writers); i++) {
            PwRole role = writers[i];
            if (!w->map.role[role].nranks || (role == PW_ROLE_GENERATOR && !r->async)) continue;
            PwTensor t = pw_tensor_host(&got[role], PW_DTYPE_F64, 1, shape);
            pw_xfer_recv(&x, w, PW_ROLE_ACTOR, role, 0, PW_MSG_CONTROL, done, &t);
        }
    }
    pw_xfer_wait(&x, w);
    pw_xfer_free(&x);
    free(cw);
    free(aw);
    if (!pw_world_has_role(w, PW_ROLE_ACTOR) || w->role_rank[PW_ROLE_ACTOR] != 0) return;

    json_t *o = json_pack("{s:I, s:I, s:f, s:[f, f, f]}", "step", (json_int_t)done, "opt_step",
                          (json_int_t)r->opt_step, "beta", r->beta, "running", r->running.count,
                          r->running.mean, r->running.m2);
    char *text = json_dumps(o, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    json_decref(o);
    PwErr err;
    ckpt_path(path, sizeof path, out_dir, done, "state.json");
    if (!text || pw_file_write(path, text, strlen(text), &err))
        pw_comm_fatal(__FILE__, __LINE__, "checkpoint: %s", text ? err.msg : "no memory");
    free(text);
    prune(r, out_dir, done);
}

/* A field of state.json, present and of its type: the message says which, so a hand-edited or
 * damaged state is found at once. */
static const json_t *state_field(const json_t *o, const char *name, int want_int,
                                 const char *path, PwErr *err)
{
    const json_t *v = json_object_get(o, name);
    if (!v) return pw_errf(err, "--resume: %s: not a checkpoint state (no field \"%s\")", path,
                           name), NULL;
    if (want_int ? !json_is_integer(v) : !json_is_number(v) || !isfinite(json_number_value(v)))
        return pw_errf(err, "--resume: %s: not a checkpoint state (field \"%s\" must be %s)",
                       path, name, want_int ? "an integer" : "a finite number"), NULL;
    return v;
}

/* Everything in state.json must be what this run would have written at that step: a value the
 * run could not have reached (opt_step -5 ran at learning rate 0) is a damaged or foreign file. */
static int check_state(PwRun *r, const json_t *o, const char *path, int64_t step, PwErr *err)
{
    static const char *const fields[] = {"step", "opt_step", "beta", "running"};
    if (!json_is_object(o))
        return pw_errf(err, "--resume: %s: not a checkpoint state (not a JSON object)", path);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        size_t i = 0;
        while (i < PW_ARRAY_LEN(fields) && strcmp(key, fields[i])) i++;
        if (i == PW_ARRAY_LEN(fields))
            return pw_errf(err, "--resume: %s: not a checkpoint state (unknown field \"%s\"; "
                           "expected step, opt_step, beta, running)", path, key);
    }
    const PwSettings *s = &r->s;
    const json_t *js = state_field(o, "step", 1, path, err), *jo, *jb, *jr;
    if (!js || !(jo = state_field(o, "opt_step", 1, path, err)) ||
        !(jb = state_field(o, "beta", 0, path, err)))
        return -1;
    jr = json_object_get(o, "running");
    if (!json_is_array(jr) || json_array_size(jr) != 3)
        return pw_errf(err, "--resume: %s: not a checkpoint state (field \"running\" must be "
                       "[count, mean, m2])", path);
    double run[3];
    for (size_t i = 0; i < 3; i++) {
        const json_t *x = json_array_get(jr, i);
        if (!json_is_number(x) || !isfinite(json_number_value(x)))
            return pw_errf(err, "--resume: %s: not a checkpoint state (running[%zu] must be a "
                           "finite number)", path, i);
        run[i] = json_number_value(x);
    }
    json_int_t got = json_integer_value(js);
    if (got != step || step < 1 || step > s->steps)
        return pw_errf(err, "--resume: %s: step %lld: expected %lld, the folder's step, within "
                       "the run's 1..%lld steps", path, (long long)got, (long long)step,
                       (long long)s->steps);
    int64_t per = (int64_t)s->epochs * s->minibatches;
    if (json_integer_value(jo) != step * per)
        return pw_errf(err, "--resume: %s: opt_step %lld: expected %lld (step %lld x "
                       "ppo.epochs %d x ppo.minibatches %d)", path,
                       (long long)json_integer_value(jo), (long long)(step * per),
                       (long long)step, s->epochs, s->minibatches);
    double beta = json_number_value(jb);
    if (!s->adaptive_kl && beta != s->beta)
        return pw_errf(err, "--resume: %s: beta %.17g: expected %.17g "
                       "(ppo.initial_policy_kl_penalty: ppo.adaptive_kl is false)", path, beta,
                       s->beta);
    if (s->adaptive_kl && !(beta >= 0))
        return pw_errf(err, "--resume: %s: beta %g: expected >= 0", path, beta);
    /* reward.normalize folds in every score of every step: N a step, or none at all */
    double count = s->reward_normalize ? (double)step * s->N : 0.0;
    if (run[0] != count)
        return pw_errf(err, "--resume: %s: running count %.17g: expected %.17g (%s)", path,
                       run[0], count,
                       s->reward_normalize ? "step x ppo.num_rollout_samples"
                                           : "reward.normalize is false");
    if (run[2] < 0 || (count == 0 && (run[1] != 0 || run[2] != 0)))
        return pw_errf(err, "--resume: %s: running mean %g, m2 %g: expected m2 >= 0, and both 0 "
                       "with no scores", path, run[1], run[2]);
    r->opt_step = step * per;
    r->beta = beta;
    r->running = (PwRunningMoments){run[0], run[1], run[2]};
    return 0;
}

int pw_ckpt_load_state(PwRun *r, const char *out_dir, int64_t step, PwErr *err)
{
    char path[1300];
    ckpt_path(path, sizeof path, out_dir, step, "state.json");
    PwErr je;
    /* Through the file check, and a key given twice is refused: the last one would win in
     * silence. */
    json_t *o = pw_file_json(path, PW_FILE_MAX_JSON, JSON_REJECT_DUPLICATES, &je);
    if (!o) return pw_errf(err, "--resume: %s", je.msg);
    int rc = check_state(r, o, path, step, err);
    json_decref(o);
    return rc;
}

void pw_ckpt_dir(char *buf, size_t n, const char *out_dir, int64_t step, const char *part)
{
    ckpt_path(buf, n, out_dir, step, part);
}
