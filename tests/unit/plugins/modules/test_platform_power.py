"""The platform_power module: options to the core, results, null leaves a setting, failures."""
import pytest
from _modules import run_module

from ansible_collections.gpufabric.mlnx.plugins.modules import platform_power
from unit.plugins.module_utils.test_power_policy import Kernel, host  # noqa: F401  pylint: disable=unused-import


@pytest.fixture
def run(monkeypatch):
    def _run(args, root, check=False):
        monkeypatch.setattr(platform_power, "Host", lambda root: Kernel(root).host())
        return run_module(platform_power, dict(args, root=str(root)), check=check)
    return _run


def test_defaults_converge_and_report(run, host):  # noqa: F811  pylint: disable=redefined-outer-name
    failed, out = run({"kernel_args": ["pcie_aspm=off"]}, host, check=True)
    assert not failed and out["changed"] and out["reboot_required"]
    assert out["msg"].startswith("would change aspm_policy; power/control of 0000:18:00.0")
    assert out["diff"]["before"]["aspm_policy"] == "default" and out["diff"]["after"]["aspm_policy"] == "performance"
    failed, out = run({}, host)
    assert not failed and out["changed"] and out["kernel_args_missing"] == []
    failed, out = run({}, host)
    assert not failed and not out["changed"]


def test_null_options_leave_settings(run, host):  # noqa: F811  pylint: disable=redefined-outer-name
    failed, out = run({"leave": ["aspm_policy", "nic_runtime_pm", "cpu_governor"]}, host)
    assert not failed and not out["changed"] and out["writes"] == []


def test_refusal_fails_with_parameter_and_allowed(run, host):  # noqa: F811  pylint: disable=redefined-outer-name
    failed, out = run({"cpu_governor": "schedutil"}, host)
    assert failed and out["parameter"] == "cpu_governor" and out["allowed"] == ["performance", "powersave"]
    assert "cpu0-cpu3" in out["msg"]
