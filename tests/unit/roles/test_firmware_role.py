"""The firmware role's decision on a simulated host (tests/_roleplay.py): per card, from the matrix, burn (older than
the pin), nothing (the pin burned and running) or pending (the pin burned, another version running) - and which
cards then wait for an activation; a card the matrix refuses stops the host before anything is burned. The
``mixed`` profile's three cards (three PSIDs) take one decision each; ``mlxsim activity`` counts the burns."""
import json
import os

import pytest

from _roleplay import matrix, play, run, sim_vars, simulated
from _simhost import device_id

HOST = "srv-r01-01"
CX6, CX7, BF3 = "0000:17:00.0", "0000:65:00.0", "0000:ca:00.0"
# The mixed profile's cards: PSID, part number, family, the firmware the matrix pins.
PINS = {CX6: ("MT_0000000223", "MCX653105A-HDAT", "ConnectX6", "20.43.1014"),     # burned 20.41.1000: burn
        CX7: ("MT_0000000838", "MCX75310AAS-NEAT", "ConnectX7", "28.42.1000"),    # burned and running: none
        BF3: ("MT_0000000884", "900-9D3B6-00CV-AA0", "BlueField3", "32.43.1014")}  # burned below: pending
# The role's one task: the decision per card, the burn and the facts (a compliant host: no module run at all).
FIRMWARE = "Burn the pinned firmware where the matrix says (decided per card; a refused card stops the host before any burn)"


@pytest.fixture
def sim(tmp_path):
    sim = simulated(tmp_path, HOST, "mixed")
    sim.images = {address: sim.mkimage(psid, version, device_id(family))
                  for address, (psid, _part, family, version) in PINS.items()}
    # BlueField-3: the pinned image is on its flash already, the old firmware still runs (no reset since)
    proc = sim.run("flint", "-d", BF3, "-i", sim.images[BF3]["path"], "-y", "burn")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return sim


def pins(sim, without=()):
    """A matrix pinning every card's PINS entry (but the PSIDs in ``without``)."""
    firmware = {}
    for address, (psid, part, _family, version) in PINS.items():
        if psid not in without:
            image = sim.images[address]
            firmware[psid] = {"version": version, "image": os.path.basename(image["path"]),
                              "sha256": image["sha256"], "part_numbers": [part]}
    return matrix("unit-firmware", firmware)


def nic_devices(tmp_path, sim):
    """The cards as gpufabric.mlnx.mlx_info reads them now (what the preflight keeps as gpufabric_nic_devices)."""
    (tmp_path / "info").mkdir(exist_ok=True)
    ran = run(tmp_path / "info", {HOST: sim_vars(sim)}, yaml_play("gpufabric.mlnx.mlx_info: {}"))
    assert ran.ok, ran
    return ran.task("info", HOST)["devices"]


def yaml_play(task):
    return "- hosts: servers\n  gather_facts: false\n  tasks:\n    - name: info\n      %s\n" % task


def firmware(tmp_path, sim, check=False, **role_vars):
    return run(tmp_path, {HOST: sim_vars(sim, **dict({
        "gpufabric_matrix": pins(sim), "gpufabric_firmware_source_dir": str(sim.tmp),
        "gpufabric_firmware_dir": str(tmp_path / "host-firmware")}, **role_vars))}, play("firmware"), check=check)


def burns(sim):
    """{PCI address of a card: burns} so far (the set-up's BlueField-3 burn included)."""
    return {card["pci"]: card["burns"] for card in json.loads(sim.mlxsim("activity"))["cards"].values()}


def decisions(ran):
    return {t["address"]: t["action"] for t in ran.task(FIRMWARE, HOST, role="firmware")["targets"]}


def facts(ran):
    """The facts the task set: (sorted pending devices, pending reset)."""
    got = ran.task(FIRMWARE, HOST, role="firmware")["ansible_facts"]
    return sorted(got["gpufabric_firmware_pending_devices"]), got["gpufabric_firmware_pending_reset"]


