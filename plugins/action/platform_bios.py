# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gpufabric.mlnx.platform_bios (docs in plugins/modules/platform_bios.py): the Redfish client runs here, on
the controller, in the task's worker - no connection to the server, no module process. The logic is
plugin_utils/_bios.py; this file checks the options, passes check mode and keeps the password out of every output."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _bios

ARGUMENT_SPEC = {
    "bmc": {"type": "str", "required": True},
    "user": {"type": "str", "required": True},
    "password": {"type": "str", "required": True, "no_log": True},
    "validate_certs": {"type": "bool", "default": True},
    "ca_path": {"type": "path"},
    "timeout": {"type": "int", "default": 60},
    "bios": {"type": "dict", "default": {}},
    "sriov": {"type": "bool"},
    "iommu": {"type": "bool"},
    "overrides": {"type": "dict", "default": {}},
    "registry": {"type": "bool", "default": True},
    "host": {"type": "str", "required": True},
}
# The options of a BMC connection (gpufabric.mlnx.bmc_info takes these only).
CONNECTION = ("bmc", "user", "password", "validate_certs", "ca_path", "timeout", "host")
CREDENTIALS = ("bmc", "user", "password")


def _scrub(value, secret):
    """``value`` with every occurrence of ``secret`` in its strings masked (no_log, as a module's values are)."""
    if not secret:
        return value
    if isinstance(value, str):
        return value.replace(secret, "********")
    if isinstance(value, dict):
        return {_scrub(k, secret): _scrub(v, secret) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v, secret) for v in value]
    return value


class ActionModule(ActionBase):
    _requires_connection = False  # Redfish from the controller: the server itself is not contacted
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)
    SPEC = ARGUMENT_SPEC

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validated, args = self.validate_argument_spec(argument_spec=self.SPEC)
        secret = args["password"]
        empty = [name for name in CREDENTIALS if not args[name]]
        if empty:
            names = ", ".join("gpufabric_platform_bmc_%s" % ("address" if name == "bmc" else name) for name in empty)
            result.update(failed=True, msg="%s: gpufabric_platform_bios_enabled is true, but %s is empty (option %s of "
                                           "%s), so the BMC cannot be reached" % (
                                               args["host"], names, ", ".join(empty), self._task.action))
            return result
        client = _bios.Redfish(args["bmc"], args["user"], secret, validate_certs=args["validate_certs"],
                               ca_path=args["ca_path"], timeout=args["timeout"])
        check_mode = bool(self._task.check_mode if self._task.check_mode is not None
                          else self._play_context.check_mode)
        try:
            result.update(self.work(client, args, check_mode))
        except _bios.BmcError as err:
            result.update(failed=True, msg=str(err))
        return _scrub(result, secret)

    def work(self, client, args, check_mode):
        """The task's result (BmcError on any failure)."""
        done = _bios.converge(client, args, host=args["host"], check_mode=check_mode)
        out = {"changed": done["changed"], "ansible_facts": done["facts"], "msg": done["msg"],
               "summary": done["summary"], "system": done["system"], "written": done["written"],
               "job_created": done["job_created"], "diff": done["diff"]}
        if done["warnings"]:
            out["warnings"] = done["warnings"]
        return out
