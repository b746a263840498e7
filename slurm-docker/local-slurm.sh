#!/usr/bin/env bash
# A real Slurm on this machine, without systemd or Docker: munged, slurmctld and N slurmd
# (virtual nodes n1..nN on 127.0.0.1, one port each), all files in one private directory.
#
#   local-slurm.sh up     [--nodes N] [--cpus C] [--dir DIR] [--accounting]
#                                                               start, wait until every node is idle,
#                                                                print "export SLURM_CONF=..."
#   local-slurm.sh down   [--dir DIR]                           cancel all jobs, stop exactly the
#                                                                processes "up" started, wipe DIR
#   local-slurm.sh status [--dir DIR]                           recorded daemons, ping, sinfo
#   local-slurm.sh restart-controller [--down-for S] [--dir DIR] stop slurmctld (by recorded PID),
#                                                                start it again S s later (default 0)
#
# One host of a multi-host cluster (the Docker images' entrypoints; DIR must be the same path on
# every host, SHARED a directory all hosts share):
#   local-slurm.sh controller --shared SHARED --compute 'c[1-3]' [--cpus C] [--port P]
#                  [--node-port P] [--accounting-host H] [--dir DIR]
#                                      write SHARED/munge.key (once) and SHARED/slurm.conf, start
#                                      munged and slurmctld; return when slurmctld answers
#   local-slurm.sh node NAME --shared SHARED [--dir DIR]
#                                      wait for SHARED's key and slurm.conf, start munged (unless
#                                      DIR's runs) and slurmd -N NAME; return when NAME is up
#   local-slurm.sh dbd --shared SHARED [--dir DIR]
#                                      MariaDB and slurmdbd for SHARED's cluster on this host
#   local-slurm.sh watch [--dir DIR]   block while every recorded daemon runs: exit 1 when one
#                                      stops, 0 (after "down") on SIGTERM
#
# Every command also takes --prefix PREFIX (default $MALLEO_SLURM_PREFIX): a Slurm installed
# under PREFIX (slurm-docker/build-slurm.sh builds 25.11 into /var/tmp) is used instead of the
# one on PATH: PREFIX/bin and PREFIX/sbin go first on PATH for the daemons and commands it runs.
# DIR defaults to <repo>/.local-slurm (git-ignored). Needs root (munged and slurmd run as root)
# and Debian's munge, slurmctld, slurmd and slurm-client (slurm-docker/install-deps.sh).
# --accounting also starts a private MariaDB and slurmdbd (sacct, sacctmgr work), which need
# slurmdbd and mariadb-server (install-deps.sh --accounting).
# Ports: the first free block of N+1 TCP ports from 17000 up (controller, then one per node),
# so several clusters (one per DIR) can run side by side.
# Exit status: 0 done; 1 failed (the reason on stderr, logs under DIR/log); 2 bad usage.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
marker=".malleo-local-slurm"

die() { echo "local-slurm: $*" >&2; exit 1; }

cmd="${1:-}"
[ -n "$cmd" ] && shift
nodes=16 cpus=2 dir="$repo/.local-slurm" accounting=0 down_for=0
slurm_prefix="${MALLEO_SLURM_PREFIX:-}"
shared="" compute="" ctld_port=6817 node_port="" acct_host="" node_name=""
if [ "$cmd" = node ] && [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then node_name="$1"; shift; fi
while [ $# -gt 0 ]; do
    case "$1" in
        --shared) shared="${2:?--shared needs a value}"; shift 2 ;;
        --compute) compute="${2:?--compute needs a value}"; shift 2 ;;
        --port) ctld_port="${2:?--port needs a value}"; shift 2 ;;
        --node-port) node_port="${2:?--node-port needs a value}"; shift 2 ;;
        --accounting-host) acct_host="${2:?--accounting-host needs a value}"; shift 2 ;;
        --accounting) accounting=1; shift ;;
        --nodes) nodes="${2:?--nodes needs a value}"; shift 2 ;;
        --cpus) cpus="${2:?--cpus needs a value}"; shift 2 ;;
        --dir) dir="${2:?--dir needs a value}"; shift 2 ;;
        --prefix) slurm_prefix="${2:?--prefix needs a value}"; shift 2 ;;
        --down-for) down_for="${2:?--down-for needs a value}"; shift 2 ;;
        *) echo "local-slurm: unknown option: $1" >&2; sed -n '4,31p' "$0" >&2; exit 2 ;;
    esac
