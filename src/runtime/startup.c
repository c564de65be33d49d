/* startup.c: every rank reads the placement, the ranks agree on one verdict (pw_comm_agree: the
 * lowest failing rank's message; parsing errors are identical on every rank, GPU and core checks
 * are per node), then each binds itself and rank 0 prints the table: no rank is ever left
 * waiting. */
#include "pw_startup.h"
#include "pw_comm.h"
#include "pw_device.h"
#include "pw_transport.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The checks that depend on the node: they name file, line, key, rank and host themselves. */
static int check_node(PwStartup *s, int rank, int local_size, const char *host, PwErr *err)
{
    const PwPlacement *p = &s->place;
    const int here = pw_topo_is_this_system(s->topo);
    int ngpus = here ? pw_device_count() : pw_topo_ngpus(s->topo);
    char why[256] = "the topology file lists none";
    if (ngpus <= 0 && here) pw_device_why_none(why, sizeof why);
    if (pw_placement_check_gpu(p, rank, ngpus, why, host, err) ||
        pw_placement_check_cores(p, local_size, pw_topo_ncores(s->topo), host, err))
        return -1;
    return 0;
}

static int plan_rank(PwStartup *s, int rank, int local_rank, int local_size, PwBinding *b,
                     PwErr *err)
{
    const PwPlacement *p = &s->place;
    return pw_binding_plan(s->topo, p->bind, local_rank, local_size,
                           pw_placement_rank_threads(p, rank),
                           pw_placement_rank_device(p, rank) == PW_DEVICE_CUDA, b, err);
}

static void host_name(char *buf, size_t n)
{
    if (gethostname(buf, n - 1) != 0) snprintf(buf, n, "?");
    buf[n - 1] = '\0';
}

static void rank_gpu(const PwBinding *b, PwRankGpu *g)
{
    snprintf(g->host, sizeof g->host, "%s", b->host);
    g->gpu = b->gpu;
    snprintf(g->pci, sizeof g->pci, "%s", pw_binding_gpu_pci(b));
}

/* The GPU check needs every rank's GPU: each rank gathers them all and reaches the same verdict,
 * which is still agreed like the others so that a rank can never go on alone. */
static int check_transports(PwStartup *s, const PwTransportOpts *to, PwErr *err)
{
    PwRankGpu mine, *all = calloc((size_t)s->size, sizeof *all);
    if (!all) pw_comm_fatal(__FILE__, __LINE__, "out of memory for %d GPU entries", s->size);
    rank_gpu(&s->binding, &mine);
    PW_MPI_CHECK(MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                               MPI_COMM_WORLD));
    int failed = pw_transport_check(&s->place, to, all, err);
    free(all);
    return pw_comm_agree(MPI_COMM_WORLD, failed, err);
}

/* --world-size N alone: plan N ranks as if all ran on this host, bind nothing. */
static int startup_planned(const PwStartupOpts *o, PwStartup *s, PwErr *err)
{
    s->rank = 0;
    s->size = o->world_size > 0 ? o->world_size : 1;
    if (pw_placement_load(o->placement, s->size, &s->place, err) || pw_topo_load(&s->topo, err))
        return -1;
    PwPlaceRow *rows = calloc((size_t)s->size, sizeof *rows);
    PwRankGpu *gpus = calloc((size_t)s->size, sizeof *gpus);
    s->all = calloc((size_t)s->size, sizeof *s->all);
    if (!rows || !gpus || !s->all) {
        free(rows);
        free(gpus);
        return pw_errf(err, "out of memory for %d ranks", s->size);
    }
    int rc = 0;
    for (int r = 0; r < s->size && rc == 0; r++) {
        PwBinding b = {0};
        host_name(b.host, sizeof b.host);
        rc = check_node(s, r, s->size, b.host, err);
        if (rc == 0) rc = plan_rank(s, r, r, s->size, &b, err);
        if (rc == 0) pw_place_row(&s->place, r, &b, &rows[r]);
        rank_gpu(&b, &gpus[r]);
        s->all[r] = b;
        if (r == 0) s->binding = b;
    }
    /* without a job, whether MPI takes device pointers is not known (pw_mpi_cuda_aware) */
    PwTransportOpts to = pw_transport_opts(-1);
    if (rc == 0) rc = pw_transport_check(&s->place, &to, gpus, err);
    if (rc == 0 && o->report) {
        pw_place_report(o->report, &s->place, rows, s->size, 1);
        pw_transport_report(o->report, &s->place, &to);
    }
    free(gpus);
    free(rows);
    return rc;
}

