"""Tool-output parsers, tested on the real captures in tests/fixtures/real and on text built
from the exact printf formats in FORMAT_FACTS.md.

Every capture file is either checked here (``CHECKS``, real values asserted) or listed in
``NOT_OURS`` with the reason; ``test_every_capture_is_accounted_for`` keeps it that way.
"""
import json
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _paths import REAL

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import (
    PARSERS,
    ParseError,
    parse,
    parse_errors,
    parse_mlxconfig,
    parse_mlxconfig_json,
)


# ---------------------------------------------------------------- helpers

def capture(name):
    """A capture's text without its ``# source:`` / ``# note:`` header."""
    lines = (REAL / name).read_text(encoding="utf-8").split("\n")
    assert lines[0].startswith("# source:") and lines[1].startswith("# note:"), name
    return "\n".join(lines[2:])


def section(text, start, stop=None, nth=1):
    """The lines after the ``nth`` line containing ``start``, up to (not including) the next line
    containing ``stop`` (or the end). Cuts one command's output out of a multi-command capture."""
    lines = text.split("\n")
    hits = [i for i, line in enumerate(lines) if start in line]
    assert len(hits) >= nth, "%r not found %d times" % (start, nth)
    begin = hits[nth - 1] + 1
    end = len(lines)
    if stop is not None:
        end = next((i for i in range(begin, len(lines)) if stop in lines[i]), len(lines))
    return "\n".join(lines[begin:end])


CHECKS = {}


def check(name):
    """Register a function asserting real values read from the capture ``name``."""
    def register(func):
        CHECKS[name] = func
        return func
    return register


# Captures of tools this collection does not parse.
NOT_OURS = {
    "INDEX.md": "the index",
    "ib_write_bw_client_roce_cuda_1.txt": "perftest",
    "ib_write_bw_roce_oci_1.txt": "perftest",
    "ib_write_bw_server_roce_cuda_1.txt": "perftest",
    "ibv_devinfo_azure_h200_cx7vf_1.txt": "ibv_devinfo",
    "ibv_devinfo_cx6dx_cx7_1.txt": "ibv_devinfo",
    "ibv_devinfo_vv_cx4_1.txt": "ibv_devinfo",
    "mlxlink_bf3_1.txt": "mlxlink",
    "mlxlink_cx7_ndr_1.txt": "mlxlink",
    "mlxprivhost_query_bf2_1.txt": "mlxprivhost",
    "nccl_all_reduce_perf_2node_a100_1.txt": "nccl-tests",
    "nccl_all_reduce_perf_v100_1.txt": "nccl-tests",
    "rdma_link_old_format_1.txt": "rdma link",
}


def test_every_capture_is_accounted_for():
    present = set(os.listdir(str(REAL)))
    assert present == set(CHECKS) | set(NOT_OURS), (
        "unchecked: %s; missing: %s" % (sorted(present - set(CHECKS) - set(NOT_OURS)),
                                        sorted((set(CHECKS) | set(NOT_OURS)) - present)))


# ---------------------------------------------------------------- mlxconfig captures

CX7_DESC = ("NVIDIA ConnectX-7 HHHL Adapter Card; 400GbE (default mode) / NDR IB; Single-port QSFP112; "
            "Port Split Capable; PCIe 5.0 x16 with x16 PCIe extension option; Crypto Disabled; Secure Boot Enabled")
CX7_DUAL_DESC = ("NVIDIA ConnectX-7 HHHL Adapter Card; 200GbE (default mode) / NDR200 IB; Dual-port QSFP112; "
                 "PCIe 5.0 x16 with x16 PCIe extension option; Crypto Disabled; Secure Boot Enabled")


def only(devices):
    assert len(devices) == 1, devices
    return devices[0]


@check("mlxconfig_query_cx7_1.txt")
def _mlxconfig_query_cx7(text):
    dev = only(parse("mlxconfig", text))
    assert dev["device_index"] == 1
    assert dev["device_type"] == "ConnectX7"  # printed with trailing spaces
    assert dev["name"] == "MCX715105AS-WEAT_Ax"
    assert dev["description"] == CX7_DESC
    assert dev["device"] == "/dev/mst/mt4129_pciconf0"
    # "(...)" elision skipped; the last row has no trailing spaces
    assert list(dev["params"]) == ["MODULE_SPLIT_M0", "MEMIC_BAR_SIZE", "MEMIC_SIZE_LIMIT",
                                   "ADVANCED_PCI_SETTINGS", "SAFE_MODE_THRESHOLD", "SAFE_MODE_ENABLE"]
    assert dev["params"]["MODULE_SPLIT_M0"] == {"next": "Array[0..15]"}
    assert dev["params"]["MEMIC_SIZE_LIMIT"] == {"next": "_256KB(1)"}
    assert dev["params"]["SAFE_MODE_THRESHOLD"] == {"next": "10"}
    assert dev["params"]["SAFE_MODE_ENABLE"] == {"next": "True(1)"}
    assert dev["applied"] is None and dev["errors"] == []


@check("mlxconfig_query_cx7_partial_1.txt")
def _mlxconfig_query_cx7_partial(text):
    dev = only(parse("mlxconfig", text))
    assert dev["device_type"] is None and dev["device"] is None
    # 18 rows, the last cut mid-name ("PF_NUM_") by the excerpt
    assert len(dev["params"]) == 17 and "PF_NUM_" not in dev["params"]
    assert dev["params"]["MEMIC_ATOMIC"] == {"next": "MEMIC_ATOMIC_ENABLE(2)"}  # overflows its 20 chars
    assert dev["params"]["MEMIC_ATOMIC_ENDIANESS"] == {"next": "DEVICE_DEFAULT(0)"}
    assert dev["params"]["ROCE_NEXT_PROTOCOL"] == {"next": "254"}
    assert dev["params"]["DPA_AUTHENTICATION"] == {"next": "True(1)"}
    assert dev["params"]["PF_BAR2_SIZE"] == {"next": "0"}


@check("mlxconfig_query_egrep_cx7_1.txt")
def _mlxconfig_query_egrep_cx7(text):
    dev = only(parse("mlxconfig", text))  # the echoed "mlxconfig -d 37:00.0 query | egrep" line is skipped
    assert dev["device_type"] == "ConnectX7"
    assert dev["name"] == "MCX715105AS-WEAT_Ax"
    assert dev["description"] == CX7_DESC
    assert dev["device"] is None  # filtered out by egrep
    assert dev["params"] == {"NUM_OF_VFS": {"next": "8"}, "SRIOV_EN": {"next": "True(1)"},
                             "LINK_TYPE_P1": {"next": "ETH(2)"}}


@check("mlxconfig_query_cx4_1.txt")
def _mlxconfig_query_cx4(text):
    dev = only(parse("mlxconfig", text))  # bare "Configurations:" header, "..." at the end
    assert (dev["device_type"], dev["name"]) == ("ConnectX4", "00KH925_Ax")
    assert dev["description"] == "Mellanox ConnectX-4 EDR IB VPI Single-port x16 PCIe 3.0 HCA"
    assert dev["device"] == "/dev/mst/mt4115_pciconf0"
    assert dev["params"] == {"LINK_TYPE_P1": {"next": "ETH(2)"}, "SRIOV_EN": {"next": "True(1)"},
                             "NUM_OF_VFS": {"next": "8"}}


@check("mlxconfig_e_query_cx5_partial_1.txt")
def _mlxconfig_e_query_cx5_partial(text):
    dev = only(parse("mlxconfig", text))  # rows only, no header: three values = default/current/next
    params = dev["params"]
    assert len(params) == 14  # the 15th, "*        ROCE_CONTROL", is cut before its values
    assert params["PHY_FEC_OVERRIDE_P1"] == {
        "default": "DEVICE_DEFAULT(0)", "current": "DEVICE_DEFAULT(0)", "next": "DEVICE_DEFAULT(0)",
        "modified": False}  # 17-char values collapse to single spaces
    assert params["PF_NUM_PF_MSIX"] == {"default": "63", "current": "63", "next": "63", "modified": False}
    assert params["SRIOV_IB_ROUTING_MODE_P2"]["next"] == "LID(1)"
    assert params["DUP_MAC_ACTION_P2"]["current"] == "LAST_CFG(0)"


