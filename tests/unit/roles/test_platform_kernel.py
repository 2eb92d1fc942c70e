"""The platform role's kernel step and the activate role on one simulated host (tests/sim, run locally): a host
whose boot loader would not boot the kernel parameters fails at the platform step and is never rebooted; a
compliant host's rerun changes nothing and activates nothing.

Before issue 17 the role ran update-grub whenever grub.cfg had no kernel line and then asked for a reboot that
could not bring the parameter: every run rebooted the host again."""
import json
import os

import pytest

from _roleplay import play, run, sim_vars

HOST = "srv-r01-01"
PLATFORM = "gpufabric.mlnx.platform : "
# the host side in one task (gpufabric.mlnx.platform_host): kernel command line, power policy, PCIe links
KERNEL_TASK = PLATFORM + "Kernel command line, power policy and PCIe links"


@pytest.fixture
def host(sim_host, tmp_path):
    """A simulated DGX H100 (Debian 12: a kernel in /boot, grub.cfg as update-grub wrote it)."""
    sim = sim_host("dgx-h100", hostname=HOST)
    sim.env["MLXSIM_UDEV_RULES"] = str(tmp_path / "udev")     # the role's NIC power rule runs at the simulated boot
    return sim


def run_play(tmp_path, sim, text, check=False):
    """``text`` on the simulated host as inventory -> (CompletedProcess, Run)."""
    ran = run(tmp_path, {HOST: sim_vars(
        sim, gpufabric_platform_boot_root=str(tmp_path / "root"), gpufabric_platform_pcie_check=False,
        gpufabric_platform_cpu_governor="",
        gpufabric_platform_nic_udev_rule=str(tmp_path / "udev" / "90-gpufabric-nic-power.rules"),
        gpufabric_activate_allow_reboot=True)}, text, check=check)
    return ran.proc, ran


def results(ran, prefix=""):
    """``{task name: result on the host}`` of every task that ran (first run of each name)."""
    return ran.results(HOST, prefix)


def boots(sim):
    return json.loads(sim.mlxsim("activity"))["boots"]


def remove_kernels(sim, tmp_path):
    boot = tmp_path / "root" / "boot"
    for name in os.listdir(boot):
        if name.startswith(("vmlinuz-", "initrd.img-")):
            (boot / name).unlink()
    sim.run("update-grub")                  # grub.cfg as update-grub writes it with no kernel: no entry


def test_no_kernel_entry_fails_the_host_at_the_platform_step_and_nothing_reboots(host, tmp_path):
    remove_kernels(host, tmp_path)
    proc, data = run_play(tmp_path, host, play("platform", "activate"))
    assert proc.returncode == 2, proc.stdout[-3000:]
    ran = results(data)
    kernel = ran[KERNEL_TASK]
    assert kernel["failed"] and kernel["msg"].startswith(
        "srv-r01-01: kernel_cmdline: /boot/grub/grub.cfg has no kernel entry after regenerating it, so a reboot would "
        "not boot pcie_aspm=off; not asking for one."), kernel["msg"]
    assert "Kernel images update-grub lists: none under /boot" in kernel["msg"]
    assert not [name for name in ran if name.startswith("gpufabric.mlnx.activate")]
    assert boots(host) == 0
    # the check run of the same host says the same, before anything is written
    proc, data = run_play(tmp_path, host, play("platform", "activate"), check=True)
    assert proc.returncode == 2 and "has no kernel entry" in results(data)[KERNEL_TASK]["msg"]


@pytest.mark.heavy(35)
def test_a_compliant_host_reruns_without_any_activation(host, tmp_path):
    proc, data = run_play(tmp_path, host, play("platform"))
    assert proc.returncode == 0, proc.stdout[-3000:]
    ran = results(data)
    assert ran[KERNEL_TASK]["changed"] and ran[KERNEL_TASK]["kernel"]["regenerated"]
    assert ran[KERNEL_TASK]["ansible_facts"]["gpufabric_platform_reboot_required"] is True
    host.mlxsim("reboot")                    # the ONE activation, as activate's reboot would do it
    assert "pcie_aspm=off" in (tmp_path / "root" / "proc" / "cmdline").read_text().split()
    for check in (True, False):
        proc, data = run_play(tmp_path, host, play("platform", "activate"), check=check)
        assert proc.returncode == 0, proc.stdout[-3000:]
        ran = results(data)
        assert not ran[KERNEL_TASK]["changed"] and not ran[KERNEL_TASK]["kernel"]["regenerated"]
        assert ran["gpufabric.mlnx.activate : Activate everything pending with ONE firmware reset or ONE reboot "
                   "(reads every card itself)"]["ansible_facts"]["gpufabric_activation"]["method"] == "none"
        assert data.stats(HOST)["changed"] == 0, [n for n, r in ran.items() if r.get("changed")]
    assert boots(host) == 1
