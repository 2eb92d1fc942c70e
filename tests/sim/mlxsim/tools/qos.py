"""mlnx_qos and cma_roce_tos (mlnx-tools), per port of the simulated host.

mlnx_qos follows python/mlnx_qos of github.com/Mellanox/mlnx-tools (netlink flavour: trust is "dscp"
when the DCB APP table holds DSCP entries): the same option parser, the same order of work (dcbx,
cable_len, get/specific pfc, pfc, dscp2prio, trust, buffers, ratelimit, ETS) - so an earlier
option is already applied when a later one is refused, as on a real host - the same messages, and
pretty_print's layout (tabs, "%1d   " columns with trailing spaces, tc lines only for traffic
classes that hold a priority unless -a). Defaults are what the mlx5e driver sets at probe
(mlx5e_ets_init / the real captures): DCBX OS controlled, trust pcp, no PFC, every tc tsa vendor,
priority 0 in tc1 and 1 in tc0, cable len 7, receive buffer 524160 in buffer 0.
Kernel-side validation of ETS (ets bandwidths must add up to 100) answers like the netlink error
the script prints: "Netlink error: Invalid argument (22)".

cma_roce_tos follows sbin/cma_roce_tos: getopts d:t:hp:, configfs under the simulated root
(sys/kernel/config/rdma_cm): mkdir DEV (fails for an unknown device), check ports/PORT, echo the
ToS (kstrtou8: >255 is a write error, the old value stays), cat it, rmdir what it created.
The value lives on in the (simulated) kernel until a reboot or driver reload.
"""
import optparse
import os
import shutil
import sys

from .. import state as st
from .. import sysfs
from ..common import errln, outln

TSA_STRICT, TSA_ETS, TSA_VENDOR = 0, 2, 255
TSA_NAME = {TSA_STRICT: "strict", TSA_ETS: "ets", TSA_VENDOR: "vendor"}
DCBX_HOST = 0x1
MAX_BW = 100


class Exit(Exception):
    def __init__(self, rc):
        Exception.__init__(self, rc)
        self.rc = rc


def default_port():
    return {"dcbx": DCBX_HOST | 0x8, "app_dscp": [], "pfc_en": 0, "cable_len": 7,
            "prio_tc": [1, 0, 2, 3, 4, 5, 6, 7], "tsa": [TSA_VENDOR] * 8, "tc_bw": [MAX_BW] * 8,
            "ratelimit": [0] * 8, "buffer_size": [524160, 0, 0, 0, 0, 0, 0, 0], "prio2buffer": [0] * 8}


def runtime(state):
    return state.setdefault("runtime", {})


def port_state(state, netdev):
    qos = runtime(state).setdefault("qos", {})
    if netdev not in qos:
        qos[netdev] = default_port()
    return qos[netdev]


# ---------------------------------------------------------------------------------------- mlnx_qos

def _parser():
    p = optparse.OptionParser(prog="mlnx_qos", usage="%prog -i <interface> [options]", version="%prog 1.2")
    p.add_option("-f", "--pfc", dest="pfc", metavar="LIST",
                 help="Set priority flow control for each priority (8 comma separated 0/1)")
    p.add_option("-F", "--specific_pfc", dest="specific_pfc", metavar="LIST",
                 help="Set priority flow control for specific priorities (x keeps a priority)")
    p.add_option("-P", "--get_pfc", dest="get_pfc", help="Get priority flow control status of one priority")
    p.add_option("-p", "--prio_tc", dest="prio_tc", metavar="LIST", help="maps UPs to TCs (8 TC numbers)")
    p.add_option("-s", "--tsa", dest="tsa", metavar="LIST",
                 help="Transmission algorithm for each TC: strict, ets or vendor")
    p.add_option("-t", "--tcbw", dest="tc_bw", metavar="LIST",
                 help="Set minimal guaranteed %BW for ETS TCs (percents, ETS TCs sum to 100)")
    p.add_option("-r", "--ratelimit", dest="ratelimit", metavar="LIST", help="Rate limit for TCs (in Gbps)")
    p.add_option("-d", "--dcbx", dest="dcbx", help="set dcbx mode to firmware controlled(fw) or OS controlled(os)")
    p.add_option("--trust", dest="trust", help="set priority trust state to pcp or dscp")
    p.add_option("--dscp2prio", dest="dscp2prio", action="append",
                 help="set/del a (dscp,prio) mapping, or 'flush' to delete all")
    p.add_option("--cable_len", dest="cable_len", help="set cable_len for buffer's xoff and xon thresholds")
    p.add_option("--prio2buffer", dest="prio2buffer", metavar="LIST", help="maps priority to receive buffer")
    p.add_option("--buffer_size", dest="buffer_size", metavar="LIST", help="Set receive buffer size")
    p.add_option("-i", "--interface", dest="intf", help="Interface name")
    p.add_option("-a", action="store_true", dest="printall", default=False, help="Show all interface's TCs")
    return p


