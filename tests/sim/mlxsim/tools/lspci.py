"""lspci, limited to the simulated Mellanox functions.

Supported: -d VENDOR:[DEVICE], -D, -s SLOT, -n, -nn, -k, -v/-vv/-vvv. Formats from
fixtures/real/lspci_*.txt (device names from pci.ids; VPD block as in lspci_vv_vpd_bf2_1.txt and
lspci_vvvvv_vpd_cx4_1.txt; tabs as real lspci prints them). The class follows the port's current
link type (Infiniband controller / Ethernet controller), the SR-IOV capability the current
SRIOV_EN / NUM_OF_VFS.
"""
import re
import sys

from .. import faults, families, model
from .. import state as st
from ..common import out

VENDOR = "15b3"


class Entry:
    def __init__(self, card, fidx, extra=None):
        self.card, self.fidx, self.extra = card, fidx, extra
        fam = families.FAMILIES[card["family"]]
        if extra:
            self.pci = card["functions"][0]["pci"][:-1] + str(extra["func"])
            self.cls, self.cls_id = extra["class"], extra["class_id"]
            self.dev_id, self.name = extra["pci_id"], extra["lspci"]
        else:
            self.pci = card["functions"][fidx]["pci"]
            port = min(card["functions"][fidx].get("port", 1), model.num_ports(card)) - 1
            if model.link_layer(card, port) == "InfiniBand":
                self.cls, self.cls_id = "Infiniband controller", "0207"
            else:
                self.cls, self.cls_id = "Ethernet controller", "0200"
            self.dev_id, self.name = fam["pci_id"], fam["lspci"]
        self.rev = fam["rev"]


def _entries(host):
    out_ = []
    for card in host.cards():
        for i in range(len(card["functions"])):
            out_.append(Entry(card, i))
        for extra in families.FAMILIES[card["family"]].get("extra_functions", []):
            out_.append(Entry(card, None, extra))
    return sorted(out_, key=lambda e: e.pci)


def _slot_filter(text):
    m = re.match(r"^(?:([0-9a-fA-F]*):)?(?:([0-9a-fA-F]*):)?([0-9a-fA-F]*)(?:\.([0-7]?))?$", text)
    if not m:
        return None
    g = list(m.groups())
    if g[1] is None and g[0] is not None:  # "bb:dd.f" -> first group is the bus
        g[0], g[1] = None, g[0]
    dom, bus, dev, fn = g

    def conv(x):
        return int(x, 16) if x not in (None, "") else None

    return conv(dom), conv(bus), conv(dev), (int(fn) if fn not in (None, "") else None)


def _matches(e, slot, dfilter):
    if dfilter is not None:
        vend, _s, dev = dfilter.partition(":")
        if vend and vend.lower() != VENDOR:
            return False
        if dev and dev.lower() != e.dev_id:
            return False
    if slot is not None:
        dom, bus, dev, fn = model.bus_dev_fn(e.pci)
        sdom, sbus, sdev, sfn = slot
        if sdom is not None and sdom != dom:
            return False
        if sbus is not None and sbus != bus:
            return False
        if sdev is not None and sdev != dev:
            return False
        if sfn is not None and sfn != fn:
            return False
    return True


def _addr(e, full_domain):
    return e.pci if full_domain else model.short_pci(e.pci)


def _header(e, numeric, full_domain):
    rev = " (rev %02x)" % e.rev if e.rev else ""
    a = _addr(e, full_domain)
    if numeric == 1:
        return "%s %s: %s:%s%s" % (a, e.cls_id, VENDOR, e.dev_id, rev)
    if numeric >= 2:
        return "%s %s [%s]: Mellanox Technologies %s [%s:%s]%s" % (a, e.cls, e.cls_id, e.name, VENDOR, e.dev_id, rev)
    return "%s %s: Mellanox Technologies %s%s" % (a, e.cls, e.name, rev)


def _nv_cur(card, fidx, key):
    ent = model.nv_entry(card, fidx or 0, key)
    return ent["current"] if ent else None


