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
        fam = families.of(card)
        if extra:
            self.pci = card["functions"][0]["pci"][:-1] + str(extra["func"])
            self.cls, self.cls_id = extra["class"], extra["class_id"]
            self.dev_id, self.name = extra["pci_id"], extra["lspci"]
        else:
            self.pci = card["functions"][fidx]["pci"]
            port = model.port_index(card, fidx)
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
        for extra in families.of(card).get("extra_functions", []):
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


# ------------------------------------------------------------------ the -vv/-vvv detail, per family and per host
#
# lspci prints the same lines with -vv and -vvv (and -vvvvv) for an endpoint: pciutils' ls-caps.c/ls-ecaps.c only
# look at ``verbose > 2`` for bridges and root complex event collectors. What differs is the pciutils release:
# 3.8.0 changed SlotPowerLimit from ``%.3fW`` to ``%gW`` (25.000W -> 25W), LnkSta's ``(ok)`` to nothing, and added
# ``10BitTagReq`` to DevCtl2/IOVCap/IOVCtl and ``Compliance Preset/De-emphasis`` to LnkCtl2. Ubuntu 22.04 (DGX OS
# 6) and RHEL 9 ship 3.7.0, Debian 12 3.9.0: the simulated lspci is 3.7.0, the release GPU servers run (and the
# form of the slot power limit, ``25.000W``, that issue 16 names), unless the platform names one (``pciutils``:
# "3.9.0" for the Debian form).
#
# Per family, the lines that differ between the real captures (tests/fixtures/real):
#   cx4 - lspci_vvvvv_vpd_cx4_1.txt (ConnectX-4 MCX416A-CCAT, PCIe Gen3)
#   bf2 - lspci_vvv_bf2_2.txt (BlueField-2 MBF2M516A-CECOT, Gen4; the VPD's trailing-space padding)
#   cx7 - lspci_vvv_cx7_1.txt (ConnectX-7, Gen5) with the retail MCX755106AS-HEAT's ACS capability and atomics
#         (search-index file id 28683376639, pciutils >= 3.8, whitespace not byte-exact)
_LAYOUTS = {
    "cx4": {
        "devctl": "CorrErr+ NonFatalErr+ FatalErr+ UnsupReq+", "payload": (256, 4096),
        "devsta": "CorrErr+ NonFatalErr- FatalErr- UnsupReq+ AuxPwr- TransPend-",
        "tags": "10BitTagComp- 10BitTagReq-", "atomics": "32bit- 64bit- 128bitCAS-",
        "timeout": "65ms to 210ms", "reqen": "-", "retimer": "Retimer- 2Retimers-",
        "aer": ("DLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-",
                "DLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt+ UnxCmplt+ RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-",
                "DLP+ SDES- TLP+ FCP+ CmpltTO+ CmpltAbrt- UnxCmplt- RxOF+ MalfTLP+ ECRC+ UnsupReq- ACSViol-",
                "RxErr- BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr+",
                "RxErr+ BadTLP+ BadDLLP+ Rollover+ Timeout+ AdvNonFatalErr+",
                "First Error Pointer: 04, ECRCGenCap+ ECRCGenEn+ ECRCChkCap+ ECRCChkEn+"),
        "ecaps": ["acs"], "rv": 2, "vpd": ("PN", "EC", "SN", "V0"), "pad": {},
    },
    "bf2": {
        "devctl": "CorrErr+ NonFatalErr+ FatalErr+ UnsupReq+", "payload": (512, 512),
        "devsta": "CorrErr- NonFatalErr- FatalErr- UnsupReq- AuxPwr- TransPend-",
        "tags": "10BitTagComp+ 10BitTagReq-", "atomics": "32bit- 64bit- 128bitCAS-",
        "timeout": "50us to 50ms", "reqen": "+", "retimer": "Retimer+ 2Retimers+",
        "aer": ("DLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-",
                "DLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq+ ACSViol-",
                "DLP+ SDES- TLP- FCP+ CmpltTO- CmpltAbrt- UnxCmplt- RxOF+ MalfTLP+ ECRC- UnsupReq- ACSViol-",
                "RxErr- BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr-",
                "RxErr- BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr+",
                "First Error Pointer: 08, ECRCGenCap+ ECRCGenEn- ECRCChkCap+ ECRCChkEn-"),
        "ecaps": ["acs", "lmr", "pl16", "dlf"], "rv": 1,
        "vpd": ("PN", "EC", "V2", "SN", "V3", "VA", "V0", "VU"),
        # The field widths of lspci_vvv_bf2_2.txt's VPD (values padded with blanks to these lengths).
        "pad": {"product_name": 182, "PN": 25, "V2": 25, "SN": 15, "VA": 55, "V0": 13, "VU": 23},
    },
    "cx7": {
        "devctl": "CorrErr+ NonFatalErr+ FatalErr+ UnsupReq-", "payload": (512, 512),
        "devsta": "CorrErr+ NonFatalErr- FatalErr- UnsupReq+ AuxPwr- TransPend-",
        "tags": "10BitTagComp+ 10BitTagReq+", "atomics": "32bit+ 64bit+ 128bitCAS+",
        "timeout": "50us to 50ms", "reqen": "+", "retimer": "Retimer+ 2Retimers+",
        "aer": ("DLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-",
                "DLP- SDES- TLP- FCP- CmpltTO- CmpltAbrt- UnxCmplt- RxOF- MalfTLP- ECRC- UnsupReq- ACSViol-",
                "DLP+ SDES- TLP- FCP+ CmpltTO- CmpltAbrt- UnxCmplt- RxOF+ MalfTLP+ ECRC- UnsupReq- ACSViol-",
                "RxErr- BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr-",
                "RxErr- BadTLP- BadDLLP- Rollover- Timeout- AdvNonFatalErr+",
                "First Error Pointer: 04, ECRCGenCap+ ECRCGenEn- ECRCChkCap+ ECRCChkEn-"),
        "ecaps": ["acs", "lmr", "pl16", "pl32", "dlf"], "rv": 1,
        "vpd": ("PN", "EC", "V2", "SN", "V3", "VA", "V0", "VU"),
        # lspci_vvv_cx7_1.txt: [VU] (serial + MLNXS0D0F0) padded to 22 characters; the other fields unpadded.
        "pad": {"VU": 22},
    },
}
# Family (families.py key) -> layout. ConnectX-6 / ConnectX-6 Dx have no -vvv capture: the BlueField-2's (its
# integrated NIC is a ConnectX-6 Dx, PCIe Gen4), but with the ConnectX VPD rule (only [VU] padded); BlueField-3: the
# ConnectX-7's (its integrated NIC) with BlueField-2's VPD padding and second BAR. A family not listed (other
# sessions' new ones) takes the layout of its PCIe generation (_layout()).
FAMILY_LSPCI = {
    "ConnectX4": "cx4", "ConnectX4LX": "cx4", "ConnectX5": "cx4",
    "ConnectX6": "bf2", "ConnectX6DX": "bf2", "ConnectX6LX": "bf2", "BlueField2": "bf2",
    "ConnectX7": "cx7", "BlueField3": "cx7", "ConnectX8": "cx7",
}
_CX_PAD = {"VU": 22}
_BLUEFIELD = ("BlueField2", "BlueField3")
_ECAPS = {
    "acs": ("230", "Access Control Services",
            ["ACSCap:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-",
             "ACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-"]),
    "lmr": ("320", "Lane Margining at the Receiver <?>", []),
    "pl16": ("370", "Physical Layer 16.0 GT/s <?>", []),
    "pl32": ("3b0", "Extended Capability ID 0x2a", []),
    "dlf": ("420", "Data Link Feature <?>", []),
}
# PF device ID -> VF device ID (pci.ids).
_VF_ID = {"1013": "1014", "1015": "1016", "1017": "1018", "1019": "101a", "101b": "101c"}

