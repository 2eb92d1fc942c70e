# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout's order (docs/rollout.md): batches aligned to the physical layout, each batch's leaves before its
servers, and which servers are held because a leaf they are cabled to is not ready.

- ``batches(servers, plan, by, size, leaves, in_run)``: the batches (by rack, by SU, or by count: ``size`` servers at
  a time in inventory order, as ``serial`` makes them), each with the leaves its servers are cabled to that no
  earlier batch had, the host order of the rollout play (per batch: its leaves, then its servers) and the batch sizes
  (``serial``).
- ``holds(host, plan, leaves_state, in_run)``: why a server must not be touched - a leaf it is cabled to is not in
  this run, its configuration failed, it was not checked, or its gate holds the server - one entry per reason with
  the leaf, the port and the reason; [] when every leaf of the server is ready for it.

Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ansible.utils.helpers import pct_to_int

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of, natural_key
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roles import host_names

BATCH_BY = ("rack", "su", "count")


class RolloutError(MlnxError):
    """Inputs of the rollout's order that cannot be used, naming the parameter."""


def _names(value, parameter):
    """A list of host names, or None (not given)."""
    return None if value is None else host_names(value, "rollout", parameter)


_natural = natural_key   # the sort key of names (module_utils/_validate.py)


def _leaves_of(plan, host):
    """The leaves a server is cabled to, in rail order, with the port: ``[(leaf, port)]``."""
    hosts = plan.get("hosts")
    entries = hosts.get(host) if isinstance(hosts, Mapping) else None
    if not isinstance(entries, list):
        return None
    return [(e["leaf"], e.get("leaf_port")) for e in entries
            if isinstance(e, Mapping) and isinstance(e.get("leaf"), str)]


def _su_of(plan, host):
    for leaf, _port in _leaves_of(plan, host) or ():
        leaves = plan.get("leaves")
        entry = leaves.get(leaf) if isinstance(leaves, Mapping) and isinstance(leaf, str) else None
        if isinstance(entry, Mapping) and entry.get("su") is not None:
            return entry["su"]
    return None


SIZE = re.compile(r"([1-9][0-9]*)|([1-9][0-9]?|100)%", re.ASCII)


def batch_sizes(size, total: int) -> list[int]:
    """The servers of each batch, as Ansible's ``serial`` makes them from ``gpufabric_batch_size`` (a whole number of
    at least 1, a percentage 1%-100% of ``total``, or a non-empty list of those - the last repeats), until ``total``
    servers are in a batch. Raises RolloutError naming what is allowed."""
    sizes = list(size) if isinstance(size, (list, tuple)) else [size]
    if not sizes or not all(isinstance(v, (int, str)) and not isinstance(v, bool) and SIZE.fullmatch(str(v))
                            for v in sizes):
        raise RolloutError("gpufabric_batch_size=%s is not a batch size: allowed is a whole number of at least 1, a "
                           "percentage 1%%-100%%, or a non-empty list of those" % json.dumps(size, default=repr),
                           parameter="gpufabric_batch_size")
    out, left = [], total
    while left > 0:
        value = sizes[min(len(out), len(sizes) - 1)]
        step = pct_to_int(value, total) if isinstance(value, str) and value.endswith("%") else int(value)
        out.append(min(step, left))
        left -= out[-1]
    return out


def _batch_index(value, names: list[str], parameter: str) -> int | None:
    """``gpufabric_start_batch`` / ``gpufabric_end_batch`` (None, a batch number from 1, or a batch's name) -> the
    index of that batch (None when not given); RolloutError naming what is allowed."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and value in names:
        return names.index(value)
    number = value if isinstance(value, int) and not isinstance(value, bool) else (
        int(value) if isinstance(value, str) and re.fullmatch(r"[0-9]{1,9}", value, re.ASCII) else None)
    if number is not None and 1 <= number <= len(names):
        return number - 1
    shown = ", ".join(json.dumps(n) for n in names[:5]) + (", ..." if len(names) > 5 else "")
    raise RolloutError("%s=%s is not a batch of this rollout: allowed is a batch number 1-%d or a batch's name (%s)"
                       % (parameter, json.dumps(value, default=repr), len(names), shown),
                       parameter=parameter, allowed="1-%d or a batch name" % len(names))


def _unit_name(by: str, keys: list) -> str:
    """A batch's name: ``rack r07`` / ``SU 3`` for one rack or SU, ``racks r05-r08`` / ``SUs 3-6`` for several."""
    word = "rack" if by == "rack" else "SU"
    if len(keys) == 1:
        return "%s %s" % (word, keys[0])
    return "%ss %s-%s" % (word, keys[0], keys[-1])


