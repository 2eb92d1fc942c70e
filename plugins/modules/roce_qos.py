#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: roce_qos
short_description: Bring the host side of lossless RoCE to the wanted state on NVIDIA mlx5 interfaces
version_added: 0.1.0
description:
  - Per network interface of an NVIDIA ConnectX/BlueField (mlx5) device, sets the priority trust mode and PFC with
    C(mlnx_qos), optionally the priority to traffic class mapping and ETS, enables ECN (DCQCN) for the RoCE
    priority on the notification and reaction point, sets the DSCP and 802.1p priority of CNPs, the RDMA-CM default
    ToS (C(cma_roce_tos)) and the traffic class of the RDMA device for verbs traffic.
  - Every interface is read first (all at the same time), then a pure plan says per interface which settings differ
    (RV(interfaces[].changes)); only those are written - one C(mlnx_qos) call, the sysfs writes, one
    C(cma_roce_tos) call - and the interface is read again. A value that did not take fails the task, naming the
    interface and the setting.
  - Bad input (a priority outside 0-7, a DSCP outside 0-63, a ToS outside 0-255, a O(prio_tc) that is not 8 values
    0-7, O(tc_bw) whose ETS classes do not add up to 100, an interface that is not there or not on an mlx5 device, the
    management interface) fails the task before anything is changed on any interface.
  - A setting named in O(leave) is left as it is (neither compared nor written); O(ecn_priorities), O(prio_tc),
    O(tsa) and O(tc_bw) are left when not given.
  - These settings do not survive a reboot or a driver reload. RV(interfaces[].replay) lists what sets all of them;
    with O(persist=true) the module installs it as the script O(script) (P(gpufabric.mlnx.roce_qos_script#filter)'s
    text) and the udev rule O(udev_rule) that runs it with the interface's name when the interface appears - each
    written only when its content, mode or owner (root) differ, atomically; C(--check --diff) shows their text diff.
  - In check mode with a driver change coming in the same run (O(driver_action) not V(none)) nothing is read - the
    new driver's tools may not be there yet, and it starts from its defaults - and every interface is reported as to
    be configured. With an activation coming (O(pending_activation) V(fwreset) or V(reboot)) and an interface not on the
    host yet (a ConnectX-7 still in InfiniBand mode), the same after the activation.
  - Returns C(gpufabric_roce_qos) as a fact (RV(ansible_facts.gpufabric_roce_qos)).
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.full
options:
  interfaces:
    description:
      - The network interfaces to configure, for example the compute rails V(enp24s0np0), V(enp41s0np0).
      - Each must exist and sit on an mlx5 device; the error lists the mlx5 interfaces the host has.
      - This option and the settings below are checked by the module itself, with the check of
        P(gpufabric.mlnx.roce_qos_problems#filter) (one rule, so the preflight refuses exactly what the module
        refuses) - a list of names (one name alone is taken as a list of one), each of 1-15 ASCII letters, digits and
        C(_ . + -).
    type: raw
    required: true
  trust:
    description:
      - Priority trust state (C(mlnx_qos --trust)). V(dscp) classifies by the IP DSCP (routed RoCE, the usual choice),
        V(pcp) by the VLAN 802.1p priority. One of V(dscp), V(pcp) (in any case).
    type: raw
    default: dscp
  pfc_priorities:
    description:
      - The priorities with priority flow control; all others get none (C(mlnx_qos --pfc 0,0,0,1,0,0,0,0) for V([3])).
        Each 0-7.
      - With the default dscp to priority map, DSCP 26 (ToS 106) is priority 3.
    type: raw
    default: [3]
  ecn_priorities:
    description:
      - The priorities whose ECN is enabled on both the notification point (C(ecn/roce_np/enable/P)) and the reaction
        point (C(ecn/roce_rp/enable/P)). Other priorities are not touched. Default is O(pfc_priorities).
    type: raw
  cnp_dscp:
    description: DSCP of the congestion notification packets this host sends (C(ecn/roce_np/cnp_dscp)), 0-63.
    type: raw
    default: 48
  cnp_802p_prio:
    description: 802.1p priority of the congestion notification packets (C(ecn/roce_np/cnp_802p_prio)), 0-7.
    type: raw
    default: 6
  cma_roce_tos:
    description:
      - Default ToS of RDMA-CM connections of the interface's RDMA device and port, 0-255 (C(cma_roce_tos -t)).
        V(106) is DSCP 26 with ECN capable transport (26 << 2 | 2).
    type: raw
    default: 106
  traffic_class:
    description:
      - The global traffic class (ToS) of verbs traffic of the RDMA device and port, 0-255
        (C(/sys/class/infiniband/DEV/tc/PORT/traffic_class), provided by the mlx5_ib of DOCA-OFED / MLNX_OFED, not by
        the inbox driver; set V(null) there).
    type: raw
    default: 106
  prio_tc:
    description:
      - Priority to traffic class map, 8 values 0-7, one per priority (C(mlnx_qos --prio_tc)). Left alone when not given.
    type: raw
  tsa:
    description:
      - Transmission selection algorithm per traffic class, 8 of V(ets), V(strict), V(vendor) (C(mlnx_qos --tsa)).
        Left alone when not given.
    type: raw
  tc_bw:
    description:
      - Minimal bandwidth share per traffic class in percent, 8 values (C(mlnx_qos --tcbw)). The ETS classes must add
        up to 100 and a strict or vendor class must have 0. Left alone when not given.
    type: raw
  mgmt_interface:
    description:
      - The interface that carries the management connection (a bond, VLAN or bridge is followed down to its ports).
        By default it is found as the ofed role does - the interface holding O(mgmt_address) or the address SSH
        connected to, and the interface of the default route.
      - Naming it in O(interfaces) is refused unless O(allow_mgmt=true).
      - One interface name (not a list, not several names in one string, which would make the guard check nothing).
    type: raw
  mgmt_address:
    description: The address Ansible reaches the host on (the role passes C(ansible_host)), to find O(mgmt_interface).
    type: str
  allow_mgmt:
    description: Change the QoS of the interface that carries the management connection.
    type: bool
    default: false
  leave:
    description:
      - Settings to leave as they are, for example V(traffic_class) on the inbox driver, which has no such attribute.
        Ansible cannot pass V(null) for a setting with a default, so this is how one is switched off.
      - A list of V(trust), V(pfc_priorities), V(cnp_dscp), V(cnp_802p_prio), V(cma_roce_tos), V(traffic_class); a
        misspelt name is refused with the closest one.
    type: raw
    default: []
  root:
    description:
      - Where sysfs and configfs are, as a prefix of V(/sys) - V(/) on a real host. Tests and the simulated lab
        point it at the simulator's tree (V(/var/lib/mlxsim/root) in the lab's containers).
    type: path
    default: /
  timeout:
    description: Seconds one tool invocation may run before it is stopped; above 0.
    type: int
    default: 60
  host:
    description: The host's name in messages (C(inventory_hostname)); when not given, the machine's host name.
    type: str
  plan_hosts:
    description:
      - How many hosts the rail plan has. Given, an empty O(interfaces) means this host is not in the rail plan, and
        the module fails saying so (the gpufabric.mlnx.roce_qos role passes it when the interfaces come from the plan).
    type: int
  plan_group:
    description: The inventory group the rail plan covers, named when the host is not in it.
    type: str
    default: servers
  persist:
    description: Install O(script) and O(udev_rule), which re-apply the settings when an interface appears.
    type: bool
    default: false
  script:
    description: Where the re-apply script is installed (mode 0755), with O(persist=true). An absolute path of ASCII
      letters, digits and C(_ . + - /).
    type: path
    default: /usr/local/sbin/gpufabric-roce-qos
  udev_rule:
    description: The udev rule that runs O(script) on the interfaces' C(add) event (mode 0644, its directory made
      when missing), with O(persist=true).
    type: path
    default: /etc/udev/rules.d/90-gpufabric-roce-qos.rules
  driver_action:
    description:
      - In check mode, what the driver step of the same run would do (C(gpufabric_ofed_result.action)) - V(none) or
        the change (V(install), V(upgrade) ...).
    type: str
    default: none
  pending_activation:
    description:
      - In check mode, the activation the same run would do (C(gpufabric_activation.method)).
    type: str
    choices: [none, fwreset, reboot, pending]
    default: none
