/* test_transport.c: the transport table and the one-rank-per-GPU check as pure functions of a
 * placement and the GPUs its ranks were given, including what ppo_world cannot show in one
 * build: without NCCL, with a CUDA-aware MPI, ranks on several hosts.
 *
 *   test_transport CONFIGS_PLACEMENTS_DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pw_test.h"
#include "pw_transport.h"

static const char *dir;

static void load(const char *name, int world, PwPlacement *p)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    PwErr err = {{0}};
    int rc = pw_placement_load(path, world, p, &err);
    CHECK(rc == 0, "%s: %s", path, err.msg);
    if (rc) exit(pw_test_done("transport"));
}

/* A placement from its text (through a temporary file); 0, or -1 after a failed check. */
static int load_text(const char *yaml, int world, PwPlacement *p)
{
    char path[] = "/tmp/pw_transport_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0) return -1;
    size_t len = strlen(yaml);
    CHECK(write(fd, yaml, len) == (ssize_t)len, "write");
    close(fd);
    PwErr err = {{0}};
    int rc = pw_placement_load(path, world, p, &err);
    unlink(path);
    CHECK(rc == 0, "%s", err.msg);
    return rc ? -1 : 0;
}

/* The row of transfer (phase, data, from) over `transport`, as "ranks", or NULL. */
static const PwTransfer *find_row(const PwPlacement *p, PwTransportOpts o, const char *phase,
                                  const char *data, PwRole from, PwRole to, const char *transport)
{
    static PwTransfer t[64];
    int n = pw_transfers(p, &o, t, 64);
    CHECK(n <= 64, "%d transfers", n);
    for (int i = 0; i < n && i < 64; i++)
        if (!strcmp(t[i].phase, phase) && !strcmp(t[i].data, data) && t[i].from == from &&
            t[i].to == to && !strcmp(pw_transport_name(t[i].transport), transport))
            return &t[i];
    return NULL;
}

static const char *find(const PwPlacement *p, PwTransportOpts o, const char *phase,
                        const char *data, PwRole from, PwRole to, const char *transport)
{
    const PwTransfer *t = find_row(p, o, phase, data, from, to, transport);
    return t ? t->ranks : NULL;
}

/* The weights' row over `transport`: a broadcast (b = 1) or a copy on one rank (b = 0). */
#define EXPECT_BROADCAST(p, o, transport, b)                                                       \
    do {                                                                                           \
        const PwTransfer *t_ = find_row(p, o, "weights", "weights", PW_ROLE_ACTOR,                 \
                                        PW_ROLE_GENERATOR, transport);                             \
        CHECK(t_ && t_->broadcast == (b), "weights over %s: broadcast %d, expected %d", transport, \
              t_ ? t_->broadcast : -1, b);                                                         \
    } while (0)

#define EXPECT(p, o, phase, data, from, to, transport, ranks)                                      \
    do {                                                                                           \
        const char *got_ = find(p, o, phase, data, from, to, transport);                           \
        CHECK(got_ && !strcmp(got_, ranks), "%s %s %s->%s over %s: got %s, expected %s", phase,    \
              data, pw_role_name(from), pw_role_name(to), transport, got_ ? got_ : "no row",       \
              ranks);                                                                              \
    } while (0)

static void gpus_on(PwRankGpu *g, int n, const char *const *hosts, const int *ids)
{
    for (int i = 0; i < n; i++) {
        snprintf(g[i].host, sizeof g[i].host, "%s", hosts[i]);
        g[i].gpu = ids[i];
        g[i].pci[0] = '\0';
    }
}

/* the same with each rank's PCI address: bus 0x10 + addr[i] */
static void gpus_at(PwRankGpu *g, int n, const char *const *hosts, const int *ids,
                    const int *addr)
{
    gpus_on(g, n, hosts, ids);
    for (int i = 0; i < n; i++) snprintf(g[i].pci, sizeof g[i].pci, "0000:%02x:00.0", 16 + addr[i]);
}