def _verbose(e, level, numeric, state):
    card = e.card
    _dom, bus, dev, fn = model.bus_dev_fn(e.pci)
    irq = 100 + (bus * 4 + fn) % 200
    group = 10 + bus % 90
    bar0 = "%x000000" % (0x200000 + bus * 0x100 + fn * 0x10)
    sub = "Mellanox Technologies Device 00%02x" % (0x20 + (bus % 16))
    if numeric >= 2:
        sub += " [%s:00%02x]" % (VENDOR, 0x20 + (bus % 16))
    lines = []
    t = "\t"
    lines.append(t + "Subsystem: " + sub)
    lines.append(t + "Physical Slot: " + str(card.get("slot", "1")))
    if level == 1:
        lines.append(t + "Flags: bus master, fast devsel, latency 0, IRQ %d, NUMA node %d, IOMMU group %d"
                     % (irq, card["numa"], group))
        lines.append(t + "Memory at %s (64-bit, prefetchable) [size=32M]" % bar0)
        if not e.extra:
            lines.append(t + "Expansion ROM at <ignored> [disabled]")
            for cap in ["[60] Express Endpoint, MSI 00", "[48] Vital Product Data",
                        "[9c] MSI-X: Enable+ Count=64 Masked-", "[c0] Vendor Specific Information: Len=18 <?>",
                        "[40] Power Management version 3", "[100] Advanced Error Reporting",
                        "[150] Alternative Routing-ID Interpretation (ARI)"]:
                lines.append(t + "Capabilities: " + cap)
            if _sriov(card, e.fidx):
                lines.append(t + "Capabilities: [180] Single Root I/O Virtualization (SR-IOV)")
            lines.append(t + "Capabilities: [1c0] Secondary PCI Express")
            lines.append(t + "Kernel driver in use: mlx5_core")
            lines.append(t + "Kernel modules: mlx5_core")
        return lines
    lines.append(t + "Control: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- "
                 "FastB2B- DisINTx+")
    lines.append(t + "Status: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- "
                 "<PERR- INTx-")
    lines.append(t + "Latency: 0, Cache Line Size: 64 bytes")
    lines.append(t + "Interrupt: pin A routed to IRQ %d" % irq)
    lines.append(t + "NUMA node: %d" % card["numa"])
    lines.append(t + "IOMMU group: %d" % group)
    lines.append(t + "Region 0: Memory at %s (64-bit, prefetchable) [size=32M]" % bar0)
    if e.extra:
        return lines
    p = card["pcie"]
    fam = families.FAMILIES[card["family"]]
    lines.append(t + "Expansion ROM at <ignored> [disabled]")
    lines.append(t + "Capabilities: [60] Express (v2) Endpoint, MSI 00")
    lines.append(t * 2 + "DevCap:\tMaxPayload 512 bytes, PhantFunc 0, Latency L0s unlimited, L1 unlimited")
    lines.append(t * 3 + "ExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit %s" % fam["slot_power"])
    lines.append(t * 2 + "DevCtl:\tCorrErr- NonFatalErr+ FatalErr+ UnsupReq+")
    lines.append(t * 3 + "RlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop+ FLReset-")
    lines.append(t * 3 + "MaxPayload 256 bytes, MaxReadReq 4096 bytes")
    lines.append(t * 2 + "DevSta:\tCorrErr+ NonFatalErr- FatalErr- UnsupReq+ AuxPwr- TransPend-")
    lines.append(t * 2 + "LnkCap:\tPort #0, Speed %s, Width x%d, ASPM not supported" % (p["cap_speed"], p["cap_width"]))
    lines.append(t * 3 + "ClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+")
    lines.append(t * 2 + "LnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+")
    lines.append(t * 3 + "ExtSynch- ClockPM- AutWidDis- BWInt- AutBWInt-")
    speed, width = faults.pcie_status(state, card)
    sp_ok = "ok" if speed == p["cap_speed"] else "downgraded"
    w_ok = "ok" if width == p["cap_width"] else "downgraded"
    lines.append(t * 2 + "LnkSta:\tSpeed %s (%s), Width x%d (%s)" % (speed, sp_ok, width, w_ok))
    lines.append(t * 3 + "TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-")
    lines.append(t * 2 + "DevCap2: Completion Timeout: Range ABC, TimeoutDis+ NROPrPrP- LTR-")
    lines.append(t * 2 + "LnkCap2: Supported Link Speeds: 2.5-%s, Crosslink- Retimer+ 2Retimers+ DRS-" % p["cap_speed"])
    lines.append(t * 2 + "LnkCtl2: Target Link Speed: %s, EnterCompliance- SpeedDis-" % p["cap_speed"])
    lines.append(t + "Capabilities: [48] Vital Product Data")
    vpd = card["vpd"]
    lines.append(t * 2 + "Product Name: " + vpd["product_name"])
    lines.append(t * 2 + "Read-only fields:")
    lines.append(t * 3 + "[PN] Part number: " + vpd["PN"])
    lines.append(t * 3 + "[EC] Engineering changes: " + vpd["EC"])
    lines.append(t * 3 + "[V2] Vendor specific: " + vpd["V2"])
    serial = faults.effective_serial(state, card)
    if serial is not None:
        lines.append(t * 3 + "[SN] Serial number: " + serial)
    lines.append(t * 3 + "[V3] Vendor specific: " + vpd["V3"])
    lines.append(t * 3 + "[VA] Vendor specific: " + vpd["VA"])
    lines.append(t * 3 + "[V0] Vendor specific: " + vpd["V0"])
    lines.append(t * 3 + "[RV] Reserved: checksum good, 1 byte(s) reserved")
    lines.append(t * 2 + "End")
    lines.append(t + "Capabilities: [9c] MSI-X: Enable+ Count=64 Masked-")
    lines.append(t * 2 + "Vector table: BAR=0 offset=00002000")
    lines.append(t * 2 + "PBA: BAR=0 offset=00003000")
    lines.append(t + "Capabilities: [c0] Vendor Specific Information: Len=18 <?>")
    lines.append(t + "Capabilities: [40] Power Management version 3")
    lines.append(t * 2 + "Flags: PMEClk- DSI- D1- D2- AuxCurrent=375mA PME(D0-,D1-,D2-,D3hot-,D3cold+)")
    lines.append(t * 2 + "Status: D0 NoSoftRst+ PME-Enable- DSel=0 DScale=0 PME-")
    lines.append(t + "Capabilities: [100 v1] Advanced Error Reporting")
    lines.append(t + "Capabilities: [150 v1] Alternative Routing-ID Interpretation (ARI)")
    lines.append(t * 2 + "ARICap:\tMFVC- ACS-, Next Function: %d" % (1 if e.fidx == 0 and len(card["functions"]) > 1 else 0))
    lines.append(t * 2 + "ARICtl:\tMFVC- ACS-, Function Group: 0")
    vfs = _sriov(card, e.fidx)
    if vfs:
        lines.append(t + "Capabilities: [180 v1] Single Root I/O Virtualization (SR-IOV)")
        lines.append(t * 2 + "IOVCap:\tMigration- 10BitTagReq- Interrupt Message Number: 000")
        lines.append(t * 2 + "IOVCtl:\tEnable- Migration- Interrupt- MSE- ARIHierarchy%s 10BitTagReq-"
                     % ("+" if e.fidx == 0 else "-"))
        lines.append(t * 2 + "IOVSta:\tMigration-")
        lines.append(t * 2 + "Initial VFs: %d, Total VFs: %d, Number of VFs: 0, Function Dependency Link: %02d"
                     % (vfs, vfs, e.fidx))
        vf_id = {"101b": "101c"}.get(e.dev_id, "101e")
        lines.append(t * 2 + "VF offset: 2, stride: 1, Device ID: %s" % vf_id)
    lines.append(t + "Capabilities: [1c0 v1] Secondary PCI Express")
    lines.append(t + "Kernel driver in use: mlx5_core")
    lines.append(t + "Kernel modules: mlx5_core")
    return lines


