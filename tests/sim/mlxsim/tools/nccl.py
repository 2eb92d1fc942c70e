"""nccl-tests: all_reduce_perf, all_gather_perf, sendrecv_perf.

Layouts from NVIDIA/nccl-tests (src/util.cu: writeDeviceReport, writeResultHeader, writeBenchmarkLine*,
getFloatStr, writeResultFooter; src/common.cu: NCCL_TESTS_SPLIT, NCCL_TESTS_MIN_BW and the exit code; src/common.h:
``Test NCCL failure`` and the TESTCHECK backtrace) and the real captures (tests/fixtures/real/nccl_*), per release:
MLXSIM_NCCL_TESTS_VERSION (state ``nccl_tests_version``, default 2.17.6) picks the release whose layout is printed
(``layout``; what changed in which tag: tests/fixtures/FORMAT_FACTS.md, nccl-tests).

One process is one MPI rank driving ``-g`` GPUs (one in the per-rail sweep; several as
fixtures/real/nccl_all_reduce_perf_v100_1.txt, with CUDA_VISIBLE_DEVICES): the rank and the world size come
from the environment a launcher gives a rank (OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK; PMI_RANK / PMI_SIZE and
SLURM_PROCID / SLURM_NTASKS too) - only when a launcher really started it (its PMIx server named and answering, see
launcher_error; otherwise a world of one, as a real binary started alone) - and the bootstrap root from NCCL_COMM_ID
(``<address>:<port>``, a real NCCL variable). In the lab a real Open MPI ``mpirun`` starts the ranks across the
server containers over SSH. Rank 0 prints the report. Every rank uses the HCA of its local rank (NCCL_IB_HCA, else the host's RDMA
devices in order) and really connects to the next rank of its ring over that HCA's netdev, so a rail that does not
carry traffic fails the run as NCCL does.
"""
import json
import os
import socket
import sys
import threading
import time

from .. import faults, model, perf, platform
from .. import state as st
from ..common import errln, outln

