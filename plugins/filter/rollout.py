# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout filters rollout_batches and leaf_holds (docs in the .yml files beside; logic in
plugins/plugin_utils/_rollout.py)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roles import read_vars
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rollout import batches, holds


@filter_errors()
def rollout_batches(names, hostvars, plan, by="rack", count=None, leaves=None, in_run=None):
    read = read_vars(names, hostvars, ("rack",), what="rollout_batches")
    servers = [{"name": name, "rack": values.get("rack")} for name, values in read.items()]
    return batches(servers, plan, by, count, leaves=leaves, in_run=in_run)


@filter_errors()
def leaf_holds(host, plan, leaves_state, leaves=None, in_run=None):
    return holds(host, plan, leaves_state, leaves=leaves, in_run=in_run)


class FilterModule:
    def filters(self):
        return {"rollout_batches": rollout_batches, "leaf_holds": leaf_holds}
