"""mlxconfig converge: the exact argv run, on real captured output, for each case."""
import json
import re

import pytest

from _paths import REAL
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import (
    InvalidValue, MlnxError, ToolFailed)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mlxconfig import converge, normalize_desired
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner

DEV = "0000:19:00.0"


def cx4lx_query(num_vfs="8", sriov_cur="True(1)", sriov_next="True(1)", device="19:00.0"):
    """Real `mstconfig -e query` of a ConnectX-4 Lx (a Go test template: fill its placeholders)."""
    text = (REAL / "mstconfig_e_query_cx4lx_1.txt").read_text().split("\n", 2)[2]
    text = text.replace("%s\n", "", 1).replace("%d", num_vfs, 2)
    text = text.replace("%s(0)", "False(0)").replace("%s(1)", sriov_cur, 1).replace("%s(1)", sriov_next, 1)
    return text.replace("Device:             19:00.0", "Device:             " + device)


def set_output():
    """Real `mlxconfig set` output (ConnectX-7, MFT 4.30.1): the first set in the capture."""
    text = (REAL / "mlxconfig_set_cx7_1.txt").read_text()
    return text[text.index("Device #1:"):text.index("-I- Please reboot") + 60].rsplit("\n", 1)[0] + "\n"


class FakeTools:
    """Answers each call from a list of (expected argv tail, rc, stdout) and records argv."""

    def __init__(self, *script):
        self.script = list(script)
        self.calls = []

    def __call__(self, argv, env, timeout, data):
        self.calls.append(argv)
        assert self.script, "unexpected call %s" % argv
        expect, rc, out = self.script.pop(0)
        if callable(expect):
            return expect(argv)
        assert argv[1:] == expect, "argv %s != %s" % (argv[1:], expect)
        return rc, out, ""


def runner(tools, family="mstflint"):
    names = {"mstflint": ("mstconfig", "mstflint"), "mft": ("mlxconfig", "flint")}[family]
    return Runner(family, execute=tools, which=lambda n: "/usr/bin/" + n if n in names else None)


def test_no_change_runs_one_query():
    tools = FakeTools((["-d", DEV, "-e", "q"], 0, cx4lx_query()))
    [(dev, res, err)] = converge(runner(tools), [DEV], normalize_desired({"SRIOV_EN": True, "num_of_vfs": 8}))
    assert dev == DEV and err is None and res["changed"] is False and res["set"] == {}
    assert tools.calls == [["/usr/bin/mstconfig", "-d", DEV, "-e", "q"]]
    assert res["current"] == {"SRIOV_EN": "True(1)", "NUM_OF_VFS": "8"}
    # SRIOV_EN is modified (next != default) but not pending; the captured card does have two
    # parameters not named here whose next-boot value differs from the running one.
    assert res["pending_reset"] is True
    assert res["pending"] == {"LEGACY_BOOT_PROTOCOL": {"current": "PXE(1)", "next": "NONE(0)"},
                              "ROCE_CONTROL": {"current": "DEVICE_DEFAULT(0)", "next": "ROCE_ENABLE(2)"}}


def test_change_sets_only_differences_then_rereads():
    tools = FakeTools(
        (["-d", DEV, "-e", "q"], 0, cx4lx_query()),
        (["-d", DEV, "-y", "set", "NUM_OF_VFS=16", "SRIOV_EN=False"], 0, set_output()),
        (["-d", DEV, "-e", "q", "NUM_OF_PF", "NUM_OF_VFS", "SRIOV_EN"], 0,
         cx4lx_query(num_vfs="16", sriov_next="False(0)").replace("8                    16", "8                    8")),
    )
    desired = normalize_desired({"SRIOV_EN": False, "NUM_OF_VFS": 16, "NUM_OF_PF": 2})
    [(dev, res, err)] = converge(runner(tools), [DEV], desired)
    assert err is None, err
    assert res["changed"] and res["set"] == {"NUM_OF_VFS": "16", "SRIOV_EN": "False"}
    assert res["before"] == {"SRIOV_EN": "True(1)", "NUM_OF_VFS": "8", "NUM_OF_PF": "2"}
    assert res["after"] == {"SRIOV_EN": "False(0)", "NUM_OF_VFS": "16", "NUM_OF_PF": "2"}
    assert res["pending_reset"] is True and "SRIOV_EN" in res["pending"]


