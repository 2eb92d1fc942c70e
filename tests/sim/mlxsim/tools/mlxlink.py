"""mlxlink (MFT): `mlxlink -d DEV [-p 1] [-m|--show_module] [-c|--show_counters]`.

Layout (facts from the real captures, no code copied): fixtures/real/mlxlink_bf3_1.txt (BlueField-3, MFT 4.30.1,
`-p 1 -m -c`: every section), mlxlink_cx7_ndr_1.txt (ConnectX-7 IB NDR: Operational/Supported Info) and the grep-
filtered mlxlink lines of mixed_mlxconfig_mlxlink_flint_grep_cx7_1.txt (ConnectX-7 Ethernet 200G); and the
behaviour of mstflint's mlxlink (github.com/Mellanox/mstflint, mlxlink/modules, read for facts): a blank line and
the title before each section, a dash underline as long as the title, `key` + `: ` at column 35 (PDDR_LINE_LEN 37),
the value and a newline - no trailing blank (the CX7 capture's trailing blanks are not what the tool writes: the
BF3 capture and mstflint's printer have none); ANSI colours around values are not printed (the simulator is what
a pipe sees with the colours stripped). Speed, Width and FEC read `N/A` when the link is not up, the Loopback row is
hidden when the port is disabled; `Enabled Link Speed`/`Supported Cable Speed` carry ` (Ext.)` on Ethernet only;
the masks print as `0x%08x (NAMES)` with the names from the highest speed down (40G before 25G, as the captures);
`amBER Version` is the mstflint release's AMBER_VERSION (MFT 4.30.1 prints 3.6, as the BF3 capture) and is only
printed on 16nm-and-newer silicon (ConnectX-6 and later, BlueField); `MFT Version` is `mft <mft_version>`.
An unknown device: stderr `-E- Failed to open device: "X", No such file or directory`, rc 1 (mlxlink_ui.cpp).
"""
import hashlib
import math

from .. import model, versions
from .. import state as st
from ..common import errln, outln
from .netinfo import _port

LINE_LEN = 35          # the ':' column (PDDR_LINE_LEN 37 = key + padding + ": ")

# mstflint's AMBER_VERSION per release (mlxlink/modules/mlxlink_enums.h at the v4.x.0-1 tags); MFT builds print
# their own release's (MFT 4.30.1-8 prints 3.6 = mstflint 4.30: fixtures/real/mlxlink_bf3_1.txt)
AMBER = [((4, 18), "1.64"), ((4, 20), "2.00"), ((4, 21), "2.05"), ((4, 22), "2.08"), ((4, 23), "2.09"),
         ((4, 24), "2.13"), ((4, 25), "2.17"), ((4, 28), "2.8"), ((4, 29), "3.3"), ((4, 30), "3.6"),
         ((4, 31), "4.5"), ((4, 32), "4.8"), ((4, 33), "5.75"), ((4, 35), "6.4"), ((4, 36), "7.1")]
# silicon older than 16nm: no amBER row
NO_AMBER = ("ConnectX4", "ConnectX4LX", "ConnectX5")
# the speed of one lane per family (Gb/s) [modelled: public product data]
LANE_GBPS = {"ConnectX4": 25, "ConnectX4LX": 25, "ConnectX5": 25, "ConnectX6": 50, "ConnectX6DX": 50,
             "ConnectX6LX": 25, "BlueField2": 50, "ConnectX7": 100, "BlueField3": 100, "ConnectX8": 100}

# Ethernet extended protocol bits (PRM / mstflint enums) in the order the captures print them
ETH_EXT = [(0x20000, "400G_2X", 400, 2), (0x10000, "400G_4X", 400, 4), (0x8000, "400G_8X", 400, 8),
           (0x4000, "200G_1X", 200, 1), (0x2000, "200G_2X", 200, 2), (0x1000, "200G_4X", 200, 4),
           (0x800, "100G_1X", 100, 1), (0x400, "100G_2X", 100, 2), (0x200, "100G_4X", 100, 4),
           (0x100, "50G_1X", 50, 1), (0x80, "50G_2X", 50, 2), (0x20, "40G", 40, 4), (0x40, "25G", 25, 1),
           (0x10, "10G", 10, 1), (0x2, "1G", 1, 1)]
# InfiniBand speeds as the NDR capture lists them (NDR,HDR,EDR,FDR,SDR), with the 4x rate of each
IB = [(0x80, "NDR", 400), (0x40, "HDR", 200), (0x20, "EDR", 100), (0x10, "FDR", 56), (0x1, "SDR", 10)]

