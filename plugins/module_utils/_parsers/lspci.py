# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``lspci`` (plain, ``-v``/``-vv``/``-vvv``, ``-D``, ``-nn``, ``-s``, ``-d``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import (
    content_lines,
    full_pci,
    not_this_tool,
)

COMMANDS = ("lspci",)

# Detail label (as printed in -v output) -> key.
LABELS = {
    "Subsystem": "subsystem",
    "Physical Slot": "physical_slot",
    "NUMA node": "numa_node",
    "Kernel driver in use": "driver",
    "Kernel modules": "kernel_modules",
}

_DEVICE_RE = re.compile(
    r"^\s*(?P<address>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+"
    r"(?P<class>[^:\[]*?[^:\s\[])(?:\s+\[(?P<class_id>[0-9a-fA-F]{4})\])?:\s*(?P<rest>.*)$")
# Trailing annotations of the device line, stripped from the description one at a time.
_TRAILERS = (
    ("prog_if", re.compile(r"\s*\(prog-if ([^)]*?)(?: \[[^\]]*\])?\)$")),
    ("revision", re.compile(r"\s*\(rev ([0-9a-fA-F]+)\)$")),
    ("ids", re.compile(r"\s*\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]$")),
)
_DETAIL_RE = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?):\s*(.*)$")
_VPD_CAP_RE = re.compile(r"^\s*Capabilities: \[[0-9a-fA-F]+\] Vital Product Data")
_CAP_RE = re.compile(r"^\s*Capabilities:")
_VPD_FIELD_RE = re.compile(r"^\s*\[([A-Z0-9]{2})\]\s*[^:]*:\s?(.*)$")
_SPEED_RE = re.compile(r"\bSpeed\s+([^\s,]+)")
_WIDTH_RE = re.compile(r"\bWidth\s+([^\s,]+)")


def new_device(address: str | None, pci_class: str, description: str) -> dict:
    """The entry of one device, every detail None until printed."""
    return {
        "address": address, "class": pci_class, "description": description,
        "class_id": None, "vendor_id": None, "device_id": None, "revision": None,
        "subsystem": None, "physical_slot": None, "numa_node": None, "driver": None,
        "kernel_modules": None, "product_name": None, "vpd": None, "lnkcap": None, "lnksta": None,
    }


def device_line(text: str) -> dict | None:
    """The dict of a device's first line, or None when ``text`` is not one."""
    match = _DEVICE_RE.match(text)
    if not match:
        return None
    rest, found = match.group("rest").strip(), {}
    changed = True
    while changed:
        changed = False
        for key, pattern in _TRAILERS:
            trailer = pattern.search(rest)
            if trailer and key not in found:
                found[key] = trailer.groups()
                rest, changed = rest[:trailer.start()].rstrip(), True
    numeric = re.match(r"^([0-9a-fA-F]{4}):([0-9a-fA-F]{4})$", rest)  # lspci -n
    if numeric and "ids" not in found:
        found["ids"], rest = numeric.groups(), ""
    dev = new_device(full_pci(match.group("address")), match.group("class"), rest)
    dev["class_id"] = match.group("class_id")
    if "ids" in found:
        dev["vendor_id"], dev["device_id"] = found["ids"]
    if "revision" in found:
        dev["revision"] = found["revision"][0]
    return dev


def link(text: str, *, with_state: bool = False) -> dict:
    """``LnkCap: Port #0, Speed 8GT/s, Width x16, ...`` -> ``{"speed": "8GT/s", "width": "x16"}``.

    ``(ok)`` / ``(downgraded)`` annotations are not part of the values; with ``with_state``,
    ``downgraded`` tells whether either was marked downgraded.
    """
    speed, width = _SPEED_RE.search(text), _WIDTH_RE.search(text)
    out = {"speed": speed.group(1) if speed else None, "width": width.group(1) if width else None}
    if with_state:
        out["downgraded"] = "(downgraded)" in text
    return out


class _Device:
    """Detail lines of one device; ``vpd`` is True while inside its VPD capability."""

    def __init__(self, dev):
        self.dev = dev
        self.in_vpd = False

    def feed(self, text):
        dev = self.dev
        if _VPD_CAP_RE.match(text):
            self.in_vpd, dev["vpd"] = True, {}
            return
        if _CAP_RE.match(text):
            self.in_vpd = False
        stripped = text.strip()
        if stripped.startswith("LnkCap:"):
            dev["lnkcap"] = link(stripped)
        elif stripped.startswith("LnkSta:"):
            dev["lnksta"] = link(stripped, with_state=True)
        elif self.in_vpd:
            self.feed_vpd(stripped)
        else:
            detail = _DETAIL_RE.match(text)
            if detail and detail.group(1) in LABELS:
                dev[LABELS[detail.group(1)]] = detail.group(2).strip()

    def feed_vpd(self, stripped):
        if stripped == "End":
            self.in_vpd = False
            return
        field = _VPD_FIELD_RE.match(stripped)
        if field:
            self.dev["vpd"][field.group(1)] = field.group(2).strip()
        elif stripped.startswith("Product Name:"):
            self.dev["product_name"] = stripped.split(":", 1)[1].strip()


def parse_lspci(text: str | bytes | Sequence[str], *, tool: str = "lspci") -> list[dict]:
    """``lspci`` output, any of ``-D``, ``-nn``, ``-s ADDR``, ``-d 15b3:``, ``-v``/``-vv``/``-vvv``.

    Returns a list of devices::

        [{"address": "0000:81:00.0", "class": "Ethernet controller",
          "description": "Mellanox Technologies MT27700 Family [ConnectX-4]",
          "class_id": "0200", "vendor_id": "15b3", "device_id": "1013",   # with -nn
          "revision": "01",                                               # "(rev 01)"
          "subsystem": ..., "physical_slot": ..., "numa_node": "1",       # with -v
          "driver": "mlx5_core", "kernel_modules": "mlx5_core",
          "product_name": "CX416A - ConnectX-4 QSFP28",                   # VPD, with -vv
          "vpd": {"PN": "MCX416A-CCAT", "EC": "AG", "SN": "MT1838X04950", "V0": ..., "RV": ...},
          "lnkcap": {"speed": "8GT/s", "width": "x16"},
          "lnksta": {"speed": "8GT/s", "width": "x8", "downgraded": True}}]

    ``address`` always has its domain. Keys whose line is not printed are None; ``vpd`` is
    ``{}`` when the VPD capability holds only ``End``. Empty output (no match) gives ``[]``.
    """
    lines = content_lines(text, tool, commands=COMMANDS)
    devices, current, unknown = [], None, []
    for line in lines:
        dev = device_line(line.text)
        if dev:
            devices.append(dev)
            current = _Device(dev)
        elif current is not None:
            current.feed(line.text)
        else:
            unknown.append(line)
    if not devices and lines:
        raise not_this_tool(tool, unknown or lines, "lspci device line")
    return devices
