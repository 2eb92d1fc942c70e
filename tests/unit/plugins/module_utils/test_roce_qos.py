"""roce_qos core: input checks, the pure plan and commands, and converge on a fake host (a temporary sysfs/configfs
root, fake mlnx_qos / cma_roce_tos / ibdev2netdev answering from the real captures, every argv and write recorded)."""
import collections
import re
import string
import threading

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from _paths import REAL
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _roce_qos as rq
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import (
    DeviceNotFound, InvalidValue, MlnxError, Refused, ToolNotFound)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.mlnx_qos import parse_mlnx_qos
from ansible_collections.gpufabric.mlnx.plugins.modules import roce_qos as roce_qos_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _roce_qos_script as qs
from unit.plugins.module_utils.fake_roce_qos import (
    DEFAULT_PRIO_TC, Port, QosHost, compliant_port, render_qos)

A, B = "enp24s0np0", "enp41s0np0"
ALL = dict(interfaces=[A])


def section(name, start, stop):
    lines = (REAL / name).read_text().split("\n")
    begin = [i for i, line in enumerate(lines) if line.rstrip().endswith(start)][0] + 1
    end = next((i for i in range(begin, len(lines)) if stop in lines[i]), len(lines))
    return "\n".join(lines[begin:end])


# ---------------------------------------------------------------- the parser on both real captures

def test_parser_on_the_pcp_capture():
    text = section("mlnx_qos_pcp_and_show_gids_1.txt", "# mlnx_qos -i ens6", "root@")
    state = rq.qos_state(parse_mlnx_qos(text))
    assert state == {"trust": "pcp", "pfc": [0] * 8, "prio_tc": list(DEFAULT_PRIO_TC), "tsa": ["vendor"] * 8,
                     "tc_bw": [0] * 8}
    dscp = parse_mlnx_qos(section("mlnx_qos_pcp_and_show_gids_1.txt", "# mlnx_qos -i ens6 --trust dscp", "root@"))
    assert dscp["trust"] == "dscp" and dscp["dscp2prio"][26] == 3 and dscp["dscp2prio"][48] == 6
    assert dscp["buffer_sizes"][0] == 524160 and dscp["pfc"]["buffer"] == [0] * 8


