/* test_control.c: the KL coefficient controller (fixed and adaptive, one step by hand) and the
 * learning-rate schedule at hand-computed steps. */
#include "algo_test.h"

/* Adaptive, beta 0.1, target 6, horizon 10000, batches of 512 sequences:
 *   kl 9:   e = 9/6 - 1 = 0.5 -> clamped 0.2; beta = 0.1 * (1 + 0.2*512/10000) = 0.101024
 *   kl 3:   e = -0.5 -> -0.2;  beta = 0.101024 * (1 - 0.01024) = 0.09998951424
 *   kl 6.6: e = 0.1 (inside the clamp); beta = 0.09998951424 * 1.00512 = 0.1005014621...
 *   kl 6:   e = 0, unchanged. */
static void test_kl_controller(void)
{
    PwKlController c;
    PwErr err = {{0}};
    CHECK(pw_kl_controller_adaptive(&c, 0.1, 6.0, 10000.0, &err) == 0, "%s", err.msg);
    CHECK_CLOSE(pw_kl_controller_update(&c, 9.0, 512), 0.101024, 1e-15);
    CHECK_CLOSE(pw_kl_controller_update(&c, 3.0, 512), 0.09998951424, 1e-15);
    CHECK_CLOSE(pw_kl_controller_update(&c, 6.6, 512), 0.09998951424 * 1.00512, 1e-14);
    double b = c.beta;
    CHECK(pw_kl_controller_update(&c, 6.0, 512) == b, "kl at target moved beta");

    pw_kl_controller_fixed(&c, 0.05);
    CHECK(pw_kl_controller_update(&c, 100.0, 512) == 0.05, "fixed beta moved");
    CHECK(pw_kl_controller_adaptive(&c, 0.1, 0.0, 10000.0, &err) == -1, "target 0");
    CHECK(strstr(err.msg, "ppo.target_kl") != NULL, "%s", err.msg);
    CHECK(pw_kl_controller_adaptive(&c, 0.1, 6.0, -1.0, &err) == -1, "horizon < 0");
}

/* lr 1, floor 0.1, warm-up 10 steps, 110 steps in all (100 of decay):
 *   step 0 -> 0, step 5 -> 0.5, step 10 -> 1 (every decay)
 *   linear step 60 (p = 0.5) -> 0.1 + 0.9*0.5 = 0.55, step 110 -> 0.1, step 500 -> 0.1
 *   cosine step 35 (p = 0.25) -> 0.1 + 0.9*0.5*(1 + cos(pi/4)) = 0.8681980515339464
 *   cosine step 60 -> 0.55, constant step 60 -> 1
 *   Hugging Face linear (floor 0): step 60 -> 0.5 */
static void test_lr_schedule(void)
{
    PwLrSchedule s = {PW_LR_LINEAR, 1.0, 0.1, 10, 110};
    PwErr err = {{0}};
    CHECK(pw_lr_schedule_check(&s, &err) == 0, "%s", err.msg);
    CHECK(pw_lr_at(&s, 0) == 0.0, "warm-up start %g", pw_lr_at(&s, 0));
    CHECK_CLOSE(pw_lr_at(&s, 5), 0.5, 1e-15);
    CHECK_CLOSE(pw_lr_at(&s, 10), 1.0, 1e-15);
    CHECK_CLOSE(pw_lr_at(&s, 60), 0.55, 1e-15);
    CHECK_CLOSE(pw_lr_at(&s, 110), 0.1, 1e-15);
    CHECK_CLOSE(pw_lr_at(&s, 500), 0.1, 1e-15);
    s.decay = PW_LR_COSINE;
    CHECK_CLOSE(pw_lr_at(&s, 10), 1.0, 1e-15);
    CHECK_CLOSE(pw_lr_at(&s, 35), 0.8681980515339464, 1e-15);
    CHECK_CLOSE(pw_lr_at(&s, 60), 0.55, 1e-15);
    CHECK_CLOSE(pw_lr_at(&s, 110), 0.1, 1e-15);
    s.decay = PW_LR_CONSTANT;
    CHECK_CLOSE(pw_lr_at(&s, 5), 0.5, 1e-15);
    CHECK(pw_lr_at(&s, 60) == 1.0 && pw_lr_at(&s, 500) == 1.0, "constant");
    PwLrSchedule hf = {PW_LR_LINEAR, 1.0, 0.0, 0, 100};
    CHECK(pw_lr_at(&hf, 0) == 1.0, "no warm-up: full lr at step 0");
    CHECK_CLOSE(pw_lr_at(&hf, 50), 0.5, 1e-15);

    PwLrDecay d;
    CHECK(pw_lr_decay_parse("Cosine", &d, &err) == 0 && d == PW_LR_COSINE, "parse");
    CHECK(pw_lr_decay_parse("step", &d, &err) == -1, "step accepted");
    CHECK(strcmp(pw_lr_decay_name(PW_LR_LINEAR), "linear") == 0, "name");
    PwLrSchedule bad = {PW_LR_LINEAR, 1.0, 0.1, 20, 10};
    CHECK(pw_lr_schedule_check(&bad, &err) == -1, "warm-up longer than run");
    bad = (PwLrSchedule){PW_LR_LINEAR, 1.0, 2.0, 0, 10};
    CHECK(pw_lr_schedule_check(&bad, &err) == -1, "min_lr > lr");
}

int main(void)
{
    test_kl_controller();
    test_lr_schedule();
    return pw_test_done("test_control");
}
