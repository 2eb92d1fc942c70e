# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Delivery check: do the cards that arrived match what was ordered, and do they look genuine?

Pure. Compares every card the ``gpufabric.mlnx.mlx_info`` module found on every host with the
expected asset list (CSV: host, slot, part_number, serial) and the version matrix
``gpufabric_matrix``, and returns every finding at once:

- ``findings(devices_by_host, assets, matrix, severities=None)``: a list of
  ``{host, address, slot, serial, part_number, psid, check, severity, message, expected, found}``,
  one per problem and card; ``message`` names the host, the slot and PCI address, and what was
  expected against what was found.
- ``parse_assets(assets)``: the asset list (CSV text or rows) checked and normalised; every bad
  row is reported at once (InvalidValue naming the line and the column).
- ``report(...)``: the same findings as a person reads them (Markdown), as CSV and as JSON.

``CHECKS`` lists every check with its default severity; ``severities`` may raise, lower or
ignore any of them.
"""

from __future__ import annotations

import csv
import json
import re
from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils._devices import base_part_number, card_of, info_cards
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._matrix import check as check_matrix
from ansible_collections.gpufabric.mlnx.plugins.module_utils._matrix import path_of
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import is_whole
from ansible_collections.gpufabric.mlnx.plugins.module_utils._versions import version_key
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._report import csv_table, markdown_table

ERROR = "error"
WARNING = "warning"
IGNORE = "ignore"
SEVERITIES = (ERROR, WARNING)

# check id -> (default severity, what it means). The order is the order of the report.
CHECKS = {
    "host_unread": (ERROR, "the host's devices could not be read (unreachable, or mlx_info failed)"),
    "missing_card": (ERROR, "a card of the asset list is not on its host"),
    "unexpected_card": (ERROR, "a card on a host is not in the asset list"),
    "slot_mismatch": (ERROR, "the card of the asset list is on its host, in another slot"),
    "part_number_mismatch": (ERROR, "the card's part number (VPD [PN]) is not the one in the asset list"),
    "serial_mismatch": (ERROR, "the card's serial number (VPD [SN]) is not the one in the asset list"),
    "part_number_missing": (ERROR, "the card has no part number in its VPD ([PN])"),
    "psid_unread": (ERROR, "the card's firmware (PSID, version) could not be read"),
    "unknown_psid": (ERROR, "the card's PSID is not in the matrix"),
    "oem_psid_on_retail_part": (ERROR, "an OEM PSID (DEL..., HP_..., LNV..., IBM..., SM_...) on an NVIDIA retail "
                                       "part number (MCX..., MBF..., 900-9...)"),
    "retail_psid_on_oem_part": (ERROR, "an NVIDIA PSID (MT_...) on a part number that is not NVIDIA's (OEM)"),
    "psid_part_mismatch": (ERROR, "the PSID's image is not for the card's part number (matrix part_numbers)"),
    "serial_missing": (ERROR, "the card has no serial number in its VPD ([SN])"),
    "serial_malformed": (WARNING, "the serial number does not look like one (placeholder text, or not the NVIDIA "
                                  "format MT + year + week + letter + 5 digits on an NVIDIA part)"),
    "serial_duplicate": (ERROR, "the same serial number is on two or more cards (of any hosts)"),
    "firmware_other_family": (ERROR, "the firmware's major version is not the family of the part's firmware"),
    "firmware_older_than_shipped": (ERROR, "the firmware is older than anything the part shipped with "
                                           "(matrix shipped_min)"),
    "pcie_width": (ERROR, "the PCIe link trained narrower than the card can run (LnkSta width < LnkCap width)"),
    "pcie_speed": (WARNING, "the PCIe link trained slower than the card can run (LnkSta speed < LnkCap speed)"),
    "pcie_unread": (WARNING, "the PCIe link capability or status could not be read (lspci needs root)"),
}

ASSET_COLUMNS = ("host", "slot", "part_number", "serial")
# Header words people use for the same column (spreadsheets, vendor lists).
ASSET_ALIASES = {"hostname": "host", "server": "host", "pci": "slot", "address": "slot", "pci_address": "slot",
                 "pn": "part_number", "part": "part_number", "part_no": "part_number", "opn": "part_number",
                 "sn": "serial", "serial_number": "serial", "serial_no": "serial"}

# A PCI address of a card or a function: 0000:18:00, 18:00, 0000:18:00.0, 18:00.0.
CARD_RE = re.compile(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?\Z", re.ASCII)
# NVIDIA (retail) part numbers of NICs and DPUs: ConnectX MCX..., BlueField MBF..., and the
# 900-9... ordering numbers of BlueField-3 and newer adapters (900-9D3B6-00CV-AA0); 699-/920-
# are NVIDIA board numbers of cards built into NVIDIA systems.
NVIDIA_PART_RE = re.compile(r"^(?:MCX|MBF|MBE|900-9|699-|920-)", re.IGNORECASE)
# A PSID: vendor prefix and digits, as flint prints it (MT_0000000838, DEL0000000027, HP_0000000009).
PSID_VENDOR_RE = re.compile(r"^([A-Z]{2,3}_?)\d", re.ASCII)
NVIDIA_PSID_PREFIX = "MT_"
# Vendor symbols seen on OEM Mellanox/NVIDIA cards (the PSID's first characters).
PSID_VENDORS = {"MT_": "NVIDIA", "DEL": "Dell", "HP_": "HPE", "LNV": "Lenovo", "IBM": "IBM", "SM_": "Supermicro",
                "MSF": "Microsoft"}
# The serial numbers NVIDIA writes in the VPD [SN] of its adapters and DPUs, e.g. MT2050X00614
# (BlueField-2, lspci capture), MT1838X04950 (ConnectX-4): MT, two digits of the year, two of the
# week (50 and 38 cannot be months, so the second pair is a week: 01-53), one letter, five digits.
NVIDIA_SERIAL_RE = re.compile(r"^MT(?P<year>\d{2})(?P<week>\d{2})[A-Z]\d{5}\Z", re.ASCII)
NVIDIA_SERIAL_TEXT = "MT + 2-digit year + 2-digit week (01-53) + one letter + 5 digits, e.g. MT2050X00614"
# Text that fills a VPD [SN] nobody programmed.
PLACEHOLDER_SERIALS = ("N/A", "NA", "NONE", "NULL", "UNKNOWN", "DEFAULT STRING", "TO BE FILLED BY O.E.M.",
                       "SERIAL", "SN", "0123456789", "123456789", "1234567890")
SPEED_RE = re.compile(r"(\d+(?:\.\d+)?)", re.ASCII)
WIDTH_RE = re.compile(r"(\d+)", re.ASCII)

FINDING_KEYS = ("severity", "host", "slot", "address", "check", "part_number", "serial", "psid", "expected",
                "found", "message")
REPORT_COLUMNS = (("host", "host"), ("slot", "slot"), ("address", "PCI"), ("check", "check"),
                  ("expected", "expected"), ("found", "found"), ("message", "what is wrong"))


# ---------------------------------------------------------------- small helpers

def _text(value):
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    return text or None


def _upper(value):
    text = _text(value)
    return text.upper() if text else None


def _kind(value):
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return "the string %s" % json.dumps(value[:60])
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return "%s %r" % (type(value).__name__, value)


def _slot_key(slot):
    """``('pci', '0000:18:00')`` for a PCI address (card), else ``('slot', 'text')`` for a physical slot."""
    text = slot.strip()
    if CARD_RE.match(text):
        if text.count(":") == 1:
            text = "0000:" + text
        return ("pci", card_of(text if "." in text else text + ".0"))
    return ("slot", text.lower())


def _where(host, slot=None, address=None):
    """``srv-01 slot 3 (0000:65:00.0)``, ``srv-01 0000:65:00.0``, ``srv-01 slot 3``."""
    parts = [host]
    if slot and _slot_key(slot)[0] != "pci":
        parts.append("slot %s" % slot)
        if address:
            parts.append("(%s)" % address)
    elif address or slot:
        parts.append(address or slot)
    return " ".join(parts)


def psid_vendor(psid: str | None) -> str | None:
    """``MT_0000000838`` -> ``MT_``; ``DEL0000000027`` -> ``DEL``; None when it is not a PSID."""
    match = PSID_VENDOR_RE.match(psid or "")
    return match.group(1) if match else None


def _vendor_text(prefix):
    name = PSID_VENDORS.get(prefix)
    return "%s (%s)" % (prefix, name) if name else prefix


def is_nvidia_part(part_number: str | None) -> bool:
    return bool(NVIDIA_PART_RE.match(part_number or ""))


def serial_problem(serial: str, part_number: str | None) -> str | None:
    """Why ``serial`` does not look like a serial number (None when it does). The NVIDIA format
    is only required of NVIDIA part numbers: OEM cards carry their vendor's serial numbers."""
    text = serial.strip()
    upper = text.upper()
    if upper in PLACEHOLDER_SERIALS or len(set(upper.replace("-", ""))) <= 1:
        return "%s is a placeholder, not a serial number" % json.dumps(text)
    if re.search(r"\s", text) or not text.isprintable():
        return "%s has spaces or control characters" % json.dumps(text)
    if is_nvidia_part(part_number):
        match = NVIDIA_SERIAL_RE.match(text)
        if not match:
            return "%s is not an NVIDIA serial number (%s)" % (json.dumps(text), NVIDIA_SERIAL_TEXT)
        week = int(match.group("week"))
        if not 1 <= week <= 53:
            return "%s has week %02d (NVIDIA serial numbers carry year and week 01-53: %s)" % (
                json.dumps(text), week, NVIDIA_SERIAL_TEXT)
    return None


