# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: delivery_findings
short_description: Compare delivered NICs with the asset list and the version matrix
version_added: 0.1.0
description:
  - Compares every card M(gpufabric.mlnx.mlx_info) found on every host (one entry per card, its lowest PCI
    function) with the expected asset list and the version matrix C(gpufabric_matrix), and returns every finding at
    once. Each finding names the host, the slot and PCI address, and what was expected against what was found.
  - 'Asset list: a card in a slot that the list does not name (C(unexpected_card)), a listed card that is not on its
    host (C(missing_card)), the listed card found in another slot of its host (C(slot_mismatch)), a part number or
    serial number other than the listed one (C(part_number_mismatch), C(serial_mismatch)).'
  - 'Matrix: a PSID the matrix does not pin (C(unknown_psid)), a PSID whose image is for other part numbers
    (C(psid_part_mismatch)), firmware older than the oldest the part ever shipped with, the PSID or part entry''s
    C(shipped_min) (C(firmware_older_than_shipped)), or of another device family (C(firmware_other_family)).'
  - 'Counterfeit-looking cards: an OEM PSID (C(DEL), C(HP_), C(LNV), C(IBM), C(SM_), ... - any vendor prefix other
    than C(MT_)) on an NVIDIA retail part number (C(MCX...), C(MBF...), C(900-9...)) (C(oem_psid_on_retail_part)),
    or an NVIDIA C(MT_) PSID on an OEM part number such as a Dell C(0R887V) (C(retail_psid_on_oem_part)) - unless
    the matrix pins that PSID for that part number; no part number or no serial number in the VPD
    (C(part_number_missing), C(serial_missing)); a placeholder serial number, or on an NVIDIA part one that is not
    C(MT) + two digits of year + two of week (01-53) + a letter + five digits such as C(MT2050X00614)
    (C(serial_malformed)); one serial number on two cards of any hosts (C(serial_duplicate)).'
  - 'PCIe: a link trained narrower (C(pcie_width)) or slower (C(pcie_speed)) than the card can run (C(LnkSta) below
    C(LnkCap)), or unreadable (C(pcie_unread)). A host whose devices could not be read is C(host_unread).'
  - 'Default severities: C(serial_malformed), C(pcie_speed) and C(pcie_unread) are warnings (a Gen5 card in a Gen4
    server trains at Gen4 by design; the serial format rule is inferred from real serial numbers, not published);
    everything else is an error. O(severities) changes any of them.'
options:
  _input:
    description:
      - A mapping of host name to the C(devices) list M(gpufabric.mlnx.mlx_info) returned on it, V(null) when it could
        not be read there (then the host is C(host_unread) and its asset rows are not reported missing).
    type: dict
    required: true
  assets:
    description:
      - The expected asset list, as the CSV text of the file (a header line naming the columns C(host), C(slot),
        C(part_number) and C(serial) in any order - more columns are allowed, lines starting with C(#) are
        comments), or as a list of rows (mappings) such as C(community.general.read_csv) returns.
      - C(slot) is the card's PCI address (C(0000:18:00.0), C(18:00.0) or the card C(18:00)) or its physical slot as
        C(lspci -vv) prints C(Physical Slot) (C(3), C(7-1)).
      - Rows of hosts that are not in O(_input) are ignored (a run with C(--limit)); V(null) skips the asset
        comparison.
      - A malformed list (a missing column, an empty cell, a slot or serial number listed twice) fails the filter,
        naming every bad line.
    type: raw
    required: true
  matrix:
    description: The version matrix, C(gpufabric_matrix) (see P(gpufabric.mlnx.matrix_check#filter)); it must be consistent.
    type: dict
    required: true
  severities:
    description:
      - "Severity per check name, V(error), V(warning) or V(ignore), over the defaults, for example
        C({pcie_speed: error, unexpected_card: warning})."
    type: dict
  output:
    description:
      - V(findings) returns the list of findings; V(report) returns the whole report of one run (summary line,
        counts, and the Markdown, CSV and JSON texts).
    type: str
    choices: [findings, report]
    default: findings
  generated:
    description: With O(output=report), when the check ran (shown in the report's title and JSON), e.g. an ISO 8601 time.
    type: str
  source:
    description: Where the asset list came from, e.g. its path; messages about its lines name it, and the report shows it.
    type: str
"""

EXAMPLES = r"""
- name: Read the cards
  gpufabric.mlnx.mlx_info:
  register: nics

- name: Compare every host's cards with the asset list (on the controller)
  ansible.builtin.debug:
    msg: "{{ devices_by_host | gpufabric.mlnx.delivery_findings(lookup('ansible.builtin.file', 'files/assets.csv'),
             gpufabric_matrix) | selectattr('severity', 'equalto', 'error') | map(attribute='message') }}"
  run_once: true
  vars:
    devices_by_host: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, ['nics', 'devices']))) }}"

