"""perftest: ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat.

The release simulated is perftest 25.01.0-0.80 (version 6.24), the one the real CUDA captures
(tests/fixtures/real/ib_write_bw_{client,server}_roce_cuda_1.txt) were printed by: its banner has the
"ibv_wr* API : ON\t\tUsing DDP : OFF" line (added in 25.01, renamed "Using Enhanced Reorder" in 25.10) and no
"CQE Poll Batch" line (added in 25.04). Layouts from linux-rdma/perftest at that tag (src/perftest_parameters.[ch]:
ctx_print_test_info, RESULT_FMT*, REPORT_FMT*, write_test_info_to_file; src/perftest_communication.[ch]:
BASIC_ADDR_FMT, RDMA_FMT, PERF_GID_FMT, ctx_print_pingpong_data) and the TAB layout as captured.

The MTU as perftest takes it (set_mtu, check_mtu): the port's active MTU (perf.port_active_mtu: InfiniBand 4096,
RoCE the netdev MTU minus the RoCE headers), or the ``-m`` request when it is one of 256..4096 and not above the
active MTU; then the smaller of both ends. InfiniBand addresses by LID, RoCE by GID (check_link: an Ethernet port
without ``-x`` uses GID index 0, then get_best_gid_index picks the RoCE v2 IPv4 GID - index 3 on an mlx5 port
with one IPv4 address, as show_gids lists it).

Without a server name the tool is the server: it prints the banner, listens on the port (-p, default 18515) of
the device's netdev and waits for one client. With a name it is the client: it connects from the device's netdev
to the server, the two exchange what their ends bring (perf.endpoint), the client proves the path takes frames
of the active MTU (one Don't-Fragment datagram as large as a RoCE frame, echoed by the server), sends data for
the (scaled) duration, and both print the report computed by the model (perf.py).
"""
import os
import socket
import sys
import threading
import time

from .. import perf
from .. import state as st
from ..common import errln, outln

TESTS = {
    "ib_write_bw": ("WRITE", "BW"), "ib_read_bw": ("READ", "BW"), "ib_send_bw": ("SEND", "BW"),
    "ib_write_lat": ("WRITE", "LAT"), "ib_read_lat": ("READ", "LAT"), "ib_send_lat": ("SEND", "LAT"),
}
VERB_TITLE = {"WRITE": "RDMA_Write", "READ": "RDMA_Read", "SEND": "Send"}
RESULT_LINE = "-" * 87
RESULT_FMT_G = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
RESULT_FMT = " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]"
RESULT_FMT_LAT = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
                  "   99% percentile[usec]   99.9% percentile[usec] ")
RESULT_FMT_LAT_DUR = " #bytes        #iterations       t_avg[usec]    tps average"
DEF_PORT = 18515
# the GPU buffer of the client and of the server, as the CUDA captures print them
CUDA_BUFFER = {False: "00007f3dfa600000", True: "00007f8bca600000"}
INVALID_MTU = [" Invalid MTU - %d ", " Please choose mtu from {256,512,1024,2048,4096}",
               " Will run with the port active mtu - %d"]
ACCEPT_TIMEOUT = float(os.environ.get("MLXSIM_PERFTEST_TIMEOUT", "300"))   # [invented] a real server waits forever

SHORT = {"-d": "ib_dev", "-i": "ib_port", "-x": "gid_index", "-q": "qps", "-D": "duration", "-s": "size",
         "-n": "iters", "-p": "port", "-T": "tos", "-m": "mtu", "-t": "tx_depth", "-Q": "cq_mod"}
LONG = {"--ib-dev": "ib_dev", "--ib-port": "ib_port", "--gid-index": "gid_index", "--qp": "qps",
        "--duration": "duration", "--size": "size", "--iters": "iters", "--port": "port", "--tos": "tos",
        "--mtu": "mtu", "--tx-depth": "tx_depth", "--cq-mod": "cq_mod", "--out_json_file": "out_json_file",
        "--source_ip": "source_ip", "--use_cuda": "use_cuda", "--output": "output"}
