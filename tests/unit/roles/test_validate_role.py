"""The validate role's controller side run by ansible-playbook on this machine (tests/_roleplay.py): the gate's plan
(filter gpufabric.mlnx.gate_plan, as the role's plan task calls it) and roles/validate/tasks/verdict.yml on what the
host steps would have registered - the rail facts before and after, each host's measures of its rounds, the NCCL
ranks' collect results, each host's NCCL version run - written here as the host variables those steps register.
The files it writes (gate.json, gate-state.json, the hand-over report) are read back and compared with values
written by hand. The host steps themselves (fabric_test against the simulator) are tests/unit/plugins/module_utils/
test_fabric_test.py's and molecule/fabric's.

The cluster: four servers a1, a2 (rack r0a, SU 1) and b1, b2 (rack r0b, SU 2), two rails, a leaf per rack and rail;
the pairs are a1 (server) - a2 and b1 (server) - b2 on both rails. Planted: b2's rail-0 NIC trained at x8 of x16 and
its own ib_write_bw there is 359.9 Gb/s (below 0.9 x 400 = 360.0); a1 runs NCCL 2.23.3 where the matrix pins
2.23.4-1; SU 2's world averages 40.0 GB/s (below 0.9 x 47 = 42.3)."""
import csv
import io
import json
from pathlib import Path

import pytest
import yaml

from _roleplay import play, run, sim_root, sim_vars, simulated

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import plan as rail_plan