done
case "$nodes" in ''|*[!0-9]*) echo "local-slurm: --nodes must be a positive integer" >&2; exit 2 ;; esac
case "$cpus" in ''|*[!0-9]*) echo "local-slurm: --cpus must be a positive integer" >&2; exit 2 ;; esac
case "$down_for" in ''|*[!0-9]*) echo "local-slurm: --down-for must be whole seconds" >&2; exit 2 ;; esac
[ "$nodes" -ge 1 ] || { echo "local-slurm: --nodes must be >= 1" >&2; exit 2; }
dir="$(realpath -m "$dir")"
if [ -n "$slurm_prefix" ]; then
    [ -x "$slurm_prefix/sbin/slurmctld" ] && [ -x "$slurm_prefix/bin/squeue" ] \
        || { echo "local-slurm: --prefix $slurm_prefix: no sbin/slurmctld and bin/squeue there" >&2; exit 2; }
    export PATH="$slurm_prefix/bin:$slurm_prefix/sbin:$PATH"
fi
conf="$dir/etc/slurm.conf"
pids="$dir/run/pids"

# --- helpers -------------------------------------------------------------------------------

is_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

# The PID recorded for NAME if that process still runs the program we started.
recorded_pid() {
    local name="$1" pid prog
    [ -f "$pids" ] || return 1
    read -r _ pid prog < <(grep "^$name " "$pids" || true) || return 1
    [ -n "${pid:-}" ] && is_alive "$pid" || return 1
    # Guard against PID reuse: the process must still run the recorded program.
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$prog" || return 1
    echo "$pid"
}

# Start a daemon in its own session, output to a log, and record "NAME PID PROGRAM".
start_daemon() {
    local name="$1" log="$2"; shift 2
    setsid "$@" >"$log" 2>&1 </dev/null 8>&- &      # 8: the port lock (up), not inherited
    local pid=$!
    echo "$name $pid $1" >>"$pids"
}

# TCP ports something listens on, from /proc (no iproute2 needed; state 0A is LISTEN).
listening_ports() {
    local hex
    cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == "0A" { split($2, a, ":"); print a[2] }' \
        | sort -u | while read -r hex; do echo $(( 16#$hex )); done
}

free_port_base() {  # controller, N nodes, and with --accounting slurmdbd and MariaDB
    local need=$(( nodes + 1 + 2 * accounting )) used base p ok
    used=" $(listening_ports | tr '\n' ' ') "
    for (( base = 17000; base + need < 60000; base += need )); do
        ok=1
        for (( p = base; p < base + need; p++ )); do
            case "$used" in *" $p "*) ok=0; break ;; esac
        done
        [ "$ok" = 1 ] && { echo "$base"; return 0; }
    done
    return 1
}

slurm_env() { SLURM_CONF="$conf" "$@"; }

controller_up() { slurm_env scontrol ping 2>/dev/null | grep -q 'is UP'; }

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: poll every 0.1 s
    local limit="$1" what="$2"; shift 2
    local deadline=$(( $(date +%s%N) / 1000000 + limit * 1000 ))
    until "$@"; do
        if [ $(( $(date +%s%N) / 1000000 )) -ge "$deadline" ]; then
            echo "local-slurm: timed out after ${limit}s waiting for $what" >&2
            return 1
        fi
        sleep 0.1
    done
}

all_nodes_idle() {
    local idle
    idle=$(slurm_env sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l)
    [ "$idle" -eq "$nodes" ]
}

dbd_answers() { slurm_env sacctmgr -n list cluster >/dev/null 2>&1; }

