#!/usr/bin/env bash
# Build the lab's test-host image, localhost/gpufabric-host:bookworm, when it is missing or stale.
#
#   tests/lab/image.sh            build only if the image is missing or built from other inputs
#   tests/lab/image.sh --force    debootstrap a fresh rootfs and re-import the image
#   GPUFABRIC_LAB_IMAGE=localhost/gpufabric-host:try tests/lab/image.sh
#                                 build under another tag (try a package list without replacing the
#                                 image the other labs use; name it in the lab file's `image:`)
#
# No container registry is reachable, so the image is a Debian rootfs made with debootstrap from
# the mirror the machine's own apt sources name, then `podman import`ed. The rootfs tarball is
# cached in tests/lab/build/ (git-ignored), named after a hash of the build inputs; the image
# carries the same hash as a label, so editing PACKAGES below rebuilds both automatically.
# Runs as root (debootstrap and rootful podman).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="$HERE/build"
SUITE="bookworm"
IMAGE="${GPUFABRIC_LAB_IMAGE:-localhost/gpufabric-host:$SUITE}"
# What an Ansible target and the lab tests need. No pciutils: the simulator provides lspci.
# openssl: the NVUE emulator's certificate (leaves); lldpd: the servers' real LLDP agent;
# openssh-server: sshd on the servers of a lab with `mpi: true` (lab.py: start_ssh); openmpi-bin: Open MPI's mpirun
# and orted, which start the validation gate's NCCL ranks across the servers over SSH (Slurm's srun --mpi=pmix too:
# see PMIX_LINK below).
PACKAGES="python3,python3-jsonschema,iproute2,iputils-ping,tcpdump,procps,ethtool,openssl,lldpd,openssh-server,slurmctld,slurmd,slurm-client,munge,openmpi-bin"
FORCE=0
PMIX_LINK=/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so
# Debian's own python3 first: a pyenv shim on PATH may point at a broken interpreter.
PY="$(command -v /usr/bin/python3 || command -v python3)"

usage() { sed -n '2,15s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
for arg in "$@"; do
    case "$arg" in
        --force) FORCE=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "image.sh: unknown argument: $arg" >&2; usage >&2; exit 2 ;;
    esac
done
[ "$(id -u)" -eq 0 ] || { echo "image.sh: run as root (debootstrap, rootful podman)" >&2; exit 1; }
for tool in podman debootstrap tar; do
    command -v "$tool" >/dev/null || { echo "image.sh: $tool missing; run tests/lab/setup-host.sh" >&2; exit 1; }
done

# The build inputs; the mirror is left out on purpose (any mirror gives the same packages).
# Bump RECIPE when you change how the rootfs is made below.
RECIPE=3  # 3: the libpmix.so link (PMIX_LINK)
INPUTS="suite=$SUITE variant=minbase include=$PACKAGES cmd=sleep-infinity recipe=$RECIPE"
HASH="$(printf '%s' "$INPUTS" | sha256sum | cut -c1-12)"
TARBALL="$BUILD/rootfs-$SUITE-$HASH.tar"

if [ "$FORCE" -eq 0 ] && podman image exists "$IMAGE"; then
    have="$(podman image inspect --format '{{ index .Labels "gpufabric.rootfs" }}' "$IMAGE" 2>/dev/null || true)"
    if [ "$have" = "$HASH" ]; then
        echo "image.sh: $IMAGE is up to date (rootfs $HASH)"
        exit 0
    fi
    echo "image.sh: $IMAGE was built from other inputs (${have:-unlabelled}); rebuilding"
fi

mkdir -p "$BUILD"
ROOTFS=""
cleanup() {
    if [ -n "$ROOTFS" ] && [ -d "$ROOTFS" ]; then
        # debootstrap may leave /proc or /sys mounted inside a rootfs it did not finish.
        for m in proc sys dev/pts dev; do umount -l "$ROOTFS/$m" 2>/dev/null || true; done
        rm -rf --one-file-system "$ROOTFS"
    fi
    rm -f "$TARBALL.partial"
}
trap cleanup EXIT

