# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pull mode: a server applies its own configuration with ansible-pull (docs/gitops.md, "ansible-pull").

- ``STEPS``: every step of playbooks/site.yml and what pull mode does with it - ``runs`` on the server itself,
  or ``central`` (it needs the controller or the whole cluster: skipped with a message, refused when the
  inventory switches it on explicitly). docs/gitops.md's table is this one (a test keeps them the same).
- ``pull_steps(host, host_vars)``: for one server, the sentences of the steps refused and skipped.
- ``mirror_downloads(...)`` / ``mirror_url(...)``: where a firmware image or the driver bundle is fetched
  from an HTTP mirror, checked by a strict grammar, with the sha256 the matrix pins.
- ``pull_units(params)``: the systemd service and timer that run ansible-pull under ``flock -n``, every
  value checked by a strict grammar and quoted by systemd's rules.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._matrix import (
    SWITCH_BASE_URL_RE, firmware_images, path_of)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of, quoted

RUNS = "runs"
CENTRAL = "central"

# ---------------------------------------------------------------- the steps of site.yml in pull mode

# (step, the switch that asks for it, runs | central, what it is, where it runs instead and why)
STEPS = (
    ("variables", None, CENTRAL, "the check of the playbook's variables",
     "the rollout's play settings (batches, the batch gate) mean nothing for one server"),
    ("preflight", "gpufabric_preflight_enabled", CENTRAL, "the cluster-wide preflight",
     "on the controller before a rollout (playbooks/site.yml), and playbooks/check_inventory.yml in the pull request: "
     "it checks every host at once and the firmware images on the controller; in pull mode each step still refuses "
     "its own bad input before it changes anything"),
    ("plan", None, CENTRAL, "the rollout's plan (batches)", "one server is one batch"),
    ("leaf", "gpufabric_leaf_enabled", CENTRAL, "the leaf switches (switch OS, configuration)",
     "playbooks/site.yml on the controller, switch-first: a batch's leaves before its servers"),
    ("leaf_ready", "gpufabric_leaf_ready_enabled", CENTRAL, "the leaf gate",
     "playbooks/site.yml on the controller: it reads the leaves with their connection and credentials"),
    ("bios", "gpufabric_platform_bios_enabled", CENTRAL, "BIOS over Redfish",
     "playbooks/site.yml on the controller: it needs the BMC credentials (Ansible Vault), which stay there"),
    ("platform", "gpufabric_platform_enabled", RUNS, "kernel parameters, power policy and PCIe links",
     "the platform role without its BIOS part"),
    ("ofed", "gpufabric_ofed_enabled", RUNS, "the pinned driver",
     "from the matrix's apt or dnf repository, or its tarball fetched from gpufabric_ofed_mirror (sha256)"),
    ("firmware", "gpufabric_firmware_enabled", RUNS, "the pinned firmware",
     "images fetched from gpufabric_firmware_mirror and verified by sha256 (or already on the host: "
     "gpufabric_firmware_copy false); never from a controller"),
    ("nic_config", "gpufabric_nic_config_enabled", RUNS, "the NV profiles", "mlxconfig on the host"),
    ("activate", "gpufabric_activate_enabled", RUNS, "ONE activation",
     "a firmware reset; a reboot is not done by ansible-pull (it runs on the host it would reboot): the host ends "
     "pending activation, named"),
    ("rails", "gpufabric_rails_enabled", RUNS, "the rails", "the rail plan computed from the site repository's inventory"),
    ("roce_qos", "gpufabric_roce_qos_enabled", RUNS, "RoCE QoS", "on the host's compute rails"),
    ("validate", "gpufabric_validate_enabled", CENTRAL, "the validation gate",
     "playbooks/site.yml or playbooks/validate.yml on the controller: it needs peers (perftest and NCCL between servers)"),
    ("gate", None, CENTRAL, "the batch gate, the rollout report and the held servers",
     "playbooks/site.yml on the controller: they count a batch of servers"),
    ("report", "gpufabric_report_enabled", CENTRAL, "the inventory report",
     "playbooks/inventory_report.yml on the controller: one table of every server"),
)
# the switch of a central step that is on by default in site.yml (skipped in pull mode unless set explicitly)
FIRMWARE_COPY = "gpufabric_firmware_copy"
FIRMWARE_MIRROR = "gpufabric_firmware_mirror"
BMC_ADDRESS = "gpufabric_platform_bmc_address"


def _on(value: Any, name: str, host: str) -> bool:
    try:
        return boolean(value, strict=True)
    except TypeError:
        raise InvalidValue("%s: %s is %s, not a boolean (allowed: true or false)" % (host, name, kind_of(value)),
                           device=host, parameter=name, allowed=["true", "false"]) from None