@check("mlxconfig_e_query_cx6lx_partial_1.txt")
def _mlxconfig_e_query_cx6lx_partial(text):
    dev = only(parse("mlxconfig", text))  # <=4.21 layout, trailing spaces kept
    params = dev["params"]
    assert len(params) == 12  # PF_BAR2_SIZE is cut after two of its three values
    assert "PF_BAR2_SIZE" not in params
    assert params["MEMIC_SIZE_LIMIT"] == {"default": "_256KB(1)", "current": "_256KB(1)",
                                          "next": "_256KB(1)", "modified": False}
    assert params["HOST_CHAINING_DESCRIPTORS"]["next"] == "Array[0..7]"
    assert params["ROCE_NEXT_PROTOCOL"]["default"] == "254"
    assert params["ESWITCH_HAIRPIN_TOT_BUFFER_SIZE"]["current"] == "Array[0..7]"


@check("mlxconfig_e_query_grep_cx6_1.txt")
def _mlxconfig_e_query_grep_cx6(text):
    dev = only(parse("mlxconfig", text))  # pdsh prompt, dshbak rules, hand-edited spacing
    assert dev["params"] == {
        "LINK_TYPE_P1": {"default": "IB(1)", "current": "ETH(2)", "next": "ETH(2)", "modified": True},
        "PCI_WR_ORDERING": {"default": "per_mkey(0)", "current": "per_mkey(0)", "next": "force_relax(1)",
                            "modified": True},
        "EXP_ROM_PXE_ENABLE": {"default": "True(1)", "current": "True(1)", "next": "False(0)",
                               "modified": True},
    }


@check("mlxconfig_error_header_cx4lx_fixture_1.txt")
def _mlxconfig_error_header_cx4lx(text):
    dev = only(parse("mlxconfig", text))
    assert dev["device_type"] == "ConnectX4Lx"
    assert dev["name"] == "MCX4121A-XCAT"
    assert dev["description"] == "ConnectX-4 Lx EN LOM; 25GbE dual-port BP; PCIe3.0 x8"
    assert dev["params"] == {}
    assert dev["errors"] == ["The Device doesn't support INTERNAL_CPU_OFFLOAD_ENGINE parameter"]
    assert parse_errors(text) == dev["errors"]


@check("mlxconfig_set_cx6_1.txt")
def _mlxconfig_set_cx6(text):
    grep = parse("mlxconfig", section(text, "query | grep LINK_TYPE", "set LINK_TYPE_P1"))
    assert only(grep)["params"] == {"LINK_TYPE_P1": {"next": "IB(1)"}, "LINK_TYPE_P2": {"next": "IB(1)"}}

    link = only(parse("mlxconfig", section(text, "set LINK_TYPE_P1=2 LINK_TYPE_P2=2", "root@")))
    assert (link["device_type"], link["name"]) == ("ConnectX6", "MCX654106A-HCA_Ax")
    assert link["description"].startswith("ConnectX-6 VPI adapter card; HDR IB (200Gb/s) and 200GbE")
    assert link["device"] == "/dev/mst/mt4123_pciconf0"
    assert link["params"] == {"LINK_TYPE_P1": {"next": "IB(1)", "new": "ETH(2)"},
                              "LINK_TYPE_P2": {"next": "IB(1)", "new": "ETH(2)"}}
    assert link["applied"] is True
    assert link["info"] == ["Please reboot machine to load new configurations."]

    sriov = only(parse("mlxconfig", section(text, "set SRIOV_EN=1", "root@")))
    assert sriov["params"] == {"SRIOV_EN": {"next": "False(0)", "new": "True(1)"}}
    assert sriov["applied"] is True

    vfs = only(parse("mlxconfig", section(text, "set NUM_OF_VFS=8")))
    assert vfs["params"] == {"NUM_OF_VFS": {"next": "0", "new": "8"}}

    # The whole session: one entry per command, the grep rows first.
    assert [len(dev["params"]) for dev in parse("mlxconfig", text)] == [2, 2, 1, 1]


@check("mlxconfig_set_cx7_1.txt")
def _mlxconfig_set_cx7(text):
    first = only(parse("mlxconfig", section(text, "-d 05:00.0 set NUM_OF_VFS=127", "]#")))
    assert first["device"] == "05:00.0"  # echoed as typed
    assert (first["device_type"], first["name"]) == ("ConnectX7", "MCX755106AS-HEA_Ax")
    assert first["description"] == CX7_DUAL_DESC
    assert first["params"] == {"NUM_OF_VFS": {"next": "16", "new": "127"}}
    assert first["applied"] is True and first["info"] == ["Please reboot machine to load new configurations."]

    second = only(parse("mlxconfig", section(text, "-d 0001:05:00.0 set NUM_OF_VFS=127", "]#")))
    assert second["device"] == "0001:05:00.0"
    assert second["params"]["NUM_OF_VFS"] == {"next": "16", "new": "127"}

    after = only(parse("mlxconfig", section(text, "-d 0000:05:00.1 q | grep NUM_OF_VFS", "]#")))
    assert after["params"] == {"NUM_OF_VFS": {"next": "127"}}


@check("mstconfig_e_query_cx4lx_1.txt")
def _mstconfig_e_query_cx4lx(text):
    # A Go test template: fill its placeholders with real values first.
    text = text.replace("%s\n", "", 1)
    text = text.replace("%d", "0")
    text = text.replace("%s(0)", "False(0)").replace("%s(1)", "True(1)")
    assert "%" not in text
    dev = only(parse("mstconfig", text))
    assert dev["device_type"] == "ConnectX4LX"
    assert dev["name"] == "0R887V"
    assert dev["description"] == "MCX422A-ACAA ConnectX-4 Lx EN Dual Port SFP28; 25GbE for Dell rack NDC"
    assert dev["device"] == "19:00.0"
    params = dev["params"]
    assert len(params) == 155
    assert params["NUM_OF_VFS"] == {"default": "8", "current": "0", "next": "0", "modified": True}
    assert params["SRIOV_EN"] == {"default": "False(0)", "current": "True(1)", "next": "True(1)", "modified": True}
    assert params["ROCE_CONTROL"] == {"default": "ROCE_ENABLE(2)", "current": "DEVICE_DEFAULT(0)",
                                      "next": "ROCE_ENABLE(2)", "modified": True}
    assert params["LEGACY_BOOT_PROTOCOL"] == {"default": "PXE(1)", "current": "PXE(1)", "next": "NONE(0)",
                                              "modified": True}
    assert params["PCI_ATOMIC_MODE"]["next"] == "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)"  # overflow
    assert params["PCI_ATOMIC_MODE"]["current"] == "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)"
    assert params["PCI_DOWNSTREAM_PORT_OWNER"]["default"] == "Array[0..15]"
    assert params["NUM_OF_VL_P1"]["next"] == "_4_VLs(3)"
    assert params["EXP_ROM_UEFI_x86_ENABLE"]["next"] == "True(1)"
    assert params["CNP_DSCP_P2"]["current"] == "48"
    assert sorted(name for name, p in params.items() if p["modified"]) == [
        "LEGACY_BOOT_PROTOCOL", "NUM_OF_VFS", "ROCE_CONTROL", "SRIOV_EN"]


@check("mixed_mlxconfig_mlxlink_flint_grep_cx7_1.txt")
def _mixed_cx7(text):
    for nth in (1, 2):
        dev = only(parse("mlxconfig", section(text, "Configuration Status:", "Link Status:", nth)))
        assert (dev["device_type"], dev["name"]) == ("ConnectX7", "MCX755106AS-HEA_Ax")
        assert dev["description"] == CX7_DUAL_DESC
        assert dev["params"] == {}
    flint = parse("flint", section(text, "Firmware Info:", "Temperature"))
    assert flint["fw_version"] == "28.40.1000"
    assert flint["product_version"] == "28.40.1000"
    assert flint["psid"] == "MT_0000000834"


@check("rdma_link_ibstat_lspci_cx5_1.txt")
def _rdma_link_ibstat_lspci_cx5(text):
    pci = parse("lspci", section(text, "lspci -nn | grep Mellanox", "#"))
    assert [dev["address"] for dev in pci] == ["0000:86:00.0", "0000:86:00.1"]
    assert {(dev["class"], dev["class_id"], dev["vendor_id"], dev["device_id"]) for dev in pci} == {
        ("Infiniband controller", "0207", "15b3", "1017")}
    assert pci[0]["description"] == "Mellanox Technologies MT27800 Family [ConnectX-5]"
    dev = only(parse("mlxconfig", section(text, "mlxconfig -d 86:00.0 q | grep LINK_TYPE")))
    assert dev["params"] == {"LINK_TYPE_P1": {"next": "IB(1)"}}
    # "ibstat mlx5_0 | grep 'Link layer'" keeps no CA line: not ibstat output.
    with pytest.raises(ParseError):
        parse("ibstat", section(text, 'ibstat mlx5_0 | grep "Link layer"', "```"))


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

    cfg = only(parse("mlxconfig", section(text, "Reboot the machine to load new configurations.")))
    assert (cfg["device_type"], cfg["name"], cfg["device"]) == ("ConnectX5", "MCX515A-CCA_Ax_Bx",
                                                                "/dev/mst/mt4119_pciconf0")
    assert cfg["params"]["ADVANCED_PCI_SETTINGS"] == {"default": "False(0)", "current": "True(1)",
                                                      "next": "True(1)", "modified": True}
    assert cfg["params"]["MEMIC_SIZE_LIMIT"]["next"] == "_256KB(1)"
    assert len(cfg["params"]) == 5  # "..." rows elided by the author


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


