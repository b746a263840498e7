#!/usr/bin/env bash
# The slurm-docker container cluster built and run with podman, without a Docker engine and
# without any registry (docs/docker.md, "Built and run with podman"):
#
#   podman-cluster.sh test    build, up, run, then down whatever happens (make test-containers)
#   podman-cluster.sh build   the images: the Debian 13 root filesystem of chroot.sh imported as
#                             the base image, then slurm-docker/Dockerfile built on it
#   podman-cluster.sh up      compose.yaml's services (profile "accounting": slurmdbd with
#                             MariaDB) in containers; wait until sinfo shows every node idle
#   podman-cluster.sh run     the checks on the running cluster: a workload by
#                             "malleo slurm replay", all its jobs COMPLETED in sacct, the agent's
#                             cycles, the malleable MPI example expanded and shrunk across
#                             containers with the right checksum
#   podman-cluster.sh down    remove the project's containers, network and volume
#   podman-cluster.sh clean   down, and remove the cached images and podman storage
#
# Images are cached in podman storage under MALLEO_PODMAN_CACHE (default
# /var/tmp/malleo-podman): the base image is tagged with the root filesystem's key (chroot.sh:
# packages.txt, Python requirements, recipe) and the cluster image with the hash of that key and
# of every file of the build context, so a warm run builds nothing. Older tags are removed.
#
# podman runs rootful with runc and cgroupfs, from configuration files written to the cache
# directory (CONTAINERS_CONF, CONTAINERS_STORAGE_CONF): crun refuses this machine's hybrid
# cgroups and podman's default ulimits cannot be set here (SLURM-NOTES.md). Storage driver:
# overlay (each layer and container stores only its changes), vfs where the cache directory is
# itself on overlayfs (inside a container), where the kernel refuses nested overlay mounts.
# The build runs with --network none and the cluster's network is --internal: containers talk
# only to each other. podman, runc, catatonit and the CNI plugins are installed with apt when
# missing.
#
# Environment: PYTHON (an interpreter with PyYAML for compose_podman.py; default python3);
# MALLEO_PODMAN_CACHE (above); MALLEO_SKIP_CONTAINERS=1 skips (exit 0, saying so;
# for developers, refused under CI=true); MALLEO_PODMAN_STORAGE_DRIVER (overlay or vfs; default
# as above).
# Needs root; without root it skips, except under CI where it fails.
# Exit status: 0 all checks passed; 1 a step or a check failed (the reason on stderr); 2 usage.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
cache="${MALLEO_PODMAN_CACHE:-/var/tmp/malleo-podman}"
project=malleo-slurm
compose="$here/compose.yaml"
profiles=(--profile accounting)
nodes=(c1 c2 c3)
ctl="${project}_controller"
t_start=$(date +%s)

say() { echo "podman-cluster: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }
elapsed() { local s=$(( $(date +%s) - $1 )); printf '%d min %02d s' $(( s / 60 )) $(( s % 60 )); }

cmd="${1:-}"
case "$cmd" in
    test|build|up|run|down|clean) ;;
    *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac

if [ "${MALLEO_SKIP_CONTAINERS:-0}" = 1 ]; then
    [ "${CI:-}" = true ] && die "MALLEO_SKIP_CONTAINERS=1 under CI: CI must run the container cluster"
    say "MALLEO_SKIP_CONTAINERS=1: skipping the podman container cluster"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    [ "${CI:-}" = true ] && die "needs root (rootful podman), and CI must run it"
    say "not root: skipping the podman container cluster (rootful podman needs root)"
    exit 0
fi

# --- podman, configured for this machine ---------------------------------------------------

