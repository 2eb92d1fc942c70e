"""Firmware per PSID: the pure decision, image verification, and the exact flint argv run.

The fake flint answers with the real captures (flint_query_cx7_1.txt, mstflint_query_cx6lx_1.txt,
mstflint_burn_*.txt) with only the version / PSID lines changed, and records every argv.
"""
import collections
import hashlib
import re

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _firmware as fw
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import (
    InvalidParameter,
    InvalidValue,
    MlnxError,
    Refused,
    ToolFailed,
)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner
from unit.plugins.module_utils.fake_flint import (
    CX6LX_FW, CX6LX_PSID, CX6LX_QUERY, CX7_FW, CX7_PSID, CX7_QUERY, PSID_MISMATCH_LINE, FakeFlint, dev, make_runner,
    render_query)

A, B, C = "0000:18:00.0", "0000:29:00.0", "0000:3a:00.0"


def test_rendered_capture_parses_like_the_original():
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse
    original = parse("flint", CX7_QUERY)
    assert original["psid"] == CX7_PSID and original["fw_version"] == CX7_FW
    assert not original.get("fw_version_running")
    pending = parse("flint", render_query(CX7_QUERY, CX7_PSID, "28.43.1014", CX7_FW, "MCX75310AAS-NEAT"))
    assert pending["fw_version"] == "28.43.1014" and pending["fw_version_running"] == CX7_FW
    assert pending["part_number"] == "MCX75310AAS-NEAT"
    assert parse("flint", CX6LX_QUERY)["psid"] == CX6LX_PSID


@pytest.fixture
def image_file(tmp_path):
    """image_file(name, content) -> (path, sha256)."""
    def make(name="fw.bin", content=b"firmware image bytes"):
        path = tmp_path / name
        path.write_bytes(content)
        return str(path), hashlib.sha256(content).hexdigest()
    return make


def entry(path, sha, psid=CX7_PSID, version="28.43.1014", **extra):
    return dict(psid=psid, version=version, path=path, sha256=sha, **extra)


def results_by_device(results):
    out = {}
    for device, res, err in results:
        out[device] = err if err is not None else res
    return out


# ---------------------------------------------------------------- input (versions: test_versions.py)

def test_normalize_images():
    images = fw.normalize_images([dict(psid=" mt_0000000838 ", version="28.43.1014", path="/fw/a.bin",
                                       sha256="SHA256:" + "AB" * 32, part_numbers=["MCX75310AAS-NEAT_A1"],
                                       from_psids=["del0000000027", "MT_0000000838"])])
    assert images == [{"index": 0, "psid": "MT_0000000838", "version": "28.43.1014", "path": "/fw/a.bin",
                       "sha256": "ab" * 32, "part_numbers": ["MCX75310AAS-NEAT"], "from_psids": ["DEL0000000027"]}]


@pytest.mark.parametrize("raw, error, words", [
    ([], InvalidParameter, "at least one image"),
    ([dict(psid="MT_0000000001", version="28.43.1014", path="/a.bin")], InvalidParameter, "images[0].sha256 is required"),
    ([dict(psid="MT_0000000001", version="28.43", path="/a.bin", sha256="a" * 64)], InvalidValue,
     "images[0].version '28.43' is not a firmware version (allowed: three numbers"),
    ([dict(psid="MT_0000000001", version="latest", path="/a.bin", sha256="a" * 64)], InvalidValue, "images[0].version 'latest'"),
    ([dict(psid="MT_0000000001", version="1.2.3", path="/a.bin", sha256="abc")], InvalidValue, "images[0].sha256 must be 64"),
    ([dict(psid="MT_0000000001", version="1.2.3", path="/a.bin", sha256="a" * 64),
      dict(psid="mt_0000000001", version="1.2.4", path="/b.bin", sha256="b" * 64)], InvalidParameter,
     "images[0] and images[1] both apply to devices with PSID MT_0000000001"),
    ([dict(psid="MT_0000000012", version="1.2.3", path="/a.bin", sha256="a" * 64, from_psids=["MT_0000000011"]),
      dict(psid="MT_0000000011", version="1.2.4", path="/b.bin", sha256="b" * 64)], InvalidParameter, "PSID MT_0000000011"),
    ([dict(psid="MT_0000000001", version="1.2.3", path="/a.bin", sha256="a" * 64, part_numbers=["MCX1"]),
      dict(psid="MT_0000000001", version="1.2.4", path="/b.bin", sha256="b" * 64, part_numbers=["MCX2"])], None, None),
])
def test_normalize_images_errors(raw, error, words):
    if error is None:
        fw.normalize_images(raw)
        return
    with pytest.raises(error) as err:
        fw.normalize_images(raw)
    assert words in err.value.msg


def test_one_per_card():
    assert fw.one_per_card([A, "0000:18:00.1", B, "/dev/mst/mt4129_pciconf0", A]) == [
        A, B, "/dev/mst/mt4129_pciconf0"]


