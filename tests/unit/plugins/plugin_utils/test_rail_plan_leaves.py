"""The rail plan's leaf extensions (plugins/plugin_utils/_rail_plan.py, issue 13): port templates with breakouts
({cage}, {lane}), leaf_ports, port templates per leaf, per-rack port numbering, the inventory's leaves group checked
both ways, the leaf's own fields (racks, port_template, address, cables) in both addressings, and - hypothesis - the
leaves of a plan and its cabling table agree cable for cable."""
import copy
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _example import example_1250
from _paths import REPO
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _rail_plan as rp

# Two rails, two racks of three in one SU (racks_per_su 2).
FABRIC = {
    "rails": 2, "su_prefix": 26, "racks_per_su": 2,
    "pools": {"rail0": "198.18.0.0/24", "rail1": "198.18.1.0/24"},
    "nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]}, "interface_names": ["enp24s0np0", "enp64s0np0"],
    "leaf_name": "su{su:02d}-leaf-rail{rail}",
}
HOSTS = [{"name": "srv-r%02d-%02d" % (rack, pos), "rack": "r%02d" % rack, "position": pos}
         for rack in (1, 2) for pos in (1, 2, 3)]
LEAF_NAMES = ["su01-leaf-rail0", "su01-leaf-rail1"]


def fabric(**changes):
    out = copy.deepcopy(FABRIC)
    out.update(changes)
    return out


def problems_of(hosts, fab, leaves=None):
    with pytest.raises(rp.RailPlanError) as err:
        rp.plan(hosts, fab, leaves)
    assert err.value.problems == rp.plan_problems(hosts, fab, leaves)
    return err.value.problems


def ports(result, leaf="su01-leaf-rail0"):
    return result["leaves"][leaf]["ports"]


# ---------------------------------------------------------------- breakouts

def test_breakout_names_cages_and_lanes_from_zero():
    result = rp.plan(HOSTS, fabric(leaf_port="swp{cage}s{lane}", breakout=2))
    assert ports(result) == {"swp1s0": "srv-r01-01", "swp1s1": "srv-r01-02", "swp2s0": "srv-r01-03",
                             "swp2s1": "srv-r02-01", "swp3s0": "srv-r02-02", "swp3s1": "srv-r02-03"}
    assert result["hosts"]["srv-r02-03"][1]["leaf_port"] == "swp3s1"
    assert result["hosts"]["srv-r02-03"][1]["cable_label"] == "srv-r02-03:enp64s0np0 -> su01-leaf-rail1:swp3s1"
    # addresses keep the SU index: the 6th host is .2 + 5 whatever its port
    assert result["hosts"]["srv-r02-03"][0]["address"] == "198.18.0.7"


def test_breakout_with_a_base_a_format_spec_and_port():
    result = rp.plan(HOSTS[:3], fabric(leaf_port="Eth1/{cage:02d}/{lane}-p{port}", breakout=4, leaf_port_base=0))
    assert list(ports(result)) == ["Eth1/00/0-p0", "Eth1/00/1-p1", "Eth1/00/2-p2"]


@pytest.mark.parametrize("changes, words", [
    ({"leaf_port": "swp{cage}", "breakout": 2},
     'gpufabric_fabric.leaf_port: "swp{cage}" has no {lane} but breakout is 2: the 2 lanes of a cage would give two '
     'hosts one port name'),
    ({"leaf_port": "swp{port}s{lane}"}, 'gpufabric_fabric.leaf_port: "swp{port}s{lane}" uses {lane} but breakout is 1'),
    ({"leaf_port": "swp{lane}", "breakout": 2}, "must contain {port}"),
    ({"leaf_port": "swp{cage!r}s{lane}", "breakout": 2}, "only a zero-padded width"),
    ({"leaf_port": "swp{rail}", "breakout": 1}, "{rail} is not a field of \"swp{rail}\" (allowed: {port}, {cage}, "
                                                "{lane})"),
    ({"breakout": 9}, "gpufabric_fabric.breakout: must be from 1 to 8"),
    ({"breakout": "2"}, "gpufabric_fabric.breakout: must be a whole number"),
    ({"leaf_ports": 0}, "gpufabric_fabric.leaf_ports: must be from 1 to"),
])
def test_bad_breakout_templates_are_named(changes, words):
    problems = rp.fabric_problems(fabric(**changes))
    assert any(words in p for p in problems), problems


# ---------------------------------------------------------------- leaf_ports

