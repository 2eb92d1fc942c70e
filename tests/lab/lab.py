"""Bring a gpufabric test lab up or down: one podman container per server and leaf, one podman
network per rail, all described by a small YAML lab file (tests/lab/labs/*.yml).

Run as root with the project's venv Python (PyYAML): .venv/bin/python tests/lab/lab.py ...

    lab.py up        --lab FILE [--sim DIR | --no-sim] [--jobs N] [--keep-on-failure]
    lab.py down      --lab FILE
    lab.py status    --lab FILE [--json]
    lab.py exec      --lab FILE NODE [--] [COMMAND...]
    lab.py plan      --lab FILE            print the podman commands `up` would run
    lab.py inventory --lab FILE            print the Ansible inventory (hosts.yml) of the lab
    lab.py nvued     --lab FILE [LEAF...]  start nvued again on fabric leaves where it died
    lab.py swap-cables --lab FILE SERVER:IFACE SERVER:IFACE   swap two cables' server ends for real

Every command is idempotent. `up` first removes whatever an earlier, interrupted run left under
the same names, and on failure removes what it made (unless --keep-on-failure). `down` removes
every container and network of the lab and never fails on things that are already gone.

The pure parts (lab-file validation, names, addresses, the podman argv) are plain functions,
unit-tested in tests/unit/lab without podman. Needs Python 3.9+ and PyYAML; root for rootful
podman (bridges, per-rail networks). See tests/lab/README.md.
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SIM = REPO / "tests" / "sim"
DEFAULT_IMAGE = "localhost/gpufabric-host:bookworm"
LAB_RANGE = ipaddress.ip_network("198.18.0.0/15")  # RFC 2544 benchmarking range: the lab's only
LABEL = "gpufabric.lab"
SIM_DIR = "/opt/mlxsim"  # where the simulator is copied inside each container
DEFAULT_NVUE = REPO / "tests" / "nvue"
# The tests' bytecode cache for Ansible's module payloads (tests/accel), copied beside the simulator and loaded by a
# .pth file in the container's python3: a module's imports are compiled once per container, not at every task.
ACCEL = REPO / "tests" / "accel"
ACCEL_DIR = "/opt/gpufabric-accel"
NVUE_DIR = "/opt/nvuesim"  # where the NVUE emulator is copied inside each fabric leaf
NVUE_STATE = "/var/lib/nvuesim"
NVUE_PORT = 8765
NVUE_PIDFILE = "/run/nvued.pid"
NVUE_LOG = "/var/log/nvued.log"
DEFAULT_LEAF_NAME = "{rack}-leaf-rail{rail}"
DEFAULT_LEAF_PASSWORD = "Gpufabric-Lab-1"  # [invented] the lab leaves' REST password (test-only)
# LLDP (01:80:c2:00:00:0e) is link-local: a Linux bridge drops it unless bit 14 of group_fwd_mask is set.
LLDP_GROUP_FWD_MASK = 1 << 0x0E
# mgmt addresses: servers from .11 upwards, leaves from .201 upwards (the gateway keeps .1).
SERVER_HOST_OFFSET = 11
LEAF_HOST_OFFSET = 201
# /proc/sys entries of a container: `net` is per network namespace and stays writable; the
# rest is host-global (kernel.*, vm.*, fs.*, ...) and is masked. Extra entries found on the
# host at run time are masked too (see sysctl_mask_dirs).
PROC_SYS_GLOBAL = ("abi", "crypto", "debug", "dev", "fs", "kernel", "user", "vm")

_NAME = re.compile(r"^[a-z]([a-z0-9-]*[a-z0-9])?$")
_HOST = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_IFNAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,14}$")
# A kernel release as /boot/vmlinuz-<release> names it (uname -r), e.g. 6.1.0-26-amd64.
_KERNEL = re.compile(r"[0-9][A-Za-z0-9.+~_-]{0,63}", re.ASCII)
_RELEASE = re.compile(r"5\.[0-9]{1,2}\.[0-9]{1,2}", re.ASCII)
_SPEED = re.compile(r"(1|10|25|40|50|100|200|400|800)G", re.ASCII)
_PASSWORD = re.compile(r"[A-Za-z0-9!#%+,.:=@^_-]{8,64}", re.ASCII)
_ENDPOINT = re.compile(r"([a-z0-9](?:[a-z0-9-]*[a-z0-9])?):([A-Za-z][A-Za-z0-9_.-]{0,14})", re.ASCII)
_FABRIC_KEYS = {"per", "name", "release", "releases", "port_base", "speed", "password"}
_TOP_KEYS = {"name", "image", "mgmt", "rails", "racks", "leaves", "time_scale", "rail_mtu", "rail_names",
             "nic_mtu", "ipv6", "env", "boot_kernel", "slurm", "mpi"}


class LabError(Exception):
    """A lab file or a lab operation went wrong; the message says where and what."""


# ---------------------------------------------------------------------------------------------
# The lab model (pure)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Node:
    """One container of the lab: a server or a leaf switch."""

    name: str  # inventory_hostname and the container's hostname
    role: str  # "server" | "leaf"
    container: str  # podman container name: <lab>-<name>
    mgmt_ip: str
    networks: tuple[str, ...]  # podman networks in interface order: eth0, eth1, ...
    profile: str | None = None  # mlxsim profile; None: the simulator is installed, not initialised
    rack: str | None = None
    position: int | None = None  # 1-based position in the rack (servers)
    rail: int | None = None  # the rail a leaf serves
    ifnames: tuple[str, ...] = ()  # interface names in network order (fabric labs); empty: the rail rule
    release: str | None = None  # fabric leaves: the Cumulus Linux release its emulator runs
    ports: tuple[str, ...] = ()  # fabric leaves: its server-facing ports swpN, in port order


@dataclass(frozen=True)
class Cable:
    """One cable of a fabric lab: a server's rail interface <-> a leaf port, its own podman network."""

    network: str
    rack: str
    rail: int
    server: str
    iface: str
    leaf: str
    port: str

    @property
    def label(self) -> str:
        """The cable label as docs/rails.md writes it: host:iface -> leaf:port."""
        return f"{self.server}:{self.iface} -> {self.leaf}:{self.port}"


@dataclass(frozen=True)
class Fabric:
    """The `leaves: {per: rack, ...}` form: a leaf per rack per rail running the NVUE emulator."""

    name: str = DEFAULT_LEAF_NAME
    release: str = "5.9.1"
    releases: tuple[tuple[str, str], ...] = ()  # (leaf, release) overrides
    port_base: int = 1
    speed: str = "400G"
    password: str = DEFAULT_LEAF_PASSWORD


@dataclass(frozen=True)
class Lab:
    name: str
    image: str
    mgmt_network: str  # podman network name
    mgmt_subnet: str
    rails: int
    rail_networks: tuple[str, ...]
    servers: tuple[Node, ...]
    leaves: tuple[Node, ...]
    time_scale: float = 0.02
    rail_mtu: int = 9000
    nic_mtu: int = 1500
    ipv6: bool = False
    env: dict[str, str] = field(default_factory=dict)
    rail_names: tuple[str, ...] = ()  # servers' rail interface names; empty: eth1..ethN
    boot_kernel: str = ""  # a kernel release the servers' /boot holds (vmlinuz + initrd), as a real host's; "": none
    fabric: Fabric | None = None  # the fabric form of `leaves`: per-cable networks, the NVUE emulator
    cables: tuple[Cable, ...] = ()
    slurm_controller: str | None = None  # the server that runs slurmctld (`slurm: {controller: NAME}`); None: no Slurm
    mpi: bool = False  # `mpi: true`: the servers reach each other over SSH as root (Open MPI's mpirun starts ranks)

    def rail_name(self, index: int) -> str:
        """The name of rail ``index``'s interface in a server (eth1.. unless the lab file names them)."""
        return self.rail_names[index] if self.rail_names else f"eth{index + 1}"

    @property
    def nodes(self) -> tuple[Node, ...]:
        return self.servers + self.leaves

    @property
    def networks(self) -> tuple[str, ...]:
        return (self.mgmt_network,) + self.rail_networks + tuple(c.network for c in self.cables)

    def cable(self, server: str, iface: str) -> Cable:
        """The cable the plan puts on a server's interface."""
        for c in self.cables:
            if (c.server, c.iface) == (server, iface):
                return c
        known = ", ".join(f"{c.server}:{c.iface}" for c in self.cables) or "none: not a fabric lab"
        raise LabError(f"lab {self.name!r}: no cable on {server}:{iface} (cables: {known})")

    @property
    def racks(self) -> dict[str, list[Node]]:
        racks: dict[str, list[Node]] = {}
        for node in self.servers:
            racks.setdefault(node.rack, []).append(node)
        return racks

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if name in (node.name, node.container):
                return node
        known = ", ".join(n.name for n in self.nodes)
        raise LabError(f"lab {self.name!r} has no node {name!r} (nodes: {known})")