def _usage(parser):
    parser.print_usage(sys.stdout)


def _fail(msg, parser=None):
    outln(msg)
    if parser is not None:
        _usage(parser)
    raise Exit(1)


def _parse_int(text, low, high, what, parser):
    try:
        v = int(text)
        if v < low or v > high:
            raise ValueError("%d is not in the range %d..%d" % (v, low, high))
        return v
    except ValueError as e:
        _fail("Bad value for %s: %s" % (what, e), parser)


def _trust(port):
    return "dscp" if port["app_dscp"] else "pcp"


def _pretty(port, printall):
    outln("DCBX mode: OS controlled" if port["dcbx"] & DCBX_HOST else "DCBX mode: Firmware controlled")
    trust = _trust(port)
    outln("Priority trust state: " + trust)
    if trust == "dscp":
        outln("dscp2prio mapping:")
        s = [""] * 8
        for dscp, prio in reversed(port["app_dscp"]):      # the kernel's APP list: newest first
            s[prio] += "%02d," % dscp
        for i in range(8):
            temp, pad = "", "\tprio:%d dscp:" % i
            while len(s[i]) > 24:
                temp += pad + s[i][:24] + "\n"
                s[i] = s[i][24:]
            if s[i]:
                temp += pad + s[i]
            if temp:
                outln(temp)
    outln("Receive buffer size (bytes): " + "".join("%1d," % b for b in port["buffer_size"]))
    outln("Cable len: %d" % port["cable_len"])
    outln("PFC configuration:")
    outln("\tpriority    0   1   2   3   4   5   6   7")
    msg = "\tenabled     " + "".join("%1d   " % ((port["pfc_en"] >> up) & 1) for up in range(8))
    msg += "\n\tbuffer      " + "".join("%1d   " % port["prio2buffer"][up] for up in range(8))
    outln(msg)
    tc2up = {}
    if printall:
        for i in range(8):
            tc2up.setdefault(i, [])
    for up, tc in enumerate(port["prio_tc"]):
        tc2up.setdefault(int(tc), []).append(up)
    for tc in sorted(tc2up):
        rate = port["ratelimit"][tc]
        r = "%.1f Gbps" % float(rate) if rate > 0 else "unlimited"
        msg = "tc: %d ratelimit: %s, tsa: " % (tc, r)
        tsa = port["tsa"][tc]
        if tsa == TSA_ETS:
            msg += "ets, bw: %s%%" % port["tc_bw"][tc]
        else:
            msg += TSA_NAME.get(tsa, "unknown")
        outln(msg)
        for up in tc2up[tc]:
            outln("\t priority:  %s" % up)


