"""The playbook-level variables of playbooks/site.yml: one reference (docs/variables.md), one argument spec (role
site_variables, run first), a switch and a tag per step - and a bad value stops the run before any host is
contacted, naming the variable, the value and what is allowed."""
import re

import pytest
import yaml

from _paths import REPO
from _roleplay import LOCAL, run

SITE = REPO / "playbooks" / "site.yml"
SPEC = yaml.safe_load((REPO / "roles/site_variables/meta/argument_specs.yml").read_text())["argument_specs"]["main"]
STEPS = ["preflight", "leaf", "platform", "ofed", "firmware", "nic_config", "activate", "rails", "roce_qos", "validate",
         "report"]
OFF = {"gpufabric_%s_enabled" % step: False for step in STEPS}


def documented():
    """The variables of the table of docs/variables.md (its first column, up to the next heading)."""
    text = (REPO / "docs" / "variables.md").read_text()
    table = text.split("## The table", 1)[1].split("\n## ", 1)[0]
    return [m.group(1) for m in re.finditer(r"^\| `(gpufabric_[a-z_]+)` \|", table, re.M)]


def site_entries():
    """(tags, when) of every role and imported playbook of site.yml, in order."""
    out = []
    for play in yaml.safe_load(SITE.read_text()):
        if "ansible.builtin.import_playbook" in play:
            out.append((play.get("tags", []), play.get("when")))
        for role in play.get("roles", []):
            out.append((role.get("tags", []), role.get("when")))
        # the rollout's steps: roles included in one block (its rescue records why a host failed); the server's
        # steps are the tasks of the role gpufabric.mlnx.server, each importing a step's role
        for task in play.get("tasks", []):
            if "ansible.builtin.import_role" in task:   # a play's one role (site_variables, the preflight)
                out.append((task.get("tags", []), task.get("when")))
            for step in task.get("block", []):
                role = (step.get("ansible.builtin.include_role") or {}).get("name")
                if role == "gpufabric.mlnx.server":
                    for inner in yaml.safe_load((REPO / "roles" / "server" / "tasks" / "main.yml").read_text()):
                        if "ansible.builtin.import_role" in inner:
                            out.append((inner.get("tags", []), inner.get("when")))
                elif role:
                    out.append((step.get("tags", []), step.get("when")))
    return out


def test_the_reference_lists_exactly_the_argument_spec():
    assert documented() == list(SPEC["options"])


def test_every_step_has_a_switch_in_the_spec_and_a_tag_with_its_switch_in_site_yml():
    tagged = {}
    for tags, when in site_entries():
        for tag in tags:
            tagged[tag] = when if isinstance(when, list) else [when]
    assert [t for t in tagged if t != "always"] == STEPS
    for step in STEPS:
        switch = "gpufabric_%s_enabled" % step
        assert switch in SPEC["options"] and SPEC["options"][switch]["type"] == "bool"
        assert any(switch in (w or "") for w in tagged[step]), (step, tagged[step])


def batches_of(ran):
    """The hosts of each batch of the rollout play: what its first task (once per batch) remembered."""
    return [sorted(r["ansible_facts"]["gpufabric_batch_hosts"]) for p in ran.data["plays"]
            if p["play"]["name"].startswith("The rollout, batch by batch")
            for r in p["tasks"][0]["hosts"].values()]


def fail_text(ran):
    return " ".join(str(msg) for msg in ran.failures().values())


@pytest.mark.parametrize("host_vars, words", [
    ({"gpufabric_batch_size": 0}, "gpufabric_batch_size=0 is not a batch size: allowed is a whole number of at least 1"),
    ({"gpufabric_batch_size": "150%"}, 'gpufabric_batch_size="150%" is not a batch size'),
    ({"gpufabric_batch_size": [1, "x"]}, 'gpufabric_batch_size=[1, "x"] is not a batch size'),
    ({"gpufabric_batch_size": "4\n"}, "is not a batch size"),
    ({"gpufabric_batch_size": {"5": 1}}, "is not a batch size"),
    ({"gpufabric_batch_size": []}, "gpufabric_batch_size=[] is not a batch size"),
    ({"gpufabric_max_fail_percentage": 150}, "gpufabric_max_fail_percentage=150 is outside 0-100"),
    ({"gpufabric_max_unreachable": -1}, "gpufabric_max_unreachable=-1 is negative"),
    ({"gpufabric_rails_enabled": "maybe"}, "gpufabric_rails_enabled"),
    ({"gpufabric_firmware_enabled": [True]}, "gpufabric_firmware_enabled"),
    ({"gpufabric_max_fail_percentage": "lots"}, "gpufabric_max_fail_percentage"),
])
def test_a_bad_value_stops_the_run_before_any_host_is_contacted(tmp_path, host_vars, words):
    ran = run(tmp_path, {"srv-r01-01": dict(OFF, **host_vars)}, SITE)
    assert not ran.ok
    assert words in fail_text(ran), ran
    assert [p["play"]["name"] for p in ran.data["plays"]] == [
        "Check the playbook's variables (docs/variables.md) before any host is contacted"]


