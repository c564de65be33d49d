/* run.c: pw_ppo_run: check every input on every rank before anything trains, build the world
 * from the placement, load the models of the roles this rank holds, then run the steps. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "devices_file.h"
#include "pw_algo.h"
#include "pw_file.h"
#include "pw_generate.h"
#include "pw_memcheck.h"
#include "pw_placement.h"
#include "pw_safetensors.h"
#include "pw_roles.h"
#include "pw_tb.h"
#include "pw_trace.h"
#include "roles.h"
#include "shard.h"

#define PW_GPT2_PERIOD 13 /* '.' in the GPT-2 byte-level vocabulary */

/* "verifier:count:K" -> K, -2 for a malformed one or another "verifier:" name, else -1 (the
 * task verifiers are checked before, anything else is a checkpoint folder). */
static int verifier_token(const char *name)
{
    const char *pre = "verifier:count:";
    if (strncmp(name, pre, strlen(pre)) != 0) return strncmp(name, "verifier:", 9) ? -1 : -2;
    char *end;
    long k = strtol(name + strlen(pre), &end, 10);
    return (*end || k < 0) ? -2 : (int)k;
}

/* "verifier:task" -> PW_VERIFIER_GOLD, "verifier:exact" -> PW_VERIFIER_EXACT, else 0. */
static int task_verifier_kind(const char *name)
{
    return !strcmp(name, PW_TASK_VERIFIER) ? PW_VERIFIER_GOLD
         : !strcmp(name, PW_EXACT_VERIFIER) ? PW_VERIFIER_EXACT
                                            : 0;
}

/* The task verifiers read byte-tokenizer rows: prompt bytes + SEP, response bytes + EOS. */
static int need_bytes(const PwRun *r, const char *key, PwErr *err)
{
    if (r->tok != pw_tokenizer_bytes())
        return pw_errf(err, "%s: %s and %s score byte-tokenizer rows: set data.tokenizer: bytes",
                       key, PW_TASK_VERIFIER, PW_EXACT_VERIFIER);
    return 0;
}

/* data.tokenizer: its stop and pad ids replace the GPT-2 defaults (last id, 13, 0). */
static int use_tokenizer(PwRun *r, PwErr *err)
{
    const PwSettings *s = &r->s;
    r->stop_id = s->stop_kind == 0 ? r->V - 1 : s->stop_kind == 1 ? PW_GPT2_PERIOD : -1;
    r->pad_id = 0;
    if (!s->tokenizer || !*s->tokenizer) return 0;
    PwErr e;
    if (!(r->tok = pw_tokenizer_get(s->tokenizer, &e)))
        return pw_errf(err, "data.tokenizer: %s", e.msg);
    if (r->tok->vocab_size > r->V)
        return pw_errf(err, "data.tokenizer: '%s' has %d ids but model.sft's vocabulary has %d",
                       s->tokenizer, r->tok->vocab_size, r->V);
    int period = -1;
    if (s->stop_kind == 1 && r->tok->encode(r->tok, ".", 1, &period, 1, &e) != 1)
        return pw_errf(err, "generation.stop_token: period is not one token of '%s'",
                       s->tokenizer);
    if (s->stop_kind == 0 && r->tok->eos_id < 0)
        return pw_errf(err, "generation.stop_token: eos, but '%s' has no EOS token",
                       s->tokenizer);
    r->stop_id = s->stop_kind == 0 ? r->tok->eos_id : s->stop_kind == 1 ? period : -1;
    r->pad_id = r->tok->pad_id >= 0 ? r->tok->pad_id : 0;
    return 0;
}

static int load_config(PwArch *c, const char *key, const char *dir, PwErr *err)
{
    PwErr e2;
    if (pw_dir_check(dir, &e2)) return pw_errf(err, "%s: checkpoint folder %s", key, e2.msg);
    if (pw_arch_load(c, dir, &e2)) return pw_errf(err, "%s: %s", key, e2.msg);
    return 0;
}

