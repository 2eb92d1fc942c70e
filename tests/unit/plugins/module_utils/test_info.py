"""mlx_info core: what runs (exact argv, the invocation budget) and what comes back.

A fake host answers the Runner with REAL captures from tests/fixtures/real (their two
comment lines, shell prompts and the author's annotations removed); the assertions check
the values of those captures in the result.
"""
import os
import re
import textwrap
import threading

import pytest

from _fakehost import FakeHost
from _paths import REAL
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _info as info
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import ToolNotFound
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner

PROMPT_RE = re.compile(r"^\s*(?:\$ |# |sh-[\d.]+# |\[[^\]]*\][#$] |\S+@\S+:\S*[#$] |```)")


def real(name, start=None, stop=None, dedent=False, keep=None):
    """A capture without its 2 comment lines and prompt lines, from ``start`` to before ``stop``."""
    lines = (REAL / name).read_text().splitlines()[2:]
    if start is not None:
        lines = lines[next(i for i, line in enumerate(lines) if start in line):]
    if stop is not None:
        lines = lines[:next(i for i, line in enumerate(lines) if stop in line)]
    lines = [line for line in lines if not PROMPT_RE.match(line)]
    if keep is not None:
        lines = [line for line in lines if keep in line]
    text = "\n".join(lines) + "\n"
    return textwrap.dedent(text) if dedent else text


LSPCI = ("lspci", "-D", "-d", "15b3:", "-vv")

# The BlueField-2 host of the NVIDIA bf2_facts captures: lspci -vv with VPD and mst status -v.
LSPCI_BF2 = real("lspci_vv_vpd_bf2_1.txt", stop="---- (second fixture")
MST_BF2 = real("mst_status_v_bf2_1.txt")
# ConnectX-4 MCX416A-CCAT whose link trained x8 under its x16 capability.
LSPCI_CX4_DEGRADED = real("lspci_vvvvv_vpd_cx4_1.txt", start="81:00.0 Ethernet", stop="```", dedent=True)
FLINT_CX7 = real("flint_query_cx7_1.txt", start="Image type:")
MSTFLINT_CX6LX = real("mstflint_query_cx6lx_1.txt", start="Image type:")
IBSTAT_CX6DX = real("ibstat_cx6dx_1.txt")
IBSTAT_H100 = real("ibstat_h100_cx7_cx6dx_1.txt")
# `ibdev2netdev | column -t` with the poster's '# ...' notes cut off.
IBDEV2NETDEV = re.sub(r"\s+#.*", "", real("ibdev2netdev_cx7_cx6_1.txt", start="mlx5_0"))
# What `lspci -d 15b3:` keeps of the GB200 listing: the Mellanox functions and bridges.
LSPCI_GB200 = real("lspci_gb200_1.txt", keep="Mellanox")
# `mst status` when MST is not started (words from github.com/MrBr-github/lshca/issues/28).
MST_NOT_STARTED = ("MST modules:\n------------\n    MST PCI module is not loaded\n"
                   "    MST PCI configuration module is not loaded\n")
# mstflint's words for a device it cannot open (github.com/Mellanox/mstflint/issues/20).
CANNOT_OPEN = "-E- Cannot open Device: %s. Operation not supported. MFE_CR_ERROR\n"

MFT = ("lspci", "mlxconfig", "flint", "mst")
MSTFLINT = ("lspci", "mstconfig", "mstflint")


class Host:
    """Answers argv with canned output: ``{(name, *args): text | (rc, out, err) | [one per call]}``."""

    def __init__(self, installed, outputs):
        self.installed = set(installed)
        self.outputs = dict(outputs)
        self.calls = []
        self._lock = threading.Lock()

    def which(self, name):
        return "/usr/bin/" + name if name in self.installed else None

    def execute(self, argv, env, timeout, data):
        key = (os.path.basename(argv[0]),) + tuple(argv[1:])
        with self._lock:
            self.calls.append(key)
            reply = self.outputs.get(key, (127, "", "unexpected command %r" % (key,)))
            if isinstance(reply, list):
                reply = reply.pop(0)
        assert env["LANG"] == "C"
        return (0, reply, "") if isinstance(reply, str) else reply

    def runner(self, tool="auto"):
        return Runner(tool, execute=self.execute, which=self.which, sleep=lambda _s: None)

    def count(self, name):
        return sum(1 for call in self.calls if call[0] == name)


def by_address(result):
    return {dev["address"]: dev for dev in result["devices"]}


# ---------------------------------------------------------------- pure helpers

