# bench/tools/placement.sh, sourced by placement-ab.sh and placement-peers.sh:
# where the host has put the two vCPUs just now, from a cache line's round
# trip between two processes ($LINE: bench-copy-rate's path):
# "near" under 300 ns (one cache), "far" above (different dies; see
# bench/peers/shm-tuning.md, session 15), "none" when it could not be measured.
# shellcheck shell=bash
where() {
    "$LINE" line | awk '$5 ~ /^[0-9]+$/ { print ($5 < 300 ? "near" : "far"); ok = 1 }
                        END { if (!ok) print "none" }'
}
