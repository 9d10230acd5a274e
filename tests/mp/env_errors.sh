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
expect "hostfile missing" 3 "$C" "$mp_tmp/nope.json|No such file" -- \
  MLX_RANK=0 MLX_HOSTFILE="$mp_tmp/nope.json"
expect "hostfile is a folder" 3 "$C" "$mp_tmp" -- \
  MLX_RANK=0 MLX_HOSTFILE="$mp_tmp"
f=$(hf garbage.txt 'this is [ not json')
expect "hostfile not JSON" 3 "$C" "$f|JSON" -- MLX_RANK=0 MLX_HOSTFILE="$f"
f=$(hf empty.txt '')
expect "hostfile empty" 3 "$C" "$f|empty" -- MLX_RANK=0 MLX_HOSTFILE="$f"
f=$(hf object.json "{\"hosts\": [\"127.0.0.1:$base\"]}")
expect "hostfile an object" 3 "$C" "$f|object|list" -- MLX_RANK=0 MLX_HOSTFILE="$f"
f=$(hf nolist.json "[[\"127.0.0.1:$base\"], 5]")
expect "hostfile entry not a list" 3 "$C" "$f|entry 1|list" -- MLX_RANK=0 MLX_HOSTFILE="$f"
f=$(hf number.json "[[\"127.0.0.1:$base\"], [7]]")
expect "hostfile entry holds a number" 3 "$C" "$f|entry 1|number" -- MLX_RANK=0 MLX_HOSTFILE="$f"
f=$(hf ragged.json "[[\"127.0.0.1:$base\",\"127.0.0.1:$((base + 2))\"],[\"127.0.0.1:$((base + 1))\"]]")
expect "hostfile ranks with different address counts" 3 "$C" "$f|entry 1" -- \
  MLX_RANK=0 MLX_HOSTFILE="$f"
f=$(hf emptylist.json '[]')
expect "hostfile empty list" 3 "$C" "$f|empty list" -- MLX_RANK=0 MLX_HOSTFILE="$f"

expect "rank out of range" 3 "$C" "MLX_RANK=5|2 ranks" -- MLX_RANK=5 MLX_HOSTFILE="$good2"
expect "rank equal to size" 3 "$C" "MLX_RANK=2|2 ranks" -- MLX_RANK=2 MLX_HOSTFILE="$good2"
expect "MLX_RANK not a number" 3 "$C" "MLX_RANK|abc" -- MLX_RANK=abc MLX_HOSTFILE="$good2"
expect "MLX_RANK negative" 3 "$C" "MLX_RANK|-1" -- MLX_RANK=-1 MLX_HOSTFILE="$good2"
expect "MLX_RANK trailing junk" 3 "$C" "MLX_RANK|1x" -- MLX_RANK=1x MLX_HOSTFILE="$good2"

f=$(hf addr1.json "[[\"127.0.0.1:$base\"],[\"not-an-address\"]]")
expect "address without a port" 3 "$C" "not-an-address" -- MLX_RANK=0 MLX_HOSTFILE="$f"
f=$(hf addr2.json "[[\"127.0.0.1:$base\"],[\"127.0.0.1:99999\"]]")
expect "port out of range" 3 "$C" "99999" -- MLX_RANK=0 MLX_HOSTFILE="$f"
f=$(hf addr3.json "[[\"300.1.2.3:$base\"],[\"127.0.0.1:$((base + 1))\"]]")
expect "bad IPv4 address" 3 "$C" "300.1.2.3" -- MLX_RANK=1 MLX_HOSTFILE="$f"
f=$(hf addr4.json "[[\"127.0.0.1:$base\"],[\"127.0.0.1:http\"]]")
expect "port not a number" 3 "$C" "127.0.0.1:http" -- MLX_RANK=0 MLX_HOSTFILE="$f"

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
