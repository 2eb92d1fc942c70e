# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running the NVIDIA tools: which binary, which argv, which environment.

Two families ship the same programs under different names: NVIDIA's MFT (``mlxconfig``,
``flint``, ``mlxfwmanager``, ``mlxfwreset``, ``mst``) and the open-source mstflint package
that distributions ship inbox (``mstconfig``, ``mstflint``, ``mstfwmanager``,
``mstfwreset``; no ``mst``). A role name (``config``, ``flint``, ...) is mapped to the binary
of the chosen family once, from the table below. ``Runner`` runs them through the host layer
(``_host.Host``: argv lists, never a shell, ``LANG=C``, a timeout so a hung tool is stopped) and
retries a command while another process holds the device's semaphore.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import ToolFailed, ToolNotFound
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host, Result
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import check_timeout

# role -> binary name, per family. ``None``: the family has no such tool.
TOOLSETS = {
    "mft": {
        "config": "mlxconfig",
        "flint": "flint",
        "fwmanager": "mlxfwmanager",
        "fwreset": "mlxfwreset",
        "mst": "mst",
    },
    "mstflint": {
        "config": "mstconfig",
        "flint": "mstflint",
        "fwmanager": "mstfwmanager",
        "fwreset": "mstfwreset",
        "mst": None,
    },
}

# Tools outside both families, with the package that provides them.
COMMON_TOOLS = {
    "lspci": "pciutils",
    "ibdev2netdev": "MLNX_OFED / DOCA-OFED (mlnx-tools)",
    "ibstat": "infiniband-diags",
    "ofed_info": "MLNX_OFED / DOCA-OFED",
    "mlnx_qos": "MLNX_OFED / DOCA-OFED (mlnx-tools)",
}

PACKAGES = {
    "mft": "NVIDIA Firmware Tools (MFT, package 'mft' or DOCA's 'doca-tools')",
    "mstflint": "mstflint (package 'mstflint' on Debian, Ubuntu and RHEL)",
}

# Output that means another process holds the device's flash/ICMD semaphore: retried.
SEMAPHORE_RE = re.compile(r"semaphore|resource busy|in use by another", re.IGNORECASE)

# The options every NIC module takes to build its Runner (documented once by the
# gpufabric.mlnx._attributes.TOOLS doc fragment).
TOOL_ARGSPEC = {
    "tool": {"type": "str", "default": "auto", "choices": ["auto", "mft", "mstflint"]},
    "timeout": {"type": "int", "default": 900},
}


class Runner:
    """Resolves and runs the tools of one family (``mft``, ``mstflint`` or ``auto``) on ``host``.

    Without ``host``, a ``Host`` built from ``execute`` and ``which`` (unit tests assert the exact argv
    this way; see ``_host``); ``sleep`` can be replaced too.
    """

    def __init__(self, tool: str = "auto", *, timeout: float = 900, semaphore_retries: int = 5,
                 retry_delay: float = 3.0, host: Host | None = None, execute: Callable | None = None,
                 which: Callable[[str], str | None] | None = None, sleep: Callable[[float], None] | None = None):
        if tool not in ("auto", "mft", "mstflint"):
            raise ValueError("tool must be one of auto, mft, mstflint, not %r" % (tool,))
        self.requested = tool
        self.timeout = check_timeout(timeout)
        self.semaphore_retries = semaphore_retries
        self.retry_delay = retry_delay
        self.host = host or Host(timeout=timeout, execute=execute, which=which)
        self._sleep = sleep or time.sleep
        self._family = None
        self._paths = {}

    @property
    def family(self) -> str:
        """``mft`` or ``mstflint``: ``auto`` prefers MFT when its mlxconfig is installed."""
        if self._family is None:
            order = ("mft", "mstflint") if self.requested == "auto" else (self.requested,)
            for fam in order:
                if self.host.which(TOOLSETS[fam]["config"]):
                    self._family = fam
                    break
            else:
                wanted = " or ".join("%s (%s)" % (TOOLSETS[f]["config"], PACKAGES[f]) for f in order)
                raise ToolNotFound("no NVIDIA NIC configuration tool found on PATH: install %s" % wanted)
        return self._family

    def name(self, role: str) -> str:
        """The binary name of a role in the chosen family (``config`` -> ``mstconfig``)."""
        if role in COMMON_TOOLS:
            return role
        name = TOOLSETS[self.family][role]
        if name is None:
            raise ToolNotFound("%s has no '%s' tool (it exists in MFT only)" % (self.family, role))
        return name

    def has(self, role: str) -> bool:
        """Is the role's tool installed?"""
        try:
            self.path(role)
        except ToolNotFound:
            return False
        return True

    def path(self, role: str) -> str:
        """The full path of the role's tool; raises ToolNotFound naming the package that provides it."""
        if role not in self._paths:
            name = self.name(role)
            found = self.host.which(name)
            if not found:
                package = COMMON_TOOLS.get(role) or PACKAGES[self.family]
                raise ToolNotFound("%s not found on PATH: it is provided by %s" % (name, package))
            self._paths[role] = found
        return self._paths[role]

    def run(self, role: str, args: Sequence[object], *, check: bool = True, data: str | None = None,
            timeout: float | None = None) -> Result:
        """Run ``role`` with ``args``; retries while another process holds the semaphore.

        With ``check`` a non-zero exit raises ToolFailed carrying the tool's words.
        """
        argv = [self.path(role)] + [str(a) for a in args]
        attempt = 0
        while True:
            result = self.host.call(argv, timeout=timeout or self.timeout, data=data)
            if result.rc != 0 and SEMAPHORE_RE.search(result.stdout + result.stderr) \
                    and attempt < self.semaphore_retries:
                attempt += 1
                self._sleep(self.retry_delay * attempt)
                continue
            break
        if check and result.rc != 0:
            held = " (the device semaphore was still held after %d retries)" % attempt if attempt else ""
            raise ToolFailed("%s failed with rc %s%s: %s" % (" ".join(argv), result.rc, held, result.reason()),
                             cmd=argv, rc=result.rc, stdout=result.stdout, stderr=result.stderr)
        return result
