"""The validation gate's perftest over simulated pairs (tests/sim): the gate's own steps (fabric_test serve, measure,
collect with their argv) run the simulator's ib_write_bw/ib_write_lat on two simulated hosts of this machine, then
the gate's verdict (_gate.evaluate) judges what they measured.

The pair runs over 127.0.0.1 (this machine has no rail netdevs). What the machine cannot give is stood in for and
said so: ``ping`` (not installed here) answers, and the rail facts' link state and MTU (``ip`` knows no simulated
netdev) are the healthy values - the rate and the link layer are ibstat's, the simulator's."""
import os
import shutil
import socket
import sys

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _fabric_test as ft
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host, default_execute, default_spawn
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _gate

from _simhost import SimHost, sim_ready

pytestmark = pytest.mark.skipif(not sim_ready(), reason="the simulator (tests/sim/bin) is not present")


def free_port(count=2):
    """A first port whose ``count`` ports are free (one per test of a job)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            first = s.getsockname()[1]
        if first + count < 65535:
            return first


def gate_host(sim, stand_ins):
    """A Host whose tools are the simulated host's (its PATH and state), ``ping`` a stand-in."""
    path = os.pathsep.join([str(stand_ins), sim.env["PATH"]])

    def env_of(env):
        return dict(env, **dict(sim.env, PATH=path))

    host = Host(execute=lambda argv, env, timeout, data: default_execute(argv, env_of(env), timeout, data),
                which=lambda name: shutil.which(name, path=path),
                spawn=lambda argv, env: default_spawn(argv, env_of(env)))
    return host


@pytest.fixture
def stand_ins(tmp_path):
    bin_dir = tmp_path / "stand-ins"
    bin_dir.mkdir()
    ping = bin_dir / "ping"
    ping.write_text("#!%s\nprint('3 packets transmitted, 3 received, 0%% packet loss')\n" % sys.executable)
    ping.chmod(0o755)
    return bin_dir


def set_netdev_mtu(sim, netdev, mtu):
    """The netdev's MTU in the simulated tree (the kernel here has no such netdev)."""
    path = sim.tmp / "root" / "sys" / "class" / "net" / netdev
    path.mkdir(parents=True, exist_ok=True)
    (path / "mtu").write_text("%d\n" % mtu)


def one_direction(server, client, interface, run_dir, opts):
    """serve on ``server``, measure from ``client``, collect on ``server``: the gate's round for one rail."""
    port = free_port()
    job = {"rail": 0, "interface": interface, "port": port, "tests": ["ib_write_bw", "ib_write_lat"]}
    served = ft.run(server, {"action": "serve", "run_id": "sim", "run_dir": run_dir, "jobs": [job],
                             "options": opts})["servers"]
    assert all("pid" in s for s in served), served
    measured = ft.run(client, {"action": "measure", "run_id": "sim", "jobs": [
        dict(job, peer="server", peer_address="127.0.0.1")], "options": dict(opts, delay=0.2)})["rails"][0]
    collected = ft.run(server, {"action": "collect", "run_id": "sim", "run_dir": run_dir, "jobs": [job],
                                "timeout": 60})["servers"]
    return served, measured, collected


PLAN_ENTRY = {"rail": 0, "address": "127.0.0.1", "leaf": None, "leaf_port": None}
OPTS = {"duration": 2, "qps": 4}