def _speed(value):
    match = SPEED_RE.search(str(value or ""))
    return float(match.group(1)) if match else None


def _width(value):
    if is_whole(value):
        return value
    match = WIDTH_RE.search(str(value or ""))
    return int(match.group(1)) if match else None


def _link_text(speed, width):
    return "%s x%s" % (speed if speed is not None else "?", width if width is not None else "?")


def _version(value):
    try:
        return version_key(value)
    except ValueError:
        return None


# ---------------------------------------------------------------- severities

def check_severities(severities: Any) -> dict[str, str]:
    """``{check: error|warning|ignore}`` merged over the defaults; raises InvalidValue naming every bad entry."""
    out = {name: default for name, (default, _what) in CHECKS.items()}
    if severities is None:
        return out
    if not isinstance(severities, dict):
        raise InvalidValue("severities must be a mapping of check name to error, warning or ignore, not %s"
                           % _kind(severities), parameter="severities", allowed=sorted(CHECKS))
    bad = []
    for name, level in severities.items():
        if name not in CHECKS:
            bad.append("%s is not a check (allowed: %s)" % (json.dumps(str(name)), ", ".join(CHECKS)))
            continue
        if level not in SEVERITIES + (IGNORE,):
            bad.append("severities.%s must be error, warning or ignore, not %s" % (name, _kind(level)))
            continue
        out[name] = level
    if bad:
        raise InvalidValue("severities: " + "; ".join(bad), parameter="severities", allowed=sorted(CHECKS))
    return out


