# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Idempotent NV configuration (mlxconfig / mstconfig): read, compare, set only what differs.

Per device: ONE ``-e q`` (default, current and next-boot values of every parameter), a pure
``plan()`` of what differs from the desired values, ONE ``set`` with every differing
parameter, and a re-read of the named parameters to prove the tool took them. Parameters not
named by the task are never written. Devices are handled in parallel; input that is wrong for
any device stops the task before any device is written.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _values as values
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import (
    InvalidParameter,
    InvalidValue,
    MlnxError,
    ToolFailed,
)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Result, parallel, plan_all
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import (
    Problems,
    ProblemsError,
    close_names,
    is_whole,
    join_path,
    kind_of,
    quoted,
)

ARRAY_KEY_RE = re.compile(r"^(?P<base>[A-Z0-9_]+)\[(?P<index>\d+)\]\Z", re.ASCII)
ARRAY_RANGE_RE = re.compile(r"^Array\[(?P<lo>\d+)\.\.(?P<hi>\d+)\]\Z", re.ASCII)
UNKNOWN_VALUE_RE = re.compile(r"Unknown value|is not valid|Cannot parse the value", re.IGNORECASE)
UNKNOWN_PARAM_RE = re.compile(r"Unknown Parameter|Failed to find Param|doesn't support", re.IGNORECASE)
LINK_TYPE_RE = re.compile(r"LINK_TYPE_P[1-9][0-9]?", re.ASCII)
ETH_ONLY_RULE = "n/a: Ethernet-only card has no LINK_TYPE (its ports are Ethernet)"


# ---------------------------------------------------------------- input

# NAME, NAME[i] or NAME[lo..hi] (any case; upper-cased before use).
PARAM_NAME_RE = re.compile(r"(?P<base>[A-Za-z][A-Za-z0-9_]{0,63})(?:\[(?P<lo>[0-9]{1,6})(?:\.\.(?P<hi>[0-9]{1,6}))?\])?",
                           re.ASCII)
# The highest array index accepted: the largest NV array of the cards captured in tests/fixtures/real is
# Array[0..15]; 255 leaves room for bigger cards while NAME[0..999999999] cannot expand into a billion keys.
MAX_ARRAY_INDEX = 255
# A value as one word of the tool's NAME=VALUE argument: ETH, force_relax, 0x10, True, ETH(2).
VALUE_RE = re.compile(r"[A-Za-z0-9_.:+()/-]{1,64}", re.ASCII)
PARAM_ALLOWED = "e.g. LINK_TYPE_P1, SRIOV_EN, NUM_OF_VFS, or NAME[i] / NAME[lo..hi] with indexes 0-%d" % MAX_ARRAY_INDEX


def param_problems(name: object, value: object) -> list[tuple[str, str]]:
    """What is wrong with one NV parameter ``name: value``: ``[("name" | "value", message)]``, [] when nothing.
    One rule for the module (``normalize_desired``) and the preflight (``_matrix``'s NV profiles)."""
    out = []
    match = PARAM_NAME_RE.fullmatch(name) if isinstance(name, str) else None
    if match is None:
        out.append(("name", "%s is not an mlxconfig parameter name (%s)" % (kind_of(name), PARAM_ALLOWED)))
    else:
        low, high = match.group("lo"), match.group("hi")
        bad_high = high is not None and not int(low or 0) <= int(high) <= MAX_ARRAY_INDEX
        if low is not None and (int(low) > MAX_ARRAY_INDEX or bad_high):
            out.append(("name", "%s is not an index range of an NV array (allowed: indexes 0-%d, lo..hi with lo <= hi)"
                        % (quoted(name), MAX_ARRAY_INDEX)))
    if not (value is None or is_whole(value) or isinstance(value, bool)
            or (isinstance(value, str) and VALUE_RE.fullmatch(value.strip()))):
        out.append(("value", "must be a value mlxconfig takes - a word such as ETH or force_relax, a number, "
                             "true/false, or null (the firmware's default) - not %s" % kind_of(value)))
    return out


