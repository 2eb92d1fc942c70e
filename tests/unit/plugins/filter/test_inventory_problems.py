"""The inventory_problems filter (plugins/plugin_utils/_preflight.py inventory_problems): what the inventory alone
shows - every distinct matrix, the rail plan, every distinct set of RoCE QoS settings and of BIOS inputs - each
checked once and named with the hosts that share it. Literal expected values on a small inventory, then the
property that makes the grouping safe: the problems of the grouped check, each message expanded to its hosts, are
exactly the problems of checking every host alone."""
import copy
import itertools
import random
import re

import pytest
import yaml

from _paths import REPO
from ansible_collections.gpufabric.mlnx.plugins.filter import inventory_problems as plugin
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _role_defaults, _roles

inventory_problems = plugin.FilterModule().filters()["inventory_problems"]
MATRIX = yaml.safe_load((REPO / "inventory/example-1250/group_vars/all/matrix.yml").read_text())["gpufabric_matrix"]
FABRIC = {"rails": 2, "su_prefix": 26, "racks_per_su": 1,
          "pools": {"rail0": "198.18.0.0/20", "rail1": "198.18.16.0/20"},
          "nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]}, "interface_names": ["enp24s0np0", "enp64s0np0"],
          "mgmt_subnets": ["198.19.0.0/16"]}


def host(rack, position, **extra):
    return dict({"gpufabric_matrix": MATRIX, "gpufabric_fabric": FABRIC, "rack": rack, "position": position,
                 "ansible_host": "198.19.%d.%d" % (rack, position)}, **extra)


def test_a_clean_inventory_has_no_problem():
    hostvars = {"srv-r01-%02d" % p: host(1, p) for p in (1, 2, 3)}
    assert inventory_problems(list(hostvars), hostvars, fabric=FABRIC, rail_hosts=list(hostvars)) == []


def test_with_plan_the_check_hands_back_what_the_rollouts_batches_read_of_its_rail_plan():
    from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import plan
    from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roles import rail_plan_servers
    from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rollout import batches
    hostvars = {"srv-r%02d-01" % r: host(r, 1) for r in (1, 2, 3)}
    names = list(hostvars)
    out = inventory_problems(names, hostvars, fabric=FABRIC, rail_hosts=names, with_plan=True)
    assert out["problems"] == []
    # one rack an SU, two rails: each server's leaf and port per rail, each leaf's SU - nothing else of the plan
    assert out["plan"]["hosts"]["srv-r02-01"] == [{"leaf": "su2-leaf-rail0", "leaf_port": "swp1"},
                                                  {"leaf": "su2-leaf-rail1", "leaf_port": "swp1"}]
    assert out["plan"]["leaves"]["su3-leaf-rail1"] == {"su": 3}
    # the batches from it are those from the whole plan
    full = plan(rail_plan_servers(names, hostvars), FABRIC)
    servers = [{"name": n, "rack": hostvars[n]["rack"]} for n in names]
    assert batches(servers, out["plan"], "su", 2) == batches(servers, full, "su", 2)
    # no fabric, or a plan with problems: no plan
    assert inventory_problems(names, hostvars, with_plan=True)["plan"] is None
    broken = dict(FABRIC, rails=3)
    found = inventory_problems(names, hostvars, fabric=broken, rail_hosts=names, with_plan=True)
    assert found["problems"] and found["plan"] is None
    with pytest.raises(Exception, match='with_plan must be true or false, not the string "yes"'):
        inventory_problems(names, hostvars, with_plan="yes")


