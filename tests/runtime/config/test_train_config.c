/* test_train_config.c: the sft/rm configuration (pw_train_config_schema) through the shared
 * machinery: its defaults (the former flags'), a YAML file with overrides, every kind of error
 * with its exact message, the rules across keys, the derived warm-up and the dump read back. */
#include <string.h>

#include <jansson.h>

#include "config_tmp.h"
#include "pw_config.h"
#include "pw_test.h"
#include "pw_train_config.h"

static const PwCfgSchema *S = &pw_train_config_schema;

static void check_table(void)
{
    for (size_t i = 0; i < S->nkeys; i++) {
        const PwCfgKey *k = &S->keys[i];
        CHECK(pw_cfg_find_key(S, k->name) == k, "%s not found", k->name);
        CHECK(k->doc && k->doc[0] && k->source && k->source[0], "%s lacks doc or source", k->name);
        for (size_t j = 0; j < i; j++)
            CHECK(k->offset != S->keys[j].offset, "%s and %s share a field", k->name,
                  S->keys[j].name);
    }
    CHECK(S->nkeys == 45, "%zu keys", S->nkeys);
    /* Where sft/rm and PPO share a setting they share its name and type. */
    static const char *const shared[] = {"seed", "optim.lr", "optim.min_lr", "optim.warmup_steps",
                                         "optim.decay", "optim.weight_decay", "optim.beta1",
                                         "optim.beta2", "optim.eps", "optim.grad_clip",
                                         "optim.zero_stage",
                                         "eval.every", "runtime.heartbeat_s",
                                         "runtime.timeout_s", "runtime.on_nonfinite",
                                         "runtime.max_skipped_steps", "runtime.grad_bucket_mb",
                                         "runtime.check_memory", "log.tensorboard",
                                         "data.tokenizer",
                                         "data.prompt_template",
                                         "data.max_prompt_len", "model.precision",
                                         "model.lm_head_chunk",
                                         "model.activation_checkpointing"};
    for (size_t i = 0; i < PW_ARRAY_LEN(shared); i++) {
        const PwCfgKey *t = pw_cfg_find_key(S, shared[i]), *p = pw_config_find_key(shared[i]);
        CHECK(t && p && t->type == p->type, "%s: not the same key in both tables", shared[i]);
        CHECK(t && p && t->enum_names == p->enum_names, "%s: not the same names", shared[i]);
    }
    CHECK(pw_cfg_find_key(S, "train") == NULL, "a section is not a key");
    CHECK(pw_cfg_find_key(S, "episodes") == NULL, "a PPO-only key");
}

/* The values the modes ran with before the configuration existed (their flags' defaults). */
static void check_defaults(void)
{
    PwTrainConfig c;
    CHECK(pw_cfg_defaults(S, &c) == 0, "defaults failed");
    CHECK(c.seed == 1, "seed %lld", (long long)c.seed);
    CHECK(!strcmp(c.data.dir, "") && !strcmp(c.data.train, "") && !strcmp(c.data.valid, ""),
          "data paths are empty");
    CHECK(c.data.valid_fraction == 0.1, "valid_fraction %g", c.data.valid_fraction);
    CHECK(!strcmp(c.data.tokenizer, "bytes"), "tokenizer %s", c.data.tokenizer);
    CHECK(c.data.max_len == 0 && c.data.max_prompt_len == 0 && c.data.max_response_len == 0,
          "length limits");
    CHECK(c.data.overlong == PW_OVERLONG_DROP, "overlong");
    CHECK(!strcmp(c.model.init, ""), "init");
    CHECK(c.model.precision == PW_PRECISION_FP32 && c.model.device == PW_DEVICE_CPU,
          "precision fp32, device cpu");
    CHECK(c.model.n_layer == 2 && c.model.n_head == 2 && c.model.n_embd == 64 &&
              c.model.n_positions == 128, "model size");
    CHECK(c.train.steps == 200 && c.train.batch_size == 16, "steps, batch");
    CHECK(c.optim.lr == 1e-3 && c.optim.min_lr == 0.0 && c.optim.decay == PW_LR_COSINE,
          "schedule");
    CHECK(c.optim.warmup_steps == PW_CFG_AUTO_INT, "warmup is auto");
    CHECK(c.optim.weight_decay == 0.0 && c.optim.beta1 == 0.9 && c.optim.beta2 == 0.95 &&
              c.optim.eps == 1e-8 && c.optim.grad_clip == 1.0, "adamw");
    CHECK(c.eval.every == 50, "eval.every");
    CHECK(c.runtime.timeout_s == 600.0, "timeout");
    CHECK(c.runtime.on_nonfinite == PW_NONFINITE_STOP && c.runtime.max_skipped_steps == 10,
          "a diverged run stops by default");

    /* The derived warm-up: 10, or the steps when fewer; a given value as given. */
    CHECK(pw_train_config_warmup(&c) == 10, "auto warm-up of 200 steps");
    c.train.steps = 4;
    CHECK(pw_train_config_warmup(&c) == 4, "auto warm-up of 4 steps");
    c.optim.warmup_steps = 3;
    CHECK(pw_train_config_warmup(&c) == 3, "given warm-up");

    /* Defaults alone train nothing: the examples must be named. */
    PwErr err;
    CHECK(pw_cfg_validate(S, &c, &err) == -1 &&
              !strcmp(err.msg, "data.dir or data.train is required (the training examples)"),
          "got: %s", err.msg);
    pw_cfg_free(S, &c);
}

