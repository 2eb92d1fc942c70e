"""mlxconfig / mstconfig (_parsers/mlxconfig.py): the real captures, and text built from the exact printf
formats in FORMAT_FACTS.md (one layout per mstflint tag range), the JSON form and the set/reset flows."""
import json
import re

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import (
    ParseError,
    parse,
    parse_errors,
    parse_mlxconfig,
    parse_mlxconfig_json,
)

from ._captures import CX7_DESC, CX7_DUAL_DESC, capture_test, checks, only, section

CHECKS, check = checks()


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


@check("mlxconfig_query_cx5_1.txt")
def _mlxconfig_query_cx5(text):
    dev = only(parse("mlxconfig", text))  # MFT 4.30.1 layout, trailing spaces stripped by the author
    assert dev["device_type"] == "ConnectX5" and dev["name"] == "MCX555A-ECA_Ax_Bx"
    assert dev["device"] == "/dev/mst/mt4119_pciconf0"
    assert len(dev["params"]) == 143
    assert dev["params"]["LINK_TYPE_P1"] == {"next": "IB(1)"}
    assert dev["params"]["NUM_OF_PLANES_P1"] == {"next": "0"}
    assert dev["params"]["LOG_MAX_QUEUE"] == {"next": "17"}
    assert dev["params"]["PCIE_CREDIT_TOKEN_TIMEOUT"] == {"next": "0"}
    assert dev["params"]["PCI_ATOMIC_MODE"] == {"next": "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)"}
    assert "MAX_ACC_OUT_READ" not in dev["params"]
    assert dev["errors"] == []


@check("mlxconfig_query_cx4lx_1.txt")
def _mlxconfig_query_cx4lx(text):
    dev = only(parse("mlxconfig", text))  # MFT 4.31 layout, the document's indent removed, trailing spaces stripped
    assert dev["device_type"] == "ConnectX4LX" and dev["name"] == "MCX4121A-ACA_Ax"
    assert len(dev["params"]) == 161
    assert dev["params"]["IP_VER"] == {"next": "IPv4(0)"}
    assert dev["params"]["NUM_OF_PLANES_P2"] == {"next": "0"}
    assert dev["params"]["EXP_ROM_UEFI_ARM_ENABLE"] == {"next": "False(0)"}
    assert "WOL_MAGIC_EN" not in dev["params"] and "LINK_TYPE_P1" not in dev["params"]
    assert dev["errors"] == []


@check("mstconfig_query_cx6dx_1.txt")
def _mstconfig_query_cx6dx(text):
    dev = only(parse("mstconfig", text))  # mstflint 4.26-4.30 layout
    assert dev["device_type"] == "ConnectX6DX" and dev["name"] == "MCX623432AN-ADA_Ax"
    assert len(dev["params"]) == 185 and dev["errors"] == []
    assert dev["params"]["ROCE_CC_PRIO_MASK_P2"] == {"next": "255"}
    assert dev["params"]["PCI_ATOMIC_MODE"] == {"next": "PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0)"}
    assert dev["params"]["SAFE_MODE_ENABLE"] == {"next": "True(1)"}
    assert "CRYPTO_POLICY" not in dev["params"] and "ROCE_CC_CNP_MODERATION_P1" not in dev["params"]


@check("mlxconfig_query_bf2_1.txt")
def _mlxconfig_query_bf2(text):
    dev = only(parse("mlxconfig", text))  # <=4.21 layout; a hidden _INTERNAL_CPU_MODEL row one column off
    assert dev["device_type"] == "BlueField2" and dev["name"] == "MBF2M516A-EEEO_Ax"
    assert dev["params"]["INTERNAL_CPU_MODEL"] == {"next": "EMBEDDED_CPU(1)"}
    assert dev["params"]["_INTERNAL_CPU_MODEL"] == {"next": "SEPARATED_HOST(0)"}
    assert dev["params"]["LINK_TYPE_P1"] == dev["params"]["LINK_TYPE_P2"] == {"next": "ETH(2)"}
    assert len(dev["params"]) == 20 and dev["errors"] == []


@check("mstconfig_query_bf3_excerpt_1.txt")
def _mstconfig_query_bf3_excerpt(text):
    dev = only(parse("mlxconfig", text))  # mstflint 4.25 layout, trailing spaces kept
    assert dev["device_type"] == "BlueField3" and dev["device"] == "0002:01:00.0"
    assert dev["params"]["CRYPTO_POLICY"] == {"next": "UNRESTRICTED(1)"}  # a plain row, no RO marker
    assert dev["params"]["AES_XTS_TWEAK_INC_64"] == {"next": "False(0)"}
    assert dev["params"]["ICM_CACHE_MODE"] == {"next": "DEVICE_DEFAULT(0)"}
    assert len(dev["params"]) == 18 and dev["errors"] == []


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


@check("rdma_link_ibstat_lspci_cx5_1.txt")
def _rdma_link_ibstat_lspci_cx5(text):
    dev = only(parse("mlxconfig", section(text, "mlxconfig -d 86:00.0 q | grep LINK_TYPE")))
    assert dev["params"] == {"LINK_TYPE_P1": {"next": "IB(1)"}}


@check("mlxfwmanager_query_and_mlxconfig_e_query_cx5_1.txt")
def _mlxfwmanager_and_mlxconfig_cx5(text):
    cfg = only(parse("mlxconfig", section(text, "Reboot the machine to load new configurations.")))
    assert (cfg["device_type"], cfg["name"], cfg["device"]) == ("ConnectX5", "MCX515A-CCA_Ax_Bx",
                                                                "/dev/mst/mt4119_pciconf0")
    assert cfg["params"]["ADVANCED_PCI_SETTINGS"] == {"default": "False(0)", "current": "True(1)",
                                                      "next": "True(1)", "modified": True}
    assert cfg["params"]["MEMIC_SIZE_LIMIT"]["next"] == "_256KB(1)"
    assert len(cfg["params"]) == 5  # "..." rows elided by the author


test_capture = capture_test(CHECKS)


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
