# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pinned NIC driver (DOCA-OFED or MLNX_OFED) on one host: read, decide, install, verify.

Read (``HostReader``): ``ofed_info -s``, the package manager's installed versions of the pinned
packages (``dpkg-query`` / ``rpm -q``), the running and the default boot kernel, where the mlx5
modules of the installed packages are (their file lists, or ``dkms status``), which interface
carries the management connection and whether it sits on an mlx5 device, and whether a driver
installed earlier is still waiting for a reboot.

Decide (pure functions): ``driver_spec`` normalises and checks ``gpufabric_matrix.driver``;
``plan`` says what to do (``none``, ``install``, ``upgrade``, ``downgrade``, ``repair``) and
refuses a downgrade the matrix does not allow; ``kernel_precheck`` and ``kernel_guard`` refuse a
driver that has no mlx5 modules for the kernel the host runs or boots next; ``mgmt_decision``
allows a driver restart only when the management connection does not depend on mlx5.

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
import subprocess
import tempfile
import time

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import (
    InvalidValue,
    Refused,
    ToolFailed,
    ToolNotFound,
    ToolTimeout,
)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._firmware import sha256_file
from ansible_collections.gpufabric.mlnx.plugins.module_utils._matrix import matrix_problems
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import ParseError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.ibdev2netdev import parse_ibdev2netdev
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.ofed_info import parse_ofed_info
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.ip import parse_ip_addr, parse_ip_route
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.packages import (
    apt_errors,
    parse_dkms_status,
    parse_dpkg_query,
    parse_madison,
    parse_packages_index,
    parse_repoquery,
    parse_rpm_query,
)

ROOT = "gpufabric_matrix.driver"
FLAVOUR_PREFIX = {"doca-ofed": "OFED-internal", "mlnx-ofed": "MLNX_OFED_LINUX"}
FLAVOUR_NAME = {"doca-ofed": "DOCA-OFED", "mlnx-ofed": "MLNX_OFED"}
MANAGERS = ("apt", "dnf")
SOURCE_MANAGER = {"apt": "apt", "dnf": "dnf"}

NONE, INSTALL, UPGRADE, DOWNGRADE, REPAIR = "none", "install", "upgrade", "downgrade", "repair"

ENV = {"LANG": "C", "LC_ALL": "C", "LC_MESSAGES": "C"}
EXTRA_PATHS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
# Where packaged OFED kmods go: updates/dkms (Ubuntu DKMS), updates (SLES, Debian kmod packages),
# extra/mlnx-ofa_kernel (RHEL kmod / kABI packages).
MODULE_SUBDIRS = ("updates", "extra")
MLX5_RE = re.compile(r"(?:^|/)mlx5_core\.ko(?:\.xz|\.zst|\.gz)?$")
# The DKMS module names MLNX_OFED / DOCA-OFED register.
DKMS_MODULES = ("mlnx-ofed-kernel", "mlnx_ofed_kernel", "mlnx-ofa_kernel")
# What the kernel's network drivers of NVIDIA ConnectX / BlueField devices are called in sysfs.
MLX5_DRIVERS = ("mlx5_core", "mlx5_ib")
MARKER = "pending.json"
DEFAULT_STATE_DIR = "/var/lib/gpufabric/ofed"


# ---------------------------------------------------------------------------------- versions

def driver_key(version):
    """``24.10-2.1.8.0`` -> ``((24, 10), (2, 1, 8))``: the release, then the build without trailing zeros.

    DOCA-OFED's ``ofed_info -s`` prints ``OFED-internal-24.10-2.1.8`` for the release NVIDIA names
    24.10-2.1.8.0 (and MLNX_OFED prints all four numbers), so both spellings are the same driver.
    Returns None for text that is not a driver version.
    """
    if not isinstance(version, str):
        return None
    match = re.match(r"^\s*(\d+(?:\.\d+)*)-(\d+(?:\.\d+)*)\s*$", version)
    if not match:
        return None
    release = tuple(int(x) for x in match.group(1).split("."))
    build = [int(x) for x in match.group(2).split(".")]
    while len(build) > 1 and build[-1] == 0:
        build.pop()
    return release, tuple(build)


def same_driver(a, b):
    ka, kb = driver_key(a), driver_key(b)
    return ka is not None and ka == kb


