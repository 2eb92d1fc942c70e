# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""BIOS attributes over Redfish: what to set on one server, from the wanted attribute sets per
server model ``gpufabric_platform_bios`` and what its BMC reports.

- ``plan(spec, host, model, current, ...)``: the wanted attributes of the host (its model's set, else
  the default, then the SR-IOV/IOMMU switches, then the host's overrides), the attributes to set
  (only those that differ from the current value and are not already pending with the wanted
  value), every attribute that will be pending after that, whether a reset is needed, a readable
  summary, and every problem at once. Pure; never raises, whatever the input.

A BIOS applies a setting at the next boot: ``current`` is GET Bios, ``pending`` is GET of its
``@Redfish.Settings`` SettingsObject (an iDRAC lists only the pending attributes there, an iLO every
attribute with its next-boot value: an attribute is pending when its value there differs from the
current one). ``registry`` is the BIOS attribute registry (DMTF AttributeRegistry, what
``community.general.redfish_info`` GetBiosRegistries returns as ``bios_registry``): with it, values
are checked against each attribute's type, allowed values, bounds and read-only flag before anything
is written; without it only names and types are checked here and the BMC checks the values.

How the BIOS applies pending settings depends on the vendor (``apply_of(manufacturer)``, the plan's
``apply``): ``reboot`` - the next boot applies them (HPE iLO, the AMI BMC of an NVIDIA DGX, most
others); ``job`` - a Dell iDRAC applies them at the next boot only when a BIOS configuration job is
scheduled (``community.general.idrac_redfish_command`` ``CreateBiosConfigJob``; community.general's
SetBiosAttributes asks a Dell for one with ``@Redfish.SettingsApplyTime``). ``jobs`` is the iDRAC's
job queue (its ``Jobs`` members): the plan says whether a job must be created (``create_job``) and
refuses to stage new values while one is scheduled (an iDRAC refuses them then: SYS011).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import (
    Problems, close_names, is_whole, join_path, kind_of, quoted, some, unknown_keys)

ROOT = "gpufabric_platform_bios"
OVERRIDES = "gpufabric_platform_bios_overrides"
SPEC_KEYS = ("models", "default")

# On/off switches set through whichever of these attributes the BIOS has (the first one present):
# (attribute, value for on, value for off). Vendors' names - tests/redfish/README.md says which are checked (the
# NVIDIA DGX H100's, AMI Aptio style, are not: the emulator's table).
SWITCHES = {
    "sriov": (("SriovGlobalEnable", "Enabled", "Disabled"),  # Dell iDRAC
              ("Sriov", "Enabled", "Disabled"),  # HPE iLO
              ("SRIOVSupport", "Enabled", "Disabled")),  # NVIDIA DGX H100 (AMI)
    "iommu": (("IntelProcVtd", "Enabled", "Disabled"),  # HPE iLO, Intel
              ("ProcAmdIoVt", "Enabled", "Disabled"),  # HPE iLO, AMD
              ("ProcVirtualization", "Enabled", "Disabled"),  # Dell iDRAC (VT-x and VT-d)
              ("IntelVTForDirectedIO", "Enabled", "Disabled")),  # NVIDIA DGX H100 (AMI)
}
SWITCH_VARS = {name: "gpufabric_platform_bios_" + name for name in SWITCHES}

SET = "set"
PENDING = "pending"
OK = "ok"

# How a vendor's BIOS applies pending settings: at the next boot (REBOOT), or at the next boot only when a BIOS
# configuration job is scheduled (JOB: a Dell iDRAC). By the system's Manufacturer ("Dell Inc.") or the service
# root's Vendor ("Dell"), as community.general tells a Dell.
APPLY_REBOOT = "reboot"
APPLY_JOB = "job"
_JOB_VENDOR_RE = re.compile(r"dell(?: inc\.?| emc)?", re.IGNORECASE | re.ASCII)
# An iDRAC BIOS configuration job (DellJob JobType) that the next boot runs, or runs now.
BIOS_JOB_TYPE = "BIOSConfiguration"
JOB_WAITING = ("Scheduled", "ScheduledWithErrors", "Running", "New", "Downloaded", "Waiting")

# Registry types (DMTF AttributeRegistry ``Type``) and the Python types a value of each may have.
_TYPES = {"Enumeration": (str,), "String": (str,), "Password": (str,), "Integer": (int,), "Boolean": (bool,)}
_SCALARS = (str, int, bool)
_YAML_BOOL_WORDS = ("On", "Off", "Yes", "No", "True", "False")


def _value_text(value):
    if isinstance(value, str):
        return quoted(value)
    return kind_of(value)


def _names(names):
    return some(sorted(str(name) for name in names), limit=8) or "none"


# ---------------------------------------------------------------- inputs

def _attribute_set(problems, path, value, what):
    """``{name: (value, path)}`` of a mapping of attribute names to values; bad entries become problems."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.add(path, "must be a mapping of BIOS attribute names to values (%s), not %s" % (what, kind_of(value)))
        return {}
    out = {}
    for name, attr_value in value.items():
        attr_path = join_path(path, name)
        if not isinstance(name, str) or not name.strip():
            problems.add(attr_path, "a BIOS attribute name must be a non-empty string, not %s" % _value_text(name))
        elif attr_value is None:
            problems.add(attr_path, "BIOS attribute %s has no value (null): give one, or leave the attribute out to "
                                    "keep the BIOS's value" % name)
        elif not isinstance(attr_value, _SCALARS):
            problems.add(attr_path, "BIOS attribute %s must be a string, a whole number or true/false, not %s"
                         % (name, kind_of(attr_value)))
        else:
            out[name] = (attr_value, attr_path)
    return out


def _model_set(problems, spec, model):
    """``(attributes, source)`` for ``model`` from the spec: its set, else the default, else a problem."""
    if not isinstance(spec, dict):
        problems.add(ROOT, "must be a mapping with `models` (server model -> BIOS attributes) and optionally "
                           "`default`, not %s" % kind_of(spec))
        return {}, None
    unknown_keys(problems, spec, ROOT, SPEC_KEYS)
    models = spec.get("models")
    if models is None:
        models = {}
    elif not isinstance(models, dict):
        problems.add(join_path(ROOT, "models"), "must be a mapping of server models (as the BMC reports the system's "
                                                "Model, e.g. PowerEdge XE9680) to BIOS attributes, not %s"
                     % kind_of(models))
        models = {}
    if not isinstance(model, str) or not model.strip():
        problems.add("Model", "the BMC reports no Model for the system (%s), so no attribute set can be chosen"
                     % _value_text(model))
        return {}, None
    if model in models:
        path = join_path(ROOT, "models", model)
        return _attribute_set(problems, path, models[model], "the BIOS attributes of %s servers" % model), path
    if spec.get("default") is not None:
        path = join_path(ROOT, "default")
        return _attribute_set(problems, path, spec["default"], "the BIOS attributes of other models"), path
    known = [name for name in models if isinstance(name, str)]
    guess = close_names(model, known, fuzzy=False)  # PowerEdge R760 is not a misspelt PowerEdge R750
    problems.add(join_path(ROOT, "models", model),
                 "model %s has no BIOS attribute set and there is no %s.default%s (models with a set: %s)" % (
                     quoted(model), ROOT, "; did you mean %s?" % quoted(guess[0]) if guess else "", _names(known)))
    return {}, None


def _registry_table(registry):
    """``{attribute name: registry entry}`` of a DMTF AttributeRegistry; {} when there is none or it is unusable."""
    if not isinstance(registry, dict):
        return {}
    entries = registry.get("RegistryEntries")
    attributes = entries.get("Attributes") if isinstance(entries, dict) else None
    if not isinstance(attributes, list):
        return {}
    return {entry["AttributeName"]: entry for entry in attributes
            if isinstance(entry, dict) and isinstance(entry.get("AttributeName"), str)}


def _allowed_values(entry):
    values = entry.get("Value")
    if not isinstance(values, list):
        return None
    names = [value.get("ValueName") for value in values if isinstance(value, dict)]
    return [name for name in names if isinstance(name, str)] or None


def _type_hint(value, kind):
    if isinstance(value, bool) and kind in ("Enumeration", "String", "Password"):
        words = "/".join(_YAML_BOOL_WORDS)
        return "; YAML reads an unquoted %s as true or false: quote the value" % words
    if isinstance(value, str) and kind == "Integer" and value.strip().lstrip("-").isdigit():
        return "; write the number without quotes"
    if is_whole(value) and kind in ("Enumeration", "String", "Password"):
        return "; quote it"
    return ""


def _kind_of_current(value):
    """The registry type a current value stands for (a BMC without a registry): None when it tells nothing."""
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int):
        return "Integer"
    if isinstance(value, str):
        return "String"
    return None


def _check_value(problems, name, value, path, entry, current_value, model):
    """Add the problems of ``value`` for attribute ``name``; True when it may be written."""
    if entry is not None and entry.get("ReadOnly") is True:
        problems.add(path, "BIOS attribute %s is read-only on this BIOS (%s): leave it out" % (name, model))
        return False
    registered = entry.get("Type") if entry is not None else None
    if entry is not None and "Type" in entry and not (isinstance(registered, str) and registered in _TYPES):
        # fail closed: a registry that names a type the collection does not know (or not as text) cannot check it
        problems.add(path, "BIOS attribute %s has Type %s in this BIOS's attribute registry (%s): not one of %s, so "
                           "the value cannot be checked against it" % (name, _value_text(registered), model,
                                                                       ", ".join(sorted(_TYPES))))
        return False
    kind = registered if isinstance(registered, str) and registered in _TYPES else _kind_of_current(current_value)
    types = _TYPES.get(kind)
    if types and (not isinstance(value, types) or (bool not in types and isinstance(value, bool))):
        problems.add(path, "BIOS attribute %s is of type %s on this BIOS (%s), not %s%s" % (
            name, kind, model, kind_of(value), _type_hint(value, kind)))
        return False
    if entry is None:
        return True
    allowed = _allowed_values(entry) if kind == "Enumeration" else None
    if allowed is not None and value not in allowed:
        guess = close_names(value, allowed)
        problems.add(path, "%s is not an allowed value of BIOS attribute %s on this BIOS (%s)%s (allowed: %s)" % (
            _value_text(value), name, model, "; did you mean %s?" % guess[0] if guess else "", ", ".join(allowed)))
        return False
    if kind == "Integer":
        lower, upper = entry.get("LowerBound"), entry.get("UpperBound")
        lower = lower if is_whole(lower) else None
        upper = upper if is_whole(upper) else None
        if (lower is not None and value < lower) or (upper is not None and value > upper):
            problems.add(path, "%d is out of the range of BIOS attribute %s on this BIOS (%s) (allowed: %s to %s)" % (
                value, name, model, "any" if lower is None else lower, "any" if upper is None else upper))
            return False
    return True


# ---------------------------------------------------------------- vendors and jobs

def apply_of(manufacturer: Any) -> str:
    """``job`` for a Dell (the BIOS applies pending settings only with a BIOS configuration job), else ``reboot``."""
    if isinstance(manufacturer, str) and _JOB_VENDOR_RE.fullmatch(manufacturer.strip()):
        return APPLY_JOB
    return APPLY_REBOOT


def _waiting_jobs(problems, jobs):
    """The Ids of the BIOS configuration jobs of an iDRAC job queue (its members) still to run."""
    if jobs is None:
        return []
    if not isinstance(jobs, list):
        problems.add("Jobs", "the BMC's job queue must be a list of jobs, not %s" % kind_of(jobs))
        return []
    out = []
    for index, job in enumerate(jobs):
        if not isinstance(job, dict):
            problems.add("Jobs[%d]" % index, "a job must be a mapping (the BMC's job resource), not %s" % kind_of(job))
        elif job.get("JobType") == BIOS_JOB_TYPE and job.get("JobState") in JOB_WAITING:
            out.append(str(job.get("Id") or job.get("@odata.id") or "#%d" % index))
    return out


# ---------------------------------------------------------------- the plan

def _switch_ok(problems, switch, setting):
    """True when the SR-IOV/IOMMU switch ``setting`` is to be set (true or false); a bad value is a problem."""
    if setting is None:
        return False
    if not isinstance(setting, bool):
        problems.add(SWITCH_VARS[switch], "must be true (on), false (off) or null (leave the BIOS as it is), not %s"
                     % kind_of(setting))
        return False
    return True


def _wanted(problems, spec, model, current, sriov, iommu, overrides):
    """``{name: (value, path)}`` the host wants: its model's set, the switches, its overrides (last wins)."""
    wanted, source = _model_set(problems, spec, model)
    wanted = dict(wanted)
    for switch, setting in (("sriov", sriov), ("iommu", iommu)):
        var = SWITCH_VARS[switch]
        if not _switch_ok(problems, switch, setting):
            continue
        choices = SWITCHES[switch]
        present = [choice for choice in choices if choice[0] in current]
        if not present:
            problems.add(var, "this BIOS (%s) has none of the attributes that switch %s (%s): name the attribute in "
                              "%s instead" % (_value_text(model), switch.upper(), _names(c[0] for c in choices),
                                              OVERRIDES))
            continue
        name, on, off = present[0]
        wanted[name] = (on if setting else off, var)
    wanted.update(_attribute_set(problems, OVERRIDES, overrides, "BIOS attributes of this host"))
    return wanted, source


def _pending_of(current, pending):
    """The attributes whose next-boot value differs from the current one."""
    if not isinstance(pending, dict):
        return {}
    return {name: value for name, value in pending.items()
            if isinstance(name, str) and (name not in current or current[name] != value)}


def plan(spec: Any, host: Any, model: Any, current: Any, *, pending: Any = None, registry: Any = None,
         sriov: bool | None = None, iommu: bool | None = None, overrides: Any = None, manufacturer: Any = None,
         jobs: Any = None) -> dict:
    """The BIOS plan of ``host`` (see the module doc). ``set`` is empty and ``create_job`` false whenever ``problems``
    is not."""
    host = str(host)
    problems = Problems(prefix=host)
    apply = apply_of(manufacturer)
    waiting = _waiting_jobs(problems, jobs) if apply == APPLY_JOB else []
    if not isinstance(current, dict):
        problems.add("Bios", "the BMC's current BIOS attributes must be a mapping, not %s" % kind_of(current))
        current = {}
    if pending is not None and not isinstance(pending, dict):
        problems.add("Bios/Settings", "the BMC's pending BIOS attributes must be a mapping, not %s" % kind_of(pending))
    model_text = model if isinstance(model, str) else kind_of(model)
    wanted, source = _wanted(problems, spec, model, current, sriov, iommu, overrides)
    table = _registry_table(registry)
    already = _pending_of(current, pending)
    known = sorted(name for name in current if isinstance(name, str))

    to_set, rows = {}, []
    for name in sorted(wanted):
        value, path = wanted[name]
        if name not in current:
            guess = close_names(name, known)
            problems.add(path, "BIOS attribute %s is unknown to this BIOS (%s)%s" % (
                name, model_text, "; close names: %s" % ", ".join(guess) if guess else
                "; it has %d attributes: %s" % (len(known), _names(known))))
            continue
        if not _check_value(problems, name, value, path, table.get(name), current[name], model_text):
            continue
        now, next_boot = current[name], already.get(name, current[name])
        if now == value and next_boot != value:
            problems.add(path, "BIOS attribute %s is %s now as wanted, but %s is pending and the next reset would apply "
                               "it; a value equal to the current one cannot be staged: clear the BIOS's pending "
                               "settings on the BMC (an iDRAC: delete the BIOS configuration job) and run again" % (
                                   name, _value_text(now), _value_text(next_boot)))
            continue
        if now == value:
            action = OK
        elif next_boot == value:
            action = PENDING
        else:
            action = SET
            to_set[name] = value
        rows.append({"attribute": name, "current": now, "wanted": value, "action": action, "source": path})

    if to_set and waiting:
        problems.add("Jobs", "BIOS attributes %s must change, but BIOS configuration job %s is scheduled and a %s BMC "
                             "takes no new BIOS settings until it has run: reset the server (the job applies what is "
                             "pending) or delete the job, then run again" % (
                                 _names(to_set), ", ".join(waiting), _value_text(manufacturer)))
    if problems:
        to_set = {}
    pending_after = dict(already, **to_set)
    others = {name: value for name, value in pending_after.items() if name not in wanted}
    create_job = apply == APPLY_JOB and not problems and bool(pending_after) and not waiting
    return {
        "host": host,
        "model": model if isinstance(model, str) else None,
        "source": source,
        "wanted": {name: value for name, (value, _path) in wanted.items()},
        "set": to_set,
        "pending": pending_after,
        "pending_other": others,
        "pending_reset": bool(pending_after),
        "apply": apply,
        "jobs": waiting,
        "create_job": create_job,
        "registry": bool(table),
        "attributes": rows,
        "summary": _summary(rows, others, current) + _job_summary(apply, pending_after, waiting, create_job),
        "problems": list(problems),
    }


def _job_summary(apply, pending_after, waiting, create_job):
    if apply != APPLY_JOB or not pending_after:
        return []
    if create_job:
        return ["BIOS configuration job: none scheduled; one is created (this BIOS applies pending settings at a "
                "reset only with one)"]
    return ["BIOS configuration job %s scheduled: the next reset applies the pending settings" % ", ".join(waiting)]


def _summary(rows, others, current):
    words = {SET: "set now, applied by the next reset", PENDING: "already pending, applied by the next reset",
             OK: "as wanted"}
    lines = []
    for row in rows:
        if row["action"] == OK:
            lines.append("%s: %s (%s)" % (row["attribute"], _shown(row["current"]), words[OK]))
        else:
            lines.append("%s: %s -> %s (%s)" % (row["attribute"], _shown(row["current"]), _shown(row["wanted"]),
                                                words[row["action"]]))
    lines.extend("%s: %s -> %s (pending, not from %s: the next reset applies it too)" % (
        name, _shown(current.get(name)), _shown(value), ROOT) for name, value in sorted(others.items()))
    return lines


def _shown(value):
    return value if isinstance(value, str) else json.dumps(value, default=str)


# ---------------------------------------------------------------- the inventory alone (no BMC contacted)

def spec_problems(spec: Any, host: Any, *, sriov: Any = None, iommu: Any = None, overrides: Any = None) -> list[str]:
    """Every problem of a host's BIOS inputs that shows without its BMC (the offline check, the preflight): the shape
    of ``gpufabric_platform_bios`` (every model's set and the default), the SR-IOV/IOMMU switches and the host's
    overrides, each as ``plan`` names it. Pure; never raises. What needs the BMC (the model it reports, unknown
    attributes, allowed values) is checked by ``plan`` at the platform step."""
    problems = Problems(prefix=str(host))
    if isinstance(spec, dict):
        unknown_keys(problems, spec, ROOT, SPEC_KEYS)
        models = spec.get("models")
        if isinstance(models, dict):
            for model, attributes in models.items():
                path = join_path(ROOT, "models", model)
                if not isinstance(model, str) or not model.strip():
                    problems.add(path, "a server model must be a non-empty string (as the BMC reports the system's "
                                       "Model), not %s" % _value_text(model))
                    continue
                _attribute_set(problems, path, attributes, "the BIOS attributes of %s servers" % model)
        elif models is not None:
            problems.add(join_path(ROOT, "models"), "must be a mapping of server models (as the BMC reports the "
                                                    "system's Model, e.g. PowerEdge XE9680) to BIOS attributes, not %s"
                         % kind_of(models))
        _attribute_set(problems, join_path(ROOT, "default"), spec.get("default"), "the BIOS attributes of other models")
    elif spec is not None:
        problems.add(ROOT, "must be a mapping with `models` (server model -> BIOS attributes) and optionally "
                           "`default`, not %s" % kind_of(spec))
    for switch, setting in (("sriov", sriov), ("iommu", iommu)):
        _switch_ok(problems, switch, setting)
    _attribute_set(problems, OVERRIDES, overrides, "BIOS attributes of this host")
    return list(problems)


# ---------------------------------------------------------------- the Redfish client (the platform_bios action)
#
# What community.general's redfish_info, redfish_config and idrac_redfish_command did for the role, in one call from
# the controller: read the service root, the one ComputerSystem, its Bios resource, the pending settings (the Bios
# @Redfish.Settings SettingsObject), the attribute registry, a Dell's job queue; plan; write only what differs (PATCH
# of the SettingsObject, with @Redfish.SettingsApplyTime OnReset on a Dell so that the iDRAC schedules the job); read
# again and prove it; create the BIOS configuration job a Dell still lacks. Every answer that is not what Redfish
# promises (not JSON, no Members list, no Attributes mapping, ...) is an error naming the BMC, the URL and what was
# expected: nothing is written on a guess.

SERVICE_ROOT = "/redfish/v1"
JOBS_EXPAND = "/Jobs?$expand=*($levels=1)"
_HEADERS = {"Accept": "application/json", "OData-Version": "4.0"}
_WRITE_HEADERS = dict(_HEADERS, **{"Content-Type": "application/json"})


class BmcError(Exception):
    """A request the BMC did not answer as expected; ``str()`` is the whole sentence (without the host)."""


class Redfish:
    """HTTPS requests to one BMC with HTTP basic authentication (``open_url`` is ``ansible.module_utils.urls``'s, or a
    replacement with its signature in tests). The password is never part of a message."""

    def __init__(self, address: str, user: str, password: str, *, validate_certs: bool = True,
                 ca_path: str | None = None, timeout: int = 60, open_url=None):
        if open_url is None:
            from ansible.module_utils.urls import open_url  # pylint: disable=import-outside-toplevel
        self.address = address
        self.base = "https://%s" % address
        self._auth = {"url_username": user, "url_password": password, "force_basic_auth": True,
                      "validate_certs": validate_certs, "ca_path": ca_path or None, "timeout": timeout}
        self._open = open_url

    def url(self, uri: str) -> str:
        return self.base + uri

    def _request(self, method, uri, body=None, headers=None):
        import urllib.error  # pylint: disable=import-outside-toplevel
        data = json.dumps(body) if body is not None else None
        sent = dict(_WRITE_HEADERS if body is not None else _HEADERS, **(headers or {}))
        try:
            resp = self._open(self.url(uri), data=data, method=method, headers=sent, follow_redirects="all",
                              **self._auth)
            return resp.getcode(), dict(resp.headers.items()) if resp.headers else {}, resp.read()
        except urllib.error.HTTPError as err:
            raise BmcError("HTTP Error %s on %s request to '%s', extended message: '%s'"
                           % (err.code, method, self.url(uri), _extended(err))) from None
        except urllib.error.URLError as err:
            raise BmcError("URL Error on %s request to '%s': '%s'" % (method, self.url(uri), err.reason)) from None
        except Exception as err:  # pylint: disable=broad-except  # TLS, timeouts, resets: named, never a traceback
            raise BmcError("Failed %s request to '%s': '%s'" % (method, self.url(uri), err)) from None

    def get(self, uri: str, expect: str = "a JSON object") -> tuple[dict, dict]:
        """``(body, headers)`` of GET ``uri``; BmcError unless the answer is a JSON object."""
        _status, headers, raw = self._request("GET", uri)
        try:
            body = json.loads(raw)
        except (TypeError, ValueError):
            body = None
        if not isinstance(body, dict):
            raise BmcError("GET %s answered no JSON object (expected %s)" % (self.url(uri), expect))
        return body, headers

    def patch(self, uri: str, body: dict, etag: str | None = None) -> tuple[int, dict]:
        status, headers, _raw = self._request("PATCH", uri, body, {"If-Match": etag} if etag else None)
        return status, headers

    def post(self, uri: str, body: dict) -> tuple[int, dict]:
        status, headers, _raw = self._request("POST", uri, body)
        return status, headers


def _extended(err):
    """The Redfish error's @Message.ExtendedInfo messages (every one), else the HTTP reason."""
    try:
        info = json.loads(err.read().decode("utf-8"))["error"]["@Message.ExtendedInfo"]
        words = [item["Message"] for item in info if isinstance(item, dict) and isinstance(item.get("Message"), str)]
        return " ".join(words) or str(info)
    except Exception:  # pylint: disable=broad-except  # no Redfish error body: the HTTP reason
        return str(getattr(err, "reason", "") or err.code)


def _link(body, key, url, what):
    """``body[key]["@odata.id"]``; BmcError naming ``url`` and ``what`` when it is not a string."""
    value = body.get(key)
    link = value.get("@odata.id") if isinstance(value, dict) else None
    if not isinstance(link, str) or not link.startswith("/"):
        raise BmcError("%s has no %s link (%s.@odata.id)" % (url, what, key))
    return link


def _members(body, url, what):
    members = body.get("Members")
    if not isinstance(members, list) or not all(isinstance(m, dict) for m in members):
        raise BmcError("%s answered no Members list (expected %s)" % (url, what))
    return members


def _system(client):
    """``(service root, the one ComputerSystem's URI, its body)``; BmcError unless there is exactly one."""
    root, _h = client.get(SERVICE_ROOT, "the Redfish service root")
    systems_uri = _link(root, "Systems", client.url(SERVICE_ROOT), "ComputerSystem collection")
    systems = _members(client.get(systems_uri, "the ComputerSystem collection")[0], client.url(systems_uri),
                       "the ComputerSystems")
    uris = [m.get("@odata.id") for m in systems]
    if len(uris) != 1 or not isinstance(uris[0], str):
        raise BmcError("it lists %d ComputerSystems (%s); this role sets the BIOS of a BMC with exactly one"
                       % (len(uris), ", ".join(str(u) for u in uris)))
    system, _h = client.get(uris[0], "a ComputerSystem")
    return root, uris[0], system


def read_bios(client: Redfish, *, registry: bool) -> dict:
    """What the BMC holds: ``{"system_uri", "model", "manufacturer", "vendor", "current", "settings_uri", "pending",
    "etag", "registry", "registry_error"}``. BmcError on any answer that is not what Redfish promises."""
    root, system_uri, system = _system(client)
    try:
        bios_uri = _link(system, "Bios", client.url(system_uri), "Bios resource")
    except BmcError:
        raise BmcError("the system %s has no Bios resource" % system_uri) from None
    bios, _h = client.get(bios_uri, "the Bios resource")
    current = bios.get("Attributes")
    if not isinstance(current, dict):
        raise BmcError("it tells no BIOS attributes of %s (GET %s has no Attributes mapping)" % (system_uri, bios_uri))
    settings = bios.get("@Redfish.Settings")
    settings_obj = settings.get("SettingsObject") if isinstance(settings, dict) else None
    settings_uri = settings_obj.get("@odata.id") if isinstance(settings_obj, dict) else None
    if not isinstance(settings_uri, str) or not settings_uri.startswith("/"):
        raise BmcError("its Bios resource %s has no @Redfish.Settings SettingsObject: its BIOS settings cannot be "
                       "changed" % bios_uri)
    pending, etag = read_pending(client, settings_uri)
    out = {"system_uri": system_uri, "model": system.get("Model"), "manufacturer": system.get("Manufacturer"),
           "vendor": root.get("Vendor"), "current": current, "settings_uri": settings_uri, "pending": pending,
           "etag": etag, "registry": None, "registry_error": None}
    if registry:
        try:
            out["registry"] = read_registry(client, bios)
        except BmcError as err:
            out["registry_error"] = str(err)
    return out


def read_pending(client: Redfish, settings_uri: str) -> tuple[dict, str | None]:
    """The SettingsObject's ``Attributes`` (the pending ones; {} when it lists none) and its ETag."""
    body, headers = client.get(settings_uri, "the pending BIOS settings")
    pending = body.get("Attributes", {})
    if not isinstance(pending, dict):
        raise BmcError("GET %s: its Attributes are not a mapping of BIOS attribute names to values"
                       % client.url(settings_uri))
    etag = {k.lower(): v for k, v in headers.items()}.get("etag") or body.get("@odata.etag")
    return pending, etag if isinstance(etag, str) else None


def read_registry(client: Redfish, bios: dict) -> dict:
    """The BIOS attribute registry, found as community.general's GetBiosRegistries finds it: the Bios resource's
    ``AttributeRegistry`` under ``/redfish/v1/Registries/``, its English ``Location`` (a URI, or HPE's ``extref``)."""
    name = bios.get("AttributeRegistry")
    if not isinstance(name, str) or not name:
        raise BmcError("its Bios resource names no AttributeRegistry")
    uri = "%s/Registries/%s" % (SERVICE_ROOT, name)
    body, _h = client.get(uri, "the registry file of %s" % name)
    locations = body.get("Location")
    found = None
    for location in locations if isinstance(locations, list) else []:
        if isinstance(location, dict) and str(location.get("Language", "")).startswith("en"):
            found = location.get("Uri")
            if isinstance(found, dict):
                found = found.get("extref")
    if not isinstance(found, str) or not found.startswith("/"):
        raise BmcError("GET %s lists no English Location of registry %s" % (client.url(uri), name))
    registry, _h = client.get(found, "the BIOS attribute registry")
    if not isinstance(registry.get("RegistryEntries"), dict):
        raise BmcError("GET %s has no RegistryEntries" % client.url(found))
    return registry


def read_jobs(client: Redfish) -> tuple[str, list]:
    """``(the first manager's URI, its job queue's members, each expanded)`` - where an iDRAC keeps BIOS jobs."""
    managers_uri = SERVICE_ROOT + "/Managers"
    members = _members(client.get(managers_uri, "the Manager collection")[0], client.url(managers_uri),
                       "the Managers")
    manager = members[0].get("@odata.id") if members else None
    if not isinstance(manager, str):
        raise BmcError("it lists no Managers, so it has no job queue")
    jobs_uri = manager + JOBS_EXPAND
    jobs = _members(client.get(jobs_uri, "the job queue")[0], client.url(jobs_uri), "the jobs")
    if any("JobState" not in job for job in jobs):
        raise BmcError("its job queue %s lists jobs without their JobType/JobState (no $expand)"
                       % client.url(jobs_uri))
    return manager, jobs


def _job_id(headers):
    location = {k.lower(): v for k, v in (headers or {}).items()}.get("location") or ""
    return location.rstrip("/").rsplit("/", 1)[-1]


def converge(client: Redfish, params: dict, *, host: str, check_mode: bool = False) -> dict:
    """The BIOS step of one server (the platform_bios action): ``{"changed", "facts", "msg", "summary", "diff",
    "warnings", "system", "written", "job_created"}``. Raises BmcError (a message naming host and BMC)."""
    bmc = "%s: BMC %s" % (host, client.address)
    dell = "%s (a Dell: it applies pending BIOS settings only with a BIOS configuration job)" % bmc
    warnings = []
    try:
        held = read_bios(client, registry=params.get("registry", True))
    except BmcError as err:
        raise BmcError("%s: %s" % (bmc, err)) from None
    if params.get("registry", True) and held["registry"] is None:
        warnings.append("%s: no BIOS attribute registry from BMC %s (%s): the values are checked by the BMC when they "
                        "are written" % (host, client.address, held["registry_error"] or "no answer"))
    apply = apply_of(held["manufacturer"])
    manager, jobs = None, None
    if apply == APPLY_JOB:
        try:
            manager, jobs = read_jobs(client)
        except BmcError as err:
            raise BmcError("%s: %s" % (dell, err)) from None

    def planned(pending, job_list):
        return plan(params.get("bios") or {}, host, held["model"], held["current"], pending=pending,
                    registry=held["registry"], sriov=params.get("sriov"), iommu=params.get("iommu"),
                    overrides=params.get("overrides") or {}, manufacturer=held["manufacturer"], jobs=job_list)

    first = planned(held["pending"], jobs)
    if first["problems"]:
        raise BmcError("\n".join(first["problems"]))
    after, written, job_created = first, {}, None
    if first["set"] and not check_mode:
        payload = {"Attributes": dict(first["set"])}
        if apply == APPLY_JOB or held["vendor"] == "Dell":  # the iDRAC schedules the job itself (community.general)
            payload["@Redfish.SettingsApplyTime"] = {"ApplyTime": "OnReset"}
        try:
            client.patch(held["settings_uri"], payload, etag=held["etag"])
        except BmcError as err:
            raise BmcError("%s refused the BIOS attributes %s: %s" % (
                bmc, ", ".join("%s=%s" % (k, _shown(v)) for k, v in first["set"].items()), err)) from None
        written = dict(first["set"])
        try:
            pending_now, _etag = read_pending(client, held["settings_uri"])
            if apply == APPLY_JOB:
                manager, jobs = read_jobs(client)
        except BmcError as err:
            raise BmcError("%s accepted the BIOS attributes, but reading them back failed: %s" % (bmc, err)) from None
        after = planned(pending_now, jobs)
        if after["problems"] or after["set"]:
            raise BmcError("%s accepted the BIOS attributes, but its pending settings do not hold %s%s" % (
                bmc, ", ".join("%s=%s" % (k, _shown(v)) for k, v in after["set"].items()) or "them",
                (" (%s)" % "; ".join(after["problems"])) if after["problems"] else ""))
    if after["create_job"] and not check_mode:
        try:
            _status, headers = client.post(manager + "/Jobs", {"TargetSettingsURI": held["settings_uri"]})
        except BmcError as err:
            raise BmcError("%s did not create the BIOS configuration job that applies the pending BIOS settings %s: %s"
                           % (bmc, ", ".join(sorted(after["pending"])), err)) from None
        job_created = _job_id(headers)
        if not job_created:
            raise BmcError("%s did not create the BIOS configuration job that applies the pending BIOS settings %s: "
                           "its answer to POST %s has no Location of the job" % (
                               bmc, ", ".join(sorted(after["pending"])), client.url(manager + "/Jobs")))
    changed = bool(first["set"]) or bool(first["create_job"] and (check_mode or job_created))
    summary_lines = list(after["summary"])
    if check_mode and first["create_job"]:
        summary_lines.append("%s has no BIOS configuration job: a real run %s, which the next reset runs" % (
            bmc, "writes the attributes asking for one (or creates it: CreateBiosConfigJob)" if first["set"]
            else "creates one (CreateBiosConfigJob)"))
    facts = {"gpufabric_platform_bios_pending_reset": first["pending_reset"],
             "gpufabric_platform_bios_pending": first["pending"],
             "gpufabric_platform_bios_summary": list(after["summary"]),
             "gpufabric_platform_bios_apply": apply,
             "gpufabric_platform_bios_jobs": list(after["jobs"]) + ([job_created] if job_created else [])}
    headline = "%s (%s): %s%s" % (
        host, held["model"], "check mode, nothing written; after a real run the BIOS " if check_mode else "BIOS ",
        "waits for a reset (this role never resets: the activate role decides)" if first["pending_reset"]
        else "is as wanted, nothing pending")
    return {"changed": changed, "facts": facts, "msg": headline, "summary": [headline] + summary_lines,
            "diff": _diff(first, held, job_created), "warnings": warnings,
            "system": {"uri": held["system_uri"], "model": held["model"], "manufacturer": held["manufacturer"]},
            "written": written, "job_created": job_created}


def _diff(first, held, job_created):
    """Each wanted attribute current -> wanted (the value after the next reset), the pending values, the jobs."""
    wanted = {row["attribute"]: row for row in first["attributes"]}
    before = {"attributes": {name: row["current"] for name, row in wanted.items()},
              "pending": dict(sorted(_pending_of(held["current"], held["pending"]).items())),
              "jobs": list(first["jobs"])}
    jobs_after = list(first["jobs"])
    if first["create_job"]:
        jobs_after.append(job_created or ("a BIOS configuration job (a real run %s it)"
                                          % ("asks for" if first["set"] else "creates")))
    after = {"attributes": {name: row["wanted"] for name, row in wanted.items()},
             "pending": dict(sorted(first["pending"].items())), "jobs": jobs_after}
    return {"before": before, "after": after}


def probe(client: Redfish, *, host: str) -> dict:
    """The preflight's read-only touch: the one system's ``{"uri", "model", "manufacturer"}``; BmcError otherwise."""
    try:
        _root, uri, system = _system(client)
    except BmcError as err:
        raise BmcError("%s: BMC %s: %s" % (host, client.address, err)) from None
    return {"uri": uri, "model": system.get("Model"), "manufacturer": system.get("Manufacturer")}
