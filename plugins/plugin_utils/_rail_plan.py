# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rail plan (docs/rails.md): which address, routing table, leaf and leaf port every compute
NIC of every server gets, from the servers and the fabric definition ``gpufabric_fabric``.

- ``fabric_problems(fabric)``: every problem of the fabric definition at once, each a sentence
  that starts with the path of the bad entry (``gpufabric_fabric.pools.rail3: ...``). Never raises.
- ``check(fabric)``: the fabric unchanged, or RailPlanError listing its problems.
- ``plan(hosts, fabric, leaves=None)``: the plan, or RailPlanError listing every problem of the fabric,
  the hosts, the leaves (the inventory's leaves group, when given) and the plan itself (exhausted pools,
  duplicate addresses, a leaf port used twice, a leaf with too few ports, ...).
- ``cabling(plan)``: one row per cable, sorted by leaf then leaf port (natural order).

Pure: no I/O. netaddr parses and compares the networks; the hot loop works on integer offsets
and turns each address into text once.
"""

from __future__ import annotations

import re
import string
from typing import Any, Sequence

try:
    import netaddr
    from netaddr.strategy import ipv4 as netaddr_ipv4
except ImportError:
    HAS_NETADDR = False
else:
    HAS_NETADDR = True

from ansible_collections.gpufabric.mlnx.plugins.module_utils._devices import base_part_number, is_pci, pci_full
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._info import UPLINK_RE
from ansible_collections.gpufabric.mlnx.plugins.module_utils._rails import MAX_RAILS, MAX_TABLE, RESERVED_TABLES
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _uplinks
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import (
    IFNAME_RE, Problems, ProblemsError, check_list, check_mapping, close_names, field, is_whole, join_path, kind_of,
    natural_key, quoted, read_choice, read_text, read_whole, some, unknown_keys)

ROOT = "gpufabric_fabric"
HOSTS = "hosts"
NETADDR_MISSING = "the rail plan needs the python netaddr library on the controller (pip install netaddr)"

SU_SUBNET = "su_subnet"
P2P31 = "p2p31"
ADDRESSING = (SU_SUBNET, P2P31)
FABRIC_KEYS = ("rails", "addressing", "su_prefix", "racks_per_su", "pools", "nics", "interface_names",
               "table_base", "leaf_name", "leaf_port", "leaf_port_base", "breakout", "leaf_ports", "port_templates",
               "leaf_port_numbering", "ports_per_rack", "mgmt_subnets", "uplinks")
PORT_KEYS = ("leaf_port", "breakout", "leaf_port_base", "leaf_ports")
SU_NUMBERING = "su"
RACK_NUMBERING = "rack"
NUMBERINGS = (SU_NUMBERING, RACK_NUMBERING)
LEAVES = "leaves"
# The variable of a leaf (in the inventory's leaves group) that picks its port template.
LEAF_TEMPLATE_VAR = "gpufabric_leaf_port_template"
NIC_KEYS = ("pci", "part_numbers")
HOST_KEYS = ("name", "rack", "position", "su", "mgmt_address", "mgmt_interface", "devices")
DEFAULTS = {"addressing": SU_SUBNET, "su_prefix": 24, "table_base": 100, "leaf_name": "su{su}-leaf-rail{rail}",
            "leaf_port": "swp{port}", "leaf_port_base": 1, "breakout": 1, "leaf_port_numbering": SU_NUMBERING}

MAX_SU = 99999
MAX_POSITION = 999999
MAX_RACK_NUMBER = 10 ** 9
MAX_BREAKOUT = 8
MAX_LEAF_PORTS = 100000
KERNEL_TABLES = RESERVED_TABLES
# Never a rail address: "this" network, loopback, link-local, multicast and reserved.
RESERVED = (("0.0.0.0/8", "the 'this network' block"), ("127.0.0.0/8", "loopback"),
            ("169.254.0.0/16", "link-local"), ("224.0.0.0/3", "multicast and reserved"))

CIDR_RE = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}/\d{1,2}\Z", re.ASCII)
POOL_KEY_RE = re.compile(r"^rail(0|[1-9]\d{0,5})\Z", re.ASCII)
TEMPLATE_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]*", re.ASCII)
# Linux interface names: at most 15 bytes, no whitespace, slash or colon.
INT_SPEC_RE = re.compile(r"^0?[1-9]?d?\Z", re.ASCII)
TEMPLATES = {
    "leaf_name": {"fields": ("su", "rail", "rack"), "what": "the leaf of a rail in an SU, e.g. su{su}-leaf-rail{rail}"},
    "leaf_port": {"fields": ("port", "cage", "lane"),
                  "what": "the leaf port of a host, e.g. swp{port}, or swp{cage}s{lane} with a breakout"},
}


class RailPlanError(ProblemsError):
    """The fabric, the hosts or the plan have problems; ``problems`` lists them all."""

    def __init__(self, problems: Sequence[str], subject: str):
        super().__init__(subject, problems, parameter=ROOT)


def _need_netaddr():
    if not HAS_NETADDR:
        raise MlnxError(NETADDR_MISSING)


# ---------------------------------------------------------------- words

def _key_text(key):
    return key if isinstance(key, str) else kind_of(key)


_natural = natural_key   # the sort key of names (module_utils/_validate.py)


def _ip(number):
    return netaddr_ipv4.int_to_str(number)


def _span(first, last):
    cidrs = netaddr.IPRange(first, last).cidrs()
    if len(cidrs) == 1:
        return str(cidrs[0])
    return "%s-%s" % (_ip(first), _ip(last))


# ---------------------------------------------------------------- small readers (each adds problems)

def _unknown_keys(problems, mapping, base, allowed):
    unknown_keys(problems, mapping, base, allowed, key_text=_key_text)


class _Net:
    """One IPv4 network of the fabric: integer bounds, prefix, where it was written, its text."""
    __slots__ = ("first", "last", "prefix", "path", "text")

    def __init__(self, first, last, prefix, path, text):
        self.first, self.last, self.prefix, self.path, self.text = first, last, prefix, path, text


def _cidr(problems, path, value, what):
    if not isinstance(value, str):
        problems.add(path, "must be an IPv4 network in CIDR notation such as 198.18.0.0/20 (%s), not %s"
                     % (what, kind_of(value)))
        return None
    text = value.strip()
    if ":" in text:
        problems.add(path, "%s is IPv6: the rail plan is IPv4 only" % quoted(text))
        return None
    net = None
    if CIDR_RE.match(text):
        try:
            net = netaddr.IPNetwork(text)
        except (netaddr.AddrFormatError, ValueError, TypeError):
            net = None
    if net is None:
        hint = "; add the prefix length, e.g. /20" if "/" not in text else ""
        problems.add(path, "%s is not an IPv4 network in CIDR notation, e.g. 198.18.0.0/20%s"
                     % (quoted(text), hint))
        return None
    if net.ip != net.network:
        problems.add(path, "%s has host bits set: the network is %s" % (text, net.cidr))
        return None
    return _Net(net.first, net.last, net.prefixlen, path, str(net.cidr))


def _cidrs(problems, path, value, what):
    """A CIDR or a non-empty list of CIDRs -> the list of those that are good (_Net)."""
    if isinstance(value, list):
        if not value:
            problems.add(path, "must not be empty (%s)" % what)
        nets = [_cidr(problems, join_path(path, index), item, what) for index, item in enumerate(value)]
    else:
        nets = [_cidr(problems, path, value, what)]
    return [net for net in nets if net is not None]


# ---------------------------------------------------------------- the fabric

class _Fabric:
    """The fabric read once: every field valid or None; ``ok`` when the whole fabric is valid."""

    def __init__(self):
        self.ok = False
        self.given = set()
        self.rails = self.addressing = self.su_prefix = self.racks_per_su = self.pools = None
        self.pci = self.part_numbers = self.interface_names = self.table_base = None
        self.leaf_name = self.leaf_port = self.port_base = None
        self.breakout = self.leaf_ports = self.numbering = self.ports_per_rack = None
        self.ports = None        # _Ports of the fabric's own keys (leaves without a port template)
        self.templates = None    # {name: _Ports} of port_templates; None when it could not be read
        self.mgmt = []
        self.uplinks = None      # _uplinks.Uplinks; None when it could not be read

    @property
    def capacity(self):
        """Hosts per SU subnet: su_subnet keeps the network, the leaf and the broadcast address."""
        size = 2 ** (32 - self.su_prefix)
        return size - 3 if self.addressing == SU_SUBNET else size // 2


def _option(problems, fabric, key, read, *args):
    """``read(problems, path, value, *args)`` for a given key, else its default (or None)."""
    value = fabric.get(key)
    if value is None:
        return DEFAULTS.get(key)
    return read(problems, join_path(ROOT, key), value, *args)


def _read_scalars(problems, fabric, fab):
    path, rails = field(problems, fabric, ROOT, "rails", "the number of rails (compute NICs per server), e.g. 8")
    if rails is not None:
        fab.rails = read_whole(problems, path, rails, 1, MAX_RAILS, "compute NICs per server")
    fab.addressing = _option(problems, fabric, "addressing", read_choice, ADDRESSING)
    top = 30 if fab.addressing != P2P31 else 31
    fab.su_prefix = _option(problems, fabric, "su_prefix", read_whole, 1, top,
                            "the prefix length of each SU's block of a rail's pool")
    fab.racks_per_su = _option(problems, fabric, "racks_per_su", read_whole, 1, MAX_SU,
                               "racks per scalable unit, for hosts without su")
    fab.port_base = _option(problems, fabric, "leaf_port_base", read_whole, 0, MAX_SU,
                            "the leaf port of the first host of an SU")
    fab.breakout = _option(problems, fabric, "breakout", read_whole, 1, MAX_BREAKOUT,
                           "the lanes of each leaf port cage (1: no breakout)")
    fab.leaf_ports = _option(problems, fabric, "leaf_ports", read_whole, 1, MAX_LEAF_PORTS,
                             "the server-facing ports of a leaf (with a breakout: cages x lanes)")
    _read_numbering(problems, fabric, fab)


def _read_numbering(problems, fabric, fab):
    fab.numbering = _option(problems, fabric, "leaf_port_numbering", read_choice, NUMBERINGS)
    fab.ports_per_rack = _option(problems, fabric, "ports_per_rack", read_whole, 1, MAX_LEAF_PORTS,
                                 "the leaf ports each rack gets with leaf_port_numbering rack")
    path = join_path(ROOT, "ports_per_rack")
    if fab.numbering == RACK_NUMBERING and fabric.get("ports_per_rack") is None:
        problems.add(path, "required with leaf_port_numbering rack: the leaf ports each rack gets (rack k of a leaf "
                           "starts at leaf_port_base + k x ports_per_rack)")
    elif fab.numbering == SU_NUMBERING and fabric.get("ports_per_rack") is not None:
        problems.add(path, "only with leaf_port_numbering rack (the numbering is su: the host's index in its SU)")


def _read_table_base(problems, fabric, fab):
    base = _option(problems, fabric, "table_base", read_whole, 1, MAX_TABLE - MAX_RAILS,
                   "the routing table of rail 0; rail k uses table_base + k")
    if base is None or fab.rails is None:
        return base
    clash = ["%d (%s)" % (t, KERNEL_TABLES[t]) for t in sorted(KERNEL_TABLES) if base <= t < base + fab.rails]
    if clash:
        problems.add(join_path(ROOT, "table_base"), "rails use tables %d to %d, which includes the kernel's own "
                     "table %s" % (base, base + fab.rails - 1, ", ".join(clash)))
        return None
    return base


def _template(problems, path, value, name, addressing):
    spec = TEMPLATES[name]
    fields = spec["fields"]
    if name == "leaf_name" and addressing == SU_SUBNET:
        fields = ("su", "rail")
    text = read_text(problems, path, value, spec["what"])
    if text is None:
        return None
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as err:
        problems.add(path, "%s is not a valid template: %s (write a literal brace as {{ or }})" % (quoted(text), err))
        return None
    used, before = set(), len(problems)
    for _literal, key, fmt, conversion in parsed:
        if key is None:
            continue
        if key not in fields:
            extra = (" ({rack}: only with addressing p2p31 - with su_subnet the leaf is the gateway of its SU's "
                     "subnet, one leaf per rail per SU)" if key == "rack" else "")
            problems.add(path, "{%s} is not a field of %s (allowed: %s)%s" % (
                key, quoted(text), ", ".join("{%s}" % f for f in fields), extra))
        elif conversion or (fmt and (key == "rack" or not INT_SPEC_RE.match(fmt))):
            problems.add(path, "{%s} in %s: only a zero-padded width such as {%s:02d} is allowed" % (
                key, quoted(text), key))
        used.add(key)
    _template_fields(problems, path, name, text, used)
    return text if len(problems) == before else None


def _template_fields(problems, path, name, text, used):
    if name == "leaf_port" and not used & {"port", "cage"}:
        problems.add(path, "%s must contain {port} (the host's port index + leaf_port_base) or {cage} (with a "
                           "breakout: the index // breakout + leaf_port_base)" % quoted(text))
    if name == "leaf_name" and ("rail" not in used or not used & {"su", "rack"}):
        problems.add(path, "%s must contain {rail} and {su} (one leaf per rail per SU), or {rack} instead of {su} "
                           "with p2p31" % quoted(text))


def _read_templates(problems, fabric, fab):
    fab.leaf_name = _option(problems, fabric, "leaf_name", _template, "leaf_name", fab.addressing)
    fab.leaf_port = _option(problems, fabric, "leaf_port", _template, "leaf_port", fab.addressing)
    fab.ports = _Ports(None, fab.leaf_port, fab.breakout, fab.port_base, fab.leaf_ports,
                       join_path(ROOT, "leaf_port"), join_path(ROOT, "leaf_ports"))
    _check_ports(problems, fab.ports)
    fab.templates = _read_port_templates(problems, fabric, fab)


class _Ports:
    """How a leaf's server-facing ports are named and how many it has: the fabric's own keys (``name`` None) or
    one of its port_templates (each key it leaves out is the fabric's)."""
    __slots__ = ("name", "leaf_port", "breakout", "base", "count", "path", "count_path")

    def __init__(self, name, leaf_port, breakout, base, count, path, count_path):
        self.name, self.leaf_port, self.breakout, self.base = name, leaf_port, breakout, base
        self.count, self.path, self.count_path = count, path, count_path

    @property
    def ok(self):
        return None not in (self.leaf_port, self.breakout, self.base)

    def port(self, index):
        """The name of port ``index`` (from 0): {port} = index + base, {cage} = index // breakout + base,
        {lane} = index % breakout (Cumulus names lanes from 0: swp1s0, swp1s1)."""
        return self.leaf_port.format(port=index + self.base, cage=index // self.breakout + self.base,
                                     lane=index % self.breakout)


def _fields(text):
    return {key for _literal, key, _fmt, _conv in string.Formatter().parse(text) if key is not None}


def _check_ports(problems, ports):
    """A template with a breakout names each lane ({lane}); {lane} without a breakout is always 0."""
    if ports.leaf_port is None or ports.breakout is None:
        return
    used = _fields(ports.leaf_port)
    if ports.breakout > 1 and "lane" not in used:
        problems.add(ports.path, "%s has no {lane} but breakout is %d: the %d lanes of a cage would give two hosts "
                                 "one port name (e.g. swp{cage}s{lane})" % (
                                     quoted(ports.leaf_port), ports.breakout, ports.breakout))
    elif ports.breakout == 1 and "lane" in used:
        problems.add(ports.path, "%s uses {lane} but breakout is 1 (no breakout: every port would be lane 0); set "
                                 "breakout to the lanes per cage, 2 to 8" % quoted(ports.leaf_port))


def _read_port_templates(problems, fabric, fab):
    """``{name: _Ports}`` of ``port_templates`` ({} when none), or None when it could not be read."""
    value = fabric.get("port_templates")
    if value is None:
        return {}
    path = join_path(ROOT, "port_templates")
    what = "port templates by name, each with leaf_port, breakout, leaf_port_base, leaf_ports (all optional)"
    if not check_mapping(problems, path, value, what):
        return None
    out, before = {}, len(problems)
    for name, body in value.items():
        if not isinstance(name, str) or not TEMPLATE_NAME_RE.fullmatch(name):
            problems.add(join_path(path, _key_text(name)), "is not a port template name: lower-case ASCII letters, "
                         "digits, _ and -, starting with a letter or digit (e.g. sn5600-2x)")
            continue
        where = join_path(path, name)
        if body is None:
            body = {}
        if not check_mapping(problems, where, body, "the keys of the template (%s), each optional" % ", ".join(PORT_KEYS)):
            continue
        _unknown_keys(problems, body, where, PORT_KEYS)
        out[name] = _read_port_template(problems, name, where, body, fab)
    return out if len(problems) == before else None


def _read_port_template(problems, name, where, body, fab):
    def key(name_, default, read, *args):
        if body.get(name_) is None:
            return default
        return read(problems, join_path(where, name_), body[name_], *args)

    leaf_port = key("leaf_port", fab.leaf_port, _template, "leaf_port", fab.addressing)
    breakout = key("breakout", fab.breakout, read_whole, 1, MAX_BREAKOUT, "the lanes of each leaf port cage")
    base = key("leaf_port_base", fab.port_base, read_whole, 0, MAX_SU, "the number of the first port or cage")
    count = key("leaf_ports", fab.leaf_ports, read_whole, 1, MAX_LEAF_PORTS, "the server-facing ports of the leaf")
    count_path = join_path(where, "leaf_ports") if body.get("leaf_ports") is not None else join_path(ROOT, "leaf_ports")
    ports = _Ports(name, leaf_port, breakout, base, count, where, count_path)
    _check_ports(problems, ports)
    return ports


def _read_pools(problems, fabric, fab):
    """``{rail: [_Net, ...]}`` of the pools that could be read (read_fabric drops all when any is bad)."""
    path, pools = field(problems, fabric, ROOT, "pools", "one pool per rail, rail0: 198.18.0.0/20 (a CIDR or a list "
                                                         "of CIDRs)")
    if pools is None:
        return None
    if not isinstance(pools, dict):
        problems.add(path, "must be a mapping of rail0, rail1, ... to a CIDR or a list of CIDRs, not %s" % kind_of(pools))
        return None
    out = {}
    for key, value in pools.items():
        match = POOL_KEY_RE.match(key) if isinstance(key, str) else None
        where = join_path(path, _key_text(key))
        if not match or (fab.rails is not None and int(match.group(1)) >= fab.rails):
            allowed = "rail0 to rail%d" % (fab.rails - 1) if fab.rails else "rail0, rail1, ..."
            problems.add(where, "no such rail (allowed: %s, one per rail)" % allowed)
            continue
        nets = _cidrs(problems, where, value, "the pool of rail %s" % match.group(1))
        if nets:
            out[int(match.group(1))] = nets
    for rail in range(fab.rails or 0):
        if rail not in out and ("rail%d" % rail) not in pools:
            problems.add(join_path(path, "rail%d" % rail),
                         "required: the pool of rail %d (a CIDR or a list of CIDRs)" % rail)
    return out


def _check_pool_sizes(problems, fab):
    if fab.pools is None or fab.su_prefix is None:
        return
    for nets in fab.pools.values():
        for net in nets:
            if net.prefix > fab.su_prefix:
                problems.add(net.path, "%s is smaller than one SU block (/%d, su_prefix)" % (net.text, fab.su_prefix))


def _read_mgmt(problems, fabric):
    value = fabric.get("mgmt_subnets")
    if value is None:
        return []
    path = join_path(ROOT, "mgmt_subnets")
    if value == []:
        return []
    nets = []
    for index, item in enumerate(value if isinstance(value, list) else [value]):
        where = join_path(path, index) if isinstance(value, list) else path
        if isinstance(item, str) and ":" in item:
            continue  # an IPv6 management network never holds an IPv4 rail address
        net = _cidr(problems, where, item, "a management network")
        if net is not None:
            nets.append(net)
    return nets


def _shared(first, second):
    low, high = max(first.first, second.first), min(first.last, second.last)
    return (low, high) if low <= high else None


def _check_overlaps(problems, fab):
    """Pools of different rails (or twice in one rail) and pools in management or reserved networks."""
    nets = sorted((net for rail in sorted(fab.pools or {}) for net in fab.pools[rail]),
                  key=lambda n: (n.first, -n.last))
    widest = None
    for net in nets:
        if widest is not None and net.first <= widest.last:
            low, high = _shared(net, widest)
            problems.add(net.path, "%s overlaps %s (%s): they share %s" % (
                net.text, widest.path, widest.text, _span(low, high)))
        if widest is None or net.last > widest.last:
            widest = net
    for net in nets:
        for other in fab.mgmt:
            both = _shared(net, other)
            if both:
                problems.add(net.path, "%s overlaps the management network %s (%s): they share %s" % (
                    net.text, other.path, other.text, _span(*both)))
        for text, what in RESERVED:
            reserved = netaddr.IPNetwork(text)
            if net.first <= reserved.last and reserved.first <= net.last:
                problems.add(net.path, "%s overlaps %s (%s), which never holds a rail address" % (net.text, text, what))


def _read_nics(problems, fabric, fab):
    what = "how a rail finds its NIC: pci (one PCI address per rail) or part_numbers (the compute NICs' part numbers)"
    path, nics = field(problems, fabric, ROOT, "nics", what)
    if nics is None or not check_mapping(problems, path, nics, what):
        return
    _unknown_keys(problems, nics, path, NIC_KEYS)
    given = [key for key in NIC_KEYS if nics.get(key) is not None]
    if len(given) != 1:
        problems.add(path, "needs exactly one of pci or part_numbers (%s), not %s" % (
            what, " and ".join(given) if given else "neither"))
        return
    if given == ["pci"]:
        fab.pci = _read_pci(problems, join_path(path, "pci"), nics["pci"], fab.rails)
    else:
        fab.part_numbers = _read_part_numbers(problems, join_path(path, "part_numbers"), nics["part_numbers"])


def _read_pci(problems, path, value, rails):
    what = "the PCI address of rail k's NIC at index k, e.g. 0000:18:00.0"
    if not check_list(problems, path, value, what):
        return None
    out, before = [], len(problems)
    for index, item in enumerate(value):
        where = join_path(path, index)
        if not isinstance(item, str) or not is_pci(item):
            problems.add(where, "must be a PCI address such as 0000:18:00.0, not %s" % kind_of(item))
            continue
        if pci_full(item) in out:
            problems.add(where, "%s is already rail %d's NIC" % (item, out.index(pci_full(item))))
        out.append(pci_full(item))
    if rails is not None and len(value) != rails:
        problems.add(path, "lists %d PCI addresses for %d rails: one per rail, in rail order" % (len(value), rails))
    return out if len(problems) == before else None


def _read_part_numbers(problems, path, value):
    what = "the part numbers of the compute NICs, e.g. MCX75310AAS-NEAT"
    if not check_list(problems, path, value, what):
        return None
    if not value:
        problems.add(path, "must not be empty (%s)" % what)
        return None
    texts = [read_text(problems, join_path(path, i), item, "a part number") for i, item in enumerate(value)]
    return None if None in texts else {base_part_number(t) for t in texts}


def _read_interface_names(problems, fabric, fab):
    value = fabric.get("interface_names")
    if value is None:
        return None
    path = join_path(ROOT, "interface_names")
    if not check_list(problems, path, value, "the network interface of rail k at index k, e.g. ibp24s0"):
        return None
    before = len(problems)
    what = "a Linux interface name (at most 15 characters, no spaces, / or :)"
    names = [read_text(problems, join_path(path, i), item, what, pattern=IFNAME_RE) for i, item in enumerate(value)]
    for index, name in enumerate(names):
        if name is not None and name in names[:index]:
            problems.add(join_path(path, index), "%s is already rail %d's interface" % (name, names.index(name)))
    if fab.rails is not None and len(value) != fab.rails:
        problems.add(path, "lists %d interfaces for %d rails: one per rail, in rail order" % (len(value), fab.rails))
    return names if len(problems) == before else None


def read_fabric(problems: Problems, fabric: Any) -> _Fabric:
    """The fabric as a _Fabric; its problems are added to ``problems``."""
    fab = _Fabric()
    if not isinstance(fabric, dict):
        problems.add(ROOT, "must be a mapping (rails, addressing, pools, nics, ...), not %s" % kind_of(fabric))
        return fab
    before = len(problems)
    fab.given = {key for key in FABRIC_KEYS if fabric.get(key) is not None}
    _unknown_keys(problems, fabric, ROOT, FABRIC_KEYS)
    _read_scalars(problems, fabric, fab)
    fab.table_base = _read_table_base(problems, fabric, fab)
    _read_templates(problems, fabric, fab)
    pools_before = len(problems)
    fab.pools = _read_pools(problems, fabric, fab)
    _check_pool_sizes(problems, fab)
    fab.mgmt = _read_mgmt(problems, fabric)
    _check_overlaps(problems, fab)
    fab.uplinks = _uplinks.read_uplinks(problems, fabric.get("uplinks"), ROOT, _cidrs, fab.pools, fab.mgmt)
    if len(problems) > pools_before:
        fab.pools = None   # no plan from pools that overlap or could not all be read
    _read_nics(problems, fabric, fab)
    fab.interface_names = _read_interface_names(problems, fabric, fab)
    fab.ok = len(problems) == before
    return fab


def fabric_problems(fabric: Any) -> list[str]:
    """Every problem of ``gpufabric_fabric``, each starting with its path; [] when it is consistent."""
    _need_netaddr()
    problems = Problems()
    read_fabric(problems, fabric)
    return list(problems)


def check(fabric: Any) -> dict:
    """The fabric unchanged, or RailPlanError listing every problem."""
    problems = fabric_problems(fabric)
    if problems:
        raise RailPlanError(problems, "%s is not consistent" % ROOT)
    return fabric


# ---------------------------------------------------------------- the hosts

class _Host:
    __slots__ = ("name", "path", "rack", "rack_key", "position", "su", "mgmt", "mgmt_text", "mgmt_interface",
                 "devices", "nics")

    def __init__(self, name, path):
        self.name, self.path = name, path
        self.rack = self.rack_key = self.position = self.su = None
        self.mgmt = self.mgmt_text = self.mgmt_interface = self.devices = self.nics = None


class _Device:
    __slots__ = ("address", "part_number", "netdevs", "path")

    def __init__(self, address, part_number, netdevs, path):
        self.address, self.part_number, self.netdevs, self.path = address, part_number, netdevs, path


BAD = object()  # devices facts given but unusable: the host's NICs are not matched


def _rack(problems, path, value):
    if is_whole(value) and 0 <= value <= MAX_RACK_NUMBER:
        return "%d" % value
    if isinstance(value, str) and value.strip():
        return value
    problems.add(path, "must be the rack's name or number, e.g. r01, not %s" % kind_of(value))
    return None


def _mgmt_address(problems, path, value):
    if isinstance(value, str):
        try:
            address = netaddr.IPAddress(value.strip())
        except (netaddr.AddrFormatError, ValueError, TypeError):
            address = None
        if address is not None:
            return (int(address) if address.version == 4 else None), str(address)
    problems.add(path, "must be the IP address Ansible reaches the host on (no prefix length, no host name), "
                       "not %s" % kind_of(value))
    return None, None


def _read_device(problems, path, dev):
    if not isinstance(dev, dict):
        problems.add(path, "must be a mapping as gpufabric.mlnx.mlx_info returns it, not %s" % kind_of(dev))
        return None
    address = dev.get("address")
    if not isinstance(address, str) or not is_pci(address):
        problems.add(join_path(path, "address"), "must be a PCI address such as 0000:18:00.0, not %s" % kind_of(address))
        return None
    part = dev.get("part_number")
    if part is not None and not isinstance(part, str):
        problems.add(join_path(path, "part_number"), "must be a string or null, not %s" % kind_of(part))
        return None
    netdevs = dev.get("netdevs")
    if netdevs is None:
        netdevs = []
    if not isinstance(netdevs, list) or not all(isinstance(n, str) and IFNAME_RE.fullmatch(n) for n in netdevs):
        problems.add(join_path(path, "netdevs"), "must be a list of interface names, not %s" % kind_of(netdevs))
        return None
    return _Device(pci_full(address), base_part_number(part) if part else None, netdevs, path)


def _read_devices(problems, path, value):
    if not isinstance(value, list):
        problems.add(path, "must be the devices list of gpufabric.mlnx.mlx_info, not %s" % kind_of(value))
        return BAD
    devices = [_read_device(problems, join_path(path, index), dev) for index, dev in enumerate(value)]
    seen = {}
    for index, dev in enumerate(devices):
        if dev is None:
            continue
        if dev.address in seen:
            # two cards cannot share a PCI function: the facts are wrong, and one NIC would silently be dropped
            problems.add(join_path(path, index, "address"), "%s is also %s's: one host has each PCI address once" % (
                dev.address, join_path(path, seen[dev.address])))
            devices[index] = None
            continue
        seen[dev.address] = index
    return BAD if None in devices else devices


def _read_identity(problems, host, item):
    for key, what in (("rack", "the rack's name"), ("position", "the host's position in its rack")):
        field(problems, item, host.path, key, what)
    if item.get("rack") is not None:
        host.rack = _rack(problems, join_path(host.path, "rack"), item["rack"])
        host.rack_key = _natural(host.rack) if host.rack is not None else None
    if item.get("position") is not None:
        host.position = read_whole(problems, join_path(host.path, "position"), item["position"], 0, MAX_POSITION,
                                   "the host's position in its rack")
    if item.get("su") is not None:
        host.su = read_whole(problems, join_path(host.path, "su"), item["su"], 1, MAX_SU, "the host's scalable unit")
    return host.rack is not None and host.position is not None and (item.get("su") is None or host.su is not None)


def _read_extras(problems, host, item):
    if item.get("mgmt_address") is not None:
        host.mgmt, host.mgmt_text = _mgmt_address(problems, join_path(host.path, "mgmt_address"), item["mgmt_address"])
    if item.get("mgmt_interface") is not None:
        host.mgmt_interface = read_text(problems, join_path(host.path, "mgmt_interface"), item["mgmt_interface"],
                                        "a Linux interface name", pattern=IFNAME_RE)
    if item.get("devices") is not None:
        host.devices = _read_devices(problems, join_path(host.path, "devices"), item["devices"])


def _read_host(problems, index, item):
    """A _Host, or None when it cannot be placed (no usable name, rack, position or su)."""
    path = join_path(HOSTS, index)
    if not isinstance(item, dict):
        problems.add(path, "must be a mapping (name, rack, position, ...), not %s" % kind_of(item))
        return None
    name = item.get("name")
    if isinstance(name, str) and name.strip():
        path = join_path(HOSTS, name)
    else:
        problems.add(join_path(path, "name"), "must be the host's name (a non-empty string), not %s" % kind_of(name))
        name = None
    host = _Host(name, path)
    _unknown_keys(problems, item, path, HOST_KEYS)
    placed = _read_identity(problems, host, item)
    _read_extras(problems, host, item)
    return host if placed and name is not None else None


def _assign_sus(problems, hosts, fab):
    """Hosts without su: their rack's place among those racks (natural order) // racks_per_su + 1."""
    without = [host for host in hosts if host.su is None]
    if not without:
        return
    if fab.racks_per_su is None:
        if "racks_per_su" not in fab.given:
            problems.add(join_path(ROOT, "racks_per_su"), "required: %d hosts carry no su (%s)" % (
                len(without), some(host.name for host in without)))
        return
    racks = sorted({(host.rack_key, host.rack) for host in without})
    rank = {rack: index for index, (_key, rack) in enumerate(racks)}
    for host in without:
        host.su = rank[host.rack] // fab.racks_per_su + 1


def read_hosts(problems: Problems, hosts: Any, fab: _Fabric) -> list[_Host]:
    """The placeable hosts, sorted by (su, rack, position, name); problems added to ``problems``."""
    if not isinstance(hosts, list):
        problems.add(HOSTS, "must be a list of servers ({name, rack, position, ...} each), not %s" % kind_of(hosts))
        return []
    out, names, places = [], {}, {}
    for index, item in enumerate(hosts):
        host = _read_host(problems, index, item)
        if host is None:
            continue
        if host.name in names:
            problems.add(host.path, "the name is given twice (hosts[%d] and hosts[%d])" % (names[host.name], index))
            continue
        names[host.name] = index
        place = (host.rack, host.position)
        if place in places:
            problems.add(host.path, "rack %s position %s is also %s's" % (host.rack, host.position, places[place]))
            continue
        places[place] = host.name
        out.append(host)
    _assign_sus(problems, out, fab)
    out = [host for host in out if host.su is not None]
    out.sort(key=lambda h: (h.su, h.rack_key, h.position, _natural(h.name)))
    return out


# ---------------------------------------------------------------- which NIC is which rail

def _uplink(dev):
    if len(dev.netdevs) == 1:
        return dev.netdevs[0]
    uplinks = [name for name in dev.netdevs if UPLINK_RE.search(name)]
    return uplinks[0] if len(uplinks) == 1 else None


def _interface(problems, dev, rail, fab):
    name = _uplink(dev)
    if name is None and fab.interface_names is not None:
        name = fab.interface_names[rail]
    if name is None:
        problems.add(dev.path, "rail %d's NIC %s: its facts name no single interface (netdevs: %s); set %s" % (
            rail, dev.address, ", ".join(dev.netdevs) or "none", join_path(ROOT, "interface_names")))
    return name


def _present(devices):
    return ", ".join("%s %s" % (d.address, d.part_number or "(no part number)") for d in devices) or "none"


def _compute_devices(problems, host, fab):
    """The rail NICs of a host with devices facts, in rail order, or None after adding a problem."""
    path = join_path(host.path, "devices")
    if fab.pci is not None:
        by_address = {dev.address: dev for dev in host.devices}
        missing = ["rail %d %s" % (rail, address) for rail, address in enumerate(fab.pci) if address not in by_address]
        if missing:
            problems.add(path, "has %d of the %d rail NICs of %s: %s not found (present: %s)" % (
                fab.rails - len(missing), fab.rails, join_path(ROOT, "nics", "pci"), ", ".join(missing),
                _present(host.devices)))
            return None
        return [by_address[address] for address in fab.pci]
    compute = sorted((dev for dev in host.devices if dev.address.endswith(".0") and dev.part_number in fab.part_numbers),
                     key=lambda d: d.address)
    if len(compute) != fab.rails:
        problems.add(path, "has %d compute NICs (part number %s, function 0) for %d rails: %s" % (
            len(compute), " or ".join(sorted(fab.part_numbers)), fab.rails,
            ", ".join(dev.address for dev in compute) or "none"))
        return None
    return compute


def _host_nics(problems, host, fab):
    """``[(pci, interface), ...]`` in rail order, or None after adding a problem."""
    if host.devices is None:
        pci = fab.pci or [None] * fab.rails
        return list(zip(pci, fab.interface_names)) if fab.interface_names is not None else None
    compute = _compute_devices(problems, host, fab)
    if compute is None:
        return None
    names = [_interface(problems, dev, rail, fab) for rail, dev in enumerate(compute)]
    if None in names:
        return None
    return [(dev.address, name) for dev, name in zip(compute, names)]


def _check_interfaces(problems, host):
    seen = {}
    for rail, (_pci, name) in enumerate(host.nics):
        if name in seen:
            problems.add(host.path, "rails %d and %d would both use interface %s" % (seen[name], rail, name))
        seen.setdefault(name, rail)
        if host.mgmt_interface is not None and name == host.mgmt_interface:
            problems.add(join_path(host.path, "mgmt_interface"), "%s is the management interface: rail %d would put "
                         "its address and routes on the connection Ansible uses" % (name, rail))


def match_nics(problems: Problems, hosts: list[_Host], fab: _Fabric) -> None:
    """Set ``host.nics`` for every host whose rail NICs can be told apart."""
    if fab.rails is None or (fab.pci is None and fab.part_numbers is None):
        return
    without = [host.name for host in hosts if host.devices is None]
    if without and fab.interface_names is None and "interface_names" not in fab.given:
        problems.add(join_path(ROOT, "interface_names"), "required: %d hosts carry no devices facts (%s), so the "
                     "rail interfaces' names come from here" % (len(without), some(without)))
    for host in hosts:
        if host.devices is BAD:
            continue
        host.nics = _host_nics(problems, host, fab)
        if host.nics is not None:
            _check_interfaces(problems, host)


# ---------------------------------------------------------------- addresses, leaves and ports

def _su_block(nets, su, prefix):
    """The first address of SU ``su``'s block: the su-th /prefix of the pool, carved across its CIDRs in
    order; None when the pool is too small."""
    index, size = su - 1, 2 ** (32 - prefix)
    for net in nets:
        count = 2 ** (prefix - net.prefix)
        if index < count:
            return net.first + index * size
        index -= count
    return None


def _su_blocks(problems, groups, fab):
    """``{(rail, su): first address}`` for every SU that fits its rail's pool; problems for the others."""
    blocks = {}
    for rail in range(fab.rails):
        nets = fab.pools[rail]
        path = join_path(ROOT, "pools", "rail%d" % rail)
        pool = " + ".join(net.text for net in nets)
        short = []
        for su, members in groups.items():
            first = _su_block(nets, su, fab.su_prefix)
            if first is None:
                short.append(su)
            elif len(members) > fab.capacity:
                problems.add(path, "SU %d needs %d host addresses but its %s %s/%d holds %d%s" % (
                    su, len(members), "subnet" if fab.addressing == SU_SUBNET else "block", _ip(first),
                    fab.su_prefix, fab.capacity, " (the network, the leaf and the broadcast address are not for hosts)"
                    if fab.addressing == SU_SUBNET else " /31 links"))
            else:
                blocks[(rail, su)] = first
        if short:
            held = sum(2 ** (fab.su_prefix - net.prefix) for net in nets)
            problems.add(path, "exhausted: %s holds %d /%d blocks, one per SU (SU s takes the s-th): SU %s do%s not "
                               "fit - %d needed, %d available" % (
                                   pool, held, fab.su_prefix, ", ".join("%d" % su for su in short),
                                   "es" if len(short) == 1 else "", max(short), held))
    return blocks


def _owner_text(owner):
    if owner[0] == "rail":
        return "the rail %d address of %s" % (owner[2], owner[1])
    if owner[0] == "leaf":
        return "the address of leaf %s (rail %d, SU %d)" % (owner[1], owner[2], owner[3])
    return "the mgmt_address of %s" % owner[1]


def _addressing(fab, first):
    """``index -> (host address, leaf address, gateway, network, prefix length)`` in one SU block."""
    if fab.addressing == P2P31:
        def link(index):
            leaf = first + 2 * index
            text = _ip(leaf)
            return leaf + 1, leaf, text, text + "/31", 31
        return link
    gateway, network, prefix = _ip(first + 1), "%s/%d" % (_ip(first), fab.su_prefix), fab.su_prefix

    def subnet(index):
        return first + 2 + index, first + 1, gateway, network, prefix
    return subnet


class _Builder:
    """Walks the SUs and rails once, filling the plan and noting who owns each address. The pools are
    disjoint (read_fabric) and every host has its own index in its SU, so the plan's own addresses never
    collide; ``owners`` is for the management addresses (_check_mgmt). ``templates`` is the port template
    of each leaf the inventory's leaves group gives one (``{leaf: _Ports}``)."""

    def __init__(self, problems, fab, templates):
        self.problems, self.fab, self.templates = problems, fab, templates
        self.hosts, self.leaves, self.owners = {}, {}, {}
        self.clashes = set()
        self.needs = {}          # {leaf: (highest port index + 1, its port name)}
        self.first_cable = {}    # {leaf: the label of its first cable}
        self.complete = True     # every host of every SU on every rail

    def leaf(self, name, rail, su, network, address):
        entry = self.leaves.get(name)
        if entry is None:
            ports = self.templates.get(name, self.fab.ports)
            entry = self.leaves[name] = {"rail": rail, "su": su, "network": network, "address": address,
                                         "racks": [], "port_template": ports.name, "ports": {}, "cables": {}}
        elif (entry["rail"], entry["su"]) != (rail, su) and (name, rail, su) not in self.clashes:
            self.clashes.add((name, rail, su))
            self.problems.add(join_path(ROOT, "leaf_name"), "%s names two leaves: rail %d of SU %d and rail %d of SU %d"
                              % (name, entry["rail"], entry["su"], rail, su))
        return entry

    def port(self, leaf, entry, port, host, rail, su):
        """Cable ``port`` of ``leaf`` to ``host``; the first host on a port came with the leaf's own rail and SU.
        True when the port was free."""
        ports = entry["ports"]
        if port in ports:
            self.problems.add(join_path(LEAVES, leaf, "ports", port),
                              "cabled twice: to %s (rail %d, SU %d) and to %s (rail %d, SU %d)" % (
                                  ports[port], entry["rail"], entry["su"], host.name, rail, su))
            return False
        ports[port] = host.name
        racks = entry["racks"]
        if not racks or racks[-1] != host.rack:
            racks.append(host.rack)
        return True

    def su_rail(self, su, rail, first, members, indexes):
        fab = self.fab
        addresses = _addressing(fab, first)
        network = "%s/%d" % (_ip(first), fab.su_prefix)
        leaf_address = "%s/%d" % (_ip(first + 1), fab.su_prefix) if fab.addressing == SU_SUBNET else None
        table, names = fab.table_base + rail, {}
        for index, host in enumerate(members):
            leaf = names.get(host.rack)
            if leaf is None:
                leaf = names[host.rack] = fab.leaf_name.format(su=su, rail=rail, rack=host.rack)
            entry = self.leaf(leaf, rail, su, network, leaf_address)
            number = indexes[index]
            port = self.templates.get(leaf, fab.ports).port(number)
            free = self.port(leaf, entry, port, host, rail, su)
            if number >= self.needs.get(leaf, (0, None))[0]:
                self.needs[leaf] = (number + 1, port)
            address, leaf_ip, gateway, subnet, length = addresses(index)
            self.owners.setdefault(leaf_ip, ("leaf", leaf, rail, su))
            pci, interface = host.nics[rail] if host.nics is not None else (None, None)
            label = ("%s:%s -> %s:%s" % (host.name, interface, leaf, port) if interface is not None
                     else "%s (rail %d) -> %s:%s" % (host.name, rail, leaf, port))
            self.first_cable.setdefault(leaf, label)
            if free:
                entry["cables"][port] = {"host": host.name, "interface": interface, "rail": rail,
                                         "address": gateway + "/31" if fab.addressing == P2P31 else None,
                                         "cable_label": label}
            if host.nics is None:
                continue
            self.owners[address] = ("rail", host.name, rail)
            self.hosts.setdefault(host.name, []).append({
                "rail": rail, "pci": pci, "interface": interface, "address": _ip(address), "prefix": length,
                "network": subnet, "gateway": gateway, "table": table, "leaf": leaf, "leaf_port": port,
                "cable_label": label})


def _port_indexes(problems, su, members, fab):
    """The port index of each host of an SU (in plan order), or None after a problem. ``su``: the host's index
    in its SU. ``rack``: its place in its rack + ports_per_rack x the rack's place among the racks that share
    its leaf (natural order; the hosts come sorted by rack)."""
    if fab.numbering == SU_NUMBERING:
        return range(len(members))
    per_rack, out, ok = fab.ports_per_rack, [], True
    in_rack, racks_of_leaf, rack_place = {}, {}, {}
    for host in members:
        if host.rack not in rack_place:
            shared = racks_of_leaf.setdefault(fab.leaf_name.format(su=su, rail=0, rack=host.rack), [])
            rack_place[host.rack] = len(shared)
            shared.append(host.rack)
        place = in_rack.get(host.rack, 0)
        in_rack[host.rack] = place + 1
        out.append(place + per_rack * rack_place[host.rack])
    for rack, count in in_rack.items():
        if count > per_rack:
            ok = False
            problems.add(join_path(ROOT, "ports_per_rack"), "rack %s of SU %d has %d hosts, more than ports_per_rack "
                         "(%d): its hosts would take the next rack's leaf ports" % (rack, su, count, per_rack))
    return out if ok else None


def _build(problems, hosts, fab, templates):
    groups = {}
    for host in hosts:
        groups.setdefault(host.su, []).append(host)
    blocks = _su_blocks(problems, groups, fab)
    builder = _Builder(problems, fab, templates)
    for su, members in groups.items():
        indexes = _port_indexes(problems, su, members, fab)
        if indexes is None:
            builder.complete = False
            continue
        for rail in range(fab.rails):
            if (rail, su) in blocks:
                builder.su_rail(su, rail, blocks[(rail, su)], members, indexes)
            else:
                builder.complete = False
    _check_leaf_ports(problems, builder)
    return builder


def _check_leaf_ports(problems, builder):
    """A leaf whose hosts need more server-facing ports than its template (or the fabric) gives it."""
    for leaf, (needed, last) in builder.needs.items():
        ports = builder.templates.get(leaf, builder.fab.ports)
        if ports.count is not None and needed > ports.count:
            template = " (port template %s)" % ports.name if ports.name else ""
            problems.add(join_path(LEAVES, leaf), "needs %d server-facing ports (up to %s) but has %d (%s)%s" % (
                needed, last, ports.count, ports.count_path, template))


# ---------------------------------------------------------------- the inventory's leaves group

def _read_leaves(problems, leaves, fab):
    """``{leaf: _Ports}`` for the members of the leaves group that pick a port template, and the set of
    members; ``({}, None)`` when ``leaves`` is None (not checked)."""
    if leaves is None:
        return {}, None
    if not isinstance(leaves, dict):
        problems.add(LEAVES, "must be a mapping of each leaf of the inventory's leaves group to its variables "
                             "(gpufabric.mlnx.rail_plan_leaves), not %s" % kind_of(leaves))
        return {}, None
    templates, members = {}, set()
    known = sorted(fab.templates) if fab.templates is not None else None
    for name, variables in leaves.items():
        if not isinstance(name, str) or not name.strip():
            problems.add(join_path(LEAVES, _key_text(name)), "must be a leaf's name (a non-empty string)")
            continue
        members.add(name)
        path = join_path(LEAVES, name)
        if variables is None:
            continue
        if not check_mapping(problems, path, variables, "the leaf's variables (%s)" % LEAF_TEMPLATE_VAR):
            continue
        chosen = variables.get(LEAF_TEMPLATE_VAR)
        if chosen is None or known is None:
            continue
        where = join_path(path, LEAF_TEMPLATE_VAR)
        if not isinstance(chosen, str):
            problems.add(where, "must be the name of a port template of %s, not %s" % (
                join_path(ROOT, "port_templates"), kind_of(chosen)))
        elif chosen not in fab.templates:
            guess = close_names(chosen, known)
            problems.add(where, "leaf %s: no port template %s in %s (known: %s)%s" % (
                name, quoted(chosen), join_path(ROOT, "port_templates"), ", ".join(known) or "none",
                "; did you mean %s?" % guess[0] if guess else ""))
        elif fab.templates[chosen].ok:
            templates[name] = fab.templates[chosen]
    return templates, members


def _check_leaves(problems, builder, members):
    """Every leaf the plan cables is a member of the leaves group, and every member is a leaf of the plan."""
    if members is None or builder is None:
        return
    for leaf, entry in builder.leaves.items():
        if leaf not in members:
            count = len(entry["ports"])
            problems.add(join_path(LEAVES, leaf), "%s is cabled to %s, which is not in the inventory's leaves group "
                         "(gpufabric_leaf_group; %d cable%s go%s to it): add the leaf to the group, or correct %s" % (
                             builder.first_cable[leaf].split(" -> ")[0], leaf, count, "" if count == 1 else "s",
                             "es" if count == 1 else "", join_path(ROOT, "leaf_name")))
    if not builder.complete:
        return  # part of the plan is missing: a member may be one of its leaves
    planned = sorted(builder.leaves, key=_natural)
    for name in sorted(members - set(builder.leaves), key=_natural):
        guess = close_names(name, planned)
        problems.add(join_path(LEAVES, name), "is in the inventory's leaves group but is no leaf of the rail plan "
                     "(%s)" % ("closest planned leaves: %s" % ", ".join(guess) if guess else
                               "the plan has %d leaves: %s" % (len(planned), some(planned))))


def _in_pool(fab, address):
    for rail in sorted(fab.pools or {}):
        for net in fab.pools[rail]:
            if net.first <= address <= net.last:
                return net
    return None


def _check_mgmt(problems, hosts, fab, builder):
    """A management address twice, inside a rail pool, or the same as a planned rail address."""
    seen = {}
    for host in hosts:
        if host.mgmt_text is None:
            continue
        path = join_path(host.path, "mgmt_address")
        if host.mgmt_text in seen:
            problems.add(path, "%s is also the mgmt_address of %s" % (host.mgmt_text, seen[host.mgmt_text]))
        seen.setdefault(host.mgmt_text, host.name)
        if host.mgmt is None:
            continue
        owner = builder.owners.get(host.mgmt) if builder is not None else None
        net = _in_pool(fab, host.mgmt)
        if owner is not None:
            problems.add(path, "%s is also %s: the rail plan would take the management address" % (
                host.mgmt_text, _owner_text(owner)))
        elif net is not None:
            problems.add(path, "%s is inside %s (%s): the management network and the rails must not share "
                               "addresses" % (host.mgmt_text, net.path, net.text))


def _can_build(fab):
    return None not in (fab.rails, fab.addressing, fab.su_prefix, fab.pools, fab.table_base, fab.leaf_name,
                        fab.leaf_port, fab.port_base, fab.breakout, fab.numbering, fab.templates) \
        and (fab.numbering == SU_NUMBERING or fab.ports_per_rack is not None)


def _plan(hosts, fabric, leaves, spines=None):
    """``(problems, builder)``: every problem of the inputs, and the plan's builder (None when it cannot be built)."""
    _need_netaddr()
    problems = Problems()
    fab = read_fabric(problems, fabric)
    servers = read_hosts(problems, hosts, fab)
    match_nics(problems, servers, fab)
    templates, members = _read_leaves(problems, leaves, fab)
    spine_list = (_uplinks.read_spines(problems, spines, fab.uplinks, fab.rails, leaves)
                  if spines is not None and fab.uplinks is not None and fab.rails is not None else None)
    builder = _build(problems, servers, fab, templates) if _can_build(fab) else None
    if builder is not None and not (isinstance(hosts, list) and len(servers) == len(hosts)):
        builder.complete = False
    _check_leaves(problems, builder, members)
    _check_mgmt(problems, servers, fab, builder)
    if builder is not None and spine_list and fab.uplinks.ok:
        _uplinks.add_uplinks(problems, builder.leaves, fab.uplinks, spine_list, leaves,
                             lambda leaf: templates.get(leaf, fab.ports), _natural, _ip, _su_leaves(fab))
    return list(problems), builder


def _su_leaves(fab):
    """``(rails, leaves per rail)`` of a full SU - one leaf per rail, or ``racks_per_su`` with a leaf per rack - so
    every SU owns the same block of leaf numbers; None with a leaf per rack and no racks_per_su (numbered in order)."""
    if "rack" not in _fields(fab.leaf_name):
        return fab.rails, 1
    return (fab.rails, fab.racks_per_su) if fab.racks_per_su is not None else None


def plan(hosts: Any, fabric: Any, leaves: Any = None, spines: Any = None) -> dict:
    """The rail plan of ``hosts`` on ``fabric`` (docs/rails.md), or RailPlanError listing every problem.

    ``leaves``: None (the leaves are not checked), or the inventory's leaves group as ``{leaf: its variables}``
    (``_roles.rail_plan_leaves``): every leaf the plan cables must be a member and every member a leaf of the
    plan; a member's ``gpufabric_leaf_port_template`` picks its port template, its ``gpufabric_leaf_asn`` its ASN.

    ``spines``: None or empty (no uplinks are planned), or the inventory's spines group as ``{spine: its
    variables}`` (``_roles.rail_plan_spines``): every leaf then gets ``uplinks``, ``asn`` and ``loopback``
    (``gpufabric_fabric.uplinks``, _uplinks.py)."""
    problems, builder = _plan(hosts, fabric, leaves, spines)
    if problems:
        raise RailPlanError(problems, "the rail plan cannot be made")
    return {"hosts": builder.hosts, "leaves": builder.leaves}


def plan_problems(hosts: Any, fabric: Any, leaves: Any = None, spines: Any = None) -> list[str]:
    """Every problem :func:`plan` would raise for ``hosts`` on ``fabric`` (and ``leaves``), as sentences; [] when the
    plan can be made (the preflight joins them with its own)."""
    return _plan(hosts, fabric, leaves, spines)[0]


def plan_or_problems(hosts: Any, fabric: Any, leaves: Any = None,
                     spines: Any = None) -> tuple[list[str], dict | None]:
    """``(problems, plan)`` in one pass: :func:`plan_problems`, and the plan :func:`plan` returns (None when there
    are problems) - for a caller that needs both (the preflight checks each cable's two ends on the plan)."""
    problems, builder = _plan(hosts, fabric, leaves, spines)
    return problems, (None if problems else {"hosts": builder.hosts, "leaves": builder.leaves})


# ---------------------------------------------------------------- the cabling table

CABLE_COLUMNS = ("leaf", "leaf_port", "host", "interface", "rail", "su", "pci", "address", "cable_label")


def _plan_entries(plan_):
    """``[(host, path, entry), ...]`` and the leaves of a plan, or MlnxError naming what is not a plan."""
    problems = Problems()
    hosts = plan_.get("hosts") if isinstance(plan_, dict) else None
    leaves = plan_.get("leaves") if isinstance(plan_, dict) else None
    if not isinstance(plan_, dict):
        raise MlnxError("rail_cabling: the input must be the result of gpufabric.mlnx.rail_plan (a mapping with hosts "
                        "and leaves), not %s" % kind_of(plan_), parameter="plan")
    for key, value in (("hosts", hosts), ("leaves", leaves)):
        if not isinstance(value, dict):
            raise MlnxError("rail_cabling: plan.%s must be a mapping (%s of gpufabric.mlnx.rail_plan's result), not %s"
                            % (key, "host -> its rail entries" if key == "hosts" else "leaf -> its SU and ports",
                               kind_of(value)), parameter="plan.%s" % key)
    out = []
    for name, entries in hosts.items():
        path = join_path("plan.hosts", _key_text(name))
        if not isinstance(name, str) or not isinstance(entries, list):
            problems.add(path, "must be a host name and its list of rail entries, not %s" % kind_of(entries))
            continue
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("leaf"), str) \
                    or not isinstance(entry.get("leaf_port"), str):
                problems.add(join_path(path, index), "must be a rail entry with leaf and leaf_port, not %s" % kind_of(entry))
                continue
            out.append((name, entry))
    if problems:
        raise RailPlanError(problems, "rail_cabling: the input is not a rail plan")
    return out, leaves


def cabling(plan_: Any) -> list[dict]:
    """One row per cable (CABLE_COLUMNS), sorted by leaf then leaf port, both in natural order."""
    entries, leaves = _plan_entries(plan_)
    rows = []
    for name, entry in entries:
        leaf = leaves.get(entry["leaf"])
        rows.append({
            "leaf": entry["leaf"], "leaf_port": entry["leaf_port"], "host": name,
            "interface": entry.get("interface"), "rail": entry.get("rail"),
            "su": leaf.get("su") if isinstance(leaf, dict) else None, "pci": entry.get("pci"),
            "address": entry.get("address"), "cable_label": entry.get("cable_label"),
        })
    leaf_rank = _ranks(row["leaf"] for row in rows)
    port_rank = _ranks(row["leaf_port"] for row in rows)
    rows.sort(key=lambda r: (leaf_rank[r["leaf"]], port_rank[r["leaf_port"]]))
    return rows


def _ranks(texts):
    """``{text: its place in natural order}`` for the distinct texts (a few hundred leaves and ports)."""
    return {text: rank for rank, text in enumerate(sorted(set(texts), key=_natural))}