notes:
  - Facts this module relies on, checked against NVIDIA's documentation and tools; where they disagree, the tools'
    behaviour wins.
  - C(mlnx_qos) (mlnx-tools) takes C(--trust dscp|pcp), C(--pfc) with exactly 8 flags 0/1, C(--prio_tc) with 8
    traffic classes 0-7, C(--tsa) with 8 of C(strict), C(ets), C(vendor), and C(--tcbw) with 8 percentages 0-100 where
    a strict/vendor class must have 0; options it is not given keep their value; it prints the resulting state (which
    this module parses) and exits 1 with a message on bad input. See NVIDIA's doRoCE script and the mlnx-tools
    source linked below.
  - ECN is enabled per priority in C(/sys/class/net/IF/ecn/roce_np/enable/P) and C(/sys/class/net/IF/ecn/roce_rp/enable/P)
    (NVIDIA DOCA / MLNX_OFED "Explicit Congestion Notification"). The CNP attributes are read and written as
    C(/sys/class/net/IF/ecn/roce_np/cnp_dscp) and C(.../cnp_802p_prio); NVIDIA's page also shows a C(params/)
    sub-directory for the attributes, which the mlx5 driver's layout in use does not have. A missing attribute fails the
    task naming its path.
  - The RDMA-CM default ToS lives in configfs, C(/sys/kernel/config/rdma_cm/DEV/ports/PORT/default_roce_tos), values
    0-255 (kernel ABI document configfs-rdma_cm). The directory exists only while someone created it - C(cma_roce_tos)
    creates it, writes, prints only the value, and removes it again when it made it (the value stays with the device).
    So this module reads the configfs file when the directory is there, else runs C(cma_roce_tos -d DEV -p PORT) (no
    C(-t)), which only shows the value. C(cma_roce_tos) exits 0 even when the write fails, so the printed value is
    compared with the one asked for.
  - C(/sys/class/infiniband/DEV/tc/PORT/traffic_class) accepts a number and then reads back as C(Global tclass=N) (it
    reads empty until set; further lines are per-address rules). Both forms are understood.
  - The RDMA device and port of an interface come from C(ibdev2netdev), else from C(/sys/class/net/IF/device/infiniband/).
  - Tools are run with argument lists (never a shell) and C(LANG=C), found on PATH and in the usual sbin directories.
