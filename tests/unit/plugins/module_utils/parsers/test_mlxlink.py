"""mlxlink -c (_parsers/mlxlink.py): the Physical Counters and BER Info section of the real BlueField-3 capture, the
NDR capture that has no such section, and every value the gate must not read as "no errors"."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import ParseError, parse
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.mlxlink import ber_value

from ._captures import capture_test, checks

CHECKS, check = checks()


@check("mlxlink_bf3_1.txt")
def _mlxlink_bf3(text):
    assert parse("mlxlink_counters", text) == {
        "minutes_since_clear": 25074.8, "effective_errors": 0, "effective_ber": 0.0, "raw_errors_lanes": [0, 0, 0, 0],
        "raw_errors": 0, "link_down": 0, "link_error_recovery": 0, "raw_ber": 0.0}


@check("mlxlink_cx7_ndr_1.txt")
def _mlxlink_cx7_ndr(text):
    # run without -c: Operational and Supported Info only - no counters is an error, never zero errors
    with pytest.raises(ParseError, match="no 'Physical Counters and BER Info' section .* found; first unrecognised"):
        parse("mlxlink_counters", text)


test_capture = capture_test(CHECKS)

SECTION = """
Physical Counters and BER Info
------------------------------
Time Since Last Clear [Min]        : 12.5
Effective Physical Errors          : {effective}
Effective Physical BER             : {effective_ber}
Raw Physical Errors Per Lane       : {lanes}
Link Down Counter                  : {down}
Link Error Recovery Counter        : 0
Raw Physical BER                   : {raw_ber}

Tool Information
----------------
Firmware Version                   : 28.43.1014
"""


def counters(effective="0", effective_ber="15E-255", lanes="0,0,0,0", down="0", raw_ber="15E-255"):
    return SECTION.format(effective=effective, effective_ber=effective_ber, lanes=lanes, down=down, raw_ber=raw_ber)


def test_lanes_are_summed_and_the_next_section_is_not_read():
    got = parse("mstlink_counters", counters(effective="3", lanes="100,0,7,18446744073709551615", down="2",
                                             raw_ber="3E-9", effective_ber="1E-15"))
    assert got["raw_errors_lanes"] == [100, 0, 7, 18446744073709551615]
    assert got["raw_errors"] == 107 + 18446744073709551615
    assert (got["effective_errors"], got["link_down"], got["raw_ber"], got["effective_ber"]) == (3, 2, 3e-09, 1e-15)
    assert got["minutes_since_clear"] == 12.5 and "Firmware Version" not in got


@pytest.mark.parametrize("text,value", [("15E-255", 0.0), ("1E-7", 1e-07), ("3E-12", 3e-12), ("2.5E-14", 2.5e-14),
                                        ("15E-254", 15e-254), ("1E+0", 1.0)])
def test_a_ber_as_mlxlink_prints_it(text, value):
    assert ber_value(text) == value


@pytest.mark.parametrize("text", ["", "N/A", "1.2x", "E-7", "1e-7", "15E-2555", "-1E-7", "0x10"])
def test_what_is_not_a_ber(text):
    assert ber_value(text) is None


@pytest.mark.parametrize("change,words", [
    ({"effective": "N/A"}, "Effective Physical Errors: 'N/A' is not a count"),
    ({"effective": "-1"}, "Effective Physical Errors: '-1' is not a count"),
    ({"lanes": "0,0,x,0"}, "Raw Physical Errors Per Lane: '0,0,x,0' is not a comma list of counts"),
    ({"lanes": ""}, "Raw Physical Errors Per Lane: '' is not a comma list of counts"),
    ({"down": "1.5"}, "Link Down Counter: '1.5' is not a count"),
    ({"raw_ber": "high"}, "Raw Physical BER: 'high' is not a BER"),
])
def test_a_value_it_does_not_know_is_an_error_naming_it(change, words):
    with pytest.raises(ParseError) as err:
        parse("mlxlink_counters", counters(**change))
    assert err.value.tool == "mlxlink_counters" and words in str(err.value)


def test_a_missing_counter_is_an_error():
    text = counters().replace("Effective Physical Errors          : 0\n", "")
    with pytest.raises(ParseError, match="has no 'Effective Physical Errors' row"):
        parse("mlxlink_counters", text)