def test_parser_on_the_trust_pfc_capture_without_buffer_rows():
    text = section("mlnx_qos_trust_pfc_cma_roce_tos_1.txt", "+ mlnx_qos -i eth4 --pfc 0,0,0,1,0,0,0,0", "\x00")
    parsed = parse_mlnx_qos(text)
    assert parsed["buffer_sizes"] is None and parsed["pfc"]["buffer"] is None and parsed["cable_len"] == 7
    assert rq.qos_state(parsed)["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert rq.qos_state(parsed)["trust"] == "dscp"


def test_rendered_output_is_the_capture_when_nothing_is_edited():
    text = section("mlnx_qos_pcp_and_show_gids_1.txt", "# mlnx_qos -i ens6", "root@")
    assert render_qos() == text + "\n"
    dscp = section("mlnx_qos_pcp_and_show_gids_1.txt", "# mlnx_qos -i ens6 --trust dscp", "root@")
    assert render_qos("dscp") == dscp + "\n"


@pytest.mark.parametrize("text, value", [("Global tclass=106", 106), ("Global tclass=106\n", 106), ("106", 106),
                                         ("", None), ("\n", None), ("Global tclass=0", 0)])
def test_traffic_class_both_forms(text, value):
    assert rq.parse_traffic_class(text) == value


# ---------------------------------------------------------------- desired state

def test_defaults():
    ifaces, desired = rq.desired_state({"interfaces": [A, A, B]})
    assert ifaces == [A, B]
    assert desired == {"trust": "dscp", "pfc": [0, 0, 0, 1, 0, 0, 0, 0], "ecn_np": {3: 1}, "ecn_rp": {3: 1},
                       "cnp_dscp": 48, "cnp_802p_prio": 6, "cma_roce_tos": 106, "traffic_class": 106}


def test_null_leaves_a_setting_alone_and_ecn_follows_pfc():
    _i, desired = rq.desired_state({"interfaces": [A], "pfc_priorities": [3, 4], "cma_roce_tos": None,
                                    "traffic_class": None, "trust": None})
    assert "cma_roce_tos" not in desired and "traffic_class" not in desired and "trust" not in desired
    assert desired["ecn_np"] == {3: 1, 4: 1}


BAD = {
    "pfc priority 8": ({"pfc_priorities": [3, 8]}, "pfc_priorities[1]", "0-7"),
    "pfc priority -1": ({"pfc_priorities": [-1]}, "pfc_priorities[0]", "0-7"),
    "ecn priority word": ({"ecn_priorities": ["three"]}, "ecn_priorities[0]", "0-7"),
    "cnp dscp 64": ({"cnp_dscp": 64}, "cnp_dscp", "0-63"),
    "cnp prio 9": ({"cnp_802p_prio": 9}, "cnp_802p_prio", "0-7"),
    "tos 256": ({"cma_roce_tos": 256}, "cma_roce_tos", "0-255"),
    "traffic class bool": ({"traffic_class": True}, "traffic_class", "0-255"),
    "trust word": ({"trust": "l3"}, "trust", "dscp, pcp"),
    # a control character Python counts as whitespace, a non-ASCII digit: int() refuses both (was a ValueError)
    "dscp with a unit separator": ({"cnp_dscp": "0\x1f"}, "cnp_dscp", "0-63"),
    "priority in Arabic digits": ({"pfc_priorities": "\u0663"}, "pfc_priorities[0]", "0-7"),
    "prio_tc 7 values": ({"prio_tc": [0] * 7}, "prio_tc", "8 integers 0-7"),
    "prio_tc tc 8": ({"prio_tc": [0, 0, 0, 8, 0, 0, 0, 0]}, "prio_tc[3]", "0-7"),
    "tsa word": ({"tsa": ["ets"] * 7 + ["wrr"]}, "tsa[7]", "ets, strict, vendor"),
    "tc_bw sum 90": ({"tsa": ["ets"] * 2 + ["strict"] * 6, "tc_bw": [50, 40, 0, 0, 0, 0, 0, 0]}, "tc_bw", "100"),
    "tc_bw on strict": ({"tsa": ["ets"] + ["strict"] * 7, "tc_bw": [90, 10, 0, 0, 0, 0, 0, 0]}, "tc_bw[1]",
                        "0 for a strict"),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_input_names_interface_option_and_allowed(case):
    extra, option, allowed = BAD[case]
    with pytest.raises(InvalidValue) as exc:
        rq.desired_state(dict(interfaces=[A, B], **extra))
    assert exc.value.parameter == option and A in exc.value.msg and B in exc.value.msg
    assert allowed in exc.value.msg and "Nothing was changed" in exc.value.msg


@pytest.mark.parametrize("value", [[], "", "../etc", "a/b", ["eth0", "x" * 16], [None], [1], ["eth0\n"], "..\n"])
def test_bad_interface_names(value):
    with pytest.raises(InvalidValue) as exc:
        rq.desired_state({"interfaces": value})
    assert exc.value.parameter == "interfaces"


ANYTHING = st.one_of(st.none(), st.booleans(), st.integers(-300, 300), st.text(max_size=6), st.floats(allow_nan=True),
                     st.lists(st.one_of(st.integers(-2, 300), st.text(max_size=3), st.booleans(), st.none()),
                              max_size=10),
                     st.lists(st.sampled_from(["ets", "strict", "vendor", "ETS", "x"]), min_size=8, max_size=8),
                     st.lists(st.integers(0, 100), min_size=8, max_size=8),
                     st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
OPTIONS = ["interfaces", "trust", "pfc_priorities", "ecn_priorities", "cnp_dscp", "cnp_802p_prio", "cma_roce_tos",
           "traffic_class", "prio_tc", "tsa", "tc_bw"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(OPTIONS), ANYTHING))
def test_any_input_gives_a_clean_failure_or_a_desired_state(params):
    params.setdefault("interfaces", [A])
    try:
        ifaces, desired = rq.desired_state(params)
    except InvalidValue as err:
        assert err.parameter and err.msg
        return
    assert ifaces and all(rq.IFNAME_RE.match(i) for i in ifaces)
    current = {"trust": "pcp", "pfc": [0] * 8, "prio_tc": list(DEFAULT_PRIO_TC), "tsa": ["vendor"] * 8, "tc_bw": [0] * 8,
               "ecn_np": {p: 0 for p in range(8)}, "ecn_rp": {p: 0 for p in range(8)}, "cnp_dscp": 0,
               "cnp_802p_prio": 0, "cma_roce_tos": 0, "traffic_class": None}
    try:
        changes = rq.plan(current, desired, ifaces[0])
    except InvalidValue as err:   # tc_bw without tsa, checked against the device's vendor classes
        assert err.parameter.startswith("tc_bw")
        return
    steps = rq.commands(ifaces[0], changes, desired, rdma="mlx5_0", port=1)
    assert all(isinstance(a, str) for s in steps for a in s.get("argv", []))


# ---------------------------------------------------------------- every problem at once (the preflight's)

def test_settings_problems_lists_every_bad_value_naming_host_option_and_allowed():
    problems = rq.settings_problems({"interfaces": ["bad/x"], "pfc_priorities": [9], "cnp_dscp": 64,
                                     "cma_roce_tos": "abc", "tsa": ["ets"] * 8, "tc_bw": [50, 10, 0, 0, 0, 0, 0, 0]},
                                    "srv-r01-01")
    assert problems == [
        "srv-r01-01: roce_qos: interfaces[0]='bad/x' is not a network interface name (allowed: 1-15 ASCII letters, "
        "digits and _ . + - (not '.' or '..')).",
        "srv-r01-01: roce_qos: pfc_priorities[0]=9 is outside 0-7 (allowed: an integer 0-7).",
        "srv-r01-01: roce_qos: cnp_dscp=64 is outside 0-63 (allowed: an integer 0-63).",
        "srv-r01-01: roce_qos: cma_roce_tos='abc' is not an integer (allowed: an integer 0-255).",
        "srv-r01-01: roce_qos: tc_bw=[50, 10, 0, 0, 0, 0, 0, 0] gives the ets classes tc0, tc1, tc2, tc3, tc4, tc5, "
        "tc6, tc7 60%, not 100% (allowed: percentages of the ets classes adding up to 100)."]


def test_settings_problems_of_good_settings_and_left_options():
    assert rq.settings_problems({}, "h") == []
    assert rq.settings_problems({"pfc_priorities": [3], "cnp_dscp": 48, "interfaces": ["enp24s0np0"]}, "h") == []
    assert rq.settings_problems({"pfc_priorities": [9]}, "h", leave=["pfc_priorities"]) == []
    assert rq.settings_problems(["pfc"], "h") == ["h: roce_qos: the settings must be a mapping, not ['pfc']"]


# The rules of the options, written again here from the module's documentation (plugins/modules/roce_qos.py) and
# not from _roce_qos: the oracle of the property below. A bad option of the model is one the module must refuse.
BLANKS = " \t\n\r\f\v"          # around a number given as a string: ASCII blanks only


def model_int(value, high):
    """0..high as an int (not a bool) or a string of 1-9 ASCII digits with blanks around it."""
    if isinstance(value, str):
        digits = value.strip(BLANKS)
        if not (digits.isascii() and digits.isdigit() and len(digits) <= 9):
            return False
        value = int(digits)
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= high


def model_ints(value, high, length=None):
    """A list (or tuple) of model_int; with ``length``, exactly that many, and a comma-separated string too."""
    if length is not None and isinstance(value, str) and "," in value:
        value = value.split(",")
    return (isinstance(value, (list, tuple)) and (length is None or len(value) == length)
            and all(model_int(item, high) for item in value))


def model_priorities(value):
    """One priority 0-7, or a list of them."""
    return model_ints([value] if isinstance(value, (int, str)) else value, 7)


def model_ifname(name):
    """A Linux interface name as the collection takes it: 1-15 of the ASCII letters, digits and _ . + -,
    not . or .. (what real NIC, bond and VLAN names use; nothing a shell, udev or systemd interprets)."""
    return (isinstance(name, str) and 1 <= len(name) <= 15 and name not in (".", "..")
            and all(c in string.ascii_letters + string.digits + "_.+-" for c in name))


def model_tsa(value):
    words = value.split(",") if isinstance(value, str) else value
    return (isinstance(words, (list, tuple)) and len(words) == 8
            and all(isinstance(w, str) and w.strip().lower() in ("ets", "strict", "vendor") for w in words))


def model_bad_options(params):
    """The options of ``params`` the module must refuse, by the model; None (or absent) leaves an option alone."""
    bad = set()
    interfaces = params.get("interfaces")
    if interfaces:
        names = [interfaces] if isinstance(interfaces, str) else interfaces
        if not isinstance(names, (list, tuple)) or not all(model_ifname(n) for n in names):
            bad.add("interfaces")
    trust = params.get("trust")
    if trust is not None and not (isinstance(trust, str) and trust.strip().lower() in ("dscp", "pcp")):
        bad.add("trust")
    for option in ("pfc_priorities", "ecn_priorities"):
        if params.get(option) is not None and not model_priorities(params[option]):
            bad.add(option)
    for option, high in (("cnp_dscp", 63), ("cnp_802p_prio", 7), ("cma_roce_tos", 255), ("traffic_class", 255)):
        if params.get(option) is not None and not model_int(params[option], high):
            bad.add(option)
    if params.get("prio_tc") is not None and not model_ints(params["prio_tc"], 7, 8):
        bad.add("prio_tc")
    tsa, tc_bw = params.get("tsa"), params.get("tc_bw")
    if tsa is not None and not model_tsa(tsa):
        bad.add("tsa")
    if tc_bw is not None:
        if not model_ints(tc_bw, 100, 8):
            bad.add("tc_bw")
        elif tsa is not None and "tsa" not in bad:   # mlnx_qos: strict/vendor classes get 0, the ets ones 100 in all
            words = [w.strip().lower() for w in (tsa.split(",") if isinstance(tsa, str) else tsa)]
            bw = [int(str(v).strip(BLANKS)) for v in (tc_bw.split(",") if isinstance(tc_bw, str) else tc_bw)]
            ets = [b for w, b in zip(words, bw) if w == "ets"]
            if any(b for w, b in zip(words, bw) if w != "ets") or (ets and sum(ets) != 100):
                bad.add("tc_bw")
    return bad


# Around every range's ends, as ints and as the strings a YAML inventory may hand over.
EDGES = st.sampled_from([-1, 0, 1, 7, 8, 63, 64, 99, 100, 101, 255, 256, 999999999, 1000000000])
EDGY = st.one_of(EDGES, EDGES.map(str), EDGES.map(lambda n: " %d\n" % n), st.lists(EDGES, min_size=1, max_size=9),
                 st.lists(st.one_of(EDGES, EDGES.map(str)), min_size=8, max_size=8),
                 st.lists(EDGES, min_size=8, max_size=8).map(lambda v: ",".join(map(str, v))),
                 st.builds(lambda name, odd: [name + odd], st.text(alphabet="enp0s.-", max_size=16),
                           st.sampled_from(["", "", "\n", " ", "/", ":", "\t", "\u00a0", "\u2028"])),
                 st.lists(st.sampled_from(["ets", "strict", "vendor"]), min_size=8, max_size=8).map(",".join))


def test_the_model_on_literal_cases():
    """The oracle itself, on cases worked out by hand."""
    assert model_bad_options({}) == set()
    assert model_bad_options({"cnp_dscp": 63, "cnp_802p_prio": "7", "cma_roce_tos": " 255 ", "pfc_priorities": 3,
                              "prio_tc": "0,1,2,3,4,5,6,7", "interfaces": "enp24s0np0"}) == set()
    assert model_bad_options({"cnp_dscp": 64, "cnp_802p_prio": 8, "cma_roce_tos": 256, "traffic_class": -1,
                              "pfc_priorities": [8], "ecn_priorities": True, "trust": "DSCPX",
                              "interfaces": ["eth0\n"]}) == {
        "cnp_dscp", "cnp_802p_prio", "cma_roce_tos", "traffic_class", "pfc_priorities", "ecn_priorities", "trust",
        "interfaces"}
    assert model_bad_options({"tsa": ["ets"] * 2 + ["strict"] * 6, "tc_bw": [60, 40] + [0] * 6}) == set()
    assert model_bad_options({"tsa": ["ets"] * 2 + ["strict"] * 6, "tc_bw": [60, 40, 1] + [0] * 5}) == {"tc_bw"}
    assert model_bad_options({"tsa": ["ets"] * 8, "tc_bw": [50, 10] + [0] * 6}) == {"tc_bw"}


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(OPTIONS), st.one_of(ANYTHING, EDGY)))
@example({"interfaces": ["eth0\n"]})
@example({"interfaces": ["x" * 16], "cnp_802p_prio": 8, "cnp_dscp": "64", "cma_roce_tos": 256, "traffic_class": " 256"})
@example({"pfc_priorities": [0, 8], "ecn_priorities": 8, "prio_tc": [0] * 7 + [8], "tc_bw": [101] + [0] * 7})
@example({"cnp_802p_prio": 7, "cnp_dscp": "63", "cma_roce_tos": 255, "traffic_class": " 255", "prio_tc": [7] * 8,
          "tsa": ["ets"] + ["strict"] * 7, "tc_bw": [100] + [0] * 7, "interfaces": ["x" * 15]})
