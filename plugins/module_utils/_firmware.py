# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pinned firmware per PSID, burned with flint / mstflint in parallel.

Per device: ONE ``flint -d DEV q`` (PSID, burned ``FW Version``, running
``FW Version(Running)``), a pure ``decide()`` against the image listed for that PSID (burn,
none, skipped; downgrade and PSID change refused unless allowed), then ONE
``flint -d DEV -i IMAGE -y burn`` per device that needs it, all devices at once, and a re-query
proving the flash now holds the target version.

Nothing is burned until every device has been read and decided and every image that will be
burned has been verified once: its sha256 (computed here, streamed) and the PSID and version
``flint -i IMAGE q`` reads from the file itself must equal what the task says.

mlxfwmanager would do the same per host but burns devices one after another; eight ConnectX-7
on a GPU server take eight times as long that way, so this module runs one flint per device.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Mapping, Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._devices import (
    PART_NUMBER_ALLOWED,
    base_part_number,
    card_of,
    check_part_numbers,
    is_pci,
)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import (
    InvalidParameter,
    InvalidValue,
    MlnxError,
    Refused,
    ToolFailed,
)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Result, parallel, plan_all
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of, quoted
from ansible_collections.gpufabric.mlnx.plugins.module_utils._versions import (
    FIRMWARE_PIN_RE,
    FIRMWARE_VERSION_RE,
    version_key,
)

SHA256_RE = re.compile(r"^[0-9a-f]{64}\Z", re.ASCII)
# A firmware image file: a path ending in .bin (what flint -i burns), no NUL, not a directory (a trailing /).
IMAGE_PATH_RE = re.compile(r"[^\x00]*[^/\x00]\.[bB][iI][nN]", re.ASCII)
# A vendor prefix and digits, as flint prints "PSID": MT_0000000838 (NVIDIA), DEL0000000027 (Dell), HPE0000000058.
PSID_RE = re.compile(r"^[A-Z]{2,4}_?\d{4,13}\Z", re.ASCII)
PSID_MAX = 16
PSID_ALLOWED = ("a vendor prefix and digits as `flint q` prints it, at most %d characters, e.g. MT_0000000838, "
                "DEL0000000027" % PSID_MAX)
# NVIDIA ordering part numbers (adapters, DPUs, cables): never a PSID, even when one would match PSID_RE (MCX7531).
PART_NUMBER_HINT_RE = re.compile(r"^(?:MCX|MBF|MCP|MFS|MMA|MQM|MSN|900-|699-)", re.IGNORECASE | re.ASCII)
CHUNK = 1024 * 1024

BURN = "burn"
NONE = "none"
SKIPPED = "skipped"


# ---------------------------------------------------------------- input

def psid_problem(psid: object) -> str | None:
    """Why ``psid`` is not a PSID as flint prints it (None when it is one). A part number is named as one: an image
    keyed by a part number would match no card and silently never be burned."""
    if not isinstance(psid, str):
        return "a PSID must be a string like MT_0000000838, not %s" % kind_of(psid)
    if PART_NUMBER_HINT_RE.match(psid.strip()):
        hint = ("; this looks like a part number: firmware is keyed by PSID (`flint -d DEVICE q` prints it as "
                "PSID, e.g. MT_0000000838) and the part numbers go in its part_numbers")
    elif PSID_RE.match(psid) and len(psid) <= PSID_MAX:
        return None
    else:
        fixed = psid.strip().upper()
        hint = "; write it as flint prints it: %s" % fixed if PSID_RE.match(fixed) and len(fixed) <= PSID_MAX else ""
    return "%s is not a PSID (allowed: %s)%s" % (quoted(psid, limit=None), PSID_ALLOWED, hint)


def _psid(value):
    return str(value).strip().upper()


def _image_psid(value, where):
    """The PSID of an image entry, upper-cased; InvalidValue naming ``where`` for anything that is not one."""
    psid = str(value).strip().upper() if isinstance(value, str) else value
    why = psid_problem(psid)
    if why:
        raise InvalidValue("%s: %s" % (where, why), parameter=where, allowed=PSID_ALLOWED)
    return psid