def test_a_leaf_with_too_few_ports_names_the_leaf_needed_and_had():
    problems = problems_of(HOSTS, fabric(leaf_ports=4))
    assert problems == [
        "leaves.su01-leaf-rail0: needs 6 server-facing ports (up to swp6) but has 4 (gpufabric_fabric.leaf_ports)",
        "leaves.su01-leaf-rail1: needs 6 server-facing ports (up to swp6) but has 4 (gpufabric_fabric.leaf_ports)"]
    assert rp.plan(HOSTS, fabric(leaf_ports=6))["leaves"]["su01-leaf-rail0"]["ports"]


def test_leaf_ports_count_lanes_with_a_breakout():
    fab = fabric(leaf_port="swp{cage}s{lane}", breakout=2, leaf_ports=6)
    assert len(ports(rp.plan(HOSTS, fab))) == 6
    assert problems_of(HOSTS, dict(fab, leaf_ports=5))[0] == (
        "leaves.su01-leaf-rail0: needs 6 server-facing ports (up to swp3s1) but has 5 (gpufabric_fabric.leaf_ports)")


# ---------------------------------------------------------------- port templates per leaf

TEMPLATES = {"sn5600-2x": {"leaf_port": "swp{cage}s{lane}", "breakout": 2, "leaf_ports": 128},
             "small": {"leaf_ports": 4}}
MEMBERS = {"su01-leaf-rail0": {"gpufabric_leaf_port_template": "sn5600-2x"}, "su01-leaf-rail1": {}}


def test_a_leaf_picks_its_port_template():
    result = rp.plan(HOSTS, fabric(port_templates=TEMPLATES, leaf_ports=32), MEMBERS)
    rail0, rail1 = result["leaves"]["su01-leaf-rail0"], result["leaves"]["su01-leaf-rail1"]
    assert (rail0["port_template"], list(rail0["ports"])[:3]) == ("sn5600-2x", ["swp1s0", "swp1s1", "swp2s0"])
    assert (rail1["port_template"], list(rail1["ports"])[:3]) == (None, ["swp1", "swp2", "swp3"])
    assert [e["leaf_port"] for e in result["hosts"]["srv-r01-02"]] == ["swp1s1", "swp2"]
    # without the leaves group no leaf picks a template
    assert list(ports(rp.plan(HOSTS, fabric(port_templates=TEMPLATES))))[0] == "swp1"


def test_a_template_inherits_the_fabric_keys_it_leaves_out():
    members = {"su01-leaf-rail0": {"gpufabric_leaf_port_template": "small"}, "su01-leaf-rail1": None}
    problems = problems_of(HOSTS, fabric(port_templates=TEMPLATES, leaf_port="Ethernet{port}", leaf_port_base=0),
                           members)
    assert problems == ["leaves.su01-leaf-rail0: needs 6 server-facing ports (up to Ethernet5) but has 4 "
                        "(gpufabric_fabric.port_templates.small.leaf_ports) (port template small)"]


def test_an_unknown_template_names_the_leaf_the_name_and_the_known_names():
    members = {"su01-leaf-rail0": {"gpufabric_leaf_port_template": "sn5600-x2"}, "su01-leaf-rail1": {}}
    problems = problems_of(HOSTS, fabric(port_templates=TEMPLATES), members)
    assert problems == ['leaves.su01-leaf-rail0.gpufabric_leaf_port_template: leaf su01-leaf-rail0: no port template '
                        '"sn5600-x2" in gpufabric_fabric.port_templates (known: small, sn5600-2x); did you mean '
                        'sn5600-2x?']
    assert "(known: none)" in problems_of(HOSTS, FABRIC, members)[0]


@pytest.mark.parametrize("templates, words", [
    ({"SN5600": {}}, 'gpufabric_fabric.port_templates.SN5600: is not a port template name'),
    ({"a": {"leaf_port": "swp{cage}"}}, None),
    ({"a": {"breakout": 2}}, 'gpufabric_fabric.port_templates.a: "swp{port}" has no {lane} but breakout is 2'),
    ({"a": {"lanes": 2}}, "gpufabric_fabric.port_templates.a.lanes: unknown key"),
    ({"a": {"leaf_ports": -1}}, "gpufabric_fabric.port_templates.a.leaf_ports: must be from 1 to"),
    ({"a": {"leaf_port": "swp{su}"}}, "gpufabric_fabric.port_templates.a.leaf_port: {su} is not a field"),
    (["a"], "gpufabric_fabric.port_templates: must be a mapping"),
])
def test_bad_port_templates_are_named(templates, words):
    problems = rp.fabric_problems(fabric(port_templates=templates))
    if words is None:
        assert problems == []
    else:
        assert any(p.startswith(words) for p in problems), problems


