# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operational view of the NVUE emulator and every fault's effect on it (and on the CLI)."""
import json
import time

import pytest

PORTS = {"swp1": {"speed": "400G", "neighbor": {"host": "gpu-a01", "ifname": "enp41s0f0np0"}},
         "swp2": {"speed": "400G", "neighbor": {"host": "gpu-a02", "ifname": "enp41s0f0np0"}},
         "swp3": {"speed": "800G"}}


@pytest.fixture
def leaf(make_switch, tmp_path):
    path = tmp_path / "ports.json"
    path.write_text(json.dumps(PORTS))
    return make_switch("leaf08", ports=None, extra=("--ports-file", str(path), "--first-apply-done"))


def link(sw, port):
    return sw.get("/interface/%s/link" % port)


def test_operational_ports_follow_the_applied_config(leaf):
    l1 = link(leaf, "swp1")
    stats = {"carrier-transitions": 0, "in-bytes": 0, "in-drops": 0, "in-errors": 0, "in-pkts": 0, "out-bytes": 0,
             "out-drops": 0, "out-errors": 0, "out-pkts": 0}
    assert l1 == {"speed": "400G", "mtu": 9216, "state": {"up": {}}, "admin-status": "up", "oper-status": "up",
                  "protodown": "disabled", "stats": stats}
    assert leaf.get("/interface/swp1/link/stats") == stats
    assert link(leaf, "swp3")["speed"] == "800G"
    nb = leaf.get("/interface/swp1/lldp/neighbor")
    assert list(nb) == ["gpu-a01"]
    assert nb["gpu-a01"]["port"]["name"] == "enp41s0f0np0"
    assert nb["gpu-a01"]["chassis"]["system-name"] == "gpu-a01"
    assert leaf.get("/interface/swp3/lldp") == {"neighbor": {}}
    leaf.change("/interface/swp1/link", {"mtu": 4200})
    leaf.change("/interface/swp2/link", {"state": {"down": {}}})
    assert link(leaf, "swp1")["mtu"] == 4200
    l2 = link(leaf, "swp2")
    assert (l2["admin-status"], l2["oper-status"], l2["state"]) == ("down", "down", {"down": {}})
    assert leaf.get("/interface/swp2/lldp/neighbor") == {}


def test_nvuesim_port_sets_speed_and_neighbour(leaf):
    leaf.admin("port", "swp3", "--neighbor", "gpu-b01:enp41s0f1np1", "--speed", "400G")
    assert link(leaf, "swp3")["speed"] == "400G"
    assert list(leaf.get("/interface/swp3/lldp/neighbor")) == ["gpu-b01"]
    res = leaf.admin("port", "swp9", "--speed", "400G", check=False)
    assert res.returncode == 1 and "port 'swp9' does not exist" in res.stderr


def test_port_down(leaf):
    leaf.admin("fault", "set", "port_down", "swp1")
    l1 = link(leaf, "swp1")
    assert (l1["admin-status"], l1["oper-status"]) == ("up", "down")
    assert leaf.get("/interface/swp1/lldp/neighbor") == {}
    assert link(leaf, "swp2")["oper-status"] == "up"
    leaf.admin("fault", "clear", "port_down", "swp1")
    assert link(leaf, "swp1")["oper-status"] == "up"


def test_protodown_with_reason_linkflap(leaf):
    leaf.admin("fault", "set", "protodown", "swp2")
    l2 = link(leaf, "swp2")
    assert (l2["protodown"], l2["protodown-reason"], l2["oper-status"]) == ("enabled", "linkflap", "down")
    leaf.admin("fault", "clear")
    assert "protodown-reason" not in link(leaf, "swp2")


def test_speed_and_mtu_differ_from_the_applied_config(leaf):
    leaf.change("/interface/swp1/link", {"mtu": 9216})
    leaf.admin("fault", "set", "speed", "swp1", "100G")
    leaf.admin("fault", "set", "mtu", "swp1", "1500")
    l1 = link(leaf, "swp1")
    assert (l1["speed"], l1["mtu"]) == ("100G", 1500)
    assert leaf.get("/interface/swp1/link/mtu?rev=applied") == 9216


def test_swapped_cables_exchange_the_neighbours(leaf):
    leaf.admin("fault", "set", "swap", "swp1", "swp2")
    assert list(leaf.get("/interface/swp1/lldp/neighbor")) == ["gpu-a02"]
    assert list(leaf.get("/interface/swp2/lldp/neighbor")) == ["gpu-a01"]


def test_roce_lossy_is_a_hand_change_of_applied_and_startup(leaf):
    leaf.change("/qos/roce", {"enable": "on", "mode": "lossless"})
    assert leaf.get("/qos/roce/pfc") == {"pfc-priority": "3", "rx-enabled": "enabled", "tx-enabled": "enabled"}
    leaf.admin("fault", "set", "roce_lossy")
    assert leaf.get("/qos/roce/mode?rev=applied") == "lossy"
    assert leaf.get("/qos/roce/mode?rev=startup") == "lossy"
    roce = leaf.get("/qos/roce")
    assert roce["mode"] == "lossy" and "pfc" not in roce
    assert leaf.get("/interface/swp1/qos/roce/status/mode") == "lossy"
    fault = leaf.events("fault")[-1]
    assert (fault["client"], fault["name"]) == ("admin", "roce_lossy")


