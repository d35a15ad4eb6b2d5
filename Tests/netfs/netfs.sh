#!/usr/bin/env bash
# Real network filesystems on one machine, for the shared-spool tests (run as root).
#
#   netfs.sh up DIR [GLUSTER_MOUNTS] [SSHFS_MOUNTS]   # defaults: 4 and 4
#   netfs.sh down DIR
#   netfs.sh remount DIR gluster|sshfs INDEX
#
# `up` makes a private network namespace with only loopback, and inside it:
# - glusterd (working directory and logs under DIR, bound to 127.0.0.2: the CLI refuses
#   localhost and 127.0.0.1 as a brick host) and a one-brick volume created with `force`,
#   with GlusterFS's default options (its client caches on, as users get them), mounted
#   GLUSTER_MOUNTS times at DIR/gluster/m1..mN;
# - sshd on 127.0.0.1 with a key made for the occasion, and SSHFS_MOUNTS sshfs mounts of
#   DIR/sshfs/export at DIR/sshfs/m1..mN, with `-o dir_cache=no` (sshfs's default 20 s
#   directory cache delays pickup by 10-21 s).
# Every mount stays visible outside the namespace. On success it prints the variables
# below and writes them to DIR/netfs.env; on any failure it tears down what it made and
# exits non-zero.
#
#   NETFS_GLUSTER="DIR/gluster/m1 DIR/gluster/m2 ..."   NETFS_SSHFS="DIR/sshfs/m1 ..."
#
# `down` unmounts everything, stops every process in the namespace (all of them were
# started by `up`), deletes the namespace and DIR's contents. It is safe to run twice and
# after a partial `up`.
set -uo pipefail

die() { echo "netfs.sh: $*" >&2; exit 1; }

# Mounts the GlusterFS volume at $dir/gluster/m$index (the volume named in $dir/gluster/volume).
mount_gluster() {
    local dir=$1 index=$2 ns g
    ns=$(cat "$dir/netns") g=$dir/gluster
    mkdir -p "$g/m$index"
    # The brick may take a moment to listen after `volume start`.
    for _ in $(seq 50); do
        if nsenter "--net=/run/netns/$ns" mount -t glusterfs -o "log-file=$g/log/m$index.log" "127.0.0.2:/$(cat "$g/volume")" "$g/m$index" 2>/dev/null \
            && mountpoint -q "$g/m$index" && stat -f "$g/m$index" >/dev/null 2>&1; then return 0; fi
        mountpoint -q "$g/m$index" && umount "$g/m$index" 2>/dev/null
        sleep 0.2
    done
    die "cannot mount the GlusterFS volume at $g/m$index (see $g/log/m$index.log)"
}

# Mounts the sshfs export at $dir/sshfs/m$index.
mount_sshfs() {
    local dir=$1 index=$2 ns s
    ns=$(cat "$dir/netns") s=$dir/sshfs
    mkdir -p "$s/m$index"
    for _ in $(seq 50); do
        if nsenter "--net=/run/netns/$ns" sshfs "root@127.0.0.1:$s/export" "$s/m$index" \
            -o "IdentityFile=$s/client_key,StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,LogLevel=ERROR,BatchMode=yes" \
            -o dir_cache=no 2>>"$s/sshfs.log" && mountpoint -q "$s/m$index"; then return 0; fi
        sleep 0.2
    done
    die "cannot mount sshfs at $s/m$index (see $s/sshfs.log, $s/sshd.log)"
}

# What an operator does with a hung or dropped network mount: unmounted lazily (whoever
# holds files open there keeps them) and mounted again. The mount gets a new device number.
remount() {
    local dir=$1 kind=$2 index=$3
    local mount=$dir/$kind/m$index
    mountpoint -q "$mount" || die "$mount is not mounted"
    umount -l "$mount" || die "cannot unmount $mount"
    case "$kind" in
        gluster) mount_gluster "$dir" "$index" ;;
        sshfs) mount_sshfs "$dir" "$index" ;;
    esac
}