FLAGS = {"-F": "cpu_freq_f", "-R": "rdma_cm", "-b": "bidirectional", "-a": "all", "--report_gbits": "gbits",
         "--out_json": "out_json", "--use_cuda_dmabuf": "cuda_dmabuf", "--perform_warm_up": "warm_up",
         "--bidirectional": "bidirectional", "--all": "all", "--rdma_cm": "rdma_cm", "--report-both": "both",
         "--run_infinitely": "infinite"}
INTS = ("ib_port", "gid_index", "qps", "duration", "size", "iters", "port", "tos", "mtu", "tx_depth", "cq_mod",
        "use_cuda")


class Usage(Exception):
    pass


def parse(tool, args):
    opts = {"ib_dev": None, "ib_port": 1, "gid_index": -1, "qps": 1, "duration": 0, "size": None, "iters": None,
            "port": DEF_PORT, "tos": -1, "mtu": 0, "tx_depth": None, "cq_mod": None, "out_json_file": None,
            "source_ip": None, "use_cuda": None, "output": None, "server": None}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-h", "--help"):
            raise Usage("help")
        if arg in FLAGS:
            opts[FLAGS[arg]] = True
            i += 1
            continue
        key, value = None, None
        if arg.startswith("--") and "=" in arg:
            name, value = arg.split("=", 1)
            key = LONG.get(name)
            if key is None:
                raise Usage("%s: unrecognized option '%s'" % (tool, name))
        elif arg in LONG or arg in SHORT:
            key = LONG.get(arg) or SHORT.get(arg)
            if key == "use_cuda" and (i + 1 >= len(args) or not args[i + 1].isdigit()):
                value = "0"
            else:
                if i + 1 >= len(args):
                    raise Usage("%s: option requires an argument -- '%s'" % (tool, arg.lstrip("-")))
                i += 1
                value = args[i]
        elif len(arg) > 2 and arg[:2] in SHORT and not arg.startswith("--"):
            key, value = SHORT[arg[:2]], arg[2:]
        elif arg.startswith("-"):
            raise Usage("%s: invalid option -- '%s'" % (tool, arg.lstrip("-")) if not arg.startswith("--")
                        else "%s: unrecognized option '%s'" % (tool, arg))
        else:
            if opts["server"] is not None:
                raise Usage("%s: more than one server name" % tool)
            opts["server"] = arg
            i += 1
            continue
        if key in INTS:
            try:
                value = int(value, 0)
            except ValueError:
                raise Usage(" Invalid value %r for %s" % (value, arg)) from None
        opts[key] = value
        i += 1
    return opts


def usage(tool):
    outln("Usage:")
    outln("  %s            start a server and wait for connection" % tool)
    outln("  %s <host>     connect to server at <host>" % tool)
    outln("")
    outln("Options:")
    for line in ("-d, --ib-dev=<dev> ", "-D, --duration ", "-F, --CPU-freq ", "-p, --port=<port> ",
                 "-q, --qp=<num of qp's>  ", "-R, --rdma_cm ", "-s, --size=<size> ", "-x, --gid-index=<index> ",
                 "--out_json ", "--out_json_file=<file> ", "--report_gbits ", "--use_cuda=<cuda device id>"):
        outln("  " + line)


# --------------------------------------------------------------------------------------------- printing
def title(verb, kind, opts):
    words = [VERB_TITLE[verb]]
    if kind == "BW":
        if opts.get("bidirectional"):
            words.append("Bidirectional")
        words.append("BW")
    else:
        words.append("Latency")
    return " ".join(words) + " Test"


