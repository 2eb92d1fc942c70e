"""Bad input to a module: a clear failure naming the parameter and what is allowed, and NO command run on the host
(a fake host with no tools records every call; the guards and device discovery would be the first commands)."""
import pytest
from _fakehost import FakeHost
from _modules import run_module

from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner
from ansible_collections.gpufabric.mlnx.plugins.modules import (
    mlx_firmware,
    mlx_fwreset,
    mlx_info,
    mlxconfig,
    rail_interfaces,
    roce_qos,
)

RAIL0 = {"rail": 0, "interface": "enp24s0np0", "address": "198.18.0.2", "prefix": 26, "gateway": "198.18.0.1",
         "table": 100}
IMAGE = {"psid": "MT_0000000838", "version": "28.43.2566", "path": "/srv/fw/a.bin", "sha256": "a" * 64}


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """A host with no tool at all: any command it is asked to run fails the test (and is recorded)."""
    host = FakeHost(root=tmp_path / "root")
    monkeypatch.setattr(rail_interfaces, "Host", lambda root="/": host.host())
    monkeypatch.setattr(roce_qos, "Host", lambda root="/", timeout=None: host.host(timeout=timeout))
    for module in (mlxconfig, mlx_firmware, mlx_fwreset, mlx_info):
        monkeypatch.setattr(module, "Runner", lambda tool="auto", timeout=900: Runner(
            tool, timeout=timeout, host=host.host(), sleep=lambda _s: None))
    return host


def _fails(fake, module, args, *words):
    failed, out = run_module(module, args)
    assert failed, out
    for word in words:
        assert word in out["msg"], out["msg"]
    assert fake.calls == [], "ran %r before refusing" % (fake.calls,)
    return out


@pytest.mark.parametrize("entry, words", [
    (dict(RAIL0, table=254), ("rails[0].table", "the kernel's table main", "253 (default)")),
    (dict(RAIL0, table=0), ("rails[0].table", "unspec")),
    (dict(RAIL0, table=255), ("rails[0].table", "local")),
    (dict(RAIL0, table="100"), ("rails[0].table", "is '100'")),
    (dict(RAIL0, table=2 ** 32), ("rails[0].table",)),
    (dict(RAIL0, table=True), ("rails[0].table",)),
    (dict(RAIL0, rail="x"), ("rails[0].rail", "0-63")),          # was int("x"): a Python traceback
    (dict(RAIL0, rail=64), ("rails[0].rail",)),
    (dict(RAIL0, interface='x"$(reboot)"'), ("rails[0].interface", "not one network interface name")),
    (dict(RAIL0, interface="enp24s0np0\n"), ("rails[0].interface",)),
    (dict(RAIL0, interface=["enp24s0np0"]), ("rails[0].interface",)),
    (dict(RAIL0, address=["198.18.0.2"]), ("rails[0].address",)),
    (dict(RAIL0, prefix="2\u0666"), ("rails[0].prefix",)),
])
def test_rail_interfaces_checks_its_options_before_running_anything(fake, entry, words):
    _fails(fake, rail_interfaces, {"rails": [entry], "host": "srv-a", "mgmt_interface": "eno1"}, "srv-a", *words)


@pytest.mark.parametrize("value", ["eno1,eno2", "eno1 eno2", "eno*", "eno1\n", "x" * 16, "$(reboot)"])
def test_a_management_interface_that_is_not_one_name_is_refused(fake, value):
    out = _fails(fake, rail_interfaces, {"rails": [RAIL0], "host": "srv-a", "mgmt_interface": value},
                 "mgmt_interface=", "is not one network interface name")
    assert out["parameter"] == "mgmt_interface"
    _fails(fake, roce_qos, {"interfaces": ["enp24s0np0"], "mgmt_interface": value}, "is not one network interface name")
    _fails(fake, mlx_fwreset, {"device": ["0000:18:00.0"], "mgmt_interface": value}, "mgmt_interface=")


