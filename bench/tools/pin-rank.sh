#!/bin/bash
# pin-rank.sh CMD [ARGS...] - run a rank on a CPU of its own (its MLX_RANK
# modulo the CPUs), the same for any build: an A/B of two builds' launchers
# then compares code, not where the scheduler put the ranks. Unpinned, two
# ranks on this 2-vCPU VM's loopback TCP flip between two modes (1 MiB
# reduce_scatter 88 us or 160 us) within a run, in either build.
exec taskset -c "$((${MLX_RANK:-0} % $(nproc)))" "$@"
