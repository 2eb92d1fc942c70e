"""The platform_bios and bmc_info actions: options checked (the password a no_log option), empty credentials refused
naming the inventory variables, the client's failure the task's message with the password masked, check mode passed
to the client, the facts returned; bmc_info reads the one system and sets no fact."""
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpufabric.mlnx.plugins.action import bmc_info, platform_bios
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _bios

SECRET = "s3cret-Pa55"
ARGS = {"bmc": "bmc.example", "user": "admin", "password": SECRET, "host": "srv-r01-01"}


def action(module, args, check_mode=False, name="gpufabric.mlnx.platform_bios"):
    task = mock.MagicMock(args=args, check_mode=None, action=name)
    return module.ActionModule(task, mock.MagicMock(), mock.MagicMock(check_mode=check_mode),
                               loader=mock.MagicMock(), templar=None, shared_loader_obj=None)


@pytest.fixture(autouse=True)
def base_run(monkeypatch):
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})


def test_empty_credentials_are_refused_naming_the_inventory_variables():
    result = action(platform_bios, dict(ARGS, bmc="", password="")).run(task_vars={})
    assert result == {"failed": True, "msg": (
        "srv-r01-01: gpufabric_platform_bios_enabled is true, but gpufabric_platform_bmc_address, "
        "gpufabric_platform_bmc_password is empty (option bmc, password of gpufabric.mlnx.platform_bios), so the BMC "
        "cannot be reached")}


def test_a_bad_option_fails_before_any_request(monkeypatch):
    monkeypatch.setattr(_bios, "converge", mock.MagicMock())
    with pytest.raises(AnsibleActionFail, match="timeout"):
        action(platform_bios, dict(ARGS, timeout="soon")).run(task_vars={})
    with pytest.raises(AnsibleActionFail, match="Unsupported parameters"):
        action(platform_bios, dict(ARGS, bios_settings={})).run(task_vars={})
    assert not _bios.converge.called


def test_the_clients_failure_is_the_tasks_message_with_the_password_masked(monkeypatch):
    def fail(client, args, host, check_mode):
        raise _bios.BmcError("%s: BMC bmc.example: it said %s" % (host, SECRET))
    monkeypatch.setattr(_bios, "converge", fail)
    assert action(platform_bios, ARGS).run(task_vars={}) == {
        "failed": True, "msg": "srv-r01-01: BMC bmc.example: it said ********"}


def test_check_mode_reaches_the_client_and_the_facts_are_returned(monkeypatch):
    seen = {}

    def converge(client, args, host, check_mode):
        seen.update(check_mode=check_mode, validate=client._auth["validate_certs"], sriov=args["sriov"])
        return {"changed": True, "facts": {"gpufabric_platform_bios_pending_reset": True}, "msg": "m",
                "summary": ["m"], "system": {}, "written": {}, "job_created": None,
                "diff": {"before": {}, "after": {}}, "warnings": ["w"]}
    monkeypatch.setattr(_bios, "converge", converge)
    result = action(platform_bios, ARGS, check_mode=True).run(task_vars={})
    assert seen == {"check_mode": True, "validate": True, "sriov": None}
    assert result["changed"] and result["ansible_facts"] == {"gpufabric_platform_bios_pending_reset": True}
    assert result["warnings"] == ["w"] and result["diff"] == {"before": {}, "after": {}}


def test_bmc_info_reads_the_system_and_sets_no_fact(monkeypatch):
    monkeypatch.setattr(_bios, "probe", lambda client, host: {"uri": "/redfish/v1/Systems/1", "model": "DGX H100",
                                                              "manufacturer": "NVIDIA"})
    result = action(bmc_info, ARGS, name="gpufabric.mlnx.bmc_info").run(task_vars={})
    assert result == {"changed": False, "system": {"uri": "/redfish/v1/Systems/1", "model": "DGX H100",
                                                   "manufacturer": "NVIDIA"},
                      "msg": "srv-r01-01: BMC bmc.example answers: /redfish/v1/Systems/1 (DGX H100)"}
    with pytest.raises(AnsibleActionFail, match="Unsupported parameters"):
        action(bmc_info, dict(ARGS, bios={}), name="gpufabric.mlnx.bmc_info").run(task_vars={})