down() {
    local dir=$1
    [ -d "$dir" ] || return 0
    local mount
    for mount in "$dir"/gluster/m* "$dir"/sshfs/m*; do
        [ -d "$mount" ] || continue
        if mountpoint -q "$mount" 2>/dev/null; then
            umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || true
        fi
    done
    if [ -f "$dir/netns" ]; then
        local ns pids pid
        ns=$(cat "$dir/netns")
        if ip netns list | grep -qw "$ns"; then
            # The namespace is ours alone: whatever runs in it, `up` started.
            pids=$(ip netns pids "$ns" 2>/dev/null)
            for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
            for _ in $(seq 50); do
                [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
                sleep 0.1
            done
            for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
            ip netns del "$ns" 2>/dev/null || true
        fi
    fi
    [ -n "${NETFS_KEEP_LOGS:-}" ] && cp -r "$dir/gluster/log" "$dir/gluster-log" 2>/dev/null
    rm -rf "${dir:?}"/gluster "${dir:?}"/sshfs "$dir/netns" "$dir/netfs.env"
}

up() {
    local dir=$1 gluster_mounts=${2:-4} sshfs_mounts=${3:-4}
    [ "$(id -u)" -eq 0 ] || die "needs root"
    [ -e /dev/fuse ] || die "needs /dev/fuse"
    local program
    for program in ip nsenter glusterd gluster mount.glusterfs sshd ssh-keygen sshfs mountpoint; do
        command -v "$program" >/dev/null || die "needs $program (bash .ci/deps --test)"
    done
    mkdir -p "$dir" || die "cannot create $dir"
    dir=$(cd "$dir" && pwd)
    trap 'down "$dir"' EXIT
    local ns="llmspool-$$-$RANDOM"
    echo "$ns" >"$dir/netns"
    ip netns add "$ns" || die "ip netns add $ns failed"
    ip -n "$ns" link set lo up || die "cannot bring up loopback in $ns"
    local in_ns=(nsenter "--net=/run/netns/$ns")

    # GlusterFS: glusterd, a one-brick volume, its mounts.
    local g=$dir/gluster volume="llmspool$$"
    mkdir -p "$g/work" "$g/brick" "$g/log" || die "cannot create $g"
    echo "$volume" >"$g/volume"
    cat >"$g/glusterd.vol" <<EOF
volume management
    type mgmt/glusterd
    option working-directory $g/work
    option transport-type socket
    option transport.socket.bind-address 127.0.0.2
    option transport.socket.listen-port 24007
    option ping-timeout 0
    option event-threads 1
end-volume
EOF
    # glusterd's CLI socket (/run/glusterd.socket) and its bricks' sockets (/run/gluster)
    # have fixed names: glusterd and the CLI get a private /run in a mount namespace of
    # their own, so two set-ups never meet. The client mounts stay in ours.
    "${in_ns[@]}" unshare --mount --propagation private sh -c \
        'mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -p /run/gluster && exec glusterd -f "$1" -p "$2" -l "$3"' \
        sh "$g/glusterd.vol" "$g/glusterd.pid" "$g/log/glusterd.log" || die "glusterd did not start (see $g/log/glusterd.log)"
    local ready="" pid=""
    for _ in $(seq 100); do
        pid=$(cat "$g/glusterd.pid" 2>/dev/null)
        if [ -n "$pid" ] && nsenter "--net=/run/netns/$ns" "--mount=/proc/$pid/ns/mnt" \
            gluster --mode=script "--log-file=$g/log/cli.log" volume list >/dev/null 2>&1; then ready=1; break; fi
        sleep 0.1
    done
    local cli=(nsenter "--net=/run/netns/$ns" "--mount=/proc/$pid/ns/mnt" gluster --mode=script "--log-file=$g/log/cli.log")
    [ -n "$ready" ] || die "glusterd does not answer on $g/glusterd.socket (see $g/log/glusterd.log)"
    "${cli[@]}" volume create "$volume" "127.0.0.2:$g/brick" force >/dev/null || die "gluster volume create failed"
    "${cli[@]}" volume start "$volume" >/dev/null || die "gluster volume start failed"
    local gluster_list="" index
    for index in $(seq "$gluster_mounts"); do
        mount_gluster "$dir" "$index"
        gluster_list+="${gluster_list:+ }$g/m$index"
    done

    # sshfs: sshd on 127.0.0.1 with a key of its own, its mounts.
    local s=$dir/sshfs
    mkdir -p "$s/export" && chmod 0700 "$s" || die "cannot create $s"
    ssh-keygen -q -t ed25519 -N '' -f "$s/host_key" || die "ssh-keygen failed"
    ssh-keygen -q -t ed25519 -N '' -f "$s/client_key" || die "ssh-keygen failed"
    cp "$s/client_key.pub" "$s/authorized_keys"
    mkdir -p /run/sshd
    cat >"$s/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port 22
HostKey $s/host_key
PidFile $s/sshd.pid
AuthorizedKeysFile $s/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
EOF
    "${in_ns[@]}" /usr/sbin/sshd -f "$s/sshd_config" -E "$s/sshd.log" || die "sshd did not start (see $s/sshd.log)"
    local sshfs_list=""
    for index in $(seq "$sshfs_mounts"); do
        mount_sshfs "$dir" "$index"
        sshfs_list+="${sshfs_list:+ }$s/m$index"
    done

    printf 'NETFS_GLUSTER="%s"\nNETFS_SSHFS="%s"\nNETFS_NETNS="%s"\n' "$gluster_list" "$sshfs_list" "$ns" | tee "$dir/netfs.env"
    trap - EXIT
}

case "${1:-}" in
    up) [ $# -ge 2 ] || die "usage: netfs.sh up DIR [GLUSTER_MOUNTS] [SSHFS_MOUNTS]"; up "$2" "${3:-4}" "${4:-4}" ;;
    down) [ $# -eq 2 ] || die "usage: netfs.sh down DIR"; down "$2" ;;
    remount) [ $# -eq 4 ] || die "usage: netfs.sh remount DIR gluster|sshfs INDEX"; remount "$2" "$3" "$4" ;;
    *) die "usage: netfs.sh up DIR [GLUSTER_MOUNTS] [SSHFS_MOUNTS] | down DIR | remount DIR gluster|sshfs INDEX" ;;
esac
