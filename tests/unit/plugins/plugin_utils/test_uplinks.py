"""The leaves' uplinks to the spines (plugin_utils/_uplinks.py through the rail plan, _leaf.py's leaf_config and
readiness, issue 13 section 3): nothing changes without spines; with spines every leaf gets its uplink ports, the
spine ports numbered by its place in its plane, an ASN and a loopback; bad inputs are named; the leaf's NVUE tree
carries the uplinks and BGP unnumbered; the gate holds every server of a leaf whose uplink is down or miscabled."""
import copy
import re

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _example import example_1250
from _paths import REPO
from ansible_collections.gpufabric.mlnx.plugins.filter.rail_plan import FilterModule
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _rail_plan as rp
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._leaf import LeafError, leaf_config, readiness

# Two rails, two SUs of one rack of two servers: four leaves, 4 server-facing ports each.
FABRIC = {
    "rails": 2, "su_prefix": 26, "racks_per_su": 1, "leaf_ports": 4,
    "pools": {"rail0": "198.18.0.0/24", "rail1": "198.18.1.0/24"},
    "nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]}, "interface_names": ["enp24s0np0", "enp64s0np0"],
    "leaf_name": "su{su:02d}-leaf-rail{rail}", "mgmt_subnets": ["198.19.0.0/16"],
    "uplinks": {"loopbacks": "198.18.128.0/24"},
}
HOSTS = [{"name": "srv-r%02d-%02d" % (rack, pos), "rack": "r%02d" % rack, "position": pos}
         for rack in (1, 2) for pos in (1, 2)]
LEAVES = ["su01-leaf-rail0", "su01-leaf-rail1", "su02-leaf-rail0", "su02-leaf-rail1"]
SPINES = {"spine10": {}, "spine9": None}   # natural order: spine9 first


def fabric(**uplinks):
    out = copy.deepcopy(FABRIC)
    out["uplinks"].update(uplinks)
    return out


def problems_of(fab, spines=None, leaves=None, hosts=None):
    spines = SPINES if spines is None else spines
    with pytest.raises(rp.RailPlanError) as err:
        rp.plan(hosts or HOSTS, fab, leaves, spines)
    assert err.value.problems == rp.plan_problems(hosts or HOSTS, fab, leaves, spines)
    return err.value.problems


def uplinks(result, leaf):
    return {port: (u["spine"], u["spine_port"]) for port, u in result["leaves"][leaf]["uplinks"].items()}


# ---------------------------------------------------------------- the plan

@pytest.mark.parametrize("spines", [None, {}])
def test_without_spines_the_plan_is_the_same_as_before(spines):
    assert rp.plan(HOSTS, FABRIC, None, spines) == rp.plan(HOSTS, {k: v for k, v in FABRIC.items() if k != "uplinks"})
    assert "uplinks" not in rp.plan(HOSTS, FABRIC, None, spines)["leaves"]["su01-leaf-rail0"]


def test_every_leaf_goes_to_every_spine_after_its_server_ports_numbered_by_its_place():
    result = rp.plan(HOSTS, FABRIC, None, SPINES)
    # leaf order (SU, rail, name): su01 rail0, su01 rail1, su02 rail0, su02 rail1 -> spine ports swp1..swp4
    for place, leaf in enumerate(LEAVES):
        assert uplinks(result, leaf) == {"swp5": ("spine9", "swp%d" % (place + 1)),
                                         "swp6": ("spine10", "swp%d" % (place + 1))}
        entry = result["leaves"][leaf]
        assert entry["asn"] == 4200000000 + place and entry["loopback"] == "198.18.128.%d/32" % place
    assert result["leaves"]["su02-leaf-rail1"]["uplinks"]["swp6"]["cable_label"] == \
        "su02-leaf-rail1:swp6 -> spine10:swp4"


