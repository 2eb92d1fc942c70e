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

import pytest
import yaml

from _roleplay import run

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


def fact(**extra):
    out = {"rdma": "mlx5_0", "port": 1, "rate_gbps": 400.0, "link_layer": "Ethernet", "state": "up", "mtu": 9000,
           "pcie": {"pci": "0000:18:00.0", "speed": 32.0, "max_speed": 32.0, "width": 16, "max_width": 16},
           "counters": {"link_down_events_phy": 0, "rx_symbol_err_phy": 0}}
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


def other_ranks(first):
    return {"ranks": [{"rank": first, "rc": 0, "report": None}, {"rank": first + 1, "rc": 0, "report": None}]}


def host_vars(plan, reports):
    out = {}
    for host in HOSTS:
        before = {IFACES[r]: fact() for r in (0, 1)}
        after = {IFACES[r]: fact() for r in (0, 1)}
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
            "__gpufabric_validate_nccl_pairs": rank0([(GIB, 44.5)]) if first else other_ranks(2),
            "__gpufabric_validate_nccl_su": (rank0([(GIB, 44.0)]) if host == "a1" else
                                             rank0([(GIB, 40.0)]) if host == "b1" else other_ranks(2)),
        }
    return out


@pytest.mark.heavy(25)
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
    assert {h: gate["hosts"][h]["status"] for h in HOSTS} == {"a1": "quarantined", "a2": "passed", "b1": "passed",
                                                               "b2": "quarantined"}
    got = {h: [(f["measure"], f["rail"], f["value"], f["threshold"], f["unit"]) for f in gate["hosts"][h]["failures"]]
           for h in HOSTS}
    assert got == {"a1": [("nccl_version", None, "2.23.3", "2.23.4-1", None)], "a2": [], "b1": [],
                   "b2": [("pcie", 0, 8, 16, "lanes"), ("ib_write_bw", 0, 359.9, 360.0, "Gb/s")]}
    assert gate["run"]["thresholds"] == {"write_bw_fraction": 0.9, "write_lat_factor": 1.5, "write_lat_usec": 2.55,
                                         "nccl_busbw_per_rail_gbs": 42.3, "nccl_busbw_host_gbs": 84.6,
                                         "link_flaps": 0, "symbol_errors": 0}
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
