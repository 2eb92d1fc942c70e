# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files a module persists on the host itself (udev rules, systemd units, their directories and links) instead of
separate template/copy/file tasks: each call says whether it changed (would change) anything and returns the diff
Ansible shows, and writes nothing in check mode.

- ``ensure_file(path, content, mode, owner, group)``: the file holds exactly ``content`` (written atomically: a
  temporary file in the same directory, then ``os.replace``), with that mode and owner; its directory is made
  (0755) when missing. The diff is the file's text before and after, and its mode/owner when they differ.
- ``ensure_dir(path, mode)``: the directory exists (an existing one keeps its mode, as ``file: state=directory``
  without a mode change would not).
- ``ensure_link(path, target)``: ``path`` is a symbolic link to ``target`` (a file or another link there is
  replaced, as ``file: state=link force=true`` does).

Every function returns ``{"changed": bool, "diff": [diff entries]}``; a failure raises MlnxError naming the path.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
import tempfile

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError


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
            directory = os.path.dirname(path)
            os.makedirs(directory, mode=0o755, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".gpufabric.")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as stream:
                    stream.write(content)
                os.chmod(tmp, mode)
                if uid is not None or gid is not None:
                    os.chown(tmp, -1 if uid is None else uid, -1 if gid is None else gid)
                os.replace(tmp, path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        else:
            os.chmod(path, mode)
            if uid is not None or gid is not None:
                os.chown(path, -1 if uid is None else uid, -1 if gid is None else gid)
    except OSError as exc:
        raise MlnxError("cannot write %s: %s" % (path, exc), parameter=path) from exc
    return {"changed": True, "diff": diff}


def ensure_dir(path: str, *, mode: int = 0o755, check_mode: bool = False) -> dict:
    """The directory ``path`` exists (made with ``mode`` and its missing parents when it does not)."""
    if os.path.isdir(path):
        return {"changed": False, "diff": []}
    if os.path.lexists(path):
        raise MlnxError("%s is there but is not a directory" % path, parameter=path)
    diff = [{"before_header": path, "after_header": path, "before": "(absent)\n", "after": "directory\n"}]
    if not check_mode:
        try:
            os.makedirs(path, mode=mode, exist_ok=True)
            os.chmod(path, mode)
        except OSError as exc:
            raise MlnxError("cannot make the directory %s: %s" % (path, exc), parameter=path) from exc
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
