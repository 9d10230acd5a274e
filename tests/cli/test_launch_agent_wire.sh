# The remote agent (distcomm-launch --remote-agent) reading a broken
# launcher: a frame header announcing more than the wire's maximum (16 MiB)
# after the setup is a clear error; the agent stops its rank and exits at
# once instead of buffering without bound.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
export LC_ALL=C

be32() { # the 4-byte big-endian length of wire.h
    printf "\\x$(printf %02x $(($1 >> 24 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))"
    printf "\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 & 255)))"
}
frame() { # frame TYPE PAYLOAD
    printf '%s' "$1"
    be32 ${#2}
    printf '%s' "$2"
}
setup() { # the setup of one rank running sh -c "$1" "$2"
    frame W 1
    frame N testhost
    frame J 0123456789abcdef
    frame T 0123456789abcdef0123456789abcdef
    frame F '[["127.0.0.1:1"]]'
    frame c /
    frame A sh
    frame A -c
    frame A "$1"
    [ $# -gt 1 ] && frame A "$2"
    frame R 0
    frame G ''
}

# Sanity: a well-formed setup runs the rank and the agent ends with it.
{ setup "echo hi"; sleep 2; } | timeout -k 5 20 "$L" --remote-agent > "$T/o1" 2> "$T/e1"
expect_eq "$?" 0 "an agent with a good setup: $(cat "$T/e1")"
grep -q hi "$T/o1" || fail "no output frame from the rank"

# An oversized frame after the setup, the channel kept open.
start=$(date +%s)
{ setup 'echo $$ > "$0"; exec sleep 30' "$T/rank.pid"; printf I; be32 4294967295; sleep 8; } | {
    timeout -k 5 25 "$L" --remote-agent > "$T/o2" 2> "$T/e2"
    echo $? > "$T/rc2"
    date +%s > "$T/end2"
}
rc=$(cat "$T/rc2")
took=$(($(cat "$T/end2") - start))
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "status $rc for an oversized frame: $(cat "$T/e2")"
[ "$took" -lt 6 ] || fail "the agent took $took s to give up on an oversized frame"
grep -q "^distcomm-launch (on testhost): the launcher sent a frame of 4294967295 bytes (the most is 16777216); stopping the ranks$" "$T/e2" ||
    fail "unexpected message: $(cat "$T/e2")"
expect_gone "$T/rank.pid"
echo PASS
