"""The fleet twin (tests/twin): site.yml on simulated servers and leaves on this machine, without containers.

A site of two racks (one ConnectX-6 Dx server each, two rails, four leaves) is made a twin from its inventory
directory; the rehearsal (check mode) predicts, per machine, what the rollout would do and changes nothing; the
same run with --apply converges every machine; a rehearsal after it predicts nothing."""
import json

import pytest
import yaml

from twin_site import PIN, applied, build, cards, rehearse, site, twin_tool

MODEL, report = twin_tool.MODEL, twin_tool.report

SERVERS = ["srv-r01-01", "srv-r02-01"]
LEAVES = ["r01-leaf-rail0", "r01-leaf-rail1", "r02-leaf-rail0", "r02-leaf-rail1"]


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    """A twin of the two-rack site, built (its directory)."""
    tmp = tmp_path_factory.mktemp("twin")
    site(tmp / "site", {"r01": 1, "r02": 1})
    return build(tmp / "site", tmp / "twin")


def changed_tasks(ran, host):
    return sorted(name for name, result in ran.results(host).items() if result.get("changed"))


def test_the_build_makes_every_machine_and_cables_each_leaf_port_to_its_servers_interface(twin):
    inventory = yaml.safe_load((twin / "twin.yml").read_text())["all"]["children"]
    assert sorted(inventory["servers"]["hosts"]) == SERVERS
    assert {h["ansible_connection"] for h in inventory["servers"]["hosts"].values()} == {"twin"}
    assert sorted(inventory["leaves"]["hosts"]) == LEAVES
    state = json.loads((twin / "leaves" / "r02-leaf-rail1" / "state.json").read_text())
    neighbours = {port: p.get("neighbor") for port, p in state["ports"].items()}
    assert neighbours["swp1"] == {"host": "srv-r02-01", "ifname": "enp216s0f0np0"}
    # the twin's matrix: the site's, its image a simulator image of that PSID and version
    twin_vars = yaml.safe_load((twin / "twin-vars.yml").read_text())
    pin = twin_vars["gpufabric_matrix"]["firmware"]["MT_0000000359"]
    assert pin["sha256"] != "0" * 64 and (twin / "firmware" / PIN["image"]).is_file()


@pytest.mark.heavy(105)
def test_the_rehearsal_predicts_each_machines_work_changes_nothing_and_the_applied_twin_converges(twin):
    ran = rehearse(twin)
    assert ran.ok, ran
    for server in SERVERS:
        predicted = changed_tasks(ran, server)
        assert any("urn" in name for name in predicted), predicted  # the burn of the pinned firmware
        assert {c["fw"]["burned"] for c in cards(twin, server)} == {"22.41.1000"}
    assert all(applied(twin, leaf) == [] for leaf in LEAVES)
    # the prediction, per server, and the rollout's duration by the latency model
    doc = report(twin)
    rows = {r["host"]: r for r in doc["hosts"]}
    assert {h: (r["outcome"], r["firmware_burned"], r["nv_changed"], r["activation"]) for h, r in rows.items()} == \
        {h: ("done", 2, 2, "fwreset level 3") for h in SERVERS}
    per_server = MODEL["read"] * MODEL["reads"] + MODEL["burn"] + MODEL["nv_write"] + MODEL["fwreset"]
    assert [b["seconds"] for b in doc["batches"]] == [MODEL["leaf_apply"] + per_server] * 2
    assert doc["rollout_seconds"] == 2 * (MODEL["leaf_apply"] + per_server)
    assert "predicted rollout 4 min" in (twin / "reports" / "twin.md").read_text()

    ran = rehearse(twin, "--apply")
    assert ran.ok, ran
    for server in SERVERS:
        assert {c["fw"]["burned"] for c in cards(twin, server)} == {"22.43.1014"}
    assert all(len(applied(twin, leaf)) == 1 for leaf in LEAVES)

    ran = rehearse(twin)
    assert ran.ok, ran
    assert {host: changed_tasks(ran, host) for host in SERVERS + LEAVES} == {host: [] for host in SERVERS + LEAVES}


