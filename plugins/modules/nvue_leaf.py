#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nvue_leaf
short_description: A leaf switch to the pinned switch OS and to its entry of the rail plan, in one task
version_added: 0.2.0
description:
  - The work of the C(gpufabric.mlnx.leaf) role on one leaf (NVIDIA Cumulus Linux 5.x over NVUE), in one task and over
    one connection - the steps M(gpufabric.mlnx.nvue_info), M(gpufabric.mlnx.nvue_image) and
    M(gpufabric.mlnx.nvue_config) take, run in order with the collection's decisions between them.
  - "First the leaf's place: the leaf (C(inventory_hostname)) must have an entry in O(plan_leaves), the rail plan's
    C(leaves); otherwise the task fails naming the leaf, O(group) and a leaf the plan has (C(check
    gpufabric_fabric.leaf_name)), with RV(plan_problem) - before the switch is contacted."
  - "With a pinned switch OS in O(matrix) (C(switch_os)), the running release and the image partitions are read and
    P(gpufabric.mlnx.switch_os_target#filter) decides - nothing (the pin runs), an upgrade (fetch, verify, install,
    boot-next, ONE reboot) or a boot of the other partition (M(gpufabric.mlnx.nvue_image)); a refused target (a
    downgrade the pin does not allow, no URL, an unreadable release) fails the task as C(<leaf>: <reason>) before
    anything changes. Without a pin only the release is read."
  - Then ONE revision from the leaf's rail plan entry (P(gpufabric.mlnx.leaf_config#filter) with O(settings), written
    in the spelling of the release the leaf runs - or, in check mode, would run after the upgrade), made and applied
    only when it changes the applied configuration (M(gpufabric.mlnx.nvue_config) with O(apply_timeout) and O(save)).
  - The result is the leaf's C(gpufabric_leaf_status), returned as a fact. A step that fails - the switch refuses,
    cannot be reached, a refused target, a setting C(leaf_config) refuses - fails the task with the step's own message
    (and what it returned); the role's rescue records it and the leaf's servers are held.
  - Check mode reads only and predicts, as each module does; C(--diff) shows the configuration's change.
  - Runs on the controller, in the task's worker, over the leaf's C(ansible.netcommon.httpapi) or
    C(ansible.netcommon.network_cli) connection (C(ansible_network_os=gpufabric.mlnx.nvue)), as the nvue modules do.
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.full
attributes:
  check_mode:
    details: Reads the release, the partitions and the applied configuration; predicts the upgrade and the change.
options:
  plan_leaves:
    description:
      - The rail plan's C(leaves) (RV(gpufabric.mlnx.rail_plan#filter:_value) C(leaves)); this leaf's entry is
        configured. Null (no rail plan) fails the task like a leaf the plan does not cable.
    type: dict
  group:
    description: The inventory group of the leaves, named in the failure of a leaf the plan does not cable.
    type: str
    default: leaves
  settings:
    description:
      - C(mtu), C(speed), C(vlan) and C(qos) (the roce_qos settings, P(gpufabric.mlnx.roce_qos_settings#filter)) as
        P(gpufabric.mlnx.leaf_config#filter) takes them; C(release) is the leaf's, set by the task.
    type: dict
    default: {}
  matrix:
    description: The version matrix (C(gpufabric_matrix)); its C(switch_os) pins the leaf's release. V({}) - no pin.
    type: dict
    default: {}
  image_base_url:
    description: Where the site serves switch images (C(gpufabric_switch_image_base_url)); the pin's C(url) wins.
    type: str
  apply_timeout:
    description: Seconds the revision's apply may take (M(gpufabric.mlnx.nvue_config)'s C(timeout)), 1-86400.
    type: int
    default: 300
  save:
    description: Save the applied configuration when the switch does not (auto-save off).
    type: bool
    default: true
  reboot_timeout:
    description: Seconds the leaf may take to come back from its upgrade reboot (M(gpufabric.mlnx.nvue_image)), 1-86400.
    type: int
    default: 900
seealso:
  - module: gpufabric.mlnx.nvue_config
  - module: gpufabric.mlnx.nvue_image
  - plugin: gpufabric.mlnx.leaf_config
    plugin_type: filter
  - plugin: gpufabric.mlnx.switch_os_target
    plugin_type: filter
"""

EXAMPLES = r"""
- name: The pinned switch OS, then one revision from the rail plan
  block:
    - name: This leaf
      gpufabric.mlnx.nvue_leaf:
        plan_leaves: "{{ gpufabric_rail_plan.leaves }}"
        settings:
          mtu: 9216
          qos: "{{ hostvars[inventory_hostname] | gpufabric.mlnx.roce_qos_settings }}"
        matrix: "{{ gpufabric_matrix }}"
  rescue:
    - name: Record that the switch refused it
      ansible.builtin.set_fact:
        gpufabric_leaf_status: {failed: true, changed: false, msg: "{{ ansible_failed_result.msg }}"}
"""

RETURN = r"""
release:
  description: The release the configuration was written for (the running one, or the pinned one after the upgrade).
  returned: success
  type: str
  sample: "5.11.0"
image:
  description:
    - The result of the pinned switch OS step (M(gpufabric.mlnx.nvue_image)'s C(release_before), C(release),
      C(actions), C(reboots), C(partition), C(saved), C(sha256_verified), C(changed)); null when the leaf runs the pin
      or the matrix pins none.
    - On a failure of the configuration after an upgrade, what the upgrade did.
  returned: always
  type: dict
  sample: {"changed": true, "release_before": "5.9.1", "release": "5.11.0", "actions": [fetch, install, boot-next,
           reboot], "reboots": 1, "partition": "2", "saved": false, "sha256_verified": true}
revision:
  description: The revision the configuration made and applied (M(gpufabric.mlnx.nvue_config)'s); null when none.
  returned: success
  type: str
state:
  description: The revision's terminal state; null when nothing was applied.
  returned: success
  type: str
saved:
  description: Whether the applied configuration is the startup configuration now.
  returned: success
  type: bool
nvue_diff:
  description: What the revision changes in the applied configuration (the prediction in check mode), secrets masked.
  returned: success
  type: list
  elements: dict
plan_problem:
  description: True when the task failed because the leaf has no entry in the rail plan (the inventory's mistake).
  returned: when the leaf is not in the rail plan
  type: bool
ansible_facts:
  description: The facts the task sets on the leaf.
  returned: success
  type: dict
  contains:
    gpufabric_leaf_status:
      description:
        - What the leaf's configuration did - C(failed) (false), C(changed), C(revision), C(state), C(release) (the
          release installed by this task, else null) and C(reboots) (0 or 1). docs/role_facts.md.
      type: dict
      sample: {"failed": false, "changed": false, "revision": null, "state": null, "release": null, "reboots": 0}
"""
