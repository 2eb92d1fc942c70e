# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validation toolkit: one way to check an inventory value and say everything wrong with it.

Every validator of the collection - the version matrix (_matrix), the rail plan
(plugin_utils/_rail_plan), the BIOS plan (plugin_utils/_bios), the RoCE QoS settings
(_roce_qos.settings_problems) and the rails (_rails) - reads its input with these, so a preflight
check on the controller and a module's own check on a host are the same code and cannot disagree.

- Collecting: :class:`Problems` gathers every problem as ``PATH: MESSAGE`` (``HOST: PATH: MESSAGE``
  with a prefix); :func:`join_path` builds the paths (``gpufabric_matrix.firmware["28.43.2566"][0]``);
  :class:`ProblemsError` raises them all at once, listed by :func:`problem_list`.
- Words: :func:`kind_of` says what a value is (``the string "x"``, ``a list``) whatever it is;
  :func:`quoted` and :func:`some` shorten text for messages.
- Typed readers: ``check_*`` add a problem and return False, ``read_*`` return the value or None
  after adding a problem; :func:`field` reads a key, :func:`unknown_keys` names keys that do not
  belong with the closest allowed one (:func:`close_names`).

Pure: no I/O. The messages are part of the collection's interface (tests and docs quote them).
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any, Callable, Iterable, Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue

# A key that goes in a path with a dot (``.driver``); any other goes in brackets (``["mt 838"]``).
IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*\Z", re.ASCII)
# A Linux network interface name as the collection accepts it (for re.fullmatch): what the kernel
# takes (1-15 bytes, not "." or "..", no "/", ":" or whitespace) narrowed to the characters real
# NIC, bond and VLAN names use. The name reaches argv lists, sysfs paths, udev rules, systemd units
# and scripts, so nothing a shell, udev or systemd would interpret ('$', '%', quotes, globs) passes.
IFNAME_RE = re.compile(r"(?!\.{1,2}\Z)[A-Za-z0-9_.+-]{1,15}", re.ASCII)
IFNAME_ALLOWED = "1-15 ASCII letters, digits and _ . + - (not '.' or '..')"
# How much of a string a message quotes.
QUOTE_LIMIT = 60


# ---------------------------------------------------------------- collecting problems

class Problems(list):
    """Every problem found, in order, each ``PATH: MESSAGE``; with ``prefix`` (a host, say)
    ``PREFIX: PATH: MESSAGE``. A plain list otherwise (``list(problems)``, ``len``, truth)."""

    def __init__(self, prefix: str | None = None):
        super().__init__()
        self.prefix = prefix

    def add(self, path: str, message: str) -> None:
        where = path if self.prefix is None else "%s: %s" % (self.prefix, path)
        self.append("%s: %s" % (where, message))


def problem_list(subject: str, problems: Sequence[str]) -> str:
    """``SUBJECT (2 problems):`` and one ``- problem`` line each."""
    count = len(problems)
    return "%s (%d problem%s):\n%s" % (subject, count, "" if count == 1 else "s",
                                       "\n".join("- " + problem for problem in problems))


class ProblemsError(InvalidValue):
    """Every problem of an input at once; ``problems`` lists them, the message is :func:`problem_list`."""

    def __init__(self, subject: str, problems: Sequence[str], *, parameter: str | None = None):
        super().__init__(problem_list(subject, problems), parameter=parameter)
        self.problems = list(problems)


def join_path(base: str, *keys: Any) -> str:
    """``gpufabric_matrix`` + ``driver`` -> ``gpufabric_matrix.driver``; list indexes and keys that are not plain
    names go in brackets: ``...firmware_drivers["28.43.2566"]``, ``...part_numbers[0]``. Several keys go one after
    the other."""
    path = base
    for key in keys:
        if is_whole(key):
            path = "%s[%d]" % (path, key)
            continue
        text = str(key)
        path = "%s.%s" % (path, text) if IDENT_RE.match(text) else "%s[%s]" % (path, json.dumps(text))
    return path


# ---------------------------------------------------------------- words

def is_whole(value: Any) -> bool:
    """An int that is not a boolean (YAML's true is an int to Python)."""
    return isinstance(value, int) and not isinstance(value, bool)


def quoted(text: Any, *, limit: int | None = QUOTE_LIMIT) -> str:
    """``text`` in double quotes for a message, cut to ``limit`` characters (None: whole)."""
    text = str(text)
    if limit is not None and len(text) > limit:
        text = text[:limit - 3] + "..."
    return json.dumps(text)


def kind_of(value: Any) -> str:
    """What a value is, for messages: ``the string "x"``, ``the number 24.1``, ``a list``; safe for any input
    (a huge number is described by its size)."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "the boolean %s" % ("true" if value else "false")
    if isinstance(value, int):
        return "the number %d" % value if value.bit_length() < 64 else "a %d-bit number" % value.bit_length()
    if isinstance(value, float):
        return "the number %r" % (value,)
    if isinstance(value, str):
        return "the string %s" % quoted(value)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return "a %s" % type(value).__name__


DIGITS_RE = re.compile(r"([0-9]+)")


def natural_key(text: Any) -> tuple:
    """Sort key of names: ``r9`` before ``r10``, ``su2`` before ``su10``; digit runs compare by value without int()
    (any length), a leading zero only breaking ties."""
    out = []
    for index, part in enumerate(DIGITS_RE.split(str(text))):
        if index % 2:
            digits = part.lstrip("0")
            out.append((0, len(digits), digits, part))
        else:
            out.append((1, 0, part, ""))
    return tuple(out)


def some(names: Iterable[Any], *, limit: int = 5) -> str:
    """``a, b, c and 4 more``: at most ``limit`` names, in the order given."""
    names = [str(name) for name in names]
    shown = ", ".join(names[:limit])
    return shown + (" and %d more" % (len(names) - limit) if len(names) > limit else "")


def _folded(text: Any) -> str:
    return " ".join(str(text).lower().split())


def close_names(name: Any, known: Iterable[str], *, folded: bool = True, fuzzy: bool = True) -> list[str]:
    """Names of ``known`` close to ``name``, closest first: (``folded``) the same name in another case or spacing,
    then (``fuzzy``) up to three of difflib's close matches."""
    known = list(known)
    text = str(name)
    same = [other for other in known if _folded(other) == _folded(text) and other != text] if folded else []
    if not fuzzy:
        return same
    return same + [other for other in difflib.get_close_matches(text, known, n=3, cutoff=0.6) if other not in same]


