"""Bring a gpufabric test lab up or down: one podman container per server and leaf, one podman
network per rail, all described by a small YAML lab file (tests/lab/labs/*.yml).

Run as root with the project's venv Python (PyYAML): .venv/bin/python tests/lab/lab.py ...

    lab.py up        --lab FILE [--sim DIR | --no-sim] [--jobs N] [--keep-on-failure]
    lab.py down      --lab FILE
    lab.py status    --lab FILE [--json]
    lab.py exec      --lab FILE NODE [--] [COMMAND...]
    lab.py plan      --lab FILE            print the podman commands `up` would run
    lab.py inventory --lab FILE            print the Ansible inventory (hosts.yml) of the lab

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
_TOP_KEYS = {"name", "image", "mgmt", "rails", "racks", "leaves", "time_scale", "rail_mtu", "rail_names",
             "nic_mtu", "ipv6", "env", "boot_kernel"}


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

    def rail_name(self, index: int) -> str:
        """The name of rail ``index``'s interface in a server (eth1.. unless the lab file names them)."""
        return self.rail_names[index] if self.rail_names else f"eth{index + 1}"

    @property
    def nodes(self) -> tuple[Node, ...]:
        return self.servers + self.leaves

    @property
    def networks(self) -> tuple[str, ...]:
        return (self.mgmt_network,) + self.rail_networks

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
    if leaves_in not in (None, False):
        spec = {} if leaves_in is True else _mapping(leaves_in, f"{source}: leaves")
        unknown = sorted(set(spec) - {"profile"})
        _need(not unknown, f"{source}: leaves", f"unknown key(s) {', '.join(unknown)}; allowed: profile")
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

    return Lab(name=name, image=image, mgmt_network=mgmt_network, mgmt_subnet=str(subnet),
               rails=rails, rail_networks=rail_networks, servers=tuple(servers),
               leaves=tuple(leaves), time_scale=float(scale), rail_mtu=rail_mtu,
               nic_mtu=nic_mtu, ipv6=ipv6, env=env, rail_names=tuple(rail_names), boot_kernel=boot_kernel)


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
    argvs = [[
        "podman", "network", "create", "--driver", "bridge", "--internal", "--disable-dns",
        "--ipam-driver", "host-local", "--subnet", lab.mgmt_subnet, *label,
        "--label", "gpufabric.net=mgmt", lab.mgmt_network,
    ]]
    for i, net in enumerate(lab.rail_networks):
        argvs.append([
            "podman", "network", "create", "--driver", "bridge", "--internal", "--disable-dns",
            "--ipam-driver", "none", "--opt", f"mtu={lab.rail_mtu}", *label,
            "--label", f"gpufabric.net=rail{i}", net,
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
    for key, value in container_env(lab).items():
        argv += ["--env", f"{key}={value}"]
    for i, net in enumerate(node.networks):
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
if [ -n "$profile" ]; then mlxsim init --profile "$profile" --hostname "$host"; fi
""".format(sim=SIM_DIR)


def sim_copy_argv(node: Node, sim: Path) -> list[str]:
    return ["podman", "cp", str(sim), f"{node.container}:{SIM_DIR}"]


def provision_argv(lab: Lab, node: Node, with_sim: bool = True) -> list[str]:
    """`podman exec` that links the simulator's tools, gives a server the lab's boot kernel, sets the NIC MTU and
    runs mlxsim init."""
    profile = node.profile if (with_sim and node.profile) else ""
    server = node.role == "server"
    nics = [lab.rail_name(i) for i in range(lab.rails)] if server else []  # leaves: fabric MTU
    return ["podman", "exec", node.container, "sh", "-c", PROVISION_SCRIPT, "provision",
            profile, node.name, str(lab.nic_mtu), lab.boot_kernel if server else "", *nics]


def remove_containers_argv(names: Iterable[str]) -> list[str]:
    return ["podman", "rm", "--force", "--ignore", "--time", "0", *names]


def remove_networks_argv(names: Iterable[str]) -> list[str]:
    return ["podman", "network", "rm", "--force", *names]


def plan(lab: Lab, sim: Path | None, mask_dirs: Sequence[str] = PROC_SYS_GLOBAL) -> list[list[str]]:
    """Every podman command `up` runs after its cleanup, in order (within a step: in parallel)."""
    steps = network_create_argvs(lab)
    steps += [container_run_argv(lab, n, mask_dirs) for n in lab.nodes]
    for node in lab.nodes:
        if sim is not None:
            steps.append(sim_copy_argv(node, sim))
        steps.append(provision_argv(lab, node, with_sim=sim is not None))
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
    if lab.leaves:
        leaves = {}
        for n in lab.leaves:
            leaves[n.name] = {"ansible_host": n.container, "rail": n.rail}
            if n.profile:
                leaves[n.name]["sim_profile"] = n.profile
        groups["leaves"] = {"hosts": leaves}
    return {"all": {"children": groups}}


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


def _timed(label: str, func: Callable[[], Any], timings: list) -> Any:
    start = time.monotonic()
    result = func()
    timings.append((label, time.monotonic() - start))
    print(f"lab: {label} ({timings[-1][1]:.1f}s)", flush=True)
    return result


def up(lab: Lab, pm: Podman, sim: Path | None, keep_on_failure: bool = False) -> list[tuple[str, float]]:
    """Create the lab from scratch; on any failure (or ^C) remove it again unless asked not to."""
    if sim is not None and not (sim / "bin").is_dir():
        raise LabError(f"simulator not found: {sim}/bin does not exist "
                       f"(pass --sim DIR, or --no-sim to start the lab without it)")
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
            if sim is not None:
                pm.run(sim_copy_argv(node, sim))
            pm.run(provision_argv(lab, node, with_sim=sim is not None))

        what = "installed the simulator and ran mlxsim init" if sim is not None else "provisioned (no simulator)"
        _timed(what, lambda: pm.each(provision, list(lab.nodes)), timings)
        if not lab.ipv6:
            _disable_host_ipv6(lab, pm)
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
            up(lab, pm, None if args.no_sim else args.sim.resolve(), args.keep_on_failure)
            print(f"lab: {lab.name} is up: {len(lab.servers)} servers, {len(lab.leaves)} leaves, "
                  f"{len(lab.networks)} networks in {time.monotonic() - start:.1f}s")
            return 0
        if args.cmd == "down":
            start = time.monotonic()
            gone = down(lab, pm)
            print(f"lab: {lab.name} is down: removed {gone['containers']} containers and "
                  f"{gone['networks']} networks in {time.monotonic() - start:.1f}s")
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