def test_each_card_burned_left_or_pending_as_the_matrix_says(tmp_path, sim):
    for check in (True, False):
        ran = firmware(tmp_path, sim, check=check)
        assert ran.ok, ran
        assert decisions(ran) == {CX6: "burn", CX7: "none", BF3: "pending"}
        assert facts(ran) == ([CX6, BF3], True)      # would be (check), are (run)
        assert ran.task(FIRMWARE, HOST, role="firmware")["changed"] is True
        assert burns(sim) == {CX6: 0 if check else 1, CX7: 0, BF3: 1}

    ran = firmware(tmp_path, sim)                     # burned, not activated: pending, nothing burned again
    assert ran.ok, ran
    assert decisions(ran) == {CX6: "pending", CX7: "none", BF3: "pending"}
    assert facts(ran) == ([CX6, BF3], True)
    assert ran.task(FIRMWARE, HOST, role="firmware")["changed"] is False
    assert burns(sim) == {CX6: 1, CX7: 0, BF3: 1}

    sim.mlxsim("reboot")                              # the activation: every pin runs, nothing waits
    ran = firmware(tmp_path, sim)
    assert ran.ok, ran
    assert decisions(ran) == {CX6: "none", CX7: "none", BF3: "none"}
    assert facts(ran) == ([], False)
    done = ran.task(FIRMWARE, HOST, role="firmware")
    assert done["changed"] is False and done["devices"] == [] and done["images_installed"] == []
    assert done["msg"] == "nothing to burn: 3 card(s) at the pinned firmware"
    assert ran.stats(HOST)["ok"] + ran.stats(HOST)["skipped"] == 2     # the argument spec and the one task


def test_a_rerun_before_the_activation_names_the_pending_cards_without_a_module_run(tmp_path, sim):
    ran = firmware(tmp_path, sim)
    assert ran.ok, ran
    read = nic_devices(tmp_path, sim)                 # the preflight read the cards
    sim.clear_calls()
    ran = firmware(tmp_path, sim, gpufabric_nic_devices=read)
    assert ran.ok, ran
    done = ran.task(FIRMWARE, HOST, role="firmware")
    assert done["msg"] == ("nothing to burn: 1 card(s) at the pinned firmware; activation pending on "
                           "0000:17:00.0, 0000:ca:00.0")
    assert facts(ran) == ([CX6, BF3], True)
    assert sim.argvs("flint") + sim.argvs("mstflint") == []       # decided on the controller from the preflight's read


def test_a_card_the_matrix_refuses_stops_the_host_before_any_burn(tmp_path, sim):
    ran = firmware(tmp_path, sim, gpufabric_matrix=pins(sim, without=["MT_0000000884"]))
    assert not ran.ok
    assert decisions(ran) == {CX6: "burn", CX7: "none", BF3: "refused"}
    msg = ran.failures()[HOST]
    assert msg.startswith("srv-r01-01: the matrix refuses 1 card(s), nothing was burned: 0000:ca:00.0: "), msg
    assert "MT_0000000884" in msg
    assert burns(sim) == {CX6: 0, CX7: 0, BF3: 1}     # the CX6 burn did not happen either


def test_check_mode_sends_no_image_to_the_host(tmp_path, sim):
    # a matrix bump: the CX6 would burn; --check reports it without sending its image (the preflight checked the
    # controller's copy): the module sees no copy, so it reports the image as not staged yet, and nothing is burned
    ran = firmware(tmp_path, sim, check=True)
    assert ran.ok, ran
    burn = ran.task(FIRMWARE, HOST, role="firmware")
    assert {dev["device"]: dev.get("image_staged") for dev in burn["devices"] if dev["action"] == "burn"} == {
        CX6: False}
    assert burn["images_installed"] == [] and not (tmp_path / "host-firmware").exists()
    assert burns(sim) == {CX6: 0, CX7: 0, BF3: 1}
