# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: ofed_spec
short_description: Check and normalise the driver entry of the pinned version matrix
version_added: 0.1.0
description:
  - Takes C(gpufabric_matrix) (or its C(driver) entry) and returns the driver entry checked and normalised - the form the
    C(gpufabric.mlnx.ofed) role and M(gpufabric.mlnx.ofed_driver) work with.
  - "The checks are those of P(gpufabric.mlnx.matrix_check#filter) for the driver (flavour, quoted version, source
    V(apt) / V(dnf) / V(tarball) with its keys, one exact version per package, kernels or DKMS), plus C(allow_downgrade)
    (true or false). Every problem is listed at once, each starting with its key, for example
    C(gpufabric_matrix.driver.source.url: required: the apt repository URL ...)."
  - "Normalised: C(kernels) a list (empty with DKMS only), C(dkms) and C(allow_downgrade) booleans, C(source.components)
    a list, C(source.signed_by) / C(source.key_url) null when absent, a tarball's C(sha256) lower-case without a
    C(sha256:) prefix."
options:
  _input:
    description: The matrix, the value of C(gpufabric_matrix), or its C(driver) entry.
    type: raw
    required: true
seealso:
  - plugin: gpufabric.mlnx.matrix_check
    plugin_type: filter
  - module: gpufabric.mlnx.ofed_driver
"""

EXAMPLES = r"""
- name: Check the driver entry once, fail naming the bad key
  ansible.builtin.set_fact:
    __driver: "{{ gpufabric_matrix | gpufabric.mlnx.ofed_spec }}"
"""

RETURN = r"""
_value:
  description: The normalised driver entry.
  type: dict
  sample:
    flavour: doca-ofed
    version: "24.10-2.1.8.0"
    kernels: ["6.1.0-28-amd64"]
    dkms: false
    allow_downgrade: false
    source: {type: apt, url: "https://linux.mellanox.com/public/repo/doca/2.9.2/debian12/x86_64/", suite: "./",
             components: [], signed_by: /usr/share/keyrings/doca_keyring.gpg, key_url: null,
             packages: {doca-ofed: "2.9.2-0.0.3"}}
"""

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_ofed = lazy("module_utils._ofed")


@filter_errors()
def ofed_spec(value):
    return _ofed.driver_spec(value)


class FilterModule:
    def filters(self):
        return {"ofed_spec": ofed_spec}
