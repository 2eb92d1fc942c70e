# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: ofed_apt_files
short_description: The apt sources file and the apt preferences that pin the NIC driver
version_added: 0.1.0
description:
  - Renders the two files the C(gpufabric.mlnx.ofed) role writes on apt hosts - the driver repository as a deb822
    C(.sources) file (or a one-line C(.list)), with C(Signed-By) and, for test repositories and verified bundles only,
    C(Trusted) - and apt preferences that hold every pinned package at its exact version with C(Pin-Priority 1001),
    so a routine C(apt upgrade) cannot move the driver, whatever newer version the repository offers.
  - The same functions write the sources file M(gpufabric.mlnx.ofed_driver) probes the repository with, and the two
    files the module keeps with O(gpufabric.mlnx.ofed_driver#module:state=pinned) (the role's one task).
options:
  _input:
    description: The repository - C(url), C(suite) (V(./) for a flat one), C(components), C(signed_by), C(trusted).
    type: dict
    required: true
  packages:
    description: Package name -> exact version to pin.
    type: dict
    required: true
  name:
    description: Base name of the files (C(/etc/apt/sources.list.d/NAME.sources), C(/etc/apt/preferences.d/NAME.pref)).
    type: str
    default: gpufabric-ofed
  format:
    description: V(deb822) (a C(.sources) file, apt 1.1 and later) or V(list) (a C(.list) line).
    type: str
    choices: [deb822, list]
    default: deb822
  comment:
    description: A line put at the top of both files (for example the matrix release).
    type: str
"""

EXAMPLES = r"""
- name: Write the repository and the pins
  ansible.builtin.copy:
    dest: "{{ item.path }}"
    content: "{{ item.content }}"
    mode: "0644"
  loop: "{{ (repo | gpufabric.mlnx.ofed_apt_files(packages)).values() }}"
  vars:
    repo: {url: "https://linux.mellanox.com/public/repo/doca/2.9.2/ubuntu22.04/x86_64/", suite: "./",
           signed_by: /usr/share/keyrings/doca_keyring.gpg}
    packages: {doca-ofed: "2.9.2-0.0.3"}
"""

RETURN = r"""
_value:
  description: C(sources) and C(preferences), each with C(path) and C(content).
  type: dict
  sample:
    sources:
      path: /etc/apt/sources.list.d/gpufabric-ofed.sources
      content: "Types: deb\nURIs: https://linux.mellanox.com/public/repo/doca/2.9.2/ubuntu22.04/x86_64/\nSuites: ./\n..."
    preferences:
      path: /etc/apt/preferences.d/gpufabric-ofed.pref
      content: "Package: doca-ofed\nPin: version 2.9.2-0.0.3\nPin-Priority: 1001\n"
"""

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_ofed = lazy("module_utils._ofed")


@filter_errors()
def ofed_apt_files(repo, packages, name="gpufabric-ofed", format="deb822", comment=None):  # noqa: A002 (filter option)
    return _ofed.apt_files(repo, packages, name=name, fmt=format, comment=comment)


class FilterModule:
    def filters(self):
        return {"ofed_apt_files": ofed_apt_files}