HOSTS = ["a1", "a2", "b1", "b2"]
IFACES = ["enp24s0np0", "enp64s0np0"]
FABRIC = {"rails": 2, "addressing": "p2p31", "su_prefix": 26, "racks_per_su": 1, "leaf_name": "{rack}-leaf-rail{rail}",
          "pools": {"rail0": "198.18.0.0/20", "rail1": "198.18.16.0/20"},
          "nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]}, "interface_names": IFACES}
PEER = {"a1": "a2", "a2": "a1", "b1": "b2", "b2": "b1"}
MATRIX = {"name": "fabric-2026.12", "compatibility": {"nccl": "2.23.4-1"}}
GIB = 1073741824

PLAY = """
- name: The gate's controller side on registered host results
  hosts: servers
  gather_facts: false
  vars:
    __gpufabric_validate_leaves: []
    __gpufabric_validate_matrix: "{{ gpufabric_matrix }}"
    __gpufabric_validate_ref: "{{ hostvars['a1'] }}"
    __gpufabric_validate_previous: {}
    __gpufabric_validate_run: gate-20261204T100000
    __gpufabric_validate_started: "2026-12-04T10:00:00Z"
    __gpufabric_validate_report_dir: "%(reports)s"
  tasks:
    - name: Plan the run
      run_once: true
      ansible.builtin.set_fact:
        gpufabric_gate: >-
          {{ gpufabric_rail_plan | gpufabric.mlnx.gate_plan(__servers, __facts, {}, [], gpufabric_matrix, {}, 106) }}
      vars:
        __servers: "{{ groups['servers'] }}"
        __facts: >-
          {{ dict(__servers | zip(__servers | map('extract', hostvars, ['__gpufabric_validate_before', 'rails']))) }}

    - name: The verdict
      ansible.builtin.include_role:
        name: gpufabric.mlnx.validate
        tasks_from: verdict.yml
        apply:
          run_once: true
"""


def fact(at=1000.0, **extra):
    out = {"rdma": "mlx5_0", "port": 1, "rate_gbps": 400.0, "link_layer": "Ethernet", "state": "up", "mtu": 9000,
           "pcie": {"pci": "0000:18:00.0", "speed": 32.0, "max_speed": 32.0, "width": 16, "max_width": 16},
           "counters": {"link_down_events_phy": 0, "rx_symbol_err_phy": 0},
           "phy": {"source": "ethtool -S", "read_at": at, "effective_errors": 0, "raw_errors": 0, "link_down": 0,
                   "received_bits": None}}
    out.update(extra)
    return out


def measure(host, rail, bw):
    """One rail of the host's measure step (fabric_test measure: ping, ib_write_bw, ib_write_lat)."""
    return {"rail": rail, "interface": IFACES[rail], "peer": PEER[host], "ping": {"ok": True, "sent": 3, "received": 3},
            "tests": [{"test": "ib_write_bw", "rc": 0, "report": {"mtu": 4096, "errors": [],
                                                                  "results": [{"bytes": 65536, "bw_average": bw}]}},
                      {"test": "ib_write_lat", "rc": 0, "report": {"errors": [],
                                                                   "results": [{"bytes": 2, "t_avg": 1.7}]}}]}


def rank0(rows, version="2.23.4"):
    """nccl_collect of the host of rank 0: its report (the rows' last average is nccl-tests' footer)."""
    return {"ranks": [{"rank": 0, "rc": 0, "report": {
        "nccl_version": version, "errors": [], "avg_busbw": rows[-1][1] if rows else None,
        "rows": [{"size": size, "out_of_place": {"busbw": value, "algbw": value, "time": 24000.0}}
                 for size, value in rows]}}]}


def launched(rows, size=4):
    """nccl_collect of a world's first member: its launcher's result, rank 0's report listing the world's ``size``
    ranks (2 servers x 2 GPUs)."""
    report = rank0(rows)["ranks"][0]["report"]
    ranks = [{"rank": r} for r in range(size)]
    return {"launch": {"rc": 0, "stopped": False, "stderr": "", "report": dict(report, ranks=ranks)}}


def host_vars(plan, reports):
    out = {}
    for host in HOSTS:
        before = {IFACES[r]: fact() for r in (0, 1)}
        after = {IFACES[r]: fact(at=1300.0) for r in (0, 1)}
        if host == "b2":
            after[IFACES[0]]["pcie"] = {"pci": "0000:18:00.0", "speed": 32.0, "max_speed": 32.0, "width": 8,
                                        "max_width": 16}
        first = host in ("a1", "b1")
        out[host] = {
            "rack": "r0" + host[0], "gpufabric_matrix": MATRIX, "gpufabric_rail_plan": plan,
            "gpufabric_report_dir": reports,
            "__gpufabric_validate_before": {"rails": before},
            "__gpufabric_validate_after": {"rails": after},
            "__gpufabric_validate_measured": [measure(host, 0, 359.9 if host == "b2" else 385.6),
                                              measure(host, 1, 385.6)],
            "__gpufabric_validate_nccl_version": rank0([(8, 0.0)], "2.23.3" if host == "a1" else "2.23.4"),
            # only a world's first member runs its launcher (the others register nothing: skipped)
            "__gpufabric_validate_nccl_pairs": launched([(GIB, 44.5)]) if first else {"skipped": True},
            "__gpufabric_validate_nccl_su": (launched([(GIB, 44.0)]) if host == "a1" else
                                             launched([(GIB, 40.0)]) if host == "b1" else {"skipped": True}),
        }
    return out


@pytest.mark.heavy(15)
def test_the_verdict_tasks_write_the_results_the_state_and_the_report(tmp_path):
    plan = rail_plan([{"name": n, "rack": "r0" + n[0], "position": int(n[1])} for n in HOSTS], FABRIC)
    reports = tmp_path / "reports"
    ran = run(tmp_path, host_vars(plan, str(reports)), PLAY % {"reports": reports})
    assert ran.ok, ran
    said = ran.task("Say where the hand-over report is, and who is quarantined", "a1", role="validate")["msg"]
    assert said.startswith("validation gate: 2 servers handed over, 2 quarantined: a1: a1: NCCL 2.23.3, the matrix "
                           "fabric-2026.12 pins 2.23.4-1 | b2: b2 rail 0 (enp24s0np0): PCIe 0000:18:00.0 link at 32 "
                           "GT/s x8, the device can 32 GT/s x16 (narrower); ib_write_bw b2 -> b1 on rail 0 "
                           "(enp24s0np0): 359.9 Gb/s < 360.0 Gb/s (0.9 x 400 Gb/s port rate)"), said

    gate = json.loads((reports / "gate.json").read_text())
    assert gate["schema"] == 1 and gate["handover"] == ["a2", "b1"]
    assert [q["host"] for q in gate["quarantine"]] == ["a1", "b2"]
    status = {h: gate["hosts"][h]["status"] for h in HOSTS}
    assert status == {"a1": "quarantined", "a2": "passed", "b1": "passed", "b2": "quarantined"}
    got = {h: [(f["measure"], f["rail"], f["value"], f["threshold"], f["unit"]) for f in gate["hosts"][h]["failures"]]
           for h in HOSTS}
    assert got == {"a1": [("nccl_version", None, "2.23.3", "2.23.4-1", None)], "a2": [], "b1": [],
                   "b2": [("pcie", 0, 8, 16, "lanes"), ("ib_write_bw", 0, 359.9, 360.0, "Gb/s")]}
    assert gate["run"]["thresholds"] == {"write_bw_fraction": 0.9, "write_lat_factor": 1.5, "write_lat_usec": 2.55,
                                         "nccl_busbw_per_rail_gbs": 42.3, "nccl_fraction": 0.9,
                                         "nccl_gbs_per_400g": 47.0, "nccl_min_size": 1 << 30,
                                         "link_flaps": 0, "symbol_errors": 0, "effective_errors": 0,
                                         "effective_ber": 1e-12, "raw_ber": 1e-5, "ber_confidence": 0.95}
    assert (gate["run"]["matrix"], gate["run"]["nccl_expected"], gate["run"]["lat_median_usec"]) == (
        "fabric-2026.12", "2.23.4-1", 1.7)
    # b1's row: its own direction and b2's toward it
    row = gate["hosts"]["b1"]["rails"][0]
    assert (row["peer"], row["write_bw_gbps"], row["write_bw_reverse_gbps"], row["port_rate_gbps"]) == (
        "b2", 385.6, 359.9, 400.0)
    # the pairs' NCCL worlds: rank 0's report for both members; each SU's row on its own
    assert gate["hosts"]["a2"]["nccl"]["avg_busbw_gbs"] == 44.5 and gate["hosts"]["a2"]["nccl"]["peers"] == [
        "a1", "a2"]
    assert {k: (v["hosts"], v["avg_busbw_gbs"], v["threshold_gbs"], v["ok"]) for k, v in gate["su"].items()} == {
        "1": (["a1", "a2"], 44.0, 42.3, True), "2": (["b1", "b2"], 40.0, 42.3, False)}
    assert (gate["hosts"]["a1"]["su"], gate["hosts"]["b1"]["su"], gate["hosts"]["b1"]["rack"]) == (1, 2, "r0b")

    state = json.loads((reports / "gate-state.json").read_text())
    assert {h: (e["status"], e["run"]) for h, e in state["hosts"].items()} == {
        "a1": ("quarantined", "2026-12-04T10:00:00Z"), "a2": ("passed", "2026-12-04T10:00:00Z"),
        "b1": ("passed", "2026-12-04T10:00:00Z"), "b2": ("quarantined", "2026-12-04T10:00:00Z")}

    rows = list(csv.DictReader(io.StringIO((reports / "handover.csv").read_text())))
    assert [(r["host"], r["rail"], r["write_bw_gbps"], r["status"]) for r in rows] == [
        ("a1", "0", "385.6", "quarantined"), ("a1", "1", "385.6", "quarantined"),
        ("a2", "0", "385.6", "passed"), ("a2", "1", "385.6", "passed"),
        ("b1", "0", "385.6", "passed"), ("b1", "1", "385.6", "passed"),
        ("b2", "0", "359.9", "quarantined"), ("b2", "1", "385.6", "quarantined")]
    junit = (reports / "handover-junit.xml").read_text()
    assert junit.count('<failure type="quarantined"') == 2
    assert sorted(p.name for p in reports.iterdir()) == [
        "gate-state.json", "gate.json", "handover-junit.xml", "handover.csv", "handover.html", "handover.json",
        "handover.md"]
    assert yaml.safe_load((reports / "handover.json").read_text())["handover"] == ["a2", "b1"]


# ------------------------------------------------------------------------------------------------ one round
# Two simulated servers (tests/sim, ConnectX-6 Dx at 100G) and the whole role (tasks/main.yml): facts, plan, round 1
# forward and reverse (perftest servers started, the peers measure, the servers collected), the verdict. This machine
# has no rail netdevs: the rail plan is written by hand with loopback addresses (a real plan refuses them), and the
# two kernel tools the gate reads beside the simulator's - ip and ping - are stand-ins answering for the rail's
# netdev as a host with its link up, MTU 9000 and that address would. No NCCL (its worlds are the pairs' again).
NETDEV = "enp59s0f0np0"          # mlx5_0 of the cx6dx-roce profile
ROUND_PLAN = {
    "hosts": {"s1": [{"rail": 0, "pci": "0000:3b:00.0", "interface": NETDEV, "address": "127.0.0.1",
                      "leaf": "su1-leaf-rail0", "leaf_port": "swp1"}],
              "s2": [{"rail": 0, "pci": "0000:3b:00.0", "interface": NETDEV, "address": "127.0.0.2",
                      "leaf": "su1-leaf-rail0", "leaf_port": "swp2"}]},
    "leaves": {"su1-leaf-rail0": {"rail": 0, "su": 1, "cables": {}}}}
IP = r'''#!/bin/sh
# ip (iproute2) as a host whose rail netdev is up: -j link and addr of that netdev, nothing else
case "$*" in
  *"link show dev %(netdev)s") echo '[{"ifname": "%(netdev)s", "operstate": "UP", "mtu": 9000, "carrier_changes": 2}]';;
  *"addr show dev %(netdev)s") echo '[{"ifname": "%(netdev)s", "addr_info": [{"family": "inet", "local": "%(address)s", "prefixlen": 31}]}]';;
  *) echo '[]';;
esac
'''
PING = r'''#!/bin/sh
# ping (iputils) with every packet answered: its summary line, as the gate parses it
echo "3 packets transmitted, 3 received, 0% packet loss, time 401ms"
'''


def stand_ins(sim, address):
    """ip and ping stand-ins first on the simulated host's PATH; the netdev's MTU 9000 in the simulated tree (what
    perftest's active MTU follows on a machine without the netdev)."""
    bin_dir = Path(sim_root(sim)).parent / "kernel-tools"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("ip", IP % {"netdev": NETDEV, "address": address}), ("ping", PING)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    sim.env["PATH"] = "%s:%s" % (bin_dir, sim.env["PATH"])
    mtu = Path(sim_root(sim)) / "sys" / "class" / "net" / NETDEV / "mtu"
    mtu.parent.mkdir(parents=True, exist_ok=True)
    mtu.write_text("9000\n")


@pytest.mark.heavy(25)
def test_one_round_forward_then_reverse_on_simulated_servers(tmp_path):
    reports = tmp_path / "reports"
    hosts = {}
    for name, address in (("s1", "127.0.0.1"), ("s2", "127.0.0.2")):
        sim = simulated(tmp_path, name, "cx6dx-roce")
        stand_ins(sim, address)
        hosts[name] = sim_vars(sim, gpufabric_rail_plan=ROUND_PLAN, gpufabric_report_dir=str(reports),
                               gpufabric_validate_nccl=False, gpufabric_validate_duration=1,
                               gpufabric_validate_run_dir=str(tmp_path / name / "gate"), rack="r01")
    ran = run(tmp_path, hosts, play("validate"))
    assert ran.ok, ran
    gate = ran.task("Plan the run - who is tested and why, the pairs, the NCCL worlds", "s1",
                    role="validate")["ansible_facts"]["gpufabric_gate"]
    assert gate["tested"] == ["s1", "s2"] and gate["rounds"] == [1]
    pair = gate["pairs"]["rounds"][0]["pairs"][0]
    assert (pair["server"], pair["client"]) == ("s1", "s2")
    # forward: s1 serves, s2 measures against 127.0.0.1; reverse: s2 serves, s1 measures against 127.0.0.2
    steps = [t for p in ran.data["plays"] for t in p["tasks"] if t["task"]["name"].startswith(
        ("gpufabric.mlnx.validate : Start the perftest servers", "gpufabric.mlnx.validate : Ping, ib_write_bw"))]
    done = [(t["task"]["name"].split(" - round ")[0].split(" : ")[1][:9], t["task"]["name"].split(" - round ")[1],
             sorted(h for h, r in t["hosts"].items() if not r.get("skipped"))) for t in steps]
    assert done == [("Start the", "1 forward", ["s1"]), ("Ping, ib_", "1 forward", ["s2"]),
                    ("Start the", "1 reverse", ["s2"]), ("Ping, ib_", "1 reverse", ["s1"])]
    forward = [t for t in steps if t["task"]["name"].endswith("1 forward") and "Ping" in t["task"]["name"]][0]
    reverse = [t for t in steps if t["task"]["name"].endswith("1 reverse") and "Ping" in t["task"]["name"]][0]
    assert [(r["peer"], r["peer_address"], r["interface"]) for r in forward["hosts"]["s2"]["rails"]] == [
        ("s1", "127.0.0.1", NETDEV)]
    assert [(r["peer"], r["peer_address"], r["interface"]) for r in reverse["hosts"]["s1"]["rails"]] == [
        ("s2", "127.0.0.2", NETDEV)]

    result = json.loads((reports / "gate.json").read_text())
    # gpufabric_validate_nccl off: no NCCL report and no NCCL failure (every server was quarantined for it)
    assert result["quarantine"] == [] and result["handover"] == ["s1", "s2"], result["quarantine"]
    assert (result["hosts"]["s1"]["nccl"], result["su"]) == (None, {})
    row = result["hosts"]["s1"]["rails"][0]
    assert (row["peer"], row["port_rate_gbps"], row["ping"]) == ("s2", 100.0, True)
    # the simulator's 100G line at MTU 4096: 0.98 x 100 x 65536/(65536 + 1024) = 96.5 Gb/s, above 0.9 x 100 = 90
    assert 90.0 <= row["write_bw_gbps"] <= 100.0 and 90.0 <= row["write_bw_reverse_gbps"] <= 100.0
    assert result["run"]["thresholds"]["nccl_busbw_per_rail_gbs"] == 10.575        # 0.9 x 47 x 100/400