/* The head the role reads from the folder is there: a missing one is a wrong folder, and every
 * rank says so before anything loads (the header alone is read). */
static int check_heads(const char *key, const char *dir, int heads, PwErr *err)
{
    PwErr e2;
    if (pw_model_check_heads(dir, heads, &e2)) return pw_errf(err, "%s: %s", key, e2.msg);
    return 0;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s && s[1] ? s + 1 : p;
}

/* Which reward ranks serve which member: the placement's `models:` list when it names members
 * (matched to model.reward by name, folder name, or else position), every reward rank else. */
static int map_members(PwRun *r, const PwPlacement *pl, PwErr *err)
{
    const PwRoleMap *map = &pl->map;
    int nrew = map->role[PW_ROLE_REWARD].nranks;
    for (int k = 0; k < r->K; k++) r->member[k].nranks = 0;
    if (map->n_reward_models == 0) {
        for (int k = 0; k < r->K; k++) {
            if (nrew > 64) return pw_errf(err, "reward: at most 64 ranks per member");
            r->member[k].nranks = nrew;
            for (int i = 0; i < nrew; i++) r->member[k].idx[i] = i;
        }
        return 0;
    }
    int by_name = 1;
    int match[64];
    if (map->n_reward_models > 64) return pw_errf(err, "%s: too many reward models", pl->path);
    for (int p = 0; p < map->n_reward_models; p++) {
        match[p] = -1;
        for (int k = 0; k < r->K && match[p] < 0; k++)
            if (!strcmp(map->reward_models[p].name, r->s.reward[k]) ||
                !strcmp(map->reward_models[p].name, base_name(r->s.reward[k])))
                match[p] = k;
        if (match[p] < 0) by_name = 0;
    }
    if (!by_name) {
        if (map->n_reward_models != r->K)
            return pw_errf(err, "%s: the placement names %d reward models and model.reward has %d; "
                           "name them alike or give as many", pl->path, map->n_reward_models, r->K);
        for (int p = 0; p < r->K; p++) match[p] = p;
    }
    for (int p = 0; p < map->n_reward_models; p++) {
        PwMember *m = &r->member[match[p]];
        const PwRewardModel *pm = &map->reward_models[p];
        for (int i = 0; i < pm->nranks && m->nranks < 64; i++)
            m->idx[m->nranks++] = pw_role_index(map, PW_ROLE_REWARD, pm->ranks[i]);
    }
    for (int k = 0; k < r->K; k++)
        if (r->member[k].nranks == 0)
            return pw_errf(err, "%s: no reward rank serves model.reward member '%s'", pl->path,
                           r->s.reward[k]);
    return 0;
}

/* Everything that can be wrong with the input, decided from files every rank can read, so that
 * every rank reaches the same verdict without talking to the others. */
