"""Every module, any JSON-like option values: the module ends through exit_json or fail_json (the documented
failure, with a message), never with another Python exception. The host is a fake with no tools under a
temporary root, so nothing runs and nothing outside it is written (generated text has no '/')."""
import pytest
import yaml
from _fakehost import FakeHost
from _modules import run_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner
from ansible_collections.gpufabric.mlnx.plugins.modules import (
    kernel_cmdline,
    mlx_firmware,
    mlx_fwreset,
    mlx_info,
    mlxconfig,
    ofed_driver,
    platform_host,
    platform_power,
    rail_interfaces,
    roce_qos,
    slurm_node,
)

MODULES = [kernel_cmdline, mlx_firmware, mlx_fwreset, mlx_info, mlxconfig, ofed_driver, platform_host, platform_power,
           rail_interfaces, roce_qos, slurm_node]
# Options that name places on the controller or the host: fixed by the fake, never generated.
FIXED = {"root", "boot_root", "nic_udev_rule", "governor_unit", "src", "state_dir"}
TEXT = st.text(alphabet="abcXYZ019_-.:, $`;'\"\n", max_size=10)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 2 ** 40), st.floats(allow_nan=False, width=32), TEXT,
                    st.sampled_from(["0000:18:00.0", "all", "enp24s0np0", "MT_0000000838", "28.43.2566", "dscp",
                                     "pcie_aspm=off", "query", "present", "INF", "/dev/mst/mt4129_pciconf0", "18:00",
                                     "0000:18:00.8", "mlx5_0", "mstflint"]))
JSONISH = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                       max_leaves=8)


# A dict option with suboptions given a list of non-mappings makes ansible-core's own no_log scan
# (module_utils/common/parameters.py, _list_no_log_values) raise TypeError before the module's code runs: not
# the module's to catch, so those options get mappings (or nothing) only.
SUBOPTION_DICTS = {"repository"}
MAPPINGS = st.one_of(st.none(), st.dictionaries(TEXT, JSONISH, max_size=3))


def options(module):
    return sorted(set(yaml.safe_load(module.DOCUMENTATION)["options"]) - FIXED)


@pytest.fixture
def fake(monkeypatch, tmp_path):
    host = FakeHost(root=tmp_path / "root")

    def make_host(root="/", timeout=None, **_kwargs):
        return host.host(timeout=timeout)

    for module in MODULES:
        if hasattr(module, "Host"):
            monkeypatch.setattr(module, "Host", make_host)
        if hasattr(module, "Runner"):
            monkeypatch.setattr(module, "Runner", lambda tool="auto", timeout=900: Runner(
                tool, timeout=timeout, host=host.host(), sleep=lambda _s: None))
    return host


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_any_option_values_end_in_exit_json_or_fail_json(fake, module):
    names = options(module)

    @settings(max_examples=60, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(st.dictionaries(st.sampled_from(names), JSONISH, max_size=5), st.booleans(), MAPPINGS)
    def check(args, check_mode, mapping):
        args = {k: (mapping if k in SUBOPTION_DICTS else v) for k, v in args.items()}
        failed, out = run_module(module, args, check=check_mode)   # any other exception fails the test
        if failed:
            assert isinstance(out.get("msg"), str) and out["msg"].strip()
    check()


@given(st.text(max_size=80) | st.from_regex(r"[0-9a-fA-F:./_a-z]{1,20}", fullmatch=True))
@settings(max_examples=400, deadline=None)
def test_a_device_name_of_any_kind_is_one_safe_argv_word(name):
    """Whatever text a task gives as a device: of a kind only when it is ASCII, one word, not an option, and a path
    only under /dev/mst; a PCI address of a kind is one the kernel can have (device 00-1f, function 0-7)."""
    from ansible_collections.gpufabric.mlnx.plugins.module_utils import _devices
    kind = _devices.device_kind(name)
    assert kind in (None, "pci", "rdma", "mst", "all")
    if kind is not None:
        assert name.isascii() and name.split() == [name] and not name.startswith("-")
        assert ("/" in name) == (kind == "mst") and (kind != "mst" or name.startswith("/dev/mst/mt"))
    if kind == "pci":
        full = _devices.pci_full(name)
        assert int(full.split(":")[2].split(".")[0], 16) <= 0x1f and int(full[-1]) <= 7
