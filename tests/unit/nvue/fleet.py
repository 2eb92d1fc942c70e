# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small fleet for playbook tests on this machine: two racks, one server each, two rails - four leaves of the NVUE
emulator on 127.0.0.1 (each port's LLDP neighbour the plan's server), and the servers either plain local hosts or
simulated ones (tests/sim: two ConnectX-6 Dx cards each, their NV configuration and activation steps on)."""
from _roleplay import sim_vars, simulated

FABRIC = {"rails": 2, "su_prefix": 26, "racks_per_su": 1, "addressing": "p2p31", "leaf_name": "{rack}-leaf-rail{rail}",
          "pools": {"rail0": "198.18.0.0/20", "rail1": "198.18.16.0/20"},
          "nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]}, "interface_names": ["enp24s0np0", "enp64s0np0"]}
SERVERS = {"srv-r01-01": {"rack": "r01", "position": 1}, "srv-r02-01": {"rack": "r02", "position": 1}}
STEPS = ["preflight", "platform", "ofed", "firmware", "nic_config", "activate", "rails", "roce_qos"]
OFF = {"gpufabric_%s_enabled" % step: False for step in STEPS}
# the simulated servers: their NV configuration (SR-IOV, 8 VFs on every ConnectX-6 Dx) and its activation
PROFILE = {"SRIOV_EN": True, "NUM_OF_VFS": 8}
ON = ("gpufabric_nic_config_enabled", "gpufabric_activate_enabled")
NV_STEPS = dict({key: value for key, value in OFF.items() if key not in ON},
                gpufabric_activate_allow_reboot=True, gpufabric_nic_config_profiles={"sriov": PROFILE},
                gpufabric_nic_config_assignments=[{"profile": "sriov", "part_numbers": ["MCX623106AN-CDAT"]}])
CARD = "0000:3b:00.0"  # the cx6dx-roce profile's first card


def leaves(make_switch, faults=None):
    """The four leaves {name: Switch}, started; ``faults``: {leaf: [(fault words), ...]} set on them."""
    made = {}
    for host, values in SERVERS.items():
        for rail in (0, 1):
            name = "%s-leaf-rail%d" % (values["rack"], rail)
            sw = make_switch(name, ports="swp1-2")
            sw.admin("port", "swp1", "--neighbor", "%s:%s" % (host, FABRIC["interface_names"][rail]))
            for fault in (faults or {}).get(name, ()):
                sw.admin("fault", "set", *fault)
            made[name] = sw
    return made


def leaf_vars(made):
    """{leaf: inventory variables} of the leaves (httpapi to the emulator; a short leaf gate)."""
    return {name: sw.httpapi_vars(gpufabric_leaf_ready_interval=1, gpufabric_leaf_ready_timeout=2,
                                  gpufabric_fabric=FABRIC) for name, sw in made.items()}


def simulated_servers(tmp_path):
    """{server: SimHost} of the two servers."""
    return {name: simulated(tmp_path, name, "cx6dx-roce") for name in SERVERS}


def simulated_vars(sims):
    """{server: inventory variables} of the simulated servers, their NV steps on."""
    return {name: sim_vars(sims[name], **dict(SERVERS[name], **NV_STEPS)) for name in SERVERS}
