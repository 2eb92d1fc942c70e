# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host side of the validation gate: per rail the link's facts, ping, perftest (``ib_write_bw``,
``ib_write_lat``) against a peer, and NCCL ranks (nccl-tests) - run with argv lists, read with the collection's
parsers.

A measurement spans two hosts, so it is done in steps the gate role runs on every host of a round at once:

- ``facts``: per interface its RDMA device and port rate (``ibdev2netdev``, ``ibstat``), link state and MTU
  (``ip -j link``), IPv4 address (``ip -j addr``), carrier changes.
- ``serve``: start the perftest servers of this host's pairs (one per test and rail, each on its own port) in the
  background, detached, each through a small Python wrapper that records its exit code; return their files.
- ``measure``: per rail at once (threads): ping the peer from the rail's address, then each test's client against
  the peer's server (retried while the server is not listening yet: ``Couldn't connect to``), parsed.
- ``collect``: the servers' outputs and exit codes (waiting for them up to a timeout), then stop what still runs.
- ``nccl_start`` / ``nccl_collect``: the same for NCCL ranks (one process per GPU).

perftest's options follow the rail's link layer (ibstat's ``Link layer``): on InfiniBand perftest addresses by LID,
so the RoCE-only options (``-x`` GID index, ``-T`` ToS) are left out; on Ethernet (RoCE) they are given. A rail
whose link layer is neither (unknown, not read) is not measured: its tests carry an error naming the host, the rail,
the device and the value.

Everything a step starts lives under ``run_dir/<run_id>`` (0700); ``run_id`` is a strict word (``[A-Za-z0-9_.-]``)
and every value reaches a tool as one argv element, never through a shell.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import signal
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import ParseError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.ibstat import parse_ibstat
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.mlnx_qos import parse_mlnx_qos
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.mlxlink import parse_mlxlink_counters
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.nccl_tests import parse_nccl_tests
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.perftest import parse_perftest
from ansible_collections.gpufabric.mlnx.plugins.module_utils._slurm import NODE, Slurm

ACTIONS = ("facts", "serve", "measure", "collect", "nccl_start", "nccl_collect", "tools", "ssh_check")
PERFTESTS = ("ib_write_bw", "ib_write_lat", "ib_read_bw", "ib_read_lat", "ib_send_bw", "ib_send_lat")
NCCL_TESTS = ("all_reduce_perf", "all_gather_perf", "sendrecv_perf")
WORD_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}", re.ASCII)
IFNAME_RE = re.compile(r"[A-Za-z0-9_.+-]{1,15}", re.ASCII)
RDMA_RE = re.compile(r"[A-Za-z0-9_]{1,64}", re.ASCII)
IPV4_RE = re.compile(r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])",
                     re.ASCII)
ENV_RE = re.compile(r"(?:NCCL|OMPI|UCX)_[A-Z0-9_]{1,60}", re.ASCII)
ENV_VALUE_RE = re.compile(r"[A-Za-z0-9_.,:=^ %&|/+-]{0,200}", re.ASCII)
CONNECT_RETRY_RE = re.compile(r"Couldn't connect to ")
# Records the exit code of the tool it runs: argv = [python, -c, WRAPPER, out, err, rc, tool, args...]
WRAPPER = ("import subprocess,sys\n"
           "o,e,r=sys.argv[1:4]\n"
           "with open(o,'wb') as fo, open(e,'wb') as fe:\n"
           "    rc=subprocess.call(sys.argv[4:],stdout=fo,stderr=fe)\n"
           "open(r+'.tmp','w').write(str(rc))\n"
           "import os; os.replace(r+'.tmp',r)\n")


# What the gate runs on every server, with where it comes from (action "tools": the preflight proves them before
# batch 1). The NCCL test is added when the gate runs NCCL.
GATE_TOOLS = {"ib_write_bw": "perftest", "ib_write_lat": "perftest", "ping": "iputils-ping",
              "ethtool": "ethtool: the PHY error counters of an Ethernet rail"}
NCCL_PACKAGE = "nccl-tests (built with MPI=1, on the PATH a non-interactive login gets)"
# The launchers of an NCCL world and what each needs on the host that starts it (and on every member: mpirun's
# daemon, started over SSH; Slurm's node daemon, which starts srun's ranks).
LAUNCHERS = ("mpirun", "srun")
SLURM_CLIENT = "Slurm's client commands (Debian/Ubuntu slurm-client)"
LAUNCHER_TOOLS = {"mpirun": {"mpirun": "Open MPI (Debian/Ubuntu openmpi-bin)", "ssh": "openssh-client"},
                  "srun": {"srun": SLURM_CLIENT, "sinfo": SLURM_CLIENT, "scontrol": SLURM_CLIENT}}
MEMBER_TOOLS = {"mpirun": {"orted": "Open MPI (Debian/Ubuntu openmpi-bin; prted in Open MPI 5)"},
                "srun": {"slurmd": "Slurm's node daemon (Debian/Ubuntu slurmd)"}}
# What else a launcher needs that is no file on the PATH, checked by running a command (action "tools").
PMIX_PLUGIN = ("Slurm's mpi/pmix plugin (srun --mpi=list lists no pmix: Debian/Ubuntu slurm-wlm-basic-plugins, and "
               "libpmix-dev for the libpmix.so it loads)")
BIND_TO = ("none", "numa", "socket", "core")
# srun's --cpu-bind for the gate's bind_to (numa: Slurm's locality domains)
SRUN_CPU_BIND = {"none": "none", "numa": "ldoms", "socket": "sockets", "core": "cores"}
HOST_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?", re.ASCII)
PATH_RE = re.compile(r"/(?:[A-Za-z0-9._+-]+/?)*", re.ASCII)
CIDR_RE = re.compile(r"(?:\d{1,3}\.){3}\d{1,3}/(?:[0-9]|[12][0-9]|3[0-2])", re.ASCII)
# A Slurm node name (module_utils/_slurm's NODE: one name, no hostlist expression, no comma or space)
SLURM_NODE_RE = NODE


class FabricTestError(MlnxError):
    """Bad input for a gate step, named by the parameter."""


# ------------------------------------------------------------------------------------------------ checking
def _word(value, what, regex=WORD_RE, allowed="1-64 of A-Z a-z 0-9 _ . -"):
    if not isinstance(value, str) or not regex.fullmatch(value):
        raise FabricTestError("%s: %r is not allowed (%s)" % (what, value, allowed), parameter=what.split("[")[0])
    return value


def _int(value, what, low, high):
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise FabricTestError("%s: %r is not allowed (a whole number %d-%d)" % (what, value, low, high),
                              parameter=what.split("[")[0])
    return value


def check_jobs(action: str, jobs: Sequence) -> list[dict]:
    """Every job of a step, checked before anything starts (all problems at once)."""
    if action not in ACTIONS:
        raise FabricTestError("action: %r is not one of %s" % (action, ", ".join(ACTIONS)), parameter="action")
    if not isinstance(jobs, Sequence) or isinstance(jobs, (str, bytes)):
        raise FabricTestError("jobs: must be a list of mappings", parameter="jobs")
    problems, out = [], []
    for i, job in enumerate(jobs):
        where = "jobs[%d]" % i
        try:
            if not isinstance(job, Mapping):
                raise FabricTestError("%s: must be a mapping" % where, parameter="jobs")
            job = dict(job)
            if action in ("facts", "serve", "measure"):
                _word(job.get("interface"), where + ".interface", IFNAME_RE, "a network interface name")
            if action in ("serve", "measure"):
                tests = job.get("tests") or ["ib_write_bw", "ib_write_lat"]
                for test in tests:
                    if test not in PERFTESTS:
                        raise FabricTestError("%s.tests: %r is not one of %s" % (where, test, ", ".join(PERFTESTS)),
                                              parameter="jobs")
                job["tests"] = list(tests)
                _int(job.get("port"), where + ".port", 1024, 65535 - len(tests))
                _int(job.get("rail", 0), where + ".rail", 0, 127)
            if action == "measure":
                _word(job.get("peer_address"), where + ".peer_address", IPV4_RE, "an IPv4 address")
            if action == "nccl_start":
                _int(job.get("local_rank"), where + ".local_rank", 0, 127)
                _int(job.get("rank"), where + ".rank", 0, 1 << 20)
                _word(job.get("hca"), where + ".hca", RDMA_RE, "an RDMA device name such as mlx5_0")
            out.append(job)
        except FabricTestError as err:
            problems.append(err)
    if problems:
        raise MlnxError.combine(problems)
    return out


