"""Profiles, drift and the inventory report rows/tables."""
import csv
import io

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mlxconfig import drift
from ansible_collections.gpufabric.mlnx.plugins.module_utils._profiles import assign, check_assignments, profile_for, report
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._report import csv_table, inventory_rows, markdown_table

PROFILES = {"roce": {"LINK_TYPE_P1": "ETH", "SRIOV_EN": False, "NUM_OF_VFS": 0},
            "dpu": {"INTERNAL_CPU_MODEL": "EMBEDDED_CPU"}}
ASSIGN = [{"profile": "roce", "part_numbers": ["MCX75310AAS-NEAT"]},
          {"profile": "dpu", "device_types": ["BlueField3"]}]
CX7 = {"address": "0000:18:00.0", "part_number": "MCX75310AAS-NEAT", "device_type": "ConnectX7",
       "psid": "MT_0000000838", "serial_number": "MT2326X00001", "fw_version": "28.39.1002",
       "fw_running": "28.36.1010",
       "pcie": {"lnkcap": {"speed": "32GT/s", "width": "x16"}, "lnksta": {"speed": "16GT/s", "width": "x16"},
                "degraded": True},
       "nv_config": {"LINK_TYPE_P1": {"current": "ETH(2)", "next": "ETH(2)"},
                     "SRIOV_EN": {"current": "True(1)", "next": "False(0)"},
                     "NUM_OF_VFS": {"current": "8", "next": "8"}}}
BF3 = {"address": "0000:03:00.0", "part_number": "900-9D3B6-00CV-AA0", "device_type": "BlueField3",
       "nv_config": {}}
OTHER = {"address": "0000:aa:00.0", "part_number": "MCX623106AN-CDAT", "device_type": "ConnectX6DX"}


def test_drift_states():
    out = drift(CX7["nv_config"], dict(PROFILES["roce"], MISSING_ONE=1))
    assert {k: v["state"] for k, v in out.items()} == {
        "LINK_TYPE_P1": "ok", "SRIOV_EN": "pending", "NUM_OF_VFS": "drift", "MISSING_ONE": "missing"}


def test_profile_for_first_match_wins():
    assert profile_for(CX7, ASSIGN) == "roce"
    assert profile_for(dict(CX7, part_number="MCX75310AAS-NEAT_Ax"), ASSIGN) == "roce"
    assert profile_for(BF3, ASSIGN) == "dpu"
    assert profile_for(OTHER, ASSIGN) is None
    assert profile_for(OTHER, [{"profile": "roce", "pci": ["aa:00.0"]}]) == "roce"


def test_bad_assignments_listed_all_at_once():
    with pytest.raises(MlnxError) as err:
        check_assignments(PROFILES, [{"profile": "nope", "part_numbers": ["X"]}, {"profile": "roce"}])
    assert "#1 names profile 'nope', which is not one of: dpu, roce" in err.value.msg
    assert "#2 (profile roce) has none of part_numbers, pci, device_types" in err.value.msg


def test_report_states():
    out = report([CX7, BF3, OTHER], PROFILES, ASSIGN)
    expected = [("roce", "drift,pending"), ("dpu", "missing"), (None, "no profile")]
    assert [(r["profile"], r["state"]) for r in out] == expected


def test_rows_markdown_csv():
    rows = inventory_rows("srv-r01-01", [CX7, OTHER], PROFILES, ASSIGN)
    assert rows[0]["fw_running"] == "28.36.1010" and rows[0]["fw_pending"] == "28.39.1002"
    assert rows[0]["pcie"] == "16GT/s x16 (cap 32GT/s x16)"
    as_ints = dict(CX7, pcie={"lnkcap": {"speed": "32GT/s", "width": 16}, "lnksta": {"speed": "32GT/s", "width": 8},
                              "degraded": True})
    assert inventory_rows("h", [as_ints])[0]["pcie"] == "32GT/s x8 (cap 32GT/s x16)"
    assert rows[0]["nv_drift"] == "NUM_OF_VFS: 8→0; SRIOV_EN: pending"
    assert rows[1]["profile"] == "" and rows[1]["nv_drift"] == ""
    md = markdown_table(rows)
    assert md.splitlines()[0].startswith("| host | PCI | type | part number | PSID |")
    assert "| srv-r01-01 | 0000:18:00.0 | ConnectX7 | MCX75310AAS-NEAT | MT_0000000838 |" in md
    parsed = list(csv.DictReader(io.StringIO(csv_table(rows))))
    assert parsed[0]["psid"] == "MT_0000000838" and parsed[1]["pci"] == "0000:aa:00.0"
    assert markdown_table([{"host": "a|b"}]).splitlines()[2].startswith("| a\\|b |")


def test_assign_groups_function_zero_by_profile():
    cx7_fn1 = dict(CX7, address="0000:18:00.1")
    assert assign([CX7, cx7_fn1, BF3, OTHER], PROFILES, ASSIGN) == {
        "roce": ["0000:18:00.0"], "dpu": ["0000:03:00.0"]}
    with pytest.raises(MlnxError, match="not one of"):
        assign([CX7], PROFILES, [{"profile": "gone", "pci": ["18:00.0"]}])


# A ConnectX-6 Dx EN (Ethernet-only: no LINK_TYPE parameter) sharing the ConnectX-7's profile.
CX6DX = {"address": "0000:3b:00.0", "part_number": "MCX623106AN-CDAT", "device_type": "ConnectX6DX",
         "nv_config": {"SRIOV_EN": {"current": "False(0)", "next": "False(0)"},
                       "NUM_OF_VFS": {"current": "0", "next": "0"}}}
SHARED = [{"profile": "roce", "part_numbers": ["MCX75310AAS-NEAT", "MCX623106AN-CDAT"]}]


def test_link_type_on_an_ethernet_only_card_is_not_applicable_with_its_rule():
    out = drift(CX6DX["nv_config"], PROFILES["roce"])
    assert out["LINK_TYPE_P1"] == {"desired": "ETH", "next": None, "current": None, "state": "n/a",
                                   "rule": "n/a: Ethernet-only card has no LINK_TYPE (its ports are Ethernet)"}
    assert report([CX6DX], PROFILES, SHARED)[0]["state"] == "ok"
    row = inventory_rows("srv-r01-01", [CX6DX], PROFILES, SHARED)[0]
    assert row["profile"] == "roce"
    assert row["nv_drift"] == "ok; LINK_TYPE_P1 n/a: Ethernet-only card has no LINK_TYPE (its ports are Ethernet)"


def test_a_card_whose_config_was_not_read_is_missing_not_not_applicable():
    assert drift({}, PROFILES["roce"])["LINK_TYPE_P1"]["state"] == "missing"
    assert report([dict(CX6DX, nv_config={})], PROFILES, SHARED)[0]["state"] == "missing"