# ---------------------------------------------------------------- per-rack numbering

def test_rack_numbering_with_a_leaf_per_su():
    fab = fabric(leaf_port_numbering="rack", ports_per_rack=4)
    result = rp.plan(HOSTS, fab)
    assert ports(result) == {"swp1": "srv-r01-01", "swp2": "srv-r01-02", "swp3": "srv-r01-03",
                             "swp5": "srv-r02-01", "swp6": "srv-r02-02", "swp7": "srv-r02-03"}
    # the addresses keep the SU index
    assert result["hosts"]["srv-r02-01"][0]["address"] == rp.plan(HOSTS, FABRIC)["hosts"]["srv-r02-01"][0]["address"]
    assert result["leaves"]["su01-leaf-rail0"]["racks"] == ["r01", "r02"]


def test_rack_numbering_orders_racks_naturally_and_hosts_by_position():
    hosts = [{"name": "b", "rack": "r10", "position": 2}, {"name": "a", "rack": "r10", "position": 1},
             {"name": "c", "rack": "r9", "position": 5}]
    result = rp.plan(hosts, fabric(racks_per_su=2, leaf_port_numbering="rack", ports_per_rack=2, leaf_port_base=0))
    assert ports(result) == {"swp0": "c", "swp2": "a", "swp3": "b"}


def test_rack_numbering_with_a_leaf_per_rack_starts_every_rack_at_the_base():
    fab = fabric(addressing="p2p31", leaf_name="{rack}-leaf{rail}", leaf_port_numbering="rack", ports_per_rack=3)
    result = rp.plan(HOSTS, fab)
    assert ports(result, "r01-leaf0") == {"swp1": "srv-r01-01", "swp2": "srv-r01-02", "swp3": "srv-r01-03"}
    assert ports(result, "r02-leaf0") == {"swp1": "srv-r02-01", "swp2": "srv-r02-02", "swp3": "srv-r02-03"}
    # with su numbering rack r02's hosts are 4-6 of the SU
    assert list(ports(rp.plan(HOSTS, dict(fab, leaf_port_numbering="su", ports_per_rack=None)), "r02-leaf0")) == [
        "swp4", "swp5", "swp6"]
    assert result["hosts"]["srv-r02-01"][0]["address"] == "198.18.0.7"   # the 4th /31 of the SU block


def test_rack_numbering_needs_ports_per_rack():
    assert rp.fabric_problems(fabric(leaf_port_numbering="rack")) == [
        "gpufabric_fabric.ports_per_rack: required with leaf_port_numbering rack: the leaf ports each rack gets "
        "(rack k of a leaf starts at leaf_port_base + k x ports_per_rack)"]
    assert rp.fabric_problems(fabric(ports_per_rack=4)) == [
        "gpufabric_fabric.ports_per_rack: only with leaf_port_numbering rack (the numbering is su: the host's index "
        "in its SU)"]
    assert rp.fabric_problems(fabric(leaf_port_numbering="rac"))[0].startswith(
        "gpufabric_fabric.leaf_port_numbering: must be one of su, rack")


def test_a_rack_with_more_hosts_than_ports_per_rack():
    assert problems_of(HOSTS, fabric(leaf_port_numbering="rack", ports_per_rack=2)) == [
        "gpufabric_fabric.ports_per_rack: rack %s of SU 1 has 3 hosts, more than ports_per_rack (2): its hosts would "
        "take the next rack's leaf ports" % rack for rack in ("r01", "r02")]


# ---------------------------------------------------------------- the leaves group

def test_every_planned_leaf_must_be_in_the_leaves_group():
    problems = problems_of(HOSTS, FABRIC, {"su01-leaf-rail1": {}})
    assert problems == [
        "leaves.su01-leaf-rail0: srv-r01-01:enp24s0np0 is cabled to su01-leaf-rail0, which is not in the inventory's "
        "leaves group (gpufabric_leaf_group; 6 cables go to it): add the leaf to the group, or correct "
        "gpufabric_fabric.leaf_name"]


