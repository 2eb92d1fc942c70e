"""A leaf port's PHY counters (``nvue_info`` ``gather: [phy]``): the parser at its boundaries, fail closed, the port
grammar, the release's path, and the gather's requests on a scripted REST exchange (one per port, 404 = no counters).
Expected values are written by hand. (Against the NVUE emulator: tests/unit/nvue/test_nvue_phy.py.)"""
import json

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _nvue_phy
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue import (
    DEFAULT_GATHER, GATHER, NvueError, RestSwitch, gather)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_cli import CliSwitch
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_phy import (
    PhyError, check_ports, parse_ber, parse_counter, parse_phy, phy_path, port_order)

SWITCH = "switch leaf07"
# Sample B of tests/nvue/spec/README.md (Cumulus Linux 5.12 documentation), as the JSON the module expects.
LANES = [747567424, 215603747, 158456437, 30578923, 121708834, 29244642, 79102523, 96656135]
SAMPLE_B = dict({"time-since-last-clear-min": 324, "phy-received-bits": 15561574400000000, "symbol-errors": 0,
                 "effective-errors": 0, "raw-ber": "1E-7", "symbol-ber": "15E-255", "effective-ber": "15E-255",
                 "raw-ber-lane0": "3E-6", "rs-num-corr-err-bin0": 757956054591},
                **{"phy-raw-errors-lane%d" % n: count for n, count in enumerate(LANES)})


def parse(data, port="swp1"):
    return parse_phy(data, switch=SWITCH, port=port)


def with_(**changes):
    out = dict(SAMPLE_B)
    for key, value in changes.items():
        key = key.replace("_", "-")
        if value is None:
            out.pop(key)
        else:
            out[key] = value
    return out


def test_the_documented_sample_reads_as_its_numbers():
    assert parse(SAMPLE_B) == {
        "received_bits": 15561574400000000, "effective_errors": 0, "symbol_errors": 0,
        "raw_errors": 1478918665,   # 747567424 + 215603747 + ... + 96656135, added by hand
        "raw_errors_lanes": [747567424, 215603747, 158456437, 30578923, 121708834, 29244642, 79102523, 96656135],
        "raw_ber": 1e-07, "effective_ber": 0.0, "symbol_ber": 0.0, "minutes_since_clear": 324.0}


@pytest.mark.parametrize("text, value", [
    ("15E-255", 0.0),        # the switch's "no error": 0.0, never 1.5e-254
    (1.5e-254, 0.0),         # the same as a JSON number
    ("1E-7", 1e-07), ("3E-6", 3e-06), ("2.5e-12", 2.5e-12), ("1E+0", 1.0), ("0", 0.0), (0, 0.0), ("1", 1.0),
    (1e-9, 1e-09), ("9E-8", 9e-08), ("1E-7 ", 1e-07),   # blanks around a value are not part of it
])
def test_rates(text, value):
    assert parse_ber(text, switch=SWITCH, port="swp3", field="raw-ber") == value


@pytest.mark.parametrize("text", ["1.2x", "", "E-7", "1E", "1E-", "-1E-7", "1E2", "2", "1,5E-7", "0x10",
                                  "nan", "inf", "1E999", True, None, [], {}, -1e-7, float("nan"), "15E-255a"])
def test_a_rate_it_does_not_recognise_names_switch_port_field_and_value(text):
    with pytest.raises(PhyError) as err:
        parse_ber(text, switch=SWITCH, port="swp3", field="effective-ber")
    assert err.value.msg.startswith("switch leaf07 port swp3: phy field effective-ber is %r: not a bit error rate"
                                    % (text,)), err.value.msg
    assert err.value.parameter == "effective-ber" and err.value.device == "swp3"


@pytest.mark.parametrize("value, number", [(0, 0), (2 ** 64 - 1, 18446744073709551615),
                                           ("18446744073709551615", 18446744073709551615), ("395", 395)])
def test_counters_up_to_a_64_bit_counter(value, number):
    assert parse_counter(value, switch=SWITCH, port="swp1", field="phy-received-bits") == number


@pytest.mark.parametrize("value", [2 ** 64, "18446744073709551616", -1, "-1", 1.0, 1.5, "1.0", "1e3", True, False,
                                   None, "", "12 34", "0x10", [], {}])
