/* test_config_bounds.c: every integer key of every schema has an upper bound that fits how the
 * code holds it (an int unless it is a seed), and a value past it is refused, not wrapped. */
#include <limits.h>
#include <string.h>

#include "pw_config.h"
#include "pw_test.h"
#include "pw_train_config.h"

/* Keys the code keeps in 64 bits: the seed, handed on as a uint64_t. Every other integer is
 * cast to int by the roles, so its bound must fit one. */
static const char *const wide[] = {"seed"};

/* The ranges are compared in double, which holds every integer up to 2^53 exactly. */
#define EXACT_IN_DOUBLE 9007199254740991.0

static bool is_wide(const char *name)
{
    for (size_t i = 0; i < PW_ARRAY_LEN(wide); i++)
        if (!strcmp(wide[i], name)) return true;
    return false;
}

/* "key: value" loaded over the schema's defaults: 0, or -1 with the message. */
static int load_one(const PwCfgSchema *s, const char *key, const char *value, PwErr *err)
{
    char text[256];
    snprintf(text, sizeof text, "%s: %s\n", key, value);
    void *cfg = calloc(1, s->size);
    int rc = cfg && pw_cfg_defaults(s, cfg) == 0 ? pw_cfg_load_string(s, cfg, text, "t.yaml", err)
                                                 : -1;
    if (cfg) pw_cfg_free(s, cfg);
    free(cfg);
    return rc;
}

static void check_schema(const PwCfgSchema *s)
{
    for (size_t i = 0; i < s->nkeys; i++) {
        const PwCfgKey *k = &s->keys[i];
        if (k->type != PW_CFG_INT) continue;
        CHECK(k->flags & PW_CFG_MAX, "%s: %s: an integer key without an upper bound", s->name,
              k->name);
        if (!(k->flags & PW_CFG_MAX)) continue;
        double cap = is_wide(k->name) ? EXACT_IN_DOUBLE : (double)INT_MAX;
        CHECK(k->max <= cap, "%s: %s: upper bound %.17g does not fit %s", s->name, k->name,
              k->max, is_wide(k->name) ? "a double exactly" : "an int");
        CHECK(!(k->flags & PW_CFG_MAX_OPEN) && k->max == (double)(int64_t)k->max,
              "%s: %s: an integer bound is closed and whole", s->name, k->name);
        /* the bound itself loads; one past it is refused with the range */
        char at[32], past[32], want[200];
        snprintf(at, sizeof at, "%lld", (long long)k->max);
        snprintf(past, sizeof past, "%lld", (long long)k->max + 1);
        PwErr err = {""};
        CHECK(load_one(s, k->name, at, &err) == 0, "%s: %s: %s refused: %s", s->name, k->name,
              at, err.msg);
        snprintf(want, sizeof want, "%s: %s is out of range", k->name, past);
        CHECK(load_one(s, k->name, past, &err) == -1 && strstr(err.msg, want),
              "%s: %s: %s: %s", s->name, k->name, past, err.msg);
    }
}

/* 2^32 + 1: what an int cast made 1 before the keys had upper bounds. */
static void check_wrapping(void)
{
    static const struct {
        const char *arg, *want;
    } cases[] = {
        {"generation.max_new_tokens=4294967297",
         "override 'generation.max_new_tokens=4294967297': generation.max_new_tokens: "
         "4294967297 is out of range [1, 1048576]"},
        {"ppo.epochs=4294967297",
         "override 'ppo.epochs=4294967297': ppo.epochs: 4294967297 is out of range [1, 1000]"},
        {"generation.top_k=4294967297",
         "override 'generation.top_k=4294967297': generation.top_k: 4294967297 is out of range "
         "[0, 2147483647]"},
        {"seed=9007199254740992",
         "override 'seed=9007199254740992': seed: 9007199254740992 is out of range "
         "[0, 9007199254740991]"},
    };
    for (size_t i = 0; i < PW_ARRAY_LEN(cases); i++) {
        PwConfig c;
        PwErr err = {""};
        pw_config_defaults(&c);
        CHECK(pw_config_apply_override(&c, cases[i].arg, &err) == -1, "%s accepted",
              cases[i].arg);
        CHECK(!strcmp(err.msg, cases[i].want), "\n  want: %s\n  got:  %s", cases[i].want,
              err.msg);
        pw_config_free(&c);
    }
}

int main(void)
{
    check_schema(&pw_config_schema);
    check_schema(&pw_train_config_schema);
    check_wrapping();
    return pw_test_done("test_config_bounds");
}