def batches(servers: Sequence[Mapping], plan: Mapping | None, by: str = "count", size: Any = None,
            leaves: Sequence[str] | None = None, in_run: Sequence[str] | None = None, start: Any = None,
            end: Any = None) -> dict:
    """``servers``: ``[{"name", "rack"}]`` in inventory order (the servers of this run); ``plan``: the rail plan (None:
    no fabric - by count only, no leaf); ``by``: V(rack) (racks), V(su) (SUs of the plan) or V(count) (servers, in
    inventory order); ``size`` (``gpufabric_batch_size``, as ``serial`` takes it - a number, a percentage or a list
    whose last repeats) counts the units of ``by`` in a batch: servers with V(count) (default all of them), racks
    with V(rack) and SUs with V(su) (default one; in natural order of their names);
    ``leaves``: the inventory's leaves (None: no leaf is managed); ``in_run``: the hosts this run may touch (None: all
    - a leaf outside it is not put into a batch, and its servers are held). Returns ``{"batches": [{"name", "leaves",
    "servers"}], "order": [...], "sizes": [...]}``: the host order of the rollout play (per batch: its new leaves,
    then its servers) and its ``serial``. ``start`` (``gpufabric_start_batch``): the batch to begin with - its number
    (from 1) or its name; the batches before it are listed in ``skipped`` and not run, and the leaves they had that
    later batches need come with the first batch run (configured and gated again, which changes nothing on a leaf
    that is done). ``end`` (``gpufabric_end_batch``): the last batch to run, the same way - the batches after it are
    listed in ``after`` and not run (a wave of a pipeline: ``start`` and ``end`` its first and last batch). Every
    batch carries its ``number`` in the whole rollout."""
    if by not in BATCH_BY:
        raise RolloutError("gpufabric_batch_by is %s (allowed: %s)" % (json.dumps(by, default=repr),
                                                                       ", ".join(BATCH_BY)),
                           parameter="gpufabric_batch_by", allowed=list(BATCH_BY))
    if not isinstance(servers, (list, tuple)) or not all(isinstance(s, Mapping) and isinstance(s.get("name"), str)
                                                         for s in servers):
        raise RolloutError("the servers must be a list of {name, rack}, not %s" % kind_of(servers),
                           parameter="servers")
    if plan is None and by != "count":
        raise RolloutError("gpufabric_batch_by is %s, which needs the rail plan (gpufabric_fabric): without it the "
                           "batches can only be by count (gpufabric_batch_size)" % by, parameter="gpufabric_batch_by")
    if plan is not None and (not isinstance(plan, Mapping) or not isinstance(plan.get("hosts"), Mapping)):
        raise RolloutError("the rail plan must be the result of gpufabric.mlnx.rail_plan, not %s" % kind_of(plan),
                           parameter="plan")
    plan = plan if plan is not None else {"hosts": {}}
    managed = set(_names(leaves, "leaves") or ())
    in_run = _names(in_run, "in_run")
    reach = None if in_run is None else set(in_run)
    groups: dict[Any, list[str]] = {}
    names: dict[Any, str] = {}
    if size is None:
        size = "100%" if by == "count" else 1
    if by == "count":
        offset = 0
        for key, step in enumerate(batch_sizes(size, len(servers))):
            groups[key] = [s["name"] for s in servers[offset:offset + step]]
            names[key] = "servers %d-%d" % (offset + 1, offset + step)
            offset += step
    else:
        units: dict[Any, list[str]] = {}
        for server in servers:
            key = server.get("rack") if by == "rack" else _su_of(plan, server["name"])
            units.setdefault(key, []).append(server["name"])
        keys = sorted(units, key=lambda k: _natural("" if k is None else k))
        offset = 0
        for step in batch_sizes(size, len(keys)):
            chunk = keys[offset:offset + step]
            offset += step
            groups[tuple(chunk)] = [name for key in chunk for name in units[key]]
            names[tuple(chunk)] = _unit_name(by, chunk)
    listed = [names[key] for key in groups]
    first = _batch_index(start, listed, "gpufabric_start_batch") or 0
    last = _batch_index(end, listed, "gpufabric_end_batch")
    if last is not None and last < first:
        raise RolloutError("gpufabric_end_batch=%s (batch %d, %s) comes before gpufabric_start_batch=%s (batch %d, %s): "
                           "the last batch to run must be the first one or a later one"
                           % (json.dumps(end, default=repr), last + 1, listed[last],
                              json.dumps(start, default=repr), first + 1, listed[first]),
                           parameter="gpufabric_end_batch", allowed="%d-%d" % (first + 1, len(listed)))
    done: set[str] = set()
    out, order, sizes, skipped, after = [], [], [], [], []
    for number, (key, members) in enumerate(groups.items(), start=1):
        if number <= first:
            skipped.append({"number": number, "name": names[key], "servers": list(members)})
            continue
        if last is not None and number > last + 1:
            after.append({"number": number, "name": names[key], "servers": list(members)})
            continue
        batch_leaves = []
        for host in members:
            for leaf, _port in _leaves_of(plan, host) or ():
                if leaf in managed and leaf not in done and (reach is None or leaf in reach):
                    done.add(leaf)
                    batch_leaves.append(leaf)
        batch_leaves.sort(key=_natural)
        out.append({"number": number, "name": names[key], "leaves": batch_leaves, "servers": list(members)})
        order.extend(batch_leaves + list(members))
        sizes.append(len(batch_leaves) + len(members))
    return {"batches": out, "order": order, "sizes": sizes, "skipped": skipped, "after": after,
            "shared": _shared(out, plan)}


