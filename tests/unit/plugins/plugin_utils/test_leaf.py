"""The leaf side (plugin_utils/_leaf.py): one RoCE QoS model for host and leaf, their consistency rules, the leaf's
NVUE tree from the rail plan, and the leaf gate on live state - with literal tables."""
import copy

import pytest

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _leaf
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._leaf import (
    LeafError, host_qos, leaf_config, leaf_qos, leaf_qos_tree, qos_mismatches, readiness)

HOST = {}  # the roce_qos defaults: trust dscp, PFC [3], ToS 106 (DSCP 26), CNP DSCP 48 on priority 6


def test_the_host_model_of_the_roce_qos_defaults():
    assert host_qos(HOST) == {"trust": "dscp", "pfc": [3], "ecn": [3], "roce_dscp": 26, "roce_priority": 3,
                              "cnp_dscp": 48, "cnp_priority": 6}


def test_nvue_s_roce_lossless_defaults_match_the_host_defaults():
    """`nv set qos roce` alone (mode lossless and its defaults) is consistent with the roce_qos defaults."""
    leaf = leaf_qos({"roce": {"enable": "on", "mode": "lossless"}})
    assert leaf["trust"] == ["dscp", "pcp"] and leaf["pfc"] == [3] and leaf["dscp"][26] == 3 and leaf["dscp"][48] == 6
    assert leaf["ecn_tcs"] == [0, 3]
    assert qos_mismatches(host_qos(HOST), leaf) == []


def test_the_tree_made_for_a_host_is_consistent_with_it_for_every_setting():
    for settings in ({}, {"pfc_priorities": [4], "cma_roce_tos": 138}, {"cnp_dscp": 46, "cnp_802p_prio": 7},
                     {"trust": "pcp"}, {"pfc_priorities": [2, 5], "ecn_priorities": [2], "cma_roce_tos": 66}):
        host = host_qos(settings)
        assert qos_mismatches(host, leaf_qos(leaf_qos_tree(host))) == [], settings


@pytest.mark.parametrize("tree, words", [
    ({"roce": {"enable": "on", "mode": "lossy"}}, "RoCE mode is lossy, the host has PFC on priorities [3]"),
    ({"roce": {"enable": "off"}}, "RoCE is not enabled on the leaf"),
    ({}, "RoCE is not enabled on the leaf"),
    ({"roce": {"mode": "lossless"}}, "RoCE is not enabled on the leaf"),  # the spec's default: enable off
    ({"roce": {"state": "disabled", "mode": "lossless"}}, "RoCE is not enabled on the leaf"),  # 5.15 spelling
    ({"roce": {"state": "enabled", "mode": "lossy"}}, "RoCE mode is lossy, the host has PFC on priorities [3]"),
    ({"roce": {"enable": "on", "mode": "lossless"}, "mapping": {"default-global": {"trust": "l2"}}},
     "trust: the host classifies by dscp, the leaf trusts pcp"),
    ({"roce": {"enable": "on", "mode": "lossless"}, "pfc": {"default-global": {"switch-priority": {"4": {}}}}},
     "PFC priorities: the host has [3], the leaf [4]"),
    ({"roce": {"enable": "on", "mode": "lossless"}, "mapping": {"default-global": {"dscp": {"26": {"switch-priority": 0}}}}},
     "RoCE DSCP 26: the host sends it on priority 3, the leaf maps it to switch priority 0"),
    ({"roce": {"enable": "on", "mode": "lossless"}, "mapping": {"default-global": {"dscp": {"48": {"switch-priority": 5}}}}},
     "CNP DSCP 48: the host sends CNPs on priority 6, the leaf maps DSCP 48 to switch priority 5"),
    ({"roce": {"enable": "on", "mode": "lossless"}, "congestion-control": {"default-global": {"traffic-class": {"3": {"ecn": "disable"}}}}},
     "ECN: the host marks RoCE priority 3, the leaf has no ECN on its traffic class 3 (ECN on [0])"),
    ({"roce": {"enable": "on", "mode": "lossless"}, "egress-queue-mapping": {"default-global": {"switch-priority": {
        "3": {"traffic-class": 1}}}}}, "no ECN on its traffic class 1"),
])
def test_each_mismatch_is_named_with_both_values(tree, words):
    found = qos_mismatches(host_qos(HOST), leaf_qos(tree))
    assert any(words in w for w in found), found


@pytest.mark.parametrize("roce", [{"state": "on"}, {"enable": "enabled"}, {"enable": "on", "state": "disabled"}])
def test_a_roce_switch_the_release_table_does_not_know_is_refused(roce):
    with pytest.raises(Exception, match="qos.roce"):
        leaf_qos({"roce": roce})