def test_settings_problems_agree_with_the_module_and_never_raise(params):
    """Any input: one sentence per option the model finds bad, and no other; the module's own check accepts the
    settings exactly when there is none (the preflight and the module are the same code - the wiring)."""
    problems = rq.settings_problems(params, "h")
    assert all(isinstance(p, str) and p.startswith("h: roce_qos: ") for p in problems)
    named = sorted(re.match(r"h: roce_qos: (\w+)", p).group(1) for p in problems)
    assert named == sorted(model_bad_options(params)), problems
    given_ifaces = params.get("interfaces") or [A]
    try:
        rq.desired_state(dict(params, interfaces=given_ifaces))
        accepted = True
    except InvalidValue:
        accepted = False
    assert accepted == (problems == [])


# The whole settings surface the preflight checks, a misspelt option and a misspelt leave entry among them.
SURFACE = OPTIONS + ["leave", "mgmt_interface", "cnp_dcsp", "Trust"]
LEAVES = st.lists(st.sampled_from(list(rq.LEAVE) + ["cnp_dcsp", "ecn_priorities", "Trust", ""]), max_size=3)
VALIDATOR = ArgumentSpecValidator(roce_qos_module.ARGUMENT_SPEC)


def module_accepts(params):
    """What the roce_qos module does with ``params`` before it touches the host: Ansible's own argument check (the
    module's ARGUMENT_SPEC), then the core's (desired_state)."""
    result = VALIDATOR.validate(dict(params))
    if result.error_messages:   # (result.errors is an object that is always true)
        return False
    try:
        rq.desired_state(result.validated_parameters)
    except InvalidValue:
        return False
    return True


