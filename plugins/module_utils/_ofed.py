# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pinned NIC driver (DOCA-OFED or MLNX_OFED) on one host: read, decide, install, verify.

Read (through a ``_host.Host``): ``ofed_info -s``, the package manager's installed versions of the
pinned packages (``dpkg-query`` / ``rpm -q``), the running and the default boot kernel, where the
mlx5 modules of the installed packages are (their file lists, or ``dkms status``), which interface
carries the management connection and whether it sits on an mlx5 device (``_mgmt``), and whether a
driver installed earlier is still waiting for a reboot.

Decide (pure functions): ``driver_spec`` normalises and checks ``gpufabric_matrix.driver``;
``plan`` says what to do (``none``, ``install``, ``upgrade``, ``downgrade``, ``repair``) and
refuses a downgrade the matrix does not allow; ``kernel_precheck`` and ``kernel_guard`` refuse a
driver that has no mlx5 modules for the kernel the host runs or boots next; ``restart_decision``
allows a driver restart only when the management connection does not depend on mlx5
(``_mgmt.mgmt_state``). Versions compare as the package manager orders them (``_versions``).

Write (``converge``, guarded by check mode): a throw-away ``apt-get update`` into a private
directory first (is the repository there, does it have the pinned versions? - nothing on the
host changes), then, once the role has written the repository and pin files, the repository's own
``apt-get update`` and ONE ``apt-get install NAME=VERSION ...``, read back and checked.

Tools run with argv lists and ``LANG=C``; typed errors (``_errors``) name the key, the kernel or
the URL and what is allowed.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import (
    InvalidValue,
    Refused,
    ToolFailed,
    ToolNotFound,
)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._files import ensure_dir, keep_file, remove_file
from ansible_collections.gpufabric.mlnx.plugins.module_utils._firmware import sha256_file
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
from ansible_collections.gpufabric.mlnx.plugins.module_utils._matrix import matrix_problems, repository_problems
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mgmt import check_mgmt_interface, mgmt_state
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import ProblemsError, check_timeout
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import ParseError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.ofed_info import parse_ofed_info
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.packages import (
    apt_errors,
    parse_madison,
    parse_packages_index,
    parse_repoquery,
)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._versions import (
    COMPARE,
    compare_driver,
    driver_key,
    same_driver,
    upstream_version,
)

ROOT = "gpufabric_matrix.driver"
FLAVOUR_PREFIX = {"doca-ofed": "OFED-internal", "mlnx-ofed": "MLNX_OFED_LINUX"}
FLAVOUR_NAME = {"doca-ofed": "DOCA-OFED", "mlnx-ofed": "MLNX_OFED"}
MANAGERS = ("apt", "dnf")
SOURCE_MANAGER = {"apt": "apt", "dnf": "dnf"}

NONE, INSTALL, UPGRADE, DOWNGRADE, REPAIR = "none", "install", "upgrade", "downgrade", "repair"

# Where packaged OFED kmods go: updates/dkms (Ubuntu DKMS), updates (SLES, Debian kmod packages),
# extra/mlnx-ofa_kernel (RHEL kmod / kABI packages).
MODULE_SUBDIRS = ("updates", "extra")
MLX5_RE = re.compile(r"(?:^|/)mlx5_core\.ko(?:\.xz|\.zst|\.gz)?$")
# The DKMS module names MLNX_OFED / DOCA-OFED register.
DKMS_MODULES = ("mlnx-ofed-kernel", "mlnx_ofed_kernel", "mlnx-ofa_kernel")
MARKER = "pending.json"
DEFAULT_STATE_DIR = "/var/lib/gpufabric/ofed"
PINNED = "pinned"   # the state of the ofed role's one call: decide, write, install, verify, restart, facts
BUNDLE_MARK = ".sha256"
REPO_NAME_RE = re.compile(r"[A-Za-z0-9_.-]+", re.ASCII)
COMMENT_RE = re.compile(r"[^\x00-\x1f\x7f]{0,400}")   # one line of the apt files: no newline, no control character


# ---------------------------------------------------------------------------------- input: the matrix entry

_OWN_KEYS = ("allow_downgrade",)
_MATRIX_KEYS = ("name", "description", "firmware", "compatibility", "nv_profiles", "nv_profile_assignments")


def driver_spec(value: object) -> dict:
    """``gpufabric_matrix`` (or its ``driver`` entry) -> the normalised driver entry.

    The checks are the matrix's own (``_matrix.matrix_problems``, every problem at once, each naming
    its key), plus ``allow_downgrade`` (the only key this role adds). Raises InvalidValue.
    """
    if isinstance(value, dict) and ("driver" in value or set(value) & set(_MATRIX_KEYS)) and "flavour" not in value:
        driver = value.get("driver")
    else:
        driver = value
    if not isinstance(driver, dict):
        raise InvalidValue("%s must be a mapping (flavour, version, source, kernels or dkms, allow_downgrade), "
                           "not %s" % (ROOT, type(driver).__name__ if driver is not None else "nothing (it is missing)"),
                           parameter=ROOT)
    core = {k: v for k, v in driver.items() if k not in _OWN_KEYS}
    problems = [p for p in matrix_problems({"name": "-", "driver": core}) if p.startswith(ROOT)]
    allow = driver.get("allow_downgrade", False)
    if allow is None:
        allow = False
    if not isinstance(allow, bool):
        problems.append("%s.allow_downgrade: must be true or false (allow installing an older driver than the "
                        "installed one), not %r" % (ROOT, allow))
    if problems:
        raise InvalidValue("%s is not usable (%d problem%s):\n%s" % (
            ROOT, len(problems), "" if len(problems) == 1 else "s", "\n".join("- " + p for p in problems)),
            parameter=ROOT)
    source = dict(driver["source"])
    kind = source["type"]
    spec = {
        "flavour": driver["flavour"],
        "version": driver["version"].strip(),
        "kernels": [str(k).strip() for k in (driver.get("kernels") or [])],
        "dkms": bool(driver.get("dkms")),
        "allow_downgrade": allow,
        "source": {"type": kind},
    }
    if kind in ("apt", "dnf"):
        spec["source"]["url"] = source["url"].strip()
        spec["source"]["packages"] = {str(k): str(v).strip() for k, v in source["packages"].items()}
    if kind == "apt":
        spec["source"].update(suite=source["suite"].strip(), components=list(source.get("components") or []),
                              signed_by=source.get("signed_by") or None, key_url=source.get("key_url") or None)
    elif kind == "dnf":
        spec["source"].update(gpgkey=source.get("gpgkey") or None,
                              gpgcheck=source.get("gpgcheck", True) is not False)
    else:
        spec["source"].update(path=source["path"].strip(), sha256=_normal_sha256(source["sha256"]))
    return spec


def _normal_sha256(text: object) -> str:
    text = str(text).strip().lower()
    return text[len("sha256:"):] if text.startswith("sha256:") else text