def compare_driver(a, b):
    """-1, 0, 1 like cmp(); None when either is not a driver version."""
    ka, kb = driver_key(a), driver_key(b)
    if ka is None or kb is None:
        return None
    return (ka > kb) - (ka < kb)


def _deb_order(char):
    if char.isdigit():
        return 0
    if char.isalpha():
        return ord(char)
    if char == "~":
        return -1
    return ord(char) + 256


def _deb_part(a, b):
    """dpkg's verrevcmp: non-digit runs by the character order (~ sorts before everything,
    letters before other characters), digit runs numerically."""
    i = j = 0
    while i < len(a) or j < len(b):
        first_diff = 0
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _deb_order(a[i]) if i < len(a) else 0
            bc = _deb_order(b[j]) if j < len(b) else 0
            if ac != bc:
                return -1 if ac < bc else 1
            i += 1
            j += 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        while i < len(a) and a[i].isdigit() and j < len(b) and b[j].isdigit():
            if not first_diff:
                first_diff = ord(a[i]) - ord(b[j])
            i += 1
            j += 1
        if i < len(a) and a[i].isdigit():
            return 1
        if j < len(b) and b[j].isdigit():
            return -1
        if first_diff:
            return -1 if first_diff < 0 else 1
    return 0


def _deb_split(version):
    version = version.strip()
    epoch, _sep, rest = version.rpartition(":") if ":" in version else ("0", "", version)
    upstream, _sep, revision = rest.rpartition("-") if "-" in rest else (rest, "", "")
    return int(epoch or 0) if epoch.isdigit() else 0, upstream, revision


