"""The rail plan core (plugins/plugin_utils/_rail_plan.py): exact plans of a small two-SU fabric in
both addressing modes, NIC matching from mlx_info-shaped devices (PCI slot map and part numbers),
every problem listed at once and named by its path, the example inventory, and hypothesis: any
JSON-like input gives a plan or MlnxError, and generated valid fabrics give unique addresses inside
their rail's pool, never in a management network, each leaf port used once."""
import copy
import re

import netaddr
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _example import example_1250
from _paths import REPO
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _rail_plan as rp

EXAMPLE = REPO / "inventory" / "example-1250"
DGX_PCI = ["0000:18:00.0", "0000:40:00.0", "0000:4f:00.0", "0000:5e:00.0",
           "0000:9a:00.0", "0000:c0:00.0", "0000:ce:00.0", "0000:dc:00.0"]
DGX_IF = ["ibp24s0", "ibp64s0", "ibp79s0", "ibp94s0", "ibp154s0", "ibp192s0", "ibp206s0", "ibp220s0"]
COMPUTE_PN = "MCX75310AAS-NEAT"
STORAGE_PN = "MCX755106AS-HEAT"

# Two rails, one rack per SU: racks r9 and r10 (natural order: r9 is SU 1), hosts listed out of order.
SMALL_FABRIC = {
    "rails": 2,
    "addressing": "su_subnet",
    "su_prefix": 24,
    "racks_per_su": 1,
    "pools": {"rail0": "198.18.0.0/22", "rail1": ["198.18.4.0/24", "198.18.8.0/24"]},
    "nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]},
    "interface_names": ["ibp24s0", "ibp64s0"],
    "table_base": 100,
    "leaf_name": "su{su}-leaf-rail{rail}",
    "leaf_port": "swp{port}",
    "leaf_port_base": 1,
    "mgmt_subnets": ["198.19.0.0/16"],
}
SMALL_HOSTS = [
    {"name": "srv-r10-01", "rack": "r10", "position": 1},
    {"name": "srv-r09-02", "rack": "r9", "position": 2},
    {"name": "srv-r09-01", "rack": "r9", "position": 1},
    {"name": "srv-r10-03", "rack": "r10", "position": 3},
    {"name": "srv-r10-02", "rack": "r10", "position": 2},
]


def fabric(**changes):
    out = copy.deepcopy(SMALL_FABRIC)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def problems_of(hosts, fab):
    """The problem lines of a plan that must fail."""
    with pytest.raises(rp.RailPlanError) as err:
        rp.plan(hosts, fab)
    assert str(err.value).startswith("the rail plan cannot be made (%d problem" % len(err.value.problems))
    assert all(isinstance(p, str) for p in err.value.problems)
    return err.value.problems


def named(problems, path, *words):
    """Some problem starts with ``path: `` and contains every word."""
    return any(p.startswith(path + ": ") and all(w in p for w in words) for p in problems)


def entry(rail, pci, interface, address, network, gateway, leaf, port, host, prefix=24):
    return {"rail": rail, "pci": pci, "interface": interface, "address": address, "prefix": prefix,
            "network": network, "gateway": gateway, "table": 100 + rail, "leaf": leaf, "leaf_port": port,
            "cable_label": "%s:%s -> %s:%s" % (host, interface, leaf, port)}


# ---------------------------------------------------------------- exact plans

def test_su_subnet_exact_plan():
    result = rp.plan(SMALL_HOSTS, SMALL_FABRIC)
    assert list(result["hosts"]) == ["srv-r09-01", "srv-r09-02", "srv-r10-01", "srv-r10-02", "srv-r10-03"]

    def both(host, index, su_net0, su_net1, su):
        return [
            entry(0, "0000:18:00.0", "ibp24s0", "%s.%d" % (su_net0, 2 + index), su_net0 + ".0/24", su_net0 + ".1",
                  "su%d-leaf-rail0" % su, "swp%d" % (index + 1), host),
            entry(1, "0000:40:00.0", "ibp64s0", "%s.%d" % (su_net1, 2 + index), su_net1 + ".0/24", su_net1 + ".1",
                  "su%d-leaf-rail1" % su, "swp%d" % (index + 1), host),
        ]
    assert result["hosts"] == {
        "srv-r09-01": both("srv-r09-01", 0, "198.18.0", "198.18.4", 1),
        "srv-r09-02": both("srv-r09-02", 1, "198.18.0", "198.18.4", 1),
        # rail1's pool is a list: SU 2 gets the second /24, carved from the second CIDR
        "srv-r10-01": both("srv-r10-01", 0, "198.18.1", "198.18.8", 2),
        "srv-r10-02": both("srv-r10-02", 1, "198.18.1", "198.18.8", 2),
        "srv-r10-03": both("srv-r10-03", 2, "198.18.1", "198.18.8", 2),
    }
    assert result["hosts"]["srv-r10-03"][1]["cable_label"] == "srv-r10-03:ibp64s0 -> su2-leaf-rail1:swp3"

    def leaf(rail, su, net, racks, hosts, interface):
        ports = {"swp%d" % (i + 1): host for i, host in enumerate(hosts)}
        cables = {"swp%d" % (i + 1): {"host": host, "interface": interface, "rail": rail, "address": None,
                                      "cable_label": "%s:%s -> su%d-leaf-rail%d:swp%d" % (host, interface, su, rail,
                                                                                          i + 1)}
                  for i, host in enumerate(hosts)}
        return {"rail": rail, "su": su, "network": net + ".0/24", "address": net + ".1/24", "racks": racks,
                "port_template": None, "ports": ports, "cables": cables}
    su1, su2 = ["srv-r09-01", "srv-r09-02"], ["srv-r10-01", "srv-r10-02", "srv-r10-03"]
    assert result["leaves"] == {
        "su1-leaf-rail0": leaf(0, 1, "198.18.0", ["r9"], su1, "ibp24s0"),
        "su1-leaf-rail1": leaf(1, 1, "198.18.4", ["r9"], su1, "ibp64s0"),
        "su2-leaf-rail0": leaf(0, 2, "198.18.1", ["r10"], su2, "ibp24s0"),
        "su2-leaf-rail1": leaf(1, 2, "198.18.8", ["r10"], su2, "ibp64s0"),
    }


