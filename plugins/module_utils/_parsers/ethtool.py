# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``ethtool -i IFACE`` (driver information)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import (
    ParseError,
    content_lines,
    not_this_tool,
)

COMMANDS = ("ethtool",)

_FIELD_RE = re.compile(r"^\s*(?P<key>[a-z][a-z0-9-]*):\s*(?P<value>.*)$")
_FIRMWARE_RE = re.compile(r"^(?P<version>.*?)\s*\((?P<psid>[^()]*)\)$")


def parse_ethtool_i(text: str | bytes | Sequence[str], *, tool: str = "ethtool_i") -> dict:
    """``ethtool -i IFACE`` output.

    Returns each ``key: value`` line with dashes as underscores::

        {"driver": "mlx5_core", "version": "6.8.12-8-pve", "firmware_version": "14.32.1900",
         "psid": "MT_2420110034", "expansion_rom_version": "", "bus_info": "0000:01:00.0",
         "supports_statistics": "yes", ...}

    ``psid`` comes from the parentheses newer kernels append to ``firmware-version`` (None
    without them), and is removed from ``firmware_version``. A second ``driver:`` line (the
    output of two commands) raises ParseError.
    """
    lines = content_lines(text, tool, commands=COMMANDS)
    result, unknown = {}, []
    for line in lines:
        match = _FIELD_RE.match(line.text)
        if not match:
            unknown.append(line)
            continue
        key, value = match.group("key").replace("-", "_"), match.group("value").strip()
        if key in result:
            raise ParseError(tool, "%s printed twice: the text holds more than one ethtool -i output"
                             % match.group("key"), line.text, line.no)
        result[key] = value
    if "driver" not in result:
        raise not_this_tool(tool, unknown or lines, "'driver:' line")
    firmware = _FIRMWARE_RE.match(result.get("firmware_version", ""))
    result["psid"] = firmware.group("psid").strip() if firmware else None
    if firmware:
        result["firmware_version"] = firmware.group("version")
    return result
