#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: mlx_fwreset
short_description: Activate pending NIC firmware and NV configuration with one firmware reset per host (mlxfwreset / mstfwreset)
version_added: 0.1.0
description:
  - Activates what is waiting on NVIDIA ConnectX/BlueField devices - firmware burned but not running, NV configuration
    whose next-boot value differs from the running one - with C(mlxfwreset) from NVIDIA Firmware Tools or
    C(mstfwreset) from mstflint, without rebooting the host.
  - Reads every card at once - ONE C(mlxfwreset -d DEV q) (the reset levels the card supports), ONE C(flint -d DEV q)
    (burned "FW Version" against "FW Version(Running)") and ONE C(mlxconfig -d FN -e q) per PCI function (next-boot
    against current values).
  - Chooses ONE reset level for the host - with O(level=auto) the lowest level that activates everything pending and
    that every card to be reset supports - and resets every card that has something pending, all cards at once, each
    through its function 0 (one reset activates both functions of a card). A host with nothing pending is not reset.
  - When a card that must be reset does not support that level, nothing is reset on the host; the module returns
    RV(reset_supported=false) and RV(reboot_required=true), naming the card and the level in RV(unsupported), so the
    caller can reboot instead (or report the host pending activation). It fails only with O(fail_if_unsupported=true).
  - After the reset every card is checked - still listed by C(lspci), running firmware equal to the burned one, no NV
    parameter still pending - and the task fails naming each card that is not.
  - With O(state=query) the module reports the supported levels, what is pending and what a reset would do, and
    changes nothing.
  - As a task (its action) it is the host's ONE activation, what the P(gpufabric.mlnx.activate#role) role runs. No
    reset when O(reboot_required) says a reboot is due anyway. When a reboot is needed and O(allow_reboot=true), the
    devices are read, the host is rebooted with M(ansible.builtin.reboot) and every device is read again (the task
    fails, naming the host, when one is missing or something is still pending). The activation is returned as
    RV(ansible_facts) (C(gpufabric_activation) - V(none), V(fwreset), V(reboot) or V(pending), a reboot that was
    needed but not allowed).
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.no_diff
  - gpufabric.mlnx._attributes.tools
attributes:
  check_mode:
    details: Reads every card and reports what would be reset at which level (C(changed) predicts the reset); resets nothing.
  idempotent:
    details: A reset clears what is pending, so a second run finds nothing pending and resets nothing.
