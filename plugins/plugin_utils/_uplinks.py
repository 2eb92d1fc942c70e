# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The leaves' uplinks to the spines (docs/rails.md "Uplinks to the spines"), a part of the rail plan made only
when the inventory names spines (the ``spines`` group, ``gpufabric_spine_group``).

- ``read_uplinks(problems, value, ...)``: ``gpufabric_fabric.uplinks`` read once (``Uplinks``), every problem added.
- ``read_spines(problems, spines, uplinks, rails, leaves)``: the spines group ``{spine: its variables}`` as
  ``[(spine, plane)]`` in natural order; None when there are no spines (no uplinks are planned).
- ``add_uplinks(problems, plan_leaves, ...)``: every leaf of the plan gets ``uplinks`` ``{port: {spine,
  spine_port, cable_label}}``, ``asn`` and ``loopback``; a problem for whatever does not fit.

Pure: no I/O. Used by _rail_plan only (which passes its own CIDR reader and sort key, so both read networks
and names the same way).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping
from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import (
    check_mapping, join_path, kind_of, quoted, read_choice, read_text, read_whole, unknown_keys)

UPLINK_KEYS = ("ports", "per_spine", "planes", "spine_port", "spine_port_base", "spine_ports", "leaf_uplinks",
               "asn_base", "loopbacks")
EVERY = "none"          # no planes: every leaf to every spine
RAIL = "rail"           # one spine plane per rail: a leaf of rail k to the spines of plane k
PLANES = (EVERY, RAIL)
SPINES = "spines"
LEAVES = "leaves"
SPINE_PLANE_VAR = "gpufabric_spine_plane"
LEAF_ASN_VAR = "gpufabric_leaf_asn"
ASN_BASE = 4200000000   # the 4-byte private range (RFC 6996): 4200000000-4294967294
ASN_MAX = 4294967294
MAX_PER_SPINE = 16
MAX_PORTS = 100000
PORT_RE = re.compile(r"swp([1-9][0-9]{0,3})(?:s[0-9])?", re.ASCII)
SPEC_RE = re.compile(r"0?[1-9]?d?", re.ASCII)


class Uplinks:
    """``gpufabric_fabric.uplinks`` read: each field valid or None (``ok`` False after any problem)."""
    __slots__ = ("path", "ok", "ports", "per_spine", "planes", "spine_port", "spine_port_base", "spine_ports",
                 "leaf_uplinks", "asn_base", "loopbacks")

    def __init__(self, path):
        self.path, self.ok = path, True
        self.ports = self.spine_ports = self.leaf_uplinks = self.loopbacks = None
        self.per_spine, self.planes, self.spine_port, self.spine_port_base = 1, EVERY, "swp{port}", 1
        self.asn_base = ASN_BASE


def _spine_port(problems, path, value):
    text = read_text(problems, path, value, "the spine's port of an uplink, e.g. swp{port}")
    if text is None:
        return None
    try:
        parsed = [(key, fmt, conv) for _lit, key, fmt, conv in string.Formatter().parse(text) if key is not None]
    except ValueError as err:
        problems.add(path, "%s is not a valid template: %s" % (quoted(text), err))
        return None
    if not parsed or any(key != "port" or conv or not SPEC_RE.fullmatch(fmt or "") for key, fmt, conv in parsed):
        problems.add(path, "%s must contain {port} and no other field (allowed: {port}, {port:02d}; {port} = the "
                           "leaf's place among the spine's leaves x per_spine + spine_port_base)" % quoted(text))
        return None
    return text


def _ports(problems, path, value):
    if isinstance(value, list):
        if not value:
            problems.add(path, "must not be empty (the leaf's uplink ports, in spine order)")
            return None
        names = [read_text(problems, join_path(path, i), item, "a leaf port such as swp33", pattern=PORT_RE)
                 for i, item in enumerate(value)]
        if None in names:
            return None
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            problems.add(path, "lists %s more than once" % ", ".join(twice))
            return None
        return names
    return read_whole(problems, path, value, 1, 9999, "the number of the first uplink port (swpN), or a list of "
                                                      "port names")