if [ "$FORCE" -eq 1 ] || [ ! -s "$TARBALL" ]; then
    MIRROR="${GPUFABRIC_LAB_MIRROR:-$("$PY" "$HERE/hostprep.py" apt-mirror --suite "$SUITE")}"
    ROOTFS="$(mktemp -d "$BUILD/rootfs.XXXXXX")"
    # mktemp makes it 0700: the root of the chroot, which a package's script run as its own user (munge's postinst:
    # su munge -c mungekey) must be able to enter
    chmod 0755 "$ROOTFS"
    echo "image.sh: debootstrap $SUITE from $MIRROR into $ROOTFS"
    start=$SECONDS
    debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOTFS" "$MIRROR" \
        >"$BUILD/debootstrap.log" 2>&1 || {
        echo "image.sh: debootstrap failed; last lines of $BUILD/debootstrap.log:" >&2
        tail -n 20 "$BUILD/debootstrap.log" >&2
        # the packages' own words (a maintainer script that failed) are in the rootfs, removed on exit
        if [ -f "$ROOTFS/debootstrap/debootstrap.log" ]; then
            cp "$ROOTFS/debootstrap/debootstrap.log" "$BUILD/debootstrap-inside.log"
            echo "image.sh: the packages' log: $BUILD/debootstrap-inside.log; its last lines:" >&2
            tail -n 20 "$BUILD/debootstrap-inside.log" >&2
        fi
        exit 1
    }
    # Slurm's mpi/pmix plugin (slurm-wlm-basic-plugins: srun --mpi=pmix, the validation gate's srun launcher) dlopens
    # the unversioned libpmix.so in libpmix2's directory, which only libpmix-dev ships - and libpmix-dev pulls in
    # -dev packages debootstrap cannot configure (libltdl-dev: "Package automake-1.16 is not installed", tried).
    # Without it srun and slurmd say "pmi/pmix: can not load PMIx library". The same link libpmix-dev makes:
    ln -s libpmix.so.2 "$ROOTFS$PMIX_LINK"
    # Smaller image: no downloaded .debs or package lists.
    rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* \
        "$ROOTFS"/var/log/*.log
    : >"$ROOTFS/etc/machine-id"
    # debootstrap copies the build host's resolv.conf, hosts and hostname: none of that belongs
    # in a lab host (lab containers run with --dns none and must not know outside resolvers).
    : >"$ROOTFS/etc/resolv.conf"
    printf '127.0.0.1\tlocalhost\n' >"$ROOTFS/etc/hosts"
    echo gpufabric-host >"$ROOTFS/etc/hostname"
    tar --numeric-owner --xattrs -C "$ROOTFS" -cf "$TARBALL.partial" .
    mv "$TARBALL.partial" "$TARBALL"
    # Older caches of other inputs are useless now.
    find "$BUILD" -maxdepth 1 -name "rootfs-*.tar" ! -name "$(basename "$TARBALL")" -delete
    echo "image.sh: rootfs tarball $TARBALL ($(du -h "$TARBALL" | cut -f1)) in $((SECONDS - start))s"
else
    echo "image.sh: reusing cached rootfs $TARBALL"
fi

start=$SECONDS
old_id="$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
# `sleep infinity` keeps the container alive; lab.py runs it under podman's --init (catatonit)
# so signals are forwarded and zombies reaped.
podman import --quiet \
    --change 'CMD ["sleep", "infinity"]' \
    --change 'ENV LANG=C.UTF-8' \
    --change "LABEL gpufabric.rootfs=$HASH" \
    --message "gpufabric lab host: debootstrap $SUITE minbase + $PACKAGES" \
    "$TARBALL" "$IMAGE" >/dev/null
echo "image.sh: imported $IMAGE in $((SECONDS - start))s"
if [ -n "$old_id" ] && [ "$old_id" != "$(podman image inspect --format '{{.Id}}' "$IMAGE")" ]; then
    # The replaced image is now untagged; drop it unless a container still uses it.
    podman image rm "$old_id" >/dev/null 2>&1 || true
fi
