"""The host around the NICs in the simulator: PCI device directories, CPUs/cpufreq, the ASPM policy,
/proc/cmdline and the boot loader tools (update-grub, grub-mkconfig, grubby), for the platform role.

There is no real capture of these in tests/fixtures/real (INDEX.md lists none), so the expected
texts come from the sources: the kernel (drivers/pci/probe.c pci_speed_string, drivers/pci/pcie/aspm.c
pcie_aspm_get_policy, drivers/cpufreq/cpufreq.c show_scaling_available_governors), Debian's grub2
2.06-13+deb12u2 (/usr/sbin/grub-mkconfig, update-grub, /etc/grub.d/10_linux,
/usr/share/grub/default/grub) and RHEL's grubby-bls (grubby 8.40, the script the grubby package
installs as /usr/sbin/grubby; its display_info_values gives the --info layout, which public outputs
from RHEL 8/9 and Fedora hosts show the same way, e.g. the --info=ALL test data of the
linux-system-roles bootloader role's unit tests).
"""
import os
import re

import pytest

DEB_KERNEL = "6.1.0-26-amd64"
RHEL_KERNEL = "5.14.0-427.13.1.el9_4.x86_64"
IB = "ibp24s0"                 # dgx-h100 0000:18:00.0, mlx5_0
ETH = "enp41s0f0np0"           # dgx-h100 0000:29:00.0, mlx5_1 (Ethernet)


def root(sim):
    return sim.dir / "root"


def read(path):
    return path.read_text()


def pci(sim, addr):
    return root(sim) / "sys/devices/pci0000:00" / addr


def uuid(sim):
    return sim.state_data()["platform"]["root_uuid"]


def cmdline(sim):
    return read(root(sim) / "proc/cmdline")


def grub_d(sim, name, text):
    d = root(sim) / "etc/default/grub.d"
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(text)


def lspci_link(sim, addr):
    """(LnkCap speed, width, LnkSta speed, width) of one function in the simulated lspci -vv."""
    out = sim.out("lspci", "-vv", "-s", addr)
    cap = re.search(r"LnkCap:\tPort #0, Speed (\S+), Width x(\d+)", out)
    sta = re.search(r"LnkSta:\tSpeed ([^\s,]+)(?: \(\w+\))?, Width x(\d+)", out)
    return cap.group(1), int(cap.group(2)), sta.group(1), int(sta.group(2))


def sysfs_speed(lspci_speed):
    return "%.1f GT/s PCIe\n" % float(lspci_speed.replace("GT/s", ""))


# ---------------------------------------------------------------------------- PCI functions


def test_every_function_has_a_pci_device_directory(sim):
    sim.init("dgx-h100", cli=True)
    r = root(sim)
    from mlxsim import sysfs
    ports = sysfs.ports(sim.state_data())
    assert len(ports) == 12
    for p in ports:
        d = pci(sim, p["pci"])
        assert read(d / "vendor") == "0x15b3\n" and read(d / "device") == "0x1021\n"       # ConnectX-7
        assert read(d / "class") == ("0x020000\n" if p["eth"] else "0x020700\n")
        cap_speed, cap_width, sta_speed, sta_width = lspci_link(sim, p["pci"])
        assert read(d / "max_link_speed") == sysfs_speed(cap_speed) == "32.0 GT/s PCIe\n"
        assert read(d / "max_link_width") == "%d\n" % cap_width == "16\n"
        assert read(d / "current_link_speed") == sysfs_speed(sta_speed)
        assert read(d / "current_link_width") == "%d\n" % sta_width
        assert read(d / "power/control") == "auto\n"
        # the links a module follows: /sys/bus/pci/devices/ADDR and /sys/class/net/IF/device
        assert os.path.realpath(r / "sys/bus/pci/devices" / p["pci"]) == str(d)
        dev = r / "sys/class/net" / p["netdev"] / "device"
        assert os.path.islink(dev) and os.path.basename(os.path.realpath(dev)) == p["pci"]
        assert os.path.basename(os.path.realpath(dev / "driver")) == "mlx5_core"
        assert os.listdir(dev / "infiniband") == [p["rdma"]]
        assert os.listdir(d / "net") == [p["netdev"]]
        assert os.path.realpath(r / "sys/class/infiniband" / p["rdma"] / "device") == str(d)
        assert os.path.realpath(r / "sys/bus/pci/drivers/mlx5_core" / p["pci"]) == str(d)
    numa = {c["functions"][0]["pci"]: c["numa"] for c in sim.state_data()["cards"]}
    assert read(pci(sim, "0000:18:00.0") / "numa_node") == "%d\n" % numa["0000:18:00.0"] == "0\n"
    assert read(pci(sim, "0000:dc:00.0") / "numa_node") == "1\n"


