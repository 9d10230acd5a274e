#!/bin/bash
# torch2_shrink.sh LAUNCHER PYTHON WORKER: torch.distributed.shrink_group on
# the distcomm backend, 3 ranks through distcomm-launch --keep-going
# (torch2_shrink_worker.py): passes when the job exits 0 and both
# survivors print ": ok", after a MismatchError for a wrong rank named.
set -u
out=$(timeout 240 "$1" -n 3 --keep-going -- "$2" "$3" 2>&1)
rc=$?
printf '%s\n' "$out"
got=$(printf '%s\n' "$out" |
  grep -cE '^rank [02]: shrunk to rank [01] of 2: subgroup, all_reduce, DDP step, DeviceMesh: ok$')
wrong=$(printf '%s\n' "$out" |
  grep -cE '^rank [02]: shrink_group\(\[[02]\]\): MismatchError: .*the lost ranks are \[1\]: call shrink_group\(\[1\]\)$')
if [ "$rc" -ne 0 ]; then echo "FAIL: the job exited with status $rc"; exit 1; fi
if [ "$got" -ne 2 ]; then echo "FAIL: $got of 2 survivors ok"; exit 1; fi
if [ "$wrong" -ne 2 ]; then echo "FAIL: $wrong of 2 survivors got the MismatchError"; exit 1; fi
echo "PASS"
