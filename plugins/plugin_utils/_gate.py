# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validation gate on the controller: what to test, the jobs of each step, and the verdict.

- ``thresholds(matrix, overrides)``: the limits of every measure (defaults below, then the matrix release's
  ``gate`` mapping, then the inventory's ``gpufabric_gate_thresholds``).
- ``under_test(hosts, fingerprints, previous, retest)``: who is measured this run - every host never passed, every
  quarantined host, every host whose fingerprint (what its rails look like) changed since it passed, and those
  named in ``retest``; the others are ``not_retested``.
- ``fingerprint(entries, facts, matrix_name)``: a stable digest of a host's rail plan entries and rail facts.
- ``jobs(pairs, host, round, direction, facts)``: the host's ``serve`` and ``measure`` jobs of one direction of a
  round (``forward``: the pair's server serves; ``reverse``: the client does); rail k's tests on ports
  ``port_base + 10 k`` and up.
- ``nccl_worlds(plan, groups, facts, ...)``: the NCCL runs (one world per group of hosts: rank = member x G + GPU,
  NCCL_COMM_ID on the first member's rail-0 address, NCCL_TESTS_SPLIT per rail) and each host's rank jobs.
- ``evaluate(...)``: the results document (schema 1, docs/validation.md) - per host and rail every measure with its
  threshold, the failures attributed to the host whose own evidence explains them, quarantine and hand-over lists.

Attribution. A pair measure (ping, ib_write_bw, ib_write_lat, the NCCL run) involves two hosts. It counts against
the host whose own facts on that rail explain it - link down, MTU other than the plan's, PCIe link below its
capability, PHY link-down events or symbol errors during the run, a cable that LLDP shows elsewhere, PFC other than
its leaf's - and against the peer when only the peer's do; when neither's facts explain it, against both, saying
that the pair could not be split. So a fault planted on one host quarantines that host alone.

Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
from collections.abc import Mapping

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._fabric_test import LAUNCHERS
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_keys import flag

SCHEMA = 1
DEFAULTS = {
    "write_bw_fraction": 0.9,          # ib_write_bw >= 0.9 x port rate (Mellanox/ngc_multinode_perf)
    "write_lat_factor": 1.5,           # ib_write_lat <= 1.5 x the fleet median
    "write_lat_usec": None,            # an absolute limit instead (null: from the median)
    "nccl_gbs_per_400g": 47.0,         # NCCL busbw per 400G NIC (nccl-tests#290: 46-48 GB/s)
    "nccl_fraction": 0.9,              # NCCL >= 0.9 x that (nccl-tests' NCCL_TESTS_MIN_BW rule, applied here)
    "nccl_min_size": 1 << 30,          # the rows the SU verdict averages (large messages)
    "link_flaps": 0,                   # link_down_events_phy during the run
    "symbol_errors": 0,                # rx_symbol_err_phy during the run
    "effective_errors": 0,             # post-FEC errors during the run (OCI HPC link_check: 0)
    "effective_ber": 1e-12,            # post-FEC BER (OCI HPC eth_link_check < 1e-12; UFM PDR's MAX_PDR 1e-12)
    "raw_ber": 1e-5,                   # pre-FEC BER (OCI HPC eth_link_check < 1e-5)
    "ber_confidence": 0.95,            # the confidence of the BER bound the report certifies
}
FACT_MEASURES = ("link", "link_layer", "mtu", "rate", "pcie", "link_flaps", "symbol_errors", "phy_counters",
                 "effective_errors", "effective_ber", "raw_ber", "lldp", "qos")
# the link layers whose perftest options the gate knows (fabric_test: -x/-T on Ethernet, none on InfiniBand)
LINK_LAYERS = ("InfiniBand", "Ethernet")
PORT_BASE = 18515
PORT_MIN, PORT_MAX = 1024, 65000   # room above for 16 rails x 10 ports
NCCL_PORT = 29500


class GateError(MlnxError):
    """Bad input of the gate's filters, named by the parameter."""


def _mapping(value, what):
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise GateError("%s: must be a mapping, got %s" % (what, type(value).__name__), parameter=what.split(".", maxsplit=1)[0])
    return dict(value)


# ------------------------------------------------------------------------------------------------ thresholds
def thresholds(matrix=None, overrides=None) -> dict:
    out = dict(DEFAULTS)
    for source, what in ((_mapping(matrix, "matrix").get("gate"), "matrix.gate"), (overrides, "thresholds")):
        for key, value in _mapping(source, what).items():
            if key not in DEFAULTS:
                raise GateError("%s.%s: not a threshold (allowed: %s)" % (what, key, ", ".join(sorted(DEFAULTS))),
                                parameter=what.split(".", maxsplit=1)[0])
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
                raise GateError("%s.%s: %r is not allowed (a number >= 0)" % (what, key, value),
                                parameter=what.split(".", maxsplit=1)[0])
            if key == "write_lat_usec" and value == 0:
                raise GateError("%s.%s: 0 is not allowed (an absolute latency limit in microseconds > 0, or null for "
                                "write_lat_factor x the run's median)" % (what, key),
                                parameter=what.split(".", maxsplit=1)[0])
            if key == "ber_confidence" and not (value is not None and 0 < value < 1):
                raise GateError("%s.%s: %r is not allowed (a confidence between 0 and 1, both excluded: 0.95)"
                                % (what, key, value), parameter=what.split(".", maxsplit=1)[0])
            out[key] = value
    return out


def nccl_per_rail(rate_gbps, limits) -> float:
    """The per-rail NCCL bus bandwidth floor (GB/s) for a port rate: 0.9 x 47 x rate / 400."""
    return applied_limit(limits["nccl_fraction"] * limits["nccl_gbs_per_400g"] * float(rate_gbps or 400) / 400.0)


# ------------------------------------------------------------------------------------------------ who is tested
def fingerprint(entries, facts, matrix_name=None) -> str:
    keep = ("rdma", "rate_gbps", "mtu", "address", "pcie", "qos", "state")
    data = {"matrix": matrix_name, "plan": entries or [],
            "facts": {name: {k: (f or {}).get(k) for k in keep} for name, f in sorted(_mapping(facts, "facts").items())}}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def under_test(hosts, fingerprints, previous=None, retest=None) -> dict:
    """``{"test": [...], "not_retested": [...], "why": {host: reason}}`` in the order of ``hosts``."""
    previous = _mapping(previous, "previous").get("hosts") or {}
    fingerprints = _mapping(fingerprints, "fingerprints")
    retest = set(retest or [])
    out = {"test": [], "not_retested": [], "why": {}}
    for host in hosts:
        last = previous.get(host) if isinstance(previous.get(host), Mapping) else None
        if host in retest:
            why = "named in gpufabric_gate_retest"
        elif last is None:
            why = "never tested"
        elif last.get("status") == "quarantined":
            why = "quarantined on %s" % (last.get("run") or "an earlier run")
        elif last.get("fingerprint") != fingerprints.get(host):
            why = "changed since it passed (rails, driver or NIC state)"
        else:
            out["not_retested"].append(host)
            out["why"][host] = "passed on %s, nothing changed" % (last.get("run") or "an earlier run")
            continue
        out["test"].append(host)
        out["why"][host] = why
    return out


# ------------------------------------------------------------------------------------------------ jobs
def _rail_port(rail, port_base):
    return port_base + 10 * int(rail)


def jobs(pairs, host, round_no, direction, tests=("ib_write_bw", "ib_write_lat"), port_base=PORT_BASE) -> dict:
    """The host's ``serve`` and ``measure`` jobs of one direction of a round of ``pairs`` (the gate_pairs plan); rail k's
    servers listen on ``port_base`` + 10 k and up (gpufabric_validate_port_base)."""
    if isinstance(port_base, bool) or not isinstance(port_base, int) or not PORT_MIN <= port_base <= PORT_MAX:
        raise GateError("gpufabric_validate_port_base: %r is not a TCP port for perftest's first server (allowed: a "
                        "whole number %d-%d; rail k listens on it + 10 k and up)" % (port_base, PORT_MIN, PORT_MAX),
                        parameter="port_base")
    if direction not in ("forward", "reverse"):
        raise GateError("direction: %r is not forward or reverse" % (direction,), parameter="direction")
    serve, measure = [], []
    for rnd in _mapping(pairs, "pairs").get("rounds") or []:
        if rnd.get("round") != round_no:
            continue
        for pair in rnd.get("pairs") or []:
            server, client = pair["server"], pair["client"]
            if direction == "reverse":
                server, client = client, server
            side = "server" if direction == "forward" else "client"
            other = "client" if side == "server" else "server"
            port = _rail_port(pair["rail"], port_base)
            if host == server:
                serve.append({"rail": pair["rail"], "interface": pair["%s_interface" % side], "port": port,
                              "tests": list(tests)})
            if host == client:
                measure.append({"rail": pair["rail"], "interface": pair["%s_interface" % other], "port": port,
                                "tests": list(tests), "peer": server, "peer_address": pair["%s_address" % side]})
    return {"serve": serve, "measure": measure}


def nccl_worlds(plan, groups, facts, tos=None, port=NCCL_PORT, args=None, mgmt=None, networks=None,
                launcher="mpirun", bind_to="numa", slurm_nodes=None) -> dict:
    """One NCCL world per group (a list of hosts): ``{"worlds": [{"index", "hosts", "rails", "size", "root_address",
    "env", "args", "launch"}], "hosts": {host: {"launch", "env", "args", "world", "size"}}}`` - ``hosts`` names only
    each world's first member, which starts the world's launcher (``launch``: fabric_test's, one context per member
    in rank order - its management address, one slot per rail, its rails' RDMA devices - and the management network
    when every member is on the same one, and with srun each member's Slurm node); a host in two groups is in the
    first one only. ``mgmt``: {host: its management address}; ``networks``: {host: its management network (CIDR)};
    ``slurm_nodes``: {host: its Slurm node name} (gpufabric_drain_slurm_node; default the first label of the
    host's name, as the drain has it).

    No NCCL_TESTS_MIN_BW: nccl-tests would exit 1 below it, and a rank's exit 1 makes mpirun abort the job while the
    other ranks' output is still on its way - the report, and with it what the gate judges, was lost (molecule
    fabric: worlds of one left only mpirun's words). The gate applies the same limit to the report itself."""
    if launcher not in LAUNCHERS:
        raise GateError("gpufabric_validate_launcher: %r is not one of %s" % (launcher, ", ".join(LAUNCHERS)),
                        parameter="gpufabric_validate_launcher")
    slurm_nodes = slurm_nodes or {}
    plan_hosts = _mapping(plan, "plan").get("hosts") or {}
    facts = _mapping(facts, "facts")
    mgmt, networks = mgmt or {}, networks or {}
    out = {"worlds": [], "hosts": {}}
    taken = set()
    for index, group in enumerate(groups or []):
        members = [h for h in group if h in plan_hosts and h not in taken]
        if len(members) < 2:
            continue
        taken.update(members)
        rails = min(len(plan_hosts[h]) for h in members)
        root_entry = plan_hosts[members[0]][0]
        # the bootstrap on the first member's management address (every rank reaches it; a rail reaches only its
        # own leaf), its rail-0 address when that is unknown
        root_address = mgmt.get(members[0]) or root_entry["address"]
        env = {"NCCL_COMM_ID": "%s:%d" % (root_address, port + index), "NCCL_TESTS_SPLIT": "MOD %d" % rails}
        # RoCE's GID index (RoCE v2 over IPv4) and traffic class; InfiniBand addresses by LID and has neither
        layers = {(facts.get(h) or {}).get(plan_hosts[h][r]["interface"], {}).get("link_layer")
                  for h in members for r in range(rails)}
        roce = layers != {"InfiniBand"}
        if roce:
            env["NCCL_IB_GID_INDEX"] = "3"
        if tos is not None and roce:
            env["NCCL_IB_TC"] = str(tos)
        contexts = []
        for host in members:
            host_facts = facts.get(host) or {}
            hcas = [(host_facts.get(plan_hosts[host][local]["interface"]) or {}).get("rdma") or "mlx5_%d" % local
                    for local in range(rails)]
            context = {"host": host, "address": mgmt.get(host) or plan_hosts[host][0]["address"], "slots": rails,
                       "hca": hcas}
            if launcher == "srun":
                context["node"] = slurm_nodes.get(host) or host.split(".")[0]   # as the drain names it
            contexts.append(context)
        nets = {networks.get(h) for h in members}
        launch = {"launcher": launcher, "contexts": contexts, "bind_to": bind_to,
                  "subnet": nets.pop() if len(nets) == 1 and None not in nets else None}
        world = {"index": index, "hosts": members, "rails": rails, "size": len(members) * rails,
                 "root_address": root_address, "env": env, "launch": launch,
                 "args": list(args or ["-b", "1G", "-e", "8G", "-f", "2", "-g", "1"])}
        out["worlds"].append(world)
        out["hosts"][members[0]] = {"launch": launch, "env": env, "world": index, "size": world["size"],
                                    "args": world["args"]}
    return out


# ------------------------------------------------------------------------------------------------ evaluation
def applied_limit(value):
    """A limit to compare with: the product of a fraction or factor and a rate or median, to 6 decimals (0.9 x 400 is
    360.00000000000006 in floating point; rounding to the 0.1 a message shows would move the limit itself)."""
    return round(value, 6)


def _num(value, decimals=1):
    """A number for a message: at least ``decimals`` decimals, every further one it has (up to 6)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return str(value)
    text = "%.6f" % value
    whole, _dot, frac = text.partition(".")
    frac = frac.rstrip("0").ljust(decimals, "0")
    return whole + ("." + frac if frac else "")


def _fail(measure, message, rail=None, value=None, threshold=None, unit=None, pass_if=None):
    """A failure; ``pass_if``: how the value passes against the threshold (``>=``, ``<=``, ``==``), None when the
    measure has no value to compare (a run that failed, a port that is down on the leaf)."""
    return {"measure": measure, "rail": rail, "value": value, "threshold": threshold, "unit": unit,
            "pass_if": pass_if, "message": message}


def _bw(test_result):
    report = (test_result or {}).get("report") or {}
    rows = report.get("results") or []
    if not rows:
        return None
    return rows[-1].get("bw_average")


def _lat(test_result):
    report = (test_result or {}).get("report") or {}
    rows = report.get("results") or []
    if not rows:
        return None
    return rows[-1].get("t_avg") if rows[-1].get("t_avg") is not None else rows[-1].get("t_typical")


def _error(test_result):
    if not test_result:
        return "not run"
    report = test_result.get("report") or {}
    if test_result.get("rc") not in (0, None) or report.get("errors") or not report.get("results"):
        lines = list(report.get("errors") or []) or [line for line in (test_result.get("stderr") or "").splitlines()
                                                     if line.strip()]
        return "; ".join(line.strip() for line in lines[:3]) or "rc %s, no result" % test_result.get("rc")
    return None


def _delta(before, after, key):
    b = ((before or {}).get("counters") or {}).get(key)
    a = ((after or {}).get("counters") or {}).get(key)
    if a is None:
        return None
    return a - (b or 0)


def poisson_upper(errors, confidence=0.95) -> float:
    """The upper confidence bound of a Poisson mean after ``errors`` events: the mean m at which seeing ``errors``
    or fewer has probability 1 - ``confidence`` (0 errors at 95 %: -ln 0.05 = 2.9957, the "rule of three"; 1: 4.7439;
    2: 6.2958). Bisection on the Poisson distribution function; above 1,000 events the Wilson-Hilferty form."""
    k, alpha = int(errors), 1.0 - float(confidence)
    if k < 0:
        raise GateError("errors: %r is negative" % (errors,), parameter="errors")
    if k > 1000:
        z = statistics.NormalDist().inv_cdf(float(confidence))
        n = k + 1
        return n * (1 - 1 / (9.0 * n) + z / (3 * math.sqrt(n))) ** 3

    def cdf(mean):
        # each term in logarithms: exp(-mean) alone underflows to 0 from a mean of about 745
        log_mean = math.log(mean) if mean > 0 else float("-inf")
        return sum(math.exp(-mean + i * log_mean - math.lgamma(i + 1)) if mean > 0 else float(i == 0)
                   for i in range(k + 1))
    low, high = 0.0, k + 10.0 + 10 * math.sqrt(k + 1)
    for _step in range(200):
        mid = (low + high) / 2
        if cdf(mid) > alpha:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def link_ber(before, after, rate_gbps, confidence=0.95):
    """The bit error rates of a rail's link over the gate's window, from the PHY counters (``phy``) read before
    and after the traffic: ``bits`` carried (the counter's growth where the driver counts received bits, else the
    port rate x the seconds between the two reads: ``bits_from``), the ``effective_errors`` (post-FEC) and
    ``raw_errors`` (pre-FEC: the bits FEC corrected) counted in the window, the measured ``effective_ber`` and
    ``raw_ber``, and ``certified_ber``: the effective BER the window bounds at ``confidence`` (0 errors in N bits:
    about 3/N at 95 %). ``error`` when either read failed or the window carried no bits; ``moved``: a counter grew."""
    b, a = (before or {}).get("phy") or {}, (after or {}).get("phy") or {}
    out = {"source": a.get("source") or b.get("source"), "before": _phy_view(b), "after": _phy_view(a),
           "seconds": None, "bits": None, "bits_from": None, "effective_errors": None, "raw_errors": None,
           "link_down": None, "effective_ber": None, "raw_ber": None, "certified_ber": None,
           "confidence": confidence, "moved": None, "error": None}
    for what, phy in (("before", b), ("after", a)):
        if not phy:
            out["error"] = "the PHY counters were not read %s the traffic" % what
            return out
        if phy.get("error"):
            out["error"] = "%s %s the traffic: %s" % (phy.get("source"), what, phy["error"])
            return out
    for key in ("effective_errors", "raw_errors", "link_down"):
        if isinstance(a.get(key), int) and isinstance(b.get(key), int):
            out[key] = a[key] - b[key]
    if isinstance(a.get("read_at"), (int, float)) and isinstance(b.get("read_at"), (int, float)):
        out["seconds"] = round(a["read_at"] - b["read_at"], 3)
    if isinstance(a.get("received_bits"), int) and isinstance(b.get("received_bits"), int) \
            and a["received_bits"] > b["received_bits"]:
        out["bits"], out["bits_from"] = a["received_bits"] - b["received_bits"], "received bits counter"
    elif rate_gbps and out["seconds"] and out["seconds"] > 0:
        out["bits"], out["bits_from"] = int(float(rate_gbps) * 1e9 * out["seconds"]), "port rate x window"
    if out["effective_errors"] is None or out["raw_errors"] is None:
        out["error"] = "%s: the counters are incomplete" % out["source"]
        return out
    if out["effective_errors"] < 0 or out["raw_errors"] < 0:
        out["error"] = "%s: the counters went back during the run (cleared, or the driver reloaded)" % out["source"]
        return out
    out["moved"] = bool(out["effective_errors"] or out["raw_errors"] or out["link_down"])
    if not out["bits"]:
        out["error"] = "%s: no bits counted in the window (no port rate, or no time between the reads)" % out["source"]
        return out
    out["effective_ber"] = out["effective_errors"] / out["bits"]
    out["raw_ber"] = out["raw_errors"] / out["bits"]
    out["certified_ber"] = poisson_upper(out["effective_errors"], confidence) / out["bits"]
    return out


def _phy_view(phy):
    return {k: phy.get(k) for k in ("effective_errors", "raw_errors", "link_down", "received_bits")} if phy else None


def _ber_failures(host, entry, ber, limits, side=None):
    """A rail's link (``ber``: its link_ber) against the BER limits (every failure its own measure; counters that
    cannot be read fail). ``side``: None for what the host's NIC received (leaf -> host), ``"leaf"`` for what the
    leaf's port received (host -> leaf): the message names the leaf port, the failure carries ``side``."""
    rail = entry["rail"]
    iface = entry["interface"] if side is None else "%s, received by leaf %s %s" % (
        entry["interface"], entry.get("leaf"), entry.get("leaf_port"))
    if ber["error"]:
        return [_sided(_fail("phy_counters", "%s rail %d (%s): the link's error counters cannot bound its BER: %s" % (
            host, rail, iface, ber["error"]), rail), side)]
    out = []
    if ber["effective_errors"] > limits["effective_errors"]:
        out.append(_fail("effective_errors", "%s rail %d (%s): %s errors FEC could not correct in %s bits (%s)" % (
            host, rail, iface, ber["effective_errors"], _sci(ber["bits"]), ber["source"]), rail,
            ber["effective_errors"], limits["effective_errors"], pass_if="<="))
    if limits["effective_ber"] is not None and ber["effective_ber"] > limits["effective_ber"]:
        out.append(_fail("effective_ber", "%s rail %d (%s): effective (post-FEC) BER %s > %s (%s errors in %s bits)"
                         % (host, rail, iface, _sci(ber["effective_ber"], limits["effective_ber"]),
                            _sci(limits["effective_ber"], ber["effective_ber"]),
                            ber["effective_errors"], _sci(ber["bits"])), rail, ber["effective_ber"],
                         limits["effective_ber"], "errors per bit", "<="))
    if limits["raw_ber"] is not None and ber["raw_ber"] > limits["raw_ber"]:
        out.append(_fail("raw_ber", "%s rail %d (%s): raw (pre-FEC) BER %s > %s (%s bits corrected by FEC in %s bits,"
                         " %s): a marginal cable, transceiver or port" % (
                             host, rail, iface, _sci(ber["raw_ber"], limits["raw_ber"]),
                             _sci(limits["raw_ber"], ber["raw_ber"]), ber["raw_errors"],
                             _sci(ber["bits"]), ber["source"]), rail, ber["raw_ber"], limits["raw_ber"], "errors per bit",
                         pass_if="<="))
    return [_sided(f, side) for f in out]


def _sided(failure, side):
    return dict(failure, side=side) if side else failure


def leaf_port_phy(leaves, leaf, port):
    """A leaf port's PHY counters (nvue_info ``gather: [phy]``, ``leaves``: ``{leaf: its result}`` of the leaves
    the play read) as link_ber reads a side: ``{"phy": {...}}``. ``("unavailable", reason)`` when the leaf is not in
    the play or the switch has no PHY counters for the port (a Spectrum-1 switch, Cumulus Linux before 5.10); an
    ``error`` in the phy when the leaf was in the play but its answer has no counters for the port (its read failed,
    the port was not asked for): fail closed, as a host's unreadable counters (link_ber names the read, before or
    after the traffic, in its error)."""
    if not isinstance(leaves, Mapping) or leaf not in leaves:
        return "unavailable", "leaf %s's PHY counters were not read in this run (the leaf is not in the play)" % leaf
    info = leaves.get(leaf) or {}
    source = "leaf %s %s (NVUE)" % (leaf, port)
    if not isinstance(info, Mapping) or info.get("failed") or not isinstance(info.get("phy"), Mapping):
        why = (info.get("msg") if isinstance(info, Mapping) else None) or "its answer has no PHY counters"
        return {"phy": {"source": source, "error": "the read (nv show interface %s link phy) failed: %s"
                                                   % (port, why)}}
    if port not in info["phy"]:
        return {"phy": {"source": source, "error": "the leaf's answer has no PHY counters for %s" % port}}
    counters = info["phy"][port]
    if counters is None:
        reason = (info.get("phy_unavailable") or {}).get(port) or "the switch has none for it"
        return "unavailable", "leaf %s %s has no PHY counters: %s" % (leaf, port, reason)
    if not isinstance(counters, Mapping):
        return {"phy": {"source": source, "error": "leaf %s %s: PHY counters %r are not a mapping"
                                                   % (leaf, port, counters)}}
    # the port's own received-bits counter times the window (no read time: a counter that did not grow fails)
    return {"phy": {"source": source, "received_bits": counters.get("received_bits"),
                    "effective_errors": counters.get("effective_errors"), "raw_errors": counters.get("raw_errors"),
                    "link_down": None, "read_at": None}}


def leaf_link_ber(entry, leaves_before, leaves_after, confidence=0.95):
    """The host -> leaf direction of a rail's link: link_ber of the leaf port's PHY counters read before and after
    the traffic, or ``{"unavailable": reason}`` (never a pass: the report says why it was not measured); None for a
    rail the plan cables to no leaf port."""
    leaf, port = entry.get("leaf"), entry.get("leaf_port")
    if not leaf or not port:
        return None
    sides = [leaf_port_phy(leaves_before, leaf, port), leaf_port_phy(leaves_after, leaf, port)]
    for side in sides:
        if isinstance(side, tuple):
            return {"source": "leaf %s %s (NVUE)" % (leaf, port), "unavailable": side[1]}
    return dict(link_ber(sides[0], sides[1], None, confidence), direction="host -> leaf")


def _sci(value, other=None):
    """A BER or a bit count for a message: 3 significant digits (2.50e-14, 2.40e+13) - more when ``other`` (the limit
    it is compared with) would otherwise print the same (1.0000000025e-05 > 1e-05 is not "1.00e-05 > 1.00e-05")."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return str(value)
    for digits in range(2, 16):
        text = "%.*e" % (digits, value)
        if other is None or value == other or text != "%.*e" % (digits, other):
            return text
    return repr(value)


def _leaf_port(leaves, leaf, port):
    info = (leaves or {}).get(leaf) or {}
    return ((info.get("interfaces") or {}).get(port)) if isinstance(info, Mapping) else None


def _leaf_pfc(leaves, leaf):
    info = (leaves or {}).get(leaf) or {}
    roce = ((info.get("qos") or {}).get("roce") or {}) if isinstance(info, Mapping) else {}
    # enable on before Cumulus Linux 5.15, state enabled from it (_nvue_keys); another value fails the verdict
    if not flag(roce, ("qos", "roce"), default=False) or roce.get("mode") != "lossless":
        return []
    text = str((roce.get("pfc") or {}).get("pfc-priority") or "")
    return sorted(int(p) for p in text.split(",") if p.strip().isdigit())


def rail_fact_failures(host, entry, before, after, leaves, wanted_mtu, limits, ber=None, leaf_ber=None) -> list:
    """The failures a host's own facts show on one rail (``entry``: its rail plan entry; ``ber``: the rail's
    link_ber when the caller has it, else made here; ``leaf_ber``: the leaf side's leaf_link_ber, judged by the same
    limits when it was measured)."""
    rail, iface, out = entry["rail"], entry["interface"], []
    f = after or before or {}
    if not f:
        return [_fail("link", "%s rail %d (%s): no facts read" % (host, rail, iface), rail)]
    if f.get("state") != "up":
        out.append(_fail("link", "%s rail %d (%s): link %s" % (host, rail, iface, f.get("state") or "missing"), rail,
                         f.get("state"), "up", pass_if="=="))
    if f.get("link_layer") not in LINK_LAYERS:
        # fail closed: perftest's options depend on it (fabric_test measures no rail of an unknown link layer)
        out.append(_fail("link_layer", "%s rail %d (%s, %s): link layer %r is not one of %s (ibstat's \"Link layer\")"
                         % (host, rail, iface, f.get("rdma"), f.get("link_layer"), " or ".join(LINK_LAYERS)), rail,
                         f.get("link_layer"), " or ".join(LINK_LAYERS)))
    if wanted_mtu and f.get("mtu") != wanted_mtu:
        text = "%s rail %d (%s): MTU %s, the rails want %s" % (host, rail, iface, f.get("mtu"), wanted_mtu)
        out.append(_fail("mtu", text, rail, f.get("mtu"), wanted_mtu, "B", "=="))
    pcie = f.get("pcie") or {}
    speed, max_speed, width, max_width = (pcie.get(k) for k in ("speed", "max_speed", "width", "max_width"))
    # each checked alone, where both of its ends are known: a link that trained narrower at full speed is as slow
    slow = bool(speed and max_speed and speed < max_speed)
    narrow = bool(width and max_width and width < max_width)
    if slow or narrow:
        text = "%s rail %d (%s): PCIe %s link at %s GT/s x%s, the device can %s GT/s x%s (%s)" % (
            host, rail, iface, pcie.get("pci"), _num(speed, 0), width, _num(max_speed, 0), max_width,
            " and ".join(w for w, bad in (("slower", slow), ("narrower", narrow)) if bad))
        if slow:
            out.append(_fail("pcie", text, rail, speed, max_speed, "GT/s", ">="))
        else:
            out.append(_fail("pcie", text, rail, width, max_width, "lanes", ">="))
    flaps = _delta(before, after, "link_down_events_phy")
    if flaps is None and isinstance(((after or {}).get("phy") or {}).get("link_down"), int):
        # InfiniBand: mlxlink's Link Down Counter (an IPoIB netdev's ethtool -S has no PHY counters)
        flaps = after["phy"]["link_down"] - (((before or {}).get("phy") or {}).get("link_down") or 0)
    if flaps is not None and flaps > limits["link_flaps"]:
        out.append(_fail("link_flaps", "%s rail %d (%s): %d link-down events during the run (link_down_events_phy)"
                         % (host, rail, iface, flaps), rail, flaps, limits["link_flaps"], pass_if="<="))
    symbols = _delta(before, after, "rx_symbol_err_phy")
    if symbols is not None and symbols > limits["symbol_errors"]:
        out.append(_fail("symbol_errors", "%s rail %d (%s): %d symbol errors during the run (rx_symbol_err_phy): a bad"
                         " card, cable or transceiver" % (host, rail, iface, symbols), rail, symbols,
                         limits["symbol_errors"], pass_if="<="))
    if ber is None:
        ber = link_ber(before, after, f.get("rate_gbps"), limits["ber_confidence"])
    out.extend(_ber_failures(host, entry, ber, limits))
    if leaf_ber and not leaf_ber.get("unavailable"):
        out.extend(_ber_failures(host, entry, leaf_ber, limits, side="leaf"))
    port = _leaf_port(leaves, entry.get("leaf"), entry.get("leaf_port"))
    if port is not None:
        if port.get("oper_status") not in ("up", None):
            text = "%s rail %d: leaf %s %s is %s" % (host, rail, entry["leaf"], entry["leaf_port"],
                                                     port.get("oper_status"))
            out.append(_fail("link", text, rail))
        if port.get("mtu") and f.get("mtu") and port["mtu"] < f["mtu"]:
            out.append(_fail("mtu", "%s rail %d: leaf %s %s MTU %s is below the host's %s" % (
                host, rail, entry["leaf"], entry["leaf_port"], port["mtu"], f["mtu"]), rail, port["mtu"], f["mtu"], "B",
                ">="))
        seen = ["%s:%s" % (n.get("system_name"), n.get("port")) for n in port.get("lldp") or []]
        want = "%s:%s" % (host, iface)
        if seen and want not in seen:
            out.append(_fail("lldp", "%s rail %d: leaf %s %s sees %s over LLDP, the plan cables %s there (%s)" % (
                host, rail, entry["leaf"], entry["leaf_port"], ", ".join(seen), want, entry.get("cable_label")), rail,
                ", ".join(seen), want, pass_if="=="))
    host_qos = f.get("qos")
    if host_qos is not None and (leaves or {}).get(entry.get("leaf")):
        leaf_pfc = _leaf_pfc(leaves, entry.get("leaf"))
        if sorted(host_qos.get("pfc") or []) != leaf_pfc:
            out.append(_fail("qos", "%s rail %d (%s): PFC on priorities %s, leaf %s on %s (host and leaf must match "
                             "for lossless RoCE)" % (host, rail, iface, host_qos.get("pfc") or "none",
                                                     entry["leaf"], leaf_pfc or "none"), rail,
                             host_qos.get("pfc"), leaf_pfc, pass_if="=="))
    return out


def _lldp(entry, leaves, host):
    port = _leaf_port(leaves, entry.get("leaf"), entry.get("leaf_port"))
    if port is None:
        return {"expected": "%s:%s" % (entry.get("leaf"), entry.get("leaf_port")), "seen": None, "ok": None}
    seen = ["%s:%s" % (n.get("system_name"), n.get("port")) for n in port.get("lldp") or []]
    want = "%s:%s" % (host, entry["interface"])
    return {"expected": "%s:%s" % (entry.get("leaf"), entry.get("leaf_port")),
            "seen": "%s:%s" % (entry.get("leaf"), entry.get("leaf_port")) if want in seen else (", ".join(seen) or None),
            "ok": (want in seen) if seen else None}


def evaluate(plan, pairs, tested, not_retested, measured, facts_before, facts_after, leaves=None, nccl=None,
             versions=None, limits=None, run=None, wanted_mtu=None, previous=None, fingerprints=None,
             hosts_info=None, leaf_phy=None) -> dict:
    """The results document (schema 1). ``measured``: the measure step results, ``{host: [rail results]}`` of every
    direction and round; ``nccl``: ``{"hosts": {host: rank-0 report}, "su": {su: {...}}}``; ``versions``: ``{host:
    {"nccl": version, "driver": ..., "driver_expected": ...}}``; ``leaves``: the leaves' nvue_info results (interfaces,
    qos); ``leaf_phy``: ``{"before": {leaf: result}, "after": {leaf: result}}``, the nvue_info ``gather: [phy]`` of
    the tested servers' leaf ports before and after the traffic, every leaf of the play named."""
    limits = dict(limits or DEFAULTS)
    plan_hosts = _mapping(plan, "plan").get("hosts") or {}
    facts_before, facts_after = _mapping(facts_before, "facts_before"), _mapping(facts_after, "facts_after")
    leaves = _mapping(leaves, "leaves")
    run = _mapping(run, "run")
    nccl = _mapping(nccl, "nccl")
    versions = _mapping(versions, "versions")
    hosts_info = _mapping(hosts_info, "hosts_info")
    # every client result by (client, rail) and by (server, rail): a list, as a host can meet more than one peer on
    # a rail in a run (every one of its pairs is judged; its row shows the first)
    by_client, by_server = {}, {}
    for host, results in _mapping(measured, "measured").items():
        for item in results or []:
            by_client.setdefault((host, item.get("rail")), []).append(item)
            by_server.setdefault((item.get("peer"), item.get("rail")), []).append(dict(item, client=host))
    lats = [v for items in by_client.values() for item in items for t in item.get("tests") or []
            if t.get("test") == "ib_write_lat" for v in [_lat(t)] if v is not None]
    median = statistics.median(lats) if lats else None
    lat_limit = limits["write_lat_usec"] or (applied_limit(limits["write_lat_factor"] * median) if median else None)
    lat_why = ("write_lat_usec" if limits["write_lat_usec"] else
               "%g x the fleet median %s us" % (limits["write_lat_factor"], _num(median or 0, 2)))
    leaf_phy = _mapping(leaf_phy, "leaf_phy")
    fact_failures, bers, leaf_bers = {}, {}, {}
    for host in tested:
        for entry in plan_hosts.get(host) or []:
            before = (facts_before.get(host) or {}).get(entry["interface"])
            after = (facts_after.get(host) or {}).get(entry["interface"])
            key = (host, entry["rail"])
            # the link's error counters over the window, once, each direction: judged here, shown in the rail's row
            bers[key] = dict(link_ber(before, after, (after or before or {}).get("rate_gbps"),
                                      limits["ber_confidence"]), direction="leaf -> host")
            leaf_bers[key] = leaf_link_ber(entry, leaf_phy.get("before"), leaf_phy.get("after"),
                                           limits["ber_confidence"])
            fact_failures[key] = rail_fact_failures(host, entry, before, after, leaves, wanted_mtu, limits, bers[key],
                                                    leaf_bers[key])
    doc_hosts, failures_of = {}, {h: [] for h in tested}

    def blame(host, peer, rail, failure):
        mine = bool(fact_failures.get((host, rail)))
        theirs = bool(fact_failures.get((peer, rail))) if peer in failures_of else False
        if mine or not theirs:
            note = "" if mine or theirs else " (the pair could not be split: neither end's own facts explain it)"
            failures_of[host].append(dict(failure, message=failure["message"] + note))

    for host in tested:
        rails = []
        for entry in plan_hosts.get(host) or []:
            rail = entry["rail"]
            before = (facts_before.get(host) or {}).get(entry["interface"]) or {}
            after = (facts_after.get(host) or {}).get(entry["interface"]) or before
            failures_of[host].extend(fact_failures[(host, rail)])
            fwds, revs = by_client.get((host, rail)) or [], by_server.get((host, rail)) or []
            fwd, rev = (fwds or [None])[0], (revs or [None])[0]
            peer = (fwd or {}).get("peer") or (rev or {}).get("client")
            peers = sorted({str(i.get("peer")) for i in fwds} | {str(i.get("client")) for i in revs})
            rate = after.get("rate_gbps")
            bw_limit = applied_limit(limits["write_bw_fraction"] * rate) if rate else None
            leaf_port = _leaf_port(leaves, entry.get("leaf"), entry.get("leaf_port")) or {}
            row = {"rail": rail, "interface": entry["interface"], "device": after.get("rdma"),
                   "address": entry.get("address"), "leaf": entry.get("leaf"), "leaf_port": entry.get("leaf_port"),
                   "peer": peer, "port_rate_gbps": rate, "ping": None, "write_bw_gbps": None,
                   "write_bw_reverse_gbps": None, "write_lat_usec": None, "active_mtu": None,
                   # the limits this rail's values were compared against (pass: bw >= its limit, lat <= its limit)
                   "write_bw_limit_gbps": bw_limit, "write_lat_limit_usec": lat_limit,
                   "link": {"host_state": after.get("state"), "host_speed_gbps": rate, "host_mtu": after.get("mtu"),
                            "leaf_state": leaf_port.get("oper_status"), "leaf_speed": leaf_port.get("speed"),
                            "leaf_mtu": leaf_port.get("mtu")},
                   "lldp": _lldp(entry, leaves, host), "pcie": after.get("pcie"),
                   # the link's error counters over the window and the BER they certify (docs/validation.md)
                   "ber": bers[(host, rail)], "leaf_ber": leaf_bers[(host, rail)]}
            if peer is None:
                row["unpaired"] = next((u.get("reason") for u in _mapping(pairs, "pairs").get("unpaired") or []
                                        if u.get("host") == host and u.get("rail") == rail), "no peer this run")
            if len(peers) > 1:
                row["peers"] = peers      # every peer of the rail this run (the values shown are the first's)
            for item, key in [(i, "write_bw_gbps") for i in fwds] + [(i, "write_bw_reverse_gbps") for i in revs]:
                forward = key == "write_bw_gbps"
                other = item.get("peer") if forward else item.get("client")
                src, dst = (host, other) if forward else (other, host)
                direction, shown = "%s -> %s", item is fwd or item is rev
                ping = item.get("ping") or {}
                # every measure of the pair's two directions is judged in both hosts' rows (its row shows the
                # host's own direction): it counts against the host whose facts explain it, else against both
                if item is fwd:
                    row["ping"] = bool(ping.get("ok"))
                if not ping.get("ok"):
                    blame(host, other, rail, _fail("ping", "ping %s -> %s on rail %d (%s): %s of %s answered" % (
                        src, dst, rail, entry["interface"], ping.get("received"), ping.get("sent")), rail,
                        ping.get("received"), ping.get("sent"), pass_if=">="))
                for test in item.get("tests") or []:
                    error = _error(test)
                    name = test.get("test")
                    if name == "ib_write_bw":
                        value = _bw(test)
                        if shown:
                            row[key] = value
                        mtu = ((test.get("report") or {}).get("mtu"))
                        if mtu and item is fwd:
                            row["active_mtu"] = mtu
                        if error:
                            blame(host, other, rail, _fail("ib_write_bw", "ib_write_bw %s on rail %d (%s) failed: %s"
                                                           % (direction % (src, dst), rail, entry["interface"], error),
                                                           rail))
                        elif bw_limit and value is not None and value < bw_limit:
                            blame(host, other, rail, _fail(
                                "ib_write_bw", "ib_write_bw %s on rail %d (%s): %s Gb/s < %s Gb/s (%g x %g Gb/s "
                                "port rate)" % (direction % (src, dst), rail, entry["interface"], _num(value),
                                                _num(bw_limit), limits["write_bw_fraction"], rate), rail, value,
                                bw_limit, "Gb/s", ">="))
                    elif name == "ib_write_lat":
                        value = _lat(test)
                        if item is fwd:
                            row["write_lat_usec"] = value
                        if error:
                            blame(host, other, rail, _fail("ib_write_lat", "ib_write_lat %s on rail %d failed: %s" % (
                                direction % (src, dst), rail, error), rail))
                        elif lat_limit and value is not None and value > lat_limit:
                            blame(host, other, rail, _fail(
                                "ib_write_lat", "ib_write_lat %s on rail %d (%s): %s us > %s us (%s)" % (
                                    direction % (src, dst), rail, entry["interface"], _num(value, 2),
                                    _num(lat_limit, 2), lat_why), rail, value, lat_limit,
                                "us", "<="))
            rails.append(row)
        info = dict(hosts_info.get(host) or {})
        doc_hosts[host] = {"status": None, "rack": info.get("rack"), "su": info.get("su"),
                           "versions": dict(versions.get(host) or {}), "delivery": info.get("delivery") or [],
                           "rails": rails, "nccl": None, "failures": failures_of[host],
                           "fingerprint": (fingerprints or {}).get(host)}
    # NCCL per host (the host's world) and the version against the matrix
    expected_nccl = run.get("nccl_expected")
    for host in tested:
        report = ((nccl.get("hosts") or {}).get(host)) or None
        entries = plan_hosts.get(host) or []
        rate = min([(doc_hosts[host]["rails"][i].get("port_rate_gbps") or 400) for i in range(len(entries))] or [400])
        floor = nccl_per_rail(rate, limits)
        if report is not None:
            rows = [r for r in report.get("rows") or [] if r.get("out_of_place")]
            doc_hosts[host]["nccl"] = {"avg_busbw_gbs": report.get("avg_busbw"), "threshold_gbs": floor,
                                       "peers": report.get("peers"),
                                       "rows": [{"size": r["size"], "busbw": r["out_of_place"]["busbw"],
                                                 "algbw": r["out_of_place"]["algbw"],
                                                 "time_us": r["out_of_place"]["time"]} for r in rows]}
            peers = [p for p in report.get("peers") or [] if p != host]
            if report.get("errors") or not rows:
                failure = _fail("nccl_busbw", "NCCL all_reduce_perf of %s failed: %s" % (
                    host, "; ".join((report.get("errors") or ["no result"])[:2])))
            elif report.get("avg_busbw") is not None and report["avg_busbw"] < floor:
                failure = _fail("nccl_busbw", "NCCL all_reduce_perf of %s with %s: average bus bandwidth %s GB/s < "
                                "%s GB/s per rail (%g x %g GB/s per 400G rail%s)" % (
                                    host, ", ".join(peers) or "itself", _num(report["avg_busbw"]), _num(floor),
                                    limits["nccl_fraction"], limits["nccl_gbs_per_400g"],
                                    "" if rate == 400 else " x %g/400 Gb/s" % rate), None,
                                report["avg_busbw"], floor, "GB/s", ">=")
            else:
                failure = None
            if failure:
                explained = any(fact_failures.get((h, e["rail"])) for h in [host] for e in entries)
                others = any(fact_failures.get((p, e["rail"])) for p in peers for e in plan_hosts.get(p) or [])
                if explained or not others:
                    if not explained and not others:
                        failure["message"] += " (the run could not be split: no host's own facts explain it)"
                    failures_of[host].append(failure)
        version = (versions.get(host) or {}).get("nccl")
        # the matrix pins the package (2.23.4-1), nccl-tests prints the library (2.23.4)
        if expected_nccl and version and str(version) != str(expected_nccl).split("-", 1)[0]:
            failures_of[host].append(_fail("nccl_version", "%s: NCCL %s, the matrix %s pins %s" % (
                host, version, run.get("matrix"), expected_nccl), None, version, expected_nccl, pass_if="=="))
        elif expected_nccl and not version and (versions.get(host) or {}).get("nccl_run"):
            # fail closed: a library whose version nobody printed is not the matrix's until shown to be
            failures_of[host].append(_fail("nccl_version", "%s: the NCCL version run printed no NCCL version (neither "
                                           "nccl-tests' 'nccl-library=' header nor NCCL_DEBUG=VERSION's 'NCCL version' "
                                           "line): its library cannot be checked against the matrix %s's %s" % (
                                               host, run.get("matrix"), expected_nccl), None, None, expected_nccl,
                                           pass_if="=="))
        # the driver and the firmware are their steps' to enforce (ofed_info and the burn against the matrix, with
        # their own refusals); the report shows both against the matrix and flags a difference. The delivery
        # check's own verdict (serial, part number, PSID against the asset list) is the gate's.
        for nic in doc_hosts[host]["delivery"]:
            if isinstance(nic, Mapping) and nic.get("ok") is False:
                reason = nic.get("reason") or "fails the delivery check"
                failures_of[host].append(_fail("delivery", "%s: NIC %s %s" % (host, nic.get("pci"), reason), None))
    previous_hosts = _mapping(previous, "previous").get("hosts") or {}
    for host in not_retested:
        last = previous_hosts.get(host) or {}
        doc_hosts[host] = dict(last.get("entry") or {}, status="not_retested", failures=[],
                               fingerprint=(fingerprints or {}).get(host))
        doc_hosts[host].setdefault("rails", [])
        doc_hosts[host].setdefault("rack", (hosts_info.get(host) or {}).get("rack"))
        doc_hosts[host].setdefault("su", (hosts_info.get(host) or {}).get("su"))
        doc_hosts[host].setdefault("versions", {})
        doc_hosts[host].setdefault("delivery", [])
        doc_hosts[host].setdefault("nccl", None)
    for host in tested:
        doc_hosts[host]["status"] = "quarantined" if failures_of[host] else "passed"
    # the hosts of earlier batches and runs, as the state last saw them: the report covers the whole cluster
    for host, last in previous_hosts.items():
        if host in doc_hosts or host not in plan_hosts or not isinstance(last, Mapping):
            continue
        doc_hosts[host] = dict(last.get("entry") or {}, status=last.get("status"),
                               failures=[f for f in last.get("failures") or [] if isinstance(f, Mapping)],
                               earlier_run=last.get("run"))
        for key, default in (("rails", []), ("versions", {}), ("delivery", []), ("nccl", None)):
            doc_hosts[host].setdefault(key, default)

    def slowest(hosts):
        """The slowest port rate of the hosts' rails (400 when none is known): what NCCL's floor scales with."""
        rates = [r.get("port_rate_gbps") for h in hosts for r in (doc_hosts.get(h) or {}).get("rails") or []
                 if isinstance(r, Mapping) and r.get("port_rate_gbps")]
        return min(rates) if rates else 400

    # an SU's world is its row's verdict alone: it names no host (its members' own pairs attribute), so a slow SU
    # quarantines nobody - the report shows the row failed beside hosts that passed
    su = {}
    for key, value in (nccl.get("su") or {}).items():
        rows = [r for r in value.get("rows") or [] if r.get("out_of_place")]
        big = [r["out_of_place"]["busbw"] for r in rows if r["size"] >= limits["nccl_min_size"]]
        floor = nccl_per_rail(slowest(value.get("hosts") or []), limits)
        avg = applied_limit(sum(big) / len(big)) if big else None
        su[str(key)] = {"hosts": value.get("hosts") or [], "avg_busbw_gbs": avg, "threshold_gbs": floor,
                        "ok": bool(avg is not None and avg >= floor and not value.get("errors")),
                        "errors": value.get("errors") or [],
                        "rows": [{"size": r["size"], "busbw": r["out_of_place"]["busbw"],
                                  "algbw": r["out_of_place"]["algbw"], "time_us": r["out_of_place"]["time"]}
                                 for r in rows]}
    quarantine = [{"host": h, "failures": doc_hosts[h]["failures"]} for h in sorted(doc_hosts)
                  if doc_hosts[h]["status"] == "quarantined"]
    handover = sorted(h for h in doc_hosts if doc_hosts[h]["status"] in ("passed", "not_retested"))
    # every limit as the verdict applied it: NCCL bus bandwidth is per rail (NCCL_TESTS_SPLIT, one communicator per
    # rail), nccl_busbw_per_rail_gbs at the slowest port rate tested (each host's own floor, at its port rate, is
    # hosts.*.nccl.threshold_gbs)
    thresholds_doc = {"write_bw_fraction": limits["write_bw_fraction"], "write_lat_factor": limits["write_lat_factor"],
                      "write_lat_usec": lat_limit, "nccl_busbw_per_rail_gbs": nccl_per_rail(slowest(tested), limits),
                      "nccl_fraction": limits["nccl_fraction"], "nccl_gbs_per_400g": limits["nccl_gbs_per_400g"],
                      "nccl_min_size": limits["nccl_min_size"],
                      "link_flaps": limits["link_flaps"], "symbol_errors": limits["symbol_errors"],
                      "effective_errors": limits["effective_errors"], "effective_ber": limits["effective_ber"],
                      "raw_ber": limits["raw_ber"], "ber_confidence": limits["ber_confidence"]}
    return {"schema": SCHEMA, "status": "quarantined" if quarantine else "handed_over",
            "run": dict(run, thresholds=thresholds_doc, lat_median_usec=median),
            "hosts": doc_hosts, "su": su, "quarantine": quarantine, "handover": handover,
            "failures": failure_list(quarantine)}