def check_options(options: Mapping) -> dict:
    opts = {"duration": 10, "qps": 4, "size": 65536, "lat_size": 2, "gid_index": 3, "retries": 20, "delay": 0.5,
            "ping_count": 3, "tos": None}
    for key, value in dict(options or {}).items():
        if key not in opts:
            raise FabricTestError("options.%s: not known (allowed: %s)" % (key, ", ".join(sorted(opts))),
                                  parameter="options")
        if key == "delay":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 60:
                raise FabricTestError("options.delay: %r is not allowed (0-60 seconds)" % (value,), parameter="options")
        elif key == "tos" and value is None:
            pass
        else:
            _int(value, "options." + key, 0 if key in ("gid_index", "tos") else 1,
                 {"duration": 3600, "qps": 64, "size": 1 << 30, "lat_size": 1 << 20, "gid_index": 255,
                  "retries": 1000, "ping_count": 100, "tos": 255}[key])
        opts[key] = value
    return opts


# ------------------------------------------------------------------------------------------------ facts
def _try(host, argv, timeout=None):
    """(rc, stdout, stderr) of a read; (127, "", why) when the tool is not installed (a fact is then unknown)."""
    if not host.which(argv[0]):
        return 127, "", "%s is not installed" % argv[0]
    return host.run(argv, check=False, timeout=timeout)


def _ip_json(host, argv):
    rc, out, _err = _try(host, argv)
    if rc != 0:
        return []
    try:
        data = json.loads(out or "[]")
    except ValueError:
        return []
    return data if isinstance(data, list) else []


def _inet(host, name):
    """The first IPv4 address entry of an interface (``ip -4 -j addr``: ``local``, ``prefixlen``), {} when none."""
    addr = (_ip_json(host, ["ip", "-4", "-j", "addr", "show", "dev", name]) or [{}])[0]
    return next((a for a in addr.get("addr_info", []) if a.get("family") == "inet" and a.get("local")), {})


def _ipv4(host, name):
    """The first IPv4 address of an interface, None when it has none."""
    return _inet(host, name).get("local")


def ibstat_port(host, rdma, port):
    """(rate in Gb/s, link layer) of one port as ``ibstat <rdma>`` shows it; (None, None) when it cannot say."""
    rc, text, _err = _try(host, ["ibstat", rdma])
    try:
        cas = parse_ibstat(text) if rc == 0 else []
    except ParseError:
        cas = []
    for ca in cas:
        for p in ca.get("ports", []):
            if p.get("port") == (port or 1):
                return _number(p.get("rate")), p.get("link_layer")
    return None, None


def rail_facts(host, interfaces: Sequence[str], phy: bool = True) -> dict:
    """``{interface: {rdma, port, rate_gbps, link_layer, state, mtu, address, carrier_changes, pcie, counters, qos,
    phy}}``; ``phy`` False: without the PHY error counters (``phy`` None: the measure step needs none)."""
    ports = host.rdma_ports()
    out = {}
    for name in interfaces:
        rdma, port = ports.get(name, (None, None))
        link = (_ip_json(host, ["ip", "-j", "-s", "link", "show", "dev", name]) or [{}])[0]
        address = _ipv4(host, name)
        rate, layer = ibstat_port(host, rdma, port) if rdma else (None, None)
        found, read_at = counters(host, name), time.time()
        out[name] = {"rdma": rdma, "port": port, "rate_gbps": rate, "link_layer": layer,
                     "state": (link.get("operstate") or "").lower() or None, "mtu": link.get("mtu"),
                     "address": address, "carrier_changes": link.get("carrier_changes"),
                     "pcie": pcie_link(host, name), "counters": found, "qos": qos(host, name),
                     "phy": phy_counters(host, name, rdma, port, layer, found, read_at) if phy else None}
    return out


COUNTERS = ("link_down_events_phy", "rx_symbol_err_phy", "rx_corrected_bits_phy", "rx_pcs_symbol_err_phy",
            "rx_bits_phy", "rx_discards_phy", "rx_prio3_pause", "tx_prio3_pause", "rx_bytes", "tx_bytes")
# the mlx5 PHY statistical counters a BER is made of (kernel Documentation/.../mlx5/counters.rst): errors FEC could
# not correct, bits FEC corrected (the raw, pre-FEC errors), link-down events
ETH_PHY = {"effective_errors": "rx_pcs_symbol_err_phy", "raw_errors": "rx_corrected_bits_phy",
           "link_down": "link_down_events_phy"}
MLXLINK = ("mlxlink", "mstlink")        # MFT's name, then Debian's mstflint's


def mlxlink_tool(host):
    """(name, path) of the first of MLXLINK on the host's PATH, (None, None) when neither is."""
    return next(((name, path) for name in MLXLINK for path in [host.which(name)] if path), (None, None))


def phy_counters(host, name, rdma, port, layer, ethtool, read_at):
    """The PHY error counters of a rail's link and when they were read, the same keys on both link layers:
    ``{"source", "read_at", "effective_errors", "raw_errors", "link_down", "received_bits"}``, or ``{"source",
    "read_at", "error"}`` when they cannot be read (fail closed: the gate then certifies no BER for the link).

    Ethernet: ``ethtool -S`` (``rx_pcs_symbol_err_phy``, ``rx_corrected_bits_phy``, ``link_down_events_phy``;
    ``rx_bits_phy`` where the driver prints it - mlx5 does not before a 2026 patch, the gate then counts the bits as
    port rate x the time between two reads, as mlxlink and UFM do). InfiniBand: ``mlxlink -d <rdma> -p <port> -c``
    (an IPoIB netdev has no PHY counters in ``ethtool -S``)."""
    if layer == "InfiniBand":
        tool = mlxlink_tool(host)[0]
        argv = [tool or MLXLINK[0], "-d", str(rdma), "-p", str(port or 1), "-c"]
        source = " ".join(argv)
        if tool is None:
            return {"source": source, "read_at": time.time(),
                    "error": "neither mlxlink (NVIDIA MFT) nor mstlink (mstflint) is installed"}
        rc, out, err = host.run(argv, check=False)
        read_at = time.time()
        if rc != 0:
            words = [ln.strip() for ln in ((err or "") + "\n" + (out or "")).splitlines() if ln.strip()]
            return {"source": source, "read_at": read_at, "error": "rc %s: %s" % (rc, " / ".join(words[:2]))}
        try:
            parsed = parse_mlxlink_counters(out, tool=tool)
        except ParseError as exc:
            return {"source": source, "read_at": read_at, "error": str(exc)}
        return {"source": source, "read_at": read_at, "effective_errors": parsed["effective_errors"],
                "raw_errors": parsed["raw_errors"], "link_down": parsed["link_down"], "received_bits": None}
    source = "ethtool -S %s" % name
    missing = [key for key in ETH_PHY.values() if key not in (ethtool or {})]
    if missing:
        return {"source": source, "read_at": read_at,
                "error": "no %s (the mlx5 PHY statistical counters)" % ", ".join(missing)}
    out = {key: ethtool[counter] for key, counter in ETH_PHY.items()}
    return dict(out, source=source, read_at=read_at, received_bits=ethtool.get("rx_bits_phy"))


