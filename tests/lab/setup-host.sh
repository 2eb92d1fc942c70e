#!/usr/bin/env bash
# Prepare this machine (Debian, as root) to run the test lab. Idempotent: safe to run every time.
#
#   tests/lab/setup-host.sh
#
# 1. apt: installs podman, runc, debootstrap and gnupg when one of them is missing (one `apt-get
#    update` first, only then). Recommends come along on purpose: netavark, aardvark-dns, catatonit
#    (podman --init) and iptables are recommends of podman/containers-common. gnupg signs the test
#    driver repository (tests/ofedrepo) of the ofed and driver_firmware scenarios.
# 2. /etc/containers/containers.conf: merges in `[engine] runtime = "runc"` and
#    `[containers] default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]`, keeping every
#    other setting (crun fails on these cgroups v1 hybrid machines, and runc refuses the
#    rlimits podman would copy from the host).
# Prints what it did; changes nothing when the host is ready.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CONF="${CONTAINERS_CONF_PATH:-/etc/containers/containers.conf}"
PACKAGES=(podman runc debootstrap gnupg)
# Debian's own python3 first: a pyenv shim on PATH may point at a broken interpreter.
PY="$(command -v /usr/bin/python3 || command -v python3)"

[ "$(id -u)" -eq 0 ] || { echo "setup-host.sh: run as root" >&2; exit 1; }
command -v apt-get >/dev/null || { echo "setup-host.sh: needs a Debian-family host (apt-get)" >&2; exit 1; }

missing=()
for pkg in "${PACKAGES[@]}"; do
    if [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" != "install ok installed" ]; then
        missing+=("$pkg")
    fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup-host.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q "${missing[@]}"
else
    echo "setup-host.sh: packages present: ${PACKAGES[*]}"
fi

"$PY" "$HERE/hostprep.py" containers-conf --path "$CONF" | sed 's/^/setup-host.sh: /'

if ! podman info --format '{{.Host.OCIRuntime.Name}}' 2>/dev/null | grep -qx runc; then
    echo "setup-host.sh: podman does not report runc as its runtime; check $CONF" >&2
    exit 1
fi
echo "setup-host.sh: podman $(podman version --format '{{.Client.Version}}') with runc," \
    "network backend $(podman info --format '{{.Host.NetworkBackend}}')"