def failure_list(quarantine) -> list:
    """Every failure of every quarantined host, flat, for a pipeline: ``host``, ``rail``, ``measure``, ``value``,
    ``limit``, ``unit``, ``pass_if`` (how the value passes against the limit: ``>=``, ``<=``, ``==``; null when
    there is no value to compare) and ``message``."""
    return [{"host": entry["host"], "rail": f.get("rail"), "measure": f.get("measure"), "value": f.get("value"),
             "limit": f.get("threshold"), "unit": f.get("unit"), "pass_if": f.get("pass_if"),
             "message": f.get("message")}
            for entry in quarantine for f in entry.get("failures") or [] if isinstance(f, Mapping)]


def state(results, previous=None) -> dict:
    """The gate's memory for the next run: per host its status, fingerprint, run and document entry."""
    out = {"schema": SCHEMA, "hosts": dict((_mapping(previous, "previous").get("hosts") or {}))}
    run = (_mapping(results, "results").get("run") or {}).get("started")
    for host, entry in (results.get("hosts") or {}).items():
        if entry.get("status") == "not_retested" or entry.get("earlier_run"):
            continue
        out["hosts"][host] = {"status": entry.get("status"), "fingerprint": entry.get("fingerprint"), "run": run,
                              "failures": list(entry.get("failures") or []),
                              "entry": {k: v for k, v in entry.items()
                                        if k not in ("status", "failures", "earlier_run")}}
    return out