def _no_dcb(options, parser, exists):
    """The script on an interface whose DCB netlink answers with an error: ENODEV for a name the host
    does not have, EOPNOTSUPP for a netdev without DCB (lo, IPoIB). The calls outside the script's
    try blocks (dcbx, cable_len, the pfc options) die with a traceback; the rest print their
    "not supported" line and carry on until ETS, which exits 1."""
    err = "Netlink error: Operation not supported (95)" if exists else "Netlink error: No such device (19)"
    if options.dcbx not in (None, "os", "fw", "get"):
        _fail("Invalid dcbx mode command. Refer to the help.")
    last = None
    if options.dcbx in ("os", "fw") or options.cable_len or options.get_pfc or options.specific_pfc:
        if options.dcbx not in ("os", "fw") and options.cable_len:
            _parse_int(options.cable_len, 0, 0xffff, "cable_len", parser)
        last = "OSError: " + err
    elif options.pfc:
        items = options.pfc.split(",")
        for i, t in enumerate(items):
            if i >= 8:
                _fail("Too many items for PFC")
            _parse_int(t, 0, 1, "PFC", parser)
        if len(items) != 8:
            _fail("pfc list must have 8 items")
        # print('mlnx_qos: Error setting pfc:' + e) in the except clause
        last = 'TypeError: can only concatenate str (not "OSError") to str'
    if last:
        errln("Traceback (most recent call last):")
        errln('  File "/usr/bin/mlnx_qos", line 1, in <module>')
        errln(last)
        raise Exit(1)
    if options.dscp2prio and options.trust:
        _fail("trust and dscp2prio commands cannot be used at the same time.")
    if options.dscp2prio:
        _fail("dscp2prio command failed")
    if options.trust and options.trust not in ("dscp", "pcp"):
        _fail("Invalid trust state command. Refer to the help.")
    outln("Priority trust state is not supported on your system")
    if options.trust:
        raise Exit(1)
    outln("Buffers commands are not supported on your system")
    if options.buffer_size or options.prio2buffer:
        raise Exit(1)
    if options.ratelimit:
        outln("Rate limit is not supported on your system!")
    outln("Rate limit is not supported on your system!")
    _fail("ETS features are not supported on your system")


def _validate_ets(prio_tc, tsa, tc_bw):
    """mlx5e_dbcnl_validate_ets: the ETS classes' bandwidths must add up to 100."""
    ets = [bw for t, bw in zip(tsa, tc_bw) if t == TSA_ETS]
    if ets and sum(ets) != 100:
        return False
    return all(0 <= tc < 8 for tc in prio_tc)


