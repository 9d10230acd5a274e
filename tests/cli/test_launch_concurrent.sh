# Jobs started at the same moment without --starting-port get disjoint ports.
# shellcheck disable=SC2016 # $VARS in rank commands are for the ranks' shells
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

for j in 1 2 3 4; do
    # Ranks stay alive a moment so that every job runs while the others start.
    launch -n 4 --connections-per-ip 2 -- sh -c 'cat "$MLX_HOSTFILE" > "$0.$MLX_RANK"; sleep 1' \
        "$T/job$j" &
done
wait || true
for j in 1 2 3 4; do
    [ -s "$T/job$j.0" ] || fail "job $j did not run"
done
total=$(cat "$T"/job?.0 | grep -Eo ':[0-9]+' | wc -l)
distinct=$(cat "$T"/job?.0 | grep -Eo ':[0-9]+' | sort -u | wc -l)
expect_eq "$total" 32 "ports in 4 jobs of 4 ranks x 2"
expect_eq "$distinct" 32 "distinct ports across concurrent jobs"
expect_no_hostfile
echo PASS
