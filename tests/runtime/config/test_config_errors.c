/* test_config_errors.c: every kind of configuration error, with its exact message: the YAML
 * file's (path:line:column and the key), the command line's (the argument and the key) and
 * the cross-key rules'. The bad files are written to a temporary folder at test time. */
#include <string.h>

#include "config_tmp.h"
#include "pw_config.h"
#include "pw_test.h"

typedef struct FileCase {
    const char *text;
    const char *want; /* "%s" stands for the file's path; NULL: the file must load */
} FileCase;

static const FileCase file_cases[] = {
    /* unknown keys, with a hint where one is close */
    {"ppo:\n  ratio_epsilon: 0.3\n", "%s:2:3: unknown key 'ppo.ratio_epsilon' (did you mean 'ppo.ratio_eps'?)"},
    {"gae_lambda: 0.9\n", "%s:1:1: unknown key 'gae_lambda' (did you mean 'ppo.gae_lambda'?)"},
    {"seed: 1\ncolour: blue\n", "%s:2:1: unknown key 'colour'"},
    {"? [a]\n: 1\n", "%s:1:3: keys must be names, got a list"},
    /* wrong types */
    {"ppo:\n  epochs: four\n", "%s:2:11: ppo.epochs: expected an integer, got 'four'"},
    {"ppo:\n  epochs: 4.0\n", "%s:2:11: ppo.epochs: expected an integer, got '4.0'"},
    {"ppo:\n  epochs: \"4\"\n", "%s:2:11: ppo.epochs: expected an integer, got \"4\" (a quoted string)"},
    {"async: yes\n", "%s:1:8: async: expected a bool (true or false), got 'yes'"},
    {"ppo:\n  gae_lambda: high\n", "%s:2:15: ppo.gae_lambda: expected a number, got 'high'"},
    {"generation:\n  temperature: .inf\n", "%s:2:16: generation.temperature: expected a number, got '.inf'"},
    {"seed:\n  a: 1\n", "%s:2:3: seed: expected an integer, got a mapping"},
    {"seed: [1, 2]\n", "%s:1:7: seed: expected an integer, got a list"},
    {"seed: ~\n", "%s:1:7: seed: expected an integer, got null"},
    {"model:\n  reward: [a, {b: 1}]\n", "%s:2:15: model.reward: expected a list of strings, got a mapping in the list"},
    {"ppo: 3\n", "%s:1:6: 'ppo' is a section: expected a mapping of its keys, got a scalar"},
    /* out of range */
    {"ppo:\n  gae_lambda: 1.5\n", "%s:2:15: ppo.gae_lambda: 1.5 is out of range [0, 1]"},
    {"generation:\n  temperature: 0\n", "%s:2:16: generation.temperature: 0 is out of range > 0"},
    {"generation:\n  top_p: 1.1\n", "%s:2:10: generation.top_p: 1.1 is out of range (0, 1]"},
    {"ppo:\n  epochs: 0\n", "%s:2:11: ppo.epochs: 0 is out of range >= 1"},
    {"seed: 99999999999999999999\n", "%s:1:7: seed: 99999999999999999999 is out of range >= 0"},
    /* bad enum values */
    {"reward:\n  objective: median\n", "%s:2:14: reward.objective: 'median' is not one of mean|wco|uwo"},
    {"ppo.kl_estimator: kl1\n", "%s:1:19: ppo.kl_estimator: 'kl1' is not one of k1|k2|k3|abs"},
    {"runtime:\n  on_nonfinite: skip\n", "%s:2:17: runtime.on_nonfinite: 'skip' is not one of stop|skip_step"},
    {"runtime.max_skipped_steps: 0\n", "%s:1:28: runtime.max_skipped_steps: 0 is out of range >= 1"},
    /* duplicates, in one mapping and across spellings */
    {"ppo:\n  epochs: 2\n  epochs: 3\n", "%s:3:3: duplicate key 'ppo.epochs' (first given at 2:3)"},
    {"ppo:\n  epochs: 2\nppo.epochs: 3\n", "%s:3:1: duplicate key 'ppo.epochs' (first given at 2:3)"},
    {"ppo:\n  epochs: 2\nseed: 1\nppo:\n  minibatches: 1\n", "%s:4:1: duplicate key 'ppo' (first given at 1:1)"},
    /* not YAML, or not one mapping */
    {"ppo:\n  epochs: [1, 2\n", "%s:3:1: YAML syntax error: while parsing a flow sequence did not find expected ',' or ']'"},
    {"seed: 1: 2\n", "%s:1:8: YAML syntax error: mapping values are not allowed in this context"},
    {"\x80\x81 abc\n", "%s: not a YAML text: invalid leading UTF-8 octet (byte 0)"},
    {"- a\n- b\n", "%s:1:1: the top level must be a mapping of keys, got a list"},
    {"hello world\n", "%s:1:1: the top level must be a mapping of keys, got a scalar"},
    {"seed: 1\n---\nseed: 2\n", "%s:3:1: a second YAML document; a config file holds one"},
    /* empty is valid: all defaults */
    {"", NULL},
    {"# only a comment\n", NULL},
    {"---\n", NULL},
    {"ppo:\n", NULL},
    {"{}\n", NULL},
};

