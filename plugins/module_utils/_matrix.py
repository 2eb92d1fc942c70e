# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pinned version matrix ``gpufabric_matrix`` (docs/matrix.md): is it consistent, and what
does it mean for the cards of a host.

- ``matrix_problems(matrix)``: every problem of the matrix at once, each a sentence that starts
  with the path of the bad entry (``gpufabric_matrix.firmware.MT_0000000838.sha256: ...``).
  Pure; never raises, whatever the input.
- ``firmware_targets(devices, matrix)``: per card (function 0 of each card in the
  ``gpufabric.mlnx.mlx_info`` devices list) the pinned image and what to do - ``burn``, ``none``,
  ``pending`` (the target is burned, not yet running) or ``refused`` with the reason.
- ``firmware_images(matrix, firmware_dir)``: the ``images`` option of
  ``gpufabric.mlnx.mlx_firmware``, one entry per PSID.
- ``switch_os_target(running, image, matrix, base_url)``: for one leaf, what the pinned switch OS
  (``switch_os``) means - ``none``, ``upgrade``, ``boot`` (the other partition holds the pin) or
  ``refused`` with the reason; the leaf gate, the leaf role and ``gpufabric.mlnx.nvue_image`` agree on it.

The last three refuse a matrix that has problems (MatrixError lists them all).
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._devices import (
    PART_NUMBER_ALLOWED,
    PART_NUMBER_RE,
    base_part_number,
    info_cards,
)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._devices import is_pci
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._firmware import SHA256_RE, psid_problem
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mlxconfig import param_problems
from ansible_collections.gpufabric.mlnx.plugins.module_utils._profiles import MATCH_KEYS, check_assignments
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import (
    Problems, ProblemsError, check_list, check_mapping, close_names, field, join_path, kind_of, problem_list,
    quoted, read_bool, read_choice, read_string, unknown_keys)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._versions import FIRMWARE_PIN_RE, version_key

ROOT = "gpufabric_matrix"
SUBJECT = ROOT + " is not consistent"

FLAVOURS = ("doca-ofed", "mlnx-ofed")
SOURCE_TYPES = ("apt", "dnf", "tarball")

TOP_KEYS = ("name", "description", "driver", "firmware", "compatibility", "switch_os", "nv_profiles",
            "nv_profile_assignments")
DRIVER_KEYS = ("flavour", "version", "source", "kernels", "dkms", "allow_downgrade")
SOURCE_KEYS = {
    "apt": ("type", "url", "suite", "components", "signed_by", "key_url", "packages"),
    "dnf": ("type", "url", "gpgkey", "gpgcheck", "packages"),
    "tarball": ("type", "path", "sha256"),
}
FIRMWARE_KEYS = ("version", "image", "sha256", "part_numbers", "shipped_min", "allow_downgrade")
COMPAT_KEYS = ("firmware_drivers", "switch_os_min", "nccl")
SWITCH_OSES = ("cumulus-linux",)
SWITCH_OS_KEYS = ("release", "image", "sha256", "url", "allow_downgrade")
BASE_URL_VARIABLE = "gpufabric_switch_image_base_url"
ASSIGNMENT_KEYS = ("profile",) + tuple(MATCH_KEYS)
MATCH_WHAT = {"part_numbers": "a part number", "pci": "a PCI address", "device_types": "a device type such as ConnectX7"}

# 28.43.2566: major (the device family), minor, sub-minor - as flint prints "FW Version" (the grammar the
# firmware module holds an image's version to, too).
FW_VERSION_RE = FIRMWARE_PIN_RE
# 24.10-2.1.8.0, 5.8-1.1.2.1, 25.01-0.6.0: what `ofed_info -s` prints after its prefix.
DRIVER_VERSION_RE = re.compile(r"^\d+\.\d+-\d+(?:\.\d+){1,4}\Z", re.ASCII)
DRIVER_PREFIX_RE = re.compile(r"^(?:MLNX_OFED_LINUX|OFED-internal|DOCA-OFED|doca-ofed|mlnx-ofed)-(?P<rest>.*?):?\Z", re.ASCII)
PACKAGE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+_-]*\Z", re.ASCII)
# One exact Debian or RPM version ([epoch:]upstream[-release]); never a range, a glob or "latest".
PACKAGE_VERSION_RE = re.compile(r"^\d[0-9A-Za-z.+~:_-]*\Z", re.ASCII)
KERNEL_RE = re.compile(r"^\d+\.\d+[0-9A-Za-z.+_~-]*\Z", re.ASCII)
URL_RE = re.compile(r"^(?:https?|file)://\S+\Z", re.ASCII)
NCCL_RE = re.compile(r"^\d+\.\d+\.\d+(?:-\d+)?\Z", re.ASCII)
SWITCH_OS_VERSION_RE = re.compile(r"^\d+(?:\.\d+)*(?:[-.+_][0-9A-Za-z]+)*\Z", re.ASCII)
# A Cumulus Linux release as NVUE's product-release prints it: 5.11.0.
SWITCH_RELEASE_RE = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,4}", re.ASCII)
# A switch image file name: no path, no spaces; a .bin (cumulus-linux-5.11.0-mlx-amd64.bin).
SWITCH_IMAGE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,200}\.bin", re.ASCII)
SWITCH_IMAGE_RELEASE_RE = re.compile(r"cumulus-linux-(\d+\.\d+\.\d+)-", re.ASCII)
# Where the switch fetches its image: http(s)://host[:port]/path/<image>, no query, no fragment, no credentials.
SWITCH_URL_RE = re.compile(r"https?://(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])"
                           r"(?::\d{1,5})?(?:/[A-Za-z0-9._~%+-]+)+", re.ASCII)
SWITCH_BASE_URL_RE = re.compile(r"https?://(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])"
                                r"(?::\d{1,5})?(?:/[A-Za-z0-9._~%+-]+)*/?", re.ASCII)
# The device-type tokens mlxconfig and mst print: no dash, no space.
DEVICE_TYPE_RE = re.compile(r"^(?:ConnectX\d+(?:LX|DX)?|BlueField\d+)\Z", re.ASCII)
# NVIDIA image names: fw-ConnectX7-rel-28_43_2566-MCX75310AAS-NEA_Ax-UEFI-14.36.21-FlexBoot-3.7.500.bin
IMAGE_REL_RE = re.compile(r"rel-(\d+)_(\d+)_(\d+)")
ARCHIVE_SUFFIXES = (".zip", ".gz", ".tgz", ".tar", ".xz", ".bz2")
TARBALL_SUFFIXES = (".tgz", ".tar.gz", ".iso")
PLACEHOLDER_WORDS = ("latest", "any", "newest", "stable", "current")

