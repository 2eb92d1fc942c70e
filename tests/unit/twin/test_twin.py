"""The fleet twin (tests/twin): site.yml on simulated servers and leaves on this machine, without containers.

A site of two racks (one ConnectX-6 Dx server each, two rails, four leaves) is made a twin from its inventory
directory; the rehearsal (check mode) predicts, per machine, what the rollout would do and changes nothing; the
same run with --apply converges every machine; a rehearsal after it predicts nothing."""
import json
import os
import subprocess
import sys

import pytest
import yaml

from _paths import REPO
from _roleplay import Run, matrix

TWIN = REPO / "tests" / "twin" / "twin.py"
FABRIC = {"rails": 2, "su_prefix": 26, "racks_per_su": 1, "addressing": "p2p31", "leaf_name": "{rack}-leaf-rail{rail}",
          "pools": {"rail0": "198.18.0.0/20", "rail1": "198.18.16.0/20"},
          "nics": {"pci": ["0000:3b:00.0", "0000:d8:00.0"]}, "interface_names": ["enp59s0f0np0", "enp216s0f0np0"]}
PIN = {"version": "22.43.1014", "image": "fw-cx6dx-22.43.1014.bin", "sha256": "0" * 64,
       "part_numbers": ["MCX623106AN-CDAT"]}
LEAVES = ["r01-leaf-rail0", "r01-leaf-rail1", "r02-leaf-rail0", "r02-leaf-rail1"]
SERVERS = ["srv-r01-01", "srv-r02-01"]


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    """A twin of the two-rack site, built (its directory)."""
    tmp = tmp_path_factory.mktemp("twin")
    site = tmp / "site"
    (site / "group_vars").mkdir(parents=True)
    (site / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {
        "servers": {"children": {"rack_r01": {"vars": {"rack": "r01"}, "hosts": {"srv-r01-01": {"position": 1}}},
                                 "rack_r02": {"vars": {"rack": "r02"}, "hosts": {"srv-r02-01": {"position": 1}}}}},
        "leaves": {"hosts": {name: {} for name in LEAVES}}}}}))
    (site / "group_vars" / "all.yml").write_text(yaml.safe_dump({
        "gpufabric_fabric": FABRIC, "gpufabric_twin_profile": "cx6dx-roce", "gpufabric_batch_by": "rack",
        "gpufabric_matrix": matrix("twin-test", {"MT_0000000359": PIN}),
        "gpufabric_activate_allow_reboot": True,
        "gpufabric_nic_config_profiles": {"sriov": {"SRIOV_EN": True, "NUM_OF_VFS": 8}},
        "gpufabric_nic_config_assignments": [{"profile": "sriov", "part_numbers": ["MCX623106AN-CDAT"]}]}))
    out = tmp / "twin"
    proc = subprocess.run([sys.executable, str(TWIN), "build", "-i", str(site), "--out", str(out)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return out


def rehearse(out, *words):
    proc = subprocess.run([sys.executable, str(TWIN), "run", "--out", str(out), *words], capture_output=True,
                          text=True, check=False, timeout=900,
                          env=dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json"))
    return Run(proc)


def cards(out, server):
    return json.loads((out / "machines" / server / "state.json").read_text())["cards"]


def applied(out, leaf):
    """The leaf emulator's applied revisions (its event log)."""
    path = out / "leaves" / leaf / "events.jsonl"
    return [e for e in map(json.loads, path.read_text().splitlines()) if e.get("event") == "apply"] \
        if path.exists() else []


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


def test_the_rehearsal_predicts_each_machines_work_changes_nothing_and_the_applied_twin_converges(twin):
    ran = rehearse(twin)
    assert ran.ok, ran
    for server in SERVERS:
        predicted = changed_tasks(ran, server)
        assert any("urn" in name for name in predicted), predicted  # the burn of the pinned firmware
        assert {c["fw"]["burned"] for c in cards(twin, server)} == {"22.41.1000"}
    assert all(applied(twin, leaf) == [] for leaf in LEAVES)

    ran = rehearse(twin, "--apply")
    assert ran.ok, ran
    for server in SERVERS:
        assert {c["fw"]["burned"] for c in cards(twin, server)} == {"22.43.1014"}
    assert all(len(applied(twin, leaf)) == 1 for leaf in LEAVES)

    ran = rehearse(twin)
    assert ran.ok, ran
    assert {host: changed_tasks(ran, host) for host in SERVERS + LEAVES} == {host: [] for host in SERVERS + LEAVES}
