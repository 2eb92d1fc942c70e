"""The validation toolkit (plugins/module_utils/_validate.py) on its own: paths, words, readers and the
problem collector every validator shares (the validators' own tests check the messages in context)."""
import re

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _validate as v
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue


def test_problems_collect_in_order_with_an_optional_prefix():
    plain, hosted = v.Problems(), v.Problems(prefix="srv-01")
    plain.add("gpufabric_matrix.name", "required: a name")
    plain.add("gpufabric_matrix", "must be a mapping")
    hosted.add("roce_qos", "cnp_dscp=64 is outside 0-63.")
    assert plain == ["gpufabric_matrix.name: required: a name", "gpufabric_matrix: must be a mapping"]
    assert hosted == ["srv-01: roce_qos: cnp_dscp=64 is outside 0-63."]
    assert not v.Problems() and isinstance(plain, list)


def test_problems_error_lists_every_problem():
    err = v.ProblemsError("gpufabric_fabric is not consistent", ["a: x", "b: y"], parameter="gpufabric_fabric")
    assert isinstance(err, InvalidValue)
    assert err.msg == "gpufabric_fabric is not consistent (2 problems):\n- a: x\n- b: y"
    assert err.problems == ["a: x", "b: y"] and err.parameter == "gpufabric_fabric"
    assert v.problem_list("it", ["one"]) == "it (1 problem):\n- one"


@pytest.mark.parametrize("keys, path", [
    ((), "root"),
    (("driver",), "root.driver"),
    (("driver", "source", "url"), "root.driver.source.url"),
    (("part_numbers", 0), "root.part_numbers[0]"),
    (("firmware_drivers", "28.43.2566"), 'root.firmware_drivers["28.43.2566"]'),
    (("models", "PowerEdge XE9680", "ProcC1E"), 'root.models["PowerEdge XE9680"].ProcC1E'),
    ((True,), "root.True"),   # a boolean key is a name, not an index
])
def test_join_path(keys, path):
    assert v.join_path("root", *keys) == path


@pytest.mark.parametrize("value, text", [
    (None, "nothing (null)"), (True, "the boolean true"), (24, "the number 24"), (24.1, "the number 24.1"),
    (2 ** 70, "a 71-bit number"), ("x", 'the string "x"'), ("y" * 70, 'the string "%s..."' % ("y" * 57)),
    ({}, "a mapping"), ((), "a list"), ({1}, "a set"),
])
def test_kind_of(value, text):
    assert v.kind_of(value) == text


def test_words():
    assert v.quoted("a" * 61) == '"%s..."' % ("a" * 57)
    assert v.quoted("a" * 61, limit=None) == '"%s"' % ("a" * 61)
    assert v.some(["a", "b", "c"], limit=2) == "a, b and 1 more"
    assert v.some([]) == ""
    assert v.is_whole(3) and not v.is_whole(True) and not v.is_whole(3.0) and not v.is_whole("3")


def test_close_names_put_the_same_name_in_another_case_first():
    known = ["ProcCStates", "ProcC1E", "SysProfile"]
    assert v.close_names("proccstates", known) == ["ProcCStates"]
    assert v.close_names("ProcCstate", known)[0] == "ProcCStates"
    assert v.close_names("PowerEdge  r760", ["PowerEdge R760", "PowerEdge R750"], fuzzy=False) == ["PowerEdge R760"]
    assert v.close_names("SRIOV_EM", ["SRIOV_EN", "sriov_em"], folded=False) == ["SRIOV_EN"]
    assert v.close_names("zzz", known) == []


def test_unknown_keys_suggest_the_closest_allowed_key():
    problems = v.Problems()
    v.unknown_keys(problems, {"name": 1, "drivr": 2, "Firmware": 3, 7: 4}, "m", ("name", "driver", "firmware"))
    assert problems == [
        "m.drivr: unknown key; did you mean driver? (allowed: name, driver, firmware)",
        "m.Firmware: unknown key; did you mean firmware? (allowed: name, driver, firmware)",
        "m[7]: unknown key (allowed: name, driver, firmware)"]
    shown = v.Problems()
    v.unknown_keys(shown, {7: 4}, "m", ("name",), key_text=v.kind_of)
    assert shown == ['m["the number 7"]: unknown key (allowed: name)']


def test_field_and_the_typed_readers():
    problems = v.Problems()
    assert v.field(problems, {"a": None}, "m", "a", "the a") == ("m.a", None)
    assert v.field(problems, {}, "m", "b", "the b", required=False) == ("m.b", None)
    assert v.check_mapping(problems, "m.c", [], "keys") is False
    assert v.check_list(problems, "m.d", {}, "items") is False
    assert v.check_mapping(problems, "m", {}, "") and v.check_list(problems, "m", [], "")
    assert v.read_string(problems, "m.e", " 24.10 ", "a version") == "24.10"
    assert v.read_string(problems, "m.f", 24.1, "a version") is None
    assert v.read_string(problems, "m.g", 24, "a version") is None
    assert v.read_string(problems, "m.h", "  ", "a version") is None
    assert v.read_bool(problems, "m.i", "yes", "a switch") is None and v.read_bool(problems, "m", None, "") is None
    assert v.read_whole(problems, "m.j", "8", 1, 64, "rails") is None
    assert v.read_whole(problems, "m.k", 65, 1, 64, "rails") is None and v.read_whole(problems, "m", 8, 1, 64, "") == 8
    assert v.read_text(problems, "m.l", "a b", "an interface name", pattern=re.compile(r"^\S+$")) is None
    assert v.read_choice(problems, "m.m", "p2p", ("su_subnet", "p2p31")) is None
    assert problems == [
        "m.a: required: the a",
        "m.c: must be a mapping (keys), not a list",
        "m.d: must be a list (items), not a mapping",
        "m.f: must be a quoted string (a version), not the number 24.1: quote it - YAML reads an unquoted 24.10 as "
        "the number 24.1",
        "m.g: must be a quoted string (a version), not the number 24: quote it",
        "m.h: must not be empty (a version)",
        'm.i: must be true or false (a switch), not the string "yes"',
        'm.j: must be a whole number from 1 to 64 (rails), not the string "8": write it without quotes',
        "m.k: must be from 1 to 64 (rails), not the number 65",
        'm.l: "a b" is not an interface name',
        'm.m: must be one of su_subnet, p2p31, not the string "p2p"']


# ---------------------------------------------------------------- interface names (one grammar)

@pytest.mark.parametrize("name", ["enp24s0np0", "eth0", "ib0", "bond0.100", "eth-mgmt", "rail_7", "a", "x" * 15])
def test_interface_names_real_hosts_use_pass(name):
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import IFNAME_RE
    assert IFNAME_RE.fullmatch(name)


@pytest.mark.parametrize("name", ["", ".", "..", "x" * 16, "eth0\n", "eth0 ", "a/b", "eth0:1", "e$(id)", "e`id`",
                                  "e%n", "e*", "e'x", "e\"x", "enp\u0663", "\u00e9th0", "eth0\x00"])
def test_interface_names_that_a_shell_udev_or_the_kernel_would_misread_are_refused(name):
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import IFNAME_RE
    assert not IFNAME_RE.fullmatch(name)


def test_the_roles_the_rail_plan_and_roce_qos_share_the_interface_grammar():
    from ansible_collections.gpufabric.mlnx.plugins.module_utils import _roce_qos, _validate
    from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _rail_plan, _roles
    assert _roce_qos.IFNAME_RE is _validate.IFNAME_RE is _rail_plan.IFNAME_RE is _roles.GRAMMARS["ifname"][0]
