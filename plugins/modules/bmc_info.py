#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: bmc_info
short_description: Prove that a server's BMC answers over Redfish with its credentials (reads its one ComputerSystem)
version_added: 0.2.0
description:
  - An action - it runs on the controller, in the task's worker; nothing runs on the server. The Redfish client of
    M(gpufabric.mlnx.platform_bios) (the same code) reads the service root, the ComputerSystem collection and the one
    system, and returns its URI, C(Model) and C(Manufacturer). Nothing is written.
  - Fails naming the host, the BMC and the request (with the BMC's words - a wrong password is its HTTP 401) when the
    BMC does not answer, or when its answer is not what Redfish promises (no JSON object, no C(Members) list, not
    exactly one ComputerSystem).
  - The password is never shown - not in the result or a message.
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.info_module
  - gpufabric.mlnx.redfish
seealso:
  - module: gpufabric.mlnx.platform_bios
"""

EXAMPLES = r"""
- name: Each BMC answers over Redfish with its credentials
  gpufabric.mlnx.bmc_info:
    bmc: "{{ gpufabric_platform_bmc_address }}"
    user: "{{ gpufabric_platform_bmc_user }}"
    password: "{{ gpufabric_platform_bmc_password }}"
    host: "{{ inventory_hostname }}"
  register: bmc
"""

RETURN = r"""
system:
  description: The BMC's one ComputerSystem - C(uri), C(model), C(manufacturer).
  returned: success
  type: dict
  sample: {uri: /redfish/v1/Systems/System.Embedded.1, model: PowerEdge XE9680, manufacturer: Dell Inc.}
msg:
  description: What answered, or why not.
  returned: always
  type: str
"""