def read_uplinks(problems, value: Any, root: str, read_cidrs: Callable, pools: Mapping | None,
                 mgmt: list) -> Uplinks | None:
    """``value`` (``gpufabric_fabric.uplinks``; None: every default) read; None when it is not a mapping.
    ``read_cidrs(problems, path, value, what)`` -> networks with ``first``, ``last``, ``path``, ``text``;
    ``pools`` (rail -> networks) and ``mgmt`` (networks) must not overlap the loopbacks."""
    path = join_path(root, "uplinks")
    out = Uplinks(path)
    if value is None:
        return out
    before = len(problems)
    if not check_mapping(problems, path, value, "the leaves' uplinks to the spines (%s)" % ", ".join(UPLINK_KEYS)):
        return None
    unknown_keys(problems, value, path, UPLINK_KEYS)

    def key(name, read, *args):
        return read(problems, join_path(path, name), value[name], *args) if value.get(name) is not None else None

    out.ports = key("ports", _ports)
    out.per_spine = key("per_spine", read_whole, 1, MAX_PER_SPINE, "uplinks from each leaf to each spine") or 1
    out.planes = key("planes", read_choice, PLANES) or EVERY
    out.spine_port = key("spine_port", _spine_port) or "swp{port}"
    base = key("spine_port_base", read_whole, 0, 9999, "the number of a spine's first leaf-facing port")
    out.spine_port_base = 1 if base is None else base
    out.spine_ports = key("spine_ports", read_whole, 1, MAX_PORTS, "the leaf-facing ports of a spine")
    out.leaf_uplinks = key("leaf_uplinks", read_whole, 1, MAX_PORTS, "the uplink ports of a leaf")
    asn = key("asn_base", read_whole, 1, ASN_MAX, "the ASN of the first leaf; leaf i gets asn_base + i")
    out.asn_base = ASN_BASE if asn is None else asn
    if value.get("loopbacks") is not None:
        nets = read_cidrs(problems, join_path(path, "loopbacks"), value["loopbacks"],
                          "the pool of the leaves' loopbacks, one /32 each")
        _overlaps(problems, nets, pools, mgmt)
        out.loopbacks = nets
    out.ok = len(problems) == before
    return out


def _overlaps(problems, nets, pools, mgmt):
    others = [net for rail in sorted(pools or {}) for net in pools[rail]] + list(mgmt or [])
    for net in nets:
        for other in others:
            if net.first <= other.last and other.first <= net.last:
                problems.add(net.path, "%s overlaps %s (%s): a loopback must be no rail or management address" % (
                    net.text, other.path, other.text))


# ---------------------------------------------------------------- the spines group

def read_spines(problems, spines: Any, uplinks: Uplinks, rails: int, leaves: Any) -> list | None:
    """``[(spine, plane or None), ...]`` in natural order of the names (the caller sorts), or None when ``spines``
    is None or empty (no spines: no uplinks)."""
    if spines is None:
        return None
    if not isinstance(spines, Mapping):
        problems.add(SPINES, "must be a mapping of each spine of the inventory's spines group to its variables "
                             "(gpufabric.mlnx.rail_plan_spines), not %s" % kind_of(spines))
        return None
    out = []
    for name, variables in spines.items():
        if not isinstance(name, str) or not name.strip():
            problems.add(join_path(SPINES, str(name)), "must be a spine's name (a non-empty string)")
            continue
        path = join_path(SPINES, name)
        if isinstance(leaves, Mapping) and name in leaves:
            problems.add(path, "is in both the leaves group (gpufabric_leaf_group) and the spines group "
                               "(gpufabric_spine_group): a switch is one or the other")
            continue
        variables = {} if variables is None else variables
        if not check_mapping(problems, path, variables, "the spine's variables (%s)" % SPINE_PLANE_VAR):
            continue
        plane = variables.get(SPINE_PLANE_VAR)
        where = join_path(path, SPINE_PLANE_VAR)
        if uplinks.planes == RAIL:
            if plane is None:
                problems.add(where, "required with %s rail: the rail whose leaves this spine takes (0 to %d)" % (
                    join_path(uplinks.path, "planes"), rails - 1))
                continue
            plane = read_whole(problems, where, plane, 0, rails - 1, "the rail of the spine's plane")
            if plane is None:
                continue
        elif plane is not None:
            problems.add(where, "only with %s rail (planes is none: every leaf goes to every spine)" % join_path(
                uplinks.path, "planes"))
            continue
        out.append((name, plane))
    return out or None


