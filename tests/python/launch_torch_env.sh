#!/bin/bash
# Under distcomm-launch an ordinary torch script (Gloo, env://, no distcomm
# import) finds torchrun's variables (MASTER_ADDR, MASTER_PORT, RANK,
# WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) and runs; a C program under the
# same launcher still starts from the hostfile ("ring ready:"), never from
# MASTER_ADDR/MASTER_PORT ("ring ready by coordinator").
# usage: launch_torch_env.sh LAUNCHER PYTHON HELLO
set -u
launch=$1 py=$2 hello=$3
here=$(dirname "$0")
out=$(timeout 120 "$launch" -n 2 --tag-output -- "$py" "$here/torch_env_gloo.py" 2>&1)
echo "$out"
for r in 0 1; do
  if ! grep -q "^\[$r\] rank $r of 2 local $r of 2: all_reduce \[3.0, 3.0, 3.0\]$" <<<"$out"; then
    echo "FAILED: rank $r of the Gloo script did not run as under torchrun"
    exit 1
  fi
done
out=$(timeout 60 "$launch" --verbose -n 2 -- "$hello" 2>&1)
if [ "$(grep -c 'ring ready: rank' <<<"$out")" != 2 ] || grep -q 'by coordinator' <<<"$out"; then
  echo "$out"
  echo "FAILED: the C program did not start from the hostfile"
  exit 1
fi
echo "torchrun's variables set; the C ranks took the hostfile"