# ---------------------------------------------------------------- the pure decision

IMAGES = fw.normalize_images([
    entry("/fw/cx7.bin", "a" * 64),
    entry("/fw/cx6dx.bin", "b" * 64, psid="MT_0000000359", version="22.43.1014", from_psids=["DEL0000000027"]),
    entry("/fw/cx6lx.bin", "c" * 64, psid=CX6LX_PSID, version="26.43.1014", part_numbers=["MCX631102AN-ADAT"]),
])


@pytest.mark.parametrize("psid, part, want_index, reason", [
    (CX7_PSID, None, 0, None),
    ("mt_0000001244", None, 0, None),
    ("DEL0000000027", None, 1, None),
    (CX6LX_PSID, "MCX631102AN-ADAT_A1", 2, None),
    (CX6LX_PSID, "MCX631432AN-ADAB", None, "the image for PSID MT_0000000575 is only for part numbers MCX631102AN-ADAT; this device is MCX631432AN-ADAB"),
    (CX6LX_PSID, None, None, "this device is of unknown part number"),
    ("MT_0000000008", None, None,
     "no image for PSID MT_0000000008 (the images cover MT_0000001244, MT_0000000359, DEL0000000027, MT_0000000575)"),
])
def test_match_image(psid, part, want_index, reason):
    image, why = fw.match_image(IMAGES, psid, part)
    assert (image["index"] if image else None) == want_index
    assert why == reason if reason is None else why.endswith(reason)


@pytest.mark.parametrize("state, index, downgrade, psid_change, action", [
    (dev(burned="28.39.1002"), 0, False, False, "burn"),
    (dev(burned="28.43.1014"), 0, False, False, "none"),
    (dev(burned="28.43.1014", running="28.39.1002"), 0, False, False, "none"),
    (dev(burned="28.45.1020"), 0, True, False, "burn"),                      # downgrade allowed
    (dev(psid="DEL0000000027", burned="22.39.1002"), 1, False, True, "burn"),   # cross-flash allowed
    (dev(psid="DEL0000000027", burned="22.43.1014"), 1, False, True, "burn"),   # same version, PSID differs
    (dev(), None, False, False, "skipped"),
])
def test_decide(state, index, downgrade, psid_change, action):
    image = IMAGES[index] if index is not None else None
    decision = fw.decide("0000:18:00.0", state, image, allow_downgrade=downgrade, allow_psid_change=psid_change)
    assert decision["action"] == action
    assert decision["psid_change"] == (psid_change and action == "burn")


def test_decide_refuses_downgrade():
    with pytest.raises(Refused) as err:
        fw.decide(A, dev(burned="28.45.1020"), IMAGES[0])
    assert err.value.device == A and err.value.parameter == "allow_downgrade"
    assert "flash holds 28.45.1020, newer than images[0] (PSID MT_0000001244, version 28.43.1014" in err.value.msg


def test_decide_refuses_psid_change():
    with pytest.raises(Refused) as err:
        fw.decide(A, dev(psid="DEL0000000027", burned="22.39.1002"), IMAGES[1])
    assert err.value.parameter == "allow_psid_change"
    assert "PSID DEL0000000027" in err.value.msg and "to MT_0000000359" in err.value.msg


def test_decide_psid_change_checks_downgrade_too():
    with pytest.raises(Refused, match="allow_downgrade"):
        fw.decide(A, dev(psid="DEL0000000027", burned="22.45.1000"), IMAGES[1], allow_psid_change=True)


@pytest.mark.parametrize("digest, info, problems", [
    ("a" * 64, {"psid": CX7_PSID, "fw_version": "28.43.1014"}, []),
    ("f" * 64, None, ["sha256 of /fw/cx7.bin is %s, the task expects %s" % ("f" * 64, "a" * 64)]),
    ("a" * 64, {"psid": "MT_0000000838", "fw_version": "28.43.1014"},
     ["the file's PSID is MT_0000000838, the task says MT_0000001244"]),
    ("a" * 64, {"psid": CX7_PSID, "fw_version": "28.39.1002"},
     ["the file's FW Version is 28.39.1002, the task says 28.43.1014"]),
    ("a" * 64, {}, ["the file's PSID is unreadable, the task says MT_0000001244",
                    "the file's FW Version is unreadable, the task says 28.43.1014"]),
])
def test_image_problems(digest, info, problems):
    assert fw.image_problems(IMAGES[0], digest, info) == problems


def test_sha256_is_streamed(tmp_path):
    path = tmp_path / "big.bin"
    content = b"\x5a" * (fw.CHUNK * 2 + 17)
    path.write_bytes(content)
    assert fw.sha256_file(str(path)) == hashlib.sha256(content).hexdigest()


