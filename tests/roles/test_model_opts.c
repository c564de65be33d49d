/* test_model_opts.c: the options each role's models are made with (pw_run_model_opts), the rule
 * docs/model.md states: the actor and the critic train (every layer's activations, or their
 * inputs with model.activation_checkpointing); the reference and the reward models only score,
 * are frozen, and make their logits a tile (PW_LM_TILE rows) at a time where the run's
 * model.lm_head_chunk is 0 or a multiple of the tile, else in that chunk; the generator only
 * decodes and is not frozen but follows the actor (it takes the actor's weights every step);
 * only the generator follows. A unit test of
 * src/roles/run.c, so it reads the roles' internal header; no MPI, nothing loaded. */
#include <string.h>

#include "../../src/roles/roles.h"
#include "pw_test.h"

static PwModelOpts opts(int lm_chunk, int recompute, PwRole role)
{
    static PwRun r; /* large: not on the stack */
    memset(&r, 0, sizeof r);
    r.s.N = 64;
    r.s.micro = 16;
    r.s.precision = PW_PRECISION_BF16;
    r.s.lm_chunk = lm_chunk;
    r.s.recompute = recompute;
    r.maxT = 96;
    return pw_run_model_opts(&r, role, PW_DEVICE_CPU, PW_HEAD_LM);
}

int main(void)
{
    /* who trains, who is frozen, who follows */
    PwModelOpts a = opts(0, 0, PW_ROLE_ACTOR), c = opts(0, 1, PW_ROLE_CRITIC);
    PwModelOpts ref = opts(0, 0, PW_ROLE_REFERENCE), rw = opts(0, 0, PW_ROLE_REWARD);
    PwModelOpts gen = opts(0, 0, PW_ROLE_GENERATOR);
    CHECK(a.acts == PW_ACTS_KEEP && !a.frozen && a.lm_chunk == 0, "actor: acts %d frozen %d "
          "chunk %d", (int)a.acts, a.frozen, a.lm_chunk);
    CHECK(c.acts == PW_ACTS_RECOMPUTE && !c.frozen, "critic with checkpointing: acts %d frozen %d",
          (int)c.acts, c.frozen);
    CHECK(ref.acts == PW_ACTS_NONE && ref.frozen && rw.acts == PW_ACTS_NONE && rw.frozen,
          "reference and reward: acts %d/%d frozen %d/%d", (int)ref.acts, (int)rw.acts,
          ref.frozen, rw.frozen);
    CHECK(gen.acts == PW_ACTS_NONE && !gen.frozen && gen.follows && gen.lm_chunk == 0,
          "generator: acts %d frozen %d follows %d chunk %d", (int)gen.acts, gen.frozen,
          gen.follows, gen.lm_chunk);
    CHECK(!a.follows && !c.follows && !ref.follows && !rw.follows,
          "follows: actor %d critic %d reference %d reward %d", a.follows, c.follows,
          ref.follows, rw.follows);
    CHECK(a.maxB == 16 && a.maxT == 96 && ref.precision == PW_PRECISION_BF16,
          "sizes: maxB %d maxT %d", a.maxB, a.maxT);
    /* the reference's chunk: a tile, unless the run's chunk is not a multiple of one */
    static const int run_chunk[] = {0, PW_LM_TILE, 2 * PW_LM_TILE, 700, 1500};
    static const int want[] = {PW_LM_TILE, PW_LM_TILE, PW_LM_TILE, 700, 1500};
    for (int i = 0; i < 5; i++) {
        PwModelOpts r = opts(run_chunk[i], 0, PW_ROLE_REFERENCE);
        PwModelOpts t = opts(run_chunk[i], 0, PW_ROLE_ACTOR);
        CHECK(r.lm_chunk == want[i] && t.lm_chunk == run_chunk[i],
              "model.lm_head_chunk %d: reference %d (want %d), actor %d", run_chunk[i],
              r.lm_chunk, want[i], t.lm_chunk);
    }
    return pw_test_done("test_model_opts");
}