def normalize_images(images: Sequence[object] | None) -> list[dict]:
    """Validate the ``images`` option once; returns entries with normalised keys.

    Each entry gets ``index`` (its place in the list, for messages), ``psid`` and
    ``from_psids`` upper-cased, ``sha256`` lower-case hex, ``part_numbers`` without the ``_Ax``
    revision suffix. Raises InvalidValue / InvalidParameter naming ``images[i].key``.
    """
    if not images:
        raise InvalidParameter("images must list at least one image (psid, version, path, sha256)",
                               parameter="images")
    out = []
    for index, raw in enumerate(images):
        where = "images[%d]" % index
        if not isinstance(raw, dict):
            raise InvalidValue("%s must be a dict with psid, version, path and sha256, not %r" % (where, raw),
                               parameter=where)
        for key in ("psid", "version", "path", "sha256"):
            if raw.get(key) in (None, ""):
                raise InvalidParameter("%s.%s is required" % (where, key), parameter="%s.%s" % (where, key),
                                       allowed=["psid", "version", "path", "sha256", "part_numbers", "from_psids", "copy_from"])
        version = str(raw["version"]).strip()
        if isinstance(raw["version"], (bool, float)) or not FIRMWARE_PIN_RE.match(version):
            raise InvalidValue("%s.version %r is not a firmware version (allowed: three numbers separated by dots, "
                               "for example 28.43.1014)" % (where, raw["version"]),
                               parameter=where + ".version", allowed=["N.N.NNNN"])
        path = raw["path"]
        if not isinstance(path, str) or not IMAGE_PATH_RE.fullmatch(path):
            raise InvalidValue("%s.path %r is not a firmware image: a .bin file (flint -i burns one; a .zip as NVIDIA "
                               "serves it is unzipped first, a directory is not an image)" % (where, path),
                               parameter=where + ".path", allowed=["a path ending in .bin"])
        numbers = raw.get("part_numbers") or []
        if not isinstance(numbers, list):
            raise InvalidValue("%s.part_numbers must be a list of part numbers, not %s" % (where, kind_of(numbers)),
                               parameter=where + ".part_numbers", allowed=PART_NUMBER_ALLOWED)
        check_part_numbers(numbers, where + ".part_numbers")
        digest = str(raw["sha256"]).strip().lower()
        if digest.startswith("sha256:"):
            digest = digest[len("sha256:"):]
        if not SHA256_RE.match(digest):
            raise InvalidValue("%s.sha256 must be 64 hexadecimal digits (optionally prefixed sha256:), not %r"
                               % (where, raw["sha256"]), parameter=where + ".sha256", allowed=["64 hex digits"])
        psid = _image_psid(raw["psid"], where + ".psid")
        from_psids = []
        olds = raw.get("from_psids") or []
        if not isinstance(olds, list):
            raise InvalidValue("%s.from_psids must be a list of PSIDs, not %s" % (where, kind_of(olds)),
                               parameter=where + ".from_psids", allowed=PSID_ALLOWED)
        for number, other in enumerate(olds):
            other = _image_psid(other, "%s.from_psids[%d]" % (where, number))
            if other != psid and other not in from_psids:
                from_psids.append(other)
        out.append({
            "index": index,
            "psid": psid,
            "version": version,
            "path": str(raw["path"]),
            "sha256": digest,
            "part_numbers": [base_part_number(p) for p in numbers],
            "from_psids": from_psids,
        })
    _check_overlaps(out)
    return out


def _check_overlaps(images):
    """Two entries that could both apply to one device make the choice a guess: refuse."""
    for i, first in enumerate(images):
        for second in images[i + 1:]:
            shared = set([first["psid"]] + first["from_psids"]) & set([second["psid"]] + second["from_psids"])
            if not shared:
                continue
            parts_a, parts_b = set(first["part_numbers"]), set(second["part_numbers"])
            if parts_a and parts_b and not parts_a & parts_b:
                continue  # same PSID, different boards: part numbers decide
            raise InvalidParameter(
                "images[%d] and images[%d] both apply to devices with PSID %s; give each PSID one image, "
                "or disjoint part_numbers" % (first["index"], second["index"], ", ".join(sorted(shared))),
                parameter="images", allowed=[first["psid"], second["psid"]])


def covered_psids(images: Sequence[Mapping]) -> list[str]:
    """Every device PSID some image applies to (its own PSID and its from_psids)."""
    out = []
    for image in images:
        for psid in [image["psid"]] + image["from_psids"]:
            if psid not in out:
                out.append(psid)
    return out


def one_per_card(devices: Sequence[str]) -> list[str]:
    """Both functions of a card share one flash: keep the first address named for each card."""
    seen, out = set(), []
    for dev in devices:
        key = card_of(dev) if is_pci(dev) else dev
        if key not in seen:
            seen.add(key)
            out.append(dev)
    return out


# ---------------------------------------------------------------- argv

def query_args(device: str) -> list[str]:
    """``-d DEV q``: the device's PSID and burned/running versions."""
    return ["-d", device, "q"]