static int check_inputs(PwRun *r, const PwPlacement *pl, PwErr *err)
{
    const PwSettings *s = &r->s;
    const PwRoleMap *map = &pl->map;
    if (s->trace_path && *s->trace_path && pw_trace_check_path("trace.path", s->trace_path, err))
        return -1;
    static const PwRole needed[] = {PW_ROLE_ACTOR, PW_ROLE_REWARD};
    for (size_t i = 0; i < PW_ARRAY_LEN(needed); i++)
        if (!pw_role_present(map, needed[i]))
            return pw_errf(err, "%s: a PPO run needs the %s role", pl->path,
                           pw_role_name(needed[i]));
    /* A critic in a grpo/rloo placement is refused rather than ignored: its ranks would hold a
     * model and cores and never be used, which a warning in a long log would hide. */
    int critic = pw_role_present(map, PW_ROLE_CRITIC);
    PwAlgorithm alg = (PwAlgorithm)s->algorithm;
    if (pw_algorithm_needs_critic(alg) && !critic)
        return pw_errf(err, "%s: algorithm: %s needs a critic role, and the placement has none "
                       "(algorithm: grpo or rloo trains without one)", pl->path,
                       pw_algorithm_name(alg));
    if (!pw_algorithm_needs_critic(alg) && critic)
        return pw_errf(err, "%s: algorithm: %s uses no critic, but the placement has a critic "
                       "role; remove it (its ranks would hold a model and never be used)",
                       pl->path, pw_algorithm_name(alg));
    if (!pw_role_present(map, PW_ROLE_REFERENCE) && (s->beta != 0.0 || s->adaptive_kl))
        return pw_errf(err, "%s: without a reference role the KL penalty must be 0 "
                       "(ppo.initial_policy_kl_penalty = %g, ppo.adaptive_kl = %d)", pl->path,
                       s->beta, s->adaptive_kl);

    if (!pw_role_present(map, PW_ROLE_REFERENCE) && s->kl_in_loss && s->kl_loss_coef != 0.0)
        return pw_errf(err, "%s: without a reference role the KL loss must be 0 "
                       "(ppo.kl_penalty_in = loss, ppo.kl_loss_coef = %g)", pl->path,
                       s->kl_loss_coef);

    PwArch sft, c;
    if (load_config(&sft, "model.sft", s->sft, err)) return -1;
    r->V = sft.vocab_size;
    int ctx = sft.n_positions;
    if (use_tokenizer(r, err)) return -1;
    char key[64];
    for (int k = 0; k < s->n_reward; k++) {
        snprintf(key, sizeof key, "model.reward[%d]", k);
        r->member[k].name = s->reward[k];
        int task = task_verifier_kind(s->reward[k]);
        if (task) {
            r->member[k].task = task;
            r->member[k].verifier_token = -1;
            if (need_bytes(r, key, err)) return -1;
            continue;
        }
        int vt = verifier_token(s->reward[k]);
        r->member[k].verifier_token = vt;
        if (vt == -2)
            return pw_errf(err, "%s: '%s': a verifier is written verifier:count:K, %s or %s", key,
                           s->reward[k], PW_TASK_VERIFIER, PW_EXACT_VERIFIER);
        if (vt >= 0) {
            if (vt >= r->V)
                return pw_errf(err, "%s: token %d is outside the vocabulary (%d)", key, vt, r->V);
            continue;
        }
        if (load_config(&c, key, s->reward[k], err) || check_heads(key, s->reward[k],
                                                                  PW_HEAD_SCORE, err))
            return -1;
        if (c.vocab_size != r->V)
            return pw_errf(err, "%s: vocab_size %d of '%s' differs from %d of model.sft '%s'", key,
                           c.vocab_size, s->reward[k], r->V, s->sft);
        if (c.n_positions < ctx) ctx = c.n_positions;
    }
    r->K = s->n_reward;
    if (s->critic && *s->critic) {
        if (load_config(&c, "model.critic", s->critic, err) ||
            check_heads("model.critic", s->critic, PW_HEAD_VALUE, err))
            return -1;
        if (c.vocab_size != r->V)
            return pw_errf(err, "model.critic: vocab_size %d of '%s' differs from %d of model.sft "
                           "'%s'", c.vocab_size, s->critic, r->V, s->sft);
        if (c.n_positions < ctx) ctx = c.n_positions;
    }
    r->R = s->max_new_tokens;
    if (ctx - r->R < 1)
        return pw_errf(err, "generation.max_new_tokens (%d) leaves no room for a prompt in the "
                       "models' context of %d positions", r->R, ctx);
    if (r->stop_id >= r->V)
        return pw_errf(err, "generation.stop_token: token %d is outside the vocabulary (%d)",
                       r->stop_id, r->V);
    if (pw_prompts_load(&r->data, "data.prompts", s->prompts, r->tok, s->prompt_template, r->V,
                        s->max_prompt_len, ctx - r->R, err))
        return -1;
    r->maxT = r->data.ds.max_total + r->R;
    if (s->eval_every > 0) { /* the evaluation prompts: their own file, or the training file */
        if (s->eval_prompts && *s->eval_prompts) {
            if (pw_prompts_load(&r->eval_data, "data.eval_prompts", s->eval_prompts, r->tok,
                                s->prompt_template, r->V, s->max_prompt_len, ctx - r->R, err))
                return -1;
            if (r->eval_data.ds.max_total + r->R > r->maxT) r->maxT = r->eval_data.ds.max_total + r->R;
        }
        int avail = r->eval_data.ds.n ? r->eval_data.ds.n : r->data.ds.n;
        r->eval_n = (int)(s->eval_num < avail ? s->eval_num : avail);
    }
    r->gold_token = -1;
    if (s->gold && task_verifier_kind(s->gold)) { /* a verifier as the gold score */
        r->gold_task = task_verifier_kind(s->gold);
        if (need_bytes(r, "model.gold", err)) return -1;
    } else if (s->gold && (r->gold_token = verifier_token(s->gold)) >= 0) {
        if (r->gold_token >= r->V)
            return pw_errf(err, "model.gold: token %d is outside the vocabulary (%d)",
                           r->gold_token, r->V);
    } else if (r->gold_token == -2) {
        return pw_errf(err, "model.gold: '%s': a verifier is written verifier:count:K, %s or %s",
                       s->gold, PW_TASK_VERIFIER, PW_EXACT_VERIFIER);
    } else if (s->gold && *s->gold) {
        if (load_config(&c, "model.gold", s->gold, err) ||
            check_heads("model.gold", s->gold, PW_HEAD_SCORE, err))
            return -1;
        if (c.vocab_size != r->V)
            return pw_errf(err, "model.gold: vocab_size %d of '%s' differs from %d of model.sft "
                           "'%s'", c.vocab_size, s->gold, r->V, s->sft);
        if (c.n_positions < r->maxT)
            return pw_errf(err, "model.gold: '%s' has %d positions, the run needs %d", s->gold,
                           c.n_positions, r->maxT);
    }
    PwLrSchedule sc = {(PwLrDecay)s->decay, s->lr, s->min_lr, (long)s->warmup,
                       (long)(s->steps * s->epochs * s->minibatches)};
    if (pw_lr_schedule_check(&sc, err)) return -1;
    if (s->N % s->minibatches)
        return pw_errf(err, "ppo.minibatches (%d) must divide ppo.num_rollout_samples (%d)",
                       s->minibatches, s->N);
    return map_members(r, pl, err);
}