def test_argv():
    assert fw.query_args(A) == ["-d", A, "q"]
    assert fw.image_query_args("/fw/x.bin") == ["-i", "/fw/x.bin", "q"]
    assert fw.burn_args(A, "/fw/x.bin") == ["-d", A, "-i", "/fw/x.bin", "-y", "burn"]
    assert fw.burn_args(A, "/fw/x.bin", allow_psid_change=True) == ["-d", A, "-i", "/fw/x.bin", "-y", "--allow_psid_change", "burn"]


def test_state_from_query():
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse
    assert fw.state_from_query(A, parse("flint", CX7_QUERY)) == {
        "psid": CX7_PSID, "part_number": None, "burned": CX7_FW, "running": CX7_FW}
    with pytest.raises(MlnxError, match="no usable PSID"):
        fw.state_from_query(A, {"fw_version": "28.42.1000"})


# ---------------------------------------------------------------- converge: exact argv per case

def q(tool, device):
    return ("/usr/bin/" + tool, "-d", device, "q")


def iq(tool, path):
    return ("/usr/bin/" + tool, "-i", path, "q")


def burn(tool, device, path, *extra):
    return ("/usr/bin/" + tool, "-d", device, "-i", path, "-y") + extra + ("burn",)


def test_burn_all_devices_mft(image_file):
    path, sha = image_file()
    fake = FakeFlint({A: dev(), B: dev(), C: dev(burned="28.43.1014")}, {path: (CX7_PSID, "28.43.1014")})
    images = fw.normalize_images([entry(path, sha)])
    results = results_by_device(fw.converge(make_runner(fake), [A, B, C], images))
    assert fake.count() == collections.Counter({
        q("flint", A): 2, q("flint", B): 2, q("flint", C): 1,
        iq("flint", path): 1,                         # verified once, not per device
        burn("flint", A, path): 1, burn("flint", B, path): 1,
    })
    # nothing is burned before every device is read and the image verified
    first_burn = min(i for i, call in enumerate(fake.calls) if call[-1] == "burn")
    assert sorted(tuple(c) for c in fake.calls[:first_burn]) == sorted([
        q("flint", A), q("flint", B), q("flint", C), iq("flint", path)])
    assert fake.calls.index(list(iq("flint", path))) == 3      # image verified after all reads
    assert results[A] == {
        "device": A, "psid": CX7_PSID, "image": path, "target_version": "28.43.1014",
        "before": {"burned": CX7_FW, "running": CX7_FW}, "after": {"burned": "28.43.1014", "running": CX7_FW},
        "changed": True, "action": "burn", "pending_reset": True}
    assert results[C]["action"] == "none" and not results[C]["changed"] and not results[C]["pending_reset"]
    assert fw.summary([results[A], results[B], results[C]]) == (
        "burned %s 28.42.1000 -> 28.43.1014, %s 28.42.1000 -> 28.43.1014; reset pending on %s, %s" % (A, B, A, B))


def test_mstflint_names(image_file):
    path, sha = image_file()
    fake = FakeFlint({A: dev(CX6LX_PSID, CX6LX_FW)}, {path: (CX6LX_PSID, "26.43.1014")}, template=CX6LX_QUERY)
    images = fw.normalize_images([entry(path, sha, psid=CX6LX_PSID, version="26.43.1014")])
    results = results_by_device(fw.converge(make_runner(fake, "mstflint"), [A], images))
    assert fake.calls == [list(q("mstflint", A)), list(iq("mstflint", path)), list(burn("mstflint", A, path)),
                          list(q("mstflint", A))]
    assert results[A]["after"] == {"burned": "26.43.1014", "running": CX6LX_FW}


def test_check_mode_burns_nothing(image_file):
    path, sha = image_file()
    fake = FakeFlint({A: dev(), B: dev(burned="28.43.1014")}, {path: (CX7_PSID, "28.43.1014")})
    images = fw.normalize_images([entry(path, sha)])
    results = results_by_device(fw.converge(make_runner(fake), [A, B], images, check_mode=True))
    assert fake.count() == collections.Counter({q("flint", A): 1, q("flint", B): 1, iq("flint", path): 1})
    assert results[A]["action"] == "burn" and results[A]["changed"] and results[A]["pending_reset"]
    assert results[A]["after"] == {"burned": "28.43.1014", "running": CX7_FW}
    assert results[B]["action"] == "none" and not results[B]["changed"]
    assert fw.summary(list(results.values()), check_mode=True).startswith("would burn %s 28.42.1000 -> 28.43.1014" % A)


def test_check_mode_with_image_not_yet_staged():
    """A role stages images only for real: check mode reports the burn and that the file is
    not there yet, instead of failing; the real run still refuses a missing file."""
    fake = FakeFlint({A: dev()})
    images = fw.normalize_images([entry("/nonexistent/fw.bin", "a" * 64, version="28.43.1014")])
    results = results_by_device(fw.converge(make_runner(fake), [A], images, check_mode=True))
    assert fake.calls == [list(q("flint", A))]
    assert results[A]["action"] == "burn" and results[A]["image_staged"] is False
    with pytest.raises(Refused, match="is not a file on this host"):
        fw.converge(make_runner(FakeFlint({A: dev()})), [A], images)


