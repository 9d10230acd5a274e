#!/bin/bash
# torch_hosts.sh LAUNCHER VENV_BIN: torch 2.13 on 2 namespace hosts x 2
# ranks (tests/hosts/lib.sh; issue 35), the ways torch users start jobs:
#  1. distcomm-launch --hosts: an ordinary Gloo script (env://, no distcomm
#     import) and the same script on the distcomm backend find torchrun's
#     variables on every rank, remote ones too: MASTER_ADDR is host 1's
#     address, one MASTER_PORT, LOCAL_RANK/LOCAL_WORLD_SIZE per host.
#  2. torchrun on each host (--nnodes 2 --nproc-per-node 2, c10d rendezvous
#     served by host 2's, no hostfile): the distcomm backend all_reduces
#     across them, whichever node torch numbers 0.
# The hosts' name (this machine's) resolves to no address inside them, as in
# many containers: Gloo is told its interface (GLOO_SOCKET_IFNAME) and
# torchrun its node's address (--local-addr) and which node serves the
# rendezvous (is_host), as users of such hosts do. PYTHONPATH (the build's
# module) reaches remote ranks through --env.
set -u
here=$(cd "$(dirname "$0")" && pwd)
hosts=$here/../hosts
. "$hosts/lib.sh"
. "$hosts/checks.sh" "$1"
bin=$2
py=$bin/python
hosts_up 2 || { fail "the test hosts did not come up"; finish; }
unset MLX_RANK MLX_HOSTFILE MLX_WORLD_SIZE DISTCOMM_COORDINATOR DISTCOMM_JOB_TOKEN \
  MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE

# 1. Under the launcher, Gloo then distcomm.
for backend in gloo distcomm; do
  launch 200 -n 2 --hosts 10.99.0.1,10.99.0.2 --tag-output \
    --env PYTHONPATH="${PYTHONPATH:-}" --env OMP_NUM_THREADS=1 \
    --env GLOO_SOCKET_IFNAME=eth0 --env DISTCOMM_TIMEOUT=60 \
    -- "$py" "$here/torch_env_gloo.py" "$backend" </dev/null >"$T/$backend" 2>&1
  rc=$?
  [ $rc -eq 0 ] || fail "$backend: the launcher exited $rc: $(grep -v '^\[.\] \[W' "$T/$backend" | tail -5)"
  ports=$(grep -o "master 10\.99\.0\.1:[0-9]* backend $backend$" "$T/$backend" | sort -u | wc -l)
  [ "$(grep -c " master 10\.99\.0\.1:[0-9]* backend $backend$" "$T/$backend")" -eq 4 ] && [ "$ports" -eq 1 ] ||
    fail "$backend: not every rank had MASTER_ADDR=10.99.0.1 and one MASTER_PORT: $(grep master "$T/$backend")"
  for r in 0 1 2 3; do
    grep -q "^\[$r\] rank $r of 4 local $((r % 2)) of 2: all_reduce \[10.0, 10.0, 10.0\]$" "$T/$backend" ||
      fail "$backend: rank $r (host $((r / 2 + 1))) did not run as under torchrun"
  done
  [ $fails -eq 0 ] && ok "$backend, env://: torchrun's variables on 4 ranks of 2 hosts, all_reduce right"
done

# 2. torchrun on each host, the rendezvous served by host 2's.
port=29400
pids=()
for node in 0 1; do
  hosts_exec $((node + 1)) env OMP_NUM_THREADS=1 DISTCOMM_TIMEOUT=60 \
    timeout -k 5 200 "$py" -m torch.distributed.run --nnodes 2 --nproc-per-node 2 \
    --rdzv-backend c10d --rdzv-endpoint "10.99.0.2:$port" --rdzv-id "dc-$$" \
    --rdzv-conf "is_host=$node" --local-addr "10.99.0.$((node + 1))" \
    --max-restarts 0 "$here/torchrun_worker.py" >"$T/node$node" 2>&1 </dev/null &
  pids+=($!)
done
for node in 0 1; do
  wait "${pids[$node]}" || fail "torchrun on host $((node + 1)) exited with status $?: $(grep -v '^frame #' "$T/node$node" | tail -5)"
done
for r in 0 1 2 3; do
  grep -q "^rank $r of 4 local $((r % 2)) \[10.0, 10.0, 10.0, 10.0\]$" "$T/node0" "$T/node1" ||
    fail "torchrun: worker $r did not all_reduce"
done
# Each host ran 2 of the workers (ranks 0-1 or 2-3: torch numbers the nodes).
for node in 0 1; do
  [ "$(grep -c '^rank [0-3] of 4 local [01] ' "$T/node$node")" -eq 2 ] ||
    fail "torchrun on host $((node + 1)) did not run 2 workers: $(grep '^rank' "$T/node$node")"
done
[ $fails -eq 0 ] && ok "torchrun --nnodes 2 --nproc-per-node 2 on 2 hosts: distcomm all_reduce right"
expect_none_left 5
finish
