# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The leaf switches' side of the fabric (docs/leaves.md): what a leaf is configured with, whether its RoCE QoS
matches the hosts cabled to it, and whether it is ready for them.

- ``host_qos(settings)`` / ``leaf_qos(tree)``: one model of lossless RoCE for both ends - from a host's roce_qos
  settings (the variables the roce_qos role takes), and from a leaf's NVUE ``qos`` tree (what the leaf role
  configures, or what ``nvue_info`` read back; NVUE's documented RoCE defaults fill what the tree leaves out).
- ``qos_mismatches(host, leaf)``: every rule of the host/leaf consistency map (trust, PFC set, DSCP to priority
  for RoCE and CNP, ECN on the RoCE traffic class, lossless mode), each a sentence with both values.
- ``leaf_config(name, entry, settings)``: the NVUE tree of one leaf from its rail plan entry (server-facing
  ports with MTU, description = the cable label, the leaf's address for the addressing scheme) and the QoS; with
  spines (the entry has uplinks) the uplink ports, the loopback and BGP unnumbered to each spine.
- ``readiness(name, entry, info, expected)``: the leaf gate on live state - the release, nothing unsaved, the
  QoS, and every cabled port up at the expected speed and MTU, not in protodown, with the LLDP neighbour the
  plan names (a swapped cable is named with both cable labels). Leaf-wide problems hold every host of the leaf,
  a port's problem only the host on that port. With spines, every planned uplink is checked the same way (the
  spine and its port as the LLDP neighbour); an uplink's problem is leaf-wide.

Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_keys import flag, release_tuple, spell
from ansible_collections.gpufabric.mlnx.plugins.module_utils._roce_qos import desired_state
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of

GLOBAL = "default-global"
# NVUE's RoCE defaults (Cumulus Linux 5.x "RDMA over Converged Ethernet - RoCE", both modes): trust pcp,dscp;
# DSCP 24-31 -> switch priority 3 (RoCE), 48-55 -> 6 (CNP), the rest -> 0; SP3 -> TC3, SP6 -> TC6, the rest -> TC0;
# ECN on TC0 and TC3; lossless mode adds PFC on switch priority 3.
DEFAULT_DSCP = {dscp: (3 if 24 <= dscp <= 31 else 6 if 48 <= dscp <= 55 else 0) for dscp in range(64)}
DEFAULT_SP_TC = {sp: (sp if sp in (3, 6) else 0) for sp in range(8)}
DEFAULT_ECN_TCS = (0, 3)
DEFAULT_PFC = (3,)
TRUST_WORDS = {"l2": {"pcp"}, "l3": {"dscp"}, "both": {"pcp", "dscp"}, "port": set()}
LEAF_MTU = 9216
MTU_RANGE = (552, 9216)
SPEED_RE = re.compile(r"[1-9][0-9]{0,3}G", re.ASCII)


class LeafError(MlnxError):
    """A leaf's settings or inputs that cannot be used, naming the leaf and the parameter."""


def _need_mapping(value, name, parameter, what):
    if not isinstance(value, Mapping):
        raise LeafError("%s: %s must be %s, not %s" % (name, parameter, what, kind_of(value)), device=name,
                        parameter=parameter)
    return value


def _need_mappings(values, name, parameter, what):
    """``values`` a mapping of mappings (the plan's cables, nvue_info's interfaces, hosts' settings)."""
    _need_mapping(values, name, parameter, "a mapping of %s" % what)
    for key, value in values.items():
        _need_mapping(value, name, "%s.%s" % (parameter, key), what)
    return values


# ---------------------------------------------------------------- the QoS model of both ends

def host_qos(settings: Mapping) -> dict:
    """A host's lossless RoCE, from its roce_qos settings (trust, pfc_priorities, ecn_priorities, cma_roce_tos,
    cnp_dscp, cnp_802p_prio): the RoCE DSCP is the RDMA-CM ToS >> 2, its priority the mlx5 default DSCP map's
    (DSCP >> 3, the roce_qos role keeps it). Raises the roce_qos module's own error on a bad value."""
    _need_mapping(settings, "roce_qos", "settings", "a mapping of roce_qos options")
    _ifaces, desired = desired_state(dict({k: v for k, v in dict(settings).items() if k != "interfaces"},
                                          interfaces=["IF"]))
    tos = desired.get("cma_roce_tos")
    dscp = tos >> 2 if tos is not None else None
    return {
        "trust": desired.get("trust"),
        "pfc": sorted(p for p, on in enumerate(desired["pfc"]) if on) if "pfc" in desired else None,
        "ecn": sorted(desired["ecn_np"]) if "ecn_np" in desired else None,
        "roce_dscp": dscp,
        "roce_priority": dscp >> 3 if dscp is not None else None,
        "cnp_dscp": desired.get("cnp_dscp"),
        "cnp_priority": desired.get("cnp_802p_prio"),
    }


