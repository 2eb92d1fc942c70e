"""mlxfwreset (MFT) / mstfwreset (mstflint): query reset levels, reset a device.

Texts follow the mstflint mstfwreset.py behaviour (format "{level}: {desc:<62}-{status:<14}{default}")
and the real capture fixtures/real/mlxfwreset_reset_cx7_1.txt. A reset activates the whole card
(both functions): next-boot NV config -> current, burned FW -> running. Level 4 (warm reboot)
power cycles the whole simulated host.

Per family (FAMILY_SYNC, keyed by the family name as `mst status -v` prints it, FALLBACK_SYNC for a family not
listed): the Reset-sync rows; the levels / types are the card's state's (`reset_levels` / `reset_types`, from a
profile or a snapshot), else its family's in families.py. Reset-sync rows follow
mstflint's reset_sync_query_text (facts, no code copied): row 0 "Tool is the owner" is `Supported` and the
default when the tool may own the sync, else `Not supported` with a LOWER-case s; row 1 "Driver is the owner" is
`Supported` or `Not supported`, and the default when the tool may not own it. BlueField-3's rows are the real
capture fixtures/real/mlxfwreset_query_bf3_1.txt; BlueField-2's follow NVIDIA's "BlueField Reset and Reboot
Procedures" (DOCA docs: on BlueField, look for `1: Driver is the owner -Supported (default)`); the others are
marked in the table.
"""
import argparse
import sys

from .. import families, faults, model, sysfs, versions
from .. import state as st
from ..common import out, outln, read_answer

LEVELS = [
    (0, 'Driver, PCI link, network link will remain up ("live-Patch")', False, True),
    (1, 'Only ARM side will not remain up ("Immediate reset").', True, False),
    (3, "Driver restart and PCI reset", True, True),
    (4, "Warm Reboot", True, True),
]
TYPES = [
    (0, "Full chip reset"),
    (1, "Phy-less reset (keep network port active during reset)"),
    (2, "NIC only reset (for SoC devices)"),
    (3, "ARM only reset"),
    (4, "ARM OS shut down"),
]


# family -> the Reset-sync rows: (the tool may own the sync, the driver may own it). The levels and types a card
# supports are families.py's (or the profile's / snapshot's, in the card's state).
FAMILY_SYNC = {
    "ConnectX4": (True, False),     # [invented]: pre-sync firmware
    "ConnectX4LX": (True, False),   # [invented]
    "ConnectX5": (True, True),      # [invented]
    "ConnectX6": (True, True),      # [invented]
    "ConnectX6DX": (True, True),    # [invented]
    "ConnectX6LX": (True, True),    # [invented]
    "ConnectX7": (True, True),      # [invented]
    "ConnectX8": (True, True),      # [invented]
    "BlueField2": (False, True),    # DOCA docs, BlueField reset procedures
    "BlueField3": (False, True),    # mlxfwreset_query_bf3_1.txt
}
FALLBACK_SYNC = (True, True)


def family_sync(card):
    return FAMILY_SYNC.get(card.get("family"), FALLBACK_SYNC)


def _family(card):
    return families.FAMILIES.get(card.get("family"), {})


def card_types(card):
    return list(card.get("reset_types") or _family(card).get("reset_types") or [0])


def supported_levels(state, card):
    if not card.get("reset_levels"):
        card = dict(card, reset_levels=_family(card).get("reset_levels") or [3, 4])
    return faults.reset_levels(state, card)


def _status_word(supported, sync_row=False):
    if supported:
        return "Supported"
    return "Not supported" if sync_row else "Not Supported"


class ToolError(Exception):
    pass


def _levels(v):
    return [lv for lv in LEVELS if lv[0] != 1 or v >= (4, 24, 0)]


def _parser(tool, v, vtext):
    levels = [lv[0] for lv in _levels(v)]
    p = argparse.ArgumentParser(prog=tool, add_help=False)
    p.add_argument("--device", "-d", required=True, help=":  Device to work with")
    p.add_argument("--level", "-l", type=int, choices=levels, help=":  Run reset with the specified reset-level")
    p.add_argument("--type", "-t", type=int, choices=[t[0] for t in TYPES],
                   help=":  Run reset with the specified reset-type")
    p.add_argument("--sync", type=int, choices=[0, 1, 2], dest="reset_sync")
    p.add_argument("--yes", "-y", action="store_true", help=':  answer "yes" on prompt')
    p.add_argument("--skip_driver", "-s", action="store_true")
    if tool == "mlxfwreset":
        vline = "%s 1.0.0, mft %s, built on Nov 14 2024, 10:28:15. Git SHA Hash: 0bd3c6f" % (tool, vtext)
    else:
        vline = "%s 1.0.0, mstflint %s, built on Aug 17 2022, 09:12:52. Git SHA Hash: N/A" % (tool, vtext)
    p.add_argument("--version", "-v", action="store_true", help=":  Print tool version")
    p.version_line = vline
    p.add_argument("--help", "-h", action="help", help=":  show this help message and exit")
    p.add_argument("command", nargs=1, choices=["q", "query", "r", "reset", "reset_fsm_register"])
    return p


