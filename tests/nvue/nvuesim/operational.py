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


# ---------- the PHY counters (nv show interface <swp> link phy-detail; link phy health from 5.15)
# tests/nvue/spec/README.md, "Beside the extract: the PHY counters": what the documentation says and what is invented.

PHY_PATHS = {("link", "phy-detail"): ((5, 10, 0), (5, 15, 0)),     # path -> (first release, first without it)
             ("link", "phy", "health"): ((5, 15, 0), None)}
PHY_LANES = 8                     # every documented sample prints lanes 0-7, a 100G port's too
CODEWORD_BITS = 5440              # an RS(544,514) codeword of 10-bit symbols [the histogram's model is invented]
NO_ERRORS = "15E-255"             # the switch's rate when it counted no error (the samples)
SPEED_UNITS = {"M": 10 ** 6, "G": 10 ** 9}


def speed_bps(speed):
    """'400G' -> 400e9 bit/s; 0 for a speed the emulator cannot read."""
    text = str(speed or "")
    if text[:-1].isdigit() and text[-1:] in SPEED_UNITS:
        return int(text[:-1]) * SPEED_UNITS[text[-1]]
    return 0


def rate_text(errors, bits):
    """A bit error rate as the switch prints it: one significant digit, ``<m>E<exp>`` (raw-ber 9.5e-8 is printed
    1E-7 in the 5.12 sample); ``15E-255`` when nothing was counted."""
    if errors <= 0 or bits <= 0:
        return NO_ERRORS
    mantissa, exponent = ("%.0e" % (errors / bits)).split("e")
    return "%dE%d" % (int(mantissa), int(exponent))


def phy_since(state, name):
    """When the port's PHY counters started: the boot, or the last time a port_down / protodown fault of it was
    cleared (the port came up again) [invented: a real switch counts from the last clear]."""
    return max(state["boot"]["booted_at"], float((state.get("phy_since") or {}).get(name, 0)))


def phy_answer(state, name, path, now=None):
    """The body of ``GET /interface/<name>/<path>`` (``path`` a key of PHY_PATHS) at ``now``, or None for 404: the
    path is not the running release's (before 5.10 none; 5.15 renamed it), the switch is a Spectrum-1 (the
    ``spectrum1`` fault), the port does not exist. The model [invented where the samples do not say]:

    - ``phy-received-bits`` = the port's speed x the seconds since its counters started (:func:`phy_since`), idle
      time included - as the samples divide (README) and as the mlx5 kernel documentation says of rx_bits_phy;
      a port that is down now has counted nothing since it came up last: 0 bits, 0 errors [invented];
    - raw errors: ``raw_ber`` fault (BER b planted at t0) -> int(b x speed x seconds since max(t0, start)), spread
      over the 8 lanes (lane 0 first for the remainder) [invented]; ``raw-ber`` = raw errors / bits with one
      significant digit, as sample B computes; lane rates = lane errors / (bits / 8), ``0`` for none (sample A);
    - effective errors: the ``effective_errors`` fault's count, symbol errors the same (no PLR on Ethernet)
      [invented]; their rates = count / bits;
    - ``rs-num-corr-err-bin0`` = codewords without a corrected error, ``bin1`` = one per raw error [invented];
    - ``time-since-last-clear-min``: whole minutes since the counters started, rounded down (sample C);
    - values: counters and minutes JSON integers, rates strings [invented: the JSON types are not documented]."""
    now = time.time() if now is None else now
    window = PHY_PATHS.get(tuple(path))
    if window is None or "spectrum1" in state["faults"]:
        return None
    release = model.release_tuple(model.running(state)["release"])
    if release < window[0] or (window[1] is not None and release >= window[1]):
        return None
    ports = _apply_faults(provider_for(state).ports(state), state["faults"])
    if name not in ports:
        return None
    data = ports[name]
    link = tree.get(state["applied"], ["interface", name, "link"], None) or {}
    admin_up = "down" not in ((link.get("state") if isinstance(link, dict) else None) or {})
    up = admin_up and data["carrier"] and not data.get("protodown")
    speed = speed_bps(data["speed"])
    start = phy_since(state, name)
    seconds = max(0.0, now - start)
    bits = int(speed * seconds) if up else 0
    raw = 0
    plant = (state["faults"].get("raw_ber") or {}).get(name)
    if up and plant:
        raw = int(plant["ber"] * speed * max(0.0, now - max(start, plant["since"])))
    effective = int((state["faults"].get("effective_errors") or {}).get(name, 0)) if up else 0
    lanes = [raw // PHY_LANES + (1 if lane < raw % PHY_LANES else 0) for lane in range(PHY_LANES)]
    codewords = bits // CODEWORD_BITS
    corrected = min(raw, codewords)
    out = {"time-since-last-clear-min": int(seconds // 60), "phy-received-bits": bits,
           "symbol-errors": effective, "effective-errors": effective}
    out.update(("phy-raw-errors-lane%d" % lane, count) for lane, count in enumerate(lanes))
    out.update({"raw-ber": rate_text(raw, bits), "symbol-ber": rate_text(effective, bits),
                "effective-ber": rate_text(effective, bits)})
    out.update(("raw-ber-lane%d" % lane, rate_text(count, bits / PHY_LANES) if count else "0")
               for lane, count in enumerate(lanes))
    out.update(("rs-num-corr-err-bin%d" % n, (codewords - corrected) if n == 0 else (corrected if n == 1 else 0))
               for n in range(16))
    return out


# registers the "lab" provider (it imports register from here)
from . import labnet  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position
