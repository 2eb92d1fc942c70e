"""mst (MFT only): start / stop / restart / status [-v] / version.

Formats from fixtures/real/mst_status_*.txt: 33-char device column, 35-space continuation
lines, "-v" table with a blank line after every row, ".1" suffix for the second function and
"net-" prefixed interface names. The "-v" table's widths are mdevices_info's (see verbose_layout): MST 30
(9 when the modules are not loaded), PCI 10 (16 when some device needs its domain), RDMA 16, NET by MFT
version, NUMA 6 - every cell padded, so rows end in spaces. An unknown argument of `status` (the typo `mst status --v`) prints
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


def verbose_layout(state):
    """Which `mst status -v` table the MFT build prints (mdevices_info, mstflint's copy in mst_utils/
    mdevices_info.c, ported from MFT at v4.31 and changed since):

    - "26": NET ``%-26s`` - the older MFT of fixtures/real/mst_status_v_bf2_1.txt (2022). MFT below 4.24.
    - "40": NET ``%-40s`` - mdevices_info as ported at mstflint v4.31 (MFT 4.30-4.31 in mst_status_v_bf3_1.txt /
      mst_status_v_vfs_cx7_1.txt; mst_status_v_bf2_2.txt, whose notes name MFT 4.24.0-72 on the DPU). The 4.24
      boundary is the oldest release seen near a 40-wide table, not a documented change [invented boundary].
      A function with neither an RDMA device nor a netdev gets no RDMA cell (its row is 16 characters short).
    - "4.33": a VFIO column: header ``%-16s`` "VFIO", every row ``vfio-<bus:dev.fn>`` (commit 77c9fb80).
    - "4.34": the same header; a row prints one space when vfio-pci is not loaded (commit cdceae89).
    - "4.35": NET as wide as the longest NET entry of the host + 2 (get_max_net_column_width, commit 981b17bb),
      the RDMA cell always printed, then VFIO ``%-18s``, FWCTL ``%-25s``, STATE ``%-12s`` (commit 0a730939); each
      empty cell one space.
    No capture of the 4.33-4.35 tables is public: they follow the source only.
    """
    v = versions.effective(versions.mft_version(state), True)
    if v < (4, 24):
        return "26"
    if v < (4, 33):
        return "40"
    if v < (4, 34):
        return "4.33"
    if v < (4, 35):
        return "4.34"
    return "4.35"


def _verbose_rows(host, started):
    """(DEVICE_TYPE, MST, PCI address, RDMA, NET, NUMA) per listed function.

    Modules loaded: the /dev/mst nodes of the PFs (the second function before the first, as the captures).
    Modules not loaded (mdevices_info's "ul" mode: it reads /sys/bus/pci): MST is "NA" for every row, PFs keep
    their DEVICE_TYPE, and every SR-IOV VF is a row of its own with DEVICE_TYPE "NA" (it cannot be identified
    from its configuration space) - fixtures/real/mst_status_v_vfs_cx7_1.txt. The real order of those rows is the
    sysfs directory order (mixed in the capture); here each card's PFs then its VFs. With the modules loaded the
    VFs get no /dev/mst node and no row [invented: no capture of VFs with the modules loaded]."""
    rows = []
    vfs = model.vf_functions(host.state) if not started else []
    for card in host.cards():
        fam = families.of(card)
        dtype = "%s(rev:%x)" % (card["family"], fam["rev"])
        if card.get("vf"):          # a VF given to this VM (profiles azure-nd-*-vm): a VF row, or none
            if not started:
                f = card["functions"][0]
                rows.append(("NA", "NA", f["pci"], f.get("rdma") or "", "net-" + model.netdev(card, 0),
                             str(card["numa"])))
            continue
        for fidx in reversed(range(len(card["functions"]))):
            f = card["functions"][fidx]
            mst = host.mst_path(card, fidx) if started else "NA"
            # no RDMA device: no mlx5 driver bound to the function, so no netdev either (mst_status_v_bf2_2.txt)
            net = "net-" + model.netdev(card, fidx) if f.get("rdma") else ""
            rows.append((dtype, mst, f["pci"], f.get("rdma") or "", net, str(card["numa"])))
        pfs = {f["pci"] for f in card["functions"]}
        for vf in vfs:
            if vf["pf"] in pfs:
                rows.append(("NA", "NA", vf["pci"], vf["rdma"], "net-" + vf["netdev"], str(vf["numa"])))
    return rows


def _verbose(host, started):
    layout = verbose_layout(host.state)
    rows = _verbose_rows(host, started)
    domain = any(not r[2].startswith("0000:") for r in rows)
    mst_w = 30 if started else 9
    pci_w = 16 if domain else 10
    if layout == "26":
        net_w = 26
    elif layout == "4.35":
        net_w = max([1] + [1 + len(r[4]) for r in rows]) + 1
    else:
        net_w = 40
    head = "%-24s%-*s%-*s%-16s%-*s%-6s" % ("DEVICE_TYPE", mst_w, "MST", pci_w, "PCI", "RDMA", net_w, "NET", "NUMA")
    if layout in ("4.33", "4.34"):
        head += "%-16s" % "VFIO"
    elif layout == "4.35":
        head += "%-18s%-25s%-12s" % ("VFIO", "FWCTL", "STATE")
    outln("PCI devices:")
    outln("------------")
    outln(head)
    for dtype, mst, pci, rdma, net, numa in rows:
        addr = pci if domain else model.short_pci(pci)
        # before 4.35 a function with neither an RDMA device nor a netdev gets no RDMA cell at all: its row is 16
        # characters short (print_pci_info of mstflint v4.31; fixtures/real/mst_status_v_bf2_2.txt)
        rdma_cell = "" if layout != "4.35" and not rdma and not net else "%-16s" % (rdma or " ")
        line = "%-24s%-*s%-*s%s%-*s%-6s" % (dtype, mst_w, mst, pci_w, addr, rdma_cell, net_w, net or " ", numa)
        if layout == "4.33":
            line += "vfio-%-6s" % addr
        elif layout == "4.34":
            line += " "
        elif layout == "4.35":
            line += "%-18s%-25s%-12s" % (" ", " ", " ")
        outln(line)
        outln()
    return 0


def status(host, verbose, unknown=None):
    started = host.mst_started
    _modules(started)
    if unknown is not None:
        outln('    -E- Unknown argument "%s"' % unknown)
        return UNKNOWN_ARG_RC
    if verbose:
        return _verbose(host, started)
    if not started:
        return 0
    outln()
    outln("MST devices:")
    outln("------------")
    for card in [c for c in host.cards() if not c.get("vf")]:
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
