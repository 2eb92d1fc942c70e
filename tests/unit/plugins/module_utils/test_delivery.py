"""Delivery check core: one table-driven case per check, the asset list parser, the report texts,
and end to end on the simulator (sim host with faults -> the mlx_info core -> findings).

Values come from real captures where there are some: MBF2M516A-EEEOT / MT2050X00614 / Physical
Slot 7-1 (lspci_vv_vpd_bf2_1.txt), MCX416A-CCAT / MT1838X04950 trained x8 under x16
(lspci_vvvvv_vpd_cx4_1.txt), the Dell OEM PSID DEL2420110034 whose NVIDIA image is
MT_2420110034 (mstflint_burn_psid_mismatch_cx4lx_1.txt), and the example matrix of
inventory/example-1250 (MCX75310AAS-NEAT = MT_0000000838, MCX755106AS-HEAT = MT_0000000834).
"""
import copy
import csv
import io
import json
import re

import pytest
import yaml

from _paths import REAL, REPO
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _info as info
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _delivery as delivery

EXAMPLE = yaml.safe_load((REPO / "inventory/example-1250/group_vars/all/matrix.yml").read_text())["gpufabric_matrix"]
CX7, CX7_PN = "MT_0000000838", "MCX75310AAS-NEAT"
CX7_FW = EXAMPLE["firmware"][CX7]["version"]


def _matrix():
    """The example matrix plus a Dell OEM ConnectX-4 Lx entry (PSID of the real mstflint capture;
    0R887V stands for a Dell part number) and the BlueField-2 of the lspci capture."""
    matrix = copy.deepcopy(EXAMPLE)
    matrix["firmware"]["DEL2420110034"] = {
        "version": "14.32.1900", "image": "fw-ConnectX4Lx-rel-14_32_1900-0R887V.bin",
        "sha256": "1b4f0e9851971998e732078544c96b36c3d01cedf7caa332359d6f1d83567014",
        "part_numbers": ["0R887V"], "shipped_min": "14.20.1010"}
    matrix["firmware"]["MT_0000000540"] = {
        "version": "24.40.1000", "image": "fw-BlueField-2-rel-24_40_1000-MBF2M516A-EEEO_Ax.bin",
        "sha256": "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752",
        "part_numbers": ["MBF2M516A-EEEOT"]}
    matrix["compatibility"]["firmware_drivers"]["14.32.1900"] = ["24.10-2.1.8.0"]
    matrix["compatibility"]["firmware_drivers"]["24.40.1000"] = ["24.10-2.1.8.0"]
    return matrix


MATRIX = _matrix()


def cx7(address, serial, slot=None, psid=CX7, part=CX7_PN, fw="28.42.1000", pcie=None, **extra):
    dev = {"address": address, "card": address.rsplit(".", 1)[0], "function": int(address[-1]), "psid": psid,
           "part_number": part, "serial_number": serial, "fw_version": fw, "fw_running": fw, "physical_slot": slot,
           "pcie": pcie or {"lnkcap": {"speed": "32GT/s", "width": 16}, "lnksta": {"speed": "32GT/s", "width": 16},
                            "degraded": False}}
    dev.update(extra)
    return dev


def only(found, check):
    """The findings of one check (asserting there is at least one)."""
    hits = [f for f in found if f["check"] == check]
    assert hits, "no %s in %s" % (check, [(f["check"], f["message"]) for f in found])
    return hits


def checks(found):
    return sorted(f["check"] for f in found)


def assets_csv(*rows, header="host,slot,part_number,serial"):
    return "\n".join([header] + [",".join(r) for r in rows]) + "\n"


GOOD_HOST = [cx7("0000:18:00.0", "MT2248X00601", "1"), cx7("0000:40:00.0", "MT2248X00602", "2")]
GOOD_ASSETS = assets_csv(("srv-r01-01", "0000:18:00.0", CX7_PN, "MT2248X00601"),
                         ("srv-r01-01", "2", CX7_PN, "MT2248X00602"))


def test_the_test_matrix_is_consistent():
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._matrix import matrix_problems
    assert matrix_problems(MATRIX) == []


def test_a_good_delivery_has_no_finding():
    assert delivery.findings({"srv-r01-01": GOOD_HOST}, GOOD_ASSETS, MATRIX) == []
    # no asset list: only the matrix, VPD and PCIe checks
    assert delivery.findings({"srv-r01-01": GOOD_HOST}, None, MATRIX) == []


# ---------------------------------------------------------------- one case per check

