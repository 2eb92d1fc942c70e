"""_bootloader: the kernel parameters on every boot entry, read back before a reboot is asked for.

The grub.cfg and grubby texts written out here follow the layouts of Debian's grub2 2.06 /etc/grub.d/10_linux
(menuentry / submenu blocks, a tab before ``linux``) and RHEL 9's grubby-bls ``--info`` (index=, kernel="...",
args="...", root=, initrd=, title=); there is no real capture of either in tests/fixtures/real. The converge
cases run the simulator's update-grub and grubby (tests/sim), which write those layouts too.
"""
import os
import subprocess

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _bootloader as bl
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, ToolFailed
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host

ARGS = ["pcie_aspm=off"]

DEBIAN_CFG = """\
### BEGIN /etc/grub.d/10_linux ###
function gfxmode {
\tset gfxpayload="${1}"
}
menuentry 'Debian GNU/Linux' --class debian --class gnu-linux --class gnu --class os $menuentry_id_option 'gnulinux-simple-1f' {
\tload_video
\tinsmod gzio
\techo\t'Loading Linux 6.1.0-26-amd64 ...'
\tlinux\t/boot/vmlinuz-6.1.0-26-amd64 root=UUID=1f ro  quiet pcie_aspm=off
\tinitrd\t/boot/initrd.img-6.1.0-26-amd64
}
submenu 'Advanced options for Debian GNU/Linux' $menuentry_id_option 'gnulinux-advanced-1f' {
\tmenuentry 'Debian GNU/Linux, with Linux 6.1.0-26-amd64' --class debian $menuentry_id_option 'gnulinux-6.1.0-26-amd64-advanced-1f' {
\t\tlinux\t/boot/vmlinuz-6.1.0-26-amd64 root=UUID=1f ro  quiet pcie_aspm=off
\t}
\tmenuentry 'Debian GNU/Linux, with Linux 6.1.0-26-amd64 (recovery mode)' --class debian $menuentry_id_option 'x' {
\t\tlinux\t/boot/vmlinuz-6.1.0-26-amd64 root=UUID=1f ro single
\t}
}
#\tlinux\t/boot/vmlinuz-old root=UUID=1f ro
menuentry 'It'\\''s mine' {
\tlinuxefi /vmlinuz-7 ro pcie_aspm
}
### END /etc/grub.d/10_linux ###
"""

GRUBBY_INFO = """\
index=0
kernel="/boot/vmlinuz-5.14.0-427.13.1.el9_4.x86_64"
args="ro crashkernel=1G-4G:192M,4G-64G:256M rd.lvm.lv=rhel/root pcie_aspm=off"
root="/dev/mapper/rhel-root"
initrd="/boot/initramfs-5.14.0-427.13.1.el9_4.x86_64.img"
title="Red Hat Enterprise Linux (5.14.0-427.13.1.el9_4.x86_64) 9.4 (Plow)"
id="0a1b-5.14.0-427.13.1.el9_4.x86_64"
index=1
kernel="/boot/vmlinuz-0-rescue-0a1b"
args="ro crashkernel=1G-4G:192M,4G-64G:256M"
root="/dev/mapper/rhel-root"
title="Red Hat Enterprise Linux (0-rescue-0a1b) 9.4 (Plow)"
"""

GOOD = ["pcie_aspm=off", "iommu=pt", "quiet", "console=ttyS0,115200n8", "crashkernel=1G-4G:192M,4G-64G:256M",
        "rd.lvm.lv=rhel/root", "root=UUID=1f2e", "isolcpus=nohz,domain,1-7", "pcie_aspm.policy=performance"]
# Everything a shell would interpret, and what Python's $ / \d / \s would let through.
BAD = ['x"$(touch CANARY)"', "$(touch CANARY)", "`touch CANARY`", "a;touch CANARY", "a'b", 'a"b', "a b",
       "pcie_aspm=off\n", "pcie_aspm=off\ntouch CANARY", "a=$HOME", "a=\\", "iommu=pt&", "a|b", "a>b", "=off",
       "", "pcie_aspm=", "\u0663", "pcie_aspm=\u0663ff", "a\tb", "a=b c", "*", "a#b", 5, None, ["a"]]


@pytest.mark.parametrize("arg", GOOD)
def test_kernel_parameters_of_real_command_lines_are_accepted(arg):
    assert bl.check_kernel_args([arg]) == [arg]