def banner(tool, verb, kind, opts, me, mtu, server):
    lines = [RESULT_LINE, "                    " + title(verb, kind, opts)]
    lines.append(" Dual-port       : OFF\t\tDevice         : %s" % me["device"])
    lines.append(" Number of qps   : %d\t\tTransport type : IB" % opts["qps"])
    lines.append(" Connection type : RC\t\tUsing SRQ      : OFF")
    lines.append(" PCIe relax order: ON\t\tLock-free      : OFF")
    lines.append(" ibv_wr* API     : ON\t\tUsing DDP      : OFF")
    if not server or opts.get("bidirectional"):
        lines.append(" TX depth        : %d" % tx_depth(kind, opts))
    if verb == "SEND" and (server or opts.get("bidirectional")):
        lines.append(" RX depth        : %d" % (512 if kind == "BW" else 1))
    if kind == "BW":
        lines.append(" CQ Moderation   : %d" % cq_mod(opts))
    lines.append(" Mtu             : %d[B]" % mtu)
    lines.append(" Link type       : %s" % ("Ethernet" if me["link_layer"] == "Ethernet" else "IB"))
    if gid_index(opts, me) != -1:
        lines.append(" GID index       : %d" % gid_index(opts, me))
    if verb == "READ":
        lines.append(" Outstand reads  : 16")
    else:
        lines.append(" Max inline data : %d[B]" % inline_size(verb, kind, opts))
    lines.append(" rdma_cm QPs\t : %s" % ("ON" if opts.get("rdma_cm") else "OFF"))
    method = " Data ex. method : %s" % ("rdma_cm" if opts.get("rdma_cm") else "Ethernet")
    if opts.get("rdma_cm") and opts["tos"] != -1:
        method += " \tTOS    : %d" % opts["tos"]
    lines.append(method)
    if opts.get("rdma_cm") and server:
        lines.append(RESULT_LINE)
        lines.append(" Waiting for client rdma_cm QP to connect")
        lines.append(" Please run the same command with the IB/RoCE interface IP")
    lines.append(RESULT_LINE)
    return lines


def tx_depth(kind, opts):
    if opts.get("tx_depth"):
        return opts["tx_depth"]
    return 128 if kind == "BW" else 1


def cq_mod(opts):
    if opts.get("cq_mod"):
        return opts["cq_mod"]
    return 1 if opts.get("use_cuda") is not None else 100


def inline_size(verb, kind, opts):
    if opts.get("use_cuda") is not None:
        return 0
    if kind == "LAT" and verb in ("WRITE", "SEND"):
        return 220 if verb == "WRITE" else 236
    return 0


def c_hex(value, width):
    """C's ``%#0<width>x``: 0x and zero padding to ``width`` - except for 0, which gets no 0x (``LID 0000``)."""
    return "%0*x" % (width, 0) if value == 0 else "%#0*x" % (width, value)


def gid_index(opts, me):
    """The GID index perftest uses: ``-x``; on an Ethernet port without it the best one (check_link sets 0,
    get_best_gid_index prefers an IPv4-mapped RoCE v2 GID: index 3 of the mlx5 table in
    fixtures/real/mlnx_qos_pcp_and_show_gids_1.txt); on InfiniBand none (-1: addressed by LID)."""
    if opts["gid_index"] != -1:
        return opts["gid_index"]
    return 3 if me["link_layer"] == "Ethernet" else -1


def gid_text(end, address):
    """PERF_GID_FMT (%02d of each byte): RoCE the IPv4-mapped GID of the address; InfiniBand the port GID
    (fe80::/64 + the port GUID)."""
    if end.get("link_layer") == "InfiniBand" and end.get("port_guid"):
        raw = [0xfe, 0x80, 0, 0, 0, 0, 0, 0] + list(bytes.fromhex(end["port_guid"]))
    elif not address:
        raw = [0] * 16
    else:
        raw = [0] * 10 + [255, 255] + [int(x) for x in address.split(".")]
    return ":".join("%02d" % b for b in raw)


def addr_lines(side, verb, opts, end, address, gid_idx):
    """ctx_print_pingpong_data: BASIC_ADDR_FMT (the LID - 0000 on RoCE), READ_FMT, RDMA_FMT, then PERF_GID_FMT when
    a GID index is in use."""
    lines = []
    seed = end["hostname"], end["device"]
    base_qpn = 0xc6 + int(perf.jitter(seed, "qpn") * 0x100)
    for q in range(opts["qps"]):
        psn = int(perf.jitter(seed, "psn", q) * 0xffffff)
        text = " %s address: LID %s QPN %s PSN %s" % (side, c_hex(end.get("lid") or 0, 4), c_hex(base_qpn + q, 6),
                                                      c_hex(psn, 6))
        if not opts.get("rdma_cm"):
            if verb == "READ":
                text += " OUT 0x10"
            if verb in ("READ", "WRITE"):
                rkey = 0x1fff00 + int(perf.jitter(seed, "rkey", q) * 0xff)
                text += " RKey %s VAddr %s" % (c_hex(rkey, 8),
                                               c_hex(0x7f0000000000 + int(perf.jitter(seed, "va") * 0xffffffff), 16))
        lines.append(text)
        if gid_idx != -1 or opts.get("rdma_cm"):
            lines.append(" GID: " + gid_text(end, address))
    return lines