def test_p2p31_exact_plan():
    result = rp.plan(SMALL_HOSTS, fabric(addressing="p2p31", table_base=200, leaf_port="Ethernet{port}",
                                         leaf_port_base=0))
    hosts = result["hosts"]
    first = hosts["srv-r09-01"][0]
    assert first == {"rail": 0, "pci": "0000:18:00.0", "interface": "ibp24s0", "address": "198.18.0.1", "prefix": 31,
                     "network": "198.18.0.0/31", "gateway": "198.18.0.0", "table": 200, "leaf": "su1-leaf-rail0",
                     "leaf_port": "Ethernet0", "cable_label": "srv-r09-01:ibp24s0 -> su1-leaf-rail0:Ethernet0"}
    assert [(e["address"], e["gateway"], e["network"], e["table"], e["leaf_port"]) for e in hosts["srv-r09-02"]] == [
        ("198.18.0.3", "198.18.0.2", "198.18.0.2/31", 200, "Ethernet1"),
        ("198.18.4.3", "198.18.4.2", "198.18.4.2/31", 201, "Ethernet1")]
    assert [(e["address"], e["gateway"], e["leaf"]) for e in hosts["srv-r10-03"]] == [
        ("198.18.1.5", "198.18.1.4", "su2-leaf-rail0"), ("198.18.8.5", "198.18.8.4", "su2-leaf-rail1")]
    leaf = result["leaves"]["su2-leaf-rail1"]
    assert dict(leaf, cables=None) == {
        "rail": 1, "su": 2, "network": "198.18.8.0/24", "address": None, "racks": ["r10"], "port_template": None,
        "ports": {"Ethernet0": "srv-r10-01", "Ethernet1": "srv-r10-02", "Ethernet2": "srv-r10-03"}, "cables": None}
    # p2p31: each cable carries the leaf's end of its /31
    assert leaf["cables"]["Ethernet2"] == {"host": "srv-r10-03", "interface": "ibp64s0", "rail": 1,
                                           "address": "198.18.8.4/31",
                                           "cable_label": "srv-r10-03:ibp64s0 -> su2-leaf-rail1:Ethernet2"}


def test_p2p31_leaf_per_rack():
    hosts = [dict(h, su=1) for h in SMALL_HOSTS]
    result = rp.plan(hosts, fabric(addressing="p2p31", leaf_name="{rack}-leaf{rail}"))
    assert result["leaves"]["r9-leaf0"]["ports"] == {"swp1": "srv-r09-01", "swp2": "srv-r09-02"}
    # the port is the host's index in its SU, whichever leaf it lands on
    assert result["leaves"]["r10-leaf0"]["ports"] == {"swp3": "srv-r10-01", "swp4": "srv-r10-02", "swp5": "srv-r10-03"}
    assert result["hosts"]["srv-r10-01"][0]["address"] == "198.18.0.5"


def test_explicit_su_and_the_order_of_hosts():
    hosts = [dict(h) for h in SMALL_HOSTS]
    hosts[0]["su"] = 3          # srv-r10-01 alone in SU 3: the third /24 of each pool
    result = rp.plan(hosts, fabric(pools={"rail0": "198.18.0.0/22", "rail1": "198.18.4.0/22"}))
    assert list(result["hosts"]) == ["srv-r09-01", "srv-r09-02", "srv-r10-02", "srv-r10-03", "srv-r10-01"]
    assert [e["address"] for e in result["hosts"]["srv-r10-01"]] == ["198.18.2.2", "198.18.6.2"]
    # r10 is the only rack whose hosts carry no su left after r9: SU 2, indexes by position
    assert [e["address"] for e in result["hosts"]["srv-r10-02"]] == ["198.18.1.2", "198.18.5.2"]
    assert result["leaves"]["su3-leaf-rail1"]["ports"] == {"swp1": "srv-r10-01"}


def test_racks_per_su_groups_racks_in_natural_order():
    hosts = [{"name": "h%d" % i, "rack": rack, "position": 1} for i, rack in enumerate(["r10", "r2", "r1", "r11"])]
    result = rp.plan(hosts, fabric(racks_per_su=2))
    sus = {name: result["leaves"][entries[0]["leaf"]]["su"] for name, entries in result["hosts"].items()}
    assert sus == {"h2": 1, "h1": 1, "h0": 2, "h3": 2}
    assert list(result["hosts"]) == ["h2", "h1", "h0", "h3"]


def test_integer_racks_and_a_zero_padded_leaf_name():
    hosts = [{"name": "a", "rack": 7, "position": 1}]
    result = rp.plan(hosts, fabric(leaf_name="su{su:02d}-r{rail:02d}", leaf_port="swp{port:03d}"))
    assert result["hosts"]["a"][1]["leaf"] == "su01-r01" and result["hosts"]["a"][1]["leaf_port"] == "swp001"


def test_no_hosts_no_plan():
    assert rp.plan([], SMALL_FABRIC) == {"hosts": {}, "leaves": {}}


def test_defaults():
    fab = {"rails": 1, "pools": {"rail0": "10.0.0.0/16"}, "nics": {"part_numbers": [COMPUTE_PN]},
           "interface_names": ["eth1"]}
    result = rp.plan([{"name": "a", "rack": "r1", "position": 1, "su": 1}], fab)
    assert result["hosts"]["a"] == [{
        "rail": 0, "pci": None, "interface": "eth1", "address": "10.0.0.2", "prefix": 24, "network": "10.0.0.0/24",
        "gateway": "10.0.0.1", "table": 100, "leaf": "su1-leaf-rail0", "leaf_port": "swp1",
        "cable_label": "a:eth1 -> su1-leaf-rail0:swp1"}]


# ---------------------------------------------------------------- NICs from mlx_info facts

def dgx_devices(extra=(), drop=()):
    """The devices list mlx_info returns for a DGX H100 (Ethernet mode names), shuffled."""
    devices = []
    for address in DGX_PCI:
        bus = int(address[5:7], 16)
        devices.append({"address": address, "function": 0, "card": address[:-2], "device_type": "ConnectX7",
                        "part_number": COMPUTE_PN, "netdevs": ["enp%ds0np0" % bus], "numa_node": 0 if bus < 0x80 else 1,
                        "psid": "MT_0000000838", "errors": []})
    for card, bus in (("0000:29:00", 0x29), ("0000:aa:00", 0xaa)):
        for function in (0, 1):
            devices.append({"address": "%s.%d" % (card, function), "function": function, "card": card,
                            "device_type": "ConnectX7", "part_number": STORAGE_PN,
                            "netdevs": ["enp%ds0f%dnp%d" % (bus, function, function)], "numa_node": 0})
    devices = [d for d in devices if d["address"] not in drop] + list(extra)
    return devices[::-1]


def dgx_fabric(**nics):
    return {"rails": 8, "su_prefix": 26, "racks_per_su": 8,
            "pools": {"rail%d" % r: "198.18.%d.0/20" % (16 * r) for r in range(8)},
            "nics": nics or {"pci": DGX_PCI}}


def dgx_host(name="dgx01", **devices_args):
    return {"name": name, "rack": "r01", "position": int(name[-2:]), "devices": dgx_devices(**devices_args)}


