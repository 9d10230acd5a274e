#!/bin/sh
# rank0_env.sh NAME=VALUE PROG ARGS...: runs PROG with NAME=VALUE set on
# rank 0 alone (MLX_RANK, set by the launcher), for tests of ranks whose
# settings differ.
setting=$1
shift
if [ "${MLX_RANK:-}" = 0 ]; then export "${setting?}"; fi
exec "$@"