@pytest.mark.parametrize("text, token", [
    # lspci names from the real captures
    ("Mellanox Technologies MT2910 Family [ConnectX-7]", "ConnectX7"),
    ("Mellanox Technologies MT43244 BlueField-3 integrated ConnectX-7 network controller (rev 01)", "BlueField3"),
    ("Mellanox Technologies MT42822 BlueField-2 integrated ConnectX-6 Dx network controller (rev 01)",
     "BlueField2"),
    ("Mellanox Technologies MT2894 Family [ConnectX-6 Lx]", "ConnectX6LX"),
    ("Mellanox Technologies MT27800 Family [ConnectX-5]", "ConnectX5"),
    ("Mellanox Technologies MT27700 Family [ConnectX-4]", "ConnectX4"),
    # an lspci whose pci.ids is older than the card
    ("Mellanox Technologies Device 1021", "ConnectX7"),
    ("Mellanox Technologies Device a2dc", "BlueField3"),
    # /dev/mst names and ibstat CA types carry the device id in decimal
    ("mt41686_pciconf0", "BlueField2"),
    ("mt4129_pciconf0.1", "ConnectX7"),
    ("MT4125", "ConnectX6DX"),
    ("Mellanox Technologies Device ffff", None),
    ("", None),
])
def test_device_type_from_text(text, token):
    assert info.device_type_from_text(text) == token


# Vendor 15b3 (Mellanox Technologies) of the public PCI ID list, pci.ids version 2023.04.10 (Debian bookworm's
# package pci.ids 0.0~2023.04.11-1, /usr/share/misc/pci.ids): device id, its name there, the device type token.
PCI_IDS = [
    (0x1013, "MT27700 Family [ConnectX-4]", "ConnectX4"),
    (0x1015, "MT27710 Family [ConnectX-4 Lx]", "ConnectX4LX"),
    (0x1017, "MT27800 Family [ConnectX-5]", "ConnectX5"),
    (0x1019, "MT28800 Family [ConnectX-5 Ex]", "ConnectX5"),
    (0x101B, "MT28908 Family [ConnectX-6]", "ConnectX6"),
    (0x101D, "MT2892 Family [ConnectX-6 Dx]", "ConnectX6DX"),
    (0x101F, "MT2894 Family [ConnectX-6 Lx]", "ConnectX6LX"),
    (0x1021, "MT2910 Family [ConnectX-7]", "ConnectX7"),
    (0x1023, "CX8 Family [ConnectX-8]", "ConnectX8"),
    (0xA2D6, "MT42822 BlueField-2 integrated ConnectX-6 Dx network controller", "BlueField2"),
    (0xA2DC, "MT43244 BlueField-3 integrated ConnectX-7 network controller", "BlueField3"),
]


def test_the_device_id_table_is_the_public_pci_ids():
    assert info.DEVICE_IDS == {number: token for number, _name, token in PCI_IDS}


@pytest.mark.parametrize("number, name, token", PCI_IDS, ids=["%04x" % row[0] for row in PCI_IDS])
def test_each_device_id_names_the_family_pci_ids_names(number, name, token):
    assert info.device_type_from_id(number) == token
    assert info.device_type_from_id(str(number)) == token                     # as a decimal string
    assert info.device_type_from_text("Mellanox Technologies " + name) == token   # lspci with this pci.ids
    assert info.device_type_from_text("Mellanox Technologies Device %04x" % number) == token   # an older pci.ids
    assert info.device_type_from_text("mt%d_pciconf0" % number) == token     # mst: the id in decimal


@pytest.mark.parametrize("cap, sta, expected", [
    ({"speed": "8GT/s", "width": "x16"}, {"speed": "8GT/s", "width": "x8"},
     {"lnkcap": {"speed": "8GT/s", "width": 16}, "lnksta": {"speed": "8GT/s", "width": 8}, "degraded": True}),
    ({"speed": "16GT/s", "width": 16}, {"speed": "16GT/s", "width": 16},
     {"lnkcap": {"speed": "16GT/s", "width": 16}, "lnksta": {"speed": "16GT/s", "width": 16}, "degraded": False}),
    ({"speed": "32GT/s", "width": "x16"}, {"speed": "16GT/s (downgraded)", "width": "x16 (ok)"},
     {"lnkcap": {"speed": "32GT/s", "width": 16}, "lnksta": {"speed": "16GT/s", "width": 16}, "degraded": True}),
    ({"speed": "2.5GT/s", "width": "x1"}, {"speed": "2.5GT/s", "width": "x1"},
     {"lnkcap": {"speed": "2.5GT/s", "width": 1}, "lnksta": {"speed": "2.5GT/s", "width": 1}, "degraded": False}),
    (None, None, {"lnkcap": None, "lnksta": None, "degraded": None}),
])
def test_pcie_status(cap, sta, expected):
    assert info.pcie_status(cap, sta) == expected


