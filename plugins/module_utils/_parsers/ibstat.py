# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``ibstat`` (infiniband-diags / rdma-core)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import (
    ParseError,
    content_lines,
    not_this_tool,
    snake,
)

COMMANDS = ("ibstat",)

CA_LABELS = {
    "CA type": "ca_type",
    "Number of ports": "num_ports",
    "Firmware version": "firmware_version",
    "Hardware version": "hardware_version",
    "Node GUID": "node_guid",
    "System image GUID": "system_image_guid",
}
PORT_LABELS = {
    "State": "state",
    "Physical state": "physical_state",
    "Rate": "rate",
    "Base lid": "base_lid",
    "LMC": "lmc",
    "SM lid": "sm_lid",
    "Capability mask": "capability_mask",
    "Port GUID": "port_guid",
    "Link layer": "link_layer",
}

_CA_RE = re.compile(r"^\s*CA:?\s+'([^']+)'\s*$")
_PORT_RE = re.compile(r"^\s*Port ([0-9]{1,9}):\s*$")
_FIELD_RE = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?):(?:\s+(.*))?$")
# rdma-core's IBPANIC / IBWARN: "ibpanic: [PID] main: stat of IB device 'mlx5_8' failed: No such file or directory"
# (before v54 ibstat stops there, exit 255) or "ibwarn: [PID] main: stat of IB device 'mlx5_8' failed" (v54 on:
# the device is left out and the others follow, exit 0).
_PANIC_RE = re.compile(r"^\s*ibpanic:\s*(?:\[\d+\]\s*)?(?:\w+:\s*)?(.*)$")
_STAT_FAILED_RE = re.compile(r"^\s*ib(?:panic|warn):.*\bstat of IB device '([^']*)' failed(?::\s*(.*))?$")


def new_ca(name: str) -> dict:
    """The entry of one ``CA 'NAME'`` block, every field None until printed."""
    ca = {"name": name}
    for key in CA_LABELS.values():
        ca[key] = None
    ca["ports"] = []
    return ca


def new_port(number: int) -> dict:
    """The entry of one ``Port N:`` block of a CA, every field None until printed."""
    port = {"port": number}
    for key in PORT_LABELS.values():
        port[key] = None
    return port


def parse_ibstat(text: str | bytes | Sequence[str], *, tool: str = "ibstat") -> list[dict]:
    """``ibstat [CA [PORT]]`` output (TAB or space indentation; ``ibwarn:`` debug lines skipped).

    Returns a list of CAs::

        [{"name": "mlx5_0", "ca_type": "MT4129", "num_ports": "1",
          "firmware_version": "28.39.1002", "hardware_version": "0",
          "node_guid": "0x...", "system_image_guid": "0x...",
          "ports": [{"port": 1, "state": "Active", "physical_state": "LinkUp", "rate": "400",
                     "base_lid": "0", "lmc": "0", "sm_lid": "0", "capability_mask": "0x00010000",
                     "port_guid": "0x...", "link_layer": "Ethernet"}]}]

    Values are strings as printed; empty output gives ``[]``. A device ibstat could not read (rdma-core's
    ``stat of IB device 'X' failed``, as ``ibpanic:`` - the listing stopped there - or ``ibwarn:`` - the device was
    left out) and any other ``ibpanic:`` raise ParseError naming the device: the listing is not the host's.
    """
    lines = content_lines(text, tool, commands=COMMANDS)
    cas, ca, port, unknown = [], None, None, []
    for line in lines:
        text_ = line.text
        failed, panic = _STAT_FAILED_RE.match(text_), _PANIC_RE.match(text_)
        if failed:
            if panic:
                before = "after " + ", ".join(c["name"] for c in cas) if cas else "before any device"
                what = "ibstat stopped there, " + before
            else:
                what = "ibstat left it out"
            raise ParseError(tool, "RDMA device %r could not be read (%s): %s, so the listing is not the host's"
                             % (failed.group(1), failed.group(2) or "stat failed", what), text_.strip(), line.no)
        if panic:
            raise ParseError(tool, "ibstat stopped: %s" % panic.group(1), text_.strip(), line.no)
        if text_.lstrip().startswith("ibwarn:"):
            continue
        head, port_head = _CA_RE.match(text_), _PORT_RE.match(text_)
        field = _FIELD_RE.match(text_) if ca is not None else None
        if head:
            ca, port = new_ca(head.group(1)), None
            cas.append(ca)
        elif port_head and ca is not None:
            port = new_port(int(port_head.group(1)))
            ca["ports"].append(port)
        elif field:
            label, value = field.group(1), (field.group(2) or "").strip()
            if label in PORT_LABELS and port is not None:
                port[PORT_LABELS[label]] = value
            elif label in CA_LABELS:
                ca[CA_LABELS[label]] = value
            elif snake(label) not in ("name", "ports", "port"):
                (port if port is not None else ca)[snake(label)] = value
        else:
            unknown.append(line)
    if not cas and lines:
        raise not_this_tool(tool, unknown or lines, "CA block")
    return cas
