# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`ip` output: `ip -o addr show` and `ip -o route show default` (the management-interface guard)."""

from __future__ import annotations

import re


def parse_ip_addr(text: str) -> list[tuple[str, str]]:
    """``ip -o addr show`` -> [(interface, address)] (address without the prefix length)."""
    rows = []
    for line in text.splitlines():
        match = re.match(r"^\d+:\s+(?P<ifname>[^\s@:]+)(?:@\S+)?\s+inet6?\s+(?P<addr>[0-9a-fA-F.:]+)(?:/\d+)?", line)
        if match:
            rows.append((match.group("ifname"), match.group("addr")))
    return rows


def parse_ip_route(text: str) -> list[str]:
    """``ip -o route show default`` -> the interfaces named by ``dev``."""
    found = []
    for line in text.splitlines():
        match = re.search(r"\bdev\s+(\S+)", line)
        if match and match.group(1) not in found:
            found.append(match.group(1))
    return found