BURN = "burn"
NONE = "none"
PENDING = "pending"
REFUSED = "refused"


class MatrixError(ProblemsError):
    """The matrix has problems; ``problems`` lists them (each starts with the bad entry's path)."""

    def __init__(self, problems: Sequence[str]):
        super().__init__(SUBJECT, problems, parameter=ROOT)


# ---------------------------------------------------------------- paths and words

def path_of(*keys: Any) -> str:
    """``path_of("firmware", "MT_0000000838", "sha256")`` -> ``gpufabric_matrix.firmware.MT_0000000838.sha256``."""
    return join_path(ROOT, *keys)


def _quoted(text):
    return quoted(text, limit=None)


def format_problems(problems: Sequence[str]) -> str:
    return problem_list(SUBJECT, problems)


# ---------------------------------------------------------------- small checks (each adds problems)

def _url(problems, path, value, what):
    text = read_string(problems, path, value, what)
    if text is not None and not URL_RE.match(text):
        problems.add(path, "%s is not a URL (allowed: https://, http:// or file:// and no spaces)" % _quoted(text))


def _absolute_path(problems, path, value, what):
    text = read_string(problems, path, value, what)
    if text is not None and not text.startswith("/"):
        problems.add(path, "%s is not an absolute path (%s)" % (_quoted(text), what))
        return None
    return text


def _fw_version(problems, path, value, what="a firmware version as flint prints FW Version, e.g. 28.43.2566"):
    text = read_string(problems, path, value, what)
    if text is None:
        return None
    if FW_VERSION_RE.match(text):
        return text
    hint = ""
    if re.match(r"^\d+_\d+_\d+$", text):
        hint = "; write it with dots: %s" % text.replace("_", ".")
    problems.add(path, "%s is not a firmware version (allowed: three numbers separated by dots, e.g. 28.43.2566)%s"
                 % (_quoted(text), hint))
    return None


def _driver_version(problems, path, value):
    text = read_string(problems, path, value, "the driver version as `ofed_info -s` prints it, e.g. 24.10-2.1.8.0")
    if text is None:
        return None
    if DRIVER_VERSION_RE.match(text):
        return text
    hint = ""
    prefixed = DRIVER_PREFIX_RE.match(text)
    if prefixed and DRIVER_VERSION_RE.match(prefixed.group("rest")):
        hint = "; write it without the prefix (and the colon `ofed_info -s` prints): %s" % prefixed.group("rest")
    elif text.endswith(":") and DRIVER_VERSION_RE.match(text[:-1]):
        hint = "; write it without the colon `ofed_info -s` prints: %s" % text[:-1]
    problems.add(path, "%s is not a driver version (allowed: what `ofed_info -s` prints without the MLNX_OFED_LINUX- "
                       "or OFED-internal- prefix and the colon, e.g. 24.10-2.1.8.0)%s" % (_quoted(text), hint))
    return None


def normal_sha256(text):
    text = text.strip().lower()
    return text[len("sha256:"):] if text.startswith("sha256:") else text


def _sha256(problems, path, value, what):
    text = read_string(problems, path, value, what)
    if text is None:
        return None
    digest = normal_sha256(text)
    if SHA256_RE.match(digest):
        if len(set(digest)) == 1:
            problems.add(path, "%s is a placeholder, not a checksum: put the `sha256sum` of the file here" % digest)
            return None
        return digest
    hint = ""
    if re.match(r"^[0-9a-f]+$", digest):
        hint = {32: " - that is the length of an MD5", 40: " - that is the length of a SHA-1",
                128: " - that is the length of a SHA-512"}.get(len(digest), "")
        hint = "; it has %d hex digits%s" % (len(digest), hint)
    problems.add(path, "must be the sha256 of the file, 64 hex digits as `sha256sum` prints them (a sha256: "
                       "prefix is accepted), not %s%s" % (kind_of(value), hint))
    return None


# ---------------------------------------------------------------- driver

def _check_packages(problems, path, packages, kind):
    what = "package name -> the one exact version to install, as %s prints it" % (
        "`apt-cache policy NAME`" if kind == "apt" else "`dnf list --showduplicates NAME`")
    if not check_mapping(problems, path, packages, what):
        return
    if not packages:
        problems.add(path, "must pin at least one package (%s)" % what)
    for name, version in packages.items():
        item = join_path(path, name)
        if not isinstance(name, str) or not PACKAGE_NAME_RE.match(name):
            hint = ""
            if isinstance(name, str) and re.search(r"[=<>]", name):
                hint = "; put the version on the right: NAME: \"VERSION\""
            problems.add(item, "%s is not a package name%s" % (kind_of(name), hint))
        text = read_string(problems, item, version, "the exact version to pin")
        if text is None:
            continue
        if text.lower() in PLACEHOLDER_WORDS or not PACKAGE_VERSION_RE.match(text):
            problems.add(item, "%s is not one exact version (a pin is the full version string the package manager "
                               "prints, e.g. 24.10.OFED.24.10.2.1.8.1-1; no ranges, globs or latest)" % _quoted(text))


def _check_source(problems, source, base):
    if not check_mapping(problems, base, source, "how the driver is installed: type apt, dnf or tarball and its keys"):
        return
    path, kind = field(problems, source, base, "type", "apt, dnf or tarball")
    if kind is None:
        return
    if read_choice(problems, path, kind, SOURCE_TYPES) is None:
        return
    unknown_keys(problems, source, base, SOURCE_KEYS[kind])
    if kind in ("apt", "dnf"):
        path, url = field(problems, source, base, "url", "the %s repository URL (https://, http:// or file://)" % kind)
        if url is not None:
            _url(problems, path, url, "the repository URL")
        path, packages = field(problems, source, base, "packages",
                               "the packages to install, each with its exact version")
        if packages is not None:
            _check_packages(problems, path, packages, kind)
    if kind == "apt":
        _check_apt(problems, source, base)
    elif kind == "dnf":
        path, key = field(problems, source, base, "gpgkey", "", required=False)
        if key is not None:
            text = read_string(problems, path, key, "the repository's GPG key: a URL or an absolute path")
            if text is not None and not (URL_RE.match(text) or text.startswith("/")):
                problems.add(path, "%s is neither a URL nor an absolute path" % _quoted(text))
        read_bool(problems, join_path(base, "gpgcheck"), source.get("gpgcheck"), "check package signatures")
    else:
        path, tarball = field(problems, source, base, "path",
                              "the absolute path of the MLNX_OFED / DOCA-OFED tarball or ISO on the host")
        if tarball is not None:
            text = _absolute_path(problems, path, tarball, "the tarball or ISO on the host")
            if text is not None and not text.lower().endswith(TARBALL_SUFFIXES):
                problems.add(path, "%s is not a tarball or ISO (allowed: %s)" % (_quoted(text), ", ".join(TARBALL_SUFFIXES)))
        path, digest = field(problems, source, base, "sha256", "the sha256 of the tarball or ISO (64 hex digits)")
        if digest is not None:
            _sha256(problems, path, digest, "the sha256 of the tarball or ISO")


