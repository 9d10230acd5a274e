#!/bin/bash
# mesh.sh LAUNCH PROBE CONFORMANCE SUM_BITS: the mesh backend (MLX's JACCL over TCP)
# on this host, every pair's links over the loopback: by hand with MLX's
# variables (MLX_IBV_DEVICES, MLX_JACCL_COORDINATOR, MLX_RANK), jaccl-ring,
# through distcomm-launch --backend jaccl, and each configuration error a
# user can make: a clear error at once, naming the entry.
set -u
launch=$1 probe=$2 conf=$3 bits=$4
. "$(dirname "$0")/mp_lib.sh"
. "$(dirname "$0")/by_hand.sh"
unset MLX_RANK MLX_HOSTFILE DISTCOMM_JOB_TOKEN MLX_WORLD_SIZE RANK WORLD_SIZE \
  MASTER_ADDR MASTER_PORT SLURM_PROCID SLURM_NTASKS DISTCOMM_COORDINATOR \
  MLX_JACCL_COORDINATOR OMPI_COMM_WORLD_RANK PMI_RANK PMIX_RANK DISTCOMM_IFNAME \
  MLX_IBV_DEVICES MLX_JACCL_RING
export DISTCOMM_TIMEOUT=20
port() { echo $(($(mp_port_base) + 40 + $1)); }

# 3 ranks by hand over TCP: MLX's file as written (rdma_ names), two links
# between ranks 1 and 2, the world size from the matrix.
dev=$mp_tmp/devices.json
echo '[[null, "rdma_lo", "lo"], ["rdma_lo", null, ["lo", "lo"]], ["lo", ["lo", "lo"], null]]' >"$dev"
limit=300
p=$(port 0)
for r in 2 1 0; do
  start mesh $r MLX_IBV_DEVICES="$dev" MLX_JACCL_COORDINATOR=127.0.0.1:$p \
    MLX_RANK=$r DISTCOMM_SHM=0 MLX_RING_VERBOSE=1 -- "$conf" --size 3 --quick
  sleep 0.3
done
expect_ok mesh 3 "3 ranks by MLX_IBV_DEVICES + MLX_JACCL_COORDINATOR + MLX_RANK: conformance"
if grep -q "mesh ready .* rank 1 of 3, 2 link(s) per pair" "$mp_tmp/mesh.1"; then
  ok "the mesh backend ran, 2 links per pair"
else
  fail "not the mesh: $(grep ready "$mp_tmp/mesh.1")"
fi
if grep -q "has no DISTCOMM_JOB_TOKEN: only this host.s processes of this user may join" "$mp_tmp/mesh.0"; then
  ok "without a token, verbose says only this host's processes of this user may join"
else
  fail "no word about the missing token: $(head -3 "$mp_tmp/mesh.0")"
fi

# jaccl-ring: a ring of cables (no device between ranks 0 and 2, 1 and 3).
ringdev='[[null,"lo",null,"lo"],["lo",null,"lo",null],[null,"lo",null,"lo"],["lo",null,"lo",null]]'
p=$(port 1)
for r in 0 1 2 3; do
  start jring $r MLX_IBV_DEVICES="$ringdev" MLX_JACCL_COORDINATOR=127.0.0.1:$p \
    MLX_RANK=$r MLX_JACCL_RING=1 -- "$conf" --size 4 --quick
done
expect_ok jring 4 "jaccl-ring on 4 ranks (MLX_JACCL_RING=1): conformance"

# The launcher: --backend jaccl over the loopback.
if timeout 300 "$launch" -n 3 --backend jaccl --env MLX_RING_VERBOSE=1 -- \
  "$conf" --size 3 --quick >"$mp_tmp/launched" 2>&1 &&
  [ "$(grep -c 'checks passed, 0 failed' "$mp_tmp/launched")" -eq 3 ] &&
  [ "$(grep -c 'mesh ready' "$mp_tmp/launched")" -eq 3 ]; then
  ok "distcomm-launch -n 3 --backend jaccl: conformance on the mesh"
else
  fail "distcomm-launch --backend jaccl: $(tail -5 "$mp_tmp/launched")"
fi
# Large all_sums go straight to each block's owner (algo/mesh.c): every
# rank must hold the same bits, in place and out of place, over TCP.
if timeout 300 "$launch" -n 3 --backend jaccl --env DISTCOMM_SHM=0 -- "$bits" \
  >"$mp_tmp/bits" 2>&1 && [ "$(grep -c ' 0 failed' "$mp_tmp/bits")" -eq 3 ]; then
  ok "the mesh's all_sum gives every rank the same bits: $(grep -m1 passed "$mp_tmp/bits")"
else
  fail "sum_bits on the mesh: $(tail -5 "$mp_tmp/bits")"
fi
limit=60

# Configuration errors: at once, on the rank that has them.
p=$(port 2)
bad() { # NAME DEVICES [VAR=VALUE...] -- WORD...
  local name=$1 devices=$2
  shift 2
  local vars=()
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  t0=$(now_ms)
  start "$name" 0 MLX_IBV_DEVICES="$devices" MLX_JACCL_COORDINATOR=127.0.0.1:$p \
    MLX_RANK=0 "${vars[@]}" -- "$probe" init
  expect_err "$name" 0 2000 "$@"
}
bad nofile "$mp_tmp/none.json" -- ERR_CONFIG "MLX_IBV_DEVICES $mp_tmp/none.json" "No such file"
bad notjson '[[null, "lo"' -- ERR_CONFIG "MLX_IBV_DEVICES" "not valid JSON"
bad square '[[null, "lo"], [null]]' -- ERR_CONFIG "row 1 has another length, expected 2"
bad diag '[["lo", "lo"], ["lo", null]]' -- ERR_CONFIG "entry [0][0] must be null"
bad number '[[null, 5], ["lo", null]]' -- ERR_CONFIG "entry [0][1] must be null, a device name"
bad noif '[[null, "rdma_nosuch0"], ["lo", null]]' -- ERR_CONFIG "towards rank 1" "interface nosuch0 does not exist"
bad hole '[[null, "lo", null], ["lo", null, "lo"], [null, "lo", null]]' -- \
  ERR_CONFIG "rank 0 has no device towards rank 2" "jaccl-ring"
bad size '[[null, "lo"], ["lo", null]]' MLX_WORLD_SIZE=3 -- ERR_CONFIG "MLX_WORLD_SIZE=3 but MLX_IBV_DEVICES has 2 rows"
t0=$(now_ms)
start nocoord 0 MLX_IBV_DEVICES='[[null, "lo"], ["lo", null]]' MLX_RANK=0 -- "$probe" init
expect_err nocoord 0 2000 ERR_CONFIG "no coordinator is" "MLX_JACCL_COORDINATOR"

# A rank that never comes: the others say which, within the timeout.
export DISTCOMM_TIMEOUT=3
p=$(port 3)
t0=$(now_ms)
for r in 0 1; do
  start missing $r MLX_IBV_DEVICES="$dev" MLX_JACCL_COORDINATOR=127.0.0.1:$p \
    MLX_RANK=$r -- "$probe" init
done
expect_err missing 0 8000 ERR_TIMEOUT "missing rank(s) 2"
expect_err missing 1 8000 ERR_TIMEOUT "missing rank(s) 2"
mp_finish