def _set(host_vars: Any, name: str) -> bool:
    return name in host_vars and host_vars[name] is not None


def pull_steps(host: Any, host_vars: Any) -> dict:
    """``{"refused": [sentence], "skipped": [sentence]}`` for the server ``host`` whose variables (inventory and
    extra vars: not the roles' defaults) are ``host_vars``.

    A central step is refused when its switch is set true explicitly (the operator asked for it; pull mode cannot
    do it), else skipped with a sentence saying where it runs. The firmware step is refused when its images would
    come from a controller (``gpufabric_firmware_copy`` true, no ``gpufabric_firmware_mirror``)."""
    if not isinstance(host, str) or not host:
        raise InvalidValue("pull_steps: the host must be its inventory name, not %s" % kind_of(host), parameter="host")
    if not hasattr(host_vars, "__contains__") or not hasattr(host_vars, "__getitem__"):
        raise InvalidValue("pull_steps: the host's variables must be a mapping (hostvars[inventory_hostname]), not %s"
                           % kind_of(host_vars), parameter="host_vars")
    refused, skipped = [], []
    for step, switch, mode, what, where in STEPS:
        if mode != CENTRAL:
            continue
        if switch and _set(host_vars, switch) and _on(host_vars[switch], switch, host):
            refused.append("%s: %s is true, but %s (step %s) does not run in pull mode: it runs centrally - %s. Set it "
                           "false for this server or run it from the controller" % (host, switch, what, step, where))
        elif step == "bios" and not _set(host_vars, switch) and str(host_vars[BMC_ADDRESS] if _set(
                host_vars, BMC_ADDRESS) else "").strip():
            skipped.append("%s: %s (step %s) skipped in pull mode although %s is set: it runs centrally - %s"
                           % (host, what, step, BMC_ADDRESS, where))
        else:
            skipped.append("%s: %s (step %s) skipped in pull mode: it runs centrally - %s" % (host, what, step, where))
    firmware_on = not _set(host_vars, "gpufabric_firmware_enabled") or _on(
        host_vars["gpufabric_firmware_enabled"], "gpufabric_firmware_enabled", host)
    copy = not _set(host_vars, FIRMWARE_COPY) or _on(host_vars[FIRMWARE_COPY], FIRMWARE_COPY, host)
    mirror = str(host_vars[FIRMWARE_MIRROR]).strip() if _set(host_vars, FIRMWARE_MIRROR) else ""
    if firmware_on and copy and not mirror:
        refused.append("%s: the firmware step would take its images from a controller (%s true, %s empty), and pull "
                       "mode has none: set %s (the http(s) base URL of the images) or %s false (the images are in "
                       "gpufabric_firmware_dir on the host), or gpufabric_firmware_enabled false"
                       % (host, FIRMWARE_COPY, FIRMWARE_MIRROR, FIRMWARE_MIRROR, FIRMWARE_COPY))
    return {"refused": refused, "skipped": skipped}


# ---------------------------------------------------------------- the HTTP mirror

MIRROR_ALLOWED = ("an http:// or https:// base URL: a host name or [IPv6 address], an optional port and a path of "
                  "ASCII letters, digits and . _ ~ % + - (no spaces, quotes, query, fragment or credentials)")
# A file name as it is appended to the mirror's URL (an image, a driver bundle).
FILE_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,200}", re.ASCII)


def _base(url: Any, parameter: str, host: str | None) -> str:
    if isinstance(url, str) and SWITCH_BASE_URL_RE.fullmatch(url):
        return url.rstrip("/")
    raise InvalidValue("%s%s is %s: allowed is %s" % ("%s: " % host if host else "", parameter, quoted(url),
                                                      MIRROR_ALLOWED), device=host, parameter=parameter,
                       allowed=MIRROR_ALLOWED)


def _file_name(name: Any, where: str, host: str | None) -> str:
    if isinstance(name, str) and FILE_NAME_RE.fullmatch(name):
        return name
    raise InvalidValue("%s%s is %s: a file fetched from a mirror must be named by ASCII letters, digits and . _ + - "
                       "(starting with a letter or digit)" % ("%s: " % host if host else "", where, quoted(name)),
                       device=host, parameter=where)


def mirror_url(base: Any, name: Any, parameter: str, where: str = "the file", host: str | None = None) -> str:
    """``base`` + ``/`` + the file name ``name`` (a path: its last segment), each checked by a strict grammar;
    InvalidValue naming the host, ``parameter`` (the base's variable) or ``where`` (the name's) otherwise."""
    root = _base(base, parameter, host)
    file_name = posixpath.basename(name) if isinstance(name, str) else name
    return "%s/%s" % (root, _file_name(file_name, where, host))


