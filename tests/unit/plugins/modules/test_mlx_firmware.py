"""The mlx_firmware module: argument handling, device selection, results, check mode, diff, failures.

The Runner is replaced by one with a fake flint (the real captures as output); discovery by a list.
"""
import collections
import hashlib
import os

import pytest

from _modules import run_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _devices as devices_
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner
from ansible_collections.gpufabric.mlnx.plugins.modules import mlx_firmware
from unit.plugins.module_utils.fake_flint import (
    CX6LX_FW, CX6LX_PSID, CX7_FW, CX7_PSID, MFT, MSTFLINT, FakeFlint, dev, which_from)

A, A1, B, C = "0000:18:00.0", "0000:18:00.1", "0000:29:00.0", "0000:3a:00.0"
TARGET = "28.43.1014"


@pytest.fixture
def image(tmp_path):
    path = tmp_path / "fw-ConnectX7-rel-28_43_1014.bin"
    path.write_bytes(b"cx7 firmware")
    return str(path), hashlib.sha256(b"cx7 firmware").hexdigest()


@pytest.fixture
def run(monkeypatch):
    """run(args, fake, family='mft', check=False, discovered=None) -> (failed?, result dict)."""
    def _run(args, fake, family="mft", check=False, discovered=None, diff=False):
        installed = MFT if family == "mft" else MSTFLINT

        def runner(tool="auto", timeout=900):
            return Runner(tool, timeout=timeout, execute=fake, which=which_from(*installed), sleep=lambda s: None)

        monkeypatch.setattr(mlx_firmware, "Runner", runner)
        discover_calls = []
        monkeypatch.setattr(devices_, "discover",
                            lambda r: discover_calls.append(r) or [dict(d) for d in discovered or []])
        failed, out = run_module(mlx_firmware, args, check=check, diff=diff)
        out["_discovered"] = len(discover_calls)
        return failed, out
    return _run


def lspci(*pairs):
    return [{"address": addr, "part_number": part, "description": "Infiniband controller"} for addr, part in pairs]


def argvs(fake):
    return collections.Counter(tuple(c) for c in fake.calls)


def test_all_devices_burned_and_reported(run, image):
    path, sha = image
    fake = FakeFlint({A: dev(), B: dev(), C: dev(CX6LX_PSID, CX6LX_FW)}, {path: (CX7_PSID, TARGET)})
    failed, out = run({"images": [{"psid": CX7_PSID, "version": TARGET, "path": path, "sha256": sha}]}, fake,
                      discovered=lspci((A, "MCX75310AAS-NEAT"), (A1, "MCX75310AAS-NEAT"), (B, "MCX75310AAS-NEAT"),
                                       (C, "MCX631102AN-ADAT")), diff=True)
    assert not failed and out["changed"] and out["pending_reset"]
    assert out["_discovered"] == 1
    assert argvs(fake) == collections.Counter({
        ("/usr/bin/flint", "-d", A, "q"): 2, ("/usr/bin/flint", "-d", B, "q"): 2, ("/usr/bin/flint", "-d", C, "q"): 1,
        ("/usr/bin/flint", "-i", path, "q"): 1,
        ("/usr/bin/flint", "-d", A, "-i", path, "-y", "burn"): 1,
        ("/usr/bin/flint", "-d", B, "-i", path, "-y", "burn"): 1,
    })
    by = {d["device"]: d for d in out["devices"]}
    assert list(by) == [A, B, C]
    assert by[A] == {"device": A, "psid": CX7_PSID, "part_number": "MCX75310AAS-NEAT", "image": path,
                     "target_version": TARGET, "before": {"burned": CX7_FW, "running": CX7_FW},
                     "after": {"burned": TARGET, "running": CX7_FW}, "changed": True, "action": "burn",
                     "pending_reset": True}
    assert by[C]["action"] == "skipped" and by[C]["reason"].startswith("no image for PSID MT_0000000575")
    assert out["diff"] == {"before": {A: CX7_FW, B: CX7_FW, C: CX6LX_FW}, "after": {A: TARGET, B: TARGET, C: CX6LX_FW}}
    assert out["msg"].startswith("burned %s 28.42.1000 -> 28.43.1014" % A)


