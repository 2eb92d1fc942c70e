# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The actions nvue_leaf and nvue_leaf_gate around plugin_utils/_leaf_steps.py: a leaf outside the rail plan fails
before the switch is contacted (plan_problem), a step's failure is the task's with its words, the facts each returns,
a leaf whose configuration failed is not read, and a leaf that cannot be read is recorded - not failed."""
import contextlib
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure
from ansible.plugins.action import ActionBase

from ansible_collections.gpufabric.mlnx.plugins.action import nvue_leaf, nvue_leaf_gate

ENTRY = {"cables": {"swp1": {"host": "srv-a", "interface": "enp24s0np0", "address": "198.18.0.0/31",
                             "cable_label": "srv-a:enp24s0np0 -> leaf1:swp1"}}}
PLAN = {"leaf1": ENTRY}
READY = {"system": {"release": "5.9.1"}, "revisions": {"unsaved": False}, "qos": {},
         "interfaces": {"swp1": {"oper_status": "up", "speed": "400G", "mtu": 9216, "protodown": False,
                                 "lldp": [{"system_name": "srv-a", "port": "enp24s0np0"}]}}}


def action(cls, args, answers, check_mode=False):
    """The action with its task's ``args``; each switch module call answers the next of ``answers`` (an exception is
    raised); the calls are in ``plugin.calls``."""
    task = mock.MagicMock(args=args, check_mode=check_mode)
    plugin = cls(task, mock.MagicMock(), mock.MagicMock(check_mode=check_mode), loader=mock.MagicMock(),
                 templar=None, shared_loader_obj=None)
    plugin.calls = []
    queue = list(answers)

    def call(module, module_args):
        plugin.calls.append((module.rsplit(".", 1)[-1], dict(module_args)))
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    @contextlib.contextmanager
    def switch_modules(task_vars):
        yield call
    plugin._switch_modules = switch_modules
    return plugin


@pytest.fixture(autouse=True)
def base_run(monkeypatch):
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})


def test_the_leaf_s_one_task_returns_its_status_as_a_fact():
    plugin = action(nvue_leaf.ActionModule, {"plan_leaves": PLAN, "settings": {"mtu": 9216}},
                    [{"system": {"release": "5.9.1"}},
                     {"changed": True, "revision": "4", "state": "applied_and_saved", "saved": True,
                      "nvue_diff": [{"set": {}}], "diff": {"before": {}, "after": {"x": 1}}}])
    out = plugin.run(task_vars={"inventory_hostname": "leaf1"})
    assert [c[0] for c in plugin.calls] == ["nvue_info", "nvue_config"]
    assert plugin.calls[1][1]["timeout"] == 300 and plugin.calls[1][1]["save"] is True   # the options' defaults
    assert out["changed"] is True and out["revision"] == "4" and out["image"] is None and "failed" not in out
    assert out["ansible_facts"] == {"gpufabric_leaf_status": {
        "failed": False, "changed": True, "revision": "4", "state": "applied_and_saved", "release": None,
        "reboots": 0}}


def test_a_leaf_outside_the_plan_fails_before_the_switch_is_contacted():
    plugin = action(nvue_leaf.ActionModule, {"plan_leaves": PLAN, "group": "tor"}, [])
    out = plugin.run(task_vars={"inventory_hostname": "leaf9"})
    assert out == {"failed": True, "plan_problem": True, "msg": (
        "leaf9 is in group tor but the rail plan cables nothing to it (its leaves are leaf1 ...): check "
        "gpufabric_fabric.leaf_name.")}
    assert plugin.calls == []


def test_a_switch_that_refuses_the_revision_fails_the_task_with_its_words_and_no_fact():
    refused = {"failed": True, "msg": "leaf1 refused revision 3: state invalid (Invalid config): not today",
               "revision": "3", "state": "invalid"}
    plugin = action(nvue_leaf.ActionModule, {"plan_leaves": PLAN}, [{"system": {"release": "5.9.1"}}, refused])
    out = plugin.run(task_vars={"inventory_hostname": "leaf1"})
    assert out == dict(refused, changed=False) and "ansible_facts" not in out


def test_a_bad_option_fails_naming_it():
    plugin = action(nvue_leaf.ActionModule, {"plan_leaves": PLAN, "apply_timeout": "soon"}, [])
    with pytest.raises(AnsibleActionFail, match="apply_timeout"):
        plugin.run(task_vars={"inventory_hostname": "leaf1"})


def test_the_gate_of_a_ready_leaf_is_one_read_and_its_fact():
    plugin = action(nvue_leaf_gate.ActionModule, {"plan_leaves": PLAN, "expected": {"mtu": 9216}}, [READY])
    out = plugin.run(task_vars={"inventory_hostname": "leaf1"})
    assert plugin.calls == [("nvue_info", {"gather": ["system", "interfaces", "qos", "revisions"]})]
    assert out == {"changed": False, "ready": True, "reads": 1, "msg": "leaf1 is ready for its servers",
                   "ansible_facts": {"gpufabric_leaf_gate": {"ready": True, "leaf": [], "ports": {}, "hosts": {},
                                                             "held": []}}}


def test_a_leaf_whose_configuration_failed_is_not_read():
    plugin = action(nvue_leaf_gate.ActionModule, {"plan_leaves": PLAN, "status": {"failed": True, "msg": "no"}}, [])
    out = plugin.run(task_vars={"inventory_hostname": "leaf1"})
    assert plugin.calls == [] and "ansible_facts" not in out and not out.get("failed")
    assert out["msg"] == "leaf1 was not read: its configuration failed (no); its servers are held"


@pytest.mark.parametrize("answer, words", [
    ({"failed": True, "msg": "leaf1: the switch could not be reached over the NVUE REST API"},
     "leaf1: the switch could not be reached over the NVUE REST API"),
    (AnsibleConnectionFailure("no route to host"), "no route to host"),   # the connection could not even be made
])
def test_a_leaf_that_cannot_be_read_records_its_status_and_is_not_failed(answer, words):
    plugin = action(nvue_leaf_gate.ActionModule, {"plan_leaves": PLAN, "timeout": 60, "interval": 1}, [answer])
    out = plugin.run(task_vars={"inventory_hostname": "leaf1"})
    assert not out.get("failed") and len(plugin.calls) == 1
    assert out["ansible_facts"] == {"gpufabric_leaf_status": {"failed": True, "changed": False, "msg": words}}
    assert out["msg"] == "leaf1 could not be read: %s; its servers are held" % words


def test_the_gate_in_check_mode_reads_once_and_names_whom_it_holds():
    down = dict(READY, interfaces={"swp1": dict(READY["interfaces"]["swp1"], oper_status="down")})
    plugin = action(nvue_leaf_gate.ActionModule, {"plan_leaves": PLAN, "timeout": 60, "interval": 1}, [down],
                    check_mode=True)
    out = plugin.run(task_vars={"inventory_hostname": "leaf1"})
    assert out["reads"] == 1 and out["ready"] is False
    assert out["msg"] == "leaf1 is not ready: it holds 1 servers (srv-a)"
    assert out["ansible_facts"]["gpufabric_leaf_gate"]["hosts"] == {
        "srv-a": ["leaf1:swp1 (cable srv-a:enp24s0np0 -> leaf1:swp1) is down"]}