def test_roce_status_and_counters(leaf):
    assert leaf.get("/qos/roce") == {"enable": "off", "mode": "lossless"}   # the spec's defaults
    leaf.change("/qos", {"roce": {"enable": "on", "mode": "lossless"}, "mapping": {"default-global": {"trust": "l3"}}})
    roce = leaf.get("/qos/roce")
    assert roce["enable"] == "on" and roce["trust"] == {"trust-mode": "dscp"}
    assert roce["prio-map"]["26"] == {"switch-priority": 3} and roce["prio-map"]["48"] == {"switch-priority": 6}
    assert roce["tc-map"]["3"] == {"traffic-class": 3}
    assert roce["congestion-control"]["enabled-tc"] == "0,3"
    port = leaf.get("/interface/swp1/qos/roce")
    assert port["status"]["mapping"]["roce"] == {"pcp": 3, "dscp": 26, "switch-priority": 3}
    assert port["counters"]["rx-pfc-stats"]["pause-packets"] == 0


def test_a_5_16_leaf_spells_roce_state(make_switch):
    sw = make_switch("leaf16", release="5.16.0", extra=("--first-apply-done",))
    assert sw.get("/qos/roce") == {"state": "disabled", "mode": "lossless"}
    sw.change("/qos/roce", {"state": "enabled", "mode": "lossless"})
    assert sw.get("/qos/roce")["state"] == "enabled" and sw.get("/qos/roce/pfc")["pfc-priority"] == "3"
    sw.admin("fault", "set", "roce_lossy")
    assert sw.get("/qos/roce?rev=applied") == {"state": "enabled", "mode": "lossy"}


def test_nvued_down_is_502_on_rest_and_an_error_in_the_cli(leaf):
    leaf.admin("fault", "set", "nvued_down")
    status, body, _h = leaf.call("GET", "/system")
    assert status == 502 and "502 Bad Gateway" in body
    res = leaf.nv("show", "system")
    assert (res.returncode, res.stderr.strip()) == (1, "Error: Could not connect to nvued.")
    leaf.admin("fault", "clear", "nvued_down")
    assert leaf.nv("show", "system").returncode == 0


def test_slow_apply_keeps_the_revision_in_apply(leaf):
    leaf.admin("fault", "set", "slow_apply", "0.8")
    rid = leaf.new_rev()
    leaf.ok("PATCH", "/system?rev=%s" % rid, {"timezone": "UTC"})
    leaf.ok("PATCH", "/revision/%s" % rid, {"state": "apply", "auto-prompt": {"ays": "ays_yes"}})
    assert leaf.get("/revision/%s" % rid)["state"] == "apply"
    assert leaf.wait_rev(rid)["state"] == "applied_and_saved"


def test_clearing_slow_apply_ends_an_apply_in_flight(leaf):
    leaf.admin("fault", "set", "slow_apply", "600")
    rid = leaf.new_rev()
    leaf.ok("PATCH", "/system?rev=%s" % rid, {"timezone": "UTC"})
    leaf.ok("PATCH", "/revision/%s" % rid, {"state": "apply", "auto-prompt": {"ays": "ays_yes"}})
    time.sleep(1.0)
    assert leaf.get("/revision/%s" % rid)["state"] == "apply"      # held by the fault, 1 s into its 600
    leaf.admin("fault", "clear", "slow_apply")
    started = time.monotonic()
    assert leaf.wait_rev(rid)["state"] == "applied_and_saved"
    assert time.monotonic() - started < 30                          # ended by the clear, not after 600 s


def test_release_fault_makes_the_running_release_older(leaf):
    leaf.admin("fault", "set", "release", "5.7.0")
    assert leaf.get("/system/version")["product-release"] == "5.7.0"
    assert leaf.get("/system")["build"] == "Cumulus Linux 5.7.0"
    assert leaf.nv("show", "system", "version", "-o", "json").stdout.count("5.7.0") >= 1


def test_reboot_slow_and_default_password(leaf):
    leaf.admin("fault", "set", "reboot_slow", "2")
    assert leaf.state()["faults"]["reboot_slow"] == 2.0
    leaf.admin("fault", "set", "default_password")
    assert leaf.call("GET", "/system")[0] == 403
    assert leaf.nv("show", "system").returncode == 0        # the CLI is not the REST API
    leaf.admin("fault", "clear", "default_password")
    assert leaf.call("GET", "/system")[0] == 200


@pytest.mark.parametrize("args, message", [
    (("set", "nope"), "fault 'nope': one of"),
    (("set", "port_down", "swp77"), "port 'swp77' does not exist"),
    (("set", "speed", "swp1", "fast"), "speed 'fast' must be like"),
    (("set", "slow_apply", "-1"), "must be a number 0-3600"),
    (("set", "swap", "swp1"), "fault swap takes <port> <port>"),
    (("set", "release", "6.0"), "fault release: release '6.0'"),
])
def test_bad_fault_arguments_are_named(leaf, args, message):
    res = leaf.admin("fault", *args, check=False)
    assert res.returncode == 1 and message in res.stderr, res.stderr


def test_fault_list_and_log(leaf):
    leaf.admin("fault", "set", "port_down", "swp1")
    assert json.loads(leaf.admin("fault", "list", inproc=False).stdout) == {"port_down": {"swp1": True}}
    leaf.admin("fault", "clear")
    assert json.loads(leaf.admin("fault", "list").stdout) == {}
    assert [(e["action"], e["name"]) for e in leaf.events("fault")] == [("set", "port_down"), ("clear", "all")]
