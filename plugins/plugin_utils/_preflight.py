# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight: everything that must hold before any host of a rollout is touched.

Pure: takes the matrix and every host's devices (mlx_info) and returns ALL problems at once,
each naming the host, the card and what is wrong, so one run shows everything to fix.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils._matrix import firmware_targets, matrix_problems


def problems(devices_by_host: dict, matrix: Any, *, require_devices: bool = True) -> list[str]:
    """``devices_by_host``: ``{host: mlx_info devices list}``. Returns a list of sentences."""
    found = list(matrix_problems(matrix))
    if found:
        return found  # device checks need a consistent matrix
    serials = {}
    for host in sorted(devices_by_host):
        devices = devices_by_host[host]
        if devices is None:
            found.append("%s: its NVIDIA devices could not be read (mlx_info did not run there)" % host)
            continue
        if require_devices and not devices:
            found.append("%s: no NVIDIA NIC/DPU found (lspci shows none)" % host)
            continue
        for target in firmware_targets(devices, matrix):
            where = "%s %s" % (host, target["address"])
            if target["action"] == "refused":
                found.append("%s: %s" % (where, target["reason"]))
            serial = (target.get("serial_number") or "").strip()
            if not serial:
                found.append("%s: the card has no serial number in its VPD ([SN])" % where)
            else:
                serials.setdefault(serial.upper(), []).append(where)
    for serial, places in sorted(serials.items()):
        if len(places) > 1:
            found.append("serial number %s is on %d cards: %s" % (serial, len(places), ", ".join(places)))
    return found