# MariaDB on a private socket and port, then slurmdbd (reached through the private munged via
# AuthInfo in slurmdbd.conf and AccountingStoragePass in slurm.conf); registers the cluster.
start_accounting() {
    local host="$1" dbd_port="$2" db_port="$3" dbd_addr="${4:-127.0.0.1}"
    mkdir -p "$dir/db"
    mariadb-install-db --no-defaults --datadir="$dir/db/data" --user=root \
        --auth-root-authentication-method=socket --skip-test-db >"$dir/log/mariadb-install.log" 2>&1 \
        || die "mariadb-install-db failed: $(tail -n 5 "$dir/log/mariadb-install.log")"
    start_daemon mariadbd "$dir/log/mariadbd.out" mariadbd --no-defaults --datadir="$dir/db/data" \
        --socket="$dir/db/mysqld.sock" --port="$db_port" --bind-address=127.0.0.1 --user=root \
        --pid-file="$dir/db/mariadbd.pid" --log-error="$dir/log/mariadbd.log" --skip-name-resolve
    wait_for 30 "MariaDB's socket" test -S "$dir/db/mysqld.sock" \
        || die "mariadbd did not start: $(tail -n 5 "$dir/log/mariadbd.log")"
    # The database is made here, not left to slurmdbd: slurmdbd 24.11.5 with libmariadb 3.4
    # (Debian 13) creates it on a second connection and then reconnects its first, failed
    # handle, whose next result set is refused ("Number of columns in result (=1) set exceeds
    # maximum allowed number of columns (=0)"); with the database present it connects once.
    mariadb --no-defaults -S "$dir/db/mysqld.sock" -u root -e \
        "CREATE DATABASE slurm_acct_db;
         CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'malleo-local';
         GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" \
        || die "could not create the slurm database and its user"
    {
        echo "# Generated by malleo slurm-docker/local-slurm.sh --accounting."
        echo "AuthType=auth/munge"
        echo "AuthInfo=socket=$dir/munge/munge.socket"
        echo "DbdHost=$host"
        echo "DbdAddr=$dbd_addr"
        echo "DbdPort=$dbd_port"
        echo "SlurmUser=root"
        echo "StorageType=accounting_storage/mysql"
        echo "StorageHost=127.0.0.1"
        echo "StoragePort=$db_port"
        echo "StorageUser=slurm"
        echo "StoragePass=malleo-local"
        echo "StorageLoc=slurm_acct_db"
        echo "PidFile=$dir/run/slurmdbd.pid"
        echo "LogFile=$dir/log/slurmdbd.log"
    } >"$dir/etc/slurmdbd.conf"
    chmod 0600 "$dir/etc/slurmdbd.conf"
    # slurmdbd reads slurmdbd.conf from SLURM_CONF's directory.
    SLURM_CONF="$conf" start_daemon slurmdbd "$dir/log/slurmdbd.out" slurmdbd -D
    wait_for 30 "slurmdbd to answer" dbd_answers \
        || die "slurmdbd did not come up: $(tail -n 5 "$dir/log/slurmdbd.log" "$dir/log/slurmdbd.out" 2>/dev/null)"
    slurm_env sacctmgr -i add cluster malleo >"$dir/log/sacctmgr.log" 2>&1 \
        || die "sacctmgr add cluster failed: $(cat "$dir/log/sacctmgr.log")"
}

# --- commands ------------------------------------------------------------------------------

