# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``ibdev2netdev`` and ``ibdev2netdev -v`` (mlnx-tools)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import (
    content_lines,
    full_pci,
    not_this_tool,
)

COMMANDS = ("ibdev2netdev",)

# A trailing "# ..." is tolerated: people annotate pasted output.
_TAIL = r"\s*(?:#.*)?$"
_PLAIN_RE = re.compile(r"^\s*(?P<rdma>\S+)\s+port\s+(?P<port>[0-9]{1,9})\s+==>\s+(?P<netdev>\S+)\s+\((?P<state>[^)]*)\)"
                       + _TAIL)
_VERBOSE_RE = re.compile(
    r"^\s*(?P<pci>\S+)\s+(?P<rdma>\S+)\s+\((?P<hca_type>[^)]*?)\s+-\s+(?P<board_id>[^)]*?)\)\s+"
    r"(?P<description>.*?)\s+fw\s+(?P<fw_version>\S+)\s+port\s+(?P<port>[0-9]{1,9})\s+\((?P<port_state>[^)]*)\)\s+"
    r"==>\s+(?P<netdev>\S+)\s+\((?P<state>[^)]*)\)" + _TAIL)


def parse_ibdev2netdev(text: str | bytes | Sequence[str], *, tool: str = "ibdev2netdev") -> list[dict]:
    """``ibdev2netdev`` (``mlx5_0 port 1 ==> ens1np0 (Up)``) and ``ibdev2netdev -v`` output.

    Returns a list::

        [{"rdma": "mlx5_0", "port": 1, "netdev": "ens1np0", "state": "Up"}]

    ``-v`` rows add ``pci`` (full form), ``hca_type`` (``MT4129``), ``board_id``,
    ``description``, ``fw_version`` and ``port_state`` (``ACTIVE``, padding removed).
    Empty output gives ``[]``.
    """
    lines = content_lines(text, tool, commands=COMMANDS)
    rows, unknown = [], []
    for line in lines:
        verbose = _VERBOSE_RE.match(line.text)
        plain = None if verbose else _PLAIN_RE.match(line.text)
        match = verbose or plain
        if not match:
            unknown.append(line)
            continue
        row = {"rdma": match.group("rdma"), "port": int(match.group("port")),
               "netdev": match.group("netdev"), "state": match.group("state").strip()}
        if verbose:
            for key in ("hca_type", "board_id", "description", "fw_version", "port_state"):
                row[key] = verbose.group(key).strip()
            row["pci"] = full_pci(verbose.group("pci")) or verbose.group("pci")
        rows.append(row)
    if not rows and lines:
        raise not_this_tool(tool, unknown or lines, "ibdev2netdev row")
    return rows
