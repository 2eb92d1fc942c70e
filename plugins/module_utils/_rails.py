# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compute rails of one host, from its entries of the rail plan (_rail_plan.plan()["hosts"][host]):
address, MTU, one routing table per rail with its connected and default routes, ``ip rule from
<address> table <n>``, and the ARP/reverse-path sysctls multi-NIC same-subnet hosts need.

Read with iproute2's JSON output (``ip -j addr show``, ``ip -j rule show``, ``ip -j route show table
N`` - a table without routes does not exist: exit 2, ``FIB table does not exist``) and
``/proc/sys/net/ipv4/conf/IF/*``. ``plan`` (pure) gives the ``ip`` argv lists and sysctl writes that
bring the running system to the plan without a network restart; only the rail interfaces are ever
named. ``netplan``, ``nm_keyfile`` and ``ifupdown`` (pure) render the same state for the host's
network stack so it comes back at boot.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from typing import Any, Collection

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _forecast
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, MlnxError, Refused
from ansible_collections.gpufabric.mlnx.plugins.module_utils._files import check_path, converge_files
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import IFNAME_ALLOWED, IFNAME_RE, is_whole

SYSCTLS = {"arp_ignore": 1, "arp_announce": 2, "rp_filter": 2}
SYSCTL_PATH = "/proc/sys/net/ipv4/conf/%s/%s"
RULE_PRIORITY_BASE = 1000        # rail k: priority 1000 + k, before main (32766)
ENTRY_KEYS = ("rail", "interface", "address", "prefix", "gateway", "table")
MAX_RAILS = 64                   # rails 0-63 (the rail plan's bound too)
MAX_TABLE = 2 ** 32 - 1          # a routing table is a 32-bit number
# Tables a rail must never take: 0 is "unspec" (ip reads it as "all tables"), 253-255 are the kernel's own.
RESERVED_TABLES = {0: "unspec", 253: "default", 254: "main", 255: "local"}
TABLE_ALLOWED = "a whole number 1-%d other than the kernel's own tables 253 (default), 254 (main), 255 (local)" % MAX_TABLE


def _bad(host, where, why, allowed):
    return InvalidValue("rails: %s: %s %s; allowed: %s. Nothing was changed." % (host, where, why, allowed),
                        parameter=where, allowed=allowed)


def check_entry(host: str, where: str, entry: dict) -> None:
    """The words of one plan entry that go into argv lists, sysctl paths and the persisted files (netplan,
    NetworkManager keyfiles, ifupdown stanzas that a shell runs): each of a strict grammar, else InvalidValue."""
    if not is_whole(entry["rail"]) or not 0 <= entry["rail"] < MAX_RAILS:
        raise _bad(host, where + ".rail", "is %r" % (entry["rail"],), "a whole number 0-%d" % (MAX_RAILS - 1))
    if not isinstance(entry["interface"], str) or not IFNAME_RE.fullmatch(entry["interface"]):
        raise _bad(host, where + ".interface", "is %r, not one network interface name" % (entry["interface"],),
                   IFNAME_ALLOWED)
    table = entry["table"]
    if not is_whole(table) or not 0 <= table <= MAX_TABLE or table in RESERVED_TABLES:
        why = ("is %r, the kernel's table %s" % (table, RESERVED_TABLES[table]) if is_whole(table) and
               table in RESERVED_TABLES else "is %r" % (table,))
        raise _bad(host, where + ".table", why, TABLE_ALLOWED)
    for key in ("address", "gateway"):
        if not isinstance(entry[key], str):
            raise _bad(host, "%s.%s" % (where, key), "is %r, not a string" % (entry[key],), "an IPv4 address")
    if not is_whole(entry["prefix"]) and not (isinstance(entry["prefix"], str) and entry["prefix"].isascii()
                                              and entry["prefix"].isdigit()):
        raise _bad(host, where + ".prefix", "is %r" % (entry["prefix"],), "a prefix length 0-32")


def check_options(host: str, *, mtu: Any = 9000, sysctls: Any = None) -> dict:
    """The module's ``mtu`` and ``sysctls`` checked (InvalidValue naming the option); returns the sysctls to set.
    The preflight checks the rails role's variables with it before any host is changed."""
    if not is_whole(mtu) or not 68 <= mtu <= 9216:
        raise _bad(host, "mtu", "is %r" % (mtu,), "an integer 68-9216 (9000 for RoCE)")
    if sysctls is not None and not isinstance(sysctls, dict):
        raise _bad(host, "sysctls", "is %r, not a mapping" % (sysctls,), "a mapping of %s to a number" % ", ".join(SYSCTLS))
    wanted_sysctls = dict(SYSCTLS if sysctls is None else sysctls)
    for name, value in wanted_sysctls.items():
        allowed = {"arp_ignore": range(0, 9), "arp_announce": range(0, 3), "rp_filter": range(0, 3)}.get(name)
        if allowed is None:
            raise _bad(host, "sysctls.%s" % name, "is not managed", ", ".join(SYSCTLS))
        if not is_whole(value) or value not in allowed:
            raise _bad(host, "sysctls.%s" % name, "is %r" % (value,), "%d-%d" % (allowed[0], allowed[-1]))
    return wanted_sysctls


def desired_state(host: str, entries: Any, *, mtu: Any = 9000, sysctls: Any = None,
                  mgmt_interfaces: Collection[str] = ()) -> dict:
    """The host's plan entries -> ``[{rail, interface, address, prefix, network, gateway, table, priority}]``.

    Raises InvalidValue for a malformed entry, a duplicated interface/table/address, an MTU outside
    68-9216, a sysctl outside its values, or a rail on a management interface (naming the host and entry).
    """
    if not isinstance(entries, list) or not entries:
        raise _bad(host, "rails", "is %r, not the host's list of rail plan entries" % (entries,),
                   "gpufabric_rail_plan.hosts[<host>]")
    wanted_sysctls = check_options(host, mtu=mtu, sysctls=sysctls)
    out, seen = [], {}
    for index, entry in enumerate(entries):
        where = "rails[%d]" % index
        if not isinstance(entry, dict) or any(entry.get(k) is None for k in ENTRY_KEYS):
            lacking = [k for k in ENTRY_KEYS if not isinstance(entry, dict) or entry.get(k) is None]
            raise _bad(host, where, "lacks %s" % ", ".join(lacking),
                       "an entry of gpufabric_rail_plan.hosts[<host>] (%s)" % ", ".join(ENTRY_KEYS))
        check_entry(host, where, entry)
        try:
            iface = ipaddress.IPv4Interface("%s/%s" % (entry["address"], entry["prefix"]))
            gateway = ipaddress.IPv4Address(entry["gateway"])
        except (ValueError, TypeError) as exc:
            raise _bad(host, where, "has a bad address, prefix or gateway (%s)" % exc, "IPv4") from exc
        if gateway not in iface.network:
            raise _bad(host, where, "gateway %s is outside %s" % (gateway, iface.network), "an address of the rail's "
                       "network")
        name = entry["interface"]
        if name in mgmt_interfaces:
            raise Refused("rails: %s: %s puts rail %s on %s, the management interface. Nothing was changed."
                          % (host, where, entry["rail"], name), device=name, parameter=where)
        for key, value in (("interface", name), ("table", entry["table"]), ("address", str(iface.ip))):
            if (key, value) in seen:
                raise _bad(host, where, "repeats %s %s of %s" % (key, value, seen[(key, value)]), "one rail per "
                           "interface, table and address")
            seen[(key, value)] = where
        out.append({"rail": entry["rail"], "interface": name, "address": str(iface.ip), "prefix": iface.network.prefixlen,
                    "network": str(iface.network), "gateway": str(gateway), "table": entry["table"],
                    "priority": RULE_PRIORITY_BASE + entry["rail"]})
    return {"rails": out, "mtu": mtu, "sysctls": wanted_sysctls}


# ---------------------------------------------------------------------------------- reading (iproute2 JSON)

def parse_json(text: str | None, what: str) -> list:
    try:
        data = json.loads(text or "[]")
    except ValueError as exc:
        raise MlnxError("rails: cannot parse %s output: %s" % (what, exc), stdout=text) from exc
    if not isinstance(data, list):
        raise MlnxError("rails: %s output is not a list" % what, stdout=text)
    return data


def links(addr_json: list) -> dict:
    """``ip -j addr show`` -> ``{ifname: {"mtu", "up", "inet": ["a.b.c.d/p", ...] (global scope)}}``."""
    out = {}
    for link in addr_json:
        out[link.get("ifname")] = {
            "mtu": link.get("mtu"), "up": "UP" in (link.get("flags") or []),
            "inet": ["%s/%s" % (a["local"], a["prefixlen"]) for a in link.get("addr_info") or []
                     if a.get("family") == "inet" and a.get("scope", "global") == "global"]}
    return out


def rules(rule_json: list) -> list[dict]:
    """``ip -j rule show`` -> ``[{"priority", "src", "table"}]`` (IPv4 rules; src 'all' or an address[/len])."""
    out = []
    for rule in rule_json:
        src = rule.get("src", "all")
        if rule.get("srclen") not in (None, 32):
            src = "%s/%s" % (src, rule["srclen"])
        out.append({"priority": rule.get("priority"), "src": src, "table": str(rule.get("table"))})
    return out


def routes(route_json: list) -> dict:
    """``ip -j route show table N`` -> ``{dst: {"dev", "gateway", "prefsrc"}}``."""
    return {r.get("dst"): {"dev": r.get("dev"), "gateway": r.get("gateway"), "prefsrc": r.get("prefsrc")}
            for r in route_json}


# ---------------------------------------------------------------------------------- deciding

def plan(current: dict, desired: dict) -> dict:
    """Pure: ``{"changes": {rail interface: [what, ...]}, "steps": [{"argv": [...]} | {"write", "value"}],
    "before": {rail interface: {setting: value}}, "after": {...}}`` - ``before``/``after`` hold, per interface that
    differs, only its settings that differ (``mtu``, ``up``, ``addresses``, ``table N route NET``, ``table N
    default``, ``rules``, each sysctl), as the host has them and as planned (None: absent).

    ``current``: ``{"links", "rules", "routes": {table: routes()}, "sysctls": {interface: {name: int|None}}}``.
    A rail interface that is not there raises Refused (nothing is written). Other interfaces are never named.
    """
    changes, steps, before, after = {}, [], {}, {}
    missing = [r["interface"] for r in desired["rails"] if r["interface"] not in current["links"]]
    if missing:
        raise Refused("rails: %s not on this host (interfaces: %s). Nothing was changed." % (
            ", ".join(missing), ", ".join(sorted(n for n in current["links"] if n)) or "none"),
            device=missing, parameter="rails", allowed=sorted(n for n in current["links"] if n))
    for rail in desired["rails"]:
        name, what, was, wanted = rail["interface"], [], {}, {}
        link = current["links"][name]
        if link["mtu"] != desired["mtu"]:
            was["mtu"], wanted["mtu"] = link["mtu"], desired["mtu"]
            what.append("mtu %s -> %s" % (link["mtu"], desired["mtu"]))
            steps.append({"argv": ["ip", "link", "set", "dev", name, "mtu", str(desired["mtu"])]})
        if not link["up"]:
            was["up"], wanted["up"] = False, True
            what.append("up")
            steps.append({"argv": ["ip", "link", "set", "dev", name, "up"]})
        want = "%s/%s" % (rail["address"], rail["prefix"])
        if list(link["inet"]) != [want]:
            was["addresses"], wanted["addresses"] = list(link["inet"]), [want]
        for stale in link["inet"]:
            if stale != want:
                what.append("address %s removed" % stale)
                steps.append({"argv": ["ip", "addr", "del", stale, "dev", name]})
        if want not in link["inet"]:
            what.append("address %s" % want)
            steps.append({"argv": ["ip", "addr", "replace", want, "dev", name]})
        table = current["routes"].get(rail["table"], {})
        connected = {"dev": name, "gateway": None, "prefsrc": rail["address"]}
        if table.get(rail["network"]) != connected:
            key = "table %d route %s" % (rail["table"], rail["network"])
            was[key], wanted[key] = table.get(rail["network"]), connected
            what.append("table %d route %s" % (rail["table"], rail["network"]))
            steps.append({"argv": ["ip", "route", "replace", rail["network"], "dev", name, "src", rail["address"],
                                   "table", str(rail["table"])]})
        default = {"dev": name, "gateway": rail["gateway"], "prefsrc": None}
        if table.get("default") != default:
            key = "table %d default" % rail["table"]
            was[key], wanted[key] = table.get("default"), default
            what.append("table %d default via %s" % (rail["table"], rail["gateway"]))
            steps.append({"argv": ["ip", "route", "replace", "default", "via", rail["gateway"], "dev", name,
                                   "table", str(rail["table"])]})
        for stale in table:
            if stale not in (rail["network"], "default"):
                key = "table %d route %s" % (rail["table"], stale)
                was[key], wanted[key] = table[stale], None
                what.append("table %d route %s removed" % (rail["table"], stale))
                steps.append({"argv": ["ip", "route", "del", stale, "table", str(rail["table"])]})
        wanted_rule = {"priority": rail["priority"], "src": rail["address"], "table": str(rail["table"])}
        ours = [r for r in current["rules"] if r["priority"] == rail["priority"] or r["table"] == str(rail["table"])]
        if wanted_rule not in ours or any(stale != wanted_rule for stale in ours):
            was["rules"], wanted["rules"] = ours, [wanted_rule]
        for stale in ours:
            if stale != wanted_rule:
                what.append("rule %s from %s table %s removed" % (stale["priority"], stale["src"], stale["table"]))
                steps.append({"argv": ["ip", "rule", "del", "priority", str(stale["priority"]), "from", stale["src"],
                                       "table", stale["table"]]})
        if wanted_rule not in ours:
            what.append("rule %d from %s table %d" % (rail["priority"], rail["address"], rail["table"]))
            steps.append({"argv": ["ip", "rule", "add", "priority", str(rail["priority"]), "from", rail["address"],
                                   "table", str(rail["table"])]})
        for key, value in sorted(desired["sysctls"].items()):
            have = current["sysctls"].get(name, {}).get(key)
            if have != value:
                was[key], wanted[key] = have, value
                what.append("%s %s -> %s" % (key, have, value))
                steps.append({"write": SYSCTL_PATH % (name, key), "value": str(value)})
        if what:
            changes[name] = what
            before[name], after[name] = was, wanted
    return {"changes": changes, "steps": steps, "before": before, "after": after}


# ---------------------------------------------------------------------------------- deciding: the persisted files (pure renderers)

def netplan(desired: dict) -> dict:
    """netplan YAML (as a dict) for /etc/netplan/90-gpufabric-rails.yaml: the rails only, matched by name."""
    ethernets = {}
    for rail in desired["rails"]:
        ethernets[rail["interface"]] = {
            "mtu": desired["mtu"], "dhcp4": False, "dhcp6": False, "link-local": [], "optional": True,
            "addresses": ["%s/%s" % (rail["address"], rail["prefix"])],
            "routes": [{"to": rail["network"], "scope": "link", "from": rail["address"], "table": rail["table"]},
                       {"to": "default", "via": rail["gateway"], "table": rail["table"]}],
            "routing-policy": [{"from": rail["address"], "table": rail["table"], "priority": rail["priority"]}]}
    return {"network": {"version": 2, "ethernets": ethernets}}


def nm_keyfile(desired: dict, rail: dict) -> str:
    """NetworkManager keyfile text of one rail (/etc/NetworkManager/system-connections/gpufabric-railK.nmconnection)."""
    lines = [
        "# gpufabric.mlnx rails - managed by Ansible, local changes are overwritten.",
        "[connection]", "id=gpufabric-rail%s" % rail["rail"], "type=ethernet", "interface-name=%s" % rail["interface"],
        "autoconnect=true", "", "[ethernet]", "mtu=%d" % desired["mtu"], "",
        "[ipv4]", "method=manual", "address1=%s/%s" % (rail["address"], rail["prefix"]),
        "route1=%s" % rail["network"], "route1_options=table=%d,src=%s" % (rail["table"], rail["address"]),
        "route2=0.0.0.0/0,%s" % rail["gateway"], "route2_options=table=%d" % rail["table"],
        "routing-rule1=priority %d from %s table %d" % (rail["priority"], rail["address"], rail["table"]),
        "never-default=true", "", "[ipv6]", "method=disabled", ""]
    return "\n".join(lines)


def ifupdown(desired: dict) -> str:
    """/etc/network/interfaces.d/gpufabric-rails (Debian's ifupdown): static address, MTU, table and rule."""
    out = ["# gpufabric.mlnx rails - managed by Ansible, local changes are overwritten."]
    for rail in desired["rails"]:
        table = str(rail["table"])
        out += ["", "auto %s" % rail["interface"], "iface %s inet static" % rail["interface"],
                "    address %s/%s" % (rail["address"], rail["prefix"]), "    mtu %d" % desired["mtu"],
                "    post-up ip route replace %s dev %s src %s table %s" % (rail["network"], rail["interface"],
                                                                            rail["address"], table),
                "    post-up ip route replace default via %s dev %s table %s" % (rail["gateway"], rail["interface"], table),
                "    post-up ip rule add priority %d from %s table %s || true" % (rail["priority"], rail["address"], table),
                "    pre-down ip rule del priority %d from %s table %s || true" % (rail["priority"], rail["address"], table)]
    return "\n".join(out) + "\n"


def sysctl_conf(desired: dict) -> str:
    """/etc/sysctl.d/90-gpufabric-rails.conf: the ARP and rp_filter settings of each rail interface."""
    out = ["# gpufabric.mlnx rails - managed by Ansible, local changes are overwritten.",
           "# Several NICs in one host answer ARP only for their own address and route by source (arp_ignore=1,",
           "# arp_announce=2, loose rp_filter=2)."]
    for rail in desired["rails"]:
        for key, value in sorted(desired["sysctls"].items()):
            out.append("net.ipv4.conf.%s.%s = %d" % (rail["interface"].replace(".", "/"), key, value))
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------- input: kept at boot

PROVIDERS = ("auto", "netplan", "networkmanager", "ifupdown", "none")
# provider auto: the first of these the host has (as the role's stat of each path did).
PROVIDER_TOOLS = (("netplan", "/usr/sbin/netplan"), ("networkmanager", "/usr/bin/nmcli"), ("ifupdown", "/sbin/ifup"))
BOOT_FILES = {"netplan_file": "/etc/netplan/90-gpufabric-rails.yaml",
              "nm_dir": "/etc/NetworkManager/system-connections",
              "ifupdown_file": "/etc/network/interfaces.d/gpufabric-rails",
              "sysctl_file": "/etc/sysctl.d/90-gpufabric-rails.conf"}
NETPLAN_HEAD = "# gpufabric.mlnx rails - managed by Ansible\n"


# ---------------------------------------------------------------------------------- reading: the network stack

def provider_of(reader: Any, wanted: str) -> str:
    """``wanted``, or for ``auto`` the first network stack of PROVIDER_TOOLS the host has (``none`` without any)."""
    if wanted not in PROVIDERS:
        raise InvalidValue("rails: provider=%r is not one of %s. Nothing was changed." % (wanted, ", ".join(PROVIDERS)),
                           parameter="provider", allowed=list(PROVIDERS))
    if wanted != "auto":
        return wanted
    for name, tool in PROVIDER_TOOLS:
        if os.path.lexists(reader.path(tool)):
            return name
    return "none"


# ---------------------------------------------------------------------------------- deciding: the files kept at boot

def boot_files(desired: dict, provider: str, paths: dict) -> list[dict]:
    """The files that keep the rails at boot, in the order they are written: sysctl.d (when ``paths["sysctl_file"]``
    is set), then the provider's (netplan file checked with ``netplan generate``; a NetworkManager keyfile per rail;
    the ifupdown stanzas, their directory made when missing)."""
    files = []
    if paths.get("sysctl_file"):
        files.append({"path": paths["sysctl_file"], "content": sysctl_conf(desired), "mode": 0o644})
    if provider == "netplan":
        files.append({"path": paths["netplan_file"], "content": NETPLAN_HEAD + netplan_yaml(netplan(desired)),
                      "mode": 0o600, "validate": ["netplan", "generate", "--root-dir", "/", "%s"]})
    elif provider == "networkmanager":
        for rail in desired["rails"]:
            files.append({"path": "%s/gpufabric-rail%s.nmconnection" % (paths["nm_dir"].rstrip("/"), rail["rail"]),
                          "content": nm_keyfile(desired, rail), "mode": 0o600, "load": True})
    elif provider == "ifupdown":
        files.append({"path": paths["ifupdown_file"], "content": ifupdown(desired), "mode": 0o644, "make_parent": True})
    return files


# ---------------------------------------------------------------------------------- deciding: netplan's YAML text

# What a YAML 1.1 reader would take for something other than a string (PyYAML's implicit resolvers for the
# characters a rail's words may hold): such a string is single-quoted, as ansible's to_nice_yaml quotes it.
_NOT_STR = re.compile(r"""(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
    |null|Null|NULL|~
    |[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
    |[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+
    |[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9])""", re.X | re.ASCII)
_PLAIN = re.compile(r"[A-Za-z0-9_./+-]+", re.ASCII)


def _yaml_scalar(value: Any) -> str:
    if value is True or value is False:
        return "true" if value else "false"
    if value is None:
        return "null"
    if is_whole(value):
        return str(value)
    if isinstance(value, str) and _PLAIN.fullmatch(value) and not value.startswith("- "):
        return "'%s'" % value if _NOT_STR.fullmatch(value) else value
    raise InvalidValue("rails: %r cannot be written into the netplan file (allowed: %s)" % (value, IFNAME_ALLOWED),
                       parameter="rails")


def _yaml_map(data: dict, indent: int, out: list) -> None:
    for key in sorted(data):
        value, head = data[key], " " * indent + _yaml_scalar(key) + ":"
        if isinstance(value, dict) and value:
            out.append(head)
            _yaml_map(value, indent + 2, out)
        elif isinstance(value, list) and value:
            out.append(head)
            for item in value:
                if isinstance(item, dict) and item:
                    lines = []
                    _yaml_map(item, indent + 2, lines)
                    out.append(" " * indent + "- " + lines[0][indent + 2:])
                    out.extend(lines[1:])
                else:
                    out.append(" " * indent + "- " + _yaml_scalar(item))
        else:
            out.append(head + " " + ("{}" if value == {} else "[]" if value == [] else _yaml_scalar(value)))


def netplan_yaml(data: dict) -> str:
    """Pure: ``netplan()``'s data as YAML text, byte for byte what ansible's ``to_nice_yaml(indent=2)`` makes of it
    (keys sorted, block style, a sequence at its key's indentation) - the module has no PyYAML to rely on."""
    out: list = []
    _yaml_map(data, 0, out)
    return "\n".join(out) + "\n"


def forecast_msg(host: str, desired: dict, wait: dict) -> str:
    """What a check run that waits for a driver change or an activation reports (``_forecast.waiting``)."""
    return "%s: %s not on the host before %s of this run: the rails %s would be configured after it" % (
        host, ", ".join(wait["absent"]), wait["event"], ", ".join(
            "%s %s/%s table %s" % (r["interface"], r["address"], r["prefix"], r["table"]) for r in desired["rails"]))


# ---------------------------------------------------------------------------------- the whole job

def _ip_json(reader, argv, what, missing_ok=False):
    rc, out, err = reader.run(argv, check=False)
    if rc != 0:
        if missing_ok and "FIB table does not exist" in (err or ""):
            return []
        raise MlnxError("rails: %s failed (rc=%d): %s" % (" ".join(argv), rc, (err or out or "").strip()),
                        cmd=argv, rc=rc, stdout=out, stderr=err)
    return parse_json(out, what)


def read_state(reader: Any, desired: dict) -> dict:
    state = {"links": links(_ip_json(reader, ["ip", "-j", "addr", "show"], "ip -j addr show")),
             "rules": rules(_ip_json(reader, ["ip", "-4", "-j", "rule", "show"], "ip -j rule show")),
             "routes": {}, "sysctls": {}}
    for rail in desired["rails"]:
        state["routes"][rail["table"]] = routes(_ip_json(
            reader, ["ip", "-4", "-j", "route", "show", "table", str(rail["table"])], "ip -j route show",
            missing_ok=True))
        values = {}
        for key in desired["sysctls"]:
            text = reader.read_sys(SYSCTL_PATH % (rail["interface"], key))
            values[key] = int(text) if text is not None and text.strip().isdigit() else None
        state["sysctls"][rail["interface"]] = values
    return state


def converge(reader: Any, host: str, entries: Any, *, mtu: Any = 9000, sysctls: Any = None,
             mgmt_interfaces: Collection[str] = (), check_mode: bool = False) -> dict:
    """Everything the module does: ``{"changed", "changes", "steps", "desired", "before", "after"}``; raises before
    any write on bad input or a missing interface, and after the writes when something did not take."""
    desired = desired_state(host, entries, mtu=mtu, sysctls=sysctls, mgmt_interfaces=mgmt_interfaces)
    decided = plan(read_state(reader, desired), desired)
    if decided["steps"] and not check_mode:
        for step in decided["steps"]:
            if "argv" in step:
                reader.run(step["argv"])
            else:
                try:
                    reader.write_sys(step["write"], step["value"])
                except OSError as exc:
                    raise MlnxError("rails: %s: cannot write %s to %s: %s" % (host, step["value"], step["write"], exc),
                                    parameter=step["write"]) from exc
        still = plan(read_state(reader, desired), desired)["changes"]
        if still:
            raise MlnxError("rails: %s: did not take: %s" % (host, "; ".join(
                "%s: %s" % (k, ", ".join(v)) for k, v in sorted(still.items()))), device=sorted(still))
    return {"changed": bool(decided["changes"]), "changes": decided["changes"], "steps": decided["steps"],
            "desired": desired, "before": decided["before"], "after": decided["after"]}


def run(reader: Any, files: Any, host: str, params: dict, *, mgmt: Any, check_mode: bool = False) -> dict:
    """The module's whole job: the plan entries checked (a host without entries: ``not_planned``), the check-mode
    forecast (``_forecast.waiting``: a driver change or an activation of this run, and rails not on the host yet -
    nothing read, every rail reported as to be configured after it), else ``converge`` on the running system and the
    files that keep the rails at boot (``boot_files``; a NetworkManager keyfile that changed is loaded with ``nmcli
    connection load``, never activated). ``reader`` reads and changes the running system (procfs under the module's
    root); ``files``, the files (host paths); ``mgmt``: a function that returns the management interfaces (run only
    when the host is read). Returns ``{"changed", "changes", "steps", "desired", "before", "after", "provider",
    "files", "waiting", "msg", "diff"}``."""
    entries = params["rails"]
    if entries == [] and params.get("plan_hosts") is not None:
        raise _forecast.not_planned(host, params["plan_hosts"], params.get("plan_group"))
    desired = desired_state(host, entries, mtu=params["mtu"], sysctls=params["sysctls"])
    driver_action, pending = _forecast.check_options("rails", params.get("driver_action"),
                                                     params.get("pending_activation"))
    paths = {key: check_path(params.get(key) or default, key, host, named=False) for key, default in BOOT_FILES.items()}
    paths["sysctl_file"] = paths["sysctl_file"] if params.get("sysctl_file") else None
    provider = provider_of(files, params.get("provider") or "none")
    wait = _forecast.waiting(reader, [r["interface"] for r in desired["rails"]], check_mode=check_mode,
                             driver_action=driver_action, pending_activation=pending)
    if wait:
        return {"changed": True, "changes": {}, "steps": [], "desired": desired, "before": {}, "after": {},
                "provider": provider, "files": [], "waiting": wait, "msg": forecast_msg(host, desired, wait),
                "diff": []}
    result = converge(reader, host, entries, mtu=params["mtu"], sysctls=params["sysctls"],
                      mgmt_interfaces=mgmt(), check_mode=check_mode)
    wanted = boot_files(desired, provider, paths)
    planned = converge_files(files, wanted, check_mode=check_mode)
    for spec, decided in zip(wanted, planned):
        if spec.get("load") and decided["changed"] and not check_mode:
            files.run(["nmcli", "connection", "load", files.path(spec["path"])])
    changed_files = [p["path"] for p in planned if p["changed"]]
    changes = result["changes"]
    verb = "would change" if check_mode else "changed"
    msg = ("%s %s" % (verb, "; ".join("%s: %s" % (k, ", ".join(v)) for k, v in sorted(changes.items())))
           if changes else "rails already as planned on %s" % ", ".join(r["interface"] for r in desired["rails"]))
    msg = "%s: %s; kept at boot by %s%s" % (host, msg, provider, "" if not changed_files else " (%s %s)" % (
        verb, ", ".join(changed_files)))
    diff = ([{"before": result["before"], "after": result["after"]}] if changes else []) + [
        d for p in planned for d in p["diff"]]
    return dict(result, changed=result["changed"] or bool(changed_files), provider=provider,
                files=[{k: p[k] for k in ("path", "changed", "reasons")} for p in planned], waiting=None, msg=msg,
                diff=diff)
