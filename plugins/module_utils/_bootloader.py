# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel command line a server boots with: the boot loader configuration, written and proven.

A kernel parameter such as ``pcie_aspm=off`` only takes effect through a reboot, and only if the
boot entry the firmware starts carries it. A reboot is therefore worth asking for only when every
kernel entry of the boot loader's configuration has every wanted parameter; otherwise the host
would reboot on every run and never converge. This module writes the configuration, regenerates
it, reads it back and refuses (``NotBootable``) when no entry would boot the parameters.

Input: ``check_kernel_args`` - each parameter ``name`` or ``name=value`` of a strict ASCII grammar
(``KERNEL_ARG_RE``, whole string): no blank, quote, ``$``, backtick, ``;`` or newline can reach the
shell-sourced GRUB drop-in.

Boot loaders (``detect``):

- ``grub``: Debian and Ubuntu - a drop-in in ``/etc/default/grub.d/*.cfg`` that appends to
  ``GRUB_CMDLINE_LINUX`` (every entry, recovery ones too), ``update-grub`` (or ``grub-mkconfig -o``),
  then the ``linux`` lines of ``/boot/grub/grub.cfg`` (``menuentry`` / ``submenu`` blocks as
  /etc/grub.d/10_linux writes them) are read back.
- ``grubby``: the RHEL family's Boot Loader Specification entries - ``grubby --info=ALL`` lists them
  (``index=``, ``kernel=``, ``args=``, ``title=``), ``grubby --update-kernel=ALL --args=...`` adds
  what an entry lacks, and the entries are read back.
- Not handled, detected and named so the failure says why: systemd-boot (``loader/loader.conf`` on
  the EFI system partition), unified kernel images (``EFI/Linux/*.efi``, ``/etc/kernel/uki.conf``),
  extlinux/syslinux, zipl.

Reading: files under ``root`` (``/`` on a real host; tests point it at the simulator's tree), the tools
through a ``_host.Host``. Deciding: pure (``grub_entries``, ``grubby_entries``, ``lacking``,
``render_dropin``). Writing: only what differs, never in check mode; a failed ``update-grub`` puts the
previous drop-in back.
"""

from __future__ import annotations

import glob
import os
import re
import tempfile
from collections.abc import Mapping, Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, MlnxError, ToolFailed
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host

BOOTLOADERS = ("auto", "grub", "grubby")
# A kernel parameter: a name of letters, digits, '_', '.', '-'; a value of those and ',', ':', '/', '=', '+', '@', '~'
# (console=ttyS0,115200n8, crashkernel=1G-4G:192M, rd.lvm.lv=rhel/root, root=UUID=...). Nothing a shell interprets.
KERNEL_ARG_RE = re.compile(r"[A-Za-z0-9_.-]+(?:=[A-Za-z0-9_.,:/=+@~-]+)?", re.ASCII)
KERNEL_ARG_ALLOWED = ("name or name=value of ASCII letters, digits and _ . - (the value also , : / = + @ ~), "
                      "no blank, quote or shell character, e.g. pcie_aspm=off")
GRUB_DROPIN_DIR = "/etc/default/grub.d"
GRUB_DROPIN_RE = re.compile(r"/etc/default/grub\.d/[A-Za-z0-9_.-]+\.cfg", re.ASCII)
GRUB_DEFAULT = "/etc/default/grub"
GRUB_CFG = "/boot/grub/grub.cfg"
BLS_ENTRIES = ("/boot/loader/entries", "/efi/loader/entries", "/boot/efi/loader/entries")
ESPS = ("/boot/efi", "/efi", "/boot")
# Where /etc/grub.d/10_linux looks for kernels (Debian grub2 2.06).
KERNEL_GLOBS = ("/boot/vmlinuz-*", "/vmlinuz-*", "/boot/kernel-*")
LINUX_RE = re.compile(r"^\s*(linux|linuxefi|linux16)\s+(\S+)(.*)\Z", re.ASCII)
MENU_RE = re.compile(r"""^\s*(menuentry|submenu)\s+(?:'((?:[^']|'\\'')*)'|"([^"]*)"|(\S+))""")
DROPIN_HEAD = ("# gpufabric.mlnx platform - managed by Ansible, local changes are overwritten.\n"
               "# Kernel parameters of the GPU servers; update-grub reads this after /etc/default/grub.\n")


class NotBootable(MlnxError):
    """The boot loader configuration has no entry that would boot the wanted parameters: a reboot would not
    activate them."""


# ---------------------------------------------------------------------------------- input

def _bad(option, value, why, allowed):
    return InvalidValue("kernel_cmdline: %s=%r %s; allowed: %s. Nothing was changed." % (option, value, why, allowed),
                        parameter=option, allowed=allowed)


def check_kernel_args(args: object, *, option: str = "args") -> list[str]:
    """``args`` as a list of kernel parameters; InvalidValue naming ``option[i]`` for anything else."""
    if not isinstance(args, (list, tuple)):
        raise _bad(option, args, "is not a list", "a list of kernel parameters such as pcie_aspm=off")
    for index, arg in enumerate(args):
        if not isinstance(arg, str) or not KERNEL_ARG_RE.fullmatch(arg):
            raise _bad("%s[%d]" % (option, index), arg, "is not one kernel parameter", KERNEL_ARG_ALLOWED)
    return list(dict.fromkeys(args))


def check_options(params: Mapping) -> dict:
    """The module's options, checked: ``{"args", "bootloader", "grub_dropin"}``."""
    if not isinstance(params, dict):
        raise _bad("options", params, "is not a mapping", "the module's options")
    bootloader = params.get("bootloader", "auto")
    if bootloader not in BOOTLOADERS:
        raise _bad("bootloader", bootloader, "is not a boot loader this module handles", ", ".join(BOOTLOADERS))
    dropin = params.get("grub_dropin") or GRUB_DROPIN_DIR + "/90-gpufabric.cfg"
    if not isinstance(dropin, str) or not GRUB_DROPIN_RE.fullmatch(dropin):
        raise _bad("grub_dropin", dropin, "is not a file update-grub reads",
                   "%s/NAME.cfg (grub-mkconfig sources only *.cfg there), NAME of letters, digits and _ . -"
                   % GRUB_DROPIN_DIR)
    return {"args": check_kernel_args(params.get("args")), "bootloader": bootloader, "grub_dropin": dropin}


# ---------------------------------------------------------------------------------- deciding (pure)

def lacking(have: Sequence[str] | None, wanted: Sequence[str]) -> list[str]:
    """The ``wanted`` parameters missing from the words ``have`` (``name=value`` exactly; a bare ``name`` in any
    form)."""
    present = set(have or [])
    names = {arg.split("=", 1)[0] for arg in present}
    return [arg for arg in wanted if (arg not in present if "=" in arg else arg not in names)]


def render_dropin(args: Sequence[str]) -> str:
    """The GRUB drop-in that appends ``args`` (checked by ``check_kernel_args``) to ``GRUB_CMDLINE_LINUX``."""
    words = check_kernel_args(args)
    return DROPIN_HEAD + 'GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX} %s"\n' % " ".join(words)


def _title(match):
    if match.group(2) is not None:
        return match.group(2).replace("'\\''", "'")
    return match.group(3) if match.group(3) is not None else match.group(4)


def grub_entries(text: str | None) -> list[dict]:
    """The kernel entries of a grub.cfg: ``[{"title", "kernel", "args"}]`` in file order, ``title`` the enclosing
    menu path (``Advanced options for X>Y``), ``args`` the words after the kernel path."""
    out, menus, depth = [], [], 0
    for line in (text or "").splitlines():
        stripped = line.split("#", 1)[0] if line.lstrip().startswith("#") else line
        head = MENU_RE.match(stripped)
        if head and stripped.rstrip().endswith("{"):
            menus.append((depth, _title(head)))
            depth += 1
            continue
        linux = LINUX_RE.match(stripped)
        if linux:
            out.append({"title": ">".join(t for _d, t in menus) or None, "kernel": linux.group(2),
                        "args": linux.group(3).split()})
            continue
        if stripped.strip() == "}" and depth:
            depth -= 1
            while menus and menus[-1][0] >= depth:
                menus.pop()
    return out


def _unquote(value):
    value = value.strip()
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value


def grubby_entries(text: str | None) -> list[dict]:
    """``grubby --info=ALL`` -> ``[{"title", "kernel", "args", "index"}]``; ``args`` are the options grubby shows
    (without ``root=``, which it prints on a line of its own)."""
    out = []
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        key = key.strip()
        if key == "index":
            out.append({"index": value.strip(), "title": None, "kernel": None, "args": []})
        elif out and key == "kernel":
            out[-1]["kernel"] = _unquote(value)
        elif out and key == "args":
            out[-1]["args"] = _unquote(value).split()
        elif out and key == "title":
            out[-1]["title"] = _unquote(value)
    return [entry for entry in out if entry["kernel"]]


def entry_report(entries: Sequence[Mapping], wanted: Sequence[str]) -> list[dict]:
    """``[{"title", "kernel", "lacking"}]`` of ``entries`` against ``wanted``."""
    return [{"title": e["title"], "kernel": e["kernel"], "lacking": lacking(e["args"], wanted)} for e in entries]


# ---------------------------------------------------------------------------------- reading

def _files(reader, pattern):
    return sorted(p[len(reader.root.rstrip("/")):] if reader.root.rstrip("/") else p
                  for p in glob.glob(reader.path(pattern)))


def _read(reader, path):
    try:
        with open(reader.path(path)) as stream:
            return stream.read()
    except OSError:
        return None


def kernel_images(reader: Host) -> list[str]:
    """The kernel images /etc/grub.d/10_linux would list (host paths)."""
    return [p for pattern in KERNEL_GLOBS for p in _files(reader, pattern)
            if not re.search(r"\.(dpkg-[a-z]+|rpmsave|rpmnew|bak|old)$|~$", p)]


def bls_entries(reader: Host) -> list[str]:
    """The Boot Loader Specification entry files (``*.conf`` under ``BLS_ENTRIES``), host paths."""
    return [p for d in BLS_ENTRIES for p in _files(reader, d + "/*.conf")]


def others(reader: Host) -> list[str]:
    """The boot loaders on this host that this module does not configure, each as ``name (evidence)``."""
    found = []
    for esp in ESPS:
        for path in _files(reader, esp + "/loader/loader.conf") + _files(reader, esp + "/EFI/systemd/systemd-boot*.efi"):
            found.append("systemd-boot (%s)" % path)
        for path in _files(reader, esp + "/EFI/Linux/*.efi"):
            found.append("a unified kernel image (%s)" % path)
    for path, name in (("/etc/kernel/uki.conf", "unified kernel images"), ("/boot/extlinux/extlinux.conf", "extlinux"),
                       ("/boot/syslinux/syslinux.cfg", "syslinux"), ("/etc/zipl.conf", "zipl")):
        if os.path.exists(reader.path(path)):
            found.append("%s (%s)" % (name, path))
    return list(dict.fromkeys(found))


def detect(reader: Host) -> str:
    """``grubby`` where grubby and BLS entries are present, ``grub`` where update-grub/grub-mkconfig and
    /etc/default/grub are; else NotBootable naming what the host has."""
    if reader.which("grubby") and bls_entries(reader):
        return "grubby"
    if (reader.which("update-grub") or reader.which("grub-mkconfig")) and os.path.exists(reader.path(GRUB_DEFAULT)):
        return "grub"
    found = others(reader)
    raise NotBootable(
        "kernel_cmdline: no boot loader this module configures is on this host (handled: GRUB with update-grub or "
        "grub-mkconfig and %s - Debian, Ubuntu; grubby with Boot Loader Specification entries in %s - the RHEL "
        "family); found: %s. Set the kernel parameters by hand or pick the boot loader (bootloader=grub|grubby). "
        "Nothing was changed." % (GRUB_DEFAULT, BLS_ENTRIES[0], "; ".join(found) or "no boot loader configuration"),
        parameter="bootloader", allowed=list(BOOTLOADERS[1:]))


# ---------------------------------------------------------------------------------- writing

def _write(reader, path, content):
    """Replace ``path`` (host path under ``root``) with ``content`` atomically, mode 0644; None removes it."""
    full = reader.path(path)
    if content is None:
        if os.path.exists(full):
            os.unlink(full)
        return
    os.makedirs(os.path.dirname(full), mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(full), prefix=".gpufabric.")
    with os.fdopen(fd, "w") as stream:
        stream.write(content)
    os.chmod(tmp, 0o644)
    os.replace(tmp, full)


def _regenerate_argv(reader):
    if reader.which("update-grub"):
        return ["update-grub"]
    if reader.which("grub-mkconfig"):
        return ["grub-mkconfig", "-o", GRUB_CFG]
    raise NotBootable("kernel_cmdline: neither update-grub nor grub-mkconfig is on PATH: %s cannot be regenerated. "
                      "Nothing was changed." % GRUB_CFG, parameter="bootloader", allowed=["grubby"])


def _not_bootable(host, config, wanted, report, findings, *, when="after regenerating it", tool_said=None):
    """NotBootable: ``config`` has no entry with every ``wanted`` parameter (``report``: its entries)."""
    if not report:
        what = "has no kernel entry"
    else:
        bad = [e for e in report if e["lacking"]]
        what = "has %d kernel entries, %d lacking %s: %s" % (
            len(report), len(bad), " ".join(sorted({a for e in bad for a in e["lacking"]})),
            "; ".join("%s (%s)" % (e["title"] or "entry", e["kernel"]) for e in bad[:4]))
    said = (" %s said: %s." % tool_said) if tool_said and tool_said[1] else ""
    return NotBootable(
        "%s: kernel_cmdline: %s, so a reboot would not boot %s; not asking for one.%s %s"
        % (host, " ".join(w for w in (config, what, when) if w), " ".join(wanted), said, findings), parameter="args")


def _findings(reader, bootloader):
    kernels = kernel_images(reader)
    parts = ["Kernel images %s: %s" % ("update-grub lists" if bootloader == "grub" else "under /boot",
                                       ", ".join(kernels) if kernels
                                       else "none under /boot (is /boot mounted? is a kernel installed?)")]
    if bootloader == "grub" and bls_entries(reader):
        parts.append("Boot Loader Specification entries are there (%s): try bootloader=grubby"
                     % ", ".join(bls_entries(reader)[:3]))
    more = others(reader)
    if more:
        parts.append("Other boot loaders on this host, which this module does not configure: %s" % "; ".join(more))
    return ". ".join(parts) + "."


# ---------------------------------------------------------------------------------- the whole job

def converge(reader: Host, params: Mapping, *, host: str, check_mode: bool = False) -> dict:
    """Every kernel entry carries ``params["args"]``: ``{"changed", "bootloader", "config", "regenerated",
    "entries", "before", "after"}``. Raises InvalidValue (bad options), NotBootable (no entry would boot them,
    also predicted in check mode when update-grub would find no kernel), ToolFailed."""
    opts = check_options(params)
    wanted = opts["args"]
    if not wanted:
        return {"changed": False, "bootloader": None, "config": None, "regenerated": False, "entries": [],
                "before": {}, "after": {}}
    bootloader = detect(reader) if opts["bootloader"] == "auto" else opts["bootloader"]
    if bootloader == "grubby":
        return _converge_grubby(reader, wanted, host, check_mode)
    return _converge_grub(reader, wanted, opts["grub_dropin"], host, check_mode)


def _converge_grub(reader, wanted, dropin, host, check_mode):
    want = render_dropin(wanted)
    have = _read(reader, dropin)
    report = entry_report(grub_entries(_read(reader, GRUB_CFG)), wanted)
    regenerate = have != want or not report or any(e["lacking"] for e in report)
    before = {"dropin": have, "entries": report}
    result = {"changed": regenerate, "bootloader": "grub", "config": GRUB_CFG, "regenerated": False,
              "entries": report, "dropin": dropin, "before": before, "after": before}
    if not regenerate:
        return result
    if check_mode:
        # update-grub lists /boot/vmlinuz-*: without one it writes no entry, so the real run would refuse.
        if not kernel_images(reader) and not report:
            raise _not_bootable(host, GRUB_CFG, wanted, [], _findings(reader, "grub"),
                                when="and update-grub would find no kernel to list")
        result["after"] = {"dropin": want, "entries": [dict(e, lacking=[]) for e in report]}
        return result
    if have != want:
        _write(reader, dropin, want)
    argv = _regenerate_argv(reader)
    try:
        _rc, _out, err = reader.run(argv)
    except ToolFailed:
        if have != want:
            _write(reader, dropin, have)   # the host stays as it was
        raise
    after = entry_report(grub_entries(_read(reader, GRUB_CFG)), wanted)
    result.update(regenerated=True, entries=after, after={"dropin": want, "entries": after})
    if not after or any(e["lacking"] for e in after):
        raise _not_bootable(host, GRUB_CFG, wanted, after, _findings(reader, "grub"),
                            tool_said=(argv[0], " ".join((err or "").split())[-400:]))
    return result


def _converge_grubby(reader, wanted, host, check_mode):
    def read():
        _rc, out, _err = reader.run(["grubby", "--info=ALL"])
        return entry_report(grubby_entries(out), wanted)

    report = read()
    config = "the boot entries (grubby --info=ALL)"
    if not report:
        raise _not_bootable(host, config, wanted, [], _findings(reader, "grubby"), when="")
    todo = sorted({a for e in report for a in e["lacking"]}, key=wanted.index)
    result = {"changed": bool(todo), "bootloader": "grubby", "config": config, "regenerated": False,
              "entries": report, "before": {"entries": report}, "after": {"entries": report}}
    if not todo:
        return result
    if check_mode:
        result["after"] = {"entries": [dict(e, lacking=[]) for e in report]}
        return result
    reader.run(["grubby", "--update-kernel=ALL", "--args=%s" % " ".join(todo)])
    after = read()
    result.update(regenerated=True, entries=after, after={"entries": after})
    if not after or any(e["lacking"] for e in after):
        raise _not_bootable(host, config, wanted, after, _findings(reader, "grubby"))
    return result


def summary(result: Mapping, *, check_mode: bool) -> str:
    """One line for the task's ``msg``."""
    if result["bootloader"] is None:
        return "no kernel parameter to set"
    entries = len(result["entries"])
    if not result["changed"]:
        return "every kernel entry of %s (%d) carries the parameters" % (result["config"], entries)
    verb = "would regenerate" if check_mode else "regenerated"
    if result["bootloader"] == "grubby":
        verb = "would add the parameters to" if check_mode else "added the parameters to"
    return "%s %s (%d kernel entries)" % (verb, result["config"], entries)