def cuda_lines(opts, me, server=False):
    dev = opts.get("use_cuda")
    if dev is None:
        return []
    bus = (int(me["pci"].split(":")[1], 16) + 0x10) & 0xff   # the GPU beside the NIC [invented]
    buffer = CUDA_BUFFER[bool(server)]
    return ["initializing CUDA", "Listing all CUDA devices in system:",
            "CUDA device %d: PCIe address is %02X:00" % (dev, bus), "",
            "Picking device No. %d" % dev,
            "[pid = %d, dev = %d] device name = [NVIDIA H100 80GB HBM3]" % (os.getpid(), dev),
            "creating CUDA Ctx", "making it the current CUDA Ctx", "CUDA device integrated: 0",
            "cuMemAlloc() of a 2097152 bytes GPU buffer",
            "allocated GPU buffer address at %s pointer=0x%s" % (buffer, buffer.lstrip("0"))]


def bw_result(opts, me, peer, mtu):
    size = opts["size"] or 65536
    gbps = perf.path_gbps(me, peer, mtu) * perf.size_factor(size)
    if opts.get("bidirectional"):
        gbps *= 2
    gbps *= 1.0 - 0.004 * perf.jitter(me["hostname"], peer["hostname"], me["device"], "bw")
    duration = opts["duration"] or 0
    if duration:
        iters = int(gbps * 1e9 / 8 / size * duration)
        peak = 0.0
    else:
        iters = opts["iters"] or 5000
        peak = gbps * 1.003
    unit_gbps = bool(opts.get("gbits"))
    value = gbps if unit_gbps else gbps * 1e9 / 8 / 1048576
    peak_value = peak if unit_gbps else peak * 1e9 / 8 / 1048576
    mpps = gbps * 1e9 / 8 / size / 1e6
    return {"size": size, "iters": iters, "peak": peak_value, "avg": value, "mpps": mpps}


def lat_result(opts, me, peer, mtu):
    size = opts["size"] or 2
    avg = perf.latency_usec(me, peer, size, mtu)
    spread = 0.04 + 0.02 * perf.jitter(me["hostname"], peer["hostname"], "spread")
    iters = opts["iters"] or 1000
    if opts["duration"]:
        iters = int(opts["duration"] * 1e6 / avg / 2)
    return {"size": size, "iters": iters, "t_min": avg * (1 - 2 * spread), "t_max": avg * (1 + 30 * spread),
            "t_typical": avg * (1 - spread / 2), "t_avg": avg, "t_stdev": avg * spread / 3,
            "p99": avg * (1 + 6 * spread), "p99_9": avg * (1 + 20 * spread)}


def report_lines(kind, opts, result):
    if kind == "BW":
        header = RESULT_FMT_G if opts.get("gbits") else RESULT_FMT
        row = " %-7d    %-10d       %-7.2f            %-7.2f\t\t     %-7.6f" % (
            result["size"], result["iters"], result["peak"], result["avg"], result["mpps"])
        return [header, row, RESULT_LINE]
    if opts["duration"]:
        tps = 1e6 / result["t_avg"] / 2
        row = " %-7d       %d            %-7.2f        %-7.2f" % (result["size"], result["iters"], result["t_avg"], tps)
        return [RESULT_FMT_LAT_DUR, row, RESULT_LINE]
    row = " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f" % (
        result["size"], result["iters"], result["t_min"], result["t_max"], result["t_typical"], result["t_avg"],
        result["t_stdev"], result["p99"], result["p99_9"])
    return [RESULT_FMT_LAT, row, RESULT_LINE]


