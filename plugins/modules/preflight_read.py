#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: preflight_read
short_description: What the preflight reads on a GPU server, in one task - its NVIDIA devices and the validation gate's tools
version_added: 0.1.0
description:
  - The host side of the gpufabric.mlnx.preflight role, one task per server (not one per read). Reads only.
  - The NVIDIA devices, as M(gpufabric.mlnx.mlx_info) reads them (the same code, C(module_utils/_info.py)), returned as
    RV(info) and as the fact C(gpufabric_nic_devices), which the firmware and nic_config roles use instead of reading
    the host again.
  - With O(tools) - which of the validation gate's tools are on the host's PATH, as M(gpufabric.mlnx.fabric_test)
    V(tools) reads them (the same code), with the management address mpirun reaches the host by (C(with_mgmt) of O(tools)).
    Not read when the devices could not be read (the preflight lists that host already).
  - A read that fails does not fail the task - C(failed) and C(msg) of RV(info) say why, and the preflight's check
    lists it with every other problem of every host at once. An unreachable host is unreachable, as for any task.
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.info_module
options:
  tool:
    description: Which tools read the devices (as M(gpufabric.mlnx.mlx_info)'s O(gpufabric.mlnx.mlx_info#module:tool)).
    type: str
    default: auto
    choices: [auto, mft, mstflint]
  timeout:
    description: Seconds each tool may run.
    type: int
    default: 900
  tools:
    description:
      - The validation gate's tools to look for, as M(gpufabric.mlnx.fabric_test) V(tools) takes them - C(paths) (extra
        directories of its PATH), C(nccl) (C(test), C(launcher), C(node); empty without NCCL), C(with_mgmt) and
        C(mgmt_interface). Unset - not looked for (the gate does not run).
    type: dict
"""

EXAMPLES = r"""
- name: Read the devices and the gate's tools
  gpufabric.mlnx.preflight_read:
    tools:
      paths: [/opt/perftest/bin]
      nccl: {test: all_reduce_perf, launcher: mpirun}
      with_mgmt: true
  register: preflight
"""

RETURN = r"""
info:
  description:
    - The devices as M(gpufabric.mlnx.mlx_info) returns them (C(devices), C(tool), C(sources)), or C(failed) and
      C(msg) when they could not be read.
  returned: always
  type: dict
tools:
  description: The gate's tools as M(gpufabric.mlnx.fabric_test) V(tools) returns them (C(missing), C(mgmt), ...).
  returned: when O(tools) is set and the devices were read
  type: dict
ansible_facts:
  description: The devices read, for the rest of the rollout.
  returned: when the devices were read
  type: dict
  contains:
    gpufabric_nic_devices:
      description: The C(devices) of RV(info) - the firmware and nic_config roles use them instead of reading the host again.
      type: list
      elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._fabric_test import run as gate_step
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
from ansible_collections.gpufabric.mlnx.plugins.module_utils._info import gather
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import TOOL_ARGSPEC, Runner


def main():
    module = ansible_module(AnsibleModule, argument_spec=dict(tools=dict(type="dict"), **TOOL_ARGSPEC),
                            supports_check_mode=True)
    out = {"changed": False}
    try:
        runner = Runner(tool=module.params["tool"], timeout=module.params["timeout"])
        info = gather(runner, check_mode=module.check_mode, host=runner.host)
    except MlnxError as err:
        out["info"] = dict(err.fail_kwargs(), failed=True)
        module.exit_json(**out)
    for warning in info.pop("warnings"):
        module.warn(warning)
    for device in info["devices"]:
        if device["errors"]:
            module.warn("%s: %s" % (device["address"], "; ".join(device["errors"])))
    out.update(info=info, ansible_facts={"gpufabric_nic_devices": info["devices"]})
    if module.params["tools"] is not None:
        tools = dict(module.params["tools"], action="tools")
        try:
            out["tools"] = gate_step(Host(timeout=60), tools, check_mode=module.check_mode)
        except MlnxError as err:
            out["tools"] = dict(err.fail_kwargs(), failed=True)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
