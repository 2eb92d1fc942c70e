"""site.yml's first play checks every host of the run once, on the controller (plugin_utils/_variables.py,
site_problems): what Ansible's argument-spec task would refuse when a step's role starts (site.yml enters the roles
without it), the required options of the steps that run, the batch grammar and ranges at their limits, and the play
settings that must be one value for every server."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._variables import site_problems

MATRIX = {"name": "m"}


def run(**hosts):
    values = {name.replace("_", "-"): dict({"gpufabric_matrix": MATRIX}, **v) for name, v in hosts.items()}
    return site_problems(list(values), values)


def test_good_values_have_no_problem():
    assert run(srv_1={"gpufabric_batch_size": [1, "50%"], "gpufabric_max_fail_percentage": 25},
               srv_2={"gpufabric_batch_size": [1, "50%"], "gpufabric_max_fail_percentage": 25}) == []


@pytest.mark.parametrize("size, good", [
    (1, True), ("1", True), (0, False), ("0", False), ("100%", True), ("1%", True), ("101%", False), ("0%", False),
    ("99%", True), ("150%", False), ([1, "100%"], True), ([], False), ([1, "x"], False), ("4\n", False),
    ({"5": 1}, False), (True, False), ("01", False), (12500, True),
])
def test_the_batch_grammar_at_its_limits(size, good):
    found = run(srv_1={"gpufabric_batch_size": size})
    grammar = [p for p in found if "is not a batch size" in p]
    assert (grammar == []) is good, found


def test_a_bad_batch_size_names_the_host_the_value_and_what_is_allowed():
    assert run(srv_1={"gpufabric_batch_size": "150%"}) == [
        'srv-1: gpufabric_batch_size="150%" is not a batch size: allowed is a whole number of at least 1, a percentage '
        '1%-100%, or a non-empty list of those (docs/variables.md)']


@pytest.mark.parametrize("value, good", [(0, True), (100, True), (100.5, False), (-0.5, False), ("50", True), (101, False)])
def test_the_fail_percentage_range_at_its_limits(value, good):
    found = [p for p in run(srv_1={"gpufabric_max_fail_percentage": value}) if "outside 0-100" in p]
    assert (found == []) is good, found


@pytest.mark.parametrize("value, good", [(0, True), (1, True), (-1, False)])
def test_the_unreachable_allowance_is_zero_or_more(value, good):
    found = run(srv_1={"gpufabric_max_unreachable": value})
    assert (found == []) is good, found
    if not good:
        assert found == ["srv-1: gpufabric_max_unreachable=-1 is negative: allowed is 0 or more (docs/variables.md)"]


def test_hosts_sharing_a_problem_are_named_together():
    assert run(srv_1={"gpufabric_batch_size": 0}, srv_2={"gpufabric_batch_size": 0}) == [
        "2 hosts (srv-1, srv-2): gpufabric_batch_size=0 is not a batch size: allowed is a whole number of at least 1, a "
        "percentage 1%-100%, or a non-empty list of those (docs/variables.md)"]


def test_a_type_the_argument_spec_refuses_is_named_without_a_role_starting():
    found = run(srv_1={"gpufabric_rails_enabled": "maybe"}, srv_2={"gpufabric_firmware_tool": ["flint"]})
    assert any(p.startswith("srv-1: ") and "gpufabric_rails_enabled" in p for p in found), found
    assert any(p.startswith("srv-2: ") and "gpufabric_firmware_tool" in p for p in found), found


def test_a_required_option_is_refused_only_when_a_step_that_needs_it_runs():
    values = {"srv-1": {},
              "srv-2": {"gpufabric_firmware_enabled": False, "gpufabric_ofed_enabled": False,
                        "gpufabric_preflight_enabled": False},
              "srv-3": {"gpufabric_ofed_enabled": False, "gpufabric_preflight_enabled": False}}
    assert site_problems(list(values), values) == [
        "srv-1: gpufabric_matrix is not set: the steps preflight, ofed, firmware need it (docs/variables.md)",
        "srv-3: gpufabric_matrix is not set: the step firmware needs it (docs/variables.md)"]


def test_play_settings_must_be_one_value_on_every_server_of_the_inventory():
    values = {"srv-1": {"gpufabric_matrix": MATRIX, "gpufabric_batch_size": 4},
              "srv-2": {"gpufabric_matrix": MATRIX, "gpufabric_batch_size": 8},
              "srv-3": {"gpufabric_matrix": MATRIX}}
    # the run is srv-1 alone (--limit): the inventory's other servers still decide the play setting
    assert site_problems(["srv-1"], values, all_servers=list(values)) == [
        'gpufabric_batch_size differs between servers (4, 8, "(unset)"): a play setting is read once for the whole '
        "rollout, so it must be the same on every server - set it in group_vars/all or with -e (docs/variables.md)"]


def test_a_misspelt_name_anywhere_in_the_inventory_is_refused_with_the_one_meant():
    values = {"srv-1": {"gpufabric_matrix": MATRIX}, "leaf-1": {"gpufabric_batch_sise": 2}}
    found = site_problems(["srv-1"], values, everyone=list(values))
    assert len(found) == 1 and found[0].startswith("leaf-1: gpufabric_batch_sise is not a variable of gpufabric.mlnx")
    assert "did you mean gpufabric_batch_size?" in found[0]


def test_only_the_steps_of_the_run_need_their_required_options():
    """pull mode has no preflight: a server without the matrix and with firmware and ofed off has no problem there."""
    values = {"srv-1": {"gpufabric_firmware_enabled": False, "gpufabric_ofed_enabled": False}}
    assert site_problems(["srv-1"], values) == [
        "srv-1: gpufabric_matrix is not set: the step preflight needs it (docs/variables.md)"]
    assert site_problems(["srv-1"], values, steps=["platform", "ofed", "firmware"]) == []
    assert site_problems(["srv-1"], {"srv-1": {}}, steps=["firmware"]) == [
        "srv-1: gpufabric_matrix is not set: the step firmware needs it (docs/variables.md)"]