def _case(devices, assets=GOOD_ASSETS, host="srv-r01-01", **kwargs):
    return delivery.findings({host: devices}, assets, MATRIX, **kwargs)


CASES = [
    # (check, severity, devices of srv-r01-01, asset list or "good", words the message must hold)
    ("missing_card", "error",
     [GOOD_HOST[0]], "good",
     ["srv-r01-01 slot 2: no card in this slot", "line 3", "expects MCX75310AAS-NEAT serial MT2248X00602"]),
    ("unexpected_card", "error",
     GOOD_HOST + [cx7("0000:4f:00.0", "MT2248X00603", "3")], "good",
     ["srv-r01-01 slot 3 (0000:4f:00.0)", "MCX75310AAS-NEAT serial MT2248X00603 is not in the asset list"]),
    ("slot_mismatch", "error",
     [GOOD_HOST[0], cx7("0000:4f:00.0", "MT2248X00602", "3")], "good",
     ["srv-r01-01 slot 3 (0000:4f:00.0)", "serial MT2248X00602 is expected in slot 2", "but is in slot 3"]),
    ("part_number_mismatch", "error",
     [GOOD_HOST[0], cx7("0000:40:00.0", "MT2248X00602", "2", part="MCX755106AS-HEAT", psid="MT_0000000834")], "good",
     ["srv-r01-01 slot 2 (0000:40:00.0)", "part number MCX755106AS-HEAT", "expects MCX75310AAS-NEAT"]),
    ("serial_mismatch", "error",
     [GOOD_HOST[0], cx7("0000:40:00.0", "MT2250X09999", "2")], "good",
     ["srv-r01-01 slot 2 (0000:40:00.0)", "serial number MT2250X09999", "expects MT2248X00602"]),
    ("part_number_missing", "error",
     [GOOD_HOST[0], cx7("0000:40:00.0", "MT2248X00602", "2", part=None)], "good",
     ["srv-r01-01 slot 2 (0000:40:00.0)", "no part number in its VPD", "expected MCX75310AAS-NEAT"]),
    ("psid_unread", "error",
     [GOOD_HOST[0], cx7("0000:40:00.0", "MT2248X00602", "2", psid=None, fw=None,
                        errors=["flint -d 0000:40:00.0 q failed (rc 1): -E- Cannot open Device"])], "good",
     ["srv-r01-01 slot 2 (0000:40:00.0)", "could not be read", "Cannot open Device"]),
    ("unknown_psid", "error",
     [GOOD_HOST[0], cx7("0000:40:00.0", "MT2248X00602", "2", psid="MT_0000000999")], "good",
     ["srv-r01-01 slot 2 (0000:40:00.0)", "PSID MT_0000000999 is not in the matrix",
      "for part number MCX75310AAS-NEAT the matrix expects PSID MT_0000000838"]),
    ("oem_psid_on_retail_part", "error",
     [GOOD_HOST[0], cx7("0000:40:00.0", "MT2248X00602", "2", psid="DEL2420110034")], "good",
     ["srv-r01-01 slot 2 (0000:40:00.0)", "OEM PSID DEL2420110034 (vendor DEL (Dell))",
      "NVIDIA retail part number MCX75310AAS-NEAT"]),
    ("retail_psid_on_oem_part", "error",
     [cx7("0000:3b:00.0", "MT1752X01234", "4", part="0R887V", psid="MT_2420110034", fw="14.32.1900")], None,
     ["srv-r01-01 slot 4 (0000:3b:00.0)", "NVIDIA PSID MT_2420110034 on part number 0R887V",
      "not an NVIDIA part number"]),
    ("psid_part_mismatch", "error",
     [GOOD_HOST[0], cx7("0000:40:00.0", "MT2248X00602", "2", psid="MT_0000000834")], "good",
     ["srv-r01-01 slot 2 (0000:40:00.0)", "PSID MT_0000000834 is for part number MCX755106AS-HEAT",
      "but the card is MCX75310AAS-NEAT", "a MCX75310AAS-NEAT carries PSID MT_0000000838"]),
    ("serial_missing", "error",
     [GOOD_HOST[0], cx7("0000:40:00.0", None, "2")], "good",
     ["srv-r01-01 slot 2 (0000:40:00.0)", "no serial number in its VPD ([SN])", "expected MT2248X00602"]),
    ("serial_malformed", "warning",
     [cx7("0000:18:00.0", "MT2248X0060", "1")], None,
     ["srv-r01-01 slot 1 (0000:18:00.0)", '"MT2248X0060" is not an NVIDIA serial number', "MT2050X00614"]),
    ("serial_duplicate", "error",
     [GOOD_HOST[0], cx7("0000:40:00.0", "MT2248X00601", "2")], None,
     ["srv-r01-01 slot 1 (0000:18:00.0): serial number MT2248X00601 is on 2 cards; also on srv-r01-01 slot 2 "
      "(0000:40:00.0)"]),
    ("firmware_older_than_shipped", "error",
     [cx7("0000:18:00.0", "MT2248X00601", "1", fw="28.36.1010")], None,
     ["srv-r01-01 slot 1 (0000:18:00.0)", "firmware 28.36.1010 is older than anything MCX75310AAS-NEAT shipped with",
      "gpufabric_matrix.firmware.MT_0000000838.shipped_min: 28.39.1002"]),
    ("firmware_other_family", "error",
     [cx7("0000:18:00.0", "MT2248X00601", "1", fw="22.41.1000")], None,
     ["srv-r01-01 slot 1 (0000:18:00.0)", "firmware 22.41.1000 is not MCX75310AAS-NEAT firmware", "major version 28"]),
    ("pcie_width", "error",
     [cx7("0000:18:00.0", "MT2248X00601", "1",
          pcie={"lnkcap": {"speed": "32GT/s", "width": 16}, "lnksta": {"speed": "32GT/s", "width": 8}})], None,
     ["srv-r01-01 slot 1 (0000:18:00.0)", "PCIe link x8, the card can run x16", "LnkCap 32GT/s x16, LnkSta 32GT/s x8"]),
    ("pcie_speed", "warning",
     [cx7("0000:18:00.0", "MT2248X00601", "1",
          pcie={"lnkcap": {"speed": "32GT/s", "width": "x16"}, "lnksta": {"speed": "16GT/s", "width": "x16"}})], None,
     ["srv-r01-01 slot 1 (0000:18:00.0)", "PCIe link 16GT/s, the card can run 32GT/s"]),
    ("pcie_unread", "warning",
     [cx7("0000:18:00.0", "MT2248X00601", "1", pcie={"lnkcap": None, "lnksta": None, "degraded": None})], None,
     ["srv-r01-01 slot 1 (0000:18:00.0)", "PCIe link could not be read"]),
]


