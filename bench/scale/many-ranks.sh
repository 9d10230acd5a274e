#!/bin/bash
# many-ranks.sh - N ranks on this host through distcomm-launch: start, one
# all_sum of ten floats, exit (issue 19: 256 ranks). Each build runs
# bench/scale/many_ranks.c (compiled here against the build's libdistcomm.so);
# the builds run in turns (ROUNDS). Per run: the launcher's wall time, the
# load average before it, the CPU time of all ranks, and when the ranks
# finished each phase (min/median/max over ranks, seconds since launch)
# with the CPU the phase took, summed over ranks. Ends with the host's
# memcpy rate (../shared/bench/peers/membw.c).
#
# Usage: bench/scale/many-ranks.sh [N=256] BUILD[=ENV,ENV...] ...
#   e.g. bench/scale/many-ranks.sh 256 /tmp/old=DISTCOMM_SHM=0 build build=DISTCOMM_SOCKETS=1
#   ROUNDS=3 turns; TIMEOUT=150 s per run (the ranks are killed after it).
# An instrumented build (TR lines on stderr) adds the set-up's phases.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
n=${1:-256}
shift
[ $# -gt 0 ] || set -- "$repo/build"
rounds=${ROUNDS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
i=0
for spec in "$@"; do
  b=${spec%%=*}
  b=$(cd "$b" && pwd) || exit 2
  cc -O2 -I"$repo/include" "$repo/bench/scale/many_ranks.c" -L"$b" -ldistcomm \
    -Wl,-rpath,"$b" -o "$tmp/mr.$i" || exit 2
  i=$((i + 1))
done
echo "machine: $(nproc) cores, $(free -g | awk '/^Mem/ {print $2}') GiB; $n ranks; $(date -u +%FT%TZ)"
for ((t = 1; t <= rounds; t++)); do
  i=0
  for spec in "$@"; do
    b=${spec%%=*}
    envs=()
    [ "$spec" != "$b" ] && IFS=, read -r -a envs <<<"${spec#*=}"
    load=$(cut -d' ' -f1 /proc/loadavg)
    s=$(date +%s.%N)
    env "${envs[@]}" setsid timeout -s KILL "${TIMEOUT:-150}" \
      "$b/bin/distcomm-launch" -n "$n" -- "$tmp/mr.$i" </dev/null \
      >"$tmp/out" 2>"$tmp/err"
    rc=$?
    e=$(date +%s.%N)
    /usr/bin/python3 "$repo/bench/scale/many_ranks.py" "$tmp/out" "$tmp/err" "$s" "$e" \
      "$load" "turn $t: $b ${envs[*]} (exit $rc)"
    [ $rc -eq 0 ] || grep -v '^TR ' "$tmp/err" | tail -2
    i=$((i + 1))
  done
done
membw=$repo/../shared/bench/peers/membw.c
if [ -f "$membw" ] && cc -O2 -o "$tmp/membw" "$membw" 2>/dev/null; then
  echo "host memcpy: $("$tmp/membw" 128 9 | grep -i memcpy | head -1)"
fi
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
