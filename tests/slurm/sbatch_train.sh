#!/bin/bash
# sbatch_train.sh STATE TRAIN: an sbatch script as a user writes it, whose
# srun line runs the training example on 3 hosts x 2 ranks; the test waits
# for the job (sbatch --wait, bounded) and reads its output file: every
# rank's weights identical, the loss fell, the job COMPLETED. The script
# first runs the example itself, without srun, as users do by mistake: the
# script's own process (SLURM_PROCID=0, SLURM_NTASKS=6, no step) is a group
# of one that says to start the ranks with srun. Then two steps side by
# side (srun --overlap ... &, twice): each meets at a port of its own.
set -u
. "$(dirname "$0")/case.sh"
train=$2
cat >"$T/job.sh" <<JOB
#!/bin/bash
#SBATCH -N 3
#SBATCH -n 6
#SBATCH -o $T/job.out
export DISTCOMM_JOB_TOKEN_FILE=$CL_TOKEN
$train --steps 1 --batch 240 2>&1 | sed 's/^/alone: /'
srun -l $train --steps 60 --batch 240
for s in a b; do
    DISTCOMM_VERBOSE=1 srun --overlap -N 3 -n 3 -l $train --steps 20 --batch 240 2>&1 | sed "s/^/\$s: /" &
done
wait
JOB
start=$(date +%s)
cl_login timeout -k 5 200 sbatch --wait "$T/job.sh" </dev/null >"$T/sbatch" 2>&1
rc=$?
cat "$T/sbatch" "$T/job.out" 2>/dev/null | grep -v ' step '
echo "sbatch --wait: exit $rc in $(($(date +%s) - start)) s"
[ $rc -eq 0 ] && ok "the job exited 0" || fail "sbatch --wait exited $rc"
job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$T/sbatch")
state=$(cl_login timeout 20 scontrol show job "$job" 2>/dev/null | grep -o 'JobState=[A-Z]*')
[ "$state" = JobState=COMPLETED ] && ok "job $job COMPLETED" || fail "job $job: '$state'"
grep -q '^alone: \[distcomm\] SLURM_NTASKS=6 but no SLURM_STEP_NODELIST: this is the batch script.s own process, a group of one (start the ranks with srun)$' "$T/job.out" &&
    grep -q '^alone: distcomm train: 1 rank (singleton)' "$T/job.out" &&
    ok "run without srun, the script's own process is a group of one and says to use srun" ||
    fail "the script's own process: $(grep '^alone' "$T/job.out" | head -3)"
grep -q '^0: distcomm train: 6 ranks (ring)' "$T/job.out" && ok "6 ranks on distcomm's ring" ||
    fail "no '6 ranks (ring)' line from rank 0"
grep -q '^0: weights identical on all 6 ranks (checksum 0x' "$T/job.out" &&
    ok "weights identical on all 6 ranks" || fail "no 'weights identical' line from rank 0"
first=$(sed -n 's/^0: step *1 *loss //p' "$T/job.out")
last=$(sed -n 's/^0: step *60 *loss //p' "$T/job.out")
if [ -n "$first" ] && [ -n "$last" ] && awk "BEGIN{exit !($last < $first)}"; then
    ok "loss fell from $first to $last"
else fail "loss did not fall ('$first' -> '$last')"; fi
pa=$(sed -n 's/^a: 0: .*ring ready by coordinator dcsl1:\([0-9]*\) .*/\1/p' "$T/job.out")
pb=$(sed -n 's/^b: 0: .*ring ready by coordinator dcsl1:\([0-9]*\) .*/\1/p' "$T/job.out")
grep -q '^a: 0: weights identical on all 3 ranks' "$T/job.out" &&
    grep -q '^b: 0: weights identical on all 3 ranks' "$T/job.out" && [ -n "$pa" ] && [ -n "$pb" ] &&
    [ "$pa" != "$pb" ] && ok "two steps side by side, at ports $pa and $pb" ||
    fail "two steps side by side: ports '$pa' '$pb'; $(grep -E '^[ab]: ' "$T/job.out" | grep -v step | head -4)"
expect_none_left 10 "$train"
finish