@pytest.mark.parametrize("params, words", [
    ({"trust": "dscp", "cnp_dcsp": 48}, "'cnp_dcsp' is not an option of the roce_qos module; did you mean cnp_dscp?"),
    ({"leave": ["cnp_dcsp"]}, "leave[0]='cnp_dcsp' is not a setting the module can leave; did you mean cnp_dscp?"),
    ({"leave": "traffic_class"}, "leave='traffic_class' is not a list"),
    ({"cnp_dscp": "\u0663"}, "cnp_dscp='\u0663' is not an integer"),
    ({"cnp_dscp": "4\u0668"}, "cnp_dscp='4\u0668' is not an integer"),
    ({"interfaces": "a,b"}, "interfaces[0]='a,b' is not a network interface name"),
    ({"mgmt_interface": "eno1,eno2"}, "mgmt_interface='eno1,eno2' is not one network interface name"),
])
def test_what_the_module_refuses_the_preflight_refuses_too(params, words):
    """Found by the property below: a misspelt option or leave entry, and values Ansible's own type conversion
    would have turned into something else (int("\u0663") is 3, "a,b" two names) passed the preflight."""
    problems = rq.settings_problems(params, "h")
    assert any(words in p for p in problems), problems
    assert not module_accepts(dict(params, interfaces=params.get("interfaces", [A])))