def _ids(node):
    """The int ids of an NVUE collection (``{"3": {}}``), or of a plain number / list / comma text."""
    if isinstance(node, dict):
        words = list(node)
    elif isinstance(node, (list, tuple)):
        words = list(node)
    elif node is None:
        return None
    else:
        words = str(node).split(",")
    out = []
    for word in words:
        text = str(word).strip()
        if re.fullmatch(r"[0-9]{1,2}", text, re.ASCII):
            out.append(int(text))
    return sorted(set(out))


def leaf_qos(tree: Any) -> dict:
    """A leaf's lossless RoCE, from its NVUE ``qos`` tree; NVUE's RoCE defaults fill what the tree does not set."""
    qos = tree if isinstance(tree, dict) else {}
    roce = qos.get("roce") if isinstance(qos.get("roce"), dict) else {}
    # enable on|off before Cumulus Linux 5.15, state enabled|disabled from it (_nvue_keys); unset is off (the spec)
    enabled = flag(roce, ("qos", "roce"), default=False)
    mode = str(roce.get("mode") or "lossless").lower() if enabled else None
    mapping = _global(qos.get("mapping"))
    trust = mapping.get("trust")
    trust_words = TRUST_WORDS.get(str(trust).lower()) if trust is not None else None
    if trust_words is None:
        trust_words = ({w.strip() for w in str(trust).lower().split(",")} & {"pcp", "dscp"} if trust is not None
                       else ({"pcp", "dscp"} if enabled else set()))
    dscp_map = dict(DEFAULT_DSCP) if enabled else {}
    for key, value in (mapping.get("dscp") or {}).items() if isinstance(mapping.get("dscp"), dict) else ():
        sp = value.get("switch-priority") if isinstance(value, dict) else value
        if str(key).isdigit() and str(sp).isdigit():
            dscp_map[int(key)] = int(sp)
    pfc_node = _global(qos.get("pfc"))
    pfc = _ids(pfc_node.get("switch-priority")) if "switch-priority" in pfc_node else (
        list(DEFAULT_PFC) if enabled and mode == "lossless" else [])
    sp_tc = dict(DEFAULT_SP_TC)
    egress = _global(qos.get("egress-queue-mapping")).get("switch-priority")
    for key, value in egress.items() if isinstance(egress, dict) else ():
        tc = value.get("traffic-class") if isinstance(value, dict) else value
        if str(key).isdigit() and str(tc).isdigit():
            sp_tc[int(key)] = int(tc)
    ecn_tcs = set(DEFAULT_ECN_TCS) if enabled else set()
    classes = _global(qos.get("congestion-control")).get("traffic-class")
    for key, value in classes.items() if isinstance(classes, dict) else ():
        if str(key).isdigit() and isinstance(value, dict) and "ecn" in value:
            (ecn_tcs.add if str(value["ecn"]).lower() in ("enable", "enabled", "on") else ecn_tcs.discard)(int(key))
    return {"enabled": enabled, "mode": mode, "trust": sorted(trust_words), "pfc": pfc, "dscp": dscp_map,
            "sp_tc": sp_tc, "ecn_tcs": sorted(ecn_tcs)}


def _global(node):
    if isinstance(node, dict) and isinstance(node.get(GLOBAL), dict):
        return node[GLOBAL]
    return {}


