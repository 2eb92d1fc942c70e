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
  - One request per part asked for in O(gather) (two for V(revisions) and V(config)); nothing is changed.
  - Runs over C(ansible.netcommon.httpapi) (the NVUE REST API) or C(ansible.netcommon.network_cli) (the C(nv) CLI
    over SSH), both with C(ansible_network_os=gpufabric.mlnx.nvue); see the notes.
notes:
  - "Two transports, one result. Over C(ansible.netcommon.httpapi) the parts are REST GETs; over
    C(ansible.netcommon.network_cli) (C(ansible_network_cli_ssh_type: paramiko)) they are C(nv show ... -o json),
    C(nv config revision -o json), C(nv config diff startup applied -o json) and (for V(config))
    C(nv config show -o json --applied) and C(--startup) on the switch. Both need
    C(ansible_network_os: gpufabric.mlnx.nvue)."
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
    choices: [system, image, interfaces, qos, revisions, config]
    default: [system, image, interfaces, qos, revisions]
"""

EXAMPLES = r"""
- name: What the leaf gate reads
  gpufabric.mlnx.nvue_info:
    gather: [system, interfaces, qos, revisions]
  register: leaf

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
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue import DEFAULT_GATHER, GATHER, gather
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_cli import switch_for

ARGUMENT_SPEC = dict(gather=dict(type="list", elements="str", choices=list(GATHER), default=list(DEFAULT_GATHER)))


def main():
    module = ansible_module(AnsibleModule, argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        facts = gather(switch_for(module), module.params["gather"])
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())
    module.exit_json(changed=False, **facts)


if __name__ == "__main__":
    main()
