# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: preflight_leaves
short_description: What the preflight's read-only login to each leaf found, before batch 1
version_added: 0.2.0
description:
  - Judges what site.yml's preflight of the leaves read on each leaf (C(__gpufabric_preflight_leaf_info), the result
    of M(gpufabric.mlnx.nvue_info) with O(gpufabric.mlnx.nvue_info#module:gather=[system, image])) before any leaf
    or server changes.
  - A leaf that could not be read - unreachable, a refused login, an error answer - is in RV(_value.unreachable) with
    the connection's own message; the preflight counts it against C(gpufabric_max_unreachable) like an unreachable
    server, and the rollout holds every server cabled to it.
  - A leaf that was read but would refuse the matrix's pinned switch OS (see
    P(gpufabric.mlnx.switch_os_target#filter) - a downgrade without C(allow_downgrade), no URL to fetch from, a
    release below C(compatibility.switch_os_min) with no pin) is a problem in RV(_value.problems), naming the leaf,
    both releases and the setting. A leaf without the read (not in this run, its leaf step off) is not judged.
options:
  _input:
    description: The leaves (the C(leaves) group).
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars) (each leaf's read, C(gpufabric_matrix) and C(gpufabric_switch_image_base_url)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The leaves' prerequisites
  ansible.builtin.debug:
    msg: "{{ groups['leaves'] | gpufabric.mlnx.preflight_leaves(hostvars) }}"
"""

RETURN = r"""
_value:
  description: C(read) (the leaves judged - those the preflight read), C(unreachable) (leaf - why) and C(problems)
    (sentences, one per leaf).
  type: dict
  sample:
    read: ["r01-leaf-rail0", "r01-leaf-rail1", "r02-leaf-rail0"]
    unreachable: {"r01-leaf-rail1": "the switch could not be reached over the NVUE REST API (...): Connection refused"}
    problems: ["r02-leaf-rail0: downgrade from 5.12.0 to 5.11.0 refused: the switch runs a newer release than the pin;
               set gpufabric_matrix.switch_os.cumulus-linux.allow_downgrade: true to allow it"]
"""

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_prerequisites = lazy("plugin_utils._prerequisites")


@filter_errors()
def preflight_leaves(names, hostvars):
    return _prerequisites.leaf_reads(names, hostvars)


class FilterModule:
    def filters(self):
        return {"preflight_leaves": preflight_leaves}