PwModelOpts pw_run_model_opts(const PwRun *r, PwRole role, PwDevice dev, int heads)
{
    const PwSettings *s = &r->s;
    /* the actor and the critic train; the others score (reference, reward, gold) or decode;
     * the scoring models' weights never change after they load (frozen), while the generator
     * follows the actor, taking its weights after each update; at bf16 both keep the layers'
     * matrices in bfloat16 only */
    int trains = role == PW_ROLE_ACTOR || role == PW_ROLE_CRITIC;
    int follows = role == PW_ROLE_GENERATOR;
    int frozen = !trains && !follows;
    /* A scoring model's LM head (the reference's) makes its logits a tile of rows at a time
     * (PW_LM_TILE): with no backward to make them again for, chunks cost it nothing, and its
     * whole (rows, V) logits were most of what it held. Where the trained models' chunk is not
     * a multiple of the tile, the same chunk: the rows then meet the same products, and the
     * reference's log-probs are the actor's bit for bit before the first update. */
    int chunk = s->lm_chunk;
    if (frozen && chunk % PW_LM_TILE == 0) chunk = PW_LM_TILE;
    return (PwModelOpts){.heads = heads, .maxB = s->micro < s->N ? s->micro : s->N,
                         .maxT = r->maxT, .device = dev, .precision = s->precision,
                         .kv_dtype = s->kv_dtype, .lm_chunk = chunk,
                         .acts = !trains       ? PW_ACTS_NONE
                                 : s->recompute ? PW_ACTS_RECOMPUTE
                                                : PW_ACTS_KEEP,
                         .frozen = frozen, .follows = follows};
}