def gate_verdict(interface, a_result, b_result):
    """The gate's verdict on the pair a, b from what each measured as client (facts: ibstat's, the rest healthy)."""
    plan = {"hosts": {h: [dict(PLAN_ENTRY, interface=interface)] for h in ("a", "b")}}
    facts = {}
    for host, result in (("a", a_result), ("b", b_result)):
        facts[host] = {interface: dict(result["facts"], state="up", mtu=None)}
        result.update(peer="b" if host == "a" else "a")
    measured = {"a": [a_result], "b": [b_result]}
    # the PHY counters (the measure step reads none; test_phy_counters_* read them from the simulator): healthy
    # stand-ins, read a minute apart
    healthy = {"source": "stand-in", "effective_errors": 0, "raw_errors": 0, "link_down": 0, "received_bits": None}
    facts = {h: {i: dict(f, phy=dict(healthy, read_at=1000.0)) for i, f in rails.items()} for h, rails in facts.items()}
    after = {h: {i: dict(f, phy=dict(healthy, read_at=1060.0)) for i, f in rails.items()} for h, rails in facts.items()}
    return _gate.evaluate(plan, {"unpaired": []}, ["a", "b"], [], measured, facts, after, limits=_gate.DEFAULTS,
                          run={"started": "2026-12-04T10:00:00Z"})


def run_pair(tmp_path, profile, interface, netdev_mtu=None):
    sims = {h: SimHost(tmp_path / h, profile, hostname="fab-r01-0%d" % (i + 1)) for i, h in enumerate("ab")}
    if netdev_mtu:
        for sim in sims.values():
            set_netdev_mtu(sim, interface, netdev_mtu)
    hosts = {h: gate_host(sim, tmp_path / "stand-ins") for h, sim in sims.items()}
    run_dir = str(tmp_path / "run")
    served_b, a_result, _collected_b = one_direction(hosts["b"], hosts["a"], interface, run_dir + "b", OPTS)
    served_a, b_result, collected_a = one_direction(hosts["a"], hosts["b"], interface, run_dir + "a", OPTS)
    return served_b, a_result, b_result, collected_a


def bw_of(result):
    return [t for t in result["tests"] if t["test"] == "ib_write_bw"][0]


@pytest.mark.heavy(8)
def test_an_ndr_infiniband_pair_measures_line_rate_and_is_handed_over(tmp_path, stand_ins):
    served, a_result, b_result, collected = run_pair(tmp_path, "dgx-h100", "ibp24s0")
    # the gate read InfiniBand from ibstat and ran perftest without the RoCE-only options (addressed by LID)
    assert a_result["facts"]["link_layer"] == "InfiniBand" and a_result["facts"]["rate_gbps"] == 400.0
    bw = bw_of(a_result)
    assert bw["argv"] == ["ib_write_bw", "-d", "mlx5_0", "-s", "65536", "-p", bw["argv"][6], "-F", "-q", "4", "-D",
                          "2", "--report_gbits", "127.0.0.1"]
    assert [s["argv"][:5] for s in served] == [["ib_write_bw", "-d", "mlx5_0", "-s", "65536"],
                                               ["ib_write_lat", "-d", "mlx5_0", "-s", "2"]]
    report = bw["report"]
    assert (report["link_type"], report["mtu"], report["gid_index"]) == ("IB", 4096, None)
    assert {x["lid"] for x in report["addresses"]["local"]} == {931}     # a's LID (ibstat: Base lid 931)
    # within 5 % of the modelled line rate (400 x 0.98 = 392): >= 380 of 400 Gb/s, both directions; a -> b 385.03
    # (the earlier simulator took the netdev's MTU as on RoCE - 1500 here, 2044 on IPoIB: 1024 and 96.26)
    assert report["results"][0]["bw_average"] == 385.03
    for result in (a_result, b_result):
        value = bw_of(result)["report"]["results"][0]["bw_average"]
        assert 380 <= value <= 392, value
    assert [c["rc"] for c in collected] == [0, 0]
    verdict = gate_verdict("ibp24s0", a_result, b_result)
    row = verdict["hosts"]["a"]["rails"][0]
    assert row["active_mtu"] == 4096 and row["write_bw_gbps"] >= 0.9 * 400
    assert verdict["quarantine"] == [] and verdict["handover"] == ["a", "b"]