# What a tarball/ISO bundle installs when the role is not told otherwise: the flavour's meta package.
BUNDLE_PACKAGES = {"doca-ofed": ["doca-ofed"], "mlnx-ofed": ["mlnx-ofed-all"]}


def bundle_closure(rows: list[dict], names: Sequence[str]) -> tuple[dict[str, str], list[str], list[str]]:
    """Pins for ``names`` from a bundle's index, plus every package they need at an exact version (``= V``)
    that the bundle has - so downgrading to a bundle moves the whole set. Raises Refused naming what is missing."""
    versions = {}
    for row in rows:
        versions.setdefault(row["name"], []).append(row["version"])
    pins, missing, todo = {}, [], list(names)
    while todo:
        name = todo.pop(0)
        if name in pins:
            continue
        have = versions.get(name) or []
        if len(have) != 1:
            missing.append("%s (%s)" % (name, "not in it" if not have else "several versions: " + ", ".join(have)))
            continue
        pins[name] = have[0]
        row = next(r for r in rows if r["name"] == name)
        for dep, op, version in row["depends"]:
            if op == "=" and version in (versions.get(dep) or []) and dep not in pins:
                todo.append(dep)
    return pins, missing, sorted(versions)


def bundle_pins(reader: Host, repo_url: str, names: Sequence[str]) -> dict[str, str]:
    """The versions a bundle's repository (``file:///dir``, its ``Packages`` index) has of ``names`` and
    of what they depend on at an exact version."""
    directory = repo_url[len("file://"):] if repo_url.startswith("file://") else repo_url
    text = None
    for index in ("Packages", "Packages.gz"):
        path = reader.path(directory, index)
        try:
            if index.endswith(".gz"):
                with gzip.open(path, "rt") as stream:
                    text = stream.read()
            else:
                with open(path) as stream:
                    text = stream.read()
            break
        except OSError:
            continue
    if text is None:
        raise Refused("the driver bundle has no apt repository index at %s (Packages or Packages.gz)" % directory,
                      parameter="%s.source.path" % ROOT)
    pins, missing, available = bundle_closure(parse_packages_index(text), names)
    if missing:
        raise Refused("the driver bundle %s does not have exactly one version of %s (it has: %s)" % (
            directory, "; ".join(missing), ", ".join(available) or "nothing"),
            parameter="gpufabric_ofed_bundle_packages")
    return pins


def pinned_packages(spec: dict, *, packages: Mapping[str, str | None] | None = None) -> dict[str, str | None]:
    """The pinned packages: the matrix's (apt, dnf), or for a tarball the ones the caller found in it."""
    pins = spec["source"].get("packages") or packages or {}
    return dict(pins)


# ---------------------------------------------------------------------------------- argv: apt files and command lines

def apt_sources(repo: Mapping, *, fmt: str = "deb822", comment: str | None = None) -> str:
    """The repository as a deb822 ``.sources`` file or a one-line ``.list`` entry.

    ``repo``: url, suite (``./`` for a flat repository), components (empty for a flat one),
    signed_by (a key file), trusted (no signature check: test repositories, and tarballs whose
    sha256 was verified against the matrix).
    """
    url, suite = repo["url"], repo.get("suite") or "./"
    components = [c for c in (repo.get("components") or []) if c]
    signed_by, trusted = repo.get("signed_by"), bool(repo.get("trusted"))
    head = "# %s\n" % (comment or "Managed by gpufabric.mlnx (ofed role): the pinned NIC driver repository.")
    if fmt == "list":
        opts = []
        if signed_by:
            opts.append("signed-by=%s" % signed_by)
        if trusted:
            opts.append("trusted=yes")
        return head + "deb %s%s %s%s\n" % ("[%s] " % " ".join(opts) if opts else "", url, suite,
                                           "".join(" " + c for c in components))
    if fmt != "deb822":
        raise InvalidValue("apt sources format must be deb822 or list, not %r" % (fmt,), parameter="format",
                           allowed=["deb822", "list"])
    lines = ["Types: deb", "URIs: %s" % url, "Suites: %s" % suite]
    if components:
        lines.append("Components: %s" % " ".join(components))
    if signed_by:
        lines.append("Signed-By: %s" % signed_by)
    if trusted:
        lines.append("Trusted: yes")
    return head + "\n".join(lines) + "\n"


def apt_preferences(packages: Mapping[str, str], *, comment: str | None = None) -> str:
    """apt preferences that hold every pinned package at its version: Pin-Priority 1001 beats any
    newer version in any repository, so ``apt upgrade`` cannot move the driver."""
    blocks = ["# %s" % (comment or "Managed by gpufabric.mlnx (ofed role): the NIC driver packages stay at the "
                                   "versions of gpufabric_matrix.driver.")]
    for name in sorted(packages):
        blocks.append("Package: %s\nPin: version %s\nPin-Priority: 1001" % (name, packages[name]))
    return "\n\n".join(blocks) + "\n"


def apt_files(repo: Mapping, packages: Mapping, *, name: str = "gpufabric-ofed", fmt: str = "deb822",
              comment: str | None = None) -> dict:
    """The two files the role keeps on apt hosts: ``{"sources": {path, content}, "preferences": {path, content}}``
    (filter ``ofed_apt_files`` and ``converge`` with state pinned). ``name`` by a strict grammar (apt ignores other
    file names), ``comment`` at the top of both."""
    if not isinstance(repo, Mapping) or not repo.get("url"):
        raise InvalidValue("ofed_apt_files: the input must be the repository (a mapping with url), not %r" % (repo,),
                           parameter="_input")
    if not isinstance(packages, Mapping) or not packages:
        raise InvalidValue("ofed_apt_files: packages must map each package name to its exact version", parameter="packages")
    if not isinstance(name, str) or not REPO_NAME_RE.fullmatch(name):
        raise InvalidValue("ofed_apt_files: name %r may hold letters, digits, '_', '.' and '-' only (apt ignores "
                           "other file names)" % (name,), parameter="name")
    if fmt not in ("deb822", "list"):
        raise InvalidValue("ofed_apt_files: format must be deb822 or list, not %r" % (fmt,), parameter="format",
                           allowed=["deb822", "list"])
    if comment is not None and not (isinstance(comment, str) and COMMENT_RE.fullmatch(comment)):
        raise InvalidValue("ofed_apt_files: comment %r must be one line without control characters (it is the first "
                           "line of both files; gpufabric_matrix.name is part of it)" % (comment,), parameter="comment")
    head = "Managed by gpufabric.mlnx (ofed role)%s." % (": " + comment if comment else "")
    sources = apt_sources(repo, fmt=fmt, comment=head + " The pinned NIC driver repository.")
    suffix = ".sources" if fmt == "deb822" else ".list"
    return {
        "sources": {"path": "/etc/apt/sources.list.d/%s%s" % (name, suffix), "content": sources},
        "preferences": {"path": "/etc/apt/preferences.d/%s.pref" % name,
                        "content": apt_preferences({str(k): str(v) for k, v in packages.items()},
                                                   comment=head + " The driver packages stay at these versions.")},
    }