def write_json(path, verb, kind, opts, me, mtu, result, server):
    words = [VERB_TITLE[verb]]
    if kind == "BW":
        words += (["Bidirectional"] if opts.get("bidirectional") else []) + ["BW"]
    else:
        words.append("Latency")
    info = ['"test": "%s_Test"' % "_".join(words), '"Dual_port": "OFF"', '"Device": "%s"' % me["device"],
            '"Number_of_qps": %d' % opts["qps"], '"Transport_type": "IB"', '"Connection_type": "RC"',
            '"Using_SRQ": "OFF"', '"PCIe_relax_order": "ON"', '"ibv_wr_API": "ON"']
    if not server or opts.get("bidirectional"):
        info.append('"TX_depth": %d' % tx_depth(kind, opts))
    if verb == "SEND" and (server or opts.get("bidirectional")):
        info.append('"RX_depth": %d' % (512 if kind == "BW" else 1))
    if kind == "BW":
        info.append('"CQ_Moderation": %d' % cq_mod(opts))
    info += ['"Mtu": %d' % mtu, '"Link_type": "%s"' % ("Ethernet" if me["link_layer"] == "Ethernet" else "IB")]
    if gid_index(opts, me) != -1:
        info.append('"GID_index": %d' % gid_index(opts, me))
    info.append('"Max_inline_data": %d' % inline_size(verb, kind, opts) if verb != "READ" else '"Outstand_reads": 16')
    info.append('"rdma_cm_QPs": "%s"' % ("ON" if opts.get("rdma_cm") else "OFF"))
    if opts.get("use_cuda") is not None:
        info.append('"cuda_device": %d' % opts["use_cuda"])
    info += ['"Use_ROCm_memory": "OFF"',
             '"Data_ex_method": "%s"' % ("rdma_cm" if opts.get("rdma_cm") else "Ethernet")]
    if kind == "BW":
        res = ('"MsgSize": %d,\n"n_iterations": %d,\n"BW_peak": %.2f,\n"BW_average": %.2f,\n"MsgRate": %.6f'
               % (result["size"], result["iters"], result["peak"], result["avg"], result["mpps"]))
    else:
        res = ('"MsgSize": %d,\n"n_iterations": %d,\n"t_min": %.2f,\n"t_max": %.2f,\n"t_typical": %.2f,\n'
               '"t_avg": %.2f,\n"t_stdev": %.2f,\n"percentile_99": %.2f,\n"percentile_99.9": %.2f'
               % (result["size"], result["iters"], result["t_min"], result["t_max"], result["t_typical"],
                  result["t_avg"], result["t_stdev"], result["p99"], result["p99_9"]))
    text = "{\n\"test_info\": {\n" + ",\n".join(info) + "\n},\n\"results\": {\n" + res + "\n}\n}\n"
    with open(path, "w") as fh:
        fh.write(text)