@pytest.mark.parametrize("nics", [{"pci": DGX_PCI}, {"pci": [a[5:] for a in DGX_PCI]},
                                  {"part_numbers": [COMPUTE_PN + "_Ax"]}], ids=["pci", "short-pci", "part-numbers"])
def test_rails_from_devices(nics):
    result = rp.plan([dgx_host()], dgx_fabric(**nics))
    entries = result["hosts"]["dgx01"]
    assert [e["pci"] for e in entries] == DGX_PCI
    assert [e["interface"] for e in entries] == [
        "enp24s0np0", "enp64s0np0", "enp79s0np0", "enp94s0np0", "enp154s0np0", "enp192s0np0", "enp206s0np0",
        "enp220s0np0"]
    assert entries[4]["address"] == "198.18.64.2" and entries[4]["gateway"] == "198.18.64.1"


def test_part_numbers_take_the_cards_in_pci_order():
    """Rail k is the k-th compute NIC by PCI address, whatever the slot map would say."""
    moved = [{"address": "0000:07:00.0", "part_number": COMPUTE_PN, "netdevs": ["enp7s0np0"]}]
    result = rp.plan([dgx_host(extra=moved, drop=["0000:dc:00.0"])], dgx_fabric(part_numbers=[COMPUTE_PN]))
    assert [e["pci"] for e in result["hosts"]["dgx01"]] == ["0000:07:00.0"] + DGX_PCI[:7]


def test_the_facts_name_the_interface_not_interface_names():
    fab = dgx_fabric(part_numbers=[COMPUTE_PN])
    fab["interface_names"] = DGX_IF
    result = rp.plan([dgx_host(), {"name": "nofacts", "rack": "r01", "position": 2}], fab)
    assert result["hosts"]["dgx01"][0]["interface"] == "enp24s0np0"
    assert result["hosts"]["nofacts"][0]["interface"] == "ibp24s0" and result["hosts"]["nofacts"][0]["pci"] is None


def test_the_uplink_among_representors():
    bluefield = {"address": "0000:18:00.0", "part_number": COMPUTE_PN, "netdevs": ["pf0hpf", "p0", "en3f0pf0sf0"]}
    devices = [d for d in dgx_devices() if d["address"] != "0000:18:00.0"] + [bluefield]
    result = rp.plan([{"name": "h01", "rack": "r1", "position": 1, "devices": devices}], dgx_fabric())
    assert result["hosts"]["h01"][0]["interface"] == "p0"


def test_an_unclear_interface_is_named():
    two = {"address": "0000:18:00.0", "part_number": COMPUTE_PN, "netdevs": ["eth4", "eth5"]}
    devices = [d for d in dgx_devices() if d["address"] != "0000:18:00.0"] + [two]
    problems = problems_of([{"name": "h01", "rack": "r1", "position": 1, "devices": devices}], dgx_fabric())
    assert problems == ['hosts.h01.devices[11]: rail 0\'s NIC 0000:18:00.0: its facts name no single interface '
                        '(netdevs: eth4, eth5); set gpufabric_fabric.interface_names']


@pytest.mark.parametrize("extra, drop, count", [
    ((), ["0000:5e:00.0"], 7),
    ([{"address": "0000:e1:00.0", "part_number": COMPUTE_PN, "netdevs": ["enp225s0np0"]}], (), 9),
])
def test_seven_or_nine_compute_nics_are_refused(extra, drop, count):
    hosts = [dgx_host("dgx01"), dgx_host("dgx02", extra=extra, drop=drop)]
    problems = problems_of(hosts, dgx_fabric(part_numbers=[COMPUTE_PN]))
    assert len(problems) == 1
    assert named(problems, "hosts.dgx02.devices", "has %d compute NICs" % count, COMPUTE_PN, "for 8 rails")


def test_a_card_of_the_slot_map_missing():
    problems = problems_of([dgx_host("dgx03", drop=["0000:5e:00.0", "0000:ce:00.0"])], dgx_fabric())
    assert problems == ["hosts.dgx03.devices: has 6 of the 8 rail NICs of gpufabric_fabric.nics.pci: rail 3 "
                        "0000:5e:00.0, rail 6 0000:ce:00.0 not found (present: %s)" % ", ".join(
                            "%s %s" % (d["address"], d["part_number"])
                            for d in dgx_devices(drop=["0000:5e:00.0", "0000:ce:00.0"]))]


def test_second_functions_are_never_rails():
    fab = dgx_fabric(part_numbers=[STORAGE_PN])
    fab.update(rails=2, pools={"rail0": "10.0.0.0/16", "rail1": "10.1.0.0/16"})
    result = rp.plan([dgx_host()], fab)
    assert [e["pci"] for e in result["hosts"]["dgx01"]] == ["0000:29:00.0", "0000:aa:00.0"]
    assert [e["interface"] for e in result["hosts"]["dgx01"]] == ["enp41s0f0np0", "enp170s0f0np0"]


def test_hosts_without_facts_need_interface_names():
    hosts = [{"name": "a", "rack": "r1", "position": 1}, {"name": "b", "rack": "r1", "position": 2}]
    problems = problems_of(hosts, fabric(interface_names=None))
    assert problems == ["gpufabric_fabric.interface_names: required: 2 hosts carry no devices facts (a, b), so the "
                        "rail interfaces' names come from here"]


def test_the_management_interface_is_never_a_rail():
    hosts = [dict(SMALL_HOSTS[0], mgmt_interface="ibp64s0")]
    problems = problems_of(hosts, SMALL_FABRIC)
    assert problems == ["hosts.srv-r10-01.mgmt_interface: ibp64s0 is the management interface: rail 1 would put its "
                        "address and routes on the connection Ansible uses"]


# ---------------------------------------------------------------- every problem at once

def test_four_different_problems_named_at_once():
    fab = dgx_fabric(part_numbers=[COMPUTE_PN])
    fab["pools"]["rail3"] = "198.18.48.0/33"
    hosts = [dgx_host("dgx01"), dgx_host("dgx02", drop=["0000:9a:00.0"]),
             {"name": "dgx03", "position": 3, "devices": dgx_devices()},
             dict(dgx_host("dgx04"), position=1)]
    problems = problems_of(hosts, fab)
    assert len(problems) == 4, problems
    assert named(problems, "gpufabric_fabric.pools.rail3", '"198.18.48.0/33" is not an IPv4 network')
    assert named(problems, "hosts.dgx02.devices", "has 7 compute NICs", "for 8 rails")
    assert named(problems, "hosts.dgx03.rack", "required")
    assert named(problems, "hosts.dgx04", "rack r01 position 1 is also dgx01's")