/* A model of `role` on the device the placement gives the role (the rank's GPU for cuda);
 * fresh: the heads it may start from scratch where the folder lacks them. */
static PwModel *load_or_die(PwRun *r, PwRole role, const char *what, const char *dir, int heads,
                            int critic_from_rm, int fresh)
{
    PwErr err;
    PwModelOpts o = pw_run_model_opts(r, role, r->w.map.role[role].device, heads);
    o.device_id = r->gpu < 0 ? 0 : r->gpu;
    o.seed = r->s.seed;
    o.value_from_score = critic_from_rm;
    o.fresh_heads = fresh;
    PwModel *m = pw_model_load(dir, &o, &err);
    if (!m) pw_comm_fatal(__FILE__, __LINE__, "%s: loading '%s': %s", what, dir, err.msg);
    pw_model_profile_label(m, pw_role_name(role)); /* PW_PROFILE_OPS: a role's own lines */
    return m;
}

static void load_models(PwRun *r, const char *out_dir)
{
    PwWorld *w = &r->w;
    const PwSettings *s = &r->s;
    char actor[1300], critic[1300], gen[1300];
    const char *actor_dir = s->sft, *gen_dir = s->sft;
    if (r->first_step > 0) { /* --resume: the trained models come from the checkpoint */
        pw_ckpt_dir(actor, sizeof actor, out_dir, r->first_step, "actor");
        pw_ckpt_dir(critic, sizeof critic, out_dir, r->first_step, "critic");
        /* the generator starts from the actor's weights too: its queue holds what it sampled
         * with older ones (pw_ckpt_load_queue) */
        pw_ckpt_dir(gen, sizeof gen, out_dir, r->first_step, "actor");
        actor_dir = actor;
        gen_dir = gen;
    }
    if (pw_world_has_role(w, PW_ROLE_ACTOR)) {
        r->actor = load_or_die(r, PW_ROLE_ACTOR, "actor", actor_dir, PW_HEAD_LM, 0, 0);
        r->shard[PW_ROLE_ACTOR] = pw_shard_begin(w, PW_ROLE_ACTOR, r->actor, s->zero_stage,
                                                 "the actor");
        if (r->first_step > 0) pw_ckpt_load_optimizer(r->actor, actor_dir);
    }
    if (pw_world_has_role(w, PW_ROLE_REFERENCE))
        r->ref = load_or_die(r, PW_ROLE_REFERENCE, "reference", s->sft, PW_HEAD_LM, 0, 0);
    if (pw_world_has_role(w, PW_ROLE_GENERATOR))
        r->gen = load_or_die(r, PW_ROLE_GENERATOR, "generator", gen_dir, PW_HEAD_LM, 0, 0);
    if (pw_world_has_role(w, PW_ROLE_CRITIC)) {
        if (r->first_step > 0) {
            r->critic = load_or_die(r, PW_ROLE_CRITIC, "critic", critic, PW_HEAD_VALUE, 0, 0);
        } else if (s->critic && *s->critic) {
            r->critic = load_or_die(r, PW_ROLE_CRITIC, "critic", s->critic, PW_HEAD_VALUE, 0, 0);
        } else if (!pw_member_is_verifier(&r->member[0])) {
            r->critic = load_or_die(r, PW_ROLE_CRITIC, "critic", s->reward[0], PW_HEAD_VALUE, 1,
                                    0);
        } else { /* a verifier has no trunk: the SFT trunk with a fresh value head */
            r->critic = load_or_die(r, PW_ROLE_CRITIC, "critic", s->sft, PW_HEAD_VALUE, 0,
                                    PW_HEAD_VALUE);
        }
        r->shard[PW_ROLE_CRITIC] = pw_shard_begin(w, PW_ROLE_CRITIC, r->critic, s->zero_stage,
                                                  "the critic");
        if (r->first_step > 0) pw_ckpt_load_optimizer(r->critic, critic);
    }
    int me = w->role_rank[PW_ROLE_REWARD];
    if (me == 0 && s->eval_every > 0 && s->gold && *s->gold && !r->gold_task && r->gold_token < 0)
        r->gold = load_or_die(r, PW_ROLE_REWARD, "gold reward", s->gold, PW_HEAD_SCORE, 0, 0);
    for (int k = 0; k < r->K; k++) {
        PwMember *m = &r->member[k];
        m->me = -1;
        for (int i = 0; i < m->nranks && me >= 0; i++)
            if (m->idx[i] == me) m->me = i;
        if (m->me >= 0 && !pw_member_is_verifier(m))
            m->model = load_or_die(r, PW_ROLE_REWARD, "reward", m->name, PW_HEAD_SCORE, 0, 0);
    }
}

