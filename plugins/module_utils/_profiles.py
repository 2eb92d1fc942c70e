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
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of

MATCH_KEYS = ("part_numbers", "pci", "device_types")
# Parameter states (``_mlxconfig.drift``) that leave nothing to do: as wanted, or not applicable to the card.
DONE = ("ok", "n/a")


def check_assignments(profiles: Any, assignments: Any) -> None:
    """Every assignment names a known profile and at least one way to match (each a list of names); raises
    listing all. ``profiles`` must be a mapping of names to parameter mappings, ``assignments`` a list."""
    problems = []
    if profiles is not None and (not isinstance(profiles, dict) or not all(
            isinstance(name, str) and isinstance(params, dict) for name, params in profiles.items())):
        raise MlnxError("gpufabric_nv_profiles: must be a mapping of profile names to NV parameters, not %s"
                        % kind_of(profiles), parameter="gpufabric_nv_profiles")
    if assignments is not None and not isinstance(assignments, list):
        raise MlnxError("gpufabric_nv_profile_assignments: must be a list, not %s" % kind_of(assignments),
                        parameter="gpufabric_nv_profile_assignments")
    for index, item in enumerate(assignments or []):
        if not isinstance(item, dict):
            problems.append("assignment #%d is not a mapping" % (index + 1))
            continue
        profile = item.get("profile")
        if not isinstance(profile, str) or profile not in (profiles or {}):
            problems.append("assignment #%d names profile %r, which is not one of: %s" % (
                index + 1, profile, ", ".join(sorted(profiles or {})) or "(none defined)"))
        if not any(item.get(k) for k in MATCH_KEYS):
            problems.append("assignment #%d (profile %s) has none of %s" % (
                index + 1, profile, ", ".join(MATCH_KEYS)))
        for key in MATCH_KEYS:
            value = item.get(key)
            if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
                problems.append("assignment #%d (profile %s): %s must be a list of names, not %s" % (
                    index + 1, profile, key, kind_of(value)))
    if problems:
        raise MlnxError("gpufabric_nv_profile_assignments: " + "; ".join(problems), parameter="gpufabric_nv_profile_assignments")


def _devices(devices: Any) -> list[dict]:
    """``devices`` as mlx_info returns them (a list of mappings); MlnxError naming ``devices[i]`` otherwise."""
    if devices is None:
        return []
    if not isinstance(devices, list):
        raise MlnxError("devices must be the devices list of gpufabric.mlnx.mlx_info, not %s" % kind_of(devices),
                        parameter="devices")
    for index, dev in enumerate(devices):
        if not isinstance(dev, dict):
            raise MlnxError("devices[%d] must be a device of gpufabric.mlnx.mlx_info (a mapping), not %s" % (
                index, kind_of(dev)), parameter="devices[%d]" % index)
    return devices


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def profile_for(device: dict, assignments: list | None) -> str | None:
    """The profile name for a device (an mlx_info entry), or None."""
    pn = base_part_number(_text(device.get("part_number")))
    address = pci_full(_text(device.get("address")))
    for item in assignments or []:
        if pn and pn in [base_part_number(p) for p in item.get("part_numbers") or []]:
            return item["profile"]
        if address and address in [pci_full(p) for p in item.get("pci") or []]:
            return item["profile"]
        if isinstance(device.get("device_type"), str) and device["device_type"] in (item.get("device_types") or []):
            return item["profile"]
    return None


def report(devices: list[dict], profiles: dict, assignments: list) -> list[dict]:
    """Per device: its profile and the drift of every profile parameter (see ``drift``)."""
    check_assignments(profiles, assignments)
    out = []
    for dev in _devices(devices):
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
    for dev in _devices(devices):
        address = pci_full(_text(dev.get("address")))
        if not address.endswith(".0"):
            continue
        name = profile_for(dev, assignments)
        if name:
            out.setdefault(name, []).append(address)
    return out


def configs(devices: list[dict], profiles: dict, assignments: list) -> list[dict]:
    """``[{name, device, params}]``: one ``gpufabric.mlnx.mlxconfig`` config per NV profile that a device has (the PCI
    addresses of function 0 of its cards, first matching assignment wins), in the order of ``assign``: a profile
    where its first device is in ``devices``."""
    return [{"name": name, "device": addresses, "params": profiles[name]}
            for name, addresses in assign(devices, profiles, assignments).items()]