def test_overlapping_pools_name_both_rails_and_the_shared_range():
    pools = {"rail%d" % r: "198.18.%d.0/20" % (16 * r) for r in range(8)}
    pools["rail5"] = ["198.18.80.0/21", "198.18.36.0/22"]
    fab = dgx_fabric()
    fab["pools"] = pools
    problems = problems_of([dgx_host()], fab)
    assert problems == ["gpufabric_fabric.pools.rail5[1]: 198.18.36.0/22 overlaps gpufabric_fabric.pools.rail2 "
                        "(198.18.32.0/20): they share 198.18.36.0/22"]


def test_pools_in_management_and_reserved_networks():
    problems = problems_of([], fabric(pools={"rail0": "198.19.128.0/20", "rail1": ["127.0.0.0/16", "10.0.0.0/8"]},
                                      mgmt_subnets=["198.19.0.0/16", "2001:db8::/32"]))
    assert problems == [
        "gpufabric_fabric.pools.rail1[0]: 127.0.0.0/16 overlaps 127.0.0.0/8 (loopback), which never holds a rail address",
        "gpufabric_fabric.pools.rail0: 198.19.128.0/20 overlaps the management network "
        "gpufabric_fabric.mgmt_subnets[0] (198.19.0.0/16): they share 198.19.128.0/20"]


def test_a_pool_twice_in_one_rail():
    problems = problems_of([], fabric(pools={"rail0": ["10.0.0.0/16", "10.0.0.0/16"], "rail1": "10.1.0.0/16"}))
    assert problems == ["gpufabric_fabric.pools.rail0[1]: 10.0.0.0/16 overlaps gpufabric_fabric.pools.rail0[0] "
                        "(10.0.0.0/16): they share 10.0.0.0/16"]


def test_exhausted_pool_names_rail_pool_su_needed_and_held():
    hosts = [{"name": "h%d" % su, "rack": "r1", "position": su, "su": su} for su in (1, 4, 5)]
    problems = problems_of(hosts, fabric(pools={"rail0": "10.0.0.0/16", "rail1": ["10.1.0.0/24", "10.1.8.0/23"]}))
    assert problems == ["gpufabric_fabric.pools.rail1: exhausted: 10.1.0.0/24 + 10.1.8.0/23 holds 3 /24 blocks, one "
                        "per SU (SU s takes the s-th): SU 4, 5 do not fit - 5 needed, 3 available"]
    problems = problems_of(hosts[:2], fabric(pools={"rail0": "10.0.0.0/16", "rail1": "10.1.0.0/23"}))
    assert problems == ["gpufabric_fabric.pools.rail1: exhausted: 10.1.0.0/23 holds 2 /24 blocks, one per SU (SU s "
                        "takes the s-th): SU 4 does not fit - 4 needed, 2 available"]


def test_an_su_with_more_hosts_than_its_subnet_holds():
    hosts = [{"name": "h%02d" % i, "rack": "r1", "position": i} for i in range(14)]
    problems = problems_of(hosts, fabric(su_prefix=28, pools={"rail0": "10.0.0.0/24", "rail1": "10.1.0.0/27"}))
    assert problems == [
        "gpufabric_fabric.pools.rail%d: SU 1 needs 14 host addresses but its subnet 10.%d.0.0/28 holds 13 (the "
        "network, the leaf and the broadcast address are not for hosts)" % (rail, rail) for rail in (0, 1)]
    small = fabric(addressing="p2p31", su_prefix=28, pools={"rail0": "10.0.0.0/24", "rail1": "10.1.0.0/27"})
    problems = problems_of(hosts[:9], small)
    assert named(problems, "gpufabric_fabric.pools.rail1", "SU 1 needs 9 host addresses but its block 10.1.0.0/28 "
                                                           "holds 8 /31 links")
    assert rp.plan(hosts[:8], fabric(addressing="p2p31", su_prefix=28))["hosts"]["h07"][0]["address"] == "198.18.0.15"


def test_a_pool_smaller_than_one_su_block():
    problems = problems_of([], fabric(pools={"rail0": "10.0.0.0/25", "rail1": "10.1.0.0/16"}))
    assert problems == ["gpufabric_fabric.pools.rail0: 10.0.0.0/25 is smaller than one SU block (/24, su_prefix)"]


def test_management_addresses():
    hosts = [dict(SMALL_HOSTS[2], mgmt_address="198.18.4.2"),        # srv-r09-01's own rail1 address
             dict(SMALL_HOSTS[1], mgmt_address="198.18.0.1"),        # the leaf's gateway on rail 0, SU 1
             dict(SMALL_HOSTS[0], mgmt_address="198.18.3.200"),      # unused, but inside rail0's pool
             dict(SMALL_HOSTS[3], mgmt_address="198.19.0.13"),
             dict(SMALL_HOSTS[4], mgmt_address="198.19.0.13"),
             {"name": "v6", "rack": "r9", "position": 7, "mgmt_address": "2001:db8::1"}]
    problems = problems_of(hosts, SMALL_FABRIC)
    assert problems == [
        "hosts.srv-r09-01.mgmt_address: 198.18.4.2 is also the rail 1 address of srv-r09-01: the rail plan would take "
        "the management address",
        "hosts.srv-r09-02.mgmt_address: 198.18.0.1 is also the address of leaf su1-leaf-rail0 (rail 0, SU 1): the "
        "rail plan would take the management address",
        "hosts.srv-r10-01.mgmt_address: 198.18.3.200 is inside gpufabric_fabric.pools.rail0 (198.18.0.0/22): the "
        "management network and the rails must not share addresses",
        "hosts.srv-r10-03.mgmt_address: 198.19.0.13 is also the mgmt_address of srv-r10-02"]


def test_a_leaf_name_that_names_two_leaves_and_a_port_cabled_twice():
    fab = {"rails": 12, "racks_per_su": 1, "leaf_name": "leaf{su}{rail}", "interface_names": ["e%d" % r for r in range(12)],
           "pools": {"rail%d" % r: "10.%d.0.0/16" % r for r in range(12)}, "nics": {"part_numbers": [COMPUTE_PN]}}
    hosts = [{"name": "a", "rack": "r1", "position": 1, "su": 1}, {"name": "b", "rack": "r2", "position": 1, "su": 11}]
    problems = problems_of(hosts, fab)
    assert problems == ["gpufabric_fabric.leaf_name: leaf110 names two leaves: rail 10 of SU 1 and rail 0 of SU 11",
                        "leaves.leaf110.ports.swp1: cabled twice: to a (rail 10, SU 1) and to b (rail 0, SU 11)",
                        "gpufabric_fabric.leaf_name: leaf111 names two leaves: rail 11 of SU 1 and rail 1 of SU 11",
                        "leaves.leaf111.ports.swp1: cabled twice: to a (rail 11, SU 1) and to b (rail 1, SU 11)"]


