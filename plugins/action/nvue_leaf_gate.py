# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gpufabric.mlnx.nvue_leaf_gate: the leaf gate on one leaf in one task - read it until it is ready for its
servers or the time is up, and record the gate (or that it could not be read) - over one connection made in the
worker (plugin_utils/_nvue_action.py); the loop and the verdict are plugin_utils/_leaf_steps.py's and _leaf.py's."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _leaf_steps
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._nvue_action import NvueActionModule

ARGUMENT_SPEC = dict(
    plan_leaves=dict(type="dict"),
    group=dict(type="str", default="leaves"),
    expected=dict(type="dict", default={}),
    hosts_qos=dict(type="dict"),
    status=dict(type="dict"),
    timeout=dict(type="int", default=120),
    interval=dict(type="int", default=5),
)


class ActionModule(NvueActionModule):
    """See the module's documentation (plugins/modules/nvue_leaf_gate.py)."""

    def run_on_switch(self, task_vars):
        _validated, args = self.validate_argument_spec(ARGUMENT_SPEC)
        name = str(task_vars.get("inventory_hostname"))
        result = {"changed": False}
        if (args["status"] or {}).get("failed"):
            result.update(ready=False, reads=0, msg="%s was not read: its configuration failed (%s); its servers are "
                                                    "held" % (name, args["status"].get("msg")))
            return result
        problem = _leaf_steps.plan_problem(name, args["plan_leaves"], args["group"])
        if problem is not None:
            result.update(failed=True, msg=problem, plan_problem=True)
            return result
        for option in ("timeout", "interval"):
            if args[option] < 0:
                raise AnsibleActionFail("%s: %s is %d (allowed: 0 or more seconds)" % (name, option, args[option]))
        with self._switch_modules(task_vars) as call:

            def read(module, module_args):
                """A read that cannot even start (no connection could be made) is a leaf that could not be read."""
                try:
                    return call(module, module_args)
                except (AnsibleError, OSError) as err:
                    return {"failed": True, "msg": to_text(err)}
            try:
                done = _leaf_steps.gate(
                    name, args["plan_leaves"][name], args["expected"], read, plan_leaves=args["plan_leaves"],
                    hosts_qos=args["hosts_qos"], attempts=_leaf_steps.attempts_of(args["timeout"], args["interval"]),
                    interval=args["interval"], check_mode=bool(self._task.check_mode))
            except MlnxError as err:
                raise AnsibleActionFail(err.msg) from err
        if "status" in done:  # the leaf could not be read: recorded, its servers held - the leaf's host is not failed
            result.update(ready=False, reads=done["reads"], msg="%s could not be read: %s; its servers are held" % (
                name, done["status"]["msg"]), ansible_facts={"gpufabric_leaf_status": done["status"]})
            return result
        verdict = done["gate"]
        held = verdict["held"]
        result.update(ready=done["ready"], reads=done["reads"], ansible_facts={"gpufabric_leaf_gate": verdict},
                      msg=("%s is ready for its servers" % name) if done["ready"] else
                      "%s is not ready: it holds %d servers (%s)" % (name, len(held), ", ".join(held) or "none"))
        return result