def role_repository(spec: dict, params: Mapping) -> dict:
    """The repository the role installs from, as the module's ``repository`` option: none for a tarball (the bundle
    inside says once it is unpacked); else the matrix's source with the key file (``source.signed_by``, or
    ``keyring_dir/repo_name.gpg`` when only ``source.key_url`` is given), ``apt_trusted`` and the sources file."""
    source = spec["source"]
    if source["type"] == "tarball":
        return {}
    name = params.get("repo_name") or "gpufabric-ofed"
    signed_by = source.get("signed_by") or (
        "%s/%s.gpg" % (params.get("keyring_dir") or "/etc/apt/keyrings", name)
        if source.get("key_url") else None)
    return {"url": source.get("url") or "", "suite": source.get("suite") or "./",
            "components": list(source.get("components") or []), "signed_by": signed_by or None,
            "key_url": source.get("key_url") or None, "trusted": bool(params.get("apt_trusted")),
            "sources_file": _sources_file(params)}


def _sources_file(params: Mapping) -> str:
    return "/etc/apt/sources.list.d/%s.%s" % (params.get("repo_name") or "gpufabric-ofed",
                                              "list" if params.get("apt_format") == "list" else "sources")


def apt_probe_argv(workdir: str, *, timeout: int) -> list[str]:
    """apt-get update of ONE repository into a private directory: /etc/apt and /var/lib/apt untouched."""
    return ["apt-get", "update", "-q"] + _apt_private_opts(workdir) + [
        "-o", "Acquire::Retries=0", "-o", "Acquire::http::Timeout=%d" % timeout,
        "-o", "Acquire::https::Timeout=%d" % timeout]


def apt_probe_madison_argv(workdir: str, names: Sequence[str]) -> list[str]:
    return ["apt-cache"] + _apt_private_opts(workdir) + ["madison"] + sorted(names)


def _apt_private_opts(workdir: str) -> list[str]:
    return ["-o", "Dir::Etc::SourceList=%s" % os.path.join(workdir, "probe.sources"),
            "-o", "Dir::Etc::SourceParts=%s" % os.path.join(workdir, "parts"),
            "-o", "Dir::State::Lists=%s" % os.path.join(workdir, "lists"),
            "-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache="]


def apt_update_argv(sources_file: str, *, timeout: int) -> list[str]:
    """apt-get update of the driver repository only (other repositories' lists are kept)."""
    return ["apt-get", "update", "-q", "-o", "Dir::Etc::SourceList=%s" % sources_file,
            "-o", "Dir::Etc::SourceParts=-", "-o", "APT::Get::List-Cleanup=0",
            "-o", "Acquire::Retries=1", "-o", "Acquire::http::Timeout=%d" % timeout,
            "-o", "Acquire::https::Timeout=%d" % timeout]


def apt_install_argv(packages: Mapping[str, str], *, allow_downgrade: bool, lock_timeout: int) -> list[str]:
    argv = ["apt-get", "install", "-y", "-q", "--no-install-recommends",
            "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold",
            "-o", "DPkg::Lock::Timeout=%d" % lock_timeout]
    if allow_downgrade:
        argv.append("--allow-downgrades")
    return argv + ["%s=%s" % (name, packages[name]) for name in sorted(packages)]


def dnf_probe_argv(repo: Mapping, names: Sequence[str]) -> list[str]:
    rid = "gpufabric-ofed-probe"
    return ["dnf", "-q", "--disablerepo=*", "--repofrompath=%s,%s" % (rid, repo["url"]),
            "--setopt=%s.gpgcheck=0" % rid, "repoquery", "--qf", "%{name}\t%{evr}\n"] + sorted(names)


# ---------------------------------------------------------------------------------- deciding (pure)

def plan(spec: dict, ofed: dict | None, installed: Mapping[str, str], manager: str, *,
         packages: Mapping[str, str | None] | None = None) -> dict:
    """What to do about the driver.

    ``ofed``: parsed ``ofed_info -s`` (version, flavour, raw) or None; ``installed``: {name: version}
    of the pinned packages that are installed. Returns a dict: ``action`` (none, install, upgrade,
    downgrade, repair), ``compliant``, ``packages`` ({name: {wanted, installed, state}}),
    ``to_install`` ({name: version}), ``reasons`` and ``refused`` (a sentence, or None).
    """
    compare = COMPARE[manager]
    pins = pinned_packages(spec, packages=packages)
    rows, newer, older, missing = {}, [], [], []
    for name in sorted(pins):
        wanted, have = pins[name], installed.get(name)
        if have is None:
            state = "missing"
            missing.append(name)
        elif wanted is None:
            state = "present"  # a tarball not yet unpacked: its versions are not known yet
        else:
            cmp = compare(have, wanted)
            state = "equal" if cmp == 0 else ("newer" if cmp > 0 else "older")
            (newer if cmp > 0 else older if cmp < 0 else []).append(name)
        rows[name] = {"wanted": wanted, "installed": have, "state": state}
    want = spec["version"]
    reasons = []
    ofed_cmp = None
    if ofed is None:
        reasons.append("ofed_info -s reports no driver")
    else:
        ofed_cmp = compare_driver(ofed["version"], want)
        if ofed_cmp is None or ofed_cmp != 0:
            reasons.append("ofed_info -s reports %s, the matrix pins %s %s" % (ofed["raw"], spec["flavour"], want))
        elif ofed.get("flavour") not in (None, spec["flavour"]):
            reasons.append("ofed_info -s reports %s (%s), the matrix pins %s"
                           % (ofed["raw"], ofed["flavour"], spec["flavour"]))
    for name in newer + older:
        reasons.append("%s %s is installed, the matrix pins %s" % (name, rows[name]["installed"], rows[name]["wanted"]))
    for name in missing:
        reasons.append("%s %s is not installed" % (name, rows[name]["wanted"]))
    compliant = not reasons
    refused = None
    if compliant:
        action = NONE
    elif newer or (ofed_cmp is not None and ofed_cmp > 0 and ofed.get("flavour") in (None, spec["flavour"])):
        action = DOWNGRADE
        if not spec.get("allow_downgrade"):
            what = []
            if ofed_cmp is not None and ofed_cmp > 0:
                what.append("ofed_info -s reports %s" % ofed["raw"])
            what += ["%s %s is installed (pinned %s)" % (n, rows[n]["installed"], rows[n]["wanted"]) for n in newer]
            refused = ("%s.version %s is older than what the host runs (%s): refusing to downgrade the driver; set "
                       "%s.allow_downgrade: true in the matrix to allow it. Nothing was changed."
                       % (ROOT, want, "; ".join(what), ROOT))
    elif len(missing) == len(rows) and (ofed is None or ofed_cmp is None or ofed_cmp < 0
                                        or ofed.get("flavour") != spec["flavour"]):
        action = INSTALL
    elif older or (ofed_cmp is not None and ofed_cmp < 0):
        action = UPGRADE
    else:
        action = REPAIR
    return {"action": action, "compliant": compliant, "packages": rows, "reasons": reasons, "refused": refused,
            "to_install": {} if compliant else {n: v for n, v in pins.items() if v is not None}}