def test_up_to_date_needs_no_image_file():
    fake = FakeFlint({A: dev(burned="28.43.1014")})
    images = fw.normalize_images([entry("/nonexistent/fw.bin", "a" * 64)])
    results = results_by_device(fw.converge(make_runner(fake), [A], images))
    assert fake.calls == [list(q("flint", A))]
    assert results[A]["action"] == "none" and not results[A]["changed"]


def test_pending_without_burn():
    """A burn of an earlier run not yet activated: nothing to burn, but a reset is pending."""
    fake = FakeFlint({A: dev(burned="28.43.1014", running=CX7_FW)})
    images = fw.normalize_images([entry("/fw/cx7.bin", "a" * 64)])
    results = results_by_device(fw.converge(make_runner(fake), [A], images))
    assert results[A]["action"] == "none" and not results[A]["changed"] and results[A]["pending_reset"]
    assert results[A]["before"] == {"burned": "28.43.1014", "running": CX7_FW}
    assert fw.summary([results[A]]) == "nothing to burn; reset pending on %s" % A


def test_one_failing_device_does_not_stop_the_others(image_file):
    path, sha = image_file()
    words = "\n    Current FW version on flash:  28.42.1000\n    New FW version:               28.43.1014\n\n" \
            "-E- Burning FS4 image failed: Flash operation timed out\n"
    fake = FakeFlint({A: dev(), B: dev(), C: dev()}, {path: (CX7_PSID, "28.43.1014")}, burn_fail={B: (1, words, "")})
    results = results_by_device(fw.converge(make_runner(fake), [A, B, C], fw.normalize_images([entry(path, sha)])))
    assert results[A]["after"]["burned"] == results[C]["after"]["burned"] == "28.43.1014"
    err = results[B]
    assert isinstance(err, ToolFailed) and err.device == B and err.rc == 1
    assert err.msg.startswith("%s: burning 28.42.1000 -> 28.43.1014 failed: /usr/bin/flint -d %s -i %s -y burn "
                              "failed with rc 1: Burning FS4 image failed: Flash operation timed out" % (B, B, path))
    assert fake.count()[burn("flint", C, path)] == 1 and fake.count()[q("flint", C)] == 2
    assert fake.count()[q("flint", B)] == 1        # not re-read after a failed burn


def test_semaphore_held_retried_then_clear_error(image_file):
    path, sha = image_file()
    held = (1, "-E- Cannot burn: the flash semaphore is held by another process\n", "")
    fake = FakeFlint({A: dev()}, {path: (CX7_PSID, "28.43.1014")}, burn_fail={A: held})
    sleeps = []
    results = results_by_device(fw.converge(make_runner(fake, sleeps=sleeps), [A], fw.normalize_images([entry(path, sha)])))
    assert fake.count()[burn("flint", A, path)] == 6            # 1 + 5 bounded retries
    assert len(sleeps) == 5 and sleeps == sorted(sleeps)
    assert "semaphore was still held after 5 retries" in results[A].msg and results[A].device == A


def test_burn_reported_success_but_flash_unchanged(image_file):
    path, sha = image_file()
    fake = FakeFlint({A: dev()}, {path: (CX7_PSID, "28.43.1014")}, stuck=[A])
    results = results_by_device(fw.converge(make_runner(fake), [A], fw.normalize_images([entry(path, sha)])))
    assert "reported success but the flash now holds 28.42.1000" in results[A].msg


def test_sha_mismatch_refuses_everything(image_file):
    path, _sha = image_file()
    fake = FakeFlint({A: dev(), B: dev()}, {path: (CX7_PSID, "28.43.1014")})
    with pytest.raises(Refused) as err:
        fw.converge(make_runner(fake), [A, B], fw.normalize_images([entry(path, "0" * 64)]))
    assert "images[0]" in err.value.msg and "the task expects " + "0" * 64 in err.value.msg
    assert fake.count() == collections.Counter({q("flint", A): 1, q("flint", B): 1})   # no flint -i, no burn


@pytest.mark.parametrize("file_psid, file_version, words", [
    ("MT_0000000838", "28.43.1014", "the file's PSID is MT_0000000838, the task says MT_0000001244"),
    (CX7_PSID, "28.39.1002", "the file's FW Version is 28.39.1002, the task says 28.43.1014"),
])
def test_image_content_mismatch_refuses_everything(image_file, file_psid, file_version, words):
    path, sha = image_file()
    fake = FakeFlint({A: dev(), B: dev()}, {path: (file_psid, file_version)})
    with pytest.raises(Refused, match=re.escape(words)):
        fw.converge(make_runner(fake), [A, B], fw.normalize_images([entry(path, sha)]))
    assert not [c for c in fake.calls if c[-1] == "burn"]


