# distcomm-perf: alone it says on stderr that it measures a group of one and
# how to start it under the launcher; launched, it says nothing of the kind;
# its --help describes what is in this repository.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
P=$(dirname "$L")/distcomm-perf
note="distcomm-perf: a group of one (started without a launcher): nothing crosses a link and busbw is 0; start the ranks with distcomm-launch -n 2 -- distcomm-perf [options]"

timeout -k 5 40 "$P" -b 8 -e 64 > "$T/o" 2> "$T/e"
expect_eq "$?" 0 "distcomm-perf alone"
grep -qxF "$note" "$T/e" || fail "no group-of-one note: $(cat "$T/e")"
grep -q "nranks=1" "$T/o" || fail "alone: not one rank: $(cat "$T/o")"

launch -n 2 -- "$P" -b 8 -e 64 > "$T/o" 2> "$T/e"
expect_eq "$?" 0 "distcomm-perf on 2 ranks"
grep -q "group of one" "$T/e" && fail "the note on 2 ranks: $(cat "$T/e")"
grep -q "nranks=2" "$T/o" || fail "launched: not 2 ranks: $(cat "$T/o")"

timeout 10 "$P" --help > "$T/h" || fail "distcomm-perf --help failed"
grep -q "^usage: distcomm-launch -n N -- distcomm-perf" "$T/h" || fail "usage: $(head -1 "$T/h")"
grep -Eq "peers' benchmark|run-peers" "$T/h" && fail "--help names what is not here: $(cat "$T/h")"
echo "PASS: distcomm-perf"