def test_ibstat_joined_by_guid_when_nothing_else_maps():
    """CX6-Dx of the H100 capture: System image GUID e8ebd303003307da is the card's base GUID;
    mlx5_1 (node ..da) is function 0 and mlx5_2 (node ..db) function 1."""
    flint = {"0000:9d:00": {"base_guid": "e8ebd303003307da"}}
    ports, rdmas, _nets, types = info._ports_by_pci(
        "ibstat", parse("ibstat", IBSTAT_H100), {}, None, flint)
    assert rdmas == {"0000:9d:00.0": ["mlx5_1"], "0000:9d:00.1": ["mlx5_2"]}
    assert types == {"0000:9d:00.0": "MT4125", "0000:9d:00.1": "MT4125"}
    assert ports["0000:9d:00.0"] == [{"port": 1, "rdma": "mlx5_1", "link_layer": "Ethernet", "state": "Active",
                                      "physical_state": "LinkUp", "rate": 100, "netdev": None, "netdev_state": None}]


@pytest.mark.parametrize("running_line, running, pending", [
    (None, "28.42.1000", False),
    # flint prints FW Version(Running) only when a burned image waits for a reset
    ("FW Version(Running):   28.39.1002", "28.39.1002", True),
])
def test_card_fields_fw_pending(running_line, running, pending):
    text = FLINT_CX7
    if running_line:
        text = text.replace("FW Release Date:", running_line + "\nFW Release Date:")
    fields = info._card_fields(parse("flint", text))
    assert fields["fw_version"] == "28.42.1000"
    assert fields["fw_running"] == running and fields["fw_pending"] is pending
    assert fields["psid"] == "MT_0000001244"


# ---------------------------------------------------------------- whole inventories

def test_mft_host_with_mst_and_ibstat():
    host = Host(MFT + ("ibstat", "ibdev2netdev"), {
        LSPCI: LSPCI_BF2,
        ("mst", "status", "-v"): MST_BF2,
        ("ibstat",): IBSTAT_CX6DX,
        ("flint", "-d", "0000:e2:00.0", "q"): FLINT_CX7,
    })
    result = info.gather(host.runner())

    assert sorted(host.calls) == sorted([LSPCI, ("mst", "status", "-v"), ("ibstat",),
                                         ("flint", "-d", "0000:e2:00.0", "q")])
    assert result["tool_family"] == "mft"
    assert result["changed"] is False
    assert result["sources"]["mst"] == "started" and result["sources"]["ports"] == "ibstat"
    (dev,) = result["devices"]
    assert dev["address"] == "0000:e2:00.0" and dev["card"] == "0000:e2:00" and dev["function"] == 0
    assert dev["mst"] == "/dev/mst/mt41686_pciconf0"
    assert dev["device_type"] == "BlueField2"
    assert dev["part_number"] == "MBF2M516A-EEEOT"
    assert dev["serial_number"] == "MT2050X00614"
    assert dev["description"].startswith("BlueField-2 DPU 100GbE/EDR/HDR100 VPI Dual-Port QSFP56")
    assert dev["vpd"]["EC"] == "A4" and dev["vpd"]["V0"] == "PCIeGen4 x16"
    assert dev["numa_node"] == 1
    assert dev["netdevs"] == ["ens7f0"] and dev["rdma_devices"] == ["mlx5_0"]
    (port,) = dev["ports"]
    assert port == {"port": 1, "rdma": "mlx5_0", "link_layer": "Ethernet", "state": "Active",
                    "physical_state": "LinkUp", "rate": 100, "netdev": "ens7f0", "netdev_state": None}
    assert dev["psid"] == "MT_0000001244"
    assert dev["fw_version"] == dev["fw_running"] == "28.42.1000" and dev["fw_pending"] is False
    assert dev["rom_versions"] == {"UEFI": "14.35.15", "PXE": "3.7.500"}
    assert dev["base_mac"] == "e09d73126474" and dev["base_guid"] == "e09d730300126474"
    assert dev["security_attributes"] == "secure-fw"
    assert dev["errors"] == []
    assert "nv_config" not in dev and "pending_nv" not in dev
    assert result["summary"]["devices"] == 1 and result["summary"]["cards"] == 1
    assert result["summary"]["device_types"] == {"BlueField2": 1}
    assert result["summary"]["ports_active"] == 1