def _check_apt(problems, source, base):
    path, suite = field(problems, source, base, "suite", 'the suite: "./" for a flat repository (as NVIDIA '
                                                         "publishes DOCA), else a distribution name")
    suite = read_string(problems, path, suite, "the suite") if suite is not None else None
    path, components = field(problems, source, base, "components", "", required=False)
    if components is not None and check_list(problems, path, components, "the repository components; [] for a flat one"):
        for index, item in enumerate(components):
            read_string(problems, join_path(path, index), item, "a component name such as main")
    if suite is not None and (components is None or isinstance(components, list)):
        if suite.endswith("/") and components:
            problems.add(path, "a flat repository (suite %s ends with /) has no components; leave the list empty"
                         % _quoted(suite))
        elif not suite.endswith("/") and not components:
            problems.add(path, "required when the suite %s is a distribution name: apt needs at least one "
                               "component (e.g. [main]); a flat repository's suite ends with / (\"./\")" % _quoted(suite))
    path, signed_by = field(problems, source, base, "signed_by", "", required=False)
    if signed_by is not None:
        _absolute_path(problems, path, signed_by, "the repository's key file on the host")
    path, key_url = field(problems, source, base, "key_url", "", required=False)
    if key_url is not None:
        _url(problems, path, key_url, "where to fetch the repository's key")


def repository_problems(repository, kind, state_dir=None, base="repository") -> list[str]:
    """The ofed_driver module's own ``repository`` (url, suite, components, signed_by, key_url, trusted, sources_file)
    and ``state_dir``, by the rules the matrix's ``driver.source`` is checked with: a URL with its scheme, an apt
    suite with its components (none for a flat ``./``), absolute key and sources files; ``kind`` the source's type
    (apt, dnf or tarball - apt's suite rules apply to apt only). Every problem, each naming its option."""
    problems = Problems()
    repo = repository if repository is not None else {}
    if check_mapping(problems, base, repo, "the repository (url, suite, components, signed_by, key_url, ...)"):
        if repo.get("url") is not None:
            _url(problems, join_path(base, "url"), repo["url"], "the repository URL")
        if kind == "apt" and repo.get("url") is not None:
            # the module's defaults: a flat repository (suite ./, no components)
            keys = ("suite", "components", "signed_by", "key_url")
            given = {k: v for k, v in repo.items() if v is not None and k in keys}
            _check_apt(problems, dict({"suite": "./", "components": []}, **given), base)
        for key, what in (("sources_file", "the apt sources file on the host"),):
            if repo.get(key) is not None:
                _absolute_path(problems, join_path(base, key), repo[key], what)
    if state_dir is not None:
        text = _absolute_path(problems, "state_dir", state_dir, "where the record of a pending install is kept")
        if text is not None and ".." in text.split("/"):
            problems.add("state_dir", "%s has a .. component (an absolute directory without ..)" % _quoted(text))
    return list(problems)


def _check_kernels(problems, driver, base):
    kpath, kernels = field(problems, driver, base, "kernels", "", required=False)
    dpath, dkms = field(problems, driver, base, "dkms", "", required=False)
    kernels_ok = kernels is None or check_list(problems, kpath, kernels, "kernel releases as `uname -r` prints them")
    if isinstance(kernels, list):
        for index, item in enumerate(kernels):
            ipath = join_path(kpath, index)
            text = read_string(problems, ipath, item, "a kernel release as `uname -r` prints it")
            if text is None or KERNEL_RE.match(text):
                continue
            hint = ""
            if text.startswith("linux-image-") or text.startswith("kernel-"):
                hint = "; give the release `uname -r` prints, not the package name"
            problems.add(ipath, "%s is not a kernel release (e.g. 5.15.0-1071-nvidia, 5.14.0-427.13.1.el9_4.x86_64)%s"
                         % (_quoted(text), hint))
    dkms_ok = read_bool(problems, dpath, dkms, "the driver's modules are built on the host by DKMS") is not None or dkms is None
    if kernels_ok and dkms_ok and not kernels and dkms is not True:
        problems.add(kpath, "required unless %s is true: the kernel releases (`uname -r`) the driver's modules are "
                            "built for, or dkms: true when DKMS builds them on the host" % dpath)


def _check_driver(problems, driver, base):
    """The pinned driver version (or None when it is missing or malformed)."""
    if not check_mapping(problems, base, driver, "flavour, version, source, kernels or dkms"):
        return None
    unknown_keys(problems, driver, base, DRIVER_KEYS)
    path, flavour = field(problems, driver, base, "flavour", "doca-ofed or mlnx-ofed")
    if flavour is not None:
        read_choice(problems, path, flavour, FLAVOURS)
    path, version = field(problems, driver, base, "version",
                          "the driver version as `ofed_info -s` prints it, e.g. 24.10-2.1.8.0")
    version = _driver_version(problems, path, version) if version is not None else None
    path, source = field(problems, driver, base, "source", "how the driver is installed (apt, dnf or tarball)")
    if source is not None:
        _check_source(problems, source, path)
    _check_kernels(problems, driver, base)
    read_bool(problems, join_path(base, "allow_downgrade"), driver.get("allow_downgrade"),
              "let the ofed role install this version over a newer installed driver")
    return version


# ---------------------------------------------------------------- firmware

def _psid_ok(problems, path, psid):
    why = psid_problem(psid)
    if why:
        problems.add(path, why)
    return not why