def test_check_mode_predicts_without_writing():
    tools = FakeTools((["-d", DEV, "-e", "q"], 0, cx4lx_query()))
    [(dev, res, err)] = converge(runner(tools), [DEV], {"SRIOV_EN": False}, check_mode=True)
    assert res["changed"] and res["set"] == {"SRIOV_EN": "False"} and res["after"] == {"SRIOV_EN": "False"}
    assert res["pending"]["SRIOV_EN"] == {"current": "True(1)", "next": "False"}
    assert len(tools.calls) == 1


def test_unknown_parameter_writes_nothing_on_any_device():
    other = "0000:1a:00.0"
    tools = FakeTools(
        (lambda argv: (0, cx4lx_query(device=argv[2]), ""), 0, None),
        (lambda argv: (0, cx4lx_query(device=argv[2]), ""), 0, None),
    )
    with pytest.raises(MlnxError) as err:
        converge(runner(tools), [DEV, other], {"SRIOV_ENABLED": True, "NUM_OF_VFS": 4})
    assert "SRIOV_ENABLED" in str(err.value) and "Did you mean SRIOV_EN" in str(err.value)
    assert all("set" not in argv for argv in tools.calls) and len(tools.calls) == 2


def test_device_that_cannot_be_opened_names_the_tool_words():
    out = "-E- Failed to open the device\n"
    tools = FakeTools((["-d", DEV, "-e", "q"], 3, out))
    with pytest.raises(ToolFailed) as err:
        converge(runner(tools), [DEV], {"SRIOV_EN": True})
    assert err.value.rc == 3 and "Failed to open the device" in err.value.msg and DEV in err.value.msg


def test_rejected_value_lists_what_the_tool_allows():
    show_confs = ("\nList of configurations the device %s may support:\n"
                  "\t\tVPI_SETTINGS:VPI settings\n"
                  "                    LINK_TYPE_P1=<IB|ETH>       Link type\n" % DEV)
    tools = FakeTools(
        (["-d", DEV, "-e", "q"], 0, cx4lx_query()),
        (["-d", DEV, "-y", "set", "INT_LOG_MAX_PAYLOAD_SIZE=HUGE"], 3, "-E- Unknown value HUGE\n"),
        (["-d", DEV, "show_confs"], 0, "    INT_LOG_MAX_PAYLOAD_SIZE=<AUTOMATIC|_4KB|_8KB>  Log max payload\n"),
    )
    [(dev, res, err)] = converge(runner(tools), [DEV], {"INT_LOG_MAX_PAYLOAD_SIZE": "HUGE"})
    assert dev == DEV and res is None and isinstance(err, InvalidValue)
    assert err.allowed == ["AUTOMATIC", "_4KB", "_8KB"] and "INT_LOG_MAX_PAYLOAD_SIZE=HUGE" in err.msg
    del show_confs


def test_mft_reads_json_file():
    params = {"SRIOV_EN": {"read_only": False, "modified": True, "default_value": "False(0)",
                           "current_value": "True(1)", "next_value": "True(1)"},
              "NUM_OF_VFS": {"read_only": False, "modified": False, "default_value": 8,
                             "current_value": 8, "next_value": 8}}
    doc = {"Device #1": {"description": "x", "device": DEV, "device_type": "ConnectX7", "name": "MCX75310AAS-NEA_Ax",
                         "tlv_configuration": params}}

    def answer(argv):
        path = argv[argv.index("-j") + 1]
        with open(path, "w") as stream:
            json.dump(doc, stream, indent="\t", sort_keys=True)
        return 0, "Query output saved to %s successfully\n" % path, ""

    tools = FakeTools((answer, 0, None))
    [(dev, res, err)] = converge(runner(tools, "mft"), [DEV], {"NUM_OF_VFS": 8, "SRIOV_EN": 1})
    assert err is None and not res["changed"] and res["device_type"] == "ConnectX7"
    argv = tools.calls[0]
    assert argv[0] == "/usr/bin/mlxconfig" and argv[1:4] == ["-d", DEV, "-e"] and argv[-1] == "q"
    assert re.search(r"gpufabric-mlxconfig-.*\.json$", argv[argv.index("-j") + 1])


