# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running the NVIDIA tools: which binary, which argv, which environment.

Two families ship the same programs under different names: NVIDIA's MFT (``mlxconfig``,
``flint``, ``mlxfwmanager``, ``mlxfwreset``, ``mst``) and the open-source mstflint package
that distributions ship inbox (``mstconfig``, ``mstflint``, ``mstfwmanager``,
``mstfwreset``; no ``mst``). A role name (``config``, ``flint``, ...) is mapped to the binary
of the chosen family once, from the table below. Commands are argv lists (never a shell),
run with ``LANG=C`` so output is parseable, with a timeout so a hung tool is killed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import (
    ToolFailed,
    ToolNotFound,
    ToolTimeout,
)

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

# Where the tools live besides PATH (MFT installs into /usr/bin; some images use /usr/local).
EXTRA_PATHS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin",
               "/opt/mellanox/mft/bin")

# Output that means another process holds the device's flash/ICMD semaphore: retried.
SEMAPHORE_RE = re.compile(r"semaphore|resource busy|in use by another", re.IGNORECASE)

ENV = {"LANG": "C", "LC_ALL": "C", "LC_MESSAGES": "C"}

# The options every NIC module takes to build its Runner (documented once by the
# gpufabric.mlnx._attributes.TOOLS doc fragment).
TOOL_ARGSPEC = {
    "tool": {"type": "str", "default": "auto", "choices": ["auto", "mft", "mstflint"]},
    "timeout": {"type": "int", "default": 900},
}


class Result:
    """What one command printed; ``cmd`` is the argv as run."""

    __slots__ = ("cmd", "rc", "stdout", "stderr")

    def __init__(self, cmd, rc, stdout, stderr):
        self.cmd = cmd
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr

    def error_lines(self):
        """The ``-E-`` lines NVIDIA tools print (on stdout), prefix removed."""
        return [line.strip()[4:].strip() for line in (self.stdout + "\n" + self.stderr).splitlines()
                if line.strip().startswith("-E-")]

    def reason(self):
        """The tool's own words for a failure: its -E- lines, else its last non-empty line."""
        errors = self.error_lines()
        if errors:
            return "; ".join(errors)
        lines = [line.strip() for line in (self.stderr + "\n" + self.stdout).splitlines() if line.strip()]
        return lines[-1] if lines else "no output"


def _default_execute(argv, env, timeout, data):
    proc = subprocess.run(argv, input=data, capture_output=True, text=True, env=env,
                          timeout=timeout, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def _default_which(name):
    path = os.environ.get("PATH", "")
    return shutil.which(name, path=os.pathsep.join([path] + list(EXTRA_PATHS)))


class Runner:
    """Resolves and runs the tools of one family (``mft``, ``mstflint`` or ``auto``).

    ``execute(argv, env, timeout, data) -> (rc, stdout, stderr)`` and ``which(name)`` can be
    replaced (unit tests assert the exact argv this way); ``sleep`` too.
    """

    def __init__(self, tool="auto", timeout=900, semaphore_retries=5, retry_delay=3.0,
                 execute=None, which=None, sleep=None):
        if tool not in ("auto", "mft", "mstflint"):
            raise ValueError("tool must be one of auto, mft, mstflint, not %r" % (tool,))
        self.requested = tool
        self.timeout = timeout
        self.semaphore_retries = semaphore_retries
        self.retry_delay = retry_delay
        self._execute = execute or _default_execute
        self._which = which or _default_which
        self._sleep = sleep or time.sleep
        self._family = None
        self._paths = {}

    @property
    def family(self):
        """``mft`` or ``mstflint``: ``auto`` prefers MFT when its mlxconfig is installed."""
        if self._family is None:
            order = ("mft", "mstflint") if self.requested == "auto" else (self.requested,)
            for fam in order:
                if self._which(TOOLSETS[fam]["config"]):
                    self._family = fam
                    break
            else:
                wanted = " or ".join("%s (%s)" % (TOOLSETS[f]["config"], PACKAGES[f]) for f in order)
                raise ToolNotFound("no NVIDIA NIC configuration tool found on PATH: install %s" % wanted)
        return self._family

    def name(self, role):
        """The binary name of a role in the chosen family (``config`` -> ``mstconfig``)."""
        if role in COMMON_TOOLS:
            return role
        name = TOOLSETS[self.family][role]
        if name is None:
            raise ToolNotFound("%s has no '%s' tool (it exists in MFT only)" % (self.family, role))
        return name

    def has(self, role):
        try:
            self.path(role)
        except ToolNotFound:
            return False
        return True

    def path(self, role):
        if role not in self._paths:
            name = self.name(role)
            found = self._which(name)
            if not found:
                package = COMMON_TOOLS.get(role) or PACKAGES[self.family]
                raise ToolNotFound("%s not found on PATH: it is provided by %s" % (name, package))
            self._paths[role] = found
        return self._paths[role]

    def run(self, role, args, check=True, data=None, timeout=None):
        """Run ``role`` with ``args``; retries while another process holds the semaphore.

        With ``check`` a non-zero exit raises ToolFailed carrying the tool's words.
        """
        argv = [self.path(role)] + [str(a) for a in args]
        env = dict(os.environ)
        env.update(ENV)
        attempt = 0
        while True:
            try:
                rc, out, err = self._execute(argv, env, timeout or self.timeout, data)
            except subprocess.TimeoutExpired:
                raise ToolTimeout("%s did not finish within %ss and was stopped"
                                  % (" ".join(argv), timeout or self.timeout), cmd=argv)
            result = Result(argv, rc, out or "", err or "")
            if rc != 0 and SEMAPHORE_RE.search(result.stdout + result.stderr) \
                    and attempt < self.semaphore_retries:
                attempt += 1
                self._sleep(self.retry_delay * attempt)
                continue
            break
        if check and rc != 0:
            held = " (the device semaphore was still held after %d retries)" % attempt if attempt else ""
            raise ToolFailed("%s failed with rc %s%s: %s" % (" ".join(argv), rc, held, result.reason()),
                             cmd=argv, rc=rc, stdout=result.stdout, stderr=result.stderr)
        return result


def parallel(func, items, workers=None):
    """Apply ``func`` to every item at once (one thread each, tools run in parallel).

    Returns ``[(item, result, error)]`` in the items' order; an exception is returned as
    ``error``, so one failing device never stops the others.
    """
    items = list(items)
    if not items:
        return []

    def _one(item):
        try:
            return item, func(item), None
        except Exception as exc:  # pylint: disable=broad-except  # reported per device
            return item, None, exc

    with ThreadPoolExecutor(max_workers=workers or min(32, len(items))) as pool:
        return list(pool.map(_one, items))
