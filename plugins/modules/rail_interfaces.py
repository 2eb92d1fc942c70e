#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: rail_interfaces
short_description: Bring a GPU server's compute rails to its rail plan - address, MTU, policy routing, ARP sysctls
version_added: 0.1.0
description:
  - For each rail of the host's rail plan (P(gpufabric.mlnx.rail_plan#filter)), on the running system and without a
    network restart - the MTU, the link up, the rail address (other IPv4 addresses of that interface removed), a
    routing table per rail with the connected route and a default route through the rail's leaf, C(ip rule from
    <address> table <n>) at priority 1000 + rail, and C(arp_ignore=1), C(arp_announce=2), C(rp_filter=2) on the
    interface (several NICs of one host in the same fabric answer ARP only for their own address and route by
    source).
  - Reads with iproute2's JSON output (C(ip -j)), writes with C(ip) and C(/proc/sys); only the rail interfaces are
    ever named - the management interface and interfaces outside the plan are never touched, and a rail on the
    management interface is refused.
  - Persisting the same state for the host's network stack (netplan, NetworkManager, ifupdown) is the
    gpufabric.mlnx.rails role's job; RV(netplan), RV(nm_keyfiles), RV(ifupdown) and RV(sysctl_conf) are what it
    writes.
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.full
options:
  rails:
    description:
      - The host's entries of the rail plan (C(gpufabric_rail_plan.hosts[inventory_hostname])) - each with
        C(rail), C(interface), C(address), C(prefix), C(gateway) and C(table).
      - Checked before anything runs on the host (the management guard reads C(ibdev2netdev)) - C(rail) 0-63,
        C(interface) one name of 1-15 ASCII letters, digits and C(_ . + -), C(table) a whole number 1-4294967295
        other than the kernel's own tables 253 (default), 254 (main) and 255 (local).
    type: list
    elements: dict
    required: true
  host:
    description: The host's name in messages (C(inventory_hostname)); when not given, the machine's host name.
    type: str
  mtu:
    description: MTU of every rail interface (68-9216).
    type: int
    default: 9000
  sysctls:
    description: The IPv4 per-interface sysctls of the rails.
    type: dict
    default: {arp_ignore: 1, arp_announce: 2, rp_filter: 2}
  mgmt_interface:
    description: The management interface (one interface name); empty - found from the address Ansible connects to
      and the default route.
    type: str
  root:
    description: Where procfs is, as a prefix of V(/proc) - V(/) on a real host.
    type: path
    default: /
"""

EXAMPLES = r"""
- name: The rails of this server
  gpufabric.mlnx.rail_interfaces:
    rails: "{{ gpufabric_rail_plan.hosts[inventory_hostname] }}"
    host: "{{ inventory_hostname }}"
"""

RETURN = r"""
changes:
  description: Per rail interface, what differed.
  returned: always
  type: dict
  sample: {enp64s0np0: ["mtu 1500 -> 9000", "address 198.18.16.9/26", "rule 1001 from 198.18.16.9 table 101"]}
steps:
  description: The C(ip) argv lists and sysctl writes run (in check mode, that would run), in order.
  returned: always
  type: list
  elements: dict
netplan:
  description: The rails as netplan YAML data (for /etc/netplan/90-gpufabric-rails.yaml).
  returned: always
  type: dict
nm_keyfiles:
  description: One NetworkManager keyfile text per rail, by file name.
  returned: always
  type: dict
ifupdown:
  description: The rails as ifupdown stanzas (for /etc/network/interfaces.d/gpufabric-rails).
  returned: always
  type: str
sysctl_conf:
  description: The sysctls as a sysctl.d file.
  returned: always
  type: str
msg:
  description: One line saying what was (would be) changed.
  returned: always
  type: str
"""

import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mgmt import mgmt_state
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _rails
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module


ARGUMENT_SPEC = dict(
    rails=dict(type="list", elements="dict", required=True),
    host=dict(type="str"),
    mtu=dict(type="int", default=9000),
    sysctls=dict(type="dict", default=dict(_rails.SYSCTLS)),
    mgmt_interface=dict(type="str"),
    root=dict(type="path", default="/"),
)


def main():
    module = ansible_module(AnsibleModule, argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    reader = Host(root=params["root"])
    host = params["host"] or socket.gethostname()
    try:
        # every option is checked before anything runs on the host (the guard below runs ibdev2netdev)
        _rails.desired_state(host, params["rails"], mtu=params["mtu"], sysctls=params["sysctls"])
        mgmt = mgmt_state(reader, {"mgmt_interface": params["mgmt_interface"], "mgmt_address": None})
        result = _rails.converge(reader, host, params["rails"], mtu=params["mtu"],
                                 sysctls=params["sysctls"], mgmt_interfaces=set(mgmt["interfaces"]) | set(mgmt["evidence"]),
                                 check_mode=module.check_mode)
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())
    desired = result["desired"]
    changed = result["changes"]
    msg = ("%s %s" % ("would change" if module.check_mode else "changed",
                      "; ".join("%s: %s" % (k, ", ".join(v)) for k, v in sorted(changed.items())))
           if changed else "rails already as planned on %s" % ", ".join(r["interface"] for r in desired["rails"]))
    module.exit_json(changed=result["changed"], changes=changed, steps=result["steps"], msg=msg,
                     netplan=_rails.netplan(desired),
                     nm_keyfiles={"gpufabric-rail%s.nmconnection" % r["rail"]: _rails.nm_keyfile(desired, r)
                                  for r in desired["rails"]},
                     ifupdown=_rails.ifupdown(desired), sysctl_conf=_rails.sysctl_conf(desired),
                     diff=dict(before=result["before"], after=result["after"]))


if __name__ == "__main__":
    main()
