# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared documentation: the options of the actions that talk Redfish to a server's BMC from the controller
(gpufabric.mlnx.bmc_info, gpufabric.mlnx.platform_bios; one argument spec, plugins/action/platform_bios.py)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
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
"""
