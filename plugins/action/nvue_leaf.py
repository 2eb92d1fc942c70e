# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gpufabric.mlnx.nvue_leaf: the leaf role's work on one leaf in one task - its place in the rail plan, the
pinned switch OS, ONE revision from the plan - over one connection made in the worker (plugin_utils/_nvue_action.py);
the steps and decisions are plugin_utils/_leaf_steps.py's. Returns the leaf's ``gpufabric_leaf_status`` as a fact."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _leaf_steps
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._nvue_action import NvueActionModule

ARGUMENT_SPEC = dict(
    plan_leaves=dict(type="dict"),
    group=dict(type="str", default="leaves"),
    settings=dict(type="dict", default={}),
    matrix=dict(type="dict", default={}),
    image_base_url=dict(type="str"),
    apply_timeout=dict(type="int", default=300),
    save=dict(type="bool", default=True),
    reboot_timeout=dict(type="int", default=900),
)


class ActionModule(NvueActionModule):
    """See the module's documentation (plugins/modules/nvue_leaf.py)."""

    def run_on_switch(self, task_vars):
        result = {}
        _validated, args = self.validate_argument_spec(ARGUMENT_SPEC)
        name = str(task_vars.get("inventory_hostname"))
        problem = _leaf_steps.plan_problem(name, args["plan_leaves"], args["group"])
        if problem is not None:  # the inventory's mistake, not the switch's: the leaf's host fails (no servers held)
            result.update(failed=True, msg=problem, plan_problem=True)
            return result
        with self._switch_modules(task_vars) as call:
            try:
                done = _leaf_steps.converge(
                    name, args["plan_leaves"][name], args["settings"], call, matrix=args["matrix"],
                    base_url=args["image_base_url"], apply_timeout=args["apply_timeout"], save=args["save"],
                    reboot_timeout=args["reboot_timeout"])
            except _leaf_steps.StepFailed as err:
                result.update(err.result, changed=bool((err.result.get("image") or {}).get("changed")))
                return result
        status = done.pop("status")
        warnings = done.pop("warnings")
        result.update(done, ansible_facts={"gpufabric_leaf_status": status})
        if warnings:
            result["warnings"] = warnings
        return result
