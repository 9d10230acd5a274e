#!/bin/bash
# env_errors.sh PROBE: configuration mistakes a user makes without the
# launcher (MLX_RANK / MLX_HOSTFILE set by hand). Each must fail at once
# (< 3 s) with one line: the status and a detail naming the problem.
set -u
probe=$1
. "$(dirname "$0")/mp_lib.sh"

base=$(mp_port_base)
hf() { # hf NAME TEXT: write a hostfile, print its path
  printf '%s\n' "$2" >"$mp_tmp/$1"
  echo "$mp_tmp/$1"
}
good2=$(hf good2.json "[[\"127.0.0.1:$base\"],[\"127.0.0.1:$((base + 1))\"]]")

# expect NAME RC PREFIX WORDS -- ENV...: run "probe init --strict --retry" (or the
# args after ENV's "+" marker) with exactly ENV, check exit code RC, that the
# output is one line starting with PREFIX and holding every word of WORDS
# (separated by "|").
expect() {
  local name=$1 want_rc=$2 prefix=$3 words=$4
  shift 5
  local args=(init --strict --retry) envs=()
  while [ $# -gt 0 ]; do
    if [ "$1" = "+" ]; then shift; args=("$@"); break; fi
    envs+=("$1"); shift
  done
  local t0 out rc dt lines
  t0=$(now_ms)
  out=$(env -u MLX_RANK -u MLX_HOSTFILE -u MLX_JACCL_COORDINATOR \
        DISTCOMM_TIMEOUT=5 "${envs[@]}" timeout -k 2 10 "$probe" "${args[@]}" 2>&1)
  rc=$?
  dt=$(($(now_ms) - t0))
  lines=$(printf '%s\n' "$out" | wc -l)
  local w list
  IFS='|' read -r -a list <<<"$words"
  if [ "$rc" -ne "$want_rc" ]; then
    fail "$name: exit $rc, want $want_rc: $out"
  elif [ "$lines" -ne 1 ]; then
    fail "$name: $lines lines, want one: $out"
  elif ! contains "$out" "$prefix"; then
    fail "$name: no '$prefix' in: $out"
  elif [ "$dt" -ge 3000 ]; then
    fail "$name: took $dt ms: $out"
  else
    for w in "${list[@]}"; do
      if ! contains "$out" "$w"; then
        fail "$name: '$w' not named in: $out"
        return
      fi
    done
    ok "$name ($dt ms): $out"
  fi
}

C="ERR ERR_CONFIG:"
# bad_hostfile NAME FILE TEXT WORDS [RANK]: rank RANK (default 0) given the
# hostfile FILE holding TEXT fails with ERR_CONFIG naming WORDS, where "@"
# stands for the hostfile's path (known only once it is written).
bad_hostfile() {
  local f
  f=$(hf "$2" "$3")
  expect "$1" 3 "$C" "${4//@/"$f"}" -- MLX_RANK="${5:-0}" MLX_HOSTFILE="$f"
}

expect "hostfile missing" 3 "$C" "$mp_tmp/nope.json|No such file" -- \
  MLX_RANK=0 MLX_HOSTFILE="$mp_tmp/nope.json"
expect "hostfile is a folder" 3 "$C" "$mp_tmp" -- \
  MLX_RANK=0 MLX_HOSTFILE="$mp_tmp"
bad_hostfile "hostfile not JSON" garbage.txt 'this is [ not json' "@|JSON"
bad_hostfile "hostfile empty" empty.txt '' "@|empty"
bad_hostfile "hostfile an object" object.json "{\"hosts\": [\"127.0.0.1:$base\"]}" "@|object|list"
bad_hostfile "hostfile entry not a list" nolist.json "[[\"127.0.0.1:$base\"], 5]" "@|entry 1|list"
bad_hostfile "hostfile entry holds a number" number.json "[[\"127.0.0.1:$base\"], [7]]" "@|entry 1|number"
bad_hostfile "hostfile ranks with different address counts" ragged.json \
  "[[\"127.0.0.1:$base\",\"127.0.0.1:$((base + 2))\"],[\"127.0.0.1:$((base + 1))\"]]" "@|entry 1"
bad_hostfile "hostfile empty list" emptylist.json '[]' "@|empty list"

expect "rank out of range" 3 "$C" "MLX_RANK=5|2 ranks" -- MLX_RANK=5 MLX_HOSTFILE="$good2"
expect "rank equal to size" 3 "$C" "MLX_RANK=2|2 ranks" -- MLX_RANK=2 MLX_HOSTFILE="$good2"
expect "MLX_RANK not a number" 3 "$C" "MLX_RANK|abc" -- MLX_RANK=abc MLX_HOSTFILE="$good2"
expect "MLX_RANK negative" 3 "$C" "MLX_RANK|-1" -- MLX_RANK=-1 MLX_HOSTFILE="$good2"
expect "MLX_RANK trailing junk" 3 "$C" "MLX_RANK|1x" -- MLX_RANK=1x MLX_HOSTFILE="$good2"

bad_hostfile "address without a port" addr1.json "[[\"127.0.0.1:$base\"],[\"not-an-address\"]]" "not-an-address"
bad_hostfile "port out of range" addr2.json "[[\"127.0.0.1:$base\"],[\"127.0.0.1:99999\"]]" "99999"
bad_hostfile "bad IPv4 address" addr3.json "[[\"300.1.2.3:$base\"],[\"127.0.0.1:$((base + 1))\"]]" "300.1.2.3" 1
bad_hostfile "port not a number" addr4.json "[[\"127.0.0.1:$base\"],[\"127.0.0.1:http\"]]" "127.0.0.1:http"

expect "strict, nothing configured" 3 "ERR ERR_UNAVAILABLE:" "MLX_RANK|MLX_HOSTFILE" --
expect "strict, MLX_HOSTFILE missing" 3 "ERR " "MLX_HOSTFILE" -- MLX_RANK=0
expect "unknown backend" 3 "ERR ERR_UNAVAILABLE:" "bogus" -- + init --strict --retry --backend bogus
expect "not strict, nothing configured" 0 "OK rank 0 size 1 backend singleton" "" -- + init

# None of these leaks: a few again under valgrind (definite leaks only:
# libcjson is dlopen'ed and stays loaded on purpose).
# (not in a sanitizer build: valgrind cannot run what ASan instruments)
if command -v valgrind >/dev/null 2>&1 && ! ldd "$probe" | grep -q -E "lib[at]san"; then
  f=$(hf vg.json "[[\"127.0.0.1:$base\"],[\"bad\"]]")
  for case_env in "MLX_RANK=0 MLX_HOSTFILE=$mp_tmp/nope.json" \
                  "MLX_RANK=0 MLX_HOSTFILE=$mp_tmp/garbage.txt" \
                  "MLX_RANK=0 MLX_HOSTFILE=$f" "MLX_RANK=abc MLX_HOSTFILE=$good2"; do
    # shellcheck disable=SC2086
    out=$(env -u MLX_RANK -u MLX_HOSTFILE $case_env timeout 60 valgrind -q \
          --leak-check=full --errors-for-leak-kinds=definite \
          --error-exitcode=99 "$probe" init --strict --retry 2>&1)
    rc=$?
    if [ "$rc" -eq 3 ]; then ok "no leak or memory error: $case_env"
    else fail "valgrind ($case_env): exit $rc: $out"; fi
  done
fi
mp_finish