# What the host's kernel/firmware make lspci print, per profile (the card's values stay the card's):
# ``slot`` - "Physical Slot" (the platform firmware describes the slot: SMBIOS/ACPI _SUN; lspci_vv_vpd_bf2_1.txt has
# it, the other captures not); ``iommu`` - "IOMMU group" (the IOMMU is on: lspci_vvvvv_vpd_cx4_1.txt and
# lspci_vvv_cx7_1.txt have it, lspci_vvv_bf2_2.txt not); ``cache_line`` - "Cache Line Size" (set by the firmware or
# kernel: 64 bytes on the x86 captures, 32 on the aarch64 BlueField-2 host, absent from the CX4 capture).
# The choice per profile is the simulator's [invented]: DGX-class Intel hosts boot without intel_iommu=on; the
# AMD ``mixed`` host has its IOMMU on (the kernel's default for AMD).
HOST_DEFAULTS = {"slot": True, "iommu": False, "cache_line": 64}
HOST_LSPCI = {"mixed": {"iommu": True}}


def host_lspci(state):
    """The host's lspci properties (HOST_DEFAULTS, the profile's, the platform's ``lspci`` dict)."""
    props = dict(HOST_DEFAULTS)
    props.update(HOST_LSPCI.get(state.get("profile", ""), {}))
    props.update((state.get("platform") or {}).get("lspci") or {})
    return props


