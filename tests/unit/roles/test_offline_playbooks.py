"""The playbooks that contact no host, called by their FQCN as an installed collection is (tests/_roleplay.py):
gpufabric.mlnx.check_inventory lists one known problem of every surface (matrix, rail plan, RoCE QoS, BIOS inputs,
a firmware image on the controller) at once and fails, and passes a clean inventory, writing the rollout's plan
(reports/plan.json: site.yml's batches); gpufabric.mlnx.cabling_plan refuses a rail pool over the management
addresses as the preflight does. Every host is unreachable (ssh to a closed port): the playbooks pass or fail without
contacting one."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from _roleplay import controller, matrix, run
from _simhost import device_id

PSID, VERSION, PART = "MT_0000000359", "22.43.1014", "MCX623106AN-CDAT"
NOWHERE = {"ansible_connection": "ssh", "ansible_port": 9,
           "ansible_ssh_common_args": "-o ConnectTimeout=5 -o StrictHostKeyChecking=no"}
FABRIC = {"rails": 2, "su_prefix": 26, "racks_per_su": 1,
          "pools": {"rail0": "198.18.0.0/20", "rail1": "198.18.16.0/20"}, "nics": {"part_numbers": [PART]},
          "interface_names": ["enp59s0f0np0", "enp216s0f0np0"], "mgmt_subnets": ["198.19.0.0/16"]}
CHECK = "Check the inventory without contacting any host (every problem at once)"
# A leaf's connection settings (docs/leaves.md, "Inventory"): its credential from the vault.
LEAF = {"ansible_connection": "ansible.netcommon.httpapi", "ansible_network_os": "gpufabric.mlnx.nvue",
        "ansible_user": "cumulus", "ansible_password": "{{ vault_leaf_password }}"}
VAULT_PASSWORD = "unit-offline-vault"
# The way out of missing images, named once after them (roles/firmware/tasks/images.yml).
WAY_OUT = ("%d image(s) of the matrix are not in this folder: download them into it (or point gpufabric_firmware_source_dir "
           "at them), or leave the images out of this check with -e gpufabric_preflight_images=false - then nothing "
           "checks on the controller that each image is there, its sha256, and the PSID and version inside it (the "
           "firmware step still takes the images from this folder: a missing one fails the servers that need it, in "
           "their batch)")


def site(tmp_path, **pins):
    """The controller (simulated flint, the pinned image) and the group variables of a clean site."""
    ctl = controller(tmp_path)
    image = ctl.mkimage(PSID, VERSION, device_id("ConnectX6DX"))
    firmware = dict({PSID: {"version": VERSION, "image": os.path.basename(image["path"]), "sha256": image["sha256"],
                            "part_numbers": [PART]}}, **pins)
    return ctl, {"gpufabric_matrix": matrix("unit-offline", firmware), "gpufabric_fabric": FABRIC,
                 "gpufabric_firmware_source_dir": str(ctl.tmp), "gpufabric_report_dir": str(tmp_path / "reports")}


def servers(**extra):
    """Three servers of rack r01 (positions 1-3), ``extra``: {host: more variables}."""
    return {"srv-r01-%02d" % pos: dict(dict(NOWHERE, ansible_host="127.0.0.%d" % pos, rack="r01", position=pos),
                                       **extra.get("srv-r01-%02d" % pos, {}))
            for pos in (1, 2, 3)}


def cabling_plan(tmp_path, hosts, group_vars):
    """gpufabric.mlnx.cabling_plan (a localhost play: the fabric and report folder as its vars)."""
    text = yaml.safe_dump([{"import_playbook": "gpufabric.mlnx.cabling_plan",
                            "vars": {key: group_vars[key] for key in ("gpufabric_fabric", "gpufabric_report_dir")}}])
    return run(tmp_path, hosts, text, group_vars=group_vars)


def check_inventory(tmp_path, hosts, group_vars, ctl):
    return run(tmp_path, hosts, "- import_playbook: gpufabric.mlnx.check_inventory\n", group_vars=group_vars,
               environ=ctl.env)


def test_a_clean_inventory_passes_without_contacting_a_host(tmp_path):
    ctl, group_vars = site(tmp_path)
    ran = check_inventory(tmp_path, servers(), group_vars, ctl)
    assert ran.ok, ran
    assert ran.task(CHECK, "srv-r01-01", role="preflight")["msg"] == (
        "3 hosts, matrix unit-offline, the rail plan, the firmware images: no problem")
    assert all(stats["unreachable"] == 0 for stats in ran.data["stats"].values())   # run once, on the controller


def test_one_problem_of_every_surface_at_once(tmp_path):
    ctl, group_vars = site(tmp_path, MT_0000000838={"version": "28.43.2566", "image": "fw-cx7-missing.bin",
                                                    "sha256": hashlib.sha256(b"not here").hexdigest(),
                                                    "part_numbers": ["MCX75310AAS-NEAT"]})
    bad = dict(group_vars["gpufabric_matrix"], nv_profile_assignments=[{"profile": "nowhere", "part_numbers": [PART]}])
    hosts = servers(**{
        "srv-r01-01": {"gpufabric_roce_qos_cnp_dscp": 64},                                       # RoCE QoS
        "srv-r01-02": {"position": 1,                                                            # rail plan
                       "gpufabric_platform_bios": {"models": {"PowerEdge XE9680": {"ProcCStates": None}}}},  # BIOS
        "srv-r01-03": {"gpufabric_matrix": bad}})                                                # matrix
    ran = check_inventory(tmp_path, hosts, group_vars, ctl)
    assert not ran.ok
    msg = ran.task(CHECK, "srv-r01-01", role="preflight")["msg"]
    text = "\n".join(msg)
    assert msg[0] == "the inventory has %d problem(s):" % (len(msg) - 1), msg
    assert "gpufabric_matrix of srv-r01-03: gpufabric_matrix.nv_profile_assignments[0].profile" in text, text
    assert "hosts.srv-r01-02: rack r01 position 1 is also srv-r01-01's" in msg, text
    assert "srv-r01-01: roce_qos: cnp_dscp=64 is outside 0-63 (allowed: an integer 0-63)." in msg, text
    assert ("srv-r01-02: gpufabric_platform_bios.models[\"PowerEdge XE9680\"].ProcCStates: BIOS attribute ProcCStates "
            "has no value (null)") in text, text
    assert ("controller (gpufabric_firmware_source_dir %s): images[1] (PSID MT_0000000838, version 28.43.2566, "
            "%s/fw-cx7-missing.bin): %s/fw-cx7-missing.bin is not a file on this host" % (ctl.tmp, ctl.tmp, ctl.tmp)
            ) in msg, text
    assert msg[-1] == "controller (gpufabric_firmware_source_dir %s): %s" % (ctl.tmp, WAY_OUT % 1), text
    assert all(stats["unreachable"] == 0 for stats in ran.data["stats"].values())


def test_a_host_pattern_checks_every_host_it_names_from_one_play_host(tmp_path):
    """gpufabric_check_hosts is a host pattern: every host it names is checked (a problem of its last host is
    listed, one of a host outside it is not) and counted, though the play runs on its first host only (why:
    tests/bench/check_inventory.py, the growth from 1,250 to 12,500 hosts)."""
    ctl, group_vars = site(tmp_path)
    hosts = servers(**{"srv-r01-01": {"gpufabric_roce_qos_cnp_dscp": 65},
                       "srv-r01-03": {"gpufabric_roce_qos_cnp_dscp": 64}})
    ran = run(tmp_path, hosts, "- import_playbook: gpufabric.mlnx.check_inventory\n", group_vars=group_vars,
              environ=ctl.env, args=["-e", "gpufabric_check_hosts=srv-r01-02:srv-r01-03"])
    assert not ran.ok
    msg = ran.task(CHECK, "srv-r01-02", role="preflight")["msg"]
    assert "srv-r01-03: roce_qos: cnp_dscp=64 is outside 0-63 (allowed: an integer 0-63)." in msg, msg
    assert not [line for line in msg if "srv-r01-01" in line], msg
    assert sorted(ran.data["stats"]) == ["srv-r01-02"], ran.data["stats"]
    hosts["srv-r01-03"].pop("gpufabric_roce_qos_cnp_dscp")
    ran = run(tmp_path, hosts, "- import_playbook: gpufabric.mlnx.check_inventory\n", group_vars=group_vars,
              environ=ctl.env, args=["-e", "gpufabric_check_hosts=srv-r01-02:srv-r01-03"])
    assert ran.ok, ran
    assert ran.task(CHECK, "srv-r01-02", role="preflight")["msg"] == (
        "2 hosts, matrix unit-offline, the rail plan, the firmware images: no problem")


def test_the_cabling_plan_refuses_a_rail_pool_over_the_management_addresses(tmp_path):
    ctl, group_vars = site(tmp_path)
    hosts = servers()
    hosts["srv-r01-02"]["ansible_host"] = "198.18.0.12"                   # a management address in rail0's pool
    ran = cabling_plan(tmp_path, hosts, group_vars)
    assert not ran.ok
    failure = "\n".join(str(msg) for msg in ran.failures().values())
    assert "198.18.0.12" in failure and "srv-r01-02" in failure, failure
    assert not (tmp_path / "reports" / "cabling.csv").exists()

    ran = check_inventory(tmp_path, hosts, group_vars, ctl)              # the offline check refuses the same
    assert not ran.ok and "198.18.0.12" in "\n".join(ran.task(CHECK, "srv-r01-01", role="preflight")["msg"])

    hosts["srv-r01-02"]["ansible_host"] = "127.0.0.2"
    ran = cabling_plan(tmp_path, hosts, group_vars)
    assert ran.ok, ran
    assert len((tmp_path / "reports" / "cabling.csv").read_text().splitlines()) == 1 + 6   # 3 servers x 2 rails


def test_the_offline_check_reports_a_leaf_missing_from_the_leaves_group(tmp_path):
    ctl, group_vars = site(tmp_path)
    leaves = {"su1-leaf-rail0": dict(LEAF, ansible_host="127.0.1.1", vault_leaf_password="x"),
              "su1-leaf-rail2": dict(LEAF, ansible_host="127.0.1.3", vault_leaf_password="x")}
    ran = run(tmp_path, servers(), "- import_playbook: gpufabric.mlnx.check_inventory\n", group_vars=group_vars,
              environ=ctl.env, groups={"leaves": leaves})
    assert not ran.ok
    msg = ran.task(CHECK, "srv-r01-01", role="preflight")["msg"]
    assert msg[1:] == [
        "leaves.su1-leaf-rail1: srv-r01-01:enp216s0f0np0 is cabled to su1-leaf-rail1, which is not in the inventory's "
        "leaves group (gpufabric_leaf_group; 3 cables go to it): add the leaf to the group, or correct "
        "gpufabric_fabric.leaf_name",
        "leaves.su1-leaf-rail2: is in the inventory's leaves group but is no leaf of the rail plan (closest planned "
        "leaves: su1-leaf-rail1, su1-leaf-rail0)"], msg
    assert all(stats["unreachable"] == 0 for stats in ran.data["stats"].values())


def _vaulted(tmp_path, name, value):
    """An extra-vars file with ``name`` encrypted by ansible-vault (VAULT_PASSWORD), and the password's file."""
    secret = tmp_path / "vault-pass"
    secret.write_text(VAULT_PASSWORD)
    out = subprocess.run([str(Path(sys.executable).parent / "ansible-vault"), "encrypt_string", "--vault-password-file",
                          str(secret), "--name", name, value], capture_output=True, text=True, check=True).stdout
    path = tmp_path / "vaulted.yml"
    path.write_text(out)
    return path, secret


