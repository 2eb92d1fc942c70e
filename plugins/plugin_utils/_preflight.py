# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight: everything that must hold before any host of a rollout is touched.

Pure: takes the matrix and every host's devices (mlx_info) and returns ALL problems at once,
each naming the host, the card and what is wrong, so one run shows everything to fix.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._matrix import firmware_targets, matrix_problems
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of


def problems(devices_by_host: dict, matrix: Any, *, require_devices: bool = True) -> list[str]:
    """``devices_by_host``: ``{host: mlx_info devices list}``. Returns a list of sentences; InvalidValue when
    ``devices_by_host`` is not a mapping (a wrong value in one host's devices is a problem naming that host)."""
    if not isinstance(devices_by_host, dict):
        raise InvalidValue("preflight_problems: the input must be a mapping of host name to the devices list "
                           "gpufabric.mlnx.mlx_info returned there, not %s" % kind_of(devices_by_host),
                           parameter="_input", allowed="a mapping of host name to a devices list")
    found = list(matrix_problems(matrix))
    if found:
        return found  # device checks need a consistent matrix
    serials = {}
    for host in sorted(devices_by_host, key=str):
        devices = devices_by_host[host]
        if devices is None:
            found.append("%s: its NVIDIA devices could not be read (mlx_info did not run there)" % host)
            continue
        if not isinstance(devices, list):
            found.append("%s: devices must be the list gpufabric.mlnx.mlx_info returns, not %s" % (host, kind_of(devices)))
            continue
        if require_devices and not devices:
            found.append("%s: no NVIDIA NIC/DPU found (lspci shows none)" % host)
            continue
        try:
            targets = firmware_targets(devices, matrix)
        except MlnxError as err:   # a malformed device entry: named with its index
            found.append("%s: %s" % (host, err.msg))
            continue
        for target in targets:
            where = "%s %s" % (host, target["address"])
            if target["action"] == "refused":
                found.append("%s: %s" % (where, target["reason"]))
            serial = target.get("serial_number")
            serial = serial.strip() if isinstance(serial, str) else ""
            if not serial:
                found.append("%s: the card has no serial number in its VPD ([SN])" % where)
            else:
                serials.setdefault(serial.upper(), []).append(where)
    for serial, places in sorted(serials.items()):
        if len(places) > 1:
            found.append("serial number %s is on %d cards: %s" % (serial, len(places), ", ".join(places)))
    return found