def _check_image(problems, path, value, version, version_path):
    text = read_string(problems, path, value, "the image file name under gpufabric_firmware_dir")
    if text is None:
        return None
    if "/" in text or "\\" in text or text in (".", ".."):
        problems.add(path, "must be a file name under gpufabric_firmware_dir, not a path: %s" % _quoted(text))
        return None
    lower = text.lower()
    if lower.endswith(ARCHIVE_SUFFIXES):
        problems.add(path, "%s is an archive: unpack it and name the .bin file flint burns" % _quoted(text))
    elif not lower.endswith(".bin"):
        problems.add(path, "must name the .bin image file flint burns, not %s" % _quoted(text))
    rel = IMAGE_REL_RE.search(text)
    if rel and version is not None and tuple(int(n) for n in rel.groups()) != version_key(version):
        problems.add(path, "the file name says firmware %s but %s is %s: one of them is wrong"
                     % (".".join(rel.groups()), version_path, version))
    return text


def _check_part_numbers(problems, path, value):
    """``[(index, part number as written, base part number)]`` of the well-formed entries."""
    what = "the board part numbers this PSID's image is valid for, e.g. [MCX75310AAS-NEAT]"
    if not check_list(problems, path, value, what):
        return []
    if not value:
        problems.add(path, "must list at least one part number (%s)" % what)
    out, seen = [], {}
    for index, item in enumerate(value):
        ipath = join_path(path, index)
        text = read_string(problems, ipath, item, "a part number")
        if text is None:
            continue
        if re.search(r"\s", text) or not PART_NUMBER_RE.fullmatch(text):
            problems.add(ipath, "%s is not a part number (%s; one part number per list entry)"
                         % (_quoted(text), PART_NUMBER_ALLOWED))
            continue
        base = base_part_number(text)
        if base in seen:
            problems.add(ipath, "%s is listed twice (also %s)" % (text, join_path(path, seen[base])))
            continue
        seen[base] = index
        out.append((index, text, base))
    return out


def _check_firmware(problems, firmware, base):
    """``{psid: {version, version_path, ...}}`` of the entries whose PSID and version are well-formed."""
    if not check_mapping(problems, base, firmware, "PSID -> version, image, sha256, part_numbers"):
        return {}
    if not firmware:
        problems.add(base, "must pin the firmware of at least one PSID")
    good = {}
    claimed, images, digests = {}, {}, {}
    for psid, entry in firmware.items():
        path = join_path(base, psid)
        psid_ok = _psid_ok(problems, path, psid)
        if not check_mapping(problems, path, entry, "version, image, sha256 and part_numbers of this PSID"):
            continue
        unknown_keys(problems, entry, path, FIRMWARE_KEYS)
        vpath, version = field(problems, entry, path, "version", "the firmware version in the image, e.g. 28.43.2566")
        version = _fw_version(problems, vpath, version) if version is not None else None
        ipath, image = field(problems, entry, path, "image", "the image file name under gpufabric_firmware_dir")
        image = _check_image(problems, ipath, image, version, vpath) if image is not None else None
        spath, digest = field(problems, entry, path, "sha256", "the sha256 of the image file (64 hex digits)")
        digest = _sha256(problems, spath, digest, "the sha256 of the image file") if digest is not None else None
        ppath, parts = field(problems, entry, path, "part_numbers",
                             "the board part numbers this image is valid for, e.g. [MCX75310AAS-NEAT]")
        parts = _check_part_numbers(problems, ppath, parts) if parts is not None else []
        mpath, shipped = field(problems, entry, path, "shipped_min", "", required=False)
        shipped = _fw_version(problems, mpath, shipped) if shipped is not None else None
        apath, allow = field(problems, entry, path, "allow_downgrade", "", required=False)
        allow = read_bool(problems, apath, allow, "burn the pinned version also where it is older than the flash")
        if version and shipped and version_key(version) < version_key(shipped) and allow is not True:
            problems.add(mpath, "%s is newer than the pinned %s %s: every card of this PSID shipped with newer "
                                "firmware, so the pin downgrades them all; set %s: true if that is intended"
                         % (shipped, vpath, version, apath))

        if image is not None:
            if image in images:
                problems.add(ipath, "%s is also the image of %s: an image carries one PSID" % (image, images[image]))
            else:
                images[image] = ipath
        if digest is not None:
            if digest in digests:
                problems.add(spath, "the same sha256 as %s: two PSIDs cannot share one image file" % digests[digest])
            else:
                digests[digest] = spath
        for index, text, part in parts:
            if part in claimed:
                problems.add(join_path(ppath, index), "part number %s is also claimed by %s: a part number belongs "
                                                      "to one PSID" % (text, claimed[part]))
            else:
                claimed[part] = join_path(ppath, index)
        if psid_ok and version:
            good[psid] = {"version": version, "version_path": vpath}
    return good


# ---------------------------------------------------------------- compatibility

def _check_compatibility(problems, compat, base):
    """``{firmware version key: (path, [driver versions])}``, or None when unusable."""
    if not check_mapping(problems, base, compat, "firmware_drivers, switch_os_min, nccl"):
        return None
    unknown_keys(problems, compat, base, COMPAT_KEYS)
    path, table = field(problems, compat, base, "firmware_drivers",
                        "firmware version -> the driver versions it is qualified with")
    qualified = None
    if table is not None and check_mapping(problems, path, table, "firmware version -> list of driver versions"):
        qualified = {}
        for firmware, drivers in table.items():
            kpath = join_path(path, firmware)
            version = _fw_version(problems, kpath, firmware)
            if not check_list(problems, kpath, drivers, "the driver versions firmware %s is qualified with" % (firmware,)):
                continue
            if not drivers:
                problems.add(kpath, "lists no driver version: list the driver versions firmware %s is qualified with"
                             % (firmware,))
            ok = []
            for index, item in enumerate(drivers):
                text = _driver_version(problems, join_path(kpath, index), item)
                if text is not None:
                    ok.append(text)
            if version is not None:
                qualified.setdefault(version_key(version), (kpath, ok))
    path, switches = field(problems, compat, base, "switch_os_min", "", required=False)
    if switches is not None and check_mapping(problems, path, switches, "switch OS name -> minimum version"):
        for name, version in switches.items():
            item = join_path(path, name)
            if not isinstance(name, str) or not name.strip():
                problems.add(item, "a switch OS name must be a string such as cumulus-linux, not %s" % kind_of(name))
            text = read_string(problems, item, version, "the minimum switch OS version, e.g. 5.11.0")
            if text is not None and not SWITCH_OS_VERSION_RE.match(text):
                problems.add(item, "%s is not a version (e.g. 5.11.0)" % _quoted(text))
    path, nccl = field(problems, compat, base, "nccl", "", required=False)
    if nccl is not None:
        text = read_string(problems, path, nccl, "the NCCL version, e.g. 2.23.4-1")
        if text is not None and not NCCL_RE.match(text):
            problems.add(path, "%s is not an NCCL version (allowed: N.N.N or N.N.N-N, e.g. 2.23.4-1)" % _quoted(text))
    return qualified


