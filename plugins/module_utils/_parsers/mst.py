# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for MFT's ``mst status`` and ``mst status -v`` (and what ``mst start`` prints when it fails)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import (
    content_lines,
    full_pci,
    is_bdf,
    message,
    not_this_tool,
)

COMMANDS = ("mst",)

_MODULE_RE = re.compile(r"^\s*MST PCI (configuration )?module (is not loaded|loaded)\s*$")
_HEADING_RE = re.compile(r"^\s*(MST modules|MST devices|PCI devices|PCI Devices|Cables|Inband devices"
                         r"|LinkX devices|Remote devices)\s*:\s*$")
_NODE_RE = re.compile(r"^\s*(/dev/mst/\S+)\s+-\s")
_BDF_FIELD_RE = re.compile(r"domain:bus:dev\.fn=(\S+)")
_TYPE_RE = re.compile(r"^(?P<type>[A-Za-z0-9_-]+)\(rev:(?P<rev>[^)]*)\)$")
_NUMA_RE = re.compile(r"^-?\d+$")
_FAILURE_RE = re.compile(r"FATAL:|driver not found|Failed to|Failure")
_ONLY_STATUS_RE = re.compile(r"^\s*-\s*(?:Failure|Success)\b")


def new_device(mst: str | None = None, pci: str | None = None) -> dict:
    """The entry of one device (``mst`` path, ``pci`` address), the other columns None until read."""
    return {"mst": mst, "pci": pci, "device_type": None, "rev": None, "rdma": None, "net": [],
            "numa": None}


def verbose_row(text: str) -> dict | None:
    """A ``mst status -v`` row ``ConnectX7(rev:0)  /dev/mst/mt4129_pciconf0  37:00.0  mlx5_0  net-ens1np0  0``.

    Columns can be empty (NET, RDMA, NUMA; MST is ``NA`` without the modules), so every
    word is classified by its form instead of its position. None when it is not a row.
    """
    words = text.split()
    if len(words) < 2:
        return None
    kind = _TYPE_RE.match(words[0])
    if not kind and words[0] != "NA":
        return None
    pci_at = next((i for i, word in enumerate(words) if i and is_bdf(word)), None)
    if pci_at is None or pci_at > 2:
        return None
    mst = words[1] if pci_at == 2 else "NA"
    dev = new_device(None if mst == "NA" else mst, full_pci(words[pci_at]))
    if kind:
        dev["device_type"], dev["rev"] = kind.group("type"), kind.group("rev")
    for word in words[pci_at + 1:]:
        if word.startswith("net-"):
            dev["net"] = [name[4:] if name.startswith("net-") else name for name in word.split(",") if name]
        elif _NUMA_RE.match(word) or (word == "NA" and dev["rdma"] is not None):
            dev["numa"] = word
        elif dev["rdma"] is None:
            dev["rdma"] = word
        else:
            dev["numa"] = word
    return dev


def parse_mst_status(text: str | bytes | Sequence[str], *, tool: str = "mst_status") -> dict:
    """``mst status`` / ``mst status -v`` output.

    Returns::

        {"modules": {"pci": False, "pciconf": True},        # None when not printed
         "devices": [{"mst": "/dev/mst/mt4129_pciconf0", "pci": "0000:37:00.0",
                      "device_type": "ConnectX7", "rev": "0", "rdma": "mlx5_0",
                      "net": ["ens1np0"], "numa": "0"}],
         "errors": [...], "warnings": [...]}

    Plain ``mst status`` fills only ``mst`` and ``pci`` (from ``domain:bus:dev.fn=``); the
    other keys stay None / []. A bare PCI address under ``PCI Devices:`` (modules not loaded)
    gives ``mst`` None. ``pci`` always has its domain. ``NA`` in MST / DEVICE_TYPE is None.
    ``errors`` holds ``-E-`` text and the failure lines of a failed ``mst start``.
    """
    lines = content_lines(text, tool, commands=COMMANDS)
    result = {"modules": {"pci": None, "pciconf": None}, "devices": [], "errors": [], "warnings": []}
    found, unknown = False, []
    for line in lines:
        text_ = line.text
        msg = message(text_)
        module, node = _MODULE_RE.match(text_), _NODE_RE.match(text_)
        bdf_field = _BDF_FIELD_RE.search(text_)
        row = verbose_row(text_)
        if msg:
            if msg[0] in result:
                result[msg[0]].append(msg[1])
        elif module:
            result["modules"]["pciconf" if module.group(1) else "pci"] = module.group(2) == "loaded"
        elif _HEADING_RE.match(text_) or text_.strip().startswith("DEVICE_TYPE"):
            found = True
        elif node:
            result["devices"].append(new_device(node.group(1)))
        elif bdf_field and result["devices"] and result["devices"][-1]["pci"] is None:
            result["devices"][-1]["pci"] = full_pci(bdf_field.group(1)) or bdf_field.group(1)
        elif row:
            result["devices"].append(row)
        elif is_bdf(text_.strip()):
            result["devices"].append(new_device(None, full_pci(text_.strip())))
        elif _FAILURE_RE.search(text_) and not _ONLY_STATUS_RE.match(text_):
            result["errors"].append(text_.strip())
        elif "Starting MST" in text_:
            found = True
        else:
            unknown.append(line)
    if not (found or result["devices"] or result["errors"] or result["modules"] != {"pci": None, "pciconf": None}):
        raise not_this_tool(tool, unknown or lines, "mst status output")
    return result
