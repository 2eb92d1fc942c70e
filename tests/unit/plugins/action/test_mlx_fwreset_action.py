"""The mlx_fwreset action, the host's ONE activation in one task: the module's reset (none with reboot_required), else
ONE reboot (ansible.builtin.reboot's action) with the devices read before and after it, and gpufabric_activation."""
from unittest import mock

import pytest
from ansible.plugins.action import ActionBase

from ansible_collections.gpufabric.mlnx.plugins.action.mlx_fwreset import ActionModule

HOST = {"inventory_hostname": "srv-r01-01"}
A, B = "0000:3b:00.0", "0000:d8:00.0"
ROLE = {"state": "reset", "level": "auto", "predicted_pending": [], "tool": "auto", "allow_mgmt_reset": False}


def action(args, modules, check_mode=False, rebooted=None):
    """The action with ``modules``: the results of its module runs, in order; the reboot's own result ``rebooted``."""
    task = mock.MagicMock(args=args)
    task.copy.return_value = mock.MagicMock(args={})
    loader = mock.MagicMock()
    reboot = loader.action_loader.get.return_value
    reboot.run.return_value = rebooted or {"changed": True, "rebooted": True}
    plugin = ActionModule(task, mock.MagicMock(), mock.MagicMock(check_mode=check_mode), loader=mock.MagicMock(),
                          templar=None, shared_loader_obj=loader)
    plugin._shared_loader_obj = loader      # ActionBase takes ansible.plugins.loader itself
    plugin._execute_module = mock.MagicMock(side_effect=list(modules))
    return plugin, reboot


@pytest.fixture(autouse=True)
def base_run(monkeypatch):
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})


def ran(plugin):
    return [(c.kwargs["module_name"], c.kwargs["module_args"]) for c in plugin._execute_module.call_args_list]


def test_nothing_pending_is_no_reset_and_no_reboot():
    plugin, reboot = action(dict(ROLE, allow_reboot=True), [{"changed": False, "level": None, "reboot_required": False,
                                                             "devices": [], "msg": "nothing pending, no reset"}])
    result = plugin.run(task_vars=HOST)
    assert result["ansible_facts"] == {"gpufabric_activation": {"method": "none", "level": None}}
    assert result["changed"] is False and result["rebooted"] is False and not reboot.run.called
    assert ran(plugin) == [("gpufabric.mlnx.mlx_fwreset", ROLE)]          # the reboot's options stay here


def test_a_reset_is_the_fwreset_activation_at_its_level():
    plugin, reboot = action(dict(ROLE, allow_reboot=True, reboot_timeout=600), [
        {"changed": True, "level": 3, "reboot_required": False, "devices": [{"device": A}], "msg": "reset %s" % A}])
    result = plugin.run(task_vars=HOST)
    assert result["ansible_facts"] == {"gpufabric_activation": {"method": "fwreset", "level": 3}}
    assert result["changed"] is True and result["msg"] == "reset %s" % A and not reboot.run.called


def test_reboot_required_without_allow_reboot_is_pending_and_resets_nothing():
    plugin, reboot = action(dict(ROLE, reboot_required=True, allow_reboot=False), [])
    result = plugin.run(task_vars=HOST)
    assert result["ansible_facts"] == {"gpufabric_activation": {"method": "pending", "level": None}}
    assert result["reset"] is None and result["changed"] is False
    assert result["msg"] == ("no reset: the host waits for a reboot anyway (reboot_required); pending activation: a "
                             "reboot is needed and allow_reboot is false")
    assert not plugin._execute_module.called and not reboot.run.called


def test_a_card_that_cannot_be_reset_is_one_reboot_with_the_devices_read_before_and_after():
    devices = [{"address": A}, {"address": B}]
    plugin, reboot = action(
        dict(ROLE, allow_reboot=True, reboot_command="mlxsim reboot", boot_time_command="", reboot_timeout=900),
        [{"changed": False, "level": 3, "reboot_required": True, "msg": "reset not supported on %s" % A},
         {"devices": devices}, {"devices": [dict(d, fw_pending=False, pending_nv={}) for d in devices]}])
    result = plugin.run(task_vars=HOST)
    assert result["ansible_facts"] == {"gpufabric_activation": {"method": "reboot", "level": 3}}
    assert result["rebooted"] is True and result["changed"] is True and result["level"] == 3
    assert result["msg"] == "reset not supported on %s; rebooted the host to activate everything pending" % A
    assert ran(plugin)[1:] == [("gpufabric.mlnx.mlx_info", {"tool": "auto"}),
                               ("gpufabric.mlnx.mlx_info", {"tool": "auto", "nv_config": True})]
    assert reboot.run.call_count == 1
    assert plugin._task.copy.return_value.args == {"reboot_timeout": 900, "reboot_command": "mlxsim reboot",
                                                   "msg": "gpufabric.mlnx: activating NIC firmware/configuration/driver"}


def test_a_device_missing_after_the_reboot_fails_naming_it():
    plugin, _reboot = action(dict(ROLE, reboot_required=True, allow_reboot=True), [
        {"devices": [{"address": A}, {"address": B}]}, {"devices": [{"address": A, "fw_pending": False}]}])
    result = plugin.run(task_vars=HOST)
    assert result["failed"] is True and "ansible_facts" not in result
    assert result["msg"] == ("srv-r01-01 after the reboot: 2 devices before, 1 after (missing: %s); firmware still "
                             "pending on none; NV config still pending on none" % B)


def test_check_mode_predicts_the_reboot_and_reads_nothing_around_it():
    plugin, reboot = action(dict(ROLE, reboot_required=True, allow_reboot=True), [], check_mode=True)
    result = plugin.run(task_vars=HOST)
    assert result["ansible_facts"] == {"gpufabric_activation": {"method": "reboot", "level": None}}
    assert result["changed"] is True and reboot.run.call_count == 1 and not plugin._execute_module.called


def test_a_failed_reset_is_the_task_failure_without_facts():
    plugin, reboot = action(dict(ROLE, allow_reboot=True), [{"failed": True, "msg": "activation failed on 1 of 1"}])
    result = plugin.run(task_vars=HOST)
    assert result == {"failed": True, "msg": "activation failed on 1 of 1"} and not reboot.run.called