# ------------------------------------------------------------------------------------------------ the plan
def plan_run(plan, hosts, facts, previous=None, retest=None, matrix=None, overrides=None, tos=None,
             su_args=None, mgmt=None, networks=None, launcher="mpirun", bind_to="numa", slurm_nodes=None) -> dict:
    """Everything the gate role needs before it measures: who is tested and why, the fingerprints, the limits, the
    pairs (gate_pairs), and the NCCL worlds of the pairs and of the scalable units."""
    from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._gate_pairs import pairs as make_pairs

    plan = _mapping(plan, "plan")
    plan_hosts = plan.get("hosts") or {}
    facts = _mapping(facts, "facts")
    if not isinstance(hosts, (list, tuple)):
        raise GateError("hosts: must be a list of host names", parameter="hosts")
    unknown = [h for h in hosts if h not in plan_hosts]
    if unknown:
        raise GateError("hosts: %s not in the rail plan (the gate tests the plan's servers)" % ", ".join(
            map(str, unknown)), parameter="hosts")
    if retest is not None and not isinstance(retest, (list, tuple)):
        raise GateError("gpufabric_gate_retest: must be a list of server names, got %s" % type(retest).__name__,
                        parameter="gpufabric_gate_retest")
    strangers = [h for h in retest or [] if h not in plan_hosts]
    if strangers:
        raise GateError("gpufabric_gate_retest: %s not a server of the rail plan (allowed: the plan's servers)"
                        % ", ".join(map(str, strangers)), parameter="gpufabric_gate_retest")
    matrix = _mapping(matrix, "matrix")
    limits = thresholds(matrix, overrides)
    prints = {h: fingerprint(plan_hosts[h], facts.get(h), matrix.get("name")) for h in hosts}
    who = under_test(hosts, prints, previous, retest)
    rail_pairs = make_pairs(plan, who["test"], who["not_retested"]) if who["test"] else {
        "rounds": [], "unpaired": [], "hosts": {}, "rounds_count": 0}
    rate = min([f.get("rate_gbps") or 400 for h in who["test"] for f in (facts.get(h) or {}).values()] or [400])
    floor = nccl_per_rail(rate, limits)
    groups, seen = [], set()
    for rnd in rail_pairs["rounds"][:1]:
        for pair in rnd["pairs"]:
            if pair["rail"] == 0 and pair["server"] not in seen and pair["client"] not in seen:
                groups.append([pair["server"], pair["client"]])
                seen.update((pair["server"], pair["client"]))
    launch = {"mgmt": mgmt, "networks": networks, "launcher": launcher, "bind_to": bind_to,
              "slurm_nodes": slurm_nodes}
    pair_worlds = nccl_worlds(plan, groups, facts, tos=tos, port=NCCL_PORT, **launch)
    by_su = {}
    for host in who["test"]:
        by_su.setdefault(su_of(plan, host), []).append(host)
    su_worlds = nccl_worlds(plan, list(by_su.values()), facts, tos=tos, port=NCCL_PORT + 100,
                            args=su_args or ["-b", "8", "-e", "8G", "-f", "4", "-g", "1"], **launch)
    su_of_world = {}
    for key, members in by_su.items():
        for world in su_worlds["worlds"]:
            if world["hosts"] and world["hosts"][0] == members[0]:
                su_of_world[world["index"]] = key
    return {"tested": who["test"], "not_retested": who["not_retested"], "why": who["why"], "fingerprints": prints,
            "leaf_ports": leaf_ports(plan, who["test"]),
            "limits": limits, "pairs": rail_pairs, "rounds": [r["round"] for r in rail_pairs["rounds"]],
            "nccl_pairs": pair_worlds, "nccl_su": su_worlds, "su_of_world": su_of_world,
            "participants": sorted(set(who["test"]) | {
                p for r in rail_pairs["rounds"] for x in r["pairs"] for p in (x["server"], x["client"])})}