def test_mstflint_family_degraded_pcie_and_no_mst():
    host = Host(MSTFLINT, {
        LSPCI: LSPCI_CX4_DEGRADED,
        ("mstflint", "-d", "0000:81:00.0", "q"): MSTFLINT_CX6LX,
    })
    result = info.gather(host.runner())

    assert sorted(host.calls) == sorted([LSPCI, ("mstflint", "-d", "0000:81:00.0", "q")])
    assert host.count("mst") == 0
    assert result["tool_family"] == "mstflint"
    assert result["sources"]["mst"] == "not in mstflint" and result["sources"]["ports"] is None
    (dev,) = result["devices"]
    assert dev["mst"] is None
    assert dev["device_type"] == "ConnectX4"
    assert dev["part_number"] == "MCX416A-CCAT" and dev["serial_number"] == "MT1838X04950"
    assert dev["numa_node"] == 1
    assert dev["pcie"] == {"lnkcap": {"speed": "8GT/s", "width": 16}, "lnksta": {"speed": "8GT/s", "width": 8},
                           "degraded": True}
    assert dev["psid"] == "MT_0000000575" and dev["fw_running"] == "26.33.1048"
    assert dev["rom_versions"] == {"UEFI": "14.26.17", "PXE": "3.6.502"}
    assert dev["ports"] == [] and dev["netdevs"] == []
    assert result["summary"]["pcie_degraded"] == 1


def test_mst_not_started_is_skipped_silently_and_ibdev2netdev_used(tmp_path):
    # sysfs of the host: mlx5_1 is the function 0000:e2:00.0
    sysfs = FakeHost(tmp_path)
    sysfs.mkdir("/sys/bus/pci/devices/0000:e2:00.0")
    sysfs.link("/sys/class/infiniband/mlx5_1/device", "/sys/bus/pci/devices/0000:e2:00.0")
    host = Host(MFT + ("ibdev2netdev", "ibstat"), {
        LSPCI: LSPCI_BF2,
        ("mst", "status", "-v"): MST_NOT_STARTED,
        ("ibdev2netdev", "-v"): IBDEV2NETDEV,
        ("flint", "-d", "0000:e2:00.0", "q"): FLINT_CX7,
    })
    result = info.gather(host.runner(), host=sysfs.host())

    assert sorted(host.calls) == sorted([LSPCI, ("mst", "status", "-v"), ("ibdev2netdev", "-v"),
                                         ("flint", "-d", "0000:e2:00.0", "q")])
    assert ("mst", "start") not in host.calls
    assert result["sources"]["mst"] == "not started" and result["sources"]["ports"] == "ibdev2netdev"
    assert result["changed"] is False
    (dev,) = result["devices"]
    assert dev["mst"] is None and dev["errors"] == []
    assert dev["device_type"] == "BlueField2"   # from the lspci name, mst said nothing
    assert dev["rdma_devices"] == ["mlx5_1"] and dev["netdevs"] == ["enp27s0f0np0"]
    (port,) = dev["ports"]
    assert (port["port"], port["netdev"], port["netdev_state"], port["link_layer"]) == (1, "enp27s0f0np0", "Up", None)


def test_mst_not_started_rows_still_tie_rdma_names():
    """`mst status -v` without the MST modules: MST column NA, RDMA and NET still printed
    (the BF2 capture with its module lines and /dev/mst names edited to that state)."""
    not_started = (MST_BF2.replace("MST PCI configuration module loaded", "MST PCI configuration module is not loaded")
                   .replace("/dev/mst/mt41686_pciconf0.1", "NA                         ")
                   .replace("/dev/mst/mt41686_pciconf0  ", "NA                         "))
    assert "/dev/mst" not in not_started and "mlx5_0" in not_started
    host = Host(MFT + ("ibstat", "ibdev2netdev"), {
        LSPCI: LSPCI_BF2,
        ("mst", "status", "-v"): not_started,
        ("ibstat",): IBSTAT_CX6DX,
        ("flint", "-d", "0000:e2:00.0", "q"): FLINT_CX7,
    })
    result = info.gather(host.runner())
    assert sorted(host.calls) == sorted([LSPCI, ("mst", "status", "-v"), ("ibstat",),
                                         ("flint", "-d", "0000:e2:00.0", "q")])
    assert result["sources"]["mst"] == "not started" and result["warnings"] == []
    (dev,) = result["devices"]
    assert dev["mst"] is None
    assert dev["rdma_devices"] == ["mlx5_0"] and dev["netdevs"] == ["ens7f0"]
    assert dev["ports"][0]["link_layer"] == "Ethernet" and dev["ports"][0]["netdev"] == "ens7f0"