# ---------------------------------------------------------------- flint captures

@check("flint_query_cx7_1.txt")
def _flint_query_cx7(text):
    assert parse("flint", text) == {
        "image_type": "FS4", "fw_version": "28.42.1000", "fw_release_date": "8.8.2024",
        "product_version": "28.42.1000",
        "rom_info": [{"type": "UEFI", "version": "14.35.15", "cpu": "AMD64,AARCH64"},
                     {"type": "PXE", "version": "3.7.500", "cpu": "AMD64"}],
        "base_guid": "e09d730300126474", "guids_number": "16",
        "base_mac": "e09d73126474", "macs_number": "16",
        "image_vsd": "N/A", "device_vsd": "N/A", "psid": "MT_0000001244",
        "security_attributes": "secure-fw", "errors": [],
    }


@check("mstflint_query_cx6lx_1.txt")
def _mstflint_query_cx6lx(text):
    info = parse("mstflint", section(text, "mstflint -d 0002:01:00.0 q"))
    assert info["fw_version"] == "26.33.1048"
    assert info["fw_release_date"] == "29.4.2022"
    assert info["rom_info"] == [{"type": "UEFI", "version": "14.26.17", "cpu": "AMD64,AARCH64"},
                                {"type": "PXE", "version": "3.6.502", "cpu": "AMD64"}]
    assert (info["base_guid"], info["guids_number"]) == ("e8ebd3030070cf12", "4")
    assert (info["base_mac"], info["macs_number"]) == ("e8ebd370cf12", "4")
    assert info["psid"] == "MT_0000000575"
    assert "fw_version_running" not in info
    pci = parse("lspci", section(text, "lspci -d 15b3:", "mstflint"))
    assert [(d["address"], d["class"]) for d in pci] == [("0002:01:00.0", "Ethernet controller"),
                                                         ("0002:01:00.1", "Ethernet controller")]
    assert pci[0]["description"] == "Mellanox Technologies MT2894 Family [ConnectX-6 Lx]"


@check("mlxfwreset_reset_cx7_1.txt")
def _mlxfwreset_reset_cx7(text):
    reset = parse("mlxfwreset_reset", section(text, "reset -y", "sh-5.1#"))
    assert reset == {
        "device": "/dev/mst/mt4129_pciconf0", "level": 3, "ok": True, "errors": [],
        "steps": [{"step": "Sending Reset Command To Fw", "status": "Done"},
                  {"step": "Stopping Driver", "status": "Done"},
                  {"step": "Resetting PCI", "status": "Done"},
                  {"step": "Starting Driver", "status": "Done"},
                  {"step": "Restarting MST", "status": "Done"}],
    }
    after = parse("flint", section(text, "flint -d /dev/mst/mt4129_pciconf0 query"))
    assert (after["fw_version"], after["fw_release_date"]) == ("28.43.1014", "7.11.2024")
    assert after["rom_info"][0]["version"] == "14.36.16"


@check("mstflint_burn_cx4_fs3_1.txt")
def _mstflint_burn_cx4(text):
    assert parse("mstflint_burn", text) == {
        "current_version": "12.28.2006", "new_version": "12.28.2302",
        "stages": [{"stage": "FSMST_INITIALIZE", "status": "OK"},
                   {"stage": "Writing Boot image component", "status": "OK"}],
        "ok": True, "errors": [], "warnings": [],
        "info": ["To load new FW run mstfwreset or reboot machine."], "psid_mismatch": None,
    }


@check("mstflint_burn_psid_mismatch_cx4lx_1.txt")
def _mstflint_burn_psid_mismatch(text):
    refused = parse("flint_burn", section(text, "-i $FW_FILE_NAME burn", "```"))
    assert (refused["current_version"], refused["new_version"]) == ("14.14.2320", "14.32.1900")
    assert refused["ok"] is False and refused["stages"] == []
    assert refused["psid_mismatch"] == {"flash": "DEL2420110034", "image": "MT_2420110034"}
    assert refused["errors"][0].startswith("PSID mismatch.")

    forced = parse("flint_burn", section(text, "--allow_psid_change -d", "```"))
    assert forced["psid_mismatch"] is None and forced["errors"] == []
    # the "  1%" progress line and the final OK are one stage
    assert forced["stages"] == [{"stage": "Burning FW image without signatures", "status": "OK"}]
    assert forced["ok"] is True


# ---------------------------------------------------------------- mst status captures

def pciconf(node, pci):
    return {"mst": node, "pci": pci, "device_type": None, "rev": None, "rdma": None, "net": [], "numa": None}


@check("mst_status_cx4_1.txt")
def _mst_status_cx4(text):
    assert parse("mst_status", text) == {
        "modules": {"pci": False, "pciconf": True},
        "devices": [pciconf("/dev/mst/mt4115_pciconf0", "0000:06:00.0")], "errors": [], "warnings": []}


@check("mst_status_cx6lx_1.txt")
def _mst_status_cx6lx(text):
    status = parse("mst_status", text)
    assert status["devices"] == [pciconf("/dev/mst/mt4127_pciconf0", "0002:01:00.0")]


@check("mst_status_cx7_1.txt")
def _mst_status_cx7_1(text):
    status = parse("mst_status", text)
    assert status["devices"] == [pciconf("/dev/mst/mt4129_pciconf0", "0000:05:00.0"),
                                 pciconf("/dev/mst/mt4129_pciconf1", "0001:05:00.0")]
    assert status["modules"] == {"pci": False, "pciconf": True}


@check("mst_status_cx7_2.txt")
def _mst_status_cx7_2(text):
    status = parse("mst_status", section(text, "sh-5.1# mst status"))
    assert status["devices"] == [pciconf("/dev/mst/mt4129_pciconf0", "0000:0d:00.0"),
                                 pciconf("/dev/mst/mt4129_pciconf1", "0000:37:00.0")]
    # "mst start" then "mst status" in one text: the start chatter is no error
    assert parse("mst_status", text) == status


@check("mst_status_v_bf2_1.txt")
def _mst_status_v_bf2(text):
    status = parse("mst_status", text)
    assert status["modules"] == {"pci": False, "pciconf": True}
    assert status["devices"] == [
        {"mst": "/dev/mst/mt41686_pciconf0.1", "pci": "0000:e2:00.1", "device_type": "BlueField2", "rev": "1",
         "rdma": "mlx5_1", "net": ["ens7f1"], "numa": "1"},
        {"mst": "/dev/mst/mt41686_pciconf0", "pci": "0000:e2:00.0", "device_type": "BlueField2", "rev": "1",
         "rdma": "mlx5_0", "net": ["ens7f0"], "numa": "1"},
    ]


@check("mst_status_v_bf3_1.txt")
def _mst_status_v_bf3(text):
    status = parse("mst_status", section(text, "sudo mst status -v"))
    assert [(d["mst"], d["pci"], d["device_type"], d["rev"], d["rdma"], d["numa"]) for d in status["devices"]] == [
        ("/dev/mst/mt41692_pciconf0.1", "0000:03:00.1", "BlueField3", "1", "mlx5_1", "-1"),
        ("/dev/mst/mt41692_pciconf0", "0000:03:00.0", "BlueField3", "1", "mlx5_0", "-1")]
    assert status["devices"][0]["net"] == ["p1", "pf1hpf", "en3f1pf1sf0"]
    assert status["devices"][1]["net"] == ["pf0hpf", "en3f0pf0sf0", "p0"]


