"""Injected faults: stored in the state ("faults") and/or given in env MLXSIM_FAULTS (JSON list).

Each fault is a dict with "type" and optional "device" (any PCI address / mlx5_N / card id of the
card), "count" (how many times it fires; omitted = every time for most types) and type-specific
keys. Usage counts are kept in state["fault_used"] keyed by the fault's canonical JSON, so that
count-limited faults from the environment work across processes too.
"""
import json
import os

from . import model
from . import state as st

TYPES = {
    "burn_fail": "burning FW on the device fails midway; burned version unchanged",
    "semaphore_held": "the next COUNT (default 1) calls that touch the device fail with the semaphore error",
    "missing_after_reset": "the device disappears from every tool after a reset/reboot",
    "hang": "tool=NAME (or all tools) sleeps seconds=N before doing anything",
    "vpd_missing_serial": "the VPD of the device has no [SN] field",
    "vpd_duplicate_serial": "serial=VALUE: the device (or every device) reports this serial number",
    "oem_psid": "psid=VALUE (default DEL0000000027): the device reports an OEM PSID",
    "fwreset_unsupported": "mlxfwreset: the device supports only reset level 4 (reboot)",
    "link_down": "the device's ports are down (ibstat, ibdev2netdev): an InfiniBand port Down / Polling (cabled, no "
                 "peer), an Ethernet port Down / Disabled; phys=Disabled: the IB port is disabled (keeps its LID)",
    "pcie_degraded": "speed=S (default 16GT/s) width=W (default 8): lspci LnkSta shows a downgraded link",
    "bad_card": "perftest and nccl-tests over the device deliver about a third of the bandwidth and four times the "
                "latency (a card marked bad) [invented factors]",
    "raw_ber": "ber=B (default 1e-4): the device's link receives with this raw (pre-FEC) bit error rate, every error "
               "corrected by FEC - a marginal cable or transceiver: rx_corrected_bits_phy (ethtool -S) and mlxlink's "
               "Raw Physical Errors grow by B x the port rate for every second since the fault was added (since=, "
               "recorded by `mlxsim fault add`), traffic or not (a PHY receives idle symbols too); the effective "
               "(post-FEC) errors and the bandwidth stay as they were [invented magnitude; the counters are the "
               "mlx5 driver's and mlxlink's]",
    "link_flap": "the device's link flaps: RDMA traffic over it fails (perftest: transport retry counter exceeded; "
                 "nccl-tests: NET/IB completion with status=12)",
    "no_boot": "the host does not come back after its next power cycle: `mlxsim boot-id` fails and the fleet "
               "twin's connection finds it unreachable (a DOWN marker beside the state) until the fault is cleared, "
               "which powers it on [invented]",
    "mst_modules_missing": "the MST kernel modules are not built for the running kernel (MFT installed without its "
                           "kmp/dkms package): `mst start` prints modprobe's FATAL lines and `- Failure: 1` per module "
                           "and exits 1 [exit code invented]; the devices stay unreachable (as "
                           "fixtures/real/mst_start_fail_1.txt)",
    "nccl_no_mpi": "nccl-tests on this host were built without MPI=1 (the plain `make`): MPI_Init is never called, so "
                   "every all_reduce_perf process is a world of one whatever launched it - under `mpirun -np N` each "
                   "of the N processes prints a report of its own with one rank, Rank 0 (nccl-tests' src/common.cu "
                   "without MPI_SUPPORT) [invented: how the N outputs interleave in mpirun's]",
    "nccl_rank_fail": "error=TEXT (default \"unhandled system error (run with NCCL_DEBUG=INFO for details) / \"): the "
                      "nccl-tests ranks on this host fail their communicator init - after rank 0's device lines, "
                      "each prints `<host>: Test NCCL failure common.cu:L '<TEXT>'` and its ` .. <host> pid P: Test "
                      "failure common.cu:L` backtrace and exits 1, no column header (NVIDIA/nccl-tests issue 369); "
                      "the other hosts' ranks print nothing more and exit 1 [invented: as mpirun aborts them]",
    "ibstat_stat_fail": "ibstat cannot stat the RDMA device (device=mlx5_N or its PCI address; error=TEXT, default "
                        "'No such file or directory'): rdma-core before v54 prints the devices sorted before it, then "
                        "`ibpanic: [PID] main: stat of IB device 'mlx5_N' failed: TEXT` on stderr and exits 255 "
                        "(fixtures/real/ibstat_ibpanic_partial_1.txt); from v54 (MLXSIM_RDMA_CORE_VERSION / state "
                        "rdma_core_version, unset = before v54) `ibwarn: [PID] main: stat of IB device 'mlx5_N' "
                        "failed`, the other devices, exit 0 (rdma-core commit 703b52c6e)",
    "set_ignored": "param=NAME (or every parameter): mlxconfig/mstconfig set prints Done!, exits 0 and "
                   "keeps the next-boot value (firmware that ignores the TLV)",
}

