/* test_config_defaults.c: the defaults users expect (seed documents), the table's own sanity,
 * and the values derived from several keys. */
#include <string.h>

#include "pw_config.h"
#include "pw_test.h"

static void check_table(void)
{
    size_t n;
    const PwCfgKey *keys = pw_config_keys(&n);
    CHECK(n >= 50, "only %zu keys", n);
    for (size_t i = 0; i < n; i++) {
        CHECK(pw_config_find_key(keys[i].name) == &keys[i], "%s not found", keys[i].name);
        CHECK(keys[i].doc && keys[i].doc[0], "%s has no doc", keys[i].name);
        CHECK(keys[i].source && keys[i].source[0], "%s has no source", keys[i].name);
        for (size_t j = 0; j < i; j++)
            CHECK(keys[i].offset != keys[j].offset, "%s and %s share a field", keys[i].name,
                  keys[j].name);
    }
    CHECK(pw_config_find_key("ppo") == NULL, "a section is not a key");
    CHECK(pw_config_find_key("ppo.nope") == NULL, "unknown key found");
}

/* The algorithm's enums have one list of names, the algo layer's: the configuration reads the
 * very same arrays, so a name added to an enum cannot be missing from the keys. */
static void check_enum_owner(void)
{
    const struct {
        const char *key;
        const char *const *names;
    } owned[] = {
        {"ppo.kl_estimator", pw_kl_estimator_names},
        {"reward.objective", pw_reward_objective_names},
        {"optim.decay", pw_lr_decay_names},
    };
    for (size_t i = 0; i < PW_ARRAY_LEN(owned); i++) {
        const PwCfgKey *k = pw_config_find_key(owned[i].key);
        CHECK(k && k->type == PW_CFG_ENUM && k->enum_names == owned[i].names,
              "%s does not use the algo layer's names", owned[i].key);
    }
    for (int v = 0; pw_kl_estimator_names[v]; v++)
        CHECK(!strcmp(pw_config_enum_name("ppo.kl_estimator", v), pw_kl_estimator_name(v)),
              "kl estimator %d", v);
    for (int v = 0; pw_reward_objective_names[v]; v++)
        CHECK(!strcmp(pw_config_enum_name("reward.objective", v), pw_reward_objective_name(v)),
              "objective %d", v);
    for (int v = 0; pw_lr_decay_names[v]; v++)
        CHECK(!strcmp(pw_config_enum_name("optim.decay", v), pw_lr_decay_name(v)), "decay %d", v);
}