def test_other_families_and_the_bluefield_dma_function(sim):
    sim.init("mixed", cli=True)
    assert read(pci(sim, "0000:17:00.0") / "device") == "0x101b\n"                        # ConnectX-6
    assert read(pci(sim, "0000:17:00.0") / "max_link_speed") == "16.0 GT/s PCIe\n"
    assert read(pci(sim, "0000:ca:00.0") / "device") == "0xa2dc\n"                        # BlueField-3
    assert read(pci(sim, "0000:ca:00.0") / "revision") == "0x01\n"
    dma = pci(sim, "0000:ca:00.2")                                                        # lspci lists it too
    assert read(dma / "class") == "0x080100\n" and read(dma / "device") == "0xc2d5\n"
    assert not os.path.lexists(dma / "driver") and not os.path.exists(dma / "net")
    assert "ca:00.2 DMA controller" in sim.out("lspci", "-d", "15b3:")


def test_the_class_follows_the_link_type_after_the_reset(sim):
    sim.init("dgx-h100", cli=True)
    assert read(pci(sim, "0000:18:00.0") / "class") == "0x020700\n"
    sim.run("mlxconfig", "-d", "18:00.0", "-y", "set", "LINK_TYPE_P1=2", check_rc=0)
    sim.run("mlxfwreset", "-d", "18:00.0", "-y", "--level", "3", "reset", check_rc=0)
    assert read(pci(sim, "0000:18:00.0") / "class") == "0x020000\n"
    assert os.listdir(pci(sim, "0000:18:00.0") / "net") == ["enp24s0np0"]
    assert os.path.basename(os.path.realpath(root(sim) / "sys/class/net/enp24s0np0/device")) == "0000:18:00.0"


def test_a_degraded_link_shows_in_current_link(sim):
    sim.init("dgx-h100", cli=True)
    sim.run("mlxsim", "fault", "add", "pcie_degraded", "--device", "18:00.0", "speed=16GT/s", "width=8", check_rc=0)
    d = pci(sim, "0000:18:00.0")
    assert lspci_link(sim, "18:00.0") == ("32GT/s", 16, "16GT/s", 8)
    assert (read(d / "current_link_speed"), read(d / "current_link_width")) == ("16.0 GT/s PCIe\n", "8\n")
    assert (read(d / "max_link_speed"), read(d / "max_link_width")) == ("32.0 GT/s PCIe\n", "16\n")
    assert read(pci(sim, "0000:40:00.0") / "current_link_width") == "16\n"               # other cards untouched
    sim.run("mlxsim", "reboot", check_rc=0)                                               # a fault survives a boot
    assert read(d / "current_link_width") == "8\n"
    sim.run("mlxsim", "fault", "clear", "pcie_degraded", check_rc=0)
    assert (read(d / "current_link_speed"), read(d / "current_link_width")) == ("32.0 GT/s PCIe\n", "16\n")


def test_runtime_pm_control_survives_a_driver_reload_but_not_a_power_cycle(sim):
    sim.init("dgx-h100", cli=True)
    for addr in ("0000:18:00.0", "0000:40:00.0", "0000:29:00.1"):
        (pci(sim, addr) / "power/control").write_text("on\n")
    via_netdev = root(sim) / "sys/class/net" / IB / "device/power/control"
    assert read(via_netdev) == "on\n"                                                     # the same file
    sim.run("mlxsim", "driver-reload", check_rc=0)                                        # openibd restart
    assert [read(pci(sim, a) / "power/control") for a in ("0000:18:00.0", "0000:40:00.0", "0000:29:00.1")] == ["on\n"] * 3
    # a level-3 reset removes the card's functions and enumerates them again
    sim.run("mlxfwreset", "-d", "18:00.0", "-y", "--level", "3", "reset", check_rc=0)
    assert read(pci(sim, "0000:18:00.0") / "power/control") == "auto\n"
    assert read(pci(sim, "0000:40:00.0") / "power/control") == "on\n"
    sim.run("mlxsim", "reboot", check_rc=0)
    assert [read(pci(sim, a) / "power/control") for a in ("0000:40:00.0", "0000:29:00.1")] == ["auto\n"] * 2


