#!/bin/bash
# Runs one mlx test: skips (77) when the venv could not be made (the note
# says why), else runs the rest of the line with the venv's python first
# on PATH. Usage: run.sh VENV_DIR command...
set -u
venv=${1:?usage: $0 VENV_DIR command...}
shift
if [ ! -e "$venv/.complete" ]; then
    echo "SKIP: no MLX venv: $(cat "$venv.unavailable" 2>/dev/null || echo "$venv was not made")"
    exit 77
fi
export PATH="$venv/bin:$PATH"
exec "$@"