# --------------------------------------------------------------------------------------------- running
def run_server(tool, verb, kind, opts, state, me):
    if verb != "READ" and kind == "BW" and opts["duration"]:
        outln(" WARNING: BW peak won't be measured in this run.")
    if opts.get("use_cuda") is not None and verb == "WRITE":
        outln("Perftest doesn't supports CUDA tests with inline messages: inline size set to 0")
    outln("")
    outln("************************************")
    outln("* Waiting for client to connect... *")
    outln("************************************")
    sys.stdout.flush()
    listener = perf.bound_socket(socket.SOCK_STREAM, me["netdev"])
    echo = perf.bound_socket(socket.SOCK_DGRAM, me["netdev"])
    try:
        try:
            listener.bind(("0.0.0.0", opts["port"]))
            # the echo answers from the rail's own address, so the answer takes the rail's routing table (a rule
            # "from <address>"), as RoCE traffic from that GID does
            own = perf.ipv4_of(me["netdev"]) if perf.kernel_has(me["netdev"]) else None
            echo.bind((own or "0.0.0.0", opts["port"]))
        except OSError:
            errln("Couldn't listen to port %d" % opts["port"])
            errln(" Unable to init the socket connection")
            return 1
        listener.listen(1)
        listener.settimeout(ACCEPT_TIMEOUT)
        stop = threading.Event()
        thread = threading.Thread(target=perf.echo, args=(echo, stop), daemon=True)
        thread.start()
        try:
            conn, _addr = listener.accept()
        except socket.timeout:
            errln(" Unable to init the socket connection")
            return 1
        with conn:
            conn.settimeout(max(60.0, perf.scaled(opts["duration"] or 5) + 60))
            chan = perf.Channel(conn)
            try:
                hello = chan.recv()
                peer = hello["endpoint"]
                mine, notes, refused = own_mtu(opts, me)
                chan.send({"endpoint": me, "mtu": mine})
                mtu = pair_mtu(mine, hello.get("mtu"))
                for line in refused:
                    errln(line)
                head = notes + cuda_lines(opts, me, True) + banner(tool, verb, kind, opts, me, mtu, True)
                for line in head:
                    outln(line)
                gid_idx = gid_index(opts, me)
                for line in addr_lines("local", verb, opts, me, hello.get("server_address"), gid_idx):
                    outln(line)
                for line in addr_lines("remote", verb, opts, peer, hello.get("address"), gid_idx):
                    outln(line)
                verdict = chan.recv()
                perf.account(me, received=0 if verdict.get("error") else modelled_bytes(kind, opts, me, peer, mtu))
                if verdict.get("error"):
                    for line in verdict["error_server"]:
                        errln(line)
                    return 1
                if kind == "BW":
                    chan.recv_bulk()
                report(verb, kind, opts, me, mtu, verdict["result"], True)
                chan.send({"bye": True})
            except (ConnectionError, OSError, ValueError, KeyError) as exc:
                debug(exc)
                errln(" Failed to exchange data between server and clients")
                return 1
        stop.set()
        return 0
    finally:
        listener.close()
        echo.close()


def report(verb, kind, opts, me, mtu, result, server):
    """The result block, the --out_json file and the CUDA clean-up lines (the captures: the server frees its buffer,
    the client also destroys its context)."""
    outln(RESULT_LINE)
    for line in report_lines(kind, opts, result):
        outln(line)
    if opts.get("out_json"):
        write_json(opts["out_json_file"] or "perftest_out.json", verb, kind, opts, me, mtu, result, server)
    if opts.get("use_cuda") is not None:
        outln("deallocating GPU buffer %s" % CUDA_BUFFER[bool(server)])
        if not server:
            outln("destroying current CUDA Ctx")


def debug(exc):
    if os.environ.get("MLXSIM_DEBUG"):
        import traceback
        traceback.print_exception(exc)


def own_mtu(opts, me):
    """set_mtu: (the MTU this end asks for, its stdout lines, its stderr lines). Without ``-m`` the port's active
    MTU; ``-m`` one of 256..4096 is taken unless it is above the active MTU (then the active one, with perftest's two
    lines); any other value is refused on stderr and the active MTU taken."""
    active = me["active_mtu"]
    requested = opts["mtu"]
    if not requested:
        return active, [], []
    out, err = [], []
    if requested in perf.MTU_ENUM:
        mtu = requested
    else:
        err = [INVALID_MTU[0] % requested, INVALID_MTU[1], INVALID_MTU[2] % perf.MTU_ENUM[active]]
        mtu = active
    if mtu > active:
        out = ["Requested mtu is higher than active mtu ", "Changing to active mtu - %d" % perf.MTU_ENUM[active]]
        mtu = active
    return mtu, out, err


def pair_mtu(mine, theirs):
    """check_mtu: both ends exchange what set_mtu gave them and take the smaller."""
    return min(mine, theirs) if theirs in perf.MTU_ENUM else mine