def test_rail_planes_number_each_spine_s_ports_by_the_leaf_s_place_in_its_rail():
    spines = {"sp-r0-a": {"gpufabric_spine_plane": 0}, "sp-r1-a": {"gpufabric_spine_plane": 1},
              "sp-r0-b": {"gpufabric_spine_plane": 0}}
    result = rp.plan(HOSTS, fabric(planes="rail", per_spine=2, ports=33, spine_port="swp{port}s0",
                                   spine_port_base=0), None, spines)
    assert uplinks(result, "su02-leaf-rail0") == {
        "swp33": ("sp-r0-a", "swp2s0"), "swp34": ("sp-r0-a", "swp3s0"),
        "swp35": ("sp-r0-b", "swp2s0"), "swp36": ("sp-r0-b", "swp3s0")}
    assert uplinks(result, "su01-leaf-rail1") == {"swp33": ("sp-r1-a", "swp0s0"), "swp34": ("sp-r1-a", "swp1s0")}
    assert uplinks(result, "su02-leaf-rail1") == {"swp33": ("sp-r1-a", "swp2s0"), "swp34": ("sp-r1-a", "swp3s0")}


def test_an_su_planned_alone_gets_the_numbers_it_has_in_the_whole_site():
    # SU 2 alone (its servers carry su: 2, as a job of one SU sees them): the same ASN, loopback and spine ports as in
    # test_every_leaf_goes_to_every_spine_... (places 2 and 3 of four)
    alone = rp.plan([dict(h, su=2) for h in HOSTS if h["rack"] == "r02"], FABRIC, None, SPINES)
    assert sorted(alone["leaves"]) == ["su02-leaf-rail0", "su02-leaf-rail1"]
    assert [(e["asn"], e["loopback"]) for _n, e in sorted(alone["leaves"].items())] == [
        (4200000002, "198.18.128.2/32"), (4200000003, "198.18.128.3/32")]
    assert uplinks(alone, "su02-leaf-rail1") == {"swp5": ("spine9", "swp4"), "swp6": ("spine10", "swp4")}
    assert alone["leaves"] == {k: v for k, v in rp.plan(HOSTS, FABRIC, None, SPINES)["leaves"].items()
                               if k.startswith("su02")}


def test_with_a_leaf_per_rack_each_su_owns_rails_x_racks_per_su_numbers():
    # 2 racks per SU, a leaf per rack and rail: SU 1 holds numbers 0-3, SU 2 4-7 - also when SU 1 has one rack only;
    # within an SU in (rail, name) order
    fab = dict(copy.deepcopy(FABRIC), racks_per_su=2, leaf_name="{rack}-leaf-rail{rail}", addressing="p2p31")
    hosts = [{"name": "a1", "rack": "r01", "position": 1, "su": 1},
             {"name": "c1", "rack": "r03", "position": 1, "su": 2}, {"name": "d1", "rack": "r04", "position": 1, "su": 2}]
    result = rp.plan(hosts, fab, None, SPINES)
    assert {n: e["asn"] - 4200000000 for n, e in result["leaves"].items()} == {
        "r01-leaf-rail0": 0, "r01-leaf-rail1": 1, "r03-leaf-rail0": 4, "r04-leaf-rail0": 5,
        "r03-leaf-rail1": 6, "r04-leaf-rail1": 7}
    assert uplinks(result, "r04-leaf-rail1")["swp5"] == ("spine9", "swp8")
    # one rack more than racks_per_su in SU 2: its block of 4 numbers is full
    problems = problems_of(fab, hosts=hosts + [{"name": "e1", "rack": "r05", "position": 1, "su": 2}])
    # (SU, rail, name) order: r03, r04, r05 of rail 0 take 4-6, r03 of rail 1 the block's last; r04 of rail 1 is over
    assert problems == ["leaves.r04-leaf-rail1: SU 2 has 6 leaves, more than the 4 numbers each SU owns for ASNs, "
                        "loopbacks and spine ports (rails x racks_per_su with a leaf per rack): raise "
                        "gpufabric_fabric.racks_per_su, or give the SU's racks to another su"]


