"""The mlx_info module: arguments, what it returns (no ansible_facts), fail_on_error, failures."""
import os
import re

import pytest

from _paths import REAL
from _modules import run_module
from ansible.module_utils import basic
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _host as host_layer
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner
from ansible_collections.gpufabric.mlnx.plugins.modules import mlx_info

LSPCI = ("lspci", "-D", "-d", "15b3:", "-vv")


def real(name, start=None, stop=None):
    lines = (REAL / name).read_text().splitlines()[2:]
    if start is not None:
        lines = lines[next(i for i, line in enumerate(lines) if start in line):]
    if stop is not None:
        lines = lines[:next(i for i, line in enumerate(lines) if stop in line)]
    return "\n".join(lines) + "\n"


LSPCI_BF2 = real("lspci_vv_vpd_bf2_1.txt", stop="---- (second fixture")
MST_BF2 = real("mst_status_v_bf2_1.txt")
FLINT_CX7 = real("flint_query_cx7_1.txt", start="Image type:")
CANNOT_OPEN = (1, "-E- Cannot open Device: 0000:e2:00.0. Operation not supported. MFE_CR_ERROR\n", "")


@pytest.fixture
def host(monkeypatch, tmp_path):
    """A fake host: ``host.installed``, ``host.outputs``; ``host.calls`` and ``host.runner_args`` after a run. Its
    sysfs (what mlx_info joins through the runner's host) is an empty tree."""

    class Host:
        installed = {"lspci", "mlxconfig", "flint", "mst"}
        outputs = {}
        calls = []
        runner_args = {}
        warnings = []

        def which(self, name):
            return "/usr/bin/" + name if name in self.installed else None

        def execute(self, argv, env, timeout, data):
            key = (os.path.basename(argv[0]),) + tuple(argv[1:])
            self.calls.append(key)
            reply = self.outputs.get(key, (127, "", "unexpected %r" % (key,)))
            return (0, reply, "") if isinstance(reply, str) else reply

    fake = Host()
    fake.outputs, fake.calls, fake.warnings = {}, [], []

    def make_runner(tool="auto", timeout=900):
        fake.runner_args = {"tool": tool, "timeout": timeout}
        sysfs_host = host_layer.Host(root=str(tmp_path), execute=fake.execute, which=fake.which)
        return Runner(tool, timeout=timeout, host=sysfs_host, sleep=lambda _s: None)

    monkeypatch.setattr(mlx_info, "Runner", make_runner)
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, msg: fake.warnings.append(msg))
    return fake


def run(args):
    """(failed?, result) of mlx_info with ``args`` on the fake host."""
    return run_module(mlx_info, args)


def test_lists_devices_and_returns_no_facts(host):
    host.outputs = {LSPCI: LSPCI_BF2, ("mst", "status", "-v"): MST_BF2,
                    ("flint", "-d", "0000:e2:00.0", "q"): FLINT_CX7}
    failed, result = run({})
    assert not failed
    assert sorted(host.calls) == sorted([LSPCI, ("mst", "status", "-v"), ("flint", "-d", "0000:e2:00.0", "q")])
    assert host.runner_args == {"tool": "auto", "timeout": 900}
    assert "ansible_facts" not in result
    assert host.warnings == []
    assert result["changed"] is False
    assert result["tool_family"] == "mft"
    (dev,) = result["devices"]
    assert (dev["address"], dev["mst"], dev["part_number"], dev["psid"]) == (
        "0000:e2:00.0", "/dev/mst/mt41686_pciconf0", "MBF2M516A-EEEOT", "MT_0000001244")
    assert result["summary"]["cards"] == 1  # read back from the module's JSON: all of it is serialisable


def test_tool_and_timeout_reach_the_runner(host):
    host.installed = {"lspci", "mstconfig", "mstflint"}
    host.outputs = {LSPCI: LSPCI_BF2, ("mstflint", "-d", "0000:e2:00.0", "q"): FLINT_CX7}
    failed, out = run({"tool": "mstflint", "timeout": 60})
    assert not failed
    assert host.runner_args == {"tool": "mstflint", "timeout": 60}
    assert out["tool_family"] == "mstflint"
    assert ("mst", "status", "-v") not in host.calls


def test_unreadable_device_warns_but_does_not_fail(host):
    host.outputs = {LSPCI: LSPCI_BF2, ("mst", "status", "-v"): MST_BF2,
                    ("flint", "-d", "0000:e2:00.0", "q"): CANNOT_OPEN}
    failed, out = run({})
    assert not failed
    (dev,) = out["devices"]
    assert dev["part_number"] == "MBF2M516A-EEEOT"
    assert "Cannot open Device: 0000:e2:00.0" in dev["errors"][0]
    assert host.warnings == ["0000:e2:00.0: flint -d 0000:e2:00.0 q failed (rc 1): Cannot open Device: "
                             "0000:e2:00.0. Operation not supported. MFE_CR_ERROR"]


def test_fail_on_error_fails_with_the_tools_words_and_the_listing(host):
    host.outputs = {LSPCI: LSPCI_BF2, ("mst", "status", "-v"): MST_BF2,
                    ("flint", "-d", "0000:e2:00.0", "q"): CANNOT_OPEN}
    failed, out = run({"fail_on_error": True})
    assert failed
    assert re.match(r"1 of 1 devices could not be fully read: 0000:e2:00.0: flint -d 0000:e2:00.0 q failed \(rc 1\): "
                    r"Cannot open Device", out["msg"])
    assert list(out["failed_devices"]) == ["0000:e2:00.0"]
    assert out["devices"][0]["serial_number"] == "MT2050X00614"


def test_no_lspci_fails_clearly(host):
    host.installed = {"mlxconfig", "flint"}
    failed, out = run({})
    assert failed
    assert "lspci not found on PATH" in out["msg"] and "pciutils" in out["msg"]
    assert host.calls == []


def test_bad_option_is_refused(host):
    failed, out = run({"tool": "mellanox"})
    assert failed
    assert "tool" in out["msg"] and "mstflint" in out["msg"]
    assert host.calls == []