def _need(cond: bool, where: str, msg: str) -> None:
    if not cond:
        raise LabError(f"{where}: {msg}")


def _mapping(value: Any, where: str) -> dict:
    _need(isinstance(value, dict), where, f"must be a mapping, got {type(value).__name__}")
    return value


def _int(value: Any, where: str, lo: int, hi: int) -> int:
    _need(isinstance(value, int) and not isinstance(value, bool), where,
          f"must be an integer, got {value!r}")
    _need(lo <= value <= hi, where, f"must be between {lo} and {hi}, got {value}")
    return value


def _name(value: Any, where: str, pattern: re.Pattern = _NAME, max_len: int = 40) -> str:
    _need(isinstance(value, str) and bool(pattern.match(value)) and len(value) <= max_len, where,
          f"{value!r} is not a valid name (lowercase letters, digits and '-', "
          f"starting with a letter, at most {max_len} characters)")
    return value


def load_lab(data: Any, source: str = "lab file") -> Lab:
    """Validate a parsed lab file and build the Lab; LabError names the bad key."""
    top = _mapping(data, source)
    unknown = sorted(set(top) - _TOP_KEYS)
    _need(not unknown, source, f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_TOP_KEYS))}")
    for key in ("name", "mgmt", "rails", "racks"):
        _need(key in top, source, f"missing required key {key!r}")

    name = _name(top["name"], f"{source}: name", max_len=16)
    image = top.get("image", DEFAULT_IMAGE)
    _need(isinstance(image, str) and image.strip() != "", f"{source}: image", "must be a non-empty string")

    mgmt = _mapping(top["mgmt"], f"{source}: mgmt")
    unknown = sorted(set(mgmt) - {"network", "subnet"})
    _need(not unknown, f"{source}: mgmt", f"unknown key(s) {', '.join(unknown)}")
    mgmt_net = _name(mgmt.get("network", "mgmt"), f"{source}: mgmt.network", max_len=20)
    try:
        subnet = ipaddress.ip_network(str(mgmt.get("subnet")), strict=True)
    except ValueError as exc:
        raise LabError(f"{source}: mgmt.subnet: {exc}") from None
    _need(subnet.version == 4 and subnet.subnet_of(LAB_RANGE), f"{source}: mgmt.subnet",
          f"{subnet} must lie inside {LAB_RANGE} (lab addresses never leave the benchmarking range)")
    _need(subnet.prefixlen <= 24, f"{source}: mgmt.subnet", f"{subnet} is too small; use a /24 or larger")

    rails = _int(top["rails"], f"{source}: rails", 1, 16)
    rail_mtu = _int(top.get("rail_mtu", 9000), f"{source}: rail_mtu", 1280, 9216)
    nic_mtu = _int(top.get("nic_mtu", 1500), f"{source}: nic_mtu", 1280, rail_mtu)
    ipv6 = top.get("ipv6", False)
    _need(isinstance(ipv6, bool), f"{source}: ipv6", f"must be true or false, got {ipv6!r}")
    scale = top.get("time_scale", 0.02)
    _need(isinstance(scale, (int, float)) and not isinstance(scale, bool) and scale > 0,
          f"{source}: time_scale", f"must be a number > 0, got {scale!r}")
    env_in = top.get("env") or {}
    _mapping(env_in, f"{source}: env")
    env = {}
    for key, value in env_in.items():
        _need(isinstance(key, str) and bool(_ENV.match(key)), f"{source}: env",
              f"{key!r} is not a valid environment variable name")
        _need(isinstance(value, (str, int, float, bool)), f"{source}: env.{key}", "must be a scalar")
        env[key] = str(value).lower() if isinstance(value, bool) else str(value)

    rail_names = top.get("rail_names") or []
    _need(isinstance(rail_names, list) and (not rail_names or len(rail_names) == rails), f"{source}: rail_names",
          f"must be a list of {rails} interface names (one per rail), got {rail_names!r}")
    for i, rname in enumerate(rail_names):
        _need(isinstance(rname, str) and bool(_IFNAME.match(rname)) and rname != "eth0", f"{source}: rail_names[{i}]",
              f"{rname!r} is not an interface name (1-15 of letters, digits, '_', '-', '.'; not eth0, the mgmt)")
    _need(len(set(rail_names)) == len(rail_names), f"{source}: rail_names", "names a rail interface twice")
    boot_kernel = top.get("boot_kernel") or ""
    _need(isinstance(boot_kernel, str) and (boot_kernel == "" or bool(_KERNEL.fullmatch(boot_kernel))),
          f"{source}: boot_kernel", f"must be a kernel release such as 6.1.0-26-amd64, got {boot_kernel!r}")

    prefix = f"{name}-"
    mgmt_network = prefix + mgmt_net
    rail_networks = tuple(f"{prefix}rail{i}" for i in range(rails))
    hosts = subnet.network_address

    racks = top["racks"]
    _need(isinstance(racks, list) and racks, f"{source}: racks", "must be a non-empty list")
    seen: dict[str, str] = {}
    servers: list[Node] = []
    for r, rack in enumerate(racks):
        where = f"{source}: racks[{r}]"
        rack = _mapping(rack, where)
        unknown = sorted(set(rack) - {"name", "servers"})
        _need(not unknown, where, f"unknown key(s) {', '.join(unknown)}")
        rack_name = _name(rack.get("name"), f"{where}.name", pattern=_HOST, max_len=20)
        _need(f"rack:{rack_name}" not in seen, f"{where}.name", f"rack {rack_name!r} is listed twice")
        seen[f"rack:{rack_name}"] = where
        members = rack.get("servers")
        _need(isinstance(members, list) and members, f"{where}.servers", "must be a non-empty list")
        for p, server in enumerate(members):
            swhere = f"{where}.servers[{p}]"
            server = _mapping(server, swhere)
            unknown = sorted(set(server) - {"name", "profile"})
            _need(not unknown, swhere, f"unknown key(s) {', '.join(unknown)}")
            sname = _name(server.get("name"), f"{swhere}.name", pattern=_HOST, max_len=40)
            _need(sname not in seen, f"{swhere}.name", f"{sname!r} is already used at {seen.get(sname)}")
            seen[sname] = swhere
            profile = server.get("profile")
            _need(isinstance(profile, str) and profile.strip() != "", f"{swhere}.profile",
                  "is required (the mlxsim profile of this server)")
            servers.append(Node(
                name=sname, role="server", container=prefix + sname,
                mgmt_ip=str(hosts + SERVER_HOST_OFFSET + len(servers)),
                networks=(mgmt_network,) + rail_networks, profile=profile,
                rack=rack_name, position=p + 1,
            ))
    _need(SERVER_HOST_OFFSET + len(servers) <= LEAF_HOST_OFFSET, f"{source}: racks",
          f"{len(servers)} servers do not fit the mgmt addressing "
          f"(at most {LEAF_HOST_OFFSET - SERVER_HOST_OFFSET})")

    leaves_in = top.get("leaves")
    leaves: list[Node] = []
    fabric: Fabric | None = None
    cables: list[Cable] = []
    if isinstance(leaves_in, dict) and "per" in leaves_in:
        fabric = _fabric(leaves_in, f"{source}: leaves")
        rail_networks = ()
        ifaces = [rail_names[i] if rail_names else f"eth{i + 1}" for i in range(rails)]
        servers, leaves, cables = _wire_fabric(fabric, servers, rails, ifaces, prefix, mgmt_network, hosts, seen,
                                               f"{source}: leaves")
    elif leaves_in not in (None, False):
        spec = {} if leaves_in is True else _mapping(leaves_in, f"{source}: leaves")
        unknown = sorted(set(spec) - {"profile"})
        _need(not unknown, f"{source}: leaves", f"unknown key(s) {', '.join(unknown)}; allowed: profile "
              f"(or the fabric form: {', '.join(sorted(_FABRIC_KEYS))})")
        profile = spec.get("profile")
        _need(profile is None or (isinstance(profile, str) and profile.strip() != ""),
              f"{source}: leaves.profile", "must be a profile name or absent")
        for i in range(rails):
            lname = f"leaf-rail{i}"
            _need(lname not in seen, f"{source}: leaves", f"{lname!r} clashes with {seen.get(lname)}")
            leaves.append(Node(
                name=lname, role="leaf", container=prefix + lname,
                mgmt_ip=str(hosts + LEAF_HOST_OFFSET + i),
                networks=(mgmt_network, rail_networks[i]), profile=profile, rail=i,
            ))
    _need(LEAF_HOST_OFFSET + len(leaves) < subnet.num_addresses - 1, f"{source}: mgmt.subnet",
          f"{subnet} has no room for {len(leaves)} leaves from offset {LEAF_HOST_OFFSET}")
    mpi = top.get("mpi", False)
    _need(isinstance(mpi, bool), f"{source}: mpi", f"must be true or false, got {mpi!r}")
    slurm_controller = None
    if top.get("slurm") is not None:
        spec = _mapping(top["slurm"], f"{source}: slurm")
        unknown = sorted(set(spec) - {"controller"})
        _need(not unknown, f"{source}: slurm", f"unknown key(s) {', '.join(unknown)}; allowed: controller")
        slurm_controller = spec.get("controller")
        _need(slurm_controller in {s.name for s in servers}, f"{source}: slurm.controller",
              f"must name one of the servers (it runs slurmctld beside its slurmd), got {slurm_controller!r}")

    return Lab(name=name, image=image, mgmt_network=mgmt_network, mgmt_subnet=str(subnet),
               rails=rails, rail_networks=rail_networks, servers=tuple(servers),
               leaves=tuple(leaves), time_scale=float(scale), rail_mtu=rail_mtu,
               nic_mtu=nic_mtu, ipv6=ipv6, env=env, rail_names=tuple(rail_names), boot_kernel=boot_kernel,
               fabric=fabric, cables=tuple(cables), slurm_controller=slurm_controller, mpi=mpi)


