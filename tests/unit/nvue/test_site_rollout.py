# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/site.yml batch by batch on four leaves of the NVUE emulator (127.0.0.1, httpapi) and two servers (local
connection, their own steps switched off): with gpufabric_batch_by=rack every rack is a batch of its leaves and then
its servers; a leaf that refuses its configuration holds its rack's servers, the batch gate counts them, and the run
fails at its end naming each held server with its leaf, port and reason."""
import json

import pytest

from _paths import REPO
from _roleplay import run
from fleet import FABRIC, OFF, SERVERS, leaf_vars, leaves

SITE = REPO / "playbooks" / "site.yml"


def site(tmp_path, made, args=(), check=False, **play_vars):
    inventory = leaf_vars(made)
    servers = {name: dict(values, **OFF) for name, values in SERVERS.items()}
    extra = ["-e", json.dumps(dict({"gpufabric_batch_by": "rack"}, **play_vars))]
    return run(tmp_path, servers, SITE, check=check, group_vars={"gpufabric_fabric": FABRIC},
               groups={"leaves": inventory}, args=extra + list(args))


CONFIGURED = ("The pinned switch OS, then one revision - ports, addresses, RoCE QoS; applied only when it "
              "changes something")
GATE = "Batch gate - stop before the next batch when too many servers of this one failed or were held"


def batches(ran, skipped=False):
    """The rollout play's batches: [(hosts of the batch, {task name: hosts it ran on})] - not skipped, unless told."""
    out = []
    for play in ran.data["plays"]:
        if not play["play"]["name"].startswith("The rollout, batch by batch"):
            continue
        hosts, tasks = set(), {}
        for task in play["tasks"]:
            hosts.update(task["hosts"])
            ran_on = [h for h, r in task["hosts"].items() if skipped or not r.get("skipped")]
            tasks.setdefault(task["task"]["name"].split(" : ")[-1], []).extend(ran_on)
        out.append((sorted(hosts), tasks))
    return out


def applies(made):
    return {name: len(sw.events("apply")) for name, sw in made.items()}


def held(ran, host):
    try:
        return ran.task("Why this server's leaves hold it", host, role="leaf_ready")["ansible_facts"]["gpufabric_held"]
    except AssertionError:
        return None


@pytest.mark.heavy(95)
def test_by_rack_each_batch_is_its_leaves_then_its_servers_and_a_rerun_applies_nothing(tmp_path, make_switch):
    made = leaves(make_switch)
    ran = site(tmp_path, made)
    assert ran.ok, ran
    (first, first_tasks), (second, second_tasks) = batches(ran)
    assert first == ["r01-leaf-rail0", "r01-leaf-rail1", "srv-r01-01"]
    assert second == ["r02-leaf-rail0", "r02-leaf-rail1", "srv-r02-01"]
    configured = CONFIGURED
    assert sorted(first_tasks[configured]) == ["r01-leaf-rail0", "r01-leaf-rail1"]
    assert sorted(second_tasks[configured]) == ["r02-leaf-rail0", "r02-leaf-rail1"]
    assert applies(made) == dict.fromkeys(made, 1)
    assert held(ran, "srv-r01-01") == [] and held(ran, "srv-r02-01") == []
    # the servers went past the leaf gate to the end of their batch (a held server ends its play before it)
    assert [sorted(tasks[GATE]) for _hosts, tasks in batches(ran, skipped=True)] == [first, second]
    again = site(tmp_path, made)
    assert again.ok, again
    assert applies(made) == dict.fromkeys(made, 1)  # a compliant rerun: 0 revisions applied
    # what the leaf roles cost a compliant rerun (issue 40): one task of each on a leaf, one (and the held server's
    # meta end_host, skipped - the recap does not count it) on a server
    assert own_tasks(again, "r01-leaf-rail0") == [
        ("ok", "leaf : " + CONFIGURED), ("ok", "leaf_ready : Read the leaf until it is ready for its servers, or the "
                                               "time is up; record the gate")]
    assert own_tasks(again, "srv-r01-01") == [
        ("ok", "leaf_ready : Why this server's leaves hold it"),
        ("skipped", "leaf_ready : Held - end this server's play (not touched, not failed; the run's end names its "
                    "leaf, port and reason)")]


