#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nvue_info
short_description: Read what a leaf gate needs of an NVIDIA Cumulus Linux switch over NVUE
version_added: 0.2.0
description:
  - Reads, over the NVUE REST API, the running release and image partitions, every swp port's operational state
    (admin and oper status, speed, MTU, protodown and its reason, LLDP neighbours), the RoCE QoS (operational
    status and the applied QoS configuration), the revisions (pending ones, and whether the applied
    configuration differs from the startup one), and - asked for with V(config) - the whole applied and startup
    configuration.
  - Asked for with V(phy), the PHY error counters of the swp ports (received bits, raw errors per lane, effective
    and symbol errors, raw, effective and symbol bit error rates) that the validation gate's bit-error-rate check
    reads - C(nv show interface <port> link phy-detail) on Cumulus Linux 5.10 to 5.14, C(link phy health) from
    5.15.
  - One request per part asked for in O(gather) (two for V(revisions) and V(config); V(phy) one per port, plus the
    release and the port list unless V(system) and V(interfaces) read them anyway); nothing is changed.
  - Runs over C(ansible.netcommon.httpapi) (the NVUE REST API) or C(ansible.netcommon.network_cli) (the C(nv) CLI
    over SSH), both with C(ansible_network_os=gpufabric.mlnx.nvue); see the notes.
notes:
  - "Two transports, one result. Over C(ansible.netcommon.httpapi) the parts are REST GETs; over
    C(ansible.netcommon.network_cli) (C(ansible_network_cli_ssh_type: paramiko)) they are C(nv show ... -o json),
    C(nv config revision -o json), C(nv config diff startup applied -o json) and (for V(config))
    C(nv config show -o json --applied) and C(--startup) on the switch. Both need
    C(ansible_network_os: gpufabric.mlnx.nvue)."
  - "V(phy) reads C(GET /nvue_v1/interface/<port>/link/phy-detail) (C(nv show interface <port> link phy-detail -o
    json)) on Cumulus Linux 5.10 to 5.14 and C(.../link/phy/health) (C(link phy health)) from 5.15, where NVIDIA
    renamed the command. A port the switch has no counters for - HTTP 404 or an empty answer, as on a Spectrum-1
    switch (not supported there) or a release before 5.10 - is V(null) in RV(phy) with its reason in
    RV(phy_unavailable); it is not an error, and not a port without errors either."
  - "The counters are read fail closed: a value the module does not recognise (a counter that is not an integer
    from 0 to 2**64-1, a rate that is neither C(<mantissa>E<exponent>) nor a number from 0 to 1, a missing field)
    fails the task naming the switch, the port, the field and the value - it is never read as 0. The switch's
    C(15E-255), its rate when it counted no error, is 0.0."
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.info_module
options:
  gather:
    description:
      - The parts to read. V(config) (the whole configuration, as C(playbooks/snapshot.yml) keeps it) is read only
        when named.
    type: list
    elements: str
    choices: [system, image, interfaces, qos, revisions, config, phy]
    default: [system, image, interfaces, qos, revisions]
  ports:
    description:
      - With V(phy) in O(gather), the ports whose PHY counters to read; each C(swpN) (N 1-999) or a breakout port
        C(swpNsM) (M 0-9), and one of the switch's swp ports. Anything else is refused before a request is sent.
      - Default, every swp port RV(interfaces) lists (also when V(interfaces) is not gathered).
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: What the leaf gate reads
  gpufabric.mlnx.nvue_info:
    gather: [system, interfaces, qos, revisions]
  register: leaf

- name: The PHY error counters of two ports, for the bit-error-rate check
  gpufabric.mlnx.nvue_info:
    gather: [phy]
    ports: [swp1, swp2]
  register: leaf_phy

- name: Fail on a port with uncorrectable errors (a port without counters is named, not passed)
  ansible.builtin.assert:
    that:
      - leaf_phy.phy_unavailable == {}
      - leaf_phy.phy.values() | map(attribute='effective_errors') | max == 0
    fail_msg: "{{ leaf_phy.phy_unavailable }} {{ leaf_phy.phy }}"

