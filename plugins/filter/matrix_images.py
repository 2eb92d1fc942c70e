# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: matrix_images
short_description: The pinned firmware images of the matrix, as mlx_firmware's images option
version_added: 0.1.0
description:
  - Turns C(gpufabric_matrix.firmware) (per PSID the version, image file name, sha256 and part numbers) into the
    O(gpufabric.mlnx.mlx_firmware#module:images) list of M(gpufabric.mlnx.mlx_firmware), one entry per PSID, with
    the image's path on the managed host (O(firmware_dir), V(/), the file name).
  - The sha256 is lower-case hex without a V(sha256:) prefix; versions and part numbers are as in the matrix.
  - Downgrades are a per-PSID permission in the matrix (C(allow_downgrade)) but a per-task option of
    M(gpufabric.mlnx.mlx_firmware); P(gpufabric.mlnx.fw_targets#filter) says which cards a permitted downgrade
    concerns.
  - Fails listing every problem of the matrix when it is not consistent (see P(gpufabric.mlnx.matrix_check#filter)).
options:
  _input:
    description: The matrix, the value of C(gpufabric_matrix).
    type: dict
    required: true
  firmware_dir:
    description: The directory that holds the images on the managed host (C(gpufabric_firmware_dir)).
    type: str
    required: true
seealso:
  - plugin: gpufabric.mlnx.fw_targets
    plugin_type: filter
  - module: gpufabric.mlnx.mlx_firmware
"""

EXAMPLES = r"""
- name: Burn the pinned firmware on every card that needs it
  gpufabric.mlnx.mlx_firmware:
    images: "{{ gpufabric_matrix | gpufabric.mlnx.matrix_images(gpufabric_firmware_dir) }}"
    require_image: true
"""

RETURN = r"""
_value:
  description: One entry per PSID of the matrix, in its order.
  type: list
  elements: dict
  contains:
    psid: {description: The PSID., type: str}
    version: {description: The pinned firmware version., type: str}
    path: {description: The image file on the managed host., type: str}
    sha256: {description: "The image's sha256, 64 lower-case hex digits.", type: str}
    part_numbers: {description: The part numbers the image is valid for., type: list, elements: str}
  sample:
    - psid: MT_0000000838
      version: 28.43.2566
      path: /var/cache/gpufabric/firmware/fw-ConnectX7-rel-28_43_2566-MCX75310AAS-NEA_Ax-UEFI-14.36.21-FlexBoot-3.7.500.bin
      sha256: 92a589ecd723b159b6eb0d62933e7712945232aa2b6395a9ca943d4e6e6a6edb
      part_numbers: [MCX75310AAS-NEAT]
"""

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_matrix = lazy("module_utils._matrix")


@filter_errors("matrix_images")
def matrix_images(matrix, firmware_dir):
    return _matrix.firmware_images(matrix, firmware_dir)


class FilterModule:
    def filters(self):
        return {"matrix_images": matrix_images}
