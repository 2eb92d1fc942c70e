# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Package managers' output: apt `Packages` indexes, dpkg-query, rpm -q, dkms status, apt-cache madison,
dnf repoquery, apt-get update's errors (what the driver module reads to tell which driver is installed and available)."""

from __future__ import annotations

import re


def parse_packages_index(text: str) -> list[dict]:
    """An apt ``Packages`` index -> [{"name", "version", "depends": [(name, op, version)]}] (first alternatives)."""
    stanzas, cur, field = [], {}, None
    for line in text.splitlines() + [""]:
        if not line.strip():
            if cur.get("Package"):
                stanzas.append(cur)
            cur, field = {}, None
        elif line[0] in " \t" and field:
            cur[field] += " " + line.strip()
        elif ":" in line:
            field, value = line.split(":", 1)
            cur[field] = value.strip()
    rows = []
    for st in stanzas:
        deps = []
        for key in ("Pre-Depends", "Depends"):
            for group in (st.get(key) or "").split(","):
                first = group.split("|")[0].strip()
                match = re.match(r"^([A-Za-z0-9][A-Za-z0-9.+-]*)(?::\S+)?\s*(?:\(\s*([<>=]+)\s*([^)\s]+)\s*\))?", first)
                if match:
                    deps.append((match.group(1), match.group(2), match.group(3)))
        rows.append({"name": st["Package"], "version": st.get("Version", ""), "depends": deps})
    return rows


def parse_dpkg_query(text: str) -> dict[str, str]:
    """``dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'`` -> {name: version} (installed only)."""
    found = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or not parts[0]:
            continue
        status = parts[2]
        if len(status) >= 2 and status[1] in ("i", "U", "F", "W", "t"):
            # i: installed; U/F/W/t: unpacked or half-configured - present on disk at that version
            found[parts[0].split(":")[0]] = parts[1]
    return found


def parse_rpm_query(text: str) -> dict[str, str]:
    """``rpm -q --qf '%{NAME}\\t%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}\\n'`` -> {name: version}."""
    found = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 2 and parts[0] and " " not in parts[0]:
            found[parts[0]] = parts[1].strip()
    return found


_DKMS_NEW = re.compile(r"^(?P<module>[^/,\s]+)/(?P<version>[^,\s]+),\s*(?P<kernel>[^,\s]+)(?:,\s*(?P<arch>[^:\s]+))?:\s*"
                       r"(?P<status>[\w-]+)")


_DKMS_OLD = re.compile(r"^(?P<module>[^/,\s]+),\s*(?P<version>[^,\s]+),\s*(?P<kernel>[^,\s]+)"
                       r"(?:,\s*(?P<arch>[^:\s]+))?:\s*(?P<status>[\w-]+)")


def parse_dkms_status(text: str) -> list[dict]:
    """``dkms status`` (``module/version, kernel, arch: installed`` and the older comma form) -> list of dicts.

    Lines without a kernel (``module/version: added``) are skipped: nothing is built for any kernel.
    """
    rows = []
    for line in text.splitlines():
        line = line.strip()
        match = _DKMS_NEW.match(line) or _DKMS_OLD.match(line)
        if match:
            row = match.groupdict()
            row["status"] = row["status"].lower()
            rows.append(row)
    return rows


def parse_madison(text: str) -> dict[str, list[str]]:
    """``apt-cache madison NAME...`` -> {name: [versions]}."""
    found = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 3 and parts[0] and parts[1]:
            versions = found.setdefault(parts[0], [])
            if parts[1] not in versions:
                versions.append(parts[1])
    return found


def parse_repoquery(text: str) -> dict[str, list[str]]:
    """``dnf repoquery --qf '%{name}\\t%{evr}\\n'`` -> {name: [versions]}."""
    found = {}
    for line in text.splitlines():
        parts = line.strip().split("\t")
        if len(parts) == 2 and parts[0]:
            versions = found.setdefault(parts[0], [])
            if parts[1] not in versions:
                versions.append(parts[1])
    return found


def apt_errors(text: str) -> list[str]:
    """The lines of ``apt-get update`` output that mean a source could not be used.

    apt exits 0 when a repository cannot be reached (``W: Failed to fetch ...``,
    ``Err:1 ...``), so the output is what tells.
    """
    lines, keep = [], False
    for raw in text.splitlines():
        line = raw.rstrip()
        if re.match(r"^(E:|W: Failed to fetch|W: GPG error|Err:\d*)", line):
            lines.append(line.strip())
            keep = line.startswith("Err:")
            continue
        if keep and raw.startswith("  "):
            lines.append(line.strip())
            continue
        keep = False
    return lines