def test_each_surface_named_once_with_the_hosts_that_share_it():
    bios = {"models": {"PowerEdge XE9680": {"ProcCStates": None}}}
    hostvars = {
        "srv-r01-01": host(1, 1, gpufabric_roce_qos_cnp_dscp=64, gpufabric_platform_bios=bios),
        "srv-r01-02": host(1, 2, gpufabric_roce_qos_cnp_dscp=64, gpufabric_platform_bios=bios),
        "srv-r01-03": host(1, 3, gpufabric_platform_bios_sriov="yes"),
        "srv-r01-04": host(1, 3, gpufabric_roce_qos_enabled=False, gpufabric_roce_qos_cnp_dscp=99),   # QoS off
        "srv-r01-05": {k: v for k, v in host(1, 5).items() if k != "gpufabric_matrix"},
    }
    bad_matrix = copy.deepcopy(MATRIX)
    del bad_matrix["firmware"]["MT_0000000838"]["sha256"]
    hostvars["srv-r01-05"]["gpufabric_roce_qos_interfaces"] = ["x\"$(reboot)\""]
    found = inventory_problems(list(hostvars), hostvars, fabric=FABRIC, rail_hosts=list(hostvars))
    assert found == [
        "srv-r01-05: gpufabric_matrix is not set (docs/matrix.md)",
        "hosts.srv-r01-04: rack 1 position 3 is also srv-r01-03's",
        "2 hosts (srv-r01-01, srv-r01-02): roce_qos: cnp_dscp=64 is outside 0-63 (allowed: an integer 0-63).",
        "srv-r01-05: roce_qos: interfaces[0]='x\"$(reboot)\"' is not a network interface name (allowed: 1-15 ASCII "
        "letters, digits and _ . + - (not '.' or '..')).",
        "2 hosts (srv-r01-01, srv-r01-02): gpufabric_platform_bios.models[\"PowerEdge XE9680\"].ProcCStates: BIOS "
        "attribute ProcCStates has no value (null): give one, or leave the attribute out to keep the BIOS's value",
        "srv-r01-03: gpufabric_platform_bios_sriov: must be true (on), false (off) or null (leave the BIOS as it "
        "is), not the string \"yes\"",
    ], found                                  # srv-r01-04's cnp_dscp 99 is not checked: it configures no RoCE QoS
    hostvars["srv-r02-01"] = host(2, 1, gpufabric_matrix=bad_matrix)       # a second, inconsistent matrix
    found = inventory_problems(["srv-r01-01", "srv-r02-01"], hostvars)
    assert found == ["gpufabric_matrix of srv-r02-01: gpufabric_matrix.firmware.MT_0000000838.sha256: required: the "
                     "sha256 of the image file (64 hex digits)",
                     "srv-r01-01: roce_qos: cnp_dscp=64 is outside 0-63 (allowed: an integer 0-63).",
                     found[2]], found
    assert not [line for line in found if "rail" in line]                   # no fabric given: no rail plan


def test_a_rail_pool_over_the_management_network_is_a_problem():
    fabric = dict(FABRIC, pools={"rail0": "198.19.0.0/20", "rail1": "198.18.16.0/20"})
    hostvars = {"srv-r01-01": host(1, 1, gpufabric_fabric=fabric)}
    found = inventory_problems(list(hostvars), hostvars, fabric=fabric, rail_hosts=list(hostvars))
    assert len(found) >= 1 and all("198.19.0.0" in line for line in found), found


def test_the_rail_plan_servers_from_the_variables_read_once_are_the_same():
    from unit.plugins.filter.test_role_filters import HOSTVARS
    read = _roles.read_vars(list(HOSTVARS), HOSTVARS, _roles.RAIL_PLAN_VARS)
    assert _roles.rail_plan_servers(list(HOSTVARS), read) == _roles.rail_plan_servers(list(HOSTVARS), HOSTVARS)
    assert read["srv-r02-04"] == {"rack": "r02"}                 # an undefined template is not read as set


def test_role_defaults_are_the_roles_own():
    defaults = yaml.safe_load((REPO / "roles/roce_qos/defaults/main.yml").read_text())
    assert _role_defaults.role_defaults("roce_qos") == defaults and defaults["gpufabric_roce_qos_cnp_dscp"] == 48


# ------------------------------------------------------------------------------------------ grouping = per host

