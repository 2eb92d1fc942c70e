#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nvue_leaf_gate
short_description: The leaf gate - read a leaf until it is ready for its servers, and record the gate
version_added: 0.2.0
description:
  - The leaf side of the C(gpufabric.mlnx.leaf_ready) role on one leaf (NVIDIA Cumulus Linux 5.x over NVUE), in one
    task and over one connection.
  - Reads the leaf (M(gpufabric.mlnx.nvue_info), C(system), C(interfaces), C(qos), C(revisions)) until
    P(gpufabric.mlnx.leaf_readiness#filter) says it is ready for the servers its rail plan entry cables, or
    O(timeout) has passed (one read, and one more every O(interval) seconds); in check mode once. The gate of the
    last read is returned as the fact C(gpufabric_leaf_gate), which the servers' C(leaf_holds) reads.
  - A leaf that cannot be read (the switch does not answer, refuses the login, ...) is not failed - its
    C(gpufabric_leaf_status) is recorded with the read's message, so its servers are held.
  - A leaf whose configuration failed (O(status) with C(failed)) is not read; the task sets nothing.
  - A leaf without an entry in O(plan_leaves) fails the task naming the leaf and O(group), before the switch is
    contacted.
  - Runs on the controller, in the task's worker, over the leaf's C(ansible.netcommon.httpapi) or
    C(ansible.netcommon.network_cli) connection (C(ansible_network_os=gpufabric.mlnx.nvue)), as the nvue modules do.
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.info_module
options:
  plan_leaves:
    description: The rail plan's C(leaves); this leaf's entry names its cables, the others where a stray cable belongs.
    type: dict
  group:
    description: The inventory group of the leaves, named in the failure of a leaf the plan does not cable.
    type: str
    default: leaves
  expected:
    description: C(release) (the pinned release), C(mtu) and C(speed) of the server-facing ports; null is not checked.
    type: dict
    default: {}
  hosts_qos:
    description: The roce_qos settings of each server cabled to the leaf (P(gpufabric.mlnx.roce_qos_settings#filter)); null is not checked.
    type: dict
  status:
    description: The leaf's C(gpufabric_leaf_status) (the leaf role's); with C(failed) the leaf is not read.
    type: dict
  timeout:
    description: Seconds the gate waits for the leaf to be ready.
    type: int
    default: 120
  interval:
    description: Seconds between two reads.
    type: int
    default: 5
seealso:
  - module: gpufabric.mlnx.nvue_info
  - plugin: gpufabric.mlnx.leaf_readiness
    plugin_type: filter
  - plugin: gpufabric.mlnx.leaf_holds
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Read the leaf until it is ready for its servers, or the time is up; record the gate
  gpufabric.mlnx.nvue_leaf_gate:
    plan_leaves: "{{ gpufabric_rail_plan.leaves }}"
    expected: {release: 5.11.0, mtu: 9216, speed: null}
    status: "{{ gpufabric_leaf_status | default(none) }}"
    timeout: 120
    interval: 5
"""

RETURN = r"""
ready:
  description: Whether the leaf is ready for all its servers (false when it could not be read or was not read).
  returned: always
  type: bool
reads:
  description: How many times the leaf was read.
  returned: always
  type: int
  sample: 1
msg:
  description: The gate in words - ready, the servers it holds, or why it was not read.
  returned: always
  type: str
  sample: "su01-leaf-rail0 is not ready: it holds 1 servers (srv-r01-02)"
plan_problem:
  description: True when the task failed because the leaf has no entry in the rail plan.
  returned: when the leaf is not in the rail plan
  type: bool
ansible_facts:
  description: The facts the task sets on the leaf - the gate when the leaf was read, its status when it could not be.
  returned: when the leaf was read, or could not be
  type: dict
  contains:
    gpufabric_leaf_gate:
      description: The gate (P(gpufabric.mlnx.leaf_readiness#filter)) - C(ready), C(leaf), C(ports), C(hosts), C(held).
      type: dict
      sample: {"ready": false, "leaf": [], "ports": {"swp2": ["su01-leaf-rail0:swp2 (cable ...) is down"]},
               "hosts": {"srv-r01-02": ["su01-leaf-rail0:swp2 (cable ...) is down"]}, "held": ["srv-r01-02"]}
    gpufabric_leaf_status:
      description: A leaf that could not be read - C(failed) (true), C(changed) (false), C(msg) (the read's message).
      type: dict
"""
