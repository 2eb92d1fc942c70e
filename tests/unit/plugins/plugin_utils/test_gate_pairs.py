"""The validation gate's pairing plan (plugin_utils/_gate_pairs.py) on real rail plans (_rail_plan.plan()): a leaf
per rack per rail with /31s and no spines (molecule/fabric), a leaf per SU per rail with spines; pairs disjoint per
round and rail, every host under test covered on every rail, only reachable pairs, a constant number of rounds
(1 for even groups, 2 for odd) from 4 to 200 hosts, the same peer on every rail, reference peers for a retest,
the three cross_leaf modes, the unpaired with their reason and bad inputs named."""
import copy

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._gate_pairs import GatePairsError, pairs
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import plan as rail_plan

RAILS = 4
BUSES = (0x18, 0x40, 0x9a, 0xc0)
NICS = {"nics": {"pci": ["0000:%02x:00.0" % bus for bus in BUSES]},
        "interface_names": ["enp%ds0np0" % bus for bus in BUSES]}
# molecule/fabric/inventory/group_vars/servers.yml, with pools for 200 racks: a leaf per rack per rail, /31s.
P2P31 = dict(NICS, rails=RAILS, addressing="p2p31", su_prefix=26, racks_per_su=1, leaf_name="{rack}-leaf-rail{rail}",
             pools={"rail%d" % rail: "10.%d.0.0/16" % rail for rail in range(RAILS)})
# A leaf per SU (2 racks) per rail, one /26 per SU, uplinks to two spines.
SU_SUBNET = dict(NICS, rails=RAILS, addressing="su_subnet", su_prefix=26, racks_per_su=2, leaf_ports=40,
                 leaf_name="su{su:02d}-leaf-rail{rail}", uplinks={"loopbacks": "10.250.0.0/22"},
                 pools={"rail%d" % rail: "10.%d.0.0/16" % rail for rail in range(RAILS)})
SPINES = {"spine1": {}, "spine2": {}}


