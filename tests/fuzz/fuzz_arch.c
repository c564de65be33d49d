/* fuzz_arch.c: libFuzzer target for a model folder's config.json (pw_arch_load, GPT-2 and the
 * Llama family): any bytes give a message or an architecture a small model can be built on. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "pw_model.h"

/* Parameters of the largest model the target builds: larger architectures are only parsed
 * and checked, so that one input cannot spend the time budget on a forward. */
#define MAX_PARAMS 2e6

/* The parameter count in double, so that no architecture can overflow it: an upper bound for
 * both families (GPT-2's MLP is 4C wide, Llama's n_inner; untied heads counted). */
static double params_bound(const PwArch *a)
{
    double C = a->n_embd, inner = a->n_inner > 4 * a->n_embd ? a->n_inner : 4.0 * a->n_embd;
    return 2.0 * a->vocab_size * C + (double)a->n_positions * C +
           (double)a->n_layer * (4.0 * C * C + 3.0 * C * inner + 8.0 * C) + 4.0 * C;
}

/* What a role does with the folder's architecture: a model on it, initialised and run once
 * over a few tokens with every head. */
static void use(const PwArch *a)
{
    PwErr err;
    int T = a->n_positions < 4 ? a->n_positions : 4;
    PwModelOpts o = {.heads = PW_HEAD_LM | PW_HEAD_SCORE | PW_HEAD_VALUE, .maxB = 1, .maxT = T,
                     .device = PW_DEVICE_CPU, .seed = 1};
    PwModel *m = pw_model_create(a, &o, &err);
    if (!m) return;
    pw_model_init_random(m, 1);
    int tokens[4], targets[4];
    for (int t = 0; t < T; t++) {
        tokens[t] = t % a->vocab_size;
        targets[t] = (t + 1) % a->vocab_size;
    }
    float logp[4], value[4], score[1];
    PwModelInput in = {.tokens = tokens, .targets = targets, .B = 1, .T = T};
    PwOutputs out = {.width = T, .logp = logp, .value = value, .score = score};
    (void)pw_model_forward(m, &in, &out, &err);
    pw_model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_write("config.json", data, size);
    PwArch a;
    PwErr err;
    if (pw_arch_load(&a, fuzz_dir_get(), &err) == 0 && pw_arch_check(&a, &err) == 0 &&
        params_bound(&a) <= MAX_PARAMS)
        use(&a);
    return 0;
}