def test_host_identity_problems():
    hosts = [{"name": "a", "rack": "r1", "position": 1}, {"name": "a", "rack": "r1", "position": 2},
             {"name": "", "rack": "r1", "position": 3}, {"name": "c", "rack": True, "position": -1, "su": "2"},
             {"name": "d", "rack": "r1", "position": 4, "postion": 4}, ["e", "r1", 5]]
    problems = problems_of(hosts, SMALL_FABRIC)
    assert problems == [
        "hosts.a: the name is given twice (hosts[0] and hosts[1])",
        'hosts[2].name: must be the host\'s name (a non-empty string), not the string ""',
        "hosts.c.rack: must be the rack's name or number, e.g. r01, not the boolean true",
        "hosts.c.position: must be from 0 to 999999 (the host's position in its rack), not the number -1",
        'hosts.c.su: must be a whole number from 1 to 99999 (the host\'s scalable unit), not the string "2": write it '
        'without quotes',
        "hosts.d.postion: unknown key; did you mean position? (allowed: name, rack, position, su, mgmt_address, "
        "mgmt_interface, devices)",
        "hosts[5]: must be a mapping (name, rack, position, ...), not a list"]


def test_hosts_without_su_need_racks_per_su():
    problems = problems_of(SMALL_HOSTS[:3] + [dict(SMALL_HOSTS[3], su=1)], fabric(racks_per_su=None))
    assert problems == ["gpufabric_fabric.racks_per_su: required: 3 hosts carry no su (srv-r10-01, srv-r09-02, "
                        "srv-r09-01)"]


@pytest.mark.parametrize("hosts, where", [
    ({"a": {"rack": "r1"}}, "hosts: must be a list of servers"),
    (None, "hosts: must be a list of servers"),
    ("srv-r01-01", "hosts: must be a list of servers"),
    ([{"name": "a", "rack": "r1", "position": 1, "devices": {"address": "0000:18:00.0"}}], "hosts.a.devices: must be"),
    ([{"name": "a", "rack": "r1", "position": 1, "devices": [{"address": "18:00"}]}], "hosts.a.devices[0].address: "),
    ([{"name": "a", "rack": "r1", "position": 1, "devices": [None]}], "hosts.a.devices[0]: must be a mapping"),
    ([{"name": "a", "rack": "r1", "position": 1, "devices": [{"address": "0000:18:00.0", "part_number": 7}]}],
     "hosts.a.devices[0].part_number: "),
    ([{"name": "a", "rack": "r1", "position": 1, "devices": [{"address": "0000:18:00.0", "netdevs": "eth0"}]}],
     "hosts.a.devices[0].netdevs: "),
    ([{"name": "a", "rack": "r1", "position": 1, "devices": [{"address": "0000:18:00.0", "netdevs": ["eth0", 5]}]}],
     "hosts.a.devices[0].netdevs: "),
    ([{"name": "a", "rack": "r1", "position": 1, "mgmt_address": "10.0.0.1/24"}], "hosts.a.mgmt_address: "),
    ([{"name": "a", "rack": "r1", "position": 1, "mgmt_address": "srv-a.example.com"}], "hosts.a.mgmt_address: "),
    ([{"name": "a", "rack": "r1", "position": 1, "mgmt_interface": "eth 0"}], "hosts.a.mgmt_interface: "),
    ([{"name": "a", "rack": "r1", "position": 10 ** 40}], "hosts.a.position: must be from 0 to 999999"),
    ([{"name": "a", "rack": 10 ** 5000, "position": 1}], "hosts.a.rack: must be the rack's name or number"),
])
def test_bad_hosts_are_named(hosts, where):
    problems = problems_of(hosts, SMALL_FABRIC)
    assert len(problems) == 1 and problems[0].startswith(where), problems


# ---------------------------------------------------------------- the fabric on its own

def test_check_returns_a_good_fabric_unchanged():
    assert rp.check(SMALL_FABRIC) is SMALL_FABRIC
    assert rp.fabric_problems(SMALL_FABRIC) == []


def test_check_lists_every_problem():
    bad = fabric(rails="8", addressing="p2p", leaf_port="port", rail8="x")
    with pytest.raises(rp.RailPlanError) as err:
        rp.check(bad)
    assert str(err.value) == "\n".join([
        "gpufabric_fabric is not consistent (4 problems):",
        "- gpufabric_fabric.rail8: unknown key; did you mean rails? (allowed: rails, addressing, su_prefix, "
        "racks_per_su, pools, nics, interface_names, table_base, leaf_name, leaf_port, leaf_port_base, breakout, "
        "leaf_ports, port_templates, leaf_port_numbering, ports_per_rack, mgmt_subnets, uplinks)",
        '- gpufabric_fabric.rails: must be a whole number from 1 to 64 (compute NICs per server), not the string "8": '
        'write it without quotes',
        '- gpufabric_fabric.addressing: must be one of su_subnet, p2p31, not the string "p2p"',
        '- gpufabric_fabric.leaf_port: "port" must contain {port} (the host\'s port index + leaf_port_base) or {cage} '
        '(with a breakout: the index // breakout + leaf_port_base)'])
    assert len(err.value.problems) == 4 and err.value.parameter == "gpufabric_fabric"


