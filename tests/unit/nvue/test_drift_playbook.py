# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/drift.yml on a fleet of two simulated servers (tests/sim, a ConnectX-6 Dx pair each, their NV
configuration and activation steps on) and four leaves of the NVUE emulator: after site.yml the fleet is compliant
(nothing reported, exit code 0); a hand-made change on one server (an NV parameter set with mlxconfig and activated)
and one on a leaf (an MTU applied by another client) are each found by name, with the value the host has and the one
the inventory wants, and nothing else is; the run refuses anything but --check --diff with the drift callback."""
import json

import pytest

from _paths import REPO
from _roleplay import run
from fleet import CARD, FABRIC, SERVERS, leaf_vars, leaves, simulated_servers, simulated_vars

SITE = REPO / "playbooks" / "site.yml"
DRIFT = REPO / "playbooks" / "drift.yml"


def fleet(tmp_path, make_switch):
    return leaves(make_switch), simulated_servers(tmp_path)


def playbook(tmp_path, made, sims, path, args=(), callbacks="gpufabric.mlnx.drift", check=True):
    """``callbacks``: ANSIBLE_CALLBACKS_ENABLED (None: not set, ansible.cfg enables none)."""
    return run(tmp_path, simulated_vars(sims), path, check=check, group_vars={"gpufabric_fabric": FABRIC},
               groups={"leaves": leaf_vars(made)}, args=list(args),
               environ=dict({"GPUFABRIC_DRIFT_DIR": str(tmp_path / "drift")},
                            **({"ANSIBLE_CALLBACKS_ENABLED": callbacks} if callbacks else {})))


def report(tmp_path):
    return json.loads((tmp_path / "drift" / "drift.json").read_text())


def once(ran, name):
    """The result of the run_once task ``name`` of the drift role (on whichever host ran it)."""
    for play in ran.data["plays"]:
        for task in play["tasks"]:
            if task["task"]["name"] == "gpufabric.mlnx.drift : " + name:
                return next(iter(task["hosts"].values()))
    raise AssertionError("%r did not run" % name)


def rows(doc, host):
    return [(r["group"], r["setting"], r["actual"], r["expected"]) for r in doc["hosts"][host]["settings"]]


@pytest.mark.heavy(120)
def test_a_compliant_fleet_reports_nothing_and_a_hand_made_change_is_found_by_name(tmp_path, make_switch):
    made, sims = fleet(tmp_path, make_switch)
    converged = playbook(tmp_path, made, sims, SITE, check=False, callbacks=None)
    assert converged.ok, converged

    compliant = playbook(tmp_path, made, sims, DRIFT, args=["--diff"])
    assert compliant.ok, compliant
    doc = report(tmp_path)
    assert doc["result"] == "compliant" and doc["finished"], doc
    assert sorted(doc["hosts"]) == sorted(list(made) + list(SERVERS))
    assert all(h["status"] == "compliant" and not h["settings"] for h in doc["hosts"].values()), doc["hosts"]
    assert {name: h["kind"] for name, h in doc["hosts"].items()} == dict(
        {name: "leaf" for name in made}, **{name: "server" for name in SERVERS})
    assert "No drift" in (tmp_path / "drift" / "drift.md").read_text()
    applied = {name: len(sw.events("apply")) for name, sw in made.items()}

    # by hand: NUM_OF_VFS 4 on one card of srv-r01-01, activated; MTU 1500 on r02-leaf-rail1's swp1
    assert sims["srv-r01-01"].run("mlxconfig", "-y", "-d", CARD, "set", "NUM_OF_VFS=4").returncode == 0
    sims["srv-r01-01"].mlxsim("reboot")
    made["r02-leaf-rail1"].change("/interface/swp1/link", {"mtu": 1500})
    applied["r02-leaf-rail1"] += 1
    for sim in sims.values():
        sim.clear_calls()

    drifted = playbook(tmp_path, made, sims, DRIFT, args=["--diff"])
    assert drifted.proc.returncode == 2, drifted
    doc = report(tmp_path)
    assert doc["result"] == "drift", doc
    assert doc["summary"]["drifted"] == ["r02-leaf-rail1", "srv-r01-01"], doc["summary"]
    assert ("nv_parameters", CARD + "/NUM_OF_VFS", "4", "8") in rows(doc, "srv-r01-01"), rows(doc, "srv-r01-01")
    assert {r[0] for r in rows(doc, "srv-r01-01")} <= {"nv_parameters", "activation"}, rows(doc, "srv-r01-01")
    leaf = rows(doc, "r02-leaf-rail1")
    assert ("leaf_configuration", "interface/swp1/link/mtu", 1500, 9216) in leaf, leaf
    assert all(doc["hosts"][name]["status"] == "compliant" for name in doc["hosts"]
               if name not in ("r02-leaf-rail1", "srv-r01-01")), doc["hosts"]
    verdict = once(drifted, "No drift - every host and leaf as the inventory says")
    assert "srv-r01-01: activation, nv_parameters" in verdict["msg"], verdict
    assert "r02-leaf-rail1: leaf_configuration" in verdict["msg"], verdict
    page = (tmp_path / "drift" / "drift.md").read_text()
    assert "## srv-r01-01 (server): " in page and "| NV parameters | %s/NUM_OF_VFS | 4 | 8 |" % CARD in page, page
    assert "## r02-leaf-rail1 (leaf): leaf configuration" in page
    # read-only: no leaf applied anything, no card was written
    assert {name: len(sw.events("apply")) for name, sw in made.items()} == applied
    assert not [argv for sim in sims.values() for argv in sim.argvs() if "set" in argv or "reset" in argv]

    # the report without the exit code
    quiet = playbook(tmp_path, made, sims, DRIFT, args=["--diff", "-e", "gpufabric_drift_fail=false"])
    assert quiet.ok, quiet
    assert report(tmp_path)["result"] == "drift"


def test_drift_refuses_a_run_that_is_not_check_diff_with_its_callback(tmp_path, make_switch):
    made, sims = fleet(tmp_path, make_switch)
    for args, check, callbacks, missing in (
            (["--diff"], False, "gpufabric.mlnx.drift", "--check"),
            ([], True, "gpufabric.mlnx.drift", "--diff"),
            (["--diff"], True, None, "the drift callback enabled")):
        ran = playbook(tmp_path, made, sims, DRIFT, args=args, check=check, callbacks=callbacks)
        assert ran.proc.returncode == 2, ran
        refused = once(ran, "Refuse a drift run that is not --check --diff or has no drift callback (nothing was "
                            "contacted)")
        assert refused["failed"] and missing in refused["msg"], refused
        # nothing past the guard ran
        assert [p["play"]["name"] for p in ran.data["plays"]] == [
            "Drift - only a check-mode run with diffs and the drift callback"], ran.data["plays"]
    assert all(not sw.events("apply") for sw in made.values())
