#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: platform_power
short_description: PCIe ASPM policy, NVIDIA NIC runtime power management and CPU governor of a GPU server
version_added: 0.1.0
description:
  - Sets the running kernel's PCIe ASPM policy (C(/sys/module/pcie_aspm/parameters/policy)), the runtime power
    management of every NVIDIA networking PCI function (vendor 0x15b3, class 0x02xxxx; C(power/control) V(on) = never
    suspended) and the cpufreq governor of every CPU; only what differs is written, then read again.
  - Reports which of O(kernel_args) the running kernel did not boot with (RV(kernel_args_missing)); a reboot is then
    needed (RV(reboot_required)). Writing the bootloader configuration is the gpufabric.mlnx.platform role's job.
  - With C(pcie_aspm=off) on the kernel command line ASPM is off on every link and the policy is left alone. When the
    kernel refuses a policy write (the firmware kept ASPM control) the task warns and does not fail - the BIOS
    setting is then the fix.
  - None of these survive a reboot by themselves; the platform role persists them (kernel command line, udev rule,
    a boot-time unit for the governor).
  - A governor or policy the host does not offer fails the task before anything is written, naming the CPUs and
    what they offer.
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.full
options:
  aspm_policy:
    description: PCIe ASPM policy of the running kernel.
    type: str
    choices: [default, performance, powersave, powersupersave]
    default: performance
  nic_runtime_pm:
    description:
      - Runtime power management of the NVIDIA NIC functions. V(false) writes V(on) to C(power/control) (the device is
        never runtime-suspended, so no wake-up latency), V(true) writes V(auto).
    type: bool
    default: false
  cpu_governor:
    description: The cpufreq governor of every CPU (C(scaling_governor)).
    type: str
    default: performance
  kernel_args:
    description: Kernel parameters the running kernel must have booted with (read from C(/proc/cmdline)), for example
      V(pcie_aspm=off). A bare name matches any value.
    type: list
    elements: str
    default: []
  leave:
    description: Settings to leave as they are (Ansible cannot pass V(null) for an option with a default).
    type: list
    elements: str
    choices: [aspm_policy, nic_runtime_pm, cpu_governor]
    default: []
  root:
    description:
      - Where sysfs and procfs are, as a prefix of V(/sys) and V(/proc) - V(/) on a real host. Tests and the simulated
        lab point it at the simulator's tree (V(/var/lib/mlxsim/root) in the lab's containers).
    type: path
    default: /
notes:
  - ASPM policy names and the bracketed active policy are those of drivers/pci/pcie/aspm.c; C(power/control) is
    documented in the kernel's Documentation/ABI/testing/sysfs-devices-power.
"""

EXAMPLES = r"""
- name: ASPM performance, NIC runtime PM off, CPUs on the performance governor; is pcie_aspm=off booted?
  gpufabric.mlnx.platform_power:
    kernel_args: [pcie_aspm=off]
  register: power

- name: Only the NICs
  gpufabric.mlnx.platform_power:
    leave: [aspm_policy, cpu_governor]
"""

RETURN = r"""
changes:
  description: Per setting that differs, before and wanted - C(aspm_policy), C(power/control <PCI address>),
    C(scaling_governor <cpuN>).
  returned: always
  type: dict
  sample: {"power/control 0000:18:00.0": {before: auto, after: "on"}, aspm_policy: {before: default, after: performance}}
writes:
  description: The sysfs writes made (in check mode, that would be made), in order.
  returned: always
  type: list
  elements: dict
  sample: [{write: /sys/bus/pci/devices/0000:18:00.0/power/control, value: "on"}]
nics:
  description: The NVIDIA networking PCI functions found.
  returned: always
  type: list
  elements: str
  sample: ["0000:18:00.0", "0000:29:00.0", "0000:29:00.1"]
kernel_args_missing:
  description: The O(kernel_args) the running kernel did not boot with.
  returned: always
  type: list
  elements: str
  sample: [pcie_aspm=off]
reboot_required:
  description: Whether RV(kernel_args_missing) is not empty.
  returned: always
  type: bool
notes:
  description: Settings left alone and why (no ASPM support, ASPM off by the command line, no cpufreq).
  returned: always
  type: list
  elements: str
msg:
  description: One line saying what was (would be) changed and whether a reboot is needed.
  returned: always
  type: str
  sample: "changed aspm_policy; power/control of 0000:18:00.0, 0000:40:00.0; scaling_governor of cpu0-cpu7"
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils._platform import converge, summary


ARGUMENT_SPEC = dict(
    aspm_policy=dict(type="str", default="performance", choices=["default", "performance", "powersave", "powersupersave"]),
    nic_runtime_pm=dict(type="bool", default=False),
    cpu_governor=dict(type="str", default="performance"),
    kernel_args=dict(type="list", elements="str", default=[]),
    leave=dict(type="list", elements="str", default=[], choices=["aspm_policy", "nic_runtime_pm", "cpu_governor"]),
    root=dict(type="path", default="/"),
)


def main():
    module = ansible_module(AnsibleModule, argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = dict(module.params)
    params.update((key, None) for key in module.params["leave"])
    try:
        result = converge(Host(root=params["root"]), params, check_mode=module.check_mode)
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())
    for warning in result["warnings"]:
        module.warn(warning)
    module.exit_json(changed=result["changed"], changes=result["changes"], writes=result["writes"],
                     nics=result["nics"], kernel_args_missing=result["kernel_args_missing"],
                     reboot_required=result["reboot_required"], notes=result["notes"],
                     msg=summary(result, check_mode=module.check_mode),
                     diff=dict(before=result["before"], after=result["after"]))


if __name__ == "__main__":
    main()
