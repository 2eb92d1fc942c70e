# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gpufabric.mlnx.mlx_fwreset: the host's ONE activation in one task.

The module resets every card with something pending at the lowest common level (in check mode it plans it, the
``predicted_pending`` cards included) unless ``reboot_required`` says a reboot is due anyway. When a reboot is needed
(``reboot_required``, or a card the module cannot reset) and ``allow_reboot`` is true, the devices are read with
gpufabric.mlnx.mlx_info, the host is rebooted by ansible.builtin.reboot (its action, run here as ansible's own
actions compose one another) and every device is read again with its NV configuration: the task fails naming the host
when a device is missing or something is still pending (``_fwreset.after_reboot_problem``). The activation -
``none``, ``fwreset``, ``reboot`` or ``pending`` (a reboot needed and not allowed), with the reset level - is returned
as the ``gpufabric_activation`` fact. With ``state=query`` the module runs as it is.
"""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.module_utils._fwreset import after_reboot_problem
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._module_action import ModuleAction

MODULE = "gpufabric.mlnx.mlx_fwreset"
INFO = "gpufabric.mlnx.mlx_info"
# The options of the reboot, this action's own (the module only documents them).
REBOOT = ("allow_reboot", "reboot_timeout", "reboot_command", "boot_time_command")
REBOOT_MSG = "gpufabric.mlnx: activating NIC firmware/configuration/driver"


class ActionModule(ModuleAction):

    def act(self, result, args, task_vars):
        reboot = {name: args.pop(name) for name in REBOOT if name in args}
        if args.get("state", "reset") == "query":
            result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
            return result
        host = task_vars.get("inventory_hostname", "this host")
        tool = {k: args[k] for k in ("tool", "timeout") if k in args}

        reset = None
        if not self._bool(args.get("reboot_required")):
            reset = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
            if reset.get("failed"):
                result.update(reset)
                return result
        needs_reboot = reset is None or bool(reset.get("reboot_required"))
        rebooted = False
        if not needs_reboot:
            method = "fwreset" if reset.get("changed") else "none"
        elif not self._bool(reboot.get("allow_reboot")):
            method = "pending"
        else:
            method = "reboot"
            problem = self._reboot(host, reboot, tool, task_vars)
            if problem:
                result.update(problem, reset=reset, changed=True, rebooted=True)
                return result
            rebooted = True
        if reset is not None:      # the module's own result, as a bare mlx_fwreset task returns it
            result.update({k: v for k, v in reset.items() if k not in ("changed", "msg", "ansible_facts")})
        done = (reset.get("msg") or "") if reset is not None else \
            "no reset: the host waits for a reboot anyway (reboot_required)"
        if method == "reboot":
            done += "; %s the host to activate everything pending" % (
                "would reboot" if self._play_context.check_mode else "rebooted")
        elif method == "pending":
            done += "; pending activation: a reboot is needed and allow_reboot is false"
        result.update(
            changed=bool(reset and reset.get("changed")) or rebooted,
            rebooted=rebooted,
            reboot_required=needs_reboot,
            reset=reset,
            msg=done,
            ansible_facts={"gpufabric_activation": {"method": method, "level": reset.get("level") if reset else None}},
        )
        return result

    @staticmethod
    def _bool(value):
        return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1"))

    def _reboot(self, host, options, tool, task_vars):
        """ONE reboot (ansible.builtin.reboot), the devices read before and after it (not in check mode) -> None, or the
        failure: the reboot's own, or a device missing or still pending afterwards."""
        check = self._play_context.check_mode
        before = None
        if not check:
            before = self._execute_module(module_name=INFO, module_args=dict(tool), task_vars=task_vars)
            if before.get("failed"):
                return dict(before, msg="%s: the devices could not be read before the reboot: %s" % (
                    host, before.get("msg")))
        task = self._task.copy()
        task.args = {"reboot_timeout": options.get("reboot_timeout", 1800), "msg": REBOOT_MSG}
        for name in ("reboot_command", "boot_time_command"):
            if options.get(name):
                task.args[name] = options[name]
        action = self._shared_loader_obj.action_loader.get(
            "ansible.builtin.reboot", task=task, connection=self._connection, play_context=self._play_context,
            loader=self._loader, templar=self._templar, shared_loader_obj=self._shared_loader_obj)
        done = action.run(task_vars=task_vars)
        if done.get("failed"):
            return dict(done, msg="%s: the reboot failed: %s" % (host, done.get("msg")))
        if check:
            return None
        after = self._execute_module(module_name=INFO, module_args=dict(tool, nv_config=True), task_vars=task_vars)
        if after.get("failed"):
            return dict(after, msg="%s after the reboot: the devices could not be read: %s" % (host, after.get("msg")))
        problem = after_reboot_problem(host, "reboot", before.get("devices") or [], after.get("devices") or [])
        if problem:
            return {"failed": True, "msg": problem, "devices_before": before.get("devices"),
                    "devices_after": after.get("devices")}
        return None
