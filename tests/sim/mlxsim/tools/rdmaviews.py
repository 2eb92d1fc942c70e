"""ibstatus, rdma (link / dev) and ibv_devinfo: read-only views of the RDMA devices.

Every value comes from netinfo.port_info (the view ibstat prints): states, rates, LIDs, GUIDs and netdevs agree
with ibstat and ibdev2netdev of the same host by construction.

ibstatus (rdma-core's shell script, infiniband-diags/scripts/ibstatus): per port
"Infiniband device 'DEV' port N status:" and seven lines "\\t<name>:\\t[\\t] <value>" (TAB separators; echo adds
the space before the value), then an empty line. The values are the sysfs files' text: gids/0, lid / sm_lid in
hex ("0x33bf"), "4: ACTIVE", "5: LinkUp", "200 Gb/sec (4X HDR)", "InfiniBand". fixtures/real/ibstatus_a100_1.txt
is the same output with the TABs expanded. Devices in the shell's glob order (mlx5_10 before mlx5_2).
rdma (iproute2 rdma/link.c, rdma/dev.c): "link mlx5_0/1 [subnet_prefix P lid L sm_lid S lmc 0 ]state ACTIVE
physical_state LINK_UP netdev X " (each field with its trailing space; the subnet fields on InfiniBand ports
only) and "0: mlx5_0: node_type ca fw F node_guid G sys_image_guid G "; an old iproute2 (the
MLXSIM_RDMA_FORMAT=old environment variable or the state's "rdma_format": "old") prints
"0/1: mlx5_0/1: state ACTIVE physical_state LINK_UP " without netdev (fixtures/real/rdma_link_old_format_1.txt).
Devices in their kernel index order (PCI order here).
ibv_devinfo (rdma-core libibverbs/examples/devinfo.c): TAB-aligned fields as the captures show them.
"""
import os

from .. import faults, families, model, perf
from .. import state as st
from ..common import errln, outln
from .netinfo import _rdma_list, port_info

# sysfs state / phys_state numbers (IBTA PortInfo)
STATE_NUM = {"Down": 1, "Initializing": 2, "Init": 2, "Armed": 3, "Active": 4}
STATE_SYSFS = {1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE"}
PHYS_NUM = {"Sleep": 1, "Polling": 2, "Disabled": 3, "PortConfigurationTraining": 4, "LinkUp": 5,
            "LinkErrorRecovery": 6}
PHYS_RDMA = {1: "SLEEP", 2: "POLLING", 3: "DISABLED", 4: "ARMED", 5: "LINK_UP", 6: "LINK_ERROR_RECOVER"}
VERBS_STATE = {1: "PORT_DOWN", 2: "PORT_INIT", 3: "PORT_ARMED", 4: "PORT_ACTIVE"}
MTU_ENUM = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}

# The kernel's sysfs rate text "<Gb/s> Gb/sec (<width>X<speed>)" (speed empty for SDR). InfiniBand: the active
# width/speed. Ethernet (RoCE): mlx5 translates the Ethernet speed into an IB width/speed pair. Seen in real
# output: 10 Gb/sec (4X) (a down IB port), 10 Gb/sec (1X QDR) and 25 Gb/sec (1X EDR) (RoCE), 40 Gb/sec (4X QDR)
# (fixtures/real/ibstatus_a100_1.txt, Ethernet), 200 Gb/sec (4X HDR) (the same capture), 400 Gb/sec (4X NDR).
# 50/56/100/800 are the standard IB pairs [invented for RoCE: the lane split of the real link is not modelled].
RATE_TEXT = {("InfiniBand", 10): "4X", ("Ethernet", 10): "1X QDR", 25: "1X EDR", 40: "4X QDR", 50: "2X EDR",
             56: "4X FDR", 100: "4X EDR", 200: "4X HDR", 400: "4X NDR", 800: "4X XDR"}


def rate_text(p):
    form = RATE_TEXT.get((p["link_layer"], p["rate"])) or RATE_TEXT.get(p["rate"]) or "4X"
    return "%d Gb/sec (%s)" % (p["rate"], form)


def _group4(guid16):
    return ":".join(guid16[i:i + 4] for i in range(0, 16, 4))


def default_gid(p):
    """gids/0: the link-local GID fe80::/64 + the port GUID (on RoCE the MAC-derived EUI-64, as ibstat's Port GUID)."""
    return "fe80:0000:0000:0000:" + _group4(p["port_guid"])


