# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``mlxfwreset`` / ``mstfwreset``: ``-d DEV q`` and ``-d DEV [-l N] [-y] reset``."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import (
    content_lines,
    message,
    not_this_tool,
    split_question,
)

COMMANDS = ("mlxfwreset", "mstfwreset")

# Section title (up to the first space or colon) -> result key; other sections are skipped.
SECTIONS = {"Reset-levels": "levels", "Reset-types": "types", "Reset-sync": "sync"}

_SECTION_RE = re.compile(r"^\s*(Reset-[A-Za-z]+)\b[^:]*:\s*(.*)$")
_OPTION_RE = re.compile(r"^\s*(?P<level>[0-9]{1,9}):\s*(?P<desc>.*?)\s*-(?P<status>Supported|Not Supported)\s*"
                        r"(?P<default>\(default\))?\s*$", re.I)


def parse_mlxfwreset(text: str | bytes | Sequence[str], *, tool: str = "mlxfwreset") -> dict:
    """``mlxfwreset``/``mstfwreset -d DEV q`` output.

    Returns ``{"levels": [...], "types": [...], "sync": [...], "errors": [...]}``, each option
    ``{"level": 3, "description": "Driver restart and PCI reset", "supported": True,
    "default": False}`` (``Not supported``, lowercase in Reset-sync rows, is False too).
    """
    lines = content_lines(text, tool, commands=COMMANDS)
    result = {"levels": [], "types": [], "sync": [], "errors": []}
    section, found, unknown = None, False, []
    for line in lines:
        msg = message(line.text)
        if msg:
            if msg[0] == "errors":
                result["errors"].append(msg[1])
            continue
        head = _SECTION_RE.match(line.text)
        if head:
            section = SECTIONS.get(head.group(1))
            found = found or section is not None
            continue
        option = _OPTION_RE.match(line.text)
        if option and section:
            result[section].append({
                "level": int(option.group("level")),
                "description": option.group("desc"),
                "supported": option.group("status").lower() == "supported",
                "default": bool(option.group("default")),
            })
        elif section is None:
            unknown.append(line)
    if not found and not result["errors"]:
        raise not_this_tool(tool, unknown or lines, "Reset-levels table")
    return result


_LEVEL_HEAD_RE = re.compile(r"^\s*The reset level for device,?\s*(?P<device>.*?)\s+is:\s*$")
_LEVEL_RE = re.compile(r"^\s*(?P<level>[0-9]{1,9}):\s*(?P<desc>.*)$")
_STEP_RE = re.compile(r"^\s*-I-\s+(?P<step>.*?)\s*-(?P<status>Done|Skipped|Failed|FAILED|Fail)\s*$")
_LOADED_RE = re.compile(r"FW was loaded successfully")
GOOD_STEPS = ("Done", "Skipped")


def parse_mlxfwreset_reset(text: str | bytes | Sequence[str], *, tool: str = "mlxfwreset_reset") -> dict:
    """``mlxfwreset``/``mstfwreset -d DEV [-l N] [-y] reset`` output.

    Returns::

        {"device": "/dev/mst/mt4129_pciconf0", "level": 3,
         "steps": [{"step": "Sending Reset Command To Fw", "status": "Done"}, ...],
         "ok": True,     # no -E- line, and every step Done/Skipped
         "errors": [...]}

    ``level`` is None when the level line is not printed.
    """
    lines = content_lines(text, tool, commands=COMMANDS)
    result = {"device": None, "level": None, "steps": [], "ok": False, "errors": []}
    want_level, loaded, unknown = False, False, []
    for line in lines:
        text_ = line.text
        question = split_question(text_)
        if question:
            text_ = question[2]
            if not text_:
                continue
        head, step = _LEVEL_HEAD_RE.match(text_), _STEP_RE.match(text_)
        level = _LEVEL_RE.match(text_) if want_level else None
        msg = message(text_)
        if head:
            result["device"], want_level = head.group("device"), True
        elif level:
            result["level"], want_level = int(level.group("level")), False
        elif step:
            result["steps"].append({"step": step.group("step"), "status": step.group("status")})
        elif msg:
            if msg[0] == "errors":
                result["errors"].append(msg[1])
            loaded = loaded or bool(_LOADED_RE.search(msg[1]))
        else:
            unknown.append(line)
    if not (result["device"] or result["steps"] or result["errors"] or loaded):
        raise not_this_tool(tool, unknown or lines, "mlxfwreset reset output")
    result["ok"] = not result["errors"] and bool(result["steps"] or loaded) and all(
        step["status"] in GOOD_STEPS for step in result["steps"])
    return result