def test_one_bad_image_stops_the_good_one(image_file):
    good, good_sha = image_file("cx7.bin", b"cx7")
    bad, _bad_sha = image_file("cx6lx.bin", b"cx6lx")
    fake = FakeFlint({A: dev(), B: dev(CX6LX_PSID, CX6LX_FW)},
                     {good: (CX7_PSID, "28.43.1014"), bad: (CX6LX_PSID, "26.43.1014")})
    images = fw.normalize_images([entry(good, good_sha),
                                  entry(bad, "1" * 64, psid=CX6LX_PSID, version="26.43.1014")])
    with pytest.raises(Refused, match="images\\[1\\]"):
        fw.converge(make_runner(fake), [A, B], images)
    assert not [c for c in fake.calls if c[-1] == "burn"]


def test_missing_image_file_refused():
    fake = FakeFlint({A: dev()})
    with pytest.raises(Refused, match="/nonexistent/fw.bin is not a file on this host"):
        fw.converge(make_runner(fake), [A], fw.normalize_images([entry("/nonexistent/fw.bin", "a" * 64)]))


def test_downgrade_refused_before_anything(image_file):
    path, sha = image_file()
    fake = FakeFlint({A: dev(burned="28.39.1002"), B: dev(burned="28.45.1020")}, {path: (CX7_PSID, "28.43.1014")})
    with pytest.raises(Refused) as err:
        fw.converge(make_runner(fake), [A, B], fw.normalize_images([entry(path, sha)]))
    assert err.value.device == B and "allow_downgrade=true" in err.value.msg
    assert fake.count() == collections.Counter({q("flint", A): 1, q("flint", B): 1})


def test_downgrade_allowed(image_file):
    path, sha = image_file()
    fake = FakeFlint({A: dev(burned="28.45.1020")}, {path: (CX7_PSID, "28.43.1014")})
    results = results_by_device(fw.converge(make_runner(fake), [A], fw.normalize_images([entry(path, sha)]),
                                            allow_downgrade=True))
    assert results[A]["after"]["burned"] == "28.43.1014"
    assert fake.count()[burn("flint", A, path)] == 1


def test_psid_change(image_file):
    path, sha = image_file()
    images = fw.normalize_images([entry(path, sha, psid="MT_0000000359", version="22.43.1014",
                                        from_psids=["DEL0000000027"])])
    fake = FakeFlint({A: dev("DEL0000000027", "22.39.1002")}, {path: ("MT_0000000359", "22.43.1014")})
    with pytest.raises(Refused, match="allow_psid_change=true"):
        fw.converge(make_runner(fake), [A], images)
    assert not [c for c in fake.calls if c[-1] == "burn"]

    results = results_by_device(fw.converge(make_runner(fake), [A], images, allow_psid_change=True))
    assert fake.count()[burn("flint", A, path, "--allow_psid_change")] == 1
    assert results[A]["psid_change"] == {"from": "DEL0000000027", "to": "MT_0000000359"}
    assert results[A]["psid"] == "DEL0000000027" and results[A]["after"]["burned"] == "22.43.1014"
    # second run: the device now has the image's PSID and version
    again = results_by_device(fw.converge(make_runner(fake), [A], images, allow_psid_change=True))
    assert again[A]["action"] == "none"


def test_psid_mismatch_words_of_the_tool_reach_the_user(image_file):
    """If flint itself refuses (real -E- line), the device fails with those words."""
    path, sha = image_file()
    fake = FakeFlint({A: dev()}, {path: (CX7_PSID, "28.43.1014")}, burn_fail={A: (1, PSID_MISMATCH_LINE + "\n", "")})
    results = results_by_device(fw.converge(make_runner(fake), [A], fw.normalize_images([entry(path, sha)])))
    assert "PSID mismatch. The PSID on flash (DEL2420110034) differs" in results[A].msg


def test_skipped_device_and_require_image(image_file):
    path, sha = image_file()
    fake = FakeFlint({A: dev(), B: dev(CX6LX_PSID, CX6LX_FW)}, {path: (CX7_PSID, "28.43.1014")})
    images = fw.normalize_images([entry(path, sha)])
    results = results_by_device(fw.converge(make_runner(fake), [A, B], images))
    assert results[B]["action"] == "skipped" and not results[B]["changed"]
    assert results[B]["reason"] == "no image for PSID MT_0000000575 (the images cover MT_0000001244)"
    assert results[B]["image"] is None and results[B]["target_version"] is None
    assert results[B]["after"] == results[B]["before"] == {"burned": CX6LX_FW, "running": CX6LX_FW}

    fake = FakeFlint({A: dev(), B: dev(CX6LX_PSID, CX6LX_FW)}, {path: (CX7_PSID, "28.43.1014")})
    with pytest.raises(Refused) as err:
        fw.converge(make_runner(fake), [A, B], images, require_image=True)
    assert err.value.device == B and err.value.allowed == [CX7_PSID]
    assert B in err.value.msg and CX6LX_PSID in err.value.msg and "images cover MT_0000001244" in err.value.msg
    assert not [c for c in fake.calls if c[-1] == "burn"]