def su_of(plan, host) -> str:
    """The scalable unit of a server, as the gate groups its SU worlds: its first rail's leaf's ``su`` in the plan
    (else that leaf's name)."""
    entry = ((_mapping(plan, "plan").get("hosts") or {}).get(host) or [{}])[0]
    return str(((plan.get("leaves") or {}).get(entry.get("leaf")) or {}).get("su", entry.get("leaf")))


def ssh_ring(plan, hosts) -> dict:
    """``{server: the next server of its scalable unit}``, a ring per SU of ``hosts`` (in their order; servers the
    plan does not have left out; an SU of one server has none): the preflight logs in from each server to its next
    as mpirun does (fabric_test ssh_check) - every server once as the one who logs in (its key, its known_hosts) and
    once as the one logged in to (its sshd, its authorized keys), in the SU an NCCL world of the gate spans."""
    groups = {}
    for host in hosts or []:
        if host in ((_mapping(plan, "plan").get("hosts")) or {}):
            groups.setdefault(su_of(plan, host), []).append(host)
    return {host: members[(i + 1) % len(members)] for members in groups.values() if len(members) > 1
            for i, host in enumerate(members)}


def leaf_ports(plan, hosts) -> dict:
    """``{leaf: [port, ...]}``: the leaf ports the plan cables the ``hosts``' rails to (the switch's order: swp2
    before swp10), whose PHY counters the gate reads before and after the traffic."""
    out = {}
    for host in hosts:
        for entry in (_mapping(plan, "plan").get("hosts") or {}).get(host) or []:
            if entry.get("leaf") and entry.get("leaf_port"):
                ports = out.setdefault(str(entry["leaf"]), [])
                if entry["leaf_port"] not in ports:
                    ports.append(str(entry["leaf_port"]))
    return {leaf: sorted(ports, key=lambda p: [(0, int(t), "") if t.isdigit() else (1, 0, t)
                                               for t in re.findall(r"[0-9]+|[^0-9]+", p)])
            for leaf, ports in sorted(out.items())}