def test_a_tree_from_before_the_pci_devices_is_converted(sim):
    import shutil
    sim.init("cx6dx-roce", cli=True)
    dev = root(sim) / "sys/class/net/enp59s0f0np0/device"
    os.unlink(dev)
    (dev / "power").mkdir(parents=True)
    (dev / "power/control").write_text("auto\n")
    sim.run("mlxsim", "driver-reload", check_rc=0)
    assert os.path.islink(dev) and os.path.basename(os.path.realpath(dev)) == "0000:3b:00.0"
    shutil.rmtree(pci(sim, "0000:3b:00.1"))
    sim.out("mlnx_qos", "-i", "enp59s0f0np0")                                            # a tool completes the tree
    assert read(pci(sim, "0000:3b:00.1") / "power/control") == "auto\n"


def test_a_tool_walks_the_tree_only_when_it_may_lack_something(sim, monkeypatch):
    """Every QoS tool run ensures the tree; the walk (600 files of a DGX H100's cpufreq) is done only when the
    state, /proc/cmdline or a top directory differs from the last complete build."""
    from mlxsim import state as st
    from mlxsim import sysfs
    sim.init("dgx-h100", cli=True)
    monkeypatch.setenv("MLXSIM_STATE", sim.state)
    walks = []
    real_build = sysfs._build
    monkeypatch.setattr(sysfs, "_build", lambda *a, **kw: walks.append(1) or real_build(*a, **kw))
    state = st.load(sim.state)
    sysfs.ensure(state)
    sysfs.ensure(state)
    assert walks == []                                                 # init built it; nothing changed since
    net = root(sim) / "sys/class/net" / IB
    import shutil
    shutil.rmtree(net)
    sysfs.ensure(state)
    assert len(walks) == 1 and os.path.islink(net / "device")         # a netdev directory was gone
    sysfs.ensure(state)
    assert len(walks) == 1
    (root(sim) / "proc/cmdline").write_text(cmdline(sim).strip() + " pcie_aspm.policy=performance\n")
    sysfs.ensure(state)
    assert len(walks) == 2                                             # another command line
    state["platform"]["cpus"] = 8
    sysfs.ensure(state)
    assert len(walks) == 3                                             # another state
    assert read(root(sim) / "sys/devices/system/cpu/online") == "0-7\n"


def test_a_written_read_only_attribute_is_put_back_by_the_next_change(sim):
    """What a walk does not see between two changes: a write to an attribute the kernel decides stays until the
    state changes (here a fault), then the next tool run rewrites it."""
    sim.init("dgx-h100", cli=True)
    drv = root(sim) / "sys/devices/system/cpu/cpu5/cpufreq/scaling_driver"
    drv.write_text("acpi-cpufreq\n")
    sim.out("mlnx_qos", "-i", ETH)
    assert read(drv) == "acpi-cpufreq\n"
    sim.run("mlxsim", "fault", "add", "pcie_degraded", "--device", "18:00.0", "speed=16GT/s", "width=8", check_rc=0)
    sim.out("mlnx_qos", "-i", ETH)
    assert read(drv) == "intel_pstate\n"


# ---------------------------------------------------------------------------- CPUs, ASPM policy


def test_cpufreq_tree_of_a_dgx_h100(sim):
    sim.init("dgx-h100", cli=True)
    cpu = root(sim) / "sys/devices/system/cpu"
    assert read(cpu / "online") == read(cpu / "possible") == read(cpu / "present") == "0-223\n"
    assert sorted(n for n in os.listdir(cpu) if re.match(r"cpu\d+$", n)) == sorted("cpu%d" % i for i in range(224))
    for k in (0, 223):
        f = cpu / ("cpu%d" % k) / "cpufreq"
        assert os.readlink(f) == "../cpufreq/policy%d" % k
        assert read(f / "scaling_driver") == "intel_pstate\n"
        assert read(f / "scaling_available_governors") == "performance powersave\n"
        assert read(f / "scaling_governor") == "powersave\n"


def test_governors_survive_a_driver_reload_and_are_reset_by_a_reboot(sim):
    sim.init("cx6dx-roce", cli=True)
    govs = sorted((root(sim) / "sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor"))
    assert len(govs) == 8
    for g in govs:
        g.write_text("performance\n")
    sim.run("mlxsim", "driver-reload", check_rc=0)
    assert {read(g) for g in govs} == {"performance\n"}
    sim.run("mlxsim", "reboot", check_rc=0)
    assert {read(g) for g in govs} == {"powersave\n"}


def test_acpi_cpufreq_and_the_cpu_count_from_init(sim):
    sim.init("cx6dx-roce", "node01", "--cpus", "4", "--cpufreq-driver", "acpi-cpufreq")
    cpu = root(sim) / "sys/devices/system/cpu"
    assert read(cpu / "online") == "0-3\n" and not (cpu / "cpu4").exists()
    assert read(cpu / "cpu3/cpufreq/scaling_driver") == "acpi-cpufreq\n"
    # a driver with ->target lists every registered governor, each followed by a blank
    assert read(cpu / "cpu3/cpufreq/scaling_available_governors") == \
        "conservative ondemand userspace powersave performance schedutil \n"
    assert read(cpu / "cpu3/cpufreq/scaling_governor") == "schedutil\n"
    sim.init("mixed", cli=True)                                                          # the profile's
    assert read(cpu / "online") == "0-15\n" and not (cpu / "cpu16").exists() and (cpu / "cpu15").is_dir()


