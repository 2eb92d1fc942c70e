"""pytest-testinfra checks of the platform lab after verify.yml: the files the role keeps and the
simulated kernel state, read as a person would (the simulator's sysfs/procfs under /var/lib/mlxsim/root)."""
ROOT = "/var/lib/mlxsim/root"


def test_booted_with_pcie_aspm_off(host):
    assert "pcie_aspm=off" in host.file(ROOT + "/proc/cmdline").content_string.split()
    dropin = host.file("/etc/default/grub.d/90-gpufabric.cfg").content_string
    assert 'GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX} pcie_aspm=off"' in dropin
    linux = [ln.split() for ln in host.file("/boot/grub/grub.cfg").content_string.splitlines()
             if ln.strip().startswith("linux")]
    assert linux and all("pcie_aspm=off" in words for words in linux)


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


def test_aspm_policy_performance(host):
    policy = host.file(ROOT + "/sys/module/pcie_aspm/parameters/policy").content_string
    assert "[performance]" in policy or "pcie_aspm=off" in host.file(ROOT + "/proc/cmdline").content_string


def test_management_interface_untouched(host):
    assert any(a.startswith("198.19.70.") for a in host.interface("eth0").addresses)