def test_part_number_from_discovery(image_file):
    path, sha = image_file()
    images = fw.normalize_images([entry(path, sha, part_numbers=["MCX75310AAS-NEAT"])])
    fake = FakeFlint({A: dev(), B: dev(), C: dev(part_number="MCX75310AAS-NEAT")}, {path: (CX7_PSID, "28.43.1014")})
    results = results_by_device(fw.converge(make_runner(fake), [A, B, C], images,
                                            part_numbers={A: "MCX75310AAS-NEAT", B: "MCX755106AS-HEAT"}))
    assert results[A]["action"] == "burn" and results[A]["part_number"] == "MCX75310AAS-NEAT"
    assert results[B]["action"] == "skipped" and "this device is MCX755106AS-HEAT" in results[B]["reason"]
    assert results[C]["action"] == "burn"                      # flint printed the part number


def test_unreadable_device_stops_everything(image_file):
    path, sha = image_file()
    fake = FakeFlint({A: dev()}, {path: (CX7_PSID, "28.43.1014")})
    with pytest.raises(ToolFailed) as err:
        fw.converge(make_runner(fake), [A, B], fw.normalize_images([entry(path, sha)]))
    assert err.value.msg.startswith("%s: cannot read the firmware" % B) and err.value.rc == 3
    assert not [c for c in fake.calls if c[-1] == "burn"]


def test_image_verified_once_for_many_devices(image_file, monkeypatch):
    path, sha = image_file()
    hashed = []
    real = fw.sha256_file
    monkeypatch.setattr(fw, "sha256_file", lambda p: hashed.append(p) or real(p))
    devices = ["0000:%02x:00.0" % bus for bus in (0x18, 0x29, 0x3a, 0x4b, 0x9a, 0xab, 0xba, 0xcb)]
    fake = FakeFlint({d: dev() for d in devices}, {path: (CX7_PSID, "28.43.1014")})
    results = fw.converge(make_runner(fake), devices, fw.normalize_images([entry(path, sha)]))
    assert hashed == [path] and fake.count()[iq("flint", path)] == 1
    assert all(err is None and res["changed"] for _d, res, err in results)
    assert [d for d, _r, _e in results] == devices


def test_garbage_query_output_is_a_clear_error():
    def execute(argv, env, timeout, data):
        return 0, "Segmentation fault (core dumped)\n", ""
    with pytest.raises(MlnxError) as err:
        fw.converge(make_runner(execute), [A], fw.normalize_images([entry("/fw/cx7.bin", "a" * 64)]))
    assert err.value.msg.startswith(A + ": ") and err.value.device == A


def test_hung_burn_is_stopped_and_reported(image_file):
    import subprocess
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import ToolTimeout
    path, sha = image_file()
    fake = FakeFlint({A: dev(), B: dev()}, {path: (CX7_PSID, "28.43.1014")})

    def execute(argv, env, timeout, data):
        if argv[-1] == "burn" and argv[2] == A:
            raise subprocess.TimeoutExpired(argv, timeout)
        return fake(argv, env, timeout, data)
    results = results_by_device(fw.converge(make_runner(execute), [A, B], fw.normalize_images([entry(path, sha)])))
    assert isinstance(results[A], ToolTimeout) and "did not finish within 900s" in results[A].msg
    assert results[B]["after"]["burned"] == "28.43.1014"


# ---------------------------------------------------------------- end to end, against the simulator

def _sim_images(host, **extra_by_psid):
    return fw.normalize_images(host.newer_images(**extra_by_psid))


def _sim_converge(family, images, **kwargs):
    from ansible_collections.gpufabric.mlnx.plugins.module_utils import _devices as devices_
    runner = Runner(family, retry_delay=0)
    found = devices_.discover(runner)
    selected = fw.one_per_card(devices_.select(["all"], None, found))
    results = fw.converge(runner, selected, images,
                          part_numbers={d["address"]: d.get("part_number") for d in found}, **kwargs)
    return runner, results