def image_query_args(path: str) -> list[str]:
    """``-i FILE q``: the PSID and version an image file holds."""
    return ["-i", path, "q"]


def burn_args(device: str, path: str, *, allow_psid_change: bool = False) -> list[str]:
    """flint takes every option before the command word: ``-d DEV -i IMAGE -y [--allow_psid_change] burn``."""
    return ["-d", device, "-i", path, "-y"] + (["--allow_psid_change"] if allow_psid_change else []) + ["burn"]


# ---------------------------------------------------------------- reading

def parse_query(what: str, result: Result, *, device: str | None = None) -> dict:
    """``parse('flint', ...)`` of a query's output; unreadable output names ``what`` and the command."""
    try:
        return parse("flint", result.stdout)
    except ValueError as err:  # ParseError: not a flint query at all
        raise MlnxError("%s: %s printed no flint query output: %s" % (what, " ".join(result.cmd), err),
                        device=device, cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr)


def state_from_query(device: str, info: Mapping) -> dict:
    """``parse('flint', ...)`` of a device -> ``{psid, part_number, burned, running}``."""
    psid = (info.get("psid") or "").strip()
    burned = (info.get("fw_version") or "").strip()
    if not psid or not FIRMWARE_VERSION_RE.match(burned):
        errors = "; ".join(info.get("errors") or [])
        raise MlnxError("%s: flint query printed no usable PSID / FW Version (PSID %r, FW Version %r)%s"
                        % (device, psid or None, burned or None, (": " + errors) if errors else ""),
                        device=device)
    running = (info.get("fw_version_running") or "").strip() or burned
    part = (info.get("part_number") or "").strip() or None
    return {"psid": psid, "part_number": part, "burned": burned, "running": running}


def read_device(runner: Runner, device: str) -> dict:
    """ONE ``flint -d DEV q`` -> ``state_from_query``; a failing tool raises naming the device."""
    try:
        result = runner.run("flint", query_args(device))
    except ToolFailed as err:
        raise err.__class__("%s: cannot read the firmware: %s" % (device, err.msg), device=device, cmd=err.cmd,
                            rc=err.rc, stdout=err.stdout, stderr=err.stderr)
    return state_from_query(device, parse_query(device, result, device=device))


