#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: kernel_cmdline
short_description: Kernel parameters on every boot entry of a GPU server, proven before a reboot is asked for
version_added: 0.1.0
description:
  - Makes every kernel entry of the boot loader's configuration carry O(args) (for example V(pcie_aspm=off)), then
    reads the configuration back. A reboot activates the parameters only when that holds, so the task fails - and
    nobody reboots the host for nothing, on every run - when no entry would boot them.
  - V(grub) (Debian, Ubuntu) writes a drop-in in C(/etc/default/grub.d) that appends O(args) to
    C(GRUB_CMDLINE_LINUX) (every entry, recovery ones too), runs C(update-grub) (or C(grub-mkconfig -o
    /boot/grub/grub.cfg)) when the drop-in changed or an entry of C(/boot/grub/grub.cfg) lacks a parameter, and reads
    the C(linux) lines of the C(menuentry) blocks back. A failed C(update-grub) puts the previous drop-in back.
  - V(grubby) (the RHEL family's Boot Loader Specification entries) runs C(grubby --update-kernel=ALL --args=...) with
    what an entry of C(grubby --info=ALL) lacks, and reads the entries back.
  - V(auto) picks grubby where grubby and C(/boot/loader/entries/*.conf) are present, else GRUB where C(update-grub)
    or C(grub-mkconfig) and C(/etc/default/grub) are; a host with neither fails naming what it has (systemd-boot,
    unified kernel images, extlinux, zipl), which this module does not configure.
  - Whether the running kernel booted with the parameters is told by C(kernel_args_missing) of
    M(gpufabric.mlnx.platform_power); this module only proves that the next boot would have them.
  - "Each parameter must match a strict grammar (name or name=value of ASCII letters, digits and C(_ . -), the value
    also C(, : / = + @ ~)), so nothing a shell interprets reaches the drop-in C(update-grub) sources as root."
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.full
attributes:
  check_mode:
    details: Nothing is written or run but C(grubby --info=ALL). When C(grub.cfg) has no kernel entry and C(update-grub)
      would find no kernel image under C(/boot), check mode fails as the real run would.
options:
  args:
    description: The kernel parameters every boot entry must carry. A bare name is satisfied by any value. An empty
      list changes nothing.
    type: list
    elements: str
    required: true
  bootloader:
    description: The boot loader tooling; V(auto) detects it from the host's files and tools.
    type: str
    choices: [auto, grub, grubby]
    default: auto
  grub_dropin:
    description: The GRUB drop-in written for V(grub); C(grub-mkconfig) sources only C(/etc/default/grub.d/*.cfg).
    type: str
    default: /etc/default/grub.d/90-gpufabric.cfg
  root:
    description: Where C(/etc) and C(/boot) are, as a prefix - V(/) on a real host; tests point it at a simulated tree.
      The tools are run as they are.
    type: path
    default: /
  host:
    description: The host's name in messages (C(inventory_hostname)); when not given, the machine's host name.
    type: str
notes:
  - The grub.cfg layout read is the one Debian's grub2 (2.06) C(/etc/grub.d/10_linux) writes; the grubby output is
    RHEL 8/9's C(grubby-bls) C(--info) layout.
"""

EXAMPLES = r"""
- name: ASPM off on every boot entry (fails, naming what it found, when no entry would boot it)
  gpufabric.mlnx.kernel_cmdline:
    args: [pcie_aspm=off, iommu=pt]
    host: "{{ inventory_hostname }}"
  register: cmdline
"""

RETURN = r"""
bootloader:
  description: The boot loader configured (V(grub) or V(grubby)); null when O(args) is empty.
  returned: always
  type: str
  sample: grub
config:
  description: What was read back - C(/boot/grub/grub.cfg) or the grubby entries.
  returned: always
  type: str
  sample: /boot/grub/grub.cfg
regenerated:
  description: Whether C(update-grub) or C(grubby --update-kernel) ran.
  returned: always
  type: bool
entries:
  description: Every kernel entry read back (in check mode, as found), with the parameters it lacks.
  returned: always
  type: list
  elements: dict
  sample: [{title: "Debian GNU/Linux", kernel: /boot/vmlinuz-6.1.0-26-amd64, lacking: []}]
msg:
  description: One line saying what was (would be) done.
  returned: always
  type: str
  sample: "regenerated /boot/grub/grub.cfg (3 kernel entries)"
"""

import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils._bootloader import BOOTLOADERS, converge, summary
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module


ARGUMENT_SPEC = dict(
    args=dict(type="list", elements="str", required=True),
    bootloader=dict(type="str", default="auto", choices=list(BOOTLOADERS)),
    grub_dropin=dict(type="str", default="/etc/default/grub.d/90-gpufabric.cfg"),
    root=dict(type="path", default="/"),
    host=dict(type="str"),
)


def main():
    module = ansible_module(AnsibleModule, argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    try:
        result = converge(Host(root=params["root"]), params, host=params["host"] or socket.gethostname(),
                          check_mode=module.check_mode)
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())
    module.exit_json(changed=result["changed"], bootloader=result["bootloader"], config=result["config"],
                     regenerated=result["regenerated"], entries=result["entries"],
                     msg=summary(result, check_mode=module.check_mode),
                     diff=dict(before=result["before"], after=result["after"]))


if __name__ == "__main__":
    main()
