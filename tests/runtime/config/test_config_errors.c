/* test_config_errors.c: every kind of configuration error, with its exact message: the YAML
 * file's (path:line:column and the key), the command line's (the argument and the key) and
 * the cross-key rules'. The bad files are written to a temporary folder at test time. */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    {"async: true\n", "%s:1:8: 'async' is a section: expected a mapping of its keys, got a scalar"},
    {"async:\n  max_staleness: 9\n", "%s:2:18: async.max_staleness: 9 is out of range [0, 8]"},
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
    {"ppo:\n  epochs: 0\n", "%s:2:11: ppo.epochs: 0 is out of range [1, 1000]"},
    {"seed: 99999999999999999999\n", "%s:1:7: seed: 99999999999999999999 is out of range [0, 9007199254740991]"},
    /* bad enum values */
    {"reward:\n  objective: median\n", "%s:2:14: reward.objective: 'median' is not one of mean|wco|uwo"},
    {"ppo.kl_estimator: kl1\n", "%s:1:19: ppo.kl_estimator: 'kl1' is not one of k1|k2|k3|abs"},
    {"runtime:\n  on_nonfinite: skip\n", "%s:2:17: runtime.on_nonfinite: 'skip' is not one of stop|skip_step"},
    {"runtime.max_skipped_steps: 0\n", "%s:1:28: runtime.max_skipped_steps: 0 is out of range [1, 2147483647]"},
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
    /* YAML tags: refused, since a reader that ignores them reads another value than written */
    {"ppo:\n  epochs: !!str 4\n", "%s:2:11: ppo.epochs: YAML tag '!!str' is not supported: write the value without it (in quotes for a string)"},
    {"seed: !!int \"4\"\n", "%s:1:7: seed: YAML tag '!!int' is not supported: write the value without it (in quotes for a string)"},
    {"ppo: !local {epochs: 1}\n", "%s:1:6: ppo: YAML tag '!local' is not supported: write the value without it (in quotes for a string)"},
    {"--- !!map\nseed: 1\n", "%s:1:5: YAML tag '!!map' is not supported: write the value without it (in quotes for a string)"},
    {"model:\n  reward: [a, !!str b]\n", "%s:2:15: model.reward[1]: YAML tag '!!str' is not supported: write the value without it (in quotes for a string)"},
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
    snprintf(want, sizeof want, "%s: does not exist", path);
    CHECK(pw_config_load_file(&c, path, &err) == -1 && !strcmp(err.msg, want), "got: %s", err.msg);
    pw_config_free(&c);
}

/* Loads `path` and wants an error that holds `want` (with "%s" for the path). */
static void want_error(const char *path, const char *want_fmt)
{
    char want[1024];
    PwConfig c;
    PwErr err = {""};
    pw_config_defaults(&c);
    snprintf(want, sizeof want, want_fmt, path);
    CHECK(pw_config_load_file(&c, path, &err) == -1 && strstr(err.msg, want),
          "%s\n  want: %s\n  got:  %s", path, want, err.msg);
    pw_config_free(&c);
}

/* A text of `n` copies of `item` between `before` and `after`, for the limit cases. */
static const char *write_repeated(const char *name, const char *before, const char *item, int n,
                                  const char *after)
{
    size_t lb = strlen(before), li = strlen(item), la = strlen(after);
    size_t len = lb + (size_t)n * li + la;
    char *text = malloc(len + 1);
    memcpy(text, before, lb);
    for (int i = 0; i < n; i++) memcpy(text + lb + (size_t)i * li, item, li);
    memcpy(text + lb + (size_t)n * li, after, la);
    const char *path = config_tmp_write(name, text, len);
    free(text);
    return path;
}

/* Paths that are no configuration file: each is refused before it is read, by what it is, and
 * neither a FIFO (no writer: opening it would block for ever) nor a device (endless bytes) is
 * waited on. Then the limits of a YAML text: size, anchors, aliases, nesting and nodes, and
 * how they meet the refusal of tags. */