# What a case finds besides its check: the Dell PSID is in the matrix, for the Dell part number.
ALSO = {"oem_psid_on_retail_part": ["psid_part_mismatch"],
        # MT_2420110034 (the NVIDIA image of the Dell card) is not pinned
        "retail_psid_on_oem_part": ["unknown_psid"]}


@pytest.mark.parametrize("check, severity, devices, assets, words", CASES, ids=[c[0] for c in CASES])
def test_each_check(check, severity, devices, assets, words):
    found = _case(devices, GOOD_ASSETS if assets == "good" else assets)
    hits = only(found, check)
    hit = hits[0]
    assert hit["severity"] == severity
    assert hit["host"] == "srv-r01-01"
    for word in words:
        assert word in hit["message"], (word, hit["message"])
    assert set(hit) == set(delivery.FINDING_KEYS)
    assert hit["expected"] and hit["found"]
    # every case finds only what it is about (one finding per card it is about)
    assert checks(found) == sorted([check] * len(hits) + ALSO.get(check, [])), checks(found)


def test_every_check_has_a_case():
    assert sorted({c[0] for c in CASES} | {"host_unread"}) == sorted(delivery.CHECKS)


def test_host_unread_with_mlx_info_words_and_its_assets_are_not_missing():
    registered = {"failed": True, "msg": "lspci: command not found"}
    found = delivery.findings({"srv-r01-01": registered, "srv-r01-02": None}, GOOD_ASSETS, MATRIX)
    assert checks(found) == ["host_unread", "host_unread"]
    assert "srv-r01-01: its NVIDIA devices could not be read (mlx_info failed: lspci: command not found)" in \
        found[0]["message"]
    assert "unreachable" in found[1]["message"]
    # the whole registered mlx_info result works as well as its devices list
    assert delivery.findings({"srv-r01-01": {"devices": GOOD_HOST, "changed": False}}, GOOD_ASSETS, MATRIX) == []


def test_the_matrix_approves_an_oem_card_explicitly():
    dell = cx7("0000:3b:00.0", "MT1752X01234", "4", part="0R887V", psid="DEL2420110034", fw="14.32.1900")
    assert _case([dell], None) == []
    # the same Dell card cross-flashed to the NVIDIA image of the capture
    assert checks(_case([dict(dell, psid="MT_2420110034")], None)) == ["retail_psid_on_oem_part", "unknown_psid"]
    # OEM cards are not held to the NVIDIA serial format, only to "not a placeholder"
    assert _case([dict(dell, serial_number="CN0R887V7590")], None) == []
    assert checks(_case([dict(dell, serial_number="N/A")], None)) == ["serial_malformed"]
    # firmware older than the Dell part shipped with (shipped_min 14.20.1010): 14.14.2320 is the capture's
    assert checks(_case([dict(dell, fw_version="14.14.2320", fw_running="14.14.2320")], None)) == [
        "firmware_older_than_shipped"]