@pytest.mark.parametrize("pool, problem", [
    ("198.18.128.0/30", None),                                  # 4 addresses for numbers 0-3: exactly enough
    ("198.18.128.0/31", "gpufabric_fabric.uplinks.loopbacks: exhausted: 198.18.128.0/31 holds 2 addresses for 4 "
                        "leaves (one /32 each; the numbers of the SUs before su02-leaf-rail1's count too)"),
])
def test_an_su_alone_needs_the_loopbacks_of_the_sus_before_it(pool, problem):
    hosts = [dict(h, su=2) for h in HOSTS if h["rack"] == "r02"]
    if problem is None:
        assert rp.plan(hosts, fabric(loopbacks=pool), None, SPINES)["leaves"]["su02-leaf-rail1"]["loopback"] == \
            "198.18.128.3/32"
    else:
        assert problems_of(fabric(loopbacks=pool), hosts=hosts) == [problem]


def test_a_port_template_with_a_breakout_puts_the_uplinks_on_the_cages_after_the_server_cages():
    fab = fabric()
    fab["port_templates"] = {"sn5600-2x": {"leaf_port": "swp{cage}s{lane}", "breakout": 2, "leaf_ports": 4}}
    leaves = {leaf: {} for leaf in LEAVES}
    leaves["su02-leaf-rail0"] = {"gpufabric_leaf_port_template": "sn5600-2x", "gpufabric_leaf_asn": 65101}
    result = rp.plan(HOSTS, fab, leaves, SPINES)
    assert list(result["leaves"]["su02-leaf-rail0"]["uplinks"]) == ["swp3", "swp4"]   # cages 1-2 go to servers
    assert list(result["leaves"]["su01-leaf-rail0"]["uplinks"]) == ["swp5", "swp6"]
    assert result["leaves"]["su02-leaf-rail0"]["asn"] == 65101
    assert result["leaves"]["su02-leaf-rail1"]["asn"] == 4200000003


def test_a_list_of_ports_is_used_in_spine_order():
    result = rp.plan(HOSTS, fabric(ports=["swp64", "swp63"]), None, SPINES)
    assert uplinks(result, "su01-leaf-rail0") == {"swp64": ("spine9", "swp1"), "swp63": ("spine10", "swp1")}


def test_the_filters_take_the_spines_group():
    filters = FilterModule().filters()
    hostvars = {"spine9": {"gpufabric_spine_plane": 1, "other": 2}, "spine10": {}}
    assert filters["rail_plan_spines"](["spine9", "spine10"], hostvars) == {
        "spine9": {"gpufabric_spine_plane": 1}, "spine10": {}}
    assert filters["rail_plan_spines"](None, hostvars) is None
    spines = filters["rail_plan_spines"](["spine9", "spine10"], {"spine9": {}, "spine10": {}})
    assert "uplinks" in filters["rail_plan"](HOSTS, FABRIC, None, spines)["leaves"]["su01-leaf-rail0"]
    assert filters["rail_plan_problems"](HOSTS, fabric(spine_ports=3), None, spines)


