# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operational view (rev=operational): the applied config (filled) plus what the ports report.

Link data comes from a provider. A provider is an object with ``ports(state) -> {name: PortData}`` where
PortData is a dict {"carrier": bool, "speed": "400G", "mtu": int|None, "neighbors": [{"system-name",
"chassis-id", "port", "description"}], "counters": {...}}. ``static`` reads state.json's ``ports``; a lab
provider (/sys/class/net, real LLDP) registers itself in PROVIDERS without touching the REST code. Faults are
applied on top of any provider's data here.
"""
import copy
import time

from . import model, tree

PROVIDERS = {}


def register(name):
    def wrap(cls):
        PROVIDERS[name] = cls
        return cls
    return wrap


@register("static")
class StaticProvider:
    """Ports and LLDP neighbours as set by ``nvuesim init --ports-file`` / ``nvuesim port``."""

    def ports(self, state):
        out = {}
        for name, port in state.get("ports", {}).items():
            neighbors = []
            nb = port.get("neighbor")
            if nb:
                neighbors.append({"system-name": nb["host"], "chassis-id": nb.get("mac") or model.mac_for(nb["host"]),
                                  "port": nb["ifname"], "description": nb.get("description", nb["ifname"])})
            out[name] = {"carrier": port.get("carrier", True), "speed": port.get("speed", "400G"),
                         "mtu": None, "neighbors": neighbors, "counters": port.get("counters", {})}
        return out


def provider_for(state):
    name = state.get("provider", "static")
    try:
        return PROVIDERS[name]()
    except KeyError:
        raise ValueError("provider %r: one of %s" % (name, ", ".join(sorted(PROVIDERS)))) from None


def _apply_faults(ports, faults):
    for a, b in faults.get("swap", {}).items():
        if a in ports and b in ports:
            ports[a]["neighbors"], ports[b]["neighbors"] = ports[b]["neighbors"], ports[a]["neighbors"]
    for name in faults.get("port_down", {}):
        if name in ports:
            ports[name]["carrier"] = False
    for name, speed in faults.get("speed", {}).items():
        if name in ports:
            ports[name]["speed"] = speed
    for name, mtu in faults.get("mtu", {}).items():
        if name in ports:
            ports[name]["mtu"] = mtu
    for name in faults.get("protodown", {}):
        if name in ports:
            ports[name]["protodown"] = "linkflap"
    return ports


TRUST = {"l2": "pcp", "l3": "dscp", "port": "port", "both": "pcp,dscp"}
LINK_STATS = ("carrier-transitions", "in-bytes", "in-drops", "in-errors", "in-pkts", "out-bytes", "out-drops",
              "out-errors", "out-pkts")


def roce_status(applied, release):
    """Global qos.roce status: the children the specification names for /qos/roce (tests/nvue/spec: pfc,
    congestion-control, prio-map, tc-map, trust, pool-map, pool, lldp-app-tlv); their inner shapes are [U], derived
    from `nv show qos roce` (the Cumulus RoCE docs page). enable/state is spelled for ``release``."""
    key, on, off = model.words_at(("qos", "roce"), release)
    mode = model.roce_mode(applied, release)
    if mode is None:
        return {key: off, "mode": "lossless"}
    mapping = tree.get(applied, ["qos", "mapping", "default-global"], None) or {}
    dscp = {str(d): 3 for d in range(24, 32)}
    dscp.update({str(d): 6 for d in range(48, 56)})
    for d, entry in (mapping.get("dscp") or {}).items():
        if isinstance(entry, dict) and "switch-priority" in entry:
            dscp[str(d)] = entry["switch-priority"]
    sp_tc = {str(sp): 0 for sp in range(8)}
    sp_tc.update({"3": 3, "6": 6})
    for sp, entry in (tree.get(applied, ["qos", "egress-queue-mapping", "default-global", "switch-priority"], None)
                      or {}).items():
        if isinstance(entry, dict) and "traffic-class" in entry:
            sp_tc[str(sp)] = entry["traffic-class"]
    out = {
        key: on, "mode": mode,
        "congestion-control": {"congestion-mode": "ECN", "enabled-tc": "0,3", "max-threshold": "1.43 MB",
                               "min-threshold": "146.48 KB", "probability": 100},
        "lldp-app-tlv": {"priority": 3, "protocol-id": 4791, "selector": "UDP"},
        "trust": {"trust-mode": TRUST.get(mapping.get("trust", "both"), mapping.get("trust"))},
        "prio-map": {d: {"switch-priority": sp} for d, sp in sorted(dscp.items(), key=lambda kv: int(kv[0]))},
        "tc-map": {sp: {"traffic-class": tc} for sp, tc in sorted(sp_tc.items())},
        "traffic-class": {"0": {"mode": "dwrr", "bandwidth-percent": 50},
                          "3": {"mode": "dwrr", "bandwidth-percent": 50},
                          "6": {"mode": "strict"}},
    }
    if mode == "lossless":
        prios = tree.get(applied, ["qos", "pfc", "default-global", "switch-priority"], None) or {"3": {}}
        out["pfc"] = {"pfc-priority": ",".join(sorted(prios)), "rx-enabled": "enabled", "tx-enabled": "enabled"}
        out["pool"] = {"roce-reserved-ingress": {"memory-percent": 50,
                                                 "switch-priority": ",".join(model.lossless_pool(applied))},
                       "roce-reserved-egress": {"memory-percent": "inf", "traffic-class": "3"}}
    return out


def port_roce(glob, counters):
    if "prio-map" not in glob:   # RoCE off
        return {"status": {"mode": "disabled"}, "counters": {}}
    dscp_roce = "26"
    status = {"mode": glob["mode"], "pfc-priority": glob.get("pfc", {}).get("pfc-priority", ""),
              "mapping": {"roce": {"pcp": 3, "dscp": 26,
                                   "switch-priority": glob["prio-map"][dscp_roce]["switch-priority"]},
                          "cnp": {"pcp": 6, "dscp": 48, "switch-priority": glob["prio-map"]["48"]["switch-priority"]}}}
    base = {"rx-pfc-stats": {"pause-packets": 0, "pause-duration": 0},
            "tx-pfc-stats": {"pause-packets": 0, "pause-duration": 0},
            "tx-ecn-stats": {"ecn-marked-packets": 0},
            "tx-cnp-stats": {"cnp-packets": 0},
            "rx-cnp-stats": {"cnp-packets": 0}}
    tree.merge(base, copy.deepcopy(counters))
    return {"status": status, "counters": base}


def system_view(state):
    part = model.running(state)
    rel = part["release"]
    return {
        "hostname": tree.get(state["applied"], ["system", "hostname"], state["hostname"]),
        "build": "Cumulus Linux %s" % rel, "product-name": "Cumulus Linux",
        "uptime": int(time.time() - state["boot"]["booted_at"]), "timezone": "Etc/UTC",
        "version": version_view(state),
        "image": image_view(state),
    }


def version_view(state):
    part = model.running(state)
    return {"product-release": part["release"],
            "image": {"build-id": part["build-id"], "build-date": part["build-date"]},
            "kernel": model.KERNELS.get(9, "6.1.0-cl-1-amd64"), "base-os": "Debian GNU/Linux 12.13", "onie": "N/A"}


def image_view(state):
    img = state["image"]
    files = {name: {"path": "/var/lib/nvuesim/images/" + name, "release": f.get("release"),
                    "build-id": f.get("build-id"), "sha256": f.get("sha256")} for name, f in img["files"].items()}
    return {"current": img["current"], "next": img["next"],
            "partition1": {k: v for k, v in img["partition1"].items() if k in ("build-id", "release")},
            "partition2": {k: v for k, v in img["partition2"].items() if k in ("build-id", "release")},
            "files": files}


def view(state):
    """The whole operational tree."""
    applied = state["applied"]
    out = model.filled(applied, state)
    ports = _apply_faults(provider_for(state).ports(state), state["faults"])
    glob = roce_status(applied, model.running(state)["release"])
    out.setdefault("qos", {})["roce"] = glob
    interfaces = out.setdefault("interface", {})
    for name, data in ports.items():
        intf = interfaces.setdefault(name, {"type": "swp", "link": {"mtu": model.DEFAULT_MTU, "state": {"up": {}}}})
        link = intf.setdefault("link", {})
        admin_up = "down" not in (link.get("state") or {})
        protodown = data.get("protodown")
        oper_up = admin_up and data["carrier"] and not protodown
        link["state"] = {"up": {}} if oper_up else {"down": {}}
        link["admin-status"] = "up" if admin_up else "down"
        link["oper-status"] = "up" if oper_up else "down"
        link["speed"] = data["speed"]
        link["mtu"] = data["mtu"] if data.get("mtu") is not None else link.get("mtu", model.DEFAULT_MTU)
        link["protodown"] = "enabled" if protodown else "disabled"
        # nv show interface <swp> link stats (NVUE-API.md's sample; the spec's /interface/{id}/link/stats answers
        # the if-stats schema): the provider's counters, zero where it has none [invented values]
        link["stats"] = {name: int((data.get("stats") or {}).get(name, 0)) for name in LINK_STATS}
        if protodown:
            link["protodown-reason"] = protodown
        neighbors = {}
        if oper_up:
            for nb in data["neighbors"]:
                neighbors[nb["system-name"]] = {"chassis": {"system-name": nb["system-name"],
                                                            "chassis-id": nb["chassis-id"]},
                                                "port": {"name": nb["port"], "description": nb["description"]}}
        intf["lldp"] = {"neighbor": neighbors}
        intf.setdefault("qos", {})["roce"] = port_roce(glob, data.get("counters", {}))
    system = out.setdefault("system", {})
    tree.merge(system, system_view(state))
    return out


# registers the "lab" provider (it imports register from here)
from . import labnet  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position