/* --resume: the newest complete checkpoint, the configuration it was made with, its state. */
static int find_resume(PwRun *r, const struct PwConfig *cfg, const char *out_dir, PwErr *err)
{
    int64_t step = pw_ckpt_latest(out_dir);
    if (step < 0)
        return pw_errf(err, "--resume: no complete checkpoint in '%s/checkpoints'", out_dir);
    char path[1200];
    snprintf(path, sizeof path, "%s/config.yaml", out_dir);
    if (pw_settings_check_saved(cfg, path, err)) return -1;
    r->first_step = step;
    return pw_ckpt_load_state(r, out_dir, step, err);
}

/* Prompts over data.max_prompt_len are skipped, as open-instruct does; a run that silently
 * trains on fewer prompts than its file holds (a 5-million-id prompt, a wrong limit) would hide
 * it, so rank 0 says how many at start-up. */
static void warn_skipped(const PwPrompts *d, int max_len)
{
    if (d->ds.dropped > 0)
        fprintf(stderr, "ppo_world: warning: %d prompts of %s are longer than data.max_prompt_len "
                "(%d tokens) and were skipped\n", d->ds.dropped, d->ds.path, max_len);
}

/* Keeps the first `lines` lines of the metrics file (the steps the checkpoint covers), then
 * opens it for appending (pw_file_append: whatever stood at the name, a FIFO included, is
 * replaced by a file before it is opened). */
static FILE *open_metrics(const char *path, int64_t lines, PwErr *err)
{
    FILE *f = NULL;
    struct stat st;
    if (lines > 0 && (lstat(path, &st) == 0 || errno != ENOENT) &&
        !(f = pw_file_fopen(path, PW_FILE_MAX_JSONL, err)))
        return NULL;
    char *buf = NULL, *line = NULL;
    size_t len = 0, cap = 0;
    FILE *mem = open_memstream(&buf, &len);
    for (int64_t i = 0; f && mem && i < lines && getline(&line, &cap, f) >= 0; i++)
        fputs(line, mem);
    if (mem) fclose(mem);
    if (f) fclose(f);
    free(line);
    if (!buf) {
        pw_errf(err, "%s: out of memory", path);
        return NULL;
    }
    f = pw_file_append(path, buf, len, err);
    free(buf);
    return f;
}

/* RUN_DIR/tensorboard: a new event file; a resumed run's first event hides what the earlier
 * files hold after its checkpoint, as metrics.jsonl keeps only the lines before it. */
static void open_tb(PwRun *r, const char *out_dir)
{
    PwErr err;
    char path[1200];
    snprintf(path, sizeof path, "%s/tensorboard", out_dir);
    double now = pw_tb_now();
    if (!(r->tb = pw_tb_open(path, now, &err)) ||
        (r->first_step > 0 && pw_tb_restart(r->tb, r->first_step + 1, now, &err)))
        pw_comm_fatal(__FILE__, __LINE__, "log.tensorboard: %s", err.msg);
}

