#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: mlxconfig
short_description: Set NVIDIA ConnectX/BlueField NV configuration idempotently (mlxconfig / mstconfig)
version_added: 0.1.0
description:
  - Brings the non-volatile (next-boot) configuration of NVIDIA NICs and DPUs to the values given in O(params),
    with C(mlxconfig) from NVIDIA Firmware Tools or C(mstconfig) from mstflint.
  - Reads each device with ONE C(-e query) (default, current and next-boot values), compares with one table of
    normalisers (V(True), V(true), V(1) and V(True(1\)) are the same value; so are V(ETH), V(eth), V(2) and V(ETH(2\))),
    and runs ONE C(set) per device with only the parameters that differ. Parameters not named are never written.
  - Values are written for the next boot; the module reports RV(devices[].pending_reset) when next-boot differs
    from the running configuration (for any parameter, named or not). Activate with M(gpufabric.mlnx.mlx_fwreset)
    or a reboot.
  - Devices of one host are read and written in parallel. Bad input (an unknown parameter, a value the parameter
    cannot take, a device that is not there) fails the task before any device is written.
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.full
  - gpufabric.mlnx._attributes.tools
options:
  device:
    description:
      - Devices to configure. Each is a PCI address (V(18:00.0) or V(0000:18:00.0) - bus, device 00-1f, function
        0-7), an RDMA device name (V(mlx5_0); passed to the tool as written), an MST device path as MFT's C(mst start)
        creates it (V(/dev/mst/mt4129_pciconf0); MFT only - refused with O(tool=mstflint), or with O(tool=auto) where
        only mstflint is installed), or V(all) for function 0 of every NVIDIA card.
      - Anything else (a short address such as V(18:00), a function above 7, a word starting with C(-), a blank, a
        shell character, any other path) is refused before any tool runs.
      - Both functions of a dual-port card share the global parameters; port parameters carry C(_P1)/C(_P2).
    type: list
    elements: str
    aliases: [devices]
  part_number:
    description:
      - Select function 0 of every card whose VPD part number is one of these (an C(_Ax) revision suffix is ignored).
      - Each letters, digits and C(-) with an optional C(_Ax) suffix (V(MCX75310AAS-NEAT), V(900-9D3B6-00CV-AA0)); an
        empty or other value is refused before any tool runs (it would read every card's VPD and match none).
    type: list
    elements: str
    aliases: [part_numbers]
  params:
    description:
      - Desired next-boot values, a mapping of parameter name to value. Names as C(mlxconfig) prints them
        (case-insensitive), port parameters with C(_P1)/C(_P2), array elements as C(NAME[3]), or C(NAME[0..7])
        for one value on a range. Indexes are 0-255 (the largest NV array of the cards in the repository's real
        captures is C(Array[0..15])), so a range such as C(NUM_OF_VFS[0..999999999]) is refused before it is expanded.
      - Values as YAML booleans, numbers, names (any case) or the printed form C(NAME(n\)); one word of ASCII letters,
        digits and the characters C(_.:+-/(\)). A list or a mapping is refused. Every name and value is checked before any
        tool runs, with the rule the matrix check uses for NV profiles.
      - Null resets the parameter to the firmware's default (the C(-e q) Default column) - how a parameter taken out of
        a profile is given back; a parameter whose default the device does not report is refused, naming it.
      - Required unless O(configs) is given.
    type: dict
  configs:
    description:
      - Several sets of values in ONE task, each for its own devices (for example one per NV profile), so every
        device of the host is read and written at the same time. Instead of O(device)/O(part_number)/O(params).
      - A device selected by two entries is refused before anything is written.
    type: list
    elements: dict
    suboptions:
      name:
        description: A name for the set (a profile name), returned as RV(devices[].config) and used in errors.
        type: str
      device:
        description: As O(device).
        type: list
        elements: str
        aliases: [devices]
      part_number:
        description: As O(part_number).
        type: list
        elements: str
        aliases: [part_numbers]
      params:
        description: As O(params).
        type: dict
        required: true
  profiles:
    description:
      - Named NV parameter sets (C(gpufabric_nic_config_profiles), the matrix's C(nv_profiles)), a mapping of profile
        name to O(params). With O(assignments) each card of the host gets the first profile whose assignment matches
        it - what the P(gpufabric.mlnx.nv_configs#filter) filter gives as O(configs) - and the task returns which
        cards then wait for a reset as RV(ansible_facts) (what the P(gpufabric.mlnx.nic_config#role) role runs as its
        one task). Instead of O(configs)/O(device)/O(part_number)/O(params).
      - No assignment matching a card - nothing is read with the NV tool and nothing is written.
    type: dict
  assignments:
    description:
      - With O(profiles), which card gets which profile, tried in order, the first match wins; each item has
        C(profile) and one or more of C(part_numbers), C(pci), C(device_types) (docs/matrix.md).
    type: list
    elements: dict
  nic_devices:
    description:
      - With O(profiles), the host's NVIDIA devices as M(gpufabric.mlnx.mlx_info) returns them (RV(gpufabric.mlnx.mlx_info#module:devices);
        the preflight's C(gpufabric_nic_devices)) to match the assignments against. Not given - read here, as
        M(gpufabric.mlnx.mlx_info) reads them (only when there is an assignment).
    type: list
    elements: dict
  output_format:
    description:
      - How to read the query. V(json) uses mlxconfig's C(-j FILE) (MFT only), V(text) parses the table,
        V(auto) uses JSON with MFT and falls back to text when the tool does not know C(-j).
    type: str
    choices: [auto, json, text]
    default: auto
seealso:
  - module: gpufabric.mlnx.mlx_info
  - module: gpufabric.mlnx.mlx_firmware
  - name: mlxconfig - Changing Device Configuration Tool (NVIDIA MFT documentation)
    description: The tool this module runs, its parameters and their meaning.
    link: https://docs.nvidia.com/networking/display/mftv4300/mlxconfig+%E2%80%93+changing+device+configuration+tool
"""

EXAMPLES = r"""
- name: RoCE compute NICs - Ethernet, SR-IOV off, relaxed ordering on
  gpufabric.mlnx.mlxconfig:
    part_number: [MCX75310AAS-NEAT]
    params:
      LINK_TYPE_P1: ETH
      SRIOV_EN: false
      ADVANCED_PCI_SETTINGS: true
      PCI_WR_ORDERING: per_mkey
  register: nv

- name: Tell what needs a reset
  ansible.builtin.debug:
    msg: "{{ nv.devices | selectattr('pending_reset') | map(attribute='device') | list }}"

- name: Every NV profile of the host in one task (all devices read and written at the same time)
  gpufabric.mlnx.mlxconfig:
    configs:
      - name: roce_compute
        part_number: [MCX75310AAS-NEAT]
        params: {LINK_TYPE_P1: ETH, SRIOV_EN: false}
      - name: storage
        device: ["0000:29:00.0", "0000:aa:00.0"]
        params: {LINK_TYPE_P1: ETH, LINK_TYPE_P2: ETH}

- name: One device by PCI address, with the inbox mstflint tools
  gpufabric.mlnx.mlxconfig:
    device: ["0000:18:00.0"]
    tool: mstflint
    params:
      NUM_OF_VFS: 8
      SRIOV_EN: true
"""

RETURN = r"""
devices:
  description: One entry per device, in the order selected.
  returned: always
  type: list
  elements: dict
  contains:
    device:
      description: The device as passed to the tool (full PCI address when given as one).
      type: str
      sample: "0000:18:00.0"
    device_type:
      description: Device type as the tool prints it.
      type: str
      sample: ConnectX7
    name:
      description: The device name (part number, or an OEM name) as the tool prints it.
      type: str
      sample: MCX75310AAS-NEA_Ax
    config:
      description: The O(configs[].name) that selected this device (the entry's position when it has no name).
      type: str
      returned: when O(configs) is used
      sample: roce_compute
    changed:
      description: Whether a C(set) was (or in check mode would be) run on this device.
      type: bool
    set:
      description: The parameters written and the words passed to the tool.
      type: dict
      sample: {SRIOV_EN: "False"}
    before:
      description: Next-boot values of the named parameters before the task.
      type: dict
      sample: {SRIOV_EN: "True(1)"}
    after:
      description: Next-boot values of the named parameters after the task, as re-read from the device (check mode shows the values that would be written).
      type: dict
      sample: {SRIOV_EN: "False(0)"}
    current:
      description: Running values of the named parameters.
      type: dict
    not_applicable:
      description:
        - The named parameters the device does not have and that do not apply to it, each with the rule that decides
          it; they are neither written nor an error. One rule - C(LINK_TYPE_P<n>=ETH) on a card without any
          C(LINK_TYPE) parameter (an Ethernet-only card such as the ConnectX-6 Dx EN, whose ports are Ethernet), so
          one profile serves VPI and Ethernet-only cards. Any other parameter the device lacks fails the task.
      type: dict
      sample: {LINK_TYPE_P1: "n/a: Ethernet-only card has no LINK_TYPE (its ports are Ethernet)"}
    pending:
      description: Every parameter whose next-boot value differs from its running value, named or not.
      type: dict
      sample: {SRIOV_EN: {current: "True(1)", next: "False(0)"}}
    pending_reset:
      description: True when the device needs a firmware reset or reboot to run its next-boot configuration.
      type: bool
configs:
  description: With O(profiles), the O(configs) the assignments gave for the host's cards (one per profile).
  returned: when O(profiles) is given
  type: list
  elements: dict
  sample: [{name: roce_compute, device: ["0000:18:00.0"], part_number: null, params: {LINK_TYPE_P1: ETH}}]
ansible_facts:
  description: With O(profiles), the facts the P(gpufabric.mlnx.activate#role) role reads (docs/role_facts.md).
  returned: when O(profiles) is given and the task succeeds
  type: dict
  contains:
    gpufabric_nv_pending_devices:
      description: PCI addresses of the cards whose NV configuration waits for a reset (in check mode, would).
      type: list
      elements: str
      sample: ["0000:18:00.0"]
    gpufabric_nv_pending_reset:
      description: At least one card's NV configuration waits for a reset.
      type: bool
failed_devices:
  description: Devices whose write failed, with the tool's words.
  returned: when a device failed
  type: dict
parameter:
  description: The parameter a failure is about (unknown name, value not allowed).
  returned: on failure, when the failure concerns one parameter
  type: str
  sample: LINK_TYPE_P1
allowed:
  description: What the parameter accepts (from the device's own listing), or the closest parameter names the device has.
  returned: on failure, when known
  type: raw
  sample: [ETH, IB]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _devices as devices_
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._info import gather
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mlxconfig import converge_each, normalize_desired, per_device
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils._profiles import configs as profile_configs
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import TOOL_ARGSPEC, Runner

CONFIG_SPEC = dict(
    name=dict(type="str"),
    device=dict(type="list", elements="str", aliases=["devices"]),
    part_number=dict(type="list", elements="str", aliases=["part_numbers"]),
    params=dict(type="dict", required=True),
)


def main():
    module = ansible_module(
        AnsibleModule,
        argument_spec=dict(
            device=dict(type="list", elements="str", aliases=["devices"]),
            part_number=dict(type="list", elements="str", aliases=["part_numbers"]),
            params=dict(type="dict"),
            configs=dict(type="list", elements="dict", options=CONFIG_SPEC,
                         required_one_of=[("device", "part_number")]),
            profiles=dict(type="dict"),
            assignments=dict(type="list", elements="dict"),
            nic_devices=dict(type="list", elements="dict"),
            output_format=dict(type="str", default="auto", choices=["auto", "json", "text"]),
            **TOOL_ARGSPEC
        ),
        required_one_of=[("device", "part_number", "configs", "profiles")],
        required_by={"device": "params", "part_number": "params", "assignments": "profiles", "nic_devices": "profiles"},
        mutually_exclusive=[("configs", "device"), ("configs", "part_number"), ("configs", "params"),
                            ("profiles", "configs"), ("profiles", "device"), ("profiles", "part_number"),
                            ("profiles", "params")],
        supports_check_mode=True,
    )
    params = module.params
    by_profile = params["profiles"] is not None
    try:
        if by_profile:
            params["configs"] = _profile_configs(params)
        configs = params["configs"] if params["configs"] is not None else [
            dict(name=None, device=params["device"], part_number=params["part_number"], params=params["params"])]
        for index, config in enumerate(configs):   # every device name and NV parameter, before any tool runs
            where = "configs[%d]" % index if params["configs"] is not None else None
            devices_.check_names(config["device"], "%s.device" % where if where else "device")
            devices_.check_part_numbers(config["part_number"], "%s.part_number" % where if where else "part_number")
            normalize_desired(config["params"], option="%s.params" % where if where else "params")
        runner = Runner(tool=params["tool"], timeout=params["timeout"])
        for index, config in enumerate(configs):   # an MST path needs MFT: checked before any tool runs
            devices_.check_tool(config["device"], runner,
                                "configs[%d].device" % index if params["configs"] is not None else "device")
        found = None
        if any(devices_.needs_discovery(c["device"], c["part_number"]) for c in configs):
            found = devices_.discover(runner)
        wanted = per_device(configs, lambda c: devices_.select(c["device"], c["part_number"], found))
        if params["configs"] is None:
            wanted = {device: (None, desired) for device, (_name, desired) in wanted.items()}
        results = converge_each(runner, wanted, check_mode=module.check_mode, output_format=params["output_format"])
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())

    done = [res for _dev, res, err in results if err is None]
    errors = [(dev, err) for dev, _res, err in results if err is not None]
    failed = {dev: str(err) for dev, err in errors}
    out = dict(
        changed=any(r["changed"] for r in done),
        devices=done,
        diff=dict(before={r["device"]: r["before"] for r in done}, after={r["device"]: r["after"] for r in done}),
    )
    if by_profile:
        out["configs"] = params["configs"]
    if failed:
        first = errors[0][1].fail_kwargs() if isinstance(errors[0][1], MlnxError) else {}
        details = {k: v for k, v in first.items() if k in ("parameter", "allowed")}
        module.fail_json(msg="NV configuration failed on %d of %d devices: %s"
                         % (len(failed), len(results), "; ".join(failed.values())), failed_devices=failed,
                         **dict(out, **details))
    if by_profile:
        pending = [r["device"] for r in done if r["pending_reset"]]
        out["ansible_facts"] = dict(gpufabric_nv_pending_devices=pending, gpufabric_nv_pending_reset=bool(pending))
    module.exit_json(**out)


def _profile_configs(params):
    """``configs`` from ``profiles`` and ``assignments`` for the host's cards (read here unless ``nic_devices`` are
    given; not read when nothing is assigned)."""
    assignments = params["assignments"] or []
    found = params["nic_devices"]
    if found is None:
        runner = Runner(tool=params["tool"], timeout=params["timeout"])
        found = gather(runner, host=runner.host)["devices"] if assignments else []
    return [dict(name=c["name"], device=c["device"], part_number=None, params=c["params"])
            for c in profile_configs(found, params["profiles"], assignments)]


if __name__ == "__main__":
    main()