@pytest.mark.parametrize("changes, spines, words", [
    ({"loopbacks": None}, None, "gpufabric_fabric.uplinks.loopbacks: required: the inventory has 2 spines"),
    ({"loopbacks": "198.18.128.0/31"}, None,
     "gpufabric_fabric.uplinks.loopbacks: exhausted: 198.18.128.0/31 holds 2 addresses for 4 leaves"),
    ({"loopbacks": "198.18.1.0/28"}, None,
     "gpufabric_fabric.uplinks.loopbacks: 198.18.1.0/28 overlaps gpufabric_fabric.pools.rail1 (198.18.1.0/24)"),
    ({"loopbacks": ["198.18.128.0/28", "198.19.0.0/28"]}, None,
     "gpufabric_fabric.uplinks.loopbacks[1]: 198.19.0.0/28 overlaps gpufabric_fabric.mgmt_subnets[0]"),
    ({"per_spine": 3}, None, "leaves.su01-leaf-rail0: needs 6 uplink ports (2 spines x per_spine 3) but has 4 (the "
                             "server-facing cages of gpufabric_fabric.leaf_ports)"),
    ({"ports": ["swp9"]}, None, "leaves.su01-leaf-rail0: needs 2 uplink ports (2 spines x per_spine 1) but has 1 "
                                "(gpufabric_fabric.uplinks.ports)"),
    ({"leaf_uplinks": 1}, None, "but has 1 (gpufabric_fabric.uplinks.leaf_uplinks)"),
    ({"ports": 2}, None, "leaves.su01-leaf-rail0: uplink port swp2 is also a server-facing port (cabled to "
                         "srv-r01-02)"),
    ({"ports": 4}, None, "leaves.su01-leaf-rail0: uplink port swp4 is on a server-facing cage (swp1 to swp4: "
                         "gpufabric_fabric.leaf_ports)"),
    ({"ports": ["eth0"]}, None, "gpufabric_fabric.uplinks.ports[0]: \"eth0\" is not a leaf port such as swp33"),
    ({"spine_ports": 3}, None, "spines.spine9: needs 4 leaf-facing ports (4 leaves x per_spine 1) but has 3 "
                               "(gpufabric_fabric.uplinks.spine_ports); so do spine10"),
    ({"spine_port": "swp{rail}"}, None, "gpufabric_fabric.uplinks.spine_port: \"swp{rail}\" must contain {port} and "
                                        "no other field"),
    ({"asn_base": 4294967293}, None, "gpufabric_fabric.uplinks.asn_base: 4294967293 + 4 leaves passes the largest "
                                     "ASN 4294967294"),
    ({"planes": "su"}, None, "gpufabric_fabric.uplinks.planes: must be one of none, rail, not"),
    ({"speed": 1}, None, "gpufabric_fabric.uplinks.speed: unknown key (allowed: ports, per_spine"),
    ({"planes": "rail"}, None, "spines.spine10.gpufabric_spine_plane: required with gpufabric_fabric.uplinks.planes "
                               "rail: the rail whose leaves this spine takes (0 to 1)"),
    ({"planes": "rail"}, {"s1": {"gpufabric_spine_plane": 0}},
     "gpufabric_fabric.uplinks.planes: rail 1 has 2 leaves (su01-leaf-rail1, ...) and no spine"),
    ({"planes": "rail"}, {"s1": {"gpufabric_spine_plane": 2}}, "spines.s1.gpufabric_spine_plane: must be from 0 to 1"),
    ({}, {"s1": {"gpufabric_spine_plane": 0}}, "spines.s1.gpufabric_spine_plane: only with "
                                               "gpufabric_fabric.uplinks.planes rail"),
    ({}, ["s1"], "spines: must be a mapping of each spine"),
])
def test_bad_uplinks_are_named(changes, spines, words):
    problems = problems_of(fabric(**changes), spines)
    assert any(words in p for p in problems), problems


def test_the_docs_uplink_problems_are_real():
    """Each line of docs/rails.md's uplink problems block is the first problem the plan names for one case."""
    block = [b for b in re.findall(r"```text\n(.*?)```", (REPO / "docs" / "rails.md").read_text(), re.S)
             if b.startswith("- gpufabric_fabric.uplinks")]
    assert len(block) == 1
    cases = [({"planes": "rail"}, {"s1": {"gpufabric_spine_plane": 0}}), ({"loopbacks": "198.18.1.0/28"}, None),
             ({"per_spine": 3}, None), ({"spine_ports": 3}, None)]
    real = ["- %s" % problems_of(fabric(**changes), spines)[0] for changes, spines in cases]
    assert block[0].splitlines() == real


def test_a_switch_in_both_groups_and_a_leaf_asn_twice_are_named():
    leaves = {leaf: {} for leaf in LEAVES}
    leaves["su01-leaf-rail1"] = {"gpufabric_leaf_asn": 4200000000}
    problems = problems_of(FABRIC, dict(SPINES, **{"su02-leaf-rail0": {}}), leaves)
    assert "spines.su02-leaf-rail0: is in both the leaves group (gpufabric_leaf_group) and the spines group" in \
        problems[0]
    assert any("leaves.su01-leaf-rail1: ASN 4200000000 is also su01-leaf-rail0's" in p for p in problems), problems


# ---------------------------------------------------------------- the example inventory