def pciutils_new(state):
    """True when the simulated host's pciutils is 3.8 or later (see above)."""
    plat = state.get("platform") or {}
    ver = plat.get("pciutils") or "3.7.0"
    return tuple(int(x) for x in ver.split(".")[:2]) >= (3, 8)


def _layout(card):
    key = FAMILY_LSPCI.get(card["family"])
    if key is None:
        key = {"8GT/s": "cx4", "16GT/s": "bf2"}.get(card["pcie"]["cap_speed"], "cx7")
    lay = dict(_LAYOUTS[key])
    if card["family"] not in _BLUEFIELD and key == "bf2":
        lay["pad"] = _CX_PAD
    if card["family"] == "BlueField3":
        lay["pad"] = _LAYOUTS["bf2"]["pad"]
    return lay


def _watts(text, new):
    """families.py's "25W" as the host's lspci prints a slot power limit."""
    value = float(str(text).rstrip("W") or 0)
    return ("%gW" if new else "%.3fW") % value


def _pad(value, width):
    return value + " " * max(0, (width or 0) - len(value))


def _vpd_lines(card, lay, state):
    t = "\t"
    vpd, pad = card["vpd"], lay["pad"]
    serial = faults.effective_serial(state, card)
    values = {"PN": vpd.get("PN"), "EC": vpd.get("EC"), "V2": vpd.get("V2"), "SN": serial,
              "V3": vpd.get("V3"), "VA": vpd.get("VA"), "V0": vpd.get("V0"),
              "VU": (serial + "MLNXS0D0F0") if serial is not None else None}
    names = {"PN": "Part number", "EC": "Engineering changes", "SN": "Serial number"}
    lines = [t * 2 + "Product Name: " + _pad(vpd["product_name"], pad.get("product_name")),
             t * 2 + "Read-only fields:"]
    for key in lay["vpd"]:
        if values.get(key) is None:
            continue
        lines.append(t * 3 + "[%s] %s: %s" % (key, names.get(key, "Vendor specific"), _pad(values[key], pad.get(key))))
    lines.append(t * 3 + "[RV] Reserved: checksum good, %d byte(s) reserved" % lay["rv"])
    lines.append(t * 2 + "End")
    return lines