def test_aspm_policy_from_the_command_line_and_after_a_write(sim):
    sim.init("cx6dx-roce", cli=True)
    policy = root(sim) / "sys/module/pcie_aspm/parameters/policy"
    assert read(policy) == "[default] performance powersave powersupersave \n"
    policy.write_text("performance")                      # what `echo performance > policy` leaves in a plain file
    sim.out("mlnx_qos", "-i", "enp59s0f0np0")             # the next tool run shows it as the kernel does
    assert read(policy) == "default [performance] powersave powersupersave \n"
    policy.write_text("powersupersave\n")
    sim.run("mlxsim", "driver-reload", check_rc=0)
    assert read(policy) == "default performance powersave [powersupersave] \n"
    sim.run("mlxsim", "reboot", check_rc=0)
    assert read(policy) == "[default] performance powersave powersupersave \n"
    grub_d(sim, "90-aspm.cfg", 'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX pcie_aspm.policy=powersave"\n')
    sim.run("update-grub", check_rc=0)
    sim.run("mlxsim", "reboot", check_rc=0)
    assert read(policy) == "default performance [powersave] powersupersave \n"


# ---------------------------------------------------------------------------- update-grub, /proc/cmdline


def test_init_writes_a_debian_host(sim):
    sim.init("cx6dx-roce", cli=True)
    r = root(sim)
    assert cmdline(sim) == "BOOT_IMAGE=/boot/vmlinuz-%s root=UUID=%s ro quiet\n" % (DEB_KERNEL, uuid(sim))
    assert 'GRUB_CMDLINE_LINUX_DEFAULT="quiet"\nGRUB_CMDLINE_LINUX=""\n' in read(r / "etc/default/grub")
    assert sorted(os.listdir(r / "boot")) == ["config-" + DEB_KERNEL, "grub", "initrd.img-" + DEB_KERNEL,
                                              "vmlinuz-" + DEB_KERNEL]
    assert "\tlinux\t/boot/vmlinuz-%s root=UUID=%s ro  quiet\n" % (DEB_KERNEL, uuid(sim)) in read(r / "boot/grub/grub.cfg")
    other = sim.state_data()["platform"]["root_uuid"]
    sim.init("cx6dx-roce", "node02", cli=True)
    assert uuid(sim) != other                                                            # per host


def test_update_grub_reads_a_drop_in_and_the_reboot_applies_it(sim):
    sim.init("cx6dx-roce", cli=True)
    before = cmdline(sim)
    grub_d(sim, "90-gpufabric.cfg", 'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT pcie_aspm=off"\n'
                                    'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX intel_iommu=on iommu=pt"\n')
    p = sim.run("update-grub")
    assert (p.returncode, p.stdout) == (0, "")
    assert p.stderr.splitlines() == ["Generating grub configuration file ...",
                                     "Found linux image: /boot/vmlinuz-" + DEB_KERNEL,
                                     "Found initrd image: /boot/initrd.img-" + DEB_KERNEL,
                                     "done"]
    cfg = read(root(sim) / "boot/grub/grub.cfg")
    linux = [ln for ln in cfg.splitlines() if ln.strip().startswith("linux\t")]
    u = uuid(sim)
    # 10_linux: "root=... ro ${GRUB_CMDLINE_LINUX} ${GRUB_CMDLINE_LINUX_DEFAULT}", recovery without DEFAULT
    assert linux == ["\tlinux\t/boot/vmlinuz-%s root=UUID=%s ro  intel_iommu=on iommu=pt quiet pcie_aspm=off" % (DEB_KERNEL, u),
                     "\t\tlinux\t/boot/vmlinuz-%s root=UUID=%s ro  intel_iommu=on iommu=pt quiet pcie_aspm=off" % (DEB_KERNEL, u),
                     "\t\tlinux\t/boot/vmlinuz-%s root=UUID=%s ro single  intel_iommu=on iommu=pt" % (DEB_KERNEL, u)]
    assert cfg.startswith("#\n# DO NOT EDIT THIS FILE\n") and "set default=\"0\"\n" in cfg
    assert cmdline(sim) == before                                                        # not before the boot
    sim.run("mlxsim", "reboot", check_rc=0)
    assert cmdline(sim) == ("BOOT_IMAGE=/boot/vmlinuz-%s root=UUID=%s ro intel_iommu=on iommu=pt quiet pcie_aspm=off\n"
                            % (DEB_KERNEL, u))
    assert [c["tool"] for c in sim.calls()] == ["update-grub"]


