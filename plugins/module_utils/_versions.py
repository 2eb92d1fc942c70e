# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Version comparison, in one place: NIC firmware, the NIC driver release, Debian and RPM package versions.

- firmware (``28.39.1002``): ``version_key`` orders numerically, so 28.9 < 28.10;
- the driver release ``ofed_info -s`` prints (``24.10-2.1.8.0``): ``driver_key``, ``same_driver``,
  ``compare_driver`` (DOCA-OFED drops the trailing ``.0`` that MLNX_OFED prints);
- package versions as the package manager orders them: ``deb_compare`` (``dpkg --compare-versions``),
  ``rpm_compare`` (rpmvercmp), ``COMPARE`` by package manager, ``upstream_version`` (what DKMS names).

Pure functions: nothing here reads the host.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# A firmware version: numbers separated by dots (flint's "FW Version", the matrix's pins).
FIRMWARE_VERSION_RE = re.compile(r"^\d+(?:\.\d+)*\Z", re.ASCII)
# A ConnectX/BlueField firmware release as a task or the matrix pins it: exactly three parts, 28.43.2566 (family,
# minor, sub-minor - flint's "FW Version").
FIRMWARE_PIN_RE = re.compile(r"^\d{1,3}\.\d{1,4}\.\d{1,5}\Z", re.ASCII)


def version_key(version: object) -> tuple[int, ...]:
    """Firmware: ``28.39.1002`` -> ``(28, 39, 1002)``; compares numerically, so 28.9 < 28.10. Raises ValueError."""
    text = str(version).strip()
    if not FIRMWARE_VERSION_RE.match(text):
        raise ValueError("not a firmware version: %r" % (version,))
    return tuple(int(part) for part in text.split("."))


def driver_key(version: object) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """``24.10-2.1.8.0`` -> ``((24, 10), (2, 1, 8))``: the release, then the build without trailing zeros.

    DOCA-OFED's ``ofed_info -s`` prints ``OFED-internal-24.10-2.1.8`` for the release NVIDIA names
    24.10-2.1.8.0 (and MLNX_OFED prints all four numbers), so both spellings are the same driver.
    Returns None for text that is not a driver version.
    """
    if not isinstance(version, str):
        return None
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)*)-(\d+(?:\.\d+)*)\s*", version, re.ASCII)
    if not match:
        return None
    release = tuple(int(x) for x in match.group(1).split("."))
    build = [int(x) for x in match.group(2).split(".")]
    while len(build) > 1 and build[-1] == 0:
        build.pop()
    return release, tuple(build)


def same_driver(a: object, b: object) -> bool:
    """The same driver release, however ``ofed_info -s`` spells it (``24.10-2.1.8`` is ``24.10-2.1.8.0``)."""
    ka, kb = driver_key(a), driver_key(b)
    return ka is not None and ka == kb


def compare_driver(a: object, b: object) -> int | None:
    """-1, 0, 1 like cmp(); None when either is not a driver version."""
    ka, kb = driver_key(a), driver_key(b)
    if ka is None or kb is None:
        return None
    return (ka > kb) - (ka < kb)


def _deb_order(char: str) -> int:
    if char.isdigit():
        return 0
    if char.isalpha():
        return ord(char)
    if char == "~":
        return -1
    return ord(char) + 256


def _deb_part(a: str, b: str) -> int:
    """dpkg's verrevcmp: non-digit runs by the character order (~ sorts before everything,
    letters before other characters), digit runs numerically."""
    i = j = 0
    while i < len(a) or j < len(b):
        first_diff = 0
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _deb_order(a[i]) if i < len(a) else 0
            bc = _deb_order(b[j]) if j < len(b) else 0
            if ac != bc:
                return -1 if ac < bc else 1
            i += 1
            j += 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        while i < len(a) and a[i].isdigit() and j < len(b) and b[j].isdigit():
            if not first_diff:
                first_diff = ord(a[i]) - ord(b[j])
            i += 1
            j += 1
        if i < len(a) and a[i].isdigit():
            return 1
        if j < len(b) and b[j].isdigit():
            return -1
        if first_diff:
            return -1 if first_diff < 0 else 1
    return 0