def test_every_member_must_be_a_planned_leaf_with_the_closest_names():
    members = dict.fromkeys(LEAF_NAMES + ["su01-leaf-rail2", "spine01"], {})
    problems = problems_of(HOSTS, FABRIC, members)
    assert problems == [
        "leaves.spine01: is in the inventory's leaves group but is no leaf of the rail plan (the plan has 2 leaves: "
        "su01-leaf-rail0, su01-leaf-rail1)",
        "leaves.su01-leaf-rail2: is in the inventory's leaves group but is no leaf of the rail plan (closest planned "
        "leaves: su01-leaf-rail1, su01-leaf-rail0)"]


def test_the_leaves_group_matching_the_plan():
    members = dict.fromkeys(LEAF_NAMES, {})
    assert rp.plan(HOSTS, FABRIC, members) == rp.plan(HOSTS, FABRIC)
    assert rp.plan_problems(HOSTS, FABRIC, members) == []


def test_no_extra_members_reported_when_part_of_the_plan_is_missing():
    """A host that cannot be placed drops its SU's leaves: the members are not called extra for it."""
    hosts = HOSTS + [{"name": "lost", "rack": "r09", "position": "x"}]
    members = dict.fromkeys(LEAF_NAMES + ["su05-leaf-rail0"], {})
    assert [p.split(":")[0] for p in rp.plan_problems(hosts, FABRIC, members)] == ["hosts.lost.position"]


@pytest.mark.parametrize("leaves, words", [
    (["su01-leaf-rail0"], "leaves: must be a mapping of each leaf of the inventory's leaves group"),
    ({"su01-leaf-rail0": "sn5600"}, "leaves.su01-leaf-rail0: must be a mapping"),
    ({"su01-leaf-rail0": {"gpufabric_leaf_port_template": 3}},
     "leaves.su01-leaf-rail0.gpufabric_leaf_port_template: must be the name of a port template"),
    ({7: {}}, 'leaves["the number 7"]: must be a leaf\'s name'),
])
def test_bad_leaves_are_named(leaves, words):
    assert any(p.startswith(words) for p in rp.plan_problems(HOSTS, fabric(port_templates=TEMPLATES), leaves))


# ---------------------------------------------------------------- the leaf's fields

def test_su_subnet_leaf_fields():
    leaf = rp.plan(HOSTS, FABRIC)["leaves"]["su01-leaf-rail1"]
    assert (leaf["address"], leaf["network"], leaf["racks"], leaf["port_template"]) == (
        "198.18.1.1/26", "198.18.1.0/26", ["r01", "r02"], None)
    assert leaf["cables"]["swp4"] == {"host": "srv-r02-01", "interface": "enp64s0np0", "rail": 1, "address": None,
                                      "cable_label": "srv-r02-01:enp64s0np0 -> su01-leaf-rail1:swp4"}


def test_p2p31_leaf_fields():
    result = rp.plan(HOSTS, fabric(addressing="p2p31"))
    leaf = result["leaves"]["su01-leaf-rail0"]
    assert leaf["address"] is None and leaf["network"] == "198.18.0.0/26"
    assert [cable["address"] for cable in leaf["cables"].values()] == [
        "198.18.0.%d/31" % (2 * i) for i in range(6)]
    # the leaf's end is the host's gateway
    assert result["hosts"]["srv-r02-03"][0]["gateway"] + "/31" == leaf["cables"]["swp6"]["address"]


def test_the_interface_comes_from_the_facts():
    devices = [{"address": "0000:18:00.0", "part_number": "X", "netdevs": ["eth5"]},
               {"address": "0000:40:00.0", "part_number": "X", "netdevs": ["eth6"]}]
    hosts = [dict(HOSTS[0], devices=devices)] + HOSTS[1:]
    cables = rp.plan(hosts, FABRIC)["leaves"]["su01-leaf-rail1"]["cables"]
    assert (cables["swp1"]["interface"], cables["swp2"]["interface"]) == ("eth6", "enp64s0np0")


# ---------------------------------------------------------------- property: leaves and cabling agree