def _check_qualified(problems, firmware, qualified, driver_version):
    table = path_of("compatibility", "firmware_drivers")
    for info in firmware.values():
        version, vpath = info["version"], info["version_path"]
        entry = qualified.get(version_key(version))
        if entry is None:
            pinned = " (the pinned %s is %s)" % (path_of("driver", "version"), driver_version) if driver_version else ""
            problems.add(vpath, "firmware %s has no entry in %s: list the driver versions it is qualified with there%s"
                         % (version, table, pinned))
        elif driver_version is not None and driver_version not in entry[1]:
            problems.add(vpath, "firmware %s is not qualified with the pinned driver: %s is %s, and %s lists %s"
                         % (version, path_of("driver", "version"), driver_version, entry[0],
                            ", ".join(entry[1]) or "nothing valid"))


# ---------------------------------------------------------------- switch OS

def _switch_release(problems, path, value):
    text = read_string(problems, path, value, "the Cumulus Linux release to run, N.N.N as nv show system version "
                                              "prints product-release, e.g. 5.11.0")
    if text is None:
        return None
    if SWITCH_RELEASE_RE.fullmatch(text):
        return text
    hint = ""
    if re.fullmatch(r"\d+\.\d+", text, re.ASCII):
        hint = "; give all three numbers, e.g. %s.0" % text
    elif re.fullmatch(r"\d+\.\d+\.\d+\.\d+", text, re.ASCII):
        hint = "; that looks like a build id: the release is %s" % text.rsplit(".", 1)[0]
    problems.add(path, "%s is not a release (allowed: N.N.N as nv show system version prints product-release, "
                       "e.g. 5.11.0)%s" % (_quoted(text), hint))
    return None


def _switch_image(problems, path, value, release, release_path):
    text = read_string(problems, path, value, "the image file name, e.g. cumulus-linux-5.11.0-mlx-amd64.bin")
    if text is None:
        return None
    if "/" in text or "\\" in text:
        problems.add(path, "must be a file name, not a path or a URL: %s (give the URL in url)" % _quoted(text))
        return None
    if not SWITCH_IMAGE_RE.fullmatch(text):
        problems.add(path, "%s is not an image file name (allowed: letters, digits and . _ + -, starting with a letter "
                           "or digit, ending in .bin, e.g. cumulus-linux-5.11.0-mlx-amd64.bin)" % _quoted(text))
        return None
    named = SWITCH_IMAGE_RELEASE_RE.match(text)
    if named and release is not None and named.group(1) != release:
        problems.add(path, "the file name says release %s but %s is %s: one of them is wrong"
                     % (named.group(1), release_path, release))
    return text


def _switch_url(problems, path, value, image, image_path):
    text = read_string(problems, path, value, "the http(s) URL the switch fetches the image from")
    if text is None:
        return
    if not SWITCH_URL_RE.fullmatch(text):
        problems.add(path, "%s is not an image URL (allowed: http:// or https://, a host, an optional port and a path "
                           "ending in the image file name; no spaces, query, fragment or credentials)" % _quoted(text))
        return
    last = text.rsplit("/", 1)[-1]
    if image is not None and last != image:
        problems.add(path, "ends in %s, but %s is %s: the URL's last segment must be the image file name"
                     % (_quoted(last), image_path, image))


def _check_switch_os(problems, switch_os, base):
    """``{os name: (release path, release)}`` of the well-formed pins."""
    if not check_mapping(problems, base, switch_os, "switch OS name (%s) -> release, image, sha256, url, "
                                                    "allow_downgrade" % ", ".join(SWITCH_OSES)):
        return {}
    pins = {}
    for name, entry in switch_os.items():
        path = join_path(base, name)
        if name not in SWITCH_OSES:
            guess = close_names(name, SWITCH_OSES) if isinstance(name, str) else []
            problems.add(path, "switch OS %s is not supported (supported: %s)%s" % (
                _quoted(name) if isinstance(name, str) else kind_of(name), ", ".join(SWITCH_OSES),
                "; did you mean %s?" % guess[0] if guess else ""))
            continue
        if not check_mapping(problems, path, entry, "release, image, sha256, url, allow_downgrade"):
            continue
        unknown_keys(problems, entry, path, SWITCH_OS_KEYS)
        rpath, release = field(problems, entry, path, "release", "the Cumulus Linux release to run, e.g. 5.11.0")
        release = _switch_release(problems, rpath, release) if release is not None else None
        ipath, image = field(problems, entry, path, "image", "the image file name, e.g. "
                                                             "cumulus-linux-5.11.0-mlx-amd64.bin")
        image = _switch_image(problems, ipath, image, release, rpath) if image is not None else None
        spath, digest = field(problems, entry, path, "sha256", "the sha256 of the image file (64 hex digits)")
        if digest is not None:
            _sha256(problems, spath, digest, "the sha256 of the image file")
        upath, url = field(problems, entry, path, "url", "", required=False)
        if url is not None:
            _switch_url(problems, upath, url, image, ipath)
        apath, allow = field(problems, entry, path, "allow_downgrade", "", required=False)
        read_bool(problems, apath, allow, "install the pinned release also on switches that run a newer one")
        if release is not None:
            pins[name] = (rpath, release)
    return pins


def _check_switch_os_min(problems, pins, compat):
    """A pinned release below ``compatibility.switch_os_min`` of the same OS is refused."""
    table = compat.get("switch_os_min") if isinstance(compat, dict) else None
    if not isinstance(table, dict):
        return
    for name, (rpath, release) in pins.items():
        minimum = table.get(name)
        if not isinstance(minimum, str):
            continue
        try:
            below = version_key(release) < version_key(minimum.strip())
        except ValueError:
            continue
        if below:
            problems.add(rpath, "%s pins %s, below its own minimum: %s is %s (raise the pin or lower the minimum)"
                         % (name, release, path_of("compatibility", "switch_os_min", name), minimum.strip()))