FEC_NDR = "Ethernet_Consortium_LL_50G_RS_FEC_PLR -(272,257+1)"     # mlxlink_cx7_ndr_1.txt
FEC_RS528 = "Standard RS-FEC - RS(528,514)"                          # mlxlink_bf3_1.txt (100G, 25G lanes)
FEC_RS544 = "Standard_RS-FEC - (544,514)"                           # [modelled] PAM4 lanes (mstflint FEC name)
FEC_LL = "Standard LL RS-FEC - RS(271,257)"                         # [invented] HDR/EDR
FEC_NONE = "No FEC"                                                  # [invented] 10G and below, FDR/SDR


def _row(key, value):
    return "%-*s: %s" % (LINE_LEN, key, value)


def _section(title, rows):
    return ["", title, "-" * len(title)] + [_row(k, v) for k, v in rows]


def amber_version(mft_text):
    v = versions.parse(mft_text)[:2]
    out = AMBER[0][1]
    for since, text in AMBER:
        if v >= since:
            out = text
    return out


def _width(ib, rate):
    return 1 if not ib and rate <= 25 else 4


def eth_mask(family, rate):
    lane = LANE_GBPS.get(family, 50)
    mask = 0
    for bit, _name, speed, lanes in ETH_EXT:
        if speed <= rate and speed / lanes <= lane and lanes <= 4:
            mask |= bit
    return mask


def ib_mask(rate):
    return sum(bit for bit, _n, speed in IB if speed <= rate)


def mask_text(mask, ib):
    names = [n for bit, n, *_r in (IB if ib else ETH_EXT) if mask & bit]
    return "0x%08x (%s)" % (mask, ",".join(names))


def fec(ib, rate, width):
    if ib:
        return FEC_NDR if rate >= 400 else FEC_LL if rate >= 100 else FEC_NONE
    lane = rate / width
    return FEC_RS544 if lane >= 50 else FEC_RS528 if lane >= 25 else FEC_NONE


def _ib_speed(rate):
    for _bit, name, speed in IB:
        if rate >= speed:
            return "IB-" + name
    return "IB-SDR"


def _seed(*parts):
    return int(hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()[:8], 16)


def operational(card, fidx, state):
    """(rows, link up, ib, rate, width) of the port behind function fidx."""
    pidx = model.port_index(card, fidx)
    ib = model.link_layer(card, pidx) == "InfiniBand"
    port = _port(card, fidx, state)
    rate = int(port.get("rate") or 0)
    width = _width(ib, rate)
    up = port.get("link_state") == "Active"
    if up:
        status, phys = "Active", "LinkUp"
    else:
        # the PHY manager states of mstflint's map: Polling, Disable; the IB PHY FSM reads N/A (disabled), the
        # Ethernet AN FSM its state 0 [invented pairing]
        status = "Polling" if port.get("phys_state") == "Polling" else "Disable"
        phys = "N/A" if ib else "ETH_AN_FSM_ENABLE"
    rows = [("State", status), ("Physical state", phys),
            ("Speed", (_ib_speed(rate) if ib else "%dG" % rate) if up else "N/A"),
            ("Width", "%dx" % width if up else "N/A"),
            ("FEC", fec(ib, rate, width) if up else "N/A")]
    if status != "Disable":
        rows.append(("Loopback Mode", "No Loopback"))
    rows.append(("Auto Negotiation", "ON"))
    return rows, up, ib, rate, width


def supported(card, ib, rate):
    ext = "" if ib else " (Ext.)"
    mask = ib_mask(rate) if ib else eth_mask(card["family"], rate)
    # the cable is one of the port's own speed [invented]: its capability = what the port enables
    return [("Enabled Link Speed" + ext, mask_text(mask, ib)), ("Supported Cable Speed" + ext, mask_text(mask, ib))]


def troubleshooting(up):
    if up:
        return [("Status Opcode", "0"), ("Group Opcode", "N/A"), ("Recommendation", "No issue was observed")]
    # [invented]: no capture of a down port's troubleshooting page; opcode < 1023 is a PHY FW group (mstflint)
    return [("Status Opcode", "2"), ("Group Opcode", "PHY FW"), ("Recommendation", "Signal not detected")]


def tool_info(card, state):
    mft = versions.mft_version(state)
    rows = [("Firmware Version", card["fw"]["running"])]
    if card["family"] not in NO_AMBER:
        rows.append(("amBER Version", amber_version(mft)))
    rows.append(("MFT Version", "mft %s" % mft))
    return rows