# ---------------------------------------------------------------- the asset list

def _rows_from_text(text, source):
    """``[(line number, {column: value})]`` from CSV text; ``#`` lines and empty lines are skipped."""
    text = text.lstrip("\ufeff")
    numbered = [(number, line) for number, line in enumerate(text.splitlines(), 1)
                if line.strip() and not line.lstrip().startswith("#")]
    if not numbered:
        raise InvalidValue("%s: the asset list is empty (expected a header line with %s, then one line per card)"
                           % (source, ", ".join(ASSET_COLUMNS)), parameter="assets", allowed=list(ASSET_COLUMNS))
    reader = csv.reader([line for _n, line in numbered], skipinitialspace=True)
    records = list(reader)
    header = records[0]
    rows = []
    for (number, _line), record in zip(numbered[1:], records[1:]):
        if len(record) > len(header):
            rows.append((number, {"__extra__": record[len(header):]}))
            continue
        rows.append((number, dict(zip(header, record))))
    return numbered[0][0], header, rows


def parse_assets(assets: Any, *, source: str = "assets") -> list[dict]:
    """The asset list, checked: ``[{line, host, slot, slot_key, part_number, serial}]``.

    ``assets``: CSV text (a header line naming host, slot, part_number and serial - any order,
    more columns allowed, ``#`` comment lines allowed) or rows as community.general.read_csv
    returns them (a list of mappings). Raises InvalidValue listing every bad row at once.
    """
    problems = []
    if isinstance(assets, str):
        header_line, header, numbered = _rows_from_text(assets, source)
    elif isinstance(assets, list):
        header_line = None
        header = list(assets[0].keys()) if assets and isinstance(assets[0], dict) else list(ASSET_COLUMNS)
        numbered = []
        for index, row in enumerate(assets):
            if not isinstance(row, dict):
                problems.append("row %d must be a mapping of column to value, not %s" % (index + 1, _kind(row)))
                continue
            numbered.append((index + 1, row))
    else:
        raise InvalidValue("%s must be the asset list: CSV text with the columns %s, or a list of rows (mappings), "
                           "not %s" % (source, ", ".join(ASSET_COLUMNS), _kind(assets)), parameter="assets",
                           allowed=list(ASSET_COLUMNS))

    names = {}
    for column in header:
        word = re.sub(r"[\s-]+", "_", str(column).strip().lower())
        names[column] = ASSET_ALIASES.get(word, word)
    missing = [c for c in ASSET_COLUMNS if c not in names.values()]
    if missing:
        where = "%s line %d" % (source, header_line) if header_line else source
        columns = ", ".join(str(c) for c in header) or "none"
        raise InvalidValue("%s: the asset list lacks the column%s %s (its columns: %s; needed: %s)" % (
            where, "" if len(missing) == 1 else "s", ", ".join(missing), columns, ", ".join(ASSET_COLUMNS)),
            parameter="assets", allowed=list(ASSET_COLUMNS))

    label = "line" if header_line else "row"
    out, seen_slot, seen_serial = [], {}, {}
    for number, raw in numbered:
        where = "%s %s %d" % (source, label, number)
        if "__extra__" in raw:
            problems.append("%s has more fields than the header (%s) - a comma inside a value needs quotes"
                            % (where, ", ".join(raw["__extra__"])))
            continue
        row = {names.get(k, k): v for k, v in raw.items()}
        values = {c: _text(row.get(c)) for c in ASSET_COLUMNS}
        empty = [c for c in ASSET_COLUMNS if values[c] is None]
        if empty:
            verb = "is" if len(empty) == 1 else "are"
            problems.append("%s: %s %s empty (every row needs %s)"
                            % (where, ", ".join(empty), verb, ", ".join(ASSET_COLUMNS)))
            continue
        key = _slot_key(values["slot"])
        slot_id = (values["host"].lower(), key)
        if slot_id in seen_slot:
            problems.append("%s: %s slot %s is also on %s" % (where, values["host"], values["slot"],
                                                              seen_slot[slot_id]))
            continue
        serial = values["serial"].upper()
        if serial in seen_serial:
            problems.append("%s: serial %s is also on %s" % (where, values["serial"], seen_serial[serial]))
            continue
        seen_slot[slot_id] = where
        seen_serial[serial] = where
        out.append({"line": number, "host": values["host"], "slot": values["slot"], "slot_key": key,
                    "part_number": values["part_number"], "serial": values["serial"]})
    if problems:
        plural = "" if len(problems) == 1 else "s"
        raise InvalidValue("the asset list has %d bad row%s: %s" % (len(problems), plural, "; ".join(problems)),
                           parameter="assets", allowed=list(ASSET_COLUMNS))
    return out