static void check_defaults(void)
{
    PwConfig c;
    CHECK(pw_config_defaults(&c) == 0, "defaults failed");
    CHECK(c.seed == 1, "seed %lld", (long long)c.seed);
    CHECK(c.async.max_staleness == 0, "async.max_staleness");
    CHECK(c.ppo.off_policy == PW_OFFPOL_NONE && c.ppo.tis_cap == 2.0, "off_policy");
    CHECK(c.episodes == 100000, "episodes");
    CHECK(!strcmp(c.model.sft, "") && c.model.reward.n == 0 && !strcmp(c.model.critic, "") &&
              !strcmp(c.model.gold, ""), "model paths are empty by default");
    CHECK(!strcmp(c.data.prompts, "") && !strcmp(c.data.eval_prompts, ""), "data paths");
    CHECK(c.data.max_prompt_len == 256, "max_prompt_len");
    CHECK(c.ppo.initial_policy_kl_penalty == 0.05, "kl penalty %g", c.ppo.initial_policy_kl_penalty);
    CHECK(c.ppo.use_absolute_kl == false, "use_absolute_kl");
    CHECK(c.ppo.kl_estimator == PW_KL_K1, "kl_estimator");
    CHECK(c.ppo.adaptive_kl == false && c.ppo.target_kl == 6.0 && c.ppo.kl_horizon == 10000,
          "adaptive kl");
    CHECK(c.ppo.discount_factor == 1.0, "gamma");
    CHECK(c.ppo.gae_lambda == 0.95, "lambda");
    CHECK(c.ppo.normalize_advantages == true, "normalize_advantages");
    CHECK(c.ppo.entropy_bonus == 0.0, "entropy_bonus");
    CHECK(c.ppo.ratio_eps == 0.2, "ratio_eps");
    CHECK(c.ppo.num_rollout_samples == 512 && c.ppo.rollout_micro_batch_size == 8 &&
              c.ppo.micro_batch_size == 0, "rollout");
    CHECK(c.ppo.epochs == 1 && c.ppo.minibatches == 8, "epochs/minibatches");
    CHECK(c.critic.loss_clip_val == 0.2 && c.critic.lr == 9e-6 && c.critic.min_lr == 9e-7,
          "critic");
    CHECK(c.generation.max_new_tokens == 53, "max_new_tokens");
    CHECK(c.generation.temperature == 1.0 && c.generation.top_k == 0 && c.generation.top_p == 1.0,
          "sampling");
    CHECK(c.generation.stop_token == PW_STOP_EOS, "stop_token");
    CHECK(c.reward.objective == PW_OBJECTIVE_MEAN && c.reward.uwo_weight == 0.1, "objective");
    CHECK(c.reward.non_stop_penalty == true && c.reward.penalty_reward_value == -10.0, "penalty");
    CHECK(c.reward.clip == 0.0 && c.reward.normalize == false, "reward clip, normalize");
    CHECK(c.optim.lr == 9e-7 && c.optim.warmup_steps == 10 && c.optim.decay == PW_LR_COSINE &&
              c.optim.min_lr == 9e-8, "schedule");
    CHECK(c.optim.weight_decay == 0.1 && c.optim.beta1 == 0.9 && c.optim.beta2 == 0.98 &&
              c.optim.eps == 1e-8 && c.optim.grad_clip == 1.0, "adamw");
    CHECK(c.checkpoint.every == 10 && c.checkpoint.keep == 1, "checkpoint");
    CHECK(c.eval.every == 10 && c.eval.num_prompts == 512, "eval");
    CHECK(c.runtime.heartbeat_s == 10.0, "heartbeat");
    CHECK(c.runtime.timeout_s == 600.0, "timeout");
    CHECK(c.runtime.on_nonfinite == PW_NONFINITE_STOP && c.runtime.max_skipped_steps == 10,
          "a diverged run stops by default");

    /* Defaults alone are not a run: the model and data paths must be given. */
    PwErr err;
    CHECK(pw_config_validate(&c, &err) == -1, "defaults validated without paths");
    CHECK(!strcmp(err.msg, "model.sft: required but not given (SFT checkpoint folder: initial actor, "
                           "frozen reference and generator weights)"),
          "got: %s", err.msg);
    pw_config_free(&c);
    pw_config_free(&c); /* freeing twice is harmless */
}

static void check_derived(void)
{
    PwConfig c;
    PwErr err;
    pw_config_defaults(&c);
    CHECK(pw_config_num_steps(&c) == 100000 / 512, "steps %lld", (long long)pw_config_num_steps(&c));
    CHECK(!strcmp(pw_config_critic_init(&c), ""), "critic init without models");
    CHECK(pw_config_apply_override(&c, "model.reward=[rm1, rm2]", &err) == 0, "%s", err.msg);
    CHECK(!strcmp(pw_config_critic_init(&c), "rm1"), "critic init = first RM");
    CHECK(pw_config_apply_override(&c, "model.critic=crit", &err) == 0, "%s", err.msg);
    CHECK(!strcmp(pw_config_critic_init(&c), "crit"), "critic init = model.critic");

    CHECK(pw_config_kl_estimator(&c) == PW_KL_K1, "k1");
    c.ppo.use_absolute_kl = true;
    CHECK(pw_config_kl_estimator(&c) == PW_KL_ABS, "use_absolute_kl turns k1 into abs");
    c.ppo.use_absolute_kl = false;
    c.ppo.kl_estimator = PW_KL_K3;
    CHECK(pw_config_kl_estimator(&c) == PW_KL_K3, "k3");

    CHECK(!strcmp(pw_config_enum_name("reward.objective", PW_OBJECTIVE_UWO), "uwo"), "enum name");
    CHECK(pw_config_enum_name("reward.objective", 7) == NULL, "enum out of range");
    CHECK(pw_config_enum_name("seed", 0) == NULL, "not an enum");
    pw_config_free(&c);
}

int main(void)
{
    check_table();
    check_enum_owner();
    check_defaults();
    check_derived();
    return pw_test_done("config_defaults");
}