def _rank0(collected):
    """Rank 0's report (and every failing rank's errors) of one host's nccl_collect result."""
    ranks = (collected or {}).get("ranks") or []
    report, errors = None, []
    for rank in ranks:
        if rank.get("rank") == 0 and rank.get("report") is not None:
            report = dict(rank["report"])
        elif rank.get("rc") not in (0, None) and rank.get("report"):
            errors.extend(rank["report"].get("errors") or [])
        if rank.get("stopped"):
            errors.append("rank %s did not finish and was stopped" % rank.get("rank"))
    return report, errors


def _launched(collected, world):
    """The report of a world its launcher ran (the first member's nccl_collect with ``launch``) and why it is not
    to be trusted: a launcher that was not started or stopped, a world whose rank count is not the plan's (ranks that
    each ran alone are a world of one), the launcher's own last words when no report came."""
    launch = (collected or {}).get("launch") or {}
    report = dict(launch["report"]) if isinstance(launch.get("report"), Mapping) else None
    errors, first = [], world["hosts"][0]
    if launch.get("error"):
        errors.append("%s could not start the world's launcher: %s" % (first, launch["error"]))
    elif not launch:
        errors.append("%s did not run the world's launcher" % first)
    if launch.get("stopped"):
        errors.append("the launcher on %s did not finish within the gate's timeout and was stopped" % first)
    # the srun launcher's allocation: a Slurm command that failed, a node not left as it was (named, Slurm's words)
    errors.extend("%s (the world's launcher on %s)" % (e, first) for e in launch.get("errors") or [])
    # a world prints one report listing each of its ranks once, 0 to size-1 (nccl-tests' "#  Rank  N ..." lines);
    # processes that each ran alone each print a report of one rank, Rank 0 - under mpirun those reports come one
    # after another or interleaved in one output, so "8 rank lines" can be eight worlds of one: every report of the
    # output is read (the parser's runs), and the rank numbers are checked, not only their count
    runs = [r for r in (report or {}).get("runs") or [report or {}] if isinstance(r, Mapping) and r.get("ranks")]
    numbers = [x.get("rank") for r in runs for x in r["ranks"] if isinstance(x, Mapping)]
    if report is not None and numbers and (len(runs) > 1 or sorted(numbers) != list(range(world["size"]))):
        alone = set(numbers) == {0}
        why = ("each rank ran alone, a world of one: they were not started by a launcher that nccl-tests' MPI "
               "talks to (nccl-tests built without MPI=1, or against another MPI than the launcher's)"
               if alone else "the launcher started another world than the plan's")
        shown = ("%d report(s) of one rank each" % len(numbers) if alone and len(numbers) > 1
                 else "%d rank(s)" % len(numbers))
        errors.append("the NCCL world of %s has %s where the plan has %d (%d hosts x %d GPUs): %s" % (
            ", ".join(world["hosts"]), shown, world["size"], len(world["hosts"]), world["rails"], why))
    if (report is None or not report.get("rows")) and launch.get("rc") not in (0, None):
        words = [ln.strip() for ln in str(launch.get("stderr") or "").splitlines() if ln.strip()
                 and not set(ln.strip()) <= set("-=*")]
        errors.append("the launcher on %s exited %s: %s" % (first, launch["rc"], " / ".join(words[:4]) or
                                                            "no message"))
    return report, errors