COLLECTIVES = {
    # name: (redop, bus factor(n), count(size, n), needs_ranks)
    "all_reduce_perf": ("sum", lambda n: 2.0 * (n - 1) / n if n else 0.0, lambda size, n: size // 4),
    "all_gather_perf": ("none", lambda n: (n - 1.0) / n if n else 0.0, lambda size, n: size // 4 // max(n, 1)),
    "sendrecv_perf": ("none", lambda n: 1.0, lambda size, n: size // 4),
}
CONNECT_TIMEOUT = float(os.environ.get("MLXSIM_NCCL_TIMEOUT", "60"))   # [invented] NCCL's bootstrap gives up later

# The nccl-tests release whose output is printed: MLXSIM_NCCL_TESTS_VERSION, else the state's "nccl_tests_version",
# else DEFAULT_TESTS_VERSION. What changed in which tag: tests/fixtures/FORMAT_FACTS.md (nccl-tests); the real
# captures of each generation are compared in tests/unit/sim/test_nccl_fidelity.py.
DEFAULT_TESTS_VERSION = "2.17.6"
OLDEST_TESTS_VERSION = (2, 13, 0)      # before 2.13 each test printed its own header: not simulated
# A failure at communicator init, per tag (src/common.cu): the NCCLCHECK line of the ncclGroupEnd() that ends the
# init (in run() before 2.17.8, in initComms() after), then the TESTCHECK lines it goes back through (run's call of
# initComms from 2.17.8, main's check of run()). A release between two tags takes the older tag's numbers
# [approximation: the exact lines of each release are not modelled]; 2.13.0-2.13.3 take v2.13.4's.
INIT_FAILURE_LINES = (
    ((2, 13, 0), 958, (842,)),             # v2.13.4
    ((2, 14, 1), 1057, (893,)),
    ((2, 16, 7), 1135, (941,)),
    ((2, 17, 3), 1305, (1126,)),
    ((2, 17, 6), 1279, (1100,)),
    ((2, 17, 8), 209, (1357, 1189)),       # tests/fixtures/real/nccl_all_reduce_perf_*_gh200_1.txt: main's 1189
    ((2, 18, 3), 212, (1388, 1218)),
    ((2, 19, 6), 222, (1620, 1454)),
)


# options younger than the oldest release simulated: -C and -T came with d313d20 (2.13.4), -J with 00f5281 (2.17.3)
OPTION_SINCE = {"cputime": (2, 13, 4), "timeout": (2, 13, 4), "json": (2, 17, 3)}


def release(text):
    """``2.17.6`` -> (2, 17, 6); None when it is no release number."""
    parts = (text or "").strip().split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def tests_version(state):
    return os.environ.get("MLXSIM_NCCL_TESTS_VERSION") or state.get("nccl_tests_version") or DEFAULT_TESTS_VERSION


def layout(text):
    """What the nccl-tests release ``text`` prints (FORMAT_FACTS.md, nccl-tests), or None for a release the
    simulator does not print (not a number, or before 2.13.0)."""
    v = release(text)
    if v is None or v < OLDEST_TESTS_VERSION:
        return None
    nccl_line, backtrace = [(line, rest) for since, line, rest in INIT_FAILURE_LINES if since <= v][-1]
    if (2, 17, 3) <= v < (2, 17, 6):
        tail = ""                          # "  %6s\n"
    elif v < (2, 17, 7):
        tail = " " + " " * 20              # " %20s" with an empty timestamp label (a62c975)
    else:
        tail = " "                         # " %*s" of width 0 (51f2e7e)
    return {
        "release": text.strip(), "tuple": v,
        "group": v >= (2, 13, 4),          # d313d20: "#  Rank %2d Group %2d Pid ..."
        "bdf": v >= (2, 14, 1),            # b4300cc: [%04x:%02x:%02x] for [0x%02x]
        "start": v >= (2, 16, 7),          # dafb704: "# Collective test starting/concluded"
        "warmup": 1 if v >= (2, 16, 8) else 5,
        "wide": v >= (2, 17, 3),           # 00f5281: "  %6g" #wrong, getFloatStr widths, -J
        "version_line": v >= (2, 17, 4),   # 9641693
        "tail": tail if v >= (2, 17, 3) else None,
        "final_hash": v >= (2, 17, 7),     # finalizeFooter's "#"
        "last_error_line": v < (2, 17, 3),  # PRINT("%s\n", ncclGetLastError(NULL)): a blank line
        "unalign": v >= (2, 18, 2),        # eb0d3d2
        "init_failure": (nccl_line, backtrace),
    }


def failure_lines(lay, host, pid, why):
    """What one process prints when its communicator init fails (src/common.h: NCCLCHECK, then each TESTCHECK)."""
    nccl_line, backtrace = lay["init_failure"]
    return ["%s: Test NCCL failure common.cu:%d '%s'" % (host, nccl_line, why)] + \
           [" .. %s pid %d: Test failure common.cu:%d" % (host, pid, line) for line in backtrace]


def float_text(value, width):
    """src/util.cu getFloatStr (2.17.3 and later): two decimals if they fit, else one, else none, else e."""
    for fmt in ("%*.2f", "%*.1f", "%*.0f"):
        text = fmt % (width, value)
        if len(text) <= width:
            return text
    return ("%*.1e" if width >= 7 else "%*.0e") % (width, value)


class Usage(Exception):
    pass


def parse_size(text):
    text = text.strip()
    mult = 1
    if text and text[-1] in "KkMmGg":
        mult = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}[text[-1].lower()]
        text = text[:-1]
    try:
        return int(float(text) * mult)
    except ValueError:
        raise Usage("invalid size %r" % text) from None


def parse(tool, args, lay=None):
    opts = {"minbytes": 32 * 1024 * 1024, "maxbytes": 32 * 1024 * 1024, "factor": 1, "stepbytes": 1024 * 1024,
            "ngpus": 1, "nthreads": 1, "check": 1, "iters": 20, "warmup": None, "json": None, "datatype": "float",
            "op": None}
    spec = {"-b": "minbytes", "--minbytes": "minbytes", "-e": "maxbytes", "--maxbytes": "maxbytes",
            "-f": "factor", "--stepfactor": "factor", "-i": "stepbytes", "--stepbytes": "stepbytes",
            "-g": "ngpus", "--ngpus": "ngpus", "-t": "nthreads", "--nthreads": "nthreads", "-c": "check",
            "--check": "check", "-n": "iters", "--iters": "iters", "-w": "warmup", "--warmup_iters": "warmup",
            "-J": "json", "--output_file": "json", "-d": "datatype", "--datatype": "datatype", "-o": "op",
            "--op": "op", "-a": "average", "--average": "average", "-G": "graph", "--cudagraph": "graph",
            "-z": "blocking", "--blocking": "blocking", "-r": "root", "--root": "root", "-m": "agg",
            "--agg_iters": "agg", "-p": "parallel", "--parallel_init": "parallel", "-C": "cputime",
            "--report_cputime": "cputime", "-T": "timeout", "--timeout": "timeout"}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-h", "--help"):
            raise Usage("help")
        name, value = (arg.split("=", 1) + [None])[:2] if arg.startswith("--") else (arg, None)
        if name not in spec or (lay and lay["tuple"] < OPTION_SINCE.get(spec[name], (0,))):
            raise Usage("%s: invalid option -- '%s'" % (tool, arg.lstrip("-")))
        if value is None:
            if i + 1 >= len(args):
                raise Usage("%s: option requires an argument -- '%s'" % (tool, arg.lstrip("-")))
            i += 1
            value = args[i]
        key = spec[name]
        if key in ("minbytes", "maxbytes", "stepbytes"):
            opts[key] = parse_size(value)
        elif key in ("json", "datatype", "op"):
            opts[key] = value
        else:
            try:
                opts[key] = int(value)
            except ValueError:
                raise Usage("%s: invalid value %r for %s" % (tool, value, arg)) from None
        i += 1
    if opts["ngpus"] < 1:
        raise Usage("%s: invalid value %r for -g" % (tool, str(opts["ngpus"])))
    if opts["warmup"] is None:
        opts["warmup"] = lay["warmup"] if lay else 1
    return opts


def sizes(opts):
    out, size = [], opts["minbytes"]
    while size <= opts["maxbytes"]:
        out.append(size)
        size = size * opts["factor"] if opts["factor"] > 1 else size + opts["stepbytes"]
        if not out[-1] or (opts["factor"] <= 1 and opts["stepbytes"] <= 0):
            break
    return out or [opts["minbytes"]]


def launcher_error():
    """Why this process cannot join a world its environment names, or None. A real MPI rank learns its rank from
    the launcher's PMIx server (Open MPI 4/5's mpirun and Slurm's ``srun --mpi=pmix`` give every rank
    ``PMIX_NAMESPACE``, ``PMIX_RANK`` and ``PMIX_SERVER_URI*`` - the local daemon's address - checked with Open MPI
    4.1.4's mpirun); MPICH's hydra gives ``PMI_RANK`` with ``PMI_FD`` or ``PMI_PORT``. Without a launcher, MPI_Init
    makes a singleton: a world of one, whatever ``OMPI_COMM_WORLD_*`` says (an environment copied by hand is not a
    launch) - except under srun without PMIx (``SLURM_JOB_ID`` and ``SLURM_STEP_ID`` set): there Open MPI's
    MPI_Init fails with "direct launched using srun" (measured, SRUN_WITHOUT_PMI). Under ``srun --mpi=pmix`` the
    rank has no ``OMPI_COMM_WORLD_*``: rank and size come from ``SLURM_PROCID`` / ``SLURM_NTASKS`` (what Slurm's
    PMIx server gives; measured with Open MPI 4.1.4's libmpi, MPI_Comm_rank/size equal them). [invented: the
    simulator only checks that the PMIx server named answers a TCP connect; it does not speak
    PMIx.]"""
    uris = sorted(k for k in os.environ if k.startswith("PMIX_SERVER_URI"))
    if "PMIX_RANK" in os.environ and "PMIX_NAMESPACE" in os.environ and uris:
        text = os.environ[uris[-1]]
        address = text.split(";", 1)[-1]
        if address.startswith("tcp4://") and ":" in address[7:]:
            host, port = address[7:].rsplit(":", 1)
            try:
                socket.create_connection((host, int(port)), timeout=5).close()
                return None
            except (OSError, ValueError):
                return "PMIX ERROR: UNREACHABLE in file ptl_tcp.c: the PMIx server %s does not answer" % address
        return None
    if "PMI_RANK" in os.environ and ("PMI_FD" in os.environ or "PMI_PORT" in os.environ):
        return None
    if "SLURM_JOB_ID" in os.environ and "SLURM_STEP_ID" in os.environ:
        # started by srun without a PMI it speaks (--mpi=none, Slurm's default here): Open MPI 4.1.4's MPI_Init
        # (Debian 12, libpmix2) fails in every rank, exit 1 - measured with its libmpi under Slurm 22.05's srun
        # --mpi=none. [invented: which variables Open MPI reads to tell srun; the simulator takes these two]
        return SRUN_WITHOUT_PMI % {"host": socket.gethostname(), "pid": os.getpid()}
    return "singleton"


# What every rank printed (stderr) and then exited 1 with (Open MPI 4.1.4, srun --mpi=none, Slurm 22.05.8)
SRUN_WITHOUT_PMI = """[%(host)s:%(pid)05d] OPAL ERROR: Unreachable in file ext3x_client.c at line 112
--------------------------------------------------------------------------
The application appears to have been direct launched using "srun",
but OMPI was not built with SLURM's PMI support and therefore cannot
execute. There are several options for building PMI support under
SLURM, depending upon the SLURM version you are using:

  version 16.05 or later: you can use SLURM's PMIx support. This
  requires that you configure and build SLURM --with-pmix.

  Versions earlier than 16.05: you must use either SLURM's PMI-1 or
  PMI-2 support. SLURM builds PMI-1 by default, or you can manually
  install PMI-2. You must then build Open MPI using --with-pmi pointing
  to the SLURM PMI library location.

Please configure as appropriate and try again.
--------------------------------------------------------------------------
*** An error occurred in MPI_Init
*** on a NULL communicator
*** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,
***    and potentially your MPI job)
[%(host)s:%(pid)05d] Local abort before MPI_INIT completed completed successfully, but am not able to aggregate \
error messages, and not able to guarantee that all other processes were killed!"""


def world():
    """(rank, size, local rank) of this process: from the launcher's variables when a launcher started it
    (launcher_error() is None), else a world of one."""
    if launcher_error() is not None:
        return 0, 1, 0
    for rank, size, local in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
                              ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
                              ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")):
        if rank in os.environ and size in os.environ:
            r, n = int(os.environ[rank]), int(os.environ[size])
            return r, n, int(os.environ.get(local, "0"))
    return 0, 1, 0


def split_color(proc):
    text = os.environ.get("NCCL_TESTS_SPLIT_MASK")
    if text:
        return proc & int(text, 16)
    text = (os.environ.get("NCCL_TESTS_SPLIT") or "").strip()
    if not text:
        return 0
    for word, sym, fn in (("AND", "&", lambda p, v: p & v), ("OR", "|", lambda p, v: p | v),
                          ("MOD", "%", lambda p, v: p % v), ("DIV", "/", lambda p, v: p // v)):
        for prefix in (word, sym):
            if text.upper().startswith(prefix):
                try:
                    return fn(proc, int(text[len(prefix):].strip(), 0))
                except (ValueError, ZeroDivisionError):
                    return 0
    return 0


def host_hcas(state):
    host = model.Host(state)
    return sorted(c["functions"][f]["rdma"] for c, f in host.functions() if c["functions"][f].get("rdma"))


def visible_gpus(state):
    """The host's GPUs as CUDA numbers them: one per RDMA device, in the devices' order [invented: the simulator has
    no GPU model; a rail-optimised server has one NIC per GPU], narrowed by CUDA_VISIBLE_DEVICES as CUDA does (the
    list stops at the first index that is not a device)."""
    count = len(host_hcas(state))
    text = os.environ.get("CUDA_VISIBLE_DEVICES")
    if text is None:
        return list(range(count))
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item.isdigit() or int(item) >= count or int(item) in out:
            break
        out.append(int(item))
    return out


def hca_for(state, local_rank):
    wanted = os.environ.get("NCCL_IB_HCA", "")
    names = []
    for item in wanted.lstrip("=^").split(","):
        item = item.strip()
        if item:
            names.append(item.split(":")[0])
    if not names:
        names = host_hcas(state)
    if not names:
        return None
    return names[local_rank % len(names)]


def header(lay):
    """writeResultHeader: "#", then three lines (2.13's single header; the wide "#wrong" and the trailing blanks of
    2.17.3 and later)."""
    blank5 = ("", "", "", "", "")
    first = "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          " % blank5
    names = ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
             "#wrong")
    units = ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")
    if lay["wide"]:
        fmt = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s"
        return ["#", first, fmt % names + lay["tail"], fmt % units + lay["tail"]]
    return ["#", first, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s" % names,
            "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s" % units]


def time_text(usec):
    """The time column before 2.17.3 ("36.47", "1542.0", "18289": tests/fixtures/real/nccl_all_reduce_perf_*)."""
    if usec >= 10000.0:
        return "%7.0f" % usec
    if usec >= 100.0:
        return "%7.1f" % usec
    return "%7.2f" % usec


# --------------------------------------------------------------------------------------------- the model
def group_busbw(members, tool):
    """Peak bus bandwidth (GB/s) of one communicator: members = list of (proc, endpoint, host)."""
    hosts = sorted({m["host"] for m in members})
    if len(members) < 2:
        return 0.0
    ends = [m["endpoint"] for m in members]
    mtu = min(e["active_mtu"] for e in ends)
    slowest = min(perf.path_gbps(a, b, mtu) for a in ends for b in ends) / 8.0 * (
        perf.NCCL_NET_EFFICIENCY / perf.WIRE_EFFICIENCY_4K)
    if len(hosts) > 2 and not all(e["lossless"] for e in ends):
        slowest *= perf.INCAST_COLLAPSE
    if len(hosts) == 1:
        return perf.NVLINK_BUSBW_GBS
    if len(hosts) == len(members):
        return slowest
    per_host = max(sum(1 for m in members if m["host"] == h) for h in hosts)
    return min(perf.NVLINK_BUSBW_GBS, slowest * per_host)


def rows(opts, tool, members):
    n = len(members)
    redop, factor, count = COLLECTIVES[tool]
    peak_bus = group_busbw(members, tool)
    out = []
    for size in sizes(opts):
        bus_per_alg = factor(n)
        if peak_bus <= 0 or bus_per_alg <= 0:
            alg_peak = perf.NVLINK_BUSBW_GBS if n == 1 else 1e-9
        else:
            alg_peak = peak_bus / bus_per_alg
        both = []
        for place in ("out", "in"):
            wobble = 1.0 + 0.01 * perf.jitter(size, place, n)
            time_us = (perf.NCCL_LAT_USEC + size / (alg_peak * 1e3)) * wobble
            alg = size / time_us / 1e3
            both.append({"time": time_us, "algbw": alg, "busbw": alg * bus_per_alg, "wrong": 0})
        out.append({"size": size, "count": count(size, n), "type": opts["datatype"], "redop": opts["op"] or redop,
                    "root": -1, "out": both[0], "in": both[1]})
    return out


# --------------------------------------------------------------------------------------------- printing
def version_lines(host, pid, version):
    """NCCL's own version line, printed by rank 0 when its communicator is created - after the device lines: bare
    with NCCL_DEBUG=VERSION or WARN (tests/fixtures/real/nccl_all_reduce_perf_bare_version_h200_1.txt), an INFO line
    with INFO or TRACE, none without NCCL_DEBUG."""
    level = (os.environ.get("NCCL_DEBUG") or "").upper()
    if level in ("INFO", "TRACE"):
        return ["%s:%d:%d [0] NCCL INFO NCCL version %s+cuda12.4" % (host, pid, pid, version)]
    if level in ("VERSION", "WARN"):
        return ["NCCL version %s+cuda12.4" % version]
    return []


def preamble(tool, opts, everyone, version, lay):
    """What rank 0 prints before the communicators exist: the version and start lines (by release), the options
    line, the devices (writeDeviceReport: Group from 2.13.4, the PCI BDF from 2.14.1)."""
    code = perf.nccl_code(version)
    lines = []
    if lay["version_line"]:
        lines.append("# nccl-tests version %s nccl-headers=%d nccl-library=%d" % (lay["release"], code, code))
    if lay["start"]:
        lines.append("# Collective test starting: %s" % tool)
    lines += ["# nThread %d nGpus %d minBytes %d maxBytes %d step: %d(%s) warmup iters: %d iters: %d agg iters: 1 "
              "validation: %d graph: 0%s" % (
                  opts["nthreads"], opts["ngpus"], opts["minbytes"], opts["maxbytes"],
                  opts["factor"] if opts["factor"] > 1 else opts["stepbytes"],
                  "factor" if opts["factor"] > 1 else "bytes", opts["warmup"], opts["iters"], opts["check"],
                  " unalign: 0" if lay["unalign"] else ""),
              "#", "# Using devices"]
    for m in everyone:
        bus = (int(m["endpoint"]["pci"].split(":")[1], 16) + 0x10) & 0xff
        where = "%04x:%02x:%02x" % (0, bus, 0) if lay["bdf"] else "0x%02x" % bus
        if lay["group"]:
            lines.append("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s" % (
                m["proc"], m["color"], m["pid"], m["host"], m["local"], where, m["gpu"]))
        else:
            lines.append("#   Rank %2d Pid %6d on %10s device %2d [%s] %s" % (
                m["proc"], m["pid"], m["host"], m["local"], where, m["gpu"]))
    return lines


def table_lines(opts, table, lay):
    """The column header and one row per size (writeBenchmarkLinePreamble / writeBenchmarkLineBody)."""
    lines = header(lay)
    for row in table:
        text = "%12d  %12d  %8s  %6s  %6s" % (row["size"], row["count"], row["type"], row["redop"], "%6i" % row["root"])
        for side in (row["out"], row["in"]):
            if lay["wide"]:
                body = (float_text(side["time"], 7), float_text(side["algbw"], 6), float_text(side["busbw"], 6))
                text += ("  %7s  %6s  %6s  %6g" % (body + (side["wrong"],)) if opts["check"]
                         else "  %7s  %6s  %6s    N/A" % body)
            else:
                body = (time_text(side["time"]), side["algbw"], side["busbw"])
                text += ("  %7s  %6.2f  %6.2f  %5g" % (body + (side["wrong"],)) if opts["check"]
                         else "  %7s  %6.2f  %6.2f  %5s" % (body + ("N/A",)))
        lines.append(text)
    return lines


def averaged(opts, tool, groups):
    """One table for every group that ran at once: per size the time averaged over the ranks (``-a 1``)."""
    tables = [(len(members), rows(opts, tool, members)) for members in groups.values()]
    total = sum(n for n, _t in tables)
    n_ref, out = tables[0][0], []
    factor = COLLECTIVES[tool][1](n_ref)
    for i, row in enumerate(tables[0][1]):
        merged = dict(row)
        for side in ("out", "in"):
            time_us = sum(n * t[i][side]["time"] for n, t in tables) / total
            alg = row["size"] / time_us / 1e3
            merged[side] = {"time": time_us, "algbw": alg, "busbw": alg * factor, "wrong": 0}
        out.append(merged)
    return out


def average(table):
    if not table:
        return 0.0
    return sum(r["out"]["busbw"] + r["in"]["busbw"] for r in table) / (2.0 * len(table))


def footer(tool, avg, check, lay):
    """writeResultFooter, then by release: the concluded line (2.16.7), finalizeFooter's "#" (2.17.7), the blank
    line of ncclGetLastError (before 2.17.3)."""
    verdict = "" if check == -1 else ("FAILED" if avg < check * 0.9 else "OK")
    lines = ["# %-20s : %d %s" % ("Out of bounds values", 0, "OK"),
             "# %-20s : %s %s" % ("Avg bus bandwidth", "%g" % avg, verdict), "#"]
    if lay["start"]:
        lines.append("# Collective test concluded: %s" % tool)
    if lay["final_hash"]:
        lines.append("#")
    if lay["last_error_line"]:
        lines.append("")
    return lines


def write_json(path, tool, opts, everyone, table, avg, check, version):
    data = {"version": 1, "nccl_version": perf.nccl_code(version), "args": [tool],
            "config": {"nthreads": opts["nthreads"], "ngpus": opts["ngpus"], "minimum_bytes": opts["minbytes"],
                       "maximum_bytes": opts["maxbytes"], "warmup_iters": opts["warmup"], "iterations": opts["iters"],
                       "aggregated_iterations": 1, "validation": opts["check"], "graph": 0},
            "devices": [{"rank": m["proc"], "group": m["color"], "pid": m["pid"], "hostname": m["host"],
                         "device": m["local"]} for m in everyone],
            "results": [], "out_of_bounds": {"count": 0, "okay": True},
            "average_bus_bandwidth": {"bandwidth": avg, "okay": "unchecked" if check == -1 else avg >= check * 0.9}}
    if opts["factor"] > 1:
        data["config"]["step_factor"] = opts["factor"]
    else:
        data["config"]["step_bytes"] = opts["stepbytes"]
    for row in table:
        entry = {"size": row["size"], "count": row["count"], "type": row["type"], "redop": row["redop"],
                 "root": "%6i" % row["root"], "actual_iterations": opts["iters"], "experiment_name": tool}
        for key, side in (("out_of_place", row["out"]), ("in_place", row["in"])):
            entry[key] = {"time": side["time"], "alg_bw": side["algbw"], "bus_bw": side["busbw"],
                          "nwrong": float(side["wrong"]) if opts["check"] else None}
        data["results"].append(entry)
    with open(path, "w") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")


# --------------------------------------------------------------------------------------------- the ranks
def ring_listen(me):
    sock = perf.bound_socket(socket.SOCK_STREAM, me["netdev"])
    address = perf.ipv4_of(me["netdev"]) if perf.kernel_has(me["netdev"]) else "127.0.0.1"
    sock.bind((address or "0.0.0.0", 0))
    sock.listen(4)
    return sock, address, sock.getsockname()[1]


def _serve_ring(sock, stop):
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            conn, _addr = sock.accept()
        except socket.timeout:
            continue
        except OSError:
            return
        with conn:
            try:
                conn.settimeout(10)
                chan = perf.Channel(conn)
                chan.recv()
                chan.send({"ok": True})
            except (OSError, ValueError, ConnectionError):
                pass


def ring_connect(me, peer):
    """Connect to the next rank over this rank's HCA: None when it works, else the NCCL WARN line."""
    address = perf.ipv4_of(me["netdev"]) if perf.kernel_has(me["netdev"]) else None
    if not peer.get("address") or (perf.kernel_has(me["netdev"]) and not address):
        # [invented wording] a rail without an IPv4 address has no RoCE v2 GID at NCCL_IB_GID_INDEX 3: the QP cannot
        # be connected (real NCCL fails in its IB transport's connect; the exact line is not known here)
        return ("NCCL WARN NET/IB : no RoCE v2 GID (IPv4 address) on %s for GID index %s: cannot connect to rank %s"
                % (me["netdev"] if not address else "the peer's rail", os.environ.get("NCCL_IB_GID_INDEX", "3"),
                   peer.get("proc")))
    sock = perf.bound_socket(socket.SOCK_STREAM, me["netdev"], address)
    sock.settimeout(5)
    warn = ("NCCL WARN NET/IB : Got completion from peer %s<%d> with status=12 opcode=0 len=0 vendor err 129 (Recv)"
            " localGid ::ffff:%s remoteGids ::ffff:%s hca %s" % (
                peer["address"], peer["port"], address or "0.0.0.0", peer["address"], me["endpoint"]["device"]))
    try:
        sock.connect((peer["address"], peer["port"]))
        chan = perf.Channel(sock)
        chan.send({"from": me["proc"]})
        chan.recv()
    except (OSError, ValueError, ConnectionError):
        return warn
    finally:
        sock.close()
    mtu = min(me["endpoint"]["active_mtu"], peer["endpoint"]["active_mtu"])
    if perf.kernel_has(me["netdev"]) and not perf.mtu_probe(me["netdev"], peer["address"], peer["echo"], mtu):
        return warn
    if me["endpoint"]["flapping"] or peer["endpoint"]["flapping"] or not me["endpoint"]["up"]:
        return warn
    return None


def run(tool, args):
    state = st.load()
    lay = layout(tests_version(state))
    if lay is None:
        errln("mlxsim: nccl-tests %s is not simulated (MLXSIM_NCCL_TESTS_VERSION / nccl_tests_version: a release "
              "2.13.0 or later, as 2.17.6)" % tests_version(state))
        return 2
    try:
        opts = parse(tool, args, lay)
    except Usage as exc:
        if str(exc) == "help":
            outln("USAGE: %s [-t,--nthreads <num threads>] [-g,--ngpus <gpus per thread>] [-b,--minbytes <min size in"
                  " bytes>] [-e,--maxbytes <max size in bytes>] [-f,--stepfactor <increment factor>] [-c,--check <0/1>]"
                  " [-J,--output_file <file>] [-h,--help]" % tool)
            return 0
        errln(str(exc))
        return 1
    if faults.find(state, "nccl_no_mpi"):
        # built without MPI=1: no MPI_Init, no launcher asked - a world of one, whatever the environment says
        proc, nprocs, local = 0, 1, 0
    else:
        trouble = launcher_error()
        if trouble not in (None, "singleton"):
            errln(trouble)
            return 1
        proc, nprocs, local = world()
    hostname = state.get("hostname") or socket.gethostname()
    gpus = visible_gpus(state)
    if opts["ngpus"] > len(gpus):
        errln("Invalid number of GPUs: %d requested but only %d were found." % (opts["ngpus"], len(gpus)))
        return 1
    # this process drives -g GPUs: ranks proc*g .. proc*g+g-1, devices local*g ..; each GPU uses the HCA of its
    # device number (NCCL_IB_HCA, else the host's RDMA devices in order)
    ranks = []
    for g in range(opts["ngpus"]):
        dev = (local * opts["ngpus"] + g) % len(gpus)
        hca = hca_for(state, gpus[dev])
        endpoint = perf.endpoint(state, hca, int(os.environ.get("NCCL_IB_TC", "0") or 0)) if hca else None
        if endpoint is None:
            ranks = []
            break
        ranks.append({"proc": proc * opts["ngpus"] + g, "local": dev, "endpoint": endpoint,
                      "gpu": platform.host(state).get("gpu", platform.DEFAULT_GPU)})
    endpoint = ranks[0]["endpoint"] if ranks else None
    if endpoint is None:
        for line in failure_lines(lay, hostname, os.getpid(), "unhandled system error (run with NCCL_DEBUG=INFO for "
                                                              "details) / NET/IB : No device found."):
            outln(line)
        return 1
    version = perf.nccl_version(state)
    # the nccl_rank_fail fault: this host's ranks fail their communicator init (why: the fault's "error", else
    # NCCL's "unhandled system error" with an empty last error, as the real captures print it)
    broken = faults.find(state, "nccl_rank_fail")
    why = (broken[0].get("error") or "unhandled system error (run with NCCL_DEBUG=INFO for details) / ") if broken \
        else None
    me = {"proc": proc, "local": local, "host": hostname, "pid": os.getpid(), "color": split_color(proc),
          "endpoint": endpoint, "netdev": endpoint["netdev"], "ranks": ranks, "fail": why}
    ring, address, port = ring_listen(me)
    echo = perf.bound_socket(socket.SOCK_DGRAM, me["netdev"])
    echo.bind((address or "0.0.0.0", 0))
    me.update({"address": address, "port": port, "echo": echo.getsockname()[1]})
    perf.account(endpoint)
    stop = threading.Event()
    for target, sock in ((_serve_ring, ring), (perf.echo, echo)):
        threading.Thread(target=target, args=(sock, stop), daemon=True).start()
    try:
        if nprocs == 1:
            return finish(tool, opts, [me], version, None, lay)
        comm = os.environ.get("NCCL_COMM_ID", "")
        if ":" not in comm:
            # [invented] the lab's ranks need NCCL_COMM_ID (real nccl-tests broadcast the id over MPI)
            for line in failure_lines(lay, hostname, me["pid"], "invalid argument (run with NCCL_DEBUG=WARN for "
                                                                "details) / NCCL_COMM_ID is required in the lab"):
                outln(line)
            return 1
        root_host, root_port = comm.rsplit(":", 1)
        if proc == 0:
            return root(tool, opts, me, nprocs, root_host, int(root_port), version, lay)
        return member(me, root_host, int(root_port), hostname, lay)
    finally:
        stop.set()
        ring.close()
        echo.close()


def fail(lay, me, why):
    for line in failure_lines(lay, me["host"], me["pid"], why):
        outln(line)
    sys.stdout.flush()


def member(me, root_host, root_port, hostname, lay):
    deadline = time.monotonic() + CONNECT_TIMEOUT
    while True:
        try:
            sock = socket.create_connection((root_host, root_port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                fail(lay, me, "remote process exited or there was a network error / Bootstrap : no connection to "
                              "%s:%d" % (root_host, root_port))
                return 1
            time.sleep(0.2)
    with sock:
        sock.settimeout(CONNECT_TIMEOUT + 600)
        try:
            chan = perf.Channel(sock)
            keys = ("proc", "local", "host", "pid", "color", "endpoint", "address", "port", "echo", "ranks", "fail")
            chan.send({k: me[k] for k in keys})
            task = chan.recv()      # after rank 0 printed the devices
            if me["fail"]:
                fail(lay, me, me["fail"])
                chan.send({"warn": None, "failed": True})
                chan.recv()
                return 1
            if task.get("abort"):
                # another rank's init failed: this one is stopped with the job [invented: as mpirun aborts it]
                chan.send({"warn": None})
                return int(chan.recv().get("rc", 1))
            warn = ring_connect(me, task["next"]) if task.get("next") else None
            if warn:
                outln("%s:%d:%d [%d] %s" % (hostname, me["pid"], me["pid"], me["local"], warn))
            chan.send({"warn": warn})
            final = chan.recv()
            if warn and int(final.get("rc", 1)):
                fail(lay, me, "remote process exited or there was a network error / NET/IB : Got completion from "
                              "peer with status=12")
            return int(final.get("rc", 1))
        except (OSError, ValueError, ConnectionError):
            fail(lay, me, "remote process exited or there was a network error / Bootstrap : lost the root")
            return 1


def root(tool, opts, me, nprocs, host, port, version, lay):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError:
        fail(lay, me, "unhandled system error / Bootstrap : cannot listen on %s:%d" % (host, port))
        return 1
    listener.listen(nprocs)
    listener.settimeout(CONNECT_TIMEOUT)
    conns, everyone = {}, [me]
    try:
        while len(everyone) < nprocs:
            try:
                conn, _addr = listener.accept()
            except socket.timeout:
                fail(lay, me, "remote process exited or there was a network error / Bootstrap : %d of %d ranks "
                              "joined" % (len(everyone), nprocs))
                for c in conns.values():
                    c.send({"rc": 1})
                return 1
            conn.settimeout(CONNECT_TIMEOUT + 600)
            chan = perf.Channel(conn)
            info = chan.recv()
            conns[info["proc"]] = chan
            everyone.append(info)
        everyone.sort(key=lambda m: m["proc"])
        if any(m.get("fail") for m in everyone):
            return init_failed(tool, opts, everyone, conns, version, lay)
        groups = {}
        for m in everyone:
            groups.setdefault(m["color"], []).append(m)
        nexts = {}
        for members in groups.values():
            for i, m in enumerate(members):
                succ = members[(i + 1) % len(members)]
                if succ["host"] != m["host"]:
                    nexts[m["proc"]] = succ
        warns = []
        for proc, conn in sorted(conns.items()):
            conn.send({"next": nexts.get(proc)})
        mine = ring_connect(me, nexts[0]) if nexts.get(0) else None
        if mine:
            warns.append("%s:%d:%d [%d] %s" % (me["host"], me["pid"], me["pid"], me["local"], mine))
        for proc, conn in sorted(conns.items()):
            answer = conn.recv()
            if answer.get("warn"):
                warns.append("%s [rank %d] %s" % (everyone[proc]["host"], proc, answer["warn"]))
        rc = finish(tool, opts, everyone, version, warns, lay)
        for conn in conns.values():
            conn.send({"rc": rc})
        return rc
    finally:
        for conn in conns.values():
            conn.close()
            conn.sock.close()
        listener.close()


def init_failed(tool, opts, everyone, conns, version, lay):
    """Some rank's communicator init failed (nccl_rank_fail): rank 0 has printed the devices; each failing process
    prints its failure and backtrace (NVIDIA/nccl-tests issue 369: no column header), the others print nothing more
    - mpirun stops them when the first exits 1 [invented: what a rank blocked in its init would print with another
    launcher] - and every process exits 1."""
    me = everyone[0]
    for line in preamble(tool, opts, gpu_ranks(everyone), version, lay) + version_lines(me["host"], me["pid"], version):
        outln(line)
    sys.stdout.flush()
    if me.get("fail"):
        fail(lay, me, me["fail"])
    for proc, conn in sorted(conns.items()):
        conn.send({"next": None, "abort": True})
        conn.recv()             # a failing member has printed its lines
    for conn in conns.values():
        conn.send({"rc": 1})
    return 1


def gpu_ranks(procs):
    """The communicator's ranks (one per GPU) from its processes (one per MPI rank, -g GPUs each)."""
    return [{"proc": r["proc"], "local": r["local"], "host": m["host"], "pid": m["pid"], "color": m["color"],
             "endpoint": r["endpoint"], "gpu": r.get("gpu", platform.DEFAULT_GPU)} for m in procs for r in m["ranks"]]


def finish(tool, opts, procs, version, warns, lay):
    everyone = gpu_ranks(procs)
    groups = {}
    for m in everyone:
        groups.setdefault(m["color"], []).append(m)
    check = float(os.environ["NCCL_TESTS_MIN_BW"]) if os.environ.get("NCCL_TESTS_MIN_BW") else -1
    for line in preamble(tool, opts, everyone, version, lay) + version_lines(procs[0]["host"], procs[0]["pid"], version):
        outln(line)
    if procs[0].get("fail"):
        fail(lay, procs[0], procs[0]["fail"])
        return 1
    if warns:
        # a ring that does not connect: the WARN lines [invented: rank 0 repeats the other ranks' own, with their rank],
        # then rank 0's failure and backtrace - before the column header, as a failure at init
        for line in warns:
            outln(line)
        fail(lay, procs[0], "remote process exited or there was a network error / NET/IB : Got completion from peer "
                            "with status=12")
        return 1
    # every group runs at once; with -a 1 (the default) nccl-tests averages the time over every rank
    table = averaged(opts, tool, groups)
    for line in table_lines(opts, table, lay):
        outln(line)
    avg = average(table)
    for line in footer(tool, avg, check, lay):
        outln(line)
    if opts["json"]:
        write_json(opts["json"], tool, opts, everyone, table, avg, check, version)
    sys.stdout.flush()
    return 1 if (check != -1 and avg < check * 0.9) else 0
