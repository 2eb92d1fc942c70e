#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: mlx_info
short_description: Inventory of the NVIDIA ConnectX/BlueField NICs and DPUs of a host
version_added: 0.1.0
description:
  - Lists every NVIDIA (vendor C(15b3)) NIC and DPU function of the host with its PCI address, C(/dev/mst) name,
    device type, part number, description, serial number and VPD, PSID, base MAC/GUID, firmware (burned,
    running, ROM images), netdevs and RDMA devices, port link layer and state, NUMA node, and PCIe link
    capability against link status. With O(nv_config=true) it adds the NV configuration (default, current and
    next-boot values) of every function.
  - Reads only. It never starts MST unless O(start_mst=true), and never writes to a device.
  - 'Where each fact comes from: C(lspci -D -d 15b3: -vv) (one run) gives the functions, VPD (part number,
    serial number, product name), NUMA node, physical slot and PCIe C(LnkCap)/C(LnkSta).
    C(mst status -v) (one run, MFT only, when C(mst) is installed) gives the device type and the RDMA and net names,
    and the C(/dev/mst) names when MST is started (when it is not, that is skipped silently). C(ibstat) or C(ibdev2netdev -v) (one run of one of them, when
    installed) gives the ports: C(ibstat) is used when C(mst) already tied RDMA names to PCI addresses, and gives
    link layer, port state, physical state and rate; otherwise C(ibdev2netdev -v) gives PCI address, RDMA name,
    netdev, port state and netdev state (no link layer or rate; the link layer is then read from
    C(/sys/class/infiniband) when present). C(flint -d PCI q) (C(mstflint) with mstflint; one run per card,
    on its lowest function) gives PSID, burned and running firmware, ROM versions, base MAC/GUID and security
    attributes, shared by the functions of the card. C(mlxconfig -d PCI -e q) (C(mstconfig); one run per
    function, only with O(nv_config=true)) gives the NV configuration.'
  - The runs after C(lspci) happen in parallel. A device a tool cannot open (for example C(flint) failing) is
    still listed from C(lspci), with RV(devices[].errors) carrying the tool's own words; the task does not fail
    for that unless O(fail_on_error=true).
  - This is an info module; it returns no C(ansible_facts). Use C(register) to keep the result (see EXAMPLES).
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.info_module
  - gpufabric.mlnx._attributes.tools
options:
  nv_config:
    description:
      - Also read the NV configuration of every function (one C(mlxconfig -e q) / C(mstconfig -e q) each) and
        return RV(devices[].nv_config) and RV(devices[].pending_nv).
    type: bool
    default: false
  start_mst:
    description:
      - With the MFT tools, run C(mst start) when MST is not started, to get the C(/dev/mst) names. This loads
        kernel modules on the host, so the task then reports C(changed); in check mode MST is not started.
      - By default MST that is not started is skipped silently (the devices are still listed, and the tools are
        given PCI addresses).
    type: bool
    default: false
  fail_on_error:
    description:
      - Fail the task when any device has RV(devices[].errors) (a tool could not open or read it). The result is
        returned with the failure.
    type: bool
    default: false
notes:
  - The PCIe link is RV(devices[].pcie.degraded) when C(LnkSta) trained narrower or slower than C(LnkCap) (for
    example x8 under x16, or 8GT/s under 16GT/s). C(lspci) needs root to read the link and VPD fields; without it
    they are V(null).
  - Tools are given PCI addresses (never C(/dev/mst) names), so MFT works whether or not MST is started.
  - PCIe bridges inside ConnectX-7 and BlueField-3 cards, the BlueField SoC management function and virtual
    functions are not listed.
seealso:
  - module: gpufabric.mlnx.mlxconfig
  - name: flint - Firmware Burning Tool (NVIDIA MFT documentation)
    description: The tool that reports PSID, firmware and ROM versions.
    link: https://docs.nvidia.com/networking/display/mftv4300/flint+%E2%80%93+firmware+burning+tool
"""

EXAMPLES = r"""
- name: Inventory the NICs
  gpufabric.mlnx.mlx_info:
  register: nics

- name: Cards whose firmware waits for a reset
  ansible.builtin.debug:
    msg: "{{ nics.devices | selectattr('fw_pending') | map(attribute='card') | unique | list }}"

