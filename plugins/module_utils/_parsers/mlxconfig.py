# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``mlxconfig`` / ``mstconfig`` output: text (query, set, reset) and the ``-j`` JSON file."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import (
    ParseError,
    all_lines,
    content_lines,
    message,
    not_this_tool,
    split_question,
)

COMMANDS = ("mlxconfig", "mstconfig")

# Device header label -> key. "PCI device:" is what MFT 4.0-era builds printed instead of "Device:".
HEADER_LABELS = {
    "Device type": "device_type",
    "Name": "name",
    "Description": "description",
    "Device": "device",
    "PCI device": "device",
}
# Words of the "Configurations:" header -> the key of that column's value.
COLUMNS = {"Default": "default", "Current": "current", "Next Boot": "next", "New": "new"}
# Columns for a table whose header names none (edited captures, grep output): by value count.
INFERRED_COLUMNS = {
    1: ["next"],
    2: ["next", "new"],
    3: ["default", "current", "next"],
    4: ["default", "current", "next", "new"],
}
# Row marker token -> (modified, read_only).
MARKERS = {"*": (True, False), "*RO": (True, True), "RO": (False, True)}

_DEVICE_RE = re.compile(r"^\s*Device #([0-9]{1,9}):\s*$")
_LABEL_RE = re.compile(r"^\s*(Device type|Name|Description|Device|PCI device):(.*)$")
_CONFIG_RE = re.compile(r"^\s*Configurations:(.*)$")
_COLUMN_RE = re.compile(r"Default|Current|Next Boot|New")
_NAME_RE = re.compile(r"^_?[A-Z][A-Za-z0-9_]*(?:\[\d+\])?$")
_APPLY_RE = re.compile(r"Applying\.\.\.\s*(Done|Failed)!?")
_RESET_RE = re.compile(r"^\s*Reset configuration for device\s+(.*?)\s*\?")
_NO_SUPPORT_RE = re.compile(
    r"does not support reading (default|current)(?: and (default|current))? configuration")
# Free text mlxconfig prints that carries nothing the result needs.
_KNOWN_TEXT_RE = re.compile(
    r"^\s*(?:The '\*' shows|The 'RO' shows|Param \S+ is not going to be set|Query output saved to"
    r"|Operation intended for advanced users|Are you sure you want to apply)")


def new_device(index: int) -> dict:
    """The empty result entry of one ``Device #N`` block."""
    return {
        "device_index": index,
        "device_type": None,
        "name": None,
        "description": None,
        "device": None,
        "params": {},
        "errors": [],
        "warnings": [],
        "info": [],
        "applied": None,
        "support": {"default": True, "current": True},
    }


def split_row(text: str) -> tuple[str, list[str], bool, bool] | None:
    """``(name, values, modified, read_only)`` of a table row, or None when it is not one.

    Rows are split on runs of whitespace (header offsets do not line up with the values in
    most versions, and long values overflow their column with a single space).
    """
    if not text or text[0] not in " \t*":
        return None
    tokens = text.split()
    modified, read_only = MARKERS.get(tokens[0], (False, False))
    if tokens[0] in MARKERS:
        tokens = tokens[1:]
    if not tokens or not _NAME_RE.match(tokens[0]):
        return None
    return tokens[0], tokens[1:], modified, read_only


