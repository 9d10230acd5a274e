#!/bin/bash
# ray_train.sh BUILD EXAMPLE: Ray Train on the "distcomm" backend (issue
# 35): examples/python/ray_train.py, a TorchTrainer with
# TorchConfig(backend="distcomm") and 2 workers on a local Ray instance.
# Each worker must report the distcomm backend, a world of 2, a falling loss
# and parameters equal to the other's (DDP's all_reduce ran). Ray comes from
# PyPI into BUILD/venv-ray, made once (torch pinned to 2.13.0, the CPU wheel:
# ray[train] does not ask for torch); skipped (77) when PyPI is unreachable.
set -u
build=$1 example=$2
venv=$build/venv-ray
ready=$venv/.ray-ready
if [ ! -e "$ready" ]; then
  py=$(command -v python3)
  abi=$(/usr/bin/python3 -c 'import sys; print(sys.version_info[:2])')
  if [ "$("$py" -c 'import sys; print(sys.version_info[:2])')" != "$abi" ]; then
    py=/usr/bin/python3 # Debian's has venv and the extension's ABI
  fi
  rm -rf "$venv"
  "$py" -m venv "$venv" || { echo "FAILED: $py -m venv $venv"; exit 1; }
  echo torch==2.13.0 >"$venv/constraints.txt"
  if ! timeout 900 "$venv/bin/python" -m pip install -q --timeout 30 \
    -c "$venv/constraints.txt" torch==2.13.0 numpy "ray[train]"; then
    if ! timeout 30 "$venv/bin/python" -c "import urllib.request as u, os; \
u.urlopen(os.environ.get('PIP_INDEX_URL', 'https://pypi.org/simple').rstrip('/') + '/pip/', timeout=20)"; then
      echo "SKIP: PyPI is unreachable: no ray[train], the Ray Train test is skipped"
      rm -rf "$venv"
      exit 77
    fi
    echo "FAILED: pip install ray[train] torch==2.13.0 (PyPI is reachable)"
    exit 1
  fi
  "$venv/bin/python" -c 'import torch, ray.train.torch; assert torch.__version__.startswith("2.13")' || exit 1
  touch "$ready"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset RAY_ADDRESS MLX_RANK MLX_HOSTFILE MLX_WORLD_SIZE DISTCOMM_COORDINATOR DISTCOMM_JOB_TOKEN \
  MASTER_ADDR MASTER_PORT RANK WORLD_SIZE
mkdir "$tmp/out"
(cd "$tmp" && OMP_NUM_THREADS=1 DISTCOMM_TIMEOUT=60 RAY_TRAIN_STORAGE=$tmp/storage \
  timeout -k 10 400 "$venv/bin/python" "$example" --workers 2 --steps 20 --out "$tmp/out") \
  >"$tmp/log" 2>&1
rc=$?
grep -v 'PlacementGroupCleaner' "$tmp/log" | tail -40
[ $rc -eq 0 ] || { echo "FAILED: ray_train.py exited with status $rc"; exit 1; }
"$venv/bin/python" - "$tmp/out" <<'EOF' || exit 1
import json, os, sys
d = sys.argv[1]
found = sorted(os.listdir(d))
if found != ["worker0.json", "worker1.json"]:
    sys.exit(f"FAILED: expected a result from each of 2 workers, found {found}")
w = [json.load(open(os.path.join(d, f))) for f in found]
for r in w:
    if (r["backend"], r["world"], r["same_parameters"]) != ("distcomm", 2, True):
        sys.exit(f"FAILED: worker {r['rank']}: {r}")
    if not r["last_loss"] < r["first_loss"]:
        sys.exit(f"FAILED: worker {r['rank']}: the loss did not fall: {r}")
if w[0]["param_sum"] != w[1]["param_sum"]:
    sys.exit(f"FAILED: the workers' parameters differ: {w}")
print("Ray Train: 2 workers trained on distcomm, parameters equal")
EOF
