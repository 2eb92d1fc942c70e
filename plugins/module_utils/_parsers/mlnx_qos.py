# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``mlnx_qos -i IFACE`` (mlnx-tools), which prints the port's QoS state after any change."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import (
    ParseError,
    content_lines,
    not_this_tool,
)

COMMANDS = ("mlnx_qos",)

_DCBX_RE = re.compile(r"^\s*DCBX mode:\s*(.*)$")
_TRUST_RE = re.compile(r"^\s*Priority trust (?:state|mode):\s*(\S*)")
_DSCP_RE = re.compile(r"^\s*prio:\s*([0-9]{1,9})\s+dscp:\s*([0-9,\s]*)$")
_DEFAULT_PRIO_RE = re.compile(r"^\s*default priority:\s*([0-9]{1,9})?\s*$")
_BUFFER_SIZES_RE = re.compile(r"^\s*Receive buffer size \(bytes\):\s*(.*)$")
_CABLE_RE = re.compile(r"^\s*Cable len:\s*([0-9]{1,9})\b")
_PFC_ROW_RE = re.compile(r"^\s*(priority|enabled|buffer)((?:\s+[0-9]{1,9})+)\s*$")
_TC_RE = re.compile(r"^\s*tc:\s*(?P<tc>[0-9]{1,9})\s+ratelimit:\s*(?P<ratelimit>[^,]*?)\s*,\s*tsa:\s*(?P<tsa>[^,\s]+)"
                    r"(?:\s*,\s*bw:\s*(?P<bw>\S+))?\s*$")
_TC_PRIO_RE = re.compile(r"^\s*priority:\s*([0-9\s,]+)$")
_NUMBER_RE = re.compile(r"^[0-9]{1,9}$")
# Result keys a "name=N" word of the buffer line must not overwrite.
STRUCTURE = ("dcbx_mode", "trust", "dscp2prio", "default_priority", "buffer_sizes", "cable_len", "pfc", "tcs")


def _number(word):
    """``int`` of a plain decimal word (at most 9 digits), else None."""
    return int(word) if _NUMBER_RE.match(word) else None


def _ints(text):
    return [int(word) for word in re.split(r"[\s,]+", text) if _NUMBER_RE.match(word)]


def _dscp(result, match):
    for dscp in _ints(match.group(2)):
        result["dscp2prio"][dscp] = int(match.group(1))


def _default_priority(result, match):
    if match.group(1):
        result["default_priority"] = int(match.group(1))


def _buffer_sizes(result, match):
    sizes = []
    for word in match.group(1).split(","):
        word = word.strip()
        key, sep, value = word.partition("=")
        key = key.strip()
        if sep and _number(value.strip()) is not None and re.match(r"^[a-z_]+$", key) and key not in STRUCTURE:
            result[key] = _number(value.strip())  # max_buffer_size=N
        elif _number(word) is not None:
            sizes.append(_number(word))
    result["buffer_sizes"] = sizes


def _cable(result, match):
    result["cable_len"] = int(match.group(1))


def _pfc_row(result, match):
    if match.group(1) != "priority":  # the header row
        result["pfc"][match.group(1)] = _ints(match.group(2))


def _tc(result, match):
    result["tcs"].append({"tc": int(match.group("tc")), "ratelimit": match.group("ratelimit"),
                          "tsa": match.group("tsa"), "bw": match.group("bw"), "priorities": []})


def _tc_priority(result, match):
    if not result["tcs"]:
        return False
    result["tcs"][-1]["priorities"].extend(_ints(match.group(1)))
    return True


def _ignore(result, match):
    return True


# Line pattern -> handler(result, match); a handler returning False did not take the line.
LINES = (
    (_DSCP_RE, _dscp),
    (_DEFAULT_PRIO_RE, _default_priority),
    (_BUFFER_SIZES_RE, _buffer_sizes),
    (_CABLE_RE, _cable),
    (_PFC_ROW_RE, _pfc_row),
    (_TC_RE, _tc),
    (_TC_PRIO_RE, _tc_priority),
    (re.compile(r"^\s*(?:dscp2prio mapping|PFC configuration):\s*$"), _ignore),
)
# Lines printed once per invocation: a second one means two outputs in one text.
ONCE = ((_DCBX_RE, "dcbx_mode"), (_TRUST_RE, "trust"))


def _feed(tool, result, line):
    """Apply ``line`` to ``result``; False when no pattern takes it."""
    for pattern, key in ONCE:
        match = pattern.match(line.text)
        if match:
            if result[key] is not None:
                raise ParseError(tool, "a second '%s' line: the text holds more than one mlnx_qos output"
                                 % line.text.split(":")[0].strip(), line.text, line.no)
            result[key] = match.group(1).strip()
            return True
    for pattern, handler in LINES:
        match = pattern.match(line.text)
        if match:
            return handler(result, match) is not False
    return False


def parse_mlnx_qos(text: str | bytes | Sequence[str], *, tool: str = "mlnx_qos") -> dict:
    """``mlnx_qos -i IFACE [--trust ...] [--pfc ...]`` output (one invocation).

    Returns (ints where the tool prints numbers)::

        {"dcbx_mode": "OS controlled", "trust": "dscp",
         "dscp2prio": {0: 0, 1: 0, ..., 63: 7},             # {} with pcp trust
         "default_priority": 0,                              # newer builds only
         "buffer_sizes": [524160, 0, ...], "cable_len": 7,   # None when not printed
         "pfc": {"enabled": [0, 0, 0, 1, 0, 0, 0, 0], "buffer": [0, ...] or None},
         "tcs": [{"tc": 0, "ratelimit": "unlimited", "tsa": "vendor", "bw": None,
                  "priorities": [1]}, ...]}

    Older MLNX_OFED builds print no DCBX and buffer lines: those keys are None. The output
    of two invocations raises ParseError.
    """
    lines = content_lines(text, tool, commands=COMMANDS)
    result = {"dcbx_mode": None, "trust": None, "dscp2prio": {}, "buffer_sizes": None, "cable_len": None,
              "pfc": {"enabled": None, "buffer": None}, "tcs": []}
    unknown = [line for line in lines if not _feed(tool, result, line)]
    if result["trust"] is None and not result["tcs"] and result["pfc"]["enabled"] is None:
        raise not_this_tool(tool, unknown or lines, "mlnx_qos state")
    return result