@pytest.mark.parametrize("params, words", [
    ({"NUM_OF_VFS[0..999999999]": 8}, ("params[\"NUM_OF_VFS[0..999999999]\"]", "indexes 0-255")),
    ({"NUM_OF_VFS[5..2]": 8}, ("lo <= hi",)),
    ({"NUM_OF_VFS[256]": 8}, ("indexes 0-255",)),
    ({"SRIOV_EN": [1, 2]}, ("params.SRIOV_EN", "must be a value mlxconfig takes", "a list")),
    ({"SRIOV_EN": {"a": 1}}, ("params.SRIOV_EN", "a mapping")),
    ({"SRIOV_EN": 1.5}, ("params.SRIOV_EN", "the number 1.5")),   # null is the firmware's default: not bad input
    ({"SRIOV_EN": "1 --force"}, ("params.SRIOV_EN",)),
    ({"SRIOV_EN": "1\n"}, ()),   # stripped: one word
    ({"SRIOV EN": 1}, ("is not an mlxconfig parameter name",)),
    ({"SRIOV_EN\n": 1}, ("is not an mlxconfig parameter name",)),
])
def test_mlxconfig_checks_every_parameter_before_running_anything(fake, params, words):
    args = {"device": ["0000:18:00.0"], "params": params}
    if not words:
        failed, _out = run_module(mlxconfig, args)   # accepted: it goes on to query the device (no tool here)
        assert failed and fake.calls == []          # the fake has no mlxconfig: ToolNotFound, nothing ran
        return
    _fails(fake, mlxconfig, args, *words)


@pytest.mark.parametrize("device", ["-y", "0000:18:00.0 -y", "../../etc/passwd", "/dev/mst/../../x", "mlx5_0;reboot",
                                    "0000:18:00.0\n", ""])
def test_a_malformed_device_reaches_no_tool(fake, device):
    _fails(fake, mlxconfig, {"device": [device], "params": {"SRIOV_EN": True}}, "device[0]=", "is not a device")
    _fails(fake, mlxconfig, {"configs": [{"device": [device], "params": {"SRIOV_EN": True}}]},
           "configs[0].device[0]=")
    _fails(fake, mlx_firmware, {"device": [device], "images": [IMAGE]}, "device[0]=")
    _fails(fake, mlx_fwreset, {"device": [device]}, "device[0]=")


# item by item, several members of each class the device grammar refuses: a short or over-long PCI address, a device
# above 1f or a function above 7, a PCI address with spaces or a trailing dot, a path that is no MST device, an RDMA
# name with a character no kernel or udev name has, a non-ASCII digit
@pytest.mark.parametrize("device", ["18:00", "0000:18:00", "0000:18:00.8", "18:00.9", "0000:18:20.0", "0000:18:ff.0",
                                    "00000:18:00.0", "0000:18:00.0.0", "0000:018:00.0", "18:00.", " 18:00.0",
                                    "0000:18:00.0/", "/dev/mst/mt4129", "/dev/mst/mt4129_pciconf0x",
                                    "/dev/mst/0000:18:00.0_mstconf", "/dev/mst/mt4129_pciconf0.8", "/dev/sda",
                                    "mst/mt4129_pciconf0", "mlx5-0", "mlx5.0", "5mlx_0", "_mlx5", "mlx5_\u0663",
                                    "18:00.\u0663", "ALL ", "x" * 65])
def test_a_device_of_no_kind_is_refused_naming_the_kinds(fake, device):
    out = _fails(fake, mlxconfig, {"device": [device], "params": {"SRIOV_EN": True}}, "device[0]=", "is not a device",
                 "device 00-1f, function 0-7", "NVIDIA MFT only")
    assert out["parameter"] == "device[0]"
    _fails(fake, mlx_fwreset, {"device": ["0000:18:00.0", device]}, "device[1]=", "is not a device")
    _fails(fake, mlx_firmware, {"device": [device], "images": [IMAGE]}, "device[0]=", "is not a device")


@pytest.mark.parametrize("device, kind", [
    ("18:00.0", "pci"), ("0000:18:00.1", "pci"), ("0000:AF:1F.7", "pci"), ("0000:18:00.0", "pci"),
    ("mlx5_0", "rdma"), ("mlx5_bond_0", "rdma"), ("rocep24s0f0", "rdma"), ("ibp24s0", "rdma"), ("x" * 64, "rdma"),
    ("/dev/mst/mt4129_pciconf0", "mst"), ("/dev/mst/mt41686_pciconf0.1", "mst"), ("/dev/mst/mt4123_pci_cr0", "mst"),
    ("all", "all")])
def test_each_kind_of_device_name_is_known(device, kind):
    from ansible_collections.gpufabric.mlnx.plugins.module_utils import _devices
    assert _devices.device_kind(device) == kind
    assert _devices.check_names([device]) == [device]


@pytest.mark.parametrize("path", ["/dev/mst/mt4129_pciconf0", "/dev/mst/mt41686_pciconf0.1"])
def test_an_mst_device_path_with_the_mstflint_tools_is_refused_before_they_run(fake, path):
    # mst start (NVIDIA MFT) creates the path; mstflint's tools open a PCI address or an RDMA device
    for module, args in ((mlxconfig, {"device": [path], "params": {"SRIOV_EN": True}}),
                         (mlx_fwreset, {"device": [path]}), (mlx_firmware, {"device": [path], "images": [IMAGE]})):
        out = _fails(fake, module, dict(args, tool="mstflint"), "device[0]=%r is an MST device path" % path,
                     "only NVIDIA MFT's tools open", "tool: mstflint")
        assert out["parameter"] == "device[0]"
    _fails(fake, mlxconfig, {"configs": [{"device": ["0000:18:00.0"], "params": {"SRIOV_EN": True}},
                                         {"device": [path], "params": {"SRIOV_EN": True}}], "tool": "mstflint"},
           "configs[1].device[0]=")