def qos_mismatches(host: Mapping, leaf: Mapping) -> list[str]:
    """Where a host's RoCE QoS (``host_qos``) and its leaf's (``leaf_qos``) disagree, one sentence per rule."""
    out = []
    if not leaf.get("enabled"):
        return ["RoCE is not enabled on the leaf (nv set qos roce); the host runs lossless RoCE"]
    if host.get("pfc") and leaf.get("mode") != "lossless":
        out.append("the leaf's RoCE mode is %s, the host has PFC on priorities %s (lossless needs mode lossless)"
                   % (leaf.get("mode"), _list(host["pfc"])))
    if host.get("trust") is not None and host["trust"] not in leaf["trust"]:
        out.append("trust: the host classifies by %s, the leaf trusts %s" % (
            host["trust"], " and ".join(leaf["trust"]) or "neither pcp nor dscp (port)"))
    if host.get("pfc") is not None and sorted(host["pfc"]) != sorted(leaf["pfc"]):
        out.append("PFC priorities: the host has %s, the leaf %s (they must be the same set)" % (
            _list(host["pfc"]), _list(leaf["pfc"])))
    roce = host.get("roce_dscp")
    if roce is not None and host.get("trust") != "pcp":
        sp = leaf["dscp"].get(roce)
        if sp != host["roce_priority"]:
            out.append("RoCE DSCP %d: the host sends it on priority %d, the leaf maps it to switch priority %s" % (
                roce, host["roce_priority"], sp))
        elif host.get("ecn") is not None and host["roce_priority"] in host["ecn"]:
            tc = leaf["sp_tc"].get(sp)
            if tc not in leaf["ecn_tcs"]:
                out.append("ECN: the host marks RoCE priority %d, the leaf has no ECN on its traffic class %s "
                           "(ECN on %s)" % (sp, tc, _list(leaf["ecn_tcs"])))
    cnp = host.get("cnp_dscp")
    if cnp is not None and host.get("cnp_priority") is not None and host.get("trust") != "pcp":
        sp = leaf["dscp"].get(cnp)
        if sp != host["cnp_priority"]:
            out.append("CNP DSCP %d: the host sends CNPs on priority %d, the leaf maps DSCP %d to switch priority %s"
                       % (cnp, host["cnp_priority"], cnp, sp))
    return out


def _list(values):
    return "[%s]" % ", ".join(str(v) for v in values) if values else "none"


# ---------------------------------------------------------------- what a leaf is configured with

def leaf_qos_tree(host: Mapping) -> dict:
    """The NVUE ``qos`` tree that makes a leaf match ``host`` (a ``host_qos`` model): RoCE lossless (lossy without
    PFC), trust, the RoCE and CNP DSCPs mapped to the host's priorities, PFC on the host's PFC set, ECN on the RoCE
    priority's traffic class."""
    tree = {"roce": {"enable": "on", "mode": "lossless" if host.get("pfc") else "lossy"}}
    mapping = {}
    if host.get("trust") is not None:
        mapping["trust"] = "l3" if host["trust"] == "dscp" else "l2"
    dscp = {}
    if host.get("roce_dscp") is not None:
        dscp[str(host["roce_dscp"])] = {"switch-priority": host["roce_priority"]}
    if host.get("cnp_dscp") is not None and host.get("cnp_priority") is not None:
        dscp[str(host["cnp_dscp"])] = {"switch-priority": host["cnp_priority"]}
    if dscp:
        mapping["dscp"] = dscp
    if mapping:
        tree["mapping"] = {GLOBAL: mapping}
    if host.get("pfc") is not None:
        tree["pfc"] = {GLOBAL: {"switch-priority": {str(p): {} for p in host["pfc"]}}}
        if host["pfc"]:  # NVUE refuses PFC on a priority outside the RoCE lossless pool: the pool follows the PFC set
            tree["traffic-pool"] = {"roce-lossless": {"switch-priority": {str(p): {} for p in host["pfc"]}}}
    if host.get("roce_priority") is not None and host.get("ecn"):
        tc = DEFAULT_SP_TC.get(host["roce_priority"], 0)
        tree["congestion-control"] = {GLOBAL: {"traffic-class": {str(tc): {"ecn": "enable"}}}}
    return tree


def _setting(name, leaf, settings, key, check, default):
    value = settings.get(key, default)
    if value is None:
        return None
    if not check(value):
        raise LeafError("%s: %s=%r is not allowed (allowed: %s)" % (name, key, value, {
            "mtu": "%d-%d" % MTU_RANGE, "speed": "a speed such as 400G, or null to leave it",
            "vlan": "a VLAN id 1-4094"}[leaf]), device=name, parameter=key)
    return value


