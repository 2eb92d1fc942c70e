# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: matrix_check
short_description: Check the pinned version matrix and list every problem at once
version_added: 0.1.0
description:
  - Checks C(gpufabric_matrix), the pinned version matrix (driver, firmware per PSID, compatibility,
    NV configuration profiles; the format is in C(docs/matrix.md) of the collection), and returns it unchanged
    when it is consistent.
  - "Otherwise fails listing B(every) problem, each starting with the path of the bad entry, for example
    C(gpufabric_matrix.firmware.MT_0000000838.sha256: must be the sha256 of the file, 64 hex digits ...)."
  - "Checked: required keys and their types, unknown keys (typos), the driver flavour (V(doca-ofed) or
    V(mlnx-ofed)) and version, the source (V(apt) repository URL, suite and components, V(dnf) repository, or
    V(tarball) path and sha256) with one exact version per package, kernels or DKMS, well-formed PSIDs and
    firmware versions, an image file name (C(.bin), matching its version) and a sha256 per PSID, part numbers
    claimed by one PSID only, every pinned firmware qualified with the pinned driver in
    C(compatibility.firmware_drivers), switch OS and NCCL versions, mlxconfig parameter names and values, and
    NV profile assignments that name existing profiles (the rule M(gpufabric.mlnx.mlxconfig) users already
    know from P(gpufabric.mlnx.nv_drift#filter))."
  - Versions must be quoted strings; an unquoted V(24.10) is the number V(24.1) to YAML, and the problem says so.
options:
  _input:
    description: The matrix, the value of C(gpufabric_matrix).
    type: raw
    required: true
  fail:
    description:
      - V(true) fails on any problem; V(false) returns the list of problems instead (empty when the matrix is
        consistent), for reports.
    type: bool
    default: true
seealso:
  - plugin: gpufabric.mlnx.fw_targets
    plugin_type: filter
  - plugin: gpufabric.mlnx.matrix_images
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Stop before any host is changed when the matrix is inconsistent
  ansible.builtin.set_fact:
    __gpufabric_matrix: "{{ gpufabric_matrix | gpufabric.mlnx.matrix_check }}"
  run_once: true
  delegate_to: localhost

- name: Problems for a report, without failing
  ansible.builtin.debug:
    msg: "{{ gpufabric_matrix | gpufabric.mlnx.matrix_check(fail=false) }}"
"""

RETURN = r"""
_value:
  description:
    - With O(fail=true), the matrix unchanged.
    - With O(fail=false), the problems (strings, each starting with the path of the bad entry); empty when the
      matrix is consistent.
  type: raw
  sample:
    - "gpufabric_matrix.firmware.MT_0000000838.version: firmware 28.43.2566 is not qualified with the pinned driver:
      gpufabric_matrix.driver.version is 24.10-2.1.8.0, and
      gpufabric_matrix.compatibility.firmware_drivers[\"28.43.2566\"] lists 24.10-1.1.4.0"
"""

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_matrix = lazy("module_utils._matrix")


@filter_errors()
def matrix_check(matrix, fail=True):
    if not isinstance(fail, bool):
        raise InvalidValue("matrix_check: fail must be true or false, not %r" % (fail,), parameter="fail")
    return _matrix.check(matrix) if fail else _matrix.matrix_problems(matrix)


class FilterModule:
    def filters(self):
        return {"matrix_check": matrix_check}
