# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files a module keeps on the host (repository files, pins, records): written the way ansible.builtin.copy does
it, inside the module - no separate copy/file task per file.

``write_file`` replaces a file atomically (a temporary file in the same folder, renamed over it) only when its
content, mode or owner differ, honours check mode (nothing written, the change still reported) and returns the
diff Ansible shows with ``--diff`` (before and after, with the path as header). ``ensure_dir`` makes a folder
(and its parents) with a mode. Paths are host paths, taken through ``Host.path()``; the owner (root:root) is set
only when the module runs as root (the unit tests' fake roots are not).
"""

from __future__ import annotations

import os
import stat
import tempfile

from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host

# ---------------------------------------------------------------------------------- reading


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _attributes_differ(full: str, mode: int) -> bool:
    info = os.stat(full)
    if stat.S_IMODE(info.st_mode) != mode:
        return True
    return _as_root() and (info.st_uid != 0 or info.st_gid != 0)


# ---------------------------------------------------------------------------------- writing

def ensure_dir(host: Host, path: str, *, mode: int = 0o755, check_mode: bool = False) -> bool:
    """Make the folder ``path`` (and its parents) when it is missing; True when it was (would be) made."""
    full = host.path(path)
    if os.path.isdir(full):
        return False
    if not check_mode:
        os.makedirs(full, mode=mode, exist_ok=True)
        os.chmod(full, mode)
        if _as_root():
            os.chown(full, 0, 0)
    return True


def write_file(host: Host, path: str, content: str | bytes, *, mode: int = 0o644, check_mode: bool = False) -> dict:
    """Make ``path`` hold ``content`` with ``mode`` (root:root when run as root); its folder is made (0755) when
    missing. Returns ``{"changed": bool, "diff": {before, after, before_header, after_header} or None}`` - the
    diff only for text whose content changes (a mode or owner fix has none, like ansible.builtin.copy's)."""
    full = host.path(path)
    data = content.encode("utf-8") if isinstance(content, str) else content
    before = None
    if os.path.isfile(full):
        with open(full, "rb") as stream:
            before = stream.read()
    same = before == data
    if same and not _attributes_differ(full, mode):
        return {"changed": False, "diff": None}
    diff = None
    if not same:
        diff = {"before": _text(before) if before is not None else "", "after": _text(data),
                "before_header": path if before is not None else "%s (absent)" % path, "after_header": path}
    if not check_mode:
        folder = os.path.dirname(full)
        if not os.path.isdir(folder):
            ensure_dir(host, os.path.dirname(path), check_mode=False)
        if same:
            os.chmod(full, mode)
            if _as_root():
                os.chown(full, 0, 0)
        else:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".gpufabric.")
            try:
                with os.fdopen(fd, "wb") as stream:
                    stream.write(data)
                os.chmod(tmp, mode)
                if _as_root():
                    os.chown(tmp, 0, 0)
                os.replace(tmp, full)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
    return {"changed": True, "diff": diff}


def remove_file(host: Host, path: str, *, check_mode: bool = False) -> bool:
    """Remove ``path`` when it exists; True when it was (would be) removed."""
    full = host.path(path)
    if not os.path.lexists(full):
        return False
    if not check_mode:
        os.unlink(full)
    return True


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
