# Ranks started by hand (a shell loop, as a Slurm script would), for the
# tests of jobs without the launcher (coordinator.sh, mesh.sh). Sourced
# after mp_lib.sh.

# start NAME RANK VAR=VALUE... -- CMD...: one rank in the background,
# output in $mp_tmp/NAME.RANK, pid in pid_NAME_RANK.
start() {
  local name=$1 r=$2
  shift 2
  local vars=()
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  env "${vars[@]}" timeout -k 2 "${limit:-60}" "$@" >"$mp_tmp/$name.$r" 2>&1 &
  mp_pids+=($!)
  eval "pid_${name}_$r=$!"
}

# finish NAME N: wait for ranks 0..N-1; "ok" when each exited 0 and said OK.
expect_ok() {
  local name=$1 n=$2 what=$3 r pid bad=0
  for ((r = 0; r < n; r++)); do
    pid=$(eval echo "\$pid_${name}_$r")
    if ! wait "$pid" || ! grep -q "^OK rank\|checks passed, 0 failed" "$mp_tmp/$name.$r"; then
      bad=1
      fail "$what: rank $r: $(tail -3 "$mp_tmp/$name.$r")"
    fi
  done
  [ $bad -eq 0 ] && ok "$what"
}

# expect_err NAME RANK MAXMS WORD...: that rank failed (exit 3) within
# MAXMS of $t0, and its error has every WORD.
expect_err() {
  local name=$1 r=$2 max=$3 pid rc dt out
  shift 3
  pid=$(eval echo "\$pid_${name}_$r")
  wait "$pid"
  rc=$?
  dt=$(($(now_ms) - t0))
  out=$(grep -v '^\[distcomm' "$mp_tmp/$name.$r")
  if [ "$rc" -ne 3 ] || ! contains "$out" "$@"; then
    fail "$name rank $r: exit $rc (want 3), want '$*' in: $out"
  elif [ "$dt" -gt "$max" ]; then
    fail "$name rank $r: took $dt ms (at most $max): $out"
  else
    ok "$name rank $r ($dt ms): $out"
  fi
}