BAD_FABRIC_VALUES = [
    ("rails", 0, "gpufabric_fabric.rails: must be from 1 to 64"),
    ("rails", 10 ** 30, "gpufabric_fabric.rails: must be from 1 to 64"),
    ("rails", 2.0, "gpufabric_fabric.rails: must be a whole number"),
    ("rails", [2], "gpufabric_fabric.rails: must be a whole number"),
    ("su_prefix", 31, "gpufabric_fabric.su_prefix: must be from 1 to 30"),
    ("su_prefix", True, "gpufabric_fabric.su_prefix: must be a whole number"),
    ("racks_per_su", -4, "gpufabric_fabric.racks_per_su: must be from 1 to 99999"),
    ("pools", ["198.18.0.0/22"], "gpufabric_fabric.pools: must be a mapping"),
    ("pools", {"rail0": "198.18.0.0/22"}, "gpufabric_fabric.pools.rail1: required"),
    ("pools", {"rail0": "198.18.0.0/22", "rail1": []}, "gpufabric_fabric.pools.rail1: must not be empty"),
    ("pools", {"rail0": "198.18.0.0/22", "rail1": "198.18.4.0"}, "add the prefix length"),
    ("pools", {"rail0": "198.18.0.0/22", "rail1": "2001:db8::/64"}, "gpufabric_fabric.pools.rail1: \"2001:db8::/64\" is IPv6"),
    ("pools", {"rail0": "198.18.0.0/22", "rail1": 3232235520}, "gpufabric_fabric.pools.rail1: must be an IPv4 network"),
    ("pools", {"rail0": "198.18.0.0/22", "rail1": "198.18.4.0/22", "rail2": "10.0.0.0/8"},
     "gpufabric_fabric.pools.rail2: no such rail (allowed: rail0 to rail1"),
    ("pools", {"rail0": "198.18.0.0/22", "rail1": "198.18.4.0/22", 7: "10.0.0.0/8"},
     "gpufabric_fabric.pools[\"the number 7\"]: no such rail"),
    ("nics", None, "gpufabric_fabric.nics: required"),
    ("nics", {"pci": ["0000:18:00.0", "0000:40:00.0"], "part_numbers": ["X"]}, "needs exactly one of pci or part_numbers"),
    ("nics", {"pci": ["0000:18:00.0"]}, "gpufabric_fabric.nics.pci: lists 1 PCI addresses for 2 rails"),
    ("nics", {"pci": ["0000:18:00.0", "18:00.0"]}, "gpufabric_fabric.nics.pci[1]: 18:00.0 is already rail 0's NIC"),
    ("nics", {"pci": ["0000:18:00.0", "slot 3"]}, "gpufabric_fabric.nics.pci[1]: must be a PCI address"),
    ("nics", {"part_numbers": []}, "gpufabric_fabric.nics.part_numbers: must not be empty"),
    ("nics", {"part_numbers": "MCX75310AAS-NEAT"}, "gpufabric_fabric.nics.part_numbers: must be a list"),
    ("nics", {"slots": [1, 2]}, "gpufabric_fabric.nics.slots: unknown key"),
    ("interface_names", ["ibp24s0"], "gpufabric_fabric.interface_names: lists 1 interfaces for 2 rails"),
    ("interface_names", ["ibp24s0", "ibp24s0"], "gpufabric_fabric.interface_names[1]: ibp24s0 is already rail 0's"),
    ("interface_names", ["ibp24s0", "a-very-long-interface"], "gpufabric_fabric.interface_names[1]: \"a-very-long-"),
    ("table_base", 253, "gpufabric_fabric.table_base: rails use tables 253 to 254, which includes the kernel's own "
                        "table 253 (default), 254 (main)"),
    ("table_base", 0, "gpufabric_fabric.table_base: must be from 1 to"),
    ("leaf_name", "su{su}-leaf-rail{rail", "is not a valid template"),
    ("leaf_name", "{rack}-leaf{rail}", "{rack} is not a field of \"{rack}-leaf{rail}\" (allowed: {su}, {rail}) "
                                       "({rack}: only with addressing p2p31"),
    ("leaf_name", "su{su}-rail{rail:>999999999}", "only a zero-padded width"),
    ("leaf_name", "su{su.__class__}-rail{rail}", "{su.__class__} is not a field"),
    ("leaf_name", "su{su!r}-rail{rail}", "{su} in \"su{su!r}-rail{rail}\": only a zero-padded width"),
    ("leaf_name", "leaf-{su}", "must contain {rail} and {su}"),
    ("leaf_port", "swp{0}", "{0} is not a field"),
    ("leaf_port_base", "1", "write it without quotes"),
    ("mgmt_subnets", ["198.19.0.0/16", "mgmt"], "gpufabric_fabric.mgmt_subnets[1]: \"mgmt\" is not an IPv4 network"),
    ("mgmt_subnets", {"a": 1}, "gpufabric_fabric.mgmt_subnets: must be an IPv4 network"),
]


@pytest.mark.parametrize("key, value, words", BAD_FABRIC_VALUES, ids=[
    "%s-%d" % (key, index) for index, (key, _v, _w) in enumerate(BAD_FABRIC_VALUES)])
def test_bad_fabric_values_are_named(key, value, words):
    bad = copy.deepcopy(SMALL_FABRIC)
    bad[key] = value
    if value is None:
        del bad[key]
    problems = rp.fabric_problems(bad)
    assert any(words in p for p in problems), problems
    assert all(p.startswith("gpufabric_fabric") for p in problems)
    assert problems_of(SMALL_HOSTS, bad)[:len(problems)] == problems


def test_a_fabric_that_is_not_a_mapping():
    for value in (None, [], "gpufabric_fabric", 8):
        assert rp.fabric_problems(value)[0].startswith("gpufabric_fabric: must be a mapping")


def test_without_netaddr(monkeypatch):
    monkeypatch.setattr(rp, "HAS_NETADDR", False)
    for call in (lambda: rp.plan(SMALL_HOSTS, SMALL_FABRIC), lambda: rp.check(SMALL_FABRIC)):
        with pytest.raises(MlnxError) as err:
            call()
        assert str(err.value) == "the rail plan needs the python netaddr library on the controller (pip install netaddr)"


# ---------------------------------------------------------------- the cabling table

def test_cabling_rows_sorted_by_leaf_then_port_in_natural_order():
    hosts = [{"name": "h%02d" % i, "rack": "r1", "position": i} for i in range(12)]
    hosts += [{"name": "x", "rack": "r2", "position": 1, "su": 10}]
    fab = fabric(pools={"rail0": "10.0.0.0/16", "rail1": "10.1.0.0/16"})
    rows = rp.cabling(rp.plan(hosts, fab))
    assert len(rows) == 26
    assert [(r["leaf"], r["leaf_port"]) for r in rows[:3]] == [("su1-leaf-rail0", "swp1"), ("su1-leaf-rail0", "swp2"),
                                                               ("su1-leaf-rail0", "swp3")]
    assert [r["leaf_port"] for r in rows[8:13]] == ["swp9", "swp10", "swp11", "swp12", "swp1"]
    assert [r["leaf"] for r in rows[12:]] == ["su1-leaf-rail1"] * 12 + ["su10-leaf-rail0", "su10-leaf-rail1"]
    assert rows[-1] == {"leaf": "su10-leaf-rail1", "leaf_port": "swp1", "host": "x", "interface": "ibp64s0",
                        "rail": 1, "su": 10, "pci": "0000:40:00.0", "address": "10.1.9.2",
                        "cable_label": "x:ibp64s0 -> su10-leaf-rail1:swp1"}
    assert tuple(rows[0]) == rp.CABLE_COLUMNS


