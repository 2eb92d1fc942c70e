#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: platform_host
short_description: The host side of a GPU server's platform in one call - kernel command line, power policy, PCIe links
version_added: 0.2.0
description:
  - What the gpufabric.mlnx.platform role does on the server itself, in one module call (one task) - every input is
    checked before anything is written, then, in this order, each of O(parts).
  - V(kernel_cmdline) - every boot entry carries O(kernel_args), read back from the boot loader's configuration, as
    M(gpufabric.mlnx.kernel_cmdline) does (the same code); fails the host, naming what it found, when no entry would
    boot them.
  - V(power) - the running system's PCIe ASPM policy, NVIDIA NIC runtime power management and CPU governor, as
    M(gpufabric.mlnx.platform_power) does (the same code), and the files that keep them at every boot - the udev rule
    O(nic_udev_rule) and the systemd unit O(governor_unit) (enabled by its link in
    C(/etc/systemd/system/multi-user.target.wants)), each written atomically, mode 0644, owner root, only when it
    differs; udevd and systemd are made to read them again (C(udevadm control --reload), C(systemctl daemon-reload))
    where they run (C(/run/udev/control), C(/run/systemd/system)). Returns the role's facts
    RV(ansible_facts.gpufabric_platform_kernel_args_missing), RV(ansible_facts.gpufabric_platform_power_drift) and
    RV(ansible_facts.gpufabric_platform_reboot_required) (O(bios_pending_reset) or a kernel parameter not booted).
  - V(pcie) - fails the host when an NVIDIA NIC's PCIe link trained slower or narrower than the card can (lspci
    LnkSta below LnkCap), naming each card's PCI address, slot, part number, expected and actual link.
  - "Values written into the unit (O(cpu_governor), O(root)) and the files' paths must match a strict grammar
    (governor: lower-case ASCII letters, digits, C(_) and C(-); paths: ASCII letters, digits and C(_ . + - /)): nothing
    udev, systemd or a shell substitutes reaches them."
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.full
attributes:
  check_mode:
    details: Nothing is written or reloaded; the result, the diff (kernel entries, sysfs settings, each file's text)
      and the facts are what a real run would do.
options:
  parts:
    description: What to do, in this order.
    type: list
    elements: str
    choices: [kernel_cmdline, power, pcie]
    default: [kernel_cmdline, power, pcie]
  kernel_args:
    description: Kernel parameters every boot entry must carry and the running kernel must have booted with; a bare
      name matches any value.
    type: list
    elements: str
    default: []
  bootloader:
    description: The boot loader tooling (M(gpufabric.mlnx.kernel_cmdline) O(gpufabric.mlnx.kernel_cmdline#module:bootloader)).
    type: str
    choices: [auto, grub, grubby]
    default: auto
  grub_dropin:
    description: The GRUB drop-in written for V(grub).
    type: str
    default: /etc/default/grub.d/90-gpufabric.cfg
  boot_root:
    description: Where C(/etc) and C(/boot) of the boot loader are, as a prefix - V(/) on a real host.
    type: path
    default: /
  aspm_policy:
    description: PCIe ASPM policy of the running kernel.
    type: str
    choices: [default, performance, powersave, powersupersave]
    default: performance
  nic_runtime_pm:
    description: Runtime power management of the NVIDIA NIC functions - V(false) never suspended (C(power/control)
      V(on)), now and by the udev rule.
    type: bool
    default: false
  cpu_governor:
    description: The cpufreq governor of every CPU, now and by the unit.
    type: str
    default: performance
  leave:
    description: Settings to leave as they are (no governor unit is written when V(cpu_governor) is left).
    type: list
    elements: str
    choices: [aspm_policy, nic_runtime_pm, cpu_governor]
    default: []
  root:
    description: Where sysfs and procfs are, as a prefix - V(/) on a real host (the unit writes under it too).
    type: path
    default: /
  nic_udev_rule:
    description: The udev rule that keeps the NICs' runtime PM at every boot and hot-plug; not given - none is written.
    type: path
  governor_unit:
    description: The systemd unit that sets the governor at boot; not given - none is written.
    type: path
  bios_pending_reset:
    description: BIOS settings wait for a reset (the platform role's BIOS step) - joined into
      RV(ansible_facts.gpufabric_platform_reboot_required).
    type: bool
    default: false
  host:
    description: The host's name in messages (C(inventory_hostname)); when not given, the machine's host name.
    type: str
  tool:
    description: The tool family whose C(lspci) companions are used (the PCIe check runs C(lspci) only).
    type: str
    choices: [auto, mft, mstflint]
    default: auto
  timeout:
    description: Seconds each command may run.
    type: int
    default: 900
seealso:
  - module: gpufabric.mlnx.kernel_cmdline
  - module: gpufabric.mlnx.platform_power
"""

EXAMPLES = r"""
- name: Kernel command line, power policy and PCIe links
  gpufabric.mlnx.platform_host:
    kernel_args: [pcie_aspm=off]
    nic_udev_rule: /etc/udev/rules.d/90-gpufabric-nic-power.rules
    governor_unit: /etc/systemd/system/gpufabric-cpu-governor.service
    host: "{{ inventory_hostname }}"

- name: Only the PCIe link check
  gpufabric.mlnx.platform_host:
    parts: [pcie]
    host: "{{ inventory_hostname }}"
"""

RETURN = r"""
ansible_facts:
  description: The platform role's facts (docs/role_facts.md), when V(power) is in O(parts).
  returned: when V(power) is in O(parts)
  type: dict
  contains:
    gpufabric_platform_kernel_args_missing:
      description: The O(kernel_args) the running kernel did not boot with (the next boot will).
      type: list
      elements: str
      sample: [pcie_aspm=off]
    gpufabric_platform_power_drift:
      description: The power settings that differed from the wanted ones (C(aspm_policy), C(power/control <PCI>),
        C(scaling_governor <cpuN>)).
      type: list
      elements: str
    gpufabric_platform_reboot_required:
      description: O(bios_pending_reset) or a kernel parameter the running kernel lacks.
      type: bool
kernel:
  description: The kernel command line part, as M(gpufabric.mlnx.kernel_cmdline) returns it (C(bootloader),
    C(config), C(regenerated), C(entries)); null when not run.
  returned: always
  type: dict
power:
  description: The power part, as M(gpufabric.mlnx.platform_power) returns it (C(changes), C(writes), C(nics),
    C(notes)); null when not run.
  returned: always
  type: dict
files:
  description: The files written (in check mode, that would be written).
  returned: always
  type: list
  elements: str
reloaded:
  description: The daemons made to read their files again (V(udev), V(systemd)).
  returned: always
  type: list
  elements: str
pcie:
  description: Per NVIDIA NIC function its C(address), C(physical_slot), C(part_number) and C(pcie) link
    (C(lnkcap), C(lnksta), C(degraded)); null when not run.
  returned: always
  type: list
  elements: dict
msg:
  description: What was (would be) done, one clause per part.
  returned: always
  type: str
"""

import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _files
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils._platform import PARTS, converge_host
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import TOOL_ARGSPEC, Runner

ARGUMENT_SPEC = dict(
    parts=dict(type="list", elements="str", default=list(PARTS), choices=list(PARTS)),
    kernel_args=dict(type="list", elements="str", default=[]),
    bootloader=dict(type="str", default="auto", choices=["auto", "grub", "grubby"]),
    grub_dropin=dict(type="str", default="/etc/default/grub.d/90-gpufabric.cfg"),
    boot_root=dict(type="path", default="/"),
    aspm_policy=dict(type="str", default="performance", choices=["default", "performance", "powersave", "powersupersave"]),
    nic_runtime_pm=dict(type="bool", default=False),
    cpu_governor=dict(type="str", default="performance"),
    leave=dict(type="list", elements="str", default=[], choices=["aspm_policy", "nic_runtime_pm", "cpu_governor"]),
    root=dict(type="path", default="/"),
    nic_udev_rule=dict(type="path"),
    governor_unit=dict(type="path"),
    bios_pending_reset=dict(type="bool", default=False),
    host=dict(type="str"),
    **TOOL_ARGSPEC
)


def main():
    module = ansible_module(AnsibleModule, argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    try:
        runner = Runner(tool=params["tool"], timeout=params["timeout"]) if "pcie" in params["parts"] else None
        result = converge_host(params, host=params["host"] or socket.gethostname(), check_mode=module.check_mode,
                               reader=Host(root=params["root"]), boot=Host(root=params["boot_root"]), runner=runner,
                               files=_files)
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())
    for warning in result["warnings"]:
        module.warn(warning)
    kernel = result["kernel"]
    out = dict(changed=result["changed"], files=result["files"],
               kernel=None if kernel is None else {key: kernel[key] for key in (
                   "bootloader", "config", "regenerated", "entries")},
               reloaded=result["reloaded"], pcie=result["pcie"], msg="; ".join(result["lines"]),
               power=None if result["power"] is None else {key: result["power"][key] for key in (
                   "changes", "writes", "nics", "notes")},
               diff=result["diff"])
    if result["facts"]:
        out["ansible_facts"] = result["facts"]
    if result.get("error") is not None:
        out.update(result["error"].fail_kwargs())
        module.fail_json(**out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
