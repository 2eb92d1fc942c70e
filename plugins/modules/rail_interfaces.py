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
  - Keeps the same state at boot when asked - O(sysctl_file) (sysctl.d) and, by O(provider), the netplan file
    (checked with C(netplan generate) before it is put in place, not applied), one NetworkManager keyfile per rail
    (C(nmcli connection load) when it changed, not activated) or the ifupdown stanzas. Each file is written only when
    its content, mode or owner (root) differ, atomically; C(--check --diff) shows the text diff of each.
  - In check mode with a driver change (O(driver_action)) or an activation (O(pending_activation) V(fwreset) or
    V(reboot)) coming in the same run, a rail that is not on the host yet (a ConnectX-7 still in InfiniBand mode, a
    host without the driver) makes the module read nothing and report, as a change, every rail it would configure
    after that change.
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
    description: Where procfs and sysfs are, as a prefix of V(/proc) - V(/) on a real host.
    type: path
    default: /
  plan_hosts:
    description:
      - How many hosts the rail plan has. Given, an empty O(rails) means this host is not in the rail plan, and the
        module fails saying so (the gpufabric.mlnx.rails role passes the plan's size and O(plan_group)).
    type: int
  plan_group:
    description: The inventory group the rail plan covers, named when the host is not in it.
    type: str
    default: servers
  provider:
    description:
      - What keeps the rails at boot - V(netplan), V(networkmanager), V(ifupdown), V(none) (the running system only), or
        V(auto) (the first of C(/usr/sbin/netplan), C(/usr/bin/nmcli), C(/sbin/ifup) the host has).
    type: str
    choices: [auto, netplan, networkmanager, ifupdown, none]
    default: none
  netplan_file:
    description: The netplan file (mode 0600), with O(provider=netplan).
    type: path
    default: /etc/netplan/90-gpufabric-rails.yaml
  nm_dir:
    description: Where the NetworkManager keyfiles C(gpufabric-railK.nmconnection) go (mode 0600), with
      O(provider=networkmanager).
    type: path
    default: /etc/NetworkManager/system-connections
  ifupdown_file:
    description: The ifupdown stanzas (mode 0644, the directory made when missing), with O(provider=ifupdown).
    type: path
    default: /etc/network/interfaces.d/gpufabric-rails
  sysctl_file:
    description: The sysctl.d file of the rails' sysctls (mode 0644); not written when not given.
    type: path
  driver_action:
    description:
      - In check mode, what the driver step of the same run would do (C(gpufabric_ofed_result.action)) - V(none) or
        the change (V(install), V(upgrade) ...). Not V(none), a rail not on the host yet is waited for, not read.
    type: str
    default: none
  pending_activation:
    description:
      - In check mode, the activation the same run would do (C(gpufabric_activation.method)). V(fwreset) or V(reboot) -
        a rail not on the host yet is waited for, not read.
    type: str
    choices: [none, fwreset, reboot, pending]
    default: none
notes:
  - Every path of a file it writes must be an absolute path of ASCII letters, digits and C(_ . + - /).
"""

EXAMPLES = r"""
- name: The rails of this server
  gpufabric.mlnx.rail_interfaces:
    rails: "{{ gpufabric_rail_plan.hosts[inventory_hostname] }}"
    host: "{{ inventory_hostname }}"

- name: The rails of this server, kept at boot by the host's network stack
  gpufabric.mlnx.rail_interfaces:
    rails: "{{ gpufabric_rail_plan.hosts[inventory_hostname] | default([]) }}"
    plan_hosts: "{{ gpufabric_rail_plan.hosts | length }}"
    host: "{{ inventory_hostname }}"
    provider: auto
    sysctl_file: /etc/sysctl.d/90-gpufabric-rails.conf
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
provider:
  description: The network stack that keeps the rails at boot (O(provider), V(auto) resolved).
  returned: always
  type: str
  sample: ifupdown
files:
  description: Each file kept at boot, whether it was (would be) written and why (V(created), V(content), V(mode),
    V(owner), V(group)); empty when the check run waits.
  returned: always
  type: list
  elements: dict
  sample: [{path: /etc/sysctl.d/90-gpufabric-rails.conf, changed: false, reasons: []}]
waiting:
  description: In check mode, what the run waits for before the rails exist (C(for) V(driver) or V(activation),
    C(event), C(absent) - the rails not on the host yet); null when the host was read.
  returned: always
  type: dict
msg:
  description: One line naming the host, saying what was (would be) changed and what keeps the rails at boot.
  returned: always
  type: str
"""

import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mgmt import mgmt_state
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _forecast, _rails
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module


ARGUMENT_SPEC = dict(
    rails=dict(type="list", elements="dict", required=True),
    host=dict(type="str"),
    mtu=dict(type="int", default=9000),
    sysctls=dict(type="dict", default=dict(_rails.SYSCTLS)),
    mgmt_interface=dict(type="str"),
    root=dict(type="path", default="/"),
    plan_hosts=dict(type="int"),
    plan_group=dict(type="str", default="servers"),
    provider=dict(type="str", choices=list(_rails.PROVIDERS), default="none"),
    netplan_file=dict(type="path", default=_rails.BOOT_FILES["netplan_file"]),
    nm_dir=dict(type="path", default=_rails.BOOT_FILES["nm_dir"]),
    ifupdown_file=dict(type="path", default=_rails.BOOT_FILES["ifupdown_file"]),
    sysctl_file=dict(type="path"),
    driver_action=dict(type="str", default="none"),
    pending_activation=dict(type="str", choices=list(_forecast.ACTIVATIONS), default="none"),
)


def main():
    module = ansible_module(AnsibleModule, argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    reader = Host(root=params["root"])
    host = params["host"] or socket.gethostname()

    def mgmt():
        state = mgmt_state(reader, {"mgmt_interface": params["mgmt_interface"], "mgmt_address": None})
        return set(state["interfaces"]) | set(state["evidence"])

    try:
        result = _rails.run(reader, Host(root="/"), host, params, mgmt=mgmt, check_mode=module.check_mode)
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())
    desired = result["desired"]
    module.exit_json(changed=result["changed"], changes=result["changes"], steps=result["steps"], msg=result["msg"],
                     provider=result["provider"], files=result["files"], waiting=result["waiting"],
                     netplan=_rails.netplan(desired),
                     nm_keyfiles={"gpufabric-rail%s.nmconnection" % r["rail"]: _rails.nm_keyfile(desired, r)
                                  for r in desired["rails"]},
                     ifupdown=_rails.ifupdown(desired), sysctl_conf=_rails.sysctl_conf(desired), diff=result["diff"])


if __name__ == "__main__":
    main()