IBSTAT_PARTIAL = real("ibstat_ibpanic_partial_1.txt", start="CA 'mlx5_7'", stop="ibpanic:")
IBPANIC_MLX5_8 = real("ibstat_ibpanic_partial_1.txt", keep="ibpanic:")


@pytest.mark.parametrize("reply", [
    (255, IBSTAT_PARTIAL, IBPANIC_MLX5_8),                                              # rdma-core before v54
    (0, IBSTAT_CX6DX, "ibwarn: [1323906] main: stat of IB device 'mlx5_8' failed\n"),  # v54 on: left out, rc 0
], ids=["ibpanic", "ibwarn"])
def test_ibstat_that_could_not_read_a_device_gives_no_ports(reply):
    """ibstat_ibpanic_partial_1.txt: an ibstat that could not read mlx5_8 is no port listing - not the CAs printed
    before the panic (or around the warning) as if they were the host's: ports not read, the warning names it."""
    host = Host(MFT + ("ibstat", "ibdev2netdev"), {
        LSPCI: LSPCI_BF2,
        ("mst", "status", "-v"): MST_BF2,
        ("ibstat",): reply,
        ("flint", "-d", "0000:e2:00.0", "q"): FLINT_CX7,
    })
    result = info.gather(host.runner())
    assert result["sources"]["ports"].startswith("ibstat: ")
    assert "stat of IB device 'mlx5_8' failed" in result["sources"]["ports"]
    assert result["warnings"] == ["ports not read: " + result["sources"]["ports"]]
    (dev,) = result["devices"]
    assert dev["ports"] == [] and dev["rdma_devices"] == ["mlx5_0"]        # the RDMA name still from mst


def test_mst_vf_rows_are_not_cards():
    """mst_status_v_vfs_cx7_1.txt: without the MST modules SR-IOV VFs are rows of `mst status -v` (DEVICE_TYPE NA);
    its VF rows moved onto the BlueField-2's bus: the devices stay lspci's PFs, the PF keeps its own RDMA name."""
    vf_rows = [line.replace("37:00.", "e2:00.") for line in real("mst_status_v_vfs_cx7_1.txt").split("\n")
               if line.startswith("NA ") and "37:00." in line]
    assert len(vf_rows) == 7
    with_vfs = MST_BF2 + "\n\n".join(vf_rows) + "\n\n"
    host = Host(MFT + ("ibstat", "ibdev2netdev"), {
        LSPCI: LSPCI_BF2,
        ("mst", "status", "-v"): with_vfs,
        ("ibstat",): IBSTAT_CX6DX,
        ("flint", "-d", "0000:e2:00.0", "q"): FLINT_CX7,
    })
    result = info.gather(host.runner())
    assert [dev["address"] for dev in result["devices"]] == ["0000:e2:00.0"]
    (dev,) = result["devices"]
    assert dev["rdma_devices"] == ["mlx5_0"] and dev["device_type"] == "BlueField2"
    assert result["summary"]["devices"] == 1 and result["summary"]["cards"] == 1


def test_start_mst_when_asked():
    host = Host(MFT, {
        LSPCI: LSPCI_BF2,
        ("mst", "status", "-v"): [MST_NOT_STARTED, MST_BF2],
        ("mst", "start"): "Starting MST (Mellanox Software Tools) driver set\n",
        ("flint", "-d", "0000:e2:00.0", "q"): FLINT_CX7,
    })
    result = info.gather(host.runner(), start_mst=True)
    assert host.calls[:4] == [LSPCI, ("mst", "status", "-v"), ("mst", "start"), ("mst", "status", "-v")]
    assert result["changed"] is True and result["sources"]["mst"] == "started now"
    assert result["devices"][0]["mst"] == "/dev/mst/mt41686_pciconf0"


def test_start_mst_in_check_mode_starts_nothing():
    host = Host(MFT, {
        LSPCI: LSPCI_BF2,
        ("mst", "status", "-v"): MST_NOT_STARTED,
        ("flint", "-d", "0000:e2:00.0", "q"): FLINT_CX7,
    })
    result = info.gather(host.runner(), start_mst=True, check_mode=True)
    assert ("mst", "start") not in host.calls and host.count("mst") == 1
    assert result["changed"] is False and result["sources"]["mst"] == "would start"


