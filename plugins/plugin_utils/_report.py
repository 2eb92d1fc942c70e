# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reports people read: rows, Markdown tables and CSV, from facts the modules return."""

from __future__ import annotations

import csv
import io
from typing import Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._profiles import report as drift_report
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of

INVENTORY_COLUMNS = (
    ("host", "host"), ("pci", "PCI"), ("device_type", "type"), ("part_number", "part number"),
    ("psid", "PSID"), ("serial_number", "serial"), ("fw_running", "FW running"),
    ("fw_pending", "FW pending"), ("pcie", "PCIe"), ("profile", "NV profile"), ("nv_drift", "NV drift"),
)


def _mappings(value, what, parameter):
    """``value`` when it is a list of mappings; else InvalidValue naming ``parameter[i]``."""
    if not isinstance(value, list):
        raise InvalidValue("%s must be a list of %s, not %s" % (parameter, what, kind_of(value)), parameter=parameter)
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise InvalidValue("%s[%d] must be %s (a mapping), not %s" % (parameter, index, what, kind_of(item)),
                               parameter="%s[%d]" % (parameter, index))
    return value


def _columns(columns):
    """``columns`` as ``[(key, title)]``: pairs of strings; else InvalidValue naming ``columns[i]``."""
    if not isinstance(columns, (list, tuple)):
        raise InvalidValue("columns must be a list of [key, title] pairs, not %s" % kind_of(columns),
                           parameter="columns")
    for index, column in enumerate(columns):
        if not isinstance(column, (list, tuple)) or len(column) != 2 or not all(isinstance(c, str) for c in column):
            raise InvalidValue("columns[%d] must be a [key, title] pair of strings, not %s" % (index, kind_of(column)),
                               parameter="columns[%d]" % index)
    return [tuple(column) for column in columns]


def _get(mapping, key):
    value = mapping.get(key)
    return value if isinstance(value, dict) else {}


def _link_text(link):
    width = link.get("width")
    width = "x%s" % width if isinstance(width, int) else (width or "?")
    return "%s %s" % (link.get("speed") or "?", width)


def _pcie(dev):
    pcie = _get(dev, "pcie")
    sta, cap = _get(pcie, "lnksta"), _get(pcie, "lnkcap")
    if not sta:
        return ""
    text = _link_text(sta)
    if pcie.get("degraded"):
        text += " (cap %s)" % _link_text(cap)
    return text


def _drift_text(entry):
    """What differs from the profile (``NAME: next→desired``, ``NAME: pending`` ...), else ``ok``; then each
    parameter that does not apply to the card with the rule that decides it (``NAME n/a: <rule>``)."""
    params = sorted(entry["params"].items())
    bad = ["%s: %s→%s" % (name, p["next"], p["desired"]) if p["state"] == "drift"
           else "%s: %s" % (name, p["state"])
           for name, p in params if p["state"] not in ("ok", "n/a")]
    skipped = ["%s %s" % (name, p["rule"]) for name, p in params if p["state"] == "n/a"]
    if entry["profile"] is None:
        return ""
    return "; ".join((bad or ["ok"]) + skipped)


def inventory_rows(host: str, devices: list[dict], profiles: dict | None = None,
                   assignments: list | None = None) -> list[dict]:
    """One row per device function of one host (the mlx_info ``devices`` list)."""
    devices = _mappings(devices, "a device of gpufabric.mlnx.mlx_info", "devices")
    drift = drift_report(devices, profiles or {}, assignments or []) if profiles else [None] * len(devices)
    rows = []
    for dev, entry in zip(devices, drift):
        burned, running = dev.get("fw_version"), dev.get("fw_running") or dev.get("fw_version")
        rows.append({
            "host": host,
            "pci": dev.get("address"),
            "device_type": dev.get("device_type"),
            "part_number": dev.get("part_number"),
            "psid": dev.get("psid"),
            "serial_number": dev.get("serial_number"),
            "fw_running": running,
            "fw_pending": burned if burned and burned != running else "",
            "pcie": _pcie(dev),
            "profile": (entry or {}).get("profile") or "",
            "nv_drift": _drift_text(entry) if entry else "",
        })
    return rows


def _cell(value):
    return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: list[dict], *, columns: Sequence[tuple[str, str]] = INVENTORY_COLUMNS) -> str:
    rows, columns = _mappings(rows, "a row", "rows"), _columns(columns)
    head = "| " + " | ".join(title for _key, title in columns) + " |"
    rule = "|" + "|".join("---" for _c in columns) + "|"
    body = ["| " + " | ".join(_cell(row.get(key)) for key, _t in columns) + " |" for row in rows]
    return "\n".join([head, rule] + body) + "\n"


def csv_table(rows: list[dict], *, columns: Sequence[tuple[str, str]] = INVENTORY_COLUMNS) -> str:
    rows, columns = _mappings(rows, "a row", "rows"), _columns(columns)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([key for key, _t in columns])
    for row in rows:
        writer.writerow(["" if row.get(key) is None else row.get(key) for key, _t in columns])
    return out.getvalue()
