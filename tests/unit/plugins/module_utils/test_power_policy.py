"""platform_power's core against a sysfs/procfs tree in a temporary directory (the fake host's root)."""
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _fakehost import FakeHost
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _platform as pp
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, MlnxError, Refused

CMDLINE = "BOOT_IMAGE=/boot/vmlinuz-6.1.0-26-amd64 root=UUID=0b6f0a4e-2f55-4a1f-9d0c-3d2b1e1f0a11 ro quiet"


def _put(root, path, text):
    full = os.path.join(str(root), path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as fh:
        fh.write(text + "\n")


def _get(root, path):
    with open(os.path.join(str(root), path.lstrip("/"))) as fh:
        return fh.read().strip()


class Kernel(FakeHost):
    """A fake host whose policy writes read back as the kernel shows them (the active policy in brackets)."""

    def shown(self, path, value):
        if path == pp.ASPM_POLICY_PATH:
            _policy, offered = pp.parse_aspm_policy(_get(self.root, path))
            if value not in offered:
                raise OSError(22, "Invalid argument")
            value = " ".join("[%s]" % p if p == value else p for p in offered)
        return value


@pytest.fixture
def host(tmp_path):
    """A server: two ConnectX-7 (Ethernet, InfiniBand), a ConnectX-6 Dx with two functions, an Intel NIC, a
    Mellanox PCI bridge (not networking), 4 CPUs on intel_pstate, ASPM policy default."""
    _put(tmp_path, pp.ASPM_POLICY_PATH, "[default] performance powersave powersupersave")
    _put(tmp_path, pp.CMDLINE, CMDLINE)
    for pci, vendor, klass in (("0000:18:00.0", "0x15b3", "0x020000"), ("0000:40:00.0", "0x15b3", "0x020700"),
                               ("0000:3b:00.0", "0x15b3", "0x020000"), ("0000:3b:00.1", "0x15b3", "0x020000"),
                               ("0000:01:00.0", "0x8086", "0x020000"), ("0000:a0:00.0", "0x15b3", "0x060400")):
        base = "%s/%s" % (pp.PCI_DEVICES, pci)
        _put(tmp_path, base + "/vendor", vendor)
        _put(tmp_path, base + "/class", klass)
        _put(tmp_path, base + "/power/control", "auto")
    for cpu in range(4):
        base = "%s/cpu%d/cpufreq" % (pp.CPU_DIR, cpu)
        _put(tmp_path, base + "/scaling_governor", "powersave")
        _put(tmp_path, base + "/scaling_available_governors", "performance powersave")
    _put(tmp_path, pp.CPU_DIR + "/online", "0-3")
    return tmp_path


def test_fresh_host_everything_written_then_idempotent(host):
    reader = Kernel(host).host()
    first = pp.converge(reader, {"kernel_args": ["pcie_aspm=off"]} | DEFAULTS)
    assert first["changed"]
    assert first["nics"] == ["0000:18:00.0", "0000:3b:00.0", "0000:3b:00.1", "0000:40:00.0"]
    assert sorted(first["changes"]) == ["aspm_policy", "power/control 0000:18:00.0", "power/control 0000:3b:00.0",
                                        "power/control 0000:3b:00.1", "power/control 0000:40:00.0",
                                        "scaling_governor cpu0", "scaling_governor cpu1", "scaling_governor cpu2",
                                        "scaling_governor cpu3"]
    assert _get(host, pp.ASPM_POLICY_PATH) == "default [performance] powersave powersupersave"
    assert _get(host, "/sys/bus/pci/devices/0000:40:00.0/power/control") == "on"
    assert _get(host, "/sys/bus/pci/devices/0000:01:00.0/power/control") == "auto"      # Intel: not ours
    assert _get(host, "/sys/bus/pci/devices/0000:a0:00.0/power/control") == "auto"      # a bridge: not a NIC
    assert _get(host, "/sys/devices/system/cpu/cpu3/cpufreq/scaling_governor") == "performance"
    assert first["kernel_args_missing"] == ["pcie_aspm=off"] and first["reboot_required"]
    assert pp.summary(first, check_mode=False) == ("changed aspm_policy; power/control of 0000:18:00.0, 0000:3b:00.0, "
                                                   "0000:3b:00.1, 0000:40:00.0; scaling_governor of cpu0-cpu3; the running "
                                                   "kernel lacks pcie_aspm=off: a reboot is needed")
    second = pp.converge(reader, DEFAULTS)
    assert not second["changed"] and second["writes"] == []
    assert pp.summary(second, check_mode=False) == "power policy already as wanted"


DEFAULTS = {"aspm_policy": "performance", "nic_runtime_pm": False, "cpu_governor": "performance"}


def test_check_mode_writes_nothing_and_predicts(host):
    reader = Kernel(host).host()
    check = pp.converge(reader, DEFAULTS, check_mode=True)
    assert _get(host, pp.ASPM_POLICY_PATH).startswith("[default]")
    assert _get(host, "/sys/bus/pci/devices/0000:18:00.0/power/control") == "auto"
    real = pp.converge(reader, DEFAULTS)
    assert check["changes"] == real["changes"] and check["after"] == real["after"]
    assert check["after"]["cpu_governors"] == ["performance"]


def test_null_leaves_a_setting_alone(host):
    reader = Kernel(host).host()
    result = pp.converge(reader, {"aspm_policy": None, "nic_runtime_pm": None, "cpu_governor": "performance"})
    assert sorted({k.split()[0] for k in result["changes"]}) == ["scaling_governor"]
    assert _get(host, "/sys/bus/pci/devices/0000:18:00.0/power/control") == "auto"
    back = pp.converge(reader, {"nic_runtime_pm": True, "aspm_policy": None, "cpu_governor": None})
    assert not back["changed"]


def test_aspm_off_on_the_command_line_leaves_the_policy(host):
    _put(host, pp.CMDLINE, CMDLINE + " pcie_aspm=off")
    result = pp.converge(Kernel(host).host(), DEFAULTS | {"kernel_args": ["pcie_aspm"]})
    assert "aspm_policy" not in result["changes"] and result["kernel_args_missing"] == []
    assert "pcie_aspm=off" in result["notes"][0]


def test_no_aspm_support_and_no_cpufreq_are_notes_not_failures(host):
    os.unlink(os.path.join(str(host), pp.ASPM_POLICY_PATH.lstrip("/")))
    for cpu in range(4):
        os.unlink(os.path.join(str(host), "sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor" % cpu))
    result = pp.converge(Kernel(host).host(), DEFAULTS)
    assert [k.split()[0] for k in result["changes"]] == ["power/control"] * 4
    assert any("CONFIG_PCIEASPM" in n for n in result["notes"]) and any("cpufreq" in n for n in result["notes"])


def test_governor_not_offered_is_refused_before_anything_is_written(host):
    _put(host, "/sys/devices/system/cpu/cpu2/cpufreq/scaling_available_governors", "powersave")
    _put(host, "/sys/devices/system/cpu/cpu3/cpufreq/scaling_available_governors", "powersave")
    with pytest.raises(Refused) as err:
        pp.converge(Kernel(host).host(), DEFAULTS)
    assert "cpu_governor=performance is not offered by cpu2-cpu3 (scaling_available_governors: powersave)" in str(err.value)
    assert _get(host, pp.ASPM_POLICY_PATH).startswith("[default]")                       # nothing written
    assert _get(host, "/sys/bus/pci/devices/0000:18:00.0/power/control") == "auto"


def test_policy_not_offered_is_refused(host):
    _put(host, pp.ASPM_POLICY_PATH, "[default] performance powersave")
    with pytest.raises(Refused, match="aspm_policy=powersupersave is not offered by this kernel"):
        pp.converge(Kernel(host).host(), DEFAULTS | {"aspm_policy": "powersupersave"})


def test_kernel_refusing_the_policy_warns_and_the_rest_is_done(host, monkeypatch):
    reader = Kernel(host).host()
    real_write = reader.write_sys

    def write(path, value):
        if path == pp.ASPM_POLICY_PATH:
            raise PermissionError(1, "Operation not permitted")
        real_write(path, value)
    monkeypatch.setattr(reader, "write_sys", write)
    result = pp.converge(reader, DEFAULTS)
    assert "firmware kept ASPM control" in result["warnings"][0]
    assert _get(host, "/sys/bus/pci/devices/0000:18:00.0/power/control") == "on"


def test_a_write_that_does_not_take_fails_naming_it(host, monkeypatch):
    reader = Kernel(host).host()
    real_write = reader.write_sys
    monkeypatch.setattr(reader, "write_sys", lambda path, value: None if "0000:3b:00.1" in path
                        else real_write(path, value))
    with pytest.raises(MlnxError, match=r"did not take: power/control 0000:3b:00.1 is auto, not on"):
        pp.converge(reader, DEFAULTS)


@pytest.mark.parametrize("params, words", [
    ({"aspm_policy": "fast"}, ["aspm_policy='fast'", "default, performance, powersave, powersupersave"]),
    ({"nic_runtime_pm": "no"}, ["nic_runtime_pm='no'", "true (power/control auto)"]),
    ({"cpu_governor": "Perf ormance"}, ["cpu_governor='Perf ormance'", "scaling_available_governors"]),
    ({"kernel_args": ["pcie_aspm=off quiet"]}, ["kernel_args[0]", "no blank, quote or shell character"]),
    ({"kernel_args": ["quiet", "pcie_aspm=off\n"]}, ["kernel_args[1]", "is not one kernel parameter"]),
    ({"kernel_args": ["a=$(reboot)"]}, ["kernel_args[0]", "is not one kernel parameter"]),
    ({"kernel_args": "pcie_aspm=off"}, ["kernel_args='pcie_aspm=off' is not a list"]),
])
def test_bad_input_names_option_and_allowed(params, words):
    with pytest.raises(InvalidValue) as err:
        pp.desired_state(params)
    for word in words:
        assert word in str(err.value)
    assert str(err.value).endswith("Nothing was changed.")


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["aspm_policy", "nic_runtime_pm", "cpu_governor", "kernel_args"]),
                       st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12),
                                 st.lists(st.text(max_size=8), max_size=3))))
def test_any_options_give_a_desired_state_or_a_clean_error(params):
    try:
        desired = pp.desired_state(params)
    except InvalidValue as err:
        assert "Nothing was changed." in str(err)
    else:
        assert set(desired) == {"aspm_policy", "nic_power_control", "cpu_governor", "kernel_args"}


def test_helpers():
    assert pp.parse_aspm_policy("default [performance] powersave") == (
        "performance", ["default", "performance", "powersave"])
    assert pp.parse_aspm_policy(None) == (None, [])
    assert pp.parse_aspm_policy("performance") == ("performance", ["performance"])   # a plain file, as written
    assert pp.missing_kernel_args(["pcie_aspm=force", "iommu=pt"], ["pcie_aspm", "iommu=pt", "intel_iommu=on"]) == [
        "intel_iommu=on"]
    assert pp._span(["cpu0", "cpu1", "cpu2", "cpu5", "cpu7", "cpu8"]) == "cpu0-cpu2, cpu5, cpu7-cpu8"