def test_second_run_changes_nothing(run, image):
    path, sha = image
    fake = FakeFlint({A: dev()}, {path: (CX7_PSID, TARGET)})
    args = {"images": [{"psid": CX7_PSID, "version": TARGET, "path": path, "sha256": sha}], "device": ["18:00.0"]}
    failed, first = run(args, fake)
    assert not failed and first["changed"] and first["_discovered"] == 0
    fake.calls.clear()
    failed, second = run(args, fake)
    assert not failed and not second["changed"] and second["pending_reset"]      # not activated yet
    assert fake.calls == [["/usr/bin/flint", "-d", A, "q"]]
    assert second["devices"][0]["action"] == "none"
    fake.devices[A]["running"] = TARGET                                            # reboot
    failed, third = run(args, fake)
    assert not third["changed"] and not third["pending_reset"]


def test_check_mode(run, image):
    path, sha = image
    fake = FakeFlint({A: dev(), B: dev(burned=TARGET)}, {path: (CX7_PSID, TARGET)})
    failed, out = run({"images": [{"psid": CX7_PSID, "version": TARGET, "path": path, "sha256": sha}],
                       "device": [A, B]}, fake, check=True, diff=True)
    assert not failed and out["changed"] and out["pending_reset"]
    assert not [c for c in fake.calls if c[-1] == "burn"]
    assert ["/usr/bin/flint", "-i", path, "q"] in fake.calls
    assert out["diff"] == {"before": {A: CX7_FW, B: TARGET}, "after": {A: TARGET, B: TARGET}}
    assert out["msg"] == "would burn %s 28.42.1000 -> 28.43.1014; reset pending on %s" % (A, A)
    assert fake.devices[A]["burned"] == CX7_FW


def test_mstflint_and_psid_change(run, tmp_path):
    path = tmp_path / "cx6lx.bin"
    path.write_bytes(b"x")
    sha = hashlib.sha256(b"x").hexdigest()
    fake = FakeFlint({A: dev("DEL0000000575", CX6LX_FW)}, {str(path): (CX6LX_PSID, "26.43.1014")})
    args = {"tool": "mstflint", "device": [A, A1], "allow_psid_change": True,
            "images": [{"psid": CX6LX_PSID, "version": "26.43.1014", "path": str(path), "sha256": sha,
                        "from_psids": ["DEL0000000575"]}]}
    failed, out = run(args, fake, family="mstflint")
    assert not failed and out["changed"]
    assert argvs(fake) == collections.Counter({
        ("/usr/bin/mstflint", "-d", A, "q"): 2, ("/usr/bin/mstflint", "-i", str(path), "q"): 1,
        ("/usr/bin/mstflint", "-d", A, "-i", str(path), "-y", "--allow_psid_change", "burn"): 1})
    assert out["devices"][0]["psid_change"] == {"from": "DEL0000000575", "to": CX6LX_PSID}


def test_one_failing_device(run, image):
    path, sha = image
    fake = FakeFlint({A: dev(), B: dev()}, {path: (CX7_PSID, TARGET)},
                     burn_fail={A: (1, "-E- Burning FS4 image failed: Flash operation timed out\n", "")})
    failed, out = run({"images": [{"psid": CX7_PSID, "version": TARGET, "path": path, "sha256": sha}],
                       "device": [A, B]}, fake)
    assert failed and out["changed"]
    assert list(out["failed_devices"]) == [A]
    assert "rc 1: Burning FS4 image failed: Flash operation timed out" in out["failed_devices"][A]
    assert out["msg"].startswith("firmware burn failed on 1 of 2 devices: %s: burning" % A)
    assert [d["device"] for d in out["devices"]] == [B] and out["devices"][0]["after"]["burned"] == TARGET