def test_device_flint_cannot_open_is_listed_with_the_tools_words():
    host = Host(MSTFLINT, {
        LSPCI: LSPCI_BF2,
        ("mstflint", "-d", "0000:e2:00.0", "q"): (1, CANNOT_OPEN % "0000:e2:00.0", ""),
    })
    result = info.gather(host.runner())
    (dev,) = result["devices"]
    assert dev["part_number"] == "MBF2M516A-EEEOT" and dev["serial_number"] == "MT2050X00614"
    assert dev["psid"] is None and dev["fw_version"] is None and dev["fw_pending"] is False
    assert dev["errors"] == ["mstflint -d 0000:e2:00.0 q failed (rc 1): Cannot open Device: 0000:e2:00.0. "
                             "Operation not supported. MFE_CR_ERROR"]
    assert result["summary"]["with_errors"] == 1


def test_gb200_lists_nic_functions_only_and_runs_one_flint_per_card():
    cards = ["0000:03:00", "0002:03:00", "0006:03:00", "0010:03:00", "0012:03:00", "0016:03:00"]
    outputs = {LSPCI: LSPCI_GB200}
    for card in cards:
        outputs[("mstflint", "-d", card + ".0", "q")] = MSTFLINT_CX6LX
    outputs[("mstflint", "-d", "0016:03:00.0", "q")] = (1, CANNOT_OPEN % "0016:03:00.0", "")
    host = Host(MSTFLINT, outputs)
    result = info.gather(host.runner())

    assert sorted(host.calls) == sorted([LSPCI] + [("mstflint", "-d", c + ".0", "q") for c in cards])
    found = by_address(result)
    assert list(found) == ["0000:03:00.0", "0002:03:00.0", "0006:03:00.0", "0006:03:00.1",
                           "0010:03:00.0", "0012:03:00.0", "0016:03:00.0", "0016:03:00.1"]
    assert [found[a]["device_type"] for a in found] == ["ConnectX7"] * 2 + ["BlueField3"] * 2 + \
        ["ConnectX7"] * 2 + ["BlueField3"] * 2
    # the card's flint facts are shared by its functions; a card flint cannot open keeps its errors
    assert found["0006:03:00.1"]["psid"] == "MT_0000000575" and found["0006:03:00.1"]["function"] == 1
    assert found["0016:03:00.1"]["psid"] is None
    assert found["0016:03:00.1"]["errors"] == found["0016:03:00.0"]["errors"] != []
    assert "Cannot open Device: 0016:03:00.0" in found["0016:03:00.0"]["errors"][0]
    assert found["0012:03:00.0"]["errors"] == []
    summary = result["summary"]
    assert (summary["devices"], summary["cards"], summary["with_errors"]) == (8, 6, 2)
    assert summary["device_types"] == {"ConnectX7": 4, "BlueField3": 2}


def _mstconfig_e_query(device, edit=None):
    """A real -e query: the CX7 header (Device: is the -d argument) and the CX5 -e rows."""
    header = real("mlxconfig_query_cx7_1.txt", start="Device #1:", stop="Device:")
    rows = real("mlxconfig_e_query_cx5_partial_1.txt", stop="ROCE_CONTROL")
    if edit:
        rows = rows.replace(*edit)
    return ("\n" + header + "Device:             %s\n\n" % device
            + "Configurations:                                      Default         Current         Next Boot\n"
            + rows)


@pytest.mark.parametrize("edit, pending", [
    (None, {}),
    # the same rows after `mstconfig set PF_TOTAL_SF=8` (the next-boot column and the '*' marker edited)
    (("         PF_TOTAL_SF                                 0               0               0",
      "*        PF_TOTAL_SF                                 0               0               8"),
     {"PF_TOTAL_SF": {"current": "0", "next": "8"}}),
])
def test_nv_config_one_query_per_function(edit, pending):
    host = Host(MSTFLINT, {
        LSPCI: LSPCI_BF2,
        ("mstflint", "-d", "0000:e2:00.0", "q"): MSTFLINT_CX6LX,
        ("mstconfig", "-d", "0000:e2:00.0", "-e", "q"): _mstconfig_e_query("0000:e2:00.0", edit),
    })
    result = info.gather(host.runner(), nv_config=True)

    assert sorted(host.calls) == sorted([LSPCI, ("mstflint", "-d", "0000:e2:00.0", "q"),
                                         ("mstconfig", "-d", "0000:e2:00.0", "-e", "q")])
    (dev,) = result["devices"]
    assert dev["nv_config"]["PF_NUM_PF_MSIX"] == {"default": "63", "current": "63", "next": "63", "modified": False}
    assert dev["nv_config"]["PHY_FEC_OVERRIDE_P2"]["next"] == "DEVICE_DEFAULT(0)"
    assert dev["nv_config"]["IB_ROUTING_MODE_P1"]["current"] == "LID(1)"
    assert dev["pending_nv"] == pending
    assert result["summary"]["nv_pending"] == (1 if pending else 0)
    if pending:
        assert dev["nv_config"]["PF_TOTAL_SF"]["modified"] is True


