#!/bin/bash
# train.sh LAUNCHER TRAIN: the data-parallel training example on 2 hosts, one
# rank each, host 2 with a private /tmp (so the hostfile cannot be shared
# through /tmp): the loss falls, the weights end identical on both ranks, and
# host 2's /tmp keeps no hostfile afterwards.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/checks.sh"
train=$2
hosts_up 2 || { fail "the test hosts did not come up"; finish; }
keep=()
for p in "$(dirname "$(dirname "$L")")" "$(dirname "$train")"; do # build dirs under /tmp
    case $p in /tmp/?*) keep+=("$p") ;; esac
done
hosts_private_tmp 2 "${keep[@]}" || fail "hosts_private_tmp 2"
cd "$T" || exit 1 # the launcher's cwd is not on host 2: the rank starts in its home
launch 120 --tag-output --hosts "$(host_list 2)" -- "$train" --steps 60 </dev/null >"$T/out" 2>&1
rc=$?
cat "$T/out"
[ $rc -eq 0 ] && ok "launcher exited 0" || fail "launcher exited $rc"
grep -q "^\[0\] weights identical on all 2 ranks" "$T/out" && ok "weights identical on both hosts" ||
    fail "no 'weights identical' line from rank 0"
first=$(sed -n 's/^\[0\] step *1 *loss //p' "$T/out")
last=$(sed -n 's/^\[0\] step *60 *loss //p' "$T/out")
if [ -n "$first" ] && [ -n "$last" ] && awk "BEGIN{exit !($last < $first)}"; then
    ok "loss fell from $first to $last"
else fail "loss did not fall ('$first' -> '$last')"; fi
left=$(hosts_exec 1 $DISTCOMM_SSH "${HOSTS_ADDR[2]}" 'ls /tmp' </dev/null)
case $left in *distcomm-hostfile*) fail "hostfile left in host 2's /tmp: $left" ;;
    *) ok "host 2's private /tmp has no hostfile left" ;; esac
expect_none_left 5 && ok "no process of the job left on any host"
finish
