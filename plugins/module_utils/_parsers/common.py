# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pieces shared by the tool-output parsers.

Import the parsers and ``ParseError`` from the package (``_parsers``, the registry); this file exists so the
per-tool files can share them without importing the package back (a circular import).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError


class ParseError(MlnxError, ValueError):
    """Text that is not the named tool's output, or an unknown tool.

    ``tool`` is the name the caller used, ``line`` / ``lineno`` (1-based) the offending line
    when there is one. An MlnxError, so modules report it like any other failure.
    """

    def __init__(self, tool: str, message: str, line: str | None = None, lineno: int | None = None):
        text = "%s: %s" % (tool, message)
        if line is not None:
            text += " (line %s: %r)" % (lineno, line)
        super().__init__(text)
        self.tool = tool
        self.message = message
        self.line = line
        self.lineno = lineno


# ---------------------------------------------------------------- lines

class Line:
    """One cleaned line of output: ``no`` (1-based), ``text`` (right-stripped)."""

    __slots__ = ("no", "text")

    def __init__(self, no: int, text: str):
        self.no = no
        self.text = text

    def __repr__(self) -> str:
        return "Line(%d, %r)" % (self.no, self.text)


def _overwrite(raw):
    """What a terminal shows for a line holding ``\\r`` / ``\\b`` progress redraws."""
    if "\r" in raw:
        shown = [part for part in raw.split("\r") if part.strip()]
        raw = shown[-1] if shown else ""
    if "\b" in raw:
        kept = []
        for char in raw:
            if char == "\b":
                if kept:
                    kept.pop()
            else:
                kept.append(char)
        raw = "".join(kept)
    return raw.rstrip()


def _as_text(text, tool):
    if isinstance(text, bytes):
        return text.decode("utf-8", "replace")
    if isinstance(text, str):
        return text
    if isinstance(text, (list, tuple)):
        parts = []
        for item in text:
            if isinstance(item, bytes):
                item = item.decode("utf-8", "replace")
            if not isinstance(item, str):
                raise ParseError(tool, "expected text or a list of lines, got a list holding %s"
                                 % type(item).__name__)
            parts.append(item)
        return "\n".join(parts)
    raise ParseError(tool, "expected text or a list of lines, got %s" % type(text).__name__)


def all_lines(text: str | bytes | Sequence[str], tool: str) -> list[Line]:
    """Every line of ``text`` (a string, bytes, or a list of lines such as ``stdout_lines``)."""
    return [Line(no, _overwrite(raw)) for no, raw in enumerate(_as_text(text, tool).split("\n"), 1)]


_PROMPT_RE = re.compile(r"""^\s*(?:
      \[[^\]]*\]\s?[#$]                        # [root@host dir]#
    | [\w.-]+@[\w.-]+(?::[^\s#$]*)?\s?[#$]     # user@host:~/dir$
    | (?:ba|z)?sh-[\d.]+[#$]                   # sh-5.1#
    | ~?[#$]                                   # $ cmd, # cmd, ~# cmd
    | \+                                       # + cmd  (set -x trace)
    )(?:\s|$)""", re.X)
_ELISION_RE = re.compile(r"^\s*[(\[<]?\.{3,}[)\]>]?\s*$")
_RULE_RE = re.compile(r"^\s*(?:-{3,}|={3,})\s*$")


def is_prompt(text: str) -> bool:
    """A shell prompt line (``root@host:~# cmd``, ``sh-5.1# cmd``, ``$ cmd``, ``+ cmd``)."""
    return bool(_PROMPT_RE.match(text))


def is_filler(text: str, *, commands: Sequence[str] = ()) -> bool:
    """Lines no parser needs: blank, prompt, ``...``/``(...)`` elisions, ``----`` rules, and a
    command echo whose first word (after ``sudo``) is one of ``commands``."""
    if not text.strip() or _ELISION_RE.match(text) or _RULE_RE.match(text) or is_prompt(text):
        return True
    if commands:
        words = text.split()
        if words[0] == "sudo" and len(words) > 1:
            words = words[1:]
        if words[0].rsplit("/", 1)[-1] in commands:
            return True
    return False


