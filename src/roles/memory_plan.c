/* memory_plan.c: `ppo_world --dry-run` with a run configuration: the memory each rank will hold
 * on its device, from the models' config.json and the run's sizes, before anything is loaded
 * (pw_model_plan, pw_gen_plan: exact for the models' and caches' own buffers), so that a run that
 * cannot fit is seen before minutes of loading. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pw_device.h"
#include "pw_binding.h"
#include "pw_generate.h"
#include "pw_memcheck.h"
#include "pw_placement.h"
#include "pw_roles.h"
#include "roles.h"
#include "shard.h"

#define MIB (1024.0 * 1024.0)

/* What one role holds on a rank. */
typedef struct Held {
    size_t base;    /* weights, their bfloat16 copy, buffers, activations, gradients */
    size_t moments; /* AdamW's (a trained model) */
    size_t gen;     /* a generator's KV cache and sampler */
    size_t load;    /* the models as they are loaded, before any forward (pw_model_bytes_most) */
} Held;

/* The model in `dir` with `heads` of `role` (named `label`), at the run's sizes on `dev`, as
 * pw_ppo_run loads it (pw_run_model_opts); gen_rows > 0: with a generator of that many rows. The
 * models that keep activations for a backward (the actor's and the critic's, by those options)
 * train: gradients and moments; the generator only decodes, and never makes the activations of
 * a forward. One row of the table (none without `out`). */
static int plan_model(const PwRun *r, int rank, PwRole role, const char *label, const char *dir,
                      int heads, PwDevice dev, int gen_rows, int idx, int nranks, Held *h,
                      FILE *out, PwErr *err)
{
    PwArch a;
    if (pw_arch_load(&a, dir, err)) return -1;
    PwModelOpts o = pw_run_model_opts(r, role, dev, heads);
    const int trained = o.acts != PW_ACTS_NONE; /* the roles that train keep activations */
    const int decode_only = role == PW_ROLE_GENERATOR;
    PwModelBytes b;
    size_t gen = 0;
    PwErr e;
    /* optim.zero_stage 1: a trained model's share of the moments on this rank (role rank
     * idx; shard.h), and at bf16 of the float32 weights */
    if ((trained ? pw_shard_plan(r->s.zero_stage, nranks, idx, &a, &o, &b, &e)
                 : pw_model_plan(&a, &o, &b, &e)) ||
        (gen_rows > 0 && pw_gen_plan(&a, &o, gen_rows, r->maxT, &gen, &e)))
        return pw_errf(err, "%s '%s': %s", label, dir, e.msg);
    if (decode_only) b.activations = 0;
    /* optim.zero_stage 2 at bf16: actor rank 0 packs the generators' payload where its split
     * gradients were (pw_model_weights_out), which may be the larger */
    if (trained && r->s.zero_stage >= 2 && nranks > 1 && role == PW_ROLE_ACTOR && idx == 0 &&
        gen_rows == 0 && r->s.precision == PW_PRECISION_BF16 && b.transfer > b.grads)
        b.grads = b.transfer;
    size_t train = trained ? b.backward + b.grads + b.moments : 0;
    size_t weights = b.params + b.params_bf16 + b.buffers;
    if (out)
        fprintf(out, "%5d  %-6s %-10s %9.1f %9.1f %12.1f %11.1f  %s (%s)\n", rank,
                pw_device_names[dev], label, weights / MIB, train / MIB, b.activations / MIB,
                gen / MIB, dir, pw_family_name(a.family));
    h->base += weights + b.activations + (trained ? b.backward + b.grads : 0);
    h->moments += trained ? b.moments : 0;
    h->gen += gen;
    h->load += b.load;
    return 0;
}