class _Reader:
    """State of one pass over mlxconfig text; ``feed`` each content line, then ``result``."""

    def __init__(self, tool, lines):
        self.tool = tool
        self.last_no = lines[-1].no if lines else 0
        self.devices = []
        self.dev = None
        self.columns = None       # value keys of the current table, None = infer from a row
        self.in_table = False
        self.after_error = False  # rows after an -E- line are usage text, not parameters
        self.pending = new_device(0)  # messages printed before the first device
        self.unknown = []
        self.saw_message = False

    # -- devices

    def start_device(self, index=None):
        dev = new_device(index if index is not None else len(self.devices) + 1)
        for key in ("errors", "warnings", "info"):
            dev[key] = self.pending[key] + dev[key]
            self.pending[key] = []
        self.devices.append(dev)
        self.dev = dev
        self.columns = None
        self.in_table = False
        self.after_error = False
        return dev

    def current(self):
        return self.dev if self.dev is not None else self.start_device()

    # -- line kinds

    def feed(self, line, text=None):
        text = line.text if text is None else text
        question = split_question(text)
        if question:
            self.on_question(line, *question)
            return
        for handler in (self.on_device, self.on_message, self.on_apply, self.on_no_support,
                        self.on_known_text, self.on_label, self.on_config_header, self.on_row):
            if handler(line, text):
                return
        # Not a row: free text (a warning, another command's output) ends the table.
        self.in_table = False
        self.unknown.append(line)

    def on_question(self, line, question, answer, rest):
        self.in_table = False
        reset = _RESET_RE.match(question)
        if reset:
            self.start_device()["device"] = reset.group(1)
        if rest:
            self.feed(line, rest)

    def on_device(self, line, text):
        match = _DEVICE_RE.match(text)
        if match:
            self.start_device(int(match.group(1)))
        return bool(match)

    def on_message(self, line, text):
        msg = message(text)
        if not msg:
            return False
        self.saw_message = True
        target = self.dev if self.dev is not None else self.pending
        target[msg[0]].append(msg[1])
        if msg[0] == "errors":
            self.in_table = False
            self.after_error = True
        return True

    def on_apply(self, line, text):
        match = _APPLY_RE.search(text)
        if match:
            self.current()["applied"] = match.group(1) == "Done"
            self.in_table = False
        return bool(match)

    def on_no_support(self, line, text):
        match = _NO_SUPPORT_RE.search(text)
        if match:
            dev = self.current()
            for kind in match.groups():
                if kind:
                    dev["support"][kind] = False
        return bool(match)

    def on_known_text(self, line, text):
        if _KNOWN_TEXT_RE.match(text):
            self.in_table = False
            return True
        return False

    def on_label(self, line, text):
        match = _LABEL_RE.match(text)
        if not match:
            return False
        key = HEADER_LABELS[match.group(1)]
        dev = self.dev
        if dev is None or dev[key] is not None or dev["params"] or dev["applied"] is not None:
            dev = self.start_device()
        dev[key] = match.group(2).strip()
        self.in_table = False
        return True

    def on_config_header(self, line, text):
        match = _CONFIG_RE.match(text)
        if not match:
            return False
        self.current()
        self.columns = [COLUMNS[word] for word in _COLUMN_RE.findall(match.group(1))] or None
        self.in_table = True
        self.after_error = False
        return True

    def on_row(self, line, text):
        row = split_row(text)
        if row is None:
            return False
        if self.after_error:
            return True
        name, values, modified, read_only = row
        dev = self.dev
        if dev is None or (not self.in_table and (dev["params"] or dev["applied"] is not None)):
            self.start_device()  # rows of another command (grep excerpts) after a finished block
        if not self.in_table:
            self.in_table = True
            self.columns = None
        columns = self.columns or INFERRED_COLUMNS.get(len(values))
        if columns is None or len(values) != len(columns):
            if line.no == self.last_no and (columns is None or len(values) < len(columns)):
                return True  # the capture ends inside this row
            wanted = ("%d value(s) (%s)" % (len(columns), ", ".join(columns))) if columns else "1 to 4 values"
            raise ParseError(self.tool, "expected %s after the parameter name" % wanted, line.text, line.no)
        self.columns = columns
        self.dev["params"][name] = make_param(columns, values, modified=modified, read_only=read_only)
        return True

    def result(self, lines):
        if not self.devices and not self.saw_message:
            raise not_this_tool(self.tool, self.unknown or lines, "mlxconfig device block or -E- line")
        return self.devices


def make_param(columns: Sequence[str], values: Sequence[str], *, modified: bool = False,
               read_only: bool = False) -> dict:
    """One ``params`` entry from the column keys and the printed values."""
    entry = dict(zip(columns, values))
    if "default" in entry or "current" in entry or modified:
        entry["modified"] = modified
    if read_only:
        entry["read_only"] = True
    return entry