# ---------------------------------------------------------------- devices

def host_devices(value: Any) -> tuple[list | None, str | None]:
    """``(devices, None)``, or ``(None, why)`` for a host whose devices could not be read.

    ``value``: the ``devices`` list of mlx_info, the whole registered mlx_info result (a mapping
    with ``devices``; without it, its ``msg`` says why), or None (the host was unreachable).
    """
    if value is None:
        return None, "the host was unreachable or mlx_info did not run there"
    if isinstance(value, dict):
        if isinstance(value.get("devices"), list):
            return value["devices"], None
        msg = _text(value.get("msg"))
        return None, "mlx_info failed: %s" % msg if msg else "mlx_info returned no devices"
    return value, None


def cards_of(host: str, devices: Any) -> list[dict]:
    """One device per card (its lowest function), in PCI order; InvalidValue naming the host on what is not
    mlx_info's (info_cards: an address that is not a PCI function or is listed twice refused too)."""
    try:
        cards = info_cards(devices, prefix="%s: " % host)
    except InvalidValue as err:
        raise InvalidValue(err.msg, device=host, parameter="devices_by_host") from None
    return sorted(cards, key=lambda dev: dev["card"])


# ---------------------------------------------------------------- the checks

class _Findings(list):
    def __init__(self, levels):
        super().__init__()
        self.levels = levels

    def add(self, check, host, message, dev=None, asset=None, expected=None, found=None):
        level = self.levels[check]
        if level == IGNORE:
            return
        dev = dev or {}
        asset = asset or {}
        self.append({
            "severity": level,
            "host": host,
            "slot": _text(dev.get("physical_slot")) or asset.get("slot"),
            "address": dev.get("address"),
            "check": check,
            "part_number": _text(dev.get("part_number")) or asset.get("part_number"),
            "serial": _text(dev.get("serial_number")) or asset.get("serial"),
            "psid": _text(dev.get("psid")),
            "expected": expected,
            "found": found,
            "message": message,
        })


def _dev_where(host, dev, asset=None):
    return _where(host, _text(dev.get("physical_slot")) or (asset or {}).get("slot"), dev.get("address"))


def _firmware_entries(matrix):
    """``({PSID: entry}, {base part number: (PSID, entry)})`` of a consistent matrix."""
    by_psid, by_part = {}, {}
    for psid, entry in matrix["firmware"].items():
        by_psid[psid.upper()] = entry
        for part in entry["part_numbers"]:
            by_part[base_part_number(str(part))] = (psid, entry)
    return by_psid, by_part