def test_a_counter_it_does_not_recognise_is_an_error_not_zero(value):
    with pytest.raises(PhyError) as err:
        parse_counter(value, switch=SWITCH, port="swp1", field="effective-errors")
    assert err.value.msg == ("switch leaf07 port swp1: phy field effective-errors is %r: not a counter (an integer "
                             "from 0 to 2**64-1)" % (value,))


def test_a_bad_value_in_a_whole_answer_names_its_field():
    with pytest.raises(PhyError, match=r"^switch leaf07 port swp9: phy field raw-ber is '1\.2x': not a bit error "):
        parse(with_(raw_ber="1.2x"), port="swp9")
    with pytest.raises(PhyError, match=r"port swp1: phy field phy-raw-errors-lane3 is 'many': not a counter"):
        parse(with_(phy_raw_errors_lane3="many"))
    with pytest.raises(PhyError, match=r"phy field time-since-last-clear-min is '-3': not a number of minutes"):
        parse(with_(time_since_last_clear_min="-3"))


@pytest.mark.parametrize("field", ["phy-received-bits", "effective-errors", "symbol-errors", "raw-ber",
                                   "effective-ber", "symbol-ber", "time-since-last-clear-min"])
def test_a_missing_field_is_an_error_naming_it(field):
    data = dict(SAMPLE_B)
    del data[field]
    with pytest.raises(PhyError) as err:
        parse(data)
    assert err.value.msg.startswith("switch leaf07 port swp1: the phy answer has no %s (it has " % field)
    assert err.value.parameter == field


def test_lanes_must_be_there_from_lane_0_without_a_gap():
    no_lanes = {k: v for k, v in SAMPLE_B.items() if not k.startswith("phy-raw-errors-lane")}
    with pytest.raises(PhyError, match=r"has no phy-raw-errors-laneN field \(lane 0 at least\)"):
        parse(no_lanes)
    with pytest.raises(PhyError, match=r"has raw-error lanes 0, 1, 3, 4, 5, 6, 7: not lanes 0 to N \(at most 8\), "
                                       r"lane 2 is missing"):
        parse(with_(phy_raw_errors_lane2=None))
    with pytest.raises(PhyError, match=r"lane 8 is too many"):
        parse(dict(SAMPLE_B, **{"phy-raw-errors-lane8": 0}))
    four = {k: v for k, v in SAMPLE_B.items() if k[-1] not in "4567" or not k.startswith("phy-raw-errors-lane")}
    assert parse(four)["raw_errors_lanes"] == [747567424, 215603747, 158456437, 30578923]   # a 4-lane port
    assert parse(four)["raw_errors"] == 1152206531


def test_counters_as_digit_strings_and_minutes_as_text():
    found = parse(with_(phy_received_bits="6214400000000", effective_errors="12", time_since_last_clear_min="1"))
    assert (found["received_bits"], found["effective_errors"], found["minutes_since_clear"]) == (6214400000000, 12, 1.0)


@pytest.mark.parametrize("answer", [None, {}])
def test_no_answer_or_an_empty_one_is_no_counters(answer):
    assert parse(answer) is None


@pytest.mark.parametrize("answer", [[], "phy-detail", 3, [SAMPLE_B]])
def test_an_answer_that_is_not_an_object_is_an_error(answer):
    with pytest.raises(PhyError, match=r"^switch leaf07 port swp1: the phy answer is .*: not an object of counters"):
        parse(answer)


@pytest.mark.parametrize("ports, wanted", [(["swp1"], ["swp1"]), (["swp2", "swp1s0", "swp2"], ["swp2", "swp1s0"]),
                                           (["swp999", "swp32s3"], ["swp999", "swp32s3"]), (None, None)])
def test_the_port_grammar_takes(ports, wanted):
    assert check_ports(ports, SWITCH) == wanted


@pytest.mark.parametrize("port", ["swp1;reboot", "../x", "", " swp1", "swp1 ", "swp0", "swp01", "swp1000", "swp1s10",
                                  "eth0", "SWP1", "swp1/link", "swp١", "swp1\n", 1, None, "swp1s"])
def test_the_port_grammar_refuses_naming_switch_parameter_and_what_is_allowed(port):
    with pytest.raises(PhyError) as err:
        check_ports(["swp2", port], SWITCH)
    assert err.value.msg == ("switch leaf07: ports: %r is not a switch port (allowed: swpN (N 1-999) or a breakout "
                             "port swpNsM (M 0-9), e.g. swp1, swp32s3)" % (port,))
    assert err.value.parameter == "ports"