def test_a_host_setting_that_is_bad_is_the_roce_qos_module_s_own_error():
    with pytest.raises(Exception, match="pfc_priorities"):
        host_qos({"pfc_priorities": [9]})


P2P = {"rail": 0, "su": 1, "network": "198.18.0.0/26", "address": None, "racks": ["r01"], "port_template": None,
       "ports": {"swp1": "srv-a", "swp2": "srv-b"},
       "cables": {"swp1": {"host": "srv-a", "interface": "enp24s0np0", "rail": 0, "address": "198.18.0.0/31",
                           "cable_label": "srv-a:enp24s0np0 -> leaf1:swp1"},
                  "swp2": {"host": "srv-b", "interface": "enp24s0np0", "rail": 0, "address": "198.18.0.2/31",
                           "cable_label": "srv-b:enp24s0np0 -> leaf1:swp2"}}}
SUBNET = dict(P2P, address="198.18.0.1/26",
              cables={p: dict(c, address=None) for p, c in P2P["cables"].items()})


def test_a_p2p31_leaf_gets_one_address_per_port_the_mtu_and_the_cable_label():
    tree = leaf_config("leaf1", P2P, {})
    assert tree == {"interface": {
        "swp1": {"type": "swp", "link": {"state": {"up": {}}, "mtu": 9216}, "description": "srv-a:enp24s0np0 -> leaf1:swp1",
                 "ip": {"address": {"198.18.0.0/31": {}}}},
        "swp2": {"type": "swp", "link": {"state": {"up": {}}, "mtu": 9216}, "description": "srv-b:enp24s0np0 -> leaf1:swp2",
                 "ip": {"address": {"198.18.0.2/31": {}}}}}}


def test_an_su_subnet_leaf_bridges_its_ports_into_one_vlan_with_the_gateway_on_the_svi():
    tree = leaf_config("leaf1", SUBNET, {"vlan": 20, "speed": "400G", "qos": {}})
    assert tree["interface"]["swp1"]["bridge"] == {"domain": {"br_default": {"access": 20}}}
    assert tree["interface"]["swp1"]["link"]["speed"] == "400G" and "ip" not in tree["interface"]["swp1"]
    assert tree["interface"]["vlan20"] == {"type": "svi", "vlan": 20, "ip": {"address": {"198.18.0.1/26": {}}},
                                           "link": {"mtu": 9216}}
    assert tree["bridge"] == {"domain": {"br_default": {"vlan": {"20": {}}}}}
    assert tree["qos"]["roce"] == {"enable": "on", "mode": "lossless"}
    assert tree["qos"]["pfc"] == {"default-global": {"switch-priority": {"3": {}}}}
    assert tree["qos"]["traffic-pool"] == {"roce-lossless": {"switch-priority": {"3": {}}}}


@pytest.mark.parametrize("settings, words", [
    ({"mtu": 9300}, "leaf1: mtu=9300 is not allowed (allowed: 552-9216)"),
    ({"mtu": True}, "mtu=True"),
    ({"speed": "400 G"}, "speed='400 G' is not allowed"),
    ({"vlan": 4095}, "vlan=4095 is not allowed (allowed: a VLAN id 1-4094)"),
])
def test_bad_leaf_settings_name_the_leaf_and_the_parameter(settings, words):
    with pytest.raises(LeafError) as err:
        leaf_config("leaf1", P2P, settings)
    assert words in err.value.msg and err.value.device == "leaf1"


def _port(**kw):
    state = {"admin_status": "up", "oper_status": "up", "speed": "400G", "mtu": 9216, "protodown": False,
             "protodown_reason": None, "description": None,
             "lldp": [{"system_name": kw.pop("host", "srv-a"), "chassis_id": None, "port": kw.pop("ifname", "enp24s0np0"),
                       "description": None}]}
    state.update(kw)
    return state


def _info(**ports):
    interfaces = {"swp1": _port(), "swp2": _port(host="srv-b")}
    interfaces.update(ports)
    return {"system": {"release": "5.9.1"}, "revisions": {"pending": [], "unsaved": False},
            "qos": {"applied": {"roce": {"enable": "on", "mode": "lossless"}}}, "interfaces": interfaces}


EXPECTED = {"release": "5.9.1", "mtu": 9216, "speed": "400G"}
QOS = {"srv-a": {}, "srv-b": {}}


def test_a_ready_leaf_holds_nobody():
    assert readiness("leaf1", P2P, _info(), EXPECTED, hosts_qos=QOS) == {
        "ready": True, "leaf": [], "ports": {}, "hosts": {}, "held": []}