def _fabric(spec: dict, where: str) -> Fabric:
    """Validate the fabric form of `leaves` (the keys only; the names are checked when wired)."""
    unknown = sorted(set(spec) - _FABRIC_KEYS)
    _need(not unknown, where, f"unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_FABRIC_KEYS))}")
    _need(spec["per"] == "rack", f"{where}.per", f"must be 'rack' (a leaf per rack per rail), got {spec['per']!r}")
    template = spec.get("name", DEFAULT_LEAF_NAME)
    _need(isinstance(template, str) and "{rack}" in template and "{rail}" in template
          and not re.search(r"[{}]", template.replace("{rack}", "").replace("{rail}", "")), f"{where}.name",
          f"{template!r} must contain {{rack}} and {{rail}} and no other placeholder, "
          f"e.g. {DEFAULT_LEAF_NAME!r}")

    def release(value: Any, at: str) -> str:
        _need(isinstance(value, str) and bool(_RELEASE.fullmatch(value)), at,
              f"{value!r} is not a Cumulus Linux release 5.<minor>.<patch> such as '5.9.1'")
        return value

    default = release(spec.get("release", "5.9.1"), f"{where}.release")
    overrides = spec.get("releases") or {}
    _mapping(overrides, f"{where}.releases")
    pinned = tuple((str(k), release(v, f"{where}.releases.{k}")) for k, v in overrides.items())
    port_base = _int(spec.get("port_base", 1), f"{where}.port_base", 1, 128)
    speed = spec.get("speed", "400G")
    _need(isinstance(speed, str) and bool(_SPEED.fullmatch(speed)), f"{where}.speed",
          f"{speed!r} is not a port speed (1G, 10G, 25G, 40G, 50G, 100G, 200G, 400G or 800G)")
    password = spec.get("password", DEFAULT_LEAF_PASSWORD)
    _need(isinstance(password, str) and bool(_PASSWORD.fullmatch(password)), f"{where}.password",
          "must be 8-64 of letters, digits and !#%+,.:=@^_- (it is passed to nvuesim init and the inventory)")
    return Fabric(name=template, release=default, releases=pinned, port_base=port_base, speed=speed,
                  password=password)


def cable_network(lab_name: str, rack: str, rail: int, port: str) -> str:
    """The podman network of one cable: <lab>-<rack>-r<rail>-<port>, e.g. gffab-r01-r0-swp1 (README: names)."""
    return f"{lab_name}-{rack}-r{rail}-{port}"


def _wire_fabric(fabric: Fabric, servers: list[Node], rails: int, ifaces: list[str], prefix: str,
                 mgmt_network: str, hosts: Any, seen: dict[str, str], where: str):
    """The leaves of a fabric lab (per rack per rail), one cable per server rail interface, and the servers
    re-made with their cable networks (eth0 mgmt, then rail 0..N-1 under the lab's rail names)."""
    import dataclasses

    by_rack: dict[str, list[Node]] = {}
    for node in servers:
        by_rack.setdefault(node.rack, []).append(node)
    leaves: list[Node] = []
    cables: list[Cable] = []
    server_nets: dict[str, list[str]] = {n.name: [] for n in servers}
    lab_name = prefix[:-1]
    for rack, members in by_rack.items():
        for rail in range(rails):
            lname = fabric.name.replace("{rack}", rack).replace("{rail}", str(rail))
            _need(bool(_HOST.match(lname)) and len(lname) <= 40, f"{where}.name",
                  f"gives {lname!r} for rack {rack!r} rail {rail}: not a valid host name "
                  "(lowercase letters, digits and '-', at most 40 characters)")
            _need(lname not in seen, f"{where}.name", f"leaf {lname!r} is already used at {seen.get(lname)}")
            seen[lname] = f"{where} (rack {rack}, rail {rail})"
            ports = []
            nets = [mgmt_network]
            for pos, node in enumerate(members):
                port = f"swp{pos + fabric.port_base}"
                cable = Cable(network=cable_network(lab_name, rack, rail, port), rack=rack, rail=rail,
                              server=node.name, iface=ifaces[rail], leaf=lname, port=port)
                cables.append(cable)
                ports.append(port)
                nets.append(cable.network)
                server_nets[node.name].append(cable.network)
            leaves.append(Node(name=lname, role="leaf", container=prefix + lname,
                               mgmt_ip=str(hosts + LEAF_HOST_OFFSET + len(leaves)), networks=tuple(nets),
                               rack=rack, rail=rail, ifnames=("eth0", *ports), ports=tuple(ports),
                               release=dict(fabric.releases).get(lname, fabric.release)))
    names = {n.name for n in leaves}
    for leaf, _rel in fabric.releases:
        _need(leaf in names, f"{where}.releases.{leaf}",
              f"is not a leaf of this lab (leaves: {', '.join(sorted(names))})")
    servers = [dataclasses.replace(n, networks=(mgmt_network, *server_nets[n.name]), ifnames=("eth0", *ifaces))
               for n in servers]
    return servers, leaves, cables