DEFAULT_COUNTS = {"semaphore_held": 1}


def env_faults():
    raw = os.environ.get("MLXSIM_FAULTS")
    if not raw:
        return []
    try:
        data = json.loads(raw)
    except ValueError:
        return []
    if isinstance(data, dict):
        data = [data]
    return [f for f in data if isinstance(f, dict) and f.get("type")]


def all_faults(state):
    return list(state.get("faults", [])) + env_faults()


def key(fault):
    return json.dumps(fault, sort_keys=True)


def card_matches(fault, card):
    dev = fault.get("device")
    if not dev:
        return True
    if dev == card["id"]:
        return True
    full = model.norm_pci(dev)
    for f in card["functions"]:
        if full and f["pci"] == full:
            return True
        if dev == f.get("rdma"):
            return True
    return False


def find(state, ftype, card=None, tool=None):
    out = []
    for f in all_faults(state):
        if f.get("type") != ftype:
            continue
        if card is not None and not card_matches(f, card):
            continue
        if tool is not None and f.get("tool") not in (None, "", "*", tool):
            continue
        out.append(f)
    return out


def _limit(fault):
    c = fault.get("count", DEFAULT_COUNTS.get(fault["type"]))
    try:
        c = int(c) if c is not None else None
    except (TypeError, ValueError):
        c = None
    if c is not None and c < 0:
        c = None
    return c


def _consume(fault, card):
    """True when ``fault`` fires on ``card`` now; a count-limited one is used up by one
    (usage recorded in the state file under the lock)."""
    limit = _limit(fault)
    if limit is None:
        return True
    with st.transaction() as s:
        used = s.setdefault("fault_used", {})
        k = key(fault) + "@" + card["id"]
        if used.get(k, 0) < limit:
            used[k] = used.get(k, 0) + 1
            return True
    return False


def fires(state, ftype, card):
    """True when a fault of ``ftype`` applies to ``card`` now; count-limited faults are consumed
    (usage recorded in the state file under the lock)."""
    for f in find(state, ftype, card):
        if _consume(f, card):
            return True
    return False


def ignored_sets(state, card):
    """The parameter names (upper case) whose ``set`` the card's firmware ignores in this run,
    ``{"*"}`` for every parameter; each firing ``set_ignored`` fault is consumed once."""
    out = set()
    for f in find(state, "set_ignored", card):
        if _consume(f, card):
            out.add(str(f.get("param") or "*").upper())
    return out


def effective_psid(state, card):
    if card.get("psid_changed"):
        return card["psid"]
    for f in find(state, "oem_psid", card):
        return f.get("psid") or "DEL0000000027"
    return card["psid"]


def effective_serial(state, card):
    """None when the serial is missing from the VPD."""
    if find(state, "vpd_missing_serial", card):
        return None
    for f in find(state, "vpd_duplicate_serial", card):
        return f.get("serial") or "MT2232X00000"
    return card["vpd"]["SN"]


def reset_levels(state, card):
    if find(state, "fwreset_unsupported", card):
        return [4]
    return list(card.get("reset_levels", [3, 4]))


def link_up(state, card):
    return not find(state, "link_down", card)


def link_down_phys(state, card):
    """The physical state a ``link_down`` fault asks for (``phys=``), or None for the link layer's own."""
    for f in find(state, "link_down", card):
        if f.get("phys"):
            return str(f["phys"])
    return None


def pcie_status(state, card):
    """(speed, width) of the negotiated link (LnkSta)."""
    for f in find(state, "pcie_degraded", card):
        return f.get("speed") or "16GT/s", int(f.get("width") or 8)
    return card["pcie"]["speed"], card["pcie"]["width"]


def parse_kv(items):
    out = {}
    for it in items:
        if "=" not in it:
            raise st.SimError("mlxsim: fault option must be key=value: %s" % it)
        k, v = it.split("=", 1)
        if k in ("count", "width"):
            v = int(v)
        elif k == "seconds":
            v = float(v)
        out[k] = v
    return out


def raw_bit_errors(state, card, rate_gbps, now=None):
    """The bits FEC corrected so far on ``card``'s link because of its ``raw_ber`` faults: ber x rate x seconds since
    each was added (a fault without a readable ``since`` or ``ber`` adds nothing: `mlxsim fault add` records both)."""
    import time
    now = time.time() if now is None else now
    total = 0
    for fault in find(state, "raw_ber", card):
        try:
            ber, since = float(fault.get("ber", 1e-4)), float(fault["since"])
        except (KeyError, TypeError, ValueError):
            continue
        total += int(ber * float(rate_gbps or 0) * 1e9 * max(0.0, now - since))
    return total