# ---------------------------------------------------------------- NV profiles

def _check_profiles(problems, profiles, base):
    """``{name: params}`` of the well-named profiles, or None when nv_profiles is unusable."""
    if not check_mapping(problems, base, profiles, "profile name -> {mlxconfig parameter: value}"):
        return None
    good = {}
    for name, params in profiles.items():
        path = join_path(base, name)
        if not isinstance(name, str) or not name.strip():
            problems.add(path, "a profile name must be a non-empty string, not %s" % kind_of(name))
            continue
        good[name] = params
        if not check_mapping(problems, path, params, "mlxconfig parameter -> value"):
            continue
        for param, value in params.items():
            for _what, message in param_problems(param, value):   # the mlxconfig module's own rule
                problems.add(join_path(path, param), message)
    return good


def _shared_assignment_problems(profiles, item):
    """What ``_profiles.check_assignments`` says about one assignment, as ``[(kind, text)]``:
    ``kind`` is ``profile`` for an unknown profile name, else ``match``."""
    try:
        check_assignments(profiles, [item])
    except MlnxError as err:
        text = re.sub(r"^[\w.]+: ", "", err.msg)
        out = []
        for part in re.split(r"; (?=assignment #1\b)", text):
            part = re.sub(r"^assignment #1 (?:\(profile [^)]*\) )?", "", part)
            out.append(("profile" if part.startswith("names profile") else "match", part))
        return out
    return []


def _check_assignments(problems, assignments, base, profiles):
    what = "a list tried in order, each with profile and part_numbers, pci or device_types"
    if not check_list(problems, base, assignments, what):
        return
    profiles_path = path_of("nv_profiles")
    for index, item in enumerate(assignments):
        path = join_path(base, index)
        if not isinstance(item, dict):
            problems.add(path, "must be a mapping with profile and part_numbers, pci or device_types, not %s"
                         % kind_of(item))
            continue
        unknown_keys(problems, item, path, ASSIGNMENT_KEYS)
        ppath, profile = field(problems, item, path, "profile", "the name of one of %s (%s)" % (
            profiles_path, ", ".join(sorted(profiles or {})) or "none defined"))
        profile_ok = isinstance(profile, str) and bool(profile.strip())
        if profile is not None and not profile_ok:
            problems.add(ppath, "must be the name of one of %s, not %s" % (profiles_path, kind_of(profile)))
        shared = dict(item, profile=profile if profile_ok else None)
        for key in MATCH_KEYS:
            value = item.get(key)
            if value is None:
                continue
            kpath = join_path(path, key)
            if not check_list(problems, kpath, value, "what this assignment matches"):
                shared[key] = None
                continue
            for pos, entry in enumerate(value):
                epath = join_path(kpath, pos)
                text = read_string(problems, epath, entry, MATCH_WHAT.get(key, "an entry"))
                if text is None:
                    continue
                if key == "pci" and not is_pci(text):
                    problems.add(epath, "%s is not a PCI address (e.g. 0000:29:00.0 or 29:00.0)" % _quoted(text))
                elif key == "device_types" and not DEVICE_TYPE_RE.match(text):
                    problems.add(epath, "%s is not a device type as mlxconfig and mst print it (no dash, no space: "
                                        "ConnectX7, ConnectX6DX, BlueField3)" % _quoted(text))
        for kind, text in _shared_assignment_problems(profiles or {}, shared):
            if kind == "profile":
                if profile_ok and profiles is not None:
                    problems.add(ppath, text)
            else:
                problems.add(path, text + " - it matches no device")


# ---------------------------------------------------------------- the whole matrix

def matrix_problems(matrix: Any) -> list[str]:
    """Every problem of ``matrix`` (the value of ``gpufabric_matrix``), ``[]`` when it is consistent."""
    problems = Problems()
    if not check_mapping(problems, ROOT, matrix, "name, driver, firmware, compatibility, switch_os, nv_profiles, "
                                                 "nv_profile_assignments"):
        return list(problems)
    unknown_keys(problems, matrix, ROOT, TOP_KEYS)
    path, name = field(problems, matrix, ROOT, "name", 'the release name shown in reports, e.g. "2026.11-a"')
    if name is not None:
        read_string(problems, path, name, "the release name shown in reports")
    path, description = field(problems, matrix, ROOT, "description", "", required=False)
    if description is not None:
        read_string(problems, path, description, "free text")
    path, driver = field(problems, matrix, ROOT, "driver", "the pinned NIC driver (flavour, version, source, ...)")
    driver_version = _check_driver(problems, driver, path) if driver is not None else None
    path, firmware = field(problems, matrix, ROOT, "firmware", "the pinned firmware per PSID")
    firmware = _check_firmware(problems, firmware, path) if firmware is not None else {}
    path, compat = field(problems, matrix, ROOT, "compatibility",
                         "firmware_drivers (which driver versions each firmware is qualified with)")
    qualified = _check_compatibility(problems, compat, path) if compat is not None else None
    if qualified is not None:
        _check_qualified(problems, firmware, qualified, driver_version)
    path, switch_os = field(problems, matrix, ROOT, "switch_os", "", required=False)
    if switch_os is not None:
        _check_switch_os_min(problems, _check_switch_os(problems, switch_os, path), compat)
    path, profiles = field(problems, matrix, ROOT, "nv_profiles", "", required=False)
    profiles = _check_profiles(problems, profiles, path) if profiles is not None else {}
    path, assignments = field(problems, matrix, ROOT, "nv_profile_assignments", "", required=False)
    if assignments is not None:
        _check_assignments(problems, assignments, path, profiles)
    return list(problems)


def check(matrix: Any) -> dict:
    """The matrix itself when it is consistent; raises MatrixError listing every problem."""
    problems = matrix_problems(matrix)
    if problems:
        raise MatrixError(problems)
    return matrix


# ---------------------------------------------------------------- devices x matrix

def _text(value):
    return value.strip() if isinstance(value, str) and value.strip() else None


def _cards(devices):
    """``[(card, device)]``: one device per card (function 0 when listed), in the order of the list (info_cards:
    every device checked, an address that is not a PCI function or is listed twice refused)."""
    return [(dev["card"], dev) for dev in info_cards(devices)]


def _same_version(first, second):
    try:
        return version_key(first) == version_key(second)
    except ValueError:
        return first == second


