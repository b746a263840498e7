#!/usr/bin/env bash
# Regenerate the captured Slurm outputs in this folder from a live local Slurm (as root):
#   bash tests/data/slurm/capture.sh
# Brings up slurm-docker/local-slurm.sh in a temporary directory, builds a known queue,
# saves squeue/sinfo JSON and scontrol -o text named for the Slurm version, tears down.
# The *-24.11.* files are NOT made here: they are constructed from Slurm's documented
# v0.0.41 schema (see README.md in this folder).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
dir="$(mktemp -d /tmp/malleo-capture.XXXXXX)"
trap 'bash "$repo/slurm-docker/local-slurm.sh" down --dir "$dir" >/dev/null 2>&1 || true' EXIT
eval "$(bash "$repo/slurm-docker/local-slurm.sh" up --nodes 16 --dir "$dir")"
ver=$(sinfo --version | awk '{print $2}' | cut -d. -f1,2)
cd "$dir"
sb() { sbatch --parsable -o /dev/null "$@"; }
run2=$(sb -N2 -t 10 -J run2 --wrap 'sleep 600')
run1=$(sb -N1 -t 0:30 -J run1 --wrap 'sleep 600')
done1=$(sb -N1 -t 1 -J done1 --wrap 'true')
sleep 3
held=$(sb --hold -N3 -t 5 -J held3 --wrap 'sleep 5')
big=$(sb -N16 -t 2:00:00 -J big --wrap 'sleep 5')
req=$(sb -N2 -w n7,n9 -t 15 -J req2 --wrap 'sleep 5')
nolimit=$(sb -N1 -J 'two words' --wrap 'sleep 5')
scontrol update JobId="$big" Priority=777
scontrol update NodeName=n16 State=DRAIN Reason=capture
sleep 2
squeue --json >"$here/squeue-$ver.json"
sinfo -N --json >"$here/sinfo-$ver.json"
scontrol show job -o >"$here/scontrol-job-$ver.txt"
scontrol show node -o >"$here/scontrol-node-$ver.txt"
scontrol show partition -o >"$here/scontrol-partition-$ver.txt"
squeue -h -o '%i %T %r %Q %D %C %l %N' >"$here/squeue-text-$ver.txt"
echo "captured Slurm $ver into $here (jobs $run2 $run1 $done1 $held $big $req $nolimit)"