def test_forgetting_update_grub_leaves_the_command_line(sim):
    sim.init("cx6dx-roce", cli=True)
    before = cmdline(sim)
    grub_d(sim, "90-gpufabric.cfg", 'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT pcie_aspm=off"\n')
    sim.run("mlxsim", "reboot", check_rc=0)
    assert cmdline(sim) == before and "pcie_aspm=off" not in before
    sim.run("mlxfwreset", "-d", "3b:00.0", "-y", "--level", "3", "reset", check_rc=0)   # no boot: no change
    sim.run("update-grub", check_rc=0)
    sim.run("mlxfwreset", "-d", "3b:00.0", "-y", "--level", "3", "reset", check_rc=0)
    assert "pcie_aspm=off" not in cmdline(sim)
    sim.run("mlxfwreset", "-d", "3b:00.0", "-y", "--level", "4", "reset", check_rc=0)   # level 4 reboots
    assert cmdline(sim).split()[-1] == "pcie_aspm=off"


def test_a_broken_drop_in_fails_like_grub_mkconfig(sim):
    sim.init("cx6dx-roce", cli=True)
    cfg = root(sim) / "boot/grub/grub.cfg"
    before = read(cfg)
    grub_d(sim, "50-broken.cfg", 'GRUB_CMDLINE_LINUX="pcie_aspm=off\n')
    p = sim.run("update-grub")
    # dash: "$0: LINE: FILE: message", exit 2; nothing was generated yet
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == "/usr/sbin/grub-mkconfig: 2: /etc/default/grub.d/50-broken.cfg: Syntax error: Unterminated quoted string\n"
    assert read(cfg) == before
    grub_d(sim, "50-broken.cfg", "false\n")                                              # set -e
    p = sim.run("update-grub")
    assert (p.returncode, p.stderr) == (1, "")
    grub_d(sim, "50-broken.cfg", "no-such-command\n")
    p = sim.run("update-grub")
    assert p.returncode == 127 and p.stderr.endswith("/etc/default/grub.d/50-broken.cfg: no-such-command: not found\n")
    assert str(sim.dir) not in p.stderr


def test_grub_mkconfig_command_line(sim):
    sim.init("cx6dx-roce", cli=True)
    usage = sim.out("grub-mkconfig", "--help")
    assert usage.splitlines()[:4] == ["Usage: grub-mkconfig [OPTION]", "Generate a grub config file", "",
                                      "  -o, --output=FILE       output generated config to FILE [default=stdout]"]
    assert sim.out("grub-mkconfig", "-V") == "grub-mkconfig (GRUB) 2.06-13+deb12u2\n"
    p = sim.run("grub-mkconfig", "-x")
    assert (p.returncode, p.stderr, p.stdout) == (1, "Unrecognized option `-x'\n", usage)
    p = sim.run("grub-mkconfig", "-o")
    assert (p.returncode, p.stderr) == (1, "grub-mkconfig: option requires an argument -- `-o'\n")
    p = sim.run("grub-mkconfig")                                                         # to stdout
    assert p.returncode == 0 and p.stdout == read(root(sim) / "boot/grub/grub.cfg")
    assert sim.run("update-grub2").returncode == 0
    import shutil
    shutil.rmtree(root(sim) / "boot/grub")
    p = sim.run("update-grub")
    assert (p.returncode, p.stderr) == (2, "/usr/sbin/grub-mkconfig: 270: cannot create /boot/grub/grub.cfg.new: "
                                           "Directory nonexistent\n")