def _check_identity(out, host, dev, asset, by_psid, by_part):
    """Part number, PSID and their pairing, per the matrix and the vendor prefixes."""
    where = _dev_where(host, dev, asset)
    part = _text(dev.get("part_number"))
    psid = _upper(dev.get("psid"))
    if part is None:
        out.add("part_number_missing", host, "%s: the card has no part number in its VPD ([PN]); expected %s" % (
            where, asset["part_number"] if asset else "an NVIDIA or OEM part number"), dev, asset,
            expected=asset["part_number"] if asset else None, found="no [PN]")
    if psid is None:
        errors = [str(e) for e in dev.get("errors") or [] if e] if isinstance(dev.get("errors"), list) else []
        out.add("psid_unread", host, "%s: the card's firmware could not be read, so its PSID and version are unknown%s"
                % (where, " (%s)" % "; ".join(errors) if errors else ""), dev, asset,
                expected="a PSID from flint", found="; ".join(errors) or "no PSID")
        return
    entry = by_psid.get(psid)
    pinned_parts = [str(p) for p in entry["part_numbers"]] if entry else []
    approved = bool(entry and part and base_part_number(part) in [base_part_number(p) for p in pinned_parts])
    if entry is None:
        guess = by_part.get(base_part_number(part)) if part else None
        out.add("unknown_psid", host, "%s: PSID %s is not in the matrix (%s has %s)%s" % (
            where, psid, path_of("firmware"), ", ".join(sorted(by_psid)),
            "; for part number %s the matrix expects PSID %s" % (part, guess[0]) if guess else ""),
            dev, asset, expected=guess[0] if guess else "one of " + ", ".join(sorted(by_psid)), found=psid)
    elif part and not approved:
        owner = by_part.get(base_part_number(part))
        out.add("psid_part_mismatch", host, "%s: PSID %s is for part number %s (%s.part_numbers), but the card is "
                "%s%s" % (where, psid, ", ".join(pinned_parts), path_of("firmware", psid), part,
                          "; a %s carries PSID %s" % (part, owner[0]) if owner else ""),
                dev, asset, expected=", ".join(pinned_parts), found=part)
    vendor = psid_vendor(psid)
    if part and vendor and not approved:
        if is_nvidia_part(part) and vendor != NVIDIA_PSID_PREFIX:
            out.add("oem_psid_on_retail_part", host, "%s: OEM PSID %s (vendor %s) on NVIDIA retail part number %s: "
                    "an NVIDIA retail card carries an %s PSID; a relabelled OEM card or a cross-flashed one" % (
                        where, psid, _vendor_text(vendor), part, NVIDIA_PSID_PREFIX),
                    dev, asset, expected="an %s PSID" % NVIDIA_PSID_PREFIX, found=psid)
        elif not is_nvidia_part(part) and vendor == NVIDIA_PSID_PREFIX:
            out.add("retail_psid_on_oem_part", host, "%s: NVIDIA PSID %s on part number %s, which is not an NVIDIA "
                    "part number (MCX..., MBF..., 900-9...): an OEM card cross-flashed with NVIDIA firmware, or a "
                    "relabelled card" % (where, psid, part),
                    dev, asset, expected="the OEM vendor's PSID", found=psid)


def _check_serial(out, host, dev, asset):
    where = _dev_where(host, dev, asset)
    serial = _text(dev.get("serial_number"))
    if serial is None:
        out.add("serial_missing", host, "%s: the card has no serial number in its VPD ([SN]); expected %s" % (
            where, asset["serial"] if asset else "one"), dev, asset,
            expected=asset["serial"] if asset else "a serial number", found="no [SN]")
        return
    problem = serial_problem(serial, _text(dev.get("part_number")))
    if problem:
        out.add("serial_malformed", host, "%s: serial number %s" % (where, problem), dev, asset,
                expected=NVIDIA_SERIAL_TEXT if is_nvidia_part(dev.get("part_number")) else "a serial number",
                found=serial)


def _check_firmware(out, host, dev, asset, by_psid, by_part):
    burned = _text(dev.get("fw_version"))
    have = _version(burned)
    if have is None:
        return
    psid = _upper(dev.get("psid"))
    part = _text(dev.get("part_number"))
    owner = by_part.get(base_part_number(part)) if part else None
    entry = owner[1] if owner else by_psid.get(psid)
    key = owner[0] if owner else psid
    shipped = _text((entry or {}).get("shipped_min"))
    want = _version(shipped)
    if want is None:
        return
    where = _dev_where(host, dev, asset)
    running = _text(dev.get("fw_running"))
    also = " (running %s)" % running if running and running != burned else ""
    spath = path_of("firmware", key, "shipped_min")
    if have[0] != want[0]:
        out.add("firmware_other_family", host, "%s: firmware %s%s is not %s firmware: %s is %s, major version %d, "
                "the card's is %d" % (where, burned, also, part or psid, spath, shipped, want[0], have[0]),
                dev, asset, expected="%d.x.x" % want[0], found=burned)
    elif have < want:
        out.add("firmware_older_than_shipped", host, "%s: firmware %s%s is older than anything %s shipped with "
                "(%s: %s): used, refurbished or counterfeit stock" % (where, burned, also, part or psid, spath,
                                                                      shipped),
                dev, asset, expected=">= %s" % shipped, found=burned)