def nccl_reports(gate, raw) -> dict:
    """``{"hosts": {host: rank-0 report + peers}, "su": {su: report + hosts}}`` from the hosts' collect results
    (``raw``: ``{"pairs": {host: result}, "su": {host: result}}``; a world's result is its first member's - the
    launcher's; a stage that is None was not run: its worlds have no report, while a world of a stage that ran whose
    launcher registered nothing is a failed run)."""
    gate, raw = _mapping(gate, "gate"), _mapping(raw, "nccl")
    out = {"hosts": {}, "su": {}}
    for stage, key in (("pairs", "nccl_pairs"), ("su", "nccl_su")):
        if raw.get(stage) is None:
            continue        # the stage was not run (gpufabric_validate_nccl, _nccl_su off): no report, no failure
        results = _mapping(raw.get(stage), "nccl." + stage)
        for world in (gate.get(key) or {}).get("worlds") or []:
            members = world["hosts"]
            report, errors = _launched(results.get(members[0]), world)
            if report is None:
                nothing = "the world of %s reported nothing" % ", ".join(members)
                report = {"rows": [], "avg_busbw": None, "ranks": [], "errors": errors or [nothing]}
            else:
                report["errors"] = list(report.get("errors") or []) + errors
            if stage == "pairs":
                for member in members:
                    out["hosts"][member] = dict(report, peers=members)
            else:
                su = (gate.get("su_of_world") or {}).get(world["index"], str(world["index"]))
                out["su"][su] = dict(report, hosts=members)
    return out