def mirror_downloads(psids: Any, matrix: Any, mirror: Any, firmware_dir: Any, host: str | None = None) -> list[dict]:
    """The images of the PSIDs ``psids`` to fetch from the mirror: ``[{psid, image, url, dest, sha256, pin}]`` (``pin``
    the matrix path of the sha256), in the matrix's order; the matrix is checked first (every problem at once)."""
    if not isinstance(psids, list):
        raise InvalidValue("mirror_downloads: psids must be a list of PSIDs, not %s" % kind_of(psids), parameter="psids")
    base = _base(mirror, FIRMWARE_MIRROR, host)
    wanted = {str(p).strip().upper() for p in psids}
    out = []
    for image in firmware_images(matrix, firmware_dir):
        if image["psid"].upper() not in wanted:
            continue
        name = posixpath.basename(image["path"])
        _file_name(name, path_of("firmware", image["psid"], "image"), host)
        out.append({"psid": image["psid"], "image": name, "url": "%s/%s" % (base, name), "dest": image["path"],
                    "sha256": image["sha256"], "pin": path_of("firmware", image["psid"], "sha256")})
    return out


# ansible.builtin.get_url's message when the file that arrived has another checksum: "The checksum for <dest> did not
# match <expected>; it was <actual>."
GET_URL_MISMATCH_RE = re.compile(r"did not match [0-9a-f]{64}; it was ([0-9a-f]{64})", re.ASCII)


def mirror_fetch_problem(result: Any, what: str, url: str, pin: str, sha256: str) -> str:
    """Why a get_url of ``what`` from ``url`` failed, as one sentence: the sha256 that arrived against the matrix's
    (``pin``: its path in the matrix; the file was not kept), or get_url's own message."""
    msg = result.get("msg") if isinstance(result, Mapping) else None
    msg = msg if isinstance(msg, str) and msg else "not fetched"
    found = GET_URL_MISMATCH_RE.search(msg)
    if found:
        return "%s from %s: sha256 %s received, but %s is %s (not kept)" % (what, url, found.group(1), pin, sha256)
    return "%s from %s: %s" % (what, url, msg)


# ---------------------------------------------------------------- the timer

UNIT = "gpufabric-pull"
# ansible-pull's -U: https/http/ssh/git/file URLs (no credentials but an ssh user, no spaces or quotes) or scp-like.
REPO_URL_RE = re.compile(
    r"(?:(?:https?|ssh|git)://(?:[A-Za-z0-9._-]{1,64}@)?(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?"
    r"|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?|file://|[A-Za-z0-9._-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}"
    r"[A-Za-z0-9])?:)(?:/?[A-Za-z0-9._~%+-]+)*/?", re.ASCII)
# A branch or tag: git's ref grammar, narrowed (no "..", no leading "-" or "/", no ".lock" or "/" at the end).
REF_RE = re.compile(r"(?!.*\.\.)(?!.*\.lock\Z)[A-Za-z0-9_][A-Za-z0-9._/+-]{0,199}(?<!/)", re.ASCII)
ABS_PATH_RE = re.compile(r"/(?:[A-Za-z0-9_.+-]+/?)*", re.ASCII)
REL_PATH_RE = re.compile(r"(?!\.\.?(?:/|\Z))(?!.*/\.\.?(?:/|\Z))[A-Za-z0-9_][A-Za-z0-9_.+/-]{0,200}", re.ASCII)
HOST_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}", re.ASCII)
# systemd.time(7): a calendar event (Mon..Fri *-*-* 03:00, hourly) and a time span (900, 15min, 1h 30min).
CALENDAR_RE = re.compile(r"[A-Za-z0-9*/~,:.-]+(?: [A-Za-z0-9*/~,:.-]+){0,5}", re.ASCII)
TIMESPAN_RE = re.compile(r"\d{1,9}(?:us|ms|s|sec|min|m|h|hr|d|w)?(?: \d{1,9}(?:us|ms|s|sec|min|m|h|hr|d|w)?){0,5}",
                         re.ASCII)

