"""playbooks/site.yml with gpufabric_drain=slurm and every step off, against a small fake of Slurm's client commands
(sinfo, squeue, scontrol on PATH; the answers of Debian 12's slurm 22.05.8, as tests/unit/plugins/module_utils/
test_slurm.py models them): the wiring of role gpufabric.mlnx.drain - one drain per batch, a server whose job outlasts
the wait held and never touched, the hooks around the batch, the resume of the servers that passed only, check mode.
The real slurmctld is molecule/fabric's (verify_fabric.py, part drain)."""
import json

from _fakeslurm import calls, fake_slurm
from _paths import REPO
from _roleplay import run

SITE = REPO / "playbooks" / "site.yml"
STEPS = ["preflight", "leaf", "platform", "ofed", "firmware", "nic_config", "activate", "rails", "roce_qos", "validate",
         "report"]
OFF = {"gpufabric_%s_enabled" % step: False for step in STEPS}


def hook(tmp_path, name):
    path = tmp_path / ("%s.yml" % name)
    path.write_text(
        "- name: The site's %s hook\n"
        "  ansible.builtin.copy:\n"
        "    dest: \"%s/%s-{{ inventory_hostname }}\"\n"
        "    content: \"{{ inventory_hostname }}\\n\"\n"
        "    mode: \"0644\"\n"
        "  delegate_to: localhost\n" % (name, tmp_path, name))
    return str(path)


def site(tmp_path, nodes, check=False, **extra):
    environ, state = fake_slurm(tmp_path, nodes)
    values = dict(OFF, gpufabric_batch_size=1, gpufabric_drain="slurm", gpufabric_drain_slurm_host="localhost",
                  gpufabric_drain_timeout=3, gpufabric_drain_poll=1, **extra)
    hosts = {"srv-a": dict(values), "srv-b": dict(values)}
    return run(tmp_path, hosts, SITE, check=check, environ=environ), state


def test_one_drain_per_batch_a_long_job_holds_its_server_the_hooks_and_the_resume(tmp_path):
    nodes = {"srv-a": {"drain": False, "reason": None, "jobs": {"7": 2}},      # ends after two reads
             "srv-b": {"drain": False, "reason": None, "jobs": {"9": -1}}}     # never ends
    ran, state = site(tmp_path, nodes, gpufabric_batch_pre_tasks=hook(tmp_path, "pre"),
                      gpufabric_batch_post_tasks=hook(tmp_path, "post"))
    assert not ran.ok   # srv-b held: the run fails at its end, naming it
    assert "srv-b" in " ".join(str(m) for m in ran.failures().values())
    updates = [c for c in calls(state) if c[0] == "scontrol"]
    assert updates == [
        ["scontrol", "update", "NodeName=srv-a", "State=DRAIN", "Reason=gpufabric: rollout servers 1-1"],
        ["scontrol", "update", "NodeName=srv-a", "State=RESUME"],
        ["scontrol", "update", "NodeName=srv-b", "State=DRAIN", "Reason=gpufabric: rollout servers 2-2"],
        ["scontrol", "update", "NodeName=srv-b", "State=DRAIN",
         "Reason=gpufabric: held: Slurm node srv-b still runs job 9 after gpufabric_drain_timeout=3 s: left "
         "draining, not touched; run the rollout again for it when the job ends"]]
    final = json.loads(state.read_text())
    assert final["srv-a"] == {"drain": False, "reason": None, "jobs": {}}
    assert final["srv-b"]["drain"] is True and final["srv-b"]["jobs"] == {"9": -1}     # never cancelled
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("pre-", "post-"))) == [
        "post-srv-a", "pre-srv-a"]                                                    # not on the held server
    held = ran.task("Held - the workload did not leave the server in time (it stays out of service; nothing on it is "
                    "touched)", "srv-b")["ansible_facts"]["gpufabric_held"]
    assert held[0]["leaf"] is None and "still runs job 9" in held[0]["reason"]


def test_check_mode_drains_and_waits_for_nothing(tmp_path):
    nodes = {"srv-a": {"drain": False, "reason": None, "jobs": {"7": -1}},
             "srv-b": {"drain": True, "reason": "admin: bad dimm", "jobs": {}}}
    ran, state = site(tmp_path, nodes, check=True)
    assert ran.ok, ran
    assert [c for c in calls(state) if c[0] == "scontrol"] == []
    said = ran.task("Slurm - what the drain did", "srv-a")["msg"]
    assert said == "drain (Slurm, servers 1-1): would drain srv-a; still running jobs: srv-a: job 7"
    said = ran.task("Slurm - what the drain did", "srv-b")["msg"]
    assert said == ("drain (Slurm, servers 2-2): no node to drain; left as they are (out of service for another "
                    "reason): srv-b (drained: admin: bad dimm)")
    assert json.loads(state.read_text())["srv-b"]["reason"] == "admin: bad dimm"
