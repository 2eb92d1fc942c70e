"""Preflight: every problem at once, each naming host and card, on the example matrix."""
import copy

import yaml

from _paths import REPO
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._preflight import problems

MATRIX = yaml.safe_load((REPO / "inventory/example-1250/group_vars/all/matrix.yml").read_text())["gpufabric_matrix"]
TARGET = MATRIX["firmware"]["MT_0000000838"]["version"]


def card(address, serial, psid="MT_0000000838", part="MCX75310AAS-NEAT", fw=TARGET):
    return {"address": address, "card": address.rsplit(".", 1)[0], "psid": psid, "part_number": part,
            "serial_number": serial, "fw_version": fw, "fw_running": fw}


def test_a_good_fleet_has_no_problem():
    fleet = {"srv-01": [card("0000:18:00.0", "MT2248X00001"), card("0000:40:00.0", "MT2248X00002")],
             "srv-02": [card("0000:18:00.0", "MT2248X00003")]}
    assert problems(fleet, MATRIX) == []


def test_every_problem_at_once_naming_host_and_card():
    fleet = {
        "srv-01": [card("0000:18:00.0", "MT2248X00001"),
                   card("0000:40:00.0", "", psid="DEL0000000027")],           # OEM PSID, no serial
        "srv-02": [card("0000:18:00.0", "mt2248x00001")],                    # same serial, other case
        "srv-03": [],                                                        # no NIC at all
        "srv-04": None,                                                      # could not be read
        "srv-05": [card("0000:18:00.0", "MT2248X00009", fw="28.99.9999")],   # flash newer than the pin
    }
    found = problems(fleet, MATRIX)
    text = "\n".join(found)
    assert "srv-01 0000:40:00.0: unknown PSID DEL0000000027" in text
    assert "srv-01 0000:40:00.0: the card has no serial number" in text
    assert "serial number MT2248X00001 is on 2 cards: srv-01 0000:18:00.0, srv-02 0000:18:00.0" in text
    assert "srv-03: no NVIDIA NIC/DPU found" in text
    assert "srv-04: its NVIDIA devices could not be read" in text
    assert "srv-05 0000:18:00.0: downgrade from 28.99.9999" in text
    assert len(found) == 6


def test_a_host_whose_devices_could_not_be_read_carries_the_cause():
    fleet = {"srv-01": None, "srv-02": None, "srv-03": [card("0000:18:00.0", "MT2248X00001")]}
    failed = {"srv-01": "lspci not found on PATH: it is provided by pciutils\n", "srv-02": None, "srv-03": None}
    assert problems(fleet, MATRIX, failed=failed) == [
        "srv-01: its NVIDIA devices could not be read: lspci not found on PATH: it is provided by pciutils",
        "srv-02: its NVIDIA devices could not be read: mlx_info did not run there (skipped, or its result was not "
        "kept)"]


def test_a_bad_matrix_is_reported_before_devices():
    bad = copy.deepcopy(MATRIX)
    del bad["firmware"]["MT_0000000838"]["sha256"]
    found = problems({"srv-01": [card("0000:18:00.0", "S1")]}, bad)
    assert found and all("sha256" in p or "firmware" in p for p in found)


def test_hosts_without_devices_allowed_when_asked():
    assert problems({"mgmt-01": []}, MATRIX, require_devices=False) == []


def test_wrong_types_are_the_documented_error_or_a_problem_naming_the_host():
    """Was a Python TypeError/AttributeError: a list for the input, a host whose devices are a string, a device that
    is not a mapping, a serial number that is a number, host names of mixed types."""
    import pytest
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
    for bad in ([], "srv-01", 5, None):
        with pytest.raises(InvalidValue, match="preflight_problems: the input must be a mapping"):
            problems(bad, MATRIX)
    found = problems({"srv-01": "0000:18:00.0", "srv-02": [5], "srv-03": [card("0000:18:00.0", 12345)],
                      7: [card("0000:18:00.0", "MT2248X00007")]}, MATRIX)
    text = "\n".join(found)
    assert "7 0000:18:00.0" not in text
    assert "srv-01: devices must be the list gpufabric.mlnx.mlx_info returns, not the string" in text
    assert "srv-02: devices[0]" in text
    assert "srv-03 0000:18:00.0: the card has no serial number" in text
