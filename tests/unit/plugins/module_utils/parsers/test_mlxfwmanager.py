"""mlxfwmanager / mstfwmanager / mlxup, text and XML (_parsers/mlxfwmanager.py): the real captures and a
synthetic device block with a running version, port MACs and a failed update."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import ParseError, parse

from ._captures import CX7_DUAL_DESC, capture, capture_test, checks, only, section

CHECKS, check = checks()


@check("mlxfwmanager_query_and_mlxconfig_e_query_cx5_1.txt")
def _mlxfwmanager_and_mlxconfig_cx5(text):
    fw = only(parse("mlxfwmanager", section(text, "PXE 3.6.0102", "Log File:")))
    assert fw["device_type"] == "ConnectX5"
    assert fw["part_number"] == "MCX515A-CCA_Ax_Bx"
    assert fw["psid"] == "MT_0000000011"
    assert fw["pci_device"] == "/dev/mst/mt4119_pciconf0"
    assert fw["base_guid"] == "ec0d9a0300d9c516" and fw["base_mac"] == "ec0d9ad9c516"
    assert fw["versions"] == {"FW": {"current": "16.28.2006", "available": "16.28.2006"},
                              "PXE": {"current": "3.6.0102", "available": "3.6.0102"},
                              "UEFI": {"current": "14.21.0017", "available": "14.21.0017"}}
    assert fw["status"] == "Up to date"


# ---------------------------------------------------------------- mlxfwmanager / mlxup captures

CX6LX_FW = {
    "device_index": 1,
    "device_type": "ConnectX6LX",
    "part_number": "MCX631102AS-ADA_Ax",
    "description": "ConnectX-6 Lx EN adapter card; 25GbE; Dual-port SFP28; PCIe 4.0 x8; Secure Boot; No Crypto;",
    "psid": "MT_0000000575",
    "pci_device": "0002:01:00.0",
    "base_guid": "e8ebd3030070cf12",
    "base_mac": "e8ebd370cf12",
    "versions": {"FW": {"current": "26.33.1048", "available": "26.43.1014"},
                 "PXE": {"current": "3.6.0502", "available": "3.7.0500"},
                 "UEFI": {"current": "14.26.0017", "available": "14.36.0016"}},
    "status": "Update required",
}


@check("mlxfwmanager_query_dell_cx4lx_1.txt")
def _mlxfwmanager_query_dell_cx4lx(text):
    # the document dropped the block's own indents: put back the real 2-space field and 5-space version-row indents
    def real_indent(block):
        return "\n".join(("     " + ln) if ln.split()[:1] in (["FW"], ["PXE"], ["UEFI"]) else
                         ("  " + ln) if ":" in ln and not ln.startswith(("Device #", "Querying")) else ln
                         for ln in block.split("\n"))

    dell = only(parse("mlxfwmanager", real_indent(section(text, "root@kube01:~/mlnx#", "root@kube01:~#"))))
    assert (dell["device_type"], dell["part_number"], dell["psid"]) == ("ConnectX4LX", "020NJD_0MRT0D_Ax",
                                                                        "DEL2420110034")
    assert dell["description"] == "Mellanox 25GBE 2P ConnectX-4 Lx Adapter"
    assert dell["versions"] == {"FW": {"current": "14.14.2320", "available": "N/A"},
                                "PXE": {"current": "3.4.0729", "available": "N/A"},
                                "UEFI": {"current": "14.9.0050", "available": "N/A"}}
    assert dell["base_mac"] == "248a07914da4" and "base_guid" not in dell
    assert dell["status"] == "No matching image found"
    cx4 = only(parse("mlxfwmanager", real_indent(section(text, "root@kube02", "root@kube01"))))
    assert (cx4["psid"], cx4["base_guid"]) == ("MT_2150110033", "98039b0300688698")


@check("mlxup_query_cx6lx_1.txt")
def _mlxup_query_cx6lx(text):
    assert parse("mlxup", text) == [CX6LX_FW]


@check("mlxup_query_xml_cx6lx_1.txt")
def _mlxup_query_xml_cx6lx(text):
    # Same device as mlxup_query_cx6lx_1.txt: the XML form parses to the same entry.
    assert parse("mlxup_xml", text) == [CX6LX_FW]
    assert parse("mlxfwmanager_xml", text) == parse("mlxup", capture("mlxup_query_cx6lx_1.txt"))


@check("mlxup_online_cx6lx_1.txt")
def _mlxup_online_cx6lx(text):
    # "Release notes" block and the answered "Perform FW update? [y/N]: N" are not device data.
    assert parse("mlxup", text) == [dict(CX6LX_FW, pci_device="/dev/mst/mt4127_pciconf0")]


@check("mlxup_query_cx7_1.txt")
def _mlxup_query_cx7(text):
    devs = parse("mlxup", text)
    assert [(d["device_index"], d["pci_device"], d["base_mac"]) for d in devs] == [
        (1, "/dev/mst/mt4129_pciconf1", "5c2573a98bd4"), (2, "/dev/mst/mt4129_pciconf0", "5c257331e4dc")]
    for dev in devs:
        assert dev["part_number"] == "MCX755106AS-HEA_Ax"
        assert dev["psid"] == "MT_0000000834"
        assert dev["description"] == CX7_DUAL_DESC
        assert dev["versions"] == {"FW": {"current": "28.40.1000", "available": "28.43.1014"},
                                   "PXE": {"current": "3.7.0300", "available": "N/A"},
                                   "UEFI": {"current": "14.33.0010", "available": "N/A"}}
        assert dev["status"] == "Update required"
        assert "base_guid" not in dev and "update" not in dev and "fw_running" not in dev


@check("mlxup_update_cx7_1.txt")
def _mlxup_update_cx7(text):
    devs = parse("mlxup", text)
    assert len(devs) == 2
    for dev in devs:
        assert dev["versions"]["FW"] == {"current": "28.40.1000", "available": "28.43.1014"}
        assert dev["update"] == {"result": "Done", "message": None, "stages": [
            {"stage": "FSMST_INITIALIZE", "status": "OK"},
            {"stage": "Writing Boot image component", "status": "OK"}]}
    assert devs[1]["pci_device"] == "/dev/mst/mt4129_pciconf0"


@check("mlxfwmanager_query_bf2_1.txt")
def _mlxfwmanager_query_bf2(text):
    dev = only(parse("mlxfwmanager", text))
    assert dev["device_type"] == "BlueField2"
    assert dev["part_number"] == "MBF2M516A-EEEO_Ax"
    assert dev["psid"] == "MT_0000000559"
    assert dev["pci_device"] == "/dev/mst/mt41686_pciconf0"
    assert dev["base_mac"] == "043f72a45a9c" and "base_guid" not in dev
    assert dev["versions"]["FW"] == {"current": "24.29.2008", "available": "N/A"}
    assert dev["versions"]["UNKNOWN_ROM"] == {"current": "22.1.0011", "available": "N/A"}
    # the synthetic last row: a ROM name with spaces and no Available column
    assert dev["versions"]["UEFI Virtio x"] == {"current": "1.2.3.4", "available": None}
    assert dev["status"] == "No matching image found"


@check("mlxup_help_1.txt")
def _mlxup_help(text):
    with pytest.raises(ParseError, match="mlxup.*SYNOPSIS"):
        parse("mlxup", text)


@check("mlxup_list_and_download_1.txt")
def _mlxup_list_and_download(text):
    # "-l" lists image contents and --download prints a file list: neither is a device query.
    with pytest.raises(ParseError, match="mlxup"):
        parse("mlxup", text)


test_capture = capture_test(CHECKS)


# ---------------------------------------------------------------- mlxfwmanager synthetic

FW_BLOCK = """Querying Mellanox devices firmware ...