@pytest.mark.parametrize("serial, part, problem", [
    ("MT2050X00614", "MBF2M516A-EEEOT", None),           # lspci_vv_vpd_bf2_1.txt
    ("MT1838X04950", "MCX416A-CCAT", None),              # lspci_vvvvv_vpd_cx4_1.txt
    ("MT2248X00601", "900-9D3B6-00CV-AA0", None),
    ("MT2254X00614", "MCX75310AAS-NEAT", "week 54"),
    ("MT2200X00614", "MCX75310AAS-NEAT", "week 00"),
    ("mt2050x00614", "MCX75310AAS-NEAT", "not an NVIDIA serial"),
    ("MT2050X0061", "MCX75310AAS-NEAT", "not an NVIDIA serial"),
    ("2050X00614", "MCX75310AAS-NEAT", "not an NVIDIA serial"),
    ("MT2050X00614A", "MCX75310AAS-NEAT", "not an NVIDIA serial"),
    ("000000000000", "MCX75310AAS-NEAT", "placeholder"),
    ("To be filled by O.E.M.", "0R887V", "placeholder"),
    ("N/A", "MCX75310AAS-NEAT", "placeholder"),
    ("CN0R887V7590", "0R887V", None),                     # OEM: its vendor's format
    ("CN0R887V 7590", "0R887V", "spaces"),
])
def test_serial_rule(serial, part, problem):
    found = delivery.serial_problem(serial, part)
    if problem is None:
        assert found is None
    else:
        assert problem in found


def test_duplicate_serial_across_hosts_names_every_place():
    fleet = {"srv-r01-01": [cx7("0000:18:00.0", "MT2232X00000", "1")],
             "srv-r02-01": [cx7("0000:18:00.0", "MT2232X00000", "1")],
             "srv-r02-02": [cx7("0000:40:00.0", "mt2232x00000", "2")]}
    found = only(delivery.findings(fleet, None, MATRIX), "serial_duplicate")
    assert [f["host"] for f in found] == ["srv-r01-01", "srv-r02-01", "srv-r02-02"]
    assert "is on 3 cards; also on srv-r02-01 slot 1 (0000:18:00.0), srv-r02-02 slot 2 (0000:40:00.0)" in \
        found[0]["message"]


def test_swapped_cards_between_hosts_point_at_each_other():
    fleet = {"srv-r01-01": [cx7("0000:18:00.0", "MT2248X00777", "1")],
             "srv-r01-02": [cx7("0000:18:00.0", "MT2248X00601", "1")]}
    assets = assets_csv(("srv-r01-01", "1", CX7_PN, "MT2248X00601"), ("srv-r01-02", "1", CX7_PN, "MT2248X00777"))
    found = delivery.findings(fleet, assets, MATRIX)
    assert checks(found) == ["serial_mismatch", "serial_mismatch"]
    assert "srv-r01-01 slot 1 (0000:18:00.0): serial number MT2248X00777, the asset list (line 2) expects " \
           "MT2248X00601" == found[0]["message"]
    # a card listed for one host found on another
    fleet = {"srv-r01-01": [], "srv-r01-02": [cx7("0000:18:00.0", "MT2248X00777", "1"),
                                              cx7("0000:40:00.0", "MT2248X00601", "2")]}
    found = delivery.findings(fleet, assets_csv(("srv-r01-01", "1", CX7_PN, "MT2248X00601"),
                                                ("srv-r01-02", "1", CX7_PN, "MT2248X00777")), MATRIX)
    missing, unexpected = only(found, "missing_card")[0], only(found, "unexpected_card")[0]
    assert "that serial is on srv-r01-02 slot 2 (0000:40:00.0)" in missing["message"]
    assert "the asset list has that serial on srv-r01-01 slot 1 (line 2)" in unexpected["message"]


def test_slots_match_by_pci_address_in_every_spelling():
    for slot in ("0000:18:00.0", "18:00.0", "18:00", "0000:18:00", "0000:18:00.1"):
        assert _case([GOOD_HOST[0]], assets_csv(("srv-r01-01", slot, CX7_PN, "MT2248X00601"))) == [], slot


