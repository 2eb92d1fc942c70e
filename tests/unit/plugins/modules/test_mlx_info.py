"""The mlx_info module: arguments, what it returns (no ansible_facts), fail_on_error, failures."""
import json
import os
import re

import pytest

from _paths import REAL
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
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


class Exit(Exception):
    def __init__(self, kwargs):
        super().__init__(kwargs.get("msg"))
        self.result = kwargs


class Fail(Exit):
    pass


def _raise_with(error):
    """A stand-in for AnsibleModule.exit_json / fail_json that raises ``error(kwargs)``."""
    def method(self, **kwargs):
        raise error(kwargs)
    return method


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
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", _raise_with(Exit))
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", _raise_with(Fail))
    return fake


def run(args):
    with patch_module_args(args):
        with pytest.raises(Exit) as caught:
            mlx_info.main()
    return caught.value


def test_lists_devices_and_returns_no_facts(host):
    host.outputs = {LSPCI: LSPCI_BF2, ("mst", "status", "-v"): MST_BF2,
                    ("flint", "-d", "0000:e2:00.0", "q"): FLINT_CX7}
    out = run({})
    assert not isinstance(out, Fail)
    result = out.result
    assert sorted(host.calls) == sorted([LSPCI, ("mst", "status", "-v"), ("flint", "-d", "0000:e2:00.0", "q")])
    assert host.runner_args == {"tool": "auto", "timeout": 900}
    assert "ansible_facts" not in result
    assert host.warnings == []
    assert result["changed"] is False
    assert result["tool_family"] == "mft"
    (dev,) = result["devices"]
    assert (dev["address"], dev["mst"], dev["part_number"], dev["psid"]) == (
        "0000:e2:00.0", "/dev/mst/mt41686_pciconf0", "MBF2M516A-EEEOT", "MT_0000001244")
    assert result["summary"]["cards"] == 1
    json.dumps(result)  # everything returned is JSON-serialisable


def test_tool_and_timeout_reach_the_runner(host):
    host.installed = {"lspci", "mstconfig", "mstflint"}
    host.outputs = {LSPCI: LSPCI_BF2, ("mstflint", "-d", "0000:e2:00.0", "q"): FLINT_CX7}
    out = run({"tool": "mstflint", "timeout": 60})
    assert host.runner_args == {"tool": "mstflint", "timeout": 60}
    assert out.result["tool_family"] == "mstflint"
    assert ("mst", "status", "-v") not in host.calls


def test_unreadable_device_warns_but_does_not_fail(host):
    host.outputs = {LSPCI: LSPCI_BF2, ("mst", "status", "-v"): MST_BF2,
                    ("flint", "-d", "0000:e2:00.0", "q"): CANNOT_OPEN}
    out = run({})
    assert not isinstance(out, Fail)
    (dev,) = out.result["devices"]
    assert dev["part_number"] == "MBF2M516A-EEEOT"
    assert "Cannot open Device: 0000:e2:00.0" in dev["errors"][0]
    assert host.warnings == ["0000:e2:00.0: flint -d 0000:e2:00.0 q failed (rc 1): Cannot open Device: "
                             "0000:e2:00.0. Operation not supported. MFE_CR_ERROR"]


def test_fail_on_error_fails_with_the_tools_words_and_the_listing(host):
    host.outputs = {LSPCI: LSPCI_BF2, ("mst", "status", "-v"): MST_BF2,
                    ("flint", "-d", "0000:e2:00.0", "q"): CANNOT_OPEN}
    out = run({"fail_on_error": True})
    assert isinstance(out, Fail)
    assert re.match(r"1 of 1 devices could not be fully read: 0000:e2:00.0: flint -d 0000:e2:00.0 q failed \(rc 1\): "
                    r"Cannot open Device", out.result["msg"])
    assert list(out.result["failed_devices"]) == ["0000:e2:00.0"]
    assert out.result["devices"][0]["serial_number"] == "MT2050X00614"


def test_no_lspci_fails_clearly(host):
    host.installed = {"mlxconfig", "flint"}
    out = run({})
    assert isinstance(out, Fail)
    assert "lspci not found on PATH" in out.result["msg"] and "pciutils" in out.result["msg"]
    assert host.calls == []


def test_bad_option_is_refused(host):
    out = run({"tool": "mellanox"})
    assert isinstance(out, Fail)
    assert "tool" in out.result["msg"] and "mstflint" in out.result["msg"]
    assert host.calls == []
