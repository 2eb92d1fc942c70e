# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the counters of ``mlxlink -d DEV -p PORT -c`` (MFT; ``mstlink`` in Debian's mstflint).

mlxlink prints sections: a blank line, the title, a dash rule as long as it, then ``key`` padded to a column,
``: `` and the value (tests/fixtures/real/mlxlink_bf3_1.txt; mstflint ``mlxlink/modules``). The section the
validation gate reads is ``Physical Counters and BER Info`` (``--show_counters``)::

    Time Since Last Clear [Min]        : 25074.8
    Effective Physical Errors          : 0
    Effective Physical BER             : 15E-255
    Raw Physical Errors Per Lane       : 0,0,0,0
    Link Down Counter                  : 0
    Link Error Recovery Counter        : 0
    Raw Physical BER                   : 15E-255

``15E-255`` is how mlxlink prints a BER of no errors.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import ParseError, content_lines, not_this_tool

COMMANDS = ("mlxlink", "mstlink")
SECTION = "Physical Counters and BER Info"
_ROW_RE = re.compile(r"(?P<key>[A-Za-z][A-Za-z0-9 /()\[\]._-]*?)\s*:(?:\s+(?P<value>.*))?", re.ASCII)
_INT_RE = re.compile(r"[0-9]{1,20}", re.ASCII)
_BER_RE = re.compile(r"(?P<m>[0-9]+(?:\.[0-9]+)?)E(?P<e>[-+]?[0-9]{1,3})", re.ASCII)
_MIN_RE = re.compile(r"[0-9]+(?:\.[0-9]+)?", re.ASCII)


def ber_value(text: str) -> float | None:
    """``15E-255`` (no errors) -> 0.0, ``3E-12`` -> 3e-12; None when the text is not a BER as mlxlink prints it."""
    match = _BER_RE.fullmatch(text.strip())
    if not match:
        return None
    if match.group("m") == "15" and match.group("e") == "-255":
        return 0.0
    return float(match.group(0))


def parse_mlxlink_counters(text: str | bytes | Sequence[str], *, tool: str = "mlxlink") -> dict:
    """The ``Physical Counters and BER Info`` section of ``mlxlink -c``, every value checked::

        {"minutes_since_clear": 25074.8, "effective_errors": 0, "effective_ber": 0.0,
         "raw_errors_lanes": [0, 0, 0, 0], "raw_errors": 0, "link_down": 0, "link_error_recovery": 0,
         "raw_ber": 0.0}

    Raises ParseError when the section is missing, when a counter the gate needs (effective errors, raw errors per
    lane, link down counter) is missing, or when any of its values is not the form mlxlink prints (an integer, a
    comma list of integers, a BER such as ``3E-12``) - an answer it does not know is never read as "no errors".
    """
    lines = content_lines(text, tool, commands=COMMANDS)
    rows, inside = {}, False
    for line in lines:
        stripped = line.text.strip()
        if stripped == SECTION:
            inside = True
            continue
        match = _ROW_RE.fullmatch(stripped)
        if not match:
            if inside and rows:
                break           # the next section's title
            continue
        if inside:
            rows[match.group("key").strip()] = ((match.group("value") or "").strip(), line)
    if not inside:
        raise not_this_tool(tool, lines, "'%s' section (mlxlink --show_counters / -c)" % SECTION)
    out = {}

    def need(key):
        if key not in rows:
            raise ParseError(tool, "the '%s' section has no '%s' row" % (SECTION, key))
        return rows[key]

    def integer(key, name):
        value, line = need(key)
        if not _INT_RE.fullmatch(value):
            raise ParseError(tool, "%s: %r is not a count" % (key, value), line.text, line.no)
        out[name] = int(value)

    integer("Effective Physical Errors", "effective_errors")
    integer("Link Down Counter", "link_down")
    value, line = need("Raw Physical Errors Per Lane")
    lanes = [part.strip() for part in value.split(",")]
    if not all(_INT_RE.fullmatch(part) for part in lanes):
        raise ParseError(tool, "Raw Physical Errors Per Lane: %r is not a comma list of counts" % value,
                         line.text, line.no)
    out["raw_errors_lanes"] = [int(part) for part in lanes]
    out["raw_errors"] = sum(out["raw_errors_lanes"])
    if "Link Error Recovery Counter" in rows:
        integer("Link Error Recovery Counter", "link_error_recovery")
    for key, name in (("Effective Physical BER", "effective_ber"), ("Raw Physical BER", "raw_ber")):
        if key in rows:
            value, line = rows[key]
            ber = ber_value(value)
            if ber is None:
                raise ParseError(tool, "%s: %r is not a BER (mantissa E exponent, 15E-255 for none)" % (key, value),
                                 line.text, line.no)
            out[name] = ber
    if "Time Since Last Clear [Min]" in rows:
        value, line = rows["Time Since Last Clear [Min]"]
        if not _MIN_RE.fullmatch(value):
            raise ParseError(tool, "Time Since Last Clear [Min]: %r is not a number of minutes" % value,
                             line.text, line.no)
        out["minutes_since_clear"] = float(value)
    return out