def _by_index(host):
    """RDMA devices in kernel index order: registered as the driver probes the PCI functions."""
    out = []
    for card, fidx in host.functions():
        name = card["functions"][fidx].get("rdma")
        if name:
            out.append((name, card, fidx))
    return out


# ------------------------------------------------------------------------------------------------ ibstatus
def _ibstatus_usage():
    outln("Usage:  ibstatus  [-h] [devname[:portnum]]")
    outln("\t-h:\tthis help screen")
    outln("\tExamples:")
    outln("\t\tibstatus mthca1\t\t# shows status of all ports of 'mthca1'")
    outln("\t\tibstatus mthca0:2\t# shows status port number 2 of 'mthca0'")
    outln("\t\tibstatus\t\t# default: shows status of all 'mthca0' ports")
    return 255


def _ibstatus_port(name, port, p):
    outln("Infiniband device '%s' port %s status:" % (name, port))
    if p is None:          # no such port directory: every read fails
        vals = ["unknown"] * 6 + ["IB"]
    else:
        vals = [default_gid(p), "0x%x" % p["lid"], "0x%x" % p["sm_lid"],
                "%d: %s" % (STATE_NUM.get(p["state"], 1), STATE_SYSFS[STATE_NUM.get(p["state"], 1)]),
                "%d: %s" % (PHYS_NUM.get(p["phys_state"], 3), p["phys_state"]), rate_text(p), p["link_layer"]]
    for label, val in zip(("default gid:\t", "base lid:\t", "sm lid:\t\t", "state:\t\t", "phys state:\t",
                           "rate:\t\t", "link_layer:\t"), vals):
        outln("\t%s %s" % (label, val))
    outln()


def ibstatus(host, args):
    if args and args[0] == "-h":
        return _ibstatus_usage()
    items = _rdma_list(host)
    if not args:
        for name, card, fidx in items:
            _ibstatus_port(name, 1, port_info(card, fidx, host.state))
        return 0
    for arg in args:
        dev, _sep, port = arg.partition(":")
        found = [it for it in items if it[0] == dev]
        if not found:
            outln("Fatal error:  device '%s': sys files not found (/sys/class/infiniband/%s/ports)" % (dev, dev))
            return 255
        _name, card, fidx = found[0]
        p = port_info(card, fidx, host.state)
        _ibstatus_port(dev, port or 1, p if port in ("", "1") else None)
    return 0


# ------------------------------------------------------------------------------------------------ rdma
def _old_format(state):
    return (os.environ.get("MLXSIM_RDMA_FORMAT") or state.get("rdma_format") or "new") == "old"


def _link_line(idx, name, p, old):
    fields = ""
    if p["ib"]:
        fields += "subnet_prefix fe80:0000:0000:0000 lid %d sm_lid %d lmc 0 " % (p["lid"], p["sm_lid"])
    snum = STATE_NUM.get(p["state"], 1)
    fields += "state %s physical_state %s " % (STATE_SYSFS[snum], PHYS_RDMA[PHYS_NUM.get(p["phys_state"], 3)])
    if old:
        return "%d/1: %s/1: %s" % (idx, name, fields)
    return "link %s/1 %snetdev %s " % (name, fields, p["netdev"])


def _rdma_help():
    outln("Usage: rdma [ OPTIONS ] OBJECT { COMMAND | help }")
    outln("       rdma [ -f[orce] ] -b[atch] filename")
    outln("where  OBJECT := { dev | link | resource | monitor | system | statistic | help }")
    outln("       OPTIONS := { -V[ersion] | -d[etails] | -j[son] | -p[retty] | -r[aw]}")


def _match(word, full):
    """iproute2 accepts any prefix of a keyword."""
    return bool(word) and full.startswith(word)


