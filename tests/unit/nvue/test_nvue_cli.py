# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The emulator's nv CLI, run as a subprocess against nvued's unix socket."""
import json
import os
import subprocess
import sys

import pytest

from nvue_helpers import BIN


def test_set_creates_once_then_apply_prints_applied_and_saved(switch):
    res = switch.nv("set", "interface", "swp1", "link", "mtu", "9000")
    assert (res.returncode, res.stdout) == (0, "created [rev_id: 1]\n")
    res = switch.nv("set", "interface", "swp1", "link", "state", "up")
    assert (res.returncode, res.stdout) == (0, "")
    assert switch.get("/interface/swp1/link?rev=1&filled=false") == {
        "speed": "400G", "mtu": 9000, "state": {"up": {}}}
    res = switch.nv("config", "apply", "-y")
    assert (res.returncode, res.stdout) == (0, "applied_and_saved [rev_id: 1]\n")
    assert switch.events("apply")[-1]["client"] == "cli"
    assert switch.nv("set", "system", "timezone", "UTC").stdout == "created [rev_id: 2]\n"


def test_apply_prints_applied_without_auto_save_and_save_prints_saved(make_switch):
    sw = make_switch("leaf09", release="5.8.0", extra=("--first-apply-done",))
    sw.nv("set", "qos", "roce", "mode", "lossless")
    res = sw.nv("config", "apply")                         # no warning: no question
    assert (res.returncode, res.stdout) == (0, "applied [rev_id: 1]\n")
    assert sw.get("/qos/roce/mode?rev=applied") == "lossless"
    res = sw.nv("config", "save")
    assert (res.returncode, res.stdout) == (0, "saved\n")
    assert sw.get("/qos/roce/mode?rev=startup") == "lossless"


def test_the_hostname_warning_asks_and_eof_is_no(switch):
    switch.nv("config", "apply", "-y")                      # nothing pending
    switch.nv("set", "system", "timezone", "UTC")
    switch.nv("config", "apply", "-y")
    switch.nv("set", "system", "hostname", "Leaf-1")
    res = switch.nv("config", "apply", stdin="")
    assert res.returncode == 1
    assert "Warning: current hostname `leaf01` will be replaced with `Leaf-1`" in res.stdout
    assert "Are you sure? [y/N]" in res.stdout
    assert switch.get("/system/hostname") == "leaf01"
    res = switch.nv("config", "apply", stdin="y\n")
    assert res.returncode == 0 and res.stdout.endswith("applied_and_saved [rev_id: 2]\n")
    assert switch.get("/system/hostname") == "Leaf-1"


def test_invalid_apply_prints_the_issue(switch):
    switch.nv("set", "router", "bgp", "autonomous-system", "65101")
    switch.nv("set", "router", "bgp", "enable", "on")           # no router-id anywhere: the apply refuses it
    res = switch.nv("config", "apply", "-y")
    assert res.returncode == 1
    assert "Config invalid at router.bgp.enable: BGP requires router-id to be set globally or in the VRF." \
        in res.stderr


def test_a_value_outside_the_schema_is_refused_by_nv_set(switch):
    res = switch.nv("set", "interface", "swp3", "link", "mtu", "10000")
    assert res.returncode == 1
    assert "interface.swp3.link.mtu: 10000 is greater than the maximum of 9216" in res.stderr, res.stderr


@pytest.mark.parametrize("argv", [
    ("set", "system", "m123ssage", "pre-login", "WARNING"),
    ("set", "frobnicate", "x", "1"),
    ("set", "interface"),
    ("config", "bogus"),
    ("show", "nothing"),
    ("action", "reboot", "everything"),
])
def test_bad_syntax_is_invalid_command(switch, argv):
    res = switch.nv(*argv)
    assert res.returncode == 1
    assert res.stderr.strip() == "Invalid Command: %s" % " ".join(argv)


def test_nvued_not_running(make_switch):
    sw = make_switch("leaf10", start=False)
    res = sw.nv("config", "apply", "-y")
    assert (res.returncode, res.stderr.strip()) == (1, "Error: Could not connect to nvued.")


def test_word_rule_builds_the_tree(switch):
    switch.nv("set", "qos", "mapping", "default-global", "dscp", "26", "switch-priority", "3")
    switch.nv("set", "qos", "pfc", "default-global", "switch-priority", "3")
    switch.nv("set", "interface", "lo", "ip", "address", "10.0.0.1/32")
    switch.nv("set", "interface", "swp1", "description", "rack a1 port 1")
    switch.nv("set", "qos", "roce")
    got = switch.get("/?rev=1&filled=false")
    assert got["qos"] == {"mapping": {"default-global": {"dscp": {"26": {"switch-priority": 3}}}},
                          "pfc": {"default-global": {"switch-priority": {"3": {}}}},
                          "roce": {"enable": "on", "mode": "lossless"}}
    assert got["interface"]["lo"] == {"ip": {"address": {"10.0.0.1/32": {}}}}
    assert got["interface"]["swp1"]["description"] == "rack a1 port 1"
    switch.nv("unset", "interface", "swp1", "description")
    assert "description" not in switch.get("/interface/swp1?rev=1&filled=false")


