# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout report filters rollout_report, rollout_failure and rollout_merge (docs in the .yml files beside; logic
in plugins/plugin_utils/_rollout_report.py)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_report = lazy("plugin_utils._rollout_report")
FACTS = ("gpufabric_ofed_result", "gpufabric_firmware_pending_devices", "gpufabric_nv_pending_devices",
         "gpufabric_activation", "gpufabric_held", "gpufabric_gate_results", "gpufabric_failure")


@filter_errors()
def rollout_report(servers, hostvars, batches=None, failed=None, fmt="md"):
    values = {}
    for host in servers if isinstance(servers, (list, tuple)) and all(isinstance(h, str) for h in servers) else []:
        entry = hostvars.get(host) if isinstance(hostvars, Mapping) else None
        if isinstance(entry, Mapping):
            values[host] = {key: entry.get(key) for key in FACTS if entry.get(key) is not None}
    return _report.render(_report.rows(servers, values, batches, failed), fmt)


@filter_errors()
def rollout_failure(task, result):
    return _report.failure(task, result)


@filter_errors()
def rollout_merge(parts, fmt="md"):
    return _report.render(_report.merge(parts), fmt)


class FilterModule:
    def filters(self):
        return {"rollout_report": rollout_report, "rollout_failure": rollout_failure, "rollout_merge": rollout_merge}