static void check_special_files(void)
{
    char path[512], target[512];
    snprintf(path, sizeof path, "%s", config_tmp_made("fifo.yaml"));
    CHECK(mkfifo(path, 0600) == 0, "mkfifo %s", path);
    want_error(path, "%s: not a regular file (a FIFO)");
    want_error("/dev/zero", "%s: not a regular file (a character device)");
    snprintf(path, sizeof path, "%s", config_tmp_made("folder.yaml"));
    CHECK(mkdir(path, 0700) == 0, "mkdir %s", path);
    want_error(path, "%s: is a directory; expected a file");
    snprintf(target, sizeof target, "%s", config_tmp_made("loop_b.yaml"));
    snprintf(path, sizeof path, "%s", config_tmp_made("loop_a.yaml"));
    CHECK(symlink(target, path) == 0 && symlink(path, target) == 0, "symlink %s", path);
    want_error(path, "%s: too many symbolic links");
    snprintf(target, sizeof target, "%s", config_tmp_path("absent.yaml"));
    snprintf(path, sizeof path, "%s", config_tmp_made("dangling.yaml"));
    CHECK(symlink(target, path) == 0, "symlink %s", path);
    want_error(path, "%s: is a symbolic link to something that does not exist");

    want_error(write_repeated("big.yaml", "seed: 1\n", "#", 1 << 20, "\n"),
               "%s: 1048585 bytes, more than the 1 MiB this file may have");
    /* 80,000 distinct anchors fit in 1 MiB and took libyaml's loader tens of seconds */
    size_t cap = 1 << 20, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap, "seed: 1\nx: [");
    for (int i = 0; i < 80000; i++) len += (size_t)snprintf(text + len, cap - len, "&a%d 1, ", i);
    len += (size_t)snprintf(text + len, cap - len, "1]\n");
    want_error(config_tmp_write("anchors.yaml", text, len),
               "%s:2:2199: more than 256 YAML anchors (&name); a placement or configuration file "
               "may have at most 256");
    free(text);
    want_error(write_repeated("aliases.yaml", "seed: &s 1\nx: [", "*s, ", 300, "1]\n"),
               "%s:2:1029: more than 256 YAML aliases (*name)");
    want_error(write_repeated("deep.yaml", "seed: 1\nx: ", "[", 1000000, "\n"),
               "%s:2:67: more than 64 levels of nesting");
    want_error(write_repeated("nodes.yaml", "seed: 1\nx: [", "1,", 250000, "1]\n"),
               "%s:2:399995: more than 200000 YAML nodes (values, lists and mappings)");
    /* Bounds and tags are found in one pass over the events: whichever comes first is what is
     * refused, and a tag is found at any depth the bounds allow, under its full key. */
    want_error(write_repeated("tag_then_deep.yaml", "seed: !!int 1\nx: ", "[", 100, "\n"),
               "%s:1:7: seed: YAML tag '!!int' is not supported");
    want_error(write_repeated("deep_then_tag.yaml", "x: ", "[", 100, "!!str 1\n"),
               "%s:1:67: more than 64 levels of nesting");
    char deep_tag[300] = "%s:1:44: x";
    for (int i = 0; i < 40; i++) strcat(deep_tag, "[0]");
    strcat(deep_tag, ": YAML tag '!!str' is not supported");
    want_error(write_repeated("deep_tag.yaml", "x: ", "[", 40, "!!str 1]\n"), deep_tag);
    /* the same bounds hold for a value given on the command line */
    PwConfig c;
    PwErr err = {""};
    pw_config_defaults(&c);
    char arg[4000] = "model.reward=[";
    for (int i = 0; i < 300; i++) strcat(arg, "[");
    CHECK(pw_config_apply_override(&c, arg, &err) == -1 &&
              !strncmp(err.msg, "override 'model.reward=[[[", 26) &&
              strstr(err.msg, "[': more than 64 levels of nesting; a placement or configuration "
                              "file may have at most 64"),
          "got: %s", err.msg);
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
    {"async=1", "override 'async=1': 'async' is a section: give one of its keys (async.<key>=value)"},
    {"ppo.gae_lambda=2", "override 'ppo.gae_lambda=2': ppo.gae_lambda: 2 is out of range [0, 1]"},
    {"reward.objective=median", "override 'reward.objective=median': reward.objective: 'median' is not one of mean|wco|uwo"},
    {"seed={a: 1}", "override 'seed={a: 1}': seed: expected an integer, got a mapping"},
    {"seed=[1", "override 'seed=[1': seed: cannot read the value: did not find expected ',' or ']'"},
    {"ppo.epochs=!!str 4", "override 'ppo.epochs=!!str 4': ppo.epochs: YAML tag '!!str' is not supported: write the value without it (in quotes for a string)"},
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
    {{"ppo.micro_batch_size=513"},
     "ppo.micro_batch_size (513) must not exceed ppo.num_rollout_samples (512)"},
    {{"episodes=100"},
     "episodes (100) must be at least ppo.num_rollout_samples (512), or the run has no PPO step"},
    {{"ppo.use_absolute_kl=true", "ppo.kl_estimator=k3"},
     "ppo.use_absolute_kl: true conflicts with ppo.kl_estimator: k3 (use_absolute_kl means kl_estimator: abs)"},
    {{"ppo.adaptive_kl=true", "ppo.initial_policy_kl_penalty=0"},
     "ppo.adaptive_kl needs ppo.initial_policy_kl_penalty > 0: the controller scales beta and cannot move it from 0"},
    {{"algorithm=grpo"},
     "algorithm: grpo needs generation.samples_per_prompt >= 2 (got 1): its baseline is the other responses to the same prompt"},
    {{"algorithm=rloo", "generation.samples_per_prompt=1"},
     "algorithm: rloo needs generation.samples_per_prompt >= 2 (got 1): its baseline is the other responses to the same prompt"},
    {{"generation.samples_per_prompt=3"},
     "ppo.num_rollout_samples (512) must be a multiple of generation.samples_per_prompt (3): every prompt gets all its responses in one step"},
    {{"ppo.off_policy=tis", "ppo.tis_cap=0"},
     "ppo.off_policy: tis needs ppo.tis_cap > 0 (got 0): it is the largest importance weight a token gets"},
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
    check_special_files();
    check_args();
    check_rules();
    config_tmp_clean();
    return pw_test_done("config_errors");
}