@pytest.mark.parametrize("bad, words", [
    (None, "rail_cabling: the input must be the result of gpufabric.mlnx.rail_plan"),
    ([], "rail_cabling: the input must be the result of gpufabric.mlnx.rail_plan"),
    ({"hosts": {}}, "rail_cabling: plan.leaves must be a mapping (leaf -> its SU and ports of gpufabric.mlnx.rail_plan's "
                    "result), not nothing"),
    ({"hosts": ["srv-a"], "leaves": {}}, "rail_cabling: plan.hosts must be a mapping (host -> its rail entries of "
                                         "gpufabric.mlnx.rail_plan's result), not a list"),
    ({"hosts": "srv-a", "leaves": {}}, "rail_cabling: plan.hosts must be a mapping"),
    ({"hosts": {}, "leaves": ["l1"]}, "rail_cabling: plan.leaves must be a mapping"),
    ({"hosts": {"a": "x"}, "leaves": {}}, "plan.hosts.a: must be a host name and its list of rail entries"),
    ({"hosts": {"a": [{"leaf": 1}]}, "leaves": {}}, "plan.hosts.a[0]: must be a rail entry with leaf and leaf_port"),
])
def test_cabling_of_something_else(bad, words):
    with pytest.raises(MlnxError) as err:
        rp.cabling(bad)
    assert words in str(err.value)


# ---------------------------------------------------------------- the example inventory

def example_hosts():
    return example_1250()[0]


def example_fabric():
    return yaml.safe_load((EXAMPLE / "group_vars" / "all" / "rails.yml").read_text())["gpufabric_fabric"]


def test_the_example_inventory_plans_10000_ports():
    hosts = example_hosts()
    result = rp.plan(hosts, example_fabric())
    assert len(result["hosts"]) == 1250 and len(result["leaves"]) == 320
    assert sum(len(leaf["ports"]) for leaf in result["leaves"].values()) == 10000
    assert result["hosts"]["srv-r01-01"][0]["cable_label"] == "srv-r01-01:enp24s0np0 -> su01-leaf-rail0:swp1"
    assert result["hosts"]["srv-r09-01"][0]["leaf"] == "su02-leaf-rail0"     # racks r09-r16 are SU 2
    last = result["hosts"]["srv-r313-02"][7]
    assert (last["address"], last["gateway"], last["network"], last["table"], last["leaf"], last["leaf_port"]) == (
        "198.18.121.195", "198.18.121.193", "198.18.121.192/26", 107, "su40-leaf-rail7", "swp2")
    assert len(rp.cabling(result)) == 10000


def test_the_examples_batches_follow_its_sus():
    """inventory/example-1250's rollout.yml: batches by SU, [1, 1, 4] - each batch the SUs whose rail leaves serve
    only its servers (no leaf changes under a server still in service), as its comments say."""
    from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rollout import batches
    rollout = yaml.safe_load((EXAMPLE / "group_vars" / "all" / "rollout.yml").read_text())
    hosts = example_hosts()
    plan = rp.plan(hosts, example_fabric())
    out = batches([{"name": h["name"], "rack": h["rack"]} for h in hosts], plan, rollout["gpufabric_batch_by"],
                  rollout["gpufabric_batch_size"], leaves=sorted(plan["leaves"]))
    assert [b["name"] for b in out["batches"]] == ["SU 1", "SU 2"] + ["SUs %d-%d" % (s, s + 3) for s in range(3, 39, 4)] \
        + ["SUs 39-40"]
    assert [len(b["servers"]) for b in out["batches"]] == [32, 32] + [128] * 9 + [34]
    assert [len(b["leaves"]) for b in out["batches"]] == [8, 8] + [32] * 9 + [16]
    assert out["shared"] == []
    assert out["batches"][0]["servers"][-1] == "srv-r08-04" and out["batches"][-1]["servers"][-1] == "srv-r313-02"


DOCS = REPO / "docs" / "rails.md"


def docs_blocks(kind):
    return re.findall(r"```%s\n(.*?)```" % kind, DOCS.read_text(), re.S)


def test_the_docs_example_is_the_inventory_example():
    blocks = [yaml.safe_load(b) for b in docs_blocks("yaml") if b.startswith("gpufabric_fabric:")]
    assert len(blocks) == 1 and blocks[0]["gpufabric_fabric"] == example_fabric()


def test_the_docs_plan_is_the_real_plan():
    result = rp.plan(example_hosts(), example_fabric())
    blocks = {b.splitlines()[0]: yaml.safe_load(b) for b in docs_blocks("yaml") if b.startswith("# plan.")}
    assert blocks['# plan.hosts["srv-r01-01"][0]'] == result["hosts"]["srv-r01-01"][0]
    leaf = blocks['# plan.leaves["su01-leaf-rail0"], ports swp3 to swp32 left out here']
    real = result["leaves"]["su01-leaf-rail0"]
    assert dict(leaf, ports=None, cables=None) == dict(real, ports=None, cables=None) and len(real["ports"]) == 32
    assert leaf["ports"] == {port: real["ports"][port] for port in ("swp1", "swp2")}
    assert leaf["cables"] == {port: real["cables"][port] for port in ("swp1", "swp2")}


def test_the_docs_problems_are_the_real_problems():
    fab = example_fabric()
    fab["nics"] = {"part_numbers": [COMPUTE_PN]}
    fab["pools"]["rail5"] = ["198.18.80.0/21", "198.18.36.0/22"]
    hosts = [dict(dgx_host("dgx01"), name="srv-r07-01", rack="r07"),
             dict(dgx_host("dgx02", drop=["0000:9a:00.0"]), name="srv-r07-02", rack="r07"),
             {"name": "srv-r07-03", "position": 3},
             dict(dgx_host("dgx01"), name="srv-r07-04", rack="r07")]
    with pytest.raises(rp.RailPlanError) as err:
        rp.plan(hosts, fab)
    assert str(err.value) + "\n" in docs_blocks("text")


# ---------------------------------------------------------------- hypothesis: never a traceback

def _garbage():
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=-3, max_value=70),
                        st.floats(), st.text(max_size=12),
                        st.sampled_from(["10.0.0.0/8", "198.18.0.0/20", "0000:18:00.0", "r01", "rail0", "{su}",
                                         "{rail}", "p2p31", "su_subnet", "ibp24s0", "1.2.3.4", "{", "swp{port}"]))
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), st.integers(), st.sampled_from(rp.FABRIC_KEYS + rp.HOST_KEYS)),
                        inner, max_size=4)),
        max_leaves=12)


def plan_or_error(hosts, fab):
    try:
        result = rp.plan(hosts, fab)
    except MlnxError as err:
        assert isinstance(str(err), str) and str(err)
        return None
    assert set(result) == {"hosts", "leaves"}
    return result


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_garbage(), _garbage())
def test_garbage_gives_a_plan_or_mlnx_error(hosts, fab):
    plan_or_error(hosts, fab)


NODES = [("rails",), ("addressing",), ("su_prefix",), ("racks_per_su",), ("pools",), ("pools", "rail0"),
         ("pools", "rail1"), ("nics",), ("nics", "pci"), ("interface_names",), ("table_base",), ("leaf_name",),
         ("leaf_port",), ("leaf_port_base",), ("mgmt_subnets",)]