def rdma(host, args):
    args = [a for a in args if a not in ("-d", "-details", "-p", "-pretty")]   # no extra fields simulated
    if not args or _match(args[0], "help"):
        _rdma_help()
        return 0
    obj, rest = args[0], args[1:]
    devs = _by_index(host)
    old = _old_format(host.state)
    if _match(obj, "link"):
        rest = _command(rest, "link", "Usage: rdma link show [DEV/PORT_INDEX]")
        if rest is None:
            return 0
        sel = devs
        if rest:
            dev, _sep, port = rest[0].partition("/")
            sel = [d for d in devs if d[0] == dev]
            if not sel or (port and port != "1"):
                errln("Wrong device name")
                return 1
        for name, card, fidx in sel:
            outln(_link_line(devs.index((name, card, fidx)), name, port_info(card, fidx, host.state), old))
        return 0
    if _match(obj, "dev"):
        rest = _command(rest, "dev", "Usage: rdma dev show [DEV]")
        if rest is None:
            return 0
        sel = devs
        if rest:
            sel = [d for d in devs if d[0] == rest[0]]
            if not sel:
                errln("Wrong device name - %s" % rest[0])
                return 1
        for name, card, fidx in sel:
            p = port_info(card, fidx, host.state)
            outln("%d: %s: node_type ca fw %s node_guid %s sys_image_guid %s " % (
                devs.index((name, card, fidx)), name, card["fw"]["running"], _group4(p["node_guid"]),
                _group4(p["sys_image_guid"])))
        return 0
    errln('Object "%s" is unknown, try "rdma help".' % obj)
    return 1


# ------------------------------------------------------------------------------------------------ ibv_devinfo
# `-v`: the device lines up to max_ah as fixtures/real/ibv_devinfo_vv_cx4_1.txt (ConnectX-4, rdma-core 17.2)
# prints them - the same values for every family [invented beyond the ConnectX-4]. The lines after max_ah
# (max_fmr .. device memory) and the per-port -v lines (max_msg_sz .. GID table) are not simulated.
VERBOSE_DEVICE = [
    ("max_mr_size:\t\t\t", "0xffffffffffffffff"), ("page_size_cap:\t\t\t", "0xfffffffffffff000"),
    ("max_qp:\t\t\t\t", "131072"), ("max_qp_wr:\t\t\t", "32768"), ("device_cap_flags:\t\t", "0x40709c36"),
    None,
    ("max_sge:\t\t\t", "32"), ("max_sge_rd:\t\t\t", "0"), ("max_cq:\t\t\t\t", "16777216"),
    ("max_cqe:\t\t\t", "4194303"), ("max_mr:\t\t\t\t", "16777216"), ("max_pd:\t\t\t\t", "16777216"),
    ("max_qp_rd_atom:\t\t\t", "16"), ("max_ee_rd_atom:\t\t\t", "0"), ("max_res_rd_atom:\t\t", "2097152"),
    ("max_qp_init_rd_atom:\t\t", "16"), ("max_ee_init_rd_atom:\t\t", "0"), ("atomic_cap:\t\t\t", "ATOMIC_NONE (0)"),
    ("max_ee:\t\t\t\t", "0"), ("max_rdd:\t\t\t", "0"), ("max_mw:\t\t\t\t", "0"), ("max_raw_ipv6_qp:\t\t", "0"),
    ("max_raw_ethy_qp:\t\t", "0"), ("max_mcast_grp:\t\t\t", "2097152"), ("max_mcast_qp_attach:\t\t", "240"),
    ("max_total_mcast_qp_attach:\t", "503316480"), ("max_ah:\t\t\t\t", "0"),
]
CAP_FLAGS = ["BAD_PKEY_CNTR", "BAD_QKEY_CNTR", "AUTO_PATH_MIG", "CHANGE_PHY_PORT", "PORT_ACTIVE_EVENT",
             "SYS_IMAGE_GUID", "RC_RNR_NAK_GEN", "XRC", "MEM_MGT_EXTENSIONS", "Unknown flags: 0x40408000"]


def _devinfo_usage():
    outln("Usage: ibv_devinfo             print the ca attributes")
    outln("")
    outln("Options:")
    outln("  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)")
    outln("  -i, --ib-port=<port>   use port <port> of IB device (default all ports)")
    outln("  -l, --list             print only the IB devices names")
    outln("  -v, --verbose          print all the attributes of the IB device(s)")


def _active_mtu(p):
    return perf.port_active_mtu(p["link_layer"], perf.kernel_mtu(p["netdev"]) or 1500)


