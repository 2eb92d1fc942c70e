"""What the parser tests share: the real captures in tests/fixtures/real and how to cut them.

Every capture file is either checked by a parser test (``@check(name)`` in its test_<tool>.py: real values
asserted) or listed in ``NOT_OURS`` with the reason; test_common.py's ``test_every_capture_is_accounted_for``
keeps it that way.
"""
import os

import pytest

from _paths import REAL


def capture(name):
    """A capture's text without its ``# source:`` / ``# note:`` header."""
    lines = (REAL / name).read_text(encoding="utf-8").split("\n")
    assert lines[0].startswith("# source:") and lines[1].startswith("# note:"), name
    return "\n".join(lines[2:])


def section(text, start, stop=None, nth=1):
    """The lines after the ``nth`` line containing ``start``, up to (not including) the next line
    containing ``stop`` (or the end). Cuts one command's output out of a multi-command capture."""
    lines = text.split("\n")
    hits = [i for i, line in enumerate(lines) if start in line]
    assert len(hits) >= nth, "%r not found %d times" % (start, nth)
    begin = hits[nth - 1] + 1
    end = len(lines)
    if stop is not None:
        end = next((i for i in range(begin, len(lines)) if stop in lines[i]), len(lines))
    return "\n".join(lines[begin:end])


def checks():
    """A new ``(CHECKS, check)`` pair for one test file: ``@check(name)`` registers a function asserting real
    values read from the capture ``name`` in the dict ``CHECKS``."""
    found = {}

    def check(name):
        def register(func):
            found[name] = func
            return func
        return register
    return found, check


# Captures of tools this collection does not parse.
NOT_OURS = {
    "INDEX.md": "the index",
    "ibv_devinfo_azure_h200_cx7vf_1.txt": "ibv_devinfo",
    "ibv_devinfo_cx6dx_cx7_1.txt": "ibv_devinfo",
    "ibv_devinfo_vv_cx4_1.txt": "ibv_devinfo",
    "mlxprivhost_query_bf2_1.txt": "mlxprivhost",
    "rdma_link_old_format_1.txt": "rdma link",
}


def capture_test(found):
    """The test of one file's checks (``found``, the ``CHECKS`` of ``checks()``), each on its capture; call it after
    the last ``@check``: ``test_capture = capture_test(CHECKS)``."""
    @pytest.mark.parametrize("name", sorted(found))
    def test_capture(name):
        found[name](capture(name))
    return test_capture


def parsed_captures():
    """The names of the captures of tools this collection parses (all but ``NOT_OURS``), sorted."""
    return sorted(set(os.listdir(str(REAL))) - set(NOT_OURS))


CX7_DESC = ("NVIDIA ConnectX-7 HHHL Adapter Card; 400GbE (default mode) / NDR IB; Single-port QSFP112; "
            "Port Split Capable; PCIe 5.0 x16 with x16 PCIe extension option; Crypto Disabled; Secure Boot Enabled")
CX7_DUAL_DESC = ("NVIDIA ConnectX-7 HHHL Adapter Card; 200GbE (default mode) / NDR200 IB; Dual-port QSFP112; "
                 "PCIe 5.0 x16 with x16 PCIe extension option; Crypto Disabled; Secure Boot Enabled")


def only(devices):
    assert len(devices) == 1, devices
    return devices[0]