def kernel_precheck(spec: dict, running: str, boot: str | None) -> str | None:
    """Before installing a packaged (non-DKMS) driver: it must be built for the running kernel and the
    default boot kernel. Returns the refusal sentence or None."""
    if spec["dkms"]:
        return None
    kernels = spec["kernels"]
    bad = []
    if running not in kernels:
        bad.append("the running kernel %s" % running)
    if boot and boot != running and boot not in kernels:
        bad.append("the default boot kernel %s" % boot)
    if not bad:
        return None
    return ("%s %s is built for kernel%s %s only, not for %s: the host would lose its NICs at the next boot. Pin "
            "a driver build for %s, set %s.dkms: true, or boot a listed kernel. Nothing was changed."
            % (FLAVOUR_NAME[spec["flavour"]], spec["version"], "" if len(kernels) == 1 else "s", ", ".join(kernels),
               " and ".join(bad), "it" if len(bad) == 1 else "them", ROOT))


def modules_for(kernel: str, package_files: Sequence[str], dkms_rows: Sequence[dict], spec: dict,
                pins: Mapping[str, str | None], search: Callable[[str], str | None] | None) -> dict | None:
    """Where the new driver's mlx5 modules for ``kernel`` are, or None.

    - DKMS (``spec.dkms``): a ``dkms status`` row of the OFED kernel module for this kernel with status
      ``installed``; when a ``*-dkms`` package is pinned, its upstream version must be the row's.
    - Packaged: a ``mlx5_core.ko*`` under /lib/modules/<kernel>/ among the files of the pinned packages;
      only when none of them ships an mlx5_core at all, ``search(kernel)`` (updates/, extra/) decides.
    Returns ``{"path": ..., "how": ...}`` or None.
    """
    if spec["dkms"]:
        want = [upstream_version(v) for n, v in pins.items() if n.endswith("-dkms")]
        for row in dkms_rows:
            if row["module"] in DKMS_MODULES and row["kernel"] == kernel and row["status"] == "installed":
                if want and row["version"] not in want:
                    continue
                return {"path": "dkms: %s/%s, %s: installed" % (row["module"], row["version"], row["kernel"]),
                        "how": "dkms"}
        return None
    mlx5 = [f for f in package_files if MLX5_RE.search(f)]
    for path in mlx5:
        if re.match(r"^(?:/usr)?/lib/modules/%s/" % re.escape(kernel), path):
            return {"path": path, "how": "package"}
    if mlx5:
        return None
    found = search(kernel)
    return {"path": found, "how": "search"} if found else None


def kernel_guard(spec: dict, running: str, boot: str | None, found: Mapping[str, dict | None]) -> str | None:
    """``found``: {kernel: modules_for(...)}. Returns the refusal sentence or None."""
    missing = [k for k in dict.fromkeys([running, boot]) if k and not found.get(k)]
    if not missing:
        return None
    roles = []
    for k in missing:
        role = []
        if k == running:
            role.append("running")
        if k == boot:
            role.append("default boot")
        roles.append("%s (%s)" % (k, " and ".join(role)))
    how = "dkms status" if spec["dkms"] else "the files of the pinned packages"
    return ("%s %s has no mlx5 modules for kernel %s (looked at %s): the host would come back without its NICs. "
            "Install a driver build for %s, or boot a kernel the driver supports."
            % (FLAVOUR_NAME[spec["flavour"]], spec["version"], ", ".join(roles), how,
               "this kernel" if len(missing) == 1 else "these kernels"))


def restart_decision(mgmt: dict, *, requested: bool, reboot_required: bool) -> dict:
    """May the driver be restarted instead of rebooting? Only when asked, needed, and the management
    connection (``_mgmt.mgmt_state``) does not depend on mlx5."""
    if not requested:
        return {"requested": False, "allowed": False, "reason": "gpufabric_ofed_restart_driver is false"}
    if not reboot_required:
        return {"requested": True, "allowed": False, "reason": "the running driver is already the pinned one"}
    if not mgmt["interfaces"]:
        return {"requested": True, "allowed": False,
                "reason": "cannot tell which interface carries the management connection (no default route, and "
                          "the address Ansible connects to is on no interface): set gpufabric_ofed_mgmt_interface"}
    if mgmt["on_mlx5"]:
        return {"requested": True, "allowed": False,
                "reason": "the management interface %s depends on the mlx5 driver (%s): restarting it would cut "
                          "this host off; reboot instead" % (", ".join(mgmt["interfaces"]), "; ".join(
                              "%s: %s" % kv for kv in sorted(mgmt["evidence"].items())))}
    return {"requested": True, "allowed": True,
            "reason": "the management interface %s does not depend on mlx5 (%s)" % (
                ", ".join(mgmt["interfaces"]), "; ".join("%s: %s" % kv for kv in sorted(mgmt["evidence"].items())))}


def pending_decision(marker: dict | None, boot_id: str | None, loaded_version: str | None,
                     installed_version: str | None) -> tuple[bool, str | None]:
    """Is an installed driver waiting for a reboot / driver restart?

    The marker the module writes after an install records the boot it happened in; it counts until
    the boot changes. A loaded mlx5_core whose version (/sys/module/mlx5_core/version) is not the
    installed driver's counts too.
    """
    if marker and marker.get("boot_id") and boot_id and marker["boot_id"] == boot_id:
        return True, "installed %s in this boot (%s); the running driver is the old one" % (
            marker.get("version"), marker.get("installed_at", "?"))
    if loaded_version and installed_version and driver_key(loaded_version) is not None \
            and not same_driver(loaded_version, installed_version):
        return True, "the loaded mlx5_core is %s, the installed driver %s" % (loaded_version, installed_version)
    return False, None


# ---------------------------------------------------------------------------------- reading: the host
# What the driver reads besides the generic host facts of ``_host.Host`` (packages, kernels, boot id,
# the management interface): its own version, its modules on disk and the pending-reboot marker.

def read_ofed_info(host: Host) -> dict | None:
    """Parsed ``ofed_info -s``, or None when there is no ofed_info or it prints no driver."""
    if not host.which("ofed_info"):
        return None
    rc, out, _err = host.run(["ofed_info", "-s"], check=False)
    if rc != 0:
        return None
    try:
        return parse_ofed_info(out)
    except ParseError:
        return None


def read_loaded_version(host: Host) -> str | None:
    """The version of the mlx5_core module the kernel runs (/sys/module/mlx5_core/version)."""
    return (host.read_sys("/sys/module/mlx5_core/version") or "").strip() or None


def search_modules(host: Host, kernel: str) -> str | None:
    """The first ``mlx5_core.ko*`` under /lib/modules/KERNEL/updates or extra (where packaged OFED kmods go)."""
    for sub in MODULE_SUBDIRS:
        top = host.path("/lib/modules", kernel, sub)
        for dirpath, _dirs, files in os.walk(top):
            for name in sorted(files):
                if MLX5_RE.search(name):
                    full = os.path.join(dirpath, name)
                    return "/" + os.path.relpath(full, host.root) if host.root != "/" else full
    return None