static void check_files(void)
{
    char want[1024], name[32];
    PwConfig defaults;
    pw_config_defaults(&defaults);
    for (size_t i = 0; i < PW_ARRAY_LEN(file_cases); i++) {
        const FileCase *fc = &file_cases[i];
        snprintf(name, sizeof name, "case%02zu.yaml", i);
        const char *path = config_tmp_write(name, fc->text, strlen(fc->text));
        PwConfig c;
        PwErr err = {""};
        pw_config_defaults(&c);
        int rc = pw_config_load_file(&c, path, &err);
        if (fc->want) {
            snprintf(want, sizeof want, fc->want, path);
            CHECK(rc == -1, "case %zu loaded", i);
            CHECK(!strcmp(err.msg, want), "case %zu\n  want: %s\n  got:  %s", i, want, err.msg);
        } else {
            CHECK(rc == 0, "case %zu: %s", i, err.msg);
            CHECK(pw_config_diff(&defaults, &c, &err) == 0, "case %zu is not all defaults: %s", i,
                  err.msg);
        }
        pw_config_free(&c);
    }
    pw_config_free(&defaults);

    /* A NUL byte and a missing file. */
    PwConfig c;
    PwErr err;
    pw_config_defaults(&c);
    const char *path = config_tmp_write("nul.yaml", "seed: 1\n\0\x01\x02", 11);
    snprintf(want, sizeof want, "%s: not a YAML text: NUL byte at byte 8", path);
    CHECK(pw_config_load_file(&c, path, &err) == -1 && !strcmp(err.msg, want), "got: %s", err.msg);
    path = config_tmp_path("absent.yaml");
    snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
    CHECK(pw_config_load_file(&c, path, &err) == -1 && !strcmp(err.msg, want), "got: %s", err.msg);
    pw_config_free(&c);
}

typedef struct ArgCase {
    const char *arg;
    const char *want;
} ArgCase;

static const ArgCase arg_cases[] = {
    {"ppo.epochs", "override 'ppo.epochs': expected key=value"},
    {"=3", "override '=3': expected key=value"},
    {"ppo.epoch=3", "override 'ppo.epoch=3': unknown key 'ppo.epoch' (did you mean 'ppo.epochs'?)"},
    {"colour=blue", "override 'colour=blue': unknown key 'colour'"},
    {"ppo=3", "override 'ppo=3': 'ppo' is a section: give one of its keys (ppo.<key>=value)"},
    {"ppo.epochs=four", "override 'ppo.epochs=four': ppo.epochs: expected an integer, got 'four'"},
    {"ppo.epochs=", "override 'ppo.epochs=': ppo.epochs: expected an integer, got ''"},
    {"async=1", "override 'async=1': async: expected a bool (true or false), got '1'"},
    {"ppo.gae_lambda=2", "override 'ppo.gae_lambda=2': ppo.gae_lambda: 2 is out of range [0, 1]"},
    {"reward.objective=median", "override 'reward.objective=median': reward.objective: 'median' is not one of mean|wco|uwo"},
    {"seed={a: 1}", "override 'seed={a: 1}': seed: expected an integer, got a mapping"},
    {"seed=[1", "override 'seed=[1': seed: cannot read the value: did not find expected ',' or ']'"},
    /* Paths are verbatim, but must be text: config.yaml could not hold the bytes otherwise. */
    {"data.prompts=caf\xe9.jsonl", "override 'data.prompts=caf\xe9.jsonl': data.prompts: the value "
     "is not UTF-8 text (byte 3); expected text a configuration file can hold"},
    {"model.sft=\xed\xa0\x80", "override 'model.sft=\xed\xa0\x80': model.sft: the value is not "
     "UTF-8 text (byte 0); expected text a configuration file can hold"},
};

