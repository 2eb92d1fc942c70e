# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Typed errors of the collection's core.

Every error names what a person needs to fix it: the device, the parameter, what is allowed,
and carries the tool's own words (rc, stdout, stderr) when a tool said no. Modules turn one of
these into a single ``fail_json(**err.fail_kwargs())``.
"""

from __future__ import annotations

from collections.abc import Sequence


class MlnxError(Exception):
    """Base class. ``msg`` is the whole sentence shown to the user."""

    def __init__(self, msg: str, *, device: str | Sequence[str] | None = None, parameter: str | None = None,
                 allowed: str | Sequence[object] | None = None, cmd: Sequence[str] | None = None, rc: int | None = None,
                 stdout: str | None = None, stderr: str | None = None):
        super().__init__(msg)
        self.msg = msg
        self.device = device
        self.parameter = parameter
        self.allowed = allowed
        self.cmd = cmd
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr

    def fail_kwargs(self) -> dict:
        """The keyword arguments of ``module.fail_json``: ``msg`` and every field that is set."""
        out = {"msg": self.msg}
        for key in ("device", "parameter", "allowed", "cmd", "rc", "stdout", "stderr"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    def __str__(self) -> str:
        return self.msg

    @classmethod
    def combine(cls, errors: Sequence[BaseException], *, devices: Sequence[object] | None = None) -> BaseException:
        """One error for several (devices read or planned at once): every problem is reported, none hides another.

        One error is itself. Several become one error of the class they all share (else ``MlnxError``) whose
        ``msg`` joins their distinct messages with ``"; "``; ``device`` is ``devices`` when given, else the
        devices the errors name (None when none does); ``parameter`` and ``allowed`` are the first error's.
        """
        errors = list(errors)
        if not errors:
            raise ValueError("combine() needs at least one error")
        if len(errors) == 1:
            return errors[0]
        words = []
        for err in errors:
            if str(err) not in words:
                words.append(str(err))
        kinds = {err.__class__ for err in errors}
        kind = kinds.pop() if len(kinds) == 1 else cls
        if not issubclass(kind, cls):
            kind = cls
        # A class with its own constructor (ParseError, BadSetting, ProblemsError) cannot be built from one
        # joined message: use its nearest ancestor that takes MlnxError's arguments.
        kind = next(k for k in kind.__mro__ if issubclass(k, cls) and k.__init__ is MlnxError.__init__)
        if devices is None:
            devices = [err.device for err in errors if getattr(err, "device", None) is not None] or None
        first = errors[0]
        return kind("; ".join(words), device=list(devices) if devices is not None else None,
                    parameter=getattr(first, "parameter", None), allowed=getattr(first, "allowed", None))


class ToolNotFound(MlnxError):
    """No binary of the wanted tool family is on PATH."""


class ToolFailed(MlnxError):
    """A tool exited non-zero or printed ``-E-``; carries its rc and output."""


class ToolTimeout(ToolFailed):
    """A tool did not finish within the timeout (a hung tool is killed, never waited on)."""


class DeviceNotFound(MlnxError):
    """A device named in the task is not on the host; ``allowed`` lists the ones present."""


class InvalidParameter(MlnxError):
    """A parameter name the device does not know; ``allowed`` holds the closest names."""


class InvalidValue(MlnxError):
    """A value outside what the parameter accepts; ``allowed`` says what it accepts."""


class Refused(MlnxError):
    """A change the inputs do not permit (downgrade, PSID change, checksum mismatch, ...)."""
