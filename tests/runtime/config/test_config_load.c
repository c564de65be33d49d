/* test_config_load.c: a file that sets every key loads to exactly those values; overrides win
 * over the file; the YAML dump reads back to the same configuration; JSON and diff agree.
 * Run from this folder (meson sets the working directory) so that full.yaml is found. */
#include <string.h>

#include <jansson.h>

#include "config_tmp.h"
#include "pw_config.h"
#include "pw_test.h"

static void check_full(const PwConfig *c)
{
    CHECK(c->seed == 42 && c->async.max_staleness == 3 && c->episodes == 2048, "top level");
    CHECK(!strcmp(c->model.sft, "models/sft.safetensors"), "sft %s", c->model.sft);
    CHECK(c->model.reward.n == 2, "reward n %d", c->model.reward.n);
    if (c->model.reward.n == 2) {
        CHECK(!strcmp(c->model.reward.items[0], "models/rm_seed1.safetensors"), "rm 1");
        CHECK(!strcmp(c->model.reward.items[1], "models/rm seed2.safetensors"), "rm 2");
    }
    CHECK(!strcmp(c->model.critic, "models/critic.safetensors"), "critic");
    CHECK(!strcmp(c->model.gold, "models/gold.safetensors"), "gold");
    CHECK(c->model.lm_head_chunk == 4096, "lm_head_chunk %lld", (long long)c->model.lm_head_chunk);
    CHECK(c->model.activation_checkpointing, "activation_checkpointing");
    CHECK(!strcmp(c->data.prompts, "data/train.jsonl"), "prompts");
    CHECK(!strcmp(c->data.eval_prompts, "data/eval.jsonl"), "eval prompts");
    CHECK(c->data.max_prompt_len == 128, "max_prompt_len");
    const PwPpoConfig *p = &c->ppo;
    CHECK(p->initial_policy_kl_penalty == 0.02 && p->use_absolute_kl && p->kl_estimator == PW_KL_ABS,
          "kl");
    CHECK(p->adaptive_kl && p->target_kl == 3.5 && p->kl_horizon == 5000, "adaptive");
    CHECK(p->discount_factor == 0.99 && p->gae_lambda == 0.9 && !p->normalize_advantages, "gae");
    CHECK(p->entropy_bonus == 0.01 && p->ratio_eps == 0.1, "loss");
    CHECK(p->num_rollout_samples == 64 && p->rollout_micro_batch_size == 16 &&
              p->micro_batch_size == 8 && p->epochs == 4 &&
              p->minibatches == 2, "batches");
    CHECK(c->critic.loss_clip_val == 0.5 && c->critic.lr == 1e-5 && c->critic.min_lr == 1e-6,
          "critic");
    CHECK(c->generation.max_new_tokens == 64 && c->generation.temperature == 0.7 &&
              c->generation.top_k == 50 && c->generation.top_p == 0.9 &&
              c->generation.stop_token == PW_STOP_PERIOD &&
              c->generation.kv_cache_dtype == PW_KV_FP32, "generation");
    CHECK(c->reward.objective == PW_OBJECTIVE_UWO && c->reward.uwo_weight == 0.5 && c->reward.normalize &&
              !c->reward.non_stop_penalty && c->reward.penalty_reward_value == -1.5 &&
              c->reward.clip == 5.0, "reward");
    CHECK(c->optim.lr == 2e-5 && c->optim.warmup_steps == 0 && c->optim.decay == PW_LR_LINEAR &&
              c->optim.min_lr == 0.0 && c->optim.weight_decay == 0.0 && c->optim.beta1 == 0.8 &&
              c->optim.beta2 == 0.999 && c->optim.eps == 1e-5 && c->optim.grad_clip == 0.5 &&
              c->optim.zero_stage == 1,
          "optim");
    CHECK(c->checkpoint.every == 20 && c->checkpoint.keep == 3, "checkpoint");
    CHECK(c->eval.every == 5 && c->eval.num_prompts == 32, "eval");
    CHECK(c->runtime.heartbeat_s == 7.5, "heartbeat");
    CHECK(c->runtime.timeout_s == 120.5 && c->runtime.on_nonfinite == PW_NONFINITE_SKIP_STEP &&
              c->runtime.max_skipped_steps == 3 && c->runtime.progress_s == 2.5 &&
              !c->runtime.check_memory &&
              c->runtime.grad_bucket_mb == 4.5, "runtime");
    CHECK(!strcmp(c->trace.path, "run.trace.json") && c->trace.steps == 7, "trace");
    CHECK(c->log.tensorboard, "log.tensorboard");
    CHECK(c->algorithm == PW_ALGO_RLOO && c->generation.samples_per_prompt == 4 &&
              c->ppo.kl_penalty_in == PW_KL_IN_LOSS && c->ppo.kl_loss_coef == 0.1 &&
              c->ppo.loss_aggregation == PW_AGG_SEQUENCE &&
              c->ppo.off_policy == PW_OFFPOL_DECOUPLED && c->ppo.tis_cap == 5.0 && !c->grpo.scale_by_std &&
              c->grpo.std_eps == 1e-3, "critic-free keys");
}

