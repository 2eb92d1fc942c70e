# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout's order (docs/rollout.md): batches aligned to the physical layout, each batch's leaves before its
servers, and which servers are held because a leaf they are cabled to is not ready.

- ``batches(servers, plan, by, count, leaves, in_run)``: the batches (by rack, by SU, or ``count`` servers at a time
  in rack order), each with the leaves its servers are cabled to that no earlier batch had, the host order of the
  rollout play (per batch: its leaves, then its servers) and the batch sizes (``serial``).
- ``holds(host, plan, leaves_state, in_run)``: why a server must not be touched - a leaf it is cabled to is not in
  this run, its configuration failed, it was not checked, or its gate holds the server - one entry per reason with
  the leaf, the port and the reason; [] when every leaf of the server is ready for it.

Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of

BATCH_BY = ("rack", "su", "count")


class RolloutError(MlnxError):
    """Inputs of the rollout's order that cannot be used, naming the parameter."""


def _names(value, parameter):
    """A list of host names, or None."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise RolloutError("%s must be a list of host names, not %s" % (parameter, kind_of(value)), parameter=parameter)
    return list(value)


def _natural(text):
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", str(text)) if part]


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


def batches(servers: Sequence[Mapping], plan: Mapping, by: str = "rack", count: int | None = None,
            leaves: Sequence[str] | None = None, in_run: Sequence[str] | None = None) -> dict:
    """``servers``: ``[{"name", "rack"}]`` in inventory order (the servers of this run); ``plan``: the rail plan;
    ``leaves``: the inventory's leaves (None: no leaf is managed); ``in_run``: the hosts this run may touch (None:
    all - a leaf outside it is not put into a batch, and its servers are held). Returns ``{"batches": [{"name",
    "leaves", "servers"}], "order": [...], "sizes": [...]}``."""
    if by not in BATCH_BY:
        raise RolloutError("gpufabric_batch_by is %r (allowed: %s)" % (by, ", ".join(BATCH_BY)),
                           parameter="gpufabric_batch_by", allowed=list(BATCH_BY))
    if by == "count" and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
        raise RolloutError("gpufabric_batch_by is count, so gpufabric_batch_count must be a whole number of servers "
                           "of at least 1, not %r" % (count,), parameter="gpufabric_batch_count")
    if not isinstance(plan, Mapping) or not isinstance(plan.get("hosts"), Mapping):
        raise RolloutError("the rail plan must be the result of gpufabric.mlnx.rail_plan, not %s" % kind_of(plan),
                           parameter="plan")
    if not isinstance(servers, (list, tuple)) or not all(isinstance(s, Mapping) and isinstance(s.get("name"), str)
                                                         for s in servers):
        raise RolloutError("the servers must be a list of {name, rack}, not %s" % kind_of(servers),
                           parameter="servers")
    managed = set(_names(leaves, "leaves") or ())
    in_run = _names(in_run, "in_run")
    reach = None if in_run is None else set(in_run)
    groups: dict[Any, list[str]] = {}
    names: dict[Any, str] = {}
    if by == "count":
        ordered = sorted(servers, key=lambda s: _natural(s.get("rack") or ""))  # stable: inventory order in a rack
        for index, server in enumerate(ordered):
            key = index // count
            groups.setdefault(key, []).append(server["name"])
            names.setdefault(key, "servers %d-%d" % (key * count + 1, min((key + 1) * count, len(ordered))))
    else:
        for server in servers:
            key = server.get("rack") if by == "rack" else _su_of(plan, server["name"])
            groups.setdefault(key, []).append(server["name"])
            names.setdefault(key, "%s %s" % ("rack" if by == "rack" else "SU", key))
        order_keys = sorted(groups, key=lambda k: _natural("" if k is None else k))
        groups = {k: groups[k] for k in order_keys}
    done: set[str] = set()
    out, order, sizes = [], [], []
    for key, members in groups.items():
        batch_leaves = []
        for host in members:
            for leaf, _port in _leaves_of(plan, host) or ():
                if leaf in managed and leaf not in done and (reach is None or leaf in reach):
                    done.add(leaf)
                    batch_leaves.append(leaf)
        batch_leaves.sort(key=_natural)
        out.append({"name": names[key], "leaves": batch_leaves, "servers": list(members)})
        order.extend(batch_leaves + list(members))
        sizes.append(len(batch_leaves) + len(members))
    return {"batches": out, "order": order, "sizes": sizes}


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