def run_client(tool, verb, kind, opts, state, me):
    server = opts["server"]
    if verb != "READ" and kind == "BW" and opts["duration"]:
        outln(" WARNING: BW peak won't be measured in this run.")
    if opts.get("use_cuda") is not None and verb == "WRITE":
        outln("Perftest doesn't supports CUDA tests with inline messages: inline size set to 0")
    try:
        target = socket.gethostbyname(server)
    except OSError:
        errln("%s for %s:%d" % ("Name or service not known", server, opts["port"]))
        errln(" Unable to init the socket connection")
        return 1
    source = opts.get("source_ip") or perf.ipv4_of(me["netdev"])
    sock = perf.bound_socket(socket.SOCK_STREAM, me["netdev"], source if perf.kernel_has(me["netdev"]) else
                             opts.get("source_ip"))
    sock.settimeout(5.0)
    try:
        try:
            sock.connect((target, opts["port"]))
        except OSError:
            errln("Couldn't connect to %s:%d" % (server, opts["port"]))
            errln(" Unable to init the socket connection")
            return 1
        sock.settimeout(max(60.0, perf.scaled(opts["duration"] or 5) + 60))
        local_addr = sock.getsockname()[0]
        chan = perf.Channel(sock)
        mine, notes, refused = own_mtu(opts, me)
        chan.send({"endpoint": me, "address": local_addr, "server_address": target, "mtu": mine})
        answer = chan.recv()
        peer = answer["endpoint"]
        mtu = pair_mtu(mine, answer.get("mtu"))
        for line in refused:
            errln(line)
        for line in notes + cuda_lines(opts, me) + banner(tool, verb, kind, opts, me, mtu, False):
            outln(line)
        gid_idx = gid_index(opts, me)
        for line in addr_lines("local", verb, opts, me, local_addr, gid_idx):
            outln(line)
        for line in addr_lines("remote", verb, opts, peer, target, gid_idx):
            outln(line)
        error = failure(me, peer, mtu, opts, target)
        perf.account(me, sent=0 if error else modelled_bytes(kind, opts, me, peer, mtu))
        if error:
            chan.send({"error": True, "error_server": [" Failed to exchange data between server and clients"]})
            for line in error:
                errln(line)
            return 1
        result = (bw_result if kind == "BW" else lat_result)(opts, me, peer, mtu)
        chan.send({"result": result})
        if kind == "BW":
            chan.send_bulk(perf.scaled(opts["duration"] or 2))
        else:
            time.sleep(perf.scaled(opts["duration"] or 1))
        report(verb, kind, opts, me, mtu, result, False)
        chan.recv()
        return 0
    except (ConnectionError, OSError, ValueError, KeyError) as exc:
        debug(exc)
        errln(" Failed to exchange data between server and clients")
        return 1
    finally:
        sock.close()


def modelled_bytes(kind, opts, me, peer, mtu):
    if kind != "BW":
        return 0
    return int(bw_result(opts, me, peer, mtu)["avg"] * (1e9 / 8 if opts.get("gbits") else 1048576)
               * max(1, opts["duration"] or 1))


def failure(me, peer, mtu, opts, target):
    """The lines perftest prints when the traffic itself fails; [] when it flows."""
    if not me["up"] or not peer["up"]:
        return ["Failed to modify QP %d to RTR" % (0xc6 + int(perf.jitter(me["hostname"], "qpn") * 0x100)),
                " Unable to Connect the HCA's through the link"]
    retry = [" Completion with error at client",
             " Failed status-transport retry counter exceeded (12): wr_id 0 syndrom 0x81",
             " scnt=%d, ccnt=0" % tx_depth("BW", opts)]
    if me["flapping"] or peer["flapping"]:
        return retry
    # the path takes frames of the MTU (a RoCE frame over the rail's netdev); an InfiniBand path's MTU is the
    # subnet's, not the IPoIB netdev's, and is not simulated: no probe there [invented]
    if me["link_layer"] == "Ethernet" and perf.kernel_has(me["netdev"]) and \
            not perf.mtu_probe(me["netdev"], target, opts["port"], mtu):
        return retry
    return []


def run(tool, args):
    verb, kind = TESTS[tool]
    try:
        opts = parse(tool, args)
    except Usage as exc:
        if str(exc) == "help":
            usage(tool)
            return 0
        errln(str(exc))
        errln(" Parser function exited with Error")
        return 1
    state = st.load()
    tos = opts["tos"] if opts["tos"] != -1 else 0
    me = perf.endpoint(state, opts["ib_dev"], tos)
    if me is None:
        if opts["ib_dev"]:
            errln("IB device %s not found" % opts["ib_dev"])
        else:
            errln(" No IB devices found")
        errln(" Unable to find the Infiniband/RoCE device")
        return 1
    if opts["server"] is None:
        return run_server(tool, verb, kind, opts, state, me)
    return run_client(tool, verb, kind, opts, state, me)