/* The roles of world rank `rank`, one row each (a reward rank: each member it serves). */
static int plan_rank(const PwRun *r, const PwRoleMap *map, int rank, Held *h, FILE *out,
                     PwErr *err)
{
    const PwSettings *s = &r->s;
    int gen_rows = s->gen_micro < s->N ? s->gen_micro : s->N;
    int has_gen = pw_role_present(map, PW_ROLE_GENERATOR);
    for (int ri = 0; ri < PW_ROLE_COUNT; ri++) {
        const PwRole role = (PwRole)ri;
        int idx = pw_role_index(map, role, rank);
        if (idx < 0) continue;
        PwDevice dev = map->role[role].device;
        const char *name = pw_role_name(role);
        const int nr = map->role[role].nranks;
        int rc = 0;
        switch (ri) {
        case PW_ROLE_ACTOR: /* without a generator role the actor samples itself */
            rc = plan_model(r, rank, role, name, s->sft, PW_HEAD_LM, dev, has_gen ? 0 : gen_rows,
                            idx, nr, h, out, err);
            break;
        case PW_ROLE_REFERENCE:
            rc = plan_model(r, rank, role, name, s->sft, PW_HEAD_LM, dev, 0, idx, nr, h, out,
                            err);
            break;
        case PW_ROLE_GENERATOR:
            rc = plan_model(r, rank, role, name, s->sft, PW_HEAD_LM, dev, gen_rows, idx, nr, h, out,
                            err);
            break;
        case PW_ROLE_CRITIC: { /* as load_models starts it: its own folder, the first reward
                                * model's trunk, or (a verifier) the SFT trunk */
            const char *dir = s->critic && *s->critic                      ? s->critic
                              : !pw_member_is_verifier(&r->member[0]) ? s->reward[0]
                                                                       : s->sft;
            rc = plan_model(r, rank, role, name, dir, PW_HEAD_VALUE, dev, 0, idx, nr, h, out,
                            err);
            break;
        }
        case PW_ROLE_REWARD:
            for (int k = 0; k < r->K && !rc; k++) {
                const PwMember *m = &r->member[k];
                int serves = 0;
                for (int i = 0; i < m->nranks; i++) serves |= m->idx[i] == idx;
                if (serves && !pw_member_is_verifier(m))
                    rc = plan_model(r, rank, role, name, m->name, PW_HEAD_SCORE, dev, 0, idx, nr, h,
                                    out, err);
            }
            /* the gold reward model of the evaluations, on reward rank 0 */
            if (!rc && idx == 0 && s->eval_every > 0 && s->gold && *s->gold && !r->gold_task &&
                r->gold_token < 0)
                rc = plan_model(r, rank, role, "gold", s->gold, PW_HEAD_SCORE, dev, 0, idx, nr, h,
                                out, err);
            break;
        }
        if (rc) return -1;
    }
    return 0;
}

/* Rank `rank`'s most at once: a rank that trains frees its generator's cache for the update;
 * with offloading the moments leave the device while it generates. The larger of the two
 * phases, or of the load before them. Its rows go to `out` where given. */
static int rank_peak(const PwRun *r, const PwPlacement *pl, int rank, FILE *out, size_t *peak,
                     PwErr *err)
{
    Held h = {0};
    if (plan_rank(r, &pl->map, rank, &h, out, err)) return -1;
    int trains = h.moments > 0;
    int offload = r->s.offload_adam && pw_placement_rank_device(pl, rank) == PW_DEVICE_CUDA;
    *peak = h.base + (!trains             ? h.gen
                      : !offload          ? h.moments + h.gen
                      : h.moments > h.gen ? h.moments
                                          : h.gen);
    /* the models as they load: at bf16 a trained one with split master weights holds the whole
     * float32 and its copy before the split, which for many ranks can be the most */
    if (h.load > *peak) *peak = h.load;
    return 0;
}

int pw_ppo_rank_memory(const PwRun *r, const struct PwPlacement *pl, int rank, size_t *peak,
                       PwErr *err)
{
    return rank_peak(r, pl, rank, NULL, peak, err);
}

/* One memory of this host (`what`) and what its ranks plan (`ranks`: "0, 3"). */
static int verdict(FILE *out, const char *what, const char *dev, const char *ranks, size_t sum,
                   size_t have, const char *of, const char *source)
{
    int many = strchr(ranks, ',') != NULL, over = sum > have;
    fprintf(out, "  %s: %s rank%s %s at most %.1f MiB%s of %s %.1f MiB%s%s\n", what, dev,
            many ? "s" : "", ranks, sum / MIB, many ? " together" : "", of, have / MIB, source,
            over ? ": DOES NOT FIT" : "");
    return over;
}

/* Whether rank r's GPU is this process's device `mem` at PCI address `addr` (ranks that
 * CUDA_VISIBLE_DEVICES gives one GPU each all call theirs 0: pw_binding_gpu_is); a cuda rank
 * that found none, or no bindings at all (a plan without a job), counts as on GPU 0. */
static int on_gpu(const PwBinding *where, int r, int mem, const char *addr)
{
    if (!where || where[r].gpu < 0) return mem == 0;
    return pw_binding_gpu_is(&where[r], mem, addr);
}

/* The ranks on this host on memory `mem` (-1: the host's; else this process's GPU mem, at PCI
 * address addr), as "0, 3", and the sum of their plans. */
static size_t group(const PwPlacement *pl, const PwBinding *where, const char *here,
                    const size_t *peak, int mem, const char *addr, char *ranks, size_t n)
{
    size_t sum = 0, len = 0;
    ranks[0] = '\0';
    for (int r = 0; r < pl->map.world_size; r++) {
        PwDevice dev = pw_placement_rank_device(pl, r);
        int on = dev == PW_DEVICE_CPU ? mem == -1 : mem >= 0 && on_gpu(where, r, mem, addr);
        if (!on || (where && strcmp(where[r].host, here))) continue;
        sum += peak[r];
        if (len + 16 < n) len += (size_t)snprintf(ranks + len, n - len, "%s%d", len ? ", " : "", r);
    }
    return sum;
}