_COUNTER_RE = re.compile(r"([a-z0-9_]+):\s+(\d+)", re.ASCII)
_GTS_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?) ?GT/s(?: PCIe)?", re.ASCII)


def counters(host, name):
    """The mlx5 driver's PHY counters of the netdev (``ethtool -S``), the ones the gate reads; {} without ethtool."""
    rc, out, _err = _try(host, ["ethtool", "-S", name])
    if rc != 0:
        return {}
    found = {}
    for line in (out or "").splitlines():
        match = _COUNTER_RE.fullmatch(line.strip())
        if match and match.group(1) in COUNTERS:
            found[match.group(1)] = int(match.group(2))
    return found


def pcie_link(host, name):
    """The negotiated and the capable PCIe link of the netdev's device (sysfs ``current_link_*``/``max_link_*``)."""
    pci = host.pci_of(name) or host.netdev_pci().get(name)
    if not pci:
        return None
    base = "/sys/bus/pci/devices/%s" % pci
    values = {key: host.read_sys("%s/%s" % (base, key)) for key in
              ("current_link_speed", "max_link_speed", "current_link_width", "max_link_width")}
    if not any(values.values()):
        return {"pci": pci}

    def gts(text):
        match = _GTS_RE.fullmatch((text or "").strip())
        return float(match.group(1)) if match else None

    def width(text):
        try:
            return int(text)
        except (TypeError, ValueError):
            return None
    return {"pci": pci, "speed": gts(values["current_link_speed"]), "max_speed": gts(values["max_link_speed"]),
            "width": width(values["current_link_width"]), "max_width": width(values["max_link_width"])}


def qos(host, name):
    """Trust and the priorities with PFC on (``mlnx_qos -i``); None without the tool."""
    rc, out, _err = _try(host, ["mlnx_qos", "-i", name])
    if rc != 0:
        return None
    try:
        parsed = parse_mlnx_qos(out)
    except ParseError:
        return None
    enabled = (parsed.get("pfc") or {}).get("enabled") or []
    return {"trust": parsed.get("trust"), "pfc": [prio for prio, on in enumerate(enabled) if on]}


def mgmt_facts(host, interface=None):
    """The management interface (given, else the one of the default route) and its IPv4 address: where NCCL's
    bootstrap (NCCL_COMM_ID) listens, as NCCL_SOCKET_IFNAME has it on a real cluster."""
    if interface:
        _word(interface, "mgmt_interface", IFNAME_RE, "a network interface name")
    else:
        routes = _ip_json(host, ["ip", "-4", "-j", "route", "show", "default"])
        interface = next((r.get("dev") for r in routes if r.get("dev")), None)
    if not interface:
        return {"interface": None, "address": None, "network": None}
    info = _inet(host, interface)
    network = None
    if info:
        try:
            network = str(ipaddress.ip_network("%s/%s" % (info["local"], info.get("prefixlen", 32)), strict=False))
        except ValueError:
            network = None
    return {"interface": interface, "address": info.get("local"), "network": network}


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


# ------------------------------------------------------------------------------------------------ running
def run_path(run_dir: str, run_id: str) -> str:
    path = os.path.join(run_dir, _word(run_id, "run_id"))
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


LINK_LAYERS = ("InfiniBand", "Ethernet")


def link_layer_error(job, rdma, layer):
    """None when perftest's options are known for ``layer``; else the error of the rail (fail closed: an unknown
    link layer is not guessed)."""
    if layer in LINK_LAYERS:
        return None
    words = ("%s: rail %s (%s, %s): link layer %r is not one of %s (ibstat's \"Link layer\"), so perftest's options "
             "are not known and the rail is not measured")
    return words % (_hostname(), job.get("rail"), job["interface"], rdma, layer, " or ".join(LINK_LAYERS))


def _hostname():
    return socket.gethostname()