def read_marker(host: Host, state_dir: str) -> dict | None:
    """The pending-reboot marker ``record_install`` wrote (None when there is none or it is unreadable)."""
    try:
        with open(host.path(state_dir, MARKER)) as stream:
            data = json.load(stream)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def write_marker(host: Host, state_dir: str, data: dict) -> None:
    """Write the marker atomically (a temporary file renamed over it)."""
    directory = host.path(state_dir)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".pending.")
    with os.fdopen(fd, "w") as stream:
        json.dump(data, stream, indent=2, sort_keys=True)
        stream.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, os.path.join(directory, MARKER))


# ---------------------------------------------------------------------------------- reading: the repository

def probe_repository(reader: Host, manager: str, repo: Mapping, names: Sequence[str], wanted: Mapping[str, str], *,
                     timeout: int, key_fetch: Callable[[str, str], None] | None = None) -> dict[str, list[str]]:
    """Fetch ONE repository's index into a private temporary directory and check it has the pinned versions.

    Nothing under /etc/apt or /var/lib/apt changes. Raises ToolFailed naming the URL when the
    repository cannot be used, Refused when a pinned version is not in it. Returns {name: [versions]}.
    """
    url = repo["url"]
    if manager == "dnf":
        rc, out, err = reader.run(dnf_probe_argv(repo, names), check=False, timeout=timeout * 4)
        if rc != 0:
            words = (err or out).strip().splitlines()
            raise ToolFailed("the driver repository %s cannot be used: %s. Nothing was changed." % (
                url, words[-1] if words else "dnf repoquery failed"), cmd=dnf_probe_argv(repo, names), rc=rc,
                stdout=out, stderr=err, parameter="%s.source.url" % ROOT)
        available = parse_repoquery(out)
    else:
        workdir = tempfile.mkdtemp(prefix="gpufabric-ofed-probe-")
        try:
            os.chmod(workdir, 0o755)  # apt's download methods run as _apt and must reach lists/partial
            for sub in ("parts", os.path.join("lists", "partial")):
                os.makedirs(os.path.join(workdir, sub))
            probe = dict(repo)
            have_key = bool(probe.get("signed_by")) and os.path.exists(reader.path(probe["signed_by"]))
            if repo.get("key_url") and not repo.get("trusted") and not have_key and key_fetch is not None:
                # The role fetches the key into signed_by only after this probe: use a private copy now.
                key_path = os.path.join(workdir, "key")
                key_fetch(repo["key_url"], key_path)
                probe["signed_by"] = key_path
            elif probe.get("signed_by") and not have_key and not repo.get("trusted"):
                raise Refused("%s.source.signed_by %s does not exist on the host, and there is no key_url to fetch "
                              "it from. Nothing was changed." % (ROOT, probe["signed_by"]),
                              parameter="%s.source.signed_by" % ROOT)
            with open(os.path.join(workdir, "probe.sources"), "w") as stream:
                stream.write(apt_sources(probe))
            argv = apt_probe_argv(workdir, timeout=timeout)
            rc, out, err = reader.run(argv, check=False, timeout=timeout * 4)
            problems = apt_errors(out + "\n" + err)
            if rc != 0 or problems:
                raise ToolFailed("the driver repository %s is unreachable or unusable: %s. Nothing was changed." % (
                    url, " / ".join(problems) or (err or out).strip() or "apt-get update failed"), cmd=argv, rc=rc,
                    stdout=out, stderr=err, parameter="%s.source.url" % ROOT)
            _rc, out, _err = reader.run(apt_probe_madison_argv(workdir, names), check=False)
            available = parse_madison(out)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    check_available(url, wanted, available)
    return available


def check_available(url: str, wanted: Mapping[str, str], available: Mapping[str, list[str]]) -> None:
    """Refused naming every pinned version the repository at ``url`` does not have."""
    missing = []
    for name in sorted(wanted):
        have = available.get(name) or []
        if wanted[name] not in have:
            missing.append("%s %s (it has: %s)" % (name, wanted[name], ", ".join(have) or "no version of it"))
    if missing:
        raise Refused("the driver repository %s does not have the pinned %s. Nothing was changed." % (
            url, "; ".join(missing)), parameter="%s.source.packages" % ROOT)


def check_tarball(reader: Host, spec: dict) -> str:
    """The sha256 of the bundle at ``source.path``; Refused when it is missing or not the pinned one."""
    path, want = spec["source"]["path"], spec["source"]["sha256"]
    full = reader.path(path)
    if not os.path.isfile(full):
        raise Refused("%s.source.path %s does not exist on the host (copy the bundle there first). Nothing was "
                      "changed." % (ROOT, path), parameter="%s.source.path" % ROOT)
    have = sha256_file(full)
    if have != want:
        raise Refused("the sha256 of %s is %s, but %s.source.sha256 is %s: refusing a corrupt or different driver "
                      "bundle. Nothing was changed." % (path, have, ROOT, want), parameter="%s.source.sha256" % ROOT)
    return have


# ---------------------------------------------------------------------------------- writing: the bundle, the key, the files

def unpack_bundle(reader: Host, spec: dict, params: Mapping, *, check_mode: bool) -> tuple[dict, list[dict]]:
    """The offline bundle (its sha256 verified before) unpacked into ``bundle_dir/<version>`` - once: the
    ``.sha256`` file inside marks a folder that holds it - and the flat apt repository inside it (the first folder,
    by path, within 4 levels that holds ``Packages`` or ``Packages.gz``) as the repository to install from.

    Returns ``(repository, changes)``: the repository is ``{}`` in check mode before the bundle is unpacked (its
    versions are not known yet); ``changes`` what was (would be) done: a file's diff, or a sentence. Refuses an ISO image, and a
    bundle without an apt repository."""
    path = spec["source"]["path"]
    if re.search(r"\.iso\Z", path, re.IGNORECASE):
        raise Refused("%s.source.path %s is an ISO image, which this role does not mount: loop-mount it read-only on the "
                      "host and use source type apt with url file:///<mount point>/DEBS (or the .tgz bundle). Nothing "
                      "was changed." % (ROOT, path), parameter="%s.source.path" % ROOT)
    folder = "%s/%s" % (params.get("bundle_dir") or DEFAULT_STATE_DIR + "/bundles", spec["version"])
    changes = []
    if ensure_dir(reader.path(folder), check_mode=check_mode)["changed"]:
        changes.append("made the folder %s" % folder)
    if not os.path.exists(reader.path(folder, BUNDLE_MARK)):
        changes.append("unpacked %s into %s" % (path, folder))
        if not check_mode:
            argv = ["tar", "-x", "-f", path, "-C", folder]
            rc, out, err = reader.run(argv, check=False)
            if rc != 0:
                raise ToolFailed("unpacking the driver bundle %s into %s failed (rc=%d): %s" % (
                    path, folder, rc, (err or out).strip()[-400:]), cmd=argv, rc=rc, stdout=out, stderr=err,
                    parameter="%s.source.path" % ROOT)
    written = keep_file(reader, "%s/%s" % (folder, BUNDLE_MARK),
                        "%s  %s\n" % (spec["source"]["sha256"], os.path.basename(path)), check_mode=check_mode)
    if written["changed"]:
        changes.append(written["diff"] or "set the mode of %s/%s" % (folder, BUNDLE_MARK))
    index = bundle_index(reader, folder)
    if index is None:
        if check_mode:
            return {}, changes
        raise Refused("the bundle %s unpacked in %s has no apt repository (no Packages index within 4 levels)" % (
            path, folder), parameter="%s.source.path" % ROOT)
    return {"url": "file://" + index, "suite": "./", "components": [], "signed_by": None, "key_url": None,
            "trusted": True, "sources_file": _sources_file(params)}, changes