Device #1:
----------

  Device Type:      ConnectX6DX
  Part Number:      MCX623106AN-CDA_Ax
  Description:      ConnectX-6 Dx EN adapter card; 100GbE; Dual-port QSFP56
  PSID:             MT_0000000359
  PCI Device Name:  0000:3b:00.0
  Base MAC:         0c42a1b2c3d4
  Port1 MAC:        0c42a1b2c3d4
  Port2 MAC:        0c42a1b2c3d5
  Versions:         Current        Available    \x20
     FW             22.39.1002     22.41.1000   \x20
     FW (Running)   22.36.1010     N/A          \x20
     PXE            3.7.0102       --           \x20
     UEFI Virtio net 21.4.0010     --           \x20

  Status:           Update required

---------
Found 1 device(s) requiring firmware update...

Device #1: Updating FW ...    \x20
FSMST_INITIALIZE -   OK         \x20
Writing Boot image component -   23%
Fail : Burn process failed: flash semaphore is held
"""


def test_mlxfwmanager_running_ports_and_failed_update():
    dev = only(parse("mstfwmanager", FW_BLOCK))
    assert dev["fw_running"] == "22.36.1010" and "FW (Running)" not in dev["versions"]
    assert dev["macs"] == {"Port1": "0c42a1b2c3d4", "Port2": "0c42a1b2c3d5"}
    assert dev["versions"]["PXE"] == {"current": "3.7.0102", "available": "--"}
    assert dev["versions"]["UEFI Virtio net"] == {"current": "21.4.0010", "available": "--"}
    assert dev["update"] == {"result": "Fail", "message": "Burn process failed: flash semaphore is held",
                             "stages": [{"stage": "FSMST_INITIALIZE", "status": "OK"},
                                        {"stage": "Writing Boot image component", "status": "23%"}]}


def test_mlxfwmanager_no_devices_and_broken_block():
    assert parse("mlxfwmanager", "-E- No devices found or specified, mst might be stopped.\n") == []
    with pytest.raises(ParseError, match="not a line of a device block"):
        parse("mlxfwmanager", FW_BLOCK.replace("  PSID:             MT_0000000359", "  garbage here"))


def test_mlxfwmanager_xml_guards():
    with pytest.raises(ParseError, match="mlxup_xml"):
        parse("mlxup_xml", "<Devices><Device></Devices>")
    with pytest.raises(ParseError, match="undefined entity"):  # a DTD before <Devices> is not read
        parse("mlxfwmanager_xml", '<!DOCTYPE x [<!ENTITY a "b">]><Devices>&a;</Devices>')
    assert parse("mlxfwmanager_xml", "<Devices>\n</Devices>") == []