VARIANTS = {
    "gpufabric_roce_qos_cnp_dscp": [48, 64, "x"],
    "gpufabric_roce_qos_trust": ["dscp", "DSCP", "pcp"],
    "gpufabric_roce_qos_pfc_priorities": [[3], [8], [3, 3]],
    "gpufabric_roce_qos_leave": [[], ["trust"], ["cnp_dcsp"]],
    "gpufabric_platform_bios_overrides": [{}, {"A": None}, {"B": [1]}],
    "gpufabric_platform_bios_iommu": [None, True, "on"],
}


def expand(problems):
    """{(host, problem text without the hosts)} of the problems of the grouped check."""
    out = set()
    for line in problems:
        many = re.fullmatch(r"\d+ hosts \(([^)]*)\): (.*)", line, re.S)
        if many:
            out.update((name, many.group(2)) for name in many.group(1).split(", "))
        else:
            name, rest = line.split(": ", 1)
            out.add((name, rest))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_grouped_problems_are_the_per_host_problems(seed):
    pick = random.Random(seed)
    hostvars = {}
    for index in range(40):
        extra = {key: pick.choice(values) for key, values in VARIANTS.items() if pick.random() < 0.5}
        hostvars["srv-%02d" % index] = dict(extra, gpufabric_matrix=MATRIX, gpufabric_roce_qos_interfaces=["eth0"])
    grouped = inventory_problems(list(hostvars), hostvars)
    alone = set(itertools.chain.from_iterable(
        ((name, line.split(": ", 1)[1]) for line in inventory_problems([name], hostvars)) for name in hostvars))
    assert expand(grouped) == alone and alone
    assert len(grouped) < len(list(alone))                 # hosts that share an input share its sentences


def test_the_leaves_group_reaches_the_rail_plan():
    """leaf_hosts: the leaves of the plan against the inventory's leaves group, and a leaf's port template."""
    hostvars = {"srv-r01-%02d" % p: host(1, p) for p in (1, 2)}
    connection = {"ansible_connection": "ansible.netcommon.network_cli", "ansible_network_os": "gpufabric.mlnx.nvue",
                  "ansible_user": "cumulus", "ansible_ssh_private_key_file": "~/.ssh/leaves"}
    leaves = {"su1-leaf-rail0": dict(connection, gpufabric_leaf_port_template="sn5600"), "su1-leaf-rail7": connection}
    hostvars.update(leaves)
    found = inventory_problems(list(hostvars)[:2], hostvars, fabric=FABRIC, rail_hosts=list(hostvars)[:2],
                               leaf_hosts=list(leaves))
    assert found == [
        'leaves.su1-leaf-rail0.gpufabric_leaf_port_template: leaf su1-leaf-rail0: no port template "sn5600" in '
        'gpufabric_fabric.port_templates (known: none)',
        "leaves.su1-leaf-rail1: srv-r01-01:enp64s0np0 is cabled to su1-leaf-rail1, which is not in the inventory's "
        "leaves group (gpufabric_leaf_group; 2 cables go to it): add the leaf to the group, or correct "
        "gpufabric_fabric.leaf_name",
        "leaves.su1-leaf-rail7: is in the inventory's leaves group but is no leaf of the rail plan (closest planned "
        "leaves: su1-leaf-rail1, su1-leaf-rail0)"], found
    # without leaf_hosts the leaves are not checked
    assert inventory_problems(list(hostvars)[:2], hostvars, fabric=FABRIC, rail_hosts=list(hostvars)[:2]) == []
    with pytest.raises(Exception, match="leaf_hosts must be a list of host names"):
        inventory_problems(list(hostvars)[:2], hostvars, fabric=FABRIC, leaf_hosts="su1-leaf-rail0")


