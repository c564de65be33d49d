/* binding.c: hwloc pinning: spread a node's ranks over its NUMA nodes and cores, size the
 * OpenBLAS/OpenMP thread pools to the cores owned, and find the GPU nearest those cores. */
#include "pw_binding.h"
#include "pw_device.h"

#include <cblas.h>
#include <ctype.h>
#include <errno.h>
#include <hwloc.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* hwloc calls answer -1 (and errno) or NULL on failure; both become an error naming the call,
 * so a rank that cannot bind says so through the placement's agreement instead of aborting. */
#define HWLOC_CHECK(call, err)                                                                     \
    do {                                                                                           \
        if ((call) < 0)                                                                            \
            return pw_errf(err, "%s failed: %s (%s:%d)", #call, strerror(errno), __FILE__,         \
                           __LINE__);                                                              \
    } while (0)
/* The same inside a function that must free its bitmaps: record the error, jump to `out`. */
#define HWLOC_TRY(call, err)                                                                       \
    do {                                                                                           \
        if ((call) < 0) {                                                                          \
            pw_errf(err, "%s failed: %s (%s:%d)", #call, strerror(errno), __FILE__, __LINE__);     \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)
#define HWLOC_ALLOC_CHECK(ptr, err)                                                                \
    do {                                                                                           \
        if (!(ptr)) return pw_errf(err, "%s: out of memory (%s:%d)", #ptr, __FILE__, __LINE__);    \
    } while (0)

#define PW_MAX_GPUS 64

struct PwTopo {
    hwloc_topology_t topo;
    hwloc_obj_type_t core_type; /* CORE, or PU where a virtual machine shows no cores */
    int ngpus;
    hwloc_obj_t gpus[PW_MAX_GPUS]; /* by CUDA ordinal (pw_topo_load) */
};

static int is_nvidia_gpu(hwloc_obj_t o)
{
    unsigned cls = o->attr->pcidev.class_id >> 8; /* 0x03: display controllers (VGA, 3D) */
    return o->attr->pcidev.vendor_id == 0x10de && cls == 0x03;
}

const char *pw_binding_gpu_pci(const PwBinding *b)
{
    const char *at = strchr(b->gpu_name, '@');
    if (!at || !isxdigit((unsigned char)at[1])) return ""; /* "none", "@unknown-locality" */
    return at + 1;
}

int pw_binding_gpu_is(const PwBinding *b, int ordinal, const char *addr)
{
    const char *pci = pw_binding_gpu_pci(b);
    return addr[0] && pci[0] ? !strcmp(pci, addr) : b->gpu == ordinal;
}

int pw_gpu_order(const PwPciId *pci, int npci, const PwPciId *cuda, int ncuda, int *index)
{
    int found[PW_MAX_GPUS];
    if (ncuda < 1 || ncuda > PW_MAX_GPUS || npci > PW_MAX_GPUS) return -1;
    for (int k = 0; k < ncuda; k++) {
        found[k] = -1;
        for (int i = 0; i < npci && found[k] < 0; i++)
            if (pci[i].domain == cuda[k].domain && pci[i].bus == cuda[k].bus &&
                pci[i].dev == cuda[k].dev)
                found[k] = i;
        if (found[k] < 0) return -1;
        for (int j = 0; j < k; j++)
            if (found[j] == found[k]) return -1; /* two ordinals, one GPU: not a real runtime */
    }
    memcpy(index, found, sizeof found[0] * (size_t)ncuda);
    return 0;
}

/* hwloc's PCI GPUs renumbered as the CUDA runtime numbers its devices. hwloc scans the PCI bus
 * (every GPU of the node, in bus order); the runtime sees those CUDA_VISIBLE_DEVICES leaves it
 * (Slurm's allocation: "2,3" of 8, or UUIDs), in its own order, so rank 0's "GPU 2" by bus
 * order would be no device or another one. Where the runtime cannot say (no driver, no CUDA
 * backend) or sees a GPU hwloc does not, bus order stands. */
static void order_as_cuda(PwTopo *t)
{
    if (t->ngpus == 0) return; /* no NVIDIA GPU on the bus: the runtime is not even asked */
    int n = pw_device_count(), index[PW_MAX_GPUS];
    if (n < 1 || n > PW_MAX_GPUS) return;
    PwPciId pci[PW_MAX_GPUS], cuda[PW_MAX_GPUS];
    for (int i = 0; i < t->ngpus; i++)
        pci[i] = (PwPciId){t->gpus[i]->attr->pcidev.domain, t->gpus[i]->attr->pcidev.bus,
                           t->gpus[i]->attr->pcidev.dev};
    for (int k = 0; k < n; k++)
        if (pw_device_pci_id(k, &cuda[k].domain, &cuda[k].bus, &cuda[k].dev)) return;
    if (pw_gpu_order(pci, t->ngpus, cuda, n, index)) return;
    hwloc_obj_t by_bus[PW_MAX_GPUS];
    memcpy(by_bus, t->gpus, sizeof by_bus);
    for (int k = 0; k < n; k++) t->gpus[k] = by_bus[index[k]];
    t->ngpus = n;
}

int pw_topo_load(PwTopo **out, PwErr *err)
{
    PwTopo *t = calloc(1, sizeof *t);
    HWLOC_ALLOC_CHECK(t, err);
    *out = t;
    HWLOC_CHECK(hwloc_topology_init(&t->topo), err);
    /* PCI devices are filtered out by default; GPUs are "important" ones. */
    HWLOC_CHECK(hwloc_topology_set_io_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT), err);
    HWLOC_CHECK(hwloc_topology_load(t->topo), err);
    t->core_type =
        hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_pcidev(t->topo, o)) != NULL;)
        if (is_nvidia_gpu(o) && t->ngpus < PW_MAX_GPUS) t->gpus[t->ngpus++] = o;
    if (hwloc_topology_is_thissystem(t->topo)) order_as_cuda(t);
    return 0;
}

void pw_topo_free(PwTopo *t)
{
    if (!t) return;
    if (t->topo) hwloc_topology_destroy(t->topo);
    free(t);
}

int pw_topo_ncores(const PwTopo *t)
{
    return hwloc_get_nbobjs_by_type(t->topo, t->core_type);
}

int pw_topo_ngpus(const PwTopo *t)
{
    return t->ngpus;
}

int pw_topo_is_this_system(const PwTopo *t)
{
    return hwloc_topology_is_thissystem(t->topo);
}

/* Contiguous blocks in topology order: rank i of n gets items [i*m/n, (i+1)*m/n). */
static int block_lo(int i, int n, int m)
{
    return (int)((long)i * m / n);
}

/* NUMA nodes that have cores: memory-only nodes (HBM, CXL) cannot hold a rank. */
static int numa_with_cpus(hwloc_topology_t topo, hwloc_obj_t *nodes, int max)
{
    int n = 0;
    for (hwloc_obj_t o = NULL;
         (o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, o)) != NULL;)
        if (o->cpuset && !hwloc_bitmap_iszero(o->cpuset) && n < max) nodes[n++] = o;
    return n;
}