def _target(card, dev, firmware):
    psid = _text(dev.get("psid"))
    part = _text(dev.get("part_number"))
    burned = _text(dev.get("fw_version"))
    running = _text(dev.get("fw_running")) or burned
    entry = {
        "address": dev["address"].strip(),
        "card": card,
        "psid": psid,
        "part_number": part,
        "serial_number": dev.get("serial_number"),
        "current": {"burned": burned, "running": running},
        "target": None,
        "action": REFUSED,
        "reason": None,
        "downgrade": False,
    }
    if psid is None:
        errors = [str(e) for e in dev.get("errors") or [] if e] if isinstance(dev.get("errors"), list) else []
        entry["reason"] = "the card's PSID is unknown: its firmware could not be read%s" % (
            " (%s)" % "; ".join(errors) if errors else "")
        return entry
    pinned = firmware.get(psid.upper())
    where = path_of("firmware", psid.upper())
    if pinned is None:
        entry["reason"] = "unknown PSID %s: %s covers %s" % (psid, path_of("firmware"), ", ".join(firmware))
        return entry
    valid = [str(p).strip() for p in pinned["part_numbers"]]
    if not part or base_part_number(part) not in [base_part_number(p) for p in valid]:
        entry["reason"] = "part number %s is not valid for %s, the image of PSID %s (%s.part_numbers: %s)" % (
            part or "unknown (the card has no VPD [PN])", pinned["image"].strip(), psid, where, ", ".join(valid))
        return entry
    version = pinned["version"].strip()
    try:
        have = version_key(burned)
    except ValueError:
        entry["reason"] = "the burned firmware version is unreadable (%s); the target would be %s" % (
            kind_of(dev.get("fw_version")), version)
        return entry
    target = {"version": version, "image": pinned["image"].strip(), "sha256": normal_sha256(pinned["sha256"])}
    want = version_key(version)
    if have == want:
        entry["target"] = target
        if running and not _same_version(running, burned):
            entry["action"] = PENDING
            entry["reason"] = "%s is burned but %s runs until the card is reset or the host rebooted" % (burned, running)
        else:
            entry["action"] = NONE
            entry["reason"] = "at the pinned %s" % version
    elif have < want:
        entry["target"] = target
        entry["action"] = BURN
        entry["reason"] = "%s -> %s" % (burned, version)
    elif pinned.get("allow_downgrade") is True:
        entry["downgrade"] = True
        entry["target"] = target
        entry["action"] = BURN
        entry["reason"] = "downgrade %s -> %s, allowed by %s.allow_downgrade" % (burned, version, where)
    else:
        entry["downgrade"] = True
        entry["reason"] = "downgrade from %s to %s refused: the flash is newer than the pin; set %s.allow_downgrade: " \
                          "true to allow it" % (burned, version, where)
    return entry


def firmware_targets(devices: Any, matrix: Any) -> list[dict]:
    """Per card of ``devices`` (mlx_info's list): ``{address, card, psid, part_number, serial_number,
    current: {burned, running}, target: {version, image, sha256} | None, action, reason, downgrade}``.

    ``action``: ``burn``, ``none``, ``pending`` (the target is burned, another version runs) or
    ``refused`` (no target: unknown PSID, a part number the PSID's image is not for, a downgrade
    the matrix does not allow, or a card whose firmware could not be read). ``downgrade``: the pin
    is older than the burned firmware (mlx_firmware then needs ``allow_downgrade=true``).
    """
    check(matrix)
    return [_target(card, dev, matrix["firmware"]) for card, dev in _cards(devices)]


def firmware_images(matrix: Any, firmware_dir: Any) -> list[dict]:
    """The ``images`` option of gpufabric.mlnx.mlx_firmware: ``[{psid, version, path, sha256, part_numbers}]``."""
    check(matrix)
    if not isinstance(firmware_dir, str) or not firmware_dir.strip():
        raise InvalidValue("firmware_dir must be the directory that holds the images on the host "
                           "(gpufabric_firmware_dir), not %s" % kind_of(firmware_dir), parameter="firmware_dir")
    base = firmware_dir.strip().rstrip("/")
    out = []
    for psid, pinned in matrix["firmware"].items():
        out.append({
            "psid": psid,
            "version": pinned["version"].strip(),
            "path": "%s/%s" % (base, pinned["image"].strip()),
            "sha256": normal_sha256(pinned["sha256"]),
            "part_numbers": [str(p).strip() for p in pinned["part_numbers"]],
        })
    return out


def firmware_plan(devices: Any, matrix: Any, firmware_dir: Any) -> dict:
    """The firmware step of one host from its cards (mlx_info's ``devices``) and the matrix, decided before anything
    is burned: ``{targets, refused, burn, images, allow_downgrade, pending}``.

    ``targets``: ``firmware_targets``; ``refused``: the sentence that stops the host (``the matrix refuses N card(s),
    nothing was burned: ADDRESS: REASON; ...``) or None; ``burn``: the addresses of the cards to burn; ``images``:
    the images of their PSIDs under ``firmware_dir`` (the ``images`` of gpufabric.mlnx.mlx_firmware);
    ``allow_downgrade``: a card to burn is a downgrade the matrix allows; ``pending``: the cards whose pinned
    firmware is burned and waits for an activation.
    """
    targets = firmware_targets(devices, matrix)
    refused = [t for t in targets if t["action"] == REFUSED]
    burn = [t for t in targets if t["action"] == BURN]
    psids = {t["psid"].upper() for t in burn}
    return {
        "targets": targets,
        "refused": ("the matrix refuses %d card(s), nothing was burned: %s" % (
            len(refused), "; ".join("%s: %s" % (t["address"], t["reason"]) for t in refused))) if refused else None,
        "burn": [t["address"] for t in burn],
        "images": [im for im in firmware_images(matrix, firmware_dir) if im["psid"].upper() in psids] if burn else [],
        "allow_downgrade": any(t["downgrade"] for t in burn),
        "pending": [t["address"] for t in targets if t["action"] == PENDING],
    }


def firmware_summary(plan: dict) -> str:
    """The ``msg`` of a firmware step with nothing to burn: the cards at the pin and those waiting for an activation."""
    at_pin = [t["address"] for t in plan["targets"] if t["action"] == NONE]
    return "nothing to burn: %d card(s) at the pinned firmware%s" % (
        len(at_pin), ("; activation pending on %s" % ", ".join(plan["pending"])) if plan["pending"] else "")


