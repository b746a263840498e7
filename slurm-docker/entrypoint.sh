#!/usr/bin/env bash
# Entrypoint of the malleo-slurm image (slurm-docker/Dockerfile): one role per container. The
# bring-up is the project's own slurm-docker/local-slurm.sh (its controller, node, dbd and watch
# modes) and slurm.conf comes from slurm-docker/slurm-conf.sh through it.
#
#   controller   munge key and slurm.conf for the cluster (in MALLEO_SHARED), munged, slurmctld,
#                then the malleo agent in the foreground:
#                malleo slurm agent --config MALLEO_POLICY MALLEO_AGENT_ARGS
#   node [NAME]  munged and slurmd for node NAME (default: the container's short hostname)
#   dbd          MariaDB and slurmdbd (compose profile "accounting")
#   COMMAND...   anything else runs as a command (e.g. bash)
#
# Environment (defaults set in the Dockerfile or here):
#   MALLEO_COMPUTE      the compute hosts' names, a Slurm hostlist (controller; required)
#   MALLEO_CPUS         CPUs per compute node (default 2)
#   MALLEO_SHARED       the directory every container shares (default /shared)
#   MALLEO_SLURM_DIR    this container's daemon files (default /var/lib/malleo-slurm)
#   MALLEO_POLICY       the agent's policy file (default MALLEO_SHARED/policy.toml, written by
#                       "malleo policy init" when absent)
#   MALLEO_AGENT_ARGS   more options for the agent, e.g. "--dry-run --metrics-port 9100"
#   MALLEO_ACCOUNTING_HOST  slurmdbd's host; default "slurmdbd" when that name resolves (the
#                       accounting profile is up), else no accounting
# The controller's main process is the agent; the others' is "local-slurm.sh watch", which
# exits when a daemon stops and stops them all on SIGTERM. Run with an init (compose: init: true)
# so daemons that exit are reaped.
set -euo pipefail

src="${MALLEO_SRC:-/src/malleo}"
bringup="$src/slurm-docker/local-slurm.sh"
dir="${MALLEO_SLURM_DIR:-/var/lib/malleo-slurm}"
shared="${MALLEO_SHARED:-/shared}"

role="${1:-controller}"
[ $# -gt 0 ] && shift

case "$role" in
    controller)
        acct=()
        acct_host="${MALLEO_ACCOUNTING_HOST:-}"
        if [ -z "$acct_host" ] && getent hosts slurmdbd >/dev/null 2>&1; then acct_host=slurmdbd; fi
        [ -n "$acct_host" ] && acct=(--accounting-host "$acct_host")
        bash "$bringup" controller --dir "$dir" --shared "$shared" \
            --compute "${MALLEO_COMPUTE:?set MALLEO_COMPUTE to the compute hosts, e.g. c[1-3]}" \
            --cpus "${MALLEO_CPUS:-2}" "${acct[@]}"
        mkdir -p "$shared/jobs"
        policy="${MALLEO_POLICY:-$shared/policy.toml}"
        [ -f "$policy" ] || malleo policy init -o "$policy"
        # shellcheck disable=SC2086  # MALLEO_AGENT_ARGS is a list of options
        exec malleo slurm agent --config "$policy" ${MALLEO_AGENT_ARGS:-} "$@"
        ;;
    node)
        name="${1:-$(hostname -s)}"
        bash "$bringup" node "$name" --dir "$dir" --shared "$shared"
        exec bash "$bringup" watch --dir "$dir"
        ;;
    dbd)
        bash "$bringup" dbd --dir "$dir" --shared "$shared"
        exec bash "$bringup" watch --dir "$dir"
        ;;
    *)
        exec "$role" "$@"
        ;;
esac