@pytest.mark.parametrize("arg", BAD)
def test_anything_a_shell_interprets_is_refused_naming_the_index(arg):
    with pytest.raises(InvalidValue) as err:
        bl.check_kernel_args(["quiet", arg])
    assert err.value.parameter == "args[1]"
    assert "is not one kernel parameter" in err.value.msg and "allowed:" in err.value.msg
    with pytest.raises(InvalidValue):
        bl.render_dropin([arg])


def test_not_a_list_is_refused():
    with pytest.raises(InvalidValue) as err:
        bl.check_kernel_args("pcie_aspm=off")
    assert err.value.parameter == "args"


@pytest.mark.parametrize("dropin", ["/etc/default/grub.d/90-x", "/etc/default/grub.d/../grub", "/tmp/90.cfg",
                                    "/etc/default/grub.d/9 0.cfg", "/etc/default/grub.d/90.cfg\n", "relative.cfg"])
def test_a_dropin_update_grub_would_not_read_is_refused(dropin):
    with pytest.raises(InvalidValue) as err:
        bl.check_options({"args": ARGS, "grub_dropin": dropin})
    assert err.value.parameter == "grub_dropin" and "*.cfg" in err.value.msg


def test_unknown_bootloader_is_refused():
    with pytest.raises(InvalidValue) as err:
        bl.check_options({"args": ARGS, "bootloader": "systemd-boot"})
    assert err.value.parameter == "bootloader" and "auto, grub, grubby" in err.value.msg


def test_the_dropin_sources_cleanly_and_runs_nothing(tmp_path):
    """What update-grub does with it: /bin/sh sources it (set -e) after /etc/default/grub."""
    path = tmp_path / "90-gpufabric.cfg"
    path.write_text(bl.render_dropin(GOOD))
    assert subprocess.run(["sh", "-n", str(path)], check=False).returncode == 0
    proc = subprocess.run(["sh", "-ec", 'GRUB_CMDLINE_LINUX="ro"; . "$1"; printf %s "$GRUB_CMDLINE_LINUX"', "sh", str(path)],
                          capture_output=True, text=True, check=True, cwd=str(tmp_path))
    assert proc.stdout == "ro " + " ".join(GOOD)
    assert not (tmp_path / "CANARY").exists()


def test_grub_cfg_entries_in_file_order_with_their_menu_path():
    entries = bl.grub_entries(DEBIAN_CFG)
    assert [(e["title"], e["kernel"]) for e in entries] == [
        ("Debian GNU/Linux", "/boot/vmlinuz-6.1.0-26-amd64"),
        ("Advanced options for Debian GNU/Linux>Debian GNU/Linux, with Linux 6.1.0-26-amd64",
         "/boot/vmlinuz-6.1.0-26-amd64"),
        ("Advanced options for Debian GNU/Linux>Debian GNU/Linux, with Linux 6.1.0-26-amd64 (recovery mode)",
         "/boot/vmlinuz-6.1.0-26-amd64"),
        ("It's mine", "/vmlinuz-7")]
    assert entries[0]["args"] == ["root=UUID=1f", "ro", "quiet", "pcie_aspm=off"]
    assert [e["lacking"] for e in bl.entry_report(entries, ["pcie_aspm=off", "ro"])] == [
        [], [], ["pcie_aspm=off"], ["pcie_aspm=off"]]          # a bare pcie_aspm is not pcie_aspm=off
    assert [e["lacking"] for e in bl.entry_report(entries, ["pcie_aspm"])] == [[], [], ["pcie_aspm"], []]


@pytest.mark.parametrize("text", ["", None, "### BEGIN /etc/grub.d/10_linux ###\n### END /etc/grub.d/10_linux ###\n",
                                  "#\tlinux\t/boot/vmlinuz-1 ro\n"])
def test_grub_cfg_without_kernel_lines_has_no_entries(text):
    assert bl.grub_entries(text) == []


def test_grubby_info_entries():
    entries = bl.grubby_entries(GRUBBY_INFO)
    assert [(e["index"], e["kernel"]) for e in entries] == [
        ("0", "/boot/vmlinuz-5.14.0-427.13.1.el9_4.x86_64"), ("1", "/boot/vmlinuz-0-rescue-0a1b")]
    assert entries[0]["title"] == "Red Hat Enterprise Linux (5.14.0-427.13.1.el9_4.x86_64) 9.4 (Plow)"
    assert [e["lacking"] for e in bl.entry_report(entries, ARGS)] == [[], ["pcie_aspm=off"]]
    assert bl.grubby_entries("") == [] and bl.grubby_entries("The param /boot/x is incorrect\n") == []