@st.composite
def plans(draw):
    addressing = draw(st.sampled_from(rp.ADDRESSING))
    numbering = draw(st.sampled_from(rp.NUMBERINGS))
    breakout = draw(st.integers(min_value=1, max_value=4))
    fab = fabric(addressing=addressing, pools={"rail0": "198.18.0.0/20", "rail1": "198.18.16.0/20"}, racks_per_su=draw(st.integers(min_value=1, max_value=3)),
                 leaf_port="swp{cage}s{lane}" if breakout > 1 else "swp{port}", breakout=breakout,
                 leaf_port_base=draw(st.integers(min_value=0, max_value=2)), leaf_port_numbering=numbering,
                 port_templates={"other": {"leaf_port": "p{port}", "breakout": 1}},
                 leaf_name=draw(st.sampled_from(["su{su}-leaf-rail{rail}"] +
                                                (["{rack}-leaf{rail}"] if addressing == rp.P2P31 else []))))
    if numbering == rp.RACK_NUMBERING:
        fab["ports_per_rack"] = 6
    racks = draw(st.lists(st.sampled_from(["r%d" % i for i in range(1, 7)]), max_size=24))
    hosts, used = [], set()
    for index, rack in enumerate(racks):
        position = draw(st.integers(min_value=1, max_value=6))
        if (rack, position) not in used:
            used.add((rack, position))
            hosts.append({"name": "h%d" % index, "rack": rack, "position": position})
    return hosts, fab, draw(st.booleans())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans())
def test_the_leaves_and_the_cabling_table_agree(inputs):
    hosts, fab, with_templates = inputs
    names = set(rp.plan(hosts, fab)["leaves"])
    leaves = {name: {"gpufabric_leaf_port_template": "other" if with_templates and i % 2 else None}
              for i, name in enumerate(sorted(names))}
    result = rp.plan(hosts, fab, leaves)
    rows = rp.cabling(result)
    from_rows = {(r["leaf"], r["leaf_port"]): (r["host"], r["interface"], r["rail"], r["cable_label"]) for r in rows}
    from_leaves = {(leaf, port): (c["host"], c["interface"], c["rail"], c["cable_label"])
                   for leaf, body in result["leaves"].items() for port, c in body["cables"].items()}
    assert len(from_rows) == len(rows) and from_rows == from_leaves
    for leaf, body in result["leaves"].items():
        assert {port: c["host"] for port, c in body["cables"].items()} == body["ports"]
        assert body["racks"] == sorted({h["rack"] for h in hosts if h["name"] in body["ports"].values()},
                                       key=rp._natural)   # pylint: disable=protected-access
        for port, cable in body["cables"].items():
            entry = result["hosts"][cable["host"]][cable["rail"]]
            assert (entry["leaf"], entry["leaf_port"]) == (leaf, port)
            if fab["addressing"] == rp.P2P31:
                assert cable["address"] == entry["gateway"] + "/31" and body["address"] is None
            else:
                assert cable["address"] is None and body["address"] == entry["gateway"] + "/" + str(entry["prefix"])
        expected = "other" if with_templates and sorted(names).index(leaf) % 2 else None
        assert body["port_template"] == expected


# ---------------------------------------------------------------- the example inventory

def example():
    """The example inventory's servers, leaves ({leaf: its group's variables}), the leaves' ansible_host and the
    fabric, read from its files."""
    servers, leaves, addresses, _spines, fab = example_1250()
    return servers, leaves, addresses, fab


def test_the_example_inventory_has_exactly_the_plans_leaves():
    servers, leaves, addresses, fab = example()
    result = rp.plan(servers, fab, leaves)
    assert sorted(result["leaves"]) == sorted(leaves) and len(leaves) == 320
    assert len(set(addresses)) == 320 and all(a.startswith(("198.19.20.", "198.19.21.")) for a in addresses)
    su40 = {name for name, body in result["leaves"].items() if body["port_template"] == "sn5600-2x"}
    assert su40 == {"su40-leaf-rail%d" % rail for rail in range(8)}
    assert result["leaves"]["su40-leaf-rail7"]["ports"] == {"swp1s0": "srv-r313-01", "swp1s1": "srv-r313-02"}
    assert list(result["leaves"]["su01-leaf-rail0"]["ports"])[-1] == "swp32"
    assert len(rp.cabling(result)) == 10000


def test_the_docs_leaves_problems_are_real():
    servers, leaves, _addresses, fab = example()
    del leaves["su01-leaf-rail0"]
    leaves["su01-leaf-rail9"] = {}
    block = [b for b in re.findall(r"```text\n(.*?)```", (REPO / "docs" / "rails.md").read_text(), re.S)
             if b.startswith("- leaves.")]
    assert block == ["".join("- %s\n" % p for p in rp.plan_problems(servers, fab, leaves))]