UNIT_PARAMETERS = {
    # parameter: (grammar, allowed, required)
    "command": (ABS_PATH_RE, "the absolute path of ansible-pull (ASCII letters, digits, _ . + - /)", True),
    "flock": (ABS_PATH_RE, "the absolute path of flock (util-linux)", True),
    "lock": (ABS_PATH_RE, "the absolute path of the lock file", True),
    "url": (REPO_URL_RE, "the site repository's URL for git: https://, http://, ssh://, git:// or file:// (an ssh "
                         "user but no password), or user@host:path; no spaces, quotes, query or fragment", True),
    "ref": (REF_RE, "a branch or tag name (ASCII letters, digits, . _ / + -; no '..', not ending in / or .lock)", True),
    "directory": (ABS_PATH_RE, "the absolute path of the checkout", True),
    "inventory": (REL_PATH_RE, "a path inside the checkout, relative (ASCII letters, digits, _ . + - /; no . or .. "
                               "segment)", True),
    "playbook": (REL_PATH_RE, "a playbook inside the checkout, relative (as the inventory)", True),
    "limit": (HOST_RE, "this server's inventory name (ASCII letters, digits, _ . -)", False),
    "vault_password_file": (ABS_PATH_RE, "the absolute path of the vault password file", False),
    "on_calendar": (CALENDAR_RE, "a systemd calendar event (systemd.time), e.g. *-*-* 03:00:00 or hourly", True),
    "randomized_delay": (TIMESPAN_RE, "a systemd time span, e.g. 900 or 15min", True),
}


def _value(params: dict, name: str, host: str | None) -> str | None:
    grammar, allowed, required = UNIT_PARAMETERS[name]
    value = params.get(name)
    if isinstance(value, int) and not isinstance(value, bool) and name == "randomized_delay":
        value = str(value)
    if value is None or value == "":
        if not required:
            return None
        raise InvalidValue("%sgpufabric_pull_%s is empty: allowed is %s" % ("%s: " % host if host else "", name, allowed),
                           device=host, parameter="gpufabric_pull_" + name, allowed=allowed)
    if isinstance(value, str) and grammar.fullmatch(value):
        return value
    raise InvalidValue("%sgpufabric_pull_%s is %s, which cannot be written into a systemd unit: allowed is %s" % (
        "%s: " % host if host else "", name, quoted(value), allowed), device=host, parameter="gpufabric_pull_" + name,
        allowed=allowed)


def systemd_word(text: str) -> str:
    """One word of an Exec line, quoted by systemd's rules (systemd.service, "Command lines"; systemd.unit,
    "Specifiers"): in double quotes, a backslash and a quote escaped with a backslash, ``%`` doubled (specifiers are
    expanded inside quotes too) and ``$`` doubled (no variable is substituted)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return '"%s"' % escaped


def pull_argv(params: dict, host: str | None = None) -> list[str]:
    """The service's command: ``flock -n LOCK ansible-pull -U URL -C REF --only-if-changed -d DIR -i DIR/INVENTORY
    [-l LIMIT] [--vault-password-file FILE] PLAYBOOK``, every value checked (InvalidValue naming it)."""
    if not isinstance(params, dict):
        raise InvalidValue("pull_units: the parameters must be a mapping, not %s" % kind_of(params), parameter="params")
    unknown = sorted(set(params) - set(UNIT_PARAMETERS))
    if unknown:
        raise InvalidValue("pull_units: unknown parameter(s) %s (allowed: %s)" % (", ".join(unknown), ", ".join(
            UNIT_PARAMETERS)), parameter=unknown[0], allowed=list(UNIT_PARAMETERS))
    v = {name: _value(params, name, host) for name in UNIT_PARAMETERS}
    directory = v["directory"].rstrip("/") or "/"
    argv = [v["flock"], "-n", v["lock"], v["command"], "-U", v["url"], "-C", v["ref"], "--only-if-changed",
            "-d", directory, "-i", posixpath.join(directory, v["inventory"])]
    if v["limit"]:
        argv += ["-l", v["limit"]]
    if v["vault_password_file"]:
        argv += ["--vault-password-file", v["vault_password_file"]]
    return argv + [v["playbook"]]


def pull_units(params: dict, host: str | None = None) -> dict:
    """``{"gpufabric-pull.service": text, "gpufabric-pull.timer": text}`` for ``params`` (the ``UNIT_PARAMETERS``)."""
    argv = pull_argv(params, host)
    calendar = _value(params, "on_calendar", host)
    delay = _value(params, "randomized_delay", host)
    head = "# Written by gpufabric.mlnx (role pull, tasks_from timer): docs/gitops.md, \"ansible-pull\".\n"
    service = (head + "[Unit]\n"
               "Description=gpufabric.mlnx: apply this server's configuration from its Git repository (ansible-pull)\n"
               "Wants=network-online.target\nAfter=network-online.target\n\n"
               "[Service]\nType=oneshot\n"
               "ExecStart=%s\n" % " ".join(systemd_word(word) for word in argv))
    timer = (head + "[Unit]\nDescription=gpufabric.mlnx: run %s.service (ansible-pull) on a schedule\n\n"
             "[Timer]\nOnCalendar=%s\nRandomizedDelaySec=%s\nPersistent=true\n\n"
             "[Install]\nWantedBy=timers.target\n" % (UNIT, calendar, delay))
    return {UNIT + ".service": service, UNIT + ".timer": timer}
