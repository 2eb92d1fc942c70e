#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nvue_image
short_description: Bring an NVIDIA Cumulus Linux switch to the pinned release, with one reboot
version_added: 0.2.0
description:
  - The optimized (two-partition) image upgrade of Cumulus Linux 5.x over NVUE - C(nv action fetch system image),
    C(nv action install system image files), C(nv action boot-next system image other), one reboot - decided by the
    collection's core, so that a leaf runs exactly the release of the version matrix
    (C(gpufabric_matrix.switch_os); P(gpufabric.mlnx.switch_os_target#filter) gives O(release), O(url) and
    O(sha256)).
  - When the switch runs O(release), nothing else is read or written. A downgrade is refused before anything
    changes, naming both releases, unless O(allow_downgrade=true).
  - When the other partition already holds O(release), nothing is fetched or installed (boot-next and one reboot).
  - Otherwise the image is fetched from O(url) and the fetch waited for (the switch's C(action_error) or
    C(action_failed) status fails the task, as does O(action_timeout)). The fetched file must be listed by the
    switch; when the switch lists its release or its sha256, they must be O(release) and O(sha256) - checked BEFORE
    the install. After the install the other partition must hold O(release).
  - The configuration must survive the reboot. Changes that are applied but not saved are saved first
    (O(save_before_reboot)); with O(save_before_reboot=false) they fail the task before the fetch, naming what is
    unsaved. The startup configuration is recorded, the other partition set to boot next, the switch rebooted ONCE,
    and the module waits (refused connections and HTTP 502 are expected meanwhile) until the switch answers again
    within O(reboot_timeout). Then the running release must be O(release) and the applied configuration the recorded
    startup one; otherwise the task fails naming the paths that differ.
  - Check mode reads the release and the partitions only and returns the actions the run would take; it sends
    nothing that changes the switch.
  - Runs over C(ansible.netcommon.httpapi) (or C(ansible.netcommon.network_cli), see the notes) with
    C(ansible_network_os=gpufabric.mlnx.nvue). The whole upgrade runs
    in one task, for up to O(action_timeout) twice plus O(reboot_timeout) seconds; each request is short, so
    C(ansible_command_timeout) does not need raising.
notes:
  - "Over C(ansible.netcommon.network_cli) (C(nv) over SSH) each action is one C(nv action ...) command that waits for
    its end, so C(ansible_command_timeout) must cover the image's download and install. The reboot of a real switch
    closes the SSH session; whether network_cli's persistent connection reconnects within the task is not tested
    (the emulator's reboot keeps SSH up) - prefer C(ansible.netcommon.httpapi) for this module."
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.full
attributes:
  check_mode:
    details: Reads the running release and the image partitions; returns the predicted actions; changes nothing.
options:
  release:
    description: The release to run, V(N.N.N) as C(nv show system version) prints C(product-release), e.g. V(5.11.0).
    type: str
    required: true
  url:
    description:
      - Where the switch fetches the image, V(http://) or V(https://) with a path ending in the image file name
        (V(http://mirror.example/cumulus/cumulus-linux-5.11.0-mlx-amd64.bin)), or V(file:///path/IMAGE.bin) for an
        image already on the switch. No query, fragment or credentials.
      - Not needed when the switch's other partition already holds O(release) (a roll back to the release it ran
        before - boot-next and one reboot); without it any other change fails naming the partition, before anything
        changes.
    type: str
  sha256:
    description: The sha256 of the image file, 64 hex digits (a V(sha256:) prefix is accepted).
    type: str
    required: true
  allow_downgrade:
    description: Install O(release) also when the switch runs a newer one (the install is then forced).
    type: bool
    default: false
  save_before_reboot:
    description:
      - Save applied but unsaved configuration changes (C(nv config save)) before the reboot, which would lose them.
      - With V(false), unsaved changes fail the task before anything is fetched.
    type: bool
    default: true
  action_timeout:
    description: Seconds to wait for the fetch, and again for the install, 1-86400.
    type: int
    default: 1800
  reboot_timeout:
    description: Seconds to wait for the switch to answer again after the reboot, 1-86400.
    type: int
    default: 900
  poll_interval:
    description: Seconds between two reads of an action's state or of a rebooting switch, more than 0 and at most 60.
    type: float
    default: 5.0
seealso:
  - plugin: gpufabric.mlnx.switch_os_target
    plugin_type: filter
  - module: gpufabric.mlnx.nvue_info
"""

EXAMPLES = r"""
- name: The pinned switch OS of the matrix
  gpufabric.mlnx.nvue_image:
    release: "{{ __os.release }}"
    url: "{{ __os.url }}"
    sha256: "{{ __os.sha256 }}"
    allow_downgrade: "{{ __os.allow_downgrade }}"
  vars:
    __os: "{{ __leaf.system.release | gpufabric.mlnx.switch_os_target(__leaf.image, gpufabric_matrix,
              gpufabric_switch_image_base_url | default(omit)) }}"
  when: __os.action in ['upgrade', 'boot']

- name: One release, given by hand
  gpufabric.mlnx.nvue_image:
    release: "5.11.0"
    url: http://mirror.example/cumulus/cumulus-linux-5.11.0-mlx-amd64.bin
    sha256: 09aeb9d4dbbd12cf01f140a20ea851575e23b37c04985d9d79a4a1ff5d8903ec
    reboot_timeout: 1200
"""

RETURN = r"""
release_before:
  description: The release the switch ran when the task started.
  returned: always
  type: str
  sample: "5.9.1"
release:
  description: The pinned release, which the switch runs now (in check mode, the one it would run).
  returned: always
  type: str
  sample: "5.11.0"
actions:
  description:
    - What was done, in order, out of V(fetch), V(install), V(boot-next), V(reboot); in check mode what would be.
    - Empty when the switch already ran O(release).
  returned: always
  type: list
  elements: str
  sample: [fetch, install, boot-next, reboot]
reboots:
  description: The reboots made, 0 or 1 (in check mode, predicted).
  returned: always
  type: int
  sample: 1
partition:
  description: The partition booted (in check mode, the one to boot); null when nothing changes.
  returned: always
  type: str
  sample: "2"
saved:
  description: Whether unsaved configuration changes were saved before the reboot.
  returned: always
  type: bool
sha256_verified:
  description: Whether the switch listed the fetched file's sha256 (and it was O(sha256)).
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_cli import switch_for
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_image import upgrade

ARGUMENT_SPEC = dict(
    release=dict(type="str", required=True),
    url=dict(type="str"),
    sha256=dict(type="str", required=True, no_log=False),
    allow_downgrade=dict(type="bool", default=False),
    save_before_reboot=dict(type="bool", default=True),
    action_timeout=dict(type="int", default=1800),
    reboot_timeout=dict(type="int", default=900),
    poll_interval=dict(type="float", default=5.0),
)


def main():
    module = ansible_module(AnsibleModule, argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    for option in ("action_timeout", "reboot_timeout"):
        if not 1 <= params[option] <= 86400:
            module.fail_json(msg="%s is %s (allowed: 1 to 86400 seconds)" % (option, params[option]), parameter=option)
    if not 0 < params["poll_interval"] <= 60:  # also refuses nan and inf
        module.fail_json(msg="poll_interval is %s (allowed: more than 0, at most 60 seconds)" % params["poll_interval"],
                         parameter="poll_interval")
    try:
        switch = switch_for(module)
        result = upgrade(switch, params["release"], params["url"], params["sha256"],
                         allow_downgrade=params["allow_downgrade"], save_before_reboot=params["save_before_reboot"],
                         check_mode=module.check_mode, action_timeout=params["action_timeout"],
                         reboot_timeout=params["reboot_timeout"], interval=params["poll_interval"])
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())
    module.exit_json(**result)


if __name__ == "__main__":
    main()