@pytest.mark.parametrize("extra, device_state, words", [
    ({}, dev(burned="28.45.1020"), "a downgrade needs allow_downgrade=true"),
    ({"require_image": True}, dev(CX6LX_PSID, CX6LX_FW), "no image for PSID MT_0000000575 (the images cover "
                                                         "MT_0000001244), and require_image is true"),
])
def test_refused_fails_before_any_burn(run, image, extra, device_state, words):
    path, sha = image
    fake = FakeFlint({A: dev(), B: device_state}, {path: (CX7_PSID, TARGET)})
    args = dict({"images": [{"psid": CX7_PSID, "version": TARGET, "path": path, "sha256": sha}],
                 "device": [A, B]}, **extra)
    failed, out = run(args, fake)
    assert failed and words in out["msg"] and out["device"] == B
    assert not [c for c in fake.calls if c[-1] == "burn"]


def test_sha_mismatch(run, image):
    path, _sha = image
    fake = FakeFlint({A: dev()}, {path: (CX7_PSID, TARGET)})
    failed, out = run({"images": [{"psid": CX7_PSID, "version": TARGET, "path": path, "sha256": "0" * 64}],
                       "device": [A]}, fake)
    assert failed and "images[0]" in out["msg"] and "sha256 of %s is" % path in out["msg"]
    assert out["parameter"] == "images[0]"
    assert fake.calls == [["/usr/bin/flint", "-d", A, "q"]]


@pytest.mark.parametrize("images, words", [
    ([{"psid": CX7_PSID, "version": "latest", "path": "/fw.bin", "sha256": "a" * 64}], "images[0].version 'latest'"),
    ([{"psid": CX7_PSID, "version": TARGET, "path": "/fw.bin"}], "sha256"),
    ([{"psid": CX7_PSID, "version": TARGET, "path": "/fw.bin", "sha256": "a" * 64, "bogus": 1}], "bogus"),
])
def test_bad_input_touches_nothing(run, images, words):
    fake = FakeFlint({A: dev()})
    failed, out = run({"images": images, "device": [A]}, fake)
    assert failed and words in out["msg"]
    assert fake.calls == []


def test_device_not_present(run, image):
    path, sha = image
    fake = FakeFlint({A: dev()})
    failed, out = run({"images": [{"psid": CX7_PSID, "version": TARGET, "path": path, "sha256": sha,
                                   "part_numbers": ["MCX75310AAS-NEAT"]}], "device": ["5e:00.0"]}, fake,
                      discovered=lspci((A, "MCX75310AAS-NEAT")))
    assert failed and "device 5e:00.0 is not on this host" in out["msg"]
    assert fake.calls == []


def test_module_against_the_simulator(sim_host):
    """check -> apply -> apply again, through main() with the real Runner and the simulated tools."""
    host = sim_host("cx6dx-roce")
    images = host.newer_images()   # psid, version, path, sha256: as a task lists them
    images[0]["part_numbers"] = ["MCX623106AN-CDAT"]
    args = {"images": images, "tool": "mstflint"}

    failed, check = run_module(mlx_firmware, args, check=True, diff=True)
    assert not failed and check["changed"] and check["pending_reset"]
    assert check["diff"]["after"] == {"0000:3b:00.0": "22.43.1014", "0000:d8:00.0": "22.43.1014"}
    assert check["msg"].startswith("would burn 0000:3b:00.0 22.41.1000 -> 22.43.1014")
    assert not host.burns("mstflint")

    failed, first = run_module(mlx_firmware, args)
    assert not failed and first["changed"] and first["pending_reset"]
    assert [d["part_number"] for d in first["devices"]] == ["MCX623106AN-CDAT"] * 2
    assert len(host.burns("mstflint")) == 2

    failed, second = run_module(mlx_firmware, args)
    assert not failed and not second["changed"] and second["pending_reset"]
    assert len(host.burns("mstflint")) == 2


