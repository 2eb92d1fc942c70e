"""The kernel_cmdline module: options to the core, the result and diff, failures as one fail_json."""
import pytest

from _modules import run_module
from ansible_collections.gpufabric.mlnx.plugins.modules import kernel_cmdline


@pytest.fixture
def run():
    """run(args, check=False) -> (failed?, result); check mode shows the diff too."""
    return lambda args, check=False: run_module(kernel_cmdline, args, check=check, diff=check)


@pytest.fixture
def root(sim_host, tmp_path):
    sim = sim_host("dgx-h100")
    return sim, str(tmp_path / "root")


def test_check_then_apply_then_nothing(run, root):
    sim, path = root
    failed, out = run({"args": ["pcie_aspm=off"], "root": path, "host": "srv-r01-01"}, check=True)
    assert not failed and out["changed"] and out["bootloader"] == "grub" and not out["regenerated"]
    assert out["msg"] == "would regenerate /boot/grub/grub.cfg (3 kernel entries)"
    assert out["diff"]["before"]["dropin"] is None and "pcie_aspm=off" in out["diff"]["after"]["dropin"]
    failed, out = run({"args": ["pcie_aspm=off"], "root": path})
    assert not failed and out["changed"] and out["regenerated"] and out["config"] == "/boot/grub/grub.cfg"
    assert [e["lacking"] for e in out["entries"]] == [[], [], []]
    failed, out = run({"args": ["pcie_aspm=off"], "root": path})
    assert not failed and not out["changed"]
    assert out["msg"] == "every kernel entry of /boot/grub/grub.cfg (3) carries the parameters"
    assert len(sim.argvs("update-grub")) == 1


def test_bad_parameter_fails_before_any_tool_runs(run, root):
    sim, path = root
    failed, out = run({"args": ["pcie_aspm=off", "x\"$(reboot)\""], "root": path})
    assert failed and out["parameter"] == "args[1]" and "is not one kernel parameter" in out["msg"]
    assert sim.calls() == []


def test_not_bootable_fails_naming_the_host(run, root, tmp_path):
    sim, path = root
    for kernel in (tmp_path / "root" / "boot").glob("vmlinuz-*"):
        kernel.unlink()
    (tmp_path / "root" / "boot" / "grub" / "grub.cfg").write_text("set default=0\n")
    failed, out = run({"args": ["pcie_aspm=off"], "root": path, "host": "srv-r01-01"})
    assert failed and out["msg"].startswith("srv-r01-01: kernel_cmdline: /boot/grub/grub.cfg has no kernel entry")
    assert out["parameter"] == "args"