def sha256_file(path: str) -> str:
    """The sha256 of a file (hex), read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------- deciding

def _describe(image):
    return "images[%d] (PSID %s, version %s, %s)" % (image["index"], image["psid"], image["version"], image["path"])


def match_image(images: Sequence[dict], psid: str, part_number: str | None) -> tuple[dict | None, str | None]:
    """The image for a device: ``(image, None)`` or ``(None, reason it has none)``."""
    psid = _psid(psid)
    direct = [im for im in images if im["psid"] == psid]
    candidates = direct or [im for im in images if psid in im["from_psids"]]
    if not candidates:
        return None, "no image for PSID %s (the images cover %s)" % (psid, ", ".join(covered_psids(images)))
    part = base_part_number(part_number) or None
    for image in candidates:
        if not image["part_numbers"] or part in image["part_numbers"]:
            return image, None
    return None, "the image for PSID %s is only for part numbers %s; this device is %s" % (
        psid, ", ".join(sorted(set(p for im in candidates for p in im["part_numbers"]))),
        part_number or "of unknown part number")


def decide(device: str, state: Mapping, image: Mapping | None, *, allow_downgrade: bool = False,
           allow_psid_change: bool = False) -> dict:
    """Pure decision for one device: ``{action: burn|none|skipped, psid_change: bool}``.

    ``state``: ``{psid, burned, running, ...}`` as read. ``image``: the matched entry or None.
    Raises Refused for a downgrade or a PSID change the task does not allow.
    """
    if image is None:
        return {"action": SKIPPED, "psid_change": False}
    psid_change = _psid(state["psid"]) != image["psid"]
    if psid_change and not allow_psid_change:
        raise Refused("%s: the device has PSID %s and %s would change it to %s (cross-flash); set "
                      "allow_psid_change=true to allow that" % (device, state["psid"], _describe(image), image["psid"]),
                      device=device, parameter="allow_psid_change")
    burned, target = version_key(state["burned"]), version_key(image["version"])
    if burned == target and not psid_change:
        return {"action": NONE, "psid_change": False}
    if burned > target and not allow_downgrade:
        raise Refused("%s: the flash holds %s, newer than %s; a downgrade needs allow_downgrade=true"
                      % (device, state["burned"], _describe(image)),
                      device=device, parameter="allow_downgrade")
    return {"action": BURN, "psid_change": psid_change}


def image_problems(image: Mapping, digest: str, info: Mapping | None, *, path: str | None = None) -> list[str]:
    """Why a file is not the image the task describes (empty when it is). Pure.

    ``digest``: sha256 of the file. ``info``: ``parse('flint', ...)`` of ``flint -i FILE q``, or
    None when the checksum already failed and the file was not queried.
    """
    problems = []
    if digest != image["sha256"]:
        problems.append("sha256 of %s is %s, the task expects %s" % (path or image["path"], digest, image["sha256"]))
    if info is not None:
        psid = _psid(info.get("psid") or "")
        if psid != image["psid"]:
            problems.append("the file's PSID is %s, the task says %s" % (psid or "unreadable", image["psid"]))
        version = (info.get("fw_version") or "").strip()
        if not FIRMWARE_VERSION_RE.match(version) or version_key(version) != version_key(image["version"]):
            found = version or "unreadable"
            problems.append("the file's FW Version is %s, the task says %s" % (found, image["version"]))
    return problems


def verify_image(runner: Runner, image: Mapping, *, path: str | None = None, query: bool = True) -> dict:
    """Checksum, then (with ``query``) ``flint -i FILE q``: raises Refused unless the file (``path``, by default the
    image's own) is what the task says."""
    path = path or image["path"]
    if not os.path.isfile(path):
        raise Refused("%s: %s is not a file on this host" % (_describe(image), path),
                      parameter="images[%d].path" % image["index"])
    digest = sha256_file(path)
    problems = image_problems(image, digest, None, path=path)
    if not problems and query:
        try:
            result = runner.run("flint", image_query_args(path))
        except ToolFailed as err:
            raise Refused("%s: flint cannot read the image: %s" % (_describe(image), err.msg),
                          parameter="images[%d].path" % image["index"], cmd=err.cmd, rc=err.rc,
                          stdout=err.stdout, stderr=err.stderr)
        problems = image_problems(image, digest, parse_query(_describe(image), result), path=path)
    if problems:
        raise Refused("%s is refused: %s" % (_describe(image), "; ".join(problems)),
                      parameter="images[%d]" % image["index"])
    return {"sha256": digest}


def images_problems(runner: Runner, images: Sequence[dict]) -> list[str]:
    """Every image of ``images`` (from ``normalize_images``) checked as a burn checks it (``verify_image``: present,
    sha256, then the PSID and version ``flint -i FILE q`` reads from the file), every problem of every image listed
    at once and nothing raised for a bad image. Without flint/mstflint the files are still checked for presence and
    sha256, and one problem says which tool to install."""
    found = []
    try:
        runner.path("flint")
        tool = None
    except MlnxError as err:  # ToolNotFound: neither MFT nor mstflint
        tool = err.msg
    for image in images:
        try:
            verify_image(runner, image, query=tool is None)
        except MlnxError as err:
            found.append(err.msg)
    if tool is not None and images:
        found.append("the PSID and FW version inside the images cannot be read: %s; install NVIDIA MFT (flint) or "
                     "mstflint on this host" % tool)
    return found


def install(image: Mapping, source: str) -> bool:
    """Put a verified copy (``source``) at the image's path unless that file already has its sha256.

    The folder is created (0750) when missing; the file is written next to its place and renamed
    over it (0640), so a burn never reads a half-written image. Returns True when it wrote.
    """
    path = image["path"]
    if os.path.isfile(path) and sha256_file(path) == image["sha256"]:
        return False
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, mode=0o750, exist_ok=True)
    partial = path + ".gpufabric-partial"
    shutil.copyfile(source, partial)
    os.chmod(partial, 0o640)
    os.replace(partial, path)
    return True


# ---------------------------------------------------------------- the whole job

def _entry(device, state, image, decision, reason):
    entry = {
        "device": device,
        "psid": state["psid"],
        "image": image["path"] if image else None,
        "target_version": image["version"] if image else None,
        "before": {"burned": state["burned"], "running": state["running"]},
        "after": {"burned": state["burned"], "running": state["running"]},
        "changed": decision["action"] == BURN,
        "action": decision["action"],
        "pending_reset": state["running"] != state["burned"],
    }
    if state.get("part_number"):
        entry["part_number"] = state["part_number"]
    if reason:
        entry["reason"] = reason
    return entry