- name: Only the matrix and the VPD, no asset list; a slower PCIe link is an error too
  ansible.builtin.set_fact:
    findings: "{{ devices_by_host | gpufabric.mlnx.delivery_findings(none, gpufabric_matrix, severities={'pcie_speed': 'error'}) }}"

- name: The whole report of this run
  ansible.builtin.set_fact:
    delivery: "{{ devices_by_host | gpufabric.mlnx.delivery_findings(assets_csv, gpufabric_matrix, output='report',
                                                                      generated=now(utc=true).isoformat()) }}"
"""

RETURN = r"""
_value:
  description:
    - With O(output=findings), the findings sorted by host, card and check; empty when every card passed.
    - With O(output=report), a mapping with C(summary) (one line), C(counts) (errors, warnings, hosts, hosts_read,
      hosts_with_errors, cards, asset_rows, asset_rows_not_in_run, by_check), C(markdown) (a summary and one table
      per severity), C(csv) (one line per finding, every key) and C(json) (the document with every finding).
  type: raw
  contains:
    host:
      description: The host.
      type: str
    address:
      description: PCI address of the card's lowest function; V(null) for a missing card.
      type: str
    slot:
      description: The card's physical slot (lspci), else the slot of its asset row.
      type: str
    serial:
      description: The card's serial number (VPD C([SN])), else the asset row's.
      type: str
    part_number:
      description: The card's part number (VPD C([PN])), else the asset row's.
      type: str
    psid:
      description: The card's PSID.
      type: str
    check:
      description: The check's name (C(missing_card), C(unknown_psid), C(oem_psid_on_retail_part), ...).
      type: str
    severity:
      description: V(error) or V(warning).
      type: str
    expected:
      description: What was expected, in short.
      type: str
    found:
      description: What was found, in short.
      type: str
    message:
      description: The whole sentence, naming host, slot and PCI address, expected and found.
      type: str
  sample:
    - host: srv-r01-01
      address: "0000:40:00.0"
      slot: "2"
      serial: MT2248X00612
      part_number: MCX75310AAS-NEAT
      psid: DEL0000000027
      check: oem_psid_on_retail_part
      severity: error
      expected: an MT_ PSID
      found: DEL0000000027
      message: "srv-r01-01 slot 2 (0000:40:00.0): OEM PSID DEL0000000027 (vendor DEL (Dell)) on NVIDIA retail part
        number MCX75310AAS-NEAT: an NVIDIA retail card carries an MT_ PSID; a relabelled OEM card or a cross-flashed one"
"""

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_delivery = lazy("plugin_utils._delivery")

OUTPUTS = ("findings", "report")


@filter_errors("delivery_findings")
def delivery_findings(devices_by_host, assets, matrix, severities=None, output="findings", generated=None,
                      source=None):
    if output not in OUTPUTS:
        raise InvalidValue("output must be one of %s, not %r" % (", ".join(OUTPUTS), output), parameter="output",
                           allowed=list(OUTPUTS))
    found = _delivery.findings(devices_by_host, assets, matrix, severities=severities, source=source)
    if output == "findings":
        return found
    name = matrix.get("name") if isinstance(matrix, dict) else None
    return _delivery.report(found, devices_by_host, assets, matrix_name=name, generated=generated, source=source)


class FilterModule:
    def filters(self):
        return {"delivery_findings": delivery_findings}