HOST_NODES = ["name", "rack", "position", "su", "mgmt_address", "mgmt_interface", "devices"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(NODES), _garbage(), st.integers(min_value=0, max_value=len(SMALL_HOSTS) - 1),
       st.sampled_from(HOST_NODES), _garbage())
def test_garbage_anywhere_gives_a_plan_or_mlnx_error(node, garbage, index, key, host_garbage):
    fab = copy.deepcopy(SMALL_FABRIC)
    parent = fab
    for part in node[:-1]:
        parent = parent[part]
    parent[node[-1]] = garbage
    hosts = copy.deepcopy(SMALL_HOSTS)
    hosts[index][key] = host_garbage
    plan_or_error(hosts, fab)
    plan_or_error(copy.deepcopy(SMALL_HOSTS), fab)
    plan_or_error(hosts, SMALL_FABRIC)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=11), st.sampled_from(["address", "part_number", "netdevs", "function"]),
       _garbage(), st.sampled_from([{"pci": DGX_PCI}, {"part_numbers": [COMPUTE_PN]}]))
def test_garbage_in_device_facts_gives_a_plan_or_mlnx_error(index, key, garbage, nics):
    host = dgx_host()
    host["devices"][index][key] = garbage
    plan_or_error([host], dgx_fabric(**nics))


# ---------------------------------------------------------------- hypothesis: valid plans are sound

SLOTS = list(netaddr.IPNetwork("10.0.0.0/12").subnet(20))   # 256 /20 slots for pools and management networks


@st.composite
def valid_inputs(draw):
    rails = draw(st.integers(min_value=1, max_value=8))
    addressing = draw(st.sampled_from(rp.ADDRESSING))
    su_prefix = draw(st.sampled_from([24, 25]))
    slots = draw(st.permutations(range(len(SLOTS))))
    taken = iter(slots)
    pools = {}
    for rail in range(rails):           # 16 SU blocks per rail: one /(su_prefix-4) or two /(su_prefix-3)
        if draw(st.booleans()):
            pools["rail%d" % rail] = str(next(SLOTS[next(taken)].subnet(su_prefix - 4)))
        else:
            pools["rail%d" % rail] = [str(next(SLOTS[next(taken)].subnet(su_prefix - 3))) for _half in range(2)]
    mgmt = [str(SLOTS[next(taken)]) for _net in range(draw(st.integers(min_value=0, max_value=3)))]
    fab = {"rails": rails, "addressing": addressing, "su_prefix": su_prefix,
           "racks_per_su": draw(st.integers(min_value=1, max_value=4)), "pools": pools,
           "nics": {"part_numbers": [COMPUTE_PN]}, "interface_names": ["eth%d" % r for r in range(rails)],
           "table_base": draw(st.integers(min_value=1, max_value=200)),
           "leaf_name": draw(st.sampled_from(["su{su}-leaf-rail{rail}", "s{su:02d}r{rail}"] +
                                             (["{rack}-leaf-rail{rail}"] if addressing == rp.P2P31 else []))),
           "leaf_port_base": draw(st.integers(min_value=0, max_value=2)), "mgmt_subnets": mgmt}
    racks = draw(st.lists(st.sampled_from(["r%d" % i for i in range(1, 11)]), min_size=0, max_size=40))
    su_of_rack = {rack: draw(st.one_of(st.none(), st.integers(min_value=1, max_value=6))) for rack in sorted(set(racks))}
    hosts, used = [], set()
    mgmt_hosts = iter(netaddr.IPNetwork(mgmt[0]).iter_hosts()) if mgmt else None
    for index, rack in enumerate(racks):
        position = draw(st.integers(min_value=0, max_value=6))
        if (rack, position) in used:
            continue
        used.add((rack, position))
        host = {"name": "h%d" % index, "rack": rack, "position": position}
        if su_of_rack[rack] is not None:
            host["su"] = su_of_rack[rack]
        if mgmt_hosts is not None and draw(st.booleans()):
            host["mgmt_address"] = str(next(mgmt_hosts))
        hosts.append(host)
    return draw(st.permutations(hosts)), fab


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_inputs())
def test_valid_plans_are_sound(inputs):
    hosts, fab = inputs
    result = rp.plan(hosts, fab)
    pools = {rail: netaddr.IPSet([fab["pools"]["rail%d" % rail]] if isinstance(fab["pools"]["rail%d" % rail], str)
                                 else fab["pools"]["rail%d" % rail]) for rail in range(fab["rails"])}
    mgmt = netaddr.IPSet(fab["mgmt_subnets"])
    assert sorted(result["hosts"]) == sorted(h["name"] for h in hosts)
    addresses, ports, gateways = [], [], {}
    for name, entries in result["hosts"].items():
        assert [e["rail"] for e in entries] == list(range(fab["rails"]))
        for e in entries:
            address = netaddr.IPAddress(e["address"])
            network = netaddr.IPNetwork(e["network"])
            assert address in pools[e["rail"]] and address not in mgmt
            assert address in network and network.prefixlen == e["prefix"]
            assert netaddr.IPAddress(e["gateway"]) in network and e["gateway"] != e["address"]
            assert address not in (network.network, network.broadcast) or e["prefix"] == 31
            assert e["table"] == fab["table_base"] + e["rail"]
            assert result["leaves"][e["leaf"]]["ports"][e["leaf_port"]] == name
            assert e["cable_label"] == "%s:eth%d -> %s:%s" % (name, e["rail"], e["leaf"], e["leaf_port"])
            addresses.append(e["address"])
            ports.append((e["leaf"], e["leaf_port"]))
            gateways[e["gateway"]] = e["leaf"]
    leaf_ports = [(leaf, port) for leaf, body in result["leaves"].items() for port in body["ports"]]
    assert len(set(addresses)) == len(addresses) and not set(addresses) & set(gateways)
    assert not set(addresses) & {h.get("mgmt_address") for h in hosts}
    assert len(set(ports)) == len(ports) and sorted(ports) == sorted(leaf_ports)
    assert len(rp.cabling(result)) == len(addresses)


def test_two_devices_with_one_pci_address_are_refused_not_merged():
    """The facts list 0000:18:00.0 twice (once as 18:00.0): the plan used to keep one of them silently."""
    devices = dgx_devices()
    first = [d["address"] for d in devices].index("0000:18:00.0")
    devices.append({"address": "18:00.0", "part_number": STORAGE_PN, "netdevs": ["enp24s0f1np1"]})
    problems = problems_of([{"name": "h01", "rack": "r1", "position": 1, "devices": devices}], dgx_fabric())
    assert ("hosts.h01.devices[%d].address: 0000:18:00.0 is also hosts.h01.devices[%d]'s: one host has each PCI "
            "address once" % (len(devices) - 1, first)) in problems