setup_podman() {
    local missing=() p
    command -v podman >/dev/null || missing+=(podman)
    command -v runc >/dev/null || missing+=(runc)
    [ -x /usr/bin/catatonit ] || missing+=(catatonit)
    [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)   # network_backend cni
    if [ ${#missing[@]} -gt 0 ]; then
        say "installing ${missing[*]}"
        for p in install "update install"; do
            [ "$p" = "update install" ] && { apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null || true; }
            DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
                --no-install-recommends podman runc catatonit containernetworking-plugins \
                >/dev/null 2>&1 && break
            [ "$p" = "update install" ] && die "could not install ${missing[*]} with apt-get"
        done
    fi
    mkdir -p "$cache/storage" "$cache/cni"
    local driver="${MALLEO_PODMAN_STORAGE_DRIVER:-}"
    if [ -z "$driver" ]; then
        driver=overlay
        [ "$(stat -f -c %T "$cache")" = overlayfs ] && driver=vfs
    fi
    cat >"$cache/containers.conf" <<EOF
# written by slurm-docker/podman-cluster.sh
[containers]
default_ulimits = []
init_path = "/usr/bin/catatonit"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"

[network]
network_backend = "cni"
network_config_dir = "$cache/cni"
EOF
    cat >"$cache/storage.conf" <<EOF
# written by slurm-docker/podman-cluster.sh
[storage]
driver = "$driver"
graphroot = "$cache/storage"
runroot = "/run/malleo-podman"
EOF
    export CONTAINERS_CONF="$cache/containers.conf" CONTAINERS_STORAGE_CONF="$cache/storage.conf"
}

# --- images (cached by content hash) --------------------------------------------------------

# The checkout's files (tracked and untracked, not ignored) as the build context, with the
# Dockerfile's ignore file as the context's .dockerignore.
make_context() {
    local ctx="$1"
    rm -rf "$ctx"
    mkdir -p "$ctx"
    (cd "$repo" && git ls-files -z --cached --others --exclude-standard \
        | xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh \
        | tar --null -T - -cf -) | tar -C "$ctx" -xf -
    cp "$here/Dockerfile.dockerignore" "$ctx/.dockerignore"
}

do_build() {
    local t0 root basekey base ctx imgkey image
    t0=$(date +%s)
    # chroot.sh builds (or reuses) the Debian 13 root filesystem and prints its path last.
    root=$(bash "$here/chroot.sh" build | tail -n 1) || die "chroot.sh build failed"
    [ -f "$root/.malleo-rootfs-complete" ] || die "chroot.sh build gave no root filesystem ($root)"
    basekey="${root##*/rootfs-}"
    base="localhost/malleo-trixie-base:$basekey"
    if podman image exists "$base"; then
        say "reusing base image $base"
    else
        say "importing $root as $base"
        # Under chroot.sh's lock (a chroot.sh run mounts /proc etc. into the root); the
        # checkout a chroot.sh run copied to /src is not part of the base.
        (flock -w 1800 9 || exit 1
         tar --one-file-system -C "$root" --exclude=./src --exclude=./.malleo-rootfs-complete \
             --exclude='./proc/*' --exclude='./sys/*' --exclude='./dev/*' --exclude='./tmp/*' \
             -cf - . ) 9>"$root.lock" \
            | podman import --change 'CMD ["/bin/bash"]' - "$base" >/dev/null \
            || die "podman import of $root failed"
    fi
    ctx="$cache/context"
    make_context "$ctx"
    imgkey=$( { echo "$basekey"; (cd "$ctx" && find . -type f -print0 | sort -z | xargs -0 sha256sum); } \
              | sha256sum | cut -c1-16)
    image="localhost/$project:$imgkey"
    if podman image exists "$image"; then
        say "reusing image $image (base and build context unchanged)"
    else
        say "podman build -f slurm-docker/Dockerfile on $base (no network; log $cache/build.log)"
        # BASE_IMAGE names the local base; PIP_OPTIONS keeps pip off the network (the base's
        # venv already holds malleo's dependencies, its build tools and mpi4py).
        podman build --network none --pull=never --format docker -f "$ctx/slurm-docker/Dockerfile" \
            --build-arg BASE_IMAGE="$base" \
            --build-arg PIP_OPTIONS="--no-index --no-build-isolation" \
            -t "$image" "$ctx" >"$cache/build.log" 2>&1 \
            || die "podman build failed: $(tail -n 15 "$cache/build.log")"
    fi
    podman tag "$image" "localhost/$project:latest"
    rm -rf "$ctx"
    # Older images are of no further use.
    local old
    for old in $(podman images --format '{{.Repository}}:{{.Tag}}' \
                 | grep -E "^localhost/($project|malleo-trixie-base):" \
                 | grep -v -x -e "$image" -e "localhost/$project:latest" -e "$base" || true); do
        podman rmi "$old" >/dev/null 2>&1 || true
    done
    podman image prune -f >/dev/null 2>&1 || true
    say "images ready in $(elapsed "$t0"): $image"
}

# --- the cluster -----------------------------------------------------------------------------

# PYTHON: an interpreter with PyYAML (make passes the venv's; Debian's python3 has none).
compose_py() { "${PYTHON:-python3}" "$here/compose_podman.py" "$@"; }
cexec() { podman exec -w /shared/jobs "$ctl" "$@"; }

do_down() {
    setup_podman
    compose_py down "$compose" || true
}

wait_for() {  # wait_for SECONDS WHAT COMMAND...
    local limit="$1" what="$2" t0; shift 2
    t0=$(date +%s)
    until "$@" >/dev/null 2>&1; do
        [ $(( $(date +%s) - t0 )) -lt "$limit" ] || return 1
        sleep 1
    done
}

nodes_idle() {
    local out
    out=$(cexec sinfo -h -N -o '%N %t' | sort -u)
    [ "$out" = "$(printf '%s idle\n' "${nodes[@]}")" ]
}

show_logs() {
    local c
    for c in $(podman ps -a --filter "label=malleo.compose=$project" --format '{{.Names}}'); do
        say "--- last lines of $c"
        podman logs --tail 15 "$c" 2>&1 | sed 's/^/    /' >&2 || true
    done
}

do_up() {
    local t0
    t0=$(date +%s)
    podman image exists "localhost/$project:latest" || die "no image: run podman-cluster.sh build"
    compose_py down "$compose" >/dev/null 2>&1 || true     # leftovers of an interrupted run
    compose_py up "$compose" "${profiles[@]}" || die "starting the containers failed"
    wait_for 180 "the controller" cexec scontrol ping \
        || { show_logs; die "slurmctld did not answer within 180 s"; }
    wait_for 180 "the nodes" nodes_idle \
        || { show_logs; die "sinfo does not show ${nodes[*]} idle: $(cexec sinfo -N 2>&1)"; }
    say "cluster up in $(elapsed "$t0"):"
    cexec sinfo -N >&2
}

# --- the checks ------------------------------------------------------------------------------

metric() {  # metric NAME: its value from the agent's /metrics (inside the controller)
    cexec python3 -c "import urllib.request, sys
for line in urllib.request.urlopen('http://127.0.0.1:9100/metrics', timeout=5).read().decode().splitlines():
    if line.split(' ')[0] == sys.argv[1]:
        print(int(float(line.split(' ')[1])))" "$1"
}

job_field() {  # job_field JOBID FIELD [RECORD]: FIELD= of scontrol show job -o (or of RECORD)
    local rec="${3:-}"
    [ -n "$rec" ] || rec=$(cexec scontrol show job -o "$1")
    echo "$rec" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

do_run() {
    local t0 acct n_jobs states bad cycles writes
    t0=$(date +%s)

    # 1. The cluster: every node idle, accounting through the slurmdbd container.
    nodes_idle || die "sinfo: $(cexec sinfo -N 2>&1)"
    acct=$(cexec scontrol show config | sed -n 's/^AccountingStorageType *= *//p')
    [ "$acct" = accounting_storage/slurmdbd ] || die "AccountingStorageType is '$acct', not slurmdbd"
    cexec sacctmgr -n -P list cluster format=cluster | grep -q . || die "sacctmgr lists no cluster"
    say "PASS: ${nodes[*]} idle; accounting through slurmdbd ($(cexec sacctmgr -n -P list cluster format=cluster))"

    # 2. A workload from the embedded workload model, submitted at its scaled times; the
    # controller's agent sets the priorities meanwhile.
    n_jobs=12
    cexec mkdir -p /shared/jobs/replay
    cexec malleo slurm replay --time-scale 1000 --nodes "${#nodes[@]}" --jobs "0:$n_jobs" \
        --timeout 600 -o /shared/jobs/replay/observed.csv >&2 \
        || die "malleo slurm replay failed"
    states=$(cexec sacct -X -n -P -a -o JobID,JobName,State -S now-1hour)
    echo "$states" | sed 's/^/    sacct: /' >&2
    [ "$(echo "$states" | grep -c .)" -eq "$n_jobs" ] \
        || die "sacct lists $(echo "$states" | grep -c .) jobs, expected the $n_jobs submitted"
    bad=$(echo "$states" | awk -F'|' '$3 != "COMPLETED"')
    [ -z "$bad" ] || die "jobs not COMPLETED in sacct: $bad"
    say "PASS: the workload's $n_jobs jobs all COMPLETED (sacct, through slurmdbd)"

    # 3. The agent: cycles run, priorities written (its Prometheus counters).
    cycles=$(metric malleo_agent_cycles_total) || die "the agent's /metrics did not answer"
    writes=$(metric malleo_agent_decisions_applied_total) || die "the agent's /metrics did not answer"
    [ "${cycles:-0}" -gt 0 ] || die "the agent ran no cycle"
    [ "${writes:-0}" -gt 0 ] || die "the agent wrote no priority to Slurm in $cycles cycles"
    say "PASS: the agent ran $cycles cycles and Slurm accepted $writes of its priority writes"

    # 4. The malleable MPI example (examples/heat.sbatch, unchanged but for its bounds and
    # check-in period): the agent's endpoint expands it onto the idle node, a rigid 2-node job
    # makes it shrink, and the grid's SHA-256 equals a run at one fixed size.
    local ref job rigid sizes nodes_seen=() n last="" result
    cexec mkdir -p /shared/jobs/heat
    cexec python3 /src/malleo/examples/heat.py --n 64 --iters 2000 --out /shared/jobs/heat/reference.json >/dev/null \
        || die "the fixed-size reference run of heat.py failed"
    ref=$(cexec python3 -c 'import json; print(json.load(open("/shared/jobs/heat/reference.json"))["sha256"])')
    # HEAT_PY through the environment, not --export=ALL,HEAT_PY=...: an --export list implies
    # --get-user-env, for which slurmd clones a PID namespace, which the container's seccomp
    # profile refuses ("fatal: clone: Operation not permitted": slurmd exits).
    job=$(podman exec -w /shared/jobs/heat -e HEAT_PY=/src/malleo/examples/heat.py "$ctl" \
          sbatch --parsable --comment=malleo:min=1,max=3,period=5 \
          /src/malleo/examples/heat.sbatch) || die "sbatch heat.sbatch failed"
    job="${job%%;*}"
    say "malleable job $job submitted (2 nodes, may be resized between 1 and 3)"
    local deadline=$(( $(date +%s) + 240 )) state rec
    while [ "$(date +%s)" -lt "$deadline" ]; do
        rec=$(cexec scontrol show job -o "$job") || die "scontrol show job $job failed"
        state=$(job_field "$job" JobState "$rec")
        n=$(job_field "$job" NumNodes "$rec")
        if [ "$state" = RUNNING ] && [ "$n" != "$last" ]; then
            nodes_seen+=("$n"); last="$n"
            say "job $job RUNNING on $n node(s): $(job_field "$job" NodeList "$rec")"
            if [ "$n" = 3 ] && [ -z "${rigid:-}" ]; then
                rigid=$(cexec sbatch --parsable -N2 -o /dev/null --wrap 'srun hostname') \
                    || die "submitting the rigid 2-node job failed"
                rigid="${rigid%%;*}"
                say "rigid 2-node job $rigid submitted: the agent should shrink job $job to 1 node"
            fi
        fi
        case "$state" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) break ;; esac
        sleep 0.5
    done
    cexec cat "/shared/jobs/heat/heat-$job.out" | sed 's/^/    heat: /' >&2 || true
    [ "$(job_field "$job" JobState)" = COMPLETED ] \
        || die "malleable job $job ended $(job_field "$job" JobState) (or did not end in 240 s)"
    sizes=$(cexec sed -n 's/^malleo: step [0-9]*: \([0-9]*\) nodes\{0,1\} .*/\1/p' "/shared/jobs/heat/heat-$job.out" | tr '\n' ' ')
    # 2, expanded to 3, shrunk to 1 for the rigid job; once that ends the agent may expand again.
    case "$sizes" in "2 3 1"|"2 3 1 "*) ;; *) die "the launcher's steps ran on '${sizes% }' nodes, expected 2 3 1 first" ;; esac
    case "${nodes_seen[*]}" in "2 3 1"|"2 3 1 "*) ;; *) die "Slurm showed the job on ${nodes_seen[*]} nodes, expected 2 3 1 first" ;; esac
    result=$(cexec python3 -c "import json; print(json.load(open('/shared/jobs/heat/heat-$job.json'))['sha256'])") \
        || die "no result file heat-$job.json"
    [ "$result" = "$ref" ] || die "checksum $result differs from the fixed-size run's $ref"
    wait_for 60 "the rigid job" sh -c "[ \"\$(podman exec $ctl scontrol show job -o $rigid | tr ' ' '\n' | sed -n 's/^JobState=//p')\" = COMPLETED ]" \
        || die "the rigid job $rigid did not complete"
    say "PASS: malleable job $job ran its steps on ${sizes% } nodes across containers (expanded, shrunk for the rigid job $rigid); checksum $result equals the fixed-size run's"
    say "all checks passed in $(elapsed "$t0")"
}

# --- main ------------------------------------------------------------------------------------

case "$cmd" in
    down) do_down; exit 0 ;;
    clean)
        do_down
        podman images -q --filter reference="localhost/$project" --filter reference='localhost/malleo-trixie-base' \
            | xargs -r podman rmi -f >/dev/null 2>&1 || true
        rm -rf "$cache" /run/malleo-podman
        say "removed $cache"
        exit 0 ;;
esac

setup_podman
case "$cmd" in
    build) do_build ;;
    up) do_up ;;
    run) do_run ;;
    test)
        trap 'say "tearing down"; compose_py down "$compose" || true; say "whole run $(elapsed "$t_start")"' EXIT
        trap 'exit 130' INT TERM
        do_build
        do_up
        do_run ;;
esac
