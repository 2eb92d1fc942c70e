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
options:
  bmc:
    description: The BMC, V(host) or V(host:port) (Redfish over HTTPS).
    type: str
    required: true
  user:
    description: BMC user.
    type: str
    required: true
  password:
    description: BMC password (keep it in a vault).
    type: str
    required: true
  validate_certs:
    description: Check the BMC's TLS certificate.
    type: bool
    default: true
  ca_path:
    description: CA file (PEM) to check the BMC's certificate with; empty - the system's CAs.
    type: path
  timeout:
    description: Seconds to wait for each Redfish request.
    type: int
    default: 60
  host:
    description: The host's name in messages (C(inventory_hostname)).
    type: str
    required: true
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
