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
# OpenBLAS 0.3.21 runs AVX-512 CPUs it does not recognise (newer AMD) on its 256-bit Haswell
# kernels; naming the core type doubles sgemm there (docs/kernels.md). It is read when the
# library loads, so only the launcher can set it. A value already set wins.
if [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
    export OPENBLAS_CORETYPE=SkylakeX
fi
if [ -n "${OPENBLAS_CORETYPE:-}" ]; then PW_ENV_VARS="$PW_ENV_VARS OPENBLAS_CORETYPE"; fi