# ---------------------------------------------------------------- typed readers (each adds problems)

def unknown_keys(problems: Problems, mapping: dict, base: str, allowed: Sequence[str], *,
                 key_text: Callable[[Any], Any] | None = None) -> None:
    """A problem per key of ``mapping`` not in ``allowed``, with the closest allowed name; ``key_text(key)`` is how a
    key shows in the path (default: as it is)."""
    for key in mapping:
        if key in allowed:
            continue
        guess = close_names(key, allowed) if isinstance(key, str) else []
        problems.add(join_path(base, key_text(key) if key_text else key), "unknown key%s (allowed: %s)" % (
            "; did you mean %s?" % guess[0] if guess else "", ", ".join(allowed)))


def field(problems: Problems, mapping: dict, base: str, key: str, what: str, *,
          required: bool = True) -> tuple[str, Any]:
    """``(path, value)``; a missing key or an empty value (``key:``) is None, a problem when required."""
    path = join_path(base, key)
    value = mapping.get(key)
    if value is None and required:
        problems.add(path, "required: %s" % what)
    return path, value


def check_mapping(problems: Problems, path: str, value: Any, what: str) -> bool:
    if isinstance(value, dict):
        return True
    problems.add(path, "must be a mapping (%s), not %s" % (what, kind_of(value)))
    return False


def check_list(problems: Problems, path: str, value: Any, what: str) -> bool:
    if isinstance(value, list):
        return True
    problems.add(path, "must be a list (%s), not %s" % (what, kind_of(value)))
    return False


def read_string(problems: Problems, path: str, value: Any, what: str) -> str | None:
    """The stripped text of a string that must be quoted in YAML (a version, a name), or None after adding a
    problem; a number says how to quote it."""
    if isinstance(value, str):
        if value.strip():
            return value.strip()
        problems.add(path, "must not be empty (%s)" % what)
    elif isinstance(value, float):
        problems.add(path, "must be a quoted string (%s), not %s: quote it - YAML reads an unquoted 24.10 as "
                           "the number 24.1" % (what, kind_of(value)))
    elif is_whole(value):
        problems.add(path, "must be a quoted string (%s), not %s: quote it" % (what, kind_of(value)))
    else:
        problems.add(path, "must be a string (%s), not %s" % (what, kind_of(value)))
    return None


def read_text(problems: Problems, path: str, value: Any, what: str, *,
              pattern: re.Pattern | None = None) -> str | None:
    """A non-empty string as it is (matching ``pattern`` when given), or None after adding a problem."""
    if not isinstance(value, str) or not value.strip():
        problems.add(path, "must be a non-empty string (%s), not %s" % (what, kind_of(value)))
        return None
    if pattern is not None and not pattern.fullmatch(value):
        problems.add(path, "%s is not %s" % (quoted(value), what))
        return None
    return value


def read_bool(problems: Problems, path: str, value: Any, what: str) -> bool | None:
    """True, False or None (not given); anything else is a problem (and None)."""
    if value is None or isinstance(value, bool):
        return value
    problems.add(path, "must be true or false (%s), not %s" % (what, kind_of(value)))
    return None


def read_whole(problems: Problems, path: str, value: Any, low: int, high: int, what: str) -> int | None:
    """An int in [low, high] (never a boolean), or None after adding a problem."""
    if is_whole(value):
        if low <= value <= high:
            return value
        problems.add(path, "must be from %d to %d (%s), not %s" % (low, high, what, kind_of(value)))
        return None
    hint = ""
    if isinstance(value, str) and re.match(r"^\s*[0-9]{1,18}\s*$", value):
        hint = ": write it without quotes"
    problems.add(path, "must be a whole number from %d to %d (%s), not %s%s" % (low, high, what, kind_of(value), hint))
    return None


def check_timeout(value: Any, parameter: str = "timeout") -> float:
    """``value`` when it is a number of seconds above 0 (a whole number or a finite float, never a boolean); else
    InvalidValue naming ``parameter``. A timeout of 0 or below would stop every command at once (or never)."""
    if (is_whole(value) or isinstance(value, float)) and 0 < value < float("inf"):
        return value
    allowed = "a number of seconds above 0"
    shown = repr(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else kind_of(value)
    raise InvalidValue("%s=%s is not a timeout; allowed: %s. Nothing was changed." % (parameter, shown, allowed),
                       parameter=parameter, allowed=allowed)


def read_choice(problems: Problems, path: str, value: Any, allowed: Sequence[str]) -> str | None:
    """One of ``allowed`` (a string), or None after adding a problem."""
    if isinstance(value, str) and value in allowed:
        return value
    problems.add(path, "must be one of %s, not %s" % (", ".join(allowed), kind_of(value)))
    return None
