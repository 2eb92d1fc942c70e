"""ethtool: ``ethtool -S IF`` of a simulated mlx5 netdev prints its counters (the subset the validation gate reads,
named as the mlx5 driver names them: Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst);
``ethtool -i IF`` prints the driver information in the layout of fixtures/real/ethtool_i_*.txt; ``ethtool IF`` of an
Ethernet port its link settings (below); every other use runs the machine's real ethtool (the lab image has
Debian's), so interfaces that are not the simulator's behave as they really do.

Counters move with what the host does: ``link_down_events_phy`` by 2 for every perftest or nccl-tests run over a
card with the ``link_flap`` fault, ``rx_symbol_err_phy`` / ``rx_corrected_bits_phy`` / ``rx_pcs_symbol_err_phy``
for every run over a card with the ``bad_card`` fault [invented amounts], ``rx_corrected_bits_phy`` with the time
on a card with the ``raw_ber`` fault (faults.raw_bit_errors); a driver reload or reboot sets them back to 0
(runtime state). ``rx_bits_phy`` is not printed: the mlx5 driver documents it but did not print it before a 2026
patch (linux-rdma, "net/mlx5e: expose rx_bits_phy"), so the gate counts bits as port rate x time. An IPoIB netdev
(InfiniBand port) prints no ``*_phy`` counter: its PHY is read with mlxlink.

``ethtool -i``: ``driver: mlx5_core``, ``version:`` the OFED's driver version when an MLNX_OFED / DOCA-OFED is
installed (``24.10-2.1.8`` for MLNX_OFED_LINUX-24.10-2.1.8.0 [the derivation is invented]) else the kernel release
(in-box driver, as the captures), ``firmware-version: <running FW> (<PSID>)``, an empty ``expansion-rom-version:``
(printed without a trailing space, as every published copy), ``bus-info:`` the function's PCI address and the
``supports-*`` lines of a current kernel (statistics, test and priv-flags yes; eeprom-access and register-dump no),
the same for every mlx5 family (DRVINFO_SUPPORTS, keyed by family name, FALLBACK otherwise). An IPoIB netdev
(InfiniBand port) prints ``driver: mlx5_core[ib_ipoib]`` (the name the mlx5 IPoIB ethtool code gives; no capture).
"""
import os
import sys

from .. import model
from .. import state as st
from ..common import outln

COUNTERS = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "link_down_events_phy", "rx_symbol_err_phy",
            "rx_corrected_bits_phy", "rx_pcs_symbol_err_phy", "rx_discards_phy", "rx_prio3_pause", "tx_prio3_pause")
REAL = ("/usr/sbin/ethtool", "/sbin/ethtool")


def counters(state, netdev):
    return (state.get("runtime") or {}).get("counters", {}).get(netdev, {})


def bump(netdev, values):
    """Add ``values`` to the counters of a netdev (under the state lock)."""
    with st.transaction() as s:
        entry = s.setdefault("runtime", {}).setdefault("counters", {}).setdefault(netdev, {})
        for key, value in values.items():
            entry[key] = int(entry.get(key, 0)) + int(value)


DRVINFO_FALLBACK = (("statistics", "yes"), ("test", "yes"), ("eeprom-access", "no"), ("register-dump", "no"),
                    ("priv-flags", "yes"))
DRVINFO_SUPPORTS = {}      # family name -> its own supports-* lines where they differ (none known)


def driver_version(state):
    ofed = state.get("ofed") or ""
    if ofed.startswith("MLNX_OFED_LINUX-"):
        return ofed[len("MLNX_OFED_LINUX-"):].rsplit(".", 1)[0]
    if ofed.startswith("OFED-internal-"):
        return ofed[len("OFED-internal-"):]
    from .. import platform
    return platform.host(state)["kernel"]


def drvinfo(state, card, fidx):
    from .. import faults
    pidx = model.port_index(card, fidx)
    ipoib = model.link_layer(card, pidx) == "InfiniBand"    # the mlx5 IPoIB netdev names its driver so
    lines = ["driver: mlx5_core%s" % ("[ib_ipoib]" if ipoib else ""),
             "version: %s" % driver_version(state),
             "firmware-version: %s (%s)" % (card["fw"]["running"], faults.effective_psid(state, card)),
             "expansion-rom-version:",
             "bus-info: %s" % card["functions"][fidx]["pci"]]
    for name, value in DRVINFO_SUPPORTS.get(card["family"], DRVINFO_FALLBACK):
        lines.append("supports-%s: %s" % (name, value))
    return "\n".join(lines) + "\n"