def _sriov(card, fidx):
    en = _nv_cur(card, fidx, "SRIOV_EN")
    n = _nv_cur(card, fidx, "NUM_OF_VFS")
    if en and n:
        return n
    return 0


def parse(args):
    opts = {"v": 0, "n": 0, "D": False, "k": False, "s": None, "d": None}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and len(a) > 1 and not a.startswith("--"):
            j = 1
            while j < len(a):
                ch = a[j]
                if ch in "sd":
                    val = a[j + 1:] or (args[i + 1] if i + 1 < len(args) else None)
                    if not a[j + 1:]:
                        i += 1
                    if val is None:
                        raise ValueError("lspci: option requires an argument -- '%s'" % ch)
                    opts[ch] = val
                    break
                if ch == "v":
                    opts["v"] += 1
                elif ch == "n":
                    opts["n"] += 1
                elif ch == "D":
                    opts["D"] = True
                elif ch == "k":
                    opts["k"] = True
                elif ch in "mtqxbPAiHFpOM":
                    pass
                else:
                    raise ValueError("lspci: invalid option -- '%s'" % ch)
                j += 1
        else:
            raise ValueError("lspci: Unknown argument: %s" % a)
        i += 1
    return opts


def run(tool, args):
    state = st.load()
    host = model.Host(state)
    try:
        o = parse(args)
    except ValueError as e:
        sys.stderr.write(str(e) + "\n")
        return 2
    slot = None
    if o["s"] is not None:
        slot = _slot_filter(o["s"])
        if slot is None:
            sys.stderr.write("lspci: -s: Invalid slot number\n")
            return 2
    level = min(o["v"], 3)
    for e in _entries(host):
        if not _matches(e, slot, o["d"]):
            continue
        out(_header(e, o["n"], o["D"]) + "\n")
        if level:
            out("\n".join(_verbose(e, level, o["n"], state)) + "\n\n")
        elif o["k"] and not e.extra:
            out("\tKernel driver in use: mlx5_core\n\tKernel modules: mlx5_core\n")
    return 0