def test_diff_show_json_and_text(switch):
    switch.nv("set", "system", "hostname", "switch01")
    res = switch.nv("config", "diff", "-o", "json")
    assert json.loads(res.stdout) == [{"set": {"system": {"hostname": "switch01"}}}]
    res = switch.nv("config", "diff")
    assert res.stdout == "- set:\n    system:\n      hostname: switch01\n"
    res = switch.nv("config", "diff", "1", "applied")
    assert res.stdout == "- set:\n    system:\n      hostname: leaf01\n"
    res = switch.nv("show", "interface", "swp1", "link", "-o", "json")
    assert json.loads(res.stdout) == switch.get("/interface/swp1/link")
    res = switch.nv("show", "system", "hostname", "--pending")
    assert res.stdout == "switch01\n"
    res = switch.nv("show", "system", "version")
    assert "product-release  5.9.1" in res.stdout and "  build-id" in res.stdout


def test_detach_drops_the_pending_revision_and_history_lists(switch):
    switch.nv("set", "system", "timezone", "UTC")
    assert switch.nv("config", "detach").returncode == 0
    assert switch.call("GET", "/revision/1")[0] == 404
    assert switch.nv("set", "system", "timezone", "UTC").stdout == "created [rev_id: 2]\n"
    switch.nv("config", "apply", "-y")
    res = switch.nv("config", "history")
    assert "2        applied_and_saved" in res.stdout


def test_cli_sessions_are_per_user(switch):
    switch.nv("set", "system", "timezone", "UTC")
    env = dict(switch.env(), NVUESIM_USER="admin2")
    res = subprocess.run([sys.executable, str(BIN / "nv"), "set", "system", "timezone", "Europe/Paris"],
                         capture_output=True, text=True, env=env, check=False)
    assert res.stdout == "created [rev_id: 2]\n"
    assert os.path.exists(switch.dir / "nvued.sock")


def test_image_actions_through_the_cli(switch, tmp_path):
    image = tmp_path / "cumulus-linux-5.11.0-mlx-amd64.bin"
    switch.admin("mkimage", "--release", "5.11.0", "-o", str(image))
    res = switch.nv("action", "fetch", "system", "image", image.as_uri())
    assert res.returncode == 0 and "Action succeeded" in res.stdout
    res = switch.nv("action", "install", "system", "image", "files", image.name)
    assert res.returncode == 0, res.stderr
    assert switch.nv("action", "boot-next", "system", "image", "other").stdout == "next boot: partition 2\n"
    assert switch.nv("action", "reboot", "system").returncode == 0
    assert [e["event"] for e in switch.events() if e["client"] == "cli" and e["event"] != "read"] == [
        "fetch", "install", "installed", "boot-next", "reboot"]


def test_read_events_of_the_cli(switch):
    mark = switch.mark()
    switch.nv("show", "interface", "swp1", "-o", "json")
    reads = switch.since(mark, "read")
    assert [(e["client"], e["path"]) for e in reads] == [("cli", "/interface/swp1")]


def test_config_patch_merges_a_file_into_the_session(switch, tmp_path):
    patch = tmp_path / "patch.yaml"
    patch.write_text(json.dumps([{"header": {"rev-id": "x"}}, {"set": {"interface": {"swp1": {"link": {"mtu": 9000}}}}},
                                 {"unset": {"interface": {"swp1": {"link": {"speed": {}}}}}}]))
    res = switch.nv("config", "patch", str(patch))
    assert (res.returncode, res.stdout) == (0, "created [rev_id: 1]\n")
    assert switch.get("/interface/swp1/link?rev=1&filled=false") == {"mtu": 9000}
    patch.write_text(json.dumps({"system": {"timezone": "UTC"}}))          # a bare tree, into the same session
    assert switch.nv("config", "patch", str(patch)).stdout == ""
    assert switch.get("/system/timezone?rev=1&filled=false") == "UTC"
    res = switch.nv("config", "show", "-o", "json", "--rev", "1")
    assert json.loads(res.stdout) == [{"set": switch.get("/?rev=1&filled=false")}]
    assert json.loads(switch.nv("config", "revision", "-o", "json").stdout)["1"]["state"] == "pending"


@pytest.mark.parametrize("content, words", [(None, "No such file or directory"), ("{not yaml", "is not valid YAML"),
                                            ('[{"sett": {}}]', "each element is one of header, set, unset")])
def test_config_patch_refuses_a_bad_file(switch, tmp_path, content, words):
    patch = tmp_path / "patch.yaml"
    if content is not None:
        patch.write_text(content)
    res = switch.nv("config", "patch", str(patch))
    assert res.returncode == 1 and res.stderr.startswith("Error: %s" % patch) and words in res.stderr
    assert switch.call("GET", "/revision/1")[0] == 404                       # no session was started