# ``ethtool IF``: the link modes of an mlx5 Ethernet port up to its rate. The 100G list and the layout are the real
# ConnectX-4 capture's (fixtures/real/ethtool_mlx5_cx4_1.txt, Backplane port type, an in-box driver); the 200G and
# 400G modes are the kernel's link mode names for those speeds **[invented for the simulated cards: no capture]**.
MODES_100G = ("1000baseKX/Full", "10000baseKR/Full", "40000baseKR4/Full", "40000baseCR4/Full", "40000baseSR4/Full",
              "40000baseLR4/Full", "56000baseKR4/Full", "25000baseCR/Full", "25000baseKR/Full", "25000baseSR/Full",
              "50000baseCR2/Full", "50000baseKR2/Full", "100000baseKR4/Full", "100000baseSR4/Full",
              "100000baseCR4/Full", "100000baseLR4_ER4/Full")
MODES_200G = ("200000baseKR4/Full", "200000baseSR4/Full", "200000baseLR4_ER4_FR4/Full", "200000baseDR4/Full",
              "200000baseCR4/Full")
MODES_400G = ("400000baseKR8/Full", "400000baseSR8/Full", "400000baseLR8_ER8_FR8/Full", "400000baseDR8/Full",
              "400000baseCR8/Full")


def link_modes(rate):
    return MODES_100G + (MODES_200G if rate >= 200 else ()) + (MODES_400G if rate >= 400 else ())


def settings(state, card, fidx, netdev):
    """``ethtool IF`` of an Ethernet port, in the capture's layout (tab, the mode list's continuation lines)."""
    from .. import faults
    pidx = model.port_index(card, fidx)
    rate = int(card["ports"][pidx].get("rate") or 100)
    up = faults.link_up(state, card)
    modes = link_modes(rate)
    lines = ["Settings for %s:" % netdev, "\tSupported ports: [ Backplane ]"]

    def listed(title, values):
        lines.append("\t%-24s%s" % (title, values[0]))
        lines.extend("\t%-24s%s" % ("", value) for value in values[1:])
    listed("Supported link modes:", modes)
    lines += ["\tSupported pause frame use: Symmetric", "\tSupports auto-negotiation: Yes",
              "\tSupported FEC modes: None\t RS\t BASER"]
    listed("Advertised link modes:", modes)
    lines += ["\tAdvertised pause frame use: Symmetric", "\tAdvertised auto-negotiation: Yes",
              "\tAdvertised FEC modes: RS",
              "\tSpeed: %s" % ("%dMb/s" % (rate * 1000) if up else "Unknown!"),
              "\tDuplex: %s" % ("Full" if up else "Unknown! (255)"),
              "\tAuto-negotiation: on", "\tPort: %s" % ("Direct Attach Copper" if up else "Other"), "\tPHYAD: 0",
              "\tTransceiver: internal", "\tLink detected: %s" % ("yes" if up else "no")]
    return "\n".join(lines) + "\n"


def _real(args):
    me = os.path.realpath(sys.argv[0])
    for path in REAL:
        if os.path.exists(path) and os.path.realpath(path) != me:
            os.execv(path, [path] + list(args))
    sys.stderr.write("ethtool: the real ethtool is not installed (the simulator answers only IF, -i and -S of its netdevs)\n")
    return 127


def run(tool, args):
    if len(args) == 2 and args[0] in ("-i", "--driver") and st.exists():
        state = st.load()
        host = model.Host(state)
        for card, fidx in host.functions():
            if model.netdev(card, fidx) == args[1]:
                sys.stdout.write(drvinfo(state, card, fidx))
                return 0
    if len(args) == 2 and args[0] in ("-S", "--statistics") and st.exists():
        state = st.load()
        host = model.Host(state)
        for card, fidx in host.functions():
            if model.netdev(card, fidx) == args[1]:
                values = dict(counters(state, args[1]))
                pidx = model.port_index(card, fidx)
                ipoib = model.link_layer(card, pidx) == "InfiniBand"
                from .. import faults
                values["rx_corrected_bits_phy"] = int(values.get("rx_corrected_bits_phy", 0)) + faults.raw_bit_errors(
                    state, card, card["ports"][pidx].get("rate") or 100)
                outln("NIC statistics:")
                for name in COUNTERS:
                    # an IPoIB netdev has no PHY counters (mlx5's IPoIB ethtool code prints its own, fewer stats)
                    if not (ipoib and name.endswith("_phy")):
                        outln("     %s: %d" % (name, int(values.get(name, 0))))
                return 0
    if len(args) == 1 and not args[0].startswith("-") and st.exists():
        state = st.load()
        host = model.Host(state)
        for card, fidx in host.functions():
            pidx = model.port_index(card, fidx)
            if model.netdev(card, fidx) == args[0] and model.link_layer(card, pidx) == "Ethernet":
                sys.stdout.write(settings(state, card, fidx, args[0]))
                return 0
    return _real(args)