@pytest.mark.parametrize("psid", ["MCX75310AAS-NEAT", "MCX7531", "mcx623106an-cdat", "900-9X7AH-0078-DTZ", "MT 0838",
                                  "MT_0000000838;x"])
def test_a_firmware_image_keyed_by_a_part_number_or_no_psid_is_refused(fake, psid):
    out = _fails(fake, mlx_firmware, {"images": [dict(IMAGE, psid=psid)]}, "images[0].psid", "is not a PSID")
    if psid.upper().startswith(("MCX", "900-")):
        assert "looks like a part number" in out["msg"]
    _fails(fake, mlx_firmware, {"images": [dict(IMAGE, from_psids=[psid])]}, "images[0].from_psids[0]")


@pytest.mark.parametrize("psid", ["MT_0000000838", "DEL0000000027", "HPE0000000058", "mt_0000000838"])
def test_real_psids_are_accepted(psid):
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._firmware import normalize_images
    assert normalize_images([dict(IMAGE, psid=psid)])[0]["psid"] == psid.upper()


@pytest.mark.parametrize("timeout", [0, -1])
@pytest.mark.parametrize("module, args", [
    (mlx_info, {}), (mlxconfig, {"device": ["0000:18:00.0"], "params": {"SRIOV_EN": True}}),
    (mlx_firmware, {"images": [IMAGE]}), (mlx_fwreset, {"device": ["0000:18:00.0"]}),
    (roce_qos, {"interfaces": ["enp24s0np0"]}),
])
def test_a_timeout_of_zero_or_less_is_refused(fake, module, args, timeout):
    out = _fails(fake, module, dict(args, timeout=timeout), "timeout=%d is not a timeout" % timeout,
                 "above 0")
    assert out["parameter"] == "timeout"


@pytest.mark.parametrize("installed, refused", [(["mstconfig", "mstflint"], True), (["mlxconfig", "flint"], False),
                                                (["mlxconfig", "mstconfig"], False)])
def test_with_tool_auto_an_mst_path_is_refused_where_only_mstflint_is_installed(installed, refused):
    from ansible_collections.gpufabric.mlnx.plugins.module_utils import _devices
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
    ran = []
    runner = Runner("auto", which=lambda name: "/usr/bin/" + name if name in installed else None,
                    execute=lambda *a, **k: ran.append(a))
    names = ["0000:18:00.0", "/dev/mst/mt4129_pciconf0"]
    if refused:
        with pytest.raises(InvalidValue, match=r"device\[1\]='/dev/mst/mt4129_pciconf0' is an MST device path.*"
                                               r"\(tool: auto\)"):
            _devices.check_tool(names, runner)
    else:
        assert _devices.check_tool(names, runner) is None
    _devices.check_tool(["0000:18:00.0", "mlx5_0"], Runner("mstflint", which=lambda name: None))   # no path: no lookup
    assert ran == []


@pytest.mark.parametrize("level", ["\u0663", "\u0663\u0663", "3\u0660", "1_0", "+3", "3.0", 3.0, True, "0x3", "three"])
def test_a_reset_level_is_ascii_digits_or_an_int(fake, level):
    # int() takes "٣" (an Arabic-Indic three) and "1_0" as numbers: the level is read by an ASCII grammar
    out = _fails(fake, mlx_fwreset, {"device": ["0000:18:00.0"], "level": level}, "level must be auto or one of")
    assert out["parameter"] == "level"


@pytest.mark.parametrize("part", ["", " ", "MCX 75310", "MCX;reboot", "-MCX", "\u0663MCX", "x" * 41])
def test_a_part_number_outside_its_grammar_reads_no_card(fake, part):
    # an empty part number read every card's VPD (lspci) and then matched nothing
    out = _fails(fake, mlxconfig, {"part_number": [part], "params": {"SRIOV_EN": True}}, "part_number[0]=",
                 "is not a part number")
    assert out["parameter"] == "part_number[0]"
    _fails(fake, mlxconfig, {"configs": [{"part_number": ["MCX75310AAS-NEAT", part], "params": {"SRIOV_EN": True}}]},
           "configs[0].part_number[1]=")
