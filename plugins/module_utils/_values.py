# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One table of normalisers for NV configuration values.

mlxconfig prints a value as ``NAME(num)`` for enums and booleans (``True(1)``, ``ETH(2)``,
``_256KB(1)``, ``per_mkey(0)``), a bare number for integers, ``Array[0..7]`` for an array not
expanded, and ``N/A`` when unreadable. People write the same values as YAML booleans, numbers,
names in any case, or the printed form. Every form is reduced to one canonical ``Value`` so a
comparison is a plain ``==``.
"""

from __future__ import annotations

import re

PRINTED_RE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_.+-]*)\((?P<num>-?\d+)\)\Z", re.ASCII)
NUMBER_RE = re.compile(r"^(?:0x[0-9a-fA-F]+|-?\d+)\Z", re.ASCII)
ARRAY_RE = re.compile(r"^Array\[\d+\.\.\d+\]\Z", re.ASCII)
UNKNOWN = ("N/A", "")

# Spellings people use for booleans; mlxconfig itself accepts True/False/1/0.
_BOOL_WORDS = {"true": 1, "false": 0}


class Value:
    """A normalised value: ``num`` (int or None) and ``name`` (lower-case or None).

    Two values are equal when both have a number and the numbers match, else when both
    have a name and the names match case-insensitively.
    """

    __slots__ = ("name", "num", "raw")

    def __init__(self, name: str | None = None, num: int | None = None, raw: object = None):
        self.name = name.lower() if isinstance(name, str) else None
        self.num = num
        self.raw = raw

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Value):
            return NotImplemented
        if self.num is not None and other.num is not None:
            return self.num == other.num
        if self.name is not None and other.name is not None:
            return self.name == other.name
        return False

    def __hash__(self) -> int:  # pragma: no cover - values are compared, not hashed
        return hash((self.name, self.num))

    def __repr__(self) -> str:
        return "Value(%r)" % (self.raw,)


def _from_bool(value):
    return Value("true" if value else "false", 1 if value else 0, value)


def _from_int(value):
    return Value(None, value, value)


def _from_str(value):
    text = value.strip()
    match = PRINTED_RE.match(text)
    if match:
        return Value(match.group("name"), int(match.group("num")), value)
    if NUMBER_RE.match(text):
        return Value(None, int(text, 0), value)
    if text.lower() in _BOOL_WORDS:
        return Value(text, _BOOL_WORDS[text.lower()], value)
    return Value(text, None, value)


# type -> normaliser; bool is checked before int because bool is an int subclass.
NORMALISERS = (
    (bool, _from_bool),
    (int, _from_int),
    (str, _from_str),
)


def normalize(value: bool | int | str) -> Value:
    """Any accepted spelling of a value -> ``Value``."""
    for kind, func in NORMALISERS:
        if isinstance(value, kind):
            return func(value)
    raise TypeError("a NV config value must be a boolean, a number or a string, not %s"
                    % type(value).__name__)


def equal(desired: bool | int | str, printed: bool | int | str) -> bool:
    """Does the desired value (any spelling) equal the value mlxconfig printed?"""
    return normalize(desired) == normalize(printed)


def cli_token(value: object) -> str:
    """The word to put after ``NAME=`` on the mlxconfig/mstconfig command line.

    Booleans as ``True``/``False``, numbers bare, printed enums by their name (the tool
    accepts names in any case, or numbers).
    """
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    text = str(value).strip()
    match = PRINTED_RE.match(text)
    return match.group("name") if match else text


def is_unknown(printed: str | None) -> bool:
    """A value mlxconfig could not read (``N/A``, empty, or no value at all)."""
    return printed is None or printed.strip() in UNKNOWN


def is_array_summary(printed: str | None) -> bool:
    """``Array[0..7]``: an array parameter not expanded into its elements."""
    return bool(printed) and bool(ARRAY_RE.match(printed.strip()))


def kind_of(printed: bool | int | str) -> str:
    """What a printed value says about its parameter's type: bool, enum, number or other."""
    val = normalize(printed)
    if val.name in ("true", "false") and val.num in (0, 1):
        return "bool"
    if val.name is not None and val.num is not None:
        return "enum"
    if val.num is not None:
        return "number"
    return "other"


def invalid_for(printed: bool | int | str, desired: bool | int | str) -> tuple[str, str] | None:
    """A reason the desired value cannot suit a parameter whose value prints as ``printed``.

    Only what is certain from the printed form is checked (booleans take True/False/1/0; a
    number parameter takes a number); the tool itself rejects the rest.
    Returns ``(reason, allowed)`` or ``None``.
    """
    kind = kind_of(printed)
    want = normalize(desired)
    if kind == "bool":
        if want.num in (0, 1) and (want.name is None or want.name in ("true", "false")):
            return None
        return "is a boolean", "True, False, 1 or 0"
    if kind == "number" and want.num is None:
        return "is a number", "a whole number"
    return None
