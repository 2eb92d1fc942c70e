# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: inventory_problems
short_description: Every problem the inventory alone shows, each distinct input checked once
version_added: 0.1.0
description:
  - Takes host names and Ansible's C(hostvars) and returns every problem that shows without contacting a host - what
    C(playbooks/check_inventory.yml) and the first half of the P(gpufabric.mlnx.preflight#role) role check.
  - The version matrix of every host (P(gpufabric.mlnx.matrix_check#filter)); a host without C(gpufabric_matrix) is a
    problem. Hosts sharing one matrix are checked once; with several distinct matrices each problem names its hosts.
  - With O(fabric), the rail plan of the hosts O(rail_hosts) (P(gpufabric.mlnx.rail_plan_problems#filter) of
    P(gpufabric.mlnx.rail_plan_servers#filter), as the C(gpufabric.mlnx.rail_plan) role plans them), its leaves
    checked against O(leaf_hosts) when given (P(gpufabric.mlnx.rail_plan_leaves#filter)).
  - The RoCE QoS settings (the C(gpufabric.mlnx.roce_qos) role's variables, with that role's defaults for what a host
    does not set) of every host that configures RoCE QoS - C(gpufabric_fabric) or C(gpufabric_roce_qos_interfaces)
    set and C(gpufabric_roce_qos_enabled) not false - checked as the M(gpufabric.mlnx.roce_qos) module checks them
    (P(gpufabric.mlnx.roce_qos_problems#filter)).
  - The BIOS inputs of every host that sets any (C(gpufabric_platform_bios), C(gpufabric_platform_bios_sriov),
    C(gpufabric_platform_bios_iommu), C(gpufabric_platform_bios_overrides)) - their shape, as
    P(gpufabric.mlnx.bios_plan#filter) reads them; what needs the BMC is checked by the platform role.
  - The kernel parameters and power policy of every host that runs the platform role's host side
    (C(gpufabric_platform_enabled) and C(gpufabric_platform_host_enabled) not false) - C(gpufabric_platform_aspm),
    C(gpufabric_platform_kernel_args_extra), C(gpufabric_platform_bootloader), C(gpufabric_platform_grub_dropin),
    C(gpufabric_platform_nic_runtime_pm) and C(gpufabric_platform_cpu_governor), with the role's defaults - checked
    against the role's argument spec and as M(gpufabric.mlnx.kernel_cmdline) and M(gpufabric.mlnx.platform_power)
    check the options the role passes them.
  - Every C(gpufabric_*) variable of the hosts (and of O(rail_hosts), O(leaf_hosts), O(spine_hosts)) that nothing in
    the collection reads - a typo such as C(gpufabric_roce_qos_cnp_dcsp), which would be ignored - naming the hosts
    and the closest variable (P(gpufabric.mlnx.unknown_variables#filter)).
  - Every other C(gpufabric_*) value of those hosts that its role's argument spec refuses (type, elements, choices) -
    what Ansible would refuse only when the role starts on the host, perhaps in a later batch.
  - With a fabric (C(gpufabric_fabric)) and C(gpufabric_rails_enabled) not false, the rails role's options
    C(gpufabric_rails_mtu), C(gpufabric_rails_sysctls) and C(gpufabric_rails_provider) (with the role's defaults) -
    checked against the role's argument spec and as M(gpufabric.mlnx.rail_interfaces) checks its O(mtu) and O(sysctls).
  - Every distinct input is checked ONCE, however many hosts share it (hosts are grouped by equal settings), and a
    problem of an input that several hosts share is one sentence that names them all, for example C(3 hosts (a, b, c)) then the problem.
  - Each host's variables are read once. Firmware images are checked by the C(gpufabric.mlnx.firmware) role's
    C(images) tasks (on the controller), not here.
options:
  _input:
    description: The host names to check (for example C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  hostvars:
    description: Ansible's C(hostvars).
    type: dict
    required: true
  fabric:
    description: C(gpufabric_fabric); when null the rail plan is not checked.
    type: dict
  rail_hosts:
    description: The hosts the rail plan covers (C(groups[gpufabric_rail_plan_group])).
    type: list
    elements: str
  leaf_hosts:
    description:
      - The inventory's leaves (C(groups[gpufabric_leaf_group])); null (the default) does not check the plan's leaves.
      - Every leaf the plan cables must be one of them and each of them a leaf of the plan; their
        C(gpufabric_leaf_port_template) picks their port templates.
    type: list
    elements: str
  spine_hosts:
    description:
      - The inventory's spines (C(groups[gpufabric_spine_group])); null (the default) or empty plans no uplinks.
      - With spines, the plan's uplinks, ASNs and loopbacks are checked too (C(gpufabric_fabric.uplinks),
        P(gpufabric.mlnx.rail_plan_spines#filter)).
    type: list
    elements: str
  with_plan:
    description:
      - V(true) returns a mapping instead of the list - C(problems) (the list) and C(plan) (the rail plan made on the
        way, in the shape of P(gpufabric.mlnx.rail_plan#filter)'s but reduced to what
        P(gpufabric.mlnx.rollout_batches#filter) reads - each server's C(leaf) and C(leaf_port) per rail, each leaf's
        C(su); null without O(fabric) or when the plan has problems) - for the rollout's batches without making the
        plan a second time (the whole plan handed through Ansible's facts costs about as much as making it).
    type: bool
    default: false
seealso:
  - role: gpufabric.mlnx.preflight
"""

EXAMPLES = r"""
- name: Every problem of the inventory, no host contacted
  ansible.builtin.set_fact:
    problems: >-
      {{ groups['servers'] | gpufabric.mlnx.inventory_problems(hostvars, fabric=gpufabric_fabric | default(none),
         rail_hosts=groups['servers'], leaf_hosts=groups['leaves'] | default(none)) }}
  run_once: true
"""

RETURN = r"""
_value:
  description:
    - Sentences, one per problem; empty when the inventory has none.
    - With O(with_plan), a mapping of C(problems) (those sentences) and C(plan).
  type: raw
  sample:
    - "2 hosts (srv-r01-01, srv-r01-02): roce_qos: cnp_dscp=64 is outside 0-63 (allowed: an integer 0-63)."
"""

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_preflight = lazy("plugin_utils._preflight")


@filter_errors()
def inventory_problems(names, hostvars, fabric=None, rail_hosts=None, leaf_hosts=None, spine_hosts=None,
                       with_plan=False):
    return _preflight.inventory_problems(names, hostvars, fabric=fabric, rail_hosts=rail_hosts, leaf_hosts=leaf_hosts,
                                         spine_hosts=spine_hosts, with_plan=with_plan)


class FilterModule:
    def filters(self):
        return {"inventory_problems": inventory_problems}