@pytest.mark.heavy(8)
@pytest.mark.parametrize("netdev_mtu,mtu,bw,handed_over", [
    # a -> b: the figures the simulator printed for this pair before InfiniBand took the port's MTU (the same run on
    # the earlier tests/sim: 385.03 and 96.26) - RoCE is unchanged
    (9000, 4096, 385.03, ["a", "b"]),        # jumbo frames: 4096-byte RoCE MTU, line rate
    (1500, 1024, 96.26, []),                 # the default 1500: 1024, about a quarter [invented] - quarantined
])
def test_a_roce_pair_keeps_its_numbers_and_its_options(tmp_path, stand_ins, netdev_mtu, mtu, bw, handed_over):
    _served, a_result, b_result, _collected = run_pair(tmp_path, "gpu4-cx7-eth", "enp24s0np0", netdev_mtu)
    assert a_result["facts"]["link_layer"] == "Ethernet"
    test = bw_of(a_result)
    assert test["argv"][3:5] == ["-x", "3"]
    report = test["report"]
    assert (report["link_type"], report["mtu"], report["gid_index"]) == ("Ethernet", mtu, 3)
    assert report["results"][0]["bw_average"] == bw
    verdict = gate_verdict("enp24s0np0", a_result, b_result)
    assert verdict["handover"] == handed_over
    if not handed_over:
        assert ("%s Gb/s < 360.0 Gb/s (0.9 x 400 Gb/s port rate)" % bw) in \
            verdict["hosts"]["a"]["failures"][0]["message"]


def read_phy(sim, interface, stand_ins):
    facts = ft.run(gate_host(sim, stand_ins), {"action": "facts", "jobs": [{"rail": 0, "interface": interface}]})
    return facts["rails"][interface]


@pytest.mark.heavy(4)
def test_phy_counters_of_an_infiniband_rail_come_from_mlxlink_and_a_raw_ber_fault_moves_them(tmp_path, stand_ins):
    """InfiniBand: the IPoIB netdev's ethtool -S has no PHY counters, mlxlink -c has them; a raw_ber fault of 1e-4
    on a 400G port adds 4e7 corrected bits a second, all of them raw errors, none effective."""
    sim = SimHost(tmp_path / "a", "dgx-h100", hostname="fab-r01-01")
    before = read_phy(sim, "ibp24s0", stand_ins)
    assert before["link_layer"] == "InfiniBand" and "rx_corrected_bits_phy" not in before["counters"]
    assert before["phy"]["source"] == "mlxlink -d mlx5_0 -p 1 -c"
    assert (before["phy"]["effective_errors"], before["phy"]["raw_errors"], before["phy"]["link_down"],
            before["phy"]["received_bits"]) == (0, 0, 0, None)
    sim.run("mlxsim", "fault", "add", "raw_ber", "--device", "mlx5_0", "ber=1e-4")
    after = read_phy(sim, "ibp24s0", stand_ins)
    seconds = after["phy"]["read_at"] - before["phy"]["read_at"]
    ber = _gate.link_ber(before, after, after["rate_gbps"])
    # raw errors accrue from the moment the fault was added (after the first read): at most 4e7 per second between
    # the reads, and more than none
    assert 0 < ber["raw_errors"] <= 4e7 * seconds and ber["effective_errors"] == 0, ber
    assert ber["bits_from"] == "port rate x window" and ber["bits"] == int(400e9 * ber["seconds"])
    assert ber["raw_ber"] <= 1e-4 and ber["error"] is None


@pytest.mark.heavy(4)
def test_phy_counters_of_an_ethernet_rail_come_from_ethtool(tmp_path, stand_ins):
    sim = SimHost(tmp_path / "a", "gpu4-cx7-eth", hostname="fab-r01-01")
    fact = read_phy(sim, "enp24s0np0", stand_ins)
    assert fact["link_layer"] == "Ethernet"
    assert {k: v for k, v in fact["phy"].items() if k != "read_at"} == {
        "source": "ethtool -S enp24s0np0", "effective_errors": 0, "raw_errors": 0, "link_down": 0,
        "received_bits": None}