requirements:
  - mlnx-tools (C(mlnx_qos), C(cma_roce_tos), C(ibdev2netdev)), installed with DOCA-OFED or MLNX_OFED.
  - The mlx5 driver of DOCA-OFED / MLNX_OFED for the ECN and traffic_class attributes.
seealso:
  - module: gpufabric.mlnx.ofed_driver
  - name: Explicit Congestion Notification (NVIDIA DOCA documentation)
    description: The ECN sysfs attributes, per interface and priority, for the notification and reaction point.
    link: https://docs.nvidia.com/doca/sdk/Explicit+Congestion+Notification
  - name: Explicit Congestion Notification (NVIDIA MLNX_OFED 5.8 documentation)
    description: The same attributes in MLNX_OFED.
    link: https://docs.nvidia.com/networking/display/mlnxofedv587061lts/explicit+congestion+notification+(ecn)
  - name: Quality of Service (NVIDIA MLNX_EN documentation)
    description: Priorities, traffic classes and mlnx_qos.
    link: https://docs.nvidia.com/networking/display/mlnxenv495100/quality+of+service+(qos)
  - name: doRoCE (NVIDIA)
    description: NVIDIA's script for lossless RoCE on a host - mlnx_qos --trust --pfc, traffic_class, RDMA-CM ToS 106.
    link: https://github.com/NVIDIA/doroce-linux
  - name: mlnx-tools (mlnx_qos, cma_roce_tos, ibdev2netdev)
    description: The tools this module runs.
    link: https://github.com/Mellanox/mlnx-tools
  - name: configfs-rdma_cm (Linux kernel ABI)
    description: default_roce_tos, 0-255, per RDMA device and port.
    link: https://www.kernel.org/doc/Documentation/ABI/testing/configfs-rdma_cm
