# Shell helpers for the tests/mp scripts (sourced, not run).
# Each script counts failures in $fails and ends with mp_finish.

fails=0
mp_tmp=$(mktemp -d /tmp/distcomm-mp.XXXXXX)
mp_pids=()

# Kill what we started (by pid), remove the scratch folder.
mp_cleanup() {
  local p
  for p in "${mp_pids[@]}"; do
    { kill -9 "$p" && wait "$p"; } 2>/dev/null
  done
  rm -rf "$mp_tmp"
}
trap mp_cleanup EXIT

ok() { echo "ok - $*"; }
fail() { echo "FAIL - $*"; fails=$((fails + 1)); }

mp_finish() {
  if [ "$fails" -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
  fi
  echo "all checks passed"
  exit 0
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# A random port base, so parallel runs rarely collide.
# Below the kernel's ephemeral range: a port picked there can already be
# the local end of another test's outgoing connection ("address in use").
mp_port_base() {
  local low=32768
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null
  [ "$low" -gt 10100 ] 2>/dev/null || low=32768
  echo $((10000 + (RANDOM * 32768 + RANDOM) % (low - 10100)))
}

# mp_hostfile FILE N BASE: one 127.0.0.1 address per rank, ports BASE + r.
mp_hostfile() {
  local file=$1 n=$2 base=$3 r sep=""
  {
    printf '['
    for ((r = 0; r < n; r++)); do
      printf '%s["127.0.0.1:%d"]' "$sep" $((base + r))
      sep=","
    done
    printf ']\n'
  } >"$file"
}

# contains TEXT WORD...: every WORD occurs in TEXT (case-sensitive).
contains() {
  local text=$1 w
  shift
  for w in "$@"; do
    case "$text" in *"$w"*) ;; *) return 1 ;; esac
  done
  return 0
}

# wait_for FILE PATTERN SECONDS: poll until grep finds PATTERN in FILE.
wait_for() {
  local file=$1 pat=$2 deadline=$(($(now_ms) + $3 * 1000))
  while [ "$(now_ms)" -lt "$deadline" ]; do
    grep -q -- "$pat" "$file" 2>/dev/null && return 0
    sleep 0.02
  done
  return 1
}

# mp_netns_pair PREFIX: two "hosts" (network namespaces $a and $b) joined by
# a veth pair ($va in $a, $vb in $b) on $net.1 and $net.2 (/24), removed at
# exit even on failure. Exits 77 (skip) without root or `ip netns`.
mp_netns_pair() {
  local tag=$$
  if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
    echo "skip: needs root and iproute2"; exit 77
  fi
  a=${1}A$tag b=${1}B$tag va=${1}a$tag vb=${1}b$tag
  net=10.$((200 + tag % 50)).$((tag / 50 % 250))
  trap 'ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; mp_cleanup' EXIT
  if ! ip netns add "$a" 2>/dev/null; then echo "skip: ip netns unavailable"; exit 77; fi
  ip netns add "$b" &&
    ip link add "$va" netns "$a" type veth peer name "$vb" netns "$b" &&
    ip -n "$a" addr add "$net.1/24" dev "$va" && ip -n "$b" addr add "$net.2/24" dev "$vb" &&
    ip -n "$a" link set "$va" up && ip -n "$b" link set "$vb" up &&
    ip -n "$a" link set lo up && ip -n "$b" link set lo up ||
    { fail "could not build the namespaces"; mp_finish; }
}
