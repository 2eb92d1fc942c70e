"""Pull mode for real (docs/gitops.md, "ansible-pull"): a site repository (inventory + ansible.cfg + a playbook that
imports gpufabric.mlnx.pull) committed to a local bare repository and tagged, and ``ansible-pull -U file://<bare> -C
<tag> --only-if-changed`` - the very command the systemd unit runs (plugin_utils/_pull.py ``pull_argv``) - run on this
machine for a simulated server (tests/sim, two ConnectX-6 Dx; reached by the twin's connection as
tests/_roleplay.py does). The first pull burns the pinned firmware fetched from an HTTP mirror (python's http.server
on 127.0.0.1) and applies the NV profile, with one firmware reset; a second pull of the same tag runs no playbook (no
tool is called); a new tag is applied. The guard of playbooks/pull.yml refuses BIOS over Redfish and the leaves when
the inventory asks for them, naming host, step and where each runs, before anything changes."""
import hashlib
import json
import os
import shutil
import subprocess

import pytest
import yaml

from _ansible import env, tool
from _mirror import serving
from _paths import REPO
from _roleplay import CONNECTIONS, LOCAL, matrix, run, sim_vars, simulated
from _simhost import SimHost

HOST = "srv-r01-01"
PART = "MCX623106AN-CDAT"
CARDS = ("0000:3b:00.0", "0000:d8:00.0")
PULL = REPO / "playbooks" / "pull.yml"
# plugin_utils/_pull.py, imported from the collection as the filters do
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._pull import pull_argv  # noqa: E402


