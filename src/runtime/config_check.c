/* config_check.c: the rules that involve more than one key (or a key that must be given), and
 * the comparison of two configurations that a resume uses to refuse a silently changed run. */
#include <string.h>

#include "config_internal.h"

static int check_required(const PwConfig *cfg, PwErr *err)
{
    size_t n;
    const PwCfgKey *keys = pw_config_keys(&n);
    for (size_t i = 0; i < n; i++) {
        const PwCfgKey *k = &keys[i];
        if (!(k->flags & PW_CFG_REQUIRED)) continue;
        bool empty = k->type == PW_CFG_STRLIST ? PW_CFG_CFIELD(cfg, k, PwStrList)->n == 0
                                               : !**PW_CFG_CFIELD(cfg, k, char *);
        if (empty) return pw_errf(err, "%s: required but not given (%s)", k->name, k->doc);
    }
    return 0;
}

static int check_reward_list(const PwStrList *l, PwErr *err)
{
    for (int i = 0; i < l->n; i++) {
        if (!l->items[i][0]) return pw_errf(err, "model.reward: member %d is empty", i + 1);
        for (int j = 0; j < i; j++)
            if (!strcmp(l->items[i], l->items[j]))
                return pw_errf(err, "model.reward: member %d repeats member %d ('%s')", i + 1,
                               j + 1, l->items[i]);
    }
    return 0;
}

int pw_config_validate(const PwConfig *cfg, PwErr *err)
{
    /* Ranges again: a caller may have set fields directly after loading. */
    size_t n;
    const PwCfgKey *keys = pw_config_keys(&n);
    char why[512];
    for (size_t i = 0; i < n; i++)
        if (pw_cfg_check_range(cfg, &keys[i], why, sizeof why)) return pw_errf(err, "%s", why);
    if (check_required(cfg, err)) return -1;
    if (check_reward_list(&cfg->model.reward, err)) return -1;

    const PwPpoConfig *p = &cfg->ppo;
    if (p->num_rollout_samples % p->minibatches)
        return pw_errf(err, "ppo.minibatches (%lld) must divide ppo.num_rollout_samples (%lld)",
                       (long long)p->minibatches, (long long)p->num_rollout_samples);
    if (p->rollout_micro_batch_size > p->num_rollout_samples)
        return pw_errf(err,
                       "ppo.rollout_micro_batch_size (%lld) must not exceed "
                       "ppo.num_rollout_samples (%lld)",
                       (long long)p->rollout_micro_batch_size, (long long)p->num_rollout_samples);
    if (cfg->episodes < p->num_rollout_samples)
        return pw_errf(err,
                       "episodes (%lld) must be at least ppo.num_rollout_samples (%lld), "
                       "or the run has no PPO step",
                       (long long)cfg->episodes, (long long)p->num_rollout_samples);
    if (p->use_absolute_kl && p->kl_estimator != PW_KL_K1 && p->kl_estimator != PW_KL_ABS)
        return pw_errf(err,
                       "ppo.use_absolute_kl: true conflicts with ppo.kl_estimator: %s "
                       "(use_absolute_kl means kl_estimator: abs)",
                       pw_config_enum_name("ppo.kl_estimator", (int)p->kl_estimator));
    if (p->adaptive_kl && p->initial_policy_kl_penalty <= 0)
        return pw_errf(err, "ppo.adaptive_kl needs ppo.initial_policy_kl_penalty > 0: the "
                            "controller scales beta and cannot move it from 0");

    char a[40], b[40];
    if (cfg->optim.min_lr > cfg->optim.lr) {
        pw_cfg_format_double(cfg->optim.min_lr, a, sizeof a);
        pw_cfg_format_double(cfg->optim.lr, b, sizeof b);
        return pw_errf(err, "optim.min_lr (%s) must not exceed optim.lr (%s)", a, b);
    }
    if (cfg->critic.min_lr > cfg->critic.lr) {
        pw_cfg_format_double(cfg->critic.min_lr, a, sizeof a);
        pw_cfg_format_double(cfg->critic.lr, b, sizeof b);
        return pw_errf(err, "critic.min_lr (%s) must not exceed critic.lr (%s)", a, b);
    }
    if (cfg->reward.non_stop_penalty && cfg->generation.stop_token == PW_STOP_NONE)
        return pw_errf(err, "reward.non_stop_penalty: true needs a stop token, but "
                            "generation.stop_token is none (every response would be penalised)");
    return 0;
}

int pw_config_diff(const PwConfig *a, const PwConfig *b, PwErr *err)
{
    size_t n;
    const PwCfgKey *keys = pw_config_keys(&n);
    int ndiff = 0;
    char list[900] = "";
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        char va[4096], vb[4096];
        pw_cfg_format_value(a, &keys[i], va, sizeof va);
        pw_cfg_format_value(b, &keys[i], vb, sizeof vb);
        if (!strcmp(va, vb)) continue;
        if (++ndiff <= 4 && used < sizeof list) {
            int w = snprintf(list + used, sizeof list - used, "%s%s: %s -> %s", ndiff > 1 ? "; " : "",
                             keys[i].name, va, vb);
            if (w > 0) used += (size_t)w;
        }
    }
    if (ndiff && err)
        pw_errf(err, "%d key%s differ%s: %s%s", ndiff, ndiff > 1 ? "s" : "", ndiff > 1 ? "" : "s",
                list, ndiff > 4 ? "; ..." : "");
    return ndiff;
}

int pw_config_check_saved(const PwConfig *cfg, const char *saved_path, PwErr *err)
{
    PwConfig saved;
    if (pw_config_defaults(&saved)) return pw_errf(err, "%s: out of memory", saved_path);
    int rc = pw_config_load_file(&saved, saved_path, err);
    if (rc == 0) {
        PwErr d;
        if (pw_config_diff(&saved, cfg, &d)) {
            /* Changing a key under a resumed run makes its curves mean nothing: refuse. */
            rc = pw_errf(err, "%s: the run was started with another configuration: %s (saved -> now)",
                         saved_path, d.msg);
        }
    }
    pw_config_free(&saved);
    return rc;
}
