# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout filters rollout_batches and leaf_holds (docs in the .yml files beside; logic in
plugins/plugin_utils/_rollout.py)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_roles = lazy("plugin_utils._roles")
_rollout = lazy("plugin_utils._rollout")


@filter_errors()
def rollout_batches(names, hostvars, plan=None, by="count", size=None, leaves=None, in_run=None, start=None,
                    end=None):
    read = _roles.read_vars(names, hostvars, ("rack",), what="rollout_batches")
    servers = [{"name": name, "rack": values.get("rack")} for name, values in read.items()]
    return _rollout.batches(servers, plan, by, size, leaves=leaves, in_run=in_run, start=start, end=end)


LEAF_FACTS = ("gpufabric_leaf_status", "gpufabric_leaf_gate")


@filter_errors()
def leaf_holds(host, plan, hostvars, leaves=None, in_run=None):
    if not isinstance(plan, Mapping) or not isinstance(plan.get("hosts"), Mapping) or not isinstance(host, str):
        return _rollout.holds(host, plan, {}, leaves=leaves, in_run=in_run)
    entries = plan["hosts"].get(host) if isinstance(plan["hosts"].get(host), list) else []
    cabled = sorted({e["leaf"] for e in entries if isinstance(e, Mapping) and isinstance(e.get("leaf"), str)})
    known = [leaf for leaf in cabled if isinstance(hostvars, Mapping) and leaf in hostvars]
    read = _roles.read_vars(known, hostvars, LEAF_FACTS, what="leaf_holds", parameter="hostvars")
    state = {leaf: {"status": values.get("gpufabric_leaf_status"), "gate": values.get("gpufabric_leaf_gate")}
             for leaf, values in read.items()}
    return _rollout.holds(host, plan, state, leaves=leaves, in_run=in_run)


class FilterModule:
    def filters(self):
        return {"rollout_batches": rollout_batches, "leaf_holds": leaf_holds}