def test_leave_from_the_filter_argument_is_checked_too():
    assert rq.settings_problems({"cnp_dscp": 64}, "h", leave=["cnp_dscp"]) == []
    assert rq.settings_problems({}, "h", leave=["cnp_dcsp"]) == [
        "h: roce_qos: leave[0]='cnp_dcsp' is not a setting the module can leave; did you mean cnp_dscp? (allowed: "
        "trust, pfc_priorities, cnp_dscp, cnp_802p_prio, cma_roce_tos, traffic_class)."]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(SURFACE), st.one_of(ANYTHING, EDGY, LEAVES)))
@example({"trust": "DSCP"})
@example({"cnp_dscp": "\u0663"})
@example({"leave": ["cnp_dcsp"]})
@example({"cnp_dcsp": 48})
def test_preflight_problems_are_empty_exactly_when_the_module_accepts(params):
    """preflight-problems-empty <=> module-accepts, the module being its argument spec AND its core check."""
    params = dict(params, interfaces=params.get("interfaces") or [A])
    assert module_accepts(params) == (rq.settings_problems(params, "h") == [])


# ---------------------------------------------------------------- plan and commands (pure)

FRESH = {"trust": "pcp", "pfc": [0] * 8, "ecn_np": {3: 0}, "ecn_rp": {3: 0}, "cnp_dscp": 0, "cnp_802p_prio": 0,
         "cma_roce_tos": 0, "traffic_class": None}


def test_plan_of_a_fresh_interface():
    _i, desired = rq.desired_state(ALL)
    changes = rq.plan(FRESH, desired, A)
    assert changes == {"trust": {"before": "pcp", "after": "dscp"},
                       "pfc": {"before": [0] * 8, "after": [0, 0, 0, 1, 0, 0, 0, 0]},
                       "ecn_np[3]": {"before": 0, "after": 1}, "ecn_rp[3]": {"before": 0, "after": 1},
                       "cnp_dscp": {"before": 0, "after": 48}, "cnp_802p_prio": {"before": 0, "after": 6},
                       "cma_roce_tos": {"before": 0, "after": 106}, "traffic_class": {"before": None, "after": 106}}
    assert rq.commands(A, changes, desired, rdma="mlx5_0", port=1) == [
        {"argv": ["mlnx_qos", "-i", A, "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"]},
        {"write": "/sys/class/net/%s/ecn/roce_np/enable/3" % A, "value": "1"},
        {"write": "/sys/class/net/%s/ecn/roce_rp/enable/3" % A, "value": "1"},
        {"write": "/sys/class/net/%s/ecn/roce_np/cnp_dscp" % A, "value": "48"},
        {"write": "/sys/class/net/%s/ecn/roce_np/cnp_802p_prio" % A, "value": "6"},
        {"write": "/sys/class/infiniband/mlx5_0/tc/1/traffic_class", "value": "106"},
        {"argv": ["cma_roce_tos", "-d", "mlx5_0", "-p", "1", "-t", "106"]},
    ]


def test_plan_of_a_compliant_interface_is_empty():
    _i, desired = rq.desired_state(ALL)
    current = {"trust": "dscp", "pfc": [0, 0, 0, 1, 0, 0, 0, 0], "ecn_np": {3: 1}, "ecn_rp": {3: 1}, "cnp_dscp": 48,
               "cnp_802p_prio": 6, "cma_roce_tos": 106, "traffic_class": 106}
    assert rq.plan(current, desired, A) == {}
    assert rq.commands(A, {}, desired, rdma="mlx5_0", port=1) == []


def test_one_ets_option_differing_sends_every_managed_ets_option():
    _i, desired = rq.desired_state(dict(ALL, prio_tc=[0, 0, 0, 3, 0, 0, 6, 0], tsa=["ets"] + ["vendor"] * 2
                                        + ["ets"] + ["vendor"] * 2 + ["strict", "vendor"],
                                        tc_bw=[50, 0, 0, 50, 0, 0, 0, 0], trust=None, pfc_priorities=None,
                                        cnp_dscp=None, cnp_802p_prio=None, cma_roce_tos=None, traffic_class=None))
    current = {"prio_tc": list(DEFAULT_PRIO_TC), "tsa": desired["tsa"], "tc_bw": desired["tc_bw"]}
    changes = rq.plan(current, desired, A)
    assert list(changes) == ["prio_tc"]
    assert rq.commands(A, changes, desired) == [{"argv": [
        "mlnx_qos", "-i", A, "--prio_tc", "0,0,0,3,0,0,6,0", "--tsa", "ets,vendor,vendor,ets,vendor,vendor,strict,vendor",
        "--tcbw", "50,0,0,50,0,0,0,0"]}]


def test_tc_bw_without_tsa_is_checked_against_the_device():
    _i, desired = rq.desired_state(dict(ALL, tc_bw=[50, 50, 0, 0, 0, 0, 0, 0]))
    with pytest.raises(InvalidValue) as exc:
        rq.plan(dict(FRESH, tsa=["vendor"] * 8, tc_bw=[0] * 8), desired, A)
    assert exc.value.parameter == "tc_bw[0]" and A in exc.value.msg and "vendor" in exc.value.msg