@pytest.mark.parametrize("info_change, words", [
    (lambda i: i["system"].update(release="5.4.0"), "leaf1 runs Cumulus Linux 5.4.0, the matrix pins 5.9.1"),
    (lambda i: i["revisions"].update(unsaved=True), "the applied configuration is not saved"),
])
def test_a_leaf_wide_problem_holds_every_host_of_the_leaf(info_change, words):
    info = _info()
    info_change(info)
    result = readiness("leaf1", P2P, info, EXPECTED, hosts_qos=QOS)
    assert not result["ready"] and result["held"] == ["srv-a", "srv-b"]
    assert any(words in w for w in result["leaf"]), result["leaf"]


def test_a_leaf_whose_qos_differs_holds_the_hosts_it_differs_from():
    info = _info()
    info["qos"]["applied"]["pfc"] = {"default-global": {"switch-priority": {"4": {}}}}
    result = readiness("leaf1", P2P, info, EXPECTED, hosts_qos={"srv-a": {}, "srv-b": {"pfc_priorities": [4]}})
    assert result["held"] == ["srv-a"] and not result["ready"]
    assert result["hosts"]["srv-a"] == ["leaf1: RoCE QoS differs from srv-a's: PFC priorities: the host has [3], "
                                        "the leaf [4] (they must be the same set)"]
    info["qos"]["applied"]["roce"]["mode"] = "lossy"
    result = readiness("leaf1", P2P, info, EXPECTED, hosts_qos=QOS)
    assert result["held"] == ["srv-a", "srv-b"]
    assert any("the leaf's RoCE mode is lossy" in w for w in result["hosts"]["srv-b"])


@pytest.mark.parametrize("port, words", [
    (_port(oper_status="down"), "leaf1:swp1 (cable srv-a:enp24s0np0 -> leaf1:swp1) is down"),
    (_port(protodown=True, protodown_reason="linkflap"), "is in protodown (linkflap)"),
    (_port(speed="100G"), "runs at 100G, expected 400G"),
    (_port(mtu=1500), "has MTU 1500, expected 9216"),
    (_port(lldp=[]), "has no LLDP neighbour (expected srv-a:enp24s0np0)"),
    (_port(host="srv-z", ifname="eth0"), "sees srv-z:eth0 as LLDP neighbour, expected srv-a:enp24s0np0"),
])
def test_a_port_problem_holds_only_the_host_on_that_port(port, words):
    result = readiness("leaf1", P2P, _info(swp1=port), EXPECTED)
    assert not result["ready"] and result["held"] == ["srv-a"]
    assert any(words in w for w in result["ports"]["swp1"]), result["ports"]
    assert result["hosts"]["srv-a"] == result["ports"]["swp1"]


def test_a_missing_port_is_named():
    info = _info()
    del info["interfaces"]["swp2"]
    assert readiness("leaf1", P2P, info, EXPECTED)["ports"] == {
        "swp2": ["leaf1:swp2 (cable srv-b:enp24s0np0 -> leaf1:swp2) is not a port of the switch"]}


def test_swapped_cables_are_named_with_both_cable_labels():
    info = _info(swp1=_port(host="srv-b"), swp2=_port(host="srv-a"))
    result = readiness("leaf1", P2P, info, EXPECTED, plan_leaves={"leaf1": P2P})
    assert result["held"] == ["srv-a", "srv-b"]
    assert result["ports"]["swp1"] == [
        "leaf1:swp1 sees srv-b:enp24s0np0, which the cabling plan puts on leaf1:swp2 - cables swapped? this port's "
        "cable is srv-a:enp24s0np0 -> leaf1:swp1, the one seen is srv-b:enp24s0np0 -> leaf1:swp2"]


class _Watched(dict):
    """The plan's leaves, counting how often they are walked."""
    walks = 0

    def items(self):
        type(self).walks += 1
        return super().items()


def test_a_ready_leaf_does_not_walk_the_plan_of_every_leaf():
    # 320 leaves' cables per leaf gate, once per leaf, was the square of the leaves on example-1250
    _Watched.walks = 0
    plan_leaves = _Watched({"leaf1": P2P, "leaf2": {"cables": "not cables"}})
    assert readiness("leaf1", P2P, _info(), EXPECTED, plan_leaves=plan_leaves)["ready"]
    assert _Watched.walks == 0


def test_the_plan_of_every_leaf_is_checked_when_a_seen_cable_is_looked_up():
    info = _info(swp1=_port(host="srv-b"), swp2=_port(host="srv-a"))
    with pytest.raises(_leaf.LeafError, match=r"leaf1: plan_leaves.leaf2.cables must be a mapping of cables, not "):
        readiness("leaf1", P2P, info, EXPECTED, plan_leaves={"leaf1": P2P, "leaf2": {"cables": "not cables"}})
    with pytest.raises(_leaf.LeafError, match=r"leaf1: plan_leaves must be a mapping of leaf entries, not "):
        readiness("leaf1", P2P, _info(), EXPECTED, plan_leaves=["leaf1"])


