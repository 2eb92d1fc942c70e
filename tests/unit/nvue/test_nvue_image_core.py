# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pinned switch OS (plugins/module_utils/_nvue_image.py) against the NVUE emulator over HTTPS: what the switch's
event log shows an upgrade did - one install, ONE reboot, the configuration kept - and every refusal named before the
step it protects."""
import hashlib

import pytest
from nvue_helpers import rest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue import NvueError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_image import upgrade

PIN = "5.11.0"
NAME = "cumulus-linux-5.11.0-mlx-amd64.bin"
FAST = dict(interval=0.05, action_timeout=20, reboot_timeout=30)
CHANGES = ("fetch", "install", "installed", "boot-next", "reboot", "booted", "save", "apply")


@pytest.fixture
def pinned(tmp_path, switch):
    """(file:// URL, sha256) of a fake 5.11.0 image."""
    path = tmp_path / "www" / NAME
    path.parent.mkdir()
    switch.admin("mkimage", "--release", PIN, "--build-id", "5.11.0.0026", "-o", str(path))
    return path.as_uri(), hashlib.sha256(path.read_bytes()).hexdigest()


def changes(sw, mark):
    """The events since ``mark`` that change the switch, in order."""
    return [e["event"] for e in sw.since(mark) if e["event"] in CHANGES]


def running(sw):
    return sw.get("/system/version")["product-release"]


def test_an_upgrade_installs_once_reboots_once_and_a_rerun_does_nothing(switch, pinned):
    url, digest = pinned
    mark = switch.mark()
    done = upgrade(rest(switch), PIN, url, digest, **FAST)
    assert done == {"changed": True, "release_before": "5.9.1", "release": PIN, "partition": "2", "saved": False,
                    "actions": ["fetch", "install", "boot-next", "reboot"], "reboots": 1, "sha256_verified": True}
    assert changes(switch, mark) == ["fetch", "install", "installed", "boot-next", "reboot", "booted"]
    assert [e["release"] for e in switch.since(mark, "booted")] == [PIN]
    assert running(switch) == PIN and switch.get("/system/image")["current"] == "2"

    mark = switch.mark()
    again = upgrade(rest(switch), PIN, url, digest, **FAST)
    assert again["changed"] is False and again["actions"] == [] and again["reboots"] == 0
    assert changes(switch, mark) == []
    assert [(e["event"], e["path"]) for e in switch.since(mark)] == [("read", "/system/version")]  # nothing else read


def test_check_mode_predicts_and_changes_nothing(switch, pinned):
    url, digest = pinned
    mark = switch.mark()
    predicted = upgrade(rest(switch), PIN, url, digest, check_mode=True, **FAST)
    assert changes(switch, mark) == []
    assert running(switch) == "5.9.1" and switch.get("/system/image")["files"] == {}
    real = upgrade(rest(switch), PIN, url, digest, **FAST)
    for key in ("changed", "release_before", "release", "actions", "reboots", "partition"):
        assert predicted[key] == real[key], key


def test_the_other_partition_already_holding_the_pin_is_booted_without_a_fetch(switch, pinned):
    url, digest = pinned
    aid = switch.ok("POST", "/system/image", {"@fetch": {"state": "start", "parameters": {"remote-url": url}}})
    switch.wait_action(aid)
    aid = switch.ok("POST", "/system/image/files/" + NAME, {"@install": {"state": "start", "parameters": {}}})
    assert switch.wait_action(aid)["state"] == "action_success"
    switch.ok("PATCH", "/system/image", {"next": "1"})      # installed, but not what boots next
    mark = switch.mark()
    predicted = upgrade(rest(switch), PIN, url, digest, check_mode=True, **FAST)
    assert predicted["actions"] == ["boot-next", "reboot"]
    done = upgrade(rest(switch), PIN, url, digest, **FAST)
    assert done["actions"] == ["boot-next", "reboot"] and done["reboots"] == 1
    assert changes(switch, mark) == ["boot-next", "reboot", "booted"]
    assert running(switch) == PIN


def test_a_partition_holding_the_pin_needs_no_url_and_without_one_a_fetch_is_refused(switch, pinned):
    """A roll back to the release the switch ran before: the other partition holds it, so the leaf role gives no URL
    (switch_os_target's boot action) - boot-next and one reboot. A switch that would need the image fetched is
    refused without a URL, naming the partition, before anything changes."""
    url, digest = pinned
    mark = switch.mark()
    with pytest.raises(NvueError) as err:
        upgrade(rest(switch), PIN, None, digest, **FAST)
    assert err.value.parameter == "url" and err.value.msg == (
        "leaf01: 5.9.1 needs the image of 5.11.0 fetched and installed (partition 2 holds nothing), but no url was "
        "given; nothing was changed")
    assert changes(switch, mark) == []     # read only
    aid = switch.ok("POST", "/system/image", {"@fetch": {"state": "start", "parameters": {"remote-url": url}}})
    switch.wait_action(aid)
    aid = switch.ok("POST", "/system/image/files/" + NAME, {"@install": {"state": "start", "parameters": {}}})
    assert switch.wait_action(aid)["state"] == "action_success"
    switch.ok("PATCH", "/system/image", {"next": "1"})
    done = upgrade(rest(switch), PIN, None, digest, **FAST)
    assert done["actions"] == ["boot-next", "reboot"] and running(switch) == PIN


def test_a_downgrade_is_refused_before_anything_changes(make_switch, pinned):
    url, digest = pinned
    sw = make_switch("leaf02", release="5.12.0")
    mark = sw.mark()
    with pytest.raises(NvueError) as err:
        upgrade(rest(sw), PIN, url, digest, **FAST)
    assert "leaf02: downgrade from 5.12.0 to 5.11.0 refused" in err.value.msg
    assert err.value.parameter == "allow_downgrade"
    assert changes(sw, mark) == [] and running(sw) == "5.12.0"
    with pytest.raises(NvueError, match="downgrade from 5.12.0 to 5.11.0 refused"):
        upgrade(rest(sw), PIN, url, digest, check_mode=True, **FAST)


def test_an_allowed_downgrade_is_installed(make_switch, pinned):
    url, digest = pinned
    sw = make_switch("leaf02", release="5.12.0")
    done = upgrade(rest(sw), PIN, url, digest, allow_downgrade=True, **FAST)
    assert done["release_before"] == "5.12.0" and done["reboots"] == 1 and running(sw) == PIN
    assert [e["force"] for e in sw.events("install")] == [True]


def test_a_corrupt_image_is_the_switch_s_action_error_and_no_reboot(switch, tmp_path):
    bad = tmp_path / "bad" / NAME
    bad.parent.mkdir()
    bad.write_text("this is not an image\n")
    mark = switch.mark()
    with pytest.raises(NvueError) as err:
        upgrade(rest(switch), PIN, bad.as_uri(), hashlib.sha256(bad.read_bytes()).hexdigest(), **FAST)
    assert "leaf01: install %s failed" % NAME in err.value.msg and "ended action_error" in err.value.msg
    assert "not a Cumulus Linux image (no image header)" in err.value.msg
    assert changes(switch, mark) == ["fetch", "install"] and running(switch) == "5.9.1"


def test_a_missing_image_is_the_fetch_s_action_error(switch, tmp_path):
    with pytest.raises(NvueError, match=r"leaf01: fetch file://.* failed: action \d+ ended action_error: fetch"):
        upgrade(rest(switch), PIN, (tmp_path / "nowhere" / NAME).as_uri(), "ab" * 32, **FAST)


def test_a_sha256_mismatch_is_refused_before_the_install(switch, pinned):
    url, digest = pinned
    wrong = "0123456789abcdef" * 4
    mark = switch.mark()
    with pytest.raises(NvueError) as err:
        upgrade(rest(switch), PIN, url, wrong, **FAST)
    assert "has sha256 %s, not the pinned %s: not installed" % (digest, wrong) in err.value.msg
    assert err.value.parameter == "sha256"
    assert changes(switch, mark) == ["fetch"]


def test_an_image_of_another_release_is_refused_before_the_install(switch, tmp_path):
    path = tmp_path / "www" / NAME
    path.parent.mkdir()
    switch.admin("mkimage", "--release", "5.12.0", "-o", str(path))      # misnamed: holds 5.12.0
    mark = switch.mark()
    with pytest.raises(NvueError, match="holds release 5.12.0, not the pinned 5.11.0: not installed"):
        upgrade(rest(switch), PIN, path.as_uri(), hashlib.sha256(path.read_bytes()).hexdigest(), **FAST)
    assert changes(switch, mark) == ["fetch"]


def test_unsaved_configuration_is_saved_before_the_reboot_and_survives_it(make_switch, pinned):
    url, digest = pinned
    sw = make_switch("leaf03", extra=("--auto-save", "off"))
    sw.change("/interface/swp1/link", {"mtu": 9000})       # applied, not saved
    assert sw.get("/?rev=startup&diff=applied") != []
    mark = sw.mark()
    done = upgrade(rest(sw), PIN, url, digest, **FAST)
    assert done["saved"] is True
    events = changes(sw, mark)
    assert events.index("save") < events.index("reboot") and events.count("reboot") == 1
    assert running(sw) == PIN and sw.get("/interface/swp1/link/mtu?rev=applied") == 9000


def test_unsaved_configuration_without_save_before_reboot_is_refused_before_the_fetch(make_switch, pinned):
    url, digest = pinned
    sw = make_switch("leaf03", extra=("--auto-save", "off"))
    sw.change("/interface/swp1/link", {"mtu": 9000})
    mark = sw.mark()
    with pytest.raises(NvueError) as err:
        upgrade(rest(sw), PIN, url, digest, save_before_reboot=False, **FAST)
    assert "leaf03 has configuration changes that are applied but not saved (interface.swp1.link.mtu)" in err.value.msg
    assert err.value.parameter == "save_before_reboot"
    assert changes(sw, mark) == []


SLOW_REBOOT = dict(interval=0.05, action_timeout=20, reboot_timeout=1.5)


def test_a_reboot_longer_than_reboot_timeout_is_named(switch, pinned):
    url, digest = pinned
    switch.admin("fault", "set", "reboot_slow", "30")
    with pytest.raises(NvueError) as err:
        upgrade(rest(switch, timeout=2), PIN, url, digest, **SLOW_REBOOT)
    assert "leaf01 did not come back within reboot_timeout 1.5 s after the reboot" in err.value.msg
    assert err.value.parameter == "reboot_timeout"
    assert len(switch.events("reboot")) == 1


@pytest.mark.parametrize("release, url, sha256, parameter", [
    ("5.11", "http://mirror.example/" + NAME, "ab" * 32, "release"),
    (PIN, "ftp://mirror.example/" + NAME, "ab" * 32, "url"),
    (PIN, "http://mirror.example/images/", "ab" * 32, "url"),
    (PIN, "http://mirror.example/" + NAME + "; reboot", "ab" * 32, "url"),
    (PIN, "http://mirror.example/" + NAME, "ab" * 16, "sha256"),
])
def test_bad_input_is_named_before_anything_is_sent(switch, release, url, sha256, parameter):
    mark = switch.mark()
    with pytest.raises(NvueError) as err:
        upgrade(rest(switch), release, url, sha256, **FAST)
    assert err.value.parameter == parameter and err.value.msg.startswith(parameter + ": ")
    assert switch.since(mark) == []


class LosesConfig:
    """The emulator's switch, except that after the reboot the applied configuration lacks the swp1 MTU (a boot that
    did not keep the configuration, which the emulator itself never does)."""

    def __init__(self, switch):
        self._switch = switch
        self.name = switch.name
        self.rebooted = False

    def __getattr__(self, name):
        return getattr(self._switch, name)

    def reboot(self):
        self._switch.reboot()
        self.rebooted = True

    def get(self, segments, rev="applied", filled=False):
        tree = self._switch.get(segments, rev, filled)
        if self.rebooted and rev == "applied" and not segments:
            tree["interface"]["swp1"]["link"].pop("mtu")
        return tree


def test_a_configuration_that_did_not_survive_the_reboot_is_named(make_switch, pinned):
    url, digest = pinned
    sw = make_switch("leaf04")
    sw.change("/interface/swp1/link", {"mtu": 9000})      # auto-save on: saved
    with pytest.raises(NvueError) as err:
        upgrade(LosesConfig(rest(sw)), PIN, url, digest, **FAST)
    assert "leaf04: the configuration did not survive the reboot" in err.value.msg
    assert err.value.msg.endswith("at interface.swp1.link.mtu")