def test_sim_dgx_h100_burn_idempotent_reboot(sim_host):
    host = sim_host("dgx-h100")
    cards = host.cards()
    images = _sim_images(host)
    assert len(images) == 2                                  # MT_0000000838 (8 compute) + MT_0000000834 (storage)

    # check mode: verifies, burns nothing
    _runner, results = _sim_converge("mft", images, check_mode=True)
    assert all(err is None for _d, _r, err in results)
    assert len(results) == len(cards) >= 8
    assert all(res["action"] == "burn" and res["changed"] for _d, res, _e in results)
    assert not host.burns("flint")
    assert len([argv for argv in host.argvs("flint") if argv[1] == "-i"]) == len(images)
    assert all(card["fw"]["burned"] == "28.42.1000" for card in host.cards())

    # first run: every card burned once, one flint each, then pending a reset
    host.clear_calls()
    _runner, results = _sim_converge("mft", images)
    assert all(err is None for _d, _r, err in results), [str(e) for _d, _r, e in results if e]
    by = {dev_: res for dev_, res, _e in results}
    assert len(by) == len(cards) >= 8
    assert all(res["changed"] and res["pending_reset"] for res in by.values())
    assert all(res["after"] == {"burned": "28.43.1014", "running": "28.42.1000"} for res in by.values())
    assert host.burns("flint") == sorted(["flint", "-d", d, "-i", by[d]["image"], "-y", "burn"] for d in by)
    assert len([argv for argv in host.argvs("flint") if argv[1] == "-i"]) == len(images)   # each image once
    assert all(card["fw"]["burned"] == "28.43.1014" for card in host.cards())

    # second run: nothing to burn, still pending; no image touched
    host.clear_calls()
    _runner, results = _sim_converge("mft", images)
    assert not any(res["changed"] for _d, res, _e in results)
    assert all(res["action"] == "none" and res["pending_reset"] for _d, res, _e in results)
    assert not [argv for argv in host.argvs("flint") if argv[-1] == "burn" or argv[1] == "-i"]

    # a reboot activates the firmware: nothing pending any more
    host.mlxsim("reboot")
    _runner, results = _sim_converge("mft", images)
    assert not any(res["changed"] or res["pending_reset"] for _d, res, _e in results)
    assert all(res["before"] == {"burned": "28.43.1014", "running": "28.43.1014"} for _d, res, _e in results)


def test_sim_mstflint_names(sim_host):
    host = sim_host("cx6dx-roce")
    images = _sim_images(host)
    _runner, results = _sim_converge("mstflint", images)
    by = {d: res for d, res, err in results}
    assert list(by) == ["0000:3b:00.0", "0000:d8:00.0"]        # one per dual-port card
    assert host.burns("mstflint") == sorted(["mstflint", "-d", d, "-i", images[0]["path"], "-y", "burn"] for d in by)
    assert not host.argvs("flint")
    assert all(res["after"]["burned"] == "22.43.1014" and res["pending_reset"] for res in by.values())


def test_sim_burn_fail_on_one_device(sim_host):
    host = sim_host("cx6dx-roce")
    broken = host.cards()[0]["functions"][0]["pci"]
    host.mlxsim("fault", "add", "burn_fail", "--device", broken)
    _runner, results = _sim_converge("mft", _sim_images(host))
    failed = {d: err for d, _r, err in results if err is not None}
    assert list(failed) == [broken]
    assert "rc 1" in failed[broken].msg
    assert "Burning FS4 image failed: Firmware verifying failed!" in failed[broken].msg
    done = [res for _d, res, err in results if err is None]
    assert len(done) == 1 and done[0]["after"]["burned"] == "22.43.1014"


def test_sim_semaphore_held_is_retried(sim_host):
    host = sim_host("cx6dx-roce")
    busy = host.cards()[0]["functions"][0]["pci"]
    host.mlxsim("fault", "add", "semaphore_held", "count=2", "--device", busy)
    _runner, results = _sim_converge("mft", _sim_images(host))
    assert all(err is None and res["changed"] for _d, res, err in results)
    queries = [argv for argv in host.argvs("flint") if argv == ["flint", "-d", busy, "q"]]
    assert len(queries) == 2 + 1 + 1                           # 2 refused, the read, the re-read


def test_sim_semaphore_never_released_is_a_clear_error(sim_host):
    host = sim_host("cx6dx-roce")
    busy = host.cards()[0]["functions"][0]["pci"]
    host.mlxsim("fault", "add", "semaphore_held", "count=100", "--device", busy)
    with pytest.raises(ToolFailed) as err:
        _sim_converge("mft", _sim_images(host))
    assert err.value.device == busy and "semaphore was still held after 5 retries" in err.value.msg
    assert "Can not obtain Flash semaphore" in err.value.msg
    assert not host.burns("flint")


def test_sim_cross_flash_oem_psid(sim_host):
    host = sim_host("cx6dx-roce")
    oem = host.cards()[0]["functions"][0]["pci"]
    host.mlxsim("fault", "add", "oem_psid", "psid=DEL0000000027", "--device", oem)
    images = _sim_images(host, MT_0000000359={"from_psids": ["DEL0000000027"]})
    with pytest.raises(Refused, match="allow_psid_change"):
        _sim_converge("mft", images)
    assert not host.burns("flint")
    _runner, results = _sim_converge("mft", images, allow_psid_change=True)
    by = {d: res for d, res, err in results}
    assert by[oem]["psid_change"] == {"from": "DEL0000000027", "to": "MT_0000000359"}
    assert ["flint", "-d", oem, "-i", images[0]["path"], "-y", "--allow_psid_change", "burn"] in host.burns("flint")
    _runner, again = _sim_converge("mft", images, allow_psid_change=True)
    assert not any(res["changed"] for _d, res, _e in again)