def test_the_example_inventory_plans_two_uplinks_per_leaf_one_plane_per_rail():
    servers, leaves, _addresses, spines, fab = example_1250()
    result = rp.plan(servers, fab, leaves, spines)
    entries = result["leaves"].values()
    assert len(spines) == 16 and all(list(e["uplinks"]) == ["swp33", "swp34"] for e in entries)
    assert len({e["asn"] for e in entries}) == len({e["loopback"] for e in entries}) == 320
    seen = {}
    for leaf, entry in result["leaves"].items():
        for uplink in entry["uplinks"].values():
            assert spines[uplink["spine"]]["gpufabric_spine_plane"] == entry["rail"]
            seen.setdefault(uplink["spine"], set()).add(uplink["spine_port"])
    assert all(ports == {"swp%d" % n for n in range(1, 41)} for ports in seen.values()) and len(seen) == 16
    block = [b for b in re.findall(r"```yaml\n(.*?)```", (REPO / "docs" / "rails.md").read_text(), re.S)
             if b.startswith('# plan.leaves["su40-leaf-rail7"] of the example, with its uplinks')]
    documented = yaml.safe_load(block[0])
    real = result["leaves"]["su40-leaf-rail7"]
    assert documented == {key: real[key] for key in ("uplinks", "asn", "loopback")}
    assert "uplinks" not in rp.plan(servers, fab, leaves)["leaves"]["su40-leaf-rail7"]


# ---------------------------------------------------------------- leaf_config

PLAN = rp.plan(HOSTS, FABRIC, None, SPINES)
P2P = rp.plan(HOSTS, dict(FABRIC, addressing="p2p31"), None, SPINES)


def test_the_leaf_tree_has_the_uplinks_the_loopback_and_bgp_unnumbered_to_each_spine():
    tree = leaf_config("su01-leaf-rail1", PLAN["leaves"]["su01-leaf-rail1"], {"mtu": 9000, "speed": "400G"})
    assert tree["interface"]["swp5"] == {"type": "swp", "link": {"state": {"up": {}}, "mtu": 9000},
                                         "description": "su01-leaf-rail1:swp5 -> spine9:swp2"}
    assert tree["interface"]["swp1"]["link"]["speed"] == "400G"   # the server-facing speed is not the uplinks'
    assert tree["interface"]["lo"] == {"type": "loopback", "ip": {"address": {"198.18.128.1/32": {}}}}
    assert tree["router"] == {"bgp": {"enable": "on", "autonomous-system": 4200000001, "router-id": "198.18.128.1"}}
    assert tree["vrf"] == {"default": {"router": {"bgp": {
        "enable": "on",
        "neighbor": {"swp5": {"remote-as": "external", "type": "unnumbered"},
                     "swp6": {"remote-as": "external", "type": "unnumbered"}},
        "address-family": {"ipv4-unicast": {"enable": "on", "network": {
            "198.18.128.1/32": {}, "198.18.1.0/26": {}}}}}}}}


def test_a_p2p31_leaf_advertises_each_server_link():
    tree = leaf_config("su01-leaf-rail0", P2P["leaves"]["su01-leaf-rail0"], {})
    assert list(tree["vrf"]["default"]["router"]["bgp"]["address-family"]["ipv4-unicast"]["network"]) == [
        "198.18.128.0/32", "198.18.0.0/31", "198.18.0.2/31"]


def test_without_spines_the_leaf_tree_has_no_bgp():
    tree = leaf_config("su01-leaf-rail0", rp.plan(HOSTS, FABRIC)["leaves"]["su01-leaf-rail0"], {})
    assert set(tree) == {"interface", "bridge"} and "lo" not in tree["interface"]


def test_an_entry_with_uplinks_but_no_asn_is_named():
    entry = dict(PLAN["leaves"]["su01-leaf-rail0"])
    del entry["asn"]
    with pytest.raises(LeafError, match="su01-leaf-rail0: a rail plan entry with uplinks needs asn and loopback"):
        leaf_config("su01-leaf-rail0", entry, {})


# ---------------------------------------------------------------- readiness

def _port(system_name, port, **kw):
    state = {"admin_status": "up", "oper_status": "up", "speed": "400G", "mtu": 9216, "protodown": False,
             "protodown_reason": None, "description": None,
             "lldp": [{"system_name": system_name, "chassis_id": None, "port": port, "description": None}]}
    state.update(kw)
    return state


