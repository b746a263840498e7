# Shell functions for a cached debootstrap root filesystem, sourced by tests/debian-python.sh
# (Debian 12's own python3). The same steps as slurm-docker/chroot.sh's Debian 13 root; the
# caller sets `cache`, `suite`, `key` and calls say/die of its own.
#
#   default_mirror            the Debian archive this machine's apt uses (not security)
#   ensure_debootstrap        apt-get install debootstrap when missing
#   debootstrap_root DIR PKG...  minbase SUITE into DIR, then PKG... with apt-get (log: $log)
#   mount_system ROOT         /proc /sys /dev /dev/pts /dev/shm into ROOT (undone on exit)
#   unmount_all               stop what still runs inside the root, unmount (an EXIT trap)
#   copy_checkout REPO ROOT   the checkout's tracked and untracked, not ignored files into
#                             ROOT/src/malleo (no build products, no .venv)

# deb822 "URIs:" lines and one-line "deb URI SUITE" entries.
default_mirror() {
    local f uri
    for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        while read -r uri; do
            case "$uri" in
                *security*) ;;
                http://*/debian|https://*/debian|http://*/debian/|https://*/debian/) echo "${uri%/}"; return 0 ;;
            esac
        done < <(sed -n -e 's/^URIs:[[:space:]]*//p' -e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\{0,1\}\([^[:space:]]\+\).*/\2/p' "$f" \
                 | tr ' ' '\n')
    done
    return 1
}

ensure_debootstrap() {
    command -v debootstrap >/dev/null && return 0
    say "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
        --no-install-recommends debootstrap >/dev/null \
        || { apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null \
             && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
                --no-install-recommends debootstrap >/dev/null; } \
        || die "could not install debootstrap"
}

mounted=()
mount_into() {  # mount_into TARGET MOUNT-ARGS...: mount and remember for unmounting
    local target="$1"; shift
    mkdir -p "$target"
    mount "$@" "$target" || die "mount $* $target failed"
    mounted+=("$target")
}

# Processes still running inside the root when we leave were started by our chroot: stop them
# by PID before unmounting.
stop_leftovers() {
    local r="$1" p pids=()
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$r" ] && pids+=("${p#/proc/}")
    done
    [ ${#pids[@]} -eq 0 ] && return 0
    say "stopping ${#pids[@]} process(es) left inside $r: ${pids[*]}"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    sleep 2
    kill -KILL "${pids[@]}" 2>/dev/null || true
}

unmount_all() {
    local i
    [ ${#mounted[@]} -eq 0 ] && return 0
    stop_leftovers "${mounted[0]%/proc}"
    for (( i = ${#mounted[@]} - 1; i >= 0; i-- )); do
        umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" 2>/dev/null \
            || say "could not unmount ${mounted[$i]}"
    done
    mounted=()
}

mount_system() {
    local r="$1"
    mount_into "$r/proc" -t proc proc
    mount_into "$r/sys" -t sysfs sysfs
    mount_into "$r/dev" --bind /dev
    mount_into "$r/dev/pts" -t devpts devpts
    mount_into "$r/dev/shm" -t tmpfs -o mode=1777 shm
}

# in_root ROOT COMMAND...: a clean environment inside ROOT; Debian's own PATH (no venv, no
# pyenv), pip trusting what this machine's pip trusts.
in_root() {
    local r="$1"; shift
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive TERM=dumb \
        ${CI:+CI="$CI"} PIP_CERT=/etc/ssl/certs/malleo-host-ca.crt \
        chroot "$r" "$@"
}

debootstrap_root() {  # debootstrap_root DIR PACKAGE...
    local tmp="$1" t0; shift
    ensure_debootstrap
    t0=$(date +%s)
    say "debootstrap --variant=minbase $suite from $mirror (log: $log)"
    debootstrap --variant=minbase "$suite" "$tmp" "$mirror" >>"$log" 2>&1 \
        || die "debootstrap failed (mirror $mirror unreachable?): $(tail -n 5 "$log")"
    say "debootstrap done in $(( $(date +%s) - t0 )) s"
    # As in a Debian slim image: package scripts do not start services.
    printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
    chmod 0755 "$tmp/usr/sbin/policy-rc.d"
    cp /etc/resolv.conf "$tmp/etc/resolv.conf"
    cp /etc/hosts "$tmp/etc/hosts"
    mkdir -p "$tmp/etc/ssl/certs"
    cp "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$tmp/etc/ssl/certs/malleo-host-ca.crt"
    echo "deb $mirror $suite main" >"$tmp/etc/apt/sources.list"
    mount_system "$tmp"
    t0=$(date +%s)
    say "apt-get install $*"
    in_root "$tmp" apt-get update -q >>"$log" 2>&1 || die "apt-get update failed: $(tail -n 5 "$log")"
    in_root "$tmp" apt-get install -y -q --no-install-recommends "$@" >>"$log" 2>&1 \
        || die "apt-get install failed: $(tail -n 5 "$log")"
    in_root "$tmp" apt-get clean
    unmount_all
    say "packages installed in $(( $(date +%s) - t0 )) s"
}

copy_checkout() {  # copy_checkout REPO ROOT
    local repo="$1" r="$2"
    rm -rf "$r/src/malleo"
    mkdir -p "$r/src/malleo"
    (cd "$repo" && git ls-files -z --cached --others --exclude-standard \
        | xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh \
        | tar --null -T - -cf -) | tar -C "$r/src/malleo" -xf -
}