def test_nv_config_failure_is_a_device_error():
    host = Host(MSTFLINT, {
        LSPCI: LSPCI_BF2,
        ("mstflint", "-d", "0000:e2:00.0", "q"): MSTFLINT_CX6LX,
        ("mstconfig", "-d", "0000:e2:00.0", "-e", "q"): (3, "-E- Failed to open device\n", ""),
    })
    (dev,) = info.gather(host.runner(), nv_config=True)["devices"]
    assert dev["nv_config"] is None and dev["pending_nv"] is None
    assert dev["psid"] == "MT_0000000575"
    assert len(dev["errors"]) == 1 and "Failed to open device" in dev["errors"][0]


def test_port_tool_failure_is_a_warning_not_a_failure():
    host = Host(MFT + ("ibstat",), {
        LSPCI: LSPCI_BF2,
        ("mst", "status", "-v"): MST_BF2,
        ("ibstat",): (255, "", "ibpanic: [12345] main: stat of IB device 'mlx5_0' failed: No such file or directory\n"),
        ("flint", "-d", "0000:e2:00.0", "q"): FLINT_CX7,
    })
    result = info.gather(host.runner())
    (dev,) = result["devices"]
    assert dev["ports"] == [] and dev["errors"] == [] and dev["psid"] == "MT_0000001244"
    assert dev["netdevs"] == ["ens7f0"]   # from mst
    (warning,) = result["warnings"]
    assert warning.startswith("ports not read: ibstat: ") and "ibpanic" in warning


def test_no_nvidia_tools_still_lists_lspci():
    host = Host(("lspci",), {LSPCI: LSPCI_BF2})
    result = info.gather(host.runner())
    assert host.calls == [LSPCI]
    assert result["tool_family"] is None
    (dev,) = result["devices"]
    assert dev["part_number"] == "MBF2M516A-EEEOT"
    assert "mlxconfig (NVIDIA Firmware Tools" in dev["errors"][0]


def test_no_lspci_fails_naming_the_package():
    host = Host(("mlxconfig", "flint"), {})
    with pytest.raises(ToolNotFound, match="pciutils"):
        info.gather(host.runner())


# ---------------------------------------------------------------- end to end, against the simulator

DGX_H100_COMPUTE = ["0000:18:00.0", "0000:40:00.0", "0000:4f:00.0", "0000:5e:00.0",
                    "0000:9a:00.0", "0000:c0:00.0", "0000:ce:00.0", "0000:dc:00.0"]
DGX_H100_STORAGE = ["0000:29:00.0", "0000:29:00.1", "0000:aa:00.0", "0000:aa:00.1"]


def _logged_tools(host):
    """Tool names of the simulator's call log, in call order."""
    return [os.path.basename(entry["tool"]) for entry in host.calls()]


def _dgx01(sim_host, *init_args, faults=()):
    """A simulated dgx-h100 named dgx01 (``mlxsim init`` words, ``mlxsim fault add`` words each),
    its call log emptied so that it counts only what the module runs."""
    host = sim_host("dgx-h100", hostname="dgx01", init_args=init_args)
    for fault in faults:
        host.mlxsim("fault", "add", *fault)
    host.clear_calls()
    return host


def _check_dgx_h100(result):
    found = by_address(result)
    assert sorted(found) == sorted(DGX_H100_COMPUTE + DGX_H100_STORAGE)
    assert (result["summary"]["devices"], result["summary"]["cards"]) == (12, 10)
    assert result["summary"]["part_numbers"] == {"MCX75310AAS-NEAT": 8, "MCX755106AS-HEAT": 2}
    assert result["summary"]["device_types"] == {"ConnectX7": 10}
    for address in DGX_H100_COMPUTE:
        dev = found[address]
        assert dev["part_number"] == "MCX75310AAS-NEAT" and dev["psid"] == "MT_0000000838", dev
        assert dev["fw_running"] == "28.42.1000" and dev["rom_versions"] == {"UEFI": "14.35.15", "PXE": "3.7.500"}
        assert dev["pcie"]["degraded"] is False and dev["serial_number"].startswith("MT")
    assert found["0000:29:00.1"]["psid"] == "MT_0000000834" and found["0000:29:00.1"]["function"] == 1
    assert found["0000:18:00.0"]["rdma_devices"] == ["mlx5_0"] and found["0000:18:00.0"]["netdevs"] == ["ibp24s0"]
    assert found["0000:29:00.0"]["rdma_devices"] == ["mlx5_1"]
    assert found["0000:18:00.0"]["numa_node"] == 0 and found["0000:dc:00.0"]["numa_node"] == 1
    return found


