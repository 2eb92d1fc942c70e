"""The leaf's side of each rail's bit error rate (plugin_utils/_gate.py: leaf_ports, leaf_link_ber, evaluate's
``leaf_phy``): the host -> leaf direction judged from the leaf port's own PHY counters (nvue_info ``gather: [phy]``
read before and after the traffic) by the host side's limits, attributed to the host; a port the switch has no
counters for is shown "unavailable" with the reason, never a pass and never a quarantine; a leaf of the play that
answered without the port's counters fails closed.

The plan is test_gate_boundaries' (four servers, two racks, two rails): b2's rail 0 is cabled to r0b-leaf-rail0
swp2, its rail 1 to r0b-leaf-rail1 swp2. Expected values are written by hand: 4e13 bits received by the port in the
window (10**15 before, 1.04e15 after), so raw BER 1e-5 is 4e8 corrected bits exactly."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _gate
from test_gate_boundaries import HOSTS, facts, failures, later, measured, nccl_pairs, quarantined
from test_gate_boundaries import plan  # noqa: F401 pylint: disable=unused-import  # the fixture, used by name

LEAF = "r0b-leaf-rail0"
ALL_LEAVES = ["r0a-leaf-rail0", "r0a-leaf-rail1", "r0b-leaf-rail0", "r0b-leaf-rail1"]
START = 10 ** 15
WINDOW = 4 * 10 ** 13


def counters(bits=START, raw=0, effective=0):
    return {"received_bits": bits, "effective_errors": effective, "symbol_errors": effective, "raw_errors": raw,
            "raw_errors_lanes": [raw, 0, 0, 0], "raw_ber": 0.0, "effective_ber": 0.0, "symbol_ber": 0.0,
            "minutes_since_clear": 10.0}


def reads(b2=None, ports=("swp1", "swp2"), unavailable=None):
    """Every leaf's nvue_info result with ``gather: [phy]``: healthy counters on every port, ``b2``: b2 rail 0's
    port (swp2 on r0b-leaf-rail0) instead."""
    out = {}
    for leaf in ALL_LEAVES:
        phy = {port: counters() for port in ports}
        if leaf == LEAF and b2 is not None:
            phy["swp2"] = b2
        out[leaf] = {"changed": False, "phy": phy,
                     "phy_unavailable": dict(unavailable or {}) if leaf == LEAF else {}}
    return out


def grown(result):
    """The reads after the traffic: every healthy port received WINDOW bits more."""
    out = {}
    for leaf, info in result.items():
        phy = dict(info.get("phy") or {})
        for port, value in phy.items():
            if value is not None and value.get("received_bits") == START and not (leaf == LEAF and port == "swp2"):
                phy[port] = dict(value, received_bits=START + WINDOW)
        out[leaf] = dict(info, phy=phy) if "phy" in info else info
    return out


def run(plan, before=None, after=None, limits=None):
    pairs = _gate.plan_run(plan, HOSTS, {}, matrix={"name": "m"})["pairs"]
    before = reads() if before is None else before
    after = grown(reads(counters(START + WINDOW))) if after is None else after
    return _gate.evaluate(plan, pairs, HOSTS, [], measured(), facts(), later(facts()), {},
                          {"hosts": nccl_pairs(), "su": {}}, {}, dict(_gate.DEFAULTS, **(limits or {})),
                          {"matrix": "m"}, 9000, leaf_phy={"before": before, "after": after})


def leaf_ber(result, host="b2", rail=0):
    return result["hosts"][host]["rails"][rail]["leaf_ber"]


def test_the_plan_names_the_tested_servers_leaf_ports_in_the_switch_s_order(plan):
    assert _gate.plan_run(plan, HOSTS, {}, matrix={"name": "m"})["leaf_ports"] == {
        "r0a-leaf-rail0": ["swp1", "swp2"], "r0a-leaf-rail1": ["swp1", "swp2"],
        "r0b-leaf-rail0": ["swp1", "swp2"], "r0b-leaf-rail1": ["swp1", "swp2"]}
    # only the tested: a1 alone (the others passed before, nothing changed) reads swp1 of its two leaves
    previous = {"hosts": {h: {"status": "passed", "fingerprint": _gate.fingerprint(plan["hosts"][h], {}, "m")}
                          for h in ("a2", "b1", "b2")}}
    assert _gate.plan_run(plan, HOSTS, {}, previous, matrix={"name": "m"})["leaf_ports"] == {
        "r0a-leaf-rail0": ["swp1"], "r0a-leaf-rail1": ["swp1"]}


def test_leaf_ports_sort_swp2_before_swp10_and_breakouts_by_lane():
    plan = {"hosts": {"x": [{"rail": 0, "leaf": "l", "leaf_port": "swp10"}, {"rail": 1, "leaf": "l", "leaf_port": "swp2"},
                            {"rail": 2, "leaf": "l", "leaf_port": "swp1s1"}, {"rail": 3, "leaf": "l", "leaf_port": "swp1s0"},
                            {"rail": 4, "leaf": None, "leaf_port": None}]}}
    assert _gate.leaf_ports(plan, ["x"]) == {"l": ["swp1s0", "swp1s1", "swp2", "swp10"]}


def test_a_healthy_leaf_side_certifies_its_own_bound(plan):
    result = run(plan)
    ber = leaf_ber(result)
    assert quarantined(result) == []
    assert (ber["direction"], ber["source"], ber["bits"], ber["bits_from"]) == (
        "host -> leaf", "leaf r0b-leaf-rail0 swp2 (NVUE)", 40000000000000, "received bits counter")
    assert (ber["raw_ber"], ber["effective_ber"], ber["error"], ber["moved"]) == (0.0, 0.0, None, False)
    # no error in 4e13 bits: below -ln(0.05) / 4e13 at 95 %
    assert ber["certified_ber"] == pytest.approx(2.9957322735539904 / 4e13, rel=1e-9)
    assert result["hosts"]["b2"]["rails"][0]["ber"]["direction"] == "leaf -> host"


@pytest.mark.parametrize("raw, passes", [(400000000, True), (400000001, False), (399999999, True)])
def test_the_leaf_port_s_raw_ber_at_its_limit_passes_and_one_error_more_fails(plan, raw, passes):
    result = run(plan, before=reads(counters(raw=7)), after=grown(reads(counters(START + WINDOW, raw=7 + raw))))
    assert leaf_ber(result)["raw_errors"] == raw
    assert (quarantined(result) == []) is passes
    if not passes:
        # the host whose cable it is, alone: its peer b1's rails and its own host side are clean
        assert quarantined(result) == ["b2"]
        assert failures(result, "b2") == [("raw_ber", 0, 400000001 / 4e13, 1e-5, "errors per bit")]
        failure = result["hosts"]["b2"]["failures"][0]
        assert failure["side"] == "leaf"
        assert failure["message"] == (
            "b2 rail 0 (enp24s0np0, received by leaf r0b-leaf-rail0 swp2): raw (pre-FEC) BER 1.000000003e-05 > "
            "1.000000000e-05 (400000001 bits corrected by FEC in 4.00e+13 bits, leaf r0b-leaf-rail0 swp2 (NVUE)): a "
            "marginal cable, transceiver or port")


@pytest.mark.parametrize("effective, failed", [(0, []), (1, [("effective_errors", 0, 1, 0, None)])])
def test_an_error_fec_could_not_correct_at_the_leaf_fails_the_host(plan, effective, failed):
    result = run(plan, after=grown(reads(counters(START + WINDOW, effective=effective))))
    assert failures(result, "b2") == failed
    assert [f.get("side") for f in result["hosts"]["b2"]["failures"]] == ["leaf"] * len(failed)


def test_a_port_the_switch_has_no_counters_for_is_unavailable_never_a_pass_nor_a_failure(plan):
    reason = ("the switch answered that it has no link phy-detail for this port (Cumulus Linux 5.12.0): a "
              "Spectrum-1 switch has none")
    before = reads(None, unavailable={"swp2": reason})
    before[LEAF]["phy"]["swp2"] = None
    after = grown(reads(None, unavailable={"swp2": reason}))
    after[LEAF]["phy"]["swp2"] = None
    result = run(plan, before=before, after=after)
    assert leaf_ber(result) == {"source": "leaf r0b-leaf-rail0 swp2 (NVUE)",
                                "unavailable": "leaf r0b-leaf-rail0 swp2 has no PHY counters: " + reason}
    assert quarantined(result) == []
    assert leaf_ber(result, "b1")["error"] is None          # swp1 of the same leaf was read


def test_a_leaf_not_in_the_play_is_unavailable(plan):
    before, after = reads(), grown(reads(counters(START + WINDOW)))
    del before[LEAF], after[LEAF]
    result = run(plan, before=before, after=after)
    assert leaf_ber(result)["unavailable"] == (
        "leaf r0b-leaf-rail0's PHY counters were not read in this run (the leaf is not in the play)")
    assert quarantined(result) == []
    assert "unavailable" not in leaf_ber(result, "a1")


def test_without_leaf_reads_every_rail_s_leaf_side_is_unavailable(plan):
    pairs = _gate.plan_run(plan, HOSTS, {}, matrix={"name": "m"})["pairs"]
    result = _gate.evaluate(plan, pairs, HOSTS, [], measured(), facts(), later(facts()), {},
                            {"hosts": nccl_pairs(), "su": {}}, {}, dict(_gate.DEFAULTS), {"matrix": "m"}, 9000)
    assert {r["leaf_ber"]["unavailable"].split("'")[0] for h in HOSTS for r in result["hosts"][h]["rails"]} == {
        "leaf r0a-leaf-rail0", "leaf r0a-leaf-rail1", "leaf r0b-leaf-rail0", "leaf r0b-leaf-rail1"}
    assert quarantined(result) == []


def test_a_rail_cabled_to_no_leaf_port_has_no_leaf_side():
    assert _gate.leaf_link_ber({"rail": 0, "interface": "e", "leaf": None, "leaf_port": None}, {}, {}) is None


def failed_read(msg):
    # what a task with failed_when: false registers when nvue_info failed: failed false, the module's message
    return {"changed": False, "failed": False, "msg": msg}


@pytest.mark.parametrize("side, broken, words", [
    ("after", failed_read("r0b-leaf-rail0: GET /nvue_v1/interface/swp2/link/phy-detail: HTTP 500"),
     "leaf r0b-leaf-rail0 swp2 (NVUE) after the traffic: the read (nv show interface swp2 link phy) failed: "
     "r0b-leaf-rail0: GET /nvue_v1/interface/swp2/link/phy-detail: HTTP 500"),
    ("before", {"changed": False, "skipped": True},
     "leaf r0b-leaf-rail0 swp2 (NVUE) before the traffic: the read (nv show interface swp2 link phy) failed: its "
     "answer has no PHY counters"),
    ("after", {"changed": False, "phy": {"swp1": counters(START + WINDOW)}, "phy_unavailable": {}},
     "leaf r0b-leaf-rail0 swp2 (NVUE) after the traffic: the leaf's answer has no PHY counters for swp2"),
    ("after", {"changed": False, "phy": {"swp1": counters(START + WINDOW), "swp2": counters(START)}},
     "leaf r0b-leaf-rail0 swp2 (NVUE): no bits counted in the window (no port rate, or no time between the reads)"),
    ("after", {"changed": False, "phy": {"swp1": counters(START + WINDOW), "swp2": counters(START - 1)}},
     "leaf r0b-leaf-rail0 swp2 (NVUE): no bits counted in the window (no port rate, or no time between the reads)"),
    ("after", {"changed": False, "phy": {"swp1": counters(START + WINDOW),
                                         "swp2": dict(counters(START + WINDOW), raw_errors=None)}},
     "leaf r0b-leaf-rail0 swp2 (NVUE): the counters are incomplete"),
])
def test_a_leaf_of_the_play_that_answers_without_the_port_s_counters_fails_closed(plan, side, broken, words):
    before, after = reads(), grown(reads(counters(START + WINDOW)))
    (before if side == "before" else after)[LEAF] = broken
    result = run(plan, before=before, after=after)
    assert "b2" in quarantined(result)
    mine = [f for f in result["hosts"]["b2"]["failures"] if f.get("side") == "leaf"]
    assert [(f["measure"], f["rail"], f["message"]) for f in mine] == [
        ("phy_counters", 0, "b2 rail 0 (enp24s0np0, received by leaf r0b-leaf-rail0 swp2): the link's error "
                            "counters cannot bound its BER: " + words)]


def test_counters_that_went_back_at_the_leaf_fail(plan):
    result = run(plan, before=reads(counters(raw=50)), after=grown(reads(counters(START + WINDOW, raw=49))))
    assert failures(result, "b2") == [("phy_counters", 0, None, None, None)]
    assert result["hosts"]["b2"]["failures"][0]["message"].endswith(
        "leaf r0b-leaf-rail0 swp2 (NVUE): the counters went back during the run (cleared, or the driver reloaded)")


def test_a_failing_leaf_side_explains_the_pair_s_slow_bandwidth(plan):
    # b2's marginal cable (leaf side) and a slow b2 -> b1: counted against b2 alone, not b1
    pairs = _gate.plan_run(plan, HOSTS, {}, matrix={"name": "m"})["pairs"]
    done = measured()
    done["b2"][0]["tests"][0]["report"]["results"][0]["bw_average"] = 300.0
    result = _gate.evaluate(plan, pairs, HOSTS, [], done, facts(), later(facts()), {},
                            {"hosts": nccl_pairs(), "su": {}}, {}, dict(_gate.DEFAULTS), {"matrix": "m"}, 9000,
                            leaf_phy={"before": reads(), "after": grown(reads(counters(START + WINDOW,
                                                                                       raw=10 ** 9)))})
    assert quarantined(result) == ["b2"]
    assert [f[0] for f in failures(result, "b2")] == ["raw_ber", "ib_write_bw"]