def _default_level(supported):
    for lv, _d, _t, valid_default in LEVELS:
        if lv in supported and valid_default:
            return lv
    raise ToolError("There is no supported reset-level")


def query_text(card, state, v):
    supported = supported_levels(state, card)
    default = _default_level(supported)
    out_lines = ["Reset-levels:"]
    for lv, desc, _t, _vd in _levels(v):
        out_lines.append("{0}: {1:<62}-{2:<14}{3}".format(lv, desc, _status_word(lv in supported),
                                                          "(default)" if lv == default else ""))
    relevant = [str(lv) for lv, _d, typ, _vd in _levels(v) if typ]
    out_lines.append("")
    out_lines.append("Reset-types (relevant only for reset-levels {0}):".format(",".join(relevant)))
    types = card_types(card)
    dtype = 2 if 2 in types else 0
    for t, desc in TYPES:
        out_lines.append("{0}: {1:<62}-{2:<14}{3}".format(t, desc, _status_word(t in types),
                                                          "(default)" if t == dtype else ""))
    out_lines.append("")
    out_lines.append("Reset-sync (relevant only for reset-level 3):")
    tool_owner, driver_owner = family_sync(card)
    out_lines.append("{0}: {1:<62}-{2:<14}{3}".format(0, "Tool is the owner", _status_word(tool_owner, True),
                                                      "(default)" if tool_owner else ""))
    out_lines.append("{0}: {1:<62}-{2:<14}{3}".format(1, "Driver is the owner", _status_word(driver_owner, True),
                                                      "" if tool_owner else "(default)"))
    return "\n".join(out_lines) + "\n"


def _step(name, result="Done"):
    outln("-I- %-40s-%s" % (name, result))
    sys.stdout.flush()


def run(tool, args):
    state = st.load()
    host = model.Host(state)
    mft = tool == "mlxfwreset"
    vtext = versions.tool_version(state, mft)
    v = versions.effective(vtext, mft)
    p = _parser(tool, v, vtext)
    if any(x in ("-v", "--version") for x in args):
        outln(p.version_line)
        return 0
    a = p.parse_args(args)
    cmd = a.command[0]
    cmd = {"q": "query", "r": "reset"}.get(cmd, cmd)
    try:
        found = host.resolve(a.device, allow_mst=mft)
        if found is None:
            raise ToolError("Failed to Identify Device: %s, mopen: No such file or directory\n" % a.device)
        card, _fidx = found
        if faults.fires(state, "semaphore_held", card):
            raise ToolError("Failed to send Register MFRL: ME_ICMD_STATUS_SEMAPHORE_TO")
        if cmd == "query":
            st.sim_sleep(0.5)
            outln(query_text(card, state, v))
            return 0
        if cmd == "reset_fsm_register":
            outln("-I- FSM register was reset successfully.")
            return 0
        supported = supported_levels(state, card)
        level = a.level if a.level is not None else _default_level(supported)
        if level not in supported:
            raise ToolError("Reset-level '{0}' is not supported in the current state of this device".format(level))
        rtype = a.type if a.type is not None else (2 if 2 in card_types(card) else 0)
        if rtype not in card_types(card):
            raise ToolError("Reset-type '{0}' is not supported in the current state of this device".format(rtype))
        outln("")
        if v >= (4, 28, 0):
            outln("The reset level for device, {0} is:\n".format(a.device))
        else:
            outln("{0} reset level for device, {1}:\n".format(
                "Minimal" if a.level is None else "Requested", a.device))
        desc = dict((lv[0], lv[1]) for lv in LEVELS)[level]
        outln("{0}: {1}".format(level, desc))
        out("Continue with reset?[y/N] ")
        if a.yes:
            outln("y")
        else:
            ans = read_answer()
            if ans.lower() not in ("y", "yes"):
                raise ToolError("Aborted by user")
        sys.stdout.flush()
        if level == 4:
            _step("Sending Reset Command To Fw")
            _step("Stopping Driver")
            st.sim_sleep(20)
            from .admin import reboot_state
            with st.transaction() as s:
                reboot_state(s)
            sysfs.come_up(boot=True)
            _step("Sending reboot command to machine")
            return 0
        _step("Sending Reset Command To Fw")
        if level == 3:
            _step("Stopping Driver")
            st.sim_sleep(20)
            _step("Resetting PCI")
            _step("Starting Driver")
        else:
            st.sim_sleep(5)
        with st.transaction() as s:
            c2 = next(c for c in s["cards"] if c["id"] == card["id"])
            model.activate_card(c2)
            model.count(c2, "fwresets")
            if level == 3:                 # the driver of this card restarts: its runtime QoS is lost
                sysfs.reset_card(s, card["id"])
            if faults.find(s, "missing_after_reset", c2):
                c2["missing"] = True
            started = bool(s.get("mst_started"))
        if level == 3:
            sysfs.come_up(reset=False, card_id=card["id"])
        if mft and level == 3:
            _step("Restarting MST", "Done" if started else "Skipped")
        outln("-I- FW was loaded successfully.")
        return 0
    except ToolError as e:
        outln("-E- %s." % str(e))
        return 1