static const char full_yaml[] =
    "# every section, nested and dotted\n"
    "seed: 7\n"
    "data:\n"
    "  train: t.jsonl\n"
    "  valid: v.jsonl\n"
    "  tokenizer: bytes\n"
    "  max_len: 48\n"
    "  overlong: TRUNCATE\n"
    "model.init: runs/sft\n"
    "model:\n"
    "  n_layer: 3\n"
    "  precision: bf16\n"
    "  device: cuda\n"
    "train:\n"
    "  steps: 40\n"
    "  batch_size: 8\n"
    "optim:\n"
    "  lr: 3.0e-3\n"
    "  min_lr: 1e-4\n"
    "  warmup_steps: 5\n"
    "  decay: linear\n"
    "eval:\n"
    "  every: 20\n"
    "runtime.timeout_s: 0\n"
    "runtime.on_nonfinite: skip_step\n";

static void check_file_and_overrides(void)
{
    const char *path = config_tmp_write("train.yaml", full_yaml, strlen(full_yaml));
    const char *args[] = {"train.steps=60", "optim.warmup_steps=auto", "data.valid=",
                          "model.n_embd=32", "data.valid_fraction=0"};
    PwTrainConfig c;
    PwErr err = {""};
    CHECK(pw_cfg_build(S, &c, path, args, (int)PW_ARRAY_LEN(args), &err) == 0, "%s", err.msg);
    CHECK(c.seed == 7, "seed");
    CHECK(!strcmp(c.data.train, "t.jsonl") && !strcmp(c.data.valid, ""), "data paths");
    CHECK(c.data.max_len == 48 && c.data.overlong == PW_OVERLONG_TRUNCATE, "limits");
    CHECK(!strcmp(c.model.init, "runs/sft") && c.model.n_layer == 3 && c.model.n_embd == 32,
          "model");
    CHECK(c.train.steps == 60 && c.train.batch_size == 8, "overrides win over the file");
    CHECK(c.optim.lr == 3e-3 && c.optim.min_lr == 1e-4 && c.optim.decay == PW_LR_LINEAR,
          "optim");
    CHECK(c.optim.warmup_steps == PW_CFG_AUTO_INT && pw_train_config_warmup(&c) == 10,
          "warm-up back to auto");
    CHECK(c.eval.every == 20 && c.runtime.timeout_s == 0.0 && c.data.valid_fraction == 0.0,
          "eval, timeout, valid_fraction");
    CHECK(c.runtime.on_nonfinite == PW_NONFINITE_SKIP_STEP, "on_nonfinite");
    CHECK(c.model.precision == PW_PRECISION_BF16 && c.model.device == PW_DEVICE_CUDA,
          "precision, device");

    /* The dump (the run folder's config.yaml) reads back to the same configuration. */
    const char *saved = config_tmp_path("saved.yaml");
    CHECK(pw_cfg_save_yaml(S, &c, saved, &err) == 0, "%s", err.msg);
    char *text = pw_cfg_yaml_string(S, &c);
    CHECK(text && strstr(text, "# ppo_world sft/rm: effective training configuration") == text,
          "dump title");
    CHECK(text && strstr(text, "\noptim:\n  lr: 0.003\n  warmup_steps: auto\n"), "dump:\n%s",
          text ? text : "");
    free(text);
    PwTrainConfig back;
    pw_cfg_defaults(S, &back);
    CHECK(pw_cfg_load_file(S, &back, saved, &err) == 0, "%s", err.msg);
    CHECK(pw_cfg_diff(S, &c, &back, &err) == 0, "round trip: %s", err.msg);
    CHECK(pw_cfg_check_saved(S, &c, saved, &err) == 0, "%s", err.msg);
    back.train.batch_size = 4;
    CHECK(pw_cfg_diff(S, &c, &back, &err) == 1 &&
              !strcmp(err.msg, "1 key differs: train.batch_size: 8 -> 4"), "got: %s", err.msg);
    pw_cfg_free(S, &back);
    remove(saved);

    json_t *j = pw_cfg_to_json(S, &c);
    CHECK(j != NULL, "json");
    if (j) {
        json_t *optim = json_object_get(j, "optim");
        CHECK(!strcmp(json_string_value(json_object_get(optim, "warmup_steps")), "auto"),
              "json auto");
        CHECK(json_integer_value(json_object_get(json_object_get(j, "train"), "steps")) == 60,
              "json steps");
        json_decref(j);
    }
    pw_cfg_free(S, &c);
}