do_up() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (munged and slurmd run as root); try sudo"
    local prog
    for prog in munged mungekey slurmctld slurmd scontrol sinfo squeue scancel; do
        command -v "$prog" >/dev/null || die "$prog not found: run slurm-docker/install-deps.sh as root"
    done
    if [ "$accounting" = 1 ]; then
        for prog in slurmdbd sacctmgr mariadbd mariadb-install-db mariadb; do
            command -v "$prog" >/dev/null \
                || die "$prog not found: run slurm-docker/install-deps.sh --accounting as root"
        done
    fi
    if [ -f "$pids" ] && recorded_pid slurmctld >/dev/null; then
        if controller_up; then
            echo "local-slurm: already up in $dir" >&2
            echo "export SLURM_CONF=$conf"
            return 0
        fi
        die "a previous cluster in $dir is half up: run '$0 down --dir $dir' first"
    fi
    mkdir -p "$dir"
    rm -rf "$dir"/{etc,state,spool,log,run,munge,tmp,db}
    mkdir -p "$dir"/{etc,state,spool,log,run,munge,tmp}
    touch "$dir/$marker"
    chmod 0700 "$dir/munge"
    : >"$pids"

    local t0 base host
    t0=$(date +%s%N)
    # Two clusters coming up at once (the twin's beside the session's) would pick the same
    # free block: choose and bind under one lock, released once every node is idle.
    exec 8>"${TMPDIR:-/tmp}/malleo-local-slurm-ports.lock"
    flock -w 300 8 || die "waited 300 s for another local-slurm.sh up to bind its ports"
    base=$(free_port_base) || die "no free block of $((nodes + 1)) TCP ports between 17000 and 60000"
    host=$(hostname -s)

    local acct_opts=()
    if [ "$accounting" = 1 ]; then
        acct_opts=(--accounting-host 127.0.0.1 --accounting-port "$((base + nodes + 1))"
                   --accounting-munge-socket "$dir/munge/munge.socket")
    fi
    bash "$here/slurm-conf.sh" --out "$conf" "${acct_opts[@]}" \
        --controller "$host" --controller-addr 127.0.0.1 --controller-port "$base" \
        --state-dir "$dir/state" --spool-dir "$dir/spool" --log-dir "$dir/log" \
        --run-dir "$dir/run" --tmp-dir "$dir/tmp" \
        --nodes "n[1-$nodes]" --cpus "$cpus" --node-hostname "$host" --node-addr 127.0.0.1 \
        --node-port "$((base + 1))-$((base + nodes))" \
        --munge-socket "$dir/munge/munge.socket"
    local n
    for (( n = 1; n <= nodes; n++ )); do mkdir -p "$dir/spool/n$n" "$dir/tmp/n$n"; done

    mungekey --create --keyfile="$dir/munge/munge.key" --force 2>"$dir/log/mungekey.log" \
        || die "mungekey failed: $(cat "$dir/log/mungekey.log")"
    chmod 0600 "$dir/munge/munge.key"
    start_daemon munged "$dir/log/munged.out" munged --foreground --force \
        --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
        --seed-file="$dir/munge/munged.seed"
    wait_for 10 "munged's socket" test -S "$dir/munge/munge.socket" \
        || die "munged did not start: $(tail -n 3 "$dir/log/munged.log" "$dir/log/munged.out" 2>/dev/null)"

    if [ "$accounting" = 1 ]; then
        start_accounting "$host" "$((base + nodes + 1))" "$((base + nodes + 2))"
    fi

    start_daemon slurmctld "$dir/log/slurmctld.out" slurmctld -D -i -f "$conf"
    wait_for 30 "slurmctld to answer 'scontrol ping'" controller_up \
        || die "slurmctld did not come up: $(tail -n 5 "$dir/log/slurmctld.log" "$dir/log/slurmctld.out" 2>/dev/null)"

    for (( n = 1; n <= nodes; n++ )); do
        start_daemon "slurmd-n$n" "$dir/log/slurmd-n$n.out" slurmd -D -f "$conf" -N "n$n"
    done
    wait_for 60 "$nodes nodes to be idle" all_nodes_idle \
        || die "nodes did not become idle: $(slurm_env sinfo -N 2>&1 | head -20)"
    flock -u 8; exec 8>&-

    local t1
    t1=$(date +%s%N)
    echo "local-slurm: $nodes nodes idle in $(( (t1 - t0) / 1000000 )) ms; config $conf" >&2
    echo "export SLURM_CONF=$conf"
}

stop_pid() {  # stop_pid PID: SIGTERM, wait up to 10 s, then SIGKILL
    local pid="$1" i
    kill -TERM "$pid" 2>/dev/null || return 0
    for (( i = 0; i < 100; i++ )); do
        is_alive "$pid" || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}

no_jobs_left() { [ -z "$(slurm_env squeue -h -o %i 2>/dev/null)" ]; }

do_down() {
    if [ ! -f "$dir/$marker" ]; then
        echo "local-slurm: nothing to stop in $dir (no $marker)" >&2
        return 0
    fi
    local t0 name pid prog jobs
    t0=$(date +%s%N)
    if recorded_pid slurmctld >/dev/null && controller_up; then
        jobs=$(slurm_env squeue -h -o %i 2>/dev/null | tr '\n' ' ')
        if [ -n "${jobs// /}" ]; then
            # shellcheck disable=SC2086
            slurm_env scancel $jobs 2>/dev/null || true
            wait_for 15 "cancelled jobs to finish" no_jobs_left || true
        fi
    fi
    # The Slurm daemons in parallel (each takes 1-2 s to shut down), then slurmdbd, MariaDB and
    # munged, which they use until they exit.
    if [ -f "$pids" ]; then
        while read -r name pid prog; do
            case "$name" in
                slurmd-*|slurmctld) if pid=$(recorded_pid "$name"); then stop_pid "$pid" & fi ;;
            esac
        done <"$pids"
        wait
        # Then what they used until they exit (each again takes 1-2 s; their state is wiped).
        for name in slurmdbd mariadbd munged; do
            if pid=$(recorded_pid "$name"); then stop_pid "$pid" & fi
        done
        wait
    fi
    rm -rf "$dir"/{etc,state,spool,log,run,munge,tmp,db} "$dir/$marker"
    rmdir "$dir" 2>/dev/null || true
    echo "local-slurm: stopped and wiped $dir in $(( ($(date +%s%N) - t0) / 1000000 )) ms" >&2
}

