/* pw_binding.h: hwloc pinning of one rank: which cores and NUMA nodes it owns, how many BLAS and
 * OpenMP threads it runs, and which GPU is nearest to those cores. */
#ifndef PW_BINDING_H
#define PW_BINDING_H

#include "pw_common.h"
#include "pw_placement.h"

/* The machine as hwloc sees it (cores, NUMA nodes, PCI GPUs); opaque so that callers need not
 * include hwloc.h. */
typedef struct PwTopo PwTopo;

/* What one rank uses. Plain characters only, so rows can travel in one MPI_Gather. */
typedef struct PwBinding {
    char host[64];
    int local_rank, local_size; /* among the ranks of this node */
    PwBind policy;
    char cpus[128];   /* processing units the rank may run on, hwloc list syntax "0-3,8" */
    int ncores;       /* cores the rank owns (with bind none: its share of the node's cores) */
    char numa[64];    /* NUMA nodes of those cores, list syntax */
    int threads;      /* OpenBLAS and OpenMP threads */
    int gpu;          /* the CUDA ordinal (pw_topo_load: the runtime's devices matched to
                       * hwloc's by PCI address; else PCI bus order), -1 for none */
    char gpu_name[64];/* "none" or the GPU's PCI address */
} PwBinding;

/* The PCI address in a binding's gpu_name ("0000:3b:00.0"), "" where it is not known. A GPU's
 * identity across the ranks of a host: two ranks that CUDA_VISIBLE_DEVICES gives different GPUs
 * (Slurm's --gpus-per-task) may both call theirs cuda:0. */
const char *pw_binding_gpu_pci(const PwBinding *b);
/* Whether b's GPU is the device this process calls `ordinal`, at PCI address `addr` ("" where
 * not known): by address where both are known, else by ordinal. */
int pw_binding_gpu_is(const PwBinding *b, int ordinal, const char *addr);

/* A GPU's PCI address, without the function (GPUs are function 0). */
typedef struct PwPciId {
    unsigned domain, bus, dev;
} PwPciId;

/* The CUDA runtime's devices among hwloc's PCI GPUs: index[k] = the position in pci[] of CUDA
 * ordinal k's address (cuda[k]). 0 where every ordinal is found once; -1 where one is not (a
 * GPU hwloc does not see), leaving index as it was. Pure: pw_topo_load's use of it, tested by
 * hand (tests/runtime/placement/test_gpu_order.c). */
int pw_gpu_order(const PwPciId *pci, int npci, const PwPciId *cuda, int ncuda, int *index);

/* The machine as hwloc sees it. Its GPUs are numbered as the CUDA runtime numbers them (which
 * honours CUDA_VISIBLE_DEVICES, as Slurm sets it, and CUDA_DEVICE_ORDER) where the runtime can
 * say, each matched to hwloc's by PCI address for its locality; else in PCI bus order. */
int pw_topo_load(PwTopo **t, PwErr *err);
void pw_topo_free(PwTopo *t);
int pw_topo_ncores(const PwTopo *t);
int pw_topo_ngpus(const PwTopo *t);
/* 0 when hwloc read the machine from HWLOC_XMLFILE or HWLOC_SYNTHETIC: planning for another
 * machine, whose GPUs are the PCI GPUs in that description. */
int pw_topo_is_this_system(const PwTopo *t);

/* Decide the cores, NUMA nodes, threads and GPU of local rank `local_rank` out of `local_size`
 * ranks on this node. Ranks are spread in hwloc's topology order, so consecutive local ranks
 * fill one NUMA node's cores before the next. threads_asked 0 means one thread per owned core;
 * want_gpu asks for the nearest GPU. Pure: changes nothing, so --dry-run --world-size can plan
 * ranks that do not exist. */
int pw_binding_plan(PwTopo *t, PwBind policy, int local_rank, int local_size, int threads_asked,
                    int want_gpu, PwBinding *b, PwErr *err);

/* Bind this process (all its threads) to b->cpus unless the policy is none, and set the
 * OpenBLAS/OpenMP thread counts (environment and library calls). */
int pw_binding_apply(PwTopo *t, const PwBinding *b, PwErr *err);

#endif