def normalize_desired(params: Mapping[str, object] | None, *, option: str = "params") -> dict[str, object]:
    """Upper-case names, ``NAME[0..3]: v`` expanded to one key per index; values kept. Every name and value is
    checked first (``param_problems``): ProblemsError naming ``option.NAME`` for each bad one."""
    problems = Problems()
    if params is not None and not isinstance(params, dict):
        problems.add(option, "must be a mapping of NV parameters, not %s" % kind_of(params))
        raise ProblemsError("mlxconfig: the NV parameters cannot be set", problems, parameter=option)
    for name, value in (params or {}).items():
        for _what, message in param_problems(name, value):
            problems.add(join_path(option, name), message)
    if problems:
        raise ProblemsError("mlxconfig: the NV parameters cannot be set", problems, parameter=option)
    out = {}
    for name, value in (params or {}).items():
        match = PARAM_NAME_RE.fullmatch(name)
        base, low, high = match.group("base").upper(), match.group("lo"), match.group("hi")
        if high is not None:
            for index in range(int(low), int(high) + 1):
                out["%s[%d]" % (base, index)] = value
        elif low is not None:
            out["%s[%d]" % (base, int(low))] = value
        else:
            out[base] = value
    return out


# ---------------------------------------------------------------- reading

class Query:
    """Builds the query argv and parses its output, as text or as mlxconfig's JSON file."""

    def __init__(self, runner: Runner, *, output_format: str = "auto"):
        self.runner = runner
        self.use_json = output_format == "json" or (
            output_format == "auto" and runner.family == "mft")

    def args(self, device: str, names: Sequence[str] | None = None, *, json_file: str | None = None) -> list[str]:
        """The argv after the tool's name: ``-d DEVICE -e [-j FILE] q [NAMES]``."""
        # mstconfig needs every option before the command word: -d X -e q, never q -e.
        argv = ["-d", device, "-e"]
        if json_file:
            argv += ["-j", json_file]
        return argv + ["q"] + list(names or [])

    def read(self, device: str, names: Sequence[str] | None = None) -> dict:
        """``{NAME: {"default", "current", "next", ...}}`` plus the device header."""
        if self.use_json:
            handle, path = tempfile.mkstemp(prefix="gpufabric-mlxconfig-", suffix=".json")
            os.close(handle)
            try:
                result = self.runner.run("config", self.args(device, names, json_file=path), check=False)
                with open(path) as stream:
                    text = stream.read()
                if result.rc == 0 and text.strip():
                    return _one_device(parse("mlxconfig_json", text), device, result)
                if result.rc == 0 or "saved" in result.stdout:
                    raise _failed(result, device)
                # This mlxconfig does not know -j: use the text form from now on.
                self.use_json = False
            finally:
                os.unlink(path)
        result = self.runner.run("config", self.args(device, names), check=False)
        if result.rc != 0:
            raise _failed(result, device)
        return _one_device(parse("mlxconfig", result.stdout), device, result)


def _failed(result, device):
    return ToolFailed("%s: %s (rc %s)" % (device, result.reason(), result.rc), device=device,
                      cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr)


def _one_device(parsed, device, result):
    if not parsed:
        raise MlnxError("%s: could not read the NV configuration from %s" % (device, " ".join(result.cmd)),
                        device=device, cmd=result.cmd, rc=result.rc, stdout=result.stdout)
    return parsed[0]


# ---------------------------------------------------------------- deciding

def expand_arrays(params: Mapping[str, dict], desired: Mapping[str, object]) -> list[str]:
    """Names to query again, expanded, for desired ``NAME[i]`` keys shown as ``Array[..]``."""
    wanted = set()
    for key in desired:
        match = ARRAY_KEY_RE.match(key)
        if match and key not in params:
            summary = (params.get(match.group("base")) or {}).get("next", "")
            rng = ARRAY_RANGE_RE.match(summary.strip())
            if rng:
                wanted.add("%s[%s..%s]" % (match.group("base"), rng.group("lo"), rng.group("hi")))
    return sorted(wanted)