def deb_compare(a, b):
    """Compare two Debian package versions as ``dpkg --compare-versions`` does: -1, 0 or 1."""
    ea, ua, ra = _deb_split(a)
    eb, ub, rb = _deb_split(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _deb_part(ua, ub) or _deb_part(ra, rb)


def _rpm_part(a, b):
    """rpm's rpmvercmp: alphanumeric segments, numbers compared as numbers, ~ before and ^ after."""
    if a == b:
        return 0
    i = j = 0
    while i < len(a) or j < len(b):
        while i < len(a) and not a[i].isalnum() and a[i] not in "~^":
            i += 1
        while j < len(b) and not b[j].isalnum() and b[j] not in "~^":
            j += 1
        ta, tb = a[i] if i < len(a) else "", b[j] if j < len(b) else ""
        if ta == "~" or tb == "~":
            if ta != "~":
                return 1
            if tb != "~":
                return -1
            i += 1
            j += 1
            continue
        if ta == "^" or tb == "^":
            if not ta:
                return -1
            if not tb:
                return 1
            if ta != "^":
                return 1
            if tb != "^":
                return -1
            i += 1
            j += 1
            continue
        if not (ta and tb):
            break
        isnum = ta.isdigit()
        p, q = i, j
        if isnum:
            while p < len(a) and a[p].isdigit():
                p += 1
            while q < len(b) and b[q].isdigit():
                q += 1
        else:
            while p < len(a) and a[p].isalpha():
                p += 1
            while q < len(b) and b[q].isalpha():
                q += 1
        sa, sb = a[i:p], b[j:q]
        if not sb:
            return 1 if isnum else -1
        if isnum:
            sa, sb = sa.lstrip("0"), sb.lstrip("0")
            if len(sa) != len(sb):
                return -1 if len(sa) < len(sb) else 1
        if sa != sb:
            return -1 if sa < sb else 1
        i, j = p, q
    if i >= len(a) and j >= len(b):
        return 0
    return -1 if i >= len(a) else 1


def rpm_compare(a, b):
    """Compare two ``[epoch:]version[-release]`` strings as rpm does: -1, 0 or 1."""
    def split(text):
        text = text.strip()
        epoch, _sep, rest = text.partition(":") if ":" in text else ("0", "", text)
        version, _sep, release = rest.rpartition("-") if "-" in rest else (rest, "", "")
        return int(epoch) if epoch.isdigit() else 0, version, release
    ea, va, ra = split(a)
    eb, vb, rb = split(b)
    if ea != eb:
        return -1 if ea < eb else 1
    result = _rpm_part(va, vb)
    if result or not (ra and rb):
        return result
    return _rpm_part(ra, rb)


COMPARE = {"apt": deb_compare, "dnf": rpm_compare}


def upstream_version(version):
    """``1:24.10.OFED.24.10.2.1.8.1-1`` -> ``24.10.OFED.24.10.2.1.8.1`` (what DKMS calls the module version)."""
    _epoch, upstream, _revision = _deb_split(version)
    return upstream


# ---------------------------------------------------------------------------------- the matrix entry

_OWN_KEYS = ("allow_downgrade",)
_MATRIX_KEYS = ("name", "description", "firmware", "compatibility", "nv_profiles", "nv_profile_assignments")


def driver_spec(value):
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


def _normal_sha256(text):
    text = str(text).strip().lower()
    return text[len("sha256:"):] if text.startswith("sha256:") else text


# What a tarball/ISO bundle installs when the role is not told otherwise: the flavour's meta package.
BUNDLE_PACKAGES = {"doca-ofed": ["doca-ofed"], "mlnx-ofed": ["mlnx-ofed-all"]}


def bundle_closure(rows, names):
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


def bundle_pins(reader, repo_url, names):
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


def pinned_packages(spec, packages=None):
    """The pinned packages: the matrix's (apt, dnf), or for a tarball the ones the caller found in it."""
    pins = spec["source"].get("packages") or packages or {}
    return dict(pins)


# ---------------------------------------------------------------------------------- apt files

def apt_sources(repo, fmt="deb822", comment=None):
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


def apt_preferences(packages, comment=None):
    """apt preferences that hold every pinned package at its version: Pin-Priority 1001 beats any
    newer version in any repository, so ``apt upgrade`` cannot move the driver."""
    blocks = ["# %s" % (comment or "Managed by gpufabric.mlnx (ofed role): the NIC driver packages stay at the "
                                   "versions of gpufabric_matrix.driver.")]
    for name in sorted(packages):
        blocks.append("Package: %s\nPin: version %s\nPin-Priority: 1001" % (name, packages[name]))
    return "\n\n".join(blocks) + "\n"


def apt_probe_argv(workdir, timeout):
    """apt-get update of ONE repository into a private directory: /etc/apt and /var/lib/apt untouched."""
    return ["apt-get", "update", "-q"] + _apt_private_opts(workdir) + [
        "-o", "Acquire::Retries=0", "-o", "Acquire::http::Timeout=%d" % timeout,
        "-o", "Acquire::https::Timeout=%d" % timeout]


def apt_probe_madison_argv(workdir, names):
    return ["apt-cache"] + _apt_private_opts(workdir) + ["madison"] + sorted(names)


def _apt_private_opts(workdir):
    return ["-o", "Dir::Etc::SourceList=%s" % os.path.join(workdir, "probe.sources"),
            "-o", "Dir::Etc::SourceParts=%s" % os.path.join(workdir, "parts"),
            "-o", "Dir::State::Lists=%s" % os.path.join(workdir, "lists"),
            "-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache="]


def apt_update_argv(sources_file, timeout):
    """apt-get update of the driver repository only (other repositories' lists are kept)."""
    return ["apt-get", "update", "-q", "-o", "Dir::Etc::SourceList=%s" % sources_file,
            "-o", "Dir::Etc::SourceParts=-", "-o", "APT::Get::List-Cleanup=0",
            "-o", "Acquire::Retries=1", "-o", "Acquire::http::Timeout=%d" % timeout,
            "-o", "Acquire::https::Timeout=%d" % timeout]


def apt_install_argv(packages, allow_downgrade, lock_timeout):
    argv = ["apt-get", "install", "-y", "-q", "--no-install-recommends",
            "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold",
            "-o", "DPkg::Lock::Timeout=%d" % lock_timeout]
    if allow_downgrade:
        argv.append("--allow-downgrades")
    return argv + ["%s=%s" % (name, packages[name]) for name in sorted(packages)]


def dnf_probe_argv(repo, names):
    rid = "gpufabric-ofed-probe"
    return ["dnf", "-q", "--disablerepo=*", "--repofrompath=%s,%s" % (rid, repo["url"]),
            "--setopt=%s.gpgcheck=0" % rid, "repoquery", "--qf", "%{name}\t%{evr}\n"] + sorted(names)


# ---------------------------------------------------------------------------------- pure decisions

def plan(spec, ofed, installed, manager, packages=None):
    """What to do about the driver.

    ``ofed``: parsed ``ofed_info -s`` (version, flavour, raw) or None; ``installed``: {name: version}
    of the pinned packages that are installed. Returns a dict: ``action`` (none, install, upgrade,
    downgrade, repair), ``compliant``, ``packages`` ({name: {wanted, installed, state}}),
    ``to_install`` ({name: version}), ``reasons`` and ``refused`` (a sentence, or None).
    """
    compare = COMPARE[manager]
    pins = pinned_packages(spec, packages)
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


def kernel_precheck(spec, running, boot):
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


def modules_for(kernel, package_files, dkms_rows, spec, pins, search):
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


def kernel_guard(spec, running, boot, found):
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


def mgmt_decision(explicit, addresses, addr_table, default_ifs, lower, drivers, rdma_netdevs):
    """Which interfaces carry the management connection and do they depend on mlx5.

    ``explicit``: the interface named by the user (wins); ``addresses``: the address Ansible
    connects to (ansible_host, SSH_CONNECTION's server address); ``addr_table``: [(ifname, address)];
    ``default_ifs``: interfaces of the default routes; ``lower(ifname)`` -> the physical interfaces
    under it (bond slaves, VLAN parents, bridge ports); ``drivers``: {ifname: kernel driver};
    ``rdma_netdevs``: {netdev: rdma device} from ibdev2netdev.
    """
    if explicit:
        interfaces, source = [explicit], "gpufabric_ofed_mgmt_interface"
    else:
        interfaces = [ifname for ifname, addr in addr_table if addr in addresses]
        source = "the interface holding %s" % ", ".join(a for a in addresses if a) if interfaces else None
        for ifname in default_ifs:
            if ifname not in interfaces:
                interfaces.append(ifname)
                source = (source + " and the default route") if source else "the default route"
    evidence, on_mlx5 = {}, False
    for ifname in interfaces:
        for leaf in lower(ifname) or [ifname]:
            driver = drivers.get(leaf)
            if leaf in rdma_netdevs:
                evidence[leaf] = "RDMA device %s (ibdev2netdev)" % rdma_netdevs[leaf]
                on_mlx5 = True
            elif driver in MLX5_DRIVERS:
                evidence[leaf] = "driver %s" % driver
                on_mlx5 = True
            else:
                evidence[leaf] = "driver %s" % (driver or "none (virtual)")
    return {"interfaces": interfaces, "source": source, "on_mlx5": on_mlx5, "evidence": evidence}


def restart_decision(requested, mgmt, reboot_required):
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


def pending_decision(marker, boot_id, loaded_version, installed_version):
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


# ---------------------------------------------------------------------------------- reading the host

def default_execute(argv, env=None, timeout=None, data=None):
    full_env = dict(os.environ)
    full_env.update(ENV)
    full_env.update(env or {})
    try:
        proc = subprocess.run(argv, input=data, capture_output=True, text=True, env=full_env, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        raise ToolTimeout("%s did not finish within %s s" % (" ".join(argv[:2]), timeout), cmd=argv,
                          stdout=exc.stdout if isinstance(exc.stdout, str) else None) from None
    return proc.returncode, proc.stdout, proc.stderr


def default_which(name):
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", "")] + list(EXTRA_PATHS)))


class HostReader:
    """Reads one host. ``execute(argv, env, timeout) -> (rc, out, err)``, ``which(name)`` and ``root``
    (prefix for /sys, /proc, /boot, /lib/modules, the state directory) can be replaced in tests."""

    def __init__(self, execute=None, which=None, root="/", timeout=1800):
        self.execute = execute or default_execute
        self.which = which or default_which
        self.root = root
        self.timeout = timeout

    def path(self, *parts):
        return os.path.join(self.root, *[p.lstrip("/") for p in parts])

    def run(self, argv, check=True, env=None, timeout=None):
        binary = self.which(argv[0])
        if not binary:
            raise ToolNotFound("%s is not installed on this host" % argv[0])
        cmd = [binary] + list(argv[1:])
        rc, out, err = self.execute(cmd, env=env, timeout=timeout or self.timeout)
        if check and rc != 0:
            words = (err or out or "").strip().splitlines()
            raise ToolFailed("%s failed (rc=%d): %s" % (" ".join(argv[:2]), rc, words[-1] if words else "no output"),
                             cmd=cmd, rc=rc, stdout=out, stderr=err)
        return rc, out, err

    # -- package manager and packages
    def package_manager(self):
        if self.which("dpkg-query") and self.which("apt-get"):
            return "apt"
        if self.which("rpm") and (self.which("dnf") or self.which("yum")):
            return "dnf"
        return None

    def installed(self, manager, names):
        if not names:
            return {}
        if manager == "apt":
            _rc, out, _err = self.run(["dpkg-query", "-W", "-f", "${Package}\t${Version}\t${db:Status-Abbrev}\n"]
                                      + sorted(names), check=False)
            return {k: v for k, v in parse_dpkg_query(out).items() if k in names}
        _rc, out, _err = self.run(["rpm", "-q", "--qf", "%{NAME}\t%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}\n"]
                                  + sorted(names), check=False)
        return {k: v for k, v in parse_rpm_query(out).items() if k in names}

    def package_files(self, manager, names):
        if not names:
            return []
        argv = (["dpkg-query", "-L"] if manager == "apt" else ["rpm", "-ql"]) + sorted(names)
        _rc, out, _err = self.run(argv, check=False)
        return [line.strip() for line in out.splitlines() if line.strip().startswith("/")]

    # -- driver
    def ofed_info(self):
        """Parsed ``ofed_info -s``, or None when there is no ofed_info or it prints no driver."""
        if not self.which("ofed_info"):
            return None
        rc, out, _err = self.run(["ofed_info", "-s"], check=False)
        if rc != 0:
            return None
        try:
            return parse_ofed_info(out)
        except ParseError:
            return None

    def loaded_version(self):
        try:
            with open(self.path("/sys/module/mlx5_core/version")) as stream:
                return stream.read().strip() or None
        except OSError:
            return None

    # -- kernels
    def running_kernel(self):
        rc, out, _err = self.run(["uname", "-r"], check=False)
        return out.strip() if rc == 0 and out.strip() else os.uname()[2]

    def boot_kernel(self, override=None):
        """(kernel, how): the kernel the boot loader starts by default, or (None, why not)."""
        if override:
            return override, "gpufabric_ofed_boot_kernel"
        if self.which("grubby"):
            rc, out, _err = self.run(["grubby", "--default-kernel"], check=False)
            match = re.search(r"vmlinuz-(\S+)", out)
            if rc == 0 and match:
                return match.group(1), "grubby --default-kernel"
        for link in ("/vmlinuz", "/boot/vmlinuz"):
            path = self.path(link)
            if os.path.islink(path):
                match = re.search(r"vmlinuz-(\S+)$", os.readlink(path))
                if match:
                    return match.group(1), "%s -> %s" % (link, os.readlink(path))
        try:
            names = [n[len("vmlinuz-"):] for n in os.listdir(self.path("/boot")) if n.startswith("vmlinuz-")]
        except OSError:
            names = []
        if names:
            newest = names[0]
            for name in names[1:]:
                if deb_compare(name, newest) > 0:
                    newest = name
            return newest, "the newest /boot/vmlinuz-* (GRUB's first entry)"
        return None, "no boot loader entry found (no grubby, /vmlinuz or /boot/vmlinuz-*)"

    def search_modules(self, kernel):
        for sub in MODULE_SUBDIRS:
            top = self.path("/lib/modules", kernel, sub)
            for dirpath, _dirs, files in os.walk(top):
                for name in sorted(files):
                    if MLX5_RE.search(name):
                        full = os.path.join(dirpath, name)
                        return "/" + os.path.relpath(full, self.root) if self.root != "/" else full
        return None

    def dkms_status(self):
        if not self.which("dkms"):
            return []
        _rc, out, _err = self.run(["dkms", "status"], check=False)
        return parse_dkms_status(out)

    # -- management interface
    def addresses(self):
        if not self.which("ip"):  # no iproute2: the management interface stays unknown (no restart)
            return []
        rc, out, _err = self.run(["ip", "-o", "addr", "show"], check=False)
        return parse_ip_addr(out) if rc == 0 else []

    def default_route_interfaces(self):
        found = []
        if not self.which("ip"):
            return found
        for family in ("-4", "-6"):
            rc, out, _err = self.run(["ip", family, "-o", "route", "show", "default"], check=False)
            if rc == 0:
                found += [i for i in parse_ip_route(out) if i not in found]
        return found

    def lower(self, ifname, seen=None):
        """The interfaces under ``ifname``: bond slaves, VLAN/macvlan parents, bridge ports (recursively)."""
        seen = seen if seen is not None else set()
        if ifname in seen:
            return []
        seen.add(ifname)
        base = self.path("/sys/class/net", ifname)
        below = []
        try:
            entries = os.listdir(base)
        except OSError:
            return []
        below += [e[len("lower_"):] for e in entries if e.startswith("lower_")]
        try:
            below += os.listdir(os.path.join(base, "brif"))
        except OSError:
            pass
        try:
            with open(os.path.join(base, "bonding", "slaves")) as stream:
                below += stream.read().split()
        except OSError:
            pass
        if not below:
            return [ifname]
        leaves = []
        for name in dict.fromkeys(below):
            leaves += [x for x in self.lower(name, seen) if x not in leaves]
        return leaves

    def driver_of(self, ifname):
        link = self.path("/sys/class/net", ifname, "device", "driver")
        try:
            return os.path.basename(os.readlink(link))
        except OSError:
            return None

    def pci_of(self, ifname):
        """The PCI function under a network interface (sysfs ``device`` link), None for a virtual one."""
        try:
            name = os.path.basename(os.path.realpath(self.path("/sys/class/net", ifname, "device")))
        except OSError:
            return None
        return name if re.match(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$", name) else None

    def netdev_pci(self):
        """``{netdev: PCI function}`` from ``ibdev2netdev -v`` (empty when it is missing or unreadable)."""
        if not self.which("ibdev2netdev"):
            return {}
        rc, out, _err = self.run(["ibdev2netdev", "-v"], check=False)
        if rc != 0:
            return {}
        try:
            return {row["netdev"]: row["pci"] for row in parse_ibdev2netdev(out) if row.get("netdev") and row.get("pci")}
        except ParseError:
            return {}

    def rdma_ports(self):
        """``{netdev: (rdma device, port)}`` from ``ibdev2netdev`` (empty when it is missing or unreadable)."""
        if not self.which("ibdev2netdev"):
            return {}
        rc, out, _err = self.run(["ibdev2netdev"], check=False)
        if rc != 0:
            return {}
        try:
            return {row["netdev"]: (row["rdma"], row["port"]) for row in parse_ibdev2netdev(out) if row.get("netdev")}
        except ParseError:
            return {}

    def netdevs(self):
        """The network interfaces in /sys/class/net, sorted."""
        try:
            return sorted(os.listdir(self.path("/sys/class/net")))
        except OSError:
            return []

    def read_sys(self, path):
        """The text of a sysfs/configfs file (``path`` under ``root``) without its trailing newline; None when
        the file is not there or cannot be read."""
        try:
            with open(self.path(path)) as stream:
                return stream.read().rstrip("\n")
        except OSError:
            return None

    def write_sys(self, path, value):
        """Write ``value`` to an existing sysfs/configfs attribute (never creates one). Raises OSError."""
        full = self.path(path)
        if not os.path.isfile(full):
            raise FileNotFoundError(2, "no such attribute", path)
        with open(full, "w") as stream:
            stream.write("%s\n" % value)

    def rdma_netdevs(self):
        """``{netdev: rdma device}`` from ``ibdev2netdev``."""
        return {netdev: rdma for netdev, (rdma, _port) in self.rdma_ports().items()}

    # -- boot identity and the marker
    def boot_id(self, command=None):
        if command:
            rc, out, _err = self.run(list(command), check=False)
            if rc == 0 and out.strip():
                return out.strip()
        try:
            with open(self.path("/proc/sys/kernel/random/boot_id")) as stream:
                return stream.read().strip()
        except OSError:
            pass
        try:
            with open(self.path("/proc/stat")) as stream:
                for line in stream:
                    if line.startswith("btime "):
                        return "btime " + line.split()[1]
        except OSError:
            pass
        return None

    def read_marker(self, state_dir):
        try:
            with open(self.path(state_dir, MARKER)) as stream:
                data = json.load(stream)
            return data if isinstance(data, dict) else None
        except (OSError, ValueError):
            return None

    def write_marker(self, state_dir, data):
        directory = self.path(state_dir)
        os.makedirs(directory, mode=0o755, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".pending.")
        with os.fdopen(fd, "w") as stream:
            json.dump(data, stream, indent=2, sort_keys=True)
            stream.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, os.path.join(directory, MARKER))


# ---------------------------------------------------------------------------------- repository checks

def probe_repository(reader, manager, repo, names, wanted, timeout, key_fetch=None):
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
            argv = apt_probe_argv(workdir, timeout)
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


def check_available(url, wanted, available):
    missing = []
    for name in sorted(wanted):
        have = available.get(name) or []
        if wanted[name] not in have:
            missing.append("%s %s (it has: %s)" % (name, wanted[name], ", ".join(have) or "no version of it"))
    if missing:
        raise Refused("the driver repository %s does not have the pinned %s. Nothing was changed." % (
            url, "; ".join(missing)), parameter="%s.source.packages" % ROOT)


def check_tarball(reader, spec):
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


# ---------------------------------------------------------------------------------- the whole job

def read_state(reader, params, manager, pins):
    ofed = reader.ofed_info()
    installed = reader.installed(manager, list(pins))
    running = reader.running_kernel()
    boot, boot_how = reader.boot_kernel(params.get("boot_kernel"))
    return {"ofed": ofed, "installed": installed, "running": running, "boot": boot, "boot_how": boot_how}


def check_kernels(reader, spec, manager, pins, running, boot):
    files = [] if spec["dkms"] else reader.package_files(manager, list(pins))
    rows = reader.dkms_status() if spec["dkms"] else []
    found = {}
    for kernel in dict.fromkeys([running, boot]):
        if kernel:
            found[kernel] = modules_for(kernel, files, rows, spec, pins, reader.search_modules)
    return found, kernel_guard(spec, running, boot, found)


def mgmt_state(reader, params):
    addresses = [a for a in (params.get("mgmt_address") or "", _ssh_server_address()) if a]
    addr_table = reader.addresses() if not params.get("mgmt_interface") else []
    defaults = reader.default_route_interfaces() if not params.get("mgmt_interface") else []
    interfaces = [params["mgmt_interface"]] if params.get("mgmt_interface") else \
        list(dict.fromkeys([i for i, a in addr_table if a in addresses] + defaults))
    lower_map, drivers = {}, {}
    for ifname in interfaces:
        lower_map[ifname] = reader.lower(ifname)
        for leaf in lower_map[ifname]:
            drivers[leaf] = reader.driver_of(leaf)
    return mgmt_decision(params.get("mgmt_interface"), addresses, addr_table, defaults,
                         lambda name: lower_map.get(name, [name]), drivers, reader.rdma_netdevs())


def _ssh_server_address():
    parts = os.environ.get("SSH_CONNECTION", "").split()
    return parts[2] if len(parts) == 4 else None


def converge(reader, spec, params, check_mode, key_fetch=None):
    """Everything the module does. ``params``: state (query, present, verified), repository (the
    effective repository: url, suite, components, signed_by, key_url, trusted, sources_file), probe,
    packages (a tarball's pins), mgmt_interface, mgmt_address, boot_kernel, restart_driver,
    state_dir, boot_id_command, mark_pending, timeout, lock_timeout, package_manager."""
    state = params.get("state") or "query"
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
    repo = params.get("repository") or {}
    if kind == "tarball":
        names = params.get("bundle_packages") or BUNDLE_PACKAGES[spec["flavour"]]
        if repo.get("url"):
            pins = bundle_pins(reader, repo["url"], names)
        else:
            pins = {name: None for name in names}  # versions known once the bundle is unpacked
    else:
        pins = pinned_packages(spec)
    timeout = int(params.get("timeout") or 30)
    before = read_state(reader, params, manager, pins)
    decided = plan(spec, before["ofed"], before["installed"], manager, pins)
    result = {
        "changed": False,
        "package_manager": manager,
        "action": decided["action"],
        "compliant": decided["compliant"],
        "reasons": decided["reasons"],
        "packages": decided["packages"],
        "would_install": ["%s=%s" % kv for kv in sorted(decided["to_install"].items())],
        "installed": [],
        "driver": {"wanted": spec["version"], "flavour": spec["flavour"], "before": before["ofed"],
                   "after": before["ofed"]},
        "kernels": {"running": before["running"], "boot": before["boot"], "boot_how": before["boot_how"],
                    "modules": {}, "problem": None},
        "repository": {"url": repo.get("url"), "probed": False, "available": {},
                       "key_present": bool(repo.get("signed_by")) and os.path.isfile(reader.path(repo["signed_by"]))},
        "pins": pins,
        "tarball": None,
    }
    if decided["refused"]:
        raise Refused(decided["refused"], parameter="%s.version" % ROOT)
    action_needed = decided["action"] != NONE
    if action_needed:
        problem = kernel_precheck(spec, before["running"], before["boot"])
        if problem:
            raise Refused(problem, parameter="%s.kernels" % ROOT)
        if kind == "tarball":
            result["tarball"] = {"path": spec["source"]["path"], "sha256": check_tarball(reader, spec)}
        if params.get("probe", True) and repo.get("url") and all(v is not None for v in pins.values()):
            result["repository"]["available"] = probe_repository(reader, manager, repo, list(pins), pins, timeout,
                                                                 key_fetch=key_fetch)
            result["repository"]["probed"] = True

    if state == "present" and action_needed:
        if manager != "apt":
            raise InvalidValue("state=present installs with apt only; on dnf hosts install with ansible.builtin.dnf "
                               "and check with state=verified", parameter="state", allowed=["query", "verified"])
        if any(v is None for v in pins.values()) and not check_mode:
            raise InvalidValue("the driver bundle %s is not unpacked yet: pass its repository (file:///...) so the "
                               "pinned versions are known" % spec["source"]["path"], parameter="repository")
        result["changed"] = True
        if not check_mode:
            install_apt(reader, spec, params, pins, decided, timeout)
            result["installed"] = result["would_install"]
            record_install(reader, spec, params, pins)
    elif state == "verified" and params.get("mark_pending") and not check_mode:
        record_install(reader, spec, params, pins)
    if state in ("present", "verified") and not (check_mode and action_needed):
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
    changed_now = bool(result["installed"]) or (check_mode and result["changed"]) \
        or (state == "verified" and params.get("mark_pending"))
    marker = reader.read_marker(state_dir)
    after = result["driver"]["after"]
    pending, why = pending_decision(marker, boot_id, reader.loaded_version(),
                                    after["version"] if after else None)
    if changed_now:
        pending, why = True, "the driver %s in this run; the running driver is the old one" % (
            "was installed" if not check_mode else "would be installed")
    result["reboot_required"] = pending
    result["pending_reason"] = why
    result["boot_id"] = boot_id
    mgmt = mgmt_state(reader, params)
    result["mgmt"] = mgmt
    result["restart"] = restart_decision(bool(params.get("restart_driver")), mgmt, pending)
    return result


def record_install(reader, spec, params, pins):
    """Remember that a driver was installed in this boot: the reboot it needs is pending until the boot changes."""
    reader.write_marker(params.get("state_dir") or DEFAULT_STATE_DIR, {
        "version": spec["version"], "flavour": spec["flavour"], "boot_id": reader.boot_id(params.get("boot_id_command")),
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "packages": pins})


def install_apt(reader, spec, params, pins, decided, timeout):
    sources = (params.get("repository") or {}).get("sources_file")
    url = (params.get("repository") or {}).get("url") or spec["source"].get("url")
    if sources:
        argv = apt_update_argv(sources, timeout)
        rc, out, err = reader.run(argv, check=False, timeout=timeout * 4)
        problems = apt_errors(out + "\n" + err)
        if rc != 0 or problems:
            raise ToolFailed("apt-get update of the driver repository %s failed: %s. Nothing was installed." % (
                url, " / ".join(problems) or (err or out).strip()), cmd=argv, rc=rc, stdout=out, stderr=err,
                parameter="%s.source.url" % ROOT)
    _rc, out, _err = reader.run(["apt-cache", "madison"] + sorted(pins), check=False)
    check_available(url or "(the configured apt sources)", pins, parse_madison(out))
    lock = int(params.get("lock_timeout") or 300)
    argv = apt_install_argv(pins, decided["action"] == DOWNGRADE, lock)
    rc, out, err = reader.run(argv, check=False, env={"DEBIAN_FRONTEND": "noninteractive"},
                              timeout=max(reader.timeout, lock + 60))
    if rc != 0:
        errors = [line.strip() for line in (err + "\n" + out).splitlines() if line.startswith("E:")]
        raise ToolFailed("apt-get install of %s failed (rc=%d): %s" % (
            ", ".join("%s=%s" % kv for kv in sorted(pins.items())), rc,
            " / ".join(errors) or (err or out).strip()[-400:]), cmd=argv, rc=rc, stdout=out, stderr=err)


def verify_installed(reader, spec, manager, pins, result):
    """The package manager and ofed_info -s must now both say what the matrix pins."""
    installed = reader.installed(manager, list(pins))
    ofed = reader.ofed_info()
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


def summary(result, check_mode, state):
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
