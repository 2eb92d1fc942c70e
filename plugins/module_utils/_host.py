# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host-access layer: the one way the collection's core reaches the machine it runs on.

``Host`` runs commands (argv lists, never a shell, with ``LANG=C`` so output is parseable and a
timeout so a hung tool is stopped) and reads and writes files under ``root`` (sysfs, configfs,
procfs, /boot, /lib/modules; unit tests point ``root`` at a temporary tree, the simulator at its
own). On top of that it answers what several modules ask: the network interfaces and, for each,
its kernel driver, PCI function and the interfaces under it; the RDMA devices and their ports; the
addresses and default routes; the running and the default boot kernel; the boot id; the package
manager and the installed versions of packages.

``execute(argv, env, timeout, data) -> (rc, stdout, stderr)`` and ``which(name)`` are the two
doors to the real machine; tests replace them (and ``root``).

``parallel`` applies a function to many devices at once; ``plan_all`` does the same and raises
every error together (``MlnxError.combine``), for the read-and-decide phase that must finish for
every device before anything is written.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gpufabric.mlnx.plugins.module_utils._devices import is_pci, pci_full
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import (
    MlnxError,
    ToolFailed,
    ToolNotFound,
    ToolTimeout,
)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import ParseError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.ibdev2netdev import parse_ibdev2netdev
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.ip import parse_ip_addr, parse_ip_route
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.packages import (
    parse_dkms_status,
    parse_dpkg_query,
    parse_rpm_query,
)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import check_timeout
from ansible_collections.gpufabric.mlnx.plugins.module_utils._versions import deb_compare

# Every command runs with these (tools print parseable English).
ENV = {"LANG": "C", "LC_ALL": "C", "LC_MESSAGES": "C"}

# Where tools live besides PATH (MFT installs into /usr/bin; some images use /usr/local; MFT's own tree).
EXTRA_PATHS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin",
               "/opt/mellanox/mft/bin")


class Result:
    """What one command printed; ``cmd`` is the argv as run."""

    __slots__ = ("cmd", "rc", "stdout", "stderr")

    def __init__(self, cmd: list[str], rc: int, stdout: str, stderr: str):
        self.cmd = cmd
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr

    def error_lines(self) -> list[str]:
        """The ``-E-`` lines NVIDIA tools print (on stdout), prefix removed."""
        return [line.strip()[4:].strip() for line in (self.stdout + "\n" + self.stderr).splitlines()
                if line.strip().startswith("-E-")]

    def reason(self) -> str:
        """The tool's own words for a failure: its -E- lines, else its last non-empty line."""
        errors = self.error_lines()
        if errors:
            return "; ".join(errors)
        lines = [line.strip() for line in (self.stderr + "\n" + self.stdout).splitlines() if line.strip()]
        return lines[-1] if lines else "no output"


def default_execute(argv: Sequence[str], env: Mapping[str, str], timeout: float | None,
                    data: str | None) -> tuple[int, str, str]:
    """Run ``argv`` (no shell) with exactly ``env``; raises subprocess.TimeoutExpired after ``timeout``."""
    proc = subprocess.run(list(argv), input=data, capture_output=True, text=True, env=dict(env), timeout=timeout,
                          check=False)
    return proc.returncode, proc.stdout, proc.stderr