# The module a port holds, per form factor: the BF3 capture's 100G passive copper cable (QSFP28, FS Q28-PC03);
# the other cables are [invented] in the same layout (NVIDIA DAC part numbers of the port's speed).
CABLES = {
    "qsfp28": {"Identifier": "QSFP28", "Compliance": "100GBASE-CR4, 25GBASE-CR CA-25G-L or 50GBASE-CR2 with RS "
               "(Clause91) FEC", "Vendor Name": "FS", "Vendor Part Number": "Q28-PC03", "Rev": "A",
               "Transfer Distance [m]": "3", "Memory Map Revision": "8", "Nominal bit rate": "0.000Gb/s"},
    "sfp28": {"Identifier": "SFP28", "Compliance": "25GBASE-CR CA-25G-L", "Vendor Name": "Mellanox",
              "Vendor Part Number": "MCP2M00-A003E30L", "Rev": "A3", "Transfer Distance [m]": "3",
              "Memory Map Revision": "8", "Nominal bit rate": "25.500Gb/s"},
    "qsfp56": {"Identifier": "QSFP56", "Compliance": "N/A", "Vendor Name": "Mellanox",
               "Vendor Part Number": "MCP1650-V003E26", "Rev": "A2", "Transfer Distance [m]": "3",
               "Memory Map Revision": "8", "Nominal bit rate": "0.000Gb/s"},
    "qsfp112": {"Identifier": "QSFP112", "Compliance": "N/A", "Vendor Name": "NVIDIA",
                "Vendor Part Number": "MCP1660-W003E26", "Rev": "A1", "Transfer Distance [m]": "3",
                "Memory Map Revision": "5", "Nominal bit rate": "0.000Gb/s"},
    "osfp": {"Identifier": "OSFP", "Compliance": "N/A", "Vendor Name": "NVIDIA",
             "Vendor Part Number": "MCP4Y10-N003", "Rev": "A1", "Transfer Distance [m]": "3",
             "Memory Map Revision": "5", "Nominal bit rate": "0.000Gb/s"},
}


def _form_factor(card, rate):
    if rate <= 25:
        return "sfp28"
    if card.get("part_number", "").startswith("MCX75310"):
        return "osfp"
    return {25: "qsfp28", 50: "qsfp56"}.get(LANE_GBPS.get(card["family"], 50), "qsfp112")


def module_info(card, fidx, rate):
    c = CABLES[_form_factor(card, rate)]
    serial = "S%010d-1" % (_seed(card["id"], fidx, "cable") % 10 ** 10)
    na = "N/A"
    return [
        ("Temperature [C]", na), ("Voltage [mV]", na), ("Bias Current [mA]", na), ("Rx Power Current [dBm]", na),
        ("Tx Power Current [dBm]", na), ("Identifier", c["Identifier"]), ("Compliance", c["Compliance"]),
        ("Cable Technology", "Copper cable, passive, unequalized"), ("Cable Type", "Passive copper cable"),
        ("OUI", "Other" if c["Vendor Name"] == "FS" else "Mellanox"), ("Vendor Name", c["Vendor Name"]),
        ("Vendor Part Number", c["Vendor Part Number"]), ("Vendor Serial Number", serial), ("Rev", c["Rev"]),
        ("Wavelength [nm]", na), ("Transfer Distance [m]", c["Transfer Distance [m]"]),
        ("Attenuation (5g,7g,12g)[dB]", "0,0,0"), ("FW Version", na), ("Digital Diagnostic Monitoring", "No"),
        ("Power Class", na), ("CDR RX", na), ("CDR TX", na), ("LOS Alarm", na), ("SNR Media Lanes [dB]", na),
        ("SNR Host Lanes [dB]", na), ("IB Cable Width", "1x,2x,4x"), ("Memory Map Revision", c["Memory Map Revision"]),
        ("Linear Direct Drive", "0"),
        ("Cable Breakout", "Channels implemented [1,2,3,4]/Cable with single far-end with 4 channels implemented, "
                           "or separable module with a 4-channel connector"),
        ("SMF Length", na), ("MAX Power", "0"), ("Cable Rx AMP", na), ("Cable Rx Emphasis", na),
        ("Cable Rx Post Emphasis", na), ("Cable Tx Equalization", na), ("Wavelength Tolerance", na),
        ("Module State", na), ("DataPath state [per lane]", na), ("Rx Output Valid [per lane]", na),
        ("Nominal bit rate", c["Nominal bit rate"]), ("Rx Power Type", "OMA"),
        ("Manufacturing Date", "%02d_%02d_%02d" % (1 + _seed(card["id"], "d") % 28, 1 + _seed(card["id"], "m") % 12,
                                                   20 + _seed(card["id"], "y") % 5)),
        ("Active Set Host Compliance Code", na), ("Active Set Media Compliance Code", na),
        ("Error Code Response", na), ("Module FW Fault", na), ("DataPath FW Fault", na),
        ("Tx Fault [per lane]", na), ("Tx LOS [per lane]", na), ("Tx CDR LOL [per lane]", na),
        ("Rx LOS [per lane]", na), ("Rx CDR LOL [per lane]", na), ("Tx Adaptive EQ Fault [per lane]", na),
    ]