- name: Every PCIe link trained below its capability
  ansible.builtin.assert:
    that: nics.summary.pcie_degraded == 0
    fail_msg: >-
      {{ nics.devices | selectattr('pcie.degraded') | map(attribute='address') | list }} run below
      their PCIe capability

- name: Keep it as a fact for later plays
  ansible.builtin.set_fact:
    gpufabric_nic_devices: "{{ nics.devices }}"

- name: With the NV configuration, fail when a tool cannot read a device
  gpufabric.mlnx.mlx_info:
    nv_config: true
    fail_on_error: true
  register: nics

- name: Parameters waiting for the next boot
  ansible.builtin.debug:
    msg: "{{ nics.devices | map(attribute='pending_nv') | list }}"
"""

RETURN = r"""
devices:
  description: One entry per NIC/DPU physical function, in PCI address order.
  returned: always
  type: list
  elements: dict
  contains:
    address:
      description: Full PCI address of the function.
      type: str
      sample: "0000:1a:00.0"
    function:
      description: PCI function number.
      type: int
      sample: 0
    card:
      description: PCI address of the card (without the function); the functions of one card share it.
      type: str
      sample: "0000:1a:00"
    mst:
      description: The C(/dev/mst) device (from C(mst status -v)); V(null) with mstflint or when MST is not started.
      type: str
      sample: /dev/mst/mt4129_pciconf0
    device_type:
      description: Device type token as C(mlxconfig) and C(mst) print it, from C(mst), else mapped from the lspci name
        or the PCI device id.
      type: str
      sample: ConnectX7
    part_number:
      description: Part number from VPD C([PN]) (else from C(flint)).
      type: str
      sample: MCX75310AAS-NEAT
    description:
      description: VPD product name, else the lspci device name.
      type: str
      sample: NVIDIA ConnectX-7 HHHL Adapter Card, 400GbE / NDR IB (default mode), Single-port OSFP
    serial_number:
      description: Serial number from VPD C([SN]).
      type: str
      sample: MT2314XZ0ABC
    vpd:
      description: Every VPD read-only field lspci prints, by keyword (C(PN), C(EC), C(SN), C(V0), ...).
      type: dict
      sample: {PN: MBF2M516A-EEEOT, EC: A4, SN: MT2050X00614, V0: PCIeGen4 x16}
    physical_slot:
      description: Physical slot from lspci.
      type: str
    driver:
      description: Kernel driver in use, from lspci.
      type: str
      sample: mlx5_core
    psid:
      description: PSID of the firmware (from C(flint q)); the same for every function of the card.
      type: str
      sample: MT_0000001244
    fw_version:
      description: Firmware burned on the flash (C(FW Version)).
      type: str
      sample: "28.42.1000"
    fw_running:
      description: Firmware running (C(FW Version(Running\)), printed only when it differs; else the burned one).
      type: str
      sample: "28.39.1002"
    fw_pending:
      description: True when the burned firmware differs from the running one (a reset or reboot is pending).
      type: bool
    fw_release_date:
      description: Release date of the burned firmware, as flint prints it (day.month.year).
      type: str
      sample: 8.8.2024
    rom_versions:
      description: Expansion ROM images and their versions.
      type: dict
      sample: {UEFI: 14.35.15, PXE: 3.7.500}
    base_mac:
      description: Base MAC as flint prints it (12 hex digits, no separators).
      type: str
      sample: e09d73126474
    base_guid:
      description: Base GUID as flint prints it (16 hex digits).
      type: str
      sample: e09d730300126474
    security_attributes:
      description: Security attributes flint reports (C(secure-fw), C(secure-fw, dev), C(N/A)).
      type: str
      sample: secure-fw
    netdevs:
      description: Network interfaces of the function (from C(mst), C(ibdev2netdev) or sysfs). On a BlueField the
        representors are listed too.
      type: list
      elements: str
      sample: [ens7f0]
    rdma_devices:
      description: RDMA devices of the function.
      type: list
      elements: str
      sample: [mlx5_0]
    ports:
      description: Ports of the function's RDMA device.
      type: list
      elements: dict
      contains:
        port:
          description: Port number.
          type: int
        rdma:
          description: RDMA device the port belongs to.
          type: str
        link_layer:
          description: C(InfiniBand) or C(Ethernet) (from C(ibstat), or sysfs with C(ibdev2netdev)).
          type: str
        state:
          description: Port state (C(Active), C(Down), C(Initializing), C(Armed), C(Polling)).
          type: str
        physical_state:
          description: Physical port state (C(LinkUp), C(Disabled), C(Polling), ...; C(ibstat) only).
          type: str
        rate:
          description: Rate in Gb/s as ibstat prints it (C(ibstat) only).
          type: raw
        netdev:
          description: The port's network interface.
          type: str
        netdev_state:
          description: C(Up) or C(Down) for the netdev (C(ibdev2netdev) only).
          type: str
      sample: [{port: 1, rdma: mlx5_0, link_layer: Ethernet, state: Active, physical_state: LinkUp, rate: 100,
                netdev: ens7f0, netdev_state: null}]
    numa_node:
      description: NUMA node of the function (V(null) when the platform reports none).
      type: int
      sample: 1
    pcie:
      description: PCIe link capability and status.
      type: dict
      contains:
        lnkcap:
          description: What the device can run, C({speed, width}).
          type: dict
          sample: {speed: 16GT/s, width: 16}
        lnksta:
          description: What the link trained to, C({speed, width}).
          type: dict
          sample: {speed: 16GT/s, width: 8}
        degraded:
          description: True when the link runs narrower or slower than its capability; V(null) when unreadable.
          type: bool
    nv_config:
      description: >-
        NV configuration, C({NAME: {default, current, next, modified}}) (values as the tool prints them).
      returned: when O(nv_config=true)
      type: dict
      sample: {SRIOV_EN: {default: "False(0)", current: "False(0)", next: "True(1)", modified: true}}
    pending_nv:
      description: >-
        Parameters whose next-boot value differs from the running one, C({NAME: {current, next}}).
      returned: when O(nv_config=true)
      type: dict
      sample: {SRIOV_EN: {current: "False(0)", next: "True(1)"}}
    errors:
      description: What could not be read for this device, with the tool's own words. Empty when all went well.
      type: list
      elements: str
      sample: ["flint -d 0000:e2:00.0 q failed (rc 1): Cannot open Device: 0000:e2:00.0. Operation not supported. MFE_CR_ERROR"]
