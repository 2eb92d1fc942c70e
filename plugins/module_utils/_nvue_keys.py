# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVUE keys whose spelling changed between Cumulus Linux releases: one table, used wherever a tree is written for a
switch or read from one (the leaf role's configuration, the RoCE consistency check, nvue_info, the drift report).

Each row: the object that holds the key (a path, ``*`` for any id), the key and its two values before, the key and
its two values from ``since``, and the source. A tree is written in the spelling of the release it goes to
(:func:`spell`); a switch's tree is read in either spelling (:func:`flag`), because a release that renamed a key
may still print the old one in places the documentation does not settle (docs/leaves.md, "Release-aware keys").

Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError

RELEASE_RE = re.compile(r"([0-9]{1,2})\.([0-9]{1,2})(?:\.([0-9]{1,3}))?", re.ASCII)


class Rename(NamedTuple):
    where: tuple          # the object holding the key; "*" matches any id
    old: tuple            # (key, value when on, value when off)
    new: tuple
    since: tuple          # the first release with the new spelling
    source: str


_515 = "CumulusNetworks/docs content/cumulus-linux-515/Whats-New/New-and-Changed-NVUE-Commands.md"
_ON_OFF = ("enable", "on", "off")
_ENABLED = ("state", "enabled", "disabled")
RENAMES = (
    Rename(("system", "config", "auto-save"), _ON_OFF, _ENABLED, (5, 10, 0),
           "CumulusNetworks/docs content/cumulus-linux-510/Whats-New (Changed NVUE Commands): "
           "nv set system config auto-save enable on -> state enabled"),
    Rename(("qos", "roce"), _ON_OFF, _ENABLED, (5, 15, 0), _515 + ": nv set qos roce enable on|off -> state"),
    Rename(("router", "bgp"), _ON_OFF, _ENABLED, (5, 15, 0), _515 + ": nv set router bgp enable on|off -> state"),
    Rename(("vrf", "*", "router", "bgp"), _ON_OFF, _ENABLED, (5, 15, 0),
           _515 + ": nv set vrf <vrf-id> router bgp enable -> state"),
    Rename(("vrf", "*", "router", "bgp", "neighbor", "*"), _ON_OFF, _ENABLED, (5, 15, 0),
           _515 + ": nv set vrf <vrf-id> router bgp neighbor <id> enable -> state"),
    Rename(("vrf", "*", "router", "bgp", "address-family", "ipv4-unicast"), _ON_OFF, _ENABLED, (5, 15, 0),
           _515 + ": ... address-family ipv4-unicast enable -> state"),
    Rename(("router", "adaptive-routing"), _ON_OFF, _ENABLED, (5, 15, 0),
           _515 + ": nv set router adaptive-routing enable -> state"),
    Rename(("interface", "*", "router", "adaptive-routing"), _ON_OFF, _ENABLED, (5, 15, 0),
           _515 + ": nv set interface <id> router adaptive-routing enable -> state"),
)


class SpellingError(MlnxError):
    """A release that cannot be read, or a value of a renamed key that is neither spelling's."""


def release_tuple(release: Any, parameter: str = "release") -> tuple:
    """``(5, 11, 0)`` of ``5.11.0`` / ``5.11``; SpellingError naming the parameter for anything else."""
    match = RELEASE_RE.fullmatch(str(release).strip()) if isinstance(release, (str, int, float)) else None
    if not match or isinstance(release, bool):
        raise SpellingError("%s: %r is not a Cumulus Linux release (allowed: N.N or N.N.N as nv show system version "
                            "prints product-release, e.g. 5.11.0)" % (parameter, release), parameter=parameter)
    return tuple(int(g or 0) for g in match.groups())


def _matches(where: tuple, path: tuple) -> bool:
    return len(where) == len(path) and all(w in ("*", p) for w, p in zip(where, path))


def rename_at(path: tuple) -> Rename | None:
    """The row for the object at ``path`` (a tuple of keys), or None."""
    for row in RENAMES:
        if _matches(row.where, path):
            return row
    return None


def spelling(row: Rename, release: Any) -> tuple:
    """``(key, on, off)`` of ``row`` on ``release``."""
    return row.new if release_tuple(release) >= row.since else row.old


def _on(row: Rename, key: str, value: Any, where: str) -> bool:
    """Whether ``value`` of ``key`` (the old or the new spelling's key) says on; SpellingError for another value."""
    _key, on, off = row.new if key == row.new[0] else row.old
    if value == on:
        return True
    if value == off:
        return False
    raise SpellingError("%s: %r is not a value of %s (allowed: %s or %s)" % (where, value, key, on, off),
                        parameter=where)


def flag(node: Any, path: tuple, default: bool | None = None) -> bool | None:
    """Whether the object ``node`` at ``path`` (a row of RENAMES) is on, read in either spelling; ``default`` when
    it holds neither key. Both keys present and disagreeing is an error naming the path."""
    row = rename_at(tuple(path))
    if row is None:
        raise SpellingError("%s is not an object of the release table" % ".".join(path))
    found = {}
    for key in (row.old[0], row.new[0]):
        if isinstance(node, dict) and key in node:
            found[key] = _on(row, key, node[key], "%s.%s" % (".".join(path), key))
    if len(set(found.values())) > 1:
        raise SpellingError("%s: %s disagree (%s)" % (".".join(path), " and ".join(found), ", ".join(
            "%s %s" % (k, node[k]) for k in found)), parameter=".".join(path))
    return next(iter(found.values())) if found else default


def spell(tree: Any, release: Any, path: tuple = ()) -> Any:
    """A copy of ``tree`` with every renamed key in the spelling of ``release`` (given in either spelling)."""
    if not isinstance(tree, dict):
        return tree
    row = rename_at(path) if path else None
    out = {}
    for key, value in tree.items():
        out[key] = spell(value, release, path + (key,))
    if row is not None:
        key, on, off = spelling(row, release)
        other = (row.old if key == row.new[0] else row.new)[0]
        where = ".".join(path)
        said = {k: _on(row, k, out[k], "%s.%s" % (where, k)) for k in (key, other) if out.get(k) is not None}
        if len(set(said.values())) > 1:
            raise SpellingError("%s: %s and %s disagree" % (where, key, other), parameter=where)
        if other in out:
            value = out.pop(other)
            out[key] = None if value is None else (on if said[other] else off)
        elif key in said:
            out[key] = on if said[key] else off
    return out


def table() -> list[dict]:
    """The table as data (docs, nvue_info): path, old and new spelling, since, source."""
    return [{"path": ".".join(row.where), "old": "%s %s|%s" % row.old, "new": "%s %s|%s" % row.new,
             "since": ".".join(map(str, row.since)), "source": row.source} for row in RENAMES]
