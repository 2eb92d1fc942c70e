# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain filters drain_nodes and drain_problems (docs in the .yml files beside; logic in
plugins/plugin_utils/_drain.py)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_drain = lazy("plugin_utils._drain")


@filter_errors()
def drain_nodes(servers, hostvars, batches=None, in_play=None, kind="slurm"):
    return _drain.batch_nodes(servers, hostvars, batches, in_play, kind)


@filter_errors()
def drain_problems(servers, hostvars):
    return _drain.problems(servers, hostvars)


class FilterModule:
    def filters(self):
        return {"drain_nodes": drain_nodes, "drain_problems": drain_problems}