def test_the_spines_group_reaches_the_rail_plan():
    """spine_hosts: with spines the plan's uplinks are checked (here: no loopback pool, then a plane without spine)."""
    hostvars = {"srv-r01-%02d" % p: host(1, p) for p in (1, 2)}
    spines = {"spine1": {}}
    hostvars.update(spines)
    servers = list(hostvars)[:2]
    found = inventory_problems(servers, hostvars, fabric=FABRIC, rail_hosts=servers, spine_hosts=list(spines))
    assert found == ["gpufabric_fabric.uplinks.loopbacks: required: the inventory has 1 spines (spine1), so every "
                     "leaf gets a loopback and BGP router id from this pool (e.g. 198.18.128.0/24)"], found
    hostvars["spine1"] = {"gpufabric_spine_plane": 0}
    fabric = dict(FABRIC, uplinks={"loopbacks": "198.18.128.0/24", "planes": "rail", "ports": 33})
    found = inventory_problems(servers, hostvars, fabric=fabric, rail_hosts=servers, spine_hosts=list(spines))
    assert found == ["gpufabric_fabric.uplinks.planes: rail 1 has 1 leaves (su1-leaf-rail1, ...) and no spine: set "
                     "gpufabric_spine_plane: 1 on its spines"], found
    assert inventory_problems(servers, hostvars, fabric=fabric, rail_hosts=servers, spine_hosts=[]) == []
    assert inventory_problems(servers, hostvars, fabric=fabric, rail_hosts=servers) == []


class CountingHostvars(dict):
    """Ansible's hostvars as the checks see them: not a plain dict of dicts - each host looked up is counted, and
    each value read is recorded (a read renders a template: a templated BMC address, a vaulted password)."""

    class Host(dict):
        def __init__(self, owner, name, data):
            super().__init__(data)
            self.owner, self.name = owner, name

        def __getitem__(self, key):
            self.owner.read.append((self.name, key))
            return super().__getitem__(key)

    def __init__(self, hosts):
        super().__init__(hosts)
        self.lookups, self.read = {}, []

    def __getitem__(self, name):
        self.lookups[name] = self.lookups.get(name, 0) + 1
        return self.Host(self, name, super().__getitem__(name))


def test_each_host_is_looked_up_once_however_many_passes_read_it():
    plain = {"srv-r%02d-01" % r: host(r, 1) for r in (1, 2, 3)}
    hostvars = CountingHostvars(plain)
    names = list(plain)
    assert inventory_problems(names, hostvars, fabric=FABRIC, rail_hosts=names) == []
    assert hostvars.lookups == {name: 1 for name in names}    # 7 lookups a host before (one a pass)


def test_a_value_no_spec_can_refuse_is_not_read_one_that_can_is():
    # gpufabric_platform_bmc_address is a str (no choices): any value passes Ansible's check, so it is not rendered;
    # gpufabric_firmware_timeout is an int: read, and a wrong one named
    plain = {"srv-r01-01": host(1, 1, gpufabric_platform_bmc_address="{{ a_template }}", gpufabric_firmware_timeout=30),
             "srv-r01-02": host(1, 2, gpufabric_platform_bmc_address="198.19.100.2",
                                gpufabric_firmware_timeout="soon")}
    hostvars = CountingHostvars(plain)
    found = inventory_problems(list(plain), hostvars)
    assert not [read for read in hostvars.read if read[1] == "gpufabric_platform_bmc_address"]
    assert ("srv-r01-02", "gpufabric_firmware_timeout") in hostvars.read
    assert found == ["srv-r01-02: argument 'gpufabric_firmware_timeout' is of type str and we were unable to convert "
                     "to int: \"'soon'\" cannot be converted to an int"]


@pytest.mark.parametrize("spec, refuses", [
    ({"type": "str"}, False), ({}, False), ({"type": "raw"}, False),
    ({"type": "str", "choices": ["a", "b"]}, True), ({"type": "raw", "choices": [1]}, True),
    ({"type": "list", "elements": "str"}, True), ({"type": "str", "elements": "str"}, True),
    ({"type": "int"}, True), ({"type": "bool"}, True), ({"type": "dict"}, True), ({"type": "path"}, True),
])
def test_which_specs_can_refuse_a_value(spec, refuses):
    from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._variables import never_refused
    assert never_refused(spec) is not refuses