def _check_pcie(out, host, dev, asset):
    if "pcie" not in dev:
        return
    pcie = dev.get("pcie") or {}
    cap, sta = pcie.get("lnkcap") or {}, pcie.get("lnksta") or {}
    where = _dev_where(host, dev, asset)
    cap_speed, sta_speed = _speed(cap.get("speed")), _speed(sta.get("speed"))
    cap_width, sta_width = _width(cap.get("width")), _width(sta.get("width"))
    if None in (cap_speed, sta_speed, cap_width, sta_width):
        out.add("pcie_unread", host, "%s: the PCIe link could not be read (LnkCap %s, LnkSta %s; lspci shows them "
                "to root only)" % (where, _link_text(cap.get("speed"), cap.get("width")),
                                   _link_text(sta.get("speed"), sta.get("width"))),
                dev, asset, expected="LnkCap and LnkSta", found="unreadable")
        return
    expected = _link_text(cap.get("speed"), cap_width)
    found = _link_text(sta.get("speed"), sta_width)
    if sta_width < cap_width:
        out.add("pcie_width", host, "%s: PCIe link x%d, the card can run x%d (LnkCap %s, LnkSta %s): a card not "
                "seated, a riser or a slot narrower than the card" % (where, sta_width, cap_width, expected, found),
                dev, asset, expected=expected, found=found)
    if sta_speed < cap_speed:
        out.add("pcie_speed", host, "%s: PCIe link %s, the card can run %s (LnkCap %s, LnkSta %s): a slot of an "
                "older PCIe generation, a riser, or the BIOS limiting the speed" % (
                    where, sta.get("speed"), cap.get("speed"), expected, found),
                dev, asset, expected=expected, found=found)


def _slot_matches(asset, dev):
    kind, value = asset["slot_key"]
    if kind == "pci":
        return dev["card"] == value
    slot = _text(dev.get("physical_slot"))
    return slot is not None and slot.lower() == value


def _places(entries):
    return ", ".join(entries)


def _match_host(out, host, cards, rows, serial_places, asset_places):
    """Pairs ``[(asset row or None, card)]`` of one host, adding slot/missing/unexpected findings."""
    free = list(range(len(cards)))
    pairs, waiting = [], []
    for row in rows:
        candidates = [i for i in free if _slot_matches(row, cards[i])]
        if candidates:
            same = [i for i in candidates if _upper(cards[i].get("serial_number")) == row["serial"].upper()]
            index = (same or candidates)[0]
            free.remove(index)
            pairs.append((row, cards[index]))
        else:
            waiting.append(row)
    for row in waiting:
        candidates = [i for i in free if _upper(cards[i].get("serial_number")) == row["serial"].upper()]
        if candidates:
            dev = cards[candidates[0]]
            free.remove(candidates[0])
            found = _text(dev.get("physical_slot")) or dev["address"]
            out.add("slot_mismatch", host, "%s: the card with serial %s is expected in slot %s (asset list line %d) "
                    "but is in %s" % (_dev_where(host, dev), row["serial"], row["slot"], row["line"],
                                      "slot %s (%s)" % (found, dev["address"]) if found != dev["address"]
                                      else dev["address"]),
                    dev, row, expected=row["slot"], found=found)
            pairs.append((row, dev))
            continue
        elsewhere = [p for p in serial_places.get(row["serial"].upper(), []) if not p.startswith(host + " ")]
        out.add("missing_card", host, "%s: no card in this slot; the asset list (line %d) expects %s serial %s%s" % (
            _where(host, row["slot"]), row["line"], row["part_number"], row["serial"],
            "; that serial is on %s" % _places(elsewhere) if elsewhere else ""),
            None, row, expected="%s %s" % (row["part_number"], row["serial"]), found="no card")
    for index in free:
        dev = cards[index]
        serial = _upper(dev.get("serial_number"))
        listed = asset_places.get(serial) if serial else None
        out.add("unexpected_card", host, "%s: %s serial %s is not in the asset list for %s%s" % (
            _dev_where(host, dev), _text(dev.get("part_number")) or "a card without part number",
            _text(dev.get("serial_number")) or "(none)", host,
            "; the asset list has that serial on %s" % listed if listed else ""),
            dev, None, expected="no card", found="%s %s" % (_text(dev.get("part_number")) or "?",
                                                            _text(dev.get("serial_number")) or "?"))
        pairs.append((None, dev))
    return pairs