/* Every key of full.yaml differs from its default: a key the loader skipped would show here. */
static void check_every_key_moved(const PwConfig *c)
{
    PwConfig d;
    pw_config_defaults(&d);
    size_t n;
    pw_config_keys(&n);
    CHECK(pw_config_diff(&d, c, NULL) == (int)n, "full.yaml changes %d of %zu keys",
          pw_config_diff(&d, c, NULL), n);
    pw_config_free(&d);
}

static void check_overrides(void)
{
    PwConfig c;
    PwErr err;
    pw_config_defaults(&c);
    CHECK(pw_config_load_file(&c, "full.yaml", &err) == 0, "%s", err.msg);
    const char *args[] = {"ppo.epochs=2", "generation.temperature=1.5", "async.max_staleness=0",
                          "model.reward=[a.st, b.st, c.st]", "reward.objective=wco",
                          "model.gold=", "data.prompts=odd: name #1.jsonl", "optim.min_lr=1e-6"};
    for (size_t i = 0; i < PW_ARRAY_LEN(args); i++)
        CHECK(pw_config_apply_override(&c, args[i], &err) == 0, "%s: %s", args[i], err.msg);
    CHECK(c.ppo.epochs == 2, "epochs %lld", (long long)c.ppo.epochs);
    CHECK(c.generation.temperature == 1.5, "temperature");
    CHECK(c.async.max_staleness == 0, "async");
    CHECK(c.model.reward.n == 3 && !strcmp(c.model.reward.items[2], "c.st"), "reward list");
    CHECK(c.reward.objective == PW_OBJECTIVE_WCO, "objective");
    CHECK(!strcmp(c.model.gold, ""), "gold emptied");
    CHECK(!strcmp(c.data.prompts, "odd: name #1.jsonl"), "paths are verbatim: %s", c.data.prompts);
    CHECK(c.optim.min_lr == 1e-6, "min_lr");
    CHECK(c.ppo.minibatches == 2, "untouched key keeps the file's value");
    /* A single path is a one-member list. */
    CHECK(pw_config_apply_override(&c, "model.reward=only.st", &err) == 0, "%s", err.msg);
    CHECK(c.model.reward.n == 1 && !strcmp(c.model.reward.items[0], "only.st"), "one member");
    CHECK(pw_config_validate(&c, &err) == 0, "%s", err.msg);
    pw_config_free(&c);
}

static void check_dumps(const PwConfig *c)
{
    /* YAML written out reads back to the same configuration. */
    PwErr err;
    const char *path = config_tmp_path("saved.yaml");
    CHECK(pw_config_save_yaml(c, path, &err) == 0, "%s", err.msg);
    PwConfig back;
    pw_config_defaults(&back);
    CHECK(pw_config_load_file(&back, path, &err) == 0, "%s", err.msg);
    CHECK(pw_config_diff(c, &back, &err) == 0, "round trip: %s", err.msg);
    remove(path);

    /* A change is named by the diff. */
    back.ppo.epochs = 7;
    CHECK(pw_config_diff(c, &back, &err) == 1, "one key differs");
    CHECK(!strcmp(err.msg, "1 key differs: ppo.epochs: 4 -> 7"), "got: %s", err.msg);
    back.seed = 3;
    CHECK(pw_config_diff(c, &back, &err) == 2, "two keys differ");
    CHECK(!strcmp(err.msg, "2 keys differ: seed: 42 -> 3; ppo.epochs: 4 -> 7"), "got: %s", err.msg);
    pw_config_free(&back);

    json_t *j = pw_config_to_json(c);
    CHECK(j != NULL, "json");
    if (j) {
        CHECK(json_integer_value(json_object_get(j, "seed")) == 42, "json seed");
        CHECK(json_integer_value(json_object_get(json_object_get(j, "async"), "max_staleness")) == 3,
              "json async");
        json_t *ppo = json_object_get(j, "ppo");
        CHECK(json_real_value(json_object_get(ppo, "gae_lambda")) == 0.9, "json lambda");
        CHECK(!strcmp(json_string_value(json_object_get(ppo, "kl_estimator")), "abs"), "json enum");
        json_t *rm = json_object_get(json_object_get(j, "model"), "reward");
        CHECK(json_array_size(rm) == 2 &&
                  !strcmp(json_string_value(json_array_get(rm, 1)), "models/rm seed2.safetensors"),
              "json list");
        json_decref(j);
    }
}

