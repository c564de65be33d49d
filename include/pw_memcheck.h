/* pw_memcheck.h: how much memory this process can still have, and the check a run makes before
 * it loads its models: every rank's planned bytes (the roles' memory plan) against what its
 * node gives the ranks that share a memory, agreed by every rank of the job. */
#ifndef PW_MEMCHECK_H
#define PW_MEMCHECK_H

#include <stddef.h>

#include "pw_comm.h"

typedef struct PwHostMemory {
    size_t bytes;     /* available to this process: the least of the limits below */
    char source[160]; /* the limit that set it: "MemAvailable", "cgroup /a/b memory.max" */
} PwHostMemory;

/* The host memory this process can have without swapping: /proc/meminfo's MemAvailable, and
 * each of its cgroups' limit (v2 memory.max, v1 memory.limit_in_bytes) less what the cgroup
 * uses beyond its page cache, from its own cgroup to the root. `root` stands for "/" ("" for
 * the live system; a folder in tests). Returns 0, or -1 where not even MemAvailable is known. */
int pw_host_memory(const char *root, PwHostMemory *out);

/* Collective over w->comm, before the models load: this rank plans `need` bytes on `device`
 * (PW_DEVICE_CPU: the host's memory; PW_DEVICE_CUDA: GPU `gpu`'s). The ranks of one node on the
 * same memory (the host, or one GPU) add their plans up against what it has free now. Returns 0
 * on every rank when each memory holds its plans, else -1 on every rank with the lowest failing
 * rank's message in `err`: the bytes needed, by which ranks, what the memory has, then `hint`
 * (what the user can change). A memory whose free bytes cannot be asked is not checked. */
int pw_world_check_memory(PwWorld *w, PwDevice device, int gpu, size_t need, const char *hint,
                          PwErr *err);

#endif