@pytest.mark.parametrize("ports", [[], "swp1", {"swp1": 1}])
def test_ports_must_be_a_list_of_names(ports):
    with pytest.raises(PhyError, match=r"^switch leaf07: ports (is empty|must be a list)"):
        check_ports(ports, SWITCH)


@pytest.mark.parametrize("release, path", [("5.10.0", ("link", "phy-detail")), ("5.14.2", ("link", "phy-detail")),
                                           ("5.9.1", ("link", "phy-detail")), ("5.15.0", ("link", "phy", "health")),
                                           ("5.16.1", ("link", "phy", "health"))])
def test_the_release_says_where_the_counters_are(release, path):
    assert phy_path(release, SWITCH) == path


@pytest.mark.parametrize("release", [None, "", "cumulus", "5", "5.x"])
def test_an_unreadable_release_is_not_guessed(release):
    with pytest.raises(PhyError, match=r"^switch leaf07: the running release .* cannot tell where its PHY counters"):
        phy_path(release, SWITCH)


def test_ports_in_the_switch_s_order():
    assert sorted(["swp10", "swp2", "swp1s1", "swp1", "swp1s0"], key=port_order) == [
        "swp1", "swp1s0", "swp1s1", "swp2", "swp10"]


# ---------------------------------------------------------------- the gather, on a scripted REST exchange

class Exchange:
    """A scripted NVUE REST API: ``answers`` maps a path to (status, body); every request is recorded."""

    def __init__(self, release="5.12.0", ports=("swp1", "swp2", "swp10"), answers=None):
        self.sent = []
        self.answers = {"/system/version": (200, {"product-release": release}),
                        "/interface": (200, {p: {"type": "swp", "link": {}} for p in ports} | {
                            "eth0": {"type": "eth"}, "lo": {"type": "loopback"}})}
        self.answers.update(answers or {})

    def __call__(self, method, path, params, body):
        self.sent.append((method, path, tuple(sorted((params or {}).items()))))
        return self.answers.get(path, (404, {"message": "The requested object %s does not exist" % path}))


def switch_of(exchange):
    return RestSwitch(exchange, name=SWITCH)


def test_one_request_per_port_at_the_release_s_path_404_is_no_counters_with_its_reason():
    exchange = Exchange(answers={"/interface/swp1/link/phy-detail": (200, SAMPLE_B),
                                 "/interface/swp10/link/phy-detail": (200, {})})
    out = gather(switch_of(exchange), ["phy"])
    assert list(out) == ["phy", "phy_unavailable"]
    assert out["phy"]["swp1"]["raw_errors"] == 1478918665 and out["phy"]["swp2"] is None
    assert out["phy"]["swp10"] is None
    assert list(out["phy"]) == ["swp1", "swp2", "swp10"]
    reason = ("the switch answered that it has no link phy-detail for this port (Cumulus Linux 5.12.0): a Spectrum-1 "
              "switch has none")
    assert out["phy_unavailable"] == {"swp2": reason, "swp10": reason}
    operational = (("rev", "operational"),)
    assert exchange.sent == [("GET", "/system/version", operational), ("GET", "/interface", operational),
                             ("GET", "/interface/swp1/link/phy-detail", operational),
                             ("GET", "/interface/swp2/link/phy-detail", operational),
                             ("GET", "/interface/swp10/link/phy-detail", operational)]


def test_from_5_15_the_counters_are_link_phy_health():
    exchange = Exchange(release="5.16.0", answers={"/interface/swp2/link/phy/health": (200, SAMPLE_B)})
    out = gather(switch_of(exchange), ["phy"], ports=["swp2"])
    assert out["phy"] == {"swp2": parse(SAMPLE_B, port="swp2")} and out["phy_unavailable"] == {}
    assert exchange.sent[-1] == ("GET", "/interface/swp2/link/phy/health", (("rev", "operational"),))


def test_before_5_10_the_reason_names_the_release():
    out = gather(switch_of(Exchange(release="5.9.1")), ["phy"], ports=["swp1"])
    assert out == {"phy": {"swp1": None}, "phy_unavailable": {"swp1": (
        "Cumulus Linux 5.9.1 has no link phy-detail (NVUE shows PHY counters from 5.10): the switch answered that it "
        "has none")}}