def test_missing_ecn_attribute_is_refused_naming_the_path():
    _i, desired = rq.desired_state(ALL)
    with pytest.raises(Refused) as exc:
        rq.plan(dict(FRESH, ecn_rp={3: None}), desired, A)
    assert "/sys/class/net/%s/ecn/roce_rp/enable/3" % A in exc.value.msg and exc.value.device == A


# ---------------------------------------------------------------- converge on the fake host

@pytest.fixture
def host(tmp_path):
    def make(ports, **kwargs):
        return QosHost(tmp_path, ports, **kwargs)
    return make


def test_compliant_host_changes_nothing(host):
    fake = host({A: compliant_port("mlx5_0"), B: compliant_port("mlx5_1")}, compliant=True)
    result = rq.converge(fake.reader(), {"interfaces": [A, B]})
    assert result["changed"] is False and result["failed"] == {}
    assert fake.writes == []
    assert changing(fake) == []
    assert [r["changes"] for r in result["interfaces"]] == [{}, {}]
    assert result["interfaces"][0]["before"] == result["interfaces"][0]["after"]


def changing(fake):
    """The recorded calls that change something (mlnx_qos with a setting, cma_roce_tos -t)."""
    return [c for c in fake.calls if set(c) & {"--trust", "--pfc", "--prio_tc", "--tsa", "--tcbw", "-t"}]


def _fresh(host, **kwargs):
    return host({A: Port("mlx5_0"), B: Port("mlx5_1")}, **kwargs)


def test_fresh_host_exact_argv_and_writes_then_idempotent(host):
    fake = _fresh(host)
    result = rq.converge(fake.reader(), {"interfaces": [A, B]})
    assert result["changed"] and result["failed"] == {}
    assert collections.Counter(changing(fake)) == collections.Counter([
        ("/usr/sbin/mlnx_qos", "-i", A, "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"),
        ("/usr/sbin/mlnx_qos", "-i", B, "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"),
        ("/usr/sbin/cma_roce_tos", "-d", "mlx5_0", "-p", "1", "-t", "106"),
        ("/usr/sbin/cma_roce_tos", "-d", "mlx5_1", "-p", "1", "-t", "106")])
    assert sorted(fake.writes) == sorted(
        [("/sys/class/net/%s/ecn/%s/enable/3" % (i, p), "1") for i in (A, B) for p in ("roce_np", "roce_rp")]
        + [("/sys/class/net/%s/ecn/roce_np/cnp_dscp" % i, "48") for i in (A, B)]
        + [("/sys/class/net/%s/ecn/roce_np/cnp_802p_prio" % i, "6") for i in (A, B)]
        + [("/sys/class/infiniband/%s/tc/1/traffic_class" % d, "106") for d in ("mlx5_0", "mlx5_1")])
    assert fake.get("/sys/class/net/%s/ecn/roce_rp/enable/3" % A) == "1\n"
    assert fake.get("/sys/class/net/%s/ecn/roce_rp/enable/4" % A) == "0\n"   # other priorities untouched
    one = result["interfaces"][0]
    assert one["after"]["trust"] == "dscp" and one["after"]["ecn_np"] == {"3": 1} and one["after"]["traffic_class"] == 106
    assert one["rdma_device"] == "mlx5_0" and one["port"] == 1

    fake.calls.clear()
    fake.writes.clear()
    again = rq.converge(fake.reader(), {"interfaces": [A, B]})
    assert again["changed"] is False and fake.writes == []
    assert changing(fake) == []


def test_check_mode_writes_nothing_and_predicts_the_real_run(host, tmp_path):
    fake = _fresh(host)
    checked = rq.converge(fake.reader(), {"interfaces": [A, B]}, check_mode=True)
    assert checked["changed"] and fake.writes == []
    assert changing(fake) == []
    assert fake.ports[A].trust == "pcp" and fake.get("/sys/class/net/%s/ecn/roce_np/cnp_dscp" % A) == "0\n"
    real = rq.converge(fake.reader(), {"interfaces": [A, B]})
    assert [r["changes"] for r in checked["interfaces"]] == [r["changes"] for r in real["interfaces"]]
    assert [r["after"] for r in checked["interfaces"]] == [r["after"] for r in real["interfaces"]]
    assert [r["commands"] for r in checked["interfaces"]] == [r["commands"] for r in real["interfaces"]]


def test_cma_roce_tos_read_from_configfs_when_present(host):
    fake = host({A: compliant_port("mlx5_0")}, compliant=True, configfs=[A])
    result = rq.converge(fake.reader(), ALL)
    assert not result["changed"]
    assert [c for c in fake.calls if "cma_roce_tos" in c[0]] == []   # the configfs file was read instead


def test_sysfs_fallback_when_ibdev2netdev_is_missing(host):
    fake = host({A: compliant_port("mlx5_0")}, compliant=True, ibdev2netdev=False)
    result = rq.converge(fake.reader(), ALL)
    assert not result["changed"] and result["interfaces"][0]["rdma_device"] == "mlx5_0"


