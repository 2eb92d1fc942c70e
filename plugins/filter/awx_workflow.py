# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AWX workflow filters awx_workflow and workflow_parts (docs in the .yml files beside; logic in
plugins/plugin_utils/_workflow.py)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_workflow = lazy("plugin_utils._workflow")


@filter_errors()
def awx_workflow(units, parallel=4, name="gpufabric", inventory="gpufabric site", organization="Default",
                 project="gpufabric site"):
    return _workflow.spec(units, parallel, name, inventory, organization, project)


@filter_errors()
def workflow_parts(variables):
    return _workflow.parts(variables)


class FilterModule:
    def filters(self):
        return {"awx_workflow": awx_workflow, "workflow_parts": workflow_parts}