def test_one_finding_per_card_not_per_function():
    port1 = cx7("0000:29:00.0", "MT2251X01311", "9", psid="MT_0000000834", part="MCX755106AS-HEAT")
    port2 = dict(port1, address="0000:29:00.1", function=1)
    found = _case([port2, port1], None, severities=None)
    assert found == []
    found = _case([dict(port2, serial_number=None), dict(port1, serial_number=None)], None)
    assert [(f["check"], f["address"]) for f in found] == [("serial_missing", "0000:29:00.0")]


def test_assets_of_hosts_not_in_the_run_are_ignored_and_counted():
    assets = GOOD_ASSETS + "srv-r09-01,1,%s,MT2248X00901\n" % CX7_PN
    found = delivery.findings({"srv-r01-01": GOOD_HOST}, assets, MATRIX)
    assert found == []
    numbers = delivery.counts(found, {"srv-r01-01": GOOD_HOST}, assets)
    assert (numbers["asset_rows"], numbers["asset_rows_not_in_run"], numbers["cards"]) == (3, 1, 2)


def test_severities_raise_lower_and_ignore():
    slow = cx7("0000:18:00.0", "MT2248X00601", "1",
               pcie={"lnkcap": {"speed": "32GT/s", "width": 16}, "lnksta": {"speed": "16GT/s", "width": 16}})
    assert [f["severity"] for f in _case([slow], None, severities={"pcie_speed": "error"})] == ["error"]
    assert _case([slow], None, severities={"pcie_speed": "ignore"}) == []
    with pytest.raises(InvalidValue) as err:
        _case([slow], None, severities={"pcie_sped": "error", "pcie_width": "fatal"})
    assert '"pcie_sped" is not a check (allowed: host_unread, missing_card' in err.value.msg
    assert "severities.pcie_width must be error, warning or ignore, not the string \"fatal\"" in err.value.msg


def test_a_bad_matrix_is_refused_naming_the_entry():
    bad = copy.deepcopy(MATRIX)
    bad["firmware"][CX7]["shipped_min"] = "28_39_1002"
    with pytest.raises(MlnxError) as err:
        delivery.findings({"srv-r01-01": GOOD_HOST}, None, bad)
    assert "gpufabric_matrix.firmware.MT_0000000838.shipped_min" in err.value.msg


def test_bad_devices_are_refused_naming_the_host():
    with pytest.raises(InvalidValue) as err:
        delivery.findings({"srv-r01-01": [{"psid": CX7}]}, None, MATRIX)
    assert err.value.msg.startswith("srv-r01-01: devices[0] is not a device of gpufabric.mlnx.mlx_info")
    with pytest.raises(InvalidValue):
        delivery.findings([GOOD_HOST], None, MATRIX)
    # an address that is no PCI function, and one card listed twice (it was kept once, silently)
    for devices, words in (([dict(GOOD_HOST[0], address="18:00")], "devices[0].address '18:00' is not a PCI address"),
                           (GOOD_HOST + [dict(GOOD_HOST[0])], "is listed twice (devices[0] too)")):
        with pytest.raises(InvalidValue) as err:
            delivery.findings({"srv-r01-01": devices}, None, MATRIX)
        assert err.value.msg.startswith("srv-r01-01: devices[") and words in err.value.msg, err.value.msg


# ---------------------------------------------------------------- the asset list

def test_asset_list_parsing():
    text = ("\ufeff# delivered by the integrator, PO 4711\n"
            "Hostname, PCI , PN, Serial Number, rail\n"
            "\n"
            "srv-r01-01, 18:00.0 , MCX75310AAS-NEAT, MT2248X00601, 0\n"
            "srv-r01-01,7-1,MBF2M516A-EEEOT,MT2050X00614,\n")
    rows = delivery.parse_assets(text)
    assert [(r["line"], r["host"], r["slot"], r["slot_key"], r["serial"]) for r in rows] == [
        (4, "srv-r01-01", "18:00.0", ("pci", "0000:18:00"), "MT2248X00601"),
        (5, "srv-r01-01", "7-1", ("slot", "7-1"), "MT2050X00614")]
    # rows as community.general.read_csv returns them
    rows = delivery.parse_assets([{"host": "h", "slot": "1", "part_number": CX7_PN, "serial": "MT2248X00601"}])
    assert rows[0]["slot_key"] == ("slot", "1")


