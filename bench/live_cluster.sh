#!/usr/bin/env bash
# A real Slurm with 10,000 nodes and 10,000 pending jobs on one machine, for bench/live_cycle.py.
#
#   bench/live_cluster.sh up DIR [--nodes N] [--jobs J] [--prefix PREFIX]
#   bench/live_cluster.sh down DIR [--prefix PREFIX]
#
# "up": slurm-docker/local-slurm.sh brings up 4 real nodes n[1-4] (one slurmd each), then
# slurm.conf gains N-4 nodes f[1-(N-4)] whose NodeAddr:Port is n1's slurmd: slurmctld's
# registration requests to them are answered by n1's slurmd, so they become IDLE and usable
# like any node (no process of their own).  SlurmdTimeout=0 stops the periodic pings once
# every node answered (a never-registered node is asked to register at every ping, which n1's
# slurmd answers at about 0.1 s of CPU each: at 10,000 nodes that would never end); until
# then slurmctld asks the silent ones again every 100 s.  One job holds the only license
# (Licenses=lic:1) on n1 and J jobs ask for it (-L lic:1, 1-50 nodes, 10-1410 minutes):
# they stay PENDING with reason Licenses (or None: Slurm's scheduler passes are 10 minutes
# apart here), which the agent plans (neither is an ineligible reason), and nothing starts.
# n2-n4 each run one job, so the plan has running jobs too.
# Takes about 4 minutes at 10,000 jobs (one sbatch each, about 20 ms under load).
# PREFIX: a Slurm installed there (slurm-docker/build-slurm.sh) instead of Debian's.
# Exit status: 0 done; 1 failed; 2 bad usage.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
local_slurm="$(dirname "$here")/slurm-docker/local-slurm.sh"
cmd="${1:-}"; dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || { sed -n 2,5p "$0" >&2; exit 2; }
shift 2
nodes=10000 jobs=10000 prefix=()
while [ $# -gt 0 ]; do
    case "$1" in
        --nodes) nodes="${2:?}"; shift 2 ;;
        --jobs) jobs="${2:?}"; shift 2 ;;
        --prefix) prefix=(--prefix "${2:?}"); export PATH="$2/bin:$2/sbin:$PATH"; shift 2 ;;
        *) echo "live_cluster: unknown option $1" >&2; exit 2 ;;
    esac
done
case "$nodes$jobs" in *[!0-9]*) echo "live_cluster: --nodes/--jobs: integers" >&2; exit 2 ;; esac
[ "$nodes" -gt 4 ] || { echo "live_cluster: --nodes must be > 4" >&2; exit 2; }

if [ "$cmd" = down ]; then
    exec bash "$local_slurm" down --dir "$dir" "${prefix[@]}"
fi
[ "$cmd" = up ] || { echo "live_cluster: up or down" >&2; exit 2; }

bash "$local_slurm" up --nodes 4 --dir "$dir" "${prefix[@]}" >/dev/null
conf="$dir/etc/slurm.conf"
export SLURM_CONF="$conf"
port=$(sed -n 's/^NodeName=n\[1-4\].* Port=\[\([0-9]*\)-.*/\1/p' "$conf")
[ -n "$port" ] || { echo "live_cluster: cannot find n1's port in $conf" >&2; exit 1; }
host=$(sed -n 's/^NodeName=n\[1-4\] NodeHostname=\([^ ]*\) .*/\1/p' "$conf")
fake="NodeName=f[1-$((nodes - 4))] NodeHostname=$host NodeAddr=127.0.0.1 Port=$port CPUs=2 RealMemory=1000 State=UNKNOWN"
sed -i "s|^PartitionName=|$fake\n&|" "$conf"
sed -i 's/^SlurmdTimeout=.*/SlurmdTimeout=0/
s/^SchedulerParameters=.*/SchedulerParameters=sched_interval=600,bf_interval=600,sched_min_interval=2000000,batch_sched_delay=0/' "$conf"
printf 'MaxJobCount=%d\nLicenses=lic:1\nDebugFlags=NO_CONF_HASH\n' $((jobs + 20000)) >>"$conf"
bash "$local_slurm" restart-controller --dir "$dir" "${prefix[@]}" >/dev/null
t0=$(date +%s)
while :; do
    idle=$(sinfo -h -t idle -o %D 2>/dev/null | awk "{s += \$1} END {print s + 0}")
    [ "$idle" -ge $((nodes - 4)) ] && break
    [ $(( $(date +%s) - t0 )) -lt 400 ] || { echo "live_cluster: only $idle of $nodes nodes idle after 400 s" >&2; exit 1; }
    sleep 5
done
echo "live_cluster: $nodes nodes idle after $(( $(date +%s) - t0 )) s" >&2
cd /tmp
sbatch -L lic:1 -w n1 -N1 -t 1-0 --wrap "sleep 86400" -o /dev/null >/dev/null
for k in 2 3 4; do sbatch -w "n$k" -N1 -t 120 --wrap "sleep 86400" -o /dev/null >/dev/null; done
for (( i = 1; i <= jobs; i++ )); do
    sbatch -L lic:1 -N $(( 1 + (i * 7919) % 50 )) -t $(( 10 + (i * 31) % 1400 )) -J "j$i" \
        --wrap true -o /dev/null >/dev/null
done
echo "live_cluster: $jobs pending jobs submitted in $(( $(date +%s) - t0 )) s" >&2
echo "export SLURM_CONF=$conf"