def read_lab(path: str | os.PathLike) -> Lab:
    try:
        import yaml
    except ImportError:  # pragma: no cover - the venv has PyYAML
        raise LabError("PyYAML is missing: run lab.py with the project's .venv/bin/python") from None
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise LabError(f"cannot read lab file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise LabError(f"{path}: not valid YAML: {exc}") from None
    return load_lab(data, source=str(path))


# ---------------------------------------------------------------------------------------------
# podman command lines (pure)
# ---------------------------------------------------------------------------------------------
def network_create_argvs(lab: Lab) -> list[list[str]]:
    """`podman network create` for mgmt (host-local IPAM) and each rail (no IPAM).

    All are --internal (no NAT, no route out of the machine) and --disable-dns (no
    aardvark-dns forwarding queries to the host's resolvers): lab traffic stays on the bridges.
    """
    label = ["--label", f"{LABEL}={lab.name}"]
    # A fabric lab's controller talks HTTPS to the leaves' emulators: the mgmt bridge gets the gateway
    # address (.1) on the host. Still --internal: no NAT, no default route in the containers.
    gateway = ["--gateway", str(ipaddress.ip_network(lab.mgmt_subnet).network_address + 1)] if lab.fabric else []
    argvs = [[
        "podman", "network", "create", "--driver", "bridge", "--internal", "--disable-dns",
        "--ipam-driver", "host-local", "--subnet", lab.mgmt_subnet, *gateway, *label,
        "--label", "gpufabric.net=mgmt", lab.mgmt_network,
    ]]
    for i, net in enumerate(lab.rail_networks):
        argvs.append([
            "podman", "network", "create", "--driver", "bridge", "--internal", "--disable-dns",
            "--ipam-driver", "none", "--opt", f"mtu={lab.rail_mtu}", *label,
            "--label", f"gpufabric.net=rail{i}", net,
        ])
    for c in lab.cables:
        argvs.append([
            "podman", "network", "create", "--driver", "bridge", "--internal", "--disable-dns",
            "--ipam-driver", "none", "--opt", f"mtu={lab.rail_mtu}", *label,
            "--label", f"gpufabric.net=rail{c.rail}", "--label", f"gpufabric.cable={c.label}", c.network,
        ])
    return argvs


def sysctl_mask_dirs(proc_sys: str | os.PathLike = "/proc/sys") -> tuple[str, ...]:
    """The /proc/sys entries to mask in a container: all but `net` (see PROC_SYS_GLOBAL)."""
    found: set[str] = set()
    try:
        found = {p.name for p in Path(proc_sys).iterdir() if p.name != "net"}
    except OSError:
        pass
    return tuple(sorted(found | set(PROC_SYS_GLOBAL)))


def container_env(lab: Lab) -> dict[str, str]:
    env = {"MLXSIM_TIME_SCALE": f"{lab.time_scale:g}"}
    env.update(lab.env)
    return env


def container_run_argv(lab: Lab, node: Node, mask_dirs: Sequence[str] = PROC_SYS_GLOBAL) -> list[str]:
    """`podman run` for one node.

    Least privilege that still lets root in the container configure its own network:
    - NET_ADMIN (ip addr/route/rule, link MTU) and NET_RAW (tcpdump, ping) on top of podman's
      default capabilities; no --privileged.
    - /proc/sys is read-only in a container by default. `unmask=/proc/sys` makes it writable and
      `mask=` hides every host-global part again (kernel, vm, fs, ...), so only /proc/sys/net -
      the container's own network namespace - can be written (sysctl net.ipv4.conf.ethN.*).
    - --init (catatonit) as PID 1 reaps zombies and forwards signals to `sleep infinity`.
    - --dns none and internal networks: no resolver or route to anything outside the lab.
    - eth0 is mgmt, eth1..ethN are rail0..rail(N-1) (or the lab's rail_names on servers, e.g. the
      simulated NICs' Ethernet netdevs enp24s0np0...): interface_name= pins the names.
    """
    argv = [
        "podman", "run", "--detach", "--pull", "never", "--init",
        "--name", node.container, "--hostname", node.name,
        "--label", f"{LABEL}={lab.name}", "--label", f"gpufabric.role={node.role}",
    ]
    if node.rack:
        argv += ["--label", f"gpufabric.rack={node.rack}"]
    if node.profile:
        argv += ["--label", f"gpufabric.profile={node.profile}"]
    argv += [
        "--cap-add", "NET_ADMIN", "--cap-add", "NET_RAW",
        "--security-opt", "unmask=/proc/sys",
        "--security-opt", "mask=" + ":".join(f"/proc/sys/{d}" for d in mask_dirs),
        "--dns", "none",
    ]
    if not lab.ipv6:
        argv += ["--sysctl", "net.ipv6.conf.all.disable_ipv6=1",
                 "--sysctl", "net.ipv6.conf.default.disable_ipv6=1"]
    if lab.slurm_controller and node.role != "leaf":
        # every server by name: Slurm's mpi/pmix plugin (srun --mpi=pmix, the validation gate's srun launcher)
        # resolves the step's nodes by their names - without it "srun: error: Unable to get address" (measured)
        argv += [f"--add-host={other.name}:{other.mgmt_ip}" for other in lab.servers if other.name != node.name]
    if node.role == "leaf":
        # a leaf routes between its ports, as a Spectrum switch does between its swp ports with addresses: server
        # to server traffic on a rail goes through it (perftest and NCCL pairs of the validation gate)
        argv += ["--sysctl", "net.ipv4.ip_forward=1"]
    for key, value in container_env(lab).items():
        argv += ["--env", f"{key}={value}"]
    for i, net in enumerate(node.networks):
        if node.ifnames:
            iface = node.ifnames[i]
        else:
            iface = lab.rail_name(i - 1) if node.role == "server" and i > 0 else f"eth{i}"
        opts = [f"interface_name={iface}"]
        if net == lab.mgmt_network:
            opts.insert(0, f"ip={node.mgmt_ip}")
        argv += ["--network", f"{net}:{','.join(opts)}"]
    argv.append(lab.image)
    return argv


# Runs inside each container after the simulator was copied to SIM_DIR. Values come in as
# positional parameters, never pasted into the script: $1 profile ("" = none), $2 hostname,
# $3 NIC MTU, $4 a kernel release for /boot ("" = none), then the rail interfaces to set the MTU on.
PROVISION_SCRIPT = """set -eu
if [ -d {sim}/bin ]; then
  for f in {sim}/bin/*; do
    if [ -f "$f" ] && [ -x "$f" ]; then ln -sfn "$f" /usr/local/sbin/; fi
  done
fi
profile=$1 host=$2 mtu=$3 kernel=$4
shift 4
if [ -n "$kernel" ]; then
  mkdir -p /boot
  for f in "/boot/vmlinuz-$kernel" "/boot/initrd.img-$kernel"; do [ -e "$f" ] || : > "$f"; done
fi
for nic in "$@"; do ip link set dev "$nic" mtu "$mtu"; done
if [ -f {accel}/gpufabric_bytecode_cache.py ]; then python3 {accel}/gpufabric_bytecode_cache.py >/dev/null; fi
if [ -n "$profile" ]; then mlxsim init --profile "$profile" --hostname "$host"; fi
""".format(sim=SIM_DIR, accel=ACCEL_DIR)


def sim_copy_argv(node: Node, sim: Path) -> list[str]:
    return ["podman", "cp", str(sim), f"{node.container}:{SIM_DIR}"]


def accel_copy_argv(node: Node, accel: Path = ACCEL) -> list[str]:
    return ["podman", "cp", str(accel), f"{node.container}:{ACCEL_DIR}"]


def provision_argv(lab: Lab, node: Node, with_sim: bool = True) -> list[str]:
    """`podman exec` that links the simulator's tools, gives a server the lab's boot kernel, sets the NIC MTU and
    runs mlxsim init."""
    profile = node.profile if (with_sim and node.profile) else ""
    server = node.role == "server"
    nics = [lab.rail_name(i) for i in range(lab.rails)] if server else []  # leaves: fabric MTU
    return ["podman", "exec", node.container, "sh", "-c", PROVISION_SCRIPT, "provision",
            profile, node.name, str(lab.nic_mtu), lab.boot_kernel if server else "", *nics]


# A fabric leaf, after tests/nvue was copied to NVUE_DIR: link its tools and make the switch state.
# $1 hostname, $2 release, $3 ports (swp1,swp2,...), $4 speed, $5 password.
LEAF_PROVISION_SCRIPT = """set -eu
for f in {nvue}/bin/*; do
  if [ -f "$f" ] && [ -x "$f" ]; then ln -sfn "$f" /usr/local/sbin/; fi
done
nvuesim init --state {state} --hostname "$1" --release "$2" --ports "$3" --speed "$4" --password "$5" \\
  --provider lab --force
""".format(nvue=NVUE_DIR, state=NVUE_STATE)

# nvued in the background, unless the one of the pid file still runs. $1 the mgmt address.
NVUED_START_SCRIPT = """set -eu
if [ -s {pid} ] && kill -0 "$(cat {pid})" 2>/dev/null; then exit 0; fi
exec nvued --state {state} --listen "$1:{port}" --pidfile {pid} >>{log} 2>&1
""".format(pid=NVUE_PIDFILE, state=NVUE_STATE, port=NVUE_PORT, log=NVUE_LOG)

# A fabric server's LLDP agent (lldpd of Debian 12): its name, the interface name as port id, a frame a
# second, only on the rail interfaces. $1 hostname, then the rail interfaces. The names were validated
# (hostname-safe, interface names) before they reach the configuration file.
LLDPD_SCRIPT = """set -eu
host=$1
shift
pattern=$(IFS=,; echo "$*")
mkdir -p /etc/lldpd.d
printf '%s\\n' "configure system hostname $host" "configure system interface pattern $pattern" \\
  "configure lldp portidsubtype ifname" "configure lldp tx-interval 1" > /etc/lldpd.d/gpufabric.conf
if pidof lldpd >/dev/null; then lldpcli -c /etc/lldpd.d/gpufabric.conf >/dev/null; else lldpd; fi
"""


# Slurm in a lab with `slurm:` (Debian's slurmctld, slurmd, munge from the image): every server a node, the
# controller's slurmctld beside its slurmd. $1 the node name, $2 "controller" or "node", $3 the munge key (base64),
# $4 slurm.conf. Daemons run detached from this shell (setsid), as root; a running one is left alone.
SLURM_CONF = """ClusterName={cluster}
SlurmctldHost={controller}({controller_ip})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/linear
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
{nodes}
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
SLURM_SCRIPT = """set -eu
mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
printf '%s' "$3" | base64 -d > /etc/munge/munge.key
chown munge:munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
chmod 0400 /etc/munge/munge.key
printf '%s' "$4" > /etc/slurm/slurm.conf
pidof munged >/dev/null || runuser -u munge -- /usr/sbin/munged
if [ "$2" = controller ]; then pidof slurmctld >/dev/null || setsid slurmctld </dev/null >/dev/null 2>&1; fi
pgrep -x slurmd >/dev/null || setsid slurmd -N "$1" </dev/null >/dev/null 2>&1
"""


# A lab node's CPUs as Slurm counts them (slurmd takes the configured number: config_overrides): one rank per GPU
# (srun --ntasks-per-node, the validation gate's srun launcher) fits on the profiles' 8 GPUs, as on a real server;
# with one CPU srun refuses ("CPU count per node can not be satisfied", measured).
SLURM_CPUS = 8


def slurm_conf(lab: Lab) -> str:
    """The lab's slurm.conf: a node per server (its mgmt address, SLURM_CPUS CPUs), one partition of all."""
    ctl = lab.node(lab.slurm_controller)
    nodes = "\n".join(f"NodeName={n.name} NodeAddr={n.mgmt_ip} CPUs={SLURM_CPUS} RealMemory=100 State=UNKNOWN"
                      for n in lab.servers)
    return SLURM_CONF.format(cluster=lab.name, controller=ctl.name, controller_ip=ctl.mgmt_ip, nodes=nodes)


def slurm_argvs(lab: Lab, key: bytes) -> list[list[str]]:
    """The controller first, then every other server: the same munge key and slurm.conf, the daemons started."""
    import base64

    text = base64.b64encode(key).decode("ascii")
    conf = slurm_conf(lab)
    order = sorted(lab.servers, key=lambda n: n.name != lab.slurm_controller)
    return [["podman", "exec", n.container, "sh", "-c", SLURM_SCRIPT, "slurm", n.name,
             "controller" if n.name == lab.slurm_controller else "node", text, conf] for n in order]


def start_slurm(lab: Lab, pm: "Podman") -> None:
    """Slurm in the lab: a munge key of its own made at every `up`, the daemons, then until every node is idle."""
    for argv in slurm_argvs(lab, os.urandom(1024)):
        pm.run(argv)
    wait_slurm(lab, pm)


def wait_slurm(lab: Lab, pm: "Podman", timeout: float = 60.0) -> None:
    """Until slurmctld sees every server's slurmd (each node idle and responding), or LabError naming those it
    does not."""
    ctl = lab.node(lab.slurm_controller)
    deadline = time.monotonic() + timeout
    states: dict[str, str] = {}
    while True:
        proc = pm.run(["podman", "exec", ctl.container, "sinfo", "--noheader", "--Node", "--format=%N|%T"],
                      check=False, quiet=True)
        states = dict(line.split("|", 1) for line in proc.stdout.splitlines() if "|" in line)
        if all(states.get(n.name) == "idle" for n in lab.servers):
            return
        if time.monotonic() > deadline:
            raise LabError(f"slurm: after {timeout:.0f}s slurmctld on {ctl.name} sees {states or 'no node'}; "
                           f"expected every server idle (logs: /var/log/slurm in the containers)")
        time.sleep(1)


# MPI in a lab with `mpi: true`: root on every server reaches every other server over SSH (Open MPI's mpirun starts
# its daemon, orted, that way) - a key pair of the lab's own made at every `up` (ssh-keygen on the host), each
# server's sshd with host keys of its own, and known_hosts of every server's mgmt address and host key, so that
# `ssh -o BatchMode=yes` needs no prompt (as a real cluster's provisioning does it). SSHD_SCRIPT makes the host keys
# and starts sshd, printing the host's ed25519 public key; SSH_KEYS_SCRIPT writes root's key pair ($1 private key,
# base64; $2 public key), authorized_keys and known_hosts ($3). An SSH session does not inherit the container's
# environment (podman run -e): the lab's variables ($1 of SSHD_SCRIPT, NAME=value lines) go to /etc/environment,
# which sshd's PAM (pam_env, Debian's default) gives every session - so a rank mpirun starts there sees them too.
SSHD_SCRIPT = """set -eu
printf '%s' "$1" > /etc/environment
ssh-keygen -A >/dev/null
mkdir -p /run/sshd
pidof sshd >/dev/null || /usr/sbin/sshd
cut -d' ' -f1,2 /etc/ssh/ssh_host_ed25519_key.pub
"""
SSH_KEYS_SCRIPT = """set -eu
umask 077
mkdir -p /root/.ssh
printf '%s' "$1" | base64 -d > /root/.ssh/id_ed25519
printf '%s\\n' "$2" > /root/.ssh/id_ed25519.pub
printf '%s\\n' "$2" > /root/.ssh/authorized_keys
printf '%s' "$3" > /root/.ssh/known_hosts
"""


def start_ssh(lab: Lab, pm: "Podman", workdir: str | os.PathLike | None = None) -> None:
    """sshd on every server, one key pair for root on all of them, known_hosts of every server's mgmt address."""
    import base64
    import tempfile

    host_keys = {}
    for node in lab.servers:
        env = "".join(f"{k}={v}\n" for k, v in sorted(container_env(lab).items()))
        proc = pm.run(["podman", "exec", node.container, "sh", "-c", SSHD_SCRIPT, "sshd", env], quiet=True)
        host_keys[node.name] = proc.stdout.strip().splitlines()[-1]
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        key = Path(tmp) / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"root@{lab.name}", "-f", str(key)],
                       check=True, capture_output=True)
        private = base64.b64encode(key.read_bytes()).decode("ascii")
        public = (Path(tmp) / "id_ed25519.pub").read_text().strip()
    known = "".join(f"{n.mgmt_ip},{n.name} {host_keys[n.name]}\n" for n in lab.servers)
    for node in lab.servers:
        pm.run(["podman", "exec", node.container, "sh", "-c", SSH_KEYS_SCRIPT, "ssh-keys", private, public, known],
               quiet=True)