def _verbose(e, level, numeric, state):
    card = e.card
    host = host_lspci(state)
    new = pciutils_new(state)
    lay = _layout(card)
    fam = families.FAMILIES.get(card["family"], {})
    _dom, bus, dev, fn = model.bus_dev_fn(e.pci)
    irq = 100 + (bus * 4 + fn) % 200
    group = 10 + bus % 90
    region = 0x200000 + bus * 0x100 + fn * 0x10       # Region 0 at region << 24
    bar0 = "%x000000" % region
    sub = "Mellanox Technologies Device 00%02x" % (0x20 + (bus % 16))
    if numeric >= 2:
        sub += " [%s:00%02x]" % (VENDOR, 0x20 + (bus % 16))
    nfuncs = len(card["functions"]) + len(fam.get("extra_functions", []))
    vfs = 0 if e.extra else _sriov(card, e.fidx)
    ecaps = [] if e.extra else [_ECAPS[k] for k in lay["ecaps"]]
    lines = []
    t = "\t"
    lines.append(t + "Subsystem: " + sub)
    if host["slot"] and card.get("slot"):
        lines.append(t + "Physical Slot: " + str(card["slot"]))
    rom = "Expansion ROM at %x [disabled] [size=1M]" % (0xe0000000 + ((bus * 8 + fn) % 0x180) * 0x100000)
    if level == 1:
        flags = "Flags: bus master, fast devsel, latency 0, IRQ %d, NUMA node %d" % (irq, card["numa"])
        if host["iommu"]:
            flags += ", IOMMU group %d" % group
        lines.append(t + flags)
        lines.append(t + "Memory at %s (64-bit, prefetchable) [size=32M]" % bar0)
        if not e.extra:
            lines.append(t + rom)
            caps = ["[60] Express Endpoint, MSI 00", "[48] Vital Product Data",
                    "[9c] MSI-X: Enable+ Count=64 Masked-", "[c0] Vendor Specific Information: Len=18 <?>",
                    "[40] Power Management version 3", "[100] Advanced Error Reporting",
                    "[150] Alternative Routing-ID Interpretation (ARI)"]
            if vfs:
                caps.append("[180] Single Root I/O Virtualization (SR-IOV)")
            caps.append("[1c0] Secondary PCI Express")
            caps += ["[%s] %s" % (off, name) for off, name, _detail in ecaps]
            for cap in caps:
                lines.append(t + "Capabilities: " + cap)
            lines.append(t + "Kernel driver in use: mlx5_core")
            lines.append(t + "Kernel modules: mlx5_core")
        return lines
    lines.append(t + "Control: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- "
                 "FastB2B- DisINTx+")
    lines.append(t + "Status: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- "
                 "<PERR- INTx-")
    if host["cache_line"]:
        lines.append(t + "Latency: 0, Cache Line Size: %d bytes" % host["cache_line"])
    else:
        lines.append(t + "Latency: 0")
    lines.append(t + "Interrupt: pin A routed to IRQ %d" % irq)
    lines.append(t + "NUMA node: %d" % card["numa"])
    if host["iommu"]:
        lines.append(t + "IOMMU group: %d" % group)
    lines.append(t + "Region 0: Memory at %s (64-bit, prefetchable) [size=32M]" % bar0)
    if e.extra:
        return lines
    if card["family"] in _BLUEFIELD:
        lines.append(t + "Region 2: Memory at %x (64-bit, prefetchable) [size=8M]" % ((region << 24) + 0x2800000))
    p = card["pcie"]
    lines.append(t + rom)
    lines.append(t + "Capabilities: [60] Express (v2) Endpoint, MSI 00")
    lines.append(t * 2 + "DevCap:\tMaxPayload 512 bytes, PhantFunc 0, Latency L0s unlimited, L1 unlimited")
    lines.append(t * 3 + "ExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit %s"
                 % _watts(fam.get("slot_power", "25W"), new))
    lines.append(t * 2 + "DevCtl:\t" + lay["devctl"])
    lines.append(t * 3 + "RlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop+ FLReset-")
    lines.append(t * 3 + "MaxPayload %d bytes, MaxReadReq %d bytes" % lay["payload"])
    lines.append(t * 2 + "DevSta:\t" + lay["devsta"])
    lines.append(t * 2 + "LnkCap:\tPort #0, Speed %s, Width x%d, ASPM not supported" % (p["cap_speed"], p["cap_width"]))
    lines.append(t * 3 + "ClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+")
    lines.append(t * 2 + "LnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+")
    lines.append(t * 3 + "ExtSynch- ClockPM- AutWidDis- BWInt- AutBWInt-")
    speed, width = faults.pcie_status(state, card)
    sp_down, w_down = speed != p["cap_speed"], width != p["cap_width"]
    if new:
        lines.append(t * 2 + "LnkSta:\tSpeed %s%s, Width x%d%s" % (
            speed, " (downgraded)" if sp_down else "", width, " (downgraded)" if w_down else ""))
    else:
        lines.append(t * 2 + "LnkSta:\tSpeed %s (%s), Width x%d (%s)" % (
            speed, "downgraded" if sp_down else "ok", width, "downgraded" if w_down else "ok"))
    lines.append(t * 3 + "TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-")
    lines.append(t * 2 + "DevCap2: Completion Timeout: Range ABC, TimeoutDis+ NROPrPrP- LTR-")
    lines.append(t * 3 + " %s OBFF Not Supported, ExtFmt- EETLPPrefix-" % lay["tags"])
    lines.append(t * 3 + " EmergencyPowerReduction Not Supported, EmergencyPowerReductionInit-")
    lines.append(t * 3 + " FRS- TPHComp- ExtTPHComp-")
    lines.append(t * 3 + " AtomicOpsCap: " + lay["atomics"])
    lines.append(t * 2 + "DevCtl2: Completion Timeout: %s, TimeoutDis- LTR-%s OBFF Disabled,"
                 % (lay["timeout"], " 10BitTagReq-" if new else ""))
    lines.append(t * 3 + " AtomicOpsCtl: ReqEn" + lay["reqen"])
    # LnkCap2 and LnkCtl2 only for function 0 of an endpoint; LnkSta2 for every function (ls-caps.c).
    if fn == 0 and dev == 0:
        lines.append(t * 2 + "LnkCap2: Supported Link Speeds: 2.5-%s, Crosslink- %s DRS-"
                     % (p["cap_speed"], lay["retimer"]))
        lines.append(t * 2 + "LnkCtl2: Target Link Speed: %s, EnterCompliance- SpeedDis-" % p["cap_speed"])
        lines.append(t * 3 + " Transmit Margin: Normal Operating Range, EnterModifiedCompliance- ComplianceSOS-")
        lines.append(t * 3 + (" Compliance Preset/De-emphasis: -6dB de-emphasis, 0dB preshoot" if new
                              else " Compliance De-emphasis: -6dB"))
        eq = "+"
    else:
        eq = "-"  # [invented] a non-zero function's LnkSta2 read as zero (the register is function 0's)
    lines.append(t * 2 + "LnkSta2: Current De-emphasis Level: -6dB, EqualizationComplete%s EqualizationPhase1%s"
                 % (eq, eq))
    lines.append(t * 3 + " EqualizationPhase2%s EqualizationPhase3%s LinkEqualizationRequest-" % (eq, eq))
    lines.append(t * 3 + " Retimer- 2Retimers- CrosslinkRes: unsupported")
    lines.append(t + "Capabilities: [48] Vital Product Data")
    lines += _vpd_lines(card, lay, state)
    lines.append(t + "Capabilities: [9c] MSI-X: Enable+ Count=64 Masked-")
    lines.append(t * 2 + "Vector table: BAR=0 offset=00002000")
    lines.append(t * 2 + "PBA: BAR=0 offset=00003000")
    lines.append(t + "Capabilities: [c0] Vendor Specific Information: Len=18 <?>")
    lines.append(t + "Capabilities: [40] Power Management version 3")
    lines.append(t * 2 + "Flags: PMEClk- DSI- D1- D2- AuxCurrent=375mA PME(D0-,D1-,D2-,D3hot-,D3cold+)")
    lines.append(t * 2 + "Status: D0 NoSoftRst+ PME-Enable- DSel=0 DScale=0 PME-")
    lines.append(t + "Capabilities: [100 v1] Advanced Error Reporting")
    for name, value in zip(("UESta", "UEMsk", "UESvrt", "CESta", "CEMsk", "AERCap"), lay["aer"]):
        lines.append(t * 2 + name + ":\t" + value)
    lines.append(t * 3 + "MultHdrRecCap- MultHdrRecEn- TLPPfxPres- HdrLogCap-")
    lines.append(t * 2 + "HeaderLog: 00000000 00000000 00000000 00000000")
    lines.append(t + "Capabilities: [150 v1] Alternative Routing-ID Interpretation (ARI)")
    nxt = fn + 1 if fn + 1 < len(card["functions"]) else 0
    lines.append(t * 2 + "ARICap:\tMFVC- ACS-, Next Function: %d" % nxt)
    lines.append(t * 2 + "ARICtl:\tMFVC- ACS-, Function Group: 0")
    if vfs:
        lines.append(t + "Capabilities: [180 v1] Single Root I/O Virtualization (SR-IOV)")
        if new:
            lines.append(t * 2 + "IOVCap:\tMigration- 10BitTagReq- Interrupt Message Number: 000")
            lines.append(t * 2 + "IOVCtl:\tEnable- Migration- Interrupt- MSE- ARIHierarchy%s 10BitTagReq-"
                         % ("+" if e.fidx == 0 else "-"))
        else:
            lines.append(t * 2 + "IOVCap:\tMigration-, Interrupt Message Number: 000")
            lines.append(t * 2 + "IOVCtl:\tEnable- Migration- Interrupt- MSE- ARIHierarchy%s"
                         % ("+" if e.fidx == 0 else "-"))
        lines.append(t * 2 + "IOVSta:\tMigration-")
        lines.append(t * 2 + "Initial VFs: %d, Total VFs: %d, Number of VFs: 0, Function Dependency Link: %02d"
                     % (vfs, vfs, e.fidx))
        lines.append(t * 2 + "VF offset: %d, stride: 1, Device ID: %s" % (nfuncs, _VF_ID.get(e.dev_id, "101e")))
        lines.append(t * 2 + "Supported Page Size: 000007ff, System Page Size: 00000001")
        lines.append(t * 2 + "Region 0: Memory at %016x (64-bit, prefetchable)"
                     % ((region << 24) + 0x2000000 * len(card["functions"])))
        lines.append(t * 2 + "VF Migration: offset: 00000000, BIR: 0")
    lines.append(t + "Capabilities: [1c0 v1] Secondary PCI Express")
    lines.append(t * 2 + "LnkCtl3: LnkEquIntrruptEn- PerformEqu-")
    lines.append(t * 2 + "LaneErrStat: 0")
    for off, name, detail in ecaps:
        lines.append(t + "Capabilities: [%s v1] %s" % (off, name))
        lines += [t * 2 + d for d in detail]
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