def _hca(host, name, card, fidx, port, verbose):
    fam = families.of(card)
    p = port_info(card, fidx, host.state)
    if port and port > 1:
        errln("Invalid port requested for device")
        return 4
    outln("hca_id:\t%s" % name)
    outln("\ttransport:\t\t\tInfiniBand (0)")
    outln("\tfw_ver:\t\t\t\t%s" % card["fw"]["running"])
    outln("\tnode_guid:\t\t\t%s" % _group4(p["node_guid"]))
    outln("\tsys_image_guid:\t\t\t%s" % _group4(p["sys_image_guid"]))
    outln("\tvendor_id:\t\t\t0x02c9")
    outln("\tvendor_part_id:\t\t\t%d" % fam["dev_id"])
    outln("\thw_ver:\t\t\t\t0x%X" % fam["rev"])
    outln("\tboard_id:\t\t\t%s" % faults.effective_psid(host.state, card))
    outln("\tphys_port_cnt:\t\t\t1")
    if verbose:
        for row in VERBOSE_DEVICE:
            if row is None:
                for flag in CAP_FLAGS:
                    outln("\t\t\t\t\t%s" % flag)
            else:
                outln("\t%s%s" % row)
    snum = STATE_NUM.get(p["state"], 1)
    mtu = _active_mtu(p)
    outln("\t\tport:\t1")
    outln("\t\t\tstate:\t\t\t%s (%d)" % (VERBS_STATE[snum], snum))
    outln("\t\t\tmax_mtu:\t\t4096 (5)")
    outln("\t\t\tactive_mtu:\t\t%d (%d)" % (mtu, MTU_ENUM[mtu]))
    outln("\t\t\tsm_lid:\t\t\t%d" % p["sm_lid"])
    outln("\t\t\tport_lid:\t\t%d" % p["lid"])
    outln("\t\t\tport_lmc:\t\t0x00")
    outln("\t\t\tlink_layer:\t\t%s" % p["link_layer"])
    outln()
    return 0


def ibv_devinfo(host, args):
    dev, port, verbose, listing = None, 0, False, False
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-h", "--help"):
            _devinfo_usage()
            return 255
        if a in ("-d", "--ib-dev", "-i", "--ib-port"):
            if i + 1 >= len(args):
                errln("ibv_devinfo: option requires an argument -- '%s'" % a.lstrip("-")[0])
                _devinfo_usage()
                return 255
            val, i = args[i + 1], i + 1
        elif a.startswith(("--ib-dev=", "--ib-port=")):
            a, val = a.split("=", 1)
        elif a.startswith(("-d", "-i")) and len(a) > 2:
            a, val = a[:2], a[2:]
        elif a in ("-l", "--list"):
            listing = True
            i += 1
            continue
        elif a == "--verbose" or (a.startswith("-v") and set(a[1:]) == {"v"}):
            verbose = True
            i += 1
            continue
        else:
            errln("ibv_devinfo: invalid option -- '%s'" % a.lstrip("-")[:1])
            _devinfo_usage()
            return 255
        if a in ("-d", "--ib-dev"):
            dev = val
        else:
            try:
                port = int(val, 0)
            except ValueError:
                port = 0
            if port <= 0:
                _devinfo_usage()
                return 1
        i += 1
    devs = _by_index(host)
    if listing:
        outln("%d HCA%s found:" % (len(devs), "" if len(devs) == 1 else "s"))
        for name, _c, _f in devs:
            outln("\t%s" % name)
        outln()
        return 0
    if dev is not None:
        sel = [d for d in devs if d[0] == dev]
        if not sel:
            errln("IB device '%s' wasn't found" % dev)
            return 255
        devs = sel
    elif not devs:
        errln("No IB devices found")
        return 255
    rc = 0
    for name, card, fidx in devs:
        rc |= _hca(host, name, card, fidx, port, verbose)
    return rc


def _command(rest, obj, usage):
    """The words after ``rdma OBJ``: its ``help`` (prints ``usage``), ``show``/``list`` (dropped) or an unknown
    command (named) - None when the command is done, else the words left (the device)."""
    if rest and _match(rest[0], "help"):
        outln(usage)
        return None
    if rest and (_match(rest[0], "show") or _match(rest[0], "list")):
        return rest[1:]
    if rest:
        errln("Unknown %s command '%s'." % (obj, rest[0]))
        return None
    return rest


def run(tool, args):
    host = model.Host(st.load())
    if tool == "ibstatus":
        return ibstatus(host, args)
    if tool == "rdma":
        return rdma(host, args)
    return ibv_devinfo(host, args)