/* What the actor hands the generators after each update (pw_model_weights_out) */
static int transfer_line(const PwRun *r, FILE *out, PwErr *err)
{
    PwArch a;
    PwModelBytes b;
    PwErr e;
    PwModelOpts o = pw_run_model_opts(r, PW_ROLE_ACTOR, PW_DEVICE_CPU, PW_HEAD_LM);
    if (pw_arch_load(&a, r->s.sft, err)) return -1;
    if (pw_model_plan(&a, &o, &b, &e)) return pw_errf(err, "actor '%s': %s", r->s.sft, e.msg);
    fprintf(out, "  actor -> generator weights: %zu bytes a step (%.1f MiB: %s)\n", b.transfer,
            b.transfer / MIB, r->s.precision == PW_PRECISION_BF16
                                  ? "the layers' matrices in bfloat16, the rest in float32"
                                  : "the float32 parameters");
    return 0;
}

int pw_ppo_memory_plan(const struct PwConfig *cfg, const struct PwPlacement *pl,
                       const struct PwBinding *where, FILE *out, size_t *peaks, PwErr *err)
{
    PwRun *r = pw_run_prepare(cfg, pl, err);
    if (!r) return -1;
    const PwSettings *s = &r->s;
    const int n = pl->map.world_size;
    size_t *peak = pw_roles_alloc((size_t)n * sizeof *peak);
    fprintf(out, "\nmemory plan (MiB; model.precision %s; models at %d rows x %d tokens, "
            "generation %d rows; optim.offload_adam_states %s; optim.zero_stage %d):\n"
            " rank  device role         weights  training  activations  generation  model\n",
            pw_precision_name(s->precision), s->micro < s->N ? s->micro : s->N, r->maxT,
            s->gen_micro < s->N ? s->gen_micro : s->N, s->offload_adam ? "true" : "false",
            s->zero_stage);
    for (int rank = 0; rank < n; rank++) {
        if (rank_peak(r, pl, rank, out, &peak[rank], err)) {
            free(peak);
            pw_run_free(r);
            return -1;
        }
        if (peaks) peaks[rank] = peak[rank];
        fprintf(out, "%5d  %-6s at most %.1f MiB\n", rank,
                pw_device_names[pw_placement_rank_device(pl, rank)], peak[rank] / MIB);
    }
    /* What shares a memory on this host, against it: the cpu ranks the host's available memory
     * (a dry run without a job plans every rank here), each GPU's cuda ranks its total. */
    char here[64] = "", ranks[256], what[64];
    if (gethostname(here, sizeof here - 1)) here[0] = '\0';
    int over = 0;
    PwHostMemory host;
    size_t sum = group(pl, where, here, peak, -1, "", ranks, sizeof ranks);
    if (ranks[0] && !pw_host_memory("", &host)) {
        char source[200];
        snprintf(source, sizeof source, " available (%s)", host.source);
        over |= verdict(out, "this host", "cpu", ranks, sum, host.bytes, "the", source);
    }
    int ngpus = pw_device_count();
    for (int g = 0; g < ngpus; g++) {
        char addr[32] = "";
        unsigned dom, bus, dv;
        if (!pw_device_pci_id(g, &dom, &bus, &dv))
            snprintf(addr, sizeof addr, "%04x:%02x:%02x.0", dom, bus, dv);
        sum = group(pl, where, here, peak, g, addr, ranks, sizeof ranks);
        size_t total = pw_device_total_bytes(g);
        snprintf(what, sizeof what, "cuda:%d here", g);
        if (ranks[0] && total) over |= verdict(out, what, "cuda", ranks, sum, total, "its", "");
    }
    free(peak);
    if (pw_role_present(&pl->map, PW_ROLE_GENERATOR) && transfer_line(r, out, err)) {
        pw_run_free(r);
        return -1;
    }
    fprintf(out, "(weights: the float32 parameters and their bfloat16 copy at bf16 (the "
                 "scoring models and the generator keep their layers' matrices in bfloat16 "
                 "alone, and with optim.zero_stage 1\n a trained model the float32 of its "
                 "share of them), the input buffers; training: the backward's scratch, the "
                 "gradients (with optim.zero_stage 2 their share\n and the buffers a backward "
                 "sums) and AdamW's moments (their share); activations: what a forward holds; "
                 "generation: the KV cache and the\n sampler. A rank that trains frees its KV "
                 "cache for the update, and with offloading its moments leave the device while "
                 "it generates.\n A rank's most is the larger phase, or the models as they load "
                 "if that is more. The kernels' scratch and the libraries' workspaces (cuBLAS, "
                 "NCCL)\n come on top.)\n");
    pw_run_free(r);
    if (over)
        return pw_errf(err, "%s: the planned memory is more than this host's memory has "
                       "(DOES NOT FIT above)", pl->path);
    return 0;
}
