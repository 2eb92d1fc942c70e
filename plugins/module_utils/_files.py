# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files a module keeps on the host (the rails' netplan, NetworkManager, ifupdown and sysctl.d files, the RoCE
QoS script and its udev rule): what ansible.builtin.copy did in a task of its own, done by the module that makes
the text.

``plan_file`` (reads only) says whether a file differs from the wanted text, mode and owner, with the diff that
``--check --diff`` shows; ``write_file`` replaces it atomically (a temporary file in the same directory, its mode
and owner set, optionally validated by a command, then renamed over the old one); ``keep_file`` does both for one
file (the ofed driver's repository files, pins and records), ``remove_file`` removes one. On full paths (the
platform module: udev rule, systemd unit): ``ensure_file`` (content, mode and owner by name, the diff of each),
``ensure_dir`` and ``ensure_link`` - each ``{"changed", "diff": [...]}``, nothing written in check mode. Paths are host paths taken
through ``Host.path()``; every path a module writes is checked here by a strict grammar first.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import stat
import tempfile
from collections.abc import Sequence
from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, MlnxError

# ---------------------------------------------------------------------------------- input

# The path of a file a module writes that is also named in a rule, a unit or a script (the RoCE QoS script): no
# space, quote, '$', '%', glob or newline.
PATH_RE = re.compile(r"/[A-Za-z0-9_.+/-]*", re.ASCII)
PATH_ALLOWED = "an absolute path of ASCII letters, digits and _ . + - /"
# The path of a file a module only writes (named nowhere else; an argv word at most): absolute, one line of UTF-8.
DEST_RE = re.compile(r"/[^\x00\n\r\ud800-\udfff]*")
DEST_ALLOWED = "an absolute path of a file (no newline or NUL, no '..' part, not ending in /)"


def check_path(path: Any, parameter: str, host: str | None = None, *, named: bool = True) -> str:
    """``path`` when it is an absolute path of a file (no ``..`` part, not ending in ``/``) that matches the strict
    grammar PATH_RE (``named``: it is written into a rule, unit or script) or DEST_RE; else InvalidValue naming the
    host, the parameter and what is allowed."""
    pattern, allowed = (PATH_RE, PATH_ALLOWED) if named else (DEST_RE, DEST_ALLOWED)
    if (isinstance(path, str) and pattern.fullmatch(path) and ".." not in path.split("/")
            and not path.endswith("/")):
        return path
    if named:
        raise InvalidValue("%s%s=%r cannot be written into a udev rule, systemd unit or script: allowed is %s" % (
            "%s: " % host if host else "", parameter, path, allowed), device=host, parameter=parameter,
            allowed=allowed)
    raise InvalidValue("%s%s=%r is not a file the module can write: allowed is %s" % (
        "%s: " % host if host else "", parameter, path, allowed), device=host, parameter=parameter, allowed=allowed)


# ---------------------------------------------------------------------------------- reading and deciding

def plan_file(reader: Any, path: str, content: str, *, mode: int, owner: int = 0, group: int = 0) -> dict:
    """What ``path`` (a host path, under ``reader.root``) would need to hold ``content`` with ``mode`` and
    owner/group: ``{"path", "changed", "reasons": [...], "diff": [...]}``; the diff is a text diff of the content
    (``before_header``/``after_header`` the path) and, when mode or owner differ, a mapping diff of them."""
    full = reader.path(path)
    try:
        info = os.stat(full)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise MlnxError("cannot read %s: %s" % (path, exc), parameter=path) from exc
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise MlnxError("%s is not a regular file; nothing was written" % path, parameter=path)
    before = None
    if info is not None:
        try:
            with open(full, "rb") as stream:
                before = stream.read().decode("utf-8", errors="replace")
        except OSError as exc:
            raise MlnxError("cannot read %s: %s" % (path, exc), parameter=path) from exc
    reasons, diff = [], []
    if before != content:
        reasons.append("created" if before is None else "content")
        diff.append({"before_header": path, "after_header": path, "before": before or "", "after": content})
    if info is not None:
        have = {"mode": "%04o" % stat.S_IMODE(info.st_mode), "owner": info.st_uid, "group": info.st_gid}
        want = {"mode": "%04o" % mode, "owner": owner, "group": group}
        differs = sorted(k for k in want if have[k] != want[k])
        if differs:
            reasons += differs
            diff.append({"before": {path: {k: have[k] for k in differs}}, "after": {path: {k: want[k] for k in differs}}})
    return {"path": path, "changed": bool(reasons), "reasons": reasons, "diff": diff}