def perftest_argv(test, rdma, opts, port, server=None, link_layer="Ethernet"):
    """perftest's argv for a rail of ``link_layer``: RoCE (Ethernet) with the GID index (``-x``) and, when set, the
    ToS (``-T``); InfiniBand without either (perftest addresses by LID). Any other link layer: FabricTestError."""
    if link_layer not in LINK_LAYERS:
        raise FabricTestError("link_layer: %r is not one of %s" % (link_layer, " or ".join(LINK_LAYERS)),
                              parameter="link_layer")
    size = opts["lat_size"] if test.endswith("_lat") else opts["size"]
    argv = [test, "-d", rdma]
    if link_layer == "Ethernet":
        argv += ["-x", str(opts["gid_index"])]
    argv += ["-s", str(size), "-p", str(port), "-F"]
    if test.endswith("_bw"):
        argv += ["-q", str(opts["qps"]), "-D", str(opts["duration"]), "--report_gbits"]
    else:
        argv += ["-D", str(max(1, opts["duration"] // 2))]
    if link_layer == "Ethernet" and opts.get("tos") is not None:
        argv += ["-T", str(opts["tos"])]
    if server:
        argv.append(server)
    return argv


def _start(host, base, argv, env=None):
    """Start ``argv`` detached through the wrapper; its files are ``base.out``, ``base.err``, ``base.rc``."""
    binary = host.which(argv[0])
    if not binary:
        return {"error": "%s is not installed on this host" % argv[0]}
    for suffix in (".out", ".err", ".rc"):
        try:
            os.unlink(base + suffix)
        except FileNotFoundError:
            pass
    full_env = dict(os.environ, LANG="C", LC_ALL="C", **(env or {}))
    pid = host.spawn([sys.executable, "-c", WRAPPER, base + ".out", base + ".err", base + ".rc", binary] + argv[1:],
                     env=full_env)
    with open(base + ".pid", "w") as fh:
        fh.write("%d\n" % pid)
    return {"pid": pid, "base": base}


def serve(host, jobs, opts, path):
    ports = host.rdma_ports()
    started = []
    for job in jobs:
        rdma, port = ports.get(job["interface"], (None, None))
        layer = ibstat_port(host, rdma, port)[1] if rdma else None
        for i, test in enumerate(job["tests"]):
            entry = {"rail": job.get("rail"), "interface": job["interface"], "test": test, "port": job["port"] + i,
                     "link_layer": layer}
            unknown = link_layer_error(job, rdma, layer) if rdma else None
            if not rdma:
                entry["error"] = "%s: no RDMA device (ibdev2netdev names none for it)" % job["interface"]
            elif unknown:
                entry["error"] = unknown
            else:
                base = os.path.join(path, "server-%s-%s" % (job["interface"], test))
                argv = perftest_argv(test, rdma, opts, job["port"] + i, link_layer=layer)
                entry.update(_start(host, base, argv))
                entry["argv"] = argv
            started.append(entry)
    return started


def _client(host, test, rdma, opts, port, peer, link_layer):
    argv = perftest_argv(test, rdma, opts, port, peer, link_layer)
    timeout = opts["duration"] * 3 + 60
    rc, out, err = 1, "", ""
    for attempt in range(opts["retries"] + 1):
        rc, out, err = _try(host, argv, timeout=timeout)
        if rc == 0 or not CONNECT_RETRY_RE.search(err or "") or attempt == opts["retries"]:
            break
        time.sleep(opts["delay"])
    result = {"test": test, "argv": argv, "rc": rc, "attempts": attempt + 1, "stderr": (err or "").strip()[-2000:]}
    try:
        result["report"] = parse_perftest((out or "") + "\n" + (err or ""))
    except ParseError as exc:
        result["report"] = None
        result["parse_error"] = str(exc)
    return result


def _ping(host, address, peer, count):
    argv = ["ping", "-n", "-q", "-c", str(count), "-i", "0.2", "-W", "1"]
    if address:
        argv += ["-I", address]
    rc, out, _err = _try(host, argv + [peer], timeout=count + 10)
    match = re.search(r"(\d+) packets transmitted, (\d+) received", out or "")
    sent, got = (int(match.group(1)), int(match.group(2))) if match else (count, 0)
    return {"ok": rc == 0 and got == sent, "sent": sent, "received": got}


def measure(host, jobs, opts):
    ports = host.rdma_ports()
    facts = rail_facts(host, [job["interface"] for job in jobs], phy=False)

    def one(job):
        fact = facts[job["interface"]]
        out = {"rail": job.get("rail"), "interface": job["interface"], "peer": job.get("peer"),
               "peer_address": job["peer_address"], "facts": fact,
               "ping": _ping(host, fact["address"], job["peer_address"], opts["ping_count"]), "tests": []}
        rdma = ports.get(job["interface"], (None, None))[0]
        if not rdma:
            out["error"] = "%s: no RDMA device (ibdev2netdev names none for it)" % job["interface"]
            return out
        error = link_layer_error(job, rdma, fact["link_layer"])
        if error:
            # fail closed: every test of the rail is a failed test with this error (the gate quarantines on it)
            out["error"] = error
            out["tests"] = [{"test": test, "argv": None, "rc": None, "attempts": 0, "stderr": error,
                             "report": {"results": [], "errors": [error], "warnings": []}} for test in job["tests"]]
            return out
        for i, test in enumerate(job["tests"]):
            out["tests"].append(_client(host, test, rdma, opts, job["port"] + i, job["peer_address"],
                                        fact["link_layer"]))
        return out

    with ThreadPoolExecutor(max_workers=max(1, min(16, len(jobs)))) as pool:
        return list(pool.map(one, jobs))


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _finish(base, timeout, kill=True):
    """Wait for the process of ``base`` up to ``timeout`` s; its rc (None: stopped), stdout and stderr."""
    try:
        with open(base + ".pid") as fh:
            pid = int(fh.read().strip())
    except (OSError, ValueError):
        return {"rc": None, "stdout": "", "stderr": "", "stopped": False, "missing": True}
    end = time.monotonic() + timeout
    while not os.path.exists(base + ".rc") and time.monotonic() < end and _alive(pid):
        time.sleep(0.1)
    stopped = False
    if not os.path.exists(base + ".rc") and kill and _alive(pid):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            time.sleep(0.2)
        stopped = True
    rc = None
    try:
        with open(base + ".rc") as fh:
            rc = int(fh.read().strip())
    except (OSError, ValueError):
        pass

    def text(suffix):
        try:
            with open(base + suffix, "rb") as fh:
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""
    return {"rc": rc, "stdout": text(".out"), "stderr": text(".err"), "stopped": stopped}


def collect(jobs, path, timeout):
    """Each server of ``jobs``: waited for until ONE deadline ``timeout`` s from now (servers whose client never came -
    a rail down - cost the round ``timeout`` once, not once each), then stopped."""
    out = []
    end = time.monotonic() + timeout
    for job in jobs:
        for test in job.get("tests") or ["ib_write_bw", "ib_write_lat"]:
            base = os.path.join(path, "server-%s-%s" % (job["interface"], test))
            done = _finish(base, max(0.0, end - time.monotonic()))
            entry = {"rail": job.get("rail"), "interface": job["interface"], "test": test, "rc": done["rc"],
                     "stopped": done["stopped"], "stderr": done["stderr"].strip()[-2000:]}
            try:
                entry["report"] = parse_perftest(done["stdout"] + "\n" + done["stderr"])
            except ParseError:
                entry["report"] = None
            out.append(entry)
    return out


def _nccl_test(test):
    """``test`` when it is one of the NCCL tests the gate runs, else FabricTestError naming them."""
    if test not in NCCL_TESTS:
        raise FabricTestError("nccl.test: %r is not one of %s" % (test, ", ".join(NCCL_TESTS)), parameter="nccl")
    return test


def nccl_argv(test, args):
    argv = [test]
    for word in args:
        _word(word, "nccl.args", re.compile(r"[A-Za-z0-9_.=/-]{1,64}", re.ASCII), "an nccl-tests option or value")
        argv.append(word)
    return argv


def nccl_start(host, jobs, test, args, env, path):
    """Start this host's ranks alone (no launcher): for one local rank (the library's version) - ranks started
    this way are each a world of one, as the real binary's MPI_Init makes them."""
    _nccl_test(test)
    checked = _checked_env(env)
    started = []
    for job in jobs:
        rank_env = dict(checked, NCCL_IB_HCA=job["hca"])
        base = os.path.join(path, "nccl-rank%d" % job["rank"])
        entry = {"rank": job["rank"], "local_rank": job["local_rank"], "hca": job["hca"]}
        entry.update(_start(host, base, nccl_argv(test, args), env=rank_env))
        started.append(entry)
    return started


def nccl_collect(jobs, path, timeout):
    """Each rank of ``jobs`` (of this host alone) waited for until one deadline ``timeout`` s from now, as collect."""
    out = []
    end = time.monotonic() + timeout
    for job in jobs:
        done = _finish(os.path.join(path, "nccl-rank%d" % job["rank"]), max(0.0, end - time.monotonic()))
        entry = {"rank": job["rank"], "rc": done["rc"], "stopped": done["stopped"],
                 "stderr": done["stderr"].strip()[-2000:], "stdout": done["stdout"][-20000:]}
        if job["rank"] == 0 or done["rc"]:
            try:
                entry["report"] = parse_nccl_tests(done["stdout"] + "\n" + done["stderr"])
            except ParseError:
                entry["report"] = None
        out.append(entry)
    return out


def _checked_env(env):
    checked = {}
    for key, value in dict(env or {}).items():
        _word(key, "nccl.env key", ENV_RE, "NCCL_*, OMPI_* or UCX_* names")
        if not isinstance(value, (str, int)) or not ENV_VALUE_RE.fullmatch(str(value)):
            raise FabricTestError("nccl.env.%s: %r is not allowed (letters, digits and _ . , : = ^ %% & | / + - "
                                  "space)" % (key, value), parameter="nccl")
        checked[key] = str(value)
    return checked


def check_launch(launch: Mapping) -> dict:
    """The launch of an NCCL world from this host (every problem at once): ``launcher`` (mpirun or srun),
    ``contexts`` - one per member host in rank order, each ``host`` (its name, reported back), ``address`` (what
    mpirun reaches it by: an IPv4 address or a host name), ``node`` (its Slurm node name, srun's; default the host
    name), ``slots`` (its ranks, one per GPU) and ``hca`` (its ranks' RDMA devices, NCCL_IB_HCA) -, ``bind_to``
    (none, numa, socket, core; default numa) and ``subnet`` (the CIDR the launcher's own TCP traffic keeps to - the
    management network - or None)."""
    if not isinstance(launch, Mapping):
        raise FabricTestError("launch: must be a mapping", parameter="launch")
    problems = []
    launcher = launch.get("launcher", "mpirun")

    def check(fn, *args):
        try:
            return fn(*args)
        except FabricTestError as err:
            problems.append(err)
            return None
    known = {"launcher", "contexts", "bind_to", "subnet"}
    unknown = sorted(set(map(str, launch)) - known)
    if unknown:
        problems.append(FabricTestError("launch: %s not known (allowed: %s)"
                                        % (", ".join(unknown), ", ".join(sorted(known))), parameter="launch"))
    if launcher not in LAUNCHERS:
        problems.append(FabricTestError("launch.launcher: %r is not one of %s" % (launcher, ", ".join(LAUNCHERS)),
                                        parameter="launch"))
    bind_to = launch.get("bind_to") or "numa"
    if bind_to not in BIND_TO:
        problems.append(FabricTestError("launch.bind_to: %r is not one of %s" % (bind_to, ", ".join(BIND_TO)),
                                        parameter="launch"))
    subnet = launch.get("subnet")
    if subnet is not None:
        check(_word, subnet, "launch.subnet", CIDR_RE, "an IPv4 network in CIDR notation such as 198.19.0.0/16")
    contexts = launch.get("contexts")
    out = []
    if not isinstance(contexts, Sequence) or isinstance(contexts, (str, bytes)) or len(contexts) < 2:
        problems.append(FabricTestError("launch.contexts: must be a list of at least 2 member hosts",
                                        parameter="launch"))
        contexts = []
    for i, ctx in enumerate(contexts):
        where = "launch.contexts[%d]" % i
        if not isinstance(ctx, Mapping):
            problems.append(FabricTestError("%s: must be a mapping" % where, parameter="launch"))
            continue
        check(_word, ctx.get("host"), where + ".host", HOST_RE, "a host name")
        check(_word, ctx.get("address"), where + ".address", HOST_RE, "an IPv4 address or a host name")
        node = ctx.get("node") if ctx.get("node") is not None else ctx.get("host")
        if launcher == "srun":
            check(_word, node, where + ".node", SLURM_NODE_RE,
                  "a Slurm node name: a letter or digit, then letters, digits, '.', '_', '-' (one name, not a "
                  "hostlist expression)")
        slots = check(_int, ctx.get("slots"), where + ".slots", 1, 64)
        hcas = ctx.get("hca")
        if not isinstance(hcas, Sequence) or isinstance(hcas, (str, bytes)) or not hcas or (
                slots is not None and len(hcas) != slots):
            problems.append(FabricTestError("%s.hca: must list one RDMA device per slot (%s), not %r"
                                            % (where, slots, hcas), parameter="launch"))
        else:
            for j, hca in enumerate(hcas):
                check(_word, hca, "%s.hca[%d]" % (where, j), RDMA_RE, "an RDMA device name such as mlx5_0")
        out.append({"host": ctx.get("host"), "address": ctx.get("address"), "node": node, "slots": slots,
                    "hca": list(hcas) if isinstance(hcas, Sequence) else []})
    if problems:
        raise MlnxError.combine(problems)
    if launcher == "srun" and len({c["node"] for c in out}) != len(out):
        raise FabricTestError("launch.contexts: a Slurm node named twice (%s): a world's members are distinct nodes"
                              % ", ".join(c["node"] for c in out), parameter="launch")
    return {"launcher": launcher, "contexts": out, "bind_to": bind_to, "subnet": subnet}


def mpirun_argv(mpirun, launch, test, args, env, as_root=False, prefix=None):
    """Open MPI's mpirun for one NCCL world, one app context per member host (ranks in the contexts' order, each
    context's ranks with its own NCCL_IB_HCA). Why each option:

    - ``--allow-run-as-root`` only when the gate runs as root (Open MPI refuses root without it);
    - ``--prefix`` the installation of an mpirun found in gpufabric_validate_paths (Open MPI then sets the members'
      PATH and LD_LIBRARY_PATH to it before it starts its daemon there);
    - ``--bind-to`` the launch's (default numa: each rank on the NUMA node mpirun maps it to);
    - ``--mca plm_rsh_args "-o BatchMode=yes"``: the daemons start over SSH, and a missing key or host key fails at
      once instead of waiting at a prompt;
    - ``--mca pml ob1 --mca btl self,tcp``: nccl-tests uses MPI only to start (the bootstrap, barriers); MPI's own
      traffic stays on TCP and off the RDMA devices the test measures (no UCX/openib on them);
    - ``--mca btl_tcp_if_include`` / ``oob_tcp_if_include`` the management subnet when known: the launcher's and
      MPI's TCP on the management network, not on a rail under test;
    - ``-x`` each NCCL variable of the world (values checked by ENV_VALUE_RE: no shell sees them) and ``PATH``.
    """
    argv = [mpirun]
    if as_root:
        argv.append("--allow-run-as-root")
    if prefix:
        argv += ["--prefix", prefix]
    argv += ["--bind-to", launch["bind_to"], "--mca", "plm_rsh_args", "-o BatchMode=yes",
             "--mca", "pml", "ob1", "--mca", "btl", "self,tcp"]
    if launch.get("subnet"):
        argv += ["--mca", "btl_tcp_if_include", launch["subnet"], "--mca", "oob_tcp_if_include", launch["subnet"]]
    for i, ctx in enumerate(launch["contexts"]):
        if i:
            argv.append(":")
        argv += ["-np", str(ctx["slots"]), "-H", "%s:%d" % (ctx["address"], ctx["slots"]), "-x", "PATH",
                 "-x", "NCCL_IB_HCA=%s" % ",".join(ctx["hca"])]
        for key in sorted(env):
            argv += ["-x", "%s=%s" % (key, env[key])]
        argv += nccl_argv(test, args)
    return argv


def srun_argv(srun, launch, test, args, env, reservation=None, minutes=None):
    """Slurm's srun for one NCCL world: one heterogeneous job component per member host (``:`` between them), so
    that each member's ranks get its own NCCL_IB_HCA while Slurm's mpi/pmix plugin makes all of them one
    MPI_COMM_WORLD (ranks in the components' order: member x GPUs + local rank). Why each option:

    - ``--mpi=pmix``: the ranks learn their rank and size from the PMIx server of Slurm's step daemon, as from
      mpirun's (without it Open MPI's MPI_Init fails under srun: "direct launched using srun" - measured);
    - ``--reservation`` the maintenance reservation the gate holds on the world's nodes (srun_runner), ``--time``
      the gate's timeout in minutes (Slurm itself ends the job after it), ``--job-name`` gpufabric-gate;
    - ``--nodelist`` one member's Slurm node, ``--nodes=1``, ``--ntasks-per-node`` its GPUs (one rank each),
      ``--distribution=block`` (consecutive ranks on a node) and ``--cpu-bind`` the gate's bind_to (numa:
      ``ldoms``, socket: ``sockets``, core: ``cores``, none: ``none``);
    - ``--kill-on-bad-exit=1``: a rank that fails ends the world instead of leaving the others waiting;
    - ``--export=ALL`` (the environment srun runs with: PATH), and the world's variables as ``env NAME=VALUE``
      words before the test on each component: srun's --export list is split at commas, and NCCL_IB_HCA's list
      has them (measured: ``--export=ALL,NCCL_IB_HCA=mlx5_0,mlx5_1`` gave the ranks ``mlx5_0``).
    """
    cpu_bind = SRUN_CPU_BIND[launch["bind_to"]]
    argv = [srun]
    for i, ctx in enumerate(launch["contexts"]):
        if i:
            argv.append(":")
        argv += ["--mpi=pmix", "--job-name=gpufabric-gate"]
        if reservation:
            argv.append("--reservation=" + reservation)
        if minutes:
            argv.append("--time=%d" % minutes)
        argv += ["--export=ALL", "--kill-on-bad-exit=1", "--nodelist=" + ctx["node"], "--nodes=1",
                 "--ntasks-per-node=%d" % ctx["slots"], "--distribution=block", "--cpu-bind=" + cpu_bind,
                 "env", "NCCL_IB_HCA=%s" % ",".join(ctx["hca"])]
        argv += ["%s=%s" % (key, env[key]) for key in sorted(env)]
        argv += nccl_argv(test, args)
    return argv


# The srun launcher's allocation, run detached on the world's first member so that it is undone whatever happens to
# the play: argv = [python, -c, SRUN_RUNNER, spec.json]. In order: a maintenance reservation of the world's nodes for
# the gate's user (no other job starts there while it lasts), the drained ones resumed into it, srun in it (its
# output to spec out/err), then - in a finally, on SIGTERM too - every node drained again with its own reason, the
# reservation deleted, and the nodes read until each is as it was (20 s). Each Slurm command and its answer goes to
# spec log (JSON), which nccl_collect reads and judges (srun_report); the rc file is written last.
SRUN_RUNNER = r"""import json, os, pwd, signal, subprocess, sys, time
spec = json.load(open(sys.argv[1]))
sys.stderr = open(spec["log"] + ".stderr", "w")
log = {"steps": [], "srun_rc": None}
def save():
    open(spec["log"] + ".tmp", "w").write(json.dumps(log))
    os.replace(spec["log"] + ".tmp", spec["log"])
def call(step, argv):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except (OSError, subprocess.SubprocessError) as exc:
        rc, out, err = None, "", str(exc)
    log["steps"].append({"step": step, "argv": argv, "rc": rc, "stdout": out[-2000:], "stderr": err[-2000:]})
    save()
    return rc == 0
def stop(signum, frame):
    raise SystemExit(143)
signal.signal(signal.SIGTERM, stop)
nodes, before, name = spec["nodes"], spec["before"], spec["reservation"]
drained = [n for n in nodes if before[n]["out"]]
created = resumed = False
try:
    created = call("reserve", ["scontrol", "create", "reservation", "ReservationName=" + name, "StartTime=now",
                               "Duration=%d" % spec["duration"], "Nodes=" + ",".join(nodes),
                               "Users=" + pwd.getpwuid(os.geteuid()).pw_name, "Flags=MAINT"])
    if created and drained:
        resumed = True
        created = call("resume", ["scontrol", "update", "NodeName=" + ",".join(drained), "State=RESUME"])
    if created:
        with open(spec["out"], "wb") as fo, open(spec["err"], "wb") as fe:
            p = subprocess.Popen(spec["srun"], stdout=fo, stderr=fe)
            try:
                log["srun_rc"] = p.wait(timeout=spec["timeout"])
            except subprocess.TimeoutExpired:
                log["srun_stopped"] = True
                p.terminate()
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        save()
finally:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)   # a second SIGTERM does not cut the giving back short
    if resumed:
        for n in drained:
            call("drain", ["scontrol", "update", "NodeName=" + n, "State=DRAIN", "Reason=" + before[n]["reason"]])
    if created or any(s["step"] == "reserve" and s["rc"] == 0 for s in log["steps"]):
        call("release", ["scontrol", "delete", "ReservationName=" + name])
    argv = ["sinfo", "--noheader", "--Node", "--nodes=" + ",".join(nodes), "--format=%N|%T|%E"]
    same = spec["same"]
    end = time.monotonic() + 20
    while True:
        try:
            text = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            text = "error: %s" % exc
        log["after"] = text
        seen = dict((f[0], [same.get(f[1], f[1]), f[2]]) for f in (ln.split("|", 2) for ln in text.splitlines())
                    if len(f) == 3)
        if all(seen.get(n) == [same.get(before[n]["state"], before[n]["state"]), before[n]["reason"] or "none"]
               for n in nodes) or \
                time.monotonic() > end:
            break
        time.sleep(1)
    save()
    open(spec["rc"] + ".tmp", "w").write(str(log["srun_rc"] if log["srun_rc"] is not None else 255))
    os.replace(spec["rc"] + ".tmp", spec["rc"])
"""
# Slurm node states the srun launcher takes a node in: no job there, and only Slurm's own or the rollout's drain
# (a node in another reservation, down, not responding or running a job is refused, named). ``planned``: an idle
# node the backfill scheduler plans a pending job on - Slurm 22.05 shows it for up to a backfill cycle after a
# heterogeneous job ended on it (measured: planned, then idle 30 s later, with no job queued); it counts as idle.
SRUN_TAKES = ("idle", "drained", "planned")
SRUN_SAME = {"planned": "idle"}


def _srun_start(host, launch, test, args, env, path, run_id, timeout):
    """Check the world's nodes in Slurm, then start SRUN_RUNNER detached; ``{"error": ...}`` naming the node and
    Slurm's answer when a node cannot be taken (nothing changed then)."""
    nodes = [ctx["node"] for ctx in launch["contexts"]]
    try:
        before = Slurm(lambda argv: host.run(argv, check=False, timeout=60)).read(nodes)
    except MlnxError as err:
        return {"error": "Slurm cannot say the state of the world's nodes (nothing was changed): %s" % err}
    refused = ["%s is %s%s" % (n, e["state"], " (reason: %s)" % e["reason"] if e["reason"] else "")
               for n, e in before.items() if e["busy"] or not e["responding"] or e["state"] not in SRUN_TAKES
               or (e["out"] and not e["reason"])]
    if refused:
        return {"error": "the srun launcher takes only idle or drained nodes that run no job (nothing was changed): "
                         + "; ".join(refused)}
    base = os.path.join(path, "launch")
    minutes = max(1, -(-int(timeout) // 60)) + 1
    # one per world: the worlds of a stage start at once, each on its own first member (measured: a second
    # reservation of the same name gets "Error creating the reservation: Duplicate reservation name")
    reservation = "gpufabric-%s-%s" % (run_id, nodes[0])
    binary = host.which(test)
    argv = srun_argv("srun", launch, binary, args, env, reservation=reservation, minutes=minutes)
    spec = {"nodes": nodes, "before": {n: {"state": e["state"], "reason": e["reason"], "out": e["out"]}
                                       for n, e in before.items()},
            "reservation": reservation, "duration": minutes + 5, "same": SRUN_SAME, "timeout": int(timeout) + 120,
            "srun": argv,
            "out": base + ".out", "err": base + ".err", "rc": base + ".rc", "log": base + ".slurm.json"}
    for suffix in (".out", ".err", ".rc", ".slurm.json"):
        try:
            os.unlink(base + suffix)
        except FileNotFoundError:
            pass
    with open(base + ".spec.json", "w") as fh:
        json.dump(spec, fh)
    extra = list(getattr(host, "extra_path", []) or [])
    full_env = dict(os.environ, LANG="C", LC_ALL="C")
    if extra:
        full_env["PATH"] = os.pathsep.join(extra + [os.environ.get("PATH", "")])
    pid = host.spawn([sys.executable, "-c", SRUN_RUNNER, base + ".spec.json"], env=full_env)
    with open(base + ".pid", "w") as fh:
        fh.write("%d\n" % pid)
    return {"pid": pid, "base": base, "argv": argv, "reservation": reservation,
            "ranks": sum(ctx["slots"] for ctx in launch["contexts"]),
            "nodes": {n: {"state": e["state"], "reason": e["reason"]} for n, e in before.items()}}


def srun_report(log, nodes_before, first=None):
    """The errors of the srun launcher's allocation (SRUN_RUNNER's log): each Slurm command that failed, named with
    the nodes and Slurm's own words, and each node whose state or reason afterwards is not the one it had."""
    errors, where = [], " on %s" % first if first else ""
    nodes = sorted(nodes_before)
    for step in log.get("steps") or []:
        if step.get("rc") != 0:
            words = [ln.strip() for ln in (step.get("stderr") or step.get("stdout") or "").splitlines() if ln.strip()]
            errors.append("Slurm%s: %s for %s failed (rc=%s): %s" % (where, " ".join(step["argv"][:3]), ", ".join(
                nodes), step.get("rc"), words[-1] if words else "no message"))
        elif step.get("step") == "reserve" and not re.fullmatch(r"Reservation created: [A-Za-z0-9_.-]+\s*",
                                                                step.get("stdout") or ""):
            errors.append("Slurm%s: scontrol create reservation for %s answered %r, which gpufabric does not know"
                          % (where, ", ".join(nodes), (step.get("stdout") or "").strip()[:200]))
    after = {}
    for line in (log.get("after") or "").splitlines():
        fields = line.split("|", 2)
        if len(fields) == 3:
            after[fields[0]] = {"state": fields[1], "reason": None if fields[2] in ("none", "") else fields[2]}
    for node in nodes:
        was, now = nodes_before[node], after.get(node)
        if now is None:
            errors.append("Slurm%s: node %s could not be read after the run (sinfo: %s); it was %s" % (
                where, node, (log.get("after") or "no answer").strip()[:200], _node_words(was)))
        elif (SRUN_SAME.get(now["state"], now["state"]), now["reason"]) != (
                SRUN_SAME.get(was["state"], was["state"]), was["reason"]):
            errors.append("Slurm%s: node %s is %s after the run, it was %s" % (
                where, node, _node_words(now), _node_words(was)))
    return errors, after


def _node_words(entry):
    return "%s%s" % (entry["state"], " (reason: %s)" % entry["reason"] if entry.get("reason") else "")


def nccl_launch(host, launch, test, args, env, path, run_id=None, timeout=300):
    """Start the launcher of one NCCL world from this host (detached; its files ``launch.out/.err/.rc``, or
    ``launch.error`` when it could not start); ``launch``: check_launch's."""
    _nccl_test(test)
    checked = _checked_env(env)
    checked.pop("NCCL_IB_HCA", None)   # per context
    base = os.path.join(path, "launch")
    for suffix in (".error", ".pid"):
        try:
            os.unlink(base + suffix)
        except FileNotFoundError:
            pass
    binary = host.which(test)
    error = None if binary else "%s is not installed on this host (%s)" % (test, NCCL_PACKAGE)
    for tool, package in LAUNCHER_TOOLS[launch["launcher"]].items():
        if not error and tool != "ssh" and not host.which(tool):
            error = "%s is not installed on this host (%s)" % (tool, package)
    started = {}
    if not error and launch["launcher"] == "srun":
        started = _srun_start(host, launch, test, args, checked, path, run_id or "gate", timeout)
        error = started.get("error")
    elif not error:
        mpirun = host.which("mpirun")
        # nccl-tests at the same path on every member (mpirun starts that path there). Open MPI found in one of
        # gpufabric_validate_paths: --prefix its installation, so that the members' daemons are found there too (a
        # non-interactive SSH login's PATH does not have it), and -x PATH carries those directories
        extra = list(getattr(host, "extra_path", []) or [])
        prefix = os.path.dirname(os.path.dirname(mpirun)) if os.path.dirname(mpirun) in extra else None
        argv = mpirun_argv("mpirun", launch, binary, args, checked, as_root=os.geteuid() == 0, prefix=prefix)
        env = {"PATH": os.pathsep.join(extra + [os.environ.get("PATH", "")])} if extra else None
        started = dict(_start(host, base, argv, env=env), argv=argv,
                       ranks=sum(ctx["slots"] for ctx in launch["contexts"]))
        error = started.get("error")
    if error:
        with open(base + ".error", "w") as fh:   # for nccl_collect, which reports it
            fh.write(error)
        return {"launcher": launch["launcher"], "error": error}
    return dict(started, launcher=launch["launcher"])


# How long nccl_collect waits for the srun launcher beyond the gate's timeout: its own stop of srun (30 s) and the
# allocation's undoing (Slurm commands of up to 60 s each, then 20 s of reads).
SRUN_GRACE = 240


def nccl_launch_collect(path, timeout, launch=None):
    """The launcher's exit code, its output (rank 0's report: nccl-tests prints it through the launcher's stdout)
    parsed, and the last lines of its error output (where the launcher says why a daemon or a rank failed). srun's
    is never stopped from here (its runner undoes the allocation, then ends): its allocation's errors and the nodes'
    states before and after are reported (``slurm``, ``errors``)."""
    base = os.path.join(path, "launch")
    try:
        with open(base + ".error") as fh:
            return {"rc": None, "stopped": False, "missing": True, "error": fh.read(), "stderr": "", "stdout": "",
                    "report": None}
    except FileNotFoundError:
        pass
    srun = (launch or {}).get("launcher") == "srun"
    done = _finish(base, timeout + SRUN_GRACE if srun else timeout, kill=not srun)
    entry = {"rc": done["rc"], "stopped": done["stopped"], "missing": bool(done.get("missing")),
             "stderr": done["stderr"].strip()[-4000:], "stdout": done["stdout"][-20000:]}
    if srun:
        entry.update(_srun_collect(base, done))
    try:
        entry["report"] = parse_nccl_tests(done["stdout"] + "\n" + done["stderr"])
    except ParseError:
        entry["report"] = None
    return entry


def _srun_collect(base, done):
    """The srun launcher's allocation as its runner logged it: ``slurm`` (reservation, nodes before and after, the
    Slurm commands and their rc) and ``errors`` (srun_report's, and a runner that did not finish)."""
    try:
        with open(base + ".spec.json") as fh:
            spec = json.load(fh)
    except (OSError, ValueError):
        return {"errors": ["the srun launcher's files are gone (%s.spec.json)" % base], "slurm": None}
    try:
        with open(base + ".slurm.json") as fh:
            log = json.load(fh)
    except (OSError, ValueError):
        log = {}
    before = {n: {"state": e["state"], "reason": e["reason"]} for n, e in spec["before"].items()}
    errors, after = srun_report(log, before)
    if done["rc"] is None and not done.get("missing"):
        errors.append("the srun launcher did not finish within the gate's timeout and %d s more; its runner still "
                      "holds reservation %s (it drains the nodes again and deletes it when srun ends)"
                      % (SRUN_GRACE, spec["reservation"]))
    if log.get("srun_stopped"):
        errors.append("srun did not finish within the gate's timeout and was stopped")
    try:
        with open(base + ".slurm.json.stderr") as fh:
            crash = [ln.strip() for ln in fh.read().splitlines() if ln.strip()]
    except OSError:
        crash = []
    if crash:
        errors.append("the srun launcher's runner failed: %s" % crash[-1])
    steps = [{"step": st.get("step"), "argv": st.get("argv"), "rc": st.get("rc")} for st in log.get("steps") or []]
    return {"errors": errors, "slurm": {"reservation": spec["reservation"], "before": before, "after": after or None,
                                        "steps": steps}}


def tools(host, nccl_test: str | None = None, launcher: str = "mpirun", node: str | None = None) -> dict:
    """The gate's tools on this host's PATH (the module's, as the gate's own steps will see it): ``{"tools": {name:
    path or None}, "missing": ["NAME (PACKAGE)"]}``. ``nccl_test``: the NCCL test the gate runs (None: no NCCL), and
    with it what ``launcher`` needs - mpirun: ``mpirun``, ``ssh`` and Open MPI's daemon ``orted``; srun: ``srun``,
    ``sinfo``, ``scontrol``, ``slurmd``, Slurm's mpi/pmix plugin (``srun --mpi=list`` lists ``pmix``) and this
    host's Slurm node (``node``, default the host's name as the inventory has it) known to Slurm. [The daemon is
    looked up on the module's PATH; mpirun starts it through a non-interactive SSH login, whose PATH is the one that
    counts - the same on a distribution's package.]"""
    wanted = dict(GATE_TOOLS)
    if nccl_test is not None:
        _nccl_test(nccl_test)
        if launcher not in LAUNCHERS:
            raise FabricTestError("nccl.launcher: %r is not one of %s" % (launcher, ", ".join(LAUNCHERS)),
                                  parameter="nccl")
        if launcher == "srun" and node is not None:
            _word(node, "nccl.node", SLURM_NODE_RE, "a Slurm node name (one name, not a hostlist expression)")
        wanted[nccl_test] = NCCL_PACKAGE
        # any server can be a world's first member (it starts the launcher) and is a member of some world
        wanted.update(LAUNCHER_TOOLS[launcher])
        wanted.update(MEMBER_TOOLS[launcher])
    found = {name: host.which(name) or None for name in wanted}
    missing = ["%s (%s)" % (name, wanted[name]) for name in wanted if not found[name]]
    # the PHY error counters of an InfiniBand rail (phy_counters): MFT's mlxlink or mstflint's mstlink, either
    found["mlxlink"] = mlxlink_tool(host)[1]
    if not found["mlxlink"]:
        missing.append("mlxlink or mstlink (NVIDIA MFT or mstflint: the PHY error counters of an InfiniBand rail)")
    if nccl_test is not None and launcher == "srun" and found.get("srun"):
        missing += _srun_needs(host, node)
    return {"tools": found, "missing": missing}


# mpirun starts Open MPI's daemon on each member as `ssh <address> orted ...` with `--mca plm_rsh_args "-o
# BatchMode=yes"` (mpirun_argv): no password or host-key prompt. The preflight's check runs the same login.
SSH_CHECK = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=10")


def check_peers(peers) -> list[dict]:
    """ssh_check's peers: each ``{"name": inventory name, "address": what mpirun reaches it by}`` (an IPv4 address
    or a host name), every bad one named at once."""
    if not isinstance(peers, (list, tuple)):
        raise FabricTestError("peers: must be a list of {name, address}", parameter="peers")
    out, problems = [], []
    for i, peer in enumerate(peers):
        if not isinstance(peer, Mapping) or set(peer) - {"name", "address"}:
            problems.append("peers[%d]: %r is not {name, address}" % (i, peer))
            continue
        bad = [k for k in ("name", "address") if not isinstance(peer.get(k), str) or not HOST_RE.fullmatch(peer[k])]
        if bad:
            problems.append("peers[%d].%s: %r is not allowed (a host name or an IPv4 address)"
                            % (i, bad[0], peer.get(bad[0])))
            continue
        out.append({"name": peer["name"], "address": peer["address"]})
    if problems:
        raise FabricTestError("; ".join(problems), parameter="peers")
    return out


def ssh_check(host, peers, timeout=30) -> dict:
    """mpirun's way onto each peer: ``ssh -o BatchMode=yes -o ConnectTimeout=10 <address> true``, as mpirun starts
    its daemon there. ``{"ssh": [{"peer", "address", "ok", "rc", "error"}], "problems": [sentence per peer that
    cannot be reached, with ssh's own last words]}``."""
    out, problems = [], []
    ssh = host.which("ssh")
    for peer in peers:
        entry = {"peer": peer["name"], "address": peer["address"], "ok": False, "rc": None, "error": None}
        if not ssh:
            entry["error"] = "ssh (openssh-client) is not on the PATH"
        else:
            try:
                rc, text, err = host.run(["ssh", *SSH_CHECK, peer["address"], "true"], check=False, timeout=timeout)
            except MlnxError as exc:        # it did not finish in time: stopped
                rc, text, err = None, "", str(exc)
            words = [ln.strip() for ln in (err or text or "").splitlines() if ln.strip()]
            entry.update(rc=rc, ok=rc == 0,
                         error=None if rc == 0 else (" / ".join(words[-2:]) or "ssh exited %s" % rc))
        if not entry["ok"]:
            problems.append("mpirun cannot reach %s (%s) over SSH as it starts Open MPI's daemon there (ssh -o "
                            "BatchMode=yes %s true): %s"
                            % (peer["name"], peer["address"], peer["address"], entry["error"]))
        out.append(entry)
    return {"ssh": out, "problems": problems}


def _srun_needs(host, node):
    """What srun needs beyond its files: the mpi/pmix plugin, this host's Slurm node known to Slurm (and its
    slurmctld answering). Each a ``missing`` entry naming the command and Slurm's own words (fail closed)."""
    out = []
    rc, text, err = host.run(["srun", "--mpi=list"], check=False, timeout=60)
    # Slurm 22.05 prints "MPI plugin types are..." then one indented name per line (stdout or stderr by version)
    plugins = [ln.strip() for ln in ((text or "") + "\n" + (err or "")).splitlines()
               if ln[:1] in (" ", "\t") and re.fullmatch(r"[a-z0-9_]+", ln.strip(), re.ASCII)]
    if rc != 0:
        words = [ln.strip() for ln in (err or text or "").splitlines() if ln.strip()]
        out.append("%s (srun --mpi=list, rc=%s: %s)" % (PMIX_PLUGIN, rc, words[-1] if words else "no output"))
    elif "pmix" not in plugins:
        out.append("%s (srun --mpi=list lists: %s)" % (PMIX_PLUGIN, ", ".join(plugins) or "nothing it can read"))
    if node is not None:
        try:
            Slurm(lambda argv: host.run(argv, check=False, timeout=60)).read([node])
        except MlnxError as err:   # SlurmError, ToolFailed
            out.append("Slurm node %s (set gpufabric_drain_slurm_node to this server's Slurm node name): %s"
                       % (node, err))
    return out


def check_paths(paths) -> list[str]:
    """``paths``: absolute directories (no ``..``), searched before the PATH for the gate's tools."""
    if not isinstance(paths, Sequence) or isinstance(paths, (str, bytes)):
        raise FabricTestError("paths: must be a list of absolute directories, not %r" % (paths,), parameter="paths")
    for i, path in enumerate(paths):
        if not isinstance(path, str) or len(path) > 255 or not PATH_RE.fullmatch(path) or \
                ".." in path.split("/"):
            raise FabricTestError("paths[%d]: %r is not allowed (an absolute directory: / then letters, digits and "
                                  "_ . + - /, no '..')" % (i, path), parameter="paths")
    return [p.rstrip("/") or "/" for p in paths]


def with_paths(host, paths):
    """``host`` whose ``which`` looks in ``paths`` first (the site's directories for tools outside the PATH:
    gpufabric_validate_paths), then where it looked before."""
    if not paths:
        return host
    before = host.which

    def which(name):
        for folder in paths:
            candidate = os.path.join(folder, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
        return before(name)
    host.which = which
    host.extra_path = list(paths)
    return host


def run(host, params: Mapping, check_mode: bool = False) -> dict:
    """One step of the gate on this host; ``params``: action, jobs, options, run_id, run_dir, timeout, nccl, paths."""
    action = params.get("action")
    host = with_paths(host, check_paths(params.get("paths") or []))
    jobs = check_jobs(action, params.get("jobs") or [])
    opts = check_options(params.get("options") or {})
    # refused before anything starts, in check mode too; nccl_launch takes it checked
    launch = check_launch(params["launch"]) if params.get("launch") and action in ("nccl_start", "nccl_collect") \
        else None
    timeout = params.get("timeout") or 300
    if action == "facts":
        return {"changed": False, "rails": rail_facts(host, [job["interface"] for job in jobs]),
                "mgmt": mgmt_facts(host, params.get("mgmt_interface"))}
    if action == "tools":
        nccl = params.get("nccl") or {}
        out = dict(tools(host, nccl.get("test"), nccl.get("launcher", "mpirun"), nccl.get("node")), changed=False)
        if params.get("with_mgmt"):
            out["mgmt"] = mgmt_facts(host, params.get("mgmt_interface"))
        return out
    if action == "ssh_check":
        return dict(ssh_check(host, check_peers(params.get("peers") or [])), changed=False)
    if check_mode:
        return {"changed": False, "skipped": True, "msg": "check mode: the gate measures nothing"}
    path = run_path(params.get("run_dir") or "/run/gpufabric/gate", params.get("run_id"))
    nccl = dict(params.get("nccl") or {})
    if action == "serve":
        return {"changed": False, "servers": serve(host, jobs, opts, path)}
    if action == "measure":
        return {"changed": False, "rails": measure(host, jobs, opts)}
    if action == "collect":
        return {"changed": False, "servers": collect(jobs, path, timeout)}
    if action == "nccl_start" and launch:
        return {"changed": False,
                "launch": nccl_launch(host, launch, nccl.get("test", "all_reduce_perf"), nccl.get("args") or [],
                                      nccl.get("env") or {}, path, run_id=params.get("run_id"), timeout=timeout)}
    if action == "nccl_start":
        return {"changed": False, "ranks": nccl_start(host, jobs, nccl.get("test", "all_reduce_perf"),
                                                      nccl.get("args") or [], nccl.get("env") or {}, path)}
    if launch:
        return {"changed": False, "launch": nccl_launch_collect(path, timeout, launch)}
    return {"changed": False, "ranks": nccl_collect(jobs, path, timeout)}