def test_play_settings_that_differ_between_servers_are_refused(tmp_path):
    ran = run(tmp_path, {"srv-r01-01": dict(OFF, gpufabric_batch_size=4), "srv-r01-02": dict(OFF, gpufabric_batch_size=8)},
              SITE)
    assert not ran.ok
    assert "gpufabric_batch_size differs between servers (4, 8)" in fail_text(ran), ran


def test_good_values_pass_and_every_step_can_be_switched_off(tmp_path):
    """Every step off, including firmware, nic_config and activate: the run passes the check, then no role runs a task."""
    good = dict(OFF, gpufabric_batch_size=[1, "50%"], gpufabric_max_fail_percentage=25, gpufabric_max_unreachable=2)
    hosts = {"srv-r01-0%d" % i: good for i in (1, 2, 3)}
    ran = run(tmp_path, hosts, SITE)
    assert ran.ok, ran
    role_tasks = [t["task"]["name"] for p in ran.data["plays"] for t in p["tasks"]
                  if " : " in t["task"]["name"] and not t["task"]["name"].startswith("gpufabric.mlnx.site_variables")
                  and any(not r.get("skipped") for r in t["hosts"].values())]
    assert role_tasks == []
    assert batches_of(ran) == [["srv-r01-01"], ["srv-r01-02"], ["srv-r01-03"]]  # serial [1, 50%]


def test_the_batch_size_of_the_inventory_reaches_serial(tmp_path):
    """serial is read before any host is chosen; site.yml takes the servers' (group_vars) value."""
    hosts = {"srv-r01-0%d" % i: dict(OFF) for i in (1, 2, 3, 4)}
    ran = run(tmp_path, hosts, SITE, group_vars={"gpufabric_batch_size": 2})
    assert ran.ok, ran
    assert batches_of(ran) == [["srv-r01-01", "srv-r01-02"], ["srv-r01-03", "srv-r01-04"]]


def test_the_plan_names_the_leaves_that_serve_servers_of_later_batches(tmp_path):
    """Rail leaves shared by the two racks of an SU, batches by rack: rack r01's batch changes the leaf rack r02's
    server uses while it is still in service - the plan says so, and what keeps them together."""
    fabric = {"rails": 1, "addressing": "su_subnet", "su_prefix": 26, "racks_per_su": 2,
              "pools": {"rail0": "198.18.0.0/20"}, "nics": {"pci": ["0000:18:00.0"]},
              "interface_names": ["enp24s0np0"]}
    servers = dict(OFF, gpufabric_fabric=fabric, gpufabric_batch_by="rack", gpufabric_leaf_ready_enabled=False)
    hosts = {"srv-r01-01": dict(servers, rack="r01", position=1), "srv-r02-01": dict(servers, rack="r02", position=1)}
    leaf = dict(LOCAL, gpufabric_leaf_enabled=False, gpufabric_leaf_ready_enabled=False)
    ran = run(tmp_path, hosts, SITE, groups={"leaves": {"su1-leaf-rail0": leaf}})
    assert ran.ok, ran
    assert ran.task("The batches", "srv-r01-01")["msg"] == (
        "2 batches: 1. rack r01, 2. rack r02; note: the leaves of 1 batches also serve servers of later batches, still "
        "in service when those leaves change (first: 1. rack r01 - su1-leaf-rail0 - 1 servers); gpufabric_batch_by=su "
        "keeps a leaf and its servers in one batch")