def _deb_split(version: str) -> tuple[int, str, str]:
    version = version.strip()
    epoch, _sep, rest = version.rpartition(":") if ":" in version else ("0", "", version)
    upstream, _sep, revision = rest.rpartition("-") if "-" in rest else (rest, "", "")
    return int(epoch or 0) if epoch.isdigit() else 0, upstream, revision


def deb_compare(a: str, b: str) -> int:
    """Compare two Debian package versions as ``dpkg --compare-versions`` does: -1, 0 or 1."""
    ea, ua, ra = _deb_split(a)
    eb, ub, rb = _deb_split(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _deb_part(ua, ub) or _deb_part(ra, rb)


def _rpm_marks(ta: str, tb: str) -> int | None:
    """rpmvercmp's ``~`` (before everything, even the end of the version) and ``^`` (after the end, before
    anything else) at the current place of each side (``""``: its end): -1 or 1 when they decide, 0 when both
    sides have the same mark (skipped), None when neither has one."""
    for mark in ("~", "^"):
        if mark not in (ta, tb):
            continue
        if ta == tb:
            return 0
        if mark == "^" and not (ta and tb):
            return -1 if not ta else 1
        return -1 if ta == mark else 1
    return None


def _rpm_part(a: str, b: str) -> int:
    """rpm's rpmvercmp: alphanumeric segments, numbers compared as numbers, ~ before and ^ after."""
    if a == b:
        return 0
    i = j = 0
    while i < len(a) or j < len(b):
        while i < len(a) and not a[i].isalnum() and a[i] not in "~^":
            i += 1
        while j < len(b) and not b[j].isalnum() and b[j] not in "~^":
            j += 1
        ta, tb = a[i] if i < len(a) else "", b[j] if j < len(b) else ""
        marks = _rpm_marks(ta, tb)
        if marks:
            return marks
        if marks == 0:
            i += 1
            j += 1
            continue
        if not (ta and tb):
            break
        isnum = ta.isdigit()
        p, q = i, j
        if isnum:
            while p < len(a) and a[p].isdigit():
                p += 1
            while q < len(b) and b[q].isdigit():
                q += 1
        else:
            while p < len(a) and a[p].isalpha():
                p += 1
            while q < len(b) and b[q].isalpha():
                q += 1
        sa, sb = a[i:p], b[j:q]
        if not sb:
            return 1 if isnum else -1
        if isnum:
            sa, sb = sa.lstrip("0"), sb.lstrip("0")
            if len(sa) != len(sb):
                return -1 if len(sa) < len(sb) else 1
        if sa != sb:
            return -1 if sa < sb else 1
        i, j = p, q
    if i >= len(a) and j >= len(b):
        return 0
    return -1 if i >= len(a) else 1


def rpm_compare(a: str, b: str) -> int:
    """Compare two ``[epoch:]version[-release]`` strings as rpm does: -1, 0 or 1."""
    def split(text):
        text = text.strip()
        epoch, _sep, rest = text.partition(":") if ":" in text else ("0", "", text)
        version, _sep, release = rest.rpartition("-") if "-" in rest else (rest, "", "")
        return int(epoch) if epoch.isdigit() else 0, version, release
    ea, va, ra = split(a)
    eb, vb, rb = split(b)
    if ea != eb:
        return -1 if ea < eb else 1
    result = _rpm_part(va, vb)
    if result or not (ra and rb):
        return result
    return _rpm_part(ra, rb)


# The package manager -> its version order.
COMPARE: dict[str, Callable[[str, str], int]] = {"apt": deb_compare, "dnf": rpm_compare}


def upstream_version(version: str) -> str:
    """``1:24.10.OFED.24.10.2.1.8.1-1`` -> ``24.10.OFED.24.10.2.1.8.1`` (what DKMS calls the module version)."""
    _epoch, upstream, _revision = _deb_split(version)
    return upstream