/* Every text a string key takes reads back from the dump as it was: controls, quotes, and the
 * characters YAML refuses raw or reads as line breaks (C1 controls with NEL, U+2028, U+2029,
 * U+FFFE, U+FFFF), which the dump escapes. */
static void check_odd_text(void)
{
    static const char *const values[] = {
        "a\"b\\c\td\re\x01\x7f", "nel\xc2\x85x", "c1\xc2\x80\xc2\x9f",
        "ls\xe2\x80\xa8ps\xe2\x80\xa9", "nonchar\xef\xbf\xbe\xef\xbf\xbf",
        "caf\xc3\xa9 \xf0\x9f\x98\x80 \xef\xbb\xbf\xe2\x82\xac",
    };
    for (size_t i = 0; i < PW_ARRAY_LEN(values); i++) {
        PwConfig c, back;
        PwErr err = {""};
        char arg[128];
        snprintf(arg, sizeof arg, "data.prompt_template=%s", values[i]);
        pw_config_defaults(&c);
        pw_config_defaults(&back);
        CHECK(pw_config_apply_override(&c, arg, &err) == 0, "value %zu: %s", i, err.msg);
        char *text = pw_config_yaml_string(&c);
        CHECK(text && pw_config_load_string(&back, text, "dump", &err) == 0, "value %zu: %s", i,
              err.msg);
        CHECK(!strcmp(back.data.prompt_template, values[i]), "value %zu reads back", i);
        free(text);
        pw_config_free(&c);
        pw_config_free(&back);
    }
}

/* The calls main.c makes: build from file + arguments, send as text, check a saved run. */
static void check_build_and_resume(void)
{
    PwConfig c;
    PwErr err = {""};
    const char *args[] = {"ppo.epochs=2", "seed=7"};
    CHECK(pw_config_build(&c, "full.yaml", args, 2, &err) == 0, "%s", err.msg);
    CHECK(c.ppo.epochs == 2 && c.seed == 7 && c.ppo.minibatches == 2, "file then overrides");

    char *text = pw_config_yaml_string(&c);
    CHECK(text != NULL, "yaml string");
    PwConfig other;
    pw_config_defaults(&other);
    CHECK(text && pw_config_load_string(&other, text, "bcast", &err) == 0, "%s", err.msg);
    CHECK(pw_config_diff(&c, &other, &err) == 0, "string round trip: %s", err.msg);
    free(text);
    pw_config_free(&other);

    const char *saved = config_tmp_path("run_config.yaml");
    CHECK(pw_config_save_yaml(&c, saved, &err) == 0, "%s", err.msg);
    CHECK(pw_config_check_saved(&c, saved, &err) == 0, "%s", err.msg);
    c.ppo.epochs = 3;
    char want[1024];
    snprintf(want, sizeof want,
             "%s: the run was started with another configuration: 1 key differs: "
             "ppo.epochs: 2 -> 3 (saved -> now)", saved);
    CHECK(pw_config_check_saved(&c, saved, &err) == -1 && !strcmp(err.msg, want), "got: %s",
          err.msg);
    remove(saved);
    pw_config_free(&c);

    /* Without a file: defaults and arguments; errors come from the step that failed. */
    const char *paths[] = {"model.sft=sft", "model.reward=rm", "data.prompts=p.jsonl"};
    CHECK(pw_config_build(&c, NULL, paths, 3, &err) == 0, "%s", err.msg);
    pw_config_free(&c);
    CHECK(pw_config_build(&c, NULL, paths, 2, &err) == -1 &&
              !strcmp(err.msg, "data.prompts: required but not given (training prompts, JSONL)"),
          "got: %s", err.msg);
    const char *bad[] = {"ppo.epochs=0"};
    CHECK(pw_config_build(&c, "full.yaml", bad, 1, &err) == -1 &&
              !strcmp(err.msg, "override 'ppo.epochs=0': ppo.epochs: 0 is out of range [1, 1000]"),
          "got: %s", err.msg);
}

int main(void)
{
    PwConfig c;
    PwErr err;
    CHECK(pw_config_defaults(&c) == 0, "defaults");
    CHECK(pw_config_load_file(&c, "full.yaml", &err) == 0, "%s", err.msg);
    check_full(&c);
    check_every_key_moved(&c);
    CHECK(pw_config_validate(&c, &err) == 0, "%s", err.msg);
    check_dumps(&c);
    pw_config_free(&c);
    check_overrides();
    check_odd_text();
    check_build_and_resume();
    config_tmp_clean();
    return pw_test_done("config_load");
}