- name: Everything, the applied and startup configuration too (a snapshot)
  gpufabric.mlnx.nvue_info:
    gather: [system, image, interfaces, qos, revisions, config]
  register: leaf
"""

RETURN = r"""
system:
  description: The running release (C(product-release), which the version gate compares) and build.
  returned: when O(gather) has V(system)
  type: dict
  sample: {"release": "5.9.1", "build_id": "5.9.1.0012", "build_date": null, "kernel": "6.1.0-cl-1-amd64"}
image:
  description: The image partitions, the running one (V(current)) and the one booted next (V(next)).
  returned: when O(gather) has V(image)
  type: dict
interfaces:
  description: Per swp port, the operational state.
  returned: when O(gather) has V(interfaces)
  type: dict
  sample: {"swp1": {"admin_status": "up", "oper_status": "up", "speed": "400G", "mtu": 9216, "protodown": false,
                    "protodown_reason": null, "description": null,
                    "lldp": [{"system_name": "srv-r01-01", "chassis_id": null, "port": "enp24s0np0",
                              "description": null}]}}
qos:
  description:
    - C(roce), the operational RoCE status; C(applied), the applied QoS configuration (defaults filled).
    - C(enabled) and C(mode), RoCE as the switch's release spells it (C(enable on) before Cumulus Linux 5.15,
      C(state enabled) from it), read through the collection's table of renamed keys.
    - Secrets in C(config) and C(revisions.unsaved_diff) are shown as C(********).
  returned: when O(gather) has V(qos)
  type: dict
revisions:
  description: C(pending), the ids of pending revisions; C(unsaved), whether applied differs from startup.
  returned: when O(gather) has V(revisions)
  type: dict
config:
  description: C(applied) and C(startup), the whole configuration of each revision as set (defaults not filled).
  returned: when O(gather) has V(config)
  type: dict
  sample: {"applied": {"system": {"hostname": "leaf01"}, "interface": {"swp1": {"link": {"mtu": 9216}}}},
           "startup": {"system": {"hostname": "leaf01"}}}
phy:
  description:
    - Per port read (O(ports), default every swp port), its PHY counters since they were last cleared, or V(null)
      when the switch has none for it (then RV(phy_unavailable) says why).
    - C(received_bits) (C(phy-received-bits)), C(effective_errors) (uncorrectable, after FEC), C(symbol_errors),
      C(raw_errors) (before FEC, the sum of C(raw_errors_lanes), the C(phy-raw-errors-laneN) present, lane 0 first)
      are integers; C(raw_ber), C(effective_ber), C(symbol_ber) floats (the switch's C(15E-255) for no error is
      0.0); C(minutes_since_clear) (C(time-since-last-clear-min)) a float.
  returned: when O(gather) has V(phy)
  type: dict
  sample: {"swp1": {"received_bits": 15561574400000000, "effective_errors": 0, "symbol_errors": 0,
                    "raw_errors": 1478918665,
                    "raw_errors_lanes": [747567424, 215603747, 158456437, 30578923, 121708834, 29244642, 79102523,
                                         96656135],
                    "raw_ber": 1.0e-07, "effective_ber": 0.0, "symbol_ber": 0.0, "minutes_since_clear": 324.0},
           "swp2": null}
phy_unavailable:
  description: Per port whose PHY counters the switch does not have (HTTP 404 or an empty answer), the reason.
  returned: when O(gather) has V(phy)
  type: dict
  sample: {"swp2": "the switch answered that it has no link phy-detail for this port (Cumulus Linux 5.12.0): a
           Spectrum-1 switch has none"}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue import DEFAULT_GATHER, GATHER, gather
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_cli import switch_for

ARGUMENT_SPEC = dict(gather=dict(type="list", elements="str", choices=list(GATHER), default=list(DEFAULT_GATHER)),
                     ports=dict(type="list", elements="str"))


def main():
    module = ansible_module(AnsibleModule, argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        facts = gather(switch_for(module), module.params["gather"], ports=module.params["ports"])
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())
    module.exit_json(changed=False, **facts)


if __name__ == "__main__":
    main()
