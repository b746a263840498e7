#!/usr/bin/env bash
# Capture sacct output from the project's local Slurm (slurm-docker/local-slurm.sh) for the
# from-sacct tests. Run with SLURM_CONF exported for a cluster of >= 2 nodes; with
# `local-slurm.sh up --accounting` (slurmdbd) it also captures plain `sacct` and `sacct --json`.
#
#   bash tests/data/sacct/capture.sh OUTDIR
#
# Jobs: completed, failed (exit 1), timed out, cancelled while running, cancelled before it
# started (held, then scancel), a 3-task array, a 2-node job with two srun steps.
# Takes about 100 s (the time-limit job needs its minute).
set -euo pipefail
out="${1:?usage: capture.sh OUTDIR}"
mkdir -p "$out"
fields="JobID,JobIDRaw,User,Group,Partition,QOS,Submit,Start,End,Elapsed,Timelimit,State,AllocCPUS,ReqCPUS,AllocNodes,ReqNodes"
work="$(mktemp -d)"
cd "$work"
sub() { sbatch --parsable -o /dev/null "$@"; }
ids=()
ids+=("$(sub -J ok -n 1 --wrap 'sleep 2')")
ids+=("$(sub -J fail -n 2 --wrap 'sleep 1; exit 1')")
ids+=("$(sub -J timeout -n 1 -t 1 --wrap 'sleep 300')")
running="$(sub -J cancelrun -n 1 --wrap 'sleep 300')"; ids+=("$running")
held="$(sub -J cancelpend -n 1 --hold --wrap 'sleep 1')"; ids+=("$held")
ids+=("$(sub -J arr -n 1 --array=1-3 --wrap 'sleep 1')")
ids+=("$(sub -J steps -N 2 -n 2 -t 5 --wrap 'srun -n 2 sleep 1; srun -n 1 true')")
sleep 5
scancel "$running" "$held"
# Wait until nothing is left in the queue (the timeout job ends after its 1-minute limit).
for _ in $(seq 1 60); do
    [ -z "$(squeue -h -o %i)" ] && break
    sleep 3
done
sleep 2
sacct -c --parsable2 --format="$fields" -S 2000-01-01 -E now > "$out/jobcomp-parsable2.txt"
config="$(scontrol show config)"
if grep -q 'AccountingStorageType *= *accounting_storage/slurmdbd' <<<"$config"; then
    # -s lists ended jobs, including those cancelled before they started (sacct's default
    # window filter leaves out jobs that were never eligible, e.g. held ones).
    states="CD,F,TO,CA,NF,OOM,PR,DL,BF"
    sacct -a --parsable2 --format="$fields" -S 2000-01-01 -E now -s "$states" \
        > "$out/slurmdbd-parsable2.txt"
    sacct -a --json -S 2000-01-01 -E now -s "$states" > "$out/slurmdbd.json"
fi
echo "captured jobs ${ids[*]} into $out"
rm -rf "$work"
