"""The AWX workflow of docs/examples/awx (issue 40 item 3) run here as execution nodes run it: every job through
ansible-runner's remote-job protocol (transmit | worker | process, tests/awx/workflow.py), on a twin of three SUs
(one rack of one server each, two rails: six leaves, two spines), two unit jobs at a time.

It proves what the workflow promises: the leaves' node runs before any server's; each SU's job sees only its SU's
servers, its leaves and the spines, and plans them as the whole site does (the leaves' BGP ASNs and loopbacks are
the whole site's); the units run side by side and in chains; the gate runs after every chain; the reports node
merges what the nodes passed on (set_stats artifacts, merged as AWX merges them) into one rollout report and one
hand-over report. The twin has no rail networks, so the gate quarantines every server for its missing links - and
the hand-over report says so."""
import json
import subprocess
import sys

import pytest

from _paths import REPO
from twin_site import build, site

WORKFLOW = REPO / "tests" / "awx" / "workflow.py"
SERVERS = {"su01": "srv-r01-01", "su02": "srv-r02-01", "su03": "srv-r03-01"}
LEAVES = {su: ["%s-leaf-rail0" % rack, "%s-leaf-rail1" % rack] for su, rack in
          (("su01", "r01"), ("su02", "r02"), ("su03", "r03"))}
SPINES = ["spine1", "spine2"]


@pytest.fixture(scope="module")
def workflow(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("awx")
    site(tmp / "site", {"r01": 1, "r02": 1, "r03": 1}, sus=True, spines=SPINES)
    twin = build(tmp / "site", tmp / "twin")
    (tmp / "vault").write_text("not-used\n")
    proc = subprocess.run([sys.executable, str(WORKFLOW), "--twin", str(twin), "--work", str(tmp / "wf"),
                           "--vault-password-file", str(tmp / "vault"), "--parallel", "2"],
                          capture_output=True, text=True, check=False, timeout=1800)
    result = json.loads((tmp / "wf" / "workflow.json").read_text()) if (tmp / "wf" / "workflow.json").exists() else {}
    return proc, result, tmp


@pytest.mark.heavy(165)
def test_the_workflow_runs_every_node_in_awx_order_through_the_remote_job_protocol(workflow):
    proc, result, _tmp = workflow
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    nodes = result["nodes"]
    assert sorted(nodes) == ["leaves", "reports", "su01", "su02", "su03", "validate"] and result["not_run"] == []
    assert {name: (n["rc"], n["status"], n["pipeline_rc"]) for name, n in nodes.items()} == {
        name: (0, "successful", [0, 0, 0]) for name in nodes}
    # two chains (parallel 2): su01 then su03, su02 beside them
    after = {n["identifier"]: [e["identifier"] for e in n["related"]["success_nodes"]]
             for n in result["spec"]["workflow"]["nodes"]}
    assert after == {"leaves": ["su01", "su02"], "su01": ["su03"], "su03": ["validate"], "su02": ["validate"],
                     "validate": ["reports"], "reports": []}
    assert nodes["su03"]["started"] >= nodes["su01"]["ended"]
    assert nodes["su02"]["started"] < nodes["su01"]["ended"] and nodes["su01"]["started"] < nodes["su02"]["ended"]
    # switch-first across nodes: every leaf task of the leaves' node before any unit job started
    units = [nodes[su] for su in SERVERS]
    assert nodes["leaves"]["ended"] <= min(n["started"] for n in units)
    assert max(n["ended"] for n in units) <= nodes["validate"]["started"] <= nodes["validate"]["ended"] <= \
        nodes["reports"]["started"]


@pytest.mark.heavy(165)
def test_each_su_job_sees_only_its_su_and_the_leaves_job_only_leaves(workflow):
    proc, result, _tmp = workflow
    assert proc.returncode == 0, proc.stdout[-3000:]
    nodes = result["nodes"]
    for su, server in SERVERS.items():
        assert nodes[su]["inventory"] == sorted([server] + LEAVES[su] + SPINES)
        assert nodes[su]["hosts"] == sorted(["localhost", server] + LEAVES[su])
    every_leaf = sorted(leaf for leaves in LEAVES.values() for leaf in leaves)
    assert set(nodes["leaves"]["hosts"]) - {"localhost"} == set(every_leaf)
    assert set(nodes["validate"]["hosts"]) - {"localhost"} == set(every_leaf) | set(SERVERS.values())
    assert nodes["reports"]["hosts"] == ["localhost"]


@pytest.mark.heavy(165)
def test_an_su_job_plans_its_leaves_as_the_whole_site_does(workflow):
    proc, _result, tmp = workflow
    assert proc.returncode == 0, proc.stdout[-3000:]
    # leaf numbers in (SU, rail) order: r01 0-1, r02 2-3, r03 4-5 - what the whole site's plan gives, written by hand
    expected = {"r01-leaf-rail0": 0, "r01-leaf-rail1": 1, "r02-leaf-rail0": 2, "r02-leaf-rail1": 3,
                "r03-leaf-rail0": 4, "r03-leaf-rail1": 5}
    for leaf, number in expected.items():
        applied = json.loads((tmp / "twin" / "leaves" / leaf / "state.json").read_text())["applied"]
        assert applied["router"]["bgp"]["autonomous-system"] == 4200000000 + number, leaf
        assert list(applied["interface"]["lo"]["ip"]["address"]) == ["198.18.128.%d/32" % number], leaf


@pytest.mark.heavy(165)
def test_the_nodes_reports_merge_into_one_rollout_report_and_one_handover_report(workflow):
    proc, result, tmp = workflow
    assert proc.returncode == 0, proc.stdout[-3000:]
    nodes = result["nodes"]
    assert {su: nodes[su]["artifacts"] for su in SERVERS} == {su: ["gpufabric_rollout_part_" + su] for su in SERVERS}
    assert nodes["validate"]["artifacts"] == ["gpufabric_gate_part_validate"]
    assert nodes["leaves"]["artifacts"] == []
    # AWX's merge: a node gets its ancestors' artifacts - su03 its chain's su01, the reports node every one
    assert nodes["su03"]["received"] == ["gpufabric_rollout_part_su01"]
    assert nodes["reports"]["received"] == ["gpufabric_gate_part_validate", "gpufabric_rollout_part_su01",
                                            "gpufabric_rollout_part_su02", "gpufabric_rollout_part_su03"]
    merged = tmp / "wf" / "merged"
    rollout = json.loads((merged / "rollout.json").read_text())
    assert rollout["nodes"] == ["su01", "su02", "su03"]
    assert [(h["node"], h["host"], h["outcome"]) for h in rollout["hosts"]] == [
        (su, server, "done") for su, server in SERVERS.items()]
    assert [(b["node"], b["servers"], b["leaves"]) for b in rollout["batches"]] == [(su, 1, 2) for su in SERVERS]
    assert "| su02 | rack r02 | srv-r02-01 | done |" in (merged / "rollout.md").read_text()
    handover = json.loads((merged / "handover.json").read_text())
    quarantined = {q["host"]: " ".join(f["message"] for f in q["failures"]) for q in handover["quarantine"]}
    assert sorted(quarantined) == sorted(SERVERS.values()) and handover["handover"] == []
    assert all("link missing" in why for why in quarantined.values()), quarantined
    assert (merged / "handover.html").read_text().startswith("<!DOCTYPE html>")