@pytest.mark.parametrize("stuck, setting", [("trust", "trust"), ("pfc", "pfc"), ("cma_roce_tos", "cma_roce_tos")])
def test_a_value_that_does_not_take_is_reported(host, stuck, setting):
    fake = host({A: Port("mlx5_0", stuck=[stuck]), B: Port("mlx5_1")})
    result = rq.converge(fake.reader(), {"interfaces": [A, B]})
    assert list(result["failed"]) == [A] and setting in result["failed"][A] and "did not take" in result["failed"][A]
    assert [r["interface"] for r in result["interfaces"]] == [B]   # the other interface finished


def test_sysfs_value_that_does_not_take_is_reported(host):
    fake = _fresh(host)
    reader = fake.reader()
    real_write = reader.write_sys

    def lossy(path, value):
        if path.endswith("cnp_dscp"):
            return None   # the driver accepted the write and kept its old value
        return real_write(path, value)

    reader.write_sys = lossy
    result = rq.converge(reader, ALL)
    assert "cnp_dscp" in result["failed"][A] and "did not take" in result["failed"][A]


NOT_ALLOWED = {
    "unknown interface": (dict(interfaces=[A, "enp99s0np0"]), DeviceNotFound, ["enp99s0np0", A, B]),
    "not on mlx5": (dict(interfaces=["eno1"]), DeviceNotFound, ["eno1", "igb", A, B]),
    "management interface": (dict(interfaces=[A, B], mgmt_interface=B), Refused, [B, "allow_mgmt"]),
}


@pytest.mark.parametrize("case", list(NOT_ALLOWED), ids=list(NOT_ALLOWED))
def test_refused_interfaces_fail_before_anything_is_touched(host, case):
    params, error, words = NOT_ALLOWED[case]
    fake = _fresh(host, other={"eno1": "igb"})
    with pytest.raises(error) as exc:
        rq.converge(fake.reader(), params)
    assert all(w in exc.value.msg for w in words), exc.value.msg
    assert exc.value.parameter == "interfaces"
    assert fake.writes == [] and [c for c in fake.calls if c[0].endswith(("mlnx_qos", "cma_roce_tos"))] == []


def test_allow_mgmt_touches_the_management_interface(host):
    fake = _fresh(host)
    result = rq.converge(fake.reader(), dict(interfaces=[B], mgmt_interface=B, allow_mgmt=True))
    assert result["changed"] and fake.ports[B].trust == "dscp"


@pytest.mark.parametrize("params", [dict(ALL, cnp_dscp=64), dict(ALL, pfc_priorities=[9]),
                                    dict(ALL, tsa=["ets"] * 8, tc_bw=[10] * 8)])
def test_bad_input_touches_nothing(host, params):
    fake = _fresh(host)
    with pytest.raises(InvalidValue):
        rq.converge(fake.reader(), params)
    assert fake.calls == [] and fake.writes == []


def test_missing_tool_names_the_package(host):
    fake = _fresh(host)
    reader = fake.reader()
    reader.which = lambda name: None if name == "cma_roce_tos" else fake.which(name)
    with pytest.raises(ToolNotFound) as exc:
        rq.converge(reader, ALL)
    assert "cma_roce_tos" in exc.value.msg and "mlnx-tools" in exc.value.msg and "DOCA-OFED" in exc.value.msg
    assert fake.calls == []


def test_unreadable_interface_stops_every_write(host):
    fake = _fresh(host)
    answer = fake.__call__

    def broken(argv, env=None, timeout=None, data=None):
        if argv[-1] == B and argv[0].endswith("mlnx_qos"):
            return 1, "Priority trust state is not supported on your system\n", ""
        return answer(argv, env, timeout, data)

    with pytest.raises(MlnxError) as exc:
        rq.converge(fake.reader(execute=broken), {"interfaces": [A, B]})
    assert B in exc.value.msg and "not supported" in exc.value.msg
    assert fake.writes == [] and fake.ports[A].trust == "pcp"


def test_a_tool_that_cannot_start_is_a_clean_failure_naming_the_interface(host):
    fake = _fresh(host)

    def cannot_exec(argv, env=None, timeout=None, data=None):
        if argv[0].endswith("mlnx_qos"):
            raise PermissionError(13, "Permission denied", argv[0])
        return fake(argv, env, timeout, data)

    with pytest.raises(MlnxError) as exc:
        rq.converge(fake.reader(execute=cannot_exec), ALL)
    assert exc.value.msg.startswith(A + ": cannot read") and "Permission denied" in exc.value.msg
    assert fake.writes == []


def test_ets_settings_are_applied_and_idempotent(host):
    fake = _fresh(host)
    params = dict(ALL, prio_tc=[0, 0, 0, 3, 0, 0, 6, 0], tsa=["ets", "vendor", "vendor", "ets", "vendor", "vendor",
                                                              "strict", "vendor"], tc_bw=[50, 0, 0, 50, 0, 0, 0, 0])
    first = rq.converge(fake.reader(), params)
    assert set(first["interfaces"][0]["changes"]) >= {"prio_tc", "tsa", "tc_bw"} and first["failed"] == {}
    assert fake.ports[A].tsa[3] == "ets" and fake.ports[A].tc_bw == [50, 0, 0, 50, 0, 0, 0, 0]
    assert rq.converge(fake.reader(), params)["changed"] is False