def test_several_kernels_newest_first_and_grub_default(sim):
    sim.init("cx6dx-roce", cli=True)
    boot = root(sim) / "boot"
    for k in ("6.1.0-9-amd64", "6.1.0-28-amd64"):
        (boot / ("vmlinuz-" + k)).write_text("")
    (boot / "initrd.img-6.1.0-28-amd64").write_text("")
    (boot / "vmlinuz-6.1.0-28-amd64.dpkg-tmp").write_text("")                            # garbage: skipped
    p = sim.run("update-grub", check_rc=0)
    assert [ln for ln in p.stderr.splitlines() if ln.startswith("Found linux")] == [
        "Found linux image: /boot/vmlinuz-6.1.0-28-amd64", "Found linux image: /boot/vmlinuz-6.1.0-26-amd64",
        "Found linux image: /boot/vmlinuz-6.1.0-9-amd64"]
    cfg = read(boot / "grub/grub.cfg")
    assert "\t\tlinux\t/boot/vmlinuz-6.1.0-9-amd64 root=/dev/nvme0n1p2 ro  quiet" in cfg   # no initrd: no UUID=
    sim.run("mlxsim", "reboot", check_rc=0)
    assert cmdline(sim).startswith("BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 root=UUID=")
    (root(sim) / "etc/default/grub").write_text(read(root(sim) / "etc/default/grub").replace(
        "GRUB_DEFAULT=0", "GRUB_DEFAULT='1>1'"))                                           # 6.1.0-28 recovery mode
    sim.run("update-grub", check_rc=0)
    sim.run("mlxsim", "reboot", check_rc=0)
    assert cmdline(sim) == "BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 root=UUID=%s ro single\n" % uuid(sim)


# ---------------------------------------------------------------------------- grubby (BLS)


def rhel(sim):
    return sim.init("cx6dx-roce", "node01", "--bootloader", "bls")


def test_grubby_info_has_the_real_layout(sim):
    rhel(sim)
    mid = sim.state_data()["platform"]["machine_id"]
    out = sim.out("grubby", "--info=ALL").splitlines()
    assert [ln.split("=", 1)[0] for ln in out] == ["index", "kernel", "args", "root", "initrd", "title", "id"] * 2
    assert out[:7] == [
        "index=0", 'kernel="/boot/vmlinuz-%s"' % RHEL_KERNEL,
        'args="ro crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rhel-swap rd.lvm.lv=rhel/root '
        'rd.lvm.lv=rhel/swap rhgb quiet $tuned_params"',
        'root="/dev/mapper/rhel-root"', 'initrd="/boot/initramfs-%s.img $tuned_initrd"' % RHEL_KERNEL,
        'title="Red Hat Enterprise Linux (%s) 9.4 (Plow)"' % RHEL_KERNEL, 'id="%s-%s"' % (mid, RHEL_KERNEL)]
    assert out[7:9] == ["index=1", 'kernel="/boot/vmlinuz-0-rescue-%s"' % mid]                  # rescue sorts last
    assert sim.out("grubby", "--info=DEFAULT").splitlines() == out[:7]
    assert sim.out("grubby", "--info", "/boot/vmlinuz-" + RHEL_KERNEL).splitlines() == out[:7]
    assert sim.out("grubby", "--info=1").splitlines() == out[7:]
    assert sim.out("grubby", "--default-kernel") == "/boot/vmlinuz-%s\n" % RHEL_KERNEL
    assert sim.out("grubby", "--default-index") == "0\n"
    assert cmdline(sim) == ("BOOT_IMAGE=/boot/vmlinuz-%s root=/dev/mapper/rhel-root ro crashkernel=1G-4G:192M,4G-64G:256M,"
                            "64G-:512M resume=/dev/mapper/rhel-swap rd.lvm.lv=rhel/root rd.lvm.lv=rhel/swap rhgb quiet\n"
                            % RHEL_KERNEL)


def test_grubby_update_all_then_reboot(sim):
    rhel(sim)
    before = cmdline(sim)
    p = sim.run("grubby", "--update-kernel=ALL", "--args=pcie_aspm=off intel_iommu=on", "--remove-args=rhgb")
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")
    args = [ln for ln in sim.out("grubby", "--info=ALL").splitlines() if ln.startswith("args=")]
    assert args == ['args="ro crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rhel-swap '
                    'rd.lvm.lv=rhel/root rd.lvm.lv=rhel/swap quiet $tuned_params pcie_aspm=off intel_iommu=on"'] * 2
    etc = read(root(sim) / "etc/default/grub")
    assert 'GRUB_CMDLINE_LINUX="crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M resume=/dev/mapper/rhel-swap ' \
           'rd.lvm.lv=rhel/root rd.lvm.lv=rhel/swap quiet pcie_aspm=off intel_iommu=on"\n' in etc
    assert read(root(sim) / "etc/kernel/cmdline").split()[-2:] == ["pcie_aspm=off", "intel_iommu=on"]
    assert cmdline(sim) == before
    sim.run("mlxsim", "reboot", check_rc=0)
    assert cmdline(sim).split()[-3:] == ["quiet", "pcie_aspm=off", "intel_iommu=on"]
    assert "rhgb" not in cmdline(sim) and "$" not in cmdline(sim)
    # the same update again changes no file; a new value of a key replaces the old one (and moves it last)
    entries = sorted((root(sim) / "boot/loader/entries").iterdir())
    snapshot = [read(e) for e in entries]
    sim.run("grubby", "--update-kernel=ALL", "--args=pcie_aspm=off intel_iommu=on", "--remove-args=rhgb", check_rc=0)
    assert [read(e) for e in entries] == snapshot
    sim.run("grubby", "--update-kernel=ALL", "--args=pcie_aspm=force", check_rc=0)
    assert sim.out("grubby", "--info=DEFAULT").splitlines()[2].endswith('$tuned_params intel_iommu=on pcie_aspm=force"')


