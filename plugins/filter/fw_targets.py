# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: fw_targets
short_description: Per card, the pinned firmware target and what to do, or why there is none
version_added: 0.1.0
description:
  - Takes the RV(gpufabric.mlnx.mlx_info#module:devices) list of a host and the pinned version matrix
    C(gpufabric_matrix), and returns one entry per physical card (function 0 of each card; the functions of a
    card share one flash) with its firmware target and the action.
  - "V(burn): the burned firmware is older than the pin (or newer, and the PSID's entry sets
    C(allow_downgrade: true)). V(none): the pinned version is burned and running. V(pending): the pinned version
    is burned but another one runs until the card is reset or the host rebooted. V(refused): no target, and
    C(reason) says why - the card's PSID is not in the matrix (naming the PSIDs it covers), its part number is
    not one the PSID's image is valid for (naming both), a downgrade the matrix does not allow (naming both
    versions), or the card's firmware could not be read."
  - Versions compare as numbers, part by part (28.9 is older than 28.10), as M(gpufabric.mlnx.mlx_firmware)
    compares them.
  - Fails listing every problem of the matrix when it is not consistent (see P(gpufabric.mlnx.matrix_check#filter)).
options:
  _input:
    description: The C(devices) list returned by M(gpufabric.mlnx.mlx_info).
    type: list
    elements: dict
    required: true
  matrix:
    description: The matrix, the value of C(gpufabric_matrix).
    type: dict
    required: true
seealso:
  - plugin: gpufabric.mlnx.matrix_images
    plugin_type: filter
  - plugin: gpufabric.mlnx.matrix_check
    plugin_type: filter
  - module: gpufabric.mlnx.mlx_firmware
"""

EXAMPLES = r"""
- name: Read the cards
  gpufabric.mlnx.mlx_info:
  register: __info

- name: Cards that need a burn, and cards the matrix has no firmware for
  ansible.builtin.set_fact:
    __burn: "{{ __targets | selectattr('action', 'equalto', 'burn') | list }}"
    __refused: "{{ __targets | selectattr('action', 'equalto', 'refused') | list }}"
  vars:
    __targets: "{{ __info.devices | gpufabric.mlnx.fw_targets(gpufabric_matrix) }}"

- name: Stop when a card has no target
  ansible.builtin.assert:
    that: __refused | length == 0
    fail_msg: "{{ __refused | map(attribute='address') | zip(__refused | map(attribute='reason')) | map('join', ': ') }}"
"""

RETURN = r"""
_value:
  description: One entry per card, in the order of the devices list.
  type: list
  elements: dict
  contains:
    address: {description: PCI address of the card's function 0 (its lowest listed function)., type: str}
    card: {description: PCI address of the card without the function., type: str}
    psid: {description: PSID the card reports (V(null) when its firmware could not be read)., type: str}
    part_number: {description: Part number the card reports., type: str}
    serial_number: {description: Serial number from the card's VPD., type: str}
    current:
      description: Firmware on the card, C({burned, running}).
      type: dict
    target:
      description: The pinned firmware, C({version, image, sha256}) (C(image) is the file name under the firmware
        directory), or V(null) when the action is V(refused).
      type: dict
    action:
      description: V(burn), V(none), V(pending) or V(refused).
      type: str
    reason:
      description: Why, in words (for V(refused), what is wrong and what the matrix allows).
      type: str
    downgrade:
      description: True when the pinned version is older than the burned one (a permitted downgrade has
        C(action=burn) and needs O(gpufabric.mlnx.mlx_firmware#module:allow_downgrade=true); a refused one has
        C(action=refused)).
      type: bool
  sample:
    - address: "0000:18:00.0"
      card: "0000:18:00"
      psid: MT_0000000838
      part_number: MCX75310AAS-NEAT
      serial_number: MT2314X01234
      current: {burned: 28.42.1000, running: 28.42.1000}
      target: {version: 28.43.2566, image: fw-ConnectX7-rel-28_43_2566-MCX75310AAS-NEA_Ax-UEFI-14.36.21-FlexBoot-3.7.500.bin,
               sha256: 92a589ecd723b159b6eb0d62933e7712945232aa2b6395a9ca943d4e6e6a6edb}
      action: burn
      reason: 28.42.1000 -> 28.43.2566
      downgrade: false
"""

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_matrix = lazy("module_utils._matrix")


@filter_errors("fw_targets")
def fw_targets(devices, matrix):
    return _matrix.firmware_targets(devices, matrix)


class FilterModule:
    def filters(self):
        return {"fw_targets": fw_targets}