def _info(leaf, **ports):
    entry = PLAN["leaves"][leaf]
    interfaces = {port: _port(c["host"], c["interface"]) for port, c in entry["cables"].items()}
    interfaces.update({port: _port(u["spine"], u["spine_port"], speed="800G") for port, u in entry["uplinks"].items()})
    interfaces.update(ports)
    return {"system": {"release": "5.9.1"}, "revisions": {"pending": [], "unsaved": False}, "qos": {},
            "interfaces": interfaces}


EXPECTED = {"release": "5.9.1", "mtu": 9216, "speed": "400G"}
LEAF = "su01-leaf-rail0"


def gate(info, leaf=LEAF):
    return readiness(leaf, PLAN["leaves"][leaf], info, EXPECTED, plan_leaves=PLAN["leaves"])


def test_a_leaf_with_its_uplinks_up_to_the_planned_spines_is_ready():
    assert gate(_info(LEAF)) == {"ready": True, "leaf": [], "ports": {}, "hosts": {}, "held": []}


@pytest.mark.parametrize("port, words", [
    (_port("spine10", "swp1", oper_status="down", lldp=[]),
     "uplink su01-leaf-rail0:swp6 (cable su01-leaf-rail0:swp6 -> spine10:swp1) is down"),
    (_port("spine10", "swp1", protodown=True, protodown_reason="linkflap"), "is in protodown (linkflap)"),
    (_port("spine10", "swp1", mtu=1500), "has MTU 1500, expected 9216"),
    (_port("spine10", "swp3"), "uplink su01-leaf-rail0:swp6 sees spine10:swp3, which the cabling plan puts on "
                               "su02-leaf-rail0:swp6 - cables swapped?"),
    (_port("spine11", "swp1"), "sees spine11:swp1 as LLDP neighbour, expected spine10:swp1"),
])
def test_an_uplink_problem_holds_every_server_of_the_leaf(port, words):
    result = gate(_info(LEAF, swp6=port))
    assert not result["ready"] and list(result["ports"]) == ["swp6"]
    assert any(words in w for w in result["leaf"]), result["leaf"]
    assert result["held"] == ["srv-r01-01", "srv-r01-02"]
    assert all(any(words in w for w in result["hosts"][h]) for h in result["held"])


def test_a_missing_uplink_port_is_named():
    info = _info(LEAF)
    del info["interfaces"]["swp5"]
    assert "uplink su01-leaf-rail0:swp5 (cable su01-leaf-rail0:swp5 -> spine9:swp1) is not a port of the switch" in \
        gate(info)["leaf"]


# ---------------------------------------------------------------- hypothesis: never a traceback

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2, max_value=70), st.integers(),
                     st.text(max_size=8), st.sampled_from(["rail", "none", "swp{port}", "swp33", "198.18.128.0/30",
                                                           "{port", "198.18.0.0/24", "gpufabric_spine_plane"]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                       max_leaves=6)
_UPLINKS = st.dictionaries(st.sampled_from(["ports", "per_spine", "planes", "spine_port", "spine_port_base",
                                            "spine_ports", "leaf_uplinks", "asn_base", "loopbacks", "other"]),
                           _VALUES, max_size=5)
_SPINES = st.one_of(_VALUES, st.dictionaries(
    st.sampled_from(["spine1", "spine2", "su01-leaf-rail0", ""]),
    st.one_of(st.none(), st.dictionaries(st.sampled_from(["gpufabric_spine_plane", "x"]), _VALUES, max_size=2)),
    max_size=3))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_UPLINKS, _SPINES)
def test_any_uplinks_and_spines_give_a_plan_or_named_problems(uplinks_value, spines):
    fab = dict(copy.deepcopy(FABRIC), uplinks=uplinks_value)
    try:
        result = rp.plan(HOSTS, fab, None, spines)
    except MlnxError as err:
        assert str(err) and rp.plan_problems(HOSTS, fab, None, spines)
        return
    for leaf, entry in result["leaves"].items():
        if "uplinks" in entry:
            ports = leaf_config(leaf, entry, {})["interface"]
            assert set(entry["uplinks"]) <= set(ports) and not set(entry["uplinks"]) & set(entry["ports"])