@check("mst_start_fail_1.txt")
def _mst_start_fail(text):
    status = parse("mst_status", text)
    assert status["devices"] == [] and status["modules"] == {"pci": None, "pciconf": None}
    assert len(status["errors"]) == 5
    assert status["errors"][0].endswith("FATAL: Module mst_pci not found in directory "
                                        "/lib/modules/5.14.0-427.13.1.el9_4.aarch64")
    assert "mst_pci driver not found" in status["errors"]
    assert status["warnings"] == ['Missing "lsusb" command, skipping MTUSB devices detection']


# ---------------------------------------------------------------- ibstat / ibdev2netdev captures

@check("ibstat_h100_cx7_cx6dx_1.txt")
def _ibstat_h100(text):
    cas = parse("ibstat", text)
    assert [ca["name"] for ca in cas] == ["mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11", "mlx5_2", "mlx5_3",
                                          "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
    assert sorted(ca["name"] for ca in cas if ca["ca_type"] == "MT4125") == ["mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"]
    first = cas[0]
    assert first == {
        "name": "mlx5_0", "ca_type": "MT4129", "num_ports": "1", "firmware_version": "28.39.1002",
        "hardware_version": "0", "node_guid": "0xa088c20300e3142a", "system_image_guid": "0xa088c20300e3142a",
        "ports": [{"port": 1, "state": "Active", "physical_state": "LinkUp", "rate": "400", "base_lid": "0",
                   "lmc": "0", "sm_lid": "0", "capability_mask": "0x00010000",
                   "port_guid": "0xa288c2fffee3142a", "link_layer": "Ethernet"}],
    }
    assert cas[1]["ports"][0]["port_guid"] == "0x0000000000000000"
    assert cas[-1]["ports"][0]["link_layer"] == "Ethernet"  # last line has no newline


@check("ibstat_a100_cx6_1.txt")
def _ibstat_a100(text):
    cas = parse("ibstat", text)
    assert len(cas) == 9 and {ca["ca_type"] for ca in cas} == {"MT4126"}
    assert cas[0]["firmware_version"] == "22.35.2302"
    assert cas[0]["ports"][0]["link_layer"] == "Ethernet"
    assert cas[1]["ports"][0] == {"port": 1, "state": "Active", "physical_state": "LinkUp", "rate": "200",
                                  "base_lid": "1369", "lmc": "0", "sm_lid": "83",
                                  "capability_mask": "0xa651ec48", "port_guid": "0x6b9d7f2c99902a63",
                                  "link_layer": "InfiniBand"}
    assert cas[8]["ports"][0]["base_lid"] == "1396"


@check("ibstat_cx6dx_1.txt")
def _ibstat_cx6dx(text):
    cas = parse("ibstat", text)  # TABs converted to spaces
    assert [(ca["name"], ca["node_guid"]) for ca in cas] == [("mlx5_0", "0x0c42a103001dd12a"),
                                                             ("mlx5_1", "0x0c42a103001dd12b")]
    assert cas[1]["system_image_guid"] == "0x0c42a103001dd12a"
    assert cas[0]["firmware_version"] == "22.32.2004"
    assert cas[1]["ports"][0]["port_guid"] == "0x0e42a1fffe1dd12b"
    assert cas[1]["ports"][0]["rate"] == "100"


@check("ibstat_cx3_debug_1.txt")
def _ibstat_cx3_debug(text):
    ca = only(parse("ibstat", text))  # "+ ibstat" trace and ibwarn lines skipped
    assert (ca["name"], ca["ca_type"], ca["num_ports"], ca["firmware_version"]) == ("mlx4_0", "MT4099", "2", "2.42.5000")
    assert [p["port"] for p in ca["ports"]] == [1, 2]
    assert ca["ports"][0]["state"] == "Down" and ca["ports"][0]["physical_state"] == "Disabled"
    assert ca["ports"][0]["sm_lid"] == "13" and ca["ports"][0]["capability_mask"] == "0x02594868"
    assert ca["ports"][1]["rate"] == "56"
    assert ca["ports"][1]["base_lid"] == ""  # the excerpt ends after "Base lid:"
    assert ca["ports"][1]["link_layer"] is None


@check("ibstatus_a100_1.txt")
def _ibstatus_a100(text):
    with pytest.raises(ParseError, match="ibstat"):  # ibstatus is another tool
        parse("ibstat", text)


@check("ibdev2netdev_cx7_cx6_1.txt")
def _ibdev2netdev_cx7_cx6(text):
    rows = parse("ibdev2netdev", text)  # column -t spacing and "# ..." comments
    assert len(rows) == 12
    assert rows[0] == {"rdma": "mlx5_0", "port": 1, "netdev": "ibp26s0", "state": "Down"}
    assert [r["netdev"] for r in rows if r["state"] == "Up"] == ["enp27s0f0np0", "enp157s0f0np0"]
    assert rows[2]["rdma"] == "mlx5_10" and rows[11] == {"rdma": "mlx5_9", "port": 1, "netdev": "ibp188s0",
                                                         "state": "Down"}


@check("mlnx_qos_pcp_and_show_gids_1.txt")
def _mlnx_qos_pcp(text):
    rows = parse("ibdev2netdev", section(text, "# ibdev2netdev", "mlnx_qos"))
    assert [(r["rdma"], r["netdev"], r["state"]) for r in rows][4:6] == [("mlx5_4", "ens14f1", "Down"),
                                                                         ("mlx5_5", "ib0", "Up")]
    assert len(rows) == 8

    pcp = parse("mlnx_qos", section(text, "mlnx_qos -i ens6", "root@", nth=1))
    assert pcp["dcbx_mode"] == "OS controlled" and pcp["trust"] == "pcp"
    assert pcp["dscp2prio"] == {}
    assert pcp["buffer_sizes"] == [524160, 0, 0, 0, 0, 0, 0, 0]
    assert pcp["cable_len"] == 7
    assert pcp["pfc"] == {"enabled": [0] * 8, "buffer": [0] * 8}
    assert [(tc["tc"], tc["priorities"]) for tc in pcp["tcs"][:3]] == [(0, [1]), (1, [0]), (2, [2])]
    assert {(tc["ratelimit"], tc["tsa"], tc["bw"]) for tc in pcp["tcs"]} == {("unlimited", "vendor", None)}

    dscp = parse("mlnx_qos", section(text, "mlnx_qos -i ens6 --trust dscp", "root@"))
    assert dscp["trust"] == "dscp"
    assert len(dscp["dscp2prio"]) == 64
    assert (dscp["dscp2prio"][0], dscp["dscp2prio"][26], dscp["dscp2prio"][46], dscp["dscp2prio"][63]) == (0, 3, 5, 7)


@check("mlnx_qos_trust_pfc_cma_roce_tos_1.txt")
def _mlnx_qos_trust_pfc(text):
    trust = parse("mlnx_qos", section(text, "+ mlnx_qos -i eth4 --trust dscp", "+ sudo"))
    assert trust["trust"] == "dscp" and trust["dcbx_mode"] == "OS controlled"
    assert trust["buffer_sizes"] is None  # this MLNX_OFED prints no buffer lines
    assert trust["pfc"] == {"enabled": [0, 0, 0, 1, 0, 0, 0, 0], "buffer": None}
    assert trust["dscp2prio"][24] == 3 and trust["dscp2prio"][48] == 6
    assert len(trust["tcs"]) == 8 and trust["tcs"][1]["priorities"] == [0]

    pfc = parse("mlnx_qos", section(text, "+ mlnx_qos -i eth4 --pfc 0,0,0,1,0,0,0,0"))
    assert pfc["pfc"]["enabled"][3] == 1 and sum(pfc["pfc"]["enabled"]) == 1
    with pytest.raises(ParseError, match="more than one mlnx_qos output"):
        parse("mlnx_qos", text)


# ---------------------------------------------------------------- lspci captures

@check("lspci_gb200_1.txt")
def _lspci_gb200(text):
    devs = parse("lspci", text)
    assert len(devs) == 87
    ib = [d["address"] for d in devs if d["class"] == "Infiniband controller"]
    assert ib == ["0000:03:00.0", "0002:03:00.0", "0010:03:00.0", "0012:03:00.0"]
    bf3 = [d for d in devs if d["description"].startswith("Mellanox Technologies MT43244 BlueField-3 integrated")]
    assert [d["address"] for d in bf3] == ["0006:03:00.0", "0006:03:00.1", "0016:03:00.0", "0016:03:00.1"]
    assert {d["revision"] for d in bf3} == {"01"}
    assert bf3[0]["description"] == "Mellanox Technologies MT43244 BlueField-3 integrated ConnectX-7 network controller"
    gpu = [d for d in devs if d["class"] == "3D controller"]
    assert len(gpu) == 4 and gpu[0]["revision"] == "a1"
    assert devs[-1]["address"] == "0019:01:00.0"  # no newline after the last line


@check("lspci_nn_cx6_bf2_1.txt")
def _lspci_nn_cx6_bf2(text):
    devs = parse("lspci", text)
    assert [(d["address"], d["class_id"], d["device_id"]) for d in devs] == [
        ("0000:0f:00.0", "0207", "101b"), ("0000:0f:00.1", "0207", "101b"),
        ("0000:92:00.0", "0207", "101b"), ("0000:92:00.1", "0207", "101b"),
        ("0000:e1:00.0", "0200", "a2d6"), ("0000:e1:00.1", "0801", "c2d3")]
    assert {d["vendor_id"] for d in devs} == {"15b3"}
    assert devs[4]["description"] == ("Mellanox Technologies MT42822 BlueField-2 integrated ConnectX-6 Dx "
                                      "network controller")
    assert devs[4]["revision"] == "01" and devs[0]["revision"] is None
    assert devs[5]["class"] == "DMA controller"


@check("lspci_vv_vpd_bf2_1.txt")
def _lspci_vv_vpd_bf2(text):
    first, second = text.split("---- (second fixture")
    dev = only(parse("lspci", first))
    assert dev["address"] == "0000:e2:00.0" and dev["class"] == "Ethernet controller"
    assert dev["physical_slot"] == "7-1" and dev["numa_node"] == "1"
    assert dev["product_name"].startswith("BlueField-2 DPU 100GbE/EDR/HDR100 VPI Dual-Port QSFP56")
    assert dev["vpd"] == {
        "PN": "MBF2M516A-EEEOT", "EC": "A4", "V2": "MBF2M516A-EEEOT", "SN": "MT2050X00614",
        "V3": "9c20a1608d3feb118000043f72ff4c16", "VA": "MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=BF2M516A",
        "V0": "PCIeGen4 x16", "RV": "checksum good, 1 byte(s) reserved"}
    # The second fixture is only the capability: give it its device line back.
    empty = only(parse("lspci", first.split("\n")[0] + "\n" + second.split("\n", 1)[1]))
    assert empty["vpd"] == {} and empty["product_name"] is None


@check("lspci_vvvvv_vpd_cx4_1.txt")
def _lspci_vvvvv_vpd_cx4(text):
    dev = only(parse("lspci", text))  # doc-indented, followed by markdown prose
    assert dev["address"] == "0000:81:00.0"
    assert dev["description"] == "Mellanox Technologies MT27700 Family [ConnectX-4]"
    assert dev["subsystem"] == "Mellanox Technologies ConnectX-4 Stand-up dual-port 100GbE MCX416A-CCAT"
    assert dev["numa_node"] == "1" and dev["driver"] == "mlx5_core"
    assert dev["product_name"] == "CX416A - ConnectX-4 QSFP28"
    assert dev["vpd"] == {"PN": "MCX416A-CCAT", "EC": "AG", "SN": "MT1838X04950", "V0": "PCIeGen3 x16",
                          "RV": "checksum good, 2 byte(s) reserved"}
    assert dev["lnkcap"] == {"speed": "8GT/s", "width": "x16"}
    assert dev["lnksta"] == {"speed": "8GT/s", "width": "x8", "downgraded": True}


# ---------------------------------------------------------------- ofed_info / ethtool captures

@check("ofed_info_s_1.txt")
def _ofed_info_s(text):
    assert parse("ofed_info", section(text, "ofed_info -s", "ofed_info -n")) == {
        "version": "5.4-3.1.0.0", "flavour": "mlnx-ofed", "raw": "MLNX_OFED_LINUX-5.4-3.1.0.0"}
    assert parse("ofed_info", section(text, "ofed_info -n")) == {
        "version": "5.4-3.1.0.0", "flavour": None, "raw": "5.4-3.1.0.0"}


@check("ethtool_i_cx4_cx4lx_1.txt")
def _ethtool_i_cx4_cx4lx(text):
    kube01 = parse("ethtool_i", section(text, "root@kube01", "root@kube02"))
    assert kube01["driver"] == "mlx5_core" and kube01["version"] == "6.8.12-8-pve"
    assert (kube01["firmware_version"], kube01["psid"]) == ("14.32.1900", "MT_2420110034")
    assert kube01["bus_info"] == "0000:01:00.0" and kube01["expansion_rom_version"] == ""
    assert kube01["supports_priv_flags"] == "yes" and kube01["supports_eeprom_access"] == "no"
    kube02 = parse("ethtool_i", section(text, "root@kube02", "root@kube05"))
    assert (kube02["firmware_version"], kube02["psid"], kube02["bus_info"]) == ("12.28.2006", "MT_2150110033",
                                                                                "0000:81:00.0")
    with pytest.raises(ParseError, match="more than one"):
        parse("ethtool_i", text)


@check("ethtool_i_cx4lx_1.txt")
def _ethtool_i_cx4lx(text):
    info = parse("ethtool_i", text)
    assert info["version"] == "3.0-1 (January 2015)"  # parentheses that are not a PSID
    assert (info["firmware_version"], info["psid"]) == ("14.23.1020", None)
    assert info["bus_info"] == "0000:af:00.0" and info["supports_test"] == "no"


@check("ethtool_i_cx6lx_fragment_1.txt")
def _ethtool_i_cx6lx_fragment(text):
    assert parse("ethtool_i", text) == {"driver": "mlx5_core", "version": "6.19.0-061900-generic",
                                        "firmware_version": "26.43.2566", "psid": "MT_0000000531"}


@check("ethtool_mlx5_cx4_1.txt")
def _ethtool_settings(text):
    with pytest.raises(ParseError, match="ethtool_i"):  # plain "ethtool IFACE" is not -i output
        parse("ethtool_i", text)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_capture(name):
    CHECKS[name](capture(name))


# ---------------------------------------------------------------- mlxconfig layouts (FORMAT_FACTS.md printf)

class Layout:
    """The widths one mstflint tag range prints with."""

    def __init__(self, label, marker, name, value, header_e, header_plain):
        self.label, self.marker, self.name, self.value = label, marker, name, value
        self.header_e, self.header_plain = header_e, header_plain


def _head56(columns):
    return "%-56s" % "Configurations:" + "".join("%-33s " % col for col in columns)


LAYOUTS = {
    "<=4.21": Layout(16, "old", 36, 16, "%-16s%36s%16s%18s", "%-16s%38s"),
    "4.22-4.24": Layout(16, "old", 44, 16, "%-16s%44s%16s%18s", "%-16s%46s"),
    "4.25": Layout(16, "ro", 44, 16, "%-16s%44s%16s%18s", "%-16s%46s"),
    "4.26-4.30": Layout(20, "ro", 44, 20, "%-20s%39s%21s%23s", "%-20s%41s"),
    "4.31-4.35": Layout(20, "ro", 44, 20, "%-20s%44s%20s%18s", "%-20s%46s"),
    ">=4.36": Layout(20, "ro", 48, 33, None, None),
}

# (name, default, current, next, read_only); values as Python ints or printed strings
SPEC = [
    ("MEMIC_BAR_SIZE", 0, 0, 0, False),
    ("MEMIC_SIZE_LIMIT", "_256KB(1)", "_256KB(1)", "_256KB(1)", False),
    ("NUM_OF_VFS", 8, 8, 16, False),
    ("SRIOV_EN", "False(0)", "True(1)", "True(1)", False),
    ("PCI_ATOMIC_MODE", "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)", "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)",
     "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)", False),
    ("PHY_FEC_OVERRIDE_P1", "DEVICE_DEFAULT(0)", "DEVICE_DEFAULT(0)", "DEVICE_DEFAULT(0)", False),
    ("HOST_CHAINING_DESCRIPTORS", "Array[0..7]", "Array[0..7]", "Array[0..7]", False),
    ("MODULE_SPLIT_M0[3]", 1, 1, 2, False),
    ("_INTERNAL_CPU_MODEL", "SEPERATED_HOST(0)", "EMBEDDED_CPU(1)", "EMBEDDED_CPU(1)", True),
    ("INTERNAL_CPU_OFFLOAD_ENGINE", "ENABLED(0)", "ENABLED(0)", "ENABLED(0)", True),
    ("PCI_WR_ORDERING", "per_mkey(0)", "per_mkey(0)", "force_relax(1)", False),
    ("NUM_OF_VL_P1", "_4_VLs(3)", "_4_VLs(3)", "_4_VLs(3)", False),
    ("BOOT_VLAN", "N/A", "N/A", "N/A", False),
    ("LINK_TYPE_P1", 148, "ETH(2)", "ETH(2)", False),
    ("EXP_ROM_UEFI_x86_ENABLE", "True(1)", "True(1)", "True(1)", False),
]
DEVICE = {"device_type": "ConnectX7", "name": "MCX755106AS-HEA_Ax",
          "description": CX7_DUAL_DESC, "device": "0000:05:00.0"}


def _cell(value, width):
    text = str(value)
    return text + " " if len(text) >= width else text.ljust(width)  # PRINT_SPACE_IF_NEEDED


def _modified(default, current, nxt, show_default):
    return show_default and (str(nxt) != str(default) or str(nxt) != str(current))


def _row(layout, name, values, modified=False, read_only=False):
    if layout.marker == "old":
        prefix = ("*" if modified else " ") + " " * 8
    else:
        prefix = ("*" if modified else " ") + ("RO" if read_only else "  ") + " " * 5
    if name.startswith("_"):
        prefix = prefix[:-1]  # hidden rows sit one column to the left
    return prefix + "%-*s" % (layout.name, name) + "".join(_cell(v, layout.value) for v in values)


def _header(layout, columns):
    if layout.header_e is None:  # >= 4.36: "New" is appended as " %-33s"
        return _head56([c for c in columns if c != "New"]) + (" %-33s" % "New" if "New" in columns else "")
    if "Default" in columns:
        text = layout.header_e % ("Configurations:", "Default", "Current", "Next Boot")
    else:
        text = layout.header_plain % ("Configurations:", "Next Boot")
    if "New" in columns:
        text += "       New"
    return text


def render(layout, mode, cx3=False, strip=False):
    """mlxconfig text for DEVICE/SPEC: ``mode`` is ``e`` (-e query), ``q`` (query) or ``set``."""
    out = ["", "Device #1:", "----------", ""]
    for label, key in (("Device type:", "device_type"), ("Name:", "name"), ("Description:", "description"),
                       ("Device:", "device")):
        if cx3 and key in ("name", "description"):
            continue
        out.append("%-*s%-*s" % (layout.label, label, layout.label, DEVICE[key]))
    out.append("")
    columns = {"e": ["Default", "Current", "Next Boot"], "q": ["Next Boot"], "set": ["Next Boot", "New"]}[mode]
    out.append(_header(layout, columns))
    starred = ro_seen = False
    for name, default, current, nxt, read_only in SPEC:
        read_only = read_only and layout.marker == "ro"
        modified = _modified(default, current, nxt, mode == "e")
        starred, ro_seen = starred or modified, ro_seen or read_only
        values = {"e": [default, current, nxt], "q": [nxt], "set": [nxt, "9"]}[mode]
        out.append(_row(layout, name, values, modified, read_only))
    if starred:
        out.append("The '*' shows parameters with next value different from default/current value.")
    if ro_seen:
        out += ["", "The 'RO' shows parameters which are for read only and cannot be changed"]
    if mode == "set":
        out += ["", " Apply new Configuration? (y/n) [n] : y", "Applying... Done!",
                "-I- Please reboot machine to load new configurations."]
    text = "\n".join(out) + "\n"
    return "\n".join(line.rstrip() for line in text.split("\n")) if strip else text


def expected(layout, mode, cx3=False):
    dev = {"device_index": 1, "params": {}, "errors": [], "warnings": [], "info": [], "applied": None,
           "support": {"default": True, "current": True}}
    dev.update(DEVICE)
    if cx3:
        dev["name"] = dev["description"] = None
    for name, default, current, nxt, read_only in SPEC:
        entry = {"next": str(nxt)}
        if mode == "e":
            entry.update(default=str(default), current=str(current),
                         modified=_modified(default, current, nxt, True))
        if mode == "set":
            entry["new"] = "9"
        if read_only and layout.marker == "ro":
            entry["read_only"] = True
        dev["params"][name] = entry
    if mode == "set":
        dev["applied"] = True
        dev["info"] = ["Please reboot machine to load new configurations."]
    return [dev]


@pytest.mark.parametrize("strip", [False, True], ids=["trailing-spaces", "stripped"])
@pytest.mark.parametrize("mode", ["e", "q", "set"])
@pytest.mark.parametrize("version", sorted(LAYOUTS))
def test_layouts(version, mode, strip):
    layout = LAYOUTS[version]
    text = render(layout, mode, strip=strip)
    if not strip:
        assert re.search(r"\S +\n", text)  # the printf padding is really there
    assert parse_mlxconfig(text) == expected(layout, mode)
    assert parse_mlxconfig(text.split("\n")) == expected(layout, mode)  # as stdout_lines


def test_layout_details_are_real():
    """Spot checks that the rendered layouts have the properties the parser must survive."""
    row = _row(LAYOUTS["4.25"], "INTERNAL_CPU_OFFLOAD_ENGINE", ["ENABLED(0)"] * 3, True, True)
    assert row.startswith("*RO     INTERNAL_CPU_OFFLOAD_ENGINE")
    overflow = _row(LAYOUTS["<=4.21"], "PHY_FEC_OVERRIDE_P1", ["DEVICE_DEFAULT(0)"] * 3)
    assert "DEVICE_DEFAULT(0) DEVICE_DEFAULT(0) DEVICE_DEFAULT(0) " in overflow
    assert _header(LAYOUTS["4.31-4.35"], ["Next Boot"]).index("Next Boot") + 9 == 66
    assert render(LAYOUTS["4.26-4.30"], "q").count("Device type:        ConnectX7           ") == 1


@pytest.mark.parametrize("version", ["<=4.21", "4.26-4.30"])
def test_connectx3_era_header(version):
    """Before ~4.14, 4th-gen devices printed no Name/Description lines."""
    layout = LAYOUTS[version]
    assert parse_mlxconfig(render(layout, "q", cx3=True)) == expected(layout, "q", cx3=True)


def _json_doc(modified_key=True):
    params = {}
    for name, default, current, nxt, read_only in SPEC:
        params[name] = {"default_value": default, "current_value": current, "next_value": nxt,
                        "read_only": read_only}
        if modified_key:
            params[name]["modified"] = _modified(default, current, nxt, True)
    doc = {"Device #1": dict(DEVICE, tlv_configuration=params)}
    return json.dumps(doc, indent="\t", sort_keys=True)  # as jsoncpp writes it


def test_json_equals_text():
    from_json = parse("mlxconfig_json", _json_doc())
    from_text = parse("mlxconfig", render(LAYOUTS["4.26-4.30"], "e"))
    assert from_json == from_text
    assert from_json[0]["params"]["NUM_OF_VFS"] == {"default": "8", "current": "8", "next": "16", "modified": True}
    assert list(from_json[0]["params"]) != [row[0] for row in SPEC]  # sorted keys, not query order
    assert parse_mlxconfig_json(json.loads(_json_doc())) == from_json  # an already loaded dict


def test_json_plain_query_and_errors():
    doc = {"Device #2": {"device_type": "ConnectX6DX", "tlv_configuration": {
        "NUM_OF_VFS": {"next_value": 16, "read_only": False}}}}
    assert parse("mstconfig_json", json.dumps(doc))[0]["params"] == {"NUM_OF_VFS": {"next": "16"}}
    assert parse("mstconfig_json", json.dumps(doc))[0]["device_index"] == 2
    with pytest.raises(ParseError, match=r"mlxconfig_json: not JSON.*line 2"):
        parse("mlxconfig_json", '{\n  "Device #1": oops\n}')
    with pytest.raises(ParseError, match="Device #N"):
        parse("mlxconfig_json", '{"devices": []}')
    with pytest.raises(ParseError, match="mlxconfig_json"):
        parse("mlxconfig_json", "Query output saved to /tmp/x.json successfully")


# ---------------------------------------------------------------- mlxconfig flows

def _device_block(rows, header="Configurations:                                          Next Boot       New"):
    return ("\nDevice #1:\n----------\n\nDevice type:        ConnectX7           \n"
            "Device:             05:00.0             \n\n" + header + "\n" + rows)


SET_ROW = "        SRIOV_EN                                    False(0)             True(1)"


def test_set_aborted_by_user():
    dev = only(parse_mlxconfig(_device_block(SET_ROW + "\n\n Apply new Configuration? (y/n) [n] : n\n"
                                             "-E- Aborted by user.\n")))
    assert dev["applied"] is None and dev["errors"] == ["Aborted by user."]
    assert dev["params"] == {"SRIOV_EN": {"next": "False(0)", "new": "True(1)"}}


def test_set_answer_not_echoed_and_failed():
    done = only(parse_mlxconfig(_device_block(SET_ROW + "\n\n Apply new Configuration? (y/n) [n] : Applying... Done!\n"
                                              "-I- Please power cycle machine to load new configurations.\n")))
    assert done["applied"] is True and done["info"] == ["Please power cycle machine to load new configurations."]
    failed = only(parse_mlxconfig(_device_block(SET_ROW + "\n\n Apply new Configuration? (y/n) [n] : y\n"
                                                "Applying... Failed!\n-E- Failed to set configuration: bad\n")))
    assert failed["applied"] is False and failed["errors"] == ["Failed to set configuration: bad"]


def test_reset_output():
    text = ("\n Reset configuration for device 0000:05:00.0? (y/n) [n] : y\nApplying... Done!\n"
            "-I- Please reboot machine to load new configurations.\n")
    dev = only(parse("mlxconfig", text))
    assert dev["device"] == "0000:05:00.0" and dev["applied"] is True and dev["params"] == {}
    assert dev["info"] == ["Please reboot machine to load new configurations."]


def test_errors_without_device_block():
    text = "-E- Failed to open the device\n"
    assert parse("mstconfig", text) == []
    assert parse_errors(text) == ["Failed to open the device"]
    mft = ("-E- No devices found, mst might be stopped. You may need to run 'mst start' to load MST modules. \n")
    assert parse("mlxconfig", mft) == []
    assert parse_errors(mft) == ["No devices found, mst might be stopped. You may need to run 'mst start' "
                                 "to load MST modules."]


def test_warning_before_device_and_no_support_message():
    text = ("-W- Force flag specified, the validity of the Parameters will not be checked !\n"
            + _device_block("        SRIOV_EN                                    True(1)\n",
                            "Configurations:                                          Next Boot")
            .replace("\n\nConfigurations", "\nDevice Firmware does not support reading default configurations"
                                           "\n\nConfigurations"))
    dev = only(parse("mlxconfig", text))
    assert dev["warnings"] == ["Force flag specified, the validity of the Parameters will not be checked !"]
    assert dev["support"] == {"default": False, "current": True}
    both = "Device Firmware does not support reading default and current configurations"
    assert only(parse("mlxconfig", _device_block("", "") + both))["support"] == {"default": False,
                                                                                 "current": False}


def test_two_devices_and_unknown_parameter_error():
    block = _device_block("        NUM_OF_VFS                                  8\n",
                          "Configurations:                                          Next Boot")
    text = block + block.replace("Device #1", "Device #2").replace("05:00.0", "05:00.1") + \
        "\nDevice #3:\n----------\n\n-E- Failed to find Param / TLV with name 'FOO' port 0 module -1\n"
    devs = parse("mlxconfig", text)
    assert [(d["device_index"], d["device"]) for d in devs] == [(1, "05:00.0"), (2, "05:00.1"), (3, None)]
    assert devs[2]["errors"] == ["Failed to find Param / TLV with name 'FOO' port 0 module -1"]


def test_usage_text_after_error_is_not_parameters():
    text = ("-E- Invalid Configuration argument FOO\n\n    NAME\n        mlxconfig\n    SYNOPSIS\n"
            "        mlxconfig [-d <device> ] [-y] <s[et] <PARAM=VAL> ...> | q[uery] | r[eset] \n")
    assert parse("mlxconfig", text) == []
    assert parse_errors(text) == ["Invalid Configuration argument FOO"]


def test_broken_row_in_the_middle_raises_with_line():
    text = _device_block("        NUM_OF_VFS                                  8\n"
                         "        SRIOV_EN\n"
                         "        LINK_TYPE_P1                                ETH(2)\n",
                         "Configurations:                                          Next Boot")
    with pytest.raises(ParseError) as err:
        parse("mstconfig", text)
    assert err.value.tool == "mstconfig" and err.value.line.strip() == "SRIOV_EN"
    assert "SRIOV_EN" in str(err.value) and "line %d" % err.value.lineno in str(err.value)


def test_progress_redraws_are_flattened():
    text = ("Device #1: Updating FW ...\nWriting Boot image component -   0%\b\b\b\b 10%\b\b\b\b 99%\r"
            "Writing Boot image component -   OK\nDone\n")
    dev = only(parse("mlxfwmanager", "Querying Mellanox devices firmware ...\n" + text))
    assert dev["update"]["stages"] == [{"stage": "Writing Boot image component", "status": "OK"}]


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


# ---------------------------------------------------------------- flint / mlxfwreset / mst synthetic

def test_flint_running_version_and_fs2():
    text = ("Image type:            FS4\nFW Version:            28.43.1014\nFW Version(Running):   28.39.1002\n"
            "FW Release Date:       7.11.2024\nPart Number:           MCX755106AS-HEA_Ax\n"
            "Description:           NVIDIA ConnectX-7 HHHL Adapter Card\nRom Info:              N/A\n"
            "Orig PSID:             MT_0000000834\nSecurity Attributes:   secure-fw, dev\n"
            "Life cycle:            GA SECURED\n")
    info = parse("flint", text)
    assert info["fw_version_running"] == "28.39.1002" and info["fw_version"] == "28.43.1014"
    assert info["description"] == "NVIDIA ConnectX-7 HHHL Adapter Card"
    assert info["rom_info"] == [] and info["orig_psid"] == "MT_0000000834"
    assert info["security_attributes"] == "secure-fw, dev" and info["life_cycle"] == "GA SECURED"
    fs2 = parse("flint", "Image type:      FS2\nFW Version:      2.42.5000\n"
                         "Description:     Node             Port1            Port2            Sys image\n"
                         "GUIDs:           e41d2d0300b0c5f0 e41d2d0300b0c5f1 e41d2d0300b0c5f2 e41d2d0300b0c5f3\n"
                         "PSID:            MT_1090111023\n")
    assert "description" not in fs2 and fs2["guids"].split()[3] == "e41d2d0300b0c5f3"


def _reset_row(level, desc, status, default=False):
    return "%d: %-62s-%-14s%s" % (level, desc, status, "(default)" if default else "")


def test_mlxfwreset_query_from_printf_format():
    text = "\n".join([
        "Reset-levels:",
        _reset_row(0, 'Driver, PCI link, network link will remain up ("live-Patch")', "Supported", True),
        _reset_row(1, 'Only ARM side will not remain up ("Immediate reset").', "Not Supported"),
        _reset_row(3, "Driver restart and PCI reset", "Supported"),
        _reset_row(4, "Warm Reboot", "Supported"),
        "",
        "Reset-types (relevant only for reset-levels 1,3,4):",
        _reset_row(0, "Full chip reset", "Supported", True),
        _reset_row(1, "Phy-less reset (keep network port active during reset)", "Not Supported"),
        "",
        "Reset-sync (relevant only for reset-level 3):",
        _reset_row(0, "Tool is the owner", "Supported", True),
        _reset_row(1, "Driver is the owner", "Not supported"),
        "",
    ])
    result = parse("mstfwreset", text)
    assert [(o["level"], o["supported"], o["default"]) for o in result["levels"]] == [
        (0, True, True), (1, False, False), (3, True, False), (4, True, False)]
    assert result["levels"][0]["description"] == 'Driver, PCI link, network link will remain up ("live-Patch")'
    assert result["types"][1] == {"level": 1, "description": "Phy-less reset (keep network port active during reset)",
                                  "supported": False, "default": False}
    assert result["sync"] == [{"level": 0, "description": "Tool is the owner", "supported": True, "default": True},
                              {"level": 1, "description": "Driver is the owner", "supported": False,
                               "default": False}]
    assert result["errors"] == []


def test_mlxfwreset_reset_failure():
    text = ("The reset level for device, 0000:05:00.0 is:\n\n3: Driver restart and PCI reset\n"
            "Continue with reset?[y/N] y\n-I- Sending Reset Command To Fw             -Done\n"
            "-I- Stopping Driver                         -Failed\n-E- Failed to stop the driver\n")
    result = parse("mlxfwreset_reset", text)
    assert result["level"] == 3 and result["device"] == "0000:05:00.0"
    assert result["ok"] is False and result["errors"] == ["Failed to stop the driver"]
    assert result["steps"][1] == {"step": "Stopping Driver", "status": "Failed"}


def test_mst_status_without_modules_and_verbose_na():
    plain = ("MST modules:\n------------\n    MST PCI module is not loaded\n"
             "    MST PCI configuration module is not loaded\n\nPCI Devices:\n------------\n\n"
             "        3b:00.0\n        3b:00.1\n")
    status = parse("mst_status", plain)
    assert status["modules"] == {"pci": False, "pciconf": False}
    assert [(d["mst"], d["pci"]) for d in status["devices"]] == [(None, "0000:3b:00.0"), (None, "0000:3b:00.1")]
    verbose = ("PCI devices:\n------------\nDEVICE_TYPE             MST                           PCI       RDMA"
               "            NET                       NUMA\n"
               "ConnectX7(rev:0)        /dev/mst/mt4129_pciconf0      37:00.0   mlx5_0          net-ens1np0"
               "               0\n\n"
               "NA                      NA                            37:00.2   mlx5_2                        "
               "            0\n\n")
    devs = parse("mst_status", verbose)["devices"]
    assert devs[0] == {"mst": "/dev/mst/mt4129_pciconf0", "pci": "0000:37:00.0", "device_type": "ConnectX7",
                       "rev": "0", "rdma": "mlx5_0", "net": ["ens1np0"], "numa": "0"}
    assert devs[1] == {"mst": None, "pci": "0000:37:00.2", "device_type": None, "rev": None, "rdma": "mlx5_2",
                       "net": [], "numa": "0"}


# ---------------------------------------------------------------- host tools synthetic

def test_ibdev2netdev_verbose():
    text = ("0000:04:00.0 mlx5_0 (MT4115 - MT1545X03221) CX414A - ConnectX-4 QSFP28 fw 12.14.2036 port 1 (DOWN  ) "
            "==> enp4s0f0 (Down)\n"
            "0000:37:00.0 mlx5_1 (MT4129 - MT_0000000834) NVIDIA ConnectX-7 HHHL Adapter Card fw 28.43.1014 port 1 "
            "(ACTIVE) ==> ens1np0 (Up)\n")
    rows = parse("ibdev2netdev", text)
    assert rows[0] == {"rdma": "mlx5_0", "port": 1, "netdev": "enp4s0f0", "state": "Down", "pci": "0000:04:00.0",
                       "hca_type": "MT4115", "board_id": "MT1545X03221", "description": "CX414A - ConnectX-4 QSFP28",
                       "fw_version": "12.14.2036", "port_state": "DOWN"}
    assert rows[1]["board_id"] == "MT_0000000834" and rows[1]["port_state"] == "ACTIVE"
    assert parse("ibdev2netdev", "") == []


def test_lspci_link_annotations_of_newer_lspci():
    text = ("0000:37:00.0 Ethernet controller [0200]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]\n"
            "\tSubsystem: Mellanox Technologies Device [15b3:0041]\n"
            "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n"
            "\t\tLnkSta:\tSpeed 16GT/s (downgraded), Width x16 (ok)\n"
            "\tKernel driver in use: mlx5_core\n"
            "0000:37:00.1 Ethernet controller [0200]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]\n"
            "\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)\n")
    first, second = parse("lspci", text)
    assert (first["vendor_id"], first["device_id"], first["class_id"]) == ("15b3", "1021", "0200")
    assert first["description"] == "Mellanox Technologies MT2910 Family [ConnectX-7]"
    assert first["subsystem"] == "Mellanox Technologies Device [15b3:0041]"
    assert first["lnkcap"] == {"speed": "32GT/s", "width": "x16"}
    assert first["lnksta"] == {"speed": "16GT/s", "width": "x16", "downgraded": True}
    assert second["lnksta"] == {"speed": "32GT/s", "width": "x16", "downgraded": False}
    assert first["vpd"] is None and first["driver"] == "mlx5_core"
    assert parse("lspci", "") == []


def test_ofed_info_doca_and_plain():
    assert parse("ofed_info", "OFED-internal-24.10-1.1.4:\n") == {
        "version": "24.10-1.1.4", "flavour": "doca-ofed", "raw": "OFED-internal-24.10-1.1.4"}
    assert parse("ofed_info", ["MLNX_OFED_LINUX-5.8-1.1.2.1 (OFED-5.8-1.1.2):", "", "clusterkit:"]) == {
        "version": "5.8-1.1.2.1", "flavour": "mlnx-ofed", "raw": "MLNX_OFED_LINUX-5.8-1.1.2.1"}


def test_mlnx_qos_ets_and_buffers():
    text = ("DCBX mode: OS controlled\nPriority trust state: dscp\ndscp2prio mapping:\n"
            "\tprio:3 dscp:31,30,29,28,27,26,25,24,\n\tprio:3 dscp:23,\ndefault priority:\n"
            "Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=262016\n"
            "Cable len: 7\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n"
            "\tenabled     0   0   0   1   0   0   0   0   \n\tbuffer      0   0   0   1   0   0   0   0   \n"
            "tc: 0 ratelimit: unlimited, tsa: ets, bw: 50%\n\t priority:  0\n\t priority:  1\n"
            "tc: 3 ratelimit: 25.0 Gbps, tsa: strict\n\t priority:  3\n")
    qos = parse("mlnx_qos", text)
    assert qos["dscp2prio"] == {24: 3, 25: 3, 26: 3, 27: 3, 28: 3, 29: 3, 30: 3, 31: 3, 23: 3}
    assert qos["buffer_sizes"] == [130944, 130944, 0, 0, 0, 0, 0, 0] and qos["max_buffer_size"] == 262016
    assert qos["pfc"]["buffer"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert qos["tcs"] == [{"tc": 0, "ratelimit": "unlimited", "tsa": "ets", "bw": "50%", "priorities": [0, 1]},
                          {"tc": 3, "ratelimit": "25.0 Gbps", "tsa": "strict", "bw": None, "priorities": [3]}]


# ---------------------------------------------------------------- registry and errors

GARBAGE = "The quick brown fox\njumps over: the lazy dog\n"


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_garbage_names_tool_and_line(tool):
    with pytest.raises(ParseError) as err:
        parse(tool, GARBAGE)
    assert err.value.tool == tool
    assert str(err.value).startswith(tool + ":")
    assert isinstance(err.value, ValueError)
    if not tool.endswith(("_json", "_xml")):
        assert "The quick brown fox" in str(err.value)


def test_unknown_tool():
    with pytest.raises(ParseError, match=r"^ibv_devinfo: unknown tool; known tools: .*mlxconfig"):
        parse("ibv_devinfo", "hca_id: mlx5_0")


def test_not_text():
    with pytest.raises(ParseError, match="expected text or a list of lines, got int"):
        parse("mlxconfig", 42)
    with pytest.raises(ParseError, match="list holding NoneType"):
        parse("lspci", ["00:00.0 Host bridge: x", None])


def test_bytes_and_crlf():
    text = capture("mst_status_cx4_1.txt").replace("\n", "\r\n").encode()
    assert parse("mst_status", text)["devices"][0]["pci"] == "0000:06:00.0"


def test_overlong_numbers_are_not_read_as_ints():
    """Python limits int() of long digit strings; such text is simply not recognised."""
    huge = "9" * 5000
    for tool, text in (("mlnx_qos", "Cable len: %s\n" % huge), ("mlxconfig", "Device #%s:\n" % huge),
                       ("ibdev2netdev", "mlx5_0 port %s ==> ib0 (Up)\n" % huge)):
        with pytest.raises(ParseError):
            parse(tool, text)


# ---------------------------------------------------------------- random text

def _all_capture_lines():
    found = []
    for name in sorted(CHECKS):
        found.extend(capture(name).split("\n"))
    return found


CAPTURE_LINES = _all_capture_lines()
random_text = st.one_of(
    st.text(),
    st.lists(st.one_of(st.sampled_from(CAPTURE_LINES), st.text(max_size=30)), max_size=40).map("\n".join),
    st.lists(st.sampled_from(CAPTURE_LINES), max_size=60).map("\n".join),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool=st.sampled_from(sorted(PARSERS)), text=random_text)
def test_random_text_raises_only_parse_error(tool, text):
    try:
        parse(tool, text)
    except ParseError:
        pass


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(sorted(CHECKS)), data=st.data())
def test_cut_and_shuffled_captures_raise_only_parse_error(name, data):
    lines = capture(name).split("\n")
    start = data.draw(st.integers(0, len(lines)))
    end = data.draw(st.integers(start, len(lines)))
    picked = data.draw(st.permutations(lines[start:end])) if data.draw(st.booleans()) else lines[start:end]
    for tool in PARSERS:
        try:
            parse(tool, picked)
        except ParseError:
            pass