def test_system_and_interfaces_gathered_too_are_read_once():
    exchange = Exchange(answers={"/interface/swp2/link/phy-detail": (200, SAMPLE_B)})
    out = gather(switch_of(exchange), ["system", "interfaces", "phy"], ports=["swp2"])
    assert out["system"]["release"] == "5.12.0" and sorted(out["interfaces"]) == ["swp1", "swp10", "swp2"]
    assert [path for _m, path, _q in exchange.sent] == ["/system/version", "/interface",
                                                        "/interface/swp2/link/phy-detail"]


def test_a_bad_answer_fails_the_gather_naming_switch_port_field_and_value():
    exchange = Exchange(answers={"/interface/swp1/link/phy-detail": (200, with_(effective_ber="1.2x"))})
    with pytest.raises(PhyError) as err:
        gather(switch_of(exchange), ["phy"])
    assert err.value.msg.startswith("switch leaf07 port swp1: phy field effective-ber is '1.2x': not a bit error rate")


def test_an_http_error_other_than_404_fails():
    exchange = Exchange(answers={"/interface/swp1/link/phy-detail": (500, {"message": "switchd is not running"})})
    with pytest.raises(NvueError, match=r"^switch leaf07 GET /nvue_v1/interface/swp1/link/phy-detail\?rev=operational:"
                                        r" answered HTTP 500 \(the switch says: switchd is not running\)"):
        gather(switch_of(exchange), ["phy"])


def test_bad_ports_are_refused_before_any_request():
    exchange = Exchange()
    with pytest.raises(PhyError, match=r"^switch leaf07: ports: 'swp1;reboot' is not a switch port"):
        gather(switch_of(exchange), ["phy"], ports=["swp1;reboot"])
    with pytest.raises(NvueError, match=r"^switch leaf07: ports names the ports whose PHY counters gather phy reads; "
                                        r"gather has no phy \(system\)"):
        gather(switch_of(exchange), ["system"], ports=["swp1"])
    assert exchange.sent == []


def test_a_port_the_switch_does_not_have_is_named_with_the_ones_it_has():
    exchange = Exchange()
    with pytest.raises(NvueError) as err:
        gather(switch_of(exchange), ["phy"], ports=["swp1", "swp33"])
    assert err.value.msg == ("switch leaf07: ports: swp33 is not a swp port of the switch (its swp ports: swp1, swp2, "
                             "swp10)")
    assert err.value.parameter == "ports"
    assert [path for _m, path, _q in exchange.sent] == ["/system/version", "/interface"]   # no port was read


def test_an_unreadable_release_fails_before_the_ports_are_read():
    exchange = Exchange(answers={"/system/version": (200, {"kernel": "6.1.0"})})
    with pytest.raises(PhyError, match=r"the running release None cannot tell where its PHY counters are"):
        gather(switch_of(exchange), ["phy"])
    assert [path for _m, path, _q in exchange.sent] == ["/system/version", "/interface"]


def test_over_the_cli_each_port_is_one_argv_and_does_not_exist_is_no_counters():
    runs = []

    def run(command):
        runs.append(command)
        words = command[1:]
        if words[:2] == ["show", "system"]:
            return 0, json.dumps({"product-release": "5.11.0"}), ""
        if words[:2] == ["show", "interface"] and words[2] == "-o":
            return 0, json.dumps({"swp1": {"type": "swp"}, "swp2": {"type": "swp"}}), ""
        if words[2] == "swp1":
            return 0, json.dumps(SAMPLE_B), ""
        return 1, "", "Error: The requested object /interface/swp2/link/phy-detail does not exist in rev operational\n"
    out = gather(CliSwitch(run, name=SWITCH), ["phy"])
    assert out["phy"]["swp1"] == parse(SAMPLE_B) and out["phy"]["swp2"] is None and list(out["phy_unavailable"]) == [
        "swp2"]
    assert runs[2:] == [["nv", "show", "interface", "swp1", "link", "phy-detail", "-o", "json", "--operational"],
                        ["nv", "show", "interface", "swp2", "link", "phy-detail", "-o", "json", "--operational"]]
    assert all(isinstance(r, list) for r in runs)   # argv lists: nothing reaches a shell


def test_phy_is_not_read_unless_asked():
    assert "phy" in GATHER and "phy" not in DEFAULT_GATHER
    assert _nvue_phy.SENTINEL == "15E-255"