def test_a_bad_asset_list_names_every_bad_line():
    text = assets_csv(("srv-r01-01", "1", CX7_PN, "MT2248X00601"),
                      ("srv-r01-01", "", CX7_PN, ""),
                      ("srv-r01-01", "0000:18:00.0", CX7_PN, "MT2248X00602"),
                      ("srv-r01-01", "18:00.0", CX7_PN, "MT2248X00603"),
                      ("srv-r01-02", "1", CX7_PN, "mt2248x00601"),
                      ("srv-r01-02", "2", CX7_PN, "MT2248X00604", "extra"))
    with pytest.raises(InvalidValue) as err:
        delivery.findings({"srv-r01-01": GOOD_HOST}, text, MATRIX)
    msg = err.value.msg
    assert msg.startswith("the asset list has 4 bad rows: ")
    assert "assets line 3: slot, serial are empty" in msg
    assert "assets line 5: srv-r01-01 slot 18:00.0 is also on assets line 4" in msg
    assert "assets line 6: serial mt2248x00601 is also on assets line 2" in msg
    assert "assets line 7 has more fields than the header (extra)" in msg


@pytest.mark.parametrize("assets, words", [
    ("host,slot,serial\nh,1,MT2248X00601\n", "lacks the column part_number (its columns: host, slot, serial"),
    ("# only a comment\n\n", "the asset list is empty"),
    (42, "must be the asset list: CSV text"),
    ([["h", "1"]], "row 1 must be a mapping"),
])
def test_an_unusable_asset_list_is_refused(assets, words):
    with pytest.raises(InvalidValue) as err:
        delivery.parse_assets(assets)
    assert words in err.value.msg


def test_the_example_asset_list_parses():
    text = (REPO / "inventory/example-1250-files/assets.csv").read_text()
    rows = delivery.parse_assets(text, source="assets.csv")
    assert len(rows) == 10 and {r["part_number"] for r in rows} == {CX7_PN, "MCX755106AS-HEAT"}


# ---------------------------------------------------------------- real captures through the mlx_info core

def _capture(name, start=None, stop=None):
    lines = (REAL / name).read_text().splitlines()[2:]
    if start is not None:
        lines = lines[next(i for i, line in enumerate(lines) if start in line):]
    if stop is not None:
        lines = lines[:next(i for i, line in enumerate(lines) if stop in line)]
    lines = [line for line in lines if not line.startswith(("```", "$ ", "# "))]
    text = "\n".join(lines) + "\n"
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return "\n".join(line[indent:] for line in text.splitlines()) + "\n"


def _devices_from_lspci(text, psid, fw):
    lspci = parse("lspci", text)
    for dev in lspci:
        dev["address"] = "0000:" + dev["address"] if dev["address"].count(":") == 1 else dev["address"]
    card = lspci[0]["address"].rsplit(".", 1)[0]
    flint = {card: {"psid": psid, "fw_version": fw}}
    return info.assemble(lspci, {}, flint, {}, ({}, {}, {}, {}))


def test_real_bluefield2_capture():
    devices = _devices_from_lspci(_capture("lspci_vv_vpd_bf2_1.txt", stop="---- (second fixture"),
                                  "MT_0000000540", "24.40.1000")
    assets = assets_csv(("dpu-01", "7-1", "MBF2M516A-EEEOT", "MT2050X00614"))
    found = delivery.findings({"dpu-01": devices}, assets, MATRIX)
    # the capture has no LnkCap/LnkSta lines: the only thing to say
    assert [(f["check"], f["severity"]) for f in found] == [("pcie_unread", "warning")]
    assert found[0]["message"].startswith("dpu-01 slot 7-1 (0000:e2:00.0): the PCIe link could not be read")
    # the same card under an OEM PSID, listed with another serial
    devices = _devices_from_lspci(_capture("lspci_vv_vpd_bf2_1.txt", stop="---- (second fixture"),
                                  "DEL2420110034", "24.40.1000")
    found = delivery.findings({"dpu-01": devices},
                              assets_csv(("dpu-01", "7-1", "MBF2M516A-EEEOT", "MT2050X00615")), MATRIX,
                              severities={"pcie_unread": "ignore"})
    assert checks(found) == ["oem_psid_on_retail_part", "psid_part_mismatch", "serial_mismatch"]


def test_real_connectx4_capture_trained_x8_under_x16():
    devices = _devices_from_lspci(_capture("lspci_vvvvv_vpd_cx4_1.txt", start="81:00.0 Ethernet", stop="```"),
                                  "MT_2420110034", "14.32.1900")
    found = delivery.findings({"kube01": devices}, None, MATRIX)
    assert checks(found) == ["pcie_width", "unknown_psid"]
    width = only(found, "pcie_width")[0]
    assert width["address"] == "0000:81:00.0" and width["serial"] == "MT1838X04950"
    assert "PCIe link x8, the card can run x16 (LnkCap 8GT/s x16, LnkSta 8GT/s x8)" in width["message"]