def _compare_asset(out, host, row, dev):
    where = _dev_where(host, dev, row)
    part = _text(dev.get("part_number"))
    if part and base_part_number(part) != base_part_number(row["part_number"]):
        out.add("part_number_mismatch", host, "%s: part number %s, the asset list (line %d) expects %s" % (
            where, part, row["line"], row["part_number"]), dev, row, expected=row["part_number"], found=part)
    serial = _text(dev.get("serial_number"))
    if serial and serial.upper() != row["serial"].upper():
        out.add("serial_mismatch", host, "%s: serial number %s, the asset list (line %d) expects %s" % (
            where, serial, row["line"], row["serial"]), dev, row, expected=row["serial"], found=serial)


def findings(devices_by_host: Any, assets: Any, matrix: Any, *, severities: Any = None,
             source: str | None = None) -> list[dict]:
    """Every finding of the delivery check, sorted by host, card and check.

    ``devices_by_host``: ``{host: mlx_info devices list, or None when it could not be read}``.
    ``assets``: the expected asset list (see ``parse_assets``), or None to skip the asset comparison.
    ``matrix``: ``gpufabric_matrix`` (must be consistent: MatrixError lists its problems).
    ``severities``: ``{check: error|warning|ignore}`` over the defaults of ``CHECKS``.
    ``source``: where the asset list came from (its path), for messages about its lines.
    """
    levels = check_severities(severities)
    check_matrix(matrix)
    if not isinstance(devices_by_host, dict):
        raise InvalidValue("devices_by_host must map each host to the devices list gpufabric.mlnx.mlx_info returned "
                           "there, not %s" % _kind(devices_by_host), parameter="devices_by_host")
    rows = parse_assets(assets, source=source or "assets") if assets is not None else None
    by_psid, by_part = _firmware_entries(matrix)
    out = _Findings(levels)

    hosts = sorted(devices_by_host, key=str)
    cards = {}
    for host in hosts:
        devices, why = host_devices(devices_by_host[host])
        if devices is None:
            out.add("host_unread", host, "%s: its NVIDIA devices could not be read (%s); nothing was checked on it"
                    % (host, why), expected="mlx_info devices", found=why)
            continue
        cards[host] = cards_of(host, devices)

    serial_places = {}
    for host, host_cards in cards.items():
        for dev in host_cards:
            serial = _upper(dev.get("serial_number"))
            if serial:
                serial_places.setdefault(serial, []).append(_dev_where(host, dev))
    asset_places = {row["serial"].upper(): "%s slot %s (line %d)" % (row["host"], row["slot"], row["line"])
                    for row in rows or []}

    for host, host_cards in cards.items():
        if rows is None:
            pairs = [(None, dev) for dev in host_cards]
        else:
            host_rows = [row for row in rows if row["host"].lower() == str(host).lower()]
            pairs = _match_host(out, host, host_cards, host_rows, serial_places, asset_places)
        for row, dev in pairs:
            if row is not None:
                _compare_asset(out, host, row, dev)
            _check_identity(out, host, dev, row, by_psid, by_part)
            _check_serial(out, host, dev, row)
            _check_firmware(out, host, dev, row, by_psid, by_part)
            _check_pcie(out, host, dev, row)
            serial = _upper(dev.get("serial_number"))
            places = serial_places.get(serial, []) if serial else []
            if len(places) > 1:
                here = _dev_where(host, dev)
                others = [p for p in places if p != here]
                out.add("serial_duplicate", host, "%s: serial number %s is on %d cards; also on %s" % (
                    here, _text(dev.get("serial_number")), len(places), _places(others)), dev, row,
                    expected="a serial number on one card only", found="also on " + _places(others))

    order = list(CHECKS)
    return sorted(out, key=lambda f: (str(f["host"]), f["address"] or "~", str(f["slot"] or ""),
                                      order.index(f["check"])))


# ---------------------------------------------------------------- the report