def nvue_copy_argv(node: Node, nvue: Path) -> list[str]:
    return ["podman", "cp", str(nvue), f"{node.container}:{NVUE_DIR}"]


def leaf_provision_argv(lab: Lab, node: Node) -> list[str]:
    """`nvuesim init` of a fabric leaf: its name, release, server-facing ports, speed and the lab's password."""
    assert lab.fabric is not None and node.role == "leaf"
    return ["podman", "exec", node.container, "sh", "-c", LEAF_PROVISION_SCRIPT, "leaf",
            node.name, node.release or lab.fabric.release, ",".join(node.ports), lab.fabric.speed,
            lab.fabric.password]


def nvued_start_argv(node: Node) -> list[str]:
    """nvued on the leaf's mgmt address, detached (podman exec --detach); a running one is left alone."""
    return ["podman", "exec", "--detach", node.container, "sh", "-c", NVUED_START_SCRIPT, "nvued", node.mgmt_ip]


def lldpd_argv(lab: Lab, node: Node) -> list[str]:
    return ["podman", "exec", node.container, "sh", "-c", LLDPD_SCRIPT, "lldpd", node.name,
            *[lab.rail_name(i) for i in range(lab.rails)]]


def nvue_url(node: Node, path: str = "/nvue_v1/system") -> str:
    return f"https://{node.mgmt_ip}:{NVUE_PORT}{path}"


def remove_containers_argv(names: Iterable[str]) -> list[str]:
    return ["podman", "rm", "--force", "--ignore", "--time", "0", *names]


def remove_networks_argv(names: Iterable[str]) -> list[str]:
    return ["podman", "network", "rm", "--force", *names]


def plan(lab: Lab, sim: Path | None, mask_dirs: Sequence[str] = PROC_SYS_GLOBAL,
         nvue: Path = DEFAULT_NVUE) -> list[list[str]]:
    """Every podman command `up` runs after its cleanup, in order (within a step: in parallel)."""
    steps = network_create_argvs(lab)
    steps += [container_run_argv(lab, n, mask_dirs) for n in lab.nodes]
    for node in lab.nodes:
        steps += provision_steps(lab, node, sim, nvue)
    return steps


