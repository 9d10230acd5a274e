#!/bin/bash
# request_cost.sh OLD_PERF NEW_PERF [ROUNDS] [LAUNCHER]
# The cost of a request: 8 B all_sum blocking vs non-blocking (dc_iall_sum
# then dc_wait at once), 2 ranks over shared memory, for two builds of
# distcomm-perf run in turns (ROUNDS, default 5) in one run; each figure is
# the median over the rounds of distcomm-perf's own median of 7 repeats of
# 20000 calls. Ends with the host's memcpy rate (../shared/bench membw.c).
set -u
old=$1 new=$2 rounds=${3:-5}
launch=${4:-$(dirname "$new")/distcomm-launch}
tmp=$(mktemp -d /tmp/distcomm-rqcost.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# time (us) of the 8 B row under "# op NAME"
row() { awk -v op="$2" '$1 == "#" && $2 == "op" { cur = $3 } cur == op && $1 == "8" { print $5 }' "$1"; }
for ((i = 0; i < rounds; i++)); do
  for side in old new; do
    bin=$old; [ $side = new ] && bin=$new
    timeout 300 "$launch" -n 2 -- "$bin" -t all_reduce,iall_reduce -b 8 -e 8 -n 20000 -R 7 >"$tmp/$side.$i" 2>&1 ||
      { cat "$tmp/$side.$i"; echo "FAIL - $side round $i"; exit 1; }
    echo "$side $(row "$tmp/$side.$i" all_reduce) $(row "$tmp/$side.$i" iall_reduce)" >>"$tmp/all"
  done
done
med() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-8s %14s %16s %8s\n' build "all_sum (us)" "iall_sum+wait" ratio
for side in old new; do
  b=$(awk -v s=$side '$1 == s { print $2 }' "$tmp/all" | med)
  n=$(awk -v s=$side '$1 == s { print $3 }' "$tmp/all" | med)
  printf '%-8s %14.2f %16.2f %8.2f\n' $side "$b" "$n" "$(awk -v b="$b" -v n="$n" 'BEGIN { print n / b }')"
done
echo "rounds (build, blocking us, request us):"
sed 's/^/  /' "$tmp/all"
membw=$(dirname "$0")/../../../shared/bench/peers/membw.c
if [ -f "$membw" ] && cc -O2 -o "$tmp/membw" "$membw" 2>/dev/null; then
  echo "host memcpy: $("$tmp/membw" 128 9 | grep -i memcpy | head -1)"
fi