def mlnx_qos(state, args):
    parser = _parser()
    try:
        options, rest = parser.parse_args(args)
    except SystemExit as e:        # optparse: usage + "mlnx_qos: error: ..." on stderr, rc 2
        return e.code if isinstance(e.code, int) else 2
    if rest:
        _fail("Bad arguments", parser)
    if options.intf is None:
        _fail("Interface name is required", parser)
    where = sysfs.find_netdev(state, options.intf)
    if where is None or not where["eth"]:
        _no_dcb(options, parser, where is not None or options.intf == "lo")
    port = port_state(state, options.intf)

    def save():
        with st.transaction() as s:
            runtime(s).setdefault("qos", {})[options.intf] = port

    if options.dcbx is not None:
        if options.dcbx == "os":
            port["dcbx"] |= DCBX_HOST
        elif options.dcbx == "fw":
            port["dcbx"] = 0
        elif options.dcbx != "get":
            _fail("Invalid dcbx mode command. Refer to the help.")
        save()
    if options.cable_len:
        port["cable_len"] = _parse_int(options.cable_len, 0, 0xffff, "cable_len", parser)
        save()
    if options.get_pfc:
        index = int(options.get_pfc)
        if index not in range(0, 8):
            _fail("pfc index must be in range of 0-7")
        outln(str((port["pfc_en"] >> index) & 1))
        return 0
    if options.specific_pfc:
        items = options.specific_pfc.split(",")
        if len(items) != 8:
            _fail("pfc list must have 8 items")
        pfc = port["pfc_en"]
        for prio, t in enumerate(items):
            if t != "x":
                if t not in ("0", "1"):
                    _fail("Bad value for 'PFC': %s" % t)
                pfc = (pfc & ~(1 << prio)) | (int(t) << prio)
        port["pfc_en"] = pfc
        save()
        return 0
    if options.pfc:
        pfc, i = 0, 0
        for t in options.pfc.split(","):
            if i >= 8:
                _fail("Too many items for PFC")
            pfc |= _parse_int(t, 0, 1, "PFC", parser) << i
            i += 1
        if i != 8:
            _fail("pfc list must have 8 items")
        port["pfc_en"] = pfc
        save()
    if options.dscp2prio and options.trust:
        _fail("trust and dscp2prio commands cannot be used at the same time.")
    actions = []
    for opt in options.dscp2prio or []:
        if opt == "flush":
            actions.append((opt, None, None))
            continue
        try:
            action, dscp, prio = opt.split(",")
            dscp, prio = int(dscp), int(prio)
        except ValueError:
            _fail("Invalid dscp2prio command. Refer to the help.")
        if action not in ("set", "del") or dscp > 63 or prio > 7:
            raise Exit(1)                      # the script exits silently here
        actions.append((action, dscp, prio))
    for action, dscp, prio in actions:
        table = port["app_dscp"]
        if action == "set":
            port["app_dscp"] = [e for e in table if e[0] != dscp] + [[dscp, prio]]
        elif action == "del":
            port["app_dscp"] = [e for e in table if e != [dscp, prio]]
        else:
            port["app_dscp"] = []
    if actions:
        save()
    if options.trust:
        if options.trust not in ("dscp", "pcp"):
            _fail("Invalid trust state command. Refer to the help.")
        if _trust(port) != options.trust:
            port["app_dscp"] = [[i, i >> 3] for i in range(64)] if options.trust == "dscp" else []
            save()
    if options.prio2buffer or options.buffer_size:
        if options.prio2buffer:
            for i, t in enumerate(options.prio2buffer.split(",")):
                if i >= 8:
                    _fail("Too many items for prio2buffer")
                port["prio2buffer"][i] = _parse_int(t, 0, 7, "prio buffer", parser)
        if options.buffer_size:
            try:
                for i, t in enumerate(options.buffer_size.split(",")):
                    if i >= 8:
                        _fail("Too many items for buffer_size")
                    port["buffer_size"][i] = int(t)
            except ValueError:
                _fail("Buffers commands error")
        save()
    if options.ratelimit:
        rates, i = [], 0
        for r in options.ratelimit.split(","):
            if i >= 8:
                _fail("Too many items for ratelimit")
            rates.append(_parse_int(r, 0, 1000000, "ratelimit", parser))
            i += 1
        if i != 8:
            _fail("ratelimit must have 8 items")
        port["ratelimit"] = rates
        save()
    prio_tc, tsa, tc_bw = list(port["prio_tc"]), list(port["tsa"]), list(port["tc_bw"])
    if options.tsa:
        i = 0
        for t in options.tsa.split(","):
            if i >= 8:
                _fail("Too many items for TSA")
            if t == "strict":
                tsa[i] = TSA_STRICT
            elif t == "ets":
                tsa[i] = TSA_ETS
            elif t == "vendor":
                tsa[i] = TSA_VENDOR
            else:
                _fail(str(("Bad TSA value: ", t)), parser)
            i += 1
        if i != 8:
            _fail("tsa list must have 8 items")
    if options.tc_bw:
        i = 0
        for t in options.tc_bw.split(","):
            if i >= 8:
                _fail("Too many items for ETS BW")
            bw = _parse_int(t, 0, 100, "ETS BW", parser)
            if tsa[i] != TSA_ETS and bw != 0:
                _fail("ETS BW for a strict/vendor TC must be 0", parser)
            tc_bw[i] = bw
            i += 1
        if i != 8:
            _fail("tcbw list must have 8 items")
    if options.prio_tc:
        i = 0
        for t in options.prio_tc.split(","):
            if i >= 8:
                _fail("Too many items in UP => TC mapping")
            prio_tc[i] = _parse_int(t, 0, 7, "UP => TC mapping", parser)
            i += 1
        if i != 8:
            _fail("prio_tc list must have 8 items")
    if options.tsa or options.tc_bw or options.prio_tc:
        if not _validate_ets(prio_tc, tsa, tc_bw):
            _fail("Netlink error: Invalid argument (22)")
        # the driver keeps 100% for strict and vendor classes (mlx5e_build_tc_tx_bw)
        port["prio_tc"], port["tsa"] = prio_tc, tsa
        port["tc_bw"] = [bw if t == TSA_ETS else MAX_BW for t, bw in zip(tsa, tc_bw)]
        save()
    _pretty(port, options.printall)
    return 0


# ---------------------------------------------------------------------------------------- cma_roce_tos

CMA_USAGE = """Set/Show RoCE default ToS of RDMA_CM applications

Usage:
\tcma_roce_tos OPTIONS
Options:
\t-h              show this help
\t-d <dev>        use IB device <dev> (default mlx5_0)
\t-p <port>       use port <port> of IB device (default 1)
\t-t <tos>        set ToS of RoCE RDMA_CM applications (0)"""