def bundle_index(reader: Host, folder: str, depth: int = 4) -> str | None:
    """The folder (a host path) holding the first ``Packages`` or ``Packages.gz`` by path within ``depth`` levels of
    ``folder`` (ansible.builtin.find's depth: a file in ``folder`` is level 1), or None."""
    top = reader.path(folder)
    found = []
    for dirpath, dirs, files in os.walk(top):
        level = 0 if dirpath == top else os.path.relpath(dirpath, top).count(os.sep) + 1
        if level + 1 >= depth:
            dirs[:] = []
        found += [os.path.join(dirpath, f) for f in files if f in ("Packages", "Packages.gz")]
    if not found:
        return None
    first = os.path.dirname(sorted(found)[0])
    rel = os.path.relpath(first, top)
    return folder.rstrip("/") + ("" if rel == "." else "/" + rel)


def keep_repository(reader: Host, params: Mapping, repo: Mapping, pins: Mapping[str, str | None], spec: dict, *,
                    check_mode: bool, key_fetch: Callable[[str, str], None] | None) -> list[dict]:
    """What the role keeps on an apt host before it installs: the repository's key (fetched from ``key_url`` into
    ``signed_by`` once, when it is not there), the sources file and the pins (rewritten when they differ). Returns
    what was (would be) done: a file's diff, or a sentence."""
    changes = []
    signed_by, key_url = repo.get("signed_by"), repo.get("key_url")
    if key_url and signed_by and not os.path.exists(reader.path(signed_by)):
        folder = os.path.dirname(signed_by)
        if ensure_dir(reader.path(folder), check_mode=check_mode)["changed"]:
            changes.append("made the folder %s" % folder)
        changes.append("fetched the repository key %s from %s" % (signed_by, key_url))
        if not check_mode:
            if key_fetch is None:
                raise ToolNotFound("the driver repository's key %s cannot be fetched here" % key_url,
                                   parameter="%s.source.key_url" % ROOT)
            fd, tmp = tempfile.mkstemp(dir=reader.path(folder), prefix=".gpufabric.")
            os.close(fd)
            try:
                key_fetch(key_url, tmp)
                os.chmod(tmp, 0o644)
                os.replace(tmp, reader.path(signed_by))
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
    if repo.get("url") and pins and all(v is not None for v in pins.values()):
        comment = "gpufabric_matrix %s, %s %s" % (params.get("matrix_name") or "?", spec["flavour"], spec["version"])
        files = apt_files(repo, pins, name=params.get("repo_name") or "gpufabric-ofed",
                          fmt=params.get("apt_format") or "deb822", comment=comment)
        for item in (files["sources"], files["preferences"]):
            written = keep_file(reader, item["path"], item["content"], check_mode=check_mode)
            if written["changed"]:
                changes.append(written["diff"] or "set the mode or owner of %s" % item["path"])
    return changes


def restart_driver(reader: Host, argv: Sequence[str], state_dir: str) -> None:
    """Run the driver restart command; then the install record is forgotten (the new driver runs now)."""
    if argv[0].startswith("/"):
        done = reader.call(list(argv))     # a path, as given (the role's default /etc/init.d/openibd)
        rc, out, err = done.rc, done.stdout, done.stderr
    else:
        rc, out, err = reader.run(list(argv), check=False)
    if rc != 0:
        raise ToolFailed("the driver restart (%s) failed (rc=%d): %s" % (" ".join(argv), rc, (err or out).strip()[-400:]),
                         cmd=list(argv), rc=rc, stdout=out, stderr=err, parameter="restart_command")
    remove_file(reader, "%s/%s" % (state_dir.rstrip("/"), MARKER))


# ---------------------------------------------------------------------------------- the whole job

def read_state(reader: Host, params: Mapping, manager: str, pins: Mapping[str, str | None]) -> dict:
    """The driver, the pinned packages and the kernels as the host has them now."""
    ofed = read_ofed_info(reader)
    installed = reader.installed(manager, list(pins))
    running = reader.running_kernel()
    boot, boot_how = reader.boot_kernel(params.get("boot_kernel"))
    return {"ofed": ofed, "installed": installed, "running": running, "boot": boot, "boot_how": boot_how}


def check_kernels(reader: Host, spec: dict, manager: str, pins: Mapping[str, str | None], running: str,
                  boot: str | None) -> tuple[dict, str | None]:
    """``({kernel: modules_for(...)}, refusal or None)`` for the running and the default boot kernel."""
    files = [] if spec["dkms"] else reader.package_files(manager, list(pins))
    rows = reader.dkms_status() if spec["dkms"] else []
    found = {}
    for kernel in dict.fromkeys([running, boot]):
        if kernel:
            found[kernel] = modules_for(kernel, files, rows, spec, pins,
                                        lambda name: search_modules(reader, name))
    return found, kernel_guard(spec, running, boot, found)


