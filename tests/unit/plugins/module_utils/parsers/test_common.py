"""What every parser shares (_parsers/__init__.py and common.py): the PARSERS registry, ParseError naming
the tool and line, text/bytes/lines input, progress redraws, and random or cut text raising only ParseError.
Also: every real capture is read by some parser test or listed in NOT_OURS.
"""
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _paths import REAL

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import PARSERS, ParseError, parse

from . import (
    test_ethtool,
    test_flint,
    test_ibdev2netdev,
    test_ibstat,
    test_lspci,
    test_mlnx_qos,
    test_mlxconfig,
    test_mlxfwmanager,
    test_mlxfwreset,
    test_mlxlink,
    test_mst,
    test_nccl_tests,
    test_ofed_info,
    test_perftest,
)
from ._captures import NOT_OURS, capture, only, parsed_captures

PARSER_TESTS = (test_ethtool, test_flint, test_ibdev2netdev, test_ibstat, test_lspci, test_mlnx_qos,
                test_mlxconfig, test_mlxfwmanager, test_mlxfwreset, test_mlxlink, test_mst, test_nccl_tests,
                test_ofed_info, test_perftest)


def test_every_capture_is_accounted_for():
    present = set(os.listdir(str(REAL)))
    checked = set().union(*(module.CHECKS for module in PARSER_TESTS))
    assert present == checked | set(NOT_OURS), (
        "unchecked: %s; missing: %s" % (sorted(present - checked - set(NOT_OURS)),
                                        sorted((checked | set(NOT_OURS)) - present)))


def test_progress_redraws_are_flattened():
    text = ("Device #1: Updating FW ...\nWriting Boot image component -   0%\b\b\b\b 10%\b\b\b\b 99%\r"
            "Writing Boot image component -   OK\nDone\n")
    dev = only(parse("mlxfwmanager", "Querying Mellanox devices firmware ...\n" + text))
    assert dev["update"]["stages"] == [{"stage": "Writing Boot image component", "status": "OK"}]


# ---------------------------------------------------------------- registry and errors

GARBAGE = "The quick brown fox\njumps over: the lazy dog\n"


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_garbage_names_tool_and_line(tool):
    with pytest.raises(ParseError) as err:
        parse(tool, GARBAGE)
    assert err.value.tool == tool
    assert str(err.value).startswith(tool + ":")
    assert isinstance(err.value, ValueError)
    if not tool.endswith(("_json", "_xml")):
        assert "The quick brown fox" in str(err.value)


def test_unknown_tool():
    with pytest.raises(ParseError, match=r"^ibv_devinfo: unknown tool; known tools: .*mlxconfig"):
        parse("ibv_devinfo", "hca_id: mlx5_0")


def test_not_text():
    with pytest.raises(ParseError, match="expected text or a list of lines, got int"):
        parse("mlxconfig", 42)
    with pytest.raises(ParseError, match="list holding NoneType"):
        parse("lspci", ["00:00.0 Host bridge: x", None])


def test_bytes_and_crlf():
    text = capture("mst_status_cx4_1.txt").replace("\n", "\r\n").encode()
    assert parse("mst_status", text)["devices"][0]["pci"] == "0000:06:00.0"


def test_overlong_numbers_are_not_read_as_ints():
    """Python limits int() of long digit strings; such text is simply not recognised."""
    huge = "9" * 5000
    for tool, text in (("mlnx_qos", "Cable len: %s\n" % huge), ("mlxconfig", "Device #%s:\n" % huge),
                       ("ibdev2netdev", "mlx5_0 port %s ==> ib0 (Up)\n" % huge)):
        with pytest.raises(ParseError):
            parse(tool, text)


# ---------------------------------------------------------------- random text

def _all_capture_lines():
    found = []
    for name in parsed_captures():
        found.extend(capture(name).split("\n"))
    return found


CAPTURE_LINES = _all_capture_lines()
random_text = st.one_of(
    st.text(),
    st.lists(st.one_of(st.sampled_from(CAPTURE_LINES), st.text(max_size=30)), max_size=40).map("\n".join),
    st.lists(st.sampled_from(CAPTURE_LINES), max_size=60).map("\n".join),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool=st.sampled_from(sorted(PARSERS)), text=random_text)
def test_random_text_raises_only_parse_error(tool, text):
    try:
        parse(tool, text)
    except ParseError:
        pass


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(parsed_captures()), data=st.data())
def test_cut_and_shuffled_captures_raise_only_parse_error(name, data):
    lines = capture(name).split("\n")
    start = data.draw(st.integers(0, len(lines)))
    end = data.draw(st.integers(start, len(lines)))
    picked = data.draw(st.permutations(lines[start:end])) if data.draw(st.booleans()) else lines[start:end]
    for tool in PARSERS:
        try:
            parse(tool, picked)
        except ParseError:
            pass
