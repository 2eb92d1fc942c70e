"""The firmware role with gpufabric_firmware_mirror (pull mode's way, docs/gitops.md "ansible-pull"): the image of each
PSID to burn is fetched from an HTTP mirror (python's http.server on 127.0.0.1) into gpufabric_firmware_dir on the
host, verified by the sha256 of the matrix, and burned - nothing from the controller's gpufabric_firmware_source_dir;
an image whose sha256 is not the pin fails the host naming the image, the URL and both checksums, and nothing is
burned or kept; a mirror URL outside the grammar fails naming the variable before anything is fetched."""
import hashlib
import json
import os
import shutil

import pytest

from _mirror import serving
from _roleplay import matrix, play, run, sim_vars, simulated
from _simhost import device_id

HOST = "srv-r01-01"
CX6, CX7 = "0000:17:00.0", "0000:65:00.0"
# The mixed profile's ConnectX-6 runs 20.41.1000 (the pin burns it), its ConnectX-7 runs the pin already.
PINS = {CX6: ("MT_0000000223", "MCX653105A-HDAT", "ConnectX6", "20.43.1014"),
        CX7: ("MT_0000000838", "MCX75310AAS-NEAT", "ConnectX7", "28.42.1000")}
BF3 = ("MT_0000000884", "900-9D3B6-00CV-AA0", "BlueField3", "32.41.1000")


@pytest.fixture
def sim(tmp_path):
    sim = simulated(tmp_path, HOST, "mixed")
    sim.mirror = tmp_path / "mirror" / "fw"
    sim.mirror.mkdir(parents=True)
    sim.images = {}
    for address, (psid, _part, family, version) in list(PINS.items()) + [("bf3", BF3)]:
        image = sim.mkimage(psid, version, device_id(family))
        shutil.move(image["path"], sim.mirror / os.path.basename(image["path"]))
        image["path"] = str(sim.mirror / os.path.basename(image["path"]))
        sim.images[address] = image
    return sim


def pins(sim, wrong=None):
    firmware = {}
    for address, (psid, part, _family, version) in list(PINS.items()) + [("bf3", BF3)]:
        image = sim.images[address]
        firmware[psid] = {"version": version, "image": os.path.basename(image["path"]),
                          "sha256": (wrong if address == CX6 and wrong else image["sha256"]), "part_numbers": [part]}
    return matrix("unit-firmware-mirror", firmware)


def firmware(tmp_path, sim, mirror, **role_vars):
    return run(tmp_path, {HOST: sim_vars(sim, **dict({
        "gpufabric_matrix": pins(sim), "gpufabric_firmware_mirror": mirror,
        "gpufabric_firmware_source_dir": str(tmp_path / "no-controller-copy"),    # not there: never read
        "gpufabric_firmware_dir": str(tmp_path / "host-firmware")}, **role_vars))}, play("firmware"))


def burns(sim):
    return {card["pci"]: card["burns"] for card in json.loads(sim.mlxsim("activity"))["cards"].values()}


def test_the_image_to_burn_comes_from_the_mirror_verified_by_its_sha256(tmp_path, sim):
    name = os.path.basename(sim.images[CX6]["path"])
    with serving(tmp_path / "mirror") as mirror:
        ran = firmware(tmp_path, sim, mirror.url + "/fw/")
        asked = list(mirror.asked)
    assert ran.ok, ran
    assert asked == ["/fw/" + name]                       # only the image of the PSID to burn
    staged = tmp_path / "host-firmware" / name
    assert hashlib.sha256(staged.read_bytes()).hexdigest() == sim.images[CX6]["sha256"]
    assert burns(sim)[CX6] == 1 and burns(sim)[CX7] == 0
    assert sorted(os.listdir(tmp_path / "host-firmware")) == [name]

    with serving(tmp_path / "mirror") as mirror:         # the pin runs: nothing is fetched, nothing burned again
        sim.mlxsim("reboot")
        ran = firmware(tmp_path, sim, mirror.url + "/fw")
        assert ran.ok, ran
        assert mirror.asked == []
    assert burns(sim)[CX6] == 1


def test_a_wrong_sha256_fails_naming_image_url_and_both_checksums_and_nothing_is_burned(tmp_path, sim):
    name = os.path.basename(sim.images[CX6]["path"])
    wrong = "ab" * 32
    with serving(tmp_path / "mirror") as mirror:
        ran = firmware(tmp_path, sim, mirror.url + "/fw", gpufabric_matrix=pins(sim, wrong=wrong))
        url = "%s/fw/%s" % (mirror.url, name)
        assert mirror.asked == ["/fw/" + name]
    assert not ran.ok
    msg = ran.failures()[HOST]
    assert msg.startswith("srv-r01-01: nothing was burned - firmware image %s from %s: " % (name, url)), msg
    assert "sha256 %s received, but gpufabric_matrix.firmware.MT_0000000223.sha256 is %s" % (
        sim.images[CX6]["sha256"], wrong) in msg, msg
    assert burns(sim) == {CX6: 0, CX7: 0, "0000:ca:00.0": 0}
    assert not (tmp_path / "host-firmware" / name).exists()


@pytest.mark.parametrize("mirror", ["ftp://mirror.example/fw", "http://mirror.example/fw?x=1",
                                    "http://user:pw@mirror.example/fw", "http://mirror.example/f w",
                                    "http://mirror.example/fw;reboot", "http://mirror.example/$(id)"])
def test_a_mirror_url_outside_the_grammar_fails_naming_the_variable_before_any_fetch(tmp_path, sim, mirror):
    ran = firmware(tmp_path, sim, mirror)
    assert not ran.ok
    msg = ran.failures()[HOST]
    assert "srv-r01-01: gpufabric_firmware_mirror is " in msg and "allowed is an http:// or https:// base URL" in msg, msg
    assert not (tmp_path / "host-firmware").exists()
    assert burns(sim)[CX6] == 0