def converge(reader: Host, spec: dict, params: Mapping, *, check_mode: bool,
             key_fetch: Callable[[str, str], None] | None = None) -> dict:
    """Everything the module does. ``params``: state (query, present, verified, pinned), repository (the
    effective repository: url, suite, components, signed_by, key_url, trusted, sources_file), probe,
    packages (a tarball's pins), mgmt_interface, mgmt_address, boot_kernel, restart_driver,
    state_dir, boot_id_command, mark_pending, timeout, lock_timeout, package_manager.

    State ``pinned`` is the ofed role's one call: the repository described from the matrix and repo_name,
    apt_format, keyring_dir, apt_trusted (``role_repository``) unless ``repository`` is given; on an apt host a
    needed bundle unpacked (bundle_dir), the key, sources file and pins kept (``keep_repository``), the install,
    the verification and the kernel guard; on a dnf host the same decision, and when something must change
    nothing more (the role's dnf tasks install, then call again with mark_pending); at the end the driver restarted
    with ``restart_command`` when asked for and safe. ``result["changes"]``: what else was (would be) done - the
    diff of a file written, or a sentence; ``result["driver_changed"]``: the driver was (would be) installed."""
    state = params.get("state") or "query"
    pinned = state == PINNED
    check_mgmt_interface(params.get("mgmt_interface"))   # before anything is installed; the guard runs at the end
    for option, default in (("timeout", 30), ("lock_timeout", 300)):
        check_timeout(params.get(option, default), option)
    if pinned and not params.get("repository"):
        if not REPO_NAME_RE.fullmatch(str(params.get("repo_name") or "gpufabric-ofed")):
            raise InvalidValue("repo_name %r may hold letters, digits, '_', '.' and '-' only (apt ignores other file "
                               "names)" % (params.get("repo_name"),), parameter="repo_name")
        repo = role_repository(spec, params)
    else:
        repo = dict(params.get("repository") or {})
    # the module's own repository and state_dir, by the matrix's rules (the role checks them too; a task that calls
    # the module directly gets the same refusal), before anything runs
    found = repository_problems(repo or None, spec["source"]["type"], params.get("state_dir"))
    if found:
        raise ProblemsError("ofed_driver's options", found, parameter=found[0].split(":", 1)[0])
    manager = params.get("package_manager") or "auto"
    if manager == "auto":
        manager = reader.package_manager()
        if manager is None:
            raise ToolNotFound("neither apt (dpkg-query, apt-get) nor dnf (rpm, dnf) is on this host: the driver "
                               "is installed with one of them")
    kind = spec["source"]["type"]
    if kind in SOURCE_MANAGER and SOURCE_MANAGER[kind] != manager:
        raise Refused("%s.source.type is %s, but this host installs packages with %s: give this host group a "
                      "matrix whose source fits its distribution" % (ROOT, kind, manager),
                      parameter="%s.source.type" % ROOT, allowed=[manager, "tarball"])
    if pinned and kind == "tarball" and manager == "dnf":
        raise Refused("%s.source.type tarball is not supported on dnf hosts by this role: unpack the bundle and use "
                      "source type dnf with url file:///<folder with repodata>. Nothing was changed." % ROOT,
                      parameter="%s.source.type" % ROOT, allowed=["dnf"])
    names = params.get("bundle_packages") or BUNDLE_PACKAGES[spec["flavour"]]
    if kind == "tarball":
        if repo.get("url"):
            pins = bundle_pins(reader, repo["url"], names)
        else:
            pins = {name: None for name in names}  # versions known once the bundle is unpacked
    else:
        pins = pinned_packages(spec)
    timeout = int(params.get("timeout") or 30)
    before = read_state(reader, params, manager, pins)
    decided = plan(spec, before["ofed"], before["installed"], manager, packages=pins)
    result = {
        "changed": False,
        "package_manager": manager,
        "driver": {"wanted": spec["version"], "flavour": spec["flavour"], "before": before["ofed"],
                   "after": before["ofed"]},
        "installed": [],
        "kernels": {"running": before["running"], "boot": before["boot"], "boot_how": before["boot_how"],
                    "modules": {}, "problem": None},
        "repository": {"url": repo.get("url"), "probed": False, "available": {},
                       "key_present": bool(repo.get("signed_by")) and os.path.isfile(reader.path(repo["signed_by"]))},
        "tarball": None,
        "changes": [],
    }
    _decided(result, decided, pins)
    action_needed = decided["action"] != NONE
    if action_needed:
        problem = kernel_precheck(spec, before["running"], before["boot"])
        if problem:
            raise Refused(problem, parameter="%s.kernels" % ROOT)
        if kind == "tarball":
            result["tarball"] = {"path": spec["source"]["path"], "sha256": check_tarball(reader, spec)}
            if pinned and not repo.get("url"):
                repo, unpacked = unpack_bundle(reader, spec, params, check_mode=check_mode)
                result["changes"] += unpacked
                if repo.get("url"):
                    result["repository"]["url"] = repo["url"]
                    pins = bundle_pins(reader, repo["url"], names)
                    decided = plan(spec, before["ofed"], reader.installed(manager, list(pins)), manager, packages=pins)
                    _decided(result, decided, pins)
                    action_needed = decided["action"] != NONE
        if action_needed and params.get("probe", True) and repo.get("url") and all(v is not None for v in pins.values()):
            result["repository"]["available"] = probe_repository(reader, manager, repo, list(pins), pins,
                                                                 timeout=timeout, key_fetch=key_fetch)
            result["repository"]["probed"] = True

    installs = state == "present" or (pinned and manager == "apt")
    waits_for_dnf = pinned and manager == "dnf" and action_needed   # the role's dnf tasks install, then call again
    if pinned and manager == "apt":
        result["changes"] += keep_repository(reader, params, repo, pins, spec, check_mode=check_mode,
                                             key_fetch=key_fetch)
    driver_changed = False
    if installs and action_needed:
        if manager != "apt":
            raise InvalidValue("state=present installs with apt only; on dnf hosts install with ansible.builtin.dnf "
                               "and check with state=verified", parameter="state", allowed=["query", "verified"])
        if any(v is None for v in pins.values()) and not check_mode:
            raise InvalidValue("the driver bundle %s is not unpacked yet: pass its repository (file:///...) so the "
                               "pinned versions are known" % spec["source"]["path"], parameter="repository")
        driver_changed = True
        if not check_mode:
            install_apt(reader, spec, dict(params, repository=repo), pins, decided, timeout=timeout)
            result["installed"] = result["would_install"]
            record_install(reader, spec, params, pins)
    elif waits_for_dnf and check_mode:
        driver_changed = True   # what the dnf tasks would install
    elif state in ("verified", PINNED) and params.get("mark_pending") and not check_mode:
        record_install(reader, spec, params, pins)
        driver_changed = pinned   # installed in this run by the role's dnf tasks
    verifies = state in ("present", "verified") or (pinned and not waits_for_dnf)
    if verifies and not (check_mode and action_needed):
        verify_installed(reader, spec, manager, pins, result)
        found, problem = check_kernels(reader, spec, manager, pins, result["kernels"]["running"],
                                       result["kernels"]["boot"])
        result["kernels"]["modules"] = found
        if problem:
            result["kernels"]["problem"] = problem
            raise Refused(problem, parameter="%s.kernels" % ROOT)
    elif state == "query" and not action_needed:
        found, problem = check_kernels(reader, spec, manager, pins, result["kernels"]["running"],
                                       result["kernels"]["boot"])
        result["kernels"].update(modules=found, problem=problem)

    # reboot / restart
    boot_id = reader.boot_id(params.get("boot_id_command"))
    state_dir = params.get("state_dir") or DEFAULT_STATE_DIR
    changed_now = bool(result["installed"]) or (check_mode and driver_changed) \
        or (state in ("verified", PINNED) and bool(params.get("mark_pending")))
    marker = read_marker(reader, state_dir)
    after = result["driver"]["after"]
    pending, why = pending_decision(marker, boot_id, read_loaded_version(reader),
                                    after["version"] if after else None)
    if changed_now:
        pending, why = True, "the driver %s in this run; the running driver is the old one" % (
            "was installed" if not check_mode else "would be installed")
    result["reboot_required"] = pending
    result["pending_reason"] = why
    result["boot_id"] = boot_id
    mgmt = mgmt_state(reader, params)
    result["mgmt"] = mgmt
    result["restart"] = restart_decision(mgmt, requested=bool(params.get("restart_driver")), reboot_required=pending)
    result["driver_changed"] = driver_changed
    if pinned:
        result["restart"]["done"] = False
        command = params.get("restart_command") or []
        if result["restart"]["allowed"] and command and not waits_for_dnf:
            if not check_mode:
                restart_driver(reader, command, state_dir)
                result["restart"]["done"] = True
                result["reboot_required"] = False
            result["changes"].append("restarted the driver (%s)" % " ".join(command))
    result["changed"] = driver_changed or bool(result["changes"])
    return result