def provision_steps(lab: Lab, node: Node, sim: Path | None, nvue: Path = DEFAULT_NVUE) -> list[list[str]]:
    """What `up` runs in one container after it started: the simulator (servers, legacy leaves), or the NVUE
    emulator and nvued (fabric leaves); lldpd on a fabric lab's servers."""
    if lab.fabric and node.role == "leaf":
        return [nvue_copy_argv(node, nvue), leaf_provision_argv(lab, node), nvued_start_argv(node)]
    steps = [sim_copy_argv(node, sim), accel_copy_argv(node)] if sim is not None else []
    steps.append(provision_argv(lab, node, with_sim=sim is not None))
    if lab.fabric:
        steps.append(lldpd_argv(lab, node))
    return steps


# ---------------------------------------------------------------------------------------------
# Ansible inventory (pure)
# ---------------------------------------------------------------------------------------------
def inventory(lab: Lab) -> dict:
    """The lab as an Ansible YAML inventory: servers (children rack_<rack>) and leaves.

    Connection settings live in group_vars/all.yml beside it; host vars here are the
    container name (ansible_host) and where the node sits.
    """
    racks = {}
    for rack, nodes in lab.racks.items():
        racks[f"rack_{rack.replace('-', '_')}"] = {"hosts": {
            n.name: {"ansible_host": n.container, "rack": n.rack, "position": n.position,
                     "sim_profile": n.profile}
            for n in nodes
        }}
    groups: dict[str, Any] = {"servers": {"children": racks}}
    if lab.fabric:
        groups["leaves"] = {"hosts": {n.name: leaf_hostvars(lab, n) for n in lab.leaves}}
    elif lab.leaves:
        leaves = {}
        for n in lab.leaves:
            leaves[n.name] = {"ansible_host": n.container, "rail": n.rail}
            if n.profile:
                leaves[n.name]["sim_profile"] = n.profile
        groups["leaves"] = {"hosts": leaves}
    return {"all": {"children": groups}}


def leaf_hostvars(lab: Lab, node: Node) -> dict:
    """A fabric leaf reached over the emulator's REST API (ansible.netcommon.httpapi, gpufabric.mlnx.nvue)."""
    return {"ansible_host": node.mgmt_ip, "ansible_connection": "ansible.netcommon.httpapi",
            "ansible_network_os": "gpufabric.mlnx.nvue", "ansible_httpapi_port": NVUE_PORT,
            "ansible_httpapi_use_ssl": True, "ansible_httpapi_validate_certs": False,
            "ansible_user": "cumulus", "ansible_password": lab.fabric.password,
            "rack": node.rack, "rail": node.rail}


def render_inventory(lab: Lab, lab_file: str) -> str:
    import yaml

    head = (f"# Generated by: tests/lab/lab.py inventory --lab {lab_file}\n"
            f"# Do not edit by hand: change the lab file and regenerate.\n---\n")
    return head + yaml.safe_dump(inventory(lab), sort_keys=False, default_flow_style=False)


