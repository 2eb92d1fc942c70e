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
