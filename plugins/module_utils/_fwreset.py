# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Activating pending firmware and NV configuration with mlxfwreset / mstfwreset, once per host.

Read (all cards at once, and the reads of a card at the same time): ONE ``mlxfwreset -d DEV q`` (the reset levels the card
supports), ONE ``flint -d DEV q`` (burned ``FW Version`` vs ``FW Version(Running)``) and ONE
``mlxconfig -d FN -e q`` per PCI function (next-boot vs current NV values).

Decide (pure, per host): which cards have something pending, and the ONE reset level that
activates every pending change and that every card to be reset supports. When some card does
not support it, nothing is reset: the host needs a reboot instead (``reboot_required``).

Write (guarded): ``mlxfwreset -d DEV reset -l N -y`` per card, all cards at once, through
function 0 (one reset activates both functions of a card). Then prove it (one lspci and the
re-reads of every card at the same time): the card is still on the PCI bus, flint reports running == burned, and no NV parameter is still pending.

Reset levels (NVIDIA MFT documentation, "mlxfwreset - Loading Firmware on 5th Generation
Devices Tool"; the device itself reports which of them can load its pending firmware):

- 0 "live-Patch": driver, PCI link and network link stay up. Loads a firmware image that can be
  live-patched; NV configuration is read only when the firmware boots, so it is not activated.
- 1 "Immediate reset" (only the Arm side does not remain up): resets the Arm cores of a BlueField
  (with reset types 3/4); it does not activate host-side NIC firmware or NV configuration.
- 3 "Driver restart and PCI reset": the driver is stopped, the chip reset, the PCI link retrained
  and the driver started again. Activates firmware and NV configuration; the host stays up.
- 4 "Warm Reboot" and 5 "Cold Reboot": the whole host restarts (5 with a power cycle). This
  module never runs them: it reports ``reboot_required`` so the caller reboots in a controlled way.
"""

from __future__ import annotations

import re

from collections.abc import Mapping, Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _devices as devices_
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import (
    InvalidValue,
    MlnxError,
    ToolFailed,
    ToolNotFound,
)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._firmware import read_device
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host, parallel, plan_all
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mgmt import mgmt_state
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mlxconfig import Query
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mlxconfig import pending as nv_pending
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner

FIRMWARE = "firmware"
NV_CONFIG = "nv_config"
EVERYTHING = frozenset((FIRMWARE, NV_CONFIG))

RESET = "reset"
NONE = "none"
UNSUPPORTED = "unsupported"
MGMT = "management"

# level -> what it is, what it activates, whether the whole host restarts.
LEVELS = {
    0: {"name": "live-patch (driver, PCI link and network link stay up)",
        "activates": frozenset((FIRMWARE,)), "host_restart": False},
    1: {"name": "immediate reset (BlueField Arm side only)",
        "activates": frozenset(), "host_restart": False},
    3: {"name": "driver restart and PCI reset",
        "activates": EVERYTHING, "host_restart": False},
    4: {"name": "warm reboot", "activates": EVERYTHING, "host_restart": True},
    5: {"name": "cold reboot", "activates": EVERYTHING, "host_restart": True},
}
# The levels ``auto`` considers, lowest (least disruptive) first.
AUTO_ORDER = (0, 3)
# The levels a task may name.
RUNNABLE = tuple(sorted(level for level, info in LEVELS.items() if not info["host_restart"]))
ALLOWED_LEVELS = ["auto"] + list(RUNNABLE)


# ---------------------------------------------------------------- input

def normalize_level(value: object) -> int | str:
    """``auto`` (or nothing) -> ``"auto"``; ``3`` / ``"3"`` -> ``3``. Raises InvalidValue."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "auto")):
        return "auto"
    # an int, or ASCII digits: int() would also take "٣" (an Arabic-Indic three) or "1_0"
    if isinstance(value, int) and not isinstance(value, bool):
        level = value
    elif isinstance(value, str) and re.fullmatch(r"\s*[0-9]{1,2}\s*", value, re.ASCII):
        level = int(value)
    else:
        raise InvalidValue("level must be auto or one of %s, not %r" % (", ".join(str(x) for x in RUNNABLE), value),
                           parameter="level", allowed=ALLOWED_LEVELS)
    if level in LEVELS and LEVELS[level]["host_restart"]:
        raise InvalidValue("level %d (%s) restarts the whole host; this module does not reboot hosts. Use "
                           "level auto and reboot (ansible.builtin.reboot) when it returns reboot_required"
                           % (level, LEVELS[level]["name"]), parameter="level", allowed=ALLOWED_LEVELS)
    if level not in LEVELS:
        raise InvalidValue("level %d is not an mlxfwreset reset level; allowed: %s"
                           % (level, ", ".join(str(x) for x in ALLOWED_LEVELS)),
                           parameter="level", allowed=ALLOWED_LEVELS)
    return level


def units(selected: Sequence[str], *, discovered: Sequence[dict] | None = None) -> list[dict]:
    """Group the selected devices by card: ``[{"device": <function 0>, "functions": [...]}]``.

    One reset activates the whole card, so a card is reset once, through function 0 (always
    present on a multi-function PCI device). Its NV configuration is read on every function:
    every function discovery found on that card, else the functions named (and function 0).
    Names that are not PCI addresses (``/dev/mst`` paths, RDMA names) are a card each.
    """
    out, by_card = [], {}
    for name in selected:
        if not devices_.is_pci(name):
            if name not in by_card:
                by_card[name] = {"device": name, "functions": [name]}
                out.append(by_card[name])
            continue
        card = devices_.card_of(name)
        if card not in by_card:
            by_card[card] = {"device": card + ".0", "functions": [card + ".0"]}
            out.append(by_card[card])
        if devices_.pci_full(name) not in by_card[card]["functions"]:
            by_card[card]["functions"].append(devices_.pci_full(name))
    for dev in discovered or []:
        card = devices_.card_of(dev["address"])
        if card in by_card and dev["address"] not in by_card[card]["functions"]:
            by_card[card]["functions"].append(dev["address"])
    for unit in out:
        unit["functions"].sort()
    return out


# ---------------------------------------------------------------- argv

def query_args(device: str) -> list[str]:
    """``-d DEV q``: the reset levels the card supports."""
    return ["-d", device, "q"]


def reset_args(device: str, level: int) -> list[str]:
    """The syntax of the real capture (``mlxfwreset -d DEV reset -y``) with the level named."""
    return ["-d", device, "reset", "-l", str(level), "-y"]


# ---------------------------------------------------------------- reading

def _failed(device, what, result):
    return ToolFailed("%s: %s failed (rc %s): %s" % (device, what, result.rc, result.reason()), device=device,
                      cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr)


def read_levels(runner: Runner, device: str) -> list[dict]:
    """``[{"level", "description", "supported", "default"}]`` from ONE ``mlxfwreset -d DEV q``."""
    result = runner.run("fwreset", query_args(device), check=False)
    if result.rc != 0:
        raise _failed(device, " ".join(result.cmd), result)
    parsed = parse(runner.name("fwreset"), result.stdout)
    if parsed["errors"] or not parsed["levels"]:
        raise MlnxError("%s: %s printed no reset levels%s" % (
            device, " ".join(result.cmd), (": " + "; ".join(parsed["errors"])) if parsed["errors"] else ""),
            device=device, cmd=result.cmd, rc=result.rc, stdout=result.stdout)
    return parsed["levels"]


def read_firmware(runner: Runner, device: str) -> dict:
    """``{"burned", "running"}`` from ONE ``flint -d DEV q``."""
    state = read_device(runner, device)
    return {"burned": state["burned"], "running": state["running"]}


def read_nv(query: Query, functions: Sequence[str]) -> dict[str, dict]:
    """``{NAME: {"current", "next"}}`` pending on any of ``functions``, ONE ``-e q`` each (all at once)."""
    out = {}
    for function, (_fn, params, err) in zip(functions, parallel(lambda fn: query.read(fn)["params"], functions)):
        if err is not None:
            raise err
        for name, values in sorted(nv_pending(params).items()):
            out.setdefault(name, dict(values, functions=[]))["functions"].append(function)
    return out


def pending_of(firmware: Mapping, nv: Mapping) -> dict:
    """``{"firmware": running != burned, "nv_config": [names pending]}``."""
    return {FIRMWARE: firmware["running"] != firmware["burned"], NV_CONFIG: sorted(nv)}


def kinds(pending: Mapping) -> frozenset[str]:
    """What a card has pending, as a set of FIRMWARE / NV_CONFIG."""
    out = set()
    if pending.get(FIRMWARE):
        out.add(FIRMWARE)
    if pending.get(NV_CONFIG):
        out.add(NV_CONFIG)
    return frozenset(out)


def _all_at_once(reads):
    """Run independent reads of one card at the same time; the first error is raised."""
    done = parallel(lambda read: read(), reads)
    for _read, _res, err in done:
        if err is not None:
            raise err
    return [res for _read, res, _err in done]


def read_unit(runner: Runner, query: Query, unit: Mapping) -> dict:
    """Everything ``decide`` needs about one card (its reads run at the same time); raises naming the device."""
    levels, firmware, nv = _all_at_once([
        lambda: read_levels(runner, unit["device"]),
        lambda: read_firmware(runner, unit["device"]),
        lambda: read_nv(query, unit["functions"]),
    ])
    return {
        "device": unit["device"],
        "functions": list(unit["functions"]),
        "levels": levels,
        "supported_levels": [lv["level"] for lv in levels if lv["supported"]],
        "default_level": next((lv["level"] for lv in levels if lv["default"]), None),
        "firmware": firmware,
        "nv_pending": nv,
        "pending": pending_of(firmware, nv),
    }


def mgmt_cards(reader: Host, *, interface: str | None = None,
               address: str | None = None) -> tuple[dict[str, list[str]], dict]:
    """``({card: [interfaces]}, mgmt)``: the NVIDIA cards the management connection runs over.

    ``mgmt`` is the management-interface guard's finding (``_mgmt.mgmt_state``: the interface named, else the one
    holding ``address`` and the default route's, down to the physical ports under bonds, VLANs and
    bridges). Each port's PCI function comes from sysfs, else from ``ibdev2netdev -v``.
    """
    mgmt = mgmt_state(reader, {"mgmt_interface": interface, "mgmt_address": address})
    cards, rdma = {}, None
    for port in mgmt["evidence"]:
        pci = reader.pci_of(port)
        if pci is None:
            if rdma is None:
                rdma = reader.netdev_pci()
            pci = rdma.get(port)
        if pci and devices_.is_pci(pci):
            cards.setdefault(devices_.card_of(pci) + ".0", []).append(port)
    return cards, mgmt


# ---------------------------------------------------------------- deciding

def _describe_kinds(needed):
    return " and ".join(("firmware" if k == FIRMWARE else "NV configuration") for k in sorted(needed))


def decide(states: Sequence[Mapping], *, level: int | str = "auto", only_if_pending: bool = True,
           protected: Mapping[str, Sequence[str]] | None = None, predicted: Sequence[str] = ()) -> dict:
    """Pure decision for one host.

    ``states``: ``[{"device", "supported_levels", "pending": {"firmware": bool, "nv_config": [...]}}]``.
    ``protected``: ``{card: [interfaces]}``, the cards the management connection runs over; a reset
    that takes the link down (any level but live-patch) is never run on them - the host needs a
    reboot instead, and no card is reset.
    Returns ``{"level", "reset_supported", "reboot_required", "unsupported": [...], "management": [...],
    "actions": {device: (action, reason)}}``. ``level`` is the level used (or that would be
    needed when ``reset_supported`` is false), None when nothing is to be reset.
    ``predicted``: the cards (function 0) that earlier steps of this run would leave pending (a check run: nothing was
    burned or set); they are planned as if pending - as a forced reset of the card when nothing is pending on it now.
    Raises InvalidValue when an explicitly named level cannot activate what is pending.
    """
    protected = protected or {}
    targets = [s for s in states if kinds(s["pending"]) or not only_if_pending or s["device"] in predicted]
    actions = {s["device"]: (NONE, "nothing pending") for s in states}
    plan = {"level": None, "reset_supported": True, "reboot_required": False, "unsupported": [], "management": [],
            "actions": actions}
    if not targets:
        return plan

    needed = frozenset().union(*[kinds(s["pending"]) for s in targets])
    if level == "auto":
        # Forced resets (only_if_pending false) of cards with nothing pending are full ones.
        candidates = [lv for lv in AUTO_ORDER if (needed or EVERYTHING) <= LEVELS[lv]["activates"]]
        chosen = next((lv for lv in candidates if all(lv in s["supported_levels"] for s in targets)), None)
        if chosen is None:
            chosen = candidates[-1]
    else:
        if not needed <= LEVELS[level]["activates"]:
            bad = [s["device"] for s in targets if not kinds(s["pending"]) <= LEVELS[level]["activates"]]
            allowed = [lv for lv in RUNNABLE if needed <= LEVELS[lv]["activates"]]
            raise InvalidValue("level %d (%s) does not activate the %s pending on %s; levels that do: %s (or auto)"
                               % (level, LEVELS[level]["name"], _describe_kinds(needed), ", ".join(bad),
                                  ", ".join(str(x) for x in allowed)),
                               device=bad, parameter="level", allowed=["auto"] + allowed)
        chosen = level
    plan["level"] = chosen

    guarded = [s for s in targets if s["device"] in protected and chosen != 0]
    if guarded:
        plan["reboot_required"] = True
        plan["management"] = [{"device": s["device"], "interfaces": list(protected[s["device"]])} for s in guarded]
        names = ", ".join("%s (%s)" % (s["device"], ", ".join(protected[s["device"]])) for s in guarded)
        for s in targets:
            if s in guarded:
                actions[s["device"]] = (MGMT, "carries the management connection (%s): a level %d reset (%s) would "
                                        "cut this host off; activation needs a reboot" % (
                                            ", ".join(protected[s["device"]]), chosen, LEVELS[chosen]["name"]))
            else:
                actions[s["device"]] = (NONE, "not reset: %s carries the management connection, so the host needs "
                                        "a reboot, which activates this device too" % names)
        return plan

    missing = [s for s in targets if chosen not in s["supported_levels"]]
    if missing:
        plan["reset_supported"] = False
        plan["reboot_required"] = True
        plan["unsupported"] = [{"device": s["device"], "level": chosen, "supported_levels": list(s["supported_levels"])}
                               for s in missing]
        lacking = ", ".join(s["device"] for s in missing)
        for s in targets:
            if s in missing:
                actions[s["device"]] = (UNSUPPORTED, "reset level %d (%s) is not supported (supported: %s); "
                                        "activation needs a reboot" % (
                                            chosen, LEVELS[chosen]["name"],
                                            ", ".join(str(x) for x in s["supported_levels"]) or "none"))
            else:
                actions[s["device"]] = (NONE, "not reset: %s cannot be reset at level %d, so the host needs a "
                                        "reboot, which activates this device too" % (lacking, chosen))
        return plan

    for s in targets:
        what = kinds(s["pending"])
        actions[s["device"]] = (RESET, ("activates the pending %s" % _describe_kinds(what)) if what
                                else "activates what this run would leave pending (predicted_pending)"
                                if s["device"] in predicted else "reset requested (only_if_pending is false)")
    return plan


def after_predicted(state: Mapping) -> dict:
    """What a successful reset leaves: running == burned, no NV parameter pending."""
    fw = {"burned": state["firmware"]["burned"], "running": state["firmware"]["burned"]}
    return {"firmware": fw, "pending": pending_of(fw, {})}


def summary(result: Mapping, *, check_mode: bool = False) -> str:
    """One line for the task's ``msg``: what was (would be) reset at which level, or why nothing was."""
    devices = result["devices"]
    reset = [d["device"] for d in devices if d["action"] == RESET]
    if result.get("management"):
        return "no reset: %s carries the management connection and a level %s reset takes its link down; the host " \
               "needs a reboot to activate %s" % (
                   ", ".join("%s (%s)" % (m["device"], ", ".join(m["interfaces"])) for m in result["management"]),
                   result["level"], ", ".join(d["device"] for d in devices if kinds(d["pending"])))
    if result["unsupported"]:
        return "reset not supported on %s at level %s: the host needs a reboot to activate %s" % (
            ", ".join(u["device"] for u in result["unsupported"]), result["level"],
            ", ".join(d["device"] for d in devices if kinds(d["pending"])))
    if not reset:
        return "nothing pending, no reset" if not any(kinds(d["pending"]) for d in devices) else "no reset"
    verb = "reset" if result["changed"] and not check_mode else "would reset"
    if result.get("state") == "query":
        verb = "a reset would activate"
    return "%s %s at level %d (%s)" % (verb, ", ".join(reset), result["level"], LEVELS[result["level"]]["name"])


# ---------------------------------------------------------------- writing and verifying

def reset(runner: Runner, device: str, level: int) -> dict:
    """ONE ``mlxfwreset -d DEV reset -l LEVEL -y``; raises ToolFailed naming the device unless every step is done."""
    result = runner.run("fwreset", reset_args(device, level), check=False)
    if result.rc != 0:
        raise _failed(device, "reset at level %d" % level, result)
    parsed = parse(runner.name("fwreset") + "_reset", result.stdout)
    if not parsed["ok"]:
        bad = [step["step"] for step in parsed["steps"] if step["status"] not in ("Done", "Skipped")]
        raise ToolFailed("%s: reset at level %d did not complete: %s" % (
            device, level, "; ".join(parsed["errors"] + ["%s failed" % s for s in bad]) or result.reason()),
            device=device, cmd=result.cmd, rc=result.rc, stdout=result.stdout, stderr=result.stderr)
    return parsed


def present_after(runner: Runner, devices: Sequence[str]) -> list[str] | None:
    """The PCI devices of ``devices`` lspci still lists (None: lspci cannot tell)."""
    pci = [d for d in devices if devices_.is_pci(d)]
    if not pci:
        return None
    try:
        found = [d["address"] for d in devices_.discover(runner)]
    except ToolNotFound:
        return None
    return [d for d in pci if devices_.pci_full(d) in found]


def verify(runner: Runner, query: Query, state: Mapping, level: int) -> dict:
    """Re-read a reset card; raises naming the device when anything is still pending."""
    device = state["device"]
    try:
        nv_functions = sorted({fn for entry in state["nv_pending"].values() for fn in entry["functions"]})
        firmware, nv = _all_at_once([lambda: read_firmware(runner, device), lambda: read_nv(query, nv_functions)])
    except MlnxError as err:
        raise err.__class__("%s: does not answer after the level %d reset: %s" % (device, level, err.msg),
                            device=device, cmd=err.cmd, rc=err.rc, stdout=err.stdout, stderr=err.stderr)
    after = {"firmware": firmware, "pending": pending_of(firmware, nv)}
    left = []
    if after["pending"][FIRMWARE]:
        left.append("firmware %s burned but %s running" % (firmware["burned"], firmware["running"]))
    if nv:
        left.append("NV configuration %s" % ", ".join(
            "%s (current %s, next %s)" % (name, entry["current"], entry["next"]) for name, entry in sorted(nv.items())))
    if left:
        raise MlnxError("%s: still pending after the level %d reset: %s" % (device, level, "; ".join(left)),
                        device=device)
    return after


# ---------------------------------------------------------------- the whole job

def _entry(state, action, reason, level):
    return {
        "device": state["device"],
        "functions": state["functions"],
        "supported_levels": state["supported_levels"],
        "default_level": state["default_level"],
        "firmware": dict(state["firmware"]),
        "pending": dict(state["pending"]),
        "action": action,
        "reason": reason,
        "level": level if action in (RESET, UNSUPPORTED, MGMT) else None,
        "after": {"firmware": dict(state["firmware"]), "pending": dict(state["pending"])},
    }


def converge(runner: Runner, selected: Sequence[str], *, discovered: Sequence[dict] | None = None,
             state: str = "reset", level: object = "auto", only_if_pending: bool = True, check_mode: bool = False,
             output_format: str = "auto", protected: Mapping[str, Sequence[str]] | None = None,
             predicted: Sequence[str] = ()) -> dict:
    """Query (and with ``state=reset`` activate) the pending changes of ``selected`` devices.

    ``protected``: ``{card: [interfaces]}`` of the management connection (``mgmt_cards``), see ``decide``.
    ``predicted``: PCI addresses of cards an earlier step of this run would leave pending (check mode), see ``decide``.

    Returns ``{"devices", "level", "reset_supported", "reboot_required", "unsupported",
    "changed", "failed"}``; ``failed`` maps a device to what went wrong after its reset (the
    reset itself failed, the device disappeared, something is still pending). Any device that
    cannot be read raises before anything is reset.
    """
    level = normalize_level(level)
    query = Query(runner, output_format=output_format)
    read = plan_all(lambda unit: read_unit(runner, query, unit), units(selected, discovered=discovered))
    states = [res for _unit, res in read]
    forced = {devices_.card_of(name) + ".0" for name in predicted if devices_.is_pci(name)}
    plan = decide(states, level=level, only_if_pending=only_if_pending, protected=protected, predicted=forced)

    entries = []
    for st in states:
        action, reason = plan["actions"][st["device"]]
        entries.append(_entry(st, action, reason, plan["level"]))
    result = {"state": state, "devices": entries, "level": plan["level"],
              "reset_supported": plan["reset_supported"], "reboot_required": plan["reboot_required"],
              "unsupported": plan["unsupported"], "management": plan["management"], "changed": False, "failed": {}}
    to_reset = [(st, entry) for st, entry in zip(states, entries) if entry["action"] == RESET]
    if state == "query" or not to_reset:
        return result
    if check_mode:
        for st, entry in to_reset:
            entry["after"] = after_predicted(st)
        result["changed"] = True
        return result

    chosen = plan["level"]
    done = parallel(lambda item: reset(runner, item[0]["device"], chosen), to_reset)
    result["changed"] = any(err is None for _item, _res, err in done)
    ok = []
    for (st, entry), _res, err in done:
        if err is not None:
            entry["after"] = None
            result["failed"][st["device"]] = str(err)
        else:
            ok.append((st, entry))

    # The PCI bus and every reset card are read at the same time; a card lspci no longer lists
    # is reported as gone (whatever its own re-read said).
    present, verified = _all_at_once([
        lambda: present_after(runner, [st["device"] for st, _entry in ok]),
        lambda: parallel(lambda item: verify(runner, query, item[0], chosen), ok),
    ])
    for (st, entry), after, err in verified:
        if present is not None and devices_.is_pci(st["device"]) and st["device"] not in present:
            entry["after"] = None
            result["failed"][st["device"]] = ("%s: disappeared after the level %s reset (lspci no longer lists it)"
                                              % (st["device"], chosen))
        elif err is not None:
            entry["after"] = None
            result["failed"][st["device"]] = str(err)
        else:
            entry["after"] = after
    return result


# ---------------------------------------------------------------- reporting (after a reboot)

def after_reboot_problem(host: str, method: str, before: Sequence[Mapping], after: Sequence[Mapping]) -> str | None:
    """Why the host is not done after its ``method`` (``reboot``): a device of ``before`` missing (mlx_info's
    ``devices`` before the reboot) or something still pending in ``after`` (read with ``nv_config``); None when all
    is well."""
    fw_left = [d["address"] for d in after if d.get("fw_pending")]
    nv_left = [d["address"] for d in after if d.get("pending_nv")]
    if len(after) == len(before) and not fw_left and not nv_left:
        return None
    present = [d["address"] for d in after]
    missing = [d["address"] for d in before if d["address"] not in present]
    return ("%s after the %s: %d devices before, %d after (missing: %s); firmware still pending on %s; NV config still "
            "pending on %s" % (host, method, len(before), len(after), ", ".join(missing) or "none",
                               ", ".join(fw_left) or "none", ", ".join(nv_left) or "none"))