def not_applicable(name: str, params: Mapping[str, dict], want: object) -> str | None:
    """The rule by which the profile parameter ``name`` = ``want`` does not apply to a device that lacks it
    (``params``: the device's query), or None when it applies (a missing parameter is then an error).

    One rule: ``LINK_TYPE_P<n>`` = ETH on a card that has no ``LINK_TYPE_*`` parameter at all. Such a card
    (e.g. a ConnectX-6 Dx EN) is Ethernet-only: its ports are Ethernet and have no type to set, so a profile shared
    with VPI cards (ConnectX-7) holds on it. A VPI card lacking one port's LINK_TYPE, or IB wanted, is not covered.
    """
    if not params or name in params or not LINK_TYPE_RE.fullmatch(name):  # no query read: nothing is known
        return None
    if any(LINK_TYPE_RE.fullmatch(key) for key in params):
        return None
    try:
        is_eth = values.equal(want, "ETH(2)")
    except TypeError:
        return None
    return ETH_ONLY_RULE if is_eth else None


def default_of(device: str, name: str, entry: Mapping) -> str:
    """The firmware's default of ``name`` (the ``-e q`` Default column): what a ``null`` value resets it to - how a
    parameter taken out of a profile is given back. InvalidValue naming the device when it reports none."""
    default = entry.get("default")
    if not isinstance(default, (bool, int, str)) or values.is_unknown(default) or values.is_array_summary(default):
        raise InvalidValue("%s: %s has no default value the device reports (%r), so null (reset to the default) "
                           "cannot be set: name the value" % (device, name, default), device=device, parameter=name,
                           allowed=[])
    return default


def plan(device: str, params: Mapping[str, dict], desired: Mapping[str, object]) -> dict:
    """Pure decision for one device.

    ``params``: the parsed query (``{NAME: {"next", "current", "default", ...}}``).
    Returns ``{"set": {NAME: cli_token}, "before": {NAME: next}, "after": {NAME: value},
    "not_applicable": {NAME: rule}}`` (``not_applicable``: see that function; such a parameter is left out).
    Raises InvalidParameter / InvalidValue naming the device, the parameter and what is allowed.
    """
    changes, before, after, skipped = {}, {}, {}, {}
    for name, want in desired.items():
        rule = not_applicable(name, params, want)
        if rule:
            skipped[name] = rule
            continue
        if name not in params:
            close = close_names(name, params, folded=False)
            hint = (" Did you mean %s?" % " or ".join(close)) if close else ""
            raise InvalidParameter("%s: the device has no NV parameter %s.%s" % (device, name, hint),
                                   device=device, parameter=name, allowed=close)
        entry = params[name]
        if entry.get("read_only"):
            raise InvalidValue("%s: %s is read-only and cannot be set" % (device, name),
                               device=device, parameter=name, allowed=[])
        want = default_of(device, name, entry) if want is None else want
        printed = entry.get("next", "")
        if values.is_unknown(printed) or values.is_array_summary(printed):
            raise InvalidValue("%s: %s cannot be compared: the device reports %r" % (device, name, printed),
                               device=device, parameter=name, allowed=[])
        bad = values.invalid_for(printed, want)
        if bad:
            raise InvalidValue("%s: %s %s; %r is not allowed (allowed: %s)" % (device, name, bad[0], want, bad[1]),
                               device=device, parameter=name, allowed=bad[1])
        before[name] = printed
        if values.equal(want, printed):
            after[name] = printed
        else:
            changes[name] = values.cli_token(want)
            after[name] = changes[name]
    return {"set": changes, "before": before, "after": after, "not_applicable": skipped}


def pending(params: Mapping[str, dict]) -> dict[str, dict]:
    """Every parameter whose next-boot value differs from the running one (named or not)."""
    out = {}
    for name, entry in params.items():
        cur, nxt = entry.get("current"), entry.get("next")
        if cur is None or values.is_unknown(cur) or values.is_unknown(nxt):
            continue
        if not values.equal(cur, nxt):
            out[name] = {"current": cur, "next": nxt}
    return out


