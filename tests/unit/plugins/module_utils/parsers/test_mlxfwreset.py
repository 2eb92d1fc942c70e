"""mlxfwreset / mstfwreset query and reset (_parsers/mlxfwreset.py): the real reset capture and text built
from the tool's printf format."""
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse

from ._captures import capture_test, checks, section

CHECKS, check = checks()


@check("mlxfwreset_reset_cx7_1.txt")
def _mlxfwreset_reset_cx7(text):
    reset = parse("mlxfwreset_reset", section(text, "reset -y", "sh-5.1#"))
    assert reset == {
        "device": "/dev/mst/mt4129_pciconf0", "level": 3, "ok": True, "errors": [],
        "steps": [{"step": "Sending Reset Command To Fw", "status": "Done"},
                  {"step": "Stopping Driver", "status": "Done"},
                  {"step": "Resetting PCI", "status": "Done"},
                  {"step": "Starting Driver", "status": "Done"},
                  {"step": "Restarting MST", "status": "Done"}],
    }


@check("mlxfwreset_query_bf3_1.txt")
def _mlxfwreset_query_bf3(text):
    query = parse("mlxfwreset", text)
    assert [(o["level"], o["supported"], o["default"]) for o in query["levels"]] == [
        (0, True, True), (1, False, False), (3, True, False), (4, True, False)]
    assert query["levels"][1]["description"] == 'Only ARM side will not remain up ("Immediate reset").'
    assert [(o["level"], o["supported"], o["default"]) for o in query["types"]] == [
        (0, True, True), (1, False, False), (2, False, False), (3, False, False), (4, False, False)]
    # "Not supported" with a lower-case s, and the default on the driver's row
    assert query["sync"] == [{"level": 0, "description": "Tool is the owner", "supported": False, "default": False},
                             {"level": 1, "description": "Driver is the owner", "supported": True, "default": True}]
    assert query["errors"] == []
    # the same text with the trailing spaces the tool's %-14s leaves (the capture lost them)
    padded = "\n".join(ln + " " if ln.endswith("-Not Supported") or ln.endswith("-Not supported") else ln
                       for ln in text.split("\n"))
    assert parse("mstfwreset", padded) == query


test_capture = capture_test(CHECKS)


def _reset_row(level, desc, status, default=False):
    return "%d: %-62s-%-14s%s" % (level, desc, status, "(default)" if default else "")


def test_mlxfwreset_query_from_printf_format():
    text = "\n".join([
        "Reset-levels:",
        _reset_row(0, 'Driver, PCI link, network link will remain up ("live-Patch")', "Supported", True),
        _reset_row(1, 'Only ARM side will not remain up ("Immediate reset").', "Not Supported"),
        _reset_row(3, "Driver restart and PCI reset", "Supported"),
        _reset_row(4, "Warm Reboot", "Supported"),
        "",
        "Reset-types (relevant only for reset-levels 1,3,4):",
        _reset_row(0, "Full chip reset", "Supported", True),
        _reset_row(1, "Phy-less reset (keep network port active during reset)", "Not Supported"),
        "",
        "Reset-sync (relevant only for reset-level 3):",
        _reset_row(0, "Tool is the owner", "Supported", True),
        _reset_row(1, "Driver is the owner", "Not supported"),
        "",
    ])
    result = parse("mstfwreset", text)
    assert [(o["level"], o["supported"], o["default"]) for o in result["levels"]] == [
        (0, True, True), (1, False, False), (3, True, False), (4, True, False)]
    assert result["levels"][0]["description"] == 'Driver, PCI link, network link will remain up ("live-Patch")'
    assert result["types"][1] == {"level": 1, "description": "Phy-less reset (keep network port active during reset)",
                                  "supported": False, "default": False}
    assert result["sync"] == [{"level": 0, "description": "Tool is the owner", "supported": True, "default": True},
                              {"level": 1, "description": "Driver is the owner", "supported": False,
                               "default": False}]
    assert result["errors"] == []


def test_mlxfwreset_reset_failure():
    text = ("The reset level for device, 0000:05:00.0 is:\n\n3: Driver restart and PCI reset\n"
            "Continue with reset?[y/N] y\n-I- Sending Reset Command To Fw             -Done\n"
            "-I- Stopping Driver                         -Failed\n-E- Failed to stop the driver\n")
    result = parse("mlxfwreset_reset", text)
    assert result["level"] == 3 and result["device"] == "0000:05:00.0"
    assert result["ok"] is False and result["errors"] == ["Failed to stop the driver"]
    assert result["steps"][1] == {"step": "Stopping Driver", "status": "Failed"}