static int plan_cpus(PwTopo *t, PwBind policy, int lr, int ls, hwloc_bitmap_t set, int *owned,
                     PwErr *err)
{
    int ncores = pw_topo_ncores(t);
    if (policy == PW_BIND_CORE) {
        if (ls > ncores)
            return pw_errf(err, "bind core: %d ranks on %d cores (%s:%d)", ls, ncores, __FILE__,
                           __LINE__);
        int lo = block_lo(lr, ls, ncores), hi = block_lo(lr + 1, ls, ncores);
        for (int i = lo; i < hi; i++)
            HWLOC_CHECK(
                hwloc_bitmap_or(set, set,
                                hwloc_get_obj_by_type(t->topo, t->core_type, (unsigned)i)->cpuset),
                err);
        *owned = hi - lo;
        return 0;
    }
    if (policy == PW_BIND_NUMA) {
        hwloc_obj_t nodes[256];
        int nn = numa_with_cpus(t->topo, nodes, 256);
        if (nn == 0) nodes[nn++] = hwloc_get_root_obj(t->topo); /* no NUMA information: one node */
        int sharers = 1;
        if (ls <= nn) {
            for (int i = block_lo(lr, ls, nn); i < block_lo(lr + 1, ls, nn); i++)
                HWLOC_CHECK(hwloc_bitmap_or(set, set, nodes[i]->cpuset), err);
        } else {
            /* More ranks than nodes: consecutive ranks share a node, nodes get equal counts. */
            int node = (int)((long)lr * nn / ls);
            sharers = 0;
            for (int j = 0; j < ls; j++) sharers += (int)((long)j * nn / ls) == node;
            HWLOC_CHECK(hwloc_bitmap_copy(set, nodes[node]->cpuset), err);
        }
        int in = hwloc_get_nbobjs_inside_cpuset_by_type(t->topo, set, t->core_type);
        *owned = in / sharers > 0 ? in / sharers : 1;
        return 0;
    }
    HWLOC_CHECK(hwloc_bitmap_copy(set, hwloc_topology_get_allowed_cpuset(t->topo)), err);
    *owned = ncores / ls > 0 ? ncores / ls : 1;
    return 0;
}

/* Nearest GPU: among the GPUs whose PCI bridge hangs below an object sharing cores with the
 * rank (hwloc's locality), take local rank mod their count so that ranks near the same GPUs
 * take turns; with no locality match (bind none) every GPU of the node is a candidate. */