static void eight_gpus(void)
{
    PwPlacement p;
    load("gpu_8.yaml", 8, &p);
    PwTransportOpts nccl = {1, 0}, no_nccl = {0, 0}, aware = {1, 1};
    const char *h[8] = {"n01", "n01", "n01", "n01", "n01", "n01", "n01", "n01"};
    PwRankGpu g[8];
    PwErr err = {{0}};

    int own[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    gpus_on(g, 8, h, own);
    CHECK(pw_transport_check(&p, &nccl, g, &err) == 0, "one GPU per rank refused: %s", err.msg);
    EXPECT(&p, nccl, "train", "gradients", PW_ROLE_ACTOR, PW_ROLE_ACTOR, "nccl", "0+1");
    EXPECT(&p, nccl, "train", "gradients", PW_ROLE_CRITIC, PW_ROLE_CRITIC, "nccl", "2+3");
    /* weights: actor rank 0 to both generator ranks, staged, or device pointers when MPI takes
     * them; rollout rows are host tensors either way */
    EXPECT(&p, nccl, "weights", "weights", PW_ROLE_ACTOR, PW_ROLE_GENERATOR, "mpi-staged",
           "0->4,0->5");
    EXPECT(&p, aware, "weights", "weights", PW_ROLE_ACTOR, PW_ROLE_GENERATOR, "mpi-cuda",
           "0->4,0->5");
    EXPECT_BROADCAST(&p, nccl, "mpi-staged", 1);
    EXPECT(&p, aware, "generate", "tokens,logp_gen,versions", PW_ROLE_GENERATOR, PW_ROLE_ACTOR,
           "mpi", "4->0,5->1");
    EXPECT(&p, nccl, "generate", "tokens", PW_ROLE_GENERATOR, PW_ROLE_REFERENCE, "mpi",
           "4->6,5->6");
    EXPECT(&p, nccl, "evaluate", "values", PW_ROLE_CRITIC, PW_ROLE_ACTOR, "mpi", "2->0,3->1");
    EXPECT(&p, nccl, "advantages", "returns", PW_ROLE_ACTOR, PW_ROLE_CRITIC, "mpi", "0->2,1->3");
    /* without NCCL the GPU gradients go through host copies to MPI */
    EXPECT(&p, no_nccl, "train", "gradients", PW_ROLE_ACTOR, PW_ROLE_ACTOR, "mpi-staged", "0+1");
    PwTransportOpts aware_no_nccl = {0, 1};
    EXPECT(&p, aware_no_nccl, "train", "gradients", PW_ROLE_ACTOR, PW_ROLE_ACTOR, "mpi-cuda",
           "0+1");

    /* every rank on GPU 0 of one host: the actor's ranks 0 and 1 are the first pair found */
    int one[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    gpus_on(g, 8, h, one);
    CHECK(pw_transport_check(&p, &nccl, g, &err) != 0, "two actor ranks on one GPU accepted");
    CHECK(strstr(err.msg, "gpu_8.yaml:12:23: key 'roles.actor.ranks': ranks 0 and 1 of role "
                          "actor share GPU cuda:0 on host n01; NCCL refuses two ranks of one "
                          "communicator on one GPU; expected one rank per GPU") != NULL,
          "message: %s", err.msg);
    /* no NCCL: MPI all-reduces do not care */
    CHECK(pw_transport_check(&p, &no_nccl, g, &err) == 0, "refused without NCCL: %s", err.msg);

    /* the critic's two ranks share GPU 1; the actor's are apart */
    int crit[8] = {0, 1, 1, 1, 2, 3, 4, 5};
    gpus_on(g, 8, h, crit);
    CHECK(pw_transport_check(&p, &nccl, g, &err) != 0, "two critic ranks on one GPU accepted");
    CHECK(strstr(err.msg, "gpu_8.yaml:13:23: key 'roles.critic.ranks': ranks 2 and 3 of role "
                          "critic share GPU cuda:1 on host n01") != NULL,
          "message: %s", err.msg);

    /* Slurm's --gpus-per-task=1: CUDA_VISIBLE_DEVICES gives each rank one GPU, which every rank
     * calls cuda:0; the addresses tell them apart, and tell a shared one */
    int addr[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    gpus_at(g, 8, h, one, addr);
    CHECK(pw_transport_check(&p, &nccl, g, &err) == 0, "eight GPUs all called cuda:0 refused: %s",
          err.msg);
    int shared[8] = {0, 1, 2, 2, 4, 5, 6, 7};
    gpus_at(g, 8, h, one, shared);
    CHECK(pw_transport_check(&p, &nccl, g, &err) != 0, "two critic ranks at one address accepted");
    CHECK(strstr(err.msg, "ranks 2 and 3 of role critic share GPU cuda:0@0000:12:00.0 on host "
                          "n01") != NULL,
          "message: %s", err.msg);
    /* one rank's address unknown: the ordinals decide, as without addresses */
    gpus_at(g, 8, h, own, shared);
    g[3].pci[0] = '\0';
    CHECK(pw_transport_check(&p, &nccl, g, &err) == 0, "an unknown address with apart ordinals "
          "refused: %s", err.msg);

    /* GPU 0 of two hosts is two GPUs */
    const char *two[8] = {"n01", "n02", "n01", "n02", "n01", "n02", "n01", "n02"};
    int pairs[8] = {0, 0, 1, 1, 2, 2, 3, 3};
    gpus_on(g, 8, two, pairs);
    CHECK(pw_transport_check(&p, &nccl, g, &err) == 0, "two hosts refused: %s", err.msg);

    /* the generator and the reference on one GPU: no communicator of theirs uses NCCL */
    int gen[8] = {0, 1, 2, 3, 4, 4, 4, 4};
    gpus_on(g, 8, h, gen);
    CHECK(pw_transport_check(&p, &nccl, g, &err) == 0, "generator sharing refused: %s", err.msg);
    pw_placement_free(&p);
}

static void one_gpu(void)
{
    PwPlacement p;
    PwTransportOpts o = {1, 0};
    load("gpu_1_single.yaml", 1, &p);
    /* 4 generate + 3 evaluate + 1 advantages + 2 train + 1 weights + 5 report rows */
    CHECK(pw_transfers(&p, &o, NULL, 0) == 16, "%d transfers", pw_transfers(&p, &o, NULL, 0));
    /* the generator on the actor's rank: one device-to-device copy, no broadcast */
    EXPECT(&p, o, "weights", "weights", PW_ROLE_ACTOR, PW_ROLE_GENERATOR, "device-copy", "0->0");
    EXPECT_BROADCAST(&p, o, "device-copy", 0);
    EXPECT(&p, o, "generate", "tokens", PW_ROLE_GENERATOR, PW_ROLE_CRITIC, "memory", "0->0");
    EXPECT(&p, o, "train", "gradients", PW_ROLE_ACTOR, PW_ROLE_ACTOR, "none", "0");
    pw_placement_free(&p);

    load("gpu_1_generator.yaml", 2, &p);
    EXPECT(&p, o, "weights", "weights", PW_ROLE_ACTOR, PW_ROLE_GENERATOR, "mpi-staged", "0->1");
    EXPECT(&p, o, "evaluate", "scores", PW_ROLE_REWARD, PW_ROLE_ACTOR, "memory", "0->0");
    EXPECT(&p, o, "report", "report", PW_ROLE_GENERATOR, PW_ROLE_ACTOR, "mpi", "1->0");
    PwRankGpu g[2] = {{"n01", 0, ""}, {"n01", 0, ""}};
    PwErr err = {{0}};
    CHECK(pw_transport_check(&p, &o, g, &err) == 0, "one GPU, two ranks refused: %s", err.msg);
    pw_placement_free(&p);

    /* CPU roles on one rank: plain memory copies */
    load("single.yaml", 1, &p);
    EXPECT(&p, o, "weights", "weights", PW_ROLE_ACTOR, PW_ROLE_GENERATOR, "memory", "0->0");
    pw_placement_free(&p);
}

/* Mixed: generator ranks 0 and 2 feed actor ranks 0 and 1, one pair in memory, one over MPI;
 * 20 reward ranks report to actor rank 0: 16 listed, then how many more. */
static void mixed_and_long(void)
{
    char yaml[400];
    int n = snprintf(yaml, sizeof yaml, "roles:\n  actor: { ranks: [0, 1] }\n"
                     "  generator: { ranks: [0, 2] }\n  critic: { ranks: [1] }\n"
                     "  reward: { ranks: [");
    for (int i = 3; i < 23; i++)
        n += snprintf(yaml + n, sizeof yaml - (size_t)n, "%s%d", i > 3 ? ", " : "", i);
    snprintf(yaml + n, sizeof yaml - (size_t)n, "] }\n");
    PwPlacement p;
    if (load_text(yaml, 23, &p)) return;
    PwTransportOpts o = {1, 0};
    EXPECT(&p, o, "generate", "tokens,logp_gen,versions", PW_ROLE_GENERATOR, PW_ROLE_ACTOR,
           "memory", "0->0");
    EXPECT(&p, o, "generate", "tokens,logp_gen,versions", PW_ROLE_GENERATOR, PW_ROLE_ACTOR, "mpi",
           "2->1");
    EXPECT(&p, o, "weights", "weights", PW_ROLE_ACTOR, PW_ROLE_GENERATOR, "memory", "0->0");
    EXPECT(&p, o, "weights", "weights", PW_ROLE_ACTOR, PW_ROLE_GENERATOR, "mpi", "0->2");
    EXPECT_BROADCAST(&p, o, "memory", 0);
    EXPECT_BROADCAST(&p, o, "mpi", 1);
    EXPECT(&p, o, "report", "report", PW_ROLE_REWARD, PW_ROLE_ACTOR, "mpi",
           "3->0,4->0,5->0,6->0,7->0,8->0,9->0,10->0,11->0,12->0,13->0,14->0,15->0,16->0,17->0,"
           "18->0,+4");
    pw_placement_free(&p);
}

/* No reference and no generator: the transfers those roles would take have no pair of ranks,
 * and have no row (the sanitizer pass once caught qsort handed a null list of none) */
static void no_reference_nor_generator(void)
{
    PwPlacement p;
    if (load_text("roles:\n  actor: { ranks: [0] }\n  critic: { ranks: [1] }\n"
                  "  reward: { ranks: [1] }\n", 2, &p))
        return;
    PwTransportOpts o = {0, 0};
    EXPECT(&p, o, "evaluate", "values", PW_ROLE_CRITIC, PW_ROLE_ACTOR, "mpi", "1->0");
    CHECK(!find_row(&p, o, "weights", "weights", PW_ROLE_ACTOR, PW_ROLE_GENERATOR, "mpi"),
          "a weights row with no generator");
    pw_placement_free(&p);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_transport CONFIGS_PLACEMENTS_DIR\n");
        return 2;
    }
    dir = argv[1];
    eight_gpus();
    one_gpu();
    mixed_and_long();
    no_reference_nor_generator();
    return pw_test_done("transport");
}