def _getopts(args, spec="d:t:hp:"):
    """bash getopts: options until the first non-option; errors go to stderr and parsing goes on."""
    found = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            break
        if not a.startswith("-") or a == "-":
            break
        j = 1
        while j < len(a):
            c = a[j]
            k = spec.find(c)
            if k < 0 or c == ":":
                errln("cma_roce_tos: illegal option -- %s" % c)
                j += 1
                continue
            if k + 1 < len(spec) and spec[k + 1] == ":":
                if j + 1 < len(a):
                    found.append((c, a[j + 1:]))
                elif i + 1 < len(args):
                    i += 1
                    found.append((c, args[i]))
                else:
                    errln("cma_roce_tos: option requires an argument -- %s" % c)
                break
            found.append((c, None))
            j += 1
        i += 1
    return found


def _bash_int(text):
    text = text.strip()
    if text.startswith("-"):
        return -int(text[1:]) if text[1:].isdigit() else None
    return int(text) if text.isdigit() else None


def _kstrtou8(text):
    """kstrtou8(buf, 0, ...) of what echo wrote: 0x.. hex, 0.. octal, else decimal; None = -EINVAL."""
    t = text.strip()
    try:
        if t.lower().startswith("0x"):
            v = int(t[2:], 16)
        elif len(t) > 1 and t.startswith("0"):
            v = int(t[1:], 8)
        else:
            v = int(t, 10) if t.isdigit() else None
    except ValueError:
        return None
    return v if v is not None and 0 <= v <= 255 else None


def cma_roce_tos(state, args):
    device, port, mode = "mlx5_0", "1", "-1"
    for opt, val in _getopts(args):
        if opt == "h":
            outln(CMA_USAGE)
            return 0
        if opt == "d":
            device = val
        elif opt == "p":
            port = val
        elif opt == "t":
            mode = val
    root = sysfs.ensure(state)
    cfg = os.path.join(root, "sys", "kernel", "config", "rdma_cm")
    if not os.path.isdir(cfg):
        outln("Module rdma_cm is not loaded or does not support configfs")
        return 1
    key = "%s/%s" % (device, port)
    tos = runtime(state).setdefault("cma_roce_tos", {})
    dev_dir = os.path.join(cfg, device)
    need_clean = False
    if not os.path.isdir(dev_dir):
        where = sysfs.find_rdma(state, device) if "/" not in device else None
        if where is None:
            errln("mkdir: cannot create directory '%s': No such device" % device)
            outln("Failed to create configuration for %s" % device)
            return 1
        tpath = os.path.join(dev_dir, "ports", str(where["port"]))
        os.makedirs(tpath, exist_ok=True)
        with open(os.path.join(tpath, "default_roce_tos"), "w") as fh:
            fh.write("%d\n" % tos.get("%s/%d" % (device, where["port"]), 0))
        with open(os.path.join(tpath, "default_roce_mode"), "w") as fh:
            fh.write("RoCE v2\n")
        need_clean = True
    pdir = os.path.join(dev_dir, "ports", port)
    if not port or not os.path.isdir(pdir):
        outln("Device %s port %s does not exist" % (device, port))
        return 1
    fpath = os.path.join(pdir, "default_roce_tos")
    try:
        with open(fpath) as fh:
            current = _kstrtou8(fh.read())
    except OSError:
        current = None
    if current is None:
        current = tos.get(key, 0)
    value = _bash_int(mode)
    if value is None:
        errln("cma_roce_tos: line 109: [: %s: integer expression expected" % mode)
    elif value >= 0:
        new = _kstrtou8(mode)
        if new is None:
            errln("cma_roce_tos: line 110: echo: write error: Invalid argument")
        else:
            current = new
    with open(fpath, "w") as fh:
        fh.write("%d\n" % current)
    if tos.get(key, 0) != current:
        with st.transaction() as s:
            runtime(s).setdefault("cma_roce_tos", {})[key] = current
    outln(str(current))
    if need_clean:
        shutil.rmtree(dev_dir, ignore_errors=True)
    return 0


def run(tool, args):
    state = st.load()
    sysfs.ensure(state)
    try:
        if tool == "mlnx_qos":
            return mlnx_qos(state, args)
        return cma_roce_tos(state, args)
    except Exit as e:
        return e.rc