summary:
  description: Counts over the devices (device types, part numbers and firmware versions are counted per card).
  returned: always
  type: dict
  sample:
    devices: 12
    cards: 10
    device_types: {ConnectX7: 10}
    part_numbers: {MCX75310AAS-NEAT: 8, MCX755106AS-HEAT: 2}
    fw_versions: {"28.39.1002": 10}
    fw_pending: 0
    pcie_degraded: 0
    with_errors: 0
    ports_active: 12
    tool_family: mft
tool_family:
  description: The tool family used, V(mft) or V(mstflint); V(null) when neither is installed (then only lspci and
    port facts are returned).
  returned: always
  type: str
  sample: mft
sources:
  description: Which tool gave what on this host, and what was skipped (for example C(mst) V(not started)).
  returned: always
  type: dict
  sample: {lspci: ok, mst: started, ports: ibstat, flint: flint, nv_config: null}
failed_devices:
  description: With O(fail_on_error=true), the devices that have errors and their errors.
  returned: when the task fails because of O(fail_on_error)
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._info import gather
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import TOOL_ARGSPEC, Runner


def main():
    module = ansible_module(
        AnsibleModule,
        argument_spec=dict(
            nv_config=dict(type="bool", default=False),
            start_mst=dict(type="bool", default=False),
            fail_on_error=dict(type="bool", default=False),
            **TOOL_ARGSPEC
        ),
        supports_check_mode=True,
    )
    try:
        runner = Runner(tool=module.params["tool"], timeout=module.params["timeout"])
        result = gather(runner, nv_config=module.params["nv_config"], start_mst=module.params["start_mst"],
                        check_mode=module.check_mode, host=runner.host)
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())

    for warning in result.pop("warnings"):
        module.warn(warning)
    failed = {dev["address"]: dev["errors"] for dev in result["devices"] if dev["errors"]}
    if failed and module.params["fail_on_error"]:
        module.fail_json(msg="%d of %d devices could not be fully read: %s" % (
            len(failed), len(result["devices"]),
            "; ".join("%s: %s" % (addr, ", ".join(errs)) for addr, errs in failed.items())),
            failed_devices=failed, **result)
    for address, errors in failed.items():
        module.warn("%s: %s" % (address, "; ".join(errors)))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