# ---------------------------------------------------------------- images_problems (the controller's check)

def test_images_problems_lists_every_bad_image_at_once(image_file):
    good, good_sha = image_file("cx7.bin", b"cx7")
    wrong_psid, wrong_psid_sha = image_file("other.bin", b"other")
    bad_sha, _sha = image_file("cx6lx.bin", b"cx6lx")
    fake = FakeFlint({}, {good: (CX7_PSID, "28.43.1014"), wrong_psid: ("MT_0000000838", "28.43.1014")})
    images = fw.normalize_images([
        entry(good, good_sha),
        entry("/nonexistent/fw.bin", "a" * 64, psid=CX6LX_PSID, version="26.43.1014"),
        entry(bad_sha, "1" * 64, psid="MT_0000000223", version="26.43.1014"),
        entry(wrong_psid, wrong_psid_sha, psid="MT_0000000884", version="28.43.1014")])
    assert fw.images_problems(make_runner(fake), images) == [
        "images[1] (PSID %s, version 26.43.1014, /nonexistent/fw.bin): /nonexistent/fw.bin is not a file on this "
        "host" % CX6LX_PSID,
        "images[2] (PSID MT_0000000223, version 26.43.1014, %s) is refused: sha256 of %s is %s, the task expects %s"
        % (bad_sha, bad_sha, hashlib.sha256(b"cx6lx").hexdigest(), "1" * 64),
        "images[3] (PSID MT_0000000884, version 28.43.1014, %s) is refused: the file's PSID is MT_0000000838, the "
        "task says MT_0000000884" % wrong_psid]
    # each image read once, as a burn reads it: flint -i FILE q only for the files whose sha256 is right
    assert fake.count() == collections.Counter({iq("flint", good): 1, iq("flint", wrong_psid): 1})


def test_images_problems_without_flint_or_mstflint_says_so_and_still_checks_sha256(image_file):
    good, good_sha = image_file("cx7.bin", b"cx7")
    fake = FakeFlint({}, {good: (CX7_PSID, "28.43.1014")})
    runner = Runner("auto", execute=fake, which=lambda name: None)
    images = fw.normalize_images([entry(good, good_sha), entry(good, "2" * 64, psid=CX6LX_PSID)])
    found = fw.images_problems(runner, images)
    assert len(found) == 2 and not fake.calls
    assert found[0].startswith("images[1] (PSID %s, version 28.43.1014, %s) is refused: sha256 of" % (CX6LX_PSID, good))
    assert found[1].startswith("the PSID and FW version inside the images cannot be read: no NVIDIA NIC "
                               "configuration tool found on PATH: install mlxconfig (NVIDIA Firmware Tools")
    assert found[1].endswith("; install NVIDIA MFT (flint) or mstflint on this host")
    assert fw.images_problems(runner, []) == []


# item by item, several members of each class an image is refused for: a version of other than three numbers, a
# path that is no .bin file, a part number that is empty or not one word
BAD_VERSIONS = ("28.43", "28.43.2566.1", "28", "28.43.x", "\u0662\u0668.43.2566", 28.43, "28..2566", " 28.43.2566 x",
                True)
BAD_PATHS = ("/srv/fw", "/srv/fw/", "/srv/fw/a.zip", "/srv/fw/a.bin.zip", "/srv/fw/a.bin/", "/srv/fw/.bin/",
             "/srv/fw/a.bin\x00", ["/a.bin"])
BAD_PARTS = ([""], [" "], ["MCX 75310"], [5], ["MCX;x"], "MCX1", [None])


@pytest.mark.parametrize("change, words", [({"version": v}, "images[0].version") for v in BAD_VERSIONS]
                         + [({"path": p}, "images[0].path") for p in BAD_PATHS]
                         + [({"part_numbers": n}, "images[0].part_numbers") for n in BAD_PARTS])
def test_an_image_outside_its_grammar_is_refused_naming_the_key(change, words):
    raw = dict(dict(psid="MT_0000000838", version="28.43.2566", path="/srv/fw/a.bin", sha256="a" * 64), **change)
    with pytest.raises(InvalidValue) as err:
        fw.normalize_images([raw])
    assert err.value.parameter.startswith(words), (err.value.parameter, err.value.msg)


@pytest.mark.parametrize("version, path", [("28.43.2566", "/srv/fw/fw-ConnectX7-rel-28_43_2566.signed.bin"),
                                           ("22.36.1010", "relative/dir/image.BIN"), ("0.0.1", "/a.bin")])
def test_images_in_the_grammar_are_taken(version, path):
    assert fw.normalize_images([dict(psid="MT_0000000838", version=version, path=path, sha256="a" * 64,
                                     part_numbers=["MCX75310AAS-NEAT_Ax", "900-9D3B6-00CV-AA0"])])[0]["path"] == path
