"""The validation gate on the controller (plugin_utils/_gate.py): who is tested (state, fingerprints, retest), the
limits (defaults, the matrix release's, the inventory's), each step's jobs, the NCCL worlds, and the verdict - every
measure against its limit, each failure attributed to the host whose own facts explain it, quarantine, hand-over,
the next run's state. Plans are real rail plans (_rail_plan.plan()) of the molecule/fabric layout."""
import copy

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _gate
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import plan as rail_plan

RAILS = 2
NICS = {"nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]}, "interface_names": ["enp24s0np0", "enp64s0np0"]}
FABRIC = dict(NICS, rails=RAILS, addressing="p2p31", su_prefix=26, racks_per_su=1, leaf_name="{rack}-leaf-rail{rail}",
              pools={"rail0": "198.18.0.0/20", "rail1": "198.18.16.0/20"})
HOSTS = ["a1", "a2", "b1", "b2"]


@pytest.fixture(scope="module")
def plan():
    servers = [{"name": n, "rack": "r0" + n[0], "position": int(n[1])} for n in HOSTS]
    return rail_plan(servers, FABRIC)


def facts_of(plan, host, change=None):
    out = {}
    for entry in plan["hosts"][host]:
        fact = {"rdma": "mlx5_%d" % entry["rail"], "port": 1, "rate_gbps": 400.0, "link_layer": "Ethernet",
                "state": "up", "mtu": 9000, "address": entry["address"], "carrier_changes": 2,
                "pcie": {"pci": entry["pci"], "speed": 32.0, "max_speed": 32.0, "width": 16, "max_width": 16},
                "counters": {"link_down_events_phy": 0, "rx_symbol_err_phy": 0}, "qos": {"trust": "dscp", "pfc": [3]},
                "phy": phy()}
        fact.update((change or {}).get(entry["rail"], {}))
        out[entry["interface"]] = fact
    return out


def phy(at=1000.0, effective=0, raw=0, down=0, bits=None):
    """The PHY counters of a rail read at ``at`` (seconds)."""
    return {"source": "ethtool -S", "read_at": at, "effective_errors": effective, "raw_errors": raw, "link_down": down,
            "received_bits": bits}


def later(facts, seconds=100.0):
    """The facts read ``seconds`` later (the PHY counters' read time moved, nothing else)."""
    return {h: {i: dict(f, phy=dict(f["phy"], read_at=f["phy"]["read_at"] + seconds)) if f.get("phy") else f
                for i, f in rails.items()} for h, rails in facts.items()}


def leaves_of(plan, swap=None, pfc="3", roce_on=None):
    out = {}
    for leaf, entry in plan["leaves"].items():
        ports = {}
        for port, cable in entry["cables"].items():
            seen = (swap or {}).get((cable["host"], cable["interface"]), (cable["host"], cable["interface"]))
            ports[port] = {"oper_status": "up", "speed": "400G", "mtu": 9216,
                           "lldp": [{"system_name": seen[0], "port": seen[1]}]}
        roce = dict(roce_on or {"enable": "on"}, mode="lossless", pfc={"pfc-priority": pfc})
        out[leaf] = {"interfaces": ports, "qos": {"roce": roce}}
    return out


def bw_test(value, rc=0, errors=()):
    rows = [] if value is None else [{"bytes": 65536, "bw_average": value}]
    return {"test": "ib_write_bw", "rc": rc, "report": {"mtu": 4096, "results": rows, "errors": list(errors)},
            "stderr": "\n".join(errors)}


def lat_test(value):
    return {"test": "ib_write_lat", "rc": 0, "report": {"results": [{"bytes": 2, "t_avg": value}], "errors": []}}


def measured_for(gate, bw=None, lat=None, ping=None):
    """What the measure steps return for every pair and direction: bw[(client, rail)] overrides 385.6."""
    out = {}
    for rnd in gate["pairs"]["rounds"]:
        for pair in rnd["pairs"]:
            for client, server in ((pair["client"], pair["server"]), (pair["server"], pair["client"])):
                key = (client, pair["rail"])
                tests = [(bw or {}).get(key, bw_test(385.6)), lat_test((lat or {}).get(key, 1.7))]
                out.setdefault(client, []).append({"rail": pair["rail"], "peer": server, "tests": tests,
                                                   "ping": (ping or {}).get(key, {"ok": True, "sent": 3,
                                                                                  "received": 3})})
    return out


def launched(world, busbw=44.5, ranks=None, rc=0, stderr="", **extra):
    """What the world's first member collects from its launcher: rank 0's report listing ``ranks`` ranks (the
    world's size unless told)."""
    count = world["size"] if ranks is None else ranks
    report = {"rows": [{"size": 1 << 30, "out_of_place": {"busbw": busbw, "algbw": busbw, "time": 24000.0}}],
              "avg_busbw": busbw, "errors": [], "nccl_version": "2.23.4",
              "ranks": [{"rank": r, "host": "x", "device": r % 2} for r in range(count)]}
    return {"launch": dict({"rc": rc, "stopped": False, "stderr": stderr, "report": report}, **extra)}


def nccl_ok(gate, busbw=44.5, bad=None):
    raw = {"pairs": {}, "su": {}, "version": {}}
    for world in gate["nccl_pairs"]["worlds"]:
        raw["pairs"][world["hosts"][0]] = launched(world, (bad or {}).get(world["hosts"][0], busbw))
    return _gate.nccl_reports(gate, raw)


def verdict(plan, gate, before=None, after=None, leaves=None, nccl=None, measured=None, versions=None, previous=None):
    before = before or {h: facts_of(plan, h) for h in HOSTS}
    return _gate.evaluate(plan, gate["pairs"], gate["tested"], gate["not_retested"], measured or measured_for(gate),
                          before, later(after or before), leaves if leaves is not None else leaves_of(plan),
                          nccl if nccl is not None else nccl_ok(gate), versions or {}, gate["limits"],
                          {"started": "2026-12-04T10:00:00Z", "matrix": "fabric-2026.12", "nccl_expected": "2.23.4"},
                          9000, previous, gate["fingerprints"])


def new_gate(plan, previous=None, retest=None, facts=None, matrix=None, overrides=None):
    facts = facts or {h: facts_of(plan, h) for h in HOSTS}
    mgmt = {h: "198.19.90.%d" % (11 + i) for i, h in enumerate(HOSTS)}
    return _gate.plan_run(plan, HOSTS, facts, previous, retest, matrix or {"name": "fabric-2026.12"}, overrides, 106,
                          mgmt=mgmt)


def failures(result, host):
    return [(f["measure"], f["rail"]) for f in result["hosts"][host]["failures"]]


def test_a_healthy_fabric_passes_every_host_and_hands_it_over(plan):
    gate = new_gate(plan)
    assert gate["tested"] == HOSTS and gate["rounds"] == [1]
    result = verdict(plan, gate)
    assert result["quarantine"] == [] and result["handover"] == sorted(HOSTS)
    row = result["hosts"]["a1"]["rails"][0]
    assert (row["peer"], row["write_bw_gbps"], row["write_bw_reverse_gbps"], row["ping"]) == ("a2", 385.6, 385.6, True)
    assert row["lldp"]["ok"] is True and row["link"]["leaf_mtu"] == 9216
    assert result["run"]["thresholds"]["write_lat_usec"] == pytest.approx(1.5 * 1.7)


@pytest.mark.parametrize("roce_on, passes", [({"state": "enabled"}, True), ({"enable": "on"}, True),
                                             ({"state": "disabled"}, False), ({"enable": "off"}, False)])
def test_the_leaf_s_roce_is_read_in_the_spelling_of_either_release(plan, roce_on, passes):
    gate = new_gate(plan)
    result = verdict(plan, gate, leaves=leaves_of(plan, roce_on=roce_on))
    assert (result["quarantine"] == []) is passes, result["quarantine"]
    if not passes:
        assert ("qos", 0) in failures(result, "a1")


@pytest.mark.parametrize("fault,measure", [
    ({0: {"pcie": {"pci": "0000:18:00.0", "speed": 16.0, "max_speed": 32.0, "width": 8, "max_width": 16}}}, "pcie"),
    ({0: {"mtu": 1500}}, "mtu"),
    ({0: {"counters": {"link_down_events_phy": 2, "rx_symbol_err_phy": 0}}}, "link_flaps"),
    ({0: {"counters": {"link_down_events_phy": 0, "rx_symbol_err_phy": 1200}}}, "symbol_errors"),
    ({0: {"qos": {"trust": "dscp", "pfc": []}}}, "qos"),
    ({0: {"link_layer": None}}, "link_layer"),              # ibstat could not say: perftest's options are unknown
    ({0: {"link_layer": "Unknown"}}, "link_layer"),
])
def test_a_fault_on_one_host_quarantines_that_host_alone_with_the_measure(plan, fault, measure):
    gate = new_gate(plan)
    before = {h: facts_of(plan, h) for h in HOSTS}
    after = copy.deepcopy(before)
    after["a2"] = facts_of(plan, "a2", fault)
    low = {("a1", 0): bw_test(96.4), ("a2", 0): bw_test(96.4)}       # the pair's traffic is low both ways
    result = verdict(plan, gate, before=before, after=after, measured=measured_for(gate, bw=low))
    assert [q["host"] for q in result["quarantine"]] == ["a2"]
    got = failures(result, "a2")
    assert (measure, 0) in got and ("ib_write_bw", 0) in got      # the low bandwidth goes with the host's own fact
    assert failures(result, "a1") == [] and "a1" in result["handover"]
    assert all("could not be split" not in f["message"] for f in result["hosts"]["a2"]["failures"])


@pytest.mark.parametrize("layer,passes", [("InfiniBand", True), ("Ethernet", True), ("IB", False), (None, False)])
def test_the_link_layer_must_be_one_the_gate_has_perftest_options_for(plan, layer, passes):
    gate = new_gate(plan)
    facts = {h: facts_of(plan, h, {1: {"link_layer": layer}} if h == "b1" else None) for h in HOSTS}
    result = verdict(plan, gate, before=facts)
    assert (result["quarantine"] == []) is passes
    if not passes:
        assert failures(result, "b1") == [("link_layer", 1)] and "b2" in result["handover"]
        assert result["hosts"]["b1"]["failures"][0]["message"] == (
            "b1 rail 1 (enp64s0np0, mlx5_1): link layer %r is not one of InfiniBand or Ethernet (ibstat's "
            "\"Link layer\")" % (layer,))


def test_a_swapped_cable_shows_in_lldp_on_the_host_whose_cables_they_are(plan):
    gate = new_gate(plan)
    swap = {("b1", "enp24s0np0"): ("b1", "enp64s0np0"), ("b1", "enp64s0np0"): ("b1", "enp24s0np0")}
    ping = {("b1", 0): {"ok": False, "sent": 3, "received": 0}, ("b2", 0): {"ok": False, "sent": 3, "received": 0}}
    result = verdict(plan, gate, leaves=leaves_of(plan, swap=swap), measured=measured_for(gate, ping=ping))
    assert [q["host"] for q in result["quarantine"]] == ["b1"]
    messages = [f["message"] for f in result["hosts"]["b1"]["failures"] if f["measure"] == "lldp"]
    assert messages and "sees b1:enp64s0np0 over LLDP, the plan cables b1:enp24s0np0 there" in messages[0]


def test_an_unexplained_low_pair_quarantines_both_and_says_it_could_not_be_split(plan):
    gate = new_gate(plan)
    low = {("b1", 1): bw_test(200.0)}
    result = verdict(plan, gate, measured=measured_for(gate, bw=low))
    assert sorted(q["host"] for q in result["quarantine"]) == ["b1", "b2"]
    assert all("could not be split" in f["message"] for h in ("b1", "b2") for f in result["hosts"][h]["failures"])
    assert "200.0 Gb/s < 360.0 Gb/s (0.9 x 400 Gb/s port rate)" in result["hosts"]["b1"]["failures"][0]["message"]


def test_a_tool_error_and_a_slow_latency(plan):
    gate = new_gate(plan)
    err = {("a1", 1): bw_test(None, rc=1, errors=["Completion with error at client"])}
    result = verdict(plan, gate, measured=measured_for(gate, bw=err, lat={("b2", 0): 9.0}),
                     after={h: facts_of(plan, h, {1: {"counters": {"link_down_events_phy": 2}}} if h == "a1" else None)
                            for h in HOSTS})
    assert ("ib_write_bw", 1) in failures(result, "a1") and ("link_flaps", 1) in failures(result, "a1")
    assert "failed: Completion with error at client" in [f["message"] for f in result["hosts"]["a1"]["failures"]
                                                         if f["measure"] == "ib_write_bw"][0]
    assert ("ib_write_lat", 0) in failures(result, "b2")


def test_nccl_below_the_floor_and_a_wrong_nccl_version(plan):
    gate = new_gate(plan)
    nccl = nccl_ok(gate, bad={"b1": 20.0})
    versions = {"a1": {"nccl": "2.21.5"}}
    result = _gate.evaluate(plan, gate["pairs"], gate["tested"], [], measured_for(gate),
                            {h: facts_of(plan, h) for h in HOSTS}, later({h: facts_of(plan, h) for h in HOSTS}),
                            leaves_of(plan), nccl, versions, gate["limits"],
                            {"matrix": "fabric-2026.12", "nccl_expected": "2.23.4"}, 9000)
    assert ("nccl_busbw", None) in failures(result, "b1") and ("nccl_busbw", None) in failures(result, "b2")
    assert "20.0 GB/s < 42.3 GB/s per rail" in result["hosts"]["b1"]["failures"][0]["message"]
    assert failures(result, "a1") == [("nccl_version", None)]
    assert "NCCL 2.21.5, the matrix fabric-2026.12 pins 2.23.4" in result["hosts"]["a1"]["failures"][0]["message"]


@pytest.mark.parametrize("versions, failed", [
    ({"a1": {"nccl": None, "nccl_run": True}}, [("nccl_version", None)]),     # ran, printed none: fail closed
    ({"a1": {"nccl": None, "nccl_run": False}}, []),                          # NCCL off: nothing to check
    ({"a1": {"nccl": "2.23.4", "nccl_run": True}}, []),
])
def test_a_version_run_that_printed_no_version_fails(plan, versions, failed):
    gate = new_gate(plan)
    result = _gate.evaluate(plan, gate["pairs"], gate["tested"], [], measured_for(gate),
                            {h: facts_of(plan, h) for h in HOSTS}, later({h: facts_of(plan, h) for h in HOSTS}),
                            leaves_of(plan), nccl_ok(gate), versions, gate["limits"],
                            {"matrix": "fabric-2026.12", "nccl_expected": "2.23.4-1"}, 9000)
    assert failures(result, "a1") == failed
    if failed:
        assert result["hosts"]["a1"]["failures"][0]["message"] == (
            "a1: the NCCL version run printed no NCCL version (neither nccl-tests' 'nccl-library=' header nor "
            "NCCL_DEBUG=VERSION's 'NCCL version' line): its library cannot be checked against the matrix "
            "fabric-2026.12's 2.23.4-1")


def test_versions_of_says_whether_the_version_run_ran():
    ran = {"ranks": [{"rank": 0, "rc": 0, "report": {"nccl_version": None, "rows": [], "errors": []}}]}
    out = _gate.versions_of(["a1", "a2"], {"a1": ran, "a2": {"skipped": True}}, {}, {"nccl_expected": "2.23.4-1"})
    assert (out["a1"]["nccl"], out["a1"]["nccl_run"], out["a2"]["nccl_run"]) == (None, True, False)


def test_the_rerun_tests_only_the_quarantined_host_and_what_changed(plan):
    gate = new_gate(plan)
    after = {h: facts_of(plan, h) for h in HOSTS}
    after["b2"] = facts_of(plan, "b2", {0: {"mtu": 1500}})
    first = verdict(plan, gate, after=after, measured=measured_for(gate, bw={("b2", 0): bw_test(96.0)}))
    state = _gate.state(first)
    assert state["hosts"]["b2"]["status"] == "quarantined" and state["hosts"]["a1"]["status"] == "passed"
    again = new_gate(plan, previous=state)
    assert again["tested"] == ["b2"] and again["not_retested"] == ["a1", "a2", "b1"]
    assert again["why"]["b2"].startswith("quarantined") and again["pairs"]["hosts"]["b2"][0]["peer"] == "b1"
    changed = {h: facts_of(plan, h) for h in HOSTS}
    changed["a1"] = facts_of(plan, "a1", {1: {"rdma": "mlx5_7"}})
    assert new_gate(plan, previous=state, facts=changed)["tested"] == ["a1", "b2"]
    assert new_gate(plan, previous=state, retest=["a2"])["tested"] == ["a2", "b2"]
    second = verdict(plan, again)
    assert second["hosts"]["b2"]["status"] == "passed" and second["hosts"]["a1"]["status"] == "not_retested"
    assert second["handover"] == sorted(HOSTS)


def test_limits_from_the_matrix_release_and_the_inventory(plan):
    gate = new_gate(plan, matrix={"name": "m", "gate": {"write_bw_fraction": 0.8}}, overrides={"write_lat_factor": 2})
    assert gate["limits"]["write_bw_fraction"] == 0.8 and gate["limits"]["write_lat_factor"] == 2
    with pytest.raises(MlnxError, match=r"matrix.gate.bogus: not a threshold \(allowed: .*write_bw_fraction"):
        new_gate(plan, matrix={"gate": {"bogus": 1}})
    with pytest.raises(MlnxError, match=r"thresholds.write_bw_fraction: -1 is not allowed"):
        new_gate(plan, overrides={"write_bw_fraction": -1})
    with pytest.raises(MlnxError, match=r"hosts: zz not in the rail plan"):
        _gate.plan_run(plan, ["zz"], {})


def test_jobs_of_each_direction_and_the_nccl_worlds(plan):
    gate = new_gate(plan)
    pair = [p for p in gate["pairs"]["rounds"][0]["pairs"] if p["rail"] == 1 and "a1" in (p["server"], p["client"])][0]
    server, client = pair["server"], pair["client"]
    fwd_server = _gate.jobs(gate["pairs"], server, 1, "forward")
    fwd_client = _gate.jobs(gate["pairs"], client, 1, "forward")
    assert {"rail": 1, "interface": "enp64s0np0", "port": 18525, "tests": ["ib_write_bw", "ib_write_lat"]} in \
        fwd_server["serve"]
    job = [j for j in fwd_client["measure"] if j["rail"] == 1][0]
    assert job["peer"] == server and job["peer_address"] == pair["server_address"]
    assert [j for j in _gate.jobs(gate["pairs"], server, 1, "reverse")["measure"] if j["rail"] == 1][0]["peer"] == client
    worlds = gate["nccl_pairs"]["worlds"]
    assert sorted(sorted(w["hosts"]) for w in worlds) == [["a1", "a2"], ["b1", "b2"]]
    env = worlds[0]["env"]
    # no OMPI_*: the launcher gives those; no NCCL_TESTS_MIN_BW: its exit 1 made mpirun abort before the report came
    assert env == {"NCCL_COMM_ID": "198.19.90.11:29500", "NCCL_TESTS_SPLIT": "MOD 2", "NCCL_IB_GID_INDEX": "3",
                   "NCCL_IB_TC": "106"}
    # the world's launcher runs on its first member only: one context per member, in rank order
    assert sorted(gate["nccl_pairs"]["hosts"]) == sorted(w["hosts"][0] for w in worlds) and worlds[0]["size"] == 4
    first, second = worlds[0]["hosts"]
    assert gate["nccl_pairs"]["hosts"][first]["launch"] == {
        "launcher": "mpirun", "bind_to": "numa", "subnet": None,
        "contexts": [{"host": first, "address": "198.19.90.%d" % (11 + HOSTS.index(first)), "slots": 2,
                      "hca": ["mlx5_0", "mlx5_1"]},
                     {"host": second, "address": "198.19.90.%d" % (11 + HOSTS.index(second)), "slots": 2,
                      "hca": ["mlx5_0", "mlx5_1"]}]}
    with pytest.raises(MlnxError, match="direction: 'up' is not forward or reverse"):
        _gate.jobs(gate["pairs"], "a1", 1, "up")


def test_nics_for_the_delivery_section_and_firmware_against_the_matrix(plan):
    devices = [{"address": "0000:18:00.0", "function": 0, "serial_number": "MT2245X01234", "part_number":
                "MCX75310AAS-NEAT", "psid": "MT_0000000838", "fw_running": "28.43.1014"},
               {"address": "0000:40:00.0", "function": 0, "serial_number": "MT2245X01235", "part_number":
                "MCX75310AAS-NEAT", "psid": "MT_0000000838", "fw_running": "28.42.1000"},
               {"address": "0000:41:00.1", "function": 1, "psid": "MT_0000000834"},
               {"address": "0000:9a:00.0", "function": 0, "psid": "DEL0000000027", "fw_running": "1.0"}]
    rows = _gate.nic_rows(devices, {"MT_0000000838": "28.43.1014"})
    wanted = [("0000:18:00.0", True), ("0000:40:00.0", False), ("0000:9a:00.0", None)]
    assert [(r["pci"], r["firmware_ok"]) for r in rows] == wanted
    assert rows[1]["note"] == "runs firmware 28.42.1000, the matrix pins 28.43.1014 for MT_0000000838"
    assert [r["ok"] for r in rows] == [None, None, None]
    gate = new_gate(plan)
    run = dict(gate=gate, plan=plan, measured=measured_for(gate), leaves=leaves_of(plan), nccl=nccl_ok(gate))

    def evaluate(delivery):
        return _gate.evaluate(plan, gate["pairs"], gate["tested"], [], run["measured"],
                              {h: facts_of(plan, h) for h in HOSTS}, later({h: facts_of(plan, h) for h in HOSTS}),
                              run["leaves"], run["nccl"], {}, gate["limits"], {}, 9000,
                              hosts_info={"b1": {"delivery": delivery}})
    # other firmware than the pin: shown, not quarantined (the firmware step burns, or is off on purpose)
    result = evaluate(rows)
    assert failures(result, "b1") == [] and result["hosts"]["b1"]["status"] == "passed"
    assert result["hosts"]["b1"]["delivery"][0]["serial"] == "MT2245X01234"
    assert result["hosts"]["b1"]["delivery"][1]["firmware_ok"] is False
    # the delivery check's own verdict (asset list) does quarantine
    checked = [dict(rows[0], ok=False, reason="serial MT2245X01234, the asset list has MT2245X09999")]
    result = evaluate(checked)
    assert failures(result, "b1") == [("delivery", None)] and failures(result, "a1") == []
    assert "NIC 0000:18:00.0 serial MT2245X01234" in result["hosts"]["b1"]["failures"][0]["message"]


def test_failures_for_a_pipeline_each_with_its_value_limit_and_rule(plan):
    """gate.json's status and failures[]: one entry per failure of a quarantined host, value beside its limit."""
    gate = new_gate(plan)
    after = {h: facts_of(plan, h) for h in HOSTS}
    slow = {"pci": "0000:18:00.0", "speed": 16.0, "max_speed": 32.0, "width": 16, "max_width": 16}
    after["b2"] = facts_of(plan, "b2", {0: {"pcie": slow}})
    result = verdict(plan, gate, after=after, measured=measured_for(gate, bw={("b2", 0): bw_test(359.9)}))
    assert result["status"] == "quarantined" and result["handover"] == ["a1", "a2", "b1"]
    assert result["failures"] == [
        {"host": "b2", "rail": 0, "measure": "pcie", "value": 16.0, "limit": 32.0, "unit": "GT/s", "pass_if": ">=",
         "message": "b2 rail 0 (enp24s0np0): PCIe 0000:18:00.0 link at 16 GT/s x16, the device can 32 GT/s x16 "
                    "(slower)"},
        {"host": "b2", "rail": 0, "measure": "ib_write_bw", "value": 359.9, "limit": 360.0, "unit": "Gb/s",
         "pass_if": ">=", "message": "ib_write_bw b2 -> b1 on rail 0 (enp24s0np0): 359.9 Gb/s < 360.0 Gb/s "
                                     "(0.9 x 400 Gb/s port rate)"}]
    # the limits each rail was compared against, beside its values
    rail = result["hosts"]["b1"]["rails"][0]
    assert (rail["write_bw_limit_gbps"], rail["write_lat_limit_usec"]) == (360.0, 2.55)
    assert (rail["write_bw_gbps"], rail["write_bw_reverse_gbps"]) == (385.6, 359.9)     # b2's fault, b2's failure
    # no host bandwidth floor that nothing applies: NCCL limits are per rail
    assert "nccl_busbw_host_gbs" not in result["run"]["thresholds"]
    assert result["run"]["thresholds"]["nccl_busbw_per_rail_gbs"] == 42.3
    healthy = verdict(plan, gate)
    assert healthy["status"] == "handed_over" and healthy["failures"] == []


@pytest.mark.parametrize("value, passes", [(360.0, True), (359.9, False)])
def test_ib_write_bw_at_the_limit_passes_and_below_it_fails(plan, value, passes):
    gate = new_gate(plan)
    after = {h: facts_of(plan, h) for h in HOSTS}
    after["b2"] = facts_of(plan, "b2", {0: {"mtu": 1500}})        # b2's own fact: the pair's traffic is b2's
    result = verdict(plan, gate, after=after, measured=measured_for(gate, bw={("b2", 0): bw_test(value)}))
    assert (("ib_write_bw", 0) not in failures(result, "b2")) is passes


def test_a_narrow_pcie_link_is_compared_in_lanes(plan):
    gate = new_gate(plan)
    after = {h: facts_of(plan, h) for h in HOSTS}
    narrow = {"pci": "0000:40:00.0", "speed": 32.0, "max_speed": 32.0, "width": 8, "max_width": 16}
    after["a1"] = facts_of(plan, "a1", {1: {"pcie": narrow}})
    result = verdict(plan, gate, after=after)
    pcie = [f for f in result["failures"] if f["measure"] == "pcie"]
    assert [(f["host"], f["value"], f["limit"], f["unit"], f["pass_if"]) for f in pcie] == [
        ("a1", 8, 16, "lanes", ">=")]


def test_the_su_floor_is_per_rail_at_the_world_s_port_rate(plan):
    gate = new_gate(plan)
    facts = {h: facts_of(plan, h, {0: {"rate_gbps": 200.0}, 1: {"rate_gbps": 200.0}}) for h in HOSTS}
    rows = [{"size": 1 << 30, "out_of_place": {"busbw": 21.15, "algbw": 20.0, "time": 1.0}},
            {"size": 1 << 20, "out_of_place": {"busbw": 2.0, "algbw": 2.0, "time": 1.0}}]    # below nccl_min_size
    nccl = nccl_ok(gate, busbw=21.15)
    nccl["su"] = {"r0a": {"rows": rows, "avg_busbw": 11.6, "errors": [], "hosts": ["a1", "a2"]}}
    result = verdict(plan, gate, before=facts, nccl=nccl)
    assert result["su"]["r0a"]["threshold_gbs"] == 21.15          # 0.9 x 47 x 200 / 400
    assert (result["su"]["r0a"]["avg_busbw_gbs"], result["su"]["r0a"]["ok"]) == (21.15, True)
    assert result["hosts"]["a1"]["nccl"]["threshold_gbs"] == 21.15 and result["quarantine"] == []


def test_retest_names_only_servers_of_the_plan(plan):
    assert new_gate(plan, retest=["a1"])["why"]["a1"] == "named in gpufabric_gate_retest"
    with pytest.raises(MlnxError, match=r"gpufabric_gate_retest: zz not a server of the rail plan \(allowed: the "
                                        r"plan's servers\)"):
        new_gate(plan, retest=["a1", "zz"])
    with pytest.raises(MlnxError, match=r"gpufabric_gate_retest: must be a list of server names, got str"):
        new_gate(plan, retest="a1")


def test_a_world_the_launcher_did_not_make_as_planned_fails_with_its_cause(plan):
    facts = {h: facts_of(plan, h) for h in HOSTS}
    mgmt = {h: "198.19.90.%d" % (11 + i) for i, h in enumerate(HOSTS)}
    nets = {h: "198.19.90.0/24" for h in HOSTS}
    gate = _gate.plan_run(plan, HOSTS, facts, None, None, {"name": "fabric-2026.12"}, None, 106, mgmt=mgmt,
                          networks=nets, bind_to="none")
    world = gate["nccl_pairs"]["worlds"][0]
    first = world["hosts"][0]
    # every member on one management network: the launcher's own TCP keeps to it
    assert world["launch"]["subnet"] == "198.19.90.0/24" and world["launch"]["bind_to"] == "none"
    other = _gate.plan_run(plan, HOSTS, facts, None, None, {"name": "x"}, None, 106, mgmt=mgmt,
                           networks=dict(nets, **{world["hosts"][1]: "198.19.91.0/24"}))
    assert other["nccl_pairs"]["worlds"][0]["launch"]["subnet"] is None

    def errors(result):
        return _gate.nccl_reports(gate, {"pairs": {first: result}, "su": {}})["hosts"][first]["errors"]
    assert errors(launched(world)) == []
    # each rank alone - a world of one (the real binary started without a launcher): the cause named
    assert errors(launched(world, ranks=1)) == [
        "the NCCL world of %s has 1 rank(s) where the plan has 4 (2 hosts x 2 GPUs): each rank ran alone, a world "
        "of one: they were not started by a launcher that nccl-tests' MPI talks to (nccl-tests built without MPI=1, "
        "or against another MPI than the launcher's)" % ", ".join(world["hosts"])]
    # under mpirun -np 4 every process of a build without MPI=1 prints its own report of one rank, Rank 0: four rank
    # lines in the output, as many as the plan's - the numbers tell them apart from a world of four
    alone = launched(world)
    alone["launch"]["report"]["ranks"] = [{"rank": 0, "host": h, "device": 0} for h in world["hosts"] * 2]
    assert errors(alone) == [
        "the NCCL world of %s has 4 report(s) of one rank each where the plan has 4 (2 hosts x 2 GPUs): each rank ran "
        "alone, a world of one: they were not started by a launcher that nccl-tests' MPI talks to (nccl-tests built "
        "without MPI=1, or against another MPI than the launcher's)" % ", ".join(world["hosts"])]
    # mpirun stopped the others when the first of them exited 1 (NCCL_TESTS_MIN_BW: a world of one's bus bandwidth
    # is 0): the parser's last report of the output has one rank, two more came before it - named all the same
    cut = launched(world, ranks=1, rc=1, stderr="Primary job  terminated normally, but 1 process returned\n")
    cut["launch"]["report"]["runs"] = [{"ranks": [{"rank": 0}], "rows": []}] * 2 + [cut["launch"]["report"]]
    assert errors(cut)[0].startswith("the NCCL world of %s has 3 report(s) of one rank each where the plan has 4 (2 "
                                     "hosts x 2 GPUs): each rank ran alone, a world of one" % ", ".join(world["hosts"]))
    # four ranks, one of them twice and rank 3 missing: not the plan's world either
    twice = launched(world)
    twice["launch"]["report"]["ranks"][3]["rank"] = 2
    assert errors(twice)[0].endswith("has 4 rank(s) where the plan has 4 (2 hosts x 2 GPUs): the launcher started "
                                     "another world than the plan's")
    # one rank short of the plan, and one over: another world
    for count in (3, 5):
        assert errors(launched(world, ranks=count))[0].endswith(
            "has %d rank(s) where the plan has 4 (2 hosts x 2 GPUs): the launcher started another world than the "
            "plan's" % count)
    # mpirun could not start a member's daemon: no report, its own words (banner lines dropped)
    stderr = ("--------------------------------------------------------------------------\n"
              "ORTE was unable to reliably start one or more daemons.\n"
              "This usually is caused by:\n")
    result = {"launch": {"rc": 1, "stopped": False, "stderr": stderr, "report": None}}
    assert errors(result) == ["the launcher on %s exited 1: ORTE was unable to reliably start one or more daemons. / "
                              "This usually is caused by:" % first]
    # a full report whose NCCL_TESTS_MIN_BW check failed (nccl-tests exits 1; a site's own NCCL_TESTS_MIN_BW in the
    # ranks' environment): the bandwidth is the verdict, not mpirun's words
    assert errors(launched(world, rc=1, stderr="Primary job  terminated normally, but 1 process returned")) == []
    # not started (mpirun missing), or stopped at the timeout
    missing = {"launch": {"rc": None, "missing": True, "error": "mpirun is not installed on this host (Open MPI)",
                          "report": None, "stderr": ""}}
    assert errors(missing) == ["%s could not start the world's launcher: mpirun is not installed on this host "
                               "(Open MPI)" % first]
    assert errors(launched(world, stopped=True)) == [
        "the launcher on %s did not finish within the gate's timeout and was stopped" % first]
    assert errors(None) == ["%s did not run the world's launcher" % first]


def test_an_infiniband_world_has_no_roce_gid_index_or_traffic_class(plan):
    ib = {h: {i: dict(f, link_layer="InfiniBand") for i, f in facts_of(plan, h).items()} for h in HOSTS}
    gate = _gate.plan_run(plan, HOSTS, ib, None, None, {"name": "fabric-2026.12"}, None, 106)
    env = gate["nccl_pairs"]["worlds"][0]["env"]
    assert env == {"NCCL_COMM_ID": env["NCCL_COMM_ID"], "NCCL_TESTS_SPLIT": "MOD 2"}
    # one RoCE rail in the world: RoCE's settings (NCCL applies them to its RoCE devices)
    first = gate["nccl_pairs"]["worlds"][0]["hosts"][0]
    mixed = dict(ib, **{first: facts_of(plan, first)})
    env = _gate.plan_run(plan, HOSTS, mixed, None, None, {"name": "x"}, None, 106)["nccl_pairs"]["worlds"][0]["env"]
    assert (env["NCCL_IB_GID_INDEX"], env["NCCL_IB_TC"]) == ("3", "106")


def test_srun_worlds_name_each_members_slurm_node(plan):
    facts = {h: facts_of(plan, h) for h in HOSTS}
    gate = _gate.plan_run(plan, HOSTS, facts, None, None, {"name": "x"}, None, 106, launcher="srun",
                          bind_to="core", slurm_nodes={"a1": "gpu-a1", "b2": None})
    for key in ("nccl_pairs", "nccl_su"):
        for world in gate[key]["worlds"]:
            launch = world["launch"]
            assert launch["launcher"] == "srun" and launch["bind_to"] == "core"
            # a1 is Slurm's gpu-a1 (gpufabric_drain_slurm_node); the others are nodes of their own names
            assert [c["node"] for c in launch["contexts"]] == [
                {"a1": "gpu-a1"}.get(h, h) for h in world["hosts"]]
    with pytest.raises(MlnxError, match=r"gpufabric_validate_launcher: 'pbs' is not one of mpirun, srun"):
        _gate.plan_run(plan, HOSTS, facts, None, None, {"name": "x"}, None, 106, launcher="pbs")


def test_the_srun_launchers_allocation_errors_fail_its_world(plan):
    facts = {h: facts_of(plan, h) for h in HOSTS}
    gate = _gate.plan_run(plan, HOSTS, facts, None, None, {"name": "x"}, None, 106, launcher="srun")
    world = gate["nccl_pairs"]["worlds"][0]
    first = world["hosts"][0]
    result = launched(world)
    result["launch"]["errors"] = ["Slurm: node %s is idle after the run, it was drained (reason: gpufabric: "
                                  "rollout batch r01)" % first]
    errors = _gate.nccl_reports(gate, {"pairs": {first: result}, "su": {}})["hosts"][first]["errors"]
    assert errors == ["Slurm: node %s is idle after the run, it was drained (reason: gpufabric: rollout batch r01) "
                      "(the world's launcher on %s)" % (first, first)]


def test_the_ssh_ring_goes_through_each_scalable_unit_once():
    # two SUs (the first rail's leaf's su), one of three servers, one of two; an SU of one and a stranger have none
    plan = {"hosts": {"a1": [{"leaf": "l1"}], "a2": [{"leaf": "l1"}], "a3": [{"leaf": "l2"}],
                      "b1": [{"leaf": "l3"}], "b2": [{"leaf": "l3"}], "c1": [{"leaf": "l4"}]},
            "leaves": {"l1": {"su": 1}, "l2": {"su": 1}, "l3": {"su": 2}, "l4": {"su": 3}}}
    assert _gate.ssh_ring(plan, ["a1", "b1", "a2", "c1", "a3", "b2", "zz"]) == {
        "a1": "a2", "a2": "a3", "a3": "a1", "b1": "b2", "b2": "b1"}
    assert _gate.ssh_ring(plan, ["a1"]) == {} and _gate.ssh_ring(plan, []) == {}