def _decided(result: dict, decided: dict, pins: Mapping[str, str | None]) -> None:
    """The decision into the result; a refused one raises (before anything changes)."""
    result.update(action=decided["action"], compliant=decided["compliant"], reasons=decided["reasons"],
                  packages=decided["packages"], pins=dict(pins),
                  would_install=["%s=%s" % kv for kv in sorted(decided["to_install"].items())])
    if decided["refused"]:
        raise Refused(decided["refused"], parameter="%s.version" % ROOT)


def driver_diff(result: dict) -> dict:
    """The driver's change as a diff (``--diff``, the drift report): ``ofed_info -s`` and the pinned packages as the
    host had them, and as the matrix pins them."""
    was = result["driver"]["before"]
    rows = result["packages"]
    had = ", ".join("%s=%s" % (name, rows[name]["installed"] or "(not installed)") for name in sorted(rows))
    wanted = ", ".join(result["would_install"]) or "the bundle's versions"
    return {"before": {"driver": "%s (%s)" % (was["raw"] if was else "no driver", had)},
            "after": {"driver": "%s %s (%s)" % (result["driver"]["flavour"], result["driver"]["wanted"], wanted)}}


def role_facts(result: dict, msg: str) -> dict:
    """The ofed role's facts from a ``pinned`` result (docs/role_facts.md): gpufabric_ofed_changed (the driver was
    (would be) installed), gpufabric_ofed_reboot_required (not restarted in place), gpufabric_ofed_result."""
    keys = ("action", "reasons", "installed", "would_install", "driver", "kernels", "pending_reason", "mgmt", "restart")
    facts = {key: result[key] for key in keys}
    facts["msg"] = msg
    facts["restart"] = dict(result["restart"], done=bool(result["restart"].get("done")))
    return {"gpufabric_ofed_changed": bool(result["driver_changed"]),
            "gpufabric_ofed_reboot_required": bool(result["reboot_required"]),
            "gpufabric_ofed_result": facts}


def record_install(reader: Host, spec: dict, params: Mapping, pins: Mapping[str, str | None]) -> None:
    """Remember that a driver was installed in this boot: the reboot it needs is pending until the boot changes."""
    write_marker(reader, params.get("state_dir") or DEFAULT_STATE_DIR, {
        "version": spec["version"], "flavour": spec["flavour"], "boot_id": reader.boot_id(params.get("boot_id_command")),
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "packages": pins})


def install_apt(reader: Host, spec: dict, params: Mapping, pins: Mapping[str, str], decided: dict, *, timeout: int) -> None:
    """The driver repository's own ``apt-get update``, then ONE ``apt-get install NAME=VERSION ...``."""
    sources = (params.get("repository") or {}).get("sources_file")
    url = (params.get("repository") or {}).get("url") or spec["source"].get("url")
    if sources:
        argv = apt_update_argv(sources, timeout=timeout)
        rc, out, err = reader.run(argv, check=False, timeout=timeout * 4)
        problems = apt_errors(out + "\n" + err)
        if rc != 0 or problems:
            raise ToolFailed("apt-get update of the driver repository %s failed: %s. Nothing was installed." % (
                url, " / ".join(problems) or (err or out).strip()), cmd=argv, rc=rc, stdout=out, stderr=err,
                parameter="%s.source.url" % ROOT)
    _rc, out, _err = reader.run(["apt-cache", "madison"] + sorted(pins), check=False)
    check_available(url or "(the configured apt sources)", pins, parse_madison(out))
    lock = int(params.get("lock_timeout") or 300)
    argv = apt_install_argv(pins, allow_downgrade=decided["action"] == DOWNGRADE, lock_timeout=lock)
    rc, out, err = reader.run(argv, check=False, env={"DEBIAN_FRONTEND": "noninteractive"},
                              timeout=max(reader.timeout, lock + 60))
    if rc != 0:
        errors = [line.strip() for line in (err + "\n" + out).splitlines() if line.startswith("E:")]
        raise ToolFailed("apt-get install of %s failed (rc=%d): %s" % (
            ", ".join("%s=%s" % kv for kv in sorted(pins.items())), rc,
            " / ".join(errors) or (err or out).strip()[-400:]), cmd=argv, rc=rc, stdout=out, stderr=err)


def verify_installed(reader: Host, spec: dict, manager: str, pins: Mapping[str, str | None], result: dict) -> None:
    """The package manager and ofed_info -s must now both say what the matrix pins."""
    installed = reader.installed(manager, list(pins))
    ofed = read_ofed_info(reader)
    result["driver"]["after"] = ofed
    for name, row in result["packages"].items():
        row["after"] = installed.get(name)
    wrong = ["%s is %s" % (n, installed.get(n) or "not installed") for n in sorted(pins)
             if installed.get(n) is None or (pins[n] is not None and COMPARE[manager](installed[n], pins[n]) != 0)]
    if ofed is None:
        wrong.append("ofed_info -s reports no driver")
    elif not same_driver(ofed["version"], spec["version"]) or ofed.get("flavour") not in (None, spec["flavour"]):
        wrong.append("ofed_info -s reports %s" % ofed["raw"])
    if wrong:
        raise ToolFailed("the driver is not what %s pins (%s %s, packages %s): %s" % (
            ROOT, spec["flavour"], spec["version"], ", ".join("%s=%s" % kv for kv in sorted(pins.items())),
            "; ".join(wrong)), parameter=ROOT)


def summary(result: dict, *, check_mode: bool, state: str) -> str:
    """One line for the task output: what is (would be) installed, and whether a reboot is pending."""
    action = result["action"]
    if action == NONE:
        text = "%s %s is installed (ofed_info -s and %s agree)" % (
            result["driver"]["flavour"], result["driver"]["wanted"], result["package_manager"])
    elif state == "query" or check_mode:
        text = "would %s %s %s: %s" % (action, result["driver"]["flavour"], result["driver"]["wanted"],
                                       ", ".join(result["would_install"]))
    else:
        text = "%s %s %s: %s" % ({"install": "installed", "upgrade": "upgraded to", "downgrade": "downgraded to",
                                  "repair": "repaired"}[action], result["driver"]["flavour"],
                                 result["driver"]["wanted"], ", ".join(result["installed"] or result["would_install"]))
    if result.get("reboot_required"):
        text += "; reboot (or driver restart) required"
    return text