static void free_run(PwRun *r)
{
    pw_gen_free(r->sampler);
    pw_xfer_free(&r->carry);
    for (int i = 0; i < r->queue_n; i++) { /* a run stopped early: batches never trained on */
        pw_rows_free(&r->queue[i].rows);
        free(r->queue[i].logp);
    }
    r->queue_n = 0;
    pw_model_free(r->actor);
    pw_model_free(r->ref);
    pw_model_free(r->gen);
    pw_model_free(r->critic);
    for (int i = 0; i < PW_ROLE_COUNT; i++) {
        free(r->shard[i]);
        r->shard[i] = NULL;
    }
    for (int k = 0; k < r->K; k++) pw_model_free(r->member[k].model);
    pw_model_free(r->gold);
    pw_prompts_free(&r->data);
    pw_prompts_free(&r->eval_data);
    if (r->metrics) fclose(r->metrics);
    if (r->eval_file) fclose(r->eval_file);
    pw_tb_close(r->tb);
}

PwRun *pw_run_prepare(const struct PwConfig *cfg, const struct PwPlacement *pl, PwErr *err)
{
    PwRun *r = pw_roles_alloc(sizeof *r);
    if (!pw_settings_from_config(&r->s, cfg, err) && !check_inputs(r, pl, err)) return r;
    pw_run_free(r);
    return NULL;
}

void pw_run_free(PwRun *r)
{
    if (!r) return;
    free_run(r);
    free(r);
}

/* Before anything loads: this rank's memory plan against what its memory has free, with the
 * ranks that share it (pw_world_check_memory); every rank gets the same verdict. */
static int check_memory(PwRun *r, const struct PwPlacement *pl, PwErr *err)
{
    size_t need = 0;
    int failed = pw_ppo_rank_memory(r, pl, r->w.rank, &need, err);
    if (pw_comm_agree(r->w.comm, failed, err)) return -1;
    return pw_world_check_memory(&r->w, pw_placement_rank_device(pl, r->w.rank), r->gpu, need,
                                 "`ppo_world --dry-run --config ...` prints the plan by role; "
                                 "smaller micro batches (ppo.micro_batch_size, "
                                 "ppo.rollout_micro_batch_size) or roles on other nodes make "
                                 "room (runtime.check_memory: false loads anyway)", err);
}