# ---------------------------------------------------------------- images sent with the task (src)

def _sent(tmp_path, content=b"cx7 firmware"):
    """What the action plugin leaves for the module: the image's place on the host (not there yet) and the copy
    it sent into the task's temporary folder."""
    place = tmp_path / "staging" / "fw" / "fw-ConnectX7-rel-28_43_1014.bin"
    copy = tmp_path / "ansible-tmp" / "image-0-fw-ConnectX7-rel-28_43_1014.bin"
    copy.parent.mkdir()
    copy.write_bytes(content)
    return str(place), str(copy), hashlib.sha256(b"cx7 firmware").hexdigest()


def test_sent_image_verified_put_in_place_and_burned(run, tmp_path):
    place, copy, sha = _sent(tmp_path)
    fake = FakeFlint({A: dev()}, {place: (CX7_PSID, TARGET), copy: (CX7_PSID, TARGET)})
    args = {"images": [{"psid": CX7_PSID, "version": TARGET, "path": place, "sha256": sha, "copy_from": copy}],
            "device": [A]}
    failed, out = run(args, fake)
    assert not failed and out["changed"] and out["images_installed"] == [place]
    assert open(place, "rb").read() == b"cx7 firmware"
    assert oct(os.stat(place).st_mode & 0o777) == "0o640"
    assert oct(os.stat(os.path.dirname(place)).st_mode & 0o777) == "0o750"
    assert ["/usr/bin/flint", "-i", copy, "q"] in fake.calls
    assert ["/usr/bin/flint", "-d", A, "-i", place, "-y", "burn"] in fake.calls

    # The same file already in place: verified, not written again.
    fake.devices[A]["burned"] = CX7_FW
    before = os.stat(place).st_mtime_ns
    failed, out = run(args, fake)
    assert not failed and out["images_installed"] == [] and os.stat(place).st_mtime_ns == before


def test_sent_image_in_check_mode_is_verified_not_written(run, tmp_path):
    place, copy, sha = _sent(tmp_path)
    fake = FakeFlint({A: dev()}, {copy: (CX7_PSID, TARGET)})
    failed, out = run({"images": [{"psid": CX7_PSID, "version": TARGET, "path": place, "sha256": sha,
                                  "copy_from": copy}], "device": [A]}, fake, check=True)
    assert not failed and out["changed"] and out["images_installed"] == []
    assert not os.path.exists(os.path.dirname(place))
    assert ["/usr/bin/flint", "-i", copy, "q"] in fake.calls
    assert "image_staged" not in out["devices"][0]


def test_sent_image_with_another_sha256_is_refused_and_nothing_written(run, tmp_path):
    place, copy, sha = _sent(tmp_path, content=b"tampered")
    fake = FakeFlint({A: dev()}, {copy: (CX7_PSID, TARGET)})
    failed, out = run({"images": [{"psid": CX7_PSID, "version": TARGET, "path": place, "sha256": sha,
                                  "copy_from": copy}], "device": [A]}, fake)
    assert failed and out["parameter"] == "images[0]" and "sha256 of %s is" % copy in out["msg"]
    assert not os.path.exists(place) and not [c for c in fake.calls if c[-1] == "burn"]


def test_sent_image_no_device_needs_is_not_written(run, tmp_path):
    place, copy, sha = _sent(tmp_path)
    fake = FakeFlint({A: dev(burned=TARGET, running=TARGET)}, {copy: (CX7_PSID, TARGET)})
    failed, out = run({"images": [{"psid": CX7_PSID, "version": TARGET, "path": place, "sha256": sha,
                                  "copy_from": copy}], "device": [A]}, fake)
    assert not failed and not out["changed"] and out["images_installed"] == []
    assert not os.path.exists(place) and fake.calls == [["/usr/bin/flint", "-d", A, "q"]]


# ---------------------------------------------------------------- matrix: decided per card by the module itself