# ---------------------------------------------------------------- the report

def _report_case():
    fleet = {"srv-r01-01": [GOOD_HOST[0], cx7("0000:40:00.0", "MT2248X00602", "2", psid="DEL2420110034"),
                            cx7("0000:4f:00.0", "MT2248X00603", "3",
                                pcie={"lnkcap": {"speed": "32GT/s", "width": 16},
                                      "lnksta": {"speed": "16GT/s", "width": 16}})],
             "srv-r01-02": None}
    found = delivery.findings(fleet, GOOD_ASSETS, MATRIX)
    return fleet, found, delivery.report(found, fleet, GOOD_ASSETS, matrix_name="2026.11-a",
                                         generated="2026-11-03T10:15:00Z", source="inventory/files/assets.csv")


def test_report_markdown_is_for_people():
    _fleet, found, out = _report_case()
    md = out["markdown"]
    assert out["summary"] == ("delivery check FAILED: 4 errors, 1 warning on 2 of 2 hosts (3 cards on the 1 of 2 "
                              "hosts read; asset list of 2 cards; matrix 2026.11-a)")
    assert md.startswith("# NIC delivery check - 2026-11-03T10:15:00Z\n\n**delivery check FAILED: 4 errors")
    assert "- asset list: inventory/files/assets.csv" in md
    errors = md.split("## Errors (4)\n\n", 1)[1].split("\n\n## Warnings")[0].splitlines()
    assert errors[0] == "| host | slot | PCI | check | expected | found | what is wrong |"
    assert len(errors) == 2 + 4
    assert ("| srv-r01-01 | 2 | 0000:40:00.0 | oem_psid_on_retail_part | an MT_ PSID | DEL2420110034 | OEM PSID "
            "DEL2420110034 (vendor DEL (Dell)) on NVIDIA retail part number") in md
    assert "| srv-r01-02 |  |  | host_unread |" in md
    warnings = md.split("## Warnings (1)\n\n", 1)[1].splitlines()
    assert warnings[2].startswith("| srv-r01-01 | 3 | 0000:4f:00.0 | pcie_speed | 32GT/s x16 | 16GT/s x16 | PCIe link")
    # a clean run says so
    clean = delivery.report([], {"srv-r01-01": GOOD_HOST}, GOOD_ASSETS, matrix_name="2026.11-a")
    assert clean["summary"].startswith("delivery check PASSED: no error, 0 warnings (2 cards on 1 host; ")
    assert "## Errors (0)\n\nNone.\n\n## Warnings (0)\n\nNone.\n" in clean["markdown"]


def test_report_csv_and_json_carry_every_finding():
    _fleet, found, out = _report_case()
    rows = list(csv.DictReader(io.StringIO(out["csv"])))
    assert len(rows) == len(found) == 5
    assert list(rows[0]) == list(delivery.FINDING_KEYS)
    oem = next(r for r in rows if r["check"] == "oem_psid_on_retail_part")
    assert (oem["severity"], oem["host"], oem["slot"], oem["address"], oem["psid"], oem["serial"]) == (
        "error", "srv-r01-01", "2", "0000:40:00.0", "DEL2420110034", "MT2248X00602")
    doc = json.loads(out["json"])
    assert doc["result"] == "failed" and doc["matrix"] == "2026.11-a"
    assert doc["generated"] == "2026-11-03T10:15:00Z" and doc["assets"] == "inventory/files/assets.csv"
    assert doc["counts"]["errors"] == 4 and doc["counts"]["warnings"] == 1
    expected = {"host_unread": 1, "unexpected_card": 1, "oem_psid_on_retail_part": 1, "psid_part_mismatch": 1,
                "pcie_speed": 1}
    assert doc["counts"]["by_check"] == expected
    assert doc["findings"] == out["findings"] == [{k: f[k] for k in delivery.FINDING_KEYS} for f in found]


# ---------------------------------------------------------------- end to end on the simulator

def _read(host):
    return info.gather(Runner("auto", timeout=120))["devices"]


