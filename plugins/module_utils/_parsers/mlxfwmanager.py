# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``mlxfwmanager`` / ``mstfwmanager`` / ``mlxup``: text query and update, XML query."""

from __future__ import annotations

import re
from collections.abc import Sequence
from xml.etree import ElementTree

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import (
    ParseError,
    all_lines,
    content_lines,
    message,
    not_this_tool,
    snake,
    split_question,
)

COMMANDS = ("mlxfwmanager", "mstfwmanager", "mlxup")

# Query label -> key. "PortN MAC" / "PortN GUID" go to the "macs" / "guids" dicts.
LABELS = {
    "Device Type": "device_type",
    "Part Number": "part_number",
    "Description": "description",
    "PSID": "psid",
    "PCI Device Name": "pci_device",
    "Base GUID": "base_guid",
    "Base MAC": "base_mac",
    "System GUID": "system_guid",
    "Node GUID": "node_guid",
    "Status": "status",
}
RUNNING_ROW = "FW (Running)"
# Keys a free-form label must not overwrite.
RESERVED = ("device_index", "versions", "macs", "guids", "fw_running", "update")

_DEVICE_RE = re.compile(r"^\s*Device #([0-9]{1,9}):\s*(.*)$")
_LABEL_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 ()_/-]*?):\s*(.*)$")
_PORT_LABEL_RE = re.compile(r"^(Port\d+) (MAC|GUID)$")
_VERSION_RE = re.compile(r"^(?:\d[\w.-]*|N/A|NA|--)$")
_STAGE_RE = re.compile(r"^\s*(?P<stage>\S.*?)\s+-\s+(?P<status>OK|FAILED|Failed|FAIL|\d+%.*)$")
_RESULT_RE = re.compile(r"^\s*(?:(?P<word>Done|Interrupted)|(?P<fail>Fail(?:ed)?)\s*(?::\s*(?P<msg>.*))?)\s*$")


def new_device(index: int) -> dict:
    """The entry of one ``Device #N`` block; optional keys are added when printed."""
    return {
        "device_index": index,
        "device_type": None,
        "part_number": None,
        "description": None,
        "psid": None,
        "pci_device": None,
        "versions": {},
        "status": None,
    }


def version_row(text: str) -> tuple[str, str, str | None] | None:
    """``(name, current, available)`` of a Versions row such as ``UEFI Virtio net  14.1  N/A``.

    ROM names may hold spaces; versions never do, so versions are taken from the right.
    """
    tokens = text.split()
    values = []
    while tokens and len(values) < 2 and _VERSION_RE.match(tokens[-1]):
        values.insert(0, tokens.pop())
    if not tokens or not values:
        return None
    current = values[0]
    available = values[1] if len(values) > 1 else None
    return " ".join(tokens), current, available


class _Reader:
    def __init__(self, tool):
        self.tool = tool
        self.devices = {}
        self.block = None     # device whose query block is open
        self.versions = False  # inside its Versions table
        self.updating = None  # device whose update is being printed
        self.seen = False
        self.unknown = []

    def device(self, index):
        if index not in self.devices:
            self.devices[index] = new_device(index)
        return self.devices[index]

    def feed(self, line):
        text = line.text
        question = split_question(text)
        if question:
            if not question[2]:
                return
            text = question[2]
        if "Querying Mellanox devices firmware" in text:
            self.seen = True
            return
        match = _DEVICE_RE.match(text)
        if match:
            self.on_device(line, int(match.group(1)), match.group(2))
            return
        if message(text):
            self.seen = True
            return
        if self.block is not None and self.on_block_line(line, text):
            return
        if self.updating is not None and self.on_update_line(text):
            return
        self.unknown.append(line)

    def on_device(self, line, index, rest):
        self.seen = True
        if rest.startswith("Updating FW"):
            self.block = None
            self.updating = self.device(index)
            self.updating.setdefault("update", {"result": None, "message": None, "stages": []})
        elif not rest:
            self.block = self.device(index)
            self.versions = False
            self.updating = None
        else:
            self.unknown.append(line)

    def on_block_line(self, line, text):
        """Read one line of the open device block; False when an unindented line ends it."""
        dev = self.block
        label = _LABEL_RE.match(text)
        if label:
            name, value = label.group(1).strip(), label.group(2).strip()
            self.versions = name == "Versions"
            if self.versions:
                return True
            port = _PORT_LABEL_RE.match(name)
            if port:
                dev.setdefault("macs" if port.group(2) == "MAC" else "guids", {})[port.group(1)] = value
            elif name in LABELS or snake(name) not in RESERVED:
                dev[LABELS.get(name, snake(name))] = value
            if name == "Status":
                self.block = None
            return True
        row = version_row(text) if self.versions else None
        if row is not None:
            name, current, available = row
            if name == RUNNING_ROW:
                dev["fw_running"] = current
            else:
                dev["versions"][name] = {"current": current, "available": available}
            return True
        if not text[:1].isspace():  # the block's lines are indented; a summary line is not
            self.block = None
            return False
        raise ParseError(self.tool, "not a line of a device block", line.text, line.no)

    def on_update_line(self, text):
        update = self.updating["update"]
        stage = _STAGE_RE.match(text)
        if stage:
            name, status = stage.group("stage"), stage.group("status")
            known = [item for item in update["stages"] if item["stage"] == name]
            if not known:
                update["stages"].append({"stage": name, "status": status})
            elif not status[0].isdigit() or known[0]["status"][0].isdigit():
                known[0]["status"] = status
            return True
        result = _RESULT_RE.match(text)
        if result:
            update["result"] = result.group("word") or "Fail"
            update["message"] = result.group("msg")
            self.updating = None
            return True
        return False

    def result(self, lines):
        if not self.devices and not self.seen:
            raise not_this_tool(self.tool, self.unknown or lines, "mlxfwmanager device block")
        return [self.devices[index] for index in sorted(self.devices)]


