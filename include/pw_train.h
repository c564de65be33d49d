/* pw_train.h: the supervised training modes of ppo_world: `ppo_world sft` (next-token loss on
 * response tokens) and `ppo_world rm` (Bradley-Terry reward model), data parallel; docs/training.md. */
#ifndef PW_TRAIN_H
#define PW_TRAIN_H

#include <mpi.h>

/* Entry points of the two modes. argv[0] is the mode's name and the rest its flags. The caller
 * has initialised MPI; every one of the nranks ranks of comm is one data-parallel worker and
 * calls this with the same arguments; local_rank is its index among the ranks of its node (the
 * GPU it takes with model.device: cuda). Returns 0 when training ran to the end, 1 when it failed
 * (a message on stderr from every rank that saw the failure, every rank returning), 2 on bad
 * usage (said once, by rank 0). */
int pw_sft_main(int argc, char **argv, MPI_Comm comm, int nranks, int local_rank);
int pw_rm_main(int argc, char **argv, MPI_Comm comm, int nranks, int local_rank);

#endif