def leaf_config(name: str, entry: Mapping, settings: Mapping) -> dict:
    """The NVUE tree of leaf ``name`` from its rail plan entry and its settings: ``mtu`` (default 9216), ``speed``
    (null: left as it is), ``vlan`` (su_subnet only, default 10), ``qos`` (a roce_qos settings mapping) and
    ``release`` (the leaf's Cumulus Linux release: the renamed keys are spelled as it spells them, _nvue_keys;
    null: as releases before 5.15 do)."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("cables"), Mapping):
        raise LeafError("%s: the rail plan entry must be a leaf of gpufabric.mlnx.rail_plan (with cables), not %s"
                        % (name, kind_of(entry)), device=name, parameter="entry")
    _need_mappings(entry["cables"], name, "entry.cables", "cables (host, interface, address, cable_label)")
    _need_mapping(settings, name, "settings", "a mapping (mtu, speed, vlan, qos)")
    mtu = _setting(name, "mtu", settings, "mtu",
                   lambda v: isinstance(v, int) and not isinstance(v, bool) and MTU_RANGE[0] <= v <= MTU_RANGE[1],
                   LEAF_MTU)
    speed = _setting(name, "speed", settings, "speed", lambda v: isinstance(v, str) and SPEED_RE.fullmatch(v), None)
    vlan = _setting(name, "vlan", settings, "vlan",
                    lambda v: isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 4094, 10)
    interfaces = {}
    subnet = entry.get("address")
    for port, cable in sorted(entry["cables"].items()):
        link = {"state": {"up": {}}}
        if mtu is not None:
            link["mtu"] = mtu
        if speed is not None:
            link["speed"] = speed
        node = {"type": "swp", "link": link, "description": cable.get("cable_label")}
        if cable.get("address"):
            node["ip"] = {"address": {cable["address"]: {}}}
        elif subnet:
            node["bridge"] = {"domain": {"br_default": {"access": vlan}}}
        interfaces[port] = node
    tree = {"interface": interfaces}
    if subnet:
        svi = "vlan%d" % vlan
        interfaces[svi] = {"type": "svi", "vlan": vlan, "ip": {"address": {subnet: {}}}}
        if mtu is not None:
            interfaces[svi]["link"] = {"mtu": mtu}
        tree["bridge"] = {"domain": {"br_default": {"vlan": {str(vlan): {}}}}}
    if entry.get("uplinks"):
        _uplink_config(name, entry, tree, mtu)
    qos = settings.get("qos")
    if qos is not None:
        tree["qos"] = leaf_qos_tree(host_qos(qos))
    release = settings.get("release")
    if release is None:
        return tree
    try:
        release_tuple(release)
    except MlnxError as err:
        raise LeafError("%s: %s" % (name, err), device=name, parameter="release") from None
    return spell(tree, release)


def _uplink_config(name, entry, tree, mtu):
    """The uplinks of a plan with spines: each port up with the leaf MTU and its cable label, the loopback, and BGP
    unnumbered to each spine (eBGP, ``remote-as external``) advertising the loopback and the leaf's server
    subnets (NVUE ``network`` statements: the SU subnet with su_subnet, each /31 with p2p31)."""
    uplinks = _need_mappings(entry["uplinks"], name, "entry.uplinks", "uplinks (spine, spine_port, cable_label)")
    asn, loopback = entry.get("asn"), entry.get("loopback")
    if not isinstance(asn, int) or isinstance(asn, bool) or not isinstance(loopback, str):
        raise LeafError("%s: a rail plan entry with uplinks needs asn and loopback (gpufabric.mlnx.rail_plan with "
                        "spines), not asn %s and loopback %s" % (name, kind_of(asn), kind_of(loopback)),
                        device=name, parameter="entry")
    interfaces = tree["interface"]
    for port, uplink in sorted(uplinks.items()):
        link = {"state": {"up": {}}}
        if mtu is not None:
            link["mtu"] = mtu
        interfaces[port] = {"type": "swp", "link": link, "description": uplink.get("cable_label")}
    interfaces["lo"] = {"type": "loopback", "ip": {"address": {loopback: {}}}}
    networks = [loopback]
    if entry.get("address"):
        networks.append(str(entry.get("network")))
    else:
        networks.extend(str(ipaddress.ip_interface(c["address"]).network) for _p, c in sorted(entry["cables"].items())
                        if c.get("address"))
    tree["router"] = {"bgp": {"enable": "on", "autonomous-system": asn, "router-id": loopback.split("/")[0]}}
    tree["vrf"] = {"default": {"router": {"bgp": {
        "enable": "on",
        "neighbor": {port: {"remote-as": "external", "type": "unnumbered"} for port in sorted(uplinks)},
        "address-family": {"ipv4-unicast": {"enable": "on", "network": {net: {} for net in networks}}}}}}}


# ---------------------------------------------------------------- the leaf gate

class _NeighborIndex:
    """``{(host or spine, interface or port): (leaf, port, cable_label)}`` over the plan's leaves (their cables and
    uplinks), to name where a seen cable goes - built (and the plan's leaves checked) at the first look-up only: a
    leaf whose cables all see what the plan names never walks the plan of the whole cluster (320 leaves of cables,
    once per leaf, was the costliest step of a rehearsal of example-1250)."""

    def __init__(self, name, plan_leaves):
        self._name, self._plan_leaves, self._index = name, plan_leaves, None

    def get(self, key):
        if self._index is None:
            self._index = {}
            for leaf, entry in (self._plan_leaves or {}).items():
                _need_mapping(entry, self._name, "plan_leaves.%s" % leaf, "leaf entries")
                cables = _need_mappings(entry.get("cables") or {}, self._name, "plan_leaves.%s.cables" % leaf, "cables")
                uplinks = _need_mappings(entry.get("uplinks") or {}, self._name, "plan_leaves.%s.uplinks" % leaf,
                                         "uplinks")
                for port, cable in cables.items():
                    self._index[(cable.get("host"), cable.get("interface"))] = (leaf, port, cable.get("cable_label"))
                for port, uplink in uplinks.items():
                    self._index[(uplink.get("spine"), uplink.get("spine_port"))] = (leaf, port,
                                                                                    uplink.get("cable_label"))
        return self._index.get(key)


def _uplink_problems(name, entry, interfaces, expected, seen_index):
    """The problems of every planned uplink (up, not in protodown, the leaf MTU, the LLDP neighbour the plan names
    - the spine and its port), by port; the port checks of the server-facing ports, on the uplink's two ends."""
    out = {}
    for port, uplink in sorted((entry.get("uplinks") or {}).items()):
        cable = {"host": uplink.get("spine"), "interface": uplink.get("spine_port"),
                 "cable_label": uplink.get("cable_label")}
        found = _port_problems(name, port, cable, interfaces.get(port), {"mtu": expected.get("mtu")}, seen_index)
        if found:
            out[port] = ["uplink " + words for words in found]
    return out


def readiness(name: str, entry: Mapping, info: Mapping, expected: Mapping, plan_leaves: Mapping | None = None,
              hosts_qos: Mapping | None = None) -> dict:
    """Is leaf ``name`` ready for its hosts? ``info`` is nvue_info's result; ``expected`` holds ``release`` (the
    pinned release), ``mtu`` and ``speed`` of the server-facing ports (each null: not checked); ``hosts_qos`` maps
    the hosts cabled to the leaf to their roce_qos settings (null: not checked); ``plan_leaves`` (the plan's leaves)
    names where a cable seen on the wrong port belongs. ``{"ready", "leaf": [problems that hold every host of the
    leaf], "ports": {port: [problems]}, "hosts": {host: [problems]}, "held": [hosts not to touch]}``."""
    _need_mapping(info, name, "info", "the result of gpufabric.mlnx.nvue_info")
    _need_mapping(expected, name, "expected", "a mapping (release, mtu, speed)")
    if not isinstance(entry, Mapping):
        raise LeafError("%s: the rail plan entry must be a leaf of gpufabric.mlnx.rail_plan, not %s" % (
            name, kind_of(entry)), device=name, parameter="entry")
    _need_mappings(entry.get("cables") or {}, name, "entry.cables", "cables")
    _need_mappings(entry.get("uplinks") or {}, name, "entry.uplinks", "uplinks")
    for part in ("system", "revisions", "qos"):
        _need_mapping(info.get(part) or {}, name, "info." + part, "a mapping")
    _need_mappings(info.get("interfaces") or {}, name, "info.interfaces", "port states")
    for port, state in (info.get("interfaces") or {}).items():
        lldp = state.get("lldp") or []
        if not isinstance(lldp, list) or not all(isinstance(n, Mapping) for n in lldp):
            raise LeafError("%s: info.interfaces.%s.lldp must be a list of neighbours, not %s" % (
                name, port, kind_of(lldp)), device=name, parameter="info.interfaces.%s.lldp" % port)
    if hosts_qos is not None:
        _need_mappings(hosts_qos, name, "hosts_qos", "roce_qos settings")
    if plan_leaves is not None:
        _need_mapping(plan_leaves, name, "plan_leaves", "a mapping of leaf entries")
    leaf_wide, ports, by_host = [], {}, {}
    system = info.get("system") or {}
    release = expected.get("release")
    if release is not None and system.get("release") != str(release):
        leaf_wide.append("%s runs Cumulus Linux %s, the matrix pins %s" % (name, system.get("release"), release))
    revisions = info.get("revisions") or {}
    if revisions.get("unsaved"):
        leaf_wide.append("%s: the applied configuration is not saved (applied differs from startup: a reboot would "
                         "lose it)" % name)
    cables = entry.get("cables") or {}
    if hosts_qos is not None and "qos" in info:
        live = leaf_qos((info.get("qos") or {}).get("applied"))
        for settings, hosts in _distinct(hosts_qos):
            for words in qos_mismatches(host_qos(settings), live):
                for host in hosts:
                    by_host.setdefault(host, []).append("%s: RoCE QoS differs from %s's: %s" % (name, host, words))
    interfaces = info.get("interfaces") or {}
    seen_index = _NeighborIndex(name, plan_leaves)
    for port, cable in sorted(cables.items()):
        found = _port_problems(name, port, cable, interfaces.get(port), expected, seen_index)
        if found:
            ports[port] = found
            by_host.setdefault(cable.get("host"), []).extend(found)
    for port, found in _uplink_problems(name, entry, interfaces, expected, seen_index).items():
        ports[port] = found   # an uplink is the way out of the leaf for all its servers: leaf-wide
        leaf_wide.extend(found)
    hosts = {}
    for cable in cables.values():
        host = cable.get("host")
        words = leaf_wide + by_host.get(host, [])
        if words:
            hosts[host] = list(dict.fromkeys(words))
    return {"ready": not leaf_wide and not ports and not by_host, "leaf": leaf_wide, "ports": ports, "hosts": hosts,
            "held": sorted(hosts)}


def _distinct(hosts_qos):
    groups = {}
    for host, settings in sorted(hosts_qos.items()):
        key = repr(sorted(dict(settings).items(), key=repr))
        groups.setdefault(key, (settings, []))[1].append(host)
    return list(groups.values())


def _port_problems(name, port, cable, state, expected, seen_index):
    label = cable.get("cable_label")
    where = "%s:%s (cable %s)" % (name, port, label)
    if state is None:
        return ["%s is not a port of the switch" % where]
    found = []
    if state.get("protodown"):
        reason = state.get("protodown_reason") or "no reason given"
        found.append("%s is in protodown (%s): clear it with nv action clear interface %s link flap-protection "
                     "violation once the cause is fixed" % (where, reason, port))
    if state.get("oper_status") != "up":
        found.append("%s is %s" % (where, state.get("oper_status") or "not up"))
    if expected.get("speed") is not None and state.get("speed") != expected["speed"]:
        found.append("%s runs at %s, expected %s" % (where, state.get("speed"), expected["speed"]))
    if expected.get("mtu") is not None and state.get("mtu") != expected["mtu"]:
        found.append("%s has MTU %s, expected %s" % (where, state.get("mtu"), expected["mtu"]))
    found.extend(_lldp_problems(name, port, cable, state.get("lldp") or [], seen_index))
    return found


def _lldp_problems(name, port, cable, neighbors, seen_index):
    want = (cable.get("host"), cable.get("interface"))
    label = cable.get("cable_label")
    if not neighbors:
        return ["%s:%s (cable %s) has no LLDP neighbour (expected %s:%s)" % (name, port, label, want[0], want[1])]
    seen = [(n.get("system_name"), n.get("port")) for n in neighbors]
    if any(s[0] == want[0] and (want[1] is None or s[1] == want[1]) for s in seen):
        return []
    out = []
    for host, interface in seen:
        other = seen_index.get((host, interface))
        if other is not None:
            out.append("%s:%s sees %s:%s, which the cabling plan puts on %s:%s - cables swapped? this port's cable is "
                       "%s, the one seen is %s" % (name, port, host, interface, other[0], other[1], label, other[2]))
        else:
            out.append("%s:%s (cable %s) sees %s:%s as LLDP neighbour, expected %s:%s" % (
                name, port, label, host, interface, want[0], want[1]))
    return out