typedef struct Case {
    const char *text; /* a file, or with want starting "override" an argument */
    const char *want; /* "%s" stands for the file's path */
} Case;

static const Case file_cases[] = {
    {"train:\n  step: 3\n", "%s:2:3: unknown key 'train.step' (did you mean 'train.steps'?)"},
    {"n_layer: 3\n", "%s:1:1: unknown key 'n_layer' (did you mean 'model.n_layer'?)"},
    {"episodes: 3\n", "%s:1:1: unknown key 'episodes'"},
    {"model:\n  n_head: two\n", "%s:2:11: model.n_head: expected an integer, got 'two'"},
    {"train:\n  steps: auto\n", "%s:2:10: train.steps: expected an integer, got 'auto'"},
    {"optim:\n  warmup_steps: soon\n",
     "%s:2:17: optim.warmup_steps: expected an integer or auto, got 'soon'"},
    {"data:\n  dir: [a, b]\n", "%s:2:8: data.dir: expected a string, got a list"},
    {"data:\n  valid_fraction: 1.5\n", "%s:2:19: data.valid_fraction: 1.5 is out of range [0, 0.99]"},
    {"model:\n  n_positions: 1\n", "%s:2:16: model.n_positions: 1 is out of range [2, 65536]"},
    {"optim:\n  beta2: 1\n", "%s:2:10: optim.beta2: 1 is out of range [0, 1)"},
    {"data:\n  overlong: cut\n", "%s:2:13: data.overlong: 'cut' is not one of drop|error|truncate"},
    {"train: 5\n", "%s:1:8: 'train' is a section: expected a mapping of its keys, got a scalar"},
    {"seed: 1\nseed: 2\n", "%s:2:1: duplicate key 'seed' (first given at 1:1)"},
};

static const Case arg_cases[] = {
    {"train.steps=-1", "override 'train.steps=-1': train.steps: -1 is out of range [0, 2147483647]"},
    {"optim.lr=fast", "override 'optim.lr=fast': optim.lr: expected a number, got 'fast'"},
    {"optim.warmup_step=3",
     "override 'optim.warmup_step=3': unknown key 'optim.warmup_step' (did you mean "
     "'optim.warmup_steps'?)"},
    {"model=3", "override 'model=3': 'model' is a section: give one of its keys (model.<key>=value)"},
    {"data.dir", "override 'data.dir': expected key=value"},
    {"model.device=gpu", "override 'model.device=gpu': model.device: 'gpu' is not one of cpu|cuda"},
    {"model.precision=fp16",
     "override 'model.precision=fp16': model.precision: 'fp16' is not one of fp32|bf16"},
};