static void plan_gpu(PwTopo *t, hwloc_const_bitmap_t set, int lr, PwBinding *b)
{
    b->gpu = -1;
    snprintf(b->gpu_name, sizeof b->gpu_name, "none");
    int near[PW_MAX_GPUS], nnear = 0;
    for (int i = 0; i < t->ngpus; i++) {
        hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t->topo, t->gpus[i]);
        if (anc && anc->cpuset && hwloc_bitmap_intersects(anc->cpuset, set)) near[nnear++] = i;
    }
    if (nnear == 0)
        for (int i = 0; i < t->ngpus; i++) near[nnear++] = i;
    if (nnear > 0) {
        hwloc_obj_t g = t->gpus[near[lr % nnear]];
        b->gpu = near[lr % nnear];
        snprintf(b->gpu_name, sizeof b->gpu_name, "cuda:%d@%04x:%02x:%02x.%x", b->gpu,
                 g->attr->pcidev.domain, g->attr->pcidev.bus, g->attr->pcidev.dev,
                 g->attr->pcidev.func);
        return;
    }
    /* The CUDA runtime sees GPUs that hwloc's PCI scan does not (no /sys in a container):
     * no locality to use, so spread by local rank. */
    int ncuda = pw_device_count();
    if (ncuda > 0) {
        b->gpu = lr % ncuda;
        snprintf(b->gpu_name, sizeof b->gpu_name, "cuda:%d@unknown-locality", b->gpu);
    }
}

int pw_binding_plan(PwTopo *t, PwBind policy, int local_rank, int local_size, int threads_asked,
                    int want_gpu, PwBinding *b, PwErr *err)
{
    char host[sizeof b->host];
    memcpy(host, b->host, sizeof host); /* the caller may have named the host already */
    memset(b, 0, sizeof *b);
    memcpy(b->host, host, sizeof host);
    if (!b->host[0] && gethostname(b->host, sizeof b->host - 1) != 0)
        snprintf(b->host, sizeof b->host, "?");
    b->local_rank = local_rank;
    b->local_size = local_size;
    b->policy = policy;
    hwloc_bitmap_t set = hwloc_bitmap_alloc(), nodes = hwloc_bitmap_alloc();
    int rc = -1, owned = 1;
    HWLOC_TRY((set && nodes) ? 0 : (errno = ENOMEM, -1), err);
    if (plan_cpus(t, policy, local_rank, local_size, set, &owned, err)) goto out;
    HWLOC_TRY(hwloc_cpuset_to_nodeset(t->topo, set, nodes), err);
    HWLOC_TRY(hwloc_bitmap_list_snprintf(b->cpus, sizeof b->cpus, set), err);
    HWLOC_TRY(hwloc_bitmap_list_snprintf(b->numa, sizeof b->numa, nodes), err);
    b->ncores = owned;
    b->threads = threads_asked > 0 ? threads_asked : owned;
    b->gpu = -1;
    snprintf(b->gpu_name, sizeof b->gpu_name, "none");
    if (want_gpu) plan_gpu(t, set, local_rank, b);
    rc = 0;
out:
    hwloc_bitmap_free(set);
    hwloc_bitmap_free(nodes);
    return rc;
}

int pw_binding_apply(PwTopo *t, const PwBinding *b, PwErr *err)
{
    if (b->policy != PW_BIND_NONE) {
        hwloc_bitmap_t set = hwloc_bitmap_alloc(), got = hwloc_bitmap_alloc();
        int rc = -1;
        HWLOC_TRY((set && got) ? 0 : (errno = ENOMEM, -1), err);
        HWLOC_TRY(hwloc_bitmap_list_sscanf(set, b->cpus), err);
        /* PROCESS, not THREAD: the BLAS pool and MPI's progress threads already exist and
         * must move with the main thread. Reading the binding back makes the report show what
         * the kernel accepted, not what was asked. */
        HWLOC_TRY(hwloc_set_cpubind(t->topo, set, HWLOC_CPUBIND_PROCESS), err);
        HWLOC_TRY(hwloc_get_cpubind(t->topo, got, HWLOC_CPUBIND_PROCESS), err);
        rc = hwloc_bitmap_isequal(set, got) ? 0
                                            : pw_errf(err,
                                                      "hwloc_set_cpubind to %s did not take: the "
                                                      "process runs on other cores (%s:%d)",
                                                      b->cpus, __FILE__, __LINE__);
    out:
        hwloc_bitmap_free(set);
        hwloc_bitmap_free(got);
        if (rc) return -1;
    }
    /* OpenBLAS and libgomp read these variables when they load, before main; the calls below
     * resize the pools that already exist, the variables reach any child process. */
    char v[16];
    snprintf(v, sizeof v, "%d", b->threads);
    if (setenv("OPENBLAS_NUM_THREADS", v, 1) || setenv("OMP_NUM_THREADS", v, 1))
        return pw_errf(err, "setenv failed: %s (%s:%d)", strerror(errno), __FILE__, __LINE__);
    openblas_set_num_threads(b->threads);
    omp_set_num_threads(b->threads);
    return 0;
}
