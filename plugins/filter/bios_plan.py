# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: bios_plan
short_description: Plan the BIOS attributes of a server from its model's attribute set and what its BMC reports
version_added: 0.1.0
description:
  - Takes C(gpufabric_platform_bios) (the wanted BIOS attributes per server model) and what the server's BMC reports over
    Redfish - the system's C(Model), the current BIOS attributes (GET Bios), the pending ones (GET of its
    C(@Redfish.Settings) SettingsObject) and optionally the BIOS attribute registry - and returns what to set.
  - "The wanted attributes are the model's set (C(models) keyed by the C(Model) the BMC reports, else C(default)), then
    the SR-IOV and IOMMU switches (the first of the vendors' attributes the BIOS has - SR-IOV: C(SriovGlobalEnable)
    (Dell), C(Sriov) (HPE), C(SRIOVSupport) (NVIDIA DGX); IOMMU: C(IntelProcVtd), C(ProcAmdIoVt) (HPE),
    C(ProcVirtualization) (Dell), C(IntelVTForDirectedIO) (NVIDIA DGX)), then the host's overrides; a later one
    wins."
  - An attribute is set only when its wanted value differs from the current one and is not already pending with that
    value, so a second run sets nothing while the settings wait for a reset.
  - "Never fails: every problem is listed in RV(_value.problems), each naming the host, the inventory entry and the
    attribute, and what is allowed - an attribute unknown to this BIOS (with the close names), a value not allowed
    (with the allowed values when the registry tells them), a read-only attribute, a value of the wrong type, a model
    with no attribute set and no default, an attribute whose wanted value is current but another value is pending.
    RV(_value.set) is empty whenever there is a problem."
options:
  _input:
    description:
      - C(gpufabric_platform_bios) - C(models) (a mapping of server model, as the BMC reports the system's C(Model),
        to a mapping of BIOS attribute name to value) and optionally C(default) (the attributes of models not listed).
    type: dict
    required: true
  host:
    description: The host's name, for the problems.
    type: str
    required: true
  model:
    description: The system's C(Model) (C(community.general.redfish_info) GetSystemInventory).
    type: str
    required: true
  current:
    description: The current BIOS attributes (C(community.general.redfish_info) GetBiosAttributes).
    type: dict
    required: true
  pending:
    description:
      - The C(Attributes) of the Bios C(@Redfish.Settings) SettingsObject - only the pending attributes (an iDRAC) or
        all of them with their next-boot values (an iLO). An attribute counts as pending when its value there differs
        from the current one.
    type: dict
  registry:
    description:
      - The BIOS attribute registry (C(bios_registry) of C(community.general.redfish_info) GetBiosRegistries). With it
        values are checked against the allowed values, bounds, types and read-only flags before anything is written.
    type: dict
  sriov:
    description: SR-IOV on (V(true)), off (V(false)) or left as it is (V(null)).
    type: bool
  iommu:
    description: The IOMMU (VT-d, AMD-Vi) on (V(true)), off (V(false)) or left as it is (V(null)).
    type: bool
  overrides:
    description: BIOS attributes of this host, over its model's set and the switches.
    type: dict
  manufacturer:
    description:
      - The system's C(Manufacturer) (or the service root's C(Vendor)). A Dell (V(Dell Inc.), V(Dell)) applies pending
        BIOS settings at a reset only when a BIOS configuration job is scheduled (RV(_value.apply) V(job)); any other
        at the next reset (V(reboot)).
    type: str
  jobs:
    description:
      - A Dell iDRAC's job queue (the members of the manager's C(Jobs), each with C(Id), C(JobType), C(JobState)).
        Its BIOS configuration jobs still to run are RV(_value.jobs). Used only when RV(_value.apply) is V(job).
    type: list
    elements: dict
seealso:
  - role: gpufabric.mlnx.platform
"""

EXAMPLES = r"""
- name: What to set on this server's BIOS
  ansible.builtin.set_fact:
    bios: >-
      {{ gpufabric_platform_bios | gpufabric.mlnx.bios_plan(host=inventory_hostname, model=system.Model,
         current=attributes, pending=settings.json.Attributes, sriov=true) }}
  vars:
    gpufabric_platform_bios:
      models:
        PowerEdge XE9680: {SysProfile: PerfOptimized, ProcCStates: Disabled}
        ProLiant XL675d Gen10 Plus: {WorkloadProfile: HighPerformanceCompute(HPC), PowerRegulator: StaticHighPerf}

- name: Stop on any problem, naming each
  ansible.builtin.fail:
    msg: "{{ bios.problems | join('\n') }}"
  when: bios.problems | length > 0
"""

RETURN = r"""
_value:
  description: The plan.
  type: dict
  contains:
    host: {description: The host., type: str}
    model: {description: The system's model., type: str}
    source: {description: "Which set was used, e.g. V(gpufabric_platform_bios.default); null when none.", type: str}
    wanted: {description: Every wanted attribute and its value., type: dict}
    set:
      description: The attributes to write (wanted value not current and not already pending); empty on any problem.
      type: dict
      sample: {SysProfile: PerfOptimized}
    pending:
      description: Every attribute that waits for the next reset once RV(_value.set) is written, with its value.
      type: dict
    pending_other: {description: The pending attributes that are not wanted ones (set by someone else)., type: dict}
    pending_reset: {description: Whether a reset is needed to apply pending BIOS settings., type: bool}
    apply:
      description: >-
        How this BIOS applies pending settings - V(reboot) (at the next reset) or V(job) (a Dell: at the next reset
        only with a scheduled BIOS configuration job).
      type: str
    jobs: {description: "The BIOS configuration jobs still to run (V(job) only), by Id.", type: list, elements: str}
    create_job:
      description: >-
        Whether a BIOS configuration job must be created - V(job), settings pending (after RV(_value.set) is written)
        and none scheduled; false on any problem. While a job is scheduled a Dell takes no new settings: a plan that
        would set any is a problem.
      type: bool
    registry: {description: Whether an attribute registry was used to check the values., type: bool}
    attributes:
      description: >-
        Per wanted attribute (without problems) C(attribute), C(current), C(wanted), C(action) (V(set), V(pending) or
        V(ok)) and C(source) (the inventory entry it comes from).
      type: list
      elements: dict
    summary:
      description: One readable line per wanted attribute and per other pending attribute.
      type: list
      elements: str
      sample: ["ProcCStates: Enabled -> Disabled (set now, applied by the next reset)"]
    problems:
      description: "Every problem, each C(host: inventory entry: what is wrong and what is allowed)."
      type: list
      elements: str
"""

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_bios = lazy("plugin_utils._bios")


@filter_errors()
def bios_plan(spec, host, model, current, pending=None, registry=None, sriov=None, iommu=None, overrides=None,
              manufacturer=None, jobs=None):
    return _bios.plan(spec, host, model, current, pending=pending, registry=registry, sriov=sriov, iommu=iommu,
                      overrides=overrides, manufacturer=manufacturer, jobs=jobs)


class FilterModule:
    def filters(self):
        return {"bios_plan": bios_plan}
