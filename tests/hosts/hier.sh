#!/bin/bash
# hier.sh UNUSED CONFORMANCE HOSTS EXPECT COUNTS [VAR=VALUE...]: the
# conformance suite's all_reduce (every dtype, op and count of COUNTS) on
# namespace hosts, rank r on host HOSTS[r] (a list such as 1,1,2,2 or
# 1,2,1,2), started by hand through a coordinator with DISTCOMM_VERBOSE=1
# and the variables given. Then the ranks' logs say which path it took:
# EXPECT "hier" (every rank split off its host's group and its rail) or
# "off:REASON" (every rank stayed on the flat ring and logged REASON), or
# "kill:R": rank R is killed (SIGKILL) once it is in hierarchical all_sums
# (COUNTS should keep it there for seconds), and every other rank must
# fail within 40 s, naming the hierarchy, instead of waiting for the
# timeout (60 s here).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/checks.sh" "$1"
conf=$2 layout=$3 expect=$4 counts=$5
IFS=, read -r -a where <<<"$layout"
shift 5
n=${#where[@]}
nh=$(printf '%s\n' "${where[@]}" | sort -u | wc -l)
hosts_up "$nh" || { fail "the test hosts did not come up"; finish; }
unset MLX_RANK MLX_HOSTFILE DISTCOMM_JOB_TOKEN MLX_WORLD_SIZE RANK WORLD_SIZE \
  MASTER_ADDR MASTER_PORT SLURM_PROCID SLURM_NTASKS DISTCOMM_COORDINATOR \
  MLX_JACCL_COORDINATOR OMPI_COMM_WORLD_RANK PMI_RANK PMIX_RANK DISTCOMM_IFNAME
# A job across hosts needs a token (protected mode): a file every rank reads.
(umask 077 && printf 'hier-test-token-%s%s\n' "$RANDOM" "$RANDOM" >"$T/token")
export DISTCOMM_JOB_TOKEN_FILE=$T/token

pids=()
for ((r = 0; r < n; r++)); do
  hosts_exec "${where[$r]}" env DISTCOMM_TIMEOUT=60 DISTCOMM_VERBOSE=1 "$@" \
    DISTCOMM_COORDINATOR=10.99.0.1:29531 MLX_RANK=$r MLX_WORLD_SIZE=$n \
    timeout -k 2 300 "$conf" --size "$n" --only all_reduce --counts "$counts" \
    >"$T/out.$r" 2>&1 &
  pids+=($!)
done
bad=0
if [[ $expect == kill:* ]]; then
  victim=${expect#kill:}
  # Kill once the victim is in hierarchical all_sums (its split groups are
  # built), not at a fixed time: on a quiet machine the whole run once
  # ended before "3 s in" (CI: the kill found no process).
  for ((i = 0; i < 600; i++)); do
    grep -q "host group rank" "$T/out.$victim" 2>/dev/null && break
    sleep 0.05
  done
  sleep 1
  t0=$(date +%s)
  # subshell -> timeout -> the rank
  victim_pid=$(pgrep -P "$(pgrep -P "${pids[$victim]}")")
  if [ -z "$victim_pid" ]; then
    fail "rank $victim ended before it could be killed: $(tail -2 "$T/out.$victim")"
    finish
  fi
  kill -9 $victim_pid
  for ((r = 0; r < n; r++)); do
    [ "$r" -eq "$victim" ] && continue
    wait "${pids[$r]}" && { fail "rank $r exited 0 after rank $victim was killed"; bad=1; }
    grep -q "(hierarchical)" "$T/out.$r" || { fail "rank $r: $(tail -2 "$T/out.$r")"; bad=1; }
  done
  took=$(($(date +%s) - t0))
  [ "$took" -lt 40 ] || { fail "the others took ${took}s to fail"; bad=1; }
  [ $bad -eq 0 ] && ok "rank $victim killed: the $((n - 1)) others failed in ${took}s, naming the hierarchy"
  finish
fi
for ((r = 0; r < n; r++)); do
  if ! wait "${pids[$r]}" || ! grep -q 'passed, 0 failed$' "$T/out.$r"; then
    bad=1
    fail "rank $r: $(grep -v '^\[distcomm' "$T/out.$r" | tail -3)"
  fi
done
[ $bad -eq 0 ] && ok "$n ranks on $nh hosts ($layout): all_reduce exact for counts $counts"

# What each rank's log says about the hierarchy.
per=$((n / nh))
for ((r = 0; r < n; r++)); do
  log=$T/out.$r
  case $expect in
  hier)
    grep -q "hierarchy: $nh hosts x $per ranks" "$log" &&
      grep -q "hierarchy: all_.* host group rank .* rail rank" "$log" ||
      { fail "rank $r did not go hierarchical: $(grep hierarchy "$log" | head -2)"; bad=1; } ;;
  off:*)
    grep -q "hierarchy off: ${expect#off:}" "$log" && ! grep -q "host group rank" "$log" ||
      { fail "rank $r: expected the flat ring (${expect#off:}): $(grep hierarchy "$log" | head -2)"; bad=1; } ;;
  esac
done
[ $bad -eq 0 ] && ok "every rank's log: $expect"
finish