def own_tasks(ran, host):
    """(status, role : task) of every task of the roles leaf and leaf_ready with a result on ``host``."""
    out = []
    for play in ran.data["plays"]:
        for task in play["tasks"]:
            name, result = task["task"]["name"].replace("gpufabric.mlnx.", ""), task["hosts"].get(host)
            if result is not None and name.split(" : ")[0] in ("leaf", "leaf_ready"):
                out.append(("skipped" if result.get("skipped") else "failed" if result.get("failed") else "ok", name))
    return out


@pytest.mark.heavy(40)
def test_a_refused_leaf_holds_its_racks_server_the_other_rack_goes_on_and_the_run_fails_naming_it(
        tmp_path, make_switch):
    made = leaves(make_switch, {"r01-leaf-rail1": [("invalid_apply", "interface.swp1.link.mtu", "not today")]})
    ran = site(tmp_path, made, gpufabric_max_fail_percentage=100)
    assert not ran.ok, ran
    hold = held(ran, "srv-r01-01")
    assert [(h["leaf"], h["port"]) for h in hold] == [("r01-leaf-rail1", "swp1")]
    assert "its leaf r01-leaf-rail1 could not be configured" in hold[0]["reason"] and "not today" in hold[0]["reason"]
    assert held(ran, "srv-r02-01") == []
    assert applies(made)["r02-leaf-rail0"] == 1  # the next rack went on (the gate allows 100%)
    summary = ran.task("No server was held", "srv-r01-01")
    assert summary["failed"]
    assert "1 servers were held and not touched" in summary["msg"]
    assert "srv-r01-01: its leaf r01-leaf-rail1" in summary["msg"]


def test_the_batch_gate_counts_held_servers_and_stops_before_the_next_rack(tmp_path, make_switch):
    made = leaves(make_switch, {"r01-leaf-rail0": [("invalid_apply", "interface.swp1.link.mtu", "not today")]})
    ran = site(tmp_path, made)  # gpufabric_max_fail_percentage 0
    assert not ran.ok, ran
    assert [hosts for hosts, _tasks in batches(ran)] == [["r01-leaf-rail0", "r01-leaf-rail1", "srv-r01-01"]]
    gate = ran.task(GATE, "r01-leaf-rail1")
    assert gate["failed"]
    assert "of the 1 servers of this batch 0 failed (none) and 1 were held by their leaves (srv-r01-01)" in gate["msg"]
    assert applies(made)["r02-leaf-rail0"] == 0 and applies(made)["r02-leaf-rail1"] == 0  # never touched


def test_a_leaf_outside_the_limit_holds_its_server(tmp_path, make_switch):
    made = leaves(make_switch)
    ran = site(tmp_path, made, args=["--limit", "srv-r01-01,r01-leaf-rail0"])
    assert not ran.ok, ran
    assert [hosts for hosts, _tasks in batches(ran)] == [["r01-leaf-rail0", "srv-r01-01"]]
    hold = held(ran, "srv-r01-01")
    assert [h["leaf"] for h in hold] == ["r01-leaf-rail1"]
    assert "is not in this run (--limit)" in hold[0]["reason"]
    assert applies(made)["r01-leaf-rail1"] == 0


def test_check_mode_applies_nothing_on_any_leaf(tmp_path, make_switch):
    made = leaves(make_switch)
    ran = site(tmp_path, made, args=["--diff"], check=True)
    assert ran.ok, ran
    assert applies(made) == dict.fromkeys(made, 0)
    predicted = ran.task(CONFIGURED, "r02-leaf-rail1", role="leaf")
    assert predicted["changed"] and predicted["diff"]


@pytest.mark.heavy(40)
def test_a_leaf_that_cannot_be_reached_holds_its_servers_with_the_cause(tmp_path, make_switch):
    made = leaves(make_switch, {})
    made["r01-leaf-rail1"].stop()        # nvued down: nothing answers on its port
    ran = site(tmp_path, made, gpufabric_max_fail_percentage=100)
    assert not ran.ok, ran
    hold = held(ran, "srv-r01-01")
    assert [(h["leaf"], h["port"]) for h in hold] == [("r01-leaf-rail1", "swp1")], hold
    assert hold[0]["reason"].startswith(
        "its leaf r01-leaf-rail1 could not be configured: the switch could not be reached over the NVUE REST API "
        "(GET /nvue_v1/system/version?rev=operational): Could not connect to https://127.0.0.1:"), hold
    assert "Connection refused" in hold[0]["reason"]
    assert held(ran, "srv-r02-01") == []
    assert ran.task("No server was held", "srv-r01-01")["msg"].count("srv-r01-01: its leaf") == 1   # once per host
