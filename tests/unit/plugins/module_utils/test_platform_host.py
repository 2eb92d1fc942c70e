"""module_utils/_platform.converge_host (the platform_host module): every input checked before anything is written,
the power policy, the files that keep it at boot and the facts the role reads, in one call; a rerun changes nothing."""
import os

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _files
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _platform as pp
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, Refused

from test_power_policy import Kernel, host  # noqa: F401  pylint: disable=unused-import  # the sysfs tree fixture

HOST = "srv-r01-01"


def params(tmp_path, **extra):
    """The role's host side without the kernel command line and the PCIe check (tools this test has not)."""
    return dict({"parts": ["power"], "kernel_args": ["pcie_aspm=off"], "aspm_policy": "performance",
                 "nic_runtime_pm": False, "cpu_governor": "performance", "leave": [], "root": "/",
                 "nic_udev_rule": str(tmp_path / "etc" / "udev" / "rules.d" / "90-gpufabric-nic-power.rules"),
                 "governor_unit": None, "bios_pending_reset": False}, **extra)


def converge(host_tree, tmp_path, check_mode=False, **extra):
    return pp.converge_host(params(tmp_path, **extra), host=HOST, check_mode=check_mode,
                            reader=Kernel(host_tree).host(), boot=Kernel(host_tree).host(), files=_OwnFiles)


class _OwnFiles:
    """``_files`` writing as the test's user (owner and group left as they are)."""
    ensure_dir = staticmethod(_files.ensure_dir)
    ensure_link = staticmethod(_files.ensure_link)

    @staticmethod
    def ensure_file(path, content, **kwargs):
        return _files.ensure_file(path, content, **dict(kwargs, owner=None, group=None))


def test_power_rule_and_facts_in_one_call_then_a_rerun_changes_nothing(host, tmp_path):  # noqa: F811
    rule = tmp_path / "etc" / "udev" / "rules.d" / "90-gpufabric-nic-power.rules"
    check = converge(host, tmp_path, check_mode=True)
    assert check["changed"] and not rule.exists()
    assert check["facts"]["gpufabric_platform_power_drift"] == list(check["power"]["changes"])
    done = converge(host, tmp_path)
    assert done["changed"] and rule.read_text() == pp.render_nic_rule(False)
    assert done["files"] == [str(rule)] and done["reloaded"] in ([], ["udev"])
    assert [d.get("before_header") for d in done["diff"]] == ["power policy (sysfs)", str(rule)]
    assert done["facts"] == {"gpufabric_platform_kernel_args_missing": ["pcie_aspm=off"],
                             "gpufabric_platform_power_drift": list(done["power"]["changes"]),
                             "gpufabric_platform_reboot_required": True}
    assert set(done["facts"]["gpufabric_platform_power_drift"]) == {
        "aspm_policy", "power/control 0000:18:00.0", "power/control 0000:3b:00.0", "power/control 0000:3b:00.1",
        "power/control 0000:40:00.0", "scaling_governor cpu0", "scaling_governor cpu1", "scaling_governor cpu2",
        "scaling_governor cpu3"}
    again = converge(host, tmp_path)
    assert not again["changed"] and again["files"] == [] and again["diff"] == []
    assert again["facts"]["gpufabric_platform_power_drift"] == []


def test_reboot_required_is_bios_pending_or_a_kernel_parameter_not_booted(host, tmp_path):  # noqa: F811
    assert converge(host, tmp_path, kernel_args=[])["facts"]["gpufabric_platform_reboot_required"] is False
    assert converge(host, tmp_path, kernel_args=[], bios_pending_reset=True)["facts"][
        "gpufabric_platform_reboot_required"] is True


def test_a_bad_input_fails_before_anything_is_written(host, tmp_path):  # noqa: F811
    policy = (host / pp.ASPM_POLICY_PATH.lstrip("/")).read_text()
    rule = tmp_path / "etc" / "udev" / "rules.d" / "90-gpufabric-nic-power.rules"
    with pytest.raises(InvalidValue, match=r"srv-r01-01: root='/srv/sim root' cannot be written into a udev rule"):
        converge(host, tmp_path, root="/srv/sim root", governor_unit=str(tmp_path / "u.service"))
    with pytest.raises(InvalidValue, match=r"nic_udev_rule='/etc/udev/rules.d/x y.rules' cannot be written"):
        converge(host, tmp_path, nic_udev_rule="/etc/udev/rules.d/x y.rules")
    with pytest.raises(InvalidValue, match=r"kernel_args\[0\]='a;b' is not one kernel parameter"):
        converge(host, tmp_path, kernel_args=["a;b"])
    with pytest.raises(InvalidValue, match=r"cpu_governor='performance; reboot' is not a cpufreq governor name"):
        converge(host, tmp_path, cpu_governor="performance; reboot")
    assert (host / pp.ASPM_POLICY_PATH.lstrip("/")).read_text() == policy and not rule.exists()


def test_the_governor_unit_and_its_link(host, tmp_path, monkeypatch):  # noqa: F811
    wants = tmp_path / "wants"
    monkeypatch.setattr(pp, "WANTS_DIR", str(wants))
    unit = tmp_path / "gpufabric-cpu-governor.service"
    done = converge(host, tmp_path, governor_unit=str(unit))
    assert unit.read_text() == pp.render_governor_unit("performance", "/")
    assert os.readlink(wants / unit.name) == str(unit) and str(unit) in done["files"]
    assert not converge(host, tmp_path, governor_unit=str(unit))["changed"]
    # no governor wanted: no unit written (the role's cpu_governor "")
    other = tmp_path / "other.service"
    assert not converge(host, tmp_path, governor_unit=str(other), leave=["cpu_governor"])["changed"]
    assert not other.exists()


def test_a_degraded_link_is_reported_after_the_other_parts(host, tmp_path, monkeypatch):  # noqa: F811
    links = [{"address": "0000:18:00.0", "physical_slot": "1", "part_number": "MCX75310AAS-NEAT",
              "pcie": {"degraded": True, "lnkcap": {"speed": "32GT/s", "width": 16},
                       "lnksta": {"speed": "16GT/s", "width": 8}}},
             {"address": "0000:29:00.0", "physical_slot": None, "part_number": None,
              "pcie": {"degraded": False, "lnkcap": {"speed": "32GT/s", "width": 16},
                       "lnksta": {"speed": "32GT/s", "width": 16}}}]
    monkeypatch.setattr(pp, "pcie_links", lambda runner: links)
    done = converge(host, tmp_path, parts=["power", "pcie"])
    assert done["changed"] and isinstance(done["error"], Refused)
    assert str(done["error"]) == (
        "srv-r01-01: 1 PCIe link(s) trained below the card's capability - 0000:18:00.0 (slot 1, MCX75310AAS-NEAT): "
        "expected 32GT/s x16, running 16GT/s x8. Reseat the card or move it to a slot of its generation and width "
        "(a 400G card needs PCIe 5.0 x16); check the BIOS slot settings.")
    monkeypatch.setattr(pp, "pcie_links", lambda runner: links[1:])
    done = converge(host, tmp_path, parts=["pcie"])
    assert "error" not in done and done["facts"] == {} and done["lines"] == [
        "srv-r01-01: 1 NVIDIA PCIe links at full speed and width"]


def test_parts_unknown_are_refused(host, tmp_path):  # noqa: F811
    with pytest.raises(InvalidValue, match="parts bios unknown; allowed: kernel_cmdline, power, pcie"):
        converge(host, tmp_path, parts=["bios"])