def nic_rows(devices, firmware_expected) -> list:
    """Per NIC (card function 0) of an ``mlx_info`` read: serial, part number, PSID, firmware against the matrix's
    pin for its PSID (``firmware_expected``: {psid: version}). ``firmware_ok`` is None when the matrix names no such
    PSID; ``ok`` (the delivery verdict) stays None: this read is no asset list, and a card on other firmware is the
    firmware step's to burn (with ``gpufabric_firmware_enabled: false`` nobody does - the report flags it)."""
    rows, expected = [], firmware_expected if isinstance(firmware_expected, Mapping) else {}
    for dev in devices if isinstance(devices, list) else []:
        if not isinstance(dev, Mapping) or dev.get("function") not in (0, None):
            continue
        running = dev.get("fw_running") or dev.get("fw_version")
        want = expected.get(dev.get("psid"))
        row = {"pci": dev.get("address"), "serial": dev.get("serial_number"), "part_number": dev.get("part_number"),
               "psid": dev.get("psid"), "firmware": running, "firmware_expected": want,
               "firmware_ok": None if not want else str(running) == str(want), "ok": None}
        if row["firmware_ok"] is False:
            row["note"] = "runs firmware %s, the matrix pins %s for %s" % (running, want, dev.get("psid"))
        rows.append(row)
    return rows


def versions_of(hosts, nccl_version_runs, ofed_results, run) -> dict:
    """Per host its NCCL version (the local rank's report), its driver and the matrix's."""
    out = {}
    for host in hosts:
        report, _errors = _rank0((nccl_version_runs or {}).get(host))
        ofed = (ofed_results or {}).get(host) or {}
        driver = ofed.get("driver") if isinstance(ofed.get("driver"), Mapping) else {}
        # the driver step's "after": what ofed_info -s says once it is done (parse_ofed_info: version, flavour, raw)
        after = driver.get("after")
        version = after.get("version") if isinstance(after, Mapping) else after if isinstance(after, str) else None
        ran = (nccl_version_runs or {}).get(host) or {}
        out[host] = {"nccl": (report or {}).get("nccl_version"), "nccl_expected": (run or {}).get("nccl_expected"),
                     # the version run ran on the host (its collect has ranks): a version it did not print is then
                     # a failure, not a pass
                     "nccl_run": bool(isinstance(ran, Mapping) and ran.get("ranks")),
                     "driver": version,
                     "driver_expected": (run or {}).get("driver_expected")}
    return out
