#!/bin/bash
# ops-ab.sh OLD_BUILD NEW_BUILD [DIR] - two distcomm builds in turns over
# shared memory on this host: distcomm-perf's ops for each rank count, ROUNDS
# turns of old then new, and a table of each side's best round per row
# (new/old below 1: the new build is faster). The figures of one run only.
# Environment: RANKS ("2 4"), ROUNDS (2), OPS (all_to_all,gather,scatter),
#   SIZES (1K,64K,1M,16M), RUNS (5, timed runs per size: median), ENV (extra
#   VAR=VALUE words for both sides, e.g. DISTCOMM_CMA=0).
set -euo pipefail
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd)
out=${3:-$(mktemp -d /tmp/ops-ab.XXXXXX)}
mkdir -p "$out"
rounds=${ROUNDS:-2}
for n in ${RANKS:-2 4}; do
  for ((r = 1; r <= rounds; r++)); do
    for side in old new; do
      b=$old
      [ $side = new ] && b=$new
      # shellcheck disable=SC2086 # ENV is a word list on purpose
      timeout 600 env ${ENV:-} "$b/bin/distcomm-launch" -n "$n" -- "$b/bin/distcomm-perf" \
        --peers-format -c 1 -R "${RUNS:-5}" -l "${SIZES:-1K,64K,1M,16M}" \
        -t "${OPS:-all_to_all,gather,scatter}" >"$out/$side.n$n.r$r.txt" 2>&1
    done
  done
  echo "== $n ranks (time per call, us; best of $rounds rounds)"
  for side in old new; do
    awk '/^[a-z]/ && $2 ~ /^[0-9]+$/ { k = $1 " " $2; if (!(k in b) || $4 < b[k]) b[k] = $4; if (!(k in o)) o[k] = ++m; key[o[k]] = k }
         END { for (i = 1; i <= m; i++) print key[i], b[key[i]] }' "$out/$side.n$n".r*.txt >"$out/$side.n$n.best"
  done
  paste "$out/old.n$n.best" "$out/new.n$n.best" |
    awk '{ printf "%-10s %10s old %10.2f new %10.2f  new/old %.2f\n", $1, $2, $3, $6, $6 / $3 }'
done
echo "# $(date -u) load: $(cut -d' ' -f1-3 /proc/loadavg); raw outputs in $out"