# ---------------------------------------------------------------------------------- writing

def write_file(reader: Any, path: str, content: str, *, mode: int, owner: int = 0, group: int = 0,
               make_parent: bool = False, validate: Sequence[str] | None = None) -> None:
    """Replace ``path`` with ``content`` atomically, ``mode`` and owner/group set before the rename.

    ``make_parent``: create a missing directory (mode 0755) first, else a missing directory is an error.
    ``validate``: an argv whose word ``%s`` is the temporary file; a non-zero exit leaves the old file in place and
    raises MlnxError with the tool's words. Raises MlnxError naming the path for every other failure."""
    full = reader.path(path)
    folder = os.path.dirname(full)
    try:
        if make_parent:
            os.makedirs(folder, mode=0o755, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".gpufabric.")
    except OSError as exc:
        raise MlnxError("cannot write %s: %s" % (path, exc), parameter=path) from exc
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content.encode("utf-8"))
            os.fchmod(stream.fileno(), mode)
            if os.geteuid() == 0 or (owner, group) != (os.geteuid(), os.getegid()):
                os.fchown(stream.fileno(), owner, group)   # not root and not already its owner: PermissionError
        if validate:
            argv = [temporary if word == "%s" else word for word in validate]
            rc, out, err = reader.run(argv, check=False)
            if rc != 0:
                raise MlnxError("%s was not written: %s refused it (rc=%d): %s" % (
                    path, " ".join(validate), rc, (err or out or "").strip() or "no output"),
                    parameter=path, cmd=argv, rc=rc, stdout=out, stderr=err)
        os.replace(temporary, full)
    except OSError as exc:
        raise MlnxError("cannot write %s: %s" % (path, exc), parameter=path) from exc
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def converge_files(reader: Any, files: Sequence[dict], *, check_mode: bool) -> list[dict]:
    """Every file of ``files`` (``{"path", "content", "mode", "make_parent"?, "validate"?}``) planned, then (unless
    check mode) the ones that differ written in order. Returns each plan (``plan_file``) in that order."""
    planned = [plan_file(reader, spec["path"], spec["content"], mode=spec["mode"]) for spec in files]
    if not check_mode:
        for spec, decided in zip(files, planned):
            if decided["changed"]:
                write_file(reader, spec["path"], spec["content"], mode=spec["mode"],
                           make_parent=spec.get("make_parent", False), validate=spec.get("validate"))
    return planned


def keep_file(reader: Any, path: str, content: str, *, mode: int = 0o644, check_mode: bool = False) -> dict:
    """``path`` made to hold ``content`` with ``mode`` (root:root), its folder made (0755) when missing - planned
    (``plan_file``), then written (``write_file``) unless check mode. Returns ``{"changed": bool, "diff": the
    content's text diff, or None}`` (a mode or owner fix alone has no text diff, like ansible.builtin.copy's)."""
    planned = plan_file(reader, path, content, mode=mode)
    if planned["changed"] and not check_mode:
        write_file(reader, path, content, mode=mode, make_parent=True)
    text = [diff for diff in planned["diff"] if isinstance(diff.get("after"), str)]
    return {"changed": planned["changed"], "diff": text[0] if text else None}


def ensure_dir(path: str, *, mode: int = 0o755, check_mode: bool = False) -> dict:
    """The directory ``path`` (a full path) exists - made with ``mode`` and its missing parents (root:root when run as
    root) when it does not; an existing one keeps its mode, as ``file: state=directory`` without a mode would.
    ``{"changed": bool, "diff": [...]}``."""
    if os.path.isdir(path):
        return {"changed": False, "diff": []}
    if os.path.lexists(path):
        raise MlnxError("%s is there but is not a directory" % path, parameter=path)
    diff = [{"before_header": path, "after_header": path, "before": "(absent)\n", "after": "directory\n"}]
    if not check_mode:
        try:
            os.makedirs(path, mode=mode, exist_ok=True)
            os.chmod(path, mode)
            if os.geteuid() == 0:
                os.chown(path, 0, 0)
        except OSError as exc:
            raise MlnxError("cannot make the directory %s: %s" % (path, exc), parameter=path) from exc
    return {"changed": True, "diff": diff}