static int startup_mpi(const PwStartupOpts *o, PwStartup *s, PwErr *err)
{
    PW_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &s->rank));
    PW_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &s->size));
    int failed = 0;
    if (o->world_size > 0 && o->world_size != s->size)
        failed = pw_errf(err, "--world-size %d but the job has %d ranks; expected the same number",
                         o->world_size, s->size);
    if (!failed) failed = pw_placement_load(o->placement, s->size, &s->place, err);
    if (pw_comm_agree(MPI_COMM_WORLD, failed, err)) return -1;

    /* Ranks sharing memory share a node: that group is what cores and GPUs are divided among. */
    MPI_Comm node;
    int local_rank, local_size;
    PW_MPI_CHECK(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, s->rank, MPI_INFO_NULL, &node));
    PW_MPI_CHECK(MPI_Comm_rank(node, &local_rank));
    PW_MPI_CHECK(MPI_Comm_size(node, &local_size));
    PW_MPI_CHECK(MPI_Comm_free(&node));

    host_name(s->binding.host, sizeof s->binding.host);
    failed = pw_topo_load(&s->topo, err);
    int system_error = failed; /* hwloc's and CUDA's failures do not say where they happened */
    if (!failed) failed = check_node(s, s->rank, local_size, s->binding.host, err);
    if (!failed) {
        failed = plan_rank(s, s->rank, local_rank, local_size, &s->binding, err) ||
                 pw_binding_apply(s->topo, &s->binding, err);
        system_error = failed;
    }
    /* a GPU the build has no code for: said here, before any rank reads a model */
    if (!failed && s->binding.gpu >= 0 && pw_topo_is_this_system(s->topo) &&
        pw_placement_rank_device(&s->place, s->rank) == PW_DEVICE_CUDA)
        system_error = failed = pw_device_fits(s->binding.gpu, err);
    if (system_error) {
        char tmp[sizeof err->msg];
        snprintf(tmp, sizeof tmp, "%s", err->msg);
        pw_errf(err, "rank %d on %s: %s", s->rank, s->binding.host, tmp);
    }
    if (pw_comm_agree(MPI_COMM_WORLD, failed, err)) return -1;
    PwTransportOpts to = pw_transport_opts(pw_mpi_cuda_aware());
    if (check_transports(s, &to, err)) return -1;

    PwPlaceRow mine, *rows = NULL;
    pw_place_row(&s->place, s->rank, &s->binding, &mine);
    if (s->rank == 0) {
        rows = calloc((size_t)s->size, sizeof *rows);
        if (!rows) pw_comm_fatal(__FILE__, __LINE__, "out of memory for %d table rows", s->size);
    }
    PW_MPI_CHECK(MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, rows, (int)sizeof mine, MPI_BYTE, 0,
                            MPI_COMM_WORLD));
    if (s->rank == 0 && o->report) {
        pw_place_report(o->report, &s->place, rows, s->size, 0);
        pw_transport_report(o->report, &s->place, &to);
    }
    if (s->rank == 0) {
        s->all = calloc((size_t)s->size, sizeof *s->all);
        if (!s->all) pw_comm_fatal(__FILE__, __LINE__, "out of memory for %d bindings", s->size);
        for (int r = 0; r < s->size; r++) s->all[r] = rows[r].b;
    }
    free(rows);
    return 0;
}

int pw_startup(const PwStartupOpts *o, PwStartup *s, PwErr *err)
{
    memset(s, 0, sizeof *s);
    return o->use_mpi ? startup_mpi(o, s, err) : startup_planned(o, s, err);
}

void pw_startup_free(PwStartup *s)
{
    free(s->all);
    s->all = NULL;
    pw_placement_free(&s->place);
    pw_topo_free(s->topo);
    s->topo = NULL;
}
