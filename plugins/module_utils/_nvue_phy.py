# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A leaf port's PHY error counters as NVUE shows them, read for the validation gate's bit-error-rate check.

What NVIDIA documents (tests/nvue/spec/README.md, "Beside the extract: PHY counters", with the pages and commits):

- ``nv show interface <swp> link phy-detail`` from Cumulus Linux 5.10 to 5.14; from 5.15 the same counters are
  ``nv show interface <swp> link phy health`` (``link phy detail`` is then what ``phy-diag`` was: not counters);
  Spectrum-1 switches have neither. The REST path is the command's words (``/interface/<swp>/link/phy-detail``,
  ``/link/phy/health``), as ``/interface/{interface-id}/link/stats`` is ``nv show interface <swp> link stats``:
  no OpenAPI document of those releases names them.
- the fields: ``time-since-last-clear-min``, ``phy-received-bits``, ``symbol-errors``, ``effective-errors``,
  ``phy-raw-errors-lane0..7``, ``raw-ber``, ``symbol-ber``, ``effective-ber``, ``raw-ber-lane0..7``,
  ``rs-num-corr-err-bin0..15`` (and SNR per lane on some Spectrum-4 optics); ``15E-255`` is what the switch prints
  for a rate of no errors; ``effective-ber`` is the uncorrectable (post-FEC) rate.
- NOT documented: the JSON types of the REST answer. The CLI prints ``395``, ``2373169010065408``, ``1E-7``,
  ``15E-255``; the parser takes a counter as a JSON integer or a string of digits, and a rate as a string
  ``<mantissa>E<exponent>`` or a JSON number - anything else fails (it is never read as 0).

Pure: no I/O. ``_nvue.gather`` does the requests (one per port) and calls :func:`parse_phy` on each answer.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_keys import SpellingError, release_tuple

# A switch port as a task names it: swp1..swp999, a breakout port swp1s0..swp1s9. Nothing else reaches a request or a
# command line.
PORT_RE = re.compile(r"swp[1-9][0-9]{0,2}(?:s[0-9])?", re.ASCII)
PORT_WORDS = "swpN (N 1-999) or a breakout port swpNsM (M 0-9), e.g. swp1, swp32s3"

PHY_DETAIL = ("link", "phy-detail")       # Cumulus Linux 5.10 - 5.14
PHY_HEALTH = ("link", "phy", "health")    # Cumulus Linux 5.15 and later
FIRST = (5, 10, 0)
RENAMED = (5, 15, 0)

SENTINEL = "15E-255"          # the switch's rate when it counted no error
SENTINEL_VALUE = 15e-255
U64 = 2 ** 64 - 1             # the largest value a 64-bit hardware counter holds
COUNTERS = (("received_bits", "phy-received-bits"), ("effective_errors", "effective-errors"),
            ("symbol_errors", "symbol-errors"))
RATES = (("raw_ber", "raw-ber"), ("effective_ber", "effective-ber"), ("symbol_ber", "symbol-ber"))
MINUTES = "time-since-last-clear-min"
LANE_RE = re.compile(r"phy-raw-errors-lane([0-9]{1,2})", re.ASCII)
MAX_LANES = 8

INTEGER_RE = re.compile(r"[0-9]{1,20}", re.ASCII)
DECIMAL_RE = re.compile(r"[0-9]{1,20}(?:\.[0-9]{1,12})?", re.ASCII)
BER_RE = re.compile(r"([0-9]{1,3}(?:\.[0-9]{1,12})?)[Ee]([+-]?[0-9]{1,3})", re.ASCII)
BER_WORDS = ("a bit error rate (<mantissa>E<exponent> such as 1E-7, %s for none, or a number from 0 to 1)"
             % SENTINEL)


class PhyError(MlnxError):
    """A port name outside the grammar, or a PHY answer the parser does not recognise (naming the switch, the port,
    the field and the value)."""


def check_ports(ports: Any, switch: str = "the switch") -> list[str] | None:
    """The ports a task names (duplicates dropped, order kept), each by :data:`PORT_RE`; None when not given (every
    swp port). PhyError naming the switch, the parameter, the value and what is allowed."""
    if ports is None:
        return None
    if isinstance(ports, (str, bytes)) or not isinstance(ports, (list, tuple)):
        raise PhyError("%s: ports must be a list of port names (allowed: %s), not %r" % (switch, PORT_WORDS, ports),
                       parameter="ports", allowed=PORT_WORDS)
    out: list[str] = []
    for port in ports:
        if not isinstance(port, str) or not PORT_RE.fullmatch(port):
            raise PhyError("%s: ports: %r is not a switch port (allowed: %s)" % (switch, port, PORT_WORDS),
                           parameter="ports", allowed=PORT_WORDS)
        if port not in out:
            out.append(port)
    if not out:
        raise PhyError("%s: ports is empty (leave it out to read every swp port)" % switch, parameter="ports",
                       allowed=PORT_WORDS)
    return out