# ---------------------------------------------------------------------------------------------
# Running podman
# ---------------------------------------------------------------------------------------------
class Podman:
    """Runs podman argv lists (never through a shell); parallel where the caller asks."""

    def __init__(self, jobs: int = 6, verbose: bool = False):
        self.jobs = max(1, jobs)
        self.verbose = verbose

    def run(self, argv: Sequence[str], check: bool = True, quiet: bool = False) -> subprocess.CompletedProcess:
        if self.verbose:
            print("+ " + shlex.join(argv), file=sys.stderr)
        try:
            proc = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
        except FileNotFoundError:
            raise LabError(f"{argv[0]} is not installed: run tests/lab/setup-host.sh") from None
        if check and proc.returncode != 0:
            words = (proc.stderr or proc.stdout).strip()
            raise LabError(f"{shlex.join(argv[:4])} ... failed (rc={proc.returncode}): {words}")
        return proc

    def each(self, func: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        """func(item) for every item on a thread pool; all failures are reported together."""
        if not items:
            return []
        pool = ThreadPoolExecutor(max_workers=min(self.jobs, len(items)))
        errors, results = [], []
        try:
            futures = [pool.submit(func, item) for item in items]
            for fut in futures:
                try:
                    results.append(fut.result())
                except LabError as exc:
                    errors.append(str(exc))
        finally:
            # On ^C/SIGTERM: let the podman commands already running finish, start no more.
            pool.shutdown(wait=True, cancel_futures=True)
        if errors:
            raise LabError("\n  ".join([f"{len(errors)} of {len(items)} steps failed:"] + errors))
        return results

    def lines(self, argv: Sequence[str]) -> list[str]:
        return [line for line in self.run(argv).stdout.splitlines() if line.strip()]


def _existing_containers(lab: Lab, pm: Podman) -> list[str]:
    labelled = pm.lines(["podman", "ps", "--all", "--filter", f"label={LABEL}={lab.name}",
                         "--format", "{{.Names}}"])
    everything = set(pm.lines(["podman", "ps", "--all", "--format", "{{.Names}}"]))
    named = [n.container for n in lab.nodes if n.container in everything]
    return sorted(set(labelled) | set(named))


def _existing_networks(lab: Lab, pm: Podman) -> list[str]:
    rows = pm.lines(["podman", "network", "ls", "--format", "{{.Name}}"])
    labelled = pm.lines(["podman", "network", "ls", "--filter", f"label={LABEL}={lab.name}",
                         "--format", "{{.Name}}"])
    return sorted(set(labelled) | (set(rows) & set(lab.networks)))


def down(lab: Lab, pm: Podman) -> dict[str, int]:
    """Remove every container and network of the lab (by label and by name). Absent is fine."""
    containers = _existing_containers(lab, pm)
    if containers:
        pm.run(remove_containers_argv(containers))
    networks = _existing_networks(lab, pm)
    if networks:
        pm.run(remove_networks_argv(networks))
    return {"containers": len(containers), "networks": len(networks)}


def _disable_host_ipv6(lab: Lab, pm: Podman) -> None:
    """Best effort: no IPv6 link-local chatter from the host side of the lab's bridges either."""
    proc = pm.run(["podman", "network", "inspect", *lab.networks], check=False)
    try:
        bridges = [n.get("network_interface") for n in json.loads(proc.stdout or "[]")]
    except ValueError:
        return
    for bridge in filter(None, bridges):
        ports = Path("/sys/class/net", bridge, "brif")
        names = [bridge] + (sorted(p.name for p in ports.iterdir()) if ports.is_dir() else [])
        for ifname in names:
            try:
                Path("/proc/sys/net/ipv6/conf", ifname, "disable_ipv6").write_text("1\n")
            except OSError:
                pass


def _bridges(pm: Podman, networks: Sequence[str]) -> dict[str, str]:
    """network -> its Linux bridge on the host (podman names them podmanN)."""
    if not networks:
        return {}
    proc = pm.run(["podman", "network", "inspect", *networks], check=False)
    try:
        rows = json.loads(proc.stdout or "[]")
    except ValueError:
        return {}
    return {r["name"]: r["network_interface"] for r in rows if r.get("name") and r.get("network_interface")}


def forward_lldp(lab: Lab, pm: Podman) -> None:
    """Let LLDP cross each cable's bridge: 01:80:c2:00:00:0e is a link-local group a Linux bridge never
    forwards unless bit 14 of its group_fwd_mask is set (the kernel refuses only bits 0-2)."""
    for net, bridge in _bridges(pm, [c.network for c in lab.cables]).items():
        mask = Path("/sys/class/net", bridge, "bridge", "group_fwd_mask")
        try:
            mask.write_text(f"{LLDP_GROUP_FWD_MASK}\n")
        except OSError as exc:
            raise LabError(f"cable network {net}: cannot set {mask} (LLDP would not pass): {exc.strerror}") from None


def _nvued_answers(lab: Lab, node: Node, timeout: float = 3.0) -> str | None:
    """None when the leaf's nvued answers GET /nvue_v1/system over HTTPS (any status), else why not."""
    import base64
    import ssl
    import urllib.error
    import urllib.request

    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the emulator's self-signed certificate
    auth = base64.b64encode(f"cumulus:{lab.fabric.password}".encode()).decode()
    req = urllib.request.Request(nvue_url(node), headers={"Authorization": f"Basic {auth}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:
            resp.read()
        return None
    except urllib.error.HTTPError as exc:
        return None if exc.code in (401, 403) else f"HTTP {exc.code}"
    except (OSError, ValueError) as exc:
        return str(getattr(exc, "reason", exc))


def wait_nvued(lab: Lab, nodes: Sequence[Node], timeout: float = 90.0) -> None:
    """Wait until every leaf's nvued answers over HTTPS from here (the controller)."""
    deadline = time.monotonic() + timeout
    waiting = {n.name: "not tried" for n in nodes}
    while waiting:
        for node in [n for n in nodes if n.name in waiting]:
            why = _nvued_answers(lab, node)
            if why is None:
                del waiting[node.name]
            else:
                waiting[node.name] = why
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise LabError("nvued does not answer on " + ", ".join(
                f"{name} ({lab.node(name).mgmt_ip}:{NVUE_PORT}: {why}; see {NVUE_LOG} in the leaf)"
                for name, why in sorted(waiting.items())))
        time.sleep(0.5)


def restart_nvued(lab: Lab, pm: Podman, names: Sequence[str]) -> list[str]:
    """Start nvued again on the leaves (all when none named) where it is not running; wait for them."""
    _need(lab.fabric is not None, lab.name, "has no fabric leaves (leaves: {per: rack, ...}), so no nvued")
    nodes = [lab.node(n) for n in names] if names else list(lab.leaves)
    for node in nodes:
        _need(node.role == "leaf", node.name, "is a server; nvued runs on the leaves")
    pm.each(lambda n: pm.run(nvued_start_argv(n)), nodes)
    wait_nvued(lab, nodes)
    return [n.name for n in nodes]


def parse_endpoint(lab: Lab, text: str) -> tuple[Node, str]:
    """SERVER:IFACE of a server's rail interface in a fabric lab."""
    m = _ENDPOINT.fullmatch(text)
    _need(bool(m), "swap-cables", f"{text!r} is not SERVER:IFACE (e.g. srv-r01-01:{lab.rail_name(0)})")
    node = lab.node(m.group(1))
    _need(node.role == "server", "swap-cables", f"{m.group(1)!r} is a leaf; name the server ends of the cables")
    rails = [lab.rail_name(i) for i in range(lab.rails)]
    _need(m.group(2) in rails, "swap-cables",
          f"{text!r}: {m.group(2)!r} is not a rail interface of {node.name} (one of {', '.join(rails)})")
    return node, m.group(2)


IFNAMES_DIR = "/run/gpufabric/ifnames"  # in a server: <rail interface> holds the name podman knows it by

# Inside a server after `podman network connect` (podman 4.3 has no --interface-name there): rename the new
# interface to the rail's name and give it its MTU and addresses back (a moved cable keeps the host's side).
# $1 the new name podman gave, $2 the rail name, $3 MTU, then the addresses (CIDR) it had.
RENAME_SCRIPT = """set -eu
new=$1 name=$2 mtu=$3
shift 3
ip link set dev "$new" down
ip link set dev "$new" name "$name"
ip link set dev "$name" mtu "$mtu"
for addr in "$@"; do ip address add "$addr" dev "$name"; done
ip link set dev "$name" up
mkdir -p {ifnames}
echo "$new" > "{ifnames}/$name"
""".replace("{ifnames}", IFNAMES_DIR)

# Before `podman network disconnect`: netavark deletes the interface by the name podman gave it, so a rail
# interface renamed by an earlier swap gets that name back first. $1 the rail interface.
UNRENAME_SCRIPT = """set -eu
if [ -s "{ifnames}/$1" ]; then
  ip link set dev "$1" down
  ip link set dev "$1" name "$(cat "{ifnames}/$1")"
  rm -f "{ifnames}/$1"
fi
""".replace("{ifnames}", IFNAMES_DIR)


def swap_argvs(a: tuple[str, str, str], b: tuple[str, str, str]) -> list[list[str]]:
    """The podman commands that put container a's end on b's cable network and b's on a's:
    a, b = (container, network it is on now, the interface's MAC). Disconnect both, then connect crosswise,
    each end keeping its MAC (the NIC moves, not its address)."""
    (ca, na, ma), (cb, nb, mb) = a, b
    return [["podman", "network", "disconnect", na, ca], ["podman", "network", "disconnect", nb, cb],
            ["podman", "network", "connect", "--mac-address", ma, nb, ca],
            ["podman", "network", "connect", "--mac-address", mb, na, cb]]


def _link(pm: Podman, node: Node, iface: str) -> dict:
    """The interface's MAC, MTU and global addresses (ip -j address show)."""
    rows = json.loads(pm.run(["podman", "exec", node.container, "ip", "-j", "address", "show", "dev", iface]).stdout
                      or "[]")
    _need(bool(rows), f"{node.name}:{iface}", "no such interface in the container")
    addrs = [f"{a['local']}/{a['prefixlen']}" for a in rows[0].get("addr_info") or []
             if a.get("scope") == "global" and a.get("local")]
    return {"mac": rows[0]["address"], "mtu": str(rows[0]["mtu"]), "addrs": addrs}


def _netdevs(pm: Podman, container: str) -> set[str]:
    return set(pm.run(["podman", "exec", container, "ls", "/sys/class/net"]).stdout.split())


def current_network(pm: Podman, node: Node, mac: str) -> str:
    """The podman network of the interface with this MAC (podman inspect knows no interface names)."""
    rows = json.loads(pm.run(["podman", "inspect", "--format", "json", node.container]).stdout or "[]")
    nets = (rows[0].get("NetworkSettings") or {}).get("Networks") or {} if rows else {}
    for net, info in nets.items():
        if (info.get("MacAddress") or "").lower() == mac.lower():
            return net
    raise LabError(f"{node.name}: MAC {mac} is on none of {', '.join(sorted(nets)) or 'no network'}")


def swap_cables(lab: Lab, pm: Podman, end_a: str, end_b: str) -> list[str]:
    """Swap two server ends: each goes onto the other's cable network, its interface name and MTU kept."""
    _need(lab.fabric is not None, lab.name, "has no per-cable networks (leaves: {per: rack, ...})")
    (na, ia), (nb, ib) = parse_endpoint(lab, end_a), parse_endpoint(lab, end_b)
    _need((na.name, ia) != (nb.name, ib), "swap-cables", f"{end_a} is named twice")
    link = {(na.name, ia): _link(pm, na, ia), (nb.name, ib): _link(pm, nb, ib)}
    ma, mb = link[(na.name, ia)]["mac"], link[(nb.name, ib)]["mac"]
    net_a, net_b = current_network(pm, na, ma), current_network(pm, nb, mb)
    disconnect_a, disconnect_b, connect_a, connect_b = swap_argvs((na.container, net_a, ma), (nb.container, net_b, mb))
    for node, iface in ((na, ia), (nb, ib)):
        pm.run(["podman", "exec", node.container, "sh", "-c", UNRENAME_SCRIPT, "unrename", iface])
    pm.run(disconnect_a)
    pm.run(disconnect_b)
    for node, iface, argv in ((na, ia, connect_a), (nb, ib, connect_b)):
        before = _netdevs(pm, node.container)
        pm.run(argv)
        new = sorted(_netdevs(pm, node.container) - before)
        _need(len(new) == 1, node.name, f"after {shlex.join(argv)} expected one new interface, found {new}")
        was = link[(node.name, iface)]
        pm.run(["podman", "exec", node.container, "sh", "-c", RENAME_SCRIPT, "rename", new[0], iface, was["mtu"],
                *was["addrs"]])
    if not lab.ipv6:
        _disable_host_ipv6(lab, pm)
    forward_lldp(lab, pm)
    return [f"{na.name}:{ia} now on {net_b}", f"{nb.name}:{ib} now on {net_a}"]


def _timed(label: str, func: Callable[[], Any], timings: list) -> Any:
    start = time.monotonic()
    result = func()
    timings.append((label, time.monotonic() - start))
    print(f"lab: {label} ({timings[-1][1]:.1f}s)", flush=True)
    return result


def up(lab: Lab, pm: Podman, sim: Path | None, keep_on_failure: bool = False,
       nvue: Path = DEFAULT_NVUE) -> list[tuple[str, float]]:
    """Create the lab from scratch; on any failure (or ^C) remove it again unless asked not to."""
    if sim is not None and not (sim / "bin").is_dir():
        raise LabError(f"simulator not found: {sim}/bin does not exist "
                       f"(pass --sim DIR, or --no-sim to start the lab without it)")
    if lab.fabric and not (nvue / "bin" / "nvued").is_file():
        raise LabError(f"NVUE emulator not found: {nvue}/bin/nvued does not exist")
    if pm.run(["podman", "image", "exists", lab.image], check=False).returncode != 0:
        raise LabError(f"image {lab.image} is missing: build it with tests/lab/image.sh")
    timings: list[tuple[str, float]] = []
    mask_dirs = sysctl_mask_dirs()
    _timed("removed leftovers of an earlier run", lambda: down(lab, pm), timings)
    try:
        _timed(f"created {len(lab.networks)} networks",
               lambda: pm.each(pm.run, network_create_argvs(lab)), timings)
        _timed(f"started {len(lab.nodes)} containers",
               lambda: pm.each(pm.run, [container_run_argv(lab, n, mask_dirs) for n in lab.nodes]),
               timings)

        def provision(node: Node) -> None:
            for argv in provision_steps(lab, node, sim, nvue):
                pm.run(argv)

        what = "installed the simulator and ran mlxsim init" if sim is not None else "provisioned (no simulator)"
        if lab.fabric:
            what += "; the NVUE emulator in the leaves, lldpd in the servers"
        _timed(what, lambda: pm.each(provision, list(lab.nodes)), timings)
        if not lab.ipv6:
            _disable_host_ipv6(lab, pm)
        if lab.fabric:
            forward_lldp(lab, pm)
            _timed(f"nvued answers on {len(lab.leaves)} leaves", lambda: wait_nvued(lab, lab.leaves), timings)
        if lab.slurm_controller:
            _timed(f"slurmctld on {lab.slurm_controller}, slurmd on {len(lab.servers)} servers",
                   lambda: start_slurm(lab, pm), timings)
        if lab.mpi:
            _timed(f"sshd and root's lab key on {len(lab.servers)} servers (mpi)", lambda: start_ssh(lab, pm), timings)
    except BaseException:
        if not keep_on_failure:
            print("lab: up failed; removing what it made", file=sys.stderr)
            try:
                down(lab, pm)
            except LabError as exc:  # report the first failure, not the cleanup's
                print(f"lab: cleanup also failed: {exc}", file=sys.stderr)
        raise
    return timings


def status(lab: Lab, pm: Podman) -> dict:
    proc = pm.run(["podman", "ps", "--all", "--filter", f"label={LABEL}={lab.name}",
                   "--format", "json"])
    running = {}
    for row in json.loads(proc.stdout or "[]"):
        names = row.get("Names") or []
        running[names[0] if names else row.get("Id", "?")] = row.get("State", "?")
    nets = set(_existing_networks(lab, pm))
    nodes = [{"name": n.name, "container": n.container, "role": n.role, "rack": n.rack,
              "rail": n.rail, "profile": n.profile, "mgmt_ip": n.mgmt_ip,
              "state": running.get(n.container, "absent")} for n in lab.nodes]
    extra = sorted(set(running) - {n.container for n in lab.nodes})
    networks = [{"name": name, "present": name in nets} for name in lab.networks]
    complete = all(n["state"] == "running" for n in nodes) and all(n["present"] for n in networks)
    empty = not running and not nets
    return {"lab": lab.name, "state": "up" if complete else ("down" if empty else "partial"),
            "nodes": nodes, "networks": networks, "unexpected_containers": extra}


def print_status(report: dict) -> None:
    print(f"lab {report['lab']}: {report['state']}")
    print(f"  {'NODE':<16} {'CONTAINER':<24} {'ROLE':<7} {'WHERE':<8} {'PROFILE':<12} {'MGMT':<15} STATE")
    for n in report["nodes"]:
        where = n["rack"] or (f"rail{n['rail']}" if n["rail"] is not None else "")
        print(f"  {n['name']:<16} {n['container']:<24} {n['role']:<7} {where:<8} "
              f"{(n['profile'] or '-'):<12} {n['mgmt_ip']:<15} {n['state']}")
    missing = [n["name"] for n in report["networks"] if not n["present"]]
    have = len(report["networks"]) - len(missing)
    print(f"  networks: {have}/{len(report['networks'])} present"
          + (f" (missing: {', '.join(missing)})" if missing else ""))
    if report["unexpected_containers"]:
        print(f"  also labelled with this lab: {', '.join(report['unexpected_containers'])}")


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--lab", required=True, help="lab file, e.g. tests/lab/labs/demo.yml")
        p.add_argument("-v", "--verbose", action="store_true", help="print every podman command")
        return p

    p = command("up", "create the lab (after removing leftovers with the same names)")
    p.add_argument("--sim", type=Path, default=Path(os.environ.get("GPUFABRIC_LAB_SIM", DEFAULT_SIM)),
                   help="simulator directory to copy into every container (default: tests/sim)")
    p.add_argument("--nvue", type=Path, default=DEFAULT_NVUE,
                   help="NVUE emulator directory copied into fabric leaves (default: tests/nvue)")
    p.add_argument("--no-sim", action="store_true", help="start the lab without the simulator")
    p.add_argument("--jobs", type=int, default=6, help="podman commands run in parallel (default 6)")
    p.add_argument("--keep-on-failure", action="store_true", help="leave a failed lab for debugging")
    command("down", "remove every container and network of the lab")
    p = command("status", "show the lab's containers and networks; exit 0 only when fully up")
    p.add_argument("--json", action="store_true")
    p = command("exec", "run a command in a node (default: an interactive shell)")
    p.add_argument("node", help="server or leaf name (or container name)")
    p.add_argument("command", nargs=argparse.REMAINDER)
    p = command("plan", "print the podman commands `up` would run after its cleanup")
    p.add_argument("--sim", type=Path, default=DEFAULT_SIM)
    p.add_argument("--no-sim", action="store_true")
    command("inventory", "print the lab's Ansible inventory (YAML)")
    p = command("nvued", "start nvued again on fabric leaves where it died (all leaves when none named)")
    p.add_argument("leaves", nargs="*")
    p = command("swap-cables", "swap two server ends of cables: each onto the other's cable network")
    p.add_argument("ends", nargs=2, metavar="SERVER:IFACE")
    return parser


def _lab_arg(path: str) -> str:
    """The lab file as given relative to the repository, for generated headers."""
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return path


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # SIGTERM (a CI timeout, a killed molecule run) takes the same clean-up path as ^C.
    signal.signal(signal.SIGTERM, _terminate)
    try:
        lab = read_lab(args.lab)
        if args.cmd == "inventory":
            sys.stdout.write(render_inventory(lab, _lab_arg(args.lab)))
            return 0
        if args.cmd == "plan":
            for step in plan(lab, None if args.no_sim else args.sim.resolve(), sysctl_mask_dirs()):
                print(shlex.join(step))
            return 0
        if os.geteuid() != 0:
            raise LabError("run as root: the lab uses rootful podman (bridges, per-rail networks)")
        pm = Podman(jobs=getattr(args, "jobs", 6), verbose=args.verbose)
        if args.cmd == "up":
            start = time.monotonic()
            up(lab, pm, None if args.no_sim else args.sim.resolve(), args.keep_on_failure, args.nvue.resolve())
            print(f"lab: {lab.name} is up: {len(lab.servers)} servers, {len(lab.leaves)} leaves, "
                  f"{len(lab.networks)} networks in {time.monotonic() - start:.1f}s")
            return 0
        if args.cmd == "down":
            start = time.monotonic()
            gone = down(lab, pm)
            print(f"lab: {lab.name} is down: removed {gone['containers']} containers and "
                  f"{gone['networks']} networks in {time.monotonic() - start:.1f}s")
            return 0
        if args.cmd == "nvued":
            started = restart_nvued(lab, pm, args.leaves)
            print(f"lab: nvued answers on {', '.join(started)}")
            return 0
        if args.cmd == "swap-cables":
            for line in swap_cables(lab, pm, *args.ends):
                print(f"lab: {line}")
            return 0
        if args.cmd == "status":
            report = status(lab, pm)
            if args.json:
                print(json.dumps(report, indent=2))
            else:
                print_status(report)
            return 0 if report["state"] == "up" else 3
        if args.cmd == "exec":
            node = lab.node(args.node)
            command = list(args.command)
            if command[:1] == ["--"]:
                command = command[1:]
            tty = ["--interactive", "--tty"] if sys.stdin.isatty() and sys.stdout.isatty() else []
            os.execvp("podman", ["podman", "exec", *tty, node.container, *(command or ["bash"])])
    except LabError as exc:
        print(f"lab: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("lab: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