def parse_mlxfwmanager(text: str | bytes | Sequence[str], *, tool: str = "mlxfwmanager") -> list[dict]:
    """Text output of ``mlxfwmanager`` / ``mstfwmanager`` / ``mlxup`` ``--query`` and ``-u``.

    Returns a list with one dict per ``Device #N`` block::

        {"device_index": 1, "device_type": "ConnectX7", "part_number": "MCX755106AS-HEA_Ax",
         "description": "...", "psid": "MT_0000000834", "pci_device": "/dev/mst/mt4129_pciconf1",
         "base_mac": "5c2573a98bd4",                     # when printed, as is base_guid
         "versions": {"FW": {"current": "28.40.1000", "available": "28.43.1014"},
                      "PXE": {...}, "UEFI": {...}},      # "available" None when not printed
         "status": "Update required",
         "fw_running": "28.39.1002",                    # only with an "FW (Running)" row
         "macs": {"Port1": ...}, "guids": {"Port1": ...},  # only with PortN MAC/GUID lines
         "update": {"result": "Done", "message": None,   # only in -u output
                    "stages": [{"stage": "FSMST_INITIALIZE", "status": "OK"}]}}

    ``--`` and ``N/A`` are kept as printed. Output with no device but a ``-E-`` line (``-E- No
    devices found``) returns ``[]``.
    """
    lines = content_lines(text, tool, commands=COMMANDS)
    reader = _Reader(tool)
    for line in lines:
        reader.feed(line)
    return reader.result(lines)


# ---------------------------------------------------------------- XML

_XML_ATTRS = {"pciName": "pci_device", "type": "device_type", "psid": "psid", "partNumber": "part_number"}
_XML_ID_RE = re.compile(r"^(Base|System|Node|Port\d+)_(Mac|Guid)$", re.I)


def _xml_ids(dev, element):
    for attr, value in element.attrib.items():
        match = _XML_ID_RE.match(attr)
        if not match:
            if snake(attr) not in RESERVED:
                dev[snake(attr)] = value.strip()
            continue
        which, kind = match.group(1), match.group(2).lower()
        if which.lower().startswith("port"):
            dev.setdefault("macs" if kind == "mac" else "guids", {})["Port" + which[4:]] = value.strip()
        else:
            dev["%s_%s" % (which.lower(), kind)] = value.strip()


def _xml_device(index, element):
    dev = new_device(index)
    for attr, key in _XML_ATTRS.items():
        if attr in element.attrib:
            dev[key] = element.attrib[attr].strip()
    for child in element:
        if child.tag == "Versions":
            for rom in child:
                dev["versions"][rom.tag] = {"current": rom.attrib.get("current"),
                                            "available": rom.attrib.get("available")}
        elif child.tag in ("MACs", "GUIDs"):
            _xml_ids(dev, child)
        elif child.tag in ("Status", "Description"):
            dev[child.tag.lower()] = (child.text or "").strip()
        elif snake(child.tag) not in RESERVED:
            dev[snake(child.tag)] = (child.text or "").strip()
    return dev


def parse_mlxfwmanager_xml(text: str | bytes | Sequence[str], *, tool: str = "mlxfwmanager_xml") -> list[dict]:
    """``mlxfwmanager`` / ``mlxup`` ``--query --query-format XML`` output.

    Returns the same list as ``parse_mlxfwmanager`` (devices numbered in document order).
    """
    body = "\n".join(line.text for line in all_lines(text, tool))
    start, end = body.find("<Devices"), body.rfind("</Devices>")
    if start < 0 or end < start:
        raise not_this_tool(tool, content_lines(text, tool, commands=COMMANDS), "<Devices> document")
    try:  # only the <Devices> element is read: a DTD before it (entities) is never seen
        root = ElementTree.fromstring(body[start:end + len("</Devices>")])
    except ElementTree.ParseError as err:
        lineno = body[:start].count("\n") + err.position[0]
        raise ParseError(tool, "not well-formed XML: %s" % err, body.split("\n")[lineno - 1], lineno)
    return [_xml_device(index, element) for index, element in enumerate(root.iter("Device"), 1)]