# ---------------------------------------------------------------- the uplinks of every leaf

def _default_first(leaf, ports_of):
    """(the number of the leaf's first uplink port - the cage after its server-facing cages -, the number of those
    cages), or (None, None) when the leaf's ports have no leaf_ports."""
    ports = ports_of(leaf)
    if ports.count is None:
        return None, None
    cages = -(-ports.count // ports.breakout)
    return ports.base + cages, cages


def _leaf_ports(problems, leaf, entry, uplinks, ports_of, need):
    """The names of the ``need`` uplink ports of ``leaf``, or None after a problem."""
    path = join_path(LEAVES, leaf)
    listed = uplinks.ports if isinstance(uplinks.ports, list) else None
    where = join_path(uplinks.path, "ports")
    if listed is not None:
        first, have = None, len(listed)
    elif uplinks.ports is not None:
        first, have = uplinks.ports, None
    else:
        first, have = _default_first(leaf, ports_of)
        template = entry.get("port_template")
        where = "the server-facing cages of %s" % (
            join_path("gpufabric_fabric.port_templates", template) if template else "gpufabric_fabric.leaf_ports")
        if first is None:
            problems.add(path, "has no uplink ports: set %s (the first uplink port) or leaf_ports (the uplinks follow "
                               "the server-facing ports)" % join_path(uplinks.path, "ports"))
            return None
    if uplinks.leaf_uplinks is not None:
        have, where = uplinks.leaf_uplinks, join_path(uplinks.path, "leaf_uplinks")
    if have is not None and need > have:
        problems.add(path, "needs %d uplink ports (%d spines x per_spine %d) but has %d (%s)" % (
            need, need // uplinks.per_spine, uplinks.per_spine, have, where))
        return None
    names = listed[:need] if listed is not None else ["swp%d" % (first + k) for k in range(need)]
    taken = [port for port in names if port in entry.get("ports", {})]
    if taken:
        problems.add(path, "uplink port %s is also a server-facing port (cabled to %s): move %s" % (
            taken[0], entry["ports"][taken[0]], join_path(uplinks.path, "ports")))
        return None
    cages = _server_cages(ports_of(leaf))
    inside = [port for port in names if cages and int(PORT_RE.match(port).group(1)) in cages]
    if inside:
        problems.add(path, "uplink port %s is on a server-facing cage (swp%d to swp%d: %s): move %s" % (
            inside[0], cages.start, cages.stop - 1, ports_of(leaf).count_path, join_path(uplinks.path, "ports")))
        return None
    return names


def _server_cages(ports):
    """The cage numbers of the leaf's server-facing ports (a range) when its ports are named swp{port} or
    swp{cage}..., else None (nothing to compare)."""
    if ports.count is None or not ports.leaf_port or not re.match(r"swp\{(port|cage)(:[0-9d]*)?\}", ports.leaf_port):
        return None
    return range(ports.base, ports.base - (-ports.count // ports.breakout))


def _numbers(problems, order, plan_leaves, block, per_plane, uplinks):
    """``({leaf: its number}, {leaf: its place in its spine plane})``. With ``block`` (the numbers an SU owns: its
    most leaves) a leaf's number is (SU - 1) x ``block`` + its rank among its SU's leaves (rail, name order), and its
    place (SU - 1) x the block's share of its plane + its rank among its SU's leaves of that plane: an SU's leaves get
    the same ASNs, loopbacks and spine ports whichever other SUs the run sees (a job of one SU computes what the whole
    site does). Without ``block`` the leaves are numbered in ``order``. None after a problem (an SU with more leaves
    than its block)."""
    numbers, places, in_su, in_plane = {}, {}, {}, {}
    for index, leaf in enumerate(order):
        entry = plan_leaves[leaf]
        plane = plane_of(uplinks, entry)
        if block is None:
            numbers[leaf] = index
            places[leaf] = in_plane.setdefault(plane, 0)
            in_plane[plane] += 1
            continue
        rank = in_su.setdefault(entry["su"], 0)
        in_su[entry["su"]] += 1
        share = in_plane.setdefault((entry["su"], plane), 0)
        in_plane[(entry["su"], plane)] += 1
        if rank >= block or share >= per_plane:
            count = sum(1 for other in plan_leaves.values() if other["su"] == entry["su"])
            problems.add(join_path(LEAVES, leaf), "SU %d has %d leaves, more than the %d numbers each SU owns for "
                         "ASNs, loopbacks and spine ports (rails x racks_per_su with a leaf per rack): raise "
                         "gpufabric_fabric.racks_per_su, or give the SU's racks to another su"
                         % (entry["su"], count, block))
            return None
        numbers[leaf] = (entry["su"] - 1) * block + rank
        places[leaf] = (entry["su"] - 1) * per_plane + share
    return numbers, places


def leaf_at(numbers, number):
    """The leaf whose number is ``number``."""
    return next(leaf for leaf, value in numbers.items() if value == number)


def _identities(problems, order, numbers, uplinks, leaf_vars):
    """``{leaf: (asn, loopback)}`` for the leaves in ``order`` (``numbers``: each leaf's number), or None after a
    problem."""
    nets = uplinks.loopbacks
    size = sum(net.last - net.first + 1 for net in nets)
    before = len(problems)
    last = max(numbers.values(), default=-1)
    if last >= size:
        problems.add(join_path(uplinks.path, "loopbacks"), "exhausted: %s holds %d addresses for %d leaves (one /32 "
                     "each%s)" % (" + ".join(net.text for net in nets), size, last + 1,
                                  "; the numbers of the SUs before %s's count too" % leaf_at(numbers, last)
                                  if last + 1 > len(order) else ""))
    out, owners = {}, {}
    for leaf in order:
        index = numbers[leaf]
        variables = leaf_vars.get(leaf) if isinstance(leaf_vars, Mapping) else None
        given = variables.get(LEAF_ASN_VAR) if isinstance(variables, Mapping) else None
        if given is not None:
            asn = read_whole(problems, join_path(LEAVES, leaf, LEAF_ASN_VAR), given, 1, ASN_MAX,
                             "the leaf's BGP autonomous system")
        else:
            asn = uplinks.asn_base + index
            if asn > ASN_MAX:
                problems.add(join_path(uplinks.path, "asn_base"), "%d + %d leaves passes the largest ASN %d (leaf %s)"
                             % (uplinks.asn_base, last + 1, ASN_MAX, leaf))
                return None
        if asn is not None and asn in owners:
            problems.add(join_path(LEAVES, leaf), "ASN %d is also %s's: eBGP between leaf and spine needs one ASN per "
                                                  "leaf (%s, %s)" % (asn, owners[asn], LEAF_ASN_VAR,
                                                                     join_path(uplinks.path, "asn_base")))
        owners.setdefault(asn, leaf)
        offset = index
        for net in nets:
            if offset <= net.last - net.first:
                out[leaf] = (asn, net.first + offset)
                break
            offset -= net.last - net.first + 1
    return out if len(problems) == before else None


def add_uplinks(problems, plan_leaves: dict, uplinks: Uplinks, spines: list, leaf_vars: Any, ports_of: Callable,
                natural: Callable, ip_text: Callable, su_leaves: tuple | None = None) -> None:
    """Give every leaf of ``plan_leaves`` its ``uplinks``, ``asn`` and ``loopback``. ``spines``: read_spines;
    ``ports_of(leaf)``: the leaf's port template; ``natural``: the sort key of names; ``ip_text(int)``;
    ``su_leaves``: ``(rails, leaves per rail)`` of a full SU - each SU then owns a block of numbers (_numbers) - or
    None (the leaves numbered in order)."""
    if uplinks.loopbacks is None:
        problems.add(join_path(uplinks.path, "loopbacks"), "required: the inventory has %d spines (%s), so every leaf "
                     "gets a loopback and BGP router id from this pool (e.g. 198.18.128.0/24)" % (
                         len(spines), spines[0][0]))
        return
    order = sorted(plan_leaves, key=lambda n: (plan_leaves[n]["su"], plan_leaves[n]["rail"], natural(n)))
    block = per_plane = None
    if su_leaves is not None:
        block = su_leaves[0] * su_leaves[1]
        per_plane = su_leaves[1] if uplinks.planes == RAIL else block
    numbered = _numbers(problems, order, plan_leaves, block, per_plane, uplinks)
    if numbered is None:
        return
    numbers, places = numbered
    identities = _identities(problems, order, numbers, uplinks, leaf_vars)
    spines = sorted(spines, key=lambda s: natural(s[0]))
    planes = {}
    for spine, plane in spines:
        planes.setdefault(plane, []).append(spine)
    members = {}
    for leaf in order:
        members.setdefault(plane_of(uplinks, plan_leaves[leaf]), []).append(leaf)
    for plane, leaves in sorted(members.items(), key=lambda item: -1 if item[0] is None else item[0]):
        if plane not in planes:
            problems.add(join_path(uplinks.path, "planes"), "rail %d has %d leaves (%s, ...) and no spine: set %s: %d "
                         "on its spines" % (plane, len(leaves), leaves[0], SPINE_PLANE_VAR, plane))
            continue
        _spine_capacity(problems, planes[plane], max(places[leaf] for leaf in leaves) + 1, uplinks)
    if identities is None:
        return
    for leaf in order:
        entry, plane = plan_leaves[leaf], plane_of(uplinks, plan_leaves[leaf])
        their = planes.get(plane)
        if not their:
            continue
        names = _leaf_ports(problems, leaf, entry, uplinks, ports_of, len(their) * uplinks.per_spine)
        if names is None:
            continue
        place = places[leaf]
        cabled, ports = {}, iter(names)
        for spine in their:
            for lane in range(uplinks.per_spine):
                port = next(ports)
                spine_port = uplinks.spine_port.format(port=uplinks.spine_port_base + place * uplinks.per_spine + lane)
                cabled[port] = {"spine": spine, "spine_port": spine_port,
                                "cable_label": "%s:%s -> %s:%s" % (leaf, port, spine, spine_port)}
        asn, loopback = identities[leaf]
        entry.update(uplinks=cabled, asn=asn, loopback="%s/32" % ip_text(loopback))


def plane_of(uplinks, entry):
    """The spine plane of a leaf: its rail (planes rail) or None (every leaf to every spine)."""
    return entry["rail"] if uplinks.planes == RAIL else None


def _spine_capacity(problems, spines, leaves, uplinks):
    need = leaves * uplinks.per_spine
    if uplinks.spine_ports is not None and need > uplinks.spine_ports:
        problems.add(join_path(SPINES, spines[0]), "needs %d leaf-facing ports (%d leaves x per_spine %d) but has %d "
                     "(%s)%s" % (need, leaves, uplinks.per_spine, uplinks.spine_ports,
                                 join_path(uplinks.path, "spine_ports"),
                                 "; so do %s" % ", ".join(spines[1:]) if len(spines) > 1 else ""))
