"""The AWX workflow as data (plugin_utils/_workflow.py, filters awx_workflow and workflow_parts) and the merge of its
nodes' rollout reports (_rollout_report.merge, filter rollout_merge): the nodes and chains written by hand, bad units
and parallel values refused naming what is allowed, a server in two nodes' reports refused, the artifacts' names
declared for the variable check (issue 40 item 3)."""
import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.mlnx.plugins.filter.awx_workflow import awx_workflow, workflow_parts
from ansible_collections.gpufabric.mlnx.plugins.filter.rollout_report import rollout_merge
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _rollout_report, _workflow
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._variables import site_problems, unknown_variables

UNITS = {"su%02d" % n: "servers_su%02d:leaves_su%02d:spines" % (n, n) for n in range(1, 6)}


def links(spec):
    return {n["identifier"]: [s["identifier"] for s in n["related"]["success_nodes"]] for n in spec["workflow"]["nodes"]}


def test_five_sus_two_at_a_time_are_two_chains_between_the_leaves_and_the_gate():
    spec = _workflow.spec(UNITS, 2)
    assert links(spec) == {"leaves": ["su01", "su02"], "su01": ["su03"], "su03": ["su05"], "su05": ["validate"],
                           "su02": ["su04"], "su04": ["validate"], "validate": ["reports"], "reports": []}
    nodes = {n["identifier"]: n for n in spec["workflow"]["nodes"]}
    assert [n for n, node in nodes.items() if node["all_parents_must_converge"]] == ["validate"]
    assert nodes["leaves"]["limit"] == "leaves" and "inventory" not in nodes["leaves"]
    assert nodes["su04"]["inventory"] == {"name": "gpufabric site su04", "organization": {"name": "Default"}}
    assert nodes["su04"]["extra_data"] == {"gpufabric_workflow_node": "su04"}
    assert nodes["reports"]["extra_data"] == {}
    assert spec["inventories"][3] == {"name": "gpufabric site su04", "kind": "constructed", "organization": "Default",
                                      "input_inventories": ["gpufabric site"], "unit": "su04",
                                      "limit": "servers_su04:leaves_su04:spines"}
    assert [(t["name"], t["playbook"], t["ask_inventory_on_launch"], t["ask_limit_on_launch"], t["job_slice_count"])
            for t in spec["job_templates"]] == [
        ("gpufabric leaves and plan", "playbooks/site.yml", False, True, 1),
        ("gpufabric servers of a unit", "playbooks/site.yml", True, False, 1),
        ("gpufabric validation gate", "playbooks/validate.yml", False, False, 1),
        ("gpufabric reports", "playbooks/workflow_report.yml", False, False, 1)]
    assert spec["workflow"]["parallel"] == 2


@pytest.mark.parametrize("parallel, chains", [(1, 1), (5, 5), (6, 5), (100, 5)])
def test_parallel_chains_are_at_most_the_units(parallel, chains):
    spec = _workflow.spec(UNITS, parallel)
    assert len(links(spec)["leaves"]) == chains == spec["workflow"]["parallel"]
    assert sorted(n for n, after in links(spec).items() if after == ["validate"]) == \
        sorted(list(UNITS)[-chains:]) if parallel > 1 else ["su05"]


@pytest.mark.parametrize("units, parallel, words", [
    ({}, 2, "the units must be a non-empty mapping of node name to its host pattern (e.g. {su01: "
            "'servers_su01:leaves_su01:spines'}), not an empty mapping"),
    (["su01"], 2, "the units must be a non-empty mapping of node name to its host pattern (e.g. {su01: "
                  "'servers_su01:leaves_su01:spines'}), not a list"),
    ({"SU01": "servers_su01"}, 2, "'SU01' is not a workflow node name (allowed: 1-40 of a-z 0-9 _"),
    ({"a" * 41: "servers_su01"}, 2, "is not a workflow node name"),
    ({"validate": "servers_su01"}, 2, "validate is the name of a node of its own"),
    ({"su01": "servers_su01;reboot"}, 2, "is not a host pattern of group and host names joined by ':'"),
    ({"su01": "servers_su01:!leaves"}, 2, "is not a host pattern"),
    ({"su01": "servers_su01"}, 0, "parallel: 0 is not a whole number of unit jobs at a time (allowed: 1-100)"),
    ({"su01": "servers_su01"}, 101, "parallel: 101 is not"),
    ({"su01": "servers_su01"}, True, "parallel: True is not"),
])
def test_bad_units_and_parallel_are_refused_naming_what_is_allowed(units, parallel, words):
    with pytest.raises(AnsibleFilterError) as err:
        awx_workflow(units, parallel)
    assert words in str(err.value)


