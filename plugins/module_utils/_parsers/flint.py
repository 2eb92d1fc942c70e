# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``flint`` / ``mstflint``: ``query`` (``-d DEV q``, ``-i IMAGE q``, ``q full``) and ``burn``."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import (
    ParseError,
    content_lines,
    message,
    not_this_tool,
    snake,
    split_question,
)

COMMANDS = ("flint", "mstflint")

# Query label -> key; any other "Label:" line becomes snake_case(label).
LABELS = {
    "Image type": "image_type",
    "FW Version": "fw_version",
    "FW Version(Running)": "fw_version_running",
    "FW Release Date": "fw_release_date",
    "MIC Version": "mic_version",
    "PRS Name": "prs_name",
    "Part Number": "part_number",
    "Description": "description",
    "Product Version": "product_version",
    "Rom Info": "rom_info",
    "Base GUID": "base_guid",
    "Base MAC": "base_mac",
    "Image VSD": "image_vsd",
    "Device VSD": "device_vsd",
    "PSID": "psid",
    "Orig PSID": "orig_psid",
    "Security Attributes": "security_attributes",
    "Security Ver": "security_ver",
    "Default Update Method": "default_update_method",
    "Life cycle": "life_cycle",
    "Secure Boot Capable": "secure_boot_capable",
}
# "Base GUID:  <uid>  <count>" -> the key of the count.
COUNTS = {"base_guid": "guids_number", "base_mac": "macs_number"}
# Keys that prove the text is a flint query.
EVIDENCE = ("image_type", "fw_version", "psid", "product_version", "base_guid", "base_mac")

_LABEL_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 ()/._-]*?):(?:\s+(.*))?$")
# "Description:  UID  GuidsNumber" (FS3+) and "Description:  Node  Port1 ..." (FS2) head the GUID table.
_TABLE_HEAD_RE = re.compile(r"^(?:UID\s+GuidsNumber|Node\s+Port1)")
_ROM_RE = re.compile(r"^\s*type=")


def rom_entry(text: str) -> dict[str, str]:
    """``type=UEFI version=14.26.17 cpu=AMD64,AARCH64`` -> a dict of its key=value words."""
    entry = {}
    for word in text.split():
        key, sep, value = word.partition("=")
        if sep:
            entry[key] = value
    return entry


def _rom(tool, line, text):
    """One Rom Info entry; anything but ``type=... version=...`` words is refused naming the line (an OEM or old
    image's ROMs have no ``cpu=``: ``type=PXE version=3.4.729``)."""
    entry = rom_entry(text)
    if not entry.get("type") or not entry.get("version"):
        raise ParseError(tool, "a Rom Info entry is not type=... version=...", line.text, line.no)
    return entry


def _rom_info(tool, line, value):
    """``Rom Info:``'s own value: its first entry, ``[]`` for ``N/A``; any other text is refused naming the line."""
    if _ROM_RE.match(value):
        return [_rom(tool, line, value)]
    if value in ("N/A", ""):
        return []
    raise ParseError(tool, "Rom Info is neither N/A nor type=... version=...", line.text, line.no)


def _query_value(result, key, value):
    if key in COUNTS:
        words = value.split()
        result[key] = words[0] if words else ""
        if len(words) > 1:
            result[COUNTS[key]] = words[1]
    else:
        result[key] = value