# ---------------------------------------------------------------- writing

def set_args(device: str, changes: Mapping[str, str]) -> list[str]:
    """The argv after the tool's name: ``-d DEVICE -y set NAME=VALUE ...`` (names sorted)."""
    return ["-d", device, "-y", "set"] + ["%s=%s" % (k, v) for k, v in sorted(changes.items())]


def allowed_values(runner: Runner, device: str, name: str) -> list[str] | None:
    """What a parameter accepts, from the tool's own ``show_confs`` listing (error path only)."""
    base = ARRAY_KEY_RE.sub(r"\g<base>", name)
    result = runner.run("config", ["-d", device, "show_confs"], check=False)
    match = re.search(r"\b%s=<([^>]*)>" % re.escape(base), result.stdout)
    if not match:
        match = re.search(r"\b%s=<([^>]*)>" % re.escape(re.sub(r"_P\d+$", "", base)), result.stdout)
    return match.group(1).split("|") if match else None


def write(runner: Runner, device: str, changes: Mapping[str, str]) -> Result:
    """ONE ``set`` of ``changes``; a refusal raises InvalidValue / InvalidParameter / ToolFailed naming the device."""
    result = runner.run("config", set_args(device, changes), check=False)
    if result.rc == 0:
        return result
    reason = result.reason()
    if UNKNOWN_VALUE_RE.search(reason):
        names = [n for n in changes if n in result.stdout] or sorted(changes)
        allowed = allowed_values(runner, device, names[0])
        raise InvalidValue("%s: %s rejected %s: %s%s" % (
            device, runner.name("config"), ", ".join("%s=%s" % (n, changes[n]) for n in names), reason,
            (" (allowed: %s)" % ", ".join(allowed)) if allowed else ""),
            device=device, parameter=names[0], allowed=allowed, cmd=result.cmd, rc=result.rc,
            stdout=result.stdout)
    if UNKNOWN_PARAM_RE.search(reason):
        raise InvalidParameter("%s: %s" % (device, reason), device=device, cmd=result.cmd,
                               rc=result.rc, stdout=result.stdout)
    raise _failed(result, device)


# ---------------------------------------------------------------- the whole job

def per_device(configs: Sequence[Mapping], select: Callable[[Mapping], Sequence[str]]) -> dict[str, tuple]:
    """``[{"name", "devices", "params"}]`` -> ``{device: (name, normalised params)}``, in order.

    ``select(config)`` gives the devices of one config (the task's device/part_number rules).
    A device in two configs is refused naming both: one device gets one set of values.
    """
    out = {}
    for index, config in enumerate(configs):
        name = config.get("name") or "configs[%d]" % index
        for device in select(config):
            if device in out:
                raise InvalidValue("%s is selected by both %s and %s; a device takes one config" % (
                    device, out[device][0], name), device=device, parameter="configs",
                    allowed=[out[device][0], name])
            out[device] = (name, normalize_desired(config.get("params")))
    return out


def converge(runner: Runner, devices: Sequence[str], desired: Mapping[str, object], *, check_mode: bool = False,
             output_format: str = "auto") -> list[tuple]:
    """Bring ``devices`` to ``desired`` (already normalised). Returns per-device results."""
    return converge_each(runner, {device: (None, desired) for device in devices}, check_mode=check_mode,
                         output_format=output_format)