def test_a_node_name_of_40_characters_is_allowed():
    name = "s" + "0" * 39
    assert links(_workflow.spec({name: "servers_su01"}, 1))["leaves"] == [name]


def report(*hosts, resume=None, batch="SU 1"):
    return {"hosts": [{"batch": batch, "host": h, "outcome": "done"} for h in hosts],
            "batches": [{"number": 1, "batch": batch, "servers": len(hosts), "leaves": 8}], "resume": resume}


def test_the_nodes_reports_merge_in_natural_node_order_with_their_node():
    merged = json.loads(rollout_merge({"su10": report("srv-r73-01", batch="SU 10"), "su2": report("srv-r09-01"),
                                       "su1": report("srv-r01-01", "srv-r01-02")}, "json"))
    assert merged["nodes"] == ["su1", "su2", "su10"]
    assert [(h["node"], h["host"]) for h in merged["hosts"]] == [
        ("su1", "srv-r01-01"), ("su1", "srv-r01-02"), ("su2", "srv-r09-01"), ("su10", "srv-r73-01")]
    assert [(b["node"], b["servers"]) for b in merged["batches"]] == [("su1", 2), ("su2", 1), ("su10", 1)]
    assert merged["resume"] is None
    text = rollout_merge({"su1": report("srv-r01-01")}, "md")
    assert text.startswith("# Rollout report of the workflow (1 nodes: su1)")
    assert "| su1 | SU 1 | srv-r01-01 | done |" in text
    assert rollout_merge({"su1": report("srv-r01-01")}, "csv").splitlines()[0].startswith("node,batch,host,")


def test_a_stopped_node_is_named_with_the_option_to_relaunch_it():
    stopped = {"number": 2, "batch": "SU 3", "why": "stopped", "option": "-e gpufabric_start_batch=2"}
    text = rollout_merge({"su1": report("a"), "su2": report("b", resume=stopped)}, "md")
    assert "Node su2 of the workflow stopped before its batch 2 (SU 3)" in text
    assert "relaunch that node's job with `-e gpufabric_start_batch=2`" in text


@pytest.mark.parametrize("parts, words", [
    ({}, "the parts must be a non-empty mapping of workflow node to its rollout report"),
    ({"su1": report("srv-a"), "su2": report("srv-a")}, "srv-a is in the reports of nodes su1 and su2"),
    ({"su1": {"hosts": []}}, "the part of node su1 is not a rollout report"),
])
def test_bad_parts_are_refused(parts, words):
    with pytest.raises(MlnxError) as err:
        _rollout_report.merge(parts)
    assert words in str(err.value)


def test_workflow_parts_takes_only_the_artifacts_and_refuses_one_that_is_not_a_mapping():
    got = workflow_parts({"gpufabric_rollout_part_su01": report("a"), "gpufabric_gate_part_validate": {"hosts": {}},
                          "gpufabric_rollout_part_": {}, "gpufabric_rollout_part_SU2": {}, "other": 1})
    assert got == {"rollout": {"su01": report("a")}, "gate": {"validate": {"hosts": {}}}}
    with pytest.raises(AnsibleFilterError) as err:
        workflow_parts({"gpufabric_rollout_part_su01": "a report"})
    assert "gpufabric_rollout_part_su01: a workflow artifact must be the mapping a node passed on" in str(err.value)


def test_the_artifacts_are_declared_names_and_the_node_name_is_checked():
    hostvars = {"srv-01": {"gpufabric_rollout_part_su01": {}, "gpufabric_gate_part_validate": {},
                           "gpufabric_rolout_part_su01": {}}}
    assert unknown_variables(["srv-01"], hostvars) == [
        "srv-01: gpufabric_rolout_part_su01 is not a variable of gpufabric.mlnx: nothing reads it (docs/variables.md "
        "lists every variable)"]
    off = {"gpufabric_preflight_enabled": False, "gpufabric_ofed_enabled": False, "gpufabric_firmware_enabled": False}
    good = site_problems(["srv-01"], {"srv-01": dict(off, gpufabric_workflow_node="su01")})
    bad = site_problems(["srv-01"], {"srv-01": dict(off, gpufabric_workflow_node="su 01")})
    assert good == []
    assert bad == ["srv-01: gpufabric_workflow_node='su 01' is not a workflow node name (allowed: 1-40 of a-z 0-9 _, "
                   "starting with a letter or digit) (docs/variables.md)"]