def firmware_pending(plan: dict, burned: Sequence[dict] = ()) -> dict:
    """The firmware step's facts: the cards that wait for an activation - those a burn of this run left pending
    (``burned``: mlx_firmware's ``devices``; in check mode those that would be) and those already pending - once each,
    in that order."""
    pending = []
    for address in [d["device"] for d in burned if d.get("pending_reset")] + list(plan["pending"]):
        if address not in pending:
            pending.append(address)
    return {"gpufabric_firmware_pending_devices": pending, "gpufabric_firmware_pending_reset": bool(pending)}


# ---------------------------------------------------------------- one leaf x the pinned switch OS

UPGRADE = "upgrade"
BOOT = "boot"


def _release_key(text):
    try:
        return version_key(text)
    except ValueError:
        return None


def _partitions(image):
    """``(current, {partition: release})`` from nvue_info's ``image`` (``{current, next, partitions: {"1":
    {release, build_id}}, files}``); None or {} when the switch's image was not read."""
    if image is None:
        return None, {}
    if not isinstance(image, dict):
        raise InvalidValue("image must be the image the gpufabric.mlnx.nvue_info module returns ({current, next, "
                           "partitions, files}), not %s" % kind_of(image), parameter="image")
    parts = image.get("partitions")
    if parts is None:
        parts = {}
    if not isinstance(parts, dict):
        raise InvalidValue("image.partitions must be a mapping (partition -> {release, build_id}), not %s"
                           % kind_of(parts), parameter="image.partitions")
    out = {}
    for key, value in parts.items():
        release = value.get("release") if isinstance(value, dict) else None
        out[str(key)] = release.strip() if isinstance(release, str) and release.strip() else None
    current = image.get("current")
    return (str(current) if current is not None else None), out


def switch_image_url(pin: dict, base_url: Any = None) -> str | None:
    """Where the switch fetches the pinned image: the pin's ``url``, else ``base_url`` + ``/`` + image (None when
    neither is given). InvalidValue naming gpufabric_switch_image_base_url when it is not an http(s) URL."""
    if pin.get("url") is not None:
        return pin["url"].strip()
    if base_url is None or (isinstance(base_url, str) and not base_url.strip()):
        return None
    if not isinstance(base_url, str) or not SWITCH_BASE_URL_RE.fullmatch(base_url.strip()):
        raise InvalidValue("%s is %s, not a base URL (allowed: http:// or https://, a host, an optional port and a "
                           "path; the image name is appended)" % (BASE_URL_VARIABLE, quoted(base_url)),
                           parameter=BASE_URL_VARIABLE)
    return base_url.strip().rstrip("/") + "/" + pin["image"].strip()


def switch_os_target(running: Any, image: Any, matrix: Any, base_url: Any = None,
                     switch_os: str = "cumulus-linux") -> dict:
    """What the pinned switch OS means for one leaf: ``{action, release, running, reason, downgrade, image, url,
    sha256, allow_downgrade}``.

    ``running``: the running release (nvue_info ``system.release``); ``image``: nvue_info's ``image``
    (``partitions`` and ``current``, or None). ``action``: ``none`` (the pin runs), ``upgrade`` (fetch, install,
    boot-next, reboot), ``boot`` (the other partition already holds the pin: boot-next and reboot only) or
    ``refused`` (a downgrade without ``allow_downgrade``, naming both releases; an unreadable running release; no
    URL to fetch from). Without a pin for ``switch_os`` the action is ``none`` unless the running release is below
    ``compatibility.switch_os_min`` (then ``refused``: nothing to upgrade to). A matrix with problems is refused
    (MatrixError).
    """
    check(matrix)
    if switch_os not in SWITCH_OSES:
        raise InvalidValue("switch_os %s is not supported (supported: %s)"
                           % (quoted(switch_os), ", ".join(SWITCH_OSES)), parameter="switch_os")
    have = running.strip() if isinstance(running, str) and running.strip() else None
    current, partitions = _partitions(image)
    where = path_of("switch_os", switch_os)
    pin = (matrix.get("switch_os") or {}).get(switch_os)
    out = {"action": REFUSED, "release": None, "running": have, "reason": None, "downgrade": False, "image": None,
           "url": None, "sha256": None, "allow_downgrade": False}
    have_key = _release_key(have) if have else None
    if pin is None:
        minimum = ((matrix.get("compatibility") or {}).get("switch_os_min") or {}).get(switch_os)
        min_key = _release_key(minimum.strip()) if isinstance(minimum, str) else None
        if min_key is not None and (have_key is None or have_key < min_key):
            out["reason"] = "%s runs %s, below %s %s, and %s pins no release to upgrade to" % (
                switch_os, have or "an unreadable release", path_of("compatibility", "switch_os_min", switch_os),
                minimum.strip(), path_of("switch_os"))
        else:
            out["action"] = NONE
            out["reason"] = "%s pins no %s release" % (path_of("switch_os"), switch_os)
        return out
    release = pin["release"].strip()
    allow = pin.get("allow_downgrade") is True
    out.update(release=release, image=pin["image"].strip(), sha256=normal_sha256(pin["sha256"]),
               allow_downgrade=allow)
    if have_key is None:
        out["reason"] = "the running release is unreadable (%s); the pin is %s" % (kind_of(running), release)
        return out
    want = version_key(release)
    if have_key == want:
        out["action"] = NONE
        out["reason"] = "runs the pinned %s" % release
        return out
    if have_key > want:
        out["downgrade"] = True
        if not allow:
            out["reason"] = "downgrade from %s to %s refused: the switch runs a newer release than the pin; set " \
                            "%s.allow_downgrade: true to allow it" % (have, release, where)
            return out
    other = [p for p, r in sorted(partitions.items()) if p != current and r is not None and _release_key(r) == want]
    if other:
        out["action"] = BOOT
        out["reason"] = "%s -> %s: partition %s already holds %s (boot-next and one reboot, no fetch)" % (
            have, release, other[0], release)
        return out
    url = switch_image_url(pin, base_url)
    if url is None:
        out["reason"] = "%s -> %s needs the image, but there is no URL: set %s.url or %s" % (
            have, release, where, BASE_URL_VARIABLE)
        return out
    out["url"] = url
    out["action"] = UPGRADE
    out["reason"] = "%s %s -> %s" % ("downgrade, allowed by %s.allow_downgrade:" % where if out["downgrade"]
                                     else "upgrade", have, release)
    return out