def converge_each(runner: Runner, wanted: Mapping[str, tuple], *, check_mode: bool = False,
                  output_format: str = "auto") -> list[tuple]:
    """Bring every device of ``wanted`` (``{device: (config name, normalised params)}``) to its values.

    Phase 1 reads and plans every device in parallel; any bad input or unreadable device
    raises before phase 2 writes anything. Phase 2 writes and re-reads, in parallel; a device
    whose write fails is reported with the tool's words, the others finish.
    """
    query = Query(runner, output_format=output_format)
    devices = list(wanted)

    def read_and_plan(device):
        desired = wanted[device][1]
        parsed = query.read(device)
        params = parsed["params"]
        extra = expand_arrays(params, desired)
        if extra:
            params = dict(params)
            params.update(query.read(device, extra)["params"])
        return parsed, params, plan(device, params, desired)

    planned = plan_all(read_and_plan, devices, named_by_item=True)

    def apply(item):
        device, (parsed, params, decision) = item
        name, desired = wanted[device]
        out = {
            "device": device,
            "device_type": parsed.get("device_type"),
            "name": parsed.get("name"),
            "changed": bool(decision["set"]),
            "set": decision["set"],
            "before": decision["before"],
            "after": decision["after"],
            "current": {n: params[n].get("current") for n in desired if n in params},
            "not_applicable": decision["not_applicable"],
        }
        if name is not None:
            out["config"] = name
        after_params = params
        if decision["set"] and not check_mode:
            write(runner, device, decision["set"])
            fresh = query.read(device, sorted(desired))["params"]
            after_params = dict(params)
            after_params.update(fresh)
            out["after"] = {n: fresh.get(n, {}).get("next") for n in desired if n not in decision["not_applicable"]}
            wrong = [n for n, token in decision["set"].items() if not values.equal(token, out["after"][n] or "")]
            if wrong:
                raise MlnxError("%s: %s reported success but next-boot values are still %s" % (
                    device, runner.name("config"), ", ".join("%s=%s" % (n, out["after"][n]) for n in wrong)),
                    device=device)
        elif decision["set"]:
            after_params = dict(params)
            for name, token in decision["set"].items():
                after_params[name] = dict(params[name], next=token)
        out["pending"] = pending(after_params)
        out["pending_reset"] = bool(out["pending"])
        return out

    return [(item[0], res, err) for item, res, err in parallel(apply, planned)]


# ---------------------------------------------------------------- reporting

def drift(params: Mapping[str, dict], desired: Mapping[str, object]) -> dict[str, dict]:
    """Per named parameter: desired, next-boot and running values, and a state.

    ``ok`` (next and running equal the desired value), ``pending`` (next-boot is right, the
    device still runs another value), ``drift`` (next-boot differs), ``n/a`` (the device has no such
    parameter and ``not_applicable`` gives the rule - in ``rule`` - by which ``plan`` leaves it out), ``missing``
    (the device has no such parameter), ``unknown`` (the device cannot report it, or reports something that is
    not a value). For reports: whatever the device reported, only a ``desired`` the module would refuse raises
    (ProblemsError).
    """
    out = {}
    params = params if isinstance(params, Mapping) else {}
    for name, want in normalize_desired(desired).items():
        entry = params.get(name)
        rule = not_applicable(name, params, want)
        if rule:
            out[name] = {"desired": want, "next": None, "current": None, "state": "n/a", "rule": rule}
            continue
        if entry is None:
            out[name] = {"desired": want, "next": None, "current": None, "state": "missing"}
            continue
        nxt, cur = (entry.get("next"), entry.get("current")) if isinstance(entry, Mapping) else (None, None)
        if want is None:   # reset to the firmware's default
            want = entry.get("default") if isinstance(entry, Mapping) else None
            if not isinstance(want, (bool, int, str)) or values.is_unknown(want) or values.is_array_summary(want):
                out[name] = {"desired": want, "next": nxt, "current": cur, "state": "unknown"}
                continue
        cur = cur if isinstance(cur, (bool, int, str)) else None
        if not isinstance(nxt, (bool, int, str)) or values.is_unknown(nxt):
            state = "unknown"
        elif not values.equal(want, nxt):
            state = "drift"
        elif cur is not None and not values.is_unknown(cur) and not values.equal(want, cur):
            state = "pending"
        else:
            state = "ok"
        out[name] = {"desired": want, "next": nxt, "current": cur, "state": state}
    return out
