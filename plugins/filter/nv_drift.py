# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: nv_drift
short_description: Compare devices' NV configuration with their assigned profile
version_added: 0.1.0
description:
  - Takes the RV(gpufabric.mlnx.mlx_info#module:devices) list (gathered with O(gpufabric.mlnx.mlx_info#module:nv_config=true)),
    the named profiles and the profile assignments, and tells per device and parameter whether it is
    V(ok), V(pending) (next boot right, running value not yet), V(drift) (next boot differs), V(missing) or V(unknown).
  - Uses the same value normalisers as M(gpufabric.mlnx.mlxconfig), so V(true), V(1) and V(True(1\)) compare equal.
options:
  _input:
    description: The C(devices) list returned by M(gpufabric.mlnx.mlx_info).
    type: list
    elements: dict
    required: true
  profiles:
    description: Named parameter sets, a mapping of profile name to a mapping of parameter name to value.
    type: dict
    required: true
  assignments:
    description:
      - Which device gets which profile, tried in order. Each item has C(profile) and one or more of
        C(part_numbers), C(pci), C(device_types).
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Drift per device
  ansible.builtin.debug:
    msg: "{{ info.devices | gpufabric.mlnx.nv_drift(gpufabric_nv_profiles, gpufabric_nv_profile_assignments) }}"
"""

RETURN = r"""
_value:
  description: One entry per device.
  type: list
  elements: dict
  contains:
    address: {description: PCI address., type: str}
    part_number: {description: VPD part number., type: str}
    profile: {description: The assigned profile, or null., type: str}
    state: {description: "V(ok), V(no profile), or the comma-joined non-ok states of its parameters.", type: str}
    params:
      description: "Per parameter name, a dict with C(desired), C(next), C(current) and C(state)."
      type: dict
"""

from ansible_collections.gpufabric.mlnx.plugins.module_utils._profiles import assign, report
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors


@filter_errors()
def nv_drift(devices, profiles, assignments):
    return report(devices, profiles, assignments)


@filter_errors()
def nv_assign(devices, profiles, assignments):
    return assign(devices, profiles, assignments)


class FilterModule:
    def filters(self):
        return {"nv_drift": nv_drift, "nv_assign": nv_assign}