def git(cwd, *args):
    proc = subprocess.run(["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main",
                           "-c", "advice.detachedHead=false"] + list(args),
                          cwd=str(cwd), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


STEPS = ("platform", "ofed", "firmware", "nic_config", "activate", "rails", "roce_qos")


def steps_off(*on):
    return {"gpufabric_%s_enabled" % step: False for step in STEPS if step not in on}


def publish(site, bare, tag, host_vars):
    """Commit the site repository with ``host_vars`` for HOST, tag it ``tag`` and push to ``bare``."""
    # localhost: ansible-pull checks the repository out with `ansible all -l localhost,<this machine's names>` against
    # this inventory (this machine is not srv-r01-01; a real server's inventory name is its host name)
    inventory = {"all": {"hosts": {"localhost": dict(LOCAL)},
                         "children": {"servers": {"hosts": {HOST: dict(LOCAL, **host_vars)}}}}}
    (site / "inventory" / "site").mkdir(parents=True, exist_ok=True)
    (site / "inventory" / "site" / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (site / "ansible.cfg").write_text("[defaults]\nstdout_callback = default\nretry_files_enabled = false\n"
                                      "interpreter_python = auto_silent\n")
    (site / "pull.yml").write_text("---\n- name: This server's own configuration\n"
                                   "  ansible.builtin.import_playbook: gpufabric.mlnx.pull\n")
    git(site, "add", "-A")
    git(site, "commit", "-q", "-m", "site " + tag)
    git(site, "tag", tag)
    git(site, "push", "-q", "origin", "main", tag)


@pytest.fixture
def site(tmp_path):
    bare, work = tmp_path / "site.git", tmp_path / "site"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    work.mkdir()
    git(work, "init", "-q")
    git(work, "remote", "add", "origin", "file://%s" % bare)
    return work, bare


def pull(tmp_path, bare, ref, directory):
    """ansible-pull as the unit runs it (without flock) -> CompletedProcess."""
    argv = pull_argv({"command": str(tool("ansible-pull")), "flock": "/usr/bin/flock", "lock": str(tmp_path / "lock"),
                      "url": "file://%s" % bare, "ref": ref, "directory": str(directory), "inventory": "inventory/site",
                      "playbook": "pull.yml", "limit": HOST, "on_calendar": "hourly", "randomized_delay": "1"})
    assert argv[:4] == ["/usr/bin/flock", "-n", str(tmp_path / "lock"), str(tool("ansible-pull"))]
    environ = env(tmp_path, ANSIBLE_CONNECTION_PLUGINS=CONNECTIONS)
    environ.pop("ANSIBLE_CONFIG")                      # the site repository's ansible.cfg, as on a server
    return subprocess.run(argv[3:], env=environ, cwd=str(tmp_path), capture_output=True, text=True, timeout=600,
                          check=False)


def next_boot(sim, name="NUM_OF_VFS"):
    return {card["functions"][0]["pci"]: dict(card["nv"], **card["functions"][0].get("nv", {}))[name]["next"]
            for card in json.loads(sim.mlxsim("show"))["cards"]}


def running_firmware(sim):
    return {card["functions"][0]["pci"]: card["fw"]["running"] for card in sim.cards()}


@pytest.mark.heavy(55)
def test_a_tag_is_applied_once_and_the_next_tag_is_applied(tmp_path, site):
    work, bare = site
    sim = simulated(tmp_path, HOST, "cx6dx-roce")
    (image,) = sim.newer_images()
    (tmp_path / "mirror").mkdir()
    shutil.move(image["path"], tmp_path / "mirror" / os.path.basename(image["path"]))
    pins = {image["psid"]: {"version": image["version"], "image": os.path.basename(image["path"]),
                            "sha256": image["sha256"], "part_numbers": [PART]}}
    directory = tmp_path / "checkout"

    def inventory(vfs, mirror):
        return sim_vars(sim, **dict(steps_off("firmware", "nic_config", "activate"),
                                    gpufabric_matrix=matrix("pull", pins), gpufabric_firmware_mirror=mirror,
                                    gpufabric_firmware_dir=str(tmp_path / "host-firmware"),
                                    gpufabric_nic_config_profiles={"sriov": {"SRIOV_EN": True, "NUM_OF_VFS": vfs}},
                                    gpufabric_nic_config_assignments=[{"profile": "sriov", "part_numbers": [PART]}]))

    with serving(tmp_path / "mirror") as mirror:
        publish(work, bare, "v1", inventory(8, mirror.url))
        first = pull(tmp_path, bare, "v1", directory)
        assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
        assert mirror.asked == ["/" + os.path.basename(image["path"])]
    assert running_firmware(sim) == {card: image["version"] for card in CARDS}     # burned, then reset
    assert next_boot(sim) == {card: 8 for card in CARDS}
    assert hashlib.sha256((tmp_path / "host-firmware" / os.path.basename(image["path"])).read_bytes()).hexdigest() \
        == image["sha256"]
    assert "skipped in pull mode: it runs centrally" in first.stdout            # the guard's sentences

    sim.clear_calls()
    again = pull(tmp_path, bare, "v1", directory)
    assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-2000:]
    assert "Repository has not changed, quitting" in again.stdout, again.stdout[-3000:]
    assert sim.calls() == []                                                   # no playbook, no tool

    publish(work, bare, "v2", inventory(16, "http://127.0.0.1:9/unused"))        # the firmware runs: not fetched
    second = pull(tmp_path, bare, "v2", directory)
    assert second.returncode == 0, second.stdout[-4000:] + second.stderr[-2000:]
    assert next_boot(sim) == {card: 16 for card in CARDS}
    assert [argv for argv in sim.argvs() if argv[-1] == "burn"] == []


def test_bios_and_leaf_asked_for_in_pull_mode_are_refused_before_anything_changes(tmp_path):
    sim = simulated(tmp_path, HOST, "cx6dx-roce")
    host = sim_vars(sim, **dict(steps_off("nic_config"), gpufabric_platform_enabled=True,
                                gpufabric_platform_bios_enabled=True, gpufabric_leaf_enabled=True,
                                gpufabric_nic_config_profiles={"sriov": {"SRIOV_EN": True, "NUM_OF_VFS": 8}},
                                gpufabric_nic_config_assignments=[{"profile": "sriov", "part_numbers": [PART]}]))
    ran = run(tmp_path, {HOST: host}, PULL)
    assert not ran.ok
    msg = ran.failures()[HOST]
    assert ("srv-r01-01: gpufabric_leaf_enabled is true, but the leaf switches (switch OS, configuration) (step leaf) "
            "does not run in pull mode: it runs centrally - playbooks/site.yml on the controller, switch-first") in msg
    assert ("srv-r01-01: gpufabric_platform_bios_enabled is true, but BIOS over Redfish (step bios) does not run in "
            "pull mode: it runs centrally - playbooks/site.yml on the controller: it needs the BMC credentials") in msg
    assert msg.endswith("Nothing was changed (docs/gitops.md, ansible-pull).")
    assert sim.calls() == []                                                   # no card was even read
    assert [p["play"]["name"] for p in ran.data["plays"]] == [
        "Pull mode - refuse what needs the controller or the whole cluster, before anything changes"]

    # the same server without the explicit switches: skipped with their sentences, the NV profile applied
    for name in ("gpufabric_platform_bios_enabled", "gpufabric_leaf_enabled"):
        host.pop(name)
    # a BMC address turns BIOS on by default: in pull mode the platform role runs without it (else, without BMC
    # credentials, its first BIOS task would fail the host)
    host["gpufabric_platform_bmc_address"] = "bmc.example"
    host["gpufabric_platform_host_enabled"] = False
    ran = run(tmp_path, {HOST: host}, PULL)
    assert ran.ok, ran
    skipped = " | ".join(ran.task("The steps that run centrally, not here", HOST, role="pull")["msg"])
    assert ("srv-r01-01: BIOS over Redfish (step bios) skipped in pull mode although gpufabric_platform_bmc_address is "
            "set: it runs centrally") in skipped, skipped
    assert "srv-r01-01: the validation gate (step validate) skipped in pull mode: it runs centrally" in skipped
    assert next_boot(sim) == {card: 8 for card in CARDS}
    assert ran.task("BIOS attributes through the BMC (Redfish, from the controller)", HOST, role="platform").get("skipped"), ran


def test_firmware_from_a_controller_is_refused_in_pull_mode(tmp_path):
    sim = simulated(tmp_path, HOST, "cx6dx-roce")
    ran = run(tmp_path, {HOST: sim_vars(sim, **steps_off("firmware"))}, PULL)
    assert not ran.ok
    msg = ran.failures()[HOST]
    assert "the firmware step would take its images from a controller (gpufabric_firmware_copy true, " \
           "gpufabric_firmware_mirror empty)" in msg, msg
    assert sim.calls() == []


def test_a_reboot_is_not_done_in_pull_mode(tmp_path):
    """A change only a reboot activates (dgx-h100-noreset: its cards cannot be reset) leaves the server pending
    activation in pull mode, named - even with gpufabric_activate_allow_reboot - and it is not rebooted."""
    sim = SimHost(tmp_path / HOST, "dgx-h100-noreset", hostname=HOST)
    boot = sim.mlxsim("boot-id")
    host = sim_vars(sim, **dict(steps_off("nic_config", "activate"), gpufabric_activate_allow_reboot=True,
                                gpufabric_nic_config_profiles={"vfs": {"SRIOV_EN": True, "NUM_OF_VFS": 4}},
                                gpufabric_nic_config_assignments=[{"profile": "vfs", "device_types": ["ConnectX7"]}]))
    ran = run(tmp_path, {HOST: host}, PULL)
    assert not ran.ok
    msg = ran.failures()[HOST]
    assert msg.startswith("srv-r01-01 is pending activation: a reboot is needed") and \
        "ansible-pull cannot reboot the host it runs on (pull mode)" in msg, msg
    assert sim.mlxsim("boot-id") == boot
