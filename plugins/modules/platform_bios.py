#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: platform_bios
short_description: BIOS attributes of a GPU server through its BMC (Redfish), from the controller, in one task
version_added: 0.2.0
description:
  - An action - it runs on the controller, in the task's worker; nothing runs on the server. It talks Redfish over HTTPS
    with HTTP basic authentication to O(bmc).
  - Reads the service root, the one ComputerSystem (its C(Model) and C(Manufacturer)), its Bios resource (the current
    attributes), the pending ones (GET of the Bios C(@Redfish.Settings) SettingsObject), the BIOS attribute registry
    (O(registry)) and, on a Dell, the first manager's job queue; plans with the same code as the
    P(gpufabric.mlnx.bios_plan#filter) filter; writes only the attributes whose wanted value is neither current nor
    already pending (one PATCH of the SettingsObject, with C(@Redfish.SettingsApplyTime) V(OnReset) on a Dell so that
    the iDRAC schedules the BIOS configuration job), reads them back and fails unless every one is pending.
  - "A Dell iDRAC applies pending BIOS settings at a reset only with a BIOS configuration job: when settings are
    pending without one, the job is created (POST C({\"TargetSettingsURI\": <SettingsObject>}) to the first manager's
    C(Jobs), as community.general's CreateBiosConfigJob does); while a job is scheduled a run that would change more
    fails before writing, naming the job. Other BMCs apply pending settings at the next reset."
  - The server is never reset. The result's RV(ansible_facts) tell whether the BIOS waits for a reset.
  - Fails before writing anything, listing every problem with the host, the inventory entry and the attribute (unknown
    attribute with the close names, value not allowed with the allowed values, model without an attribute set);
    fails naming the host, the attributes and the BMC's message when the BMC refuses them. Every answer that is not
    what Redfish promises (no JSON object, no C(Members) list, no C(Attributes) mapping, more than one
    ComputerSystem) fails the task naming the BMC, the URL and what was expected.
  - The password is never shown - not in the result, a message or the diff.
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.full
  - gpufabric.mlnx.redfish
attributes:
  check_mode:
    details: Only GET requests; the attributes a real run would set (and on a Dell the BIOS configuration job it would
      create) are reported as a change, and the facts are those a real run would leave.
  diff_mode:
    details: C(attributes) - each wanted attribute's current value and the value after the next reset; C(pending) - the
      pending settings before and after; C(jobs) - a Dell's BIOS configuration jobs.
options:
  bios:
    description: The wanted BIOS attributes per server model - C(models) (model as the BMC reports the system's C(Model)
      to a mapping of attribute name to value) and C(default) (models not listed); the role's
      C(gpufabric_platform_bios).
    type: dict
    default: {}
  sriov:
    description: SR-IOV on (V(true)), off (V(false)) or left alone (not given), through the vendor's attribute.
    type: bool
  iommu:
    description: The IOMMU on (V(true)), off (V(false)) or left alone (not given), through the vendor's attribute.
    type: bool
  overrides:
    description: BIOS attributes of this host, over its model's set and the switches.
    type: dict
    default: {}
  registry:
    description: Read the BIOS attribute registry to check the values before writing; when the BMC has none the task
      warns and the BMC checks the values when they are written.
    type: bool
    default: true
notes:
  - The requests are those community.general's redfish_info (GetSystemInventory, GetBiosAttributes,
    GetBiosRegistries), redfish_config (SetBiosAttributes) and idrac_redfish_command (CreateBiosConfigJob) make.
seealso:
  - plugin: gpufabric.mlnx.bios_plan
    plugin_type: filter
  - module: gpufabric.mlnx.bmc_info
"""

EXAMPLES = r"""
- name: BIOS attributes through the BMC
  gpufabric.mlnx.platform_bios:
    bmc: "{{ gpufabric_platform_bmc_address }}"
    user: "{{ gpufabric_platform_bmc_user }}"
    password: "{{ gpufabric_platform_bmc_password }}"
    bios:
      models:
        PowerEdge XE9680: {SysProfile: PerfOptimized, ProcCStates: Disabled}
    sriov: true
    host: "{{ inventory_hostname }}"
"""

RETURN = r"""
ansible_facts:
  description: The platform role's BIOS facts (docs/role_facts.md).
  returned: success
  type: dict
  contains:
    gpufabric_platform_bios_pending_reset:
      description: BIOS attributes wait for the next reset (written now or staged by someone else).
      type: bool
    gpufabric_platform_bios_pending:
      description: Attribute name to its next-boot value, for every pending BIOS attribute.
      type: dict
    gpufabric_platform_bios_summary:
      description: One readable line per wanted BIOS attribute (and per other pending one).
      type: list
      elements: str
      sample: ["SysProfile: PerfPerWattOptimizedDapc -> PerfOptimized (set now, applied by the next reset)"]
    gpufabric_platform_bios_apply:
      description: How this BIOS applies pending settings - V(job) (a Dell, only with a BIOS configuration job) or
        V(reboot).
      type: str
    gpufabric_platform_bios_jobs:
      description: A Dell - the Ids of the BIOS configuration jobs the next reset runs (empty elsewhere).
      type: list
      elements: str
system:
  description: The BMC's one ComputerSystem - C(uri), C(model), C(manufacturer).
  returned: success
  type: dict
written:
  description: The attributes written (none in check mode).
  returned: success
  type: dict
job_created:
  description: The Id of the BIOS configuration job created (a Dell), else null.
  returned: success
  type: str
summary:
  description: The headline and one line per attribute.
  returned: success
  type: list
  elements: str
msg:
  description: Whether the BIOS waits for a reset.
  returned: always
  type: str
"""
