#!/bin/bash
# secure.sh [BUILD] [ROUNDS] [NRANKS]: the cost of DISTCOMM_SECURE=1.
# all_sum (float32) per size on NRANKS (default 2) ranks over TCP
# (DISTCOMM_SHM=0), through the launcher (which sets the job token), with
# and without DISTCOMM_SECURE=1 in turns in one run (ROUNDS, default 3).
# Each figure is the median over the rounds of distcomm-perf's own median of
# 3 timed runs; ratio = time with SECURE / time without (1.00x = free).
# OLD=dir adds a third column, another build's distcomm-perf without SECURE
# (is the default path as fast as before?). Ends with `uptime` and the
# host's memcpy rate (../shared/bench/peers/membw.c).
set -u
build=${1:-build}
rounds=${2:-3}
n=${3:-2}
sizes=${SIZES:-1K,16K,256K,1M,4M,16M,64M}
tmp=$(mktemp -d /tmp/distcomm-secure.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
modes=(plain secure)
[ -n "${OLD:-}" ] && modes+=(old)
echo "load before: $(uptime)"
for ((i = 0; i < rounds; i++)); do
  for m in "${modes[@]}"; do
    b=$build sec=0
    [ $m = secure ] && sec=1
    [ $m = old ] && b=$OLD
    DISTCOMM_SHM=0 DISTCOMM_SECURE=$sec timeout 600 "$b/bin/distcomm-launch" \
      -n "$n" -- "$b/bin/distcomm-perf" -t all_reduce -l "$sizes" -R 3 -c 1 -P \
      >"$tmp/$m.$i" 2>&1 || { cat "$tmp/$m.$i"; echo "FAIL - $m round $i"; exit 1; }
    grep -q "0 wrong elements" "$tmp/$m.$i" || { cat "$tmp/$m.$i"; echo "FAIL - $m: check"; exit 1; }
    awk -v m=$m '$1 == "allreduce" { print m, $2, $4 }' "$tmp/$m.$i" >>"$tmp/all"
  done
done
med() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "all_sum float32, $n ranks over TCP (DISTCOMM_SHM=0), median of $rounds rounds"
hdr=$(printf '%10s %12s %12s %8s %14s' bytes "plain (us)" "secure (us)" ratio "secure GB/s")
[ -n "${OLD:-}" ] && hdr="$hdr $(printf '%12s %10s' "old (us)" "old/plain")"
echo "$hdr"
for s in $(awk '{ print $2 }' "$tmp/all" | sort -gu); do
  p=$(awk -v s="$s" '$1 == "plain" && $2 == s { print $3 }' "$tmp/all" | med)
  q=$(awk -v s="$s" '$1 == "secure" && $2 == s { print $3 }' "$tmp/all" | med)
  line=$(awk -v s="$s" -v p="$p" -v q="$q" 'BEGIN {
    printf "%10d %12.2f %12.2f %7.2fx %14.3f", s, p, q, q / p, s / q / 1e3 }')
  if [ -n "${OLD:-}" ]; then
    o=$(awk -v s="$s" '$1 == "old" && $2 == s { print $3 }' "$tmp/all" | med)
    line="$line $(awk -v o="$o" -v p="$p" 'BEGIN { printf "%12.2f %9.2fx", o, o / p }')"
  fi
  echo "$line"
done
echo "runs (mode, bytes, us):"
sed 's/^/  /' "$tmp/all" | paste - - - - - - - | head -40
echo "load after: $(uptime)"
membw=$(dirname "$0")/../../shared/bench/peers/membw.c
[ -f "$membw" ] || membw=/work/shared/bench/peers/membw.c
if [ -f "$membw" ] && cc -O2 -o "$tmp/membw" "$membw" 2>/dev/null; then
  echo "host memcpy: $("$tmp/membw" 128 9 | grep -i memcpy | head -1)"
fi
