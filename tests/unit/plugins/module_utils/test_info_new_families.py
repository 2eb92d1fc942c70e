"""mlx_info's collection core on the simulator's profiles with the older and newer families (issue 16):
every card is found, typed and read (firmware, PSID, part number, MAC, NV configuration) without errors."""
import hashlib

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _info as info
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner

TYPES = {"refresh-cx5-storage": {"ConnectX7": 4, "ConnectX5": 2, "ConnectX4LX": 1},     # cards per type
         "legacy-eth": {"ConnectX4": 1, "ConnectX6LX": 1, "BlueField2": 1},
         "spectrum-x-cx8": {"ConnectX8": 4, "BlueField3": 1},
         "hpc-cx5ex": {"ConnectX5": 2}}


@pytest.mark.parametrize("profile", sorted(TYPES))
def test_gather_reads_every_new_family(sim_host, profile):
    host = sim_host(profile, init_args=("--mst-started",))
    result = info.gather(Runner("auto", timeout=120), nv_config=True)
    assert result["summary"]["device_types"] == TYPES[profile]
    by_card = {c["functions"][0]["pci"][:-2]: c for c in host.cards()}
    for dev in result["devices"]:
        assert dev["errors"] == [], (dev["address"], dev["errors"])
        card = by_card[dev["card"]]
        assert dev["device_type"] == card["family"]
        assert dev["psid"] == card["psid"] and dev["fw_version"] == card["fw"]["burned"]
        assert dev["part_number"] == card["part_number"]
        assert dev["base_mac"] == card["base_mac"]
        assert dev["nv_config"]
        if card["family"] in ("ConnectX4LX", "ConnectX6LX"):
            assert not any(k.startswith("LINK_TYPE") for k in dev["nv_config"])


@pytest.mark.parametrize("profile", sorted(TYPES))
def test_the_delivery_check_and_the_inventory_report_read_every_new_family(sim_host, profile):
    """The delivery check (its findings against a matrix that pins each card's PSID at its firmware, no asset list)
    finds no error on a healthy host of the new families, and the inventory report has a row per function."""
    from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _delivery, _report
    from _roleplay import matrix

    host = sim_host(profile, init_args=("--mst-started",))
    devices = info.gather(Runner("auto", timeout=120), nv_config=True)["devices"]
    pins = {}
    for card in host.cards():
        pin = pins.setdefault(card["psid"], {"version": card["fw"]["burned"], "image": "%s.bin" % card["psid"],
                                             "sha256": hashlib.sha256(card["psid"].encode()).hexdigest(),
                                             "part_numbers": []})
        pin["part_numbers"] = sorted(set(pin["part_numbers"]) | {card["part_number"]})
    found = _delivery.findings({"node01": devices}, None, matrix("2026.12-test", pins))
    assert [f for f in found if f["severity"] == "error"] == [], found
    rows = _report.inventory_rows("node01", devices)
    assert len(rows) == len(devices) and {r["host"] for r in rows} == {"node01"}
    assert sorted({r["device_type"] for r in rows}) == sorted(TYPES[profile])