def test_simulator_counterfeit_looking_vpd(sim_host):
    """dgx-h100 with a duplicated serial, an OEM PSID, a card without serial and a degraded link:
    the mlx_info core reads the simulated tools, the delivery check names each."""
    host = sim_host("dgx-h100", hostname="srv-r01-01")
    host.mlxsim("fault", "add", "vpd_duplicate_serial", "--device", "0000:40:00.0", "serial=MT2232X00000")
    host.mlxsim("fault", "add", "vpd_duplicate_serial", "--device", "0000:4f:00.0", "serial=MT2232X00000")
    host.mlxsim("fault", "add", "oem_psid", "--device", "0000:5e:00.0", "psid=DEL0000000027")
    host.mlxsim("fault", "add", "vpd_missing_serial", "--device", "0000:9a:00.0")
    host.mlxsim("fault", "add", "pcie_degraded", "--device", "0000:c0:00.0", "speed=16GT/s", "width=8")
    devices = _read(host)
    found = delivery.findings({"srv-r01-01": devices}, None, MATRIX)
    got = {(f["check"], f["address"]) for f in found}
    assert got == {
        ("serial_duplicate", "0000:40:00.0"), ("serial_duplicate", "0000:4f:00.0"),
        ("unknown_psid", "0000:5e:00.0"), ("oem_psid_on_retail_part", "0000:5e:00.0"),
        ("serial_missing", "0000:9a:00.0"),
        ("pcie_width", "0000:c0:00.0"), ("pcie_speed", "0000:c0:00.0"),
    }, sorted(got)
    by = {(f["check"], f["address"]): f for f in found}
    assert "slot 2 (0000:40:00.0): serial number MT2232X00000 is on 2 cards; also on srv-r01-01 slot 3 " \
           "(0000:4f:00.0)" in by[("serial_duplicate", "0000:40:00.0")]["message"]
    assert "OEM PSID DEL0000000027 (vendor DEL (Dell)) on NVIDIA retail part number MCX75310AAS-NEAT" in \
        by[("oem_psid_on_retail_part", "0000:5e:00.0")]["message"]
    assert by[("serial_missing", "0000:9a:00.0")]["message"].startswith(
        "srv-r01-01 slot 5 (0000:9a:00.0): the card has no serial number in its VPD ([SN])")
    width = by[("pcie_width", "0000:c0:00.0")]
    assert width["slot"] == "6" and (width["expected"], width["found"]) == ("32GT/s x16", "16GT/s x8")


def test_simulator_two_hosts_against_an_asset_list(sim_host, tmp_path):
    """Two simulated hosts; one serial on both (vpd_duplicate_serial on every card of host b), the
    asset list made from host a's real VPD with one line changed."""
    first = sim_host("mixed", hostname="srv-r02-02")
    devices_a = _read(first)
    second_dir = tmp_path / "b"
    second_dir.mkdir()
    from _simhost import SimHost
    second = SimHost(second_dir, "cx6dx-roce", hostname="srv-r01-02")
    cx7_serial = next(d["serial_number"] for d in devices_a if d["address"] == "0000:65:00.0")
    second.mlxsim("fault", "add", "vpd_duplicate_serial", "--device", "0000:3b:00.0", "serial=%s" % cx7_serial)
    second.apply_env()
    try:
        devices_b = _read(second)
    finally:
        first.apply_env()
    rows = [("srv-r02-02", d.get("physical_slot") or d["address"], d["part_number"], d["serial_number"])
            for d in devices_a if d["address"].endswith(".0")]
    rows[0] = (rows[0][0], rows[0][1], "MCX653106A-HDAT", rows[0][3])       # ordered dual-port, got single-port
    found = delivery.findings({"srv-r02-02": devices_a, "srv-r01-02": devices_b}, assets_csv(*rows), MATRIX,
                              severities={"unknown_psid": "ignore", "unexpected_card": "warning"})
    got = sorted((f["host"], f["check"], f["address"]) for f in found)
    assert got == sorted([
        ("srv-r01-02", "unexpected_card", "0000:3b:00.0"), ("srv-r01-02", "serial_duplicate", "0000:3b:00.0"),
        ("srv-r01-02", "unexpected_card", "0000:d8:00.0"),
        ("srv-r02-02", "part_number_mismatch", "0000:17:00.0"), ("srv-r02-02", "serial_duplicate", "0000:65:00.0"),
    ]), got
    assert {f["severity"] for f in found if f["check"] == "unexpected_card"} == {"warning"}
    mismatch = only(found, "part_number_mismatch")[0]
    assert re.match(r"srv-r02-02 slot 1 \(0000:17:00\.0\): part number MCX653105A-HDAT, the asset list \(line 2\) "
                    r"expects MCX653106A-HDAT$", mismatch["message"])
    dup = [f for f in found if f["check"] == "serial_duplicate"]
    assert {f["host"] for f in dup} == {"srv-r01-02", "srv-r02-02"}