do_status() {
    if [ ! -f "$pids" ]; then
        echo "local-slurm: no cluster recorded in $dir"
        return 1
    fi
    local name pid prog alive=0 dead=0
    while read -r name pid prog; do
        if recorded_pid "$name" >/dev/null; then alive=$((alive + 1)); else
            dead=$((dead + 1)); echo "  $name (pid $pid) is not running"
        fi
    done <"$pids"
    echo "local-slurm: $dir: $alive daemons running, $dead stopped"
    echo "export SLURM_CONF=$conf"
    if controller_up; then
        slurm_env sinfo
        [ "$dead" -eq 0 ]
    else
        echo "local-slurm: slurmctld does not answer"
        return 1
    fi
}

# Restart only slurmctld (jobs, nodes and slurmd keep running; the controller reloads its
# saved state): what an upgrade or a crash of the controller looks like to the agent.
do_restart_controller() {
    [ -f "$dir/$marker" ] || die "no cluster in $dir (no $marker)"
    local pid
    if pid=$(recorded_pid slurmctld); then
        stop_pid "$pid"
    fi
    grep -v '^slurmctld ' "$pids" >"$pids.tmp" || true
    mv "$pids.tmp" "$pids"
    sleep "$down_for"
    start_daemon slurmctld "$dir/log/slurmctld.out" slurmctld -D -i -f "$conf"
    wait_for 30 "slurmctld to answer 'scontrol ping'" controller_up \
        || die "slurmctld did not come back: $(tail -n 5 "$dir/log/slurmctld.log" 2>/dev/null)"
    echo "local-slurm: slurmctld restarted in $dir" >&2
}

# --- one host of a multi-host cluster (the Docker images' entrypoints) ----------------------

need_programs() {  # need_programs PROG...: die unless each is installed
    local prog
    for prog in "$@"; do
        command -v "$prog" >/dev/null || die "$prog not found: run slurm-docker/install-deps.sh as root"
    done
}

# DIR's layout without wiping what another mode on this host may already have started there.
prepare_host_dir() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (munged and the Slurm daemons run as root)"
    [ -n "$shared" ] || die "$cmd needs --shared DIR (the directory every host of the cluster shares)"
    mkdir -p "$dir"/{etc,state,spool,log,run,munge,tmp}
    chmod 0700 "$dir/munge"
    touch "$dir/$marker"
    [ -f "$pids" ] || : >"$pids"
}

# munged on this host with the cluster's shared key, unless DIR's munged already runs.
start_host_munged() {
    recorded_pid munged >/dev/null && return 0
    cp "$shared/munge.key" "$dir/munge/munge.key"
    chmod 0600 "$dir/munge/munge.key"
    start_daemon munged "$dir/log/munged.out" munged --foreground --force \
        --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
        --seed-file="$dir/munge/munged.seed"
    wait_for 10 "munged's socket" test -S "$dir/munge/munge.socket" \
        || die "munged did not start: $(tail -n 3 "$dir/log/munged.log" "$dir/log/munged.out" 2>/dev/null)"
}

# This host's copy of the cluster's slurm.conf (the same path on every host: jobs inherit it).
fetch_shared_conf() {
    wait_for 300 "$shared/slurm.conf and $shared/munge.key from the controller" \
        test -s "$shared/slurm.conf" -a -s "$shared/munge.key" || die "no cluster in $shared"
    cmp -s "$shared/slurm.conf" "$conf" || cp "$shared/slurm.conf" "$conf"
    # slurm-conf.sh writes a cgroup.conf beside slurm.conf for Slurm >= 24.05.
    if [ -f "$shared/cgroup.conf" ]; then
        cmp -s "$shared/cgroup.conf" "$dir/etc/cgroup.conf" || cp "$shared/cgroup.conf" "$dir/etc/cgroup.conf"
    fi
}