def port_order(name: str) -> tuple:
    """Sort key of port names in the switch's order: swp2 before swp10, swp1s1 before swp1s2."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.findall(r"[0-9]+|[^0-9]+", name))


def phy_path(release: Any, switch: str = "the switch") -> tuple:
    """The path under ``/interface/<port>`` of the PHY counters on ``release``: ``link/phy-detail`` before 5.15,
    ``link/phy/health`` from it. PhyError when the release cannot be read (the path is not guessed)."""
    try:
        version = release_tuple(release)
    except SpellingError as err:
        raise PhyError("%s: the running release %r cannot tell where its PHY counters are (link phy-detail before "
                       "Cumulus Linux 5.15, link phy health from it): %s" % (switch, release, err)) from None
    return PHY_HEALTH if version >= RENAMED else PHY_DETAIL


def unavailable_reason(release: Any, path: tuple) -> str:
    """Why a port has no PHY counters, for ``phy_unavailable``: the switch answered 404 or nothing at ``path``."""
    words = " ".join(path)
    try:
        early = release_tuple(release) < FIRST
    except SpellingError:
        early = False
    if early:
        return ("Cumulus Linux %s has no %s (NVUE shows PHY counters from 5.10): the switch answered that it has "
                "none" % (release, words))
    return ("the switch answered that it has no %s for this port (Cumulus Linux %s): a Spectrum-1 switch has none"
            % (words, release))


def _where(switch: str, port: str) -> str:
    return "%s port %s" % (switch, port)


def parse_counter(value: Any, *, switch: str, port: str, field: str) -> int:
    """A counter: a JSON integer or a string of digits, 0 to 2**64-1. PhyError otherwise (a float, a sign, a
    boolean, text)."""
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str) and INTEGER_RE.fullmatch(value.strip()):
        number = int(value.strip())
    else:
        number = None
    if number is None or not 0 <= number <= U64:
        raise PhyError("%s: phy field %s is %r: not a counter (an integer from 0 to 2**64-1)"
                       % (_where(switch, port), field, value), device=port, parameter=field)
    return number


def parse_minutes(value: Any, *, switch: str, port: str, field: str = MINUTES) -> float:
    """The minutes since the counters were cleared: a non-negative number (integer, decimal text, finite float)."""
    number = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str) and DECIMAL_RE.fullmatch(value.strip()):
        number = float(value.strip())
    if number is None or not math.isfinite(number) or number < 0:
        raise PhyError("%s: phy field %s is %r: not a number of minutes (0 or more)"
                       % (_where(switch, port), field, value), device=port, parameter=field)
    return number


def parse_ber(value: Any, *, switch: str, port: str, field: str) -> float:
    """A bit error rate as a float: ``<mantissa>E<exponent>`` text (``1E-7``, ``2.5e-12``), a decimal text or a JSON
    number, from 0 to 1; the switch's no-error value ``15E-255`` is 0.0. PhyError for anything else."""
    number = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if BER_RE.fullmatch(text) or DECIMAL_RE.fullmatch(text):
            number = float(text)   # 1E999 is inf: refused below
    if number is None or not math.isfinite(number) or not 0 <= number <= 1:
        raise PhyError("%s: phy field %s is %r: not %s" % (_where(switch, port), field, value, BER_WORDS),
                       device=port, parameter=field)
    if number == SENTINEL_VALUE or (isinstance(value, str) and value.strip().upper() == SENTINEL):
        return 0.0
    return number


def _lanes(data: dict, switch: str, port: str) -> list[int]:
    found = {}
    for key, value in data.items():
        match = LANE_RE.fullmatch(key) if isinstance(key, str) else None
        if match:
            found[int(match.group(1))] = parse_counter(value, switch=switch, port=port, field=key)
    if not found:
        raise PhyError("%s: the phy answer has no phy-raw-errors-laneN field (lane 0 at least): its raw errors "
                       "cannot be read" % _where(switch, port), device=port, parameter="phy-raw-errors-lane0")
    wanted = list(range(max(found) + 1))
    gaps = [lane for lane in wanted if lane not in found]
    if gaps or len(wanted) > MAX_LANES:
        raise PhyError("%s: the phy answer has raw-error lanes %s: not lanes 0 to N (at most %d), lane %s %s"
                       % (_where(switch, port), ", ".join(map(str, sorted(found))), MAX_LANES,
                          gaps[0] if gaps else max(found), "is missing" if gaps else "is too many"),
                       device=port, parameter="phy-raw-errors-lane%d" % (gaps[0] if gaps else max(found)))
    return [found[lane] for lane in wanted]


def parse_phy(data: Any, *, switch: str, port: str) -> dict | None:
    """One port's PHY answer (``link phy-detail`` / ``link phy health``) normalised:

    ``received_bits``, ``effective_errors``, ``symbol_errors``, ``raw_errors`` (the sum of the lanes present),
    ``raw_errors_lanes`` (lane 0 first) - integers; ``raw_ber``, ``effective_ber``, ``symbol_ber`` - floats, the
    no-error ``15E-255`` as 0.0; ``minutes_since_clear`` - a float.

    None for no answer or an empty one (the switch has none for this port). A missing field, or a value the parser
    does not recognise, is a PhyError naming the switch, the port, the field and the value - never a silent 0."""
    if data is None or data == {}:
        return None
    if not isinstance(data, dict):
        raise PhyError("%s: the phy answer is %r: not an object of counters" % (_where(switch, port), data),
                       device=port)
    missing = [field for field in [MINUTES] + [f for _k, f in COUNTERS] + [f for _k, f in RATES] if field not in data]
    if missing:
        raise PhyError("%s: the phy answer has no %s (it has %s)" % (
            _where(switch, port), ", ".join(missing), ", ".join(sorted(map(str, data))) or "nothing"),
            device=port, parameter=missing[0])
    out: dict[str, Any] = {}
    for key, field in COUNTERS:
        out[key] = parse_counter(data[field], switch=switch, port=port, field=field)
    lanes = _lanes(data, switch, port)
    out["raw_errors"] = sum(lanes)
    out["raw_errors_lanes"] = lanes
    for key, field in RATES:
        out[key] = parse_ber(data[field], switch=switch, port=port, field=field)
    out["minutes_since_clear"] = parse_minutes(data[MINUTES], switch=switch, port=port)
    return out