def _shared(batches: list[dict], plan: Mapping) -> list[dict]:
    """The batches whose leaves also serve servers of later batches: ``[{"number", "name", "leaves", "servers"}]``
    (those leaves, those servers). An upgrade or a change of such a leaf reaches servers that are still in service -
    with ``gpufabric_batch_by=rack`` and rail leaves shared by the racks of an SU, every SU's first rack."""
    owner = {leaf: index for index, batch in enumerate(batches) for leaf in batch["leaves"]}
    found: dict[int, dict] = {}
    for index, batch in enumerate(batches):
        for host in batch["servers"]:
            for leaf, _port in _leaves_of(plan, host) or ():
                first = owner.get(leaf)
                if first is not None and first < index:
                    entry = found.setdefault(first, {"leaves": set(), "servers": []})
                    entry["leaves"].add(leaf)
                    if host not in entry["servers"]:
                        entry["servers"].append(host)
    return [{"number": batches[i]["number"], "name": batches[i]["name"],
             "leaves": sorted(found[i]["leaves"], key=_natural), "servers": found[i]["servers"]} for i in sorted(found)]


def holds(host: str, plan: Mapping, leaves_state: Mapping, leaves: Sequence[str] | None = None,
          in_run: Sequence[str] | None = None) -> list[dict]:
    """Why server ``host`` is held: ``[{"leaf", "port", "reason"}]``. ``leaves_state``: ``{leaf: {"status":
    {"failed", "msg"} or None, "gate": leaf_readiness's result or None}}`` of the leaves of this run; ``leaves``: the
    inventory's managed leaves (a leaf outside them is not the collection's: not checked; None: none is)."""
    if not isinstance(host, str):
        raise RolloutError("leaf_holds: the input must be a server's name, not %s" % kind_of(host), parameter="host")
    if not isinstance(leaves_state, Mapping):
        raise RolloutError("the leaves' state must be a mapping of leaf name to its status and gate, not %s"
                           % kind_of(leaves_state), parameter="leaves_state")
    cabled = _leaves_of(plan if isinstance(plan, Mapping) else {}, host)
    if cabled is None:
        return [{"leaf": None, "port": None, "reason": "%s is not in the rail plan" % host}]
    managed = set(_names(leaves, "leaves") or ())
    in_run = _names(in_run, "in_run")
    reach = None if in_run is None else set(in_run)
    out = []
    for leaf, port in cabled:
        if leaf not in managed:
            continue
        state = leaves_state.get(leaf) if isinstance(leaves_state.get(leaf), Mapping) else {}
        status = state.get("status") if isinstance(state.get("status"), Mapping) else {}
        gate = state.get("gate") if isinstance(state.get("gate"), Mapping) else None
        if reach is not None and leaf not in reach:
            reason = "its leaf %s is not in this run (--limit): a leaf is configured and checked before its servers" \
                     % leaf
        elif status.get("failed"):
            reason = "its leaf %s could not be configured: %s" % (leaf, status.get("msg") or "no message")
        elif gate is None:
            reason = "its leaf %s was not checked (the leaf gate did not run for it)" % leaf
        elif host in (gate.get("held") or ()):
            words = (gate.get("hosts") or {}).get(host) or gate.get("leaf") or ["not ready"]
            reason = "; ".join(words)
        else:
            continue
        out.append({"leaf": leaf, "port": port, "reason": reason})
    return out