do_controller() {
    [ -n "$compute" ] || die "controller needs --compute 'NAMES' (the compute hosts, e.g. 'c[1-3]')"
    prepare_host_dir
    need_programs munged mungekey slurmctld scontrol sinfo squeue scancel
    if recorded_pid slurmctld >/dev/null; then die "slurmctld already runs from $dir"; fi
    mkdir -p "$shared"
    local host acct_opts=()
    host=$(hostname -s)
    [ -n "$acct_host" ] && acct_opts=(--accounting-host "$acct_host" --accounting-port 6819
                                      --accounting-munge-socket "$dir/munge/munge.socket")
    bash "$here/slurm-conf.sh" --out "$conf" "${acct_opts[@]}" \
        --controller "$host" --controller-port "$ctld_port" \
        --state-dir "$dir/state" --spool-dir "$dir/spool" --log-dir "$dir/log" \
        --run-dir "$dir/run" --tmp-dir "$dir/tmp" --nodes "$compute" --cpus "$cpus" \
        --node-port "$node_port" --munge-socket "$dir/munge/munge.socket"
    if [ ! -s "$shared/munge.key" ]; then
        mungekey --create --keyfile="$shared/munge.key.tmp" --force 2>"$dir/log/mungekey.log" \
            || die "mungekey failed: $(cat "$dir/log/mungekey.log")"
        chmod 0600 "$shared/munge.key.tmp"
        mv "$shared/munge.key.tmp" "$shared/munge.key"
    fi
    start_host_munged
    if [ -f "$dir/etc/cgroup.conf" ]; then
        cp "$dir/etc/cgroup.conf" "$shared/cgroup.conf.tmp"
        mv "$shared/cgroup.conf.tmp" "$shared/cgroup.conf"
    else
        rm -f "$shared/cgroup.conf"
    fi
    cp "$conf" "$shared/slurm.conf.tmp"
    mv "$shared/slurm.conf.tmp" "$shared/slurm.conf"
    start_daemon slurmctld "$dir/log/slurmctld.out" slurmctld -D -i -f "$conf"
    wait_for 30 "slurmctld to answer 'scontrol ping'" controller_up \
        || die "slurmctld did not come up: $(tail -n 5 "$dir/log/slurmctld.log" "$dir/log/slurmctld.out" 2>/dev/null)"
    echo "local-slurm: controller $host up for compute hosts $compute; config $shared/slurm.conf" >&2
    echo "export SLURM_CONF=$conf"
}

node_is_up() {
    slurm_env sinfo -h -N -n "$node_name" -t idle,alloc,mix,comp -o '%N' 2>/dev/null \
        | grep -qx "$node_name"
}

do_node() {
    [ -n "$node_name" ] || die "node needs the node's NAME (local-slurm.sh node NAME --shared DIR)"
    prepare_host_dir
    need_programs munged slurmd scontrol sinfo
    fetch_shared_conf
    start_host_munged
    mkdir -p "$dir/spool/$node_name" "$dir/tmp/$node_name"
    recorded_pid "slurmd-$node_name" >/dev/null && die "slurmd for $node_name already runs from $dir"
    grep -v "^slurmd-$node_name " "$pids" >"$pids.tmp" || true   # a restart: forget the old PID
    mv "$pids.tmp" "$pids"
    start_daemon "slurmd-$node_name" "$dir/log/slurmd-$node_name.out" slurmd -D -f "$conf" -N "$node_name"
    wait_for 120 "the controller to answer 'scontrol ping'" controller_up \
        || die "the controller in $conf does not answer"
    wait_for 60 "node $node_name to be up" node_is_up \
        || die "node $node_name did not come up: $(tail -n 5 "$dir/log/slurmd-$node_name.log" 2>/dev/null)"
    echo "local-slurm: node $node_name up" >&2
    echo "export SLURM_CONF=$conf"
}

do_dbd() {
    prepare_host_dir
    need_programs munged slurmdbd sacctmgr mariadbd mariadb-install-db mariadb
    fetch_shared_conf
    start_host_munged
    local host
    host=$(hostname -s)
    # slurm-conf.sh's --accounting-port for the controller's mode is 6819; MariaDB stays on
    # this host's loopback.
    start_accounting "$host" 6819 3306 "$host"
    echo "local-slurm: slurmdbd up on $host" >&2
}

# Block while every daemon recorded in DIR runs (a container's main process): exit 1 when one
# stops; on SIGTERM or SIGINT run "down" and exit 0.
do_watch() {
    [ -f "$pids" ] || die "no daemons recorded in $dir"
    trap 'do_down; exit 0' TERM INT
    local name pid prog
    while true; do
        while read -r name pid prog; do
            recorded_pid "$name" >/dev/null || die "$name (pid $pid) stopped: see $dir/log"
        done <"$pids"
        sleep 2 &
        wait $! || true
    done
}

case "$cmd" in
    up) do_up ;;
    restart-controller) do_restart_controller ;;
    down) do_down ;;
    status) do_status ;;
    controller) do_controller ;;
    node) do_node ;;
    dbd) do_dbd ;;
    watch) do_watch ;;
    *) sed -n '4,31p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
