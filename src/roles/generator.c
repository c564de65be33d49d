/* generator.c: the generator role: sample responses y ~ pi_gen(.|x) for its block of prompts
 * with temperature / top-k / top-p until stop or max_new_tokens (docs/algorithm.md, Rollout). */
#include <stdlib.h>
#include <string.h>

#include "pw_generate.h"
#include "pw_rng.h"
#include "roles.h"

void pw_generator_generate(PwRun *r, PwModel *m, PwRows *rows, float *logp, int64_t step)
{
    PwErr err;
    /* generation has a batch size of its own: a decode step reads every weight whatever the
     * rows, so wider batches cost less a row (GPT-2 124M on an H100: 1.7 ms a step at 64 rows,
     * 3.0 ms at 256; docs/performance.md) */
    int mb = r->s.gen_micro < r->s.N ? r->s.gen_micro : r->s.N;
    if (!r->sampler && !(r->sampler = pw_gen_create(m, mb, r->maxT, &err)))
        pw_comm_fatal(__FILE__, __LINE__, "generator: %s", err.msg);
    /* Each row's random stream is named by its global row and the step's seed, so the tokens of
     * a row do not depend on which rank or micro batch generated it. */
    PwGenConfig gc = {.max_new_tokens = r->R, .stop_token = r->stop_id, .pad_token = r->pad_id,
                      .sample = {(float)r->s.temperature, r->s.top_k, (float)r->s.top_p},
                      .seed = pw_rng_tuple(r->s.seed, (uint64_t)step, 0x9e11ull),
                      .check_every = 0 /* the device's */,
                      /* each decode step a CUDA graph: 1.06x at batch 256 on an H100, the same
                       * tokens as launched (cuda_model); nothing on the CPU */
                      .graph = 1};
    uint64_t *ids = pw_roles_alloc((size_t)mb * sizeof *ids);
    int P = rows->P, R = rows->R;
    for (int i0 = 0; i0 < rows->n; i0 += mb) {
        int nb = rows->n - i0 < mb ? rows->n - i0 : mb;
        for (int b = 0; b < nb; b++) ids[b] = (uint64_t)(rows->r0 + i0 + b);
        if (pw_generate(r->sampler, rows->prompt + (size_t)i0 * P, rows->pmask + (size_t)i0 * P, nb,
                        P, ids, &gc, &err))
            pw_comm_fatal(__FILE__, __LINE__, "generator: %s", err.msg);
        PwGen *g = r->sampler;
        memcpy(rows->tokens + (size_t)i0 * R, g->tokens, (size_t)nb * R * sizeof(int));
        /* unfiltered log-probs at the sampling temperature: what the actor recomputes */
        memcpy(logp + (size_t)i0 * R, g->logp_full, (size_t)nb * R * sizeof(float));
    }
    free(ids);
    pw_rows_finish(rows, r->stop_id);
    /* A rank that also trains gives the KV cache's memory back before the update, as NeMo-Aligner
     * frees its cache for training; the next generation makes it again. No state is lost: every
     * call seeds its rows' streams afresh and fills the cache from its prompts. */
    if (pw_run_has(r, PW_ROLE_ACTOR) || pw_run_has(r, PW_ROLE_CRITIC)) {
        pw_gen_free(r->sampler);
        r->sampler = NULL;
    }
}