def test_unset_expectations_are_not_checked():
    info = _info(swp1=_port(speed="100G", mtu=1500))
    info["system"]["release"] = "5.4.0"
    assert readiness("leaf1", P2P, info, {"release": None, "mtu": None, "speed": None})["ready"]


def test_readiness_does_not_change_its_inputs():
    info, entry = _info(swp1=_port(oper_status="down")), copy.deepcopy(P2P)
    before = copy.deepcopy((info, entry))
    readiness("leaf1", entry, info, EXPECTED, plan_leaves={"leaf1": entry})
    assert (info, entry) == before


def test_defaults_are_nvue_s_documented_tables():
    assert [d for d, sp in _leaf.DEFAULT_DSCP.items() if sp == 3] == list(range(24, 32))
    assert [d for d, sp in _leaf.DEFAULT_DSCP.items() if sp == 6] == list(range(48, 56))


def test_the_filters_name_the_leaf_on_bad_input():
    from ansible.errors import AnsibleFilterError

    from ansible_collections.gpufabric.mlnx.plugins.filter.leaf import FilterModule
    filters = FilterModule().filters()
    with pytest.raises(AnsibleFilterError, match=r"leaf1: entry.cables.swp1 must be cables"):
        filters["leaf_config"]({"cables": {"swp1": "srv-a"}}, "leaf1")
    with pytest.raises(AnsibleFilterError, match=r"leaf1: info.interfaces.swp1.lldp must be a list of neighbours"):
        filters["leaf_readiness"]({"interfaces": {"swp1": {"lldp": "srv-a"}}}, "leaf1", P2P)
    assert filters["roce_qos_settings"]({"gpufabric_roce_qos_pfc_priorities": [4]})["pfc_priorities"] == [4]
    assert filters["roce_qos_settings"]({})["cma_roce_tos"] == 106  # the role's default
    assert filters["leaf_qos_problems"]({"gpufabric_roce_qos_trust": "dscp"} and {}, {"roce": {"state": "enabled"}}) == []


FABRIC = {"rails": 2, "su_prefix": 26, "racks_per_su": 1, "addressing": "p2p31",
          "pools": {"rail0": "198.18.0.0/20", "rail1": "198.18.16.0/20"},
          "nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]}, "interface_names": ["enp24s0np0", "enp64s0np0"]}


def _inventory(server_extra=None, leaf_extra=None):
    from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import plan
    servers = {"srv-a": {"rack": "r01", "position": 1}, "srv-b": {"rack": "r01", "position": 2}}
    hostvars = {name: dict(v, gpufabric_fabric=FABRIC, **(server_extra or {})) for name, v in servers.items()}
    for leaf in ("su1-leaf-rail0", "su1-leaf-rail1"):
        hostvars[leaf] = dict(gpufabric_fabric=FABRIC, ansible_connection="ansible.netcommon.httpapi",
                              ansible_network_os="gpufabric.mlnx.nvue", ansible_user="cumulus", ansible_password="x",
                              **(leaf_extra or {}).get(leaf, {}))
    return hostvars


def _problems(hostvars):
    from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._preflight import inventory_problems
    return [p for p in inventory_problems(["srv-a", "srv-b"], hostvars, fabric=FABRIC, rail_hosts=["srv-a", "srv-b"],
                                          leaf_hosts=["su1-leaf-rail0", "su1-leaf-rail1"])
            if "gpufabric_matrix" not in p]


def test_the_preflight_finds_a_leaf_whose_qos_variables_differ_from_its_servers_before_anything_changes():
    assert _problems(_inventory()) == []
    found = _problems(_inventory(leaf_extra={"su1-leaf-rail1": {"gpufabric_roce_qos_pfc_priorities": [4]}}))
    assert found == ["2 hosts (srv-a, srv-b) and their leaf su1-leaf-rail1: RoCE QoS would differ: PFC priorities: "
                     "the host has [3], the leaf [4] (they must be the same set) (the leaf role configures a leaf from "
                     "the gpufabric_roce_qos_* variables the leaf sees; give the leaves the servers' values)"]


def test_the_preflight_finds_rails_above_the_leaf_mtu():
    found = _problems(_inventory(server_extra={"gpufabric_rails_mtu": 9000},
                                 leaf_extra={"su1-leaf-rail0": {"gpufabric_leaf_mtu": 4200}}))
    assert found == ["2 hosts (srv-a, srv-b) and their leaf su1-leaf-rail0: the rails' MTU 9000 (gpufabric_rails_mtu) "
                     "is above the leaf ports' 4200 (gpufabric_leaf_mtu): frames would be dropped"]