def remove_file(reader: Any, path: str, *, check_mode: bool = False) -> bool:
    """Remove ``path`` when it exists; True when it was (would be) removed."""
    full = reader.path(path)
    if not os.path.lexists(full):
        return False
    if not check_mode:
        try:
            os.unlink(full)
        except OSError as exc:
            raise MlnxError("cannot remove %s: %s" % (path, exc), parameter=path) from exc
    return True


# ---------------------------------------------------------------------------------- full paths (platform)

class _FullPaths:
    """A reader whose paths are already the host's (``write_file`` takes a reader's ``path()``)."""

    @staticmethod
    def path(path: str) -> str:
        return path


_FULL_PATHS = _FullPaths()


def _ids(path, owner, group):
    try:
        uid = pwd.getpwnam(owner).pw_uid if owner is not None else None
        gid = grp.getgrnam(group).gr_gid if group is not None else None
    except KeyError as exc:
        raise MlnxError("%s: owner %s or group %s is not on this host" % (path, owner, group),
                        parameter="owner") from exc
    return uid, gid


def _read(path):
    try:
        with open(path, encoding="utf-8") as stream:
            return stream.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise MlnxError("cannot read %s: %s" % (path, exc), parameter=path) from exc


def _meta(info):
    return "mode %04o, owner %d:%d\n" % (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid)


def ensure_file(path: str, content: str, *, mode: int = 0o644, owner: str | None = "root", group: str | None = "root",
                check_mode: bool = False) -> dict:
    """``path`` holds ``content`` with ``mode`` and ``owner``:``group`` (None: left as it is)."""
    if not os.path.isabs(path):
        raise MlnxError("%s is not an absolute path" % path, parameter=path)
    if os.path.isdir(path):
        raise MlnxError("%s is a directory, not a file this module can write" % path, parameter=path)
    uid, gid = _ids(path, owner, group)
    before = _read(path)
    diff = []
    if before != content:
        diff.append({"before_header": path, "after_header": path, "before": before or "", "after": content})
    info = os.stat(path) if before is not None else None
    wrong_meta = info is not None and (stat.S_IMODE(info.st_mode) != mode or (uid is not None and info.st_uid != uid)
                                       or (gid is not None and info.st_gid != gid))
    if wrong_meta:
        wanted = "mode %04o, owner %d:%d\n" % (mode, info.st_uid if uid is None else uid,
                                               info.st_gid if gid is None else gid)
        diff.append({"before_header": path + " (mode, owner)", "after_header": path + " (mode, owner)",
                     "before": _meta(info), "after": wanted})
    if not diff or check_mode:
        return {"changed": bool(diff), "diff": diff}
    try:
        if before != content:
            write_file(_FULL_PATHS, path, content, mode=mode, owner=os.geteuid() if uid is None else uid,
                       group=os.getegid() if gid is None else gid, make_parent=True)
        else:
            os.chmod(path, mode)
            if uid is not None or gid is not None:
                os.chown(path, -1 if uid is None else uid, -1 if gid is None else gid)
    except OSError as exc:
        raise MlnxError("cannot write %s: %s" % (path, exc), parameter=path) from exc
    return {"changed": True, "diff": diff}


def ensure_link(path: str, target: str, *, check_mode: bool = False) -> dict:
    """``path`` is a symbolic link to ``target`` (a file or a link elsewhere there is replaced)."""
    try:
        current = os.readlink(path) if os.path.islink(path) else None
    except OSError:
        current = None
    if current == target:
        return {"changed": False, "diff": []}
    if os.path.isdir(path) and not os.path.islink(path):
        raise MlnxError("%s is a directory, not a link this module can replace" % path, parameter=path)
    was = ("-> %s\n" % current) if current is not None else ("a file\n" if os.path.lexists(path) else "(absent)\n")
    diff = [{"before_header": path, "after_header": path, "before": was, "after": "-> %s\n" % target}]
    if not check_mode:
        try:
            tmp = os.path.join(os.path.dirname(path), ".gpufabric.%s.tmp" % os.path.basename(path))
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.symlink(target, tmp)
            os.replace(tmp, path)
        except OSError as exc:
            raise MlnxError("cannot link %s to %s: %s" % (path, target, exc), parameter=path) from exc
    return {"changed": True, "diff": diff}
