# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``ofed_info -s`` (MLNX_OFED and DOCA-OFED)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import (
    content_lines,
    not_this_tool,
)

COMMANDS = ("ofed_info",)

# Package prefix -> flavour.
FLAVOURS = {"MLNX_OFED_LINUX": "mlnx-ofed", "OFED-internal": "doca-ofed"}

# "MLNX_OFED_LINUX-5.8-1.1.2.1:" (-s); plain ofed_info adds " (OFED-5.8-1.1.2):".
_PACKAGE_RE = re.compile(r"^\s*(?P<raw>(?P<prefix>MLNX_OFED_LINUX|OFED-internal)-(?P<version>\d[\w.-]*?))"
                         r"(?:\s+\([^)]*\))?:?\s*$")
_BARE_RE = re.compile(r"^\s*(?P<version>\d+\.\d+-[\w.-]+)\s*$")  # ofed_info -n


def parse_ofed_info(text: str | bytes | Sequence[str], *, tool: str = "ofed_info") -> dict:
    """``ofed_info -s`` (also plain ``ofed_info``'s first line, or ``ofed_info -n``).

    Returns ``{"version": "5.8-1.1.2.1", "flavour": "mlnx-ofed", "raw": "MLNX_OFED_LINUX-5.8-1.1.2.1"}``
    (trailing colon removed); ``flavour`` is ``doca-ofed`` for ``OFED-internal-...`` and None
    for a bare ``-n`` version.
    """
    lines = content_lines(text, tool, commands=COMMANDS)
    bare = None
    for line in lines:
        match = _PACKAGE_RE.match(line.text)
        if match:
            return {"version": match.group("version"), "flavour": FLAVOURS[match.group("prefix")],
                    "raw": match.group("raw")}
        bare = bare or _BARE_RE.match(line.text)
    if bare:
        return {"version": bare.group("version"), "flavour": None, "raw": bare.group("version")}
    raise not_this_tool(tool, lines, "MLNX_OFED_LINUX-/OFED-internal- version line")