static void check_errors(void)
{
    char want[1024], name[32];
    for (size_t i = 0; i < PW_ARRAY_LEN(file_cases); i++) {
        snprintf(name, sizeof name, "bad%02zu.yaml", i);
        const char *path = config_tmp_write(name, file_cases[i].text, strlen(file_cases[i].text));
        snprintf(want, sizeof want, file_cases[i].want, path);
        PwTrainConfig c;
        PwErr err = {""};
        /* pw_cfg_build, as the modes call it: the error, and nothing left to free */
        CHECK(pw_cfg_build(S, &c, path, NULL, 0, &err) == -1, "case %zu loaded", i);
        CHECK(!strcmp(err.msg, want), "case %zu\n  want: %s\n  got:  %s", i, want, err.msg);
    }
    for (size_t i = 0; i < PW_ARRAY_LEN(arg_cases); i++) {
        PwTrainConfig c;
        PwErr err = {""};
        const char *args[] = {"data.dir=d", arg_cases[i].text};
        CHECK(pw_cfg_build(S, &c, NULL, args, 2, &err) == -1, "%s accepted", arg_cases[i].text);
        CHECK(!strcmp(err.msg, arg_cases[i].want), "%s\n  want: %s\n  got:  %s",
              arg_cases[i].text, arg_cases[i].want, err.msg);
    }
}

static const Case rule_cases[] = {
    {"data.dir=d data.train=t", "data.dir excludes data.train: the folder names the files itself"},
    {"data.dir=d data.valid=v", "data.dir excludes data.valid: the folder names the files itself"},
    {"data.valid=v", "data.dir or data.train is required (the training examples)"},
    {"data.dir=d train.steps=5 optim.warmup_steps=6",
     "optim.warmup_steps (6) must not exceed train.steps (5)"},
    {"data.dir=d optim.min_lr=0.01", "optim.min_lr (0.01) must not exceed optim.lr (0.001)"},
    {"data.dir=d data.prompt_template=none",
     "data.prompt_template: the template must hold {prompt} where the prompt goes (e.g. "
     "\"<|im_start|>user\\n{prompt}<|im_end|>\\n<|im_start|>assistant\\n\")"},
    {"data.dir=d data.prompt_template=Q:{prompt}A:", NULL},
    /* accepted: auto adapts to few steps, a warm-up as long as the run, a train file alone */
    {"data.dir=d train.steps=3", NULL},
    {"data.dir=d train.steps=5 optim.warmup_steps=5", NULL},
    {"data.train=t data.valid=v", NULL},
};

static void check_rules(void)
{
    for (size_t i = 0; i < PW_ARRAY_LEN(rule_cases); i++) {
        char buf[256], *args[4], *save = NULL;
        snprintf(buf, sizeof buf, "%s", rule_cases[i].text);
        int n = 0;
        for (char *w = strtok_r(buf, " ", &save); w && n < 4; w = strtok_r(NULL, " ", &save))
            args[n++] = w;
        PwTrainConfig c;
        PwErr err = {""};
        int rc = pw_cfg_build(S, &c, NULL, (const char *const *)args, n, &err);
        if (rule_cases[i].want) {
            CHECK(rc == -1, "rule %zu passed", i);
            CHECK(!strcmp(err.msg, rule_cases[i].want), "rule %zu\n  want: %s\n  got:  %s", i,
                  rule_cases[i].want, err.msg);
        } else {
            CHECK(rc == 0, "case %zu refused: %s", i, err.msg);
            if (rc == 0) pw_cfg_free(S, &c);
        }
    }
}

int main(void)
{
    check_table();
    check_defaults();
    check_file_and_overrides();
    check_errors();
    check_rules();
    config_tmp_clean();
    return pw_test_done("train_config");
}
