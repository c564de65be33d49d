/* test_bt_loss.c: the Bradley-Terry reward-model loss: log 2 at equal scores, hand values,
 * extreme margins without overflow, gradients by central finite differences, accuracy. */
#include "algo_test.h"

static void test_hand_values(void)
{
    /* Equal scores: -log sigmoid(0) = log 2, dL/ds_c = -1/2 / N, dL/ds_r = +1/2 / N, and a
     * tie is not a correct ranking. */
    const float c[2] = {0.3f, -1.0f}, r[2] = {0.3f, -1.0f};
    float dc[2], dr[2];
    PwBtStats st;
    pw_bt_loss(&st, dc, dr, c, r, 2, 0.0);
    CHECK_CLOSE(st.loss, log(2.0), 1e-15);
    CHECK(st.accuracy == 0.0, "ties counted correct: %g", st.accuracy);
    for (int i = 0; i < 2; i++) {
        CHECK_CLOSE(dc[i], -0.25, 1e-7);
        CHECK_CLOSE(dr[i], 0.25, 1e-7);
    }
    /* Margins +1 and -1: softplus(-1) = 0.31326168751822286, softplus(1) = 1.3132616875182228,
     * mean 0.8132616875182228; accuracy 1/2; margin mean 0. */
    const float c2[2] = {1.0f, 0.0f}, r2[2] = {0.0f, 1.0f};
    pw_bt_loss(&st, dc, dr, c2, r2, 2, 0.0);
    CHECK_CLOSE(st.loss, 0.8132616875182228, 1e-15);
    CHECK(st.accuracy == 0.5 && st.margin_mean == 0.0, "acc %g margin %g", st.accuracy,
          st.margin_mean);
    /* sigmoid(-1) = 0.2689414213699951, halved by N = 2. */
    CHECK_CLOSE(dc[0], -0.2689414213699951 / 2, 1e-7);
    CHECK_CLOSE(dr[1], 0.7310585786300049 / 2, 1e-7);
}

/* Margins of +-100 and +-1000 overflow a naive log(1 + exp(-m)). */
static void test_extremes(void)
{
    const float c[4] = {100.0f, -100.0f, 1000.0f, -1000.0f}, r[4] = {0, 0, 0, 0};
    float dc[4], dr[4];
    PwBtStats st;
    pw_bt_loss(&st, dc, dr, c, r, 1, 0.0);
    CHECK(st.loss > 0.0 && st.loss < 1e-40, "m = 100: %g", st.loss);
    pw_bt_loss(&st, dc, dr, c + 1, r, 1, 0.0);
    CHECK_CLOSE(st.loss, 100.0, 1e-15);
    pw_bt_loss(&st, dc, dr, c + 2, r, 2, 0.0);
    CHECK_CLOSE(st.loss, 500.0, 1e-15);
    CHECK(isfinite(dc[0]) && isfinite(dc[1]) && dc[0] == 0.0f && dc[1] == -0.5f, "grads %g %g",
          dc[0], dc[1]);
}

static double loss_at(const float *c, const float *r, int n)
{
    PwBtStats st;
    pw_bt_loss(&st, NULL, NULL, c, r, n, 0.0);
    return st.loss;
}

/* Central differences, h = 1e-3, float steps measured exactly; the loss is smooth, so the
 * error is O(h^2) ~ 1e-7 of the gradient scale. Tolerance 1e-5 relative to max |g|. */
static void test_finite_differences(void)
{
    enum { N = 32 };
    const double h = 1e-3;
    unsigned long long seed = 23;
    float c[N], r[N], dc[N], dr[N];
    algo_test_normal(c, N, 0.5, 2.0, &seed);
    algo_test_normal(r, N, 0.0, 2.0, &seed);
    PwBtStats st;
    pw_bt_loss(&st, dc, dr, c, r, N, 0.0);
    double err = 0.0, gmax = 0.0, correct = 0.0;
    for (int i = 0; i < N; i++) {
        gmax = fmax(gmax, fabs(dc[i]));
        correct += c[i] > r[i];
        CHECK(dc[i] == -dr[i], "dc != -dr at %d", i);
        float x = c[i], xp = (float)(x + h), xm = (float)(x - h);
        c[i] = xp;
        double lp = loss_at(c, r, N);
        c[i] = xm;
        double lm = loss_at(c, r, N);
        c[i] = x;
        err = fmax(err, fabs((lp - lm) / ((double)xp - (double)xm) - dc[i]));
        x = r[i], xp = (float)(x + h), xm = (float)(x - h);
        r[i] = xp;
        lp = loss_at(c, r, N);
        r[i] = xm;
        lm = loss_at(c, r, N);
        r[i] = x;
        err = fmax(err, fabs((lp - lm) / ((double)xp - (double)xm) - dr[i]));
    }
    CHECK(err <= 1e-5 * gmax, "max abs err %g, max |g| %g", err, gmax);
    CHECK_CLOSE(st.accuracy, correct / N, 1e-15);
}

int main(void)
{
    test_hand_values();
    test_extremes();
    test_finite_differences();
    return pw_test_done("test_bt_loss");
}