def _budget(host, family, cards=10, functions=12, nv_config=False, mst_max=1):
    calls = _logged_tools(host)
    flint, config = ("flint", "mlxconfig") if family == "mft" else ("mstflint", "mstconfig")
    assert calls.count("lspci") == 1
    assert calls.count("mst") <= (mst_max if family == "mft" else 0)
    assert calls.count("ibstat") + calls.count("ibdev2netdev") <= 1
    assert calls.count(flint) == cards
    assert calls.count(config) == (functions if nv_config else 0)
    assert len(calls) == (1 + calls.count("mst") + calls.count("ibstat") + calls.count("ibdev2netdev")
                          + cards + (functions if nv_config else 0)), calls
    return calls


@pytest.mark.parametrize("tool, nv_config, mst_started", [
    ("auto", False, False), ("mft", True, True), ("mstflint", False, False)])
def test_simulated_dgx_h100(sim_host, tool, nv_config, mst_started):
    host = _dgx01(sim_host, *(["--mst-started"] if mst_started else []))
    result = info.gather(Runner(tool, timeout=120), nv_config=nv_config)

    found = _check_dgx_h100(result)
    assert all(dev["errors"] == [] for dev in found.values()), [d["errors"] for d in found.values()]
    assert result["changed"] is False and result["warnings"] == []
    calls = _budget(host, result["tool_family"], nv_config=nv_config)
    compute = found["0000:18:00.0"]
    if result["tool_family"] == "mft":
        assert calls.count("mst") == 1 and "ibstat" in calls   # mst tied RDMA names to PCI: ibstat
        assert compute["ports"] == [{"port": 1, "rdma": "mlx5_0", "link_layer": "InfiniBand", "state": "Active",
                                     "physical_state": "LinkUp", "rate": 400, "netdev": "ibp24s0",
                                     "netdev_state": None}]
        assert compute["mst"] == ("/dev/mst/mt4129_pciconf0" if mst_started else None)
    else:
        assert "ibdev2netdev" in calls
        (port,) = compute["ports"]
        assert (port["rdma"], port["state"], port["netdev"], port["netdev_state"]) == (
            "mlx5_0", "Active", "ibp24s0", "Up")
    if nv_config:
        assert all(found[a]["nv_config"] and found[a]["pending_nv"] == {} for a in found)
        assert found["0000:18:00.0"]["nv_config"]["SRIOV_EN"]["current"] is not None
    else:
        assert "nv_config" not in compute


def test_simulated_start_mst(sim_host):
    host = _dgx01(sim_host)
    result = info.gather(Runner("mft", timeout=120), start_mst=True)
    found = _check_dgx_h100(result)
    assert result["changed"] is True and result["sources"]["mst"] == "started now"
    assert found["0000:29:00.1"]["mst"].startswith("/dev/mst/mt4129_pciconf")
    calls = _budget(host, "mft", mst_max=3)
    assert calls[:4] == ["lspci", "mst", "mst", "mst"]


def test_simulated_card_flint_cannot_read(sim_host):
    """A card whose flash semaphore stays held: listed from lspci, with flint's words; the rest are whole."""
    host = _dgx01(sim_host, faults=[["semaphore_held", "count=100", "--device", "0000:40:00.0"]])
    runner = Runner("mft", timeout=120, semaphore_retries=2, retry_delay=0)
    result = info.gather(runner)
    found = by_address(result)
    bad = found["0000:40:00.0"]
    assert bad["part_number"] == "MCX75310AAS-NEAT" and bad["psid"] is None
    assert len(bad["errors"]) == 1 and "semaphore" in bad["errors"][0].lower()
    assert bad["errors"][0].startswith("flint -d 0000:40:00.0 q failed")
    assert [a for a in found if found[a]["errors"]] == ["0000:40:00.0"]
    assert found["0000:4f:00.0"]["psid"] == "MT_0000000838"
    assert _logged_tools(host).count("flint") == 10 + 2   # two semaphore retries on the bad card