def ber_text(errors, bits):
    """A BER as mlxlink prints it: PPCNT's coefficient and magnitude as ``<coef>E-<magnitude>`` (``15E-255`` for no
    errors, as every capture)."""
    if not errors or not bits:
        return "15E-255"
    ber = float(errors) / float(bits)
    magnitude = -math.floor(math.log10(ber))
    coef = int(round(ber * 10 ** magnitude))
    if coef >= 10:
        coef, magnitude = coef // 10, magnitude - 1
    return "%dE-%d" % (max(1, coef), magnitude)


def counters(card, fidx, state, width, rate):
    """Physical Counters and BER Info: the same PPCNT counters ethtool -S shows on an Ethernet port (runtime
    state: perf.account and the faults) - Effective Physical Errors = rx_pcs_symbol_err_phy, the raw errors =
    rx_corrected_bits_phy (plus a ``raw_ber`` fault's, faults.raw_bit_errors) spread over the lanes, Link Down
    Counter = link_down_events_phy; the BERs over the minutes since the last clear at the port rate."""
    from .. import faults
    netdev = model.netdev(card, fidx)
    runtime = ((state.get("runtime") or {}).get("counters") or {}).get(netdev) or {}
    down = int(runtime.get("link_down_events_phy", 0))
    effective = int(runtime.get("rx_pcs_symbol_err_phy", 0))
    raw = int(runtime.get("rx_corrected_bits_phy", 0)) + faults.raw_bit_errors(state, card, rate)
    minutes = (_seed(state.get("hostname"), card["id"], state.get("boot_count", 0)) % 500000) / 10.0
    bits = float(rate or 0) * 1e9 * max(minutes, 0.1) * 60
    lanes = max(1, int(width or 1))
    per_lane = ",".join(str(raw // lanes + (1 if i < raw % lanes else 0)) for i in range(lanes))
    return [("Time Since Last Clear [Min]", "%.1f" % minutes), ("Effective Physical Errors", str(effective)),
            ("Effective Physical BER", ber_text(effective, bits)), ("Raw Physical Errors Per Lane", per_lane),
            ("Link Down Counter", str(down)), ("Link Error Recovery Counter", "0"),
            ("Raw Physical BER", ber_text(raw, bits))]


USAGE = """    NAME:
        mlxlink

    SYNOPSIS:
        mlxlink [OPTIONS]

    DESCRIPTION:
        The mlxlink tool is used to check and debug link status and issues related to them.

    OPTIONS:
        -h |--help                          : Display help message.
        -v |--version                       : Display version info.
        -d |--device <device>               : Perform operation for a specified mst device
        -p |--port <port_number>            : Port Number
        -m |--show_module                   : Show Module Info
        -c |--show_counters                 : Show Physical Counters and BER Info"""


def _parse(args):
    opts = {"device": None, "port": "1", "module": False, "counters": False, "help": False, "version": False}
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-d", "--device", "-p", "--port"):
            if i + 1 >= len(args):
                raise st.SimError("-E- failed to parse arguments. Missing argument for option: %s" % a)
            opts["device" if a in ("-d", "--device") else "port"] = args[i + 1]
            i += 2
            continue
        if a in ("-m", "--show_module"):
            opts["module"] = True
        elif a in ("-c", "--show_counters"):
            opts["counters"] = True
        elif a in ("-h", "--help"):
            opts["help"] = True
        elif a in ("-v", "--version"):
            opts["version"] = True
        else:
            # [invented wording after "failed to parse arguments." (mlxlink_ui.cpp)]
            raise st.SimError("-E- failed to parse arguments. Unrecognized option: %s" % a)
        i += 1
    return opts


def run(tool, args):
    state = st.load()
    host = model.Host(state)
    opts = _parse(args)
    if opts["help"]:
        outln(USAGE)
        return 0
    if opts["version"]:
        outln("mlxlink, mft %s" % versions.mft_version(state))
        return 0
    if not opts["device"]:
        errln("-E- Please provide a device name using -d option")       # [invented wording]
        return 1
    found = host.resolve(opts["device"], allow_mst=True, allow_ibdev=True)
    if found is None:
        errln('-E- Failed to open device: "%s", No such file or directory' % opts["device"])
        return 1
    if opts["port"] != "1":
        # every function of a simulated NIC owns one port, label 1 [invented wording]
        errln("-E- Invalid port number!")
        return 1
    card, fidx = found
    st.sim_sleep(0.5)
    rows, up, ib, rate, width = operational(card, fidx, state)
    lines = _section("Operational Info", rows)
    lines += _section("Supported Info", supported(card, ib, rate))
    lines += _section("Troubleshooting Info", troubleshooting(up))
    lines += _section("Tool Information", tool_info(card, state))
    if opts["module"]:
        lines += _section("Module Info", module_info(card, fidx, rate))
    if opts["counters"]:
        lines += _section("Physical Counters and BER Info", counters(card, fidx, state, width, rate))
    outln("\n".join(lines))
    return 0
