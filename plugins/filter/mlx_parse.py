# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: mlx_parse
short_description: Parse the output of NVIDIA/Mellanox host tools into data
version_added: 0.1.0
description:
  - Turns the text printed by C(mlxconfig)/C(mstconfig), C(mlxfwmanager)/C(mlxup),
    C(flint)/C(mstflint), C(mlxfwreset), C(mst status), C(ibstat), C(lspci), C(ibdev2netdev),
    C(ofed_info -s), C(mlnx_qos) and C(ethtool -i) into lists and dicts, with the same parsers
    the collection's modules use.
  - Values are the strings the tool printed, trimmed (V(N/A), V(--), V(True(1\)) stay as they are);
    only counters and indexes the tool prints as numbers become integers where noted below.
  - Blank lines, shell prompts, echoes of the tool's command line and C(...) elisions are skipped,
    so O(_input) can be C(stdout), C(stdout_lines), or text pasted from a terminal.
  - Fails with the tool name and the offending line when the text is not that tool's output.
positional: tool
options:
  _input:
    description: The tool's output, as one string (C(stdout)) or a list of lines (C(stdout_lines)).
      For O(tool=mlxconfig_json) the content of the file written by C(mlxconfig -j FILE q), or that
      file already loaded as a dict; for O(tool=perftest) and O(tool=nccl_tests) also the JSON file the tool
      writes (C(--out_json), C(-J)), as text or loaded.
    type: raw
    required: true
  tool:
    description:
      - Which output O(_input) is. MFT and mstflint names of one tool are the same parser.
      - V(mlxconfig)/V(mstconfig) - C([-e] query), C(set), C(reset) text.
      - V(mlxconfig_json)/V(mstconfig_json) - the JSON file of C(mlxconfig -j FILE [-e] query).
      - V(mlxfwmanager)/V(mstfwmanager)/V(mlxup) - C(--query) and C(-u) text.
      - V(mlxfwmanager_xml)/V(mstfwmanager_xml)/V(mlxup_xml) - C(--query --query-format XML).
      - V(flint)/V(mstflint) - C(-d DEV q), C(-i IMAGE q), C(q full).
      - V(flint_burn)/V(mstflint_burn) - C(burn).
      - V(mlxfwreset)/V(mstfwreset) - C(-d DEV q); V(mlxfwreset_reset)/V(mstfwreset_reset) - C(reset).
      - V(mst_status) - C(mst status) and C(mst status -v).
      - V(ibstat), V(lspci), V(ibdev2netdev), V(ofed_info), V(mlnx_qos), V(ethtool_i) (C(ethtool -i IFACE)).
      - V(perftest) - the report of C(ib_write_bw), C(ib_read_bw), C(ib_send_bw), C(ib_write_lat), C(ib_read_lat),
        C(ib_send_lat) (client or server), or its C(--out_json) file.
      - V(nccl_tests) - the report of C(all_reduce_perf), C(all_gather_perf), C(sendrecv_perf) and the other
        nccl-tests, or its C(-J) file.
      - V(mlxlink_counters)/V(mstlink_counters) - the C(Physical Counters and BER Info) section of C(mlxlink -c).
    type: str
    required: true
    choices: [mlxconfig, mstconfig, mlxconfig_json, mstconfig_json, mlxfwmanager, mstfwmanager, mlxup,
              mlxfwmanager_xml, mstfwmanager_xml, mlxup_xml, flint, mstflint, flint_burn, mstflint_burn,
              mlxfwreset, mstfwreset, mlxfwreset_reset, mstfwreset_reset, mst_status, ibstat, lspci,
              ibdev2netdev, ofed_info, mlnx_qos, ethtool_i, perftest, nccl_tests, mlxlink_counters,
              mstlink_counters]
seealso:
  - module: gpufabric.mlnx.mlxconfig
  - module: gpufabric.mlnx.mlx_firmware
"""

EXAMPLES = r"""
- name: Read the NV configuration of one device
  ansible.builtin.command: mlxconfig -d 0000:37:00.0 -e q
  register: __q
  changed_when: false

- name: Show what is pending for the next boot
  ansible.builtin.debug:
    msg: >-
      {{ (__q.stdout | gpufabric.mlnx.mlx_parse('mlxconfig'))[0].params
         | dict2items | selectattr('value.modified', 'defined') | selectattr('value.modified')
         | map(attribute='key') | list }}

- name: Firmware versions of every device
  ansible.builtin.command: mlxfwmanager --query
  register: __fw
  changed_when: false

- name: PSID and running FW per PCI device
  ansible.builtin.set_fact:
    __fw_by_pci: >-
      {{ __fw.stdout_lines | gpufabric.mlnx.mlx_parse('mlxfwmanager')
         | items2dict(key_name='pci_device', value_name='psid') }}

