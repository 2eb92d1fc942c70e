"""The simulated perftest and nccl-tests (tests/sim/mlxsim/tools/perftest.py, nccl.py; model in perf.py).

Pairs run on 127.0.0.1 here (the host has no rail netdevs; the lab runs them over real rails). Their output is
read with the collection's own parsers (mlx_parse perftest / nccl_tests), which are tested on the real captures,
and its layout is compared with those captures line by line where the real tool prints the same thing.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import time

import pytest

from sim_helpers import Sim, real

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.nccl_tests import parse_nccl_tests
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.perftest import parse_perftest


MPIRUN = shutil.which("mpirun")
needs_mpirun = pytest.mark.skipif(MPIRUN is None, reason="Open MPI's mpirun (Debian openmpi-bin) is not installed")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def pair(tmp_path, pycache):
    a = Sim(tmp_path / "a", pycache).init("gpu4-cx7-eth", "fab-r01-01")
    b = Sim(tmp_path / "b", pycache).init("gpu4-cx7-eth", "fab-r01-02")
    return a, b


def set_mtu(sim, netdev, mtu):
    """The MTU of the netdev as the simulated tree holds it (the kernel has no such netdev on this machine)."""
    path = sim.dir / "root" / "sys" / "class" / "net" / netdev
    path.mkdir(parents=True, exist_ok=True)
    (path / "mtu").write_text("%d\n" % mtu)


def run_pair(server, client, tool, *args, env=None, client_env=None, client_args=()):
    port = free_port()
    argv = [tool, *args, "-p", str(port)]
    senv = dict(server.env, **(env or {}))
    srv = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=senv)
    deadline = time.monotonic() + 20
    while True:      # the server is up once its port answers (as a gate waits for it)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert time.monotonic() < deadline, srv.communicate(timeout=1)
            time.sleep(0.05)
    # the probe above was the server's one client: start it again for the real one
    srv.wait(timeout=20)
    srv = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=senv)
    time.sleep(0.4)
    cli = client.run(*argv, *client_args, "127.0.0.1", env=dict(env or {}, **(client_env or {})))
    out, err = srv.communicate(timeout=30)
    return cli, (srv.returncode, out.decode(), err.decode())


def test_write_bw_pair_reports_the_model_on_both_ends(pair):
    a, b = pair
    for sim in pair:
        set_mtu(sim, "enp24s0np0", 9000)
    cli, (src, sout, serr) = run_pair(a, b, "ib_write_bw", "-d", "mlx5_0", "-x", "3", "-q", "4", "-D", "10",
                                      "--report_gbits", env={"MLXSIM_TIME_SCALE": "0.01"})
    assert cli.returncode == 0, cli.stderr
    assert src == 0, serr
    client, server = parse_perftest(cli.stdout), parse_perftest(sout)
    assert client["test"] == server["test"] == "RDMA_Write BW Test"
    assert client["mtu"] == 4096 and client["link_type"] == "Ethernet" and client["unit"] == "Gb/sec"
    bw = client["results"][0]["bw_average"]
    assert 0.9 * 400 <= bw <= 400, bw          # 400G CX7 at MTU 4096: ~98 % of line rate
    assert server["results"][0]["bw_average"] == bw
    assert client["results"][0]["bw_peak"] == 0.0   # -D: peak not measured, as the banner says
    assert any("BW peak won't be measured" in w for w in client["warnings"])
    assert "Waiting for client to connect" in sout


def test_layout_matches_the_real_capture(pair):
    a, b = pair
    cli, _server = run_pair(a, b, "ib_write_bw", "-d", "mlx5_0", "-x", "3", "-q", "4", "-F", "--report_gbits")
    ours = cli.stdout.split("\n")
    capture = real("ib_write_bw_roce_oci_1.txt")
    # what the older build of the OCI capture prints the same way (it has no 'PCIe relax order' / 'ibv_wr*' lines)
    for line in (" Number of qps   : 4\t\tTransport type : IB", " Connection type : RC\t\tUsing SRQ      : OFF",
                 " TX depth        : 128", " CQ Moderation   : 100", " Link type       : Ethernet",
                 " GID index       : 3", " Max inline data : 0[B]",
                 " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"):
        assert line in capture and line in ours, line
    assert "-" * 87 in ours and "                    RDMA_Write BW Test" in ours
    cuda = real("ib_write_bw_client_roce_cuda_1.txt")
    for line in (" PCIe relax order: ON\t\tLock-free      : OFF", " ibv_wr* API     : ON\t\tUsing DDP      : OFF"):
        assert line in cuda and line in ours, line
    address = [line for line in ours if line.startswith(" local address:")]
    assert len(address) == 4 and all(" RKey 0x" in line and " VAddr 0x" in line for line in address)
    assert [line for line in ours if line.startswith(" GID: ")][0] == " GID: " + ":".join(
        ["00"] * 10 + ["255", "255", "127", "00", "00", "01"])


def test_out_json_matches_the_text(pair, tmp_path):
    a, b = pair
    path = tmp_path / "out.json"
    # only the client writes it (both ends run on this one machine here)
    cli, _server = run_pair(a, b, "ib_write_bw", "-d", "mlx5_3", "-x", "3", "--report_gbits",
                            client_args=("--out_json", "--out_json_file=%s" % path))
    assert cli.returncode == 0, cli.stderr
    text, data = parse_perftest(cli.stdout), parse_perftest(path.read_text())
    assert json.loads(path.read_text())["results"]["BW_average"] == text["results"][0]["bw_average"]
    assert data["results"][0]["bw_average"] == text["results"][0]["bw_average"]
    assert data["mtu"] == text["mtu"] == 1024          # no MTU written: the netdev's default 1500


def test_mtu_1500_gives_active_mtu_1024_and_a_quarter_of_line_rate(pair):
    a, b = pair
    set_mtu(a, "enp24s0np0", 9000)
    set_mtu(b, "enp24s0np0", 1500)
    cli, _server = run_pair(a, b, "ib_write_bw", "-d", "mlx5_0", "-x", "3", "--report_gbits", "-m", "4096")
    report = parse_perftest(cli.stdout)
    assert report["mtu"] == 1024
    assert any("Changing to active mtu - 3" in w for w in report["warnings"])
    assert 90 < report["results"][0]["bw_average"] < 110


@pytest.fixture
def ib_pair(tmp_path, pycache):
    """Two DGX H100 hosts: ConnectX-7 NDR InfiniBand on the compute rails (mlx5_0 is ibp24s0)."""
    a = Sim(tmp_path / "a", pycache).init("dgx-h100", "fab-r01-01")
    b = Sim(tmp_path / "b", pycache).init("dgx-h100", "fab-r01-02")
    return a, b


def test_an_infiniband_pair_takes_the_ports_mtu_and_addresses_by_lid(ib_pair):
    a, b = ib_pair
    for sim in ib_pair:        # the IPoIB netdev's MTU is not the link's: perftest does not look at it
        set_mtu(sim, "ibp24s0", 2044)
    cli, (src, sout, serr) = run_pair(a, b, "ib_write_bw", "-d", "mlx5_0", "-q", "2", "-F", "--report_gbits")
    assert cli.returncode == 0 and src == 0, (cli.stderr, serr)
    client, server = parse_perftest(cli.stdout), parse_perftest(sout)
    # ibv_devinfo's active_mtu of an NDR port (fixtures/real/ibv_devinfo_azure_h200_cx7vf_1.txt): 4096
    assert (client["link_type"], client["mtu"], client["gid_index"]) == ("IB", 4096, None)
    assert (server["link_type"], server["mtu"], server["gid_index"]) == ("IB", 4096, None)
    # the LIDs ibstat shows: b (the client) 164 = 0xa4, a 931 = 0x3a3; no GID line on InfiniBand
    assert "\t\tBase lid: 164" in b.out("ibstat", "mlx5_0").split("\n")
    assert "\t\tBase lid: 931" in a.out("ibstat", "mlx5_0").split("\n")
    assert [x["lid"] for x in client["addresses"]["local"]] == [164, 164]
    assert [x["lid"] for x in client["addresses"]["remote"]] == [931, 931]
    assert [x["lid"] for x in server["addresses"]["local"]] == [931, 931]
    assert all(x["gid"] is None and "rkey" in x for side in ("local", "remote") for x in client["addresses"][side])
    lines = cli.stdout.split("\n")
    assert lines.count(" local address: LID 0xa4 QPN 0x016a PSN 0xc4f855 RKey 0x1fff23 VAddr 0x007f00e1501c24") == 1
    assert not any(line.startswith((" GID", " GID index")) for line in lines)
    # the modelled line rate: 400 Gb/s x 0.98 (nccl#2409: 392 of 400) x 65536/(65536+1024) [invented]: 385.64
    bw = client["results"][0]["bw_average"]
    assert bw == 385.64 and 380 <= bw <= 392
    assert server["results"][0]["bw_average"] == bw


def test_an_infiniband_gid_index_prints_the_port_gid(ib_pair):
    a, b = ib_pair
    cli, _server = run_pair(a, b, "ib_write_bw", "-d", "mlx5_0", "-x", "0", "--report_gbits")
    report = parse_perftest(cli.stdout)
    # fe80::/64 + ibstat's Port GUID 0x5c257303002675c0, each byte %02d (PERF_GID_FMT)
    assert report["gid_index"] == 0
    assert report["addresses"]["local"][0]["gid"] == "254:128:00:00:00:00:00:00:92:37:115:03:00:38:117:192"


@pytest.mark.parametrize("client_mtu,server_mtu,mtu,client_out,client_err", [
    # -m as set_mtu takes it, then the smaller of both ends (check_mtu)
    ("1024", None, 1024, [], []),
    ("2048", "4096", 2048, [], []),
    ("256", None, 256, [], []),
    ("9000", None, 4096, [], [" Invalid MTU - 9000 ", " Please choose mtu from {256,512,1024,2048,4096}",
                              " Will run with the port active mtu - 5"]),
    ("4095", "512", 512, [], [" Invalid MTU - 4095 ", " Please choose mtu from {256,512,1024,2048,4096}",
                              " Will run with the port active mtu - 5"]),
])
def test_mtu_requests_on_infiniband(ib_pair, client_mtu, server_mtu, mtu, client_out, client_err):
    a, b = ib_pair
    cli, (src, sout, _serr) = run_pair(a, b, "ib_write_bw", "-d", "mlx5_0", "--report_gbits",
                                       *(("-m", server_mtu) if server_mtu else ()),
                                       client_args=("-m", client_mtu))
    assert cli.returncode == 0 and src == 0
    assert parse_perftest(cli.stdout)["mtu"] == parse_perftest(sout)["mtu"] == mtu
    assert [line for line in cli.stderr.split("\n") if line] == client_err
    assert "Requested mtu is higher" not in cli.stdout + sout


def test_a_request_above_the_active_mtu_is_lowered_on_that_end_only(pair):
    a, b = pair          # RoCE, both netdevs at 1500 (active 1024); the server asks 2048, the client nothing
    cli, (src, sout, _serr) = run_pair(a, b, "ib_write_bw", "-d", "mlx5_0", "-m", "2048", "--report_gbits",
                                       client_args=("-m", "1024"))
    assert cli.returncode == 0 and src == 0
    assert sout.split("\n")[4:6] == ["Requested mtu is higher than active mtu ", "Changing to active mtu - 3"]
    assert "Requested mtu" not in cli.stdout and parse_perftest(cli.stdout)["mtu"] == 1024


@pytest.mark.parametrize("netdev_mtu,active", [
    # iboe_get_mtu: netdev MTU - 96 (GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH 28, ICRC 4), rounded down
    (1500, 1024), (9000, 4096), (4192, 4096), (4191, 2048), (2144, 2048), (2143, 1024), (1120, 1024),
    (1119, 512), (352, 256), (576, 256),
])
def test_roce_active_mtu_from_the_netdev_mtu(sim, netdev_mtu, active):
    from mlxsim import perf
    assert perf.port_active_mtu("Ethernet", netdev_mtu) == active
    assert perf.port_active_mtu("InfiniBand", netdev_mtu) == 4096
    sim.init("gpu4-cx7-eth")
    set_mtu(sim, "enp24s0np0", netdev_mtu)
    port = sim.out("ibv_devinfo", "-d", "mlx5_0").split("\n")
    assert "\t\t\tactive_mtu:\t\t%d (%d)" % (active, perf.MTU_ENUM[active]) in port


def test_roce_without_x_uses_the_best_gid_index(pair):
    a, b = pair
    cli, (_src, sout, _err) = run_pair(a, b, "ib_write_bw", "-d", "mlx5_0", "--report_gbits")
    client, server = parse_perftest(cli.stdout), parse_perftest(sout)
    # check_link sets 0, get_best_gid_index picks the RoCE v2 IPv4 GID: index 3 of an mlx5 port with one address
    assert client["gid_index"] == server["gid_index"] == 3
    assert " GID index       : 3" in cli.stdout.split("\n")
    gid = "00:00:00:00:00:00:00:00:00:00:255:255:127:00:00:01"
    assert [x["gid"] for x in client["addresses"]["local"]] == [gid] and client["addresses"]["local"][0]["lid"] == 0


CAPTURE_ARGS = ("-R", "-T", "41", "-s", "65536", "-F", "-x", "3", "-m", "4096", "--report_gbits", "-q", "16", "-D",
                "60", "-d", "mlx5_0", "--use_cuda=0", "--use_cuda_dmabuf")


def _banner(text):
    """From the first rule to the rule after the parameters (the CUDA lines before it are the GPU's)."""
    lines = text.split("\n") if isinstance(text, str) else list(text)
    start = lines.index("-" * 87)
    end = lines.index("-" * 87, start + 1)
    return [line.replace("mlx5_0", "mlx5_1") for line in lines[start:end + 1]]


def test_the_banner_is_the_real_releases_on_both_ends(pair):
    """The real CUDA run (perftest 25.01: 'Using DDP', no 'CQE Poll Batch'): the same argv (-d mlx5_1 there, the
    simulated card's mlx5_0 here), the netdev at 1500 as there (Mtu 1024 after -m 4096)."""
    a, b = pair
    cli, (src, sout, _err) = run_pair(a, b, "ib_write_bw", *CAPTURE_ARGS)
    assert cli.returncode == 0 and src == 0
    assert _banner(cli.stdout) == _banner(real("ib_write_bw_client_roce_cuda_1.txt"))
    assert _banner(sout) == _banner(real("ib_write_bw_server_roce_cuda_1.txt"))
    head = [line for line in sout.split("\n") if "GPU buffer" in line and "cuMemAlloc" not in line]
    assert head == ["allocated GPU buffer address at 00007f8bca600000 pointer=0x7f8bca600000",
                    "deallocating GPU buffer 00007f8bca600000"]         # the server's buffer, as captured


@pytest.mark.parametrize("fault,low,high", [
    (["pcie_degraded", "--device", "mlx5_0"], 80, 120),        # Gen4 x8: ~108 Gb/s through the slot
    (["bad_card", "--device", "mlx5_0"], 100, 150),
])
def test_faults_reduce_the_bandwidth_of_that_card_only(pair, fault, low, high):
    a, b = pair
    for sim in pair:
        set_mtu(sim, "enp24s0np0", 9000)
        set_mtu(sim, "enp64s0np0", 9000)
    b.run("mlxsim", "fault", "add", *fault, check_rc=0)
    faulty, _s = run_pair(a, b, "ib_write_bw", "-d", "mlx5_0", "-x", "3", "--report_gbits")
    healthy, _s = run_pair(a, b, "ib_write_bw", "-d", "mlx5_3", "-x", "3", "--report_gbits")
    assert low < parse_perftest(faulty.stdout)["results"][0]["bw_average"] < high
    assert parse_perftest(healthy.stdout)["results"][0]["bw_average"] > 360


def test_bad_card_raises_latency(pair):
    a, b = pair
    good, _s = run_pair(a, b, "ib_write_lat", "-d", "mlx5_0", "-x", "3")
    b.run("mlxsim", "fault", "add", "bad_card", "--device", "mlx5_0", check_rc=0)
    bad, _s = run_pair(a, b, "ib_write_lat", "-d", "mlx5_0", "-x", "3")
    g, w = parse_perftest(good.stdout), parse_perftest(bad.stdout)
    assert g["test"] == "RDMA_Write Latency Test" and g["unit"] == "usec"
    assert w["results"][0]["t_avg"] > 3 * g["results"][0]["t_avg"]
    assert set(g["results"][0]) >= {"t_min", "t_max", "t_typical", "t_avg", "t_stdev", "p99", "p99_9"}


@pytest.mark.parametrize("fault,lines", [
    ("link_flap", [" Completion with error at client",
                   " Failed status-transport retry counter exceeded (12): wr_id 0 syndrom 0x81"]),
    ("link_down", [" Unable to Connect the HCA's through the link"]),
])
def test_link_faults_fail_the_run_with_perftests_messages(pair, fault, lines):
    a, b = pair
    b.run("mlxsim", "fault", "add", fault, "--device", "mlx5_0", check_rc=0)
    cli, (src, _out, serr) = run_pair(a, b, "ib_write_bw", "-d", "mlx5_0", "-x", "3", "--report_gbits")
    assert cli.returncode == 1 and src == 1
    for line in lines:
        assert line in cli.stderr.split("\n")
    assert "Failed to exchange data between server and clients" in serr
    report = parse_perftest(cli.stdout + cli.stderr)
    assert report["errors"]
    if fault == "link_flap":      # the flaps show in the card's own counters, the peer's stay clean
        assert "     link_down_events_phy: 2" in b.out("ethtool", "-S", "enp24s0np0").split("\n")
        assert "     link_down_events_phy: 0" in a.out("ethtool", "-S", "enp24s0np0").split("\n")


def test_ethtool_counters_of_a_bad_card_and_the_real_ethtool_for_the_rest(pair):
    a, b = pair
    b.run("mlxsim", "fault", "add", "bad_card", "--device", "mlx5_0", check_rc=0)
    run_pair(a, b, "ib_write_bw", "-d", "mlx5_0", "-x", "3", "--report_gbits")
    stats = b.out("ethtool", "-S", "enp24s0np0").split("\n")
    assert stats[0] == "NIC statistics:" and "     rx_symbol_err_phy: 1200" in stats
    assert "     rx_symbol_err_phy: 0" in b.out("ethtool", "-S", "enp64s0np0").split("\n")
    assert "     rx_symbol_err_phy: 0" in a.out("ethtool", "-S", "enp24s0np0").split("\n")
    other = b.run("ethtool", "-S", "lo")          # not the simulator's: the machine's ethtool (or none here)
    assert "NIC statistics:\n     rx_packets" not in other.stdout


def test_no_server_and_unknown_device(pair):
    _a, b = pair
    port = free_port()
    p = b.run("ib_write_bw", "-d", "mlx5_0", "-p", port, "127.0.0.1")
    assert p.returncode == 1
    assert p.stderr.split("\n")[:2] == ["Couldn't connect to 127.0.0.1:%d" % port,
                                        " Unable to init the socket connection"]
    p = b.run("ib_write_bw", "-d", "mlx5_9")
    assert p.returncode == 1
    assert p.stderr.split("\n")[:2] == ["IB device mlx5_9 not found", " Unable to find the Infiniband/RoCE device"]
    p = b.run("ib_write_bw", "--bogus")
    assert p.returncode == 1 and " Parser function exited with Error" in p.stderr


def nccl_world(sims, tool, args, env):
    """One rank per (host, local rank), started by a real Open MPI mpirun (one app context per rank, each with its
    simulated host's state): sims = [(Sim, local rank), ...] in rank order. Returns mpirun's (rc, stdout, stderr) -
    the ranks' output merged as mpirun forwards it (only rank 0 prints the report)."""
    port = free_port()
    base = {"NCCL_COMM_ID": "127.0.0.1:%d" % port, "MLXSIM_TIME_SCALE": "0"}
    base.update(env)
    argv = [MPIRUN, "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,tcp"]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    for rank, (sim, _local) in enumerate(sims):
        if rank:
            argv.append(":")
        argv += ["-np", "1"]
        for key, value in dict(base, MLXSIM_STATE=sim.state, PATH=sim.env["PATH"],
                               PYTHONPYCACHEPREFIX=sim.env["PYTHONPYCACHEPREFIX"]).items():
            argv += ["-x", "%s=%s" % (key, value)]
        argv += [tool, *args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=dict(sims[0][0].env), check=False)
    return p.returncode, p.stdout, p.stderr


@needs_mpirun
def test_nccl_split_per_rail_and_busbw_formula(pair):
    a, b = pair
    for sim in pair:
        for nd in ("enp24s0np0", "enp64s0np0"):
            set_mtu(sim, nd, 9000)
    ranks = [(a, 0), (a, 1), (b, 0), (b, 1)]
    env = {"NCCL_TESTS_SPLIT": "MOD 2", "NCCL_IB_HCA": "mlx5_0,mlx5_3"}
    rc, out, err = nccl_world(ranks, "all_reduce_perf", ["-b", "1G", "-e", "8G", "-f", "2", "-g", "1"], env)
    assert rc == 0, (out, err)
    report = parse_nccl_tests(out)
    assert [r["size"] for r in report["rows"]] == [1 << 30, 2 << 30, 4 << 30, 8 << 30]
    assert report["nccl_version"] == "2.23.4" and report["out_of_bounds"] == 0
    for row in report["rows"]:
        side = row["out_of_place"]
        assert side["busbw"] == pytest.approx(side["algbw"] * 2 * (2 - 1) / 2, abs=0.02)   # n = 2 per group
        assert 40 < side["busbw"] < 48           # one 400G rail: 46-48 GB/s per NIC
    # the world mpirun made: 4 ranks, split in two communicators (MOD 2)
    assert [(r["rank"], r["group"]) for r in report["ranks"]] == [(0, 0), (1, 1), (2, 0), (3, 1)]
    assert out.count("# Avg bus bandwidth") == 1   # only rank 0 reports


@pytest.mark.parametrize("version, code", [("2.8.4", 2804), ("2.9.0", 20900), ("2.23.4", 22304)])
@needs_mpirun
def test_nccl_prints_the_library_s_version_code_in_nccl_h_s_scheme(pair, version, code):
    """NVIDIA/nccl src/nccl.h.in: NCCL_VERSION(X,Y,Z) is X*1000 + Y*100 + Z while X <= 2 and Y <= 8, X*10000 + Y*100 +
    Z after; the parser reads the code back to the version."""
    rc, out, err = nccl_world([(pair[0], 0), (pair[1], 0)], "all_reduce_perf", ["-b", "8", "-e", "8", "-g", "1"],
                              {"MLXSIM_NCCL_VERSION": version})
    assert rc == 0, (out, err)
    assert out.splitlines()[0] == "# nccl-tests version 2.17.6 nccl-headers=%d nccl-library=%d" % (code, code)
    assert parse_nccl_tests(out)["nccl_version"] == version


@needs_mpirun
def test_nccl_min_bw_fails_and_slowest_rail_counts(pair):
    a, b = pair
    for sim in pair:
        for nd in ("enp24s0np0", "enp64s0np0"):
            set_mtu(sim, nd, 9000)
    b.run("mlxsim", "fault", "add", "pcie_degraded", "--device", "mlx5_3", check_rc=0)
    ranks = [(a, 0), (a, 1), (b, 0), (b, 1)]
    env = {"NCCL_TESTS_SPLIT": "MOD 2", "NCCL_IB_HCA": "mlx5_0,mlx5_3", "NCCL_TESTS_MIN_BW": "42.3"}
    rc, out, err = nccl_world(ranks, "all_reduce_perf", ["-b", "1G", "-e", "2G", "-f", "2", "-g", "1"], env)
    # nccl-tests exits 1 on every rank; mpirun says so and returns non-zero
    assert rc != 0 and "exited on signal" not in err
    report = parse_nccl_tests(out)
    assert report["avg_busbw_check"] == "FAILED"
    assert report["avg_busbw"] < 0.9 * 42.3


@needs_mpirun
def test_nccl_json_and_collectives(pair, tmp_path):
    a, b = pair
    path = tmp_path / "nccl.json"
    args = ["-b", "8M", "-e", "64M", "-f", "8", "-g", "1", "-c", "0", "-J", str(path)]
    rc, out, err = nccl_world([(a, 0), (b, 0)], "all_gather_perf", args, {"NCCL_IB_HCA": "mlx5_0"})
    assert rc == 0, (out, err)
    text, data = parse_nccl_tests(out), parse_nccl_tests(path.read_text())
    assert [r["size"] for r in text["rows"]] == [r["size"] for r in data["rows"]] == [8 << 20, 64 << 20]
    assert all(r["out_of_place"]["wrong"] is None for r in text["rows"])    # -c 0: N/A
    assert text["rows"][0]["redop"] == "none"
    row = real("nccl_all_reduce_perf_2node_a100_1.txt")
    assert "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   " \
           "busbw #wrong" in row and out.count("#       size         count") == 1


@needs_mpirun
def test_nccl_tests_built_without_mpi_run_alone_under_mpirun(pair):
    """The nccl_no_mpi fault (nccl-tests built without MPI=1): a real mpirun -np 4 starts four processes, each a world
    of one that prints its own report - four "Rank 0" lines in mpirun's output, never ranks 0 to 3 (the gate reads
    the numbers: plugin_utils/_gate.py, _launched)."""
    a, b = pair
    for sim in pair:
        sim.run("mlxsim", "fault", "add", "nccl_no_mpi", check_rc=0)
    rc, out, err = nccl_world([(a, 0), (a, 1), (b, 0), (b, 1)], "all_reduce_perf", ["-b", "8", "-e", "8", "-g", "1"],
                              {})
    assert rc == 0, (out, err)
    assert out.count("# Avg bus bandwidth") == 4
    ranks = [int(line.split()[2]) for line in out.splitlines() if line.startswith("#  Rank")]
    assert ranks == [0, 0, 0, 0]


def test_nccl_ranks_started_without_a_launcher_each_run_alone(pair):
    """The environment mpirun would give, copied by hand, is no launch: the real binary's MPI_Init makes a singleton
    (no PMIx server to ask), so each process is a world of one rank and reports alone."""
    a, _b = pair
    port = free_port()
    env = {"NCCL_COMM_ID": "127.0.0.1:%d" % port, "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "0",
           "OMPI_COMM_WORLD_LOCAL_RANK": "0", "MLXSIM_NCCL_TIMEOUT": "1"}
    p = a.run("all_reduce_perf", "-b", "8", "-e", "8", "-g", "1", env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert [r["rank"] for r in parse_nccl_tests(p.stdout)["ranks"]] == [0]
    # a launcher's variables whose PMIx server does not answer: the rank fails, naming it
    dead = free_port()
    env = dict(env, PMIX_RANK="0", PMIX_NAMESPACE="1376780289",
               PMIX_SERVER_URI4="1376780288.0;tcp4://127.0.0.1:%d" % dead)
    p = a.run("all_reduce_perf", "-b", "8", "-e", "8", "-g", "1", env=env)
    assert p.returncode == 1
    assert p.stderr.strip() == ("PMIX ERROR: UNREACHABLE in file ptl_tcp.c: the PMIx server tcp4://127.0.0.1:%d does "
                                "not answer" % dead)


def test_server_side_layout_matches_the_real_capture(pair):
    """ib_write_bw_server_roce_cuda_1.txt: the server's banner and its block of settings as the real server prints
    them (the capture's run asked for rdma_cm and CUDA, which the simulator does not model: those lines are not
    compared)."""
    a, b = pair
    _cli, (rc, sout, _serr) = run_pair(a, b, "ib_write_bw", "-d", "mlx5_0", "-x", "3", "-q", "4", "-F", "-D", "2",
                                       "--report_gbits", env={"MLXSIM_TIME_SCALE": "0.01"})
    assert rc == 0
    ours = sout.split("\n")
    capture = real("ib_write_bw_server_roce_cuda_1.txt")
    for line in (" WARNING: BW peak won't be measured in this run.", "************************************",
                 "* Waiting for client to connect... *", "-" * 87, "                    RDMA_Write BW Test",
                 " Connection type : RC\t\tUsing SRQ      : OFF", " PCIe relax order: ON\t\tLock-free      : OFF",
                 " ibv_wr* API     : ON\t\tUsing DDP      : OFF", " Link type       : Ethernet",
                 " GID index       : 3", " Max inline data : 0[B]"):
        assert line in capture and line in ours, line
    # the box of three lines, then the settings between two rules, in the capture's order
    box = ours.index("* Waiting for client to connect... *")
    assert ours[box - 1] == ours[box + 1] == "*" * 36
    labels = list(dict.fromkeys(ln.split(":")[0].strip() for ln in capture if re.match(r"^ [A-Z][\w*. -]+:", ln)))
    mine = list(dict.fromkeys(ln.split(":")[0].strip() for ln in ours if re.match(r"^ [A-Z][\w*. -]+:", ln)))
    common = [x for x in mine if x in labels]
    assert len(common) >= 8 and common == [x for x in labels if x in mine]      # the same labels, the same order


def _runs(lines):
    """The capture's runs: (the shell line, the lines it printed)."""
    out = []
    for ln in lines:
        if ln.startswith("[root@nccl-tests /]# "):
            out.append((ln.split("# ", 1)[1], []))
        elif out:
            out[-1][1].append(ln)
    return out


def test_nccl_several_gpus_in_one_process_as_the_real_capture(tmp_path, pycache):
    """nccl_all_reduce_perf_v100_1.txt: `CUDA_VISIBLE_DEVICES=0,N all_reduce_perf -g 2 -c 0 -n 100 -w 20` on one
    host - one process, two ranks with the same Pid, CUDA's device numbers 0 and 1, the report's layout. The capture
    is of the 2.13.4-2.14.0 layout (Group, "[0x06]"): at that release (MLXSIM_NCCL_TESTS_VERSION) nothing but the
    values differs; the default release (2.17.6) adds its version and start lines and widens "#wrong"."""
    sim = Sim(tmp_path, pycache).init("dgx-h100", "nccl-tests")
    runs = _runs(real("nccl_all_reduce_perf_v100_1.txt"))
    assert len(runs) == 6
    for shell, cap in runs:
        env = dict(re.findall(r"(\w+)=(\S+)", shell.split(" all_reduce_perf")[0]), MLXSIM_NCCL_TESTS_VERSION="2.13.4")
        args = shell.split("all_reduce_perf ")[1].split()
        p = sim.run("all_reduce_perf", *args, env=env)
        assert p.returncode == 0, (shell, p.stdout, p.stderr)
        out = p.stdout.split("\n")
        assert out[0] == cap[0]                                      # nThread 1 nGpus 2 ... validation: 0 graph: 0
        assert out[1:3] == cap[1:3] == ["#", "# Using devices"]
        shape = re.compile(r"#  Rank  (\d) Group  0 Pid +(\d+) on nccl-tests device  (\d) \[0x[0-9a-f]{2}\] ")
        mine, theirs = [shape.match(ln) for ln in out[3:5]], [shape.match(ln) for ln in cap[3:5]]
        assert all(mine) and all(theirs)
        for m, t in zip(mine, theirs):
            assert (m.group(1), m.group(3), m.end(2)) == (t.group(1), t.group(3), t.end(2))      # %6d, right-aligned
        assert mine[0].group(2) == mine[1].group(2)                  # one process drives both GPUs
        assert [ln.rstrip() for ln in out[5:9]] == cap[5:9]          # "#" and the column header (capture: W)
        ends = [[m.end() for m in re.finditer(r"\S+", ln)] for ln in (out[9], cap[9])]
        assert ends[0] == ends[1] and out[9].split()[:5] == cap[9].split()[:5]
        assert out[9].split()[8] == cap[9].split()[8] == "N/A"
        assert out[10] == cap[10] == "# Out of bounds values : 0 OK"
        assert out[11].startswith("# Avg bus bandwidth    : ") and out[12] == cap[12] == "#"
        assert out[13] == cap[13] == ""                              # ncclGetLastError's line
        mine_r, theirs_r = parse_nccl_tests(p.stdout), parse_nccl_tests("\n".join(cap))
        assert [r["size"] for r in mine_r["rows"]] == [r["size"] for r in theirs_r["rows"]] == [33554432]
    shell, cap = runs[0]           # the same run at the default release
    p = sim.run("all_reduce_perf", *shell.split("all_reduce_perf ")[1].split(),
                env=dict(re.findall(r"(\w+)=(\S+)", shell.split(" all_reduce_perf")[0])))
    out = p.stdout.split("\n")
    assert out[:2] == ["# nccl-tests version 2.17.6 nccl-headers=22304 nccl-library=22304",
                       "# Collective test starting: all_reduce_perf"]
    assert out[2] == cap[0] and "busbw  #wrong" in out[9] and "busbw #wrong" in cap[7]
    # more GPUs than CUDA shows this process: nccl-tests' own refusal
    p = sim.run("all_reduce_perf", "-g", "2", env={"CUDA_VISIBLE_DEVICES": "0,99"})
    assert p.returncode == 1 and p.stderr == "Invalid number of GPUs: 2 requested but only 1 were found.\n"
