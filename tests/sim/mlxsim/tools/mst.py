"""mst (MFT only): start / stop / restart / status [-v] / version.

Formats from fixtures/real/mst_status_*.txt: 33-char device column, 35-space continuation
lines, "-v" table with a blank line after every row, ".1" suffix for the second function and
"net-" prefixed interface names. An unknown argument of `status` (the typo `mst status --v`) prints
the modules block, then `    -E- Unknown argument "--v"` and no devices (fixtures/real/
mst_status_unknown_arg_cx5_1.txt); its exit code is not public: 1 here [invented].
"""
from .. import faults, families, model, versions
from .. import state as st
from ..common import out, outln

MODULES_LOADED = ["    MST PCI module is not loaded", "    MST PCI configuration module loaded"]
MODULES_UNLOADED = ["    MST PCI module is not loaded", "    MST PCI configuration module is not loaded"]


def _modules(started):
    outln("MST modules:")
    outln("------------")
    for line in (MODULES_LOADED if started else MODULES_UNLOADED):
        outln(line)


STATUS_ARGS = ("-v", "-vv")
UNKNOWN_ARG_RC = 1        # [invented] the real script's exit code for it is not public


def status(host, verbose, unknown=None):
    started = host.mst_started
    _modules(started)
    if unknown is not None:
        outln('    -E- Unknown argument "%s"' % unknown)
        return UNKNOWN_ARG_RC
    if verbose:
        rows = []
        for card in host.cards():
            fam = families.of(card)
            dtype = "%s(rev:%d)" % (card["family"], fam["rev"])
            # the real tool lists the second function of a card before the first one
            for fidx in reversed(range(len(card["functions"]))):
                f = card["functions"][fidx]
                mst = host.mst_path(card, fidx) if started else "NA"
                rows.append((dtype, mst, model.short_pci(f["pci"]), f.get("rdma") or "",
                             "net-" + model.netdev(card, fidx), str(card["numa"])))
        net_w = max([26] + [len(r[4]) + 7 for r in rows])
        outln("PCI devices:")
        outln("------------")
        fmt = "%-24s%-30s%-10s%-16s%-*s%s"
        outln(fmt % ("DEVICE_TYPE", "MST", "PCI", "RDMA", net_w, "NET", "NUMA"))
        for r in rows:
            outln(fmt % (r[0], r[1], r[2], r[3], net_w, r[4], r[5]))
            outln()
        return 0
    if not started:
        return 0
    outln()
    outln("MST devices:")
    outln("------------")
    for card in host.cards():
        f = card["functions"][0]
        outln("%-33s- PCI configuration cycles access." % host.mst_path(card, 0))
        outln(" " * 35 + "domain:bus:dev.fn=%s addr.reg=88 data.reg=92 cr_bar.gw_offset=-1" % f["pci"])
        outln(" " * 35 + "Chip revision is: %02X" % families.of(card)["rev"])
    outln()
    return 0


def _start_without_modules(kernel):
    """``mst start`` when modprobe finds no mst_pci / mst_pciconf for the running kernel (the real capture
    mst_start_fail_1.txt: modprobe's message runs on from the step's words, then ``- Failure: 1``)."""
    where = "/lib/modules/%s" % kernel
    outln("Starting MST (Mellanox Software Tools) driver set")
    outln("Loading MST PCI modulemodprobe: FATAL: Module mst_pci not found in directory %s" % where)
    outln(" - Failure: 1")
    outln("Loading MST PCI configuration modulemodprobe: FATAL: Module mst_pciconf not found in directory %s" % where)
    outln(" - Failure: 1")
    outln("Create devices")
    outln()
    outln("mst_pci driver not found")
    outln('-W- Missing "lsusb" command, skipping MTUSB devices detection')
    outln("Unloading MST PCI module (unused)modprobe: FATAL: Module mst_pci not found.")
    outln(" - Failure: 1")
    outln("Unloading MST PCI configuration module (unused)modprobe: FATAL: Module mst_pciconf not found.")
    outln(" - Failure: 1")
    return 1


def start():
    s = st.load()
    if faults.find(s, "mst_modules_missing"):
        return _start_without_modules((s.get("platform") or {}).get("kernel") or "unknown")
    outln("Starting MST (Mellanox Software Tools) driver set")
    if s.get("mst_started"):
        outln("Loading MST PCI module - Success")
        outln("[warn] mst_pciconf is already loaded, skipping")
    else:
        st.sim_sleep(2.0)
        outln("Loading MST PCI module - Success")
        outln("Loading MST PCI configuration module - Success")
    outln("Create devices")
    outln("Unloading MST PCI module (unused) - Success")
    with st.transaction() as s2:
        s2["mst_started"] = True
    return 0


def stop():
    s = st.load()
    outln("Stopping MST (Mellanox Software Tools) driver set")
    if s.get("mst_started"):
        outln("Unloading MST PCI configuration module - Success")
    else:
        outln("Unloading MST PCI configuration module (unused) - Success")
    with st.transaction() as s2:
        s2["mst_started"] = False
    return 0


USAGE = """Usage:
    /usr/bin/mst {start|stop|status|remote|server|restart|save|load|rm|add|help|version|gearbox|cable}

Type "/usr/bin/mst help" for detailed help
"""


def run(tool, args):
    cmd = args[0] if args else ""
    if cmd == "start":
        return start()
    if cmd == "stop":
        return stop()
    if cmd == "restart":
        stop()
        return start()
    if cmd == "status":
        host = model.Host(st.load())
        unknown = next((a for a in args[1:] if a not in STATUS_ARGS), None)
        verbose = any(a in STATUS_ARGS for a in args[1:])
        return status(host, verbose, unknown)
    if cmd == "version":
        s = st.load()
        outln("mst, mft %s, built on Nov 14 2024, 10:27:42. Git SHA Hash: 0bd3c6f" % versions.mft_version(s))
        return 0
    out(USAGE)
    return 1 if cmd not in ("help", "-h", "--help") else 0