def test_a_leaf_without_connection_settings_or_its_vault_secret_is_refused_before_any_host(tmp_path):
    ctl, group_vars = site(tmp_path)
    vaulted, secret = _vaulted(tmp_path, "vault_leaf_password", "s3cret-leaf-password")
    leaves = {"su1-leaf-rail0": dict(LEAF, ansible_host="127.0.1.1"),
              "su1-leaf-rail1": {"ansible_host": "127.0.1.2"}}                      # nothing: ssh, no user
    play = "- import_playbook: gpufabric.mlnx.check_inventory\n"
    ran = run(tmp_path, servers(), play, group_vars=group_vars, environ=ctl.env, groups={"leaves": leaves},
              args=["-e", "@%s" % vaulted])
    assert not ran.ok
    msg = ran.task(CHECK, "srv-r01-01", role="preflight")["msg"]
    assert msg[1:] == [
        "su1-leaf-rail0: ansible_password cannot be read on the controller: A vault exception marker was tripped. "
        "(give the vault secret: --ask-vault-pass or --vault-password-file)",
        'su1-leaf-rail1: ansible_connection is not set: a leaf is reached with ansible.netcommon.httpapi or '
        'ansible.netcommon.network_cli (docs/leaves.md, "Inventory")',
        "su1-leaf-rail1: ansible_network_os is not set (allowed: gpufabric.mlnx.nvue)",
        "su1-leaf-rail1: ansible_user is not set (the switch's NVUE user, e.g. cumulus)"], msg
    assert "s3cret-leaf-password" not in ran.proc.stdout + ran.proc.stderr
    assert all(stats["unreachable"] == 0 for stats in ran.data["stats"].values())

    leaves["su1-leaf-rail1"] = dict(LEAF, ansible_host="127.0.1.2")
    ran = run(tmp_path, servers(), play, group_vars=group_vars, environ=ctl.env, groups={"leaves": leaves},
              args=["-e", "@%s" % vaulted, "--vault-password-file", str(secret)])
    assert ran.ok, ran
    assert "s3cret-leaf-password" not in ran.proc.stdout + ran.proc.stderr


