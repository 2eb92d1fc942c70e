"""The twin's connection (tests/twin/plugins/connection/twin.py): a module runs in a fork of the task's worker with
its machine's environment, the simulated tools it runs run in that process, and its result is Ansible's own."""
import json
import subprocess
import sys

import yaml

from _ansible import env, tool
from _paths import REPO
from _roleplay import Run, simulated

PLUGINS = REPO / "tests" / "twin" / "plugins" / "connection"
SIM_BIN = REPO / "tests" / "sim" / "bin"


def twin_host(sim):
    return {"ansible_connection": "twin", "ansible_pipelining": True, "ansible_python_interpreter": sys.executable,
            "gpufabric_twin_env": sim.env, "gpufabric_twin_sim": str(SIM_BIN)}


def playbook(tmp_path, hosts, tasks):
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{"hosts": "all", "gather_facts": False, "tasks": tasks}]))
    proc = subprocess.run([str(tool("ansible-playbook")), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
                          env=env(tmp_path, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
                                  ANSIBLE_CONNECTION_PLUGINS=str(PLUGINS)),
                          capture_output=True, text=True, check=False, timeout=300)
    return Run(proc)


def test_each_machine_runs_its_modules_with_its_own_state_and_its_tools_in_the_modules_process(tmp_path):
    a, b = simulated(tmp_path, "srv-a", "cx6dx-roce"), simulated(tmp_path, "srv-b", "mixed")
    ran = playbook(tmp_path, {"srv-a": twin_host(a), "srv-b": twin_host(b)},
                   [{"name": "info", "gpufabric.mlnx.mlx_info": {}, "register": "info"}])
    assert ran.ok, ran
    for host, sim in (("srv-a", a), ("srv-b", b)):
        devices = ran.task("info", host)["devices"]
        assert sorted({d["psid"] for d in devices}) == sorted({c["psid"] for c in sim.cards()})
        calls = [json.loads(line) for line in sim.log.read_text().splitlines()]
        assert calls and {c["tool"] for c in calls} >= {"flint", "lspci"}
        assert len({c["pid"] for c in calls}) == 1  # one process: the module's, not one per tool


def test_a_module_failure_and_a_plain_command_come_back_as_over_any_connection(tmp_path):
    a = simulated(tmp_path, "srv-a", "cx6dx-roce")
    ran = playbook(tmp_path, {"srv-a": twin_host(a)}, [
        {"name": "boot id", "ansible.builtin.command": {"argv": [str(SIM_BIN / "mlxsim"), "boot-id"]},
         "register": "boot"},
        {"name": "a card that is not there",
         "gpufabric.mlnx.mlxconfig": {"device": "0000:99:00.0", "params": {"SRIOV_EN": True}}}])
    assert ran.task("boot id", "srv-a")["stdout"].strip()
    assert "0000:99:00.0" in ran.failures()["srv-a"]