def content_lines(text: str | bytes | Sequence[str], tool: str, *, commands: Sequence[str] = ()) -> list[Line]:
    """The lines of ``text`` a parser looks at (see ``is_filler``)."""
    return [line for line in all_lines(text, tool) if not is_filler(line.text, commands=commands)]


# ---------------------------------------------------------------- small helpers

_MESSAGE_RE = re.compile(r"^\s*-([EWI])-\s?(.*)$")
MESSAGE_KEYS = {"E": "errors", "W": "warnings", "I": "info"}


def message(text: str) -> tuple[str, str] | None:
    """``("errors"|"warnings"|"info", text)`` for a ``-E-``/``-W-``/``-I-`` line, else None."""
    match = _MESSAGE_RE.match(text)
    if not match:
        return None
    return MESSAGE_KEYS[match.group(1)], match.group(2).strip()


def parse_errors(text: str | bytes | Sequence[str]) -> list[str]:
    """The text of every ``-E- `` line (prefix removed), for the output of any MFT/mstflint tool.

    ``parse_mlxconfig`` returns ``[]`` for output holding no ``Device #`` block (for example
    ``-E- Failed to open the device`` from mstconfig on a host without the card); this gives
    the reason.
    """
    found = []
    for line in all_lines(text, "parse_errors"):
        msg = message(line.text)
        if msg and msg[0] == "errors":
            found.append(msg[1])
    return found


_PROMPT_ANSWER_RE = re.compile(
    r"^(?P<question>.*?(?:\(y/n\)\s*\[n\]|\[y/n\]\s*\[n\]|\[y/n\]))\s*:?\s*(?P<rest>.*)$", re.I)
_ANSWERS = ("y", "yes", "n", "no")


def split_question(text: str) -> tuple[str, str | None, str] | None:
    """``(question, answer, rest)`` for a ``... (y/n) [n] : y`` / ``[y/N] y`` line, else None.

    ``rest`` is text printed on the same line after the question when the answer was not
    echoed (input from a pipe), for example ``Applying... Done!``.
    """
    match = _PROMPT_ANSWER_RE.match(text)
    if not match:
        return None
    rest = match.group("rest").strip()
    answer = None
    words = rest.split(None, 1)
    if words and words[0].lower() in _ANSWERS:
        answer = words[0]
        rest = words[1] if len(words) > 1 else ""
    return match.group("question").strip(), answer, rest


def snake(label: str) -> str:
    """``FW Version(Running)`` -> ``fw_version_running``."""
    return re.sub(r"[^0-9a-z]+", "_", label.lower()).strip("_")


_BDF_RE = re.compile(r"^(?:(?P<domain>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):"
                     r"(?P<dev>[0-9a-fA-F]{2})\.(?P<fn>[0-7])$")


def is_bdf(text: str) -> bool:
    """``05:00.0`` or ``0000:05:00.0``."""
    return bool(_BDF_RE.match(text))


def full_pci(text: str) -> str | None:
    """``05:00.0`` -> ``0000:05:00.0``; a full address is returned unchanged; else None."""
    match = _BDF_RE.match(text)
    if not match:
        return None
    return "%s:%s:%s.%s" % (match.group("domain") or "0000", match.group("bus"), match.group("dev"),
                            match.group("fn"))


def not_this_tool(tool: str, lines: Sequence[Line], what: str) -> ParseError:
    """The ParseError raised when no line of ``lines`` was recognised."""
    if not lines:
        return ParseError(tool, "no %s found: the text is empty" % what)
    return ParseError(tool, "no %s found; first unrecognised line" % what, lines[0].text, lines[0].no)