def test_mft_without_json_support_falls_back_to_text():
    usage = "-E- Invalid Configuration argument -j\nUsage: ...\n"
    tools = FakeTools(
        (lambda argv: (5, usage, ""), 0, None),
        (["-d", DEV, "-e", "q"], 0, cx4lx_query()),
    )
    [(dev, res, err)] = converge(runner(tools, "mft"), [DEV], {"NUM_OF_VFS": 8})
    assert err is None and not res["changed"] and len(tools.calls) == 2


def test_unparseable_output_is_a_module_error_not_a_traceback():
    tools = FakeTools((["-d", DEV, "-e", "q"], 0, "something else entirely\n"))
    with pytest.raises(MlnxError) as err:
        converge(runner(tools), [DEV], {"SRIOV_EN": True})
    assert "mlxconfig" in err.value.msg


@pytest.mark.parametrize("family,tool", [("mft", "mlxconfig"), ("mstflint", "mstconfig")])
def test_set_reported_done_but_next_boot_unchanged_is_an_error(sim_host, family, tool):
    """The simulator's set_ignored fault: `set` prints Done! and exits 0, the firmware kept the old
    next-boot value. The re-read after the set is what tells; that device fails naming the value it
    still has, the other device of the same call is configured."""
    host = sim_host("cx6dx-roce")
    host.mlxsim("fault", "add", "set_ignored", "--device", "3b:00.0", "param=SRIOV_EN")
    devices = ["0000:3b:00.0", "0000:d8:00.0"]
    results = converge(Runner(family, timeout=120), devices, normalize_desired({"SRIOV_EN": True, "NUM_OF_VFS": 8}))
    (dev0, res0, err0), (dev1, res1, err1) = results
    assert (dev0, res0) == ("0000:3b:00.0", None) and isinstance(err0, MlnxError)
    assert err0.msg == "0000:3b:00.0: %s reported success but next-boot values are still SRIOV_EN=False(0)" % tool
    assert err0.device == "0000:3b:00.0"
    assert dev1 == "0000:d8:00.0" and err1 is None
    assert res1["set"] == {"SRIOV_EN": "True", "NUM_OF_VFS": "8"} and res1["after"] == {"SRIOV_EN": "True(1)",
                                                                                        "NUM_OF_VFS": "8"}
    # both devices were written once and read back
    sets = [c["argv"] for c in host.calls(tool) if "set" in c["argv"]]
    assert sorted(argv[2] for argv in sets) == devices


def test_reread_with_the_old_value_after_a_real_set_output_is_an_error():
    """The real `set` output (rc 0), then a re-read still showing the old next-boot value."""
    tools = FakeTools(
        (["-d", DEV, "-e", "q"], 0, cx4lx_query()),
        (["-d", DEV, "-y", "set", "NUM_OF_VFS=16"], 0, set_output()),
        (["-d", DEV, "-e", "q", "NUM_OF_VFS"], 0, cx4lx_query()),
    )
    [(dev, res, err)] = converge(runner(tools), [DEV], normalize_desired({"NUM_OF_VFS": 16}))
    assert res is None and isinstance(err, MlnxError)
    assert str(err) == "%s: mstconfig reported success but next-boot values are still NUM_OF_VFS=8" % DEV
    assert tools.script == []