static void check_args(void)
{
    for (size_t i = 0; i < PW_ARRAY_LEN(arg_cases); i++) {
        PwConfig c;
        PwErr err = {""};
        pw_config_defaults(&c);
        CHECK(pw_config_apply_override(&c, arg_cases[i].arg, &err) == -1, "%s accepted",
              arg_cases[i].arg);
        CHECK(!strcmp(err.msg, arg_cases[i].want), "%s\n  want: %s\n  got:  %s", arg_cases[i].arg,
              arg_cases[i].want, err.msg);
        pw_config_free(&c);
    }
}

typedef struct RuleCase {
    const char *args[3];
    const char *want;
} RuleCase;

static const RuleCase rule_cases[] = {
    {{"ppo.minibatches=3"}, "ppo.minibatches (3) must divide ppo.num_rollout_samples (512)"},
    {{"ppo.rollout_micro_batch_size=1024"},
     "ppo.rollout_micro_batch_size (1024) must not exceed ppo.num_rollout_samples (512)"},
    {{"episodes=100"},
     "episodes (100) must be at least ppo.num_rollout_samples (512), or the run has no PPO step"},
    {{"ppo.use_absolute_kl=true", "ppo.kl_estimator=k3"},
     "ppo.use_absolute_kl: true conflicts with ppo.kl_estimator: k3 (use_absolute_kl means kl_estimator: abs)"},
    {{"ppo.adaptive_kl=true", "ppo.initial_policy_kl_penalty=0"},
     "ppo.adaptive_kl needs ppo.initial_policy_kl_penalty > 0: the controller scales beta and cannot move it from 0"},
    {{"optim.min_lr=1e-3"}, "optim.min_lr (0.001) must not exceed optim.lr (9e-07)"},
    {{"critic.min_lr=1e-4"}, "critic.min_lr (0.0001) must not exceed critic.lr (9e-06)"},
    {{"generation.stop_token=none"},
     "reward.non_stop_penalty: true needs a stop token, but generation.stop_token is none (every response would be penalised)"},
    {{"model.reward=[a, a]"}, "model.reward: member 2 repeats member 1 ('a')"},
    {{"model.reward=[a, '']"}, "model.reward: member 2 is empty"},
    {{"model.reward=[]"},
     "model.reward: required but not given (reward model checkpoint folders; two or more form an ensemble (reward.objective))"},
    {{"data.prompts="}, "data.prompts: required but not given (training prompts, JSONL)"},
    {{"data.tokenizer=bytes", "data.prompt_template=Q: A:"},
     "data.prompt_template: the template must hold {prompt} where the prompt goes (e.g. \"<|im_start|>user\\n{prompt}<|im_end|>\\n<|im_start|>assistant\\n\")"},
    {{"data.tokenizer=bytes", "data.prompt_template={prompt}{prompt}"},
     "data.prompt_template: {prompt} appears more than once; expected once"},
    {{"data.prompt_template=Q: {prompt} A:"},
     "data.prompt_template needs data.tokenizer: it applies to text prompts, and {\"input_ids\"} prompts are used as given"},
};

static void set_base(PwConfig *c)
{
    PwErr err;
    pw_config_defaults(c);
    const char *base[] = {"model.sft=sft.st", "model.reward=[rm.st]", "data.prompts=p.jsonl"};
    for (size_t i = 0; i < PW_ARRAY_LEN(base); i++)
        CHECK(pw_config_apply_override(c, base[i], &err) == 0, "%s", err.msg);
}

static void check_rules(void)
{
    PwConfig c;
    PwErr err = {""};
    set_base(&c);
    CHECK(pw_config_validate(&c, &err) == 0, "base: %s", err.msg);
    /* A field set by code is range-checked too. */
    c.ppo.gae_lambda = 3;
    CHECK(pw_config_validate(&c, &err) == -1 &&
              !strcmp(err.msg, "ppo.gae_lambda: 3 is out of range [0, 1]"), "got: %s", err.msg);
    pw_config_free(&c);

    for (size_t i = 0; i < PW_ARRAY_LEN(rule_cases); i++) {
        const RuleCase *rc = &rule_cases[i];
        set_base(&c);
        for (int j = 0; j < 3 && rc->args[j]; j++)
            CHECK(pw_config_apply_override(&c, rc->args[j], &err) == 0, "%s", err.msg);
        err.msg[0] = '\0';
        CHECK(pw_config_validate(&c, &err) == -1, "rule %zu passed", i);
        CHECK(!strcmp(err.msg, rc->want), "rule %zu\n  want: %s\n  got:  %s", i, rc->want, err.msg);
        pw_config_free(&c);
    }
}

int main(void)
{
    check_files();
    check_args();
    check_rules();
    config_tmp_clean();
    return pw_test_done("config_errors");
}
