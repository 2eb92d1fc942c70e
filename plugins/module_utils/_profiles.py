# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Named NV configuration profiles and which device gets which.

Inventory keeps ``gpufabric_nv_profiles`` (``{name: {PARAM: value}}``) and
``gpufabric_nv_profile_assignments``, a list tried in order, the first match wins::

    - {profile: roce_compute, part_numbers: [MCX75310AAS-NEAT]}
    - {profile: storage, pci: ["0000:29:00.0", "0000:aa:00.0"]}
    - {profile: dpu, device_types: [BlueField3]}
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils._devices import base_part_number, pci_full
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mlxconfig import drift

MATCH_KEYS = ("part_numbers", "pci", "device_types")
# Parameter states (``_mlxconfig.drift``) that leave nothing to do: as wanted, or not applicable to the card.
DONE = ("ok", "n/a")


def check_assignments(profiles: Any, assignments: Any) -> None:
    """Every assignment names a known profile and at least one way to match; raises listing all."""
    problems = []
    for index, item in enumerate(assignments or []):
        if not isinstance(item, dict):
            problems.append("assignment #%d is not a mapping" % (index + 1))
            continue
        if item.get("profile") not in (profiles or {}):
            problems.append("assignment #%d names profile %r, which is not one of: %s" % (
                index + 1, item.get("profile"), ", ".join(sorted(profiles or {})) or "(none defined)"))
        if not any(item.get(k) for k in MATCH_KEYS):
            problems.append("assignment #%d (profile %s) has none of %s" % (
                index + 1, item.get("profile"), ", ".join(MATCH_KEYS)))
    if problems:
        raise MlnxError("gpufabric_nv_profile_assignments: " + "; ".join(problems), parameter="gpufabric_nv_profile_assignments")


def profile_for(device: dict, assignments: list | None) -> str | None:
    """The profile name for a device (an mlx_info entry), or None."""
    pn = base_part_number(device.get("part_number"))
    address = pci_full(device.get("address") or "")
    for item in assignments or []:
        if pn and pn in [base_part_number(p) for p in item.get("part_numbers") or []]:
            return item["profile"]
        if address and address in [pci_full(p) for p in item.get("pci") or []]:
            return item["profile"]
        if device.get("device_type") and device["device_type"] in (item.get("device_types") or []):
            return item["profile"]
    return None


def report(devices: list[dict], profiles: dict, assignments: list) -> list[dict]:
    """Per device: its profile and the drift of every profile parameter (see ``drift``)."""
    check_assignments(profiles, assignments)
    out = []
    for dev in devices:
        name = profile_for(dev, assignments)
        params = drift(dev.get("nv_config") or {}, profiles[name]) if name else {}
        states = sorted({p["state"] for p in params.values()})
        out.append({
            "address": dev.get("address"),
            "part_number": dev.get("part_number"),
            "profile": name,
            "params": params,
            "state": "no profile" if not name else (",".join(s for s in states if s not in DONE) or "ok"),
        })
    return out


def assign(devices: list[dict], profiles: dict, assignments: list) -> dict[str, list[str]]:
    """``{profile: [PCI address, ...]}`` for the devices that have a profile (function 0 of a
    card only: both functions share the card's global and port parameters)."""
    check_assignments(profiles, assignments)
    out = {}
    for dev in devices:
        address = pci_full(dev.get("address") or "")
        if not address.endswith(".0"):
            continue
        name = profile_for(dev, assignments)
        if name:
            out.setdefault(name, []).append(address)
    return out