- name: Map RDMA devices to netdevs
  ansible.builtin.command: ibdev2netdev
  register: __map
  changed_when: false

- name: Netdevs that are up
  ansible.builtin.debug:
    msg: "{{ __map.stdout | gpufabric.mlnx.mlx_parse('ibdev2netdev') | selectattr('state', '==', 'Up')
             | map(attribute='netdev') | list }}"

- name: Negotiated PCIe link of every NVIDIA device
  ansible.builtin.command: "lspci -D -d 15b3: -vv"
  register: __pci
  changed_when: false

- name: Devices whose link is downgraded
  ansible.builtin.debug:
    msg: "{{ __pci.stdout | gpufabric.mlnx.mlx_parse('lspci') | selectattr('lnksta') | selectattr('lnksta.downgraded')
             | map(attribute='address') | list }}"
"""

RETURN = r"""
_value:
  description:
    - >-
      The parsed output. Its shape depends on O(tool); keys are fixed, values are the printed
      strings unless noted. Keys described as "only when/with ..." are absent when the tool did
      not print them; other values the tool did not print are null.
    - >-
      B(mlxconfig, mstconfig, mlxconfig_json) - a list, one dict per C(Device #N) block, with
      C(device_index) (int), C(device_type), C(name), C(description), C(device) (the C(-d) argument as
      echoed), C(params), C(errors), C(warnings), C(info), C(applied) and C(support).
      C(params) maps each parameter name to a dict with C(next), and with C(-e) also C(default),
      C(current) and C(modified) (bool, the C(*) marker); C(read_only=true) only on rows with the
      C(RO) marker; C(new) only in C(set) output. Expanded array rows are keyed C(NAME[3]); an
      unexpanded array value stays V(Array[0..7]).
      C(errors), C(warnings) and C(info) hold the text of the C(-E-), C(-W-) and C(-I-) lines.
      C(applied) is true after C(Applying... Done!), false after C(Failed!), null when not shown.
      C(support) is C({default, current}), each false when the firmware cannot report those values.
      Text with C(-E-) lines but no device block gives an empty list.
    - >-
      B(mlxfwmanager, mstfwmanager, mlxup, mlxfwmanager_xml, mstfwmanager_xml, mlxup_xml) - a list, one dict
      per device, with
      C(device_index) (int), C(device_type), C(part_number), C(description), C(psid), C(pci_device),
      C(versions) and C(status). C(versions) maps C(FW), C(PXE), C(UEFI), ... to C({current, available}).
      C(base_mac) and C(base_guid) only when printed; C(macs) and C(guids) (C({Port1: ...})) only with
      per-port lines; C(fw_running) only with an "FW (Running)" row; C(update) only in C(-u)
      output, as C({result, message, stages}) with C(result) V(Done), V(Fail) or V(Interrupted) and
      C(stages) a list of C({stage, status}).
    - >-
      B(flint, mstflint) - a dict keyed by the snake_case of each label - C(image_type), C(fw_version),
      C(fw_version_running) (only when printed), C(fw_release_date), C(mic_version), C(part_number),
      C(description), C(product_version), C(rom_info) (a list of C({type, version, cpu})), C(base_guid),
      C(guids_number), C(base_mac), C(macs_number), C(image_vsd), C(device_vsd), C(psid), C(orig_psid),
      C(security_attributes), ... - and C(errors).
    - >-
      B(flint_burn, mstflint_burn) - a dict with C(current_version), C(new_version), C(stages) (a list of
      C({stage, status})), C(ok) (bool), C(errors), C(warnings), C(info) and C(psid_mismatch)
      (C({flash, image}) or null).
    - >-
      B(mlxfwreset, mstfwreset) - a dict with C(levels), C(types), C(sync) and C(errors); each of the
      first three a list of C({level, description, supported, default}), C(level) an int and the
      last two bools.
    - >-
      B(mlxfwreset_reset, mstfwreset_reset) - a dict with C(device), C(level) (int or null), C(steps)
      (a list of C({step, status})), C(ok) (bool) and C(errors).
    - >-
      B(mst_status) - a dict with C(modules) (C({pci, pciconf}), bool or null), C(devices), C(errors)
      and C(warnings). Each device has C(mst) (null without a device node), C(pci) (always
      C(0000:bb:dd.f)), C(device_type), C(rev), C(rdma), C(net) (a list of interface names) and
      C(numa); plain C(mst status) fills only C(mst) and C(pci).
    - >-
      B(ibstat) - a list of CAs with C(name), C(ca_type), C(num_ports), C(firmware_version),
      C(hardware_version), C(node_guid), C(system_image_guid) and C(ports), a list of C({port, state,
      physical_state, rate, base_lid, lmc, sm_lid, capability_mask, port_guid, link_layer}), C(port)
      an int.
    - >-
      B(lspci) - a list of devices with C(address) (always C(0000:bb:dd.f)), C(class), C(description),
      C(class_id), C(vendor_id), C(device_id), C(revision), C(subsystem), C(physical_slot),
      C(numa_node), C(driver), C(kernel_modules), C(product_name), C(vpd), C(lnkcap) and C(lnksta).
      C(vpd) maps the two-letter VPD codes (C(PN), C(EC), C(SN), C(V0), ...) to their values; it is
      an empty dict when the VPD holds only C(End). C(lnkcap) is C({speed, width}); C(lnksta) adds
      C(downgraded) (bool).
    - >-
      B(ibdev2netdev) - a list of C({rdma, port, netdev, state}), C(port) an int; C(-v) output adds
      C(pci), C(hca_type), C(board_id), C(description), C(fw_version) and C(port_state).
    - >-
      B(ofed_info) - C({version, flavour, raw}), C(flavour) V(mlnx-ofed) or V(doca-ofed).
    - >-
      B(mlnx_qos) - a dict with C(dcbx_mode), C(trust), C(dscp2prio) (DSCP to priority, ints),
      C(buffer_sizes) (ints), C(cable_len) (int), C(pfc) (C({enabled, buffer}), 8 ints each) and
      C(tcs), a list of C({tc, ratelimit, tsa, bw, priorities}) with C(tc) an int and C(priorities)
      a list of ints.
    - >-
      B(ethtool_i) - a dict of every C(key: value) line, dashes in keys as underscores (C(driver),
      C(version), C(firmware_version), C(bus_info), ...), plus C(psid) from the parentheses after the
      firmware version (null without them).
    - >-
      B(perftest) - C({test, device, link_type, mtu, gid_index, unit, results, addresses, warnings, errors}):
      C(test) the title (C(RDMA_Write BW Test)), C(mtu) in bytes (an int), C(gid_index) the banner's C(GID index)
      (null when it names none - InfiniBand addresses by LID), C(addresses) C({local, remote}) one
      C({lid, qpn, psn, gid}) per queue pair (plus C(rkey), C(vaddr), C(out_reads) when printed; C(gid) the
      C(GID:) line as printed, null without one; empty from JSON), C(unit) as printed (C(Gb/sec), C(MiB/sec), C(MB/sec),
      C(usec); null from JSON, which does not say), C(results) one dict per row - bandwidth
      C({bytes, iterations, bw_peak, bw_average, msg_rate}), latency
      C({bytes, iterations, t_min, t_max, t_typical, t_avg, t_stdev, p99, p99_9}) (numbers; null for a column not
      printed, more keys for the columns some modes add) -, C(warnings) and C(errors) the lines of each kind.
    - >-
      B(nccl_tests) - C({nccl_version, rows, avg_busbw, avg_busbw_check, out_of_bounds, errors, runs}):
      C(rows) one C({size, count, type, redop, root, out_of_place, in_place}) per size, each side
      C({time, algbw, busbw, wrong}) (C(wrong) null for V(N/A); a side null when not printed), C(avg_busbw) and
      C(out_of_bounds) from the footer, C(avg_busbw_check) its V(OK)/V(FAILED) (NCCL_TESTS_MIN_BW; null without),
      C(errors) the failure lines of a run that died, C(runs) every run of a log of several (the last at the
      top).
    - >-
      B(mlxlink_counters) - C({effective_errors, raw_errors_lanes, raw_errors, link_down, link_error_recovery,
      effective_ber, raw_ber, minutes_since_clear}): counts as ints (C(raw_errors) the sum of the lanes), BERs as
      floats (C(15E-255), the tool's "no errors", is 0.0); a value in another form is an error, never zero errors.
  type: raw
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_parsers = lazy("module_utils._parsers")


@filter_errors("mlx_parse")
def mlx_parse(data, tool):
    """``text | gpufabric.mlnx.mlx_parse(tool)``: the data parsed from ``text`` (str or list of lines)."""
    if not isinstance(data, (str, bytes, list, tuple, dict)):
        raise AnsibleFilterError("mlx_parse expects the tool's stdout (a string) or stdout_lines (a list), got %s"
                                 % type(data).__name__)
    if isinstance(data, dict) and tool not in ("mlxconfig_json", "mstconfig_json", "perftest", "nccl_tests"):
        raise AnsibleFilterError("mlx_parse(%r) expects stdout or stdout_lines, not a dict (pass result.stdout)"
                                 % (tool,))
    return _parsers.parse(tool, data)


class FilterModule:
    """Filters over the collection's tool-output parsers."""

    def filters(self):
        return {"mlx_parse": mlx_parse}