"""

EXAMPLES = r"""
- name: Lossless RoCE on the eight compute rails (DSCP trust, PFC and ECN on priority 3, ToS 106)
  gpufabric.mlnx.roce_qos:
    interfaces: [enp24s0np0, enp41s0np0, enp59s0np0, enp75s0np0, enp152s0np0, enp169s0np0, enp187s0np0, enp203s0np0]
    mgmt_address: "{{ ansible_host }}"
  register: qos

- name: Also RoCE in TC3 (50 %), CNPs strict in TC6, the rest in TC0 (50 %)
  gpufabric.mlnx.roce_qos:
    interfaces: [enp24s0np0]
    prio_tc: [0, 0, 0, 3, 0, 0, 6, 0]
    tsa: [ets, vendor, vendor, ets, vendor, vendor, strict, vendor]
    tc_bw: [50, 0, 0, 50, 0, 0, 0, 0]

- name: Inbox driver - no traffic_class attribute, leave it
  gpufabric.mlnx.roce_qos:
    interfaces: [ens1np0]
    traffic_class: null
"""

RETURN = r"""
interfaces:
  description: One entry per interface, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    interface:
      description: The network interface.
      type: str
      sample: enp24s0np0
    rdma_device:
      description: Its RDMA device (null when it has none).
      type: str
      sample: mlx5_0
    port:
      description: Its port on the RDMA device.
      type: int
      sample: 1
    changed:
      description: Whether anything was (in check mode would be) changed on this interface.
      type: bool
    changes:
      description: Per setting that differs, the value before and the value wanted. ECN settings are named
        C(ecn_np[P]) / C(ecn_rp[P]).
      type: dict
      sample: {trust: {before: pcp, after: dscp}, "ecn_np[3]": {before: 0, after: 1}}
    before:
      description: The managed settings as read before the task.
      type: dict
      sample: {trust: pcp, pfc: [0, 0, 0, 0, 0, 0, 0, 0], ecn_np: {"3": 0}, ecn_rp: {"3": 0}, cnp_dscp: 0,
               cnp_802p_prio: 0, cma_roce_tos: 0, traffic_class: null}
    after:
      description: The managed settings as read again after the writes (in check mode, what they would be).
      type: dict
      sample: {trust: dscp, pfc: [0, 0, 0, 1, 0, 0, 0, 0], ecn_np: {"3": 1}, ecn_rp: {"3": 1}, cnp_dscp: 48,
               cnp_802p_prio: 6, cma_roce_tos: 106, traffic_class: 106}
    commands:
      description: What was (would be) run or written, in order - C(argv) lists and sysfs C(write)/C(value) pairs.
      type: list
      elements: dict
      sample: [{argv: [mlnx_qos, -i, enp24s0np0, --trust, dscp, --pfc, "0,0,0,1,0,0,0,0"]},
               {write: /sys/class/net/enp24s0np0/ecn/roce_np/enable/3, value: "1"}]
    replay:
      description:
        - What sets every managed setting of the interface (not only what differs now), in the shape of
          RV(interfaces[].commands) - what must run again after a reboot or a driver reload.
          P(gpufabric.mlnx.roce_qos_script#filter) turns the list into the script the gpufabric.mlnx.roce_qos
          role installs.
      type: list
      elements: dict
      sample: [{argv: [mlnx_qos, -i, enp24s0np0, --trust, dscp, --pfc, "0,0,0,1,0,0,0,0"]},
               {write: /sys/class/net/enp24s0np0/ecn/roce_np/enable/3, value: "1"},
               {write: /sys/class/infiniband/mlx5_0/tc/1/traffic_class, value: "106"},
               {argv: [cma_roce_tos, -d, mlx5_0, -p, "1", -t, "106"]}]
failed_interfaces:
  description: Interfaces whose write or check failed, with the reason.
  returned: when an interface failed
  type: dict
  sample: {enp24s0np0: "enp24s0np0: trust=dscp did not take (now trust=pcp)"}
files:
  description: With O(persist=true), the script and the rule - whether each was (would be) written and why (V(created),
    V(content), V(mode), V(owner), V(group)).
  returned: always
  type: list
  elements: dict
  sample: [{path: /usr/local/sbin/gpufabric-roce-qos, changed: false, reasons: []}]
ansible_facts:
  description: The fact the gpufabric.mlnx.roce_qos role passes on (docs/role_facts.md).
  returned: success
  type: dict
  contains:
    gpufabric_roce_qos:
      description:
        - What the RoCE QoS step did - C(changed) (a QoS setting was, would be, changed), C(interfaces), C(drift)
          (the interfaces whose QoS differed), C(waiting_for_driver) and C(waiting_for_activation) (a check run that
          read nothing before the driver change or the activation of the same run).
      type: dict
      sample: {changed: false, interfaces: [enp24s0np0], drift: [], waiting_for_driver: false,
               waiting_for_activation: false}
msg:
  description: One line saying what was (would be) changed.
  returned: always
  type: str
  sample: "changed enp24s0np0: cnp_dscp, ecn_np[3], ecn_rp[3], pfc, trust"
parameter:
  description: The option or setting a failure is about.
  returned: on failure, when known
  type: str
  sample: pfc_priorities[1]
allowed:
  description: What the option accepts, or the interfaces that may be named.
  returned: on failure, when known
  type: raw
  sample: an integer 0-7
"""

import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._forecast import ACTIVATIONS
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module
from ansible_collections.gpufabric.mlnx.plugins.module_utils._roce_qos_script import converge_kept


# The settings are "raw": the core checks them (_roce_qos.desired_state, also the check of the roce_qos_problems
# filter), so Ansible's own conversions (int("\u0663") is 3, "a,b" is a list) cannot make the module take what the
# preflight refuses.
ARGUMENT_SPEC = dict(
    interfaces=dict(type="raw", required=True),
    trust=dict(type="raw", default="dscp"),
    pfc_priorities=dict(type="raw", default=[3]),
    ecn_priorities=dict(type="raw"),
    cnp_dscp=dict(type="raw", default=48),
    cnp_802p_prio=dict(type="raw", default=6),
    cma_roce_tos=dict(type="raw", default=106),
    traffic_class=dict(type="raw", default=106),
    prio_tc=dict(type="raw"),
    tsa=dict(type="raw"),
    tc_bw=dict(type="raw"),
    mgmt_interface=dict(type="raw"),
    mgmt_address=dict(type="str"),
    allow_mgmt=dict(type="bool", default=False),
    leave=dict(type="raw", default=[]),
    root=dict(type="path", default="/"),
    timeout=dict(type="int", default=60),
    host=dict(type="str"),
    plan_hosts=dict(type="int"),
    plan_group=dict(type="str", default="servers"),
    persist=dict(type="bool", default=False),
    script=dict(type="path", default="/usr/local/sbin/gpufabric-roce-qos"),
    udev_rule=dict(type="path", default="/etc/udev/rules.d/90-gpufabric-roce-qos.rules"),
    driver_action=dict(type="str", default="none"),
    pending_activation=dict(type="str", choices=list(ACTIVATIONS), default="none"),
)


def main():
    module = ansible_module(AnsibleModule, argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = dict(module.params)
    try:
        result = converge_kept(Host(root=params["root"], timeout=params["timeout"]), Host() if params["persist"] else None,
                               params, host=params["host"] or socket.gethostname(), check_mode=module.check_mode)
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())
    out = dict(changed=result["changed"], interfaces=result["interfaces"], files=result["files"], msg=result["msg"],
               diff=result["diff"])
    if result["failed"]:
        first = result["errors"][0]
        details = {k: v for k, v in first.fail_kwargs().items() if k in ("parameter", "cmd", "rc", "stdout", "stderr")} \
            if isinstance(first, MlnxError) else {}
        module.fail_json(failed_interfaces=result["failed"], **dict(out, **details))
    module.exit_json(ansible_facts={"gpufabric_roce_qos": result["fact"]}, **out)


if __name__ == "__main__":
    main()