def test_a_clean_inventory_writes_the_rollouts_plan_and_a_failing_check_removes_it(tmp_path):
    """The plan a pipeline's waves follow (docs/gitops.md, "Waves"): site.yml's batches - by the site's own
    gpufabric_batch_by and gpufabric_batch_size, each batch's leaves the ones no earlier batch had - in
    reports/plan.json and one line, without contacting a host; a check that fails leaves no plan behind."""
    ctl, group_vars = site(tmp_path)
    group_vars.update(gpufabric_batch_by="rack", gpufabric_batch_size=[1, 2])   # the canary rack, then 2 at a time
    hosts = {name: dict(NOWHERE, ansible_host="127.0.0.%d" % index, rack=name[4:7], position=int(name[-2:]))
             for index, name in enumerate(["srv-r01-01", "srv-r01-02", "srv-r02-01", "srv-r03-01"], start=1)}
    leaves = {"su%d-leaf-rail%d" % (su, rail): dict(LEAF, ansible_host="127.0.1.%d" % (2 * su + rail),
                                                    vault_leaf_password="x")
              for su in (1, 2, 3) for rail in (0, 1)}
    ran = run(tmp_path, hosts, "- import_playbook: gpufabric.mlnx.check_inventory\n", group_vars=group_vars,
              environ=ctl.env, groups={"leaves": leaves})
    assert ran.ok, ran
    plan = json.loads((tmp_path / "reports" / "plan.json").read_text())
    assert plan == {"schema": 1, "batch_by": "rack", "batch_size": [1, 2], "batches": [
        {"number": 1, "name": "rack r01", "servers": ["srv-r01-01", "srv-r01-02"],
         "leaves": ["su1-leaf-rail0", "su1-leaf-rail1"]},
        {"number": 2, "name": "racks r02-r03", "servers": ["srv-r02-01", "srv-r03-01"],
         "leaves": ["su2-leaf-rail0", "su2-leaf-rail1", "su3-leaf-rail0", "su3-leaf-rail1"]}]}, plan
    assert ran.task("The rollout's plan", "srv-r01-01")["msg"] == (
        "%s/reports/plan.json: 2 batches (gpufabric_batch_by=rack, gpufabric_batch_size=[1, 2]) - first 1. rack r01 "
        "(2 servers, 2 leaves), last 2. racks r02-r03 (2 servers, 4 leaves), largest 1. rack r01 (2 servers, 2 "
        "leaves); a pipeline runs one wave per batch" % tmp_path)
    assert all(stats["unreachable"] == 0 for stats in ran.data["stats"].values())
    # a check changes nothing, also where it made its report directory (reports/ did not exist)
    assert {host: stats["changed"] for host, stats in ran.data["stats"].items()} == {"srv-r01-01": 0}, ran.data["stats"]

    hosts["srv-r03-01"]["gpufabric_roce_qos_cnp_dscp"] = 64
    ran = run(tmp_path, hosts, "- import_playbook: gpufabric.mlnx.check_inventory\n", group_vars=group_vars,
              environ=ctl.env, groups={"leaves": leaves})
    assert not ran.ok
    # removing the earlier plan is no change either
    assert {host: stats["changed"] for host, stats in ran.data["stats"].items()} == {"srv-r01-01": 0}, ran.data["stats"]
    assert not (tmp_path / "reports" / "plan.json").exists()