def matrix_of(path, sha):
    return {"name": "unit", "driver": {"flavour": "doca-ofed", "version": "24.10-2.1.8.0", "dkms": True,
                                       "source": {"type": "tarball", "path": "/srv/ofed/doca.tgz", "sha256": sha}},
            "firmware": {CX7_PSID: {"version": TARGET, "image": os.path.basename(path), "sha256": sha,
                                    "part_numbers": ["MCX75310AAS-NEAT"]}},
            "compatibility": {"firmware_drivers": {TARGET: ["24.10-2.1.8.0"]}}}


def info(address, burned, running=None, psid=CX7_PSID):
    return {"address": address, "psid": psid, "part_number": "MCX75310AAS-NEAT", "fw_version": burned,
            "fw_running": running or burned, "errors": []}


def test_matrix_burns_only_the_cards_below_the_pin_and_returns_the_facts(run, image):
    path, sha = image
    fake = FakeFlint({A: dev(), B: dev(burned=TARGET)}, {path: (CX7_PSID, TARGET)})
    failed, out = run({"matrix": matrix_of(path, sha), "firmware_dir": os.path.dirname(path),
                       "nic_devices": [info(A, CX7_FW), info(B, TARGET, CX7_FW)]}, fake,
                      discovered=lspci((A, "MCX75310AAS-NEAT"), (B, "MCX75310AAS-NEAT")))
    assert not failed and out["changed"], out
    assert [c for c in fake.calls if c[-1] == "burn"] == [["/usr/bin/flint", "-d", A, "-i", path, "-y", "burn"]]
    assert [(t["address"], t["action"]) for t in out["targets"]] == [(A, "burn"), (B, "pending")]
    assert out["ansible_facts"] == {"gpufabric_firmware_pending_devices": [A, B],
                                    "gpufabric_firmware_pending_reset": True}


def test_matrix_with_nothing_to_burn_runs_no_tool(run, image):
    path, sha = image
    fake = FakeFlint({A: dev(burned=TARGET)}, {path: (CX7_PSID, TARGET)})
    failed, out = run({"matrix": matrix_of(path, sha), "nic_devices": [info(A, TARGET)]}, fake)
    assert not failed and not out["changed"] and fake.calls == [] and out["devices"] == []
    assert out["msg"] == "nothing to burn: 1 card(s) at the pinned firmware"
    assert out["ansible_facts"] == {"gpufabric_firmware_pending_devices": [], "gpufabric_firmware_pending_reset": False}


def test_matrix_refuses_a_card_before_any_tool_and_names_it(run, image):
    path, sha = image
    fake = FakeFlint({A: dev()}, {path: (CX7_PSID, TARGET)})
    failed, out = run({"matrix": matrix_of(path, sha), "nic_devices": [info(A, CX7_FW), info(B, "1.2.3", psid="X_1")]},
                      fake)
    assert failed and fake.calls == [] and "ansible_facts" not in out
    assert out["msg"] == ("the matrix refuses 1 card(s), nothing was burned: %s: unknown PSID X_1: "
                          "gpufabric_matrix.firmware covers %s" % (B, CX7_PSID))
    assert [(t["address"], t["action"]) for t in out["targets"]] == [(A, "burn"), (B, "refused")]


@pytest.mark.parametrize("extra, words", [({"device": [A]}, "device is decided from matrix per card"),
                                          ({"allow_downgrade": True}, "allow_downgrade is decided from matrix"),
                                          ({"mirror": "http://m/fw"}, "mirror is fetched by the task's action")])
def test_matrix_with_what_it_decides_or_a_mirror_is_refused_before_any_tool(run, image, extra, words):
    path, sha = image
    fake = FakeFlint({A: dev()}, {path: (CX7_PSID, TARGET)})
    failed, out = run(dict({"matrix": matrix_of(path, sha), "nic_devices": [info(A, CX7_FW)]}, **extra), fake)
    assert failed and words in out["msg"] and fake.calls == []
