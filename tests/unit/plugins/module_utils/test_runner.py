"""The runner: tool family resolution, argv, environment, semaphore retry (parallel(): test_host.py)."""
import subprocess

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import ToolFailed, ToolNotFound, ToolTimeout
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner


def which_from(*names):
    return lambda name: "/usr/bin/" + name if name in names else None


class Recorder:
    def __init__(self, *replies):
        self.replies = list(replies)
        self.calls = []

    def __call__(self, argv, env, timeout, data):
        self.calls.append((argv, env, timeout, data))
        if not self.replies:
            return 0, "", ""
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply


@pytest.mark.parametrize("tool, installed, family, binary", [
    ("auto", ("mlxconfig", "mstconfig"), "mft", "mlxconfig"),
    ("auto", ("mstconfig",), "mstflint", "mstconfig"),
    ("mstflint", ("mlxconfig", "mstconfig"), "mstflint", "mstconfig"),
    ("mft", ("mlxconfig",), "mft", "mlxconfig"),
])
def test_family(tool, installed, family, binary):
    rec = Recorder()
    runner = Runner(tool, execute=rec, which=which_from(*installed))
    assert runner.family == family
    runner.run("config", ["-d", "0000:18:00.0", "-e", "q"])
    argv, env, _timeout, _data = rec.calls[0]
    assert argv == ["/usr/bin/" + binary, "-d", "0000:18:00.0", "-e", "q"]
    assert env["LANG"] == "C" and env["LC_ALL"] == "C"


def test_flint_role_names():
    assert Runner("mft", which=which_from("mlxconfig")).name("flint") == "flint"
    assert Runner("mstflint", which=which_from("mstconfig")).name("flint") == "mstflint"
    assert Runner("mstflint", which=which_from("mstconfig")).name("fwreset") == "mstfwreset"


def test_no_tool_names_both_packages():
    with pytest.raises(ToolNotFound) as err:
        Runner("auto", which=which_from()).family
    assert "mlxconfig (NVIDIA Firmware Tools" in err.value.msg and "mstconfig (mstflint" in err.value.msg


def test_mst_missing_in_mstflint():
    runner = Runner("mstflint", which=which_from("mstconfig"))
    assert not runner.has("mst")
    with pytest.raises(ToolNotFound, match="MFT only"):
        runner.path("mst")


def test_missing_common_tool_names_package():
    runner = Runner("mft", which=which_from("mlxconfig"))
    with pytest.raises(ToolNotFound, match="lspci not found on PATH: it is provided by pciutils"):
        runner.run("lspci", ["-D"])


def test_failure_carries_tool_words():
    out = "\nDevice #1:\n-E- Failed to open the device\n"
    runner = Runner("mstflint", execute=Recorder((3, out, "")), which=which_from("mstconfig"))
    with pytest.raises(ToolFailed) as err:
        runner.run("config", ["-d", "0000:18:00.0", "q"])
    assert err.value.rc == 3 and "Failed to open the device" in err.value.msg
    assert err.value.stdout == out


def test_semaphore_retry_then_success():
    busy = (1, "-E- Cannot open /dev/mst/mt4129_pciconf0: semaphore is held by another process\n", "")
    rec = Recorder(busy, busy, (0, "ok", ""))
    sleeps = []
    runner = Runner("mft", execute=rec, which=which_from("mlxconfig", "flint"), sleep=sleeps.append, retry_delay=1)
    assert runner.run("flint", ["-d", "x", "q"]).stdout == "ok"
    assert len(rec.calls) == 3 and sleeps == [1, 2]


def test_semaphore_retry_bounded():
    busy = (1, "-E- semaphore held\n", "")
    rec = Recorder(*[busy] * 10)
    runner = Runner("mft", execute=rec, which=which_from("mlxconfig", "flint"), sleep=lambda s: None,
                    semaphore_retries=3)
    with pytest.raises(ToolFailed, match="semaphore was still held after 3 retries"):
        runner.run("flint", ["-d", "x", "q"])
    assert len(rec.calls) == 4


def test_timeout():
    rec = Recorder(subprocess.TimeoutExpired(["flint"], 5))
    runner = Runner("mft", execute=rec, which=which_from("mlxconfig", "flint"), timeout=5)
    with pytest.raises(ToolTimeout, match="did not finish within 5s"):
        runner.run("flint", ["-d", "x", "q"])


def test_unchecked_returns_result():
    runner = Runner("mft", execute=Recorder((3, "-E- nope\n", "")), which=which_from("mlxconfig"))
    res = runner.run("config", ["q"], check=False)
    assert res.rc == 3 and res.error_lines() == ["nope"]
