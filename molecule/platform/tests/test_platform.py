"""pytest-testinfra checks of the platform lab after verify.yml: the files the role keeps and the
simulated kernel state, read as a person would (the simulator's sysfs/procfs under /var/lib/mlxsim/root).

Run by verify.yml with ``--hosts podman://<container>,...``; MOLECULE_ASPM maps each container to the ASPM mode
of its server: ``off`` (boots with pcie_aspm=off) or ``performance`` (boots with pcie_aspm.policy=performance,
and the role keeps the running kernel's policy at performance)."""
import json
import os

import pytest

ROOT = "/var/lib/mlxsim/root"
ASPM = json.loads(os.environ.get("MOLECULE_ASPM", "{}"))
KERNEL_ARG = {"off": "pcie_aspm=off", "performance": "pcie_aspm.policy=performance"}


def aspm(host):
    mode = ASPM[host.backend.hostname]
    assert mode in KERNEL_ARG, mode
    return mode


def test_the_lab_has_a_host_of_each_aspm_mode():
    assert sorted(ASPM.values()) == ["off", "performance"], ASPM


def test_booted_with_the_aspm_kernel_parameter(host):
    arg = KERNEL_ARG[aspm(host)]
    assert arg in host.file(ROOT + "/proc/cmdline").content_string.split()
    dropin = host.file("/etc/default/grub.d/90-gpufabric.cfg").content_string
    assert 'GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX} %s"' % arg in dropin
    linux = [ln.split() for ln in host.file("/boot/grub/grub.cfg").content_string.splitlines()
             if ln.strip().startswith("linux")]
    assert linux and all(arg in words for words in linux)


def test_nvidia_nics_never_runtime_suspended(host):
    found = 0
    for pci in host.check_output("ls %s/sys/bus/pci/devices", ROOT).split():
        base = "%s/sys/bus/pci/devices/%s" % (ROOT, pci)
        if host.file(base + "/vendor").content_string.strip() != "0x15b3":
            continue
        if not host.file(base + "/class").content_string.strip().startswith("0x02"):
            continue
        found += 1
        assert host.file(base + "/power/control").content_string.strip() == "on", pci
    assert found
    rule = host.file("/etc/udev/rules.d/90-gpufabric-nic-power.rules").content_string
    assert 'ATTR{vendor}=="0x15b3", ATTR{class}=="0x02*", ATTR{power/control}="on"' in rule


def test_cpus_on_the_performance_governor(host):
    out = host.check_output("cat %s/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor", ROOT).split()
    assert out and set(out) == {"performance"}
    unit = host.file("/etc/systemd/system/multi-user.target.wants/gpufabric-cpu-governor.service")
    assert unit.is_symlink and unit.linked_to == "/etc/systemd/system/gpufabric-cpu-governor.service"


def test_aspm_off_by_the_command_line(host):
    """pcie_aspm=off: ASPM is off on every link whatever the policy says."""
    cmdline = host.file(ROOT + "/proc/cmdline").content_string.split()
    if aspm(host) == "off":
        assert "pcie_aspm=off" in cmdline, cmdline
    else:
        assert "pcie_aspm=off" not in cmdline, cmdline


def test_aspm_policy_performance_where_aspm_is_on(host):
    """Without pcie_aspm=off the running kernel's policy is performance: the kernel prints the active one in
    brackets (``default [performance] powersave powersupersave``); the simulator keeps a plain written name
    until its next rebuild of the tree."""
    if aspm(host) != "performance":
        pytest.skip("booted with pcie_aspm=off: the policy is not the role's to set")
    text = host.file(ROOT + "/sys/module/pcie_aspm/parameters/policy").content_string
    words = text.split()
    active = [w[1:-1] for w in words if w.startswith("[") and w.endswith("]")] or (words if len(words) == 1 else [])
    assert active == ["performance"], text


def test_management_interface_untouched(host):
    assert any(a.startswith("198.19.70.") for a in host.interface("eth0").addresses)