def default_spawn(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Start ``argv`` (no shell) detached - its own session, no terminal, no pipes to us - and return its pid; it
    outlives the module (the validation gate's perftest servers and NCCL ranks)."""
    proc = subprocess.Popen(list(argv), env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    return proc.pid


def default_which(name: str) -> str | None:
    """The full path of ``name`` on PATH or in EXTRA_PATHS, None when it is not installed."""
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", "")] + list(EXTRA_PATHS)))


class Host:
    """One host: its commands and its files under ``root``.

    ``execute`` and ``which`` (see the module text) and ``root`` can be replaced; ``timeout`` is the
    default of every command, in seconds.
    """

    def __init__(self, *, root: str = "/", timeout: float = 1800, execute: Callable | None = None,
                 which: Callable[[str], str | None] | None = None, spawn: Callable | None = None):
        self.root = root
        self.timeout = check_timeout(timeout)
        self.execute = execute or default_execute
        self.which = which or default_which
        self.spawn = spawn or default_spawn

    # ------------------------------------------------------------ commands

    def call(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float | None = None,
             data: str | None = None) -> Result:
        """Run ``argv`` as given (its first word already a path) with ``LANG=C`` and ``env`` added.

        A command that does not finish within ``timeout`` (default: the host's) is stopped and raises ToolTimeout.
        """
        argv = [str(word) for word in argv]
        full_env = dict(os.environ)
        full_env.update(ENV)
        full_env.update(env or {})
        limit = timeout or self.timeout
        try:
            rc, out, err = self.execute(argv, full_env, limit, data)
        except subprocess.TimeoutExpired:
            raise ToolTimeout("%s did not finish within %ss and was stopped" % (" ".join(argv), limit),
                              cmd=argv) from None
        return Result(argv, rc, out or "", err or "")

    def run(self, argv: Sequence[str], *, check: bool = True, env: Mapping[str, str] | None = None,
            timeout: float | None = None, data: str | None = None) -> tuple[int, str, str]:
        """Run the tool ``argv[0]`` (found with ``which``) -> ``(rc, stdout, stderr)``.

        Raises ToolNotFound when it is not installed and, with ``check``, ToolFailed when it exits non-zero.
        """
        binary = self.which(argv[0])
        if not binary:
            raise ToolNotFound("%s is not installed on this host" % argv[0])
        result = self.call([binary] + list(argv[1:]), env=env, timeout=timeout, data=data)
        if check and result.rc != 0:
            words = (result.stderr or result.stdout or "").strip().splitlines()
            raise ToolFailed("%s failed (rc=%d): %s" % (" ".join(argv[:2]), result.rc,
                                                        words[-1] if words else "no output"),
                             cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr)
        return result.rc, result.stdout, result.stderr

    # ------------------------------------------------------------ files under root

    def path(self, *parts: str) -> str:
        """``/sys/class/net`` -> the same path under ``root``."""
        return os.path.join(self.root, *[p.lstrip("/") for p in parts])

    def read_sys(self, path: str) -> str | None:
        """The text of a sysfs/configfs/procfs file (``path`` under ``root``) without its trailing newline; None
        when the file is not there or cannot be read."""
        try:
            with open(self.path(path)) as stream:
                return stream.read().rstrip("\n")
        except OSError:
            return None

    def write_sys(self, path: str, value: object) -> None:
        """Write ``value`` to an existing sysfs/configfs attribute (never creates one). Raises OSError."""
        full = self.path(path)
        if not os.path.isfile(full):
            raise FileNotFoundError(2, "no such attribute", path)
        with open(full, "w") as stream:
            stream.write("%s\n" % value)

    def listdir(self, path: str) -> list[str]:
        """The sorted entries of a directory under ``root``; empty when it is not there."""
        try:
            return sorted(os.listdir(self.path(path)))
        except OSError:
            return []

    def link_name(self, path: str) -> str | None:
        """The last part of where a sysfs link points (``device/driver`` -> ``mlx5_core``); None when no link."""
        try:
            return os.path.basename(os.readlink(self.path(path)))
        except OSError:
            return None

    # ------------------------------------------------------------ network interfaces

    def netdevs(self) -> list[str]:
        """The network interfaces in /sys/class/net, sorted."""
        return self.listdir("/sys/class/net")

    def driver_of(self, ifname: str) -> str | None:
        """The kernel driver of an interface's device (``mlx5_core``); None for a virtual one."""
        return self.link_name("/sys/class/net/%s/device/driver" % ifname)

    def pci_of(self, ifname: str) -> str | None:
        """The PCI function under a network interface (sysfs ``device`` link), None for a virtual one."""
        try:
            name = os.path.basename(os.path.realpath(self.path("/sys/class/net", ifname, "device")))
        except OSError:
            return None
        return pci_full(name) if is_pci(name) else None

    def lower(self, ifname: str, seen: set[str] | None = None) -> list[str]:
        """The interfaces under ``ifname``: bond slaves, VLAN/macvlan parents, bridge ports (recursively)."""
        seen = seen if seen is not None else set()
        if ifname in seen:
            return []
        seen.add(ifname)
        base = self.path("/sys/class/net", ifname)
        below = []
        try:
            entries = os.listdir(base)
        except OSError:
            return []
        below += [e[len("lower_"):] for e in entries if e.startswith("lower_")]
        try:
            below += os.listdir(os.path.join(base, "brif"))
        except OSError:
            pass
        try:
            with open(os.path.join(base, "bonding", "slaves")) as stream:
                below += stream.read().split()
        except OSError:
            pass
        if not below:
            return [ifname]
        leaves = []
        for name in dict.fromkeys(below):
            leaves += [x for x in self.lower(name, seen) if x not in leaves]
        return leaves

    def addresses(self) -> list[tuple[str, str]]:
        """``[(interface, address)]`` from ``ip -o addr show``; empty without iproute2."""
        if not self.which("ip"):  # no iproute2: the management interface stays unknown (no restart)
            return []
        rc, out, _err = self.run(["ip", "-o", "addr", "show"], check=False)
        return parse_ip_addr(out) if rc == 0 else []

    def default_route_interfaces(self) -> list[str]:
        """The interfaces of the IPv4 and IPv6 default routes."""
        found = []
        if not self.which("ip"):
            return found
        for family in ("-4", "-6"):
            rc, out, _err = self.run(["ip", family, "-o", "route", "show", "default"], check=False)
            if rc == 0:
                found += [i for i in parse_ip_route(out) if i not in found]
        return found

    # ------------------------------------------------------------ PCI functions and RDMA devices

    def pci_netdevs(self, address: str) -> list[str]:
        """The network interfaces of a PCI function (``/sys/bus/pci/devices/ADDRESS/net``)."""
        return self.listdir("/sys/bus/pci/devices/%s/net" % address)

    def pci_rdma_devices(self, address: str) -> list[str]:
        """The RDMA devices of a PCI function (``/sys/bus/pci/devices/ADDRESS/infiniband``)."""
        return self.listdir("/sys/bus/pci/devices/%s/infiniband" % address)

    def rdma_pci(self, rdma: str) -> str | None:
        """``mlx5_0`` -> ``0000:1a:00.0`` from /sys/class/infiniband/mlx5_0/device."""
        name = os.path.basename(os.path.realpath(self.path("/sys/class/infiniband", rdma, "device")))
        return pci_full(name) if is_pci(name) else None

    def link_layer(self, rdma: str, port: object) -> str | None:
        """``Ethernet`` or ``InfiniBand``: /sys/class/infiniband/RDMA/ports/PORT/link_layer."""
        return (self.read_sys("/sys/class/infiniband/%s/ports/%s/link_layer" % (rdma, port)) or "").strip() or None

    def rdma_ports(self) -> dict[str, tuple[str, int]]:
        """``{netdev: (rdma device, port)}`` from ``ibdev2netdev`` (empty when it is missing or unreadable)."""
        rows = self._ibdev2netdev([])
        return {row["netdev"]: (row["rdma"], row["port"]) for row in rows if row.get("netdev")}

    def rdma_netdevs(self) -> dict[str, str]:
        """``{netdev: rdma device}`` from ``ibdev2netdev``."""
        return {netdev: rdma for netdev, (rdma, _port) in self.rdma_ports().items()}

    def netdev_pci(self) -> dict[str, str]:
        """``{netdev: PCI function}`` from ``ibdev2netdev -v`` (empty when it is missing or unreadable)."""
        rows = self._ibdev2netdev(["-v"])
        return {row["netdev"]: row["pci"] for row in rows if row.get("netdev") and row.get("pci")}

    def _ibdev2netdev(self, args: list[str]) -> list[dict]:
        if not self.which("ibdev2netdev"):
            return []
        rc, out, _err = self.run(["ibdev2netdev"] + args, check=False)
        if rc != 0:
            return []
        try:
            return parse_ibdev2netdev(out)
        except ParseError:
            return []

    # ------------------------------------------------------------ kernels and boots

    def running_kernel(self) -> str:
        """``uname -r`` (the Python process's own uname when the tool cannot say)."""
        rc, out, _err = self.run(["uname", "-r"], check=False)
        return out.strip() if rc == 0 and out.strip() else os.uname()[2]

    def boot_kernel(self, override: str | None = None) -> tuple[str | None, str]:
        """(kernel, how): the kernel the boot loader starts by default, or (None, why not)."""
        if override:
            return override, "gpufabric_ofed_boot_kernel"
        if self.which("grubby"):
            rc, out, _err = self.run(["grubby", "--default-kernel"], check=False)
            match = re.search(r"vmlinuz-(\S+)", out)
            if rc == 0 and match:
                return match.group(1), "grubby --default-kernel"
        for link in ("/vmlinuz", "/boot/vmlinuz"):
            path = self.path(link)
            if os.path.islink(path):
                match = re.search(r"vmlinuz-(\S+)$", os.readlink(path))
                if match:
                    return match.group(1), "%s -> %s" % (link, os.readlink(path))
        names = [n[len("vmlinuz-"):] for n in self.listdir("/boot") if n.startswith("vmlinuz-")]
        if names:
            newest = names[0]
            for name in names[1:]:
                if deb_compare(name, newest) > 0:
                    newest = name
            return newest, "the newest /boot/vmlinuz-* (GRUB's first entry)"
        return None, "no boot loader entry found (no grubby, /vmlinuz or /boot/vmlinuz-*)"

    def boot_id(self, command: Sequence[str] | None = None) -> str | None:
        """What tells this boot from the next: ``command``'s output when given, else the kernel's boot_id,
        else the boot time in /proc/stat."""
        if command:
            rc, out, _err = self.run(list(command), check=False)
            if rc == 0 and out.strip():
                return out.strip()
        text = self.read_sys("/proc/sys/kernel/random/boot_id")
        if text is not None:
            return text.strip()
        for line in (self.read_sys("/proc/stat") or "").splitlines():
            if line.startswith("btime "):
                return "btime " + line.split()[1]
        return None

    # ------------------------------------------------------------ packages

    def package_manager(self) -> str | None:
        """``apt``, ``dnf`` or None: which package manager this host installs with."""
        if self.which("dpkg-query") and self.which("apt-get"):
            return "apt"
        if self.which("rpm") and (self.which("dnf") or self.which("yum")):
            return "dnf"
        return None

    def installed(self, manager: str, names: Sequence[str]) -> dict[str, str]:
        """``{name: version}`` of the packages among ``names`` that are installed."""
        if not names:
            return {}
        if manager == "apt":
            _rc, out, _err = self.run(["dpkg-query", "-W", "-f", "${Package}\t${Version}\t${db:Status-Abbrev}\n"]
                                      + sorted(names), check=False)
            return {k: v for k, v in parse_dpkg_query(out).items() if k in names}
        _rc, out, _err = self.run(["rpm", "-q", "--qf", "%{NAME}\t%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}\n"]
                                  + sorted(names), check=False)
        return {k: v for k, v in parse_rpm_query(out).items() if k in names}

    def package_files(self, manager: str, names: Sequence[str]) -> list[str]:
        """The files the installed packages ``names`` put on the host."""
        if not names:
            return []
        argv = (["dpkg-query", "-L"] if manager == "apt" else ["rpm", "-ql"]) + sorted(names)
        _rc, out, _err = self.run(argv, check=False)
        return [line.strip() for line in out.splitlines() if line.strip().startswith("/")]

    def dkms_status(self) -> list[dict]:
        """The rows of ``dkms status`` (empty without dkms)."""
        if not self.which("dkms"):
            return []
        _rc, out, _err = self.run(["dkms", "status"], check=False)
        return parse_dkms_status(out)


# ---------------------------------------------------------------- many devices at once

def parallel(func: Callable, items: Iterable, *, workers: int | None = None) -> list[tuple]:
    """Apply ``func`` to every item at once (one thread each, tools run in parallel).

    Returns ``[(item, result, error)]`` in the items' order; an exception is returned as
    ``error``, so one failing device never stops the others.
    """
    items = list(items)
    if not items:
        return []

    def _one(item):
        try:
            return item, func(item), None
        except Exception as exc:  # pylint: disable=broad-except  # reported per device
            return item, None, exc

    with ThreadPoolExecutor(max_workers=workers or min(32, len(items))) as pool:
        return list(pool.map(_one, items))


def plan_all(func: Callable, items: Iterable, *, named_by_item: bool = False) -> list[tuple]:
    """``parallel(func, items)``, then every error at once: ``[(item, result)]`` when none failed, else raises
    ``MlnxError.combine`` of the errors (each device named by its item with ``named_by_item``, else by the
    error itself). For the read-and-decide phase: nothing is written unless every device could be planned."""
    done = parallel(func, items)
    failed = [(item, err) for item, _res, err in done if err is not None]
    if failed:
        raise MlnxError.combine([err for _item, err in failed],
                                devices=[item for item, _err in failed] if named_by_item else None)
    return [(item, res) for item, res, _err in done]