int pw_ppo_run(const struct PwConfig *cfg, const struct PwPlacement *pl, MPI_Comm comm, int gpu,
               const char *out_dir, int resume, PwErr *err)
{
    PwRun *r = pw_run_prepare(cfg, pl, err);
    if (!r) return -1;
    r->gpu = gpu;
    int rc = pw_ckpt_prepare(out_dir, err);
    if (!rc && resume) rc = find_resume(r, cfg, out_dir, err);
    if (!rc && r->s.tensorboard) {
        char path[1200];
        snprintf(path, sizeof path, "%s/tensorboard", out_dir);
        PwErr e;
        if (pw_tb_check_folder(path, &e)) rc = pw_errf(err, "log.tensorboard: %s", e.msg);
    }
    double timeout = r->s.timeout_s > 0 ? r->s.timeout_s : 1e9; /* 0: never */
    if (rc || pw_world_init(&r->w, comm, &pl->map, timeout, err)) {
        pw_run_free(r);
        return -1;
    }
    if (r->s.check_memory && check_memory(r, pl, err)) {
        pw_world_free(&r->w);
        pw_run_free(r);
        return -1;
    }
    if (pw_heartbeat_start(&r->w, r->s.heartbeat_s, err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err->msg);
    if (r->w.rank == 0) { /* every rank read the same files: once for the job */
        warn_skipped(&r->data, r->s.max_prompt_len);
        warn_skipped(&r->eval_data, r->s.max_prompt_len);
    }
    r->producer = pw_role_present(&pl->map, PW_ROLE_GENERATOR) ? PW_ROLE_GENERATOR : PW_ROLE_ACTOR;
    if (!resume) r->beta = r->s.beta;
    /* Without a generator the actor samples between its own updates: nothing to overlap. */
    r->k = r->producer == PW_ROLE_GENERATOR ? r->s.staleness : 0;
    r->async = r->k > 0;
    load_models(r, out_dir);
    r->weights.comm = MPI_COMM_NULL;
    if (r->producer == PW_ROLE_GENERATOR) { /* collective: every rank, whatever its roles */
        if (pw_fanout_init(&r->w, PW_ROLE_ACTOR, 0, PW_ROLE_GENERATOR, &r->weights, err))
            pw_comm_fatal(__FILE__, __LINE__, "%s", err->msg);
        /* A generator on actor rank 0's own rank takes the weights straight into its buffer:
         * it samples only after the receive that follows each send (ppo_step.c). */
        if (r->gen && pw_world_has_role(&r->w, PW_ROLE_ACTOR) &&
            r->w.role_rank[PW_ROLE_ACTOR] == 0) {
            PwTensor p = pw_model_weights_in(r->gen);
            pw_fanout_bind(&r->weights, &p);
        }
    }
    if (pw_world_has_role(&r->w, PW_ROLE_ACTOR) && r->w.role_rank[PW_ROLE_ACTOR] == 0) {
        char path[1200];
        snprintf(path, sizeof path, "%s/config.yaml", out_dir);
        if (!resume && pw_settings_save_config(cfg, path, err))
            pw_comm_fatal(__FILE__, __LINE__, "%s", err->msg);
        pw_devices_file_write(out_dir, resume ? r->first_step : -1);
        snprintf(path, sizeof path, "%s/metrics.jsonl", out_dir);
        if (!(r->metrics = open_metrics(path, r->first_step, err)))
            pw_comm_fatal(__FILE__, __LINE__, "%s", err->msg);
        if (r->s.eval_every > 0) { /* the initial evaluation and one per eval.every steps
                                    * before the resumed step; a fresh run starts empty */
            snprintf(path, sizeof path, "%s/eval.jsonl", out_dir);
            int64_t keep = r->first_step ? r->first_step / r->s.eval_every + 1 : 0;
            if (!(r->eval_file = open_metrics(path, keep, err)))
                pw_comm_fatal(__FILE__, __LINE__, "%s", err->msg);
        }
        if (r->s.tensorboard) open_tb(r, out_dir);
    }
    /* The policy before any update (the SFT weights), once: a resumed run already has it. */
    if (r->s.eval_every > 0 && r->first_step == 0) pw_eval_run(r, -1);
    r->gen_version = r->first_step;
    if (r->async && r->first_step > 0 && pw_world_has_role(&r->w, PW_ROLE_GENERATOR) &&
        pw_ckpt_load_queue(r, out_dir, err))
        pw_comm_fatal(__FILE__, __LINE__, "%s", err->msg);
    if (r->s.trace_path && *r->s.trace_path) { /* no further than the run: a checkpoint's
                                                 * messages carry the step count after it */
        int64_t left = r->s.steps - r->first_step;
        pw_trace_open(&r->w, r->s.trace_path, r->first_step,
                      r->s.trace_steps < left ? r->s.trace_steps : left);
    }
    r->run_t0 = r->progress_last = pw_now();
    for (int64_t step = r->first_step; step < r->s.steps; step++) {
        pw_ppo_step(r, step);
        int64_t done = step + 1, every = r->s.checkpoint_every;
        if (r->s.eval_every > 0 && done % r->s.eval_every == 0) pw_eval_run(r, step);
        if ((every > 0 && done % every == 0) || done == r->s.steps) pw_ckpt_save(r, out_dir, done);
    }
    /* Rank 0 writes it; a failure there (disk full) is its error alone, after the checkpoint. */
    rc = pw_trace_close(&r->w, err);
    free_run(r);
    pw_fanout_free(&r->weights);
    pw_world_free(&r->w);
    free(r);
    return rc;
}
