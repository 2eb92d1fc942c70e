"""The release table of NVUE keys: each renamed key spelled as the release it goes to spells it, on both sides of
the release that renamed it, and read back in either spelling. Expected trees are written by hand."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _nvue_keys
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_keys import SpellingError, flag, spell

TREE = {
    "qos": {"roce": {"enable": "on", "mode": "lossless"}},
    "router": {"bgp": {"enable": "on", "autonomous-system": 65101, "router-id": "198.18.255.1"}},
    "vrf": {"default": {"router": {"bgp": {
        "enable": "on", "neighbor": {"swp31": {"remote-as": "external", "type": "unnumbered"}},
        "address-family": {"ipv4-unicast": {"enable": "on", "network": {"198.18.255.1/32": {}}}}}}}},
    "system": {"config": {"auto-save": {"enable": "off"}}},
    "interface": {"swp1": {"link": {"mtu": 9216, "state": {"up": {}}}}},
}
NEW = {
    "qos": {"roce": {"state": "enabled", "mode": "lossless"}},
    "router": {"bgp": {"state": "enabled", "autonomous-system": 65101, "router-id": "198.18.255.1"}},
    "vrf": {"default": {"router": {"bgp": {
        "state": "enabled", "neighbor": {"swp31": {"remote-as": "external", "type": "unnumbered"}},
        "address-family": {"ipv4-unicast": {"state": "enabled", "network": {"198.18.255.1/32": {}}}}}}}},
    "system": {"config": {"auto-save": {"state": "disabled"}}},
    "interface": {"swp1": {"link": {"mtu": 9216, "state": {"up": {}}}}},
}


@pytest.mark.parametrize("release", ["5.4.0", "5.9.2"])
def test_releases_before_5_10_keep_every_old_spelling(release):
    assert spell(TREE, release) == TREE
    assert spell(NEW, release) == TREE  # written in the new spelling, sent in the old


@pytest.mark.parametrize("release", ["5.10.0", "5.11.0", "5.14.9"])
def test_from_5_10_auto_save_is_state_and_the_rest_stays_until_5_15(release):
    want = dict(TREE, system={"config": {"auto-save": {"state": "disabled"}}})
    assert spell(TREE, release) == want
    assert spell(NEW, release) == want


@pytest.mark.parametrize("release", ["5.15.0", "5.16.1", "5.16"])
def test_from_5_15_every_renamed_key_is_state(release):
    assert spell(TREE, release) == NEW
    assert spell(NEW, release) == NEW


def test_null_unsets_either_spelling_into_the_release_s_key():
    assert spell({"qos": {"roce": {"enable": None}}}, "5.16.0") == {"qos": {"roce": {"state": None}}}
    assert spell({"qos": {"roce": {"state": None}}}, "5.11.0") == {"qos": {"roce": {"enable": None}}}


def test_a_key_named_enable_outside_the_table_is_left_alone():
    tree = {"interface": {"swp1": {"lldp": {"enable": "on"}}}, "service": {"ntp": {"enable": "on"}}}
    assert spell(tree, "5.16.0") == tree


@pytest.mark.parametrize("tree, words", [
    ({"qos": {"roce": {"enable": "enabled"}}}, "qos.roce.enable: 'enabled' is not a value of enable"),
    ({"qos": {"roce": {"state": "on"}}}, "qos.roce.state: 'on' is not a value of state"),
    ({"qos": {"roce": {"enable": "on", "state": "disabled"}}}, "qos.roce: state and enable disagree"),
])
def test_values_of_the_wrong_spelling_or_disagreeing_keys_are_refused(tree, words):
    with pytest.raises(SpellingError, match=words):
        spell(tree, "5.16.0")


@pytest.mark.parametrize("node, on", [
    ({"enable": "on"}, True), ({"enable": "off"}, False), ({"state": "enabled"}, True),
    ({"state": "disabled"}, False), ({"mode": "lossy"}, None), ({}, None),
    ({"enable": "on", "state": "enabled"}, True)])
def test_flag_reads_either_spelling(node, on):
    assert flag(node, ("qos", "roce")) is on


@pytest.mark.parametrize("release", ["5", "5.x", "", None, True, "5.11.0.1", "cumulus-5.11"])
def test_a_release_that_is_not_one_is_refused_naming_the_parameter(release):
    with pytest.raises(SpellingError, match="release: .* is not a Cumulus Linux release"):
        spell(TREE, release)


def test_the_table_names_the_release_and_source_of_every_row():
    rows = _nvue_keys.table()
    assert {r["path"] for r in rows} >= {"qos.roce", "router.bgp", "vrf.*.router.bgp", "system.config.auto-save",
                                         "router.adaptive-routing", "interface.*.router.adaptive-routing"}
    assert {r["since"] for r in rows} == {"5.10.0", "5.15.0"}
    assert all(r["source"].startswith("CumulusNetworks/docs content/cumulus-linux-5") for r in rows)
