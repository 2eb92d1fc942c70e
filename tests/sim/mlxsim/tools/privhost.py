"""mlxprivhost (MFT): `mlxprivhost -d DEV q|query`, `r|restrict [--disable_rshim] [--disable_tracer]
[--disable_counter_rd] [--disable_port_owner]`, `p|privilege`.

Facts (no code copied) from mstflint's mstprivhost.py (github.com/Mellanox/mstflint, mlxconfig/mstprivhost.py and
its history) and NVIDIA's MFT docs ("mlxprivhost - NIC Configuration by the Host Restriction Tool"):
- query prints a title and a dash underline of its length, `%-30s: %s` rows, the "Port functions status:" title
  printed with a leading newline (so its underline is 23 dashes, as fixtures/real/mlxprivhost_query_bf2_1.txt), and
  a blank line after the last row. The first title is "Current device configurations:" up to MFT 4.16 (the capture)
  and "Host configurations" from 4.17.
- restrict/privilege write the host-privilege NV TLV: `-I- preparing configuration file...Done!` and
  `-I- configuring device...Done!`. From MFT 4.20 on only the DPU's Arm side may do it; from the x86 host:
  `-E- Operation is not permitted (refer to the DPU user manual)`, rc 1. Before 4.20 the host could restrict
  itself; `privilege` from the host answered `...Failed` and `-E- Removing the restriction only effective on the
  ARM side` (rc 1 here). The simulator runs on the host unless MLXSIM_DPU_ARM=1 **[invented knob]** says the
  tool runs on the DPU's Arm cores.
- a device that is not a BlueField: `-E- Device 'X' is not supported, only BlueField devices are supported!`; a
  device it cannot open: `-E- Unknown device 'X'!`; both rc 1 on stdout.
- the level takes effect immediately; the port functions need a FW reset (tracer, counter_rd, port_owner) or a
  power cycle (rshim) (MFT docs). The query reads the TLV (what was written); what is in effect is
  `privhost_active` in the card's state, brought up to date by mlxfwreset / reboot (model.activate_card).
"""
import argparse
import os

from .. import model, versions
from .. import state as st
from ..common import outln

FLAGS = ("disable_rshim", "disable_tracer", "disable_port_owner", "disable_counter_rd")
BLUEFIELD = ("BlueField", "BlueField2", "BlueField3")


def default_conf():
    conf = {"level": "PRIVILEGED"}
    conf.update((f, False) for f in FLAGS)
    return conf


def query_text(conf, v):
    title = "Current device configurations:" if v < (4, 17, 0) else "Host configurations"
    lines = [title, "-" * len(title), "%-30s: %s" % ("level", conf["level"])]
    sub = "\nPort functions status:"
    lines += [sub, "-" * len(sub)]
    lines += ["%-30s: %s" % (f, "TRUE" if conf.get(f) else "FALSE") for f in FLAGS]
    return "\n".join(lines) + "\n"


def _parser():
    p = argparse.ArgumentParser(prog="mlxprivhost", add_help=True)
    p.add_argument("-v", "--version", action="store_true")
    p.add_argument("-d", "--device", required=True, metavar="<dev>")
    for f in ("disable_rshim", "disable_tracer", "disable_counter_rd", "disable_port_owner"):
        p.add_argument("--" + f, action="store_true")
    p.add_argument("--full", "-f", action="store_true")
    p.add_argument("command", nargs="?", choices=["r", "restrict", "p", "privilege", "q", "query"])
    return p


def run(tool, args):
    state = st.load()
    host = model.Host(state)
    vtext = versions.mft_version(state)
    v = versions.parse(vtext)
    if any(a in ("-v", "--version") for a in args):
        outln("mlxprivhost 1.0.0, mft %s" % vtext)
        return 0
    p = _parser()
    a = p.parse_args(args)
    if a.command is None:
        p.error("Please provide a command to execute, check the help menu")
    disable = {f: getattr(a, f) for f in FLAGS}
    cmd = {"r": "restrict", "p": "privilege", "q": "query"}.get(a.command, a.command)
    if cmd == "privilege" and any(disable.values()):
        p.error("disable flags are not allowed in privilege mode")
    if cmd == "query" and any(disable.values()):
        p.error("privilege or restrict commands are not allowed with query")
    if a.full and cmd != "query":
        p.error("The verbose option is allowed with query only")
    arm = os.environ.get("MLXSIM_DPU_ARM") == "1"
    found = host.resolve(a.device, allow_mst=True)
    if found is None:
        outln("-E- Unknown device '%s'!" % a.device)
        return 1
    card, _fidx = found
    if card["family"] not in BLUEFIELD:
        outln("-E- Device '%s' is not supported, only BlueField devices are supported!" % a.device)
        return 1
    if cmd == "query":
        if a.full and not arm:
            outln("-E- Query command with verbose option is not valid from host")
            return 1
        st.sim_sleep(0.5)
        outln(query_text(card.get("privhost") or default_conf(), v))
        return 0
    if v >= (4, 20, 0) and not arm:
        outln("-E- Operation is not permitted (refer to the DPU user manual)")
        return 1
    if cmd == "privilege" and not arm:                      # the old flow, from the host
        outln("-I- preparing configuration file...Done!")
        outln("-I- configuring device...Failed")
        outln("-E- Removing the restriction only effective on the ARM side")
        return 1
    st.sim_sleep(0.5)
    conf = default_conf()
    if cmd == "restrict":
        conf["level"] = "RESTRICTED"
        conf.update(disable)
    with st.transaction() as s:
        c2 = next(c for c in s["cards"] if c["id"] == card["id"])
        c2["privhost"] = conf
        active = dict(c2.get("privhost_active") or default_conf())
        active["level"] = conf["level"]                     # takes effect immediately
        c2["privhost_active"] = active
    outln("-I- preparing configuration file...Done!")
    outln("-I- configuring device...Done!")
    return 0
