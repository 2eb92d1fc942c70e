# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel attribute files read as text: the PCIe ASPM policy (drivers/pci/pcie/aspm.c prints the active one
bracketed) and an RDMA device's traffic class (mlx5_ib's `tc/1/traffic_class`)."""

from __future__ import annotations

import re

TCLASS_RE = re.compile(r"^\s*(?:Global tclass\s*=\s*)?(\d{1,3})\s*$")


def parse_aspm_policy(text: str | None) -> tuple[str | None, list[str]]:
    """``[default] performance powersave powersupersave`` -> ``("default", [all four])``; (None, []) unread."""
    if not text:
        return None, []
    words = text.split()
    active = [w.strip("[]") for w in words if w.startswith("[") and w.endswith("]")]
    if not active and len(words) == 1:     # a tree of plain files (tests, the simulator) keeps the name written
        active = words
    return (active[0] if active else None), [w.strip("[]") for w in words]


def parse_traffic_class(text: str | None) -> int | None:
    """``Global tclass=106`` (what mlx5_ib prints once set) or a bare ``106`` -> 106; empty (never set) -> None."""
    if text is None:
        return None
    first = text.strip().splitlines()[0] if text.strip() else ""
    match = TCLASS_RE.match(first)
    return int(match.group(1)) if match else None
