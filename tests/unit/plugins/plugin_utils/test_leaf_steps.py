# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/_leaf_steps.py: the leaf role's and the leaf gate's work on one leaf, each one task - which switch
modules run, in which order, with which arguments, and what the task returns - against a fake switch (the modules'
results written by hand)."""
import copy

import pytest
import yaml

from _paths import REPO
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _leaf_steps
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._leaf_steps import StepFailed, attempts_of, converge, gate

MATRIX = yaml.safe_load((REPO / "inventory" / "example-1250" / "group_vars" / "all" / "matrix.yml").read_text())[
    "gpufabric_matrix"]
PIN = MATRIX["switch_os"]["cumulus-linux"]          # 5.11.0 with its url and sha256
NO_PIN = {k: v for k, v in MATRIX.items() if k != "switch_os"}
ENTRY = {"rail": 0, "su": 1, "network": "198.18.0.0/26", "address": None,
         "cables": {"swp1": {"host": "srv-a", "interface": "enp24s0np0", "address": "198.18.0.0/31",
                             "cable_label": "srv-a:enp24s0np0 -> leaf1:swp1"}}}
PLAN = {"leaf1": ENTRY, "leaf2": {"cables": {}}}
TREE_591 = {"interface": {"swp1": {"type": "swp", "link": {"state": {"up": {}}, "mtu": 9216},
                                   "description": "srv-a:enp24s0np0 -> leaf1:swp1",
                                   "ip": {"address": {"198.18.0.0/31": {}}}}},
            "qos": {"roce": {"enable": "on", "mode": "lossless"},
                    "mapping": {"default-global": {"trust": "l3", "dscp": {"26": {"switch-priority": 3},
                                                                           "48": {"switch-priority": 6}}}},
                    "pfc": {"default-global": {"switch-priority": {"3": {}}}},
                    "traffic-pool": {"roce-lossless": {"switch-priority": {"3": {}}}},
                    "congestion-control": {"default-global": {"traffic-class": {"3": {"ecn": "enable"}}}}}}
SETTINGS = {"mtu": 9216, "speed": None, "vlan": 10, "qos": {}}
COMPLIANT = {"changed": False, "revision": None, "state": None, "saved": True, "nvue_diff": [],
             "diff": {"before": {}, "after": {}}, "invocation": {"module_args": {"config": "..."}}}


class Switch:
    """``call(module, args)``: records each call and answers from ``answers[module]`` (a list: one per call)."""

    def __init__(self, **answers):
        self.answers = {k: list(v) for k, v in answers.items()}
        self.calls = []

    def __call__(self, module, args):
        self.calls.append((module.rsplit(".", 1)[-1], copy.deepcopy(dict(args))))
        return self.answers[module.rsplit(".", 1)[-1]].pop(0)


def system(release="5.11.0", image=None):
    out = {"changed": False, "system": {"release": release}}
    if image is not None:
        out["image"] = image
    return out


def partitions(current, p1, p2):
    return {"current": current, "next": current, "files": [],
            "partitions": {"1": {"release": p1}, "2": {"release": p2}}}


def test_a_compliant_leaf_without_a_pin_reads_its_release_and_makes_no_revision():
    switch = Switch(nvue_info=[system("5.9.1")], nvue_config=[COMPLIANT])
    out = converge("leaf1", ENTRY, SETTINGS, switch, matrix=NO_PIN)
    assert switch.calls == [("nvue_info", {"gather": ["system"]}),
                            ("nvue_config", {"config": TREE_591, "timeout": 300, "save": True})]
    assert out == {"changed": False, "release": "5.9.1", "image": None, "warnings": [], "revision": None,
                   "state": None, "saved": True, "nvue_diff": [], "diff": {"before": {}, "after": {}},
                   "status": {"failed": False, "changed": False, "revision": None, "state": None, "release": None,
                              "reboots": 0}}


def test_the_pin_that_runs_is_read_once_and_not_installed():
    switch = Switch(nvue_info=[system("5.11.0", partitions("2", "5.9.1", "5.11.0"))], nvue_config=[COMPLIANT])
    out = converge("leaf1", ENTRY, SETTINGS, switch, matrix=MATRIX, apply_timeout=60, save=False)
    assert [c[0] for c in switch.calls] == ["nvue_info", "nvue_config"]
    assert switch.calls[0][1] == {"gather": ["system", "image"]}
    assert switch.calls[1][1]["timeout"] == 60 and switch.calls[1][1]["save"] is False
    assert out["image"] is None and out["changed"] is False and out["status"]["reboots"] == 0


def test_a_leaf_behind_is_upgraded_then_configured_in_the_pinned_release_s_spelling():
    upgraded = {"changed": True, "release_before": "5.9.1", "release": "5.16.0", "actions": ["fetch", "install",
                "boot-next", "reboot"], "reboots": 1, "partition": "2", "saved": False, "sha256_verified": True,
                "invocation": {}, "warnings": ["slow mirror"]}
    applied = dict(COMPLIANT, changed=True, revision="7", state="applied_and_saved", nvue_diff=[{"set": {}}])
    pin = dict(PIN, release="5.16.0", image="cumulus-linux-5.16.0-mlx-amd64.bin",
               url="http://mirror.example/cumulus/cumulus-linux-5.16.0-mlx-amd64.bin")
    matrix = dict(MATRIX, switch_os={"cumulus-linux": pin})
    switch = Switch(nvue_info=[system("5.9.1", partitions("1", "5.9.1", None))], nvue_image=[upgraded],
                    nvue_config=[applied])
    out = converge("leaf1", ENTRY, SETTINGS, switch, matrix=matrix, reboot_timeout=1200)
    assert switch.calls[1] == ("nvue_image", {"release": "5.16.0", "sha256": pin["sha256"], "allow_downgrade": False,
                                              "reboot_timeout": 1200, "url": pin["url"]})
    assert switch.calls[2][1]["config"]["qos"]["roce"] == {"state": "enabled", "mode": "lossless"}   # 5.15+ spelling
    assert out["changed"] is True and out["release"] == "5.16.0" and out["warnings"] == ["slow mirror"]
    assert out["image"] == {"changed": True, "release_before": "5.9.1", "release": "5.16.0", "actions": [
        "fetch", "install", "boot-next", "reboot"], "reboots": 1, "partition": "2", "saved": False,
        "sha256_verified": True}
    assert out["status"] == {"failed": False, "changed": True, "revision": "7", "state": "applied_and_saved",
                             "release": "5.16.0", "reboots": 1}


def test_the_other_partition_holding_the_pin_is_booted_without_a_url():
    booted = {"changed": True, "release_before": "5.9.1", "release": "5.11.0", "actions": ["boot-next", "reboot"],
              "reboots": 1}
    switch = Switch(nvue_info=[system("5.9.1", partitions("1", "5.9.1", "5.11.0"))], nvue_image=[booted],
                    nvue_config=[COMPLIANT])
    out = converge("leaf1", ENTRY, SETTINGS, switch, matrix=MATRIX)
    assert "url" not in switch.calls[1][1] and switch.calls[1][1]["release"] == "5.11.0"
    assert out["changed"] is True and out["status"]["changed"] is False and out["status"]["reboots"] == 1


def test_a_refused_target_fails_naming_the_leaf_before_anything_changes():
    switch = Switch(nvue_info=[system("5.12.0", partitions("1", "5.12.0", None))])
    with pytest.raises(StepFailed) as err:
        converge("leaf1", ENTRY, SETTINGS, switch, matrix=MATRIX)
    assert err.value.result["msg"] == (
        "leaf1: downgrade from 5.12.0 to 5.11.0 refused: the switch runs a newer release than the pin; set "
        "gpufabric_matrix.switch_os.cumulus-linux.allow_downgrade: true to allow it")
    assert err.value.result["failed"] is True and [c[0] for c in switch.calls] == ["nvue_info"]


def test_a_module_failure_is_the_step_s_failure_with_its_words():
    refused = {"failed": True, "msg": "leaf1 refused revision 3: state invalid (Invalid config): not today",
               "revision": "3", "state": "invalid"}
    switch = Switch(nvue_info=[system("5.9.1")], nvue_config=[refused])
    with pytest.raises(StepFailed) as err:
        converge("leaf1", ENTRY, SETTINGS, switch, matrix=NO_PIN)
    assert err.value.result == refused
    unreachable = Switch(nvue_info=[{"failed": True, "msg": "the switch could not be reached"}])
    with pytest.raises(StepFailed, match="could not be reached"):
        converge("leaf1", ENTRY, SETTINGS, unreachable)


def test_a_configuration_failure_after_an_upgrade_says_what_the_upgrade_did():
    upgraded = {"changed": True, "release_before": "5.9.1", "release": "5.11.0", "actions": ["boot-next", "reboot"],
                "reboots": 1}
    switch = Switch(nvue_info=[system("5.9.1", partitions("1", "5.9.1", "5.11.0"))], nvue_image=[upgraded],
                    nvue_config=[{"failed": True, "msg": "apply timed out"}])
    with pytest.raises(StepFailed) as err:
        converge("leaf1", ENTRY, SETTINGS, switch, matrix=MATRIX)
    assert err.value.result["msg"] == "apply timed out" and err.value.result["image"]["reboots"] == 1


def test_a_setting_leaf_config_refuses_fails_naming_the_leaf_and_the_parameter():
    switch = Switch(nvue_info=[system("5.9.1")])
    with pytest.raises(StepFailed) as err:
        converge("leaf1", ENTRY, dict(SETTINGS, mtu=9300), switch)
    assert err.value.result["msg"] == "leaf1: mtu=9300 is not allowed (allowed: 552-9216)"


def test_a_leaf_outside_the_plan_is_named_with_a_leaf_the_plan_has():
    assert _leaf_steps.plan_problem("leaf1", PLAN, "leaves") is None
    assert _leaf_steps.plan_problem("leaf9", PLAN, "tor") == (
        "leaf9 is in group tor but the rail plan cables nothing to it (its leaves are leaf1 ...): check "
        "gpufabric_fabric.leaf_name.")
    assert "(its leaves are none ...)" in _leaf_steps.plan_problem("leaf9", {}, "leaves")
    assert "there is no rail plan" in _leaf_steps.plan_problem("leaf9", None, "leaves")


# ---------------------------------------------------------------- the gate

def port(up=True, host="srv-a"):
    return {"admin_status": "up", "oper_status": "up" if up else "down", "speed": "400G", "mtu": 9216,
            "protodown": False, "protodown_reason": None,
            "lldp": [{"system_name": host, "chassis_id": None, "port": "enp24s0np0"}]}


def read(up=True):
    return {"changed": False, "system": {"release": "5.11.0"}, "revisions": {"pending": [], "unsaved": False},
            "qos": {"applied": {"roce": {"enable": "on", "mode": "lossless"}}}, "interfaces": {"swp1": port(up)}}


EXPECTED = {"release": "5.11.0", "mtu": 9216, "speed": None}
DOWN = "leaf1:swp1 (cable srv-a:enp24s0np0 -> leaf1:swp1) is down"


@pytest.mark.parametrize("timeout, interval, attempts", [(120, 5, 25), (3, 1, 4), (4, 5, 1), (0, 5, 1), (5, 0, 6),
                                                         (10, 5, 3), (9, 5, 2)])
def test_the_gate_reads_once_and_once_more_per_interval_of_the_timeout(timeout, interval, attempts):
    assert attempts_of(timeout, interval) == attempts


def test_a_ready_leaf_is_read_once():
    switch, slept = Switch(nvue_info=[read()]), []
    out = gate("leaf1", ENTRY, EXPECTED, switch, plan_leaves=PLAN, hosts_qos={"srv-a": {}}, attempts=5,
               sleep=slept.append)
    assert switch.calls == [("nvue_info", {"gather": ["system", "interfaces", "qos", "revisions"]})]
    ready = {"ready": True, "leaf": [], "ports": {}, "hosts": {}, "held": []}
    assert out == {"ready": True, "reads": 1, "gate": ready}
    assert slept == []


def test_a_port_that_comes_up_is_waited_for():
    switch, slept = Switch(nvue_info=[read(False), read(False), read()]), []
    out = gate("leaf1", ENTRY, EXPECTED, switch, attempts=5, interval=2, sleep=slept.append)
    assert out["ready"] is True and out["reads"] == 3 and slept == [2, 2]


def test_a_port_still_down_when_the_time_is_up_holds_its_server():
    switch, slept = Switch(nvue_info=[read(False)] * 3), []
    out = gate("leaf1", ENTRY, EXPECTED, switch, attempts=3, interval=1, sleep=slept.append)
    held = {"ready": False, "leaf": [], "ports": {"swp1": [DOWN]}, "hosts": {"srv-a": [DOWN]}, "held": ["srv-a"]}
    assert out == {"ready": False, "reads": 3, "gate": held}
    assert slept == [1, 1]


def test_check_mode_reads_once_and_holds_for_what_a_change_cannot_fix():
    switch = Switch(nvue_info=[read(False)])
    out = gate("leaf1", ENTRY, {"speed": None}, switch, attempts=25, check_mode=True, sleep=pytest.fail)
    assert out["reads"] == 1 and out["gate"]["held"] == ["srv-a"]


def test_a_leaf_that_cannot_be_read_is_recorded_with_the_cause_and_not_read_again():
    switch = Switch(nvue_info=[{"failed": True, "msg": "leaf1: 502 Bad Gateway"}])
    out = gate("leaf1", ENTRY, EXPECTED, switch, attempts=25, sleep=pytest.fail)
    assert out == {"ready": False, "reads": 1,
                   "status": {"failed": True, "changed": False, "msg": "leaf1: 502 Bad Gateway"}}