def servers(count, per_rack):
    return [{"name": "srv-r%03d-%02d" % (i // per_rack + 1, i % per_rack + 1), "rack": "r%03d" % (i // per_rack + 1),
             "position": i % per_rack + 1} for i in range(count)]


def p2p31_plan(count, per_rack=2):
    return rail_plan(servers(count, per_rack), P2P31)


def spine_plan(count, per_rack=4, spines=True):
    return rail_plan(servers(count, per_rack), SU_SUBNET, None, SPINES if spines else None)


def partners(result, host):
    return [(e["round"], e["rail"], e["peer"]) for e in result["hosts"][host]]


def check(result, plan, tested=None, peers=(), cross_leaf="auto"):
    """The properties every pairing plan has: rounds numbered from 1, pairs disjoint per round and rail, every pair
    reachable on its rail with its entries from the plan, only hosts under test or reference peers in a pair (every
    pair has one under test), every host under test with a peer on every rail or unpaired there with a reason, and
    ``hosts`` the same pairs seen from each host."""
    tested = list(plan["hosts"]) if tested is None else tested
    allowed = set(tested) | set(peers)
    uplinked = {leaf for leaf, entry in plan["leaves"].items() if entry.get("uplinks")}
    covered, seen = set(), {}
    assert [r["round"] for r in result["rounds"]] == list(range(1, len(result["rounds"]) + 1))
    assert result["rounds_count"] == len(result["rounds"])
    for rnd in result["rounds"]:
        busy = set()
        assert rnd["pairs"], "a round without pairs"
        for pair in rnd["pairs"]:
            rail, server, client = pair["rail"], pair["server"], pair["client"]
            assert server != client and {server, client} <= allowed and {server, client} & set(tested)
            for host in (server, client):
                assert (rail, host) not in busy, "%s twice on rail %d in round %d" % (host, rail, rnd["round"])
                busy.add((rail, host))
                covered.add((rail, host))
            s_entry, c_entry = plan["hosts"][server][rail], plan["hosts"][client][rail]
            assert (pair["server_address"], pair["client_address"]) == (s_entry["address"], c_entry["address"])
            assert (pair["server_interface"], pair["client_interface"]) == (s_entry["interface"], c_entry["interface"])
            assert (pair["server_leaf"], pair["client_leaf"]) == (s_entry["leaf"], c_entry["leaf"])
            assert pair["cross_leaf"] == (s_entry["leaf"] != c_entry["leaf"])
            if pair["cross_leaf"]:
                assert {s_entry["leaf"], c_entry["leaf"]} <= uplinked and cross_leaf != "never"
            else:
                assert cross_leaf != "always"
            seen.setdefault(server, []).append((rnd["round"], rail, client, "server"))
            seen.setdefault(client, []).append((rnd["round"], rail, server, "client"))
    unpaired = {(u["host"], u["rail"]) for u in result["unpaired"]}
    assert all(u["reason"].startswith("rail %d: " % u["rail"]) for u in result["unpaired"])
    for host in tested:
        for rail in range(len(plan["hosts"][host])):
            assert ((rail, host) in covered) != ((host, rail) in unpaired), (host, rail)
    assert {h: [(e["round"], e["rail"], e["peer"], e["role"]) for e in entries]
            for h, entries in result["hosts"].items() if entries} == {h: sorted(v) for h, v in seen.items()}
    assert set(tested) <= set(result["hosts"])
    return covered


# ---------------------------------------------------------------- a leaf per rack, no spines

def test_molecule_fabric_two_racks_of_two_is_one_round_on_each_rack_s_leaves():
    plan = p2p31_plan(4)
    result = pairs(plan)
    check(result, plan)
    assert result["rounds_count"] == 1 and result["unpaired"] == []
    assert [(p["rail"], p["server"], p["client"]) for p in result["rounds"][0]["pairs"]] == [
        (rail, "srv-r%03d-01" % rack, "srv-r%03d-02" % rack) for rail in range(RAILS) for rack in (1, 2)]
    first = result["rounds"][0]["pairs"][0]
    assert first == {"rail": 0, "server": "srv-r001-01", "client": "srv-r001-02",
                     "server_address": "10.0.0.1", "client_address": "10.0.0.3",
                     "server_interface": "enp24s0np0", "client_interface": "enp24s0np0",
                     "server_leaf": "r001-leaf-rail0", "client_leaf": "r001-leaf-rail0", "cross_leaf": False}
    assert partners(result, "srv-r002-02") == [(1, rail, "srv-r002-01") for rail in range(RAILS)]


def test_an_odd_rack_takes_a_second_round_with_a_host_of_the_first():
    plan = p2p31_plan(9, per_rack=3)
    result = pairs(plan)
    check(result, plan)
    assert result["rounds_count"] == 2 and result["unpaired"] == []
    second = {(p["rail"], p["server"], p["client"]) for p in result["rounds"][1]["pairs"]}
    assert second == {(rail, "srv-r%03d-01" % rack, "srv-r%03d-03" % rack) for rail in range(RAILS)
                      for rack in (1, 2, 3)}


def test_a_single_host_on_a_leaf_without_spines_is_unpaired_with_the_reason():
    plan = rail_plan(servers(4, 2) + [{"name": "srv-r003-01", "rack": "r003", "position": 1}], P2P31)
    result = pairs(plan)
    check(result, plan)
    assert result["rounds_count"] == 1
    assert result["unpaired"] == [
        {"host": "srv-r003-01", "rail": rail, "reason": "rail %d: no other host under test or reference peer on its "
         "leaf r003-leaf-rail%d, which has no uplinks to the spines" % (rail, rail)} for rail in range(RAILS)]
    assert result["hosts"]["srv-r003-01"] == []
    never = pairs(plan, cross_leaf="never")
    assert never["unpaired"][0]["reason"] == ("rail 0: no other host under test or reference peer on its leaf "
                                              "r003-leaf-rail0 (cross_leaf=never)")


def test_always_without_spines_pairs_nobody_and_says_why():
    plan = p2p31_plan(4)
    result = pairs(plan, cross_leaf="always")
    check(result, plan, cross_leaf="always")
    assert result["rounds"] == [] and result["rounds_count"] == 0 and len(result["unpaired"]) == 4 * RAILS
    assert result["unpaired"][0] == {"host": "srv-r001-01", "rail": 0, "reason": "rail 0: its leaf r001-leaf-rail0 "
                                     "has no uplinks to the spines, and cross_leaf=always pairs only through the spines"}


# ---------------------------------------------------------------- a leaf per SU, spines

def test_with_spines_host_i_of_a_leaf_meets_host_i_of_the_leaf_half_the_leaves_on():
    plan = spine_plan(32)            # 4 SUs of 8 hosts: su01 with su03, su02 with su04
    result = pairs(plan)
    check(result, plan)
    assert result["rounds_count"] == 1 and result["unpaired"] == []
    pairs_ = result["rounds"][0]["pairs"]
    assert all(p["cross_leaf"] for p in pairs_)
    order = list(plan["hosts"])
    assert {(p["server"], p["client"]) for p in pairs_ if p["rail"] == 0} == {(order[i], order[i + 16])
                                                                              for i in range(16)}
    assert pairs_[0]["server_leaf"] == "su01-leaf-rail0" and pairs_[0]["client_leaf"] == "su03-leaf-rail0"


def test_every_host_meets_the_same_peer_on_every_rail():
    for plan in (spine_plan(40), p2p31_plan(40), spine_plan(41)):
        result = pairs(plan)
        for host in plan["hosts"]:
            peers = {rail: {peer for _r, rl, peer in partners(result, host) if rl == rail} for rail in range(RAILS)}
            assert all(peers[rail] == peers[0] for rail in range(RAILS)), host


def test_never_keeps_pairs_on_one_leaf_even_with_spines():
    plan = spine_plan(32)
    result = pairs(plan, cross_leaf="never")
    check(result, plan, cross_leaf="never")
    assert result["rounds_count"] == 1 and not any(p["cross_leaf"] for p in result["rounds"][0]["pairs"])


def test_auto_takes_one_leaf_only_for_the_hosts_no_other_leaf_can_take():
    """SU 1 holds 16 hosts, SU 2 4: auto pairs 4 through the spines and the other 6 pairs on su01's leaf;
    always pairs 4 of su01's hosts a round with su02's and needs 4 rounds."""
    plan = rail_plan(servers(16, 8) + [{"name": "srv-r003-%02d" % i, "rack": "r003", "position": i}
                                       for i in range(1, 5)], SU_SUBNET, None, SPINES)
    auto = pairs(plan)
    check(auto, plan)
    assert auto["rounds_count"] == 1
    on_rail0 = [p for p in auto["rounds"][0]["pairs"] if p["rail"] == 0]
    assert sum(p["cross_leaf"] for p in on_rail0) == 4 and len(on_rail0) == 10
    always = pairs(plan, cross_leaf="always")
    check(always, plan, cross_leaf="always")
    assert always["unpaired"] == [] and always["rounds_count"] == 4
    assert all(p["cross_leaf"] for r in always["rounds"] for p in r["pairs"])


def test_always_leaves_a_host_with_no_other_leaf_unpaired():
    plan = spine_plan(8)             # one SU: one leaf per rail
    result = pairs(plan, cross_leaf="always")
    check(result, plan, cross_leaf="always")
    assert result["rounds"] == [] and result["unpaired"][0]["reason"] == (
        "rail 0: no host under test or reference peer on another leaf with uplinks to reach through the spines "
        "(cross_leaf=always)")


# ---------------------------------------------------------------- a retest with reference peers

def test_a_retested_host_meets_a_reference_peer_through_the_spines_in_one_round():
    plan = spine_plan(32)
    host = "srv-r002-03"             # SU 1
    peers = list(plan["hosts"])
    result = pairs(plan, [host], peers)
    check(result, plan, [host], peers)
    assert result["rounds_count"] == 1 and result["unpaired"] == []
    met = {(rail, peer) for _round, rail, peer in partners(result, host)}
    assert len(met) == RAILS and len({peer for _rail, peer in met}) == 1     # the same peer on every rail
    assert all(p["cross_leaf"] and p["client"] == host for p in result["rounds"][0]["pairs"])
    assert set(result["hosts"]) == {host} | {peer for _rail, peer in met}


def test_two_retested_hosts_of_one_leaf_prefer_peers_on_other_leaves():
    plan = spine_plan(32)
    tested = ["srv-r001-01", "srv-r001-02"]
    result = pairs(plan, tested, list(plan["hosts"]))
    check(result, plan, tested, list(plan["hosts"]))
    assert result["rounds_count"] == 1
    assert all(p["cross_leaf"] for p in result["rounds"][0]["pairs"])
    assert len(result["rounds"][0]["pairs"]) == 2 * RAILS


def test_a_retested_host_without_peers_is_unpaired_and_an_odd_retest_uses_a_peer_in_round_one():
    plan = spine_plan(32)
    alone = pairs(plan, ["srv-r002-03"])
    assert alone["rounds"] == [] and alone["unpaired"][0]["reason"] == (
        "rail 0: no other host under test or reference peer on the rail, on any leaf")
    tested = ["srv-r001-01", "srv-r003-01", "srv-r005-01"]
    result = pairs(plan, tested, ["srv-r007-04"])
    check(result, plan, tested, ["srv-r007-04"])
    assert result["rounds_count"] == 1 and result["unpaired"] == []
    assert any("srv-r007-04" in (p["server"], p["client"]) for p in result["rounds"][0]["pairs"])


def test_a_retest_of_some_hosts_of_some_racks_pairs_only_them_with_peers_of_their_leaf():
    plan = p2p31_plan(8)
    tested = ["srv-r001-01", "srv-r001-02", "srv-r002-02"]
    result = pairs(plan, tested, list(plan["hosts"]))
    check(result, plan, tested, list(plan["hosts"]))
    assert result["rounds_count"] == 1
    assert {(p["server"], p["client"]) for p in result["rounds"][0]["pairs"]} == {
        ("srv-r001-01", "srv-r001-02"), ("srv-r002-01", "srv-r002-02")}
    assert set(result["hosts"]) == {"srv-r001-01", "srv-r001-02", "srv-r002-01", "srv-r002-02"}


def test_each_rail_has_its_own_groups_a_leaf_without_uplinks_keeps_its_hosts():
    plan = spine_plan(32)
    del plan["leaves"]["su01-leaf-rail1"]["uplinks"]      # su01 on rail 1 is cut off from the spines
    result = pairs(plan)
    check(result, plan)
    assert result["rounds_count"] == 1 and result["unpaired"] == []
    su01 = list(plan["hosts"])[:8]
    for pair in result["rounds"][0]["pairs"]:
        if pair["rail"] == 1 and pair["server"] in su01:
            assert pair["client"] in su01 and not pair["cross_leaf"]
        else:
            assert pair["cross_leaf"]


def test_a_host_cabled_otherwise_on_one_rail_is_paired_for_that_rail():
    plan = spine_plan(16)            # su01 and su02: host i of one meets host i of the other
    moved = list(plan["hosts"])[8]   # su02's first host, on su01's leaf on rail 1
    plan["hosts"][moved][1]["leaf"] = "su01-leaf-rail1"
    result = pairs(plan, cross_leaf="always")
    check(result, plan, cross_leaf="always")
    assert result["unpaired"] == []
    first = list(plan["hosts"])[0]
    # rails 0, 2, 3: su01's first host in round 1; rail 1: 9 hosts on su01, 7 on su02, so a second round through
    # the spines with a host of su02 for it
    assert partners(result, moved) == [(1, 0, first), (1, 2, first), (1, 3, first), (2, 1, list(plan["hosts"])[10])]


def test_a_host_both_under_test_and_a_peer_is_under_test():
    plan = p2p31_plan(4)
    assert pairs(plan, ["srv-r001-01", "srv-r001-02"], ["srv-r001-02"]) == pairs(plan, ["srv-r001-01", "srv-r001-02"])


# ---------------------------------------------------------------- sizes

@pytest.mark.parametrize("count", [4, 5, 6, 7, 10, 33, 64, 101, 150, 200])
@pytest.mark.parametrize("cross_leaf", ["auto", "never"])
def test_disjoint_and_covering_at_every_size_in_a_constant_number_of_rounds(count, cross_leaf):
    spines = spine_plan(count)
    result = pairs(spines, cross_leaf=cross_leaf)
    check(result, spines, cross_leaf=cross_leaf)
    # never: a last SU of one host has nobody on its leaf
    assert len(result["unpaired"]) == (RAILS if cross_leaf == "never" and count % 8 == 1 else 0)
    if cross_leaf == "auto":       # one group per rail: all the hosts behind the spines
        assert result["rounds_count"] == (1 if count % 2 == 0 else 2)
        # on one leaf only the pairs no other leaf can take: SU 1 (8 hosts) holds more than half below 16 hosts
        biggest = min(count, 8)
        same = [p for r in result["rounds"] for p in r["pairs"] if p["rail"] == 0 and not p["cross_leaf"]]
        assert len(same) == max(0, -(-(biggest - (count - biggest)) // 2))
    else:                          # a group per SU of 8: the last SU holds count % 8
        groups = [8] * (count // 8) + ([count % 8] if count % 8 else [])
        assert result["rounds_count"] == (2 if any(g % 2 and g > 1 for g in groups) else 1)
    racks = p2p31_plan(count, per_rack=2)
    result = pairs(racks, cross_leaf=cross_leaf)
    check(result, racks, cross_leaf=cross_leaf)
    assert result["rounds_count"] == 1
    assert len(result["unpaired"]) == (RAILS if count % 2 else 0)


def test_the_same_inputs_give_the_same_plan_whatever_the_order_of_hosts():
    plan = spine_plan(41)
    names = list(plan["hosts"])
    assert pairs(plan, names) == pairs(copy.deepcopy(plan), list(reversed(names))) == pairs(plan)


# ---------------------------------------------------------------- bad inputs

@pytest.mark.parametrize("args, kwargs, words, parameter", [
    ((["srv-r001-01", "srv-r001-99"],), {}, 'hosts[1] "srv-r001-99" is not a host of the rail plan (allowed: the '
     "plan's 4 hosts; closest: srv-r001-02, srv-r001-01", "hosts[1]"),
    ((None, ["nobody"]), {}, 'peers[0] "nobody" is not a host of the rail plan', "peers[0]"),
    (("srv-r001-01",), {}, "hosts must be a list of host names, not the string", "hosts"),
    (([1],), {}, "hosts[0] is the number 1, not a host name", "hosts[0]"),
    ((), {"cross_leaf": "sometimes"}, 'cross_leaf is the string "sometimes" (allowed: auto, never, always)',
     "cross_leaf"),
])
def test_bad_arguments_are_named(args, kwargs, words, parameter):
    with pytest.raises(MlnxError) as err:
        pairs(p2p31_plan(4), *args, **kwargs)
    assert words in err.value.msg and err.value.parameter == parameter


def test_what_is_not_a_rail_plan_is_named():
    plan = p2p31_plan(4)
    broken = copy.deepcopy(plan)
    broken["hosts"]["srv-r001-02"][1]["leaf"] = "nowhere"
    cases = [(None, "not nothing (null)"), ({"hosts": {}}, "plan.leaves is nothing (null)"),
             (broken, 'plan.hosts["srv-r001-02"][1].leaf "nowhere" is not in plan.leaves'),
             (dict(plan, hosts={"a": 3}), 'plan.hosts["a"] is the number 3, not a list of rails'),
             (dict(plan, hosts={"a": [{"rail": True, "leaf": "r001-leaf-rail0"}]}), ".rail is the boolean true")]
    for value, words in cases:
        with pytest.raises(GatePairsError) as err:
            pairs(value)
        assert words in err.value.msg and err.value.parameter == "plan", value