def test_the_reads_of_two_interfaces_run_at_the_same_time(host):
    """The mlnx_qos reads of both interfaces wait for each other: one after the other they would time out on the
    barrier (and the interface be unreadable); at the same time they both pass it."""
    fake = host({A: compliant_port("mlx5_0"), B: compliant_port("mlx5_1")}, compliant=True)
    barrier = threading.Barrier(2, timeout=5)
    answer = fake.__call__

    def meeting(argv, env=None, timeout=None, data=None):
        if argv[0].endswith("mlnx_qos") and len(argv) == 3:
            barrier.wait()
        return answer(argv, env, timeout, data)

    result = rq.converge(fake.reader(execute=meeting), {"interfaces": [A, B]})
    assert [r["interface"] for r in result["interfaces"]] == [A, B] and not result["changed"]


# ---------------------------------------------------------------------------------- replay (persistence)


def test_replay_sets_everything_even_when_nothing_differs():
    _ifaces, desired = rq.desired_state({"interfaces": ["enp24s0np0"], "ecn_priorities": [3, 4]})
    steps = rq.replay("enp24s0np0", desired, rdma="mlx5_0", port=1)
    assert steps[0] == {"argv": ["mlnx_qos", "-i", "enp24s0np0", "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"]}
    writes = {s["write"]: s["value"] for s in steps if "write" in s}
    assert writes == {
        "/sys/class/net/enp24s0np0/ecn/roce_np/enable/3": "1", "/sys/class/net/enp24s0np0/ecn/roce_np/enable/4": "1",
        "/sys/class/net/enp24s0np0/ecn/roce_rp/enable/3": "1", "/sys/class/net/enp24s0np0/ecn/roce_rp/enable/4": "1",
        "/sys/class/net/enp24s0np0/ecn/roce_np/cnp_dscp": "48", "/sys/class/net/enp24s0np0/ecn/roce_np/cnp_802p_prio": "6",
        "/sys/class/infiniband/mlx5_0/tc/1/traffic_class": "106"}
    assert steps[-1] == {"argv": ["cma_roce_tos", "-d", "mlx5_0", "-p", "1", "-t", "106"]}
    # a setting left alone (null) is not replayed either
    _ifaces, desired = rq.desired_state({"interfaces": ["enp24s0np0"], "traffic_class": None, "cma_roce_tos": None,
                                         "trust": None})
    steps = rq.replay("enp24s0np0", desired, rdma="mlx5_0", port=1)
    assert steps[0]["argv"] == ["mlnx_qos", "-i", "enp24s0np0", "--pfc", "0,0,0,1,0,0,0,0"]
    assert not [s for s in steps if "infiniband" in s.get("write", "") or s.get("argv", [""])[0] == "cma_roce_tos"]


def test_replay_script_looks_the_rdma_device_up_and_quotes_every_word():
    _ifaces, desired = rq.desired_state({"interfaces": ["enp24s0np0"]})
    entry = {"interface": "enp24s0np0", "rdma_device": "mlx5_0", "replay": rq.replay("enp24s0np0", desired, rdma="mlx5_0", port=1)}
    text = qs.replay_script([entry], root="/var/lib/mlxsim/root/")
    assert text.startswith("#!/bin/sh\n")
    assert "\nROOT=/var/lib/mlxsim/root\n" in text
    assert "        rdma=$(rdma_of enp24s0np0) ||" in text
    assert "        put /sys/class/infiniband/\"$rdma\"/tc/1/traffic_class 106\n" in text
    assert "        tos cma_roce_tos -d \"$rdma\" -p 1 -t 106\n" in text
    assert "mlx5_0" not in text                       # the name is looked up when the script runs
    assert "    for i in enp24s0np0; do apply \"$i\"; done\n" in text
    assert "\nROOT=''\n" in qs.replay_script([entry])
    assert qs._sh("a'b", None) == "'a'\"'\"'b'"
    with pytest.raises(InvalidValue, match="interface and replay"):
        qs.replay_script([{"rdma_device": "mlx5_0"}])


def test_replay_script_refuses_an_interface_name_outside_the_grammar_and_quotes_every_other_word():
    """An interface name is never inside double quotes, where the shell would expand $(...) and `...`: a name
    outside the interface grammar is refused (it also goes into the udev rule), and any other word is quoted."""
    name = "a$(id)`id`"
    with pytest.raises(InvalidValue, match=r"interfaces\[0\]\.interface: .* is not a network interface name"):
        qs.replay_script([{"interface": name, "rdma_device": "mlx5_0", "replay": []}])
    entry = {"interface": "enp24s0np0", "rdma_device": "mlx5_0", "replay": [{"argv": ["mlnx_qos", "-i", name]}]}
    text = qs.replay_script([entry])
    assert "        rdma=$(rdma_of enp24s0np0) || { log 'enp24s0np0: no RDMA device'; return 1; }\n" in text
    assert "        run mlnx_qos -i 'a$(id)`id`'\n" in text
    assert '"%s' % name not in text
