"""The platform role's PCIe link check (part of its host-side task, gpufabric.mlnx.platform_host) on a simulated DGX
H100 (tests/sim, run locally): a link that trained below the card's capability fails the host with one sentence per
such card; with every link at full speed and width the check passes, counting them."""
import pytest

from _roleplay import play, run, sim_vars

HOST = "srv-r01-01"
CHECK = "gpufabric.mlnx.platform : Kernel command line, power policy and PCIe links"


def run_role(tmp_path, sim):
    ran = run(tmp_path, {HOST: sim_vars(
        sim, gpufabric_platform_boot_root=str(tmp_path / "root"), gpufabric_platform_cpu_governor="",
        gpufabric_platform_nic_udev_rule=str(tmp_path / "udev" / "90-gpufabric-nic-power.rules"))}, play("platform"))
    return ran.proc, ran.task(CHECK, HOST)


@pytest.fixture
def sim(sim_host, tmp_path):
    host = sim_host("dgx-h100", hostname=HOST)
    host.env["MLXSIM_UDEV_RULES"] = str(tmp_path / "udev")
    return host


def test_degraded_links_fail_the_host_naming_each_card(sim, tmp_path):
    sim.mlxsim("fault", "add", "pcie_degraded", "--device", "18:00.0")
    proc, check = run_role(tmp_path, sim)
    assert proc.returncode == 2 and check["failed"]
    assert check["msg"] == (
        "srv-r01-01: 1 PCIe link(s) trained below the card's capability - 0000:18:00.0 (slot 1, MCX75310AAS-NEAT): "
        "expected 32GT/s x16, running 16GT/s x8. Reseat the card or move it to a slot of its generation and width "
        "(a 400G card needs PCIe 5.0 x16); check the BIOS slot settings.")
    assert check["device"] == ["0000:18:00.0"]


def test_full_speed_links_pass(sim, tmp_path):
    proc, check = run_role(tmp_path, sim)
    assert proc.returncode == 0 and not check.get("failed"), proc.stdout[-3000:]
    last = check["msg"].split("; ")[-1]
    assert last.startswith("srv-r01-01: ") and last.endswith(" NVIDIA PCIe links at full speed and width"), last
    assert [dev["pcie"]["degraded"] for dev in check["pcie"]] == [False] * len(check["pcie"]) and check["pcie"]
