#!/bin/bash
# selftest.sh: the test-host harness itself. Two hosts; ssh to each lands on
# that host (it owns its address); a direct link appears on both ends; a
# private /tmp and a hidden directory are seen over ssh only; hosts_down
# leaves no namespace, process or file behind (checked from a child shell).
set -u
here=$(cd "$(dirname "$0")" && pwd)
fails=0
ok() { echo "ok - $*"; }
fail() { echo "FAIL - $*"; fails=$((fails + 1)); }

# The harness runs in a child shell so that what it leaves can be checked here.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bash -c '
set -u
. "$1/lib.sh"
hosts_up 2 || exit 1
echo "ns ${HOSTS_NS[*]}"
echo "dir $HOSTS_DIR"
for i in 1 2; do
    got=$(hosts_exec 1 timeout 20 $DISTCOMM_SSH "${HOSTS_ADDR[$i]}" \
        "ip -4 -o addr show dev eth0" </dev/null)
    case $got in *" ${HOSTS_ADDR[$i]}/24 "*) echo "ok - ssh ${HOSTS_ADDR[$i]} reaches host $i" ;;
        *) echo "FAIL - ssh ${HOSTS_ADDR[$i]}: got [$got]" ;; esac
done
if hosts_exec 2 timeout 10 $DISTCOMM_SSH -o BatchMode=yes 10.99.0.9 true </dev/null 2>/dev/null; then
    echo "FAIL - ssh to an address without a host succeeded"
else echo "ok - no host at 10.99.0.9"; fi
hosts_link 1 2 || echo "FAIL - hosts_link 1 2"
if hosts_exec 1 ip link show d12 | grep -q "state UP\|LOWER_UP" &&
    hosts_exec 2 ip link show d21 >/dev/null; then echo "ok - link d12 <-> d21"
else echo "FAIL - link d12/d21 missing"; fi
mark=$(mktemp /tmp/dchosts-mark.XXXXXX)
hosts_private_tmp 2 || echo "FAIL - hosts_private_tmp 2"
seen() { hosts_exec 1 timeout 20 $DISTCOMM_SSH "${HOSTS_ADDR[$1]}" "test -e $2 && echo yes || echo no" </dev/null; }
[ "$(seen 1 "$mark")" = yes ] && [ "$(seen 2 "$mark")" = no ] &&
    echo "ok - host 2 has a private /tmp" || echo "FAIL - private /tmp on host 2"
hide=$(mktemp -d /var/tmp/dchosts-hide.XXXXXX)
touch "$hide/tool"
hosts_hide 1 "$hide" || echo "FAIL - hosts_hide 1"
[ "$(seen 1 "$hide/tool")" = no ] && [ "$(seen 2 "$hide/tool")" = yes ] &&
    echo "ok - $hide hidden on host 1 only" || echo "FAIL - hosts_hide on host 1"
rm -rf "$mark" "$hide"
hosts_exec 1 sleep 300 2>/dev/null &
hosts_exec 2 $DISTCOMM_SSH "${HOSTS_ADDR[1]}" sleep 300 </dev/null 2>/dev/null &
sleep 0.5
' _ "$here" >"$out" 2>&1
rc=$?
cat "$out"
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || fail "harness script exited $rc"
grep -q '^FAIL' "$out" && fails=$((fails + 1))
[ "$(grep -c '^ok' "$out")" -eq 6 ] || fail "expected 6 ok lines"
ns=$(sed -n 's/^ns //p' "$out")
dir=$(sed -n 's/^dir //p' "$out")
for n in $ns ${ns%h1*}s; do
    if ip netns list | grep -qw "$n"; then fail "namespace $n left behind"; fi
done
[ -n "$dir" ] && [ ! -e "$dir" ] && ok "temp dir removed" || fail "temp dir $dir left"
if pgrep -f "sshd -f $dir/" >/dev/null; then fail "an sshd of the run survived"; else ok "no sshd left"; fi
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
ok "hosts_down left nothing behind"
