/* pw_roles.h: the PPO run as a whole: every rank of one MPI job runs the roles the placement
 * gives it (actor, reference, critic, reward, generator) step after step; see docs/roles.md. */
#ifndef PW_ROLES_H
#define PW_ROLES_H

#include <mpi.h>
#include <stdio.h>

#include "pw_common.h"

struct PwConfig;    /* pw_config.h */
struct PwPlacement; /* pw_placement.h */

/* Runs the whole PPO job on this rank. Collective over `comm`: every rank of the placement
 * calls it with the same configuration and placement. The world (one communicator per role) is
 * built inside from the placement's role map. Rank 0 of the actor role writes
 * out_dir/metrics.jsonl (one JSON object per step), out_dir/config.yaml and, per
 * checkpoint.every, out_dir/checkpoints/step_N. With resume != 0 the run continues from the
 * newest complete checkpoint in out_dir (the configuration must be the saved one), with the
 * same numbers as a run that was never interrupted. Bad input (a missing checkpoint, vocabulary
 * sizes that differ, an empty prompt file, a prompt that does not fit the context) is found
 * before any training and returns -1 on every rank with the same message in `err`; a failure
 * that only one rank can see after the checks (a damaged weight file) ends the job through
 * the runtime's fatal path, also with a message. Returns 0 when every step ran.
 * gpu: this rank's GPU (the binding's choice, pw_binding.h), where its roles with device: cuda
 * keep their models; -1 when it has none. */
int pw_ppo_run(const struct PwConfig *cfg, const struct PwPlacement *pl, MPI_Comm comm, int gpu,
               const char *out_dir, int resume, PwErr *err);

/* `--dry-run` with a configuration: after the same checks as pw_ppo_run, each rank's planned
 * device memory by role (weights, training state, activations, generation) and its most at
 * once, into out, and into peaks (world_size entries, bytes) unless NULL. `where`: every rank's
 * host and GPU (PwStartup.all), or NULL for all on this host with their GPUs unknown. The ranks
 * that share a memory on this host (its host memory for the cpu ranks, one GPU for the cuda
 * ranks on it; without `where` each cuda rank alone on cuda:0) are added up against it. -1 with
 * pw_ppo_run's message for bad input, or when such a sum exceeds its memory (DOES NOT FIT). */
struct PwBinding;
int pw_ppo_memory_plan(const struct PwConfig *cfg, const struct PwPlacement *pl,
                       const struct PwBinding *where, FILE *out, size_t *peaks, PwErr *err);

#endif