def test_grubby_update_default_only_and_set_default(sim):
    rhel(sim)
    sim.run("grubby", "--update-kernel=DEFAULT", "--args=iommu=pt", check_rc=0)
    args = [ln for ln in sim.out("grubby", "--info=ALL").splitlines() if ln.startswith("args=")]
    assert args[0].endswith(' iommu=pt"') and "iommu=pt" not in args[1]
    assert 'GRUB_CMDLINE_LINUX="crashkernel' in read(root(sim) / "etc/default/grub") \
        and "iommu=pt" not in read(root(sim) / "etc/default/grub")                     # only ALL touches it
    mid = sim.state_data()["platform"]["machine_id"]
    p = sim.run("grubby", "--set-default-index=1", check_rc=0)
    assert p.stderr == ("The default is /boot/loader/entries/%s-0-rescue.conf with index 1 and kernel "
                        "/boot/vmlinuz-0-rescue-%s\n" % (mid, mid))
    assert sim.out("grubby", "--default-index") == "1\n"
    sim.run("mlxsim", "reboot", check_rc=0)
    assert cmdline(sim).startswith("BOOT_IMAGE=/boot/vmlinuz-0-rescue-")
    sim.run("grubby", "--set-default", "/boot/vmlinuz-" + RHEL_KERNEL, check_rc=0)
    sim.run("mlxsim", "reboot", check_rc=0)
    assert cmdline(sim).split()[-1] == "iommu=pt"


@pytest.mark.parametrize("args,err", [
    ([], "no action specified\n"),
    (["--args=x"], "no action specified\n"),
    (["--remove-args", "x", "--info=ALL"], "no action specified\n"),
    (["--frobnicate"], "grubby: unrecognized option '--frobnicate'\n"),
    (["-x"], "grubby: invalid option -- 'x'\n"),
    (["--info"], "grubby: option '--info' requires an argument\n"),
    (["--default"], "grubby: option '--default' is ambiguous; possibilities: '--default-kernel' '--default-index' "
                    "'--default-title'\n"),
    (["--default-kernel=x"], "grubby: option '--default-kernel' doesn't allow an argument\n"),
    (["--info=/boot/vmlinuz-9"], "The param /boot/vmlinuz-9 is incorrect\n"),
    (["--update-kernel=/boot/vmlinuz-9", "--args=x"], "The param /boot/vmlinuz-9 is incorrect\n"),
    (["--lilo"], "grubby: the option \"--lilo\" was deprecated\nTry 'grubby --help' to list supported options\n"),
    (["--add-kernel=/boot/vmlinuz-9"], "grubby: mlxsim does not simulate --add-kernel\n"),
])
def test_grubby_errors(sim, args, err):
    rhel(sim)
    p = sim.run("grubby", *args)
    assert (p.returncode, p.stderr) == (1, err)


def test_grubby_on_a_debian_host_lists_nothing(sim):
    """The lab's containers are Debian but have the simulated grubby on PATH: like grubby-bls without
    BLS entries it prints an empty line, so the ofed role's boot-kernel detection falls back to /boot."""
    sim.init("cx6dx-roce", cli=True)
    assert sim.out("grubby", "--default-kernel") == "\n"
    assert sim.out("grubby", "--info=ALL") == ""
    assert sim.out("grubby", "--help").startswith("Usage: grubby [OPTION...]\n")


@pytest.mark.parametrize("bootloader,kernel,how", [("grub", DEB_KERNEL, "the newest /boot/vmlinuz-* (GRUB's first entry)"),
                                                   ("bls", RHEL_KERNEL, "grubby --default-kernel")])
def test_the_ofed_reader_finds_the_boot_kernel(sim, monkeypatch, bootloader, kernel, how):
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
    sim.init("cx6dx-roce", "node01", "--bootloader", bootloader)
    for key in ("PATH", "MLXSIM_STATE", "MLXSIM_TIME_SCALE", "PYTHONPYCACHEPREFIX"):
        monkeypatch.setenv(key, sim.env[key])
    monkeypatch.delenv("MLXSIM_ROOT", raising=False)
    monkeypatch.delenv("MLXSIM_SYSROOT", raising=False)
    assert Host(root=str(root(sim)), timeout=60).boot_kernel() == (kernel, how)