def parse_mlxconfig(text: str | bytes | Sequence[str], *, tool: str = "mlxconfig") -> list[dict]:
    """Text output of ``mlxconfig``/``mstconfig`` ``[-e] query``, ``set``, ``reset`` and their errors.

    Returns a list with one dict per ``Device #N`` block::

        {"device_index": 1, "device_type": "ConnectX7", "name": "MCX755106AS-HEA_Ax",
         "description": "...", "device": "05:00.0",
         "params": {"NUM_OF_VFS": {"next": "16"},                          # plain query
                    "SRIOV_EN": {"default": "False(0)", "current": "True(1)",
                                 "next": "True(1)", "modified": True},     # -e query
                    "LINK_TYPE_P1": {"next": "IB(1)", "new": "ETH(2)"}},   # set
         "errors": [...], "warnings": [...], "info": [...],                # -E-/-W-/-I- text
         "applied": True,              # "Applying... Done!"; False: Failed!; None: not shown
         "support": {"default": True, "current": True}}

    ``read_only: True`` is added to rows with the 4.25+ ``RO`` marker. Header fields that are
    not printed (ConnectX-3-era output, grep excerpts) are None. Output without a ``Device #``
    line (grep excerpts, ``reset``) gets numbered entries; ``reset`` fills ``device`` from its
    question. Text with ``-E-`` lines but no device block returns ``[]``: use ``parse_errors``
    for the reason. Raises ParseError for text holding neither.
    """
    lines = content_lines(text, tool, commands=COMMANDS)
    reader = _Reader(tool, lines)
    for line in lines:
        reader.feed(line)
    return reader.result(lines)


# ---------------------------------------------------------------- JSON

_JSON_DEVICE_RE = re.compile(r"^Device #([0-9]{1,9})$")
_JSON_HEADER = ("device_type", "name", "description", "device")
_JSON_VALUES = (("default_value", "default"), ("current_value", "current"), ("next_value", "next"))


def _json_value(tool, name, value):
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ParseError(tool, "parameter %s has a value of type %s" % (name, type(value).__name__))
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def _json_param(tool, name, raw):
    if not isinstance(raw, dict):
        raise ParseError(tool, "parameter %s is not an object" % name)
    entry = {}
    for source, key in _JSON_VALUES:
        if source in raw:
            entry[key] = _json_value(tool, name, raw[source])
    if "next" not in entry:
        raise ParseError(tool, "parameter %s has no next_value" % name)
    if "modified" in raw or "default" in entry or "current" in entry:
        entry["modified"] = bool(raw.get("modified"))
    if raw.get("read_only"):
        entry["read_only"] = True
    return entry


def parse_mlxconfig_json(text: str | bytes | Sequence[str], *, tool: str = "mlxconfig_json") -> list[dict]:
    """The JSON file written by ``mlxconfig -j FILE [-e] query`` (not its stdout).

    Returns the same list as ``parse_mlxconfig``, values as strings (JSON numbers converted),
    so both forms of one device compare equal. Accepts the text or the already loaded dict.
    """
    if isinstance(text, dict):
        doc = text
    else:
        body = "\n".join(line.text for line in all_lines(text, tool))
        try:
            doc = json.loads(body)
        except ValueError as err:
            lineno = getattr(err, "lineno", None)
            bad = body.split("\n")[lineno - 1] if lineno and body else None
            raise ParseError(tool, "not JSON: %s" % getattr(err, "msg", err), bad, lineno)
    if not isinstance(doc, dict):
        raise ParseError(tool, "expected a JSON object with 'Device #N' keys")
    devices = []
    for key, raw in doc.items():
        match = _JSON_DEVICE_RE.match(str(key))
        if not match or not isinstance(raw, dict):
            raise ParseError(tool, "unexpected top-level key %r (expected 'Device #N')" % key)
        dev = new_device(int(match.group(1)))
        for field in _JSON_HEADER:
            if raw.get(field) is not None:
                dev[field] = str(raw[field]).strip()
        tlvs = raw.get("tlv_configuration") or {}
        if not isinstance(tlvs, dict):
            raise ParseError(tool, "%s: tlv_configuration is not an object" % key)
        for name, param in tlvs.items():
            dev["params"][name] = _json_param(tool, name, param)
        devices.append(dev)
    return sorted(devices, key=lambda dev: dev["device_index"])
