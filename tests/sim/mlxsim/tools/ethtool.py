"""ethtool: ``ethtool -S IF`` of a simulated mlx5 netdev prints its counters (the subset the validation gate reads,
named as the mlx5 driver names them: Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst);
every other use runs the machine's real ethtool (the lab image has Debian's), so ``ethtool -i``, ``ethtool IF``
and interfaces that are not the simulator's behave as they really do.

Counters move with what the host does: ``link_down_events_phy`` by 2 for every perftest or nccl-tests run over a
card with the ``link_flap`` fault, ``rx_symbol_err_phy`` / ``rx_corrected_bits_phy`` for every run over a card
with the ``bad_card`` fault [invented amounts]; a driver reload or reboot sets them back to 0 (runtime state).
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


def _real(args):
    me = os.path.realpath(sys.argv[0])
    for path in REAL:
        if os.path.exists(path) and os.path.realpath(path) != me:
            os.execv(path, [path] + list(args))
    sys.stderr.write("ethtool: the real ethtool is not installed (the simulator answers only -S of its netdevs)\n")
    return 127


def run(tool, args):
    if len(args) == 2 and args[0] in ("-S", "--statistics") and st.exists():
        state = st.load()
        host = model.Host(state)
        for card, fidx in host.functions():
            if model.netdev(card, fidx) == args[1]:
                values = counters(state, args[1])
                outln("NIC statistics:")
                for name in COUNTERS:
                    outln("     %s: %d" % (name, int(values.get(name, 0))))
                return 0
    return _real(args)