def counts(found: list[dict], devices_by_host: dict, assets: Any = None) -> dict:
    """Numbers for the summary line and the JSON report."""
    hosts = list(devices_by_host)
    read = {h: host_devices(devices_by_host[h])[0] for h in hosts}
    read = {h: devices for h, devices in read.items() if devices is not None}
    cards = sum(len(cards_of(h, devices)) for h, devices in read.items())
    rows = parse_assets(assets) if assets is not None else None
    in_run = {str(h).lower() for h in hosts}
    return {
        "errors": sum(1 for f in found if f["severity"] == ERROR),
        "warnings": sum(1 for f in found if f["severity"] == WARNING),
        "hosts": len(hosts),
        "hosts_read": len(read),
        "hosts_with_errors": len({f["host"] for f in found if f["severity"] == ERROR}),
        "cards": cards,
        "asset_rows": len(rows) if rows is not None else None,
        "asset_rows_not_in_run": (sum(1 for r in rows if r["host"].lower() not in in_run)
                                  if rows is not None else None),
        "by_check": {name: sum(1 for f in found if f["check"] == name) for name in CHECKS
                     if any(f["check"] == name for f in found)},
    }


def _plural(number, word):
    return "%d %s%s" % (number, word, "" if number == 1 else "s")


def summary_line(numbers: dict, *, matrix_name: str | None = None) -> str:
    """``delivery check FAILED: 3 errors, 1 warning on 2 of 4 hosts (32 cards, ...)``."""
    result = "FAILED" if numbers["errors"] else "PASSED"
    if numbers["hosts_read"] == numbers["hosts"]:
        scope = ["%s on %s" % (_plural(numbers["cards"], "card"), _plural(numbers["hosts"], "host"))]
    else:
        scope = ["%s on the %d of %s read" % (_plural(numbers["cards"], "card"), numbers["hosts_read"],
                                              _plural(numbers["hosts"], "host"))]
    if numbers["asset_rows"] is None:
        scope.append("no asset list")
    else:
        scope.append("asset list of %s" % _plural(numbers["asset_rows"], "card"))
        if numbers["asset_rows_not_in_run"]:
            scope[-1] += ", %d on hosts not in this run" % numbers["asset_rows_not_in_run"]
    if matrix_name:
        scope.append("matrix %s" % matrix_name)
    errors = _plural(numbers["errors"], "error") if numbers["errors"] else "no error"
    where = " on %d of %d hosts" % (numbers["hosts_with_errors"], numbers["hosts"]) if numbers["errors"] else ""
    return "delivery check %s: %s, %s%s (%s)" % (result, errors, _plural(numbers["warnings"], "warning"), where,
                                                 "; ".join(scope))


def _detail(finding):
    """The message without its leading ``host slot (PCI): `` - the table has columns for those."""
    head, sep, rest = finding["message"].partition(": ")
    return rest if sep and head.startswith(str(finding["host"])) else finding["message"]


def _section(title, found):
    lines = ["## %s (%d)" % (title, len(found)), ""]
    if found:
        rows = [dict(f, message=_detail(f)) for f in found]
        lines.append(markdown_table(rows, columns=REPORT_COLUMNS).rstrip("\n"))
    else:
        lines.append("None.")
    return lines


def report(found: list[dict], devices_by_host: dict, assets: Any = None, *, matrix_name: str | None = None,
           generated: str | None = None, source: str | None = None) -> dict:
    """``{summary, counts, findings, markdown, csv, json}`` of the findings of one run."""
    numbers = counts(found, devices_by_host, assets)
    line = summary_line(numbers, matrix_name=matrix_name)
    head = ["# NIC delivery check" + (" - %s" % generated if generated else ""), "", "**%s**" % line, ""]
    facts = []
    if matrix_name:
        facts.append("- version matrix: %s" % matrix_name)
    facts.append("- asset list: %s" % (source or ("given" if assets is not None else "none (asset checks skipped)")))
    facts.append("- hosts: %d (%d read), cards: %d" % (numbers["hosts"], numbers["hosts_read"], numbers["cards"]))
    if numbers["by_check"]:
        facts.append("- findings per check: " + ", ".join("%s %d" % kv for kv in numbers["by_check"].items()))
    body = _section("Errors", [f for f in found if f["severity"] == ERROR]) + [""] + \
        _section("Warnings", [f for f in found if f["severity"] == WARNING])
    markdown = "\n".join(head + facts + [""] + body) + "\n"
    document = {
        "title": "NIC delivery check",
        "generated": generated,
        "matrix": matrix_name,
        "assets": source,
        "result": "failed" if numbers["errors"] else "passed",
        "summary": line,
        "counts": numbers,
        "findings": [{key: f.get(key) for key in FINDING_KEYS} for f in found],
    }
    return {
        "summary": line,
        "counts": numbers,
        "findings": document["findings"],
        "markdown": markdown,
        "csv": csv_table(found, columns=[(key, key) for key in FINDING_KEYS]),
        "json": json.dumps(document, indent=2, sort_keys=False) + "\n",
    }