# ---------------------------------------------------------------------------- the sysroot rule


def test_the_sysroot_is_never_the_real_root_in_tests(sim, tmp_path):
    sim.init("cx6dx-roce", cli=True)
    assert (root(sim) / "etc/default/grub").is_file() and (root(sim) / "boot/grub/grub.cfg").is_file()
    elsewhere = tmp_path / "sysroot"
    p = sim.run("mlxsim", "init", "--profile", "cx6dx-roce", "--hostname", "h", "--force",
                env={"MLXSIM_SYSROOT": str(elsewhere)}, check_rc=0)
    assert p.returncode == 0 and (elsewhere / "boot/grub/grub.cfg").is_file()
    grub_d(sim, "90-x.cfg", 'GRUB_CMDLINE_LINUX="x=1"\n')            # in the default sysroot: not read now
    (elsewhere / "etc/default/grub.d/90-y.cfg").write_text('GRUB_CMDLINE_LINUX="y=1"\n')
    sim.run("update-grub", env={"MLXSIM_SYSROOT": str(elsewhere)}, check_rc=0)
    sim.run("mlxsim", "reboot", env={"MLXSIM_SYSROOT": str(elsewhere)}, check_rc=0)
    assert cmdline(sim).split()[-2:] == ["y=1", "quiet"]              # /proc/cmdline stays in the sim tree


def test_the_sysroot_rule(monkeypatch, tmp_path):
    from mlxsim import platform, sysfs
    from mlxsim import state as st
    state = tmp_path / "h" / "state.json"
    monkeypatch.delenv("MLXSIM_SYSROOT", raising=False)
    monkeypatch.delenv("MLXSIM_ROOT", raising=False)
    monkeypatch.setenv("MLXSIM_STATE", str(state))
    assert platform.sysroot() == sysfs.root_path() == str(tmp_path / "h" / "root")
    monkeypatch.setattr(st, "DEFAULT_STATE", str(state))             # the lab's state file: the container's /
    assert platform.sysroot() == "/"
    monkeypatch.setenv("MLXSIM_SYSROOT", str(tmp_path / "x"))
    assert platform.sysroot() == str(tmp_path / "x")


def test_init_under_the_real_root_keeps_what_is_there(monkeypatch, tmp_path):
    """Under / (the lab's containers) init adds /etc/default/grub only when missing and puts no kernel into
    /boot; a tmp directory stands in for / here."""
    from mlxsim import platform
    fake = tmp_path / "slash"
    (fake / "etc/default").mkdir(parents=True)
    (fake / "etc/default/grub").write_text("GRUB_CMDLINE_LINUX=\"mine\"\n")
    (fake / "boot").mkdir()
    (fake / "boot/vmlinuz-7.0.0-1-amd64").write_text("")
    monkeypatch.setenv("MLXSIM_SYSROOT", str(fake))
    monkeypatch.setattr(platform, "is_real_root", lambda path: os.path.realpath(path) == str(fake))
    plat = platform.build_host("cx6dx-roce", "h")
    platform.install(plat, str(tmp_path / "tree"))
    assert read(fake / "etc/default/grub") == "GRUB_CMDLINE_LINUX=\"mine\"\n"
    assert sorted(os.listdir(fake / "boot")) == ["grub", "vmlinuz-7.0.0-1-amd64"]
    assert os.listdir(fake / "boot/grub") == []
    assert read(tmp_path / "tree/proc/cmdline") == platform.debian_cmdline(plat) + "\n"
    (fake / "etc/default/grub").unlink()
    platform.install(plat, str(tmp_path / "tree"))
    assert read(fake / "etc/default/grub") == platform.DEBIAN_DEFAULT_GRUB


def test_version_orders():
    from mlxsim import platform
    assert platform.grub_version_gt("/boot/vmlinuz-6.1.0-28-amd64", "/boot/vmlinuz-6.1.0-9-amd64")
    assert platform.grub_version_gt("/boot/vmlinuz-6.12.0-1-amd64", "/boot/vmlinuz-6.1.0-28-amd64")
    assert not platform.grub_version_gt("/boot/vmlinuz-6.1.0-rc7-amd64", "/boot/vmlinuz-6.1.0-amd64")
    assert platform.rpmvercmp("a-5.14.0-427.el9", "a-5.14.0-70.el9") == 1
    assert platform.rpmvercmp("a-0-rescue-ff", "a-5.14.0-70.el9") == -1
    assert platform.rpmvercmp("1.0~rc1", "1.0") == -1 and platform.rpmvercmp("1.0", "1.0") == 0