options:
  device:
    description:
      - Devices to activate. Each is a PCI address (V(18:00.0) or V(0000:18:00.0) - bus, device 00-1f, function 0-7),
        an RDMA device name (V(mlx5_0); passed to the tool as written), an MST device path (V(/dev/mst/mt4129_pciconf0);
        MFT only), or V(all) for every NVIDIA card (function 0 of each); anything else is refused before any tool
        runs.
      - Naming either function of a card selects the whole card; it is reset once, through function 0.
    type: list
    elements: str
    default: [all]
    aliases: [devices]
  state:
    description:
      - V(reset) resets the cards that need it (see O(only_if_pending)).
      - V(query) only reports supported levels, pending changes and the plan; nothing is changed.
    type: str
    choices: [query, reset]
    default: reset
  level:
    description:
      - The mlxfwreset reset level, V(auto) or a number.
      - V(auto) uses the lowest level that activates every pending change and that every card to be reset supports -
        V(0) (live-patch, the driver, PCI link and network link stay up) when only firmware is pending and every such
        card reports that it can live-patch it, else V(3) (driver restart and PCI reset), the usual one.
      - V(0) never activates NV configuration (it is read when the firmware boots). V(1) (immediate reset) resets
        only the Arm side of a BlueField and activates neither; it is accepted only for forced resets
        (O(only_if_pending=false)) of cards with nothing pending.
      - V(4) (warm reboot) and V(5) (cold reboot) restart the whole host and are refused; when a card supports only
        those, the module returns RV(reboot_required) so the caller reboots in a controlled way (M(ansible.builtin.reboot)).
    type: raw
    default: auto
  only_if_pending:
    description:
      - Reset a card only when something is pending on it (burned firmware not running, or NV configuration whose
        next-boot value differs from the current one). A compliant host gets no reset.
      - V(false) resets every selected card.
    type: bool
    default: true
  fail_if_unsupported:
    description:
      - Fail the task when a card that needs a reset does not support the level (RV(reset_supported=false)).
      - By default the module succeeds and returns RV(reboot_required=true) instead.
    type: bool
    default: false
  mgmt_interface:
    description:
      - The interface that carries the management connection (a bond, VLAN or bridge is followed down to its ports).
      - By default it is found as the ofed role does it - the interface holding O(mgmt_address) or the address SSH
        connected to, and the interface of the default route.
    type: str
  mgmt_address:
    description: The address Ansible reaches the host on (the role passes C(ansible_host)), to find O(mgmt_interface).
    type: str
  allow_mgmt_reset:
    description:
      - Reset a card that carries the management connection. By default such a card is never reset at a level that
        takes its link down (every level but V(0)); the host gets RV(reboot_required) instead.
    type: bool
    default: false
  predicted_pending:
    description:
      - In check mode, the cards (PCI addresses) that earlier steps of the run would leave pending - nothing was
        burned or set, so the cards cannot show it yet (the firmware and nic_config roles'
        C(gpufabric_firmware_pending_devices) and C(gpufabric_nv_pending_devices)). They are planned as if pending,
        so C(changed), RV(level) and the activation predict what the real run does.
      - Not used outside check mode, where every card is read as it is.
    type: list
    elements: str
    default: []
  reboot_required:
    description:
      - Something else waits for a reboot (a new driver, a kernel command line the host did not boot with) - no card
        is reset - the reboot activates everything - and the host is rebooted (O(allow_reboot)) or reported pending.
    type: bool
    default: false
  allow_reboot:
    description:
      - When a reboot is needed (O(reboot_required), or a card that cannot be reset), reboot the host in this task
        with M(ansible.builtin.reboot) and read every device again afterwards. V(false) - the activation is
        V(pending) and the caller reports it.
    type: bool
    default: false
  reboot_timeout:
    description: With O(allow_reboot), seconds to wait for the host to come back (M(ansible.builtin.reboot)'s C(reboot_timeout)).
    type: int
    default: 1800
  reboot_command:
    description: With O(allow_reboot), the command M(ansible.builtin.reboot) runs instead of its default.
    type: str
  boot_time_command:
    description: With O(allow_reboot), a command whose output changes on every boot, for M(ansible.builtin.reboot).
    type: str
notes:
  - A reset drops the card's links for a few seconds and restarts its driver instances. The card that carries the
    management connection is found (O(mgmt_interface)) and never reset unless O(allow_mgmt_reset=true); when the
    management interface cannot be found the module warns and resets.
seealso:
  - module: gpufabric.mlnx.mlx_firmware
  - module: gpufabric.mlnx.mlxconfig
  - module: gpufabric.mlnx.mlx_info
  - module: ansible.builtin.reboot
  - name: mlxfwreset - Loading Firmware on 5th Generation Devices Tool (NVIDIA MFT documentation)
    description: The tool this module runs, its reset levels, types and sync modes.
    link: https://docs.nvidia.com/networking/display/mftv4330/mlxfwreset+%E2%80%93+loading+firmware+on+5th+generation+devices+tool
"""

EXAMPLES = r"""
- name: Activate pending firmware / NV configuration, one reset per host
  gpufabric.mlnx.mlx_fwreset:
  register: activation

- name: Reboot when a card cannot be reset without one
  ansible.builtin.reboot:
  when: activation.reboot_required

- name: What would be reset, and at which level (changes nothing)
  gpufabric.mlnx.mlx_fwreset:
    state: query
  register: plan

- name: Show cards with pending changes
  ansible.builtin.debug:
    msg: "{{ plan.devices | rejectattr('action', 'equalto', 'none') | map(attribute='device') | list }}"

- name: Two cards at level 3 with the inbox mstflint tools; fail if they cannot be reset
  gpufabric.mlnx.mlx_fwreset:
    device: ["0000:18:00.0", "0000:40:00.0"]
    level: 3
    tool: mstflint
    fail_if_unsupported: true
"""

RETURN = r"""
devices:
  description: One entry per card, in the order selected.
  returned: always
  type: list
  elements: dict
  contains:
    device:
      description: The card, as its function 0 (the device the reset runs on), or the name given when it is not a PCI address.
      type: str
      sample: "0000:18:00.0"
    functions:
      description: The PCI functions of the card whose NV configuration was read.
      type: list
      elements: str
      sample: ["0000:29:00.0", "0000:29:00.1"]
    supported_levels:
      description: The reset levels the card reports as supported (for its pending firmware).
      type: list
      elements: int
      sample: [3, 4]
    default_level:
      description: The level mlxfwreset would use by default.
      type: int
      sample: 3
    firmware:
      description: Burned and running firmware version before the task.
      type: dict
      sample: {burned: "28.43.1014", running: "28.42.1000"}
    pending:
      description: What was pending before the task.
      type: dict
      contains:
        firmware:
          description: The burned firmware is not the running one.
          type: bool
        nv_config:
          description: NV parameters whose next-boot value differs from the current one (on any function of the card).
          type: list
          elements: str
      sample: {firmware: true, nv_config: [SRIOV_EN]}
    action:
      description:
        - V(reset) - the card was (in check mode and with O(state=query) would be) reset.
        - V(none) - not reset (nothing pending, or the host needs a reboot because of another card; see RV(devices[].reason)).
        - V(unsupported) - the card needs a reset at RV(level) but does not support it.
        - V(management) - the card carries the management connection and RV(level) takes its link down (see
          O(allow_mgmt_reset)).
      type: str
      choices: [reset, none, unsupported, management]
    reason:
      description: Why the card gets this action.
      type: str
      sample: activates the pending firmware and NV configuration
    level:
      description: The level the card was (would be) reset at, or the level it lacks; null with RV(devices[].action=none).
      type: int
      sample: 3
    after:
      description:
        - Firmware and pending state after the task, as re-read after a reset (predicted in check mode); the state
          before when the card was not reset. Null when the card failed or disappeared.
      type: dict
      sample: {firmware: {burned: "28.43.1014", running: "28.43.1014"}, pending: {firmware: false, nv_config: []}}
level:
  description: The reset level used (or that would be used, or that is missing when RV(reset_supported=false)); null when nothing needs a reset.
  returned: always
  type: int
  sample: 3
reset_supported:
  description: Every card that needs activation can be reset at RV(level) (also true when nothing is pending).
  returned: always
  type: bool
reboot_required:
  description: Something is pending that only a reboot can activate on this host (no card was reset).
  returned: always
  type: bool
management:
  description:
    - The cards that need a reset but carry the management connection, with its interfaces on them; none of the
      host's cards is reset and RV(reboot_required) is true.
  returned: always
  type: list
  elements: dict
  sample: [{device: "0000:29:00.0", interfaces: [enp41s0f0np0]}]
mgmt:
  description: Which interfaces carry the management connection, how they were found, and their physical ports.
  returned: unless O(allow_mgmt_reset=true)
  type: dict
  sample: {interfaces: [bond0], source: the default route, on_mlx5: true, evidence: {enp41s0f0np0: driver mlx5_core}}
unsupported:
  description: The cards that need a reset but do not support RV(level), with the levels they do support.
  returned: always
  type: list
  elements: dict
  sample: [{device: "0000:18:00.0", level: 3, supported_levels: [4]}]
msg:
  description: One line saying what was done.
  returned: always
  type: str
  sample: reset 0000:18:00.0, 0000:40:00.0 at level 3 (driver restart and PCI reset)
rebooted:
  description: The task rebooted the host (in check mode, would).
  returned: always
  type: bool
reset:
  description:
    - The firmware reset's own result (RV(devices), RV(level), RV(msg), ...), as the module returned it to the task's
      action; null when O(reboot_required) skipped it.
  returned: always
  type: dict
ansible_facts:
  description: The activation of the host (docs/role_facts.md); the rails and roce_qos roles read it in check mode.
  returned: when the task succeeds
  type: dict
  contains:
    gpufabric_activation:
      description:
        - C(method) - V(none), V(fwreset), V(reboot) or V(pending) (a reboot is needed and O(allow_reboot) is
          false); C(level) - the firmware reset level, or null. In check mode, the activation the run would do.
      type: dict
      sample: {method: fwreset, level: 3}
failed_devices:
  description: Cards whose reset failed, that disappeared, or that still have something pending after the reset, with what happened.
  returned: on failure after a reset
  type: dict
  sample: {"0000:40:00.0": "0000:40:00.0: disappeared after the level 3 reset (lspci no longer lists it)"}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _devices as devices_
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError, ToolNotFound
from ansible_collections.gpufabric.mlnx.plugins.module_utils._fwreset import converge, mgmt_cards, normalize_level, summary
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mgmt import check_mgmt_interface
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import TOOL_ARGSPEC, Runner


def main():
    module = ansible_module(
        AnsibleModule,
        argument_spec=dict(
            device=dict(type="list", elements="str", default=["all"], aliases=["devices"]),
            state=dict(type="str", default="reset", choices=["query", "reset"]),
            level=dict(type="raw", default="auto"),
            only_if_pending=dict(type="bool", default=True),
            fail_if_unsupported=dict(type="bool", default=False),
            mgmt_interface=dict(type="str"),
            mgmt_address=dict(type="str"),
            allow_mgmt_reset=dict(type="bool", default=False),
            predicted_pending=dict(type="list", elements="str", default=[]),
            reboot_required=dict(type="bool", default=False),
            allow_reboot=dict(type="bool", default=False),
            reboot_timeout=dict(type="int", default=1800),
            reboot_command=dict(type="str"),
            boot_time_command=dict(type="str"),
            **TOOL_ARGSPEC
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        runner = Runner(tool=params["tool"], timeout=params["timeout"])
        check_mgmt_interface(params["mgmt_interface"])   # before any tool runs
        devices_.check_names(params["device"])
        devices_.check_names(params["predicted_pending"], "predicted_pending")
        devices_.check_tool(params["device"], runner)
        if params["reboot_required"] and params["state"] == "reset":
            module.exit_json(changed=False, devices=[], level=None, reset_supported=True, reboot_required=True,
                             unsupported=[], management=[], rebooted=False, reset=None,
                             msg="no reset: the host waits for a reboot anyway (reboot_required)")
        level = normalize_level(params["level"])
        names = params["device"]
        found = None
        if devices_.needs_discovery(names, None) or any(devices_.is_pci(n) for n in names):
            try:
                found = devices_.discover(runner)
            except ToolNotFound:
                if devices_.needs_discovery(names, None):
                    raise
        selected = devices_.select(names, None, found)
        protected, mgmt = {}, None
        if not params["allow_mgmt_reset"]:
            protected, mgmt = mgmt_cards(runner.host, interface=params["mgmt_interface"],
                                         address=params["mgmt_address"])
            if not mgmt["interfaces"]:
                module.warn("cannot tell which interface carries the management connection (no default route, and "
                            "no interface holds the address Ansible connects to); resetting without that guard - "
                            "set mgmt_interface")
        result = converge(runner, selected, discovered=found, state=params["state"], level=level,
                          only_if_pending=params["only_if_pending"], check_mode=module.check_mode, protected=protected,
                          predicted=params["predicted_pending"] if module.check_mode else ())
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())

    out = dict(
        changed=result["changed"],
        devices=result["devices"],
        level=result["level"],
        reset_supported=result["reset_supported"],
        reboot_required=result["reboot_required"],
        unsupported=result["unsupported"],
        management=result["management"],
        msg=summary(result, check_mode=module.check_mode),
    )
    if mgmt is not None:
        out["mgmt"] = mgmt
    if result["failed"]:
        out["failed_devices"] = result["failed"]
        out["msg"] = "activation failed on %d of %d devices: %s" % (
            len(result["failed"]), len([d for d in result["devices"] if d["action"] == "reset"]),
            "; ".join(result["failed"].values()))
        module.fail_json(**out)
    if result["unsupported"] and params["fail_if_unsupported"] and params["state"] == "reset":
        out["msg"] += ", and fail_if_unsupported is true"
        module.fail_json(**out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