def converge(runner: Runner, devices: Sequence[str], images: Sequence[dict], *, check_mode: bool = False,
             allow_downgrade: bool = False, allow_psid_change: bool = False, require_image: bool = False,
             part_numbers: Mapping[str, str] | None = None, staged: Mapping[str, str] | None = None,
             installed: list[str] | None = None) -> list[tuple]:
    """Bring ``devices`` to the firmware in ``images`` (from ``normalize_images``).

    ``part_numbers``: ``{device: VPD part number}`` from discovery, used when flint prints none.
    ``staged``: ``{image path: a copy sent with the task}``; for an image to burn the copy is
    verified and, unless in check mode, put at the image's path (``install``); the paths written
    are appended to ``installed``.
    Phase 1 reads every device and decides (parallel); phase 2 verifies every image a device
    will be burned with, once each. Any refusal in either phase raises before anything is
    burned. Phase 3 burns and re-reads in parallel. Returns ``[(device, result, error)]``: a
    device whose burn failed carries the tool's words as error, the others finish.
    """
    part_numbers = part_numbers or {}

    def read_and_decide(device):
        state = read_device(runner, device)
        if not state["part_number"] and part_numbers.get(device):
            state["part_number"] = part_numbers[device]
        image, reason = match_image(images, state["psid"], state["part_number"])
        if image is None and require_image:
            raise Refused("%s: %s, and require_image is true" % (device, reason), device=device,
                          parameter="images", allowed=covered_psids(images))
        decision = decide(device, state, image, allow_downgrade=allow_downgrade, allow_psid_change=allow_psid_change)
        return state, image, decision, reason

    planned = plan_all(read_and_decide, devices)

    to_burn = []
    for _dev, (_state, image, decision, _reason) in planned:
        if decision["action"] == BURN and image not in to_burn:
            to_burn.append(image)

    staged = staged or {}

    def check(image):
        copy = staged.get(image["path"])
        if copy:
            verified = verify_image(runner, image, path=copy)
            if not check_mode and install(image, copy) and installed is not None:
                installed.append(image["path"])
            return verified
        # In check mode an image not yet staged on the host (a role copies it only for real)
        # cannot be verified here: it is reported, and verified before the real burn.
        if check_mode and not os.path.isfile(image["path"]):
            return None
        return verify_image(runner, image)

    verified = plan_all(check, to_burn)
    unstaged = [im["path"] for im, res in verified if res is None]

    def apply(item):
        device, (state, image, decision, reason) = item
        out = _entry(device, state, image, decision, reason)
        if decision["action"] != BURN:
            return out
        if decision["psid_change"]:
            out["psid_change"] = {"from": state["psid"], "to": image["psid"]}
        if check_mode:
            if image["path"] in unstaged:
                out["image_staged"] = False
            out["after"] = {"burned": image["version"], "running": state["running"]}
            out["pending_reset"] = state["running"] != image["version"]
            return out
        try:
            runner.run("flint", burn_args(device, image["path"], allow_psid_change=decision["psid_change"]))
        except ToolFailed as err:
            raise err.__class__("%s: burning %s -> %s failed: %s" % (device, state["burned"], image["version"],
                                                                     err.msg),
                                device=device, cmd=err.cmd, rc=err.rc, stdout=err.stdout, stderr=err.stderr)
        fresh = read_device(runner, device)
        out["after"] = {"burned": fresh["burned"], "running": fresh["running"]}
        out["pending_reset"] = fresh["running"] != fresh["burned"]
        if version_key(fresh["burned"]) != version_key(image["version"]) or _psid(fresh["psid"]) != image["psid"]:
            raise MlnxError("%s: %s reported success but the flash now holds %s (PSID %s), not %s (PSID %s)" % (
                device, runner.name("flint"), fresh["burned"], fresh["psid"], image["version"], image["psid"]),
                device=device)
        return out

    done = parallel(apply, planned)
    return [(item[0], result, error) for item, result, error in done]


def summary(results: Sequence[Mapping], *, check_mode: bool = False) -> str:
    """One line for the task output: what was (would be) burned, what is pending, what was skipped."""
    if not results:
        return "no device selected"
    parts = []
    burned = ["%s %s -> %s" % (r["device"], r["before"]["burned"], r["target_version"])
              for r in results if r["action"] == BURN]
    if burned:
        parts.append("%s %s" % ("would burn" if check_mode else "burned", ", ".join(burned)))
    else:
        parts.append("nothing to burn")
    pending = [r["device"] for r in results if r["pending_reset"]]
    if pending:
        parts.append("reset pending on %s" % ", ".join(pending))
    skipped = [r["device"] for r in results if r["action"] == SKIPPED]
    if skipped:
        parts.append("skipped (no image) %s" % ", ".join(skipped))
    return "; ".join(parts)
