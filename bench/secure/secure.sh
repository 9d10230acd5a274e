#!/bin/bash
# secure.sh [BUILD] [ROUNDS] [NRANKS]: the cost of DISTCOMM_SECURE=1.
# all_sum (float32) per size on NRANKS (default 2) ranks over TCP
# (DISTCOMM_SHM=0), through the launcher (which sets the job token), with
# and without DISTCOMM_SECURE=1 in turns in one run (ROUNDS, default 3).
# Each figure is the median (and the best) over the rounds of
# distcomm-perf's own median of 3 timed runs; ratio = time with SECURE /
# time without (1.00x = free). On a loaded host the best of the rounds is
# the steadier figure. OLD=dir adds another build's distcomm-perf without
# SECURE (is the default path as fast as before?). Ends with `uptime`,
# bench-seal-rate (one core's tag and check rate, no network) and the
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
    [ "$m" = secure ] && sec=1
    [ "$m" = old ] && b=$OLD
    DISTCOMM_SHM=0 DISTCOMM_SECURE=$sec timeout 600 "$b/bin/distcomm-launch" \
      -n "$n" -- "$b/bin/distcomm-perf" -t all_reduce -l "$sizes" -R 3 -c 1 -P \
      >"$tmp/$m.$i" 2>&1 || { cat "$tmp/$m.$i"; echo "FAIL - $m round $i"; exit 1; }
    grep -q "0 wrong elements" "$tmp/$m.$i" || { cat "$tmp/$m.$i"; echo "FAIL - $m: check"; exit 1; }
    awk -v m="$m" '$1 == "allreduce" { print m, $2, $4 }' "$tmp/$m.$i" >>"$tmp/all"
  done
done
med() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
best() { sort -g | head -1; }
echo "all_sum float32, $n ranks over TCP (DISTCOMM_SHM=0), $rounds rounds"
hdr=$(printf '%10s %11s %11s %7s %11s %11s %7s' bytes "plain med" "secure med" ratio \
  "plain best" "secure best" ratio)
[ -n "${OLD:-}" ] && hdr="$hdr $(printf '%10s %9s' "old best" "old/plain")"
echo "$hdr (us)"
for s in $(awk '{ print $2 }' "$tmp/all" | sort -gu); do
  get() { awk -v s="$s" -v m="$1" '$1 == m && $2 == s { print $3 }' "$tmp/all"; }
  p=$(get plain | med) q=$(get secure | med)
  pb=$(get plain | best) qb=$(get secure | best)
  line=$(awk -v s="$s" -v p="$p" -v q="$q" -v pb="$pb" -v qb="$qb" 'BEGIN {
    printf "%10d %11.2f %11.2f %6.2fx %11.2f %11.2f %6.2fx", s, p, q, q / p, pb, qb, qb / pb }')
  if [ -n "${OLD:-}" ]; then
    o=$(get old | best)
    line="$line $(awk -v o="$o" -v p="$pb" 'BEGIN { printf "%10.2f %8.2fx", o, o / p }')"
  fi
  echo "$line"
done
echo "runs (mode, bytes, us):"
sed 's/^/  /' "$tmp/all" | paste - - - - - - - | head -40
echo "load after: $(uptime)"
[ -x "$build/bin/bench-seal-rate" ] && "$build/bin/bench-seal-rate" 64 5
membw=$(dirname "$0")/../../../shared/bench/peers/membw.c
[ -f "$membw" ] || membw=/work/shared/bench/peers/membw.c
if [ -f "$membw" ] && cc -O2 -o "$tmp/membw" "$membw" 2>/dev/null; then
  echo "host memcpy: $("$tmp/membw" 128 9 | grep -i memcpy | head -1)"
fi
