"""The platform role's PCIe link check (tasks/pcie.yml) on a simulated DGX H100 (tests/sim, run locally): a link
that trained below the card's capability fails the host with one sentence per such card, from the pcie_degraded
filter; with every link at full speed and width the check passes, counting them."""
import json
import subprocess
import sys

import yaml

from _ansible import env, tool

PLAY = [{"hosts": "servers", "gather_facts": False, "tasks": [
    {"name": "The PCIe check", "ansible.builtin.include_role": {"name": "gpufabric.mlnx.platform",
                                                                "tasks_from": "pcie.yml"}}]}]
CHECK = "gpufabric.mlnx.platform : Every NVIDIA NIC's PCIe link runs at the speed and width it can"


def run(tmp_path, sim):
    host_vars = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(
        {"all": {"children": {"servers": {"hosts": {"srv-r01-01": host_vars}}}}}))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(PLAY))
    proc = subprocess.run([str(tool("ansible-playbook")), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
                          env=env(tmp_path, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", **sim.env),
                          capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path))
    found = [t["hosts"]["srv-r01-01"] for p in json.loads(proc.stdout)["plays"] for t in p["tasks"]
             if t["task"]["name"] == CHECK]
    assert found, proc.stdout[-3000:]
    return proc, found[0]


def test_degraded_links_fail_the_host_naming_each_card(sim_host, tmp_path):
    sim = sim_host("dgx-h100", hostname="srv-r01-01")
    sim.mlxsim("fault", "add", "pcie_degraded", "--device", "18:00.0")
    proc, check = run(tmp_path, sim)
    assert proc.returncode == 2 and check["failed"]
    assert check["msg"] == (
        "srv-r01-01: 1 PCIe link(s) trained below the card's capability - 0000:18:00.0 (slot 1, MCX75310AAS-NEAT): "
        "expected 32GT/s x16, running 16GT/s x8. Reseat the card or move it to a slot of its generation and width "
        "(a 400G card needs PCIe 5.0 x16); check the BIOS slot settings.")


def test_full_speed_links_pass(sim_host, tmp_path):
    sim = sim_host("dgx-h100", hostname="srv-r01-01")
    proc, check = run(tmp_path, sim)
    assert proc.returncode == 0 and not check.get("failed"), proc.stdout[-3000:]
    assert check["msg"].startswith("srv-r01-01: ") and check["msg"].endswith(" NVIDIA PCIe links at full speed and width")