# ---------------------------------------------------------------------------------- on the simulator


@pytest.fixture
def grub(sim_host, tmp_path):
    """A simulated Debian 12 host (a kernel in /boot, grub.cfg as update-grub wrote it): (SimHost, root, reader)."""
    sim = sim_host("dgx-h100")
    root = tmp_path / "root"
    return sim, root, Host(root=str(root))


def converge(reader, check_mode=False, **params):
    return bl.converge(reader, dict({"args": ARGS}, **params), host="gpu-node-01", check_mode=check_mode)


def update_grub_runs(sim):
    return len(sim.argvs("update-grub"))


def test_check_apply_check_apply(grub):
    sim, root, reader = grub
    cfg = (root / "boot/grub/grub.cfg").read_text()
    result = converge(reader, check_mode=True)
    assert result["changed"] and not result["regenerated"] and result["bootloader"] == "grub"
    assert [e["lacking"] for e in result["before"]["entries"]] == [ARGS] * 3
    assert result["after"]["dropin"] == bl.render_dropin(ARGS) and result["before"]["dropin"] is None
    assert not (root / "etc/default/grub.d/90-gpufabric.cfg").exists()
    assert (root / "boot/grub/grub.cfg").read_text() == cfg and update_grub_runs(sim) == 0

    result = converge(reader)
    assert result["changed"] and result["regenerated"] and update_grub_runs(sim) == 1
    assert [e["lacking"] for e in result["entries"]] == [[]] * 3
    assert (root / "etc/default/grub.d/90-gpufabric.cfg").read_text() == bl.render_dropin(ARGS)

    assert not converge(reader, check_mode=True)["changed"]
    result = converge(reader)
    assert not result["changed"] and not result["regenerated"] and update_grub_runs(sim) == 1


def test_a_grub_cfg_that_lost_its_kernel_lines_is_regenerated_even_with_the_dropin_in_place(grub):
    sim, root, reader = grub
    converge(reader)
    (root / "boot/grub/grub.cfg").write_text("set default=0\n")
    result = converge(reader)
    assert result["changed"] and result["regenerated"] and update_grub_runs(sim) == 2
    assert [e["lacking"] for e in result["entries"]] == [[]] * 3


def _no_kernel(sim, root):
    for name in os.listdir(root / "boot"):
        if name.startswith(("vmlinuz-", "initrd.img-")):
            (root / "boot" / name).unlink()
    sim.run("update-grub")          # grub.cfg as update-grub writes it without a kernel: no entry
    sim.clear_calls()


def test_no_kernel_entry_after_update_grub_fails_naming_file_parameters_and_findings(grub):
    """The loop of issue 17: without a kernel update-grub writes no entry, so a reboot cannot bring the parameter."""
    sim, root, reader = grub
    _no_kernel(sim, root)
    with pytest.raises(bl.NotBootable) as err:
        converge(reader, args=["pcie_aspm=off", "iommu=pt"])
    msg = err.value.msg
    assert msg.startswith("gpu-node-01: kernel_cmdline: /boot/grub/grub.cfg has "
                          "no kernel entry after regenerating it, so a reboot would not boot pcie_aspm=off iommu=pt; "
                          "not asking for one."), msg
    assert "Kernel images update-grub lists: none under /boot (is /boot mounted?" in msg
    assert "update-grub said: Generating grub configuration file ... done." in msg
    assert update_grub_runs(sim) == 1
    # the drop-in is right and stays (a kernel installed later gets it); the next run says the same, runs once more
    assert (root / "etc/default/grub.d/90-gpufabric.cfg").exists()
    with pytest.raises(bl.NotBootable):
        converge(reader, args=["pcie_aspm=off", "iommu=pt"])


def test_check_mode_predicts_the_failure_when_update_grub_would_find_no_kernel(grub):
    sim, root, reader = grub
    _no_kernel(sim, root)
    with pytest.raises(bl.NotBootable) as err:
        converge(reader, check_mode=True)
    assert "has no kernel entry and update-grub would find no kernel to list" in err.value.msg
    assert not (root / "etc/default/grub.d/90-gpufabric.cfg").exists() and update_grub_runs(sim) == 0


