# env.sh: the environment every ppo_world launcher exports (sourced by launch/run.sh and
# launch/slurm.sbatch, so that mpirun and srun jobs run with the same choices: docs/launch.md).
# Sets PW_ENV_VARS to the names it exported, for launchers that must pass them on by name.

# Small thread pools at load time (ppo_world resizes them to the cores each rank owns), and
# CUDA ordinals in PCI bus order, the order in which ppo_world numbers the GPUs it picks.
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 CUDA_DEVICE_ORDER=PCI_BUS_ID
PW_ENV_VARS="OPENBLAS_NUM_THREADS OMP_NUM_THREADS CUDA_DEVICE_ORDER"
# Idle OpenMP threads sleep instead of spinning: ranks share cores, and a spinning pool took
# 6.7-8.0 s of CPU for a forward+backward that needs 4.1-4.3 s (docs/kernels.md).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
PW_ENV_VARS="$PW_ENV_VARS OMP_WAIT_POLICY"
# OPENBLAS_CORETYPE, where set, reaches every rank as it is. Unset, each rank of ppo_world checks
# the kernels OpenBLAS picked and, where they are older than the CPU runs, sets it and executes
# itself again (docs/kernels.md, OpenBLAS's core type).
if [ -n "${OPENBLAS_CORETYPE:-}" ]; then PW_ENV_VARS="$PW_ENV_VARS OPENBLAS_CORETYPE"; fi