@pytest.mark.heavy(40)
def test_a_rollout_resumed_at_batch_2_runs_only_rack_r02_and_its_leaves(twin):
    """gpufabric_start_batch (docs/operations.md, "Resume a stopped rollout"): rack r01's server and leaves are not in
    the rollout play at all; rack r02's are, its leaves before its server."""
    ran = rehearse(twin, "-e", "gpufabric_start_batch=2")
    assert ran.ok, ran
    plan = ran.task("The batches", "srv-r01-01")["msg"]
    assert plan == ("1 batches: 2. rack r02; gpufabric_start_batch=2 - not run: batches 1-1 (rack r01)"), plan
    assert _in_rollout(ran) == {"srv-r02-01", "r02-leaf-rail0", "r02-leaf-rail1"}


@pytest.mark.heavy(35)
def test_a_rehearsal_of_one_rack_reports_that_rack_only(twin):
    """--limit: the rehearsal's report lists the machines in scope, not every server of the inventory as "not run"."""
    ran = rehearse(twin, "--limit", "rack_r02:r02-leaf-rail0:r02-leaf-rail1")
    assert ran.ok, ran
    doc = report(twin)
    assert [(r["host"], r["outcome"]) for r in doc["hosts"]] == [("srv-r02-01", "done")]
    assert doc["servers"] == 1
    # per batch what it changes (the one server burns its firmware, changes NV, resets the cards)
    assert [(b["batch"], b["burn"], b["nv"], b["fwreset"], b["reboot"]) for b in doc["batches"]] == [
        ("rack r02", 1, 1, 1, 0)]
    # where the rehearsal's own time went: the plays before the first batch, then the rest
    assert 0 < doc["planning_seconds"] < doc["before_first_batch_seconds"] < doc["rehearsal_seconds"]
    assert "| rack r02 | 1 | 2 | 0 | 0 | 1 | 1 | 1 | 0 |" in (twin / "reports" / "twin.md").read_text()


def _in_rollout(ran):
    return {host for p in ran.data["plays"] if p["play"]["name"].startswith("The rollout, batch by batch")
            for t in p["tasks"] for host in t["hosts"]}


@pytest.mark.heavy(40)
def test_a_wave_ends_at_its_end_batch_and_names_the_next(twin):
    """gpufabric_end_batch (docs/gitops.md, "Waves"): the first wave is batch 1 - rack r01's leaves and server only;
    the plan names where the next wave begins."""
    ran = rehearse(twin, "-e", "gpufabric_end_batch=1")
    assert ran.ok, ran
    assert ran.task("The batches", "srv-r01-01")["msg"] == (
        "1 batches: 1. rack r01; gpufabric_end_batch=1 - not run: batches 2-2 (the next wave: -e "
        "gpufabric_start_batch=2)")
    assert _in_rollout(ran) == {"srv-r01-01", "r01-leaf-rail0", "r01-leaf-rail1"}


def test_a_card_whose_serial_or_mac_is_another_machines_is_made_again_with_another_identity(tmp_path):
    """The identities of a fleet are unique: a hash of the host name gives about 20 million serial numbers, and the
    1,250 servers of example-1250 (12,500 cards) shared one - the preflight refused the whole rehearsal. A machine
    built with a name already used (the same hash) gets another identity salt."""
    used = set()
    twin_tool.build_server(tmp_path / "a", "srv-r123-04", "dgx-h100-eth", used)
    first = twin_tool.identities(tmp_path / "a")
    twin_tool.build_server(tmp_path / "b", "srv-r123-04", "dgx-h100-eth", used)
    second = twin_tool.identities(tmp_path / "b")
    assert len(first) == len(second) == 30 and not first & second and used == first | second
    assert json.loads((tmp_path / "b" / "state.json").read_text())["hostname"] == "srv-r123-04"
    twin_tool.build_server(tmp_path / "a", "srv-r123-04", "dgx-h100-eth", None)     # already there: kept
    assert twin_tool.identities(tmp_path / "a") == first
