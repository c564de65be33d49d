/* test_metrics_nonfinite.c: the metrics writer of a PPO run (pw_metrics_write) keeps every key
 * when values are NaN or infinite: they are written as the strings "nan", "inf", "-inf", which
 * the readers take back (pw_metrics.h); finite values are written exactly as before. A unit test
 * of src/roles/metrics.c, so it reads the roles' internal header. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/roles/roles.h"
#include "pw_metrics.h"
#include "pw_test.h"

/* The keys of a line with an actor and a reference role and no verifier member. */
static const char *const keys[] = {
    "step", "episode", "lr", "epoch", "objective/kl", "objective/scores",
    "objective/rlhf_reward", "objective/non_score_reward", "objective/entropy",
    "objective/kl_coef", "loss/policy_avg", "loss/value_avg", "policy/approxkl_avg",
    "policy/clipfrac_avg", "policy/entropy_avg", "val/clipfrac_avg", "val/sequence_lengths",
    "val/num_stop_token_ids", "val/ratio", "critic/lr", "generator/logprob_diff",
    "generator/staleness", "time/step", "comm/bytes_sent", "comm/bytes_collective"};

static json_t *write_line(PwRun *r)
{
    FILE *f = tmpfile();
    if (!f) exit(1);
    r->metrics = f;
    pw_metrics_write(r, 3);
    rewind(f);
    char buf[16384] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    json_error_t je;
    json_t *o = json_loads(buf, 0, &je);
    CHECK(json_is_object(o), "not a JSON object (%s): %s", je.text, buf);
    return o;
}

int main(void)
{
    PwRun *r = calloc(1, sizeof *r);
    r->s.N = 8;
    r->data.ds.n = 8;
    int one = 0;
    r->w.map.role[PW_ROLE_ACTOR] = (PwRoleRanks){.nranks = 1, .ranks = &one};
    r->w.map.role[PW_ROLE_REFERENCE] = (PwRoleRanks){.nranks = 1, .ranks = &one};

    /* a diverged step: every statistic NaN, the timings infinite either way */
    for (int i = 0; i < PW_ST_COUNT; i++) r->stats[i] = NAN;
    r->stats[PW_ST_GENCOUNT] = 1.0;
    r->stats[PW_ST_LENGTH] = -INFINITY;
    r->step_seconds = INFINITY;
    for (int ph = 0; ph < PW_PH_COUNT; ph++) r->time[PW_ROLE_ACTOR][ph] = NAN;
    r->bytes_sent = 116256.0;
    r->peak_mb[PW_ROLE_ACTOR] = 170.5;
    r->peak_mb[PW_ROLE_REFERENCE] = 168.25;
    json_t *o = write_line(r);
    /* actor's and reference's timings and peak memory */
    size_t want = PW_ARRAY_LEN(keys) + 2 * PW_PH_COUNT + 2;
    CHECK(json_object_size(o) == want, "%zu keys, expected %zu", json_object_size(o), want);
    CHECK(json_number_value(json_object_get(o, "comm/bytes_sent")) == 116256.0 &&
              json_number_value(json_object_get(o, "comm/bytes_collective")) == 0.0,
          "comm/bytes_* not the run's");
    CHECK(json_number_value(json_object_get(o, "memory/actor/peak_mb")) == 170.5 &&
              json_number_value(json_object_get(o, "memory/reference/peak_mb")) == 168.25,
          "memory/<role>/peak_mb not the run's");
    CHECK(json_object_get(o, "memory/critic/peak_mb") == NULL, "a role the run lacks");
    for (size_t i = 0; i < PW_ARRAY_LEN(keys); i++) {
        json_t *v = json_object_get(o, keys[i]);
        double x = 0.0;
        CHECK(v != NULL, "key %s is missing", keys[i]);
        CHECK(pw_metric_get(v, &x) == 1, "key %s does not read back", keys[i]);
    }
    static const struct {
        const char *key, *text;
    } bad[] = {{"objective/kl", "nan"},        {"loss/policy_avg", "nan"},
               {"policy/approxkl_avg", "nan"}, {"loss/value_avg", "nan"},
               {"val/sequence_lengths", "-inf"}, {"time/step", "inf"},
               {"time/actor/train", "nan"}};
    for (size_t i = 0; i < PW_ARRAY_LEN(bad); i++) {
        const char *got = json_string_value(json_object_get(o, bad[i].key));
        CHECK(got && !strcmp(got, bad[i].text), "%s is %s, expected \"%s\"", bad[i].key,
              got ? got : "not a string", bad[i].text);
    }
    double x = 0.0;
    CHECK(pw_metric_get(json_object_get(o, "time/step"), &x) == 1 && isinf(x) && x > 0,
          "\"inf\" reads back as %g", x);
    CHECK(pw_metric_get(json_object_get(o, "objective/kl"), &x) == 1 && isnan(x),
          "\"nan\" reads back as %g", x);
    json_decref(o);

    /* a healthy step: plain numbers, as json_real writes them */
    for (int i = 0; i < PW_ST_COUNT; i++) r->stats[i] = 0.125 * i;
    r->step_seconds = 1.5;
    for (int ph = 0; ph < PW_PH_COUNT; ph++) r->time[PW_ROLE_ACTOR][ph] = 0.5;
    o = write_line(r);
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) CHECK(json_is_number(v), "%s is not a number", k);
    CHECK(json_real_value(json_object_get(o, "loss/policy_avg")) == 0.125 * PW_ST_PG,
          "loss/policy_avg %g", json_real_value(json_object_get(o, "loss/policy_avg")));
    CHECK(json_object_get(o, "runtime/skipped_steps") == NULL,
          "runtime/skipped_steps written with runtime.on_nonfinite: stop");
    json_decref(o);

    /* with runtime.on_nonfinite: skip_step the line counts the skipped updates */
    r->s.skip_nonfinite = 1;
    r->stats[PW_ST_SKIPPED] = 3.0;
    o = write_line(r);
    CHECK(json_number_value(json_object_get(o, "runtime/skipped_steps")) == 3.0,
          "runtime/skipped_steps missing or wrong");
    json_decref(o);
    free(r);
    return pw_test_done("test_metrics_nonfinite");
}
