# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Image actions of the NVUE emulator: fetch (file:// and http://), install, boot-next, reboot."""
import functools
import http.server
import threading
import time
import urllib.error

import pytest

NAME = "cumulus-linux-5.11.0-mlx-amd64.bin"


@pytest.fixture
def image(switch, tmp_path):
    path = tmp_path / "www" / NAME
    path.parent.mkdir()
    switch.admin("mkimage", "--release", "5.11.0", "--build-id", "5.11.0.0026", "-o", str(path))
    return path


@pytest.fixture
def web(image):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(image.parent))
    handler.log_message = lambda *a: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def fetch(switch, url):
    aid = switch.ok("POST", "/system/image", {"@fetch": {"state": "start", "parameters": {"remote-url": url}}})
    assert isinstance(aid, int)
    return switch.wait_action(aid)


def install(switch, name=NAME, force=False):
    aid = switch.ok("POST", "/system/image/files/%s" % name,
                    {"@install": {"state": "start", "parameters": {"force": force}}})
    return switch.wait_action(aid)


def refused(switch):
    try:
        switch.call("GET", "/system/version")
    except urllib.error.URLError as exc:
        return isinstance(exc.reason, ConnectionRefusedError)
    except ConnectionRefusedError:
        return True
    return False


def wait_up(switch, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not refused(switch):
            return
        time.sleep(0.05)
    raise AssertionError("nvued did not come back")


def test_fetch_install_boot_next_reboot_keeps_saved_config_and_loses_unsaved(make_switch, tmp_path, web):
    # auto-save off before 5.9; a 3 s reboot, so the poll below sees it down also on a loaded machine (at 0.5 s a
    # fresh clone's full run under load missed the window)
    sw = make_switch("leaf07", release="5.8.0", reboot_seconds=3)
    sw.admin("mkimage", "--release", "5.11.0", "--build-id", "5.11.0.0026", "-o", str(tmp_path / "www" / NAME))
    act = fetch(sw, "%s/%s" % (web, NAME))
    assert act["state"] == "action_success", act
    assert NAME in sw.get("/system/image")["files"]
    sw.change("/interface/swp1/link", {"mtu": 9000})
    sw.ok("PATCH", "/revision/applied", {"state": "save", "auto-prompt": {"ays": "ays_yes"}})
    sw.change("/interface/swp2/link", {"mtu": 4000})     # applied, never saved
    pending = sw.new_rev()
    act = install(sw)
    assert act["state"] == "action_success", act
    img = sw.get("/system/image")
    assert img["current"] == "1" and img["next"] == "2"
    assert img["partition2"] == {"build-id": "5.11.0.0026", "release": "5.11.0"}
    assert sw.ok("PATCH", "/system/image", {"next": "2"}) == {"next": "2"}
    mark = sw.mark()
    aid = sw.ok("POST", "/system", {"@reboot": {"state": "start", "parameters": {}}})
    assert isinstance(aid, int)
    deadline = time.time() + 10
    while not refused(sw) and time.time() < deadline:
        time.sleep(0.02)
    assert refused(sw)
    wait_up(sw)
    version = sw.get("/system/version")
    assert version["product-release"] == "5.11.0" and version["image"]["build-id"] == "5.11.0.0026"
    assert sw.get("/system/image")["current"] == "2"
    assert sw.get("/interface/swp1/link/mtu?rev=applied") == 9000       # saved: kept
    assert sw.get("/interface/swp2/link/mtu?rev=applied") == 9216       # unsaved: lost
    assert sw.call("GET", "/revision/%s" % pending)[0] == 404          # pending revisions dropped
    booted = sw.since(mark, "booted")
    assert [b["release"] for b in booted] == ["5.11.0"]
    assert [e["event"] for e in sw.since(mark) if e["event"] in ("reboot", "booted")] == ["reboot", "booted"]


def test_fetch_a_file_url(switch, image):
    act = fetch(switch, image.as_uri())
    assert act["state"] == "action_success"
    assert switch.get("/system/image")["files"][NAME]["release"] == "5.11.0"
    assert [e["url"] for e in switch.events("fetch")] == [image.as_uri()]


def test_fetch_of_a_missing_file_is_an_action_error(switch, tmp_path):
    act = fetch(switch, (tmp_path / "nothing" / NAME).as_uri())
    assert act["state"] == "action_error" and "fetch" in act["status"]


def test_a_corrupt_image_install_is_an_action_error(switch, tmp_path):
    bad = tmp_path / "cumulus-linux-5.12.0-mlx-amd64.bin"
    bad.write_text("this is not an image\n")
    assert fetch(switch, bad.as_uri())["state"] == "action_success"
    act = install(switch, bad.name)
    assert act["state"] == "action_error"
    assert act["status"] == "image %s: not a Cumulus Linux image (no image header)" % bad.name
    assert switch.get("/system/image")["next"] == "1"


def test_install_of_an_unfetched_file_is_404_and_boot_next_needs_an_image(switch):
    status, body, _h = switch.call("POST", "/system/image/files/%s" % NAME,
                                   {"@install": {"state": "start", "parameters": {}}})
    assert status == 404 and NAME in body["message"]
    status, body, _h = switch.call("PATCH", "/system/image", {"next": "2"})
    assert status == 400 and "partition 2 holds no image" in body["message"]


def test_reinstalling_the_running_release_needs_force(switch, tmp_path):
    same = tmp_path / "cumulus-linux-5.9.1-mlx-amd64.bin"
    switch.admin("mkimage", "--release", "5.9.1", "-o", str(same))
    fetch(switch, same.as_uri())
    assert install(switch, same.name)["state"] == "action_error"
    assert install(switch, same.name, force=True)["state"] == "action_success"