def parse_flint(text: str | bytes | Sequence[str], *, tool: str = "flint") -> dict:
    """``flint``/``mstflint`` ``-d DEV q``, ``-i IMAGE q`` and ``q full`` output.

    Returns a dict keyed by the snake_case of each label, values as printed::

        {"image_type": "FS4", "fw_version": "28.42.1000", "fw_version_running": ... (when printed),
         "fw_release_date": "8.8.2024", "product_version": "28.42.1000",
         "rom_info": [{"type": "UEFI", "version": "14.35.15", "cpu": "AMD64,AARCH64"}, ...],
         "base_guid": "e09d730300126474", "guids_number": "16",
         "base_mac": "e09d73126474", "macs_number": "16",
         "image_vsd": "N/A", "device_vsd": "N/A", "psid": "MT_0000001244",
         "security_attributes": "secure-fw", ..., "errors": [-E- lines]}

    ``rom_info`` is ``[]`` for ``Rom Info: N/A``; an entry has no ``cpu`` when the image's ROM prints none (OEM and
    old images: ``type=PXE version=3.4.729``). A ``Rom Info`` line that is neither raises ParseError naming it.
    """
    lines = content_lines(text, tool, commands=COMMANDS)
    result = {"errors": []}
    unknown = []
    for line in lines:
        msg = message(line.text)
        if msg:
            if msg[0] == "errors":
                result["errors"].append(msg[1])
            continue
        if _ROM_RE.match(line.text):
            result.setdefault("rom_info", []).append(_rom(tool, line, line.text))
            continue
        label = _LABEL_RE.match(line.text)
        if not label:
            unknown.append(line)
            continue
        name, value = label.group(1).strip(), (label.group(2) or "").strip()
        if name == "Description" and _TABLE_HEAD_RE.match(value):
            continue
        key = LABELS.get(name, snake(name))
        if key == "rom_info":
            result["rom_info"] = _rom_info(tool, line, value)
        elif key != "errors":
            _query_value(result, key, value)
    if not result["errors"] and not any(key in result for key in EVIDENCE):
        raise not_this_tool(tool, unknown or lines, "flint query field")
    return result


# ---------------------------------------------------------------- burn

_CURRENT_RE = re.compile(r"^\s*Current FW version on flash:\s*(.*)$")
_NEW_RE = re.compile(r"^\s*New FW version:\s*(.*)$")
_STAGE_RE = re.compile(r"^\s*(?P<stage>[A-Za-z]\S*(?: \S+)*?)\s+-\s+(?P<status>OK|FAILED|Failed|\d+%.*)$")
_PSID_RE = re.compile(r"PSID on flash \((.*?)\) differs from the PSID in the given image \((.*?)\)")
FINAL = ("OK",)


def parse_flint_burn(text: str | bytes | Sequence[str], *, tool: str = "flint_burn") -> dict:
    """``flint``/``mstflint -d DEV -i IMAGE [-y] [--allow_psid_change] burn`` output.

    Returns::

        {"current_version": "12.28.2006", "new_version": "12.28.2302",
         "stages": [{"stage": "FSMST_INITIALIZE", "status": "OK"}, ...],
         "ok": True,            # no -E- line and every stage ended OK
         "errors": [...], "warnings": [...], "info": [...],   # -E-/-W-/-I- text
         "psid_mismatch": {"flash": "DEL2420110034", "image": "MT_2420110034"} or None}

    A stage whose last status is a percentage (output cut during the burn) leaves ``ok`` False.
    """
    lines = content_lines(text, tool, commands=COMMANDS)
    result = {"current_version": None, "new_version": None, "stages": [], "ok": False,
              "errors": [], "warnings": [], "info": [], "psid_mismatch": None}
    stages = {}
    unknown = []
    for line in lines:
        text_ = line.text
        question = split_question(text_)
        if question:
            text_ = question[2]
            if not text_:
                continue
        msg = message(text_)
        current, new, stage = _CURRENT_RE.match(text_), _NEW_RE.match(text_), _STAGE_RE.match(text_)
        if msg:
            result[msg[0]].append(msg[1])
            psid = _PSID_RE.search(msg[1])
            if psid:
                result["psid_mismatch"] = {"flash": psid.group(1), "image": psid.group(2)}
        elif current:
            result["current_version"] = current.group(1).strip()
        elif new:
            result["new_version"] = new.group(1).strip()
        elif stage:
            name, status = stage.group("stage"), stage.group("status")
            if name not in stages:
                stages[name] = {"stage": name, "status": status}
                result["stages"].append(stages[name])
            elif not status[0].isdigit() or stages[name]["status"][0].isdigit():
                stages[name]["status"] = status
        else:
            unknown.append(line)
    if not (result["current_version"] or result["new_version"] or result["stages"] or result["errors"]):
        raise not_this_tool(tool, unknown or lines, "flint burn output")
    result["ok"] = bool(result["stages"]) and not result["errors"] and all(
        item["status"] in FINAL for item in result["stages"])
    return result