def test_other_boot_loaders_are_named(grub):
    sim, root, reader = grub
    _no_kernel(sim, root)
    for path in ("boot/efi/loader/loader.conf", "boot/efi/EFI/Linux/debian-6.1.0-26-amd64.efi"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("")
    with pytest.raises(bl.NotBootable) as err:
        converge(reader)
    assert ("Other boot loaders on this host, which this module does not configure: systemd-boot "
            "(/boot/efi/loader/loader.conf); a unified kernel image (/boot/efi/EFI/Linux/debian-6.1.0-26-amd64.efi).") \
        in err.value.msg


def test_a_later_dropin_that_resets_the_command_line_fails_naming_the_entries(grub):
    sim, root, reader = grub
    (root / "etc/default/grub.d/99-site.cfg").write_text('GRUB_CMDLINE_LINUX=""\n')
    with pytest.raises(bl.NotBootable) as err:
        converge(reader)
    assert "has 3 kernel entries, 3 lacking pcie_aspm=off: Debian GNU/Linux (/boot/vmlinuz-6.1.0-26-amd64);" \
        in err.value.msg


def test_a_failed_update_grub_puts_the_previous_dropin_back(grub):
    sim, root, reader = grub
    (root / "etc/default/grub.d/50-broken.cfg").write_text('GRUB_CMDLINE_LINUX="unterminated\n')
    with pytest.raises(ToolFailed) as err:
        converge(reader)
    assert err.value.rc == 2 and "Unterminated quoted string" in err.value.stderr
    assert not (root / "etc/default/grub.d/90-gpufabric.cfg").exists()
    (root / "etc/default/grub.d/50-broken.cfg").unlink()
    converge(reader)
    (root / "etc/default/grub.d/50-broken.cfg").write_text('GRUB_CMDLINE_LINUX="unterminated\n')
    with pytest.raises(ToolFailed):
        converge(reader, args=["pcie_aspm=off", "iommu=pt"])
    assert (root / "etc/default/grub.d/90-gpufabric.cfg").read_text() == bl.render_dropin(ARGS)


def test_empty_args_change_nothing(grub):
    sim, root, reader = grub
    assert converge(reader, args=[]) == {"changed": False, "bootloader": None, "config": None, "regenerated": False,
                                         "entries": [], "before": {}, "after": {}}
    assert update_grub_runs(sim) == 0


def test_detect_picks_grubby_for_bls_entries_and_refuses_the_unknown(grub, tmp_path):
    sim, root, reader = grub
    assert bl.detect(reader) == "grub"
    (root / "boot/loader/entries").mkdir(parents=True)
    (root / "boot/loader/entries/x.conf").write_text("title x\n")
    assert bl.detect(reader) == "grubby"
    bare = tmp_path / "bare"
    (bare / "efi/loader").mkdir(parents=True)
    (bare / "efi/loader/loader.conf").write_text("default @saved\n")
    with pytest.raises(bl.NotBootable) as err:
        bl.detect(Host(root=str(bare)))
    assert err.value.parameter == "bootloader" and "found: systemd-boot (/efi/loader/loader.conf)" in err.value.msg
    with pytest.raises(bl.NotBootable) as err:
        bl.detect(Host(root=str(tmp_path / "empty")))
    assert "found: no boot loader configuration" in err.value.msg


def test_grubby_check_apply_check(sim_host, tmp_path):
    sim = sim_host("dgx-h100", init_args=("--bootloader", "bls"))
    reader = Host(root=str(tmp_path / "root"))
    assert bl.detect(reader) == "grubby"
    result = converge(reader, check_mode=True, args=["pcie_aspm=off", "iommu=pt"])
    assert result["changed"] and result["bootloader"] == "grubby"
    assert not [a for a in sim.argvs("grubby") if a[1].startswith("--update-kernel")]
    result = converge(reader, args=["pcie_aspm=off", "iommu=pt"])
    assert result["regenerated"] and all(e["lacking"] == [] for e in result["entries"]) and result["entries"]
    assert [a[1:] for a in sim.argvs("grubby") if a[1].startswith("--update-kernel")] == [
        ["--update-kernel=ALL", "--args=pcie_aspm=off iommu=pt"]]
    assert not converge(reader, args=["pcie_aspm=off", "iommu=pt"])["changed"]
