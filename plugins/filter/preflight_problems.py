# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: preflight_problems
short_description: Every problem that must stop a rollout before any host is changed
version_added: 0.1.0
description:
  - Checks the version matrix (see P(gpufabric.mlnx.matrix_check#filter)) and, per host and card, that the card's
    PSID and part number are in the matrix and its firmware can be reached without a refused downgrade
    (see P(gpufabric.mlnx.fw_targets#filter)), that every card has a serial number, and that no serial
    number appears on two cards (of one host or of two hosts).
  - Returns every problem at once, each naming the host and the card.
options:
  _input:
    description: A mapping of host name to the C(devices) list M(gpufabric.mlnx.mlx_info) returned on it (null when it did not run).
    type: dict
    required: true
  matrix:
    description: The version matrix, C(gpufabric_matrix).
    type: dict
    required: true
  require_devices:
    description: A host with no NVIDIA device is a problem.
    type: bool
    default: true
  unreachable:
    description:
      - The hosts the preflight could not reach, a mapping of host name to the reason (the C(msg) of the result);
        each is one problem, listed first, and its devices are not checked.
    type: dict
  failed:
    description:
      - Why the devices of a reachable host could not be read, a mapping of host name to the C(msg) of its
        M(gpufabric.mlnx.mlx_info) result (for example C(lspci not found on PATH) and where it comes from); the
        problem of a host whose devices are null carries it.
    type: dict
"""

EXAMPLES = r"""
- name: Stop before anything is changed
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems }}"
  vars:
    problems: "{{ devices_by_host | gpufabric.mlnx.preflight_problems(gpufabric_matrix) }}"
"""

RETURN = r"""
_value:
  description: Sentences, one per problem; empty when the rollout may go ahead.
  type: list
  elements: str
  sample: ["serial number MT2248X65238 is on 2 cards: srv-r01-01 0000:18:00.0, srv-r02-01 0000:40:00.0"]
"""

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_preflight = lazy("plugin_utils._preflight")


@filter_errors()
def preflight_problems(devices_by_host, matrix, require_devices=True, unreachable=None, failed=None):
    return _preflight.problems(devices_by_host, matrix, require_devices=require_devices, unreachable=unreachable,
                               failed=failed)


class FilterModule:
    def filters(self):
        return {"preflight_problems": preflight_problems}
