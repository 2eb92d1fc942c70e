"""The validation gate's verdict at each limit and on both sides of it (plugin_utils/_gate.py, docs/validation.md's
table of measures): ib_write_bw (fraction x port rate), ib_write_lat (factor x the run's median, and the absolute
write_lat_usec), the NCCL bus bandwidth per pair and per scalable unit (fraction x GB/s per 400G x rate/400), the
link counters, the PCIe link's speed and width each alone, the reverse direction's perftest jobs, and the NCCL
version - its NCCL_VERSION_CODE in both of nccl.h's schemes - against the matrix's pin.

Every expected value is written out here by hand (the products computed on paper, never with the gate's constants
or functions): a limit "passes when BW >= ..." passes exactly at the limit, "t_avg <= ..." too. The plan is a real
rail plan of four servers, two racks, two rails (a leaf per rack and rail, no uplinks): the pairs are a1 (server) -
a2 (client) and b1 (server) - b2 (client) on both rails, the addresses and interfaces below are that plan's."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _gate
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import plan as rail_plan

HOSTS = ["a1", "a2", "b1", "b2"]
IFACES = ["enp24s0np0", "enp64s0np0"]
FABRIC = {"rails": 2, "addressing": "p2p31", "su_prefix": 26, "racks_per_su": 1, "leaf_name": "{rack}-leaf-rail{rail}",
          "pools": {"rail0": "198.18.0.0/20", "rail1": "198.18.16.0/20"},
          "nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]}, "interface_names": IFACES}
PAIRS = {"a2": "a1", "a1": "a2", "b2": "b1", "b1": "b2"}
GIB = 1073741824


@pytest.fixture(scope="module")
def plan():
    return rail_plan([{"name": n, "rack": "r0" + n[0], "position": int(n[1])} for n in HOSTS], FABRIC)


def fact(rate=400.0, **extra):
    out = {"rdma": "mlx5_0", "port": 1, "rate_gbps": rate, "link_layer": "Ethernet", "state": "up", "mtu": 9000,
           "pcie": {"pci": "0000:18:00.0", "speed": 32.0, "max_speed": 32.0, "width": 16, "max_width": 16},
           "counters": {"link_down_events_phy": 0, "rx_symbol_err_phy": 0},
           "phy": {"source": "ethtool -S", "read_at": 1000.0, "effective_errors": 0, "raw_errors": 0, "link_down": 0,
                   "received_bits": None}}
    out.update(extra)
    return out


def facts(rate=400.0, change=None, at=None):
    """{host: {interface: fact}}; ``change``: {(host, rail): {key: value}} over the healthy fact; ``at``: the PHY
    counters' read time (1000 s; the facts after the traffic are read later)."""
    out = {h: {IFACES[r]: fact(rate, **(change or {}).get((h, r), {})) for r in (0, 1)} for h in HOSTS}
    for rails in out.values():
        for f in rails.values():
            if at is not None and f.get("phy"):
                f["phy"] = dict(f["phy"], read_at=at)
    return out


def later(facts_doc, seconds=100.0):
    return {h: {i: dict(f, phy=dict(f["phy"], read_at=f["phy"]["read_at"] + seconds)) if f.get("phy") else f
                for i, f in rails.items()} for h, rails in facts_doc.items()}


def bw(value):
    report = {"results": [{"bytes": 65536, "bw_average": value}], "errors": []}
    return {"test": "ib_write_bw", "rc": 0, "report": report}


def lat(value):
    return {"test": "ib_write_lat", "rc": 0, "report": {"results": [{"bytes": 2, "t_avg": value}], "errors": []}}


def measured(bws=None, lats=None):
    """What each host measured as the client of its direction: bws/lats {(host, rail): value} over 385.6 Gb/s and
    1.7 us."""
    return {h: [{"rail": r, "peer": PAIRS[h], "ping": {"ok": True, "sent": 3, "received": 3},
                 "tests": [bw((bws or {}).get((h, r), 385.6)), lat((lats or {}).get((h, r), 1.7))]} for r in (0, 1)]
            for h in HOSTS}


def nccl_pairs(busbw=None):
    """The pair worlds' rank-0 reports: ``busbw`` {first host of the pair: avg busbw} over 44.5 GB/s."""
    out = {}
    for first, second in (("a1", "a2"), ("b1", "b2")):
        value = (busbw or {}).get(first, 44.5)
        report = {"rows": [{"size": GIB, "out_of_place": {"busbw": value, "algbw": value, "time": 24000.0}}],
                  "avg_busbw": value, "errors": [], "peers": [first, second]}
        out[first] = out[second] = report
    return out


def su_report(hosts, rows):
    return {"hosts": hosts, "errors": [], "avg_busbw": None,
            "rows": [{"size": size, "out_of_place": {"busbw": value, "algbw": value, "time": 1.0}}
                     for size, value in rows]}


def verdict(plan, limits=None, before=None, after=None, bws=None, lats=None, busbw=None, su=None, versions=None,
            nccl_expected="2.23.4-1"):
    limits = dict(_gate.DEFAULTS, **(limits or {}))
    pairs = _gate.plan_run(plan, HOSTS, {}, matrix={"name": "m"})["pairs"]
    before = before or facts()
    return _gate.evaluate(plan, pairs, HOSTS, [], measured(bws, lats), before, later(after or before), {},
                          {"hosts": nccl_pairs(busbw), "su": su or {}}, versions or {}, limits,
                          {"matrix": "m", "nccl_expected": nccl_expected}, 9000)


def failures(result, host):
    return [(f["measure"], f["rail"], f["value"], f["threshold"], f["unit"]) for f in result["hosts"][host]["failures"]]


def quarantined(result):
    return [q["host"] for q in result["quarantine"]]


# ------------------------------------------------------------------------------------------------ ib_write_bw
@pytest.mark.parametrize("value, passes", [(359.9, False), (360.0, True), (360.1, True)])
def test_ib_write_bw_at_0_9_of_400g_is_360_and_360_passes(plan, value, passes):
    result = verdict(plan, bws={("a2", 0): value})
    assert result["hosts"]["a2"]["rails"][0]["write_bw_gbps"] == value
    if passes:
        assert quarantined(result) == [] and result["handover"] == HOSTS
    else:
        # a2's own measure (a2 -> a1) and a1's reverse one: neither host's facts explain it, so both
        assert quarantined(result) == ["a1", "a2"]
        assert failures(result, "a2") == [("ib_write_bw", 0, 359.9, 360.0, "Gb/s")]
        assert failures(result, "a1") == [("ib_write_bw", 0, 359.9, 360.0, "Gb/s")]
        assert result["hosts"]["a2"]["failures"][0]["message"] == (
            "ib_write_bw a2 -> a1 on rail 0 (enp24s0np0): 359.9 Gb/s < 360.0 Gb/s (0.9 x 400 Gb/s port rate) (the "
            "pair could not be split: neither end's own facts explain it)")


@pytest.mark.parametrize("value, passes", [(179.9, False), (180.0, True)])
def test_ib_write_bw_at_a_200g_port_is_180(plan, value, passes):
    result = verdict(plan, before=facts(rate=200.0), bws={("b1", 1): value}, busbw={"a1": 30.0, "b1": 30.0})
    assert (quarantined(result) == []) is passes, result["quarantine"]
    if not passes:
        assert failures(result, "b1") == [("ib_write_bw", 1, 179.9, 180.0, "Gb/s")]


@pytest.mark.parametrize("value, passes", [(46.24, False), (46.25, True), (46.26, True)])
def test_the_bandwidth_limit_is_not_rounded_to_what_the_message_shows(plan, value, passes):
    """0.925 x 50 Gb/s = 46.25 Gb/s. Rounded to one decimal the limit became 46.2 (half to even), and 46.24 Gb/s
    passed below it."""
    result = verdict(plan, limits={"write_bw_fraction": 0.925}, before=facts(rate=50.0), bws={("a2", 1): value},
                     busbw={"a1": 10.0, "b1": 10.0})
    assert (quarantined(result) == []) is passes, result["quarantine"]
    if not passes:
        assert failures(result, "a2") == [("ib_write_bw", 1, 46.24, 46.25, "Gb/s")]
        assert "46.24 Gb/s < 46.25 Gb/s (0.925 x 50 Gb/s port rate)" in result["hosts"]["a2"]["failures"][0]["message"]


# ------------------------------------------------------------------------------------------------ ib_write_lat
# eight measures (4 hosts x 2 rails); seven fixed, b2's rail 1 the one that moves and the largest: the median is
# the mean of the 4th and 5th, 1.6 and 1.8 -> 1.7 us, the limit 1.5 x 1.7 = 2.55 us
SEVEN = {("a1", 0): 1.6, ("a1", 1): 1.6, ("a2", 0): 1.6, ("a2", 1): 1.6, ("b1", 0): 1.8, ("b1", 1): 1.8,
         ("b2", 0): 1.8}


@pytest.mark.parametrize("value, passes", [(2.54, True), (2.55, True), (2.56, False)])
def test_ib_write_lat_at_1_5_x_the_median(plan, value, passes):
    result = verdict(plan, lats={**SEVEN, ("b2", 1): value})
    assert result["run"]["lat_median_usec"] == pytest.approx(1.7)
    assert result["run"]["thresholds"]["write_lat_usec"] == 2.55
    assert result["hosts"]["b2"]["rails"][1]["write_lat_usec"] == value
    if passes:
        assert quarantined(result) == []
    else:
        # latency is the client's measure of its own direction only: b2 (and b1, which the pair cannot clear)
        assert quarantined(result) == ["b1", "b2"]
        assert failures(result, "b2") == [("ib_write_lat", 1, 2.56, 2.55, "us")]
        assert result["hosts"]["b2"]["failures"][0]["message"].startswith(
            "ib_write_lat b2 -> b1 on rail 1 (enp64s0np0): 2.56 us > 2.55 us (1.5 x the fleet median 1.70 us)")


@pytest.mark.parametrize("value, passes", [(2.58, True), (2.59, False)])
def test_the_latency_limit_is_not_rounded_to_two_decimals(plan, value, passes):
    """Median (1.71 + 1.74) / 2 = 1.725 us, limit 1.5 x 1.725 = 2.5875 us: 2.59 is above it. Rounded to two
    decimals the limit was 2.59 and 2.59 passed."""
    seven = {("a1", 0): 1.70, ("a1", 1): 1.70, ("a2", 0): 1.70, ("a2", 1): 1.71, ("b1", 0): 1.74, ("b1", 1): 1.74,
             ("b2", 0): 1.74}
    result = verdict(plan, lats={**seven, ("b2", 1): value})
    assert result["run"]["thresholds"]["write_lat_usec"] == 2.5875
    assert ("b2" in quarantined(result)) is not passes
    if not passes:
        assert failures(result, "b2") == [("ib_write_lat", 1, 2.59, 2.5875, "us")]
        assert "2.59 us > 2.5875 us (1.5 x the fleet median 1.725 us)" in result["hosts"]["b2"]["failures"][0]["message"]


@pytest.mark.parametrize("value, passes", [(4.99, True), (5.0, True), (5.01, False)])
def test_ib_write_lat_against_the_absolute_limit(plan, value, passes):
    """write_lat_usec 5.0 replaces the median's limit (1.5 x 1.7 = 2.55, which 4.99 is far above)."""
    result = verdict(plan, limits={"write_lat_usec": 5.0}, lats={("a1", 0): value})
    assert result["run"]["thresholds"]["write_lat_usec"] == 5.0
    if passes:
        assert quarantined(result) == []
    else:
        assert quarantined(result) == ["a1", "a2"]
        assert failures(result, "a1") == [("ib_write_lat", 0, 5.01, 5.0, "us")]
        assert result["hosts"]["a1"]["failures"][0]["message"].startswith(
            "ib_write_lat a1 -> a2 on rail 0 (enp24s0np0): 5.01 us > 5.00 us (write_lat_usec)")


# ------------------------------------------------------------------------------------------------ NCCL, pairs
@pytest.mark.parametrize("value, passes", [(42.29, False), (42.3, True), (42.31, True)])
def test_nccl_busbw_at_0_9_x_47_is_42_3_per_400g_rail(plan, value, passes):
    result = verdict(plan, busbw={"b1": value})
    assert result["hosts"]["b1"]["nccl"]["threshold_gbs"] == 42.3
    assert result["run"]["thresholds"]["nccl_busbw_per_rail_gbs"] == 42.3
    assert "nccl_busbw_host_gbs" not in result["run"]["thresholds"]              # no limit is per host
    if passes:
        assert quarantined(result) == []
    else:
        assert quarantined(result) == ["b1", "b2"]                               # the pair's world, not a1/a2
        assert failures(result, "b2") == [("nccl_busbw", None, 42.29, 42.3, "GB/s")]
        assert result["hosts"]["b1"]["failures"][0]["message"] == (
            "NCCL all_reduce_perf of b1 with b2: average bus bandwidth 42.29 GB/s < 42.3 GB/s per rail (0.9 x 47 GB/s "
            "per 400G rail) (the run could not be split: no host's own facts explain it)")


@pytest.mark.parametrize("value, passes", [(21.14, False), (21.15, True)])
def test_nccl_busbw_at_a_200g_port_is_21_15(plan, value, passes):
    """0.9 x 47 x 200/400 = 21.15 GB/s."""
    result = verdict(plan, before=facts(rate=200.0), busbw={"a1": value, "b1": 30.0})
    assert result["hosts"]["a1"]["nccl"]["threshold_gbs"] == 21.15
    assert result["run"]["thresholds"]["nccl_busbw_per_rail_gbs"] == 21.15
    assert (quarantined(result) == []) is passes
    if not passes:
        assert failures(result, "a2") == [("nccl_busbw", None, 21.14, 21.15, "GB/s")]
        assert "21.14 GB/s < 21.15 GB/s per rail (0.9 x 47 GB/s per 400G rail x 200/400 Gb/s)" in \
            result["hosts"]["a2"]["failures"][0]["message"]


def test_an_nccl_stage_that_was_not_run_fails_nobody_and_a_silent_rank_0_fails_its_world(plan):
    """gpufabric_validate_nccl off: the role passes the stage as None - no report, no failure (it quarantined every
    paired server as "rank 0 reported nothing"). A stage that ran whose rank 0 registered nothing still fails."""
    gate = _gate.plan_run(plan, HOSTS, {}, matrix={"name": "m"})
    assert _gate.nccl_reports(gate, {"pairs": None, "su": None}) == {"hosts": {}, "su": {}}
    ran = _gate.nccl_reports(gate, {"pairs": {}, "su": None})
    assert sorted(ran["hosts"]) == HOSTS and ran["su"] == {}
    assert ran["hosts"]["a2"]["errors"] == ["a1 did not run the world's launcher"]
    assert ran["hosts"]["a2"]["peers"] == ["a1", "a2"]
    pairs = gate["pairs"]
    result = _gate.evaluate(plan, pairs, HOSTS, [], measured(), facts(), facts(at=1100.0), {}, {"hosts": {}, "su": {}}, {},
                            dict(_gate.DEFAULTS), {}, 9000)
    assert quarantined(result) == [] and [result["hosts"][h]["nccl"] for h in HOSTS] == [None] * 4
    result = _gate.evaluate(plan, pairs, HOSTS, [], measured(), facts(), facts(at=1100.0), {}, ran, {}, dict(_gate.DEFAULTS),
                            {}, 9000)
    assert quarantined(result) == HOSTS
    assert failures(result, "b2") == [("nccl_busbw", None, None, None, None)]


# ------------------------------------------------------------------------------------------------ NCCL, SU
def test_the_su_average_takes_the_rows_of_1_gib_and_up_and_passes_at_its_floor(plan):
    """Rows 512 MiB (50.0, left out), 1 GiB (40.0) and 2 GiB (44.6): (40.0 + 44.6) / 2 = 42.3 GB/s, the floor."""
    su = {"1": su_report(["a1", "a2"], [(536870912, 50.0), (GIB, 40.0), (2 * GIB, 44.6)])}
    result = verdict(plan, su=su)
    row = result["su"]["1"]
    assert (row["avg_busbw_gbs"], row["threshold_gbs"], row["ok"]) == (42.3, 42.3, True)
    assert [r["size"] for r in row["rows"]] == [536870912, GIB, 2 * GIB]          # the plot keeps every row


def test_an_su_below_its_floor_fails_its_row_and_quarantines_none_of_its_hosts(plan):
    """(40.0 + 44.58) / 2 = 42.29 GB/s < 42.3: the SU row fails. The SU's world cannot name a host (its hosts'
    pairs do that, and passed here): a1 and a2 keep their own verdict and are handed over."""
    su = {"1": su_report(["a1", "a2"], [(GIB, 40.0), (2 * GIB, 44.58)]),
          "2": su_report(["b1", "b2"], [(GIB, 45.0)])}
    result = verdict(plan, su=su)
    assert (result["su"]["1"]["avg_busbw_gbs"], result["su"]["1"]["ok"]) == (42.29, False)
    assert (result["su"]["2"]["avg_busbw_gbs"], result["su"]["2"]["ok"]) == (45.0, True)
    assert quarantined(result) == [] and result["handover"] == HOSTS
    assert [result["hosts"][h]["status"] for h in ("a1", "a2")] == ["passed", "passed"]
    assert [result["hosts"][h]["failures"] for h in ("a1", "a2")] == [[], []]


def test_an_su_of_200g_hosts_is_held_to_the_200g_floor(plan):
    """0.9 x 47 x 200/400 = 21.15 GB/s; an SU of 200G hosts at 21.2 GB/s passes (it was held to 400G's 42.3)."""
    su = {"1": su_report(["a1", "a2"], [(GIB, 21.2)]), "2": su_report(["b1", "b2"], [(GIB, 21.1)])}
    result = verdict(plan, before=facts(rate=200.0), busbw={"a1": 30.0, "b1": 30.0}, su=su)
    assert (result["su"]["1"]["threshold_gbs"], result["su"]["1"]["ok"]) == (21.15, True)
    assert (result["su"]["2"]["threshold_gbs"], result["su"]["2"]["ok"]) == (21.15, False)


def test_a_failed_su_run_fails_its_row_whatever_its_bandwidth(plan):
    su = {"1": dict(su_report(["a1", "a2"], [(GIB, 46.0)]), errors=["rank 3 did not finish and was stopped"])}
    result = verdict(plan, su=su)
    assert result["su"]["1"]["ok"] is False and result["su"]["1"]["errors"] == ["rank 3 did not finish and was stopped"]
    assert quarantined(result) == []


# ------------------------------------------------------------------------------------------------ ping
def test_an_unanswered_ping_counts_against_both_ends_unless_one_s_facts_explain_it(plan):
    def pinged(after=None):
        pairs = _gate.plan_run(plan, HOSTS, {}, matrix={"name": "m"})["pairs"]
        done = measured()
        done["a2"][0]["ping"] = {"ok": False, "sent": 3, "received": 1}                 # a2 -> a1 on rail 0
        return _gate.evaluate(plan, pairs, HOSTS, [], done, facts(), later(after or facts()), {},
                              {"hosts": nccl_pairs()}, {}, dict(_gate.DEFAULTS), {}, 9000)

    result = pinged()
    assert quarantined(result) == ["a1", "a2"]
    assert failures(result, "a1") == failures(result, "a2") == [("ping", 0, 1, 3, None)]
    assert result["hosts"]["a1"]["failures"][0]["message"] == (
        "ping a2 -> a1 on rail 0 (enp24s0np0): 1 of 3 answered (the pair could not be split: neither end's own facts "
        "explain it)")
    assert (result["hosts"]["a2"]["rails"][0]["ping"], result["hosts"]["a1"]["rails"][0]["ping"]) == (False, True)
    result = pinged(after=facts(change={("a1", 0): {"mtu": 1500}}))                   # a1's own fact explains it
    assert quarantined(result) == ["a1"]
    assert failures(result, "a1") == [("mtu", 0, 1500, 9000, "B"), ("ping", 0, 1, 3, None)]


# ------------------------------------------------------------------------------------------------ counters
@pytest.mark.parametrize("key, measure, limit", [("link_down_events_phy", "link_flaps", "link_flaps"),
                                                 ("rx_symbol_err_phy", "symbol_errors", "symbol_errors")])
@pytest.mark.parametrize("grew, passes", [(1, True), (2, True), (3, False)])
def test_a_counter_may_grow_by_at_most_its_limit(plan, key, measure, limit, grew, passes):
    before = facts(change={("b2", 0): {"counters": {"link_down_events_phy": 5, "rx_symbol_err_phy": 5}}})
    counters = {"link_down_events_phy": 5, "rx_symbol_err_phy": 5}
    counters[key] = 5 + grew
    after = facts(change={("b2", 0): {"counters": counters}})
    result = verdict(plan, limits={limit: 2}, before=before, after=after)
    assert (quarantined(result) == []) is passes
    if not passes:
        assert quarantined(result) == ["b2"]
        assert failures(result, "b2") == [(measure, 0, 3, 2, None)]


# ------------------------------------------------------------------------------------------------ bit error rate
def phy(effective=0, raw=0, down=0, bits=None, **extra):
    """b2 rail 0's PHY counters (read at 1000 s before, 1100 s after the traffic: 100 s at 400G = 4e13 bits)."""
    return {("b2", 0): {"phy": dict({"source": "ethtool -S enp24s0np0", "read_at": 1000.0, "effective_errors": effective,
                                     "raw_errors": raw, "link_down": down, "received_bits": bits}, **extra)}}


def ber_run(plan, after, limits=None, before=None):
    return verdict(plan, limits=limits, before=facts(change=before or phy(raw=1000)), after=facts(change=after))


@pytest.mark.parametrize("raw, passes", [(400001001, False), (400001000, True), (400000999, True), (1000, True)])
def test_raw_ber_at_its_limit_passes_and_one_error_more_fails(plan, raw, passes):
    # 4e8 errors in 4e13 bits is exactly the limit 1e-5 (the counter stood at 1000 before the run)
    result = ber_run(plan, phy(raw=raw))
    row = result["hosts"]["b2"]["rails"][0]["ber"]
    assert (row["bits"], row["bits_from"], row["seconds"]) == (40000000000000, "port rate x window", 100.0)
    assert row["raw_errors"] == raw - 1000
    assert (quarantined(result) == []) is passes
    if not passes:
        assert quarantined(result) == ["b2"]
        assert failures(result, "b2") == [("raw_ber", 0, 400000001 / 4e13, 1e-5, "errors per bit")]
        assert failures(result, "b2")[0][2] > 1e-5
        message = result["hosts"]["b2"]["failures"][0]["message"]
        assert message == ("b2 rail 0 (enp24s0np0): raw (pre-FEC) BER 1.000000003e-05 > 1.000000000e-05 (400000001 bits corrected "
                           "by FEC in 4.00e+13 bits, ethtool -S enp24s0np0): a marginal cable, transceiver or port")


def test_the_exact_limit_of_raw_ber_is_a_pass():
    assert 400000000 / 40000000000000 == 1e-5          # the test above lands on the limit itself, not next to it


@pytest.mark.parametrize("effective, limit, failed", [
    (0, 0, []), (1, 0, [("effective_errors", 0, 1, 0, None)]),
    (1, 1, []), (2, 1, [("effective_errors", 0, 2, 1, None)])])
def test_errors_fec_could_not_correct(plan, effective, limit, failed):
    result = ber_run(plan, phy(effective=effective, raw=1000), limits={"effective_errors": limit})
    assert failures(result, "b2") == failed


@pytest.mark.parametrize("effective, failed", [(40, []), (41, [("effective_ber", 0, 41 / 4e13, 1e-12, "errors per bit")])])
def test_effective_ber_at_its_limit(plan, effective, failed):
    # with effective_errors relaxed, 40 errors in 4e13 bits is 1e-12 exactly: the limit itself passes
    result = ber_run(plan, phy(effective=effective, raw=1000), limits={"effective_errors": 1000})
    assert failures(result, "b2") == failed


def test_the_report_certifies_a_bound_for_the_window(plan):
    result = ber_run(plan, phy(raw=1000))
    ber = result["hosts"]["b2"]["rails"][0]["ber"]
    # no error in 4e13 bits: at 95 % the effective BER is below -ln(0.05) / 4e13 = 7.49e-14
    assert ber["certified_ber"] == pytest.approx(2.9957322735539904 / 4e13, rel=1e-9)
    assert (ber["effective_ber"], ber["raw_ber"], ber["moved"], ber["error"]) == (0.0, 0.0, False, None)
    assert ber["before"] == {"effective_errors": 0, "raw_errors": 1000, "link_down": 0, "received_bits": None}
    assert result["run"]["thresholds"]["raw_ber"] == 1e-5 and result["run"]["thresholds"]["ber_confidence"] == 0.95


def test_a_received_bits_counter_is_preferred_to_rate_times_window(plan):
    result = ber_run(plan, phy(raw=1000 + 2 * 10 ** 8, bits=10 ** 15 + 2 * 10 ** 13),
                     before=phy(raw=1000, bits=10 ** 15))
    ber = result["hosts"]["b2"]["rails"][0]["ber"]
    assert (ber["bits"], ber["bits_from"], ber["raw_ber"]) == (2 * 10 ** 13, "received bits counter", 1e-5)
    assert quarantined(result) == []


@pytest.mark.parametrize("after, words", [
    (phy(raw=10), "ethtool -S enp24s0np0: the counters went back during the run (cleared, or the driver reloaded)"),
    (phy(error="no rx_pcs_symbol_err_phy (the mlx5 PHY statistical counters)"),
     "ethtool -S enp24s0np0 after the traffic: no rx_pcs_symbol_err_phy (the mlx5 PHY statistical counters)"),
    ({("b2", 0): {"phy": None}}, "the PHY counters were not read after the traffic"),
])
def test_counters_that_cannot_bound_the_ber_fail_closed(plan, after, words):
    result = ber_run(plan, after)
    assert quarantined(result) == ["b2"]
    assert failures(result, "b2") == [("phy_counters", 0, None, None, None)]
    assert result["hosts"]["b2"]["failures"][0]["message"] == (
        "b2 rail 0 (enp24s0np0): the link's error counters cannot bound its BER: " + words)


@pytest.mark.parametrize("down, passes", [(0, True), (1, False)])
def test_infiniband_link_downs_come_from_mlxlink(plan, down, passes):
    # an IPoIB netdev's ethtool -S has no PHY counters: mlxlink's Link Down Counter counts the flaps
    before = dict(phy(raw=1000)[("b2", 0)], counters={})
    after = dict(phy(raw=1000, down=down)[("b2", 0)], counters={})
    result = verdict(plan, before=facts(change={("b2", 0): before}), after=facts(change={("b2", 0): after}))
    assert failures(result, "b2") == ([] if passes else [("link_flaps", 0, 1, 0, None)])


@pytest.mark.parametrize("errors, bound", [(0, 2.9957322735539904), (1, 4.743864518390577), (2, 6.295793621871988),
                                           (10, 16.962219235721903), (1000, 1053.6031221333046)])
def test_poisson_upper_bound(errors, bound):
    assert _gate.poisson_upper(errors, 0.95) == pytest.approx(bound, rel=1e-9)


def test_poisson_upper_bound_beyond_a_thousand_errors_is_close_to_the_exact_one():
    assert _gate.poisson_upper(1001, 0.95) == pytest.approx(1054.6, rel=1e-4)
    assert _gate.poisson_upper(0, 0.5) == pytest.approx(0.6931471805599453, rel=1e-9)      # ln 2


def test_an_absolute_latency_limit_of_0_is_refused_not_read_as_unset():
    with pytest.raises(_gate.GateError, match=r"thresholds.write_lat_usec: 0 is not allowed \(an absolute latency"):
        _gate.thresholds({}, {"write_lat_usec": 0})
    assert _gate.thresholds({}, {"write_lat_usec": 0.5})["write_lat_usec"] == 0.5


def test_every_pair_of_a_host_on_a_rail_is_judged_not_only_the_last(plan):
    # a1 meets a2 (300 Gb/s, below 360) and then b1 on rail 0 in one run: the first pair's failure is judged -
    # before, the second result replaced the first in the verdict's index and the failure was never seen
    done = measured()
    done["a1"] = [dict(done["a1"][0], tests=[bw(300.0), lat(1.7)]), dict(done["a1"][0], peer="b1")] + done["a1"][1:]
    pairs = _gate.plan_run(plan, HOSTS, {}, matrix={"name": "m"})["pairs"]
    result = _gate.evaluate(plan, pairs, HOSTS, [], done, facts(), later(facts()), {}, {"hosts": nccl_pairs(None),
                            "su": {}}, {}, dict(_gate.DEFAULTS), {"matrix": "m"}, 9000)
    row = result["hosts"]["a1"]["rails"][0]
    assert row["peers"] == ["a2", "b1"] and row["write_bw_gbps"] == 300.0
    assert ("ib_write_bw", 0, 300.0, 360.0, "Gb/s") in failures(result, "a1")
    assert "ib_write_bw a1 -> a2 on rail 0 (enp24s0np0): 300.0 Gb/s < 360.0 Gb/s" in \
        result["hosts"]["a1"]["failures"][0]["message"]


@pytest.mark.parametrize("value", [0, 1, 1.5, -0.1, True, "0.95"])
def test_ber_confidence_is_strictly_between_0_and_1(value):
    with pytest.raises(_gate.GateError, match="thresholds.ber_confidence"):
        _gate.thresholds({}, {"ber_confidence": value})


# ------------------------------------------------------------------------------------------------ PCIe
@pytest.mark.parametrize("link, failure, words", [
    ({"speed": 32.0, "max_speed": 32.0, "width": 8, "max_width": 16}, (8, 16, "lanes"),
     "at 32 GT/s x8, the device can 32 GT/s x16 (narrower)"),
    ({"speed": 16.0, "max_speed": 32.0, "width": 16, "max_width": 16}, (16.0, 32.0, "GT/s"),
     "at 16 GT/s x16, the device can 32 GT/s x16 (slower)"),
    ({"speed": 16.0, "max_speed": 32.0, "width": 8, "max_width": 16}, (16.0, 32.0, "GT/s"),
     "at 16 GT/s x8, the device can 32 GT/s x16 (slower and narrower)"),
    ({"speed": 32.0, "max_speed": 32.0, "width": 16, "max_width": 16}, None, None),
    ({"speed": 2.5, "max_speed": 2.5, "width": 1, "max_width": 1}, None, None),     # a x1 card at its own best
    ({"speed": None, "max_speed": 32.0, "width": 8, "max_width": 16}, (8, 16, "lanes"),    # speed unreadable
     "at None GT/s x8, the device can 32 GT/s x16 (narrower)"),
    ({"speed": 16.0, "max_speed": 32.0, "width": None, "max_width": 16}, (16.0, 32.0, "GT/s"),
     "at 16 GT/s xNone, the device can 32 GT/s x16 (slower)"),
    ({"speed": None, "max_speed": None, "width": None, "max_width": None}, None, None),
])
def test_the_pcie_link_s_speed_and_width_are_each_checked_alone(plan, link, failure, words):
    after = facts(change={("a1", 0): {"pcie": dict(link, pci="0000:18:00.0")}})
    result = verdict(plan, after=after)
    if failure is None:
        assert quarantined(result) == []
    else:
        assert quarantined(result) == ["a1"] and failures(result, "a2") == []
        assert failures(result, "a1") == [("pcie", 0) + failure]
        assert result["hosts"]["a1"]["failures"][0]["message"] == \
            "a1 rail 0 (enp24s0np0): PCIe 0000:18:00.0 link " + words


# ------------------------------------------------------------------------------------------------ jobs
HAND_PAIRS = {"rounds": [{"round": 1, "pairs": [
    {"rail": 0, "server": "s", "client": "c", "server_address": "198.18.0.1", "client_address": "198.18.0.3",
     "server_interface": "eth-s0", "client_interface": "eth-c0"},
    {"rail": 2, "server": "c", "client": "x", "server_address": "198.18.32.3", "client_address": "198.18.32.5",
     "server_interface": "eth-c2", "client_interface": "eth-x2"}]}]}


def test_forward_the_pair_s_server_serves_and_its_client_measures():
    assert _gate.jobs(HAND_PAIRS, "s", 1, "forward") == {
        "serve": [{"rail": 0, "interface": "eth-s0", "port": 18515, "tests": ["ib_write_bw", "ib_write_lat"]}],
        "measure": []}
    assert _gate.jobs(HAND_PAIRS, "c", 1, "forward") == {
        "serve": [{"rail": 2, "interface": "eth-c2", "port": 18535, "tests": ["ib_write_bw", "ib_write_lat"]}],
        "measure": [{"rail": 0, "interface": "eth-c0", "port": 18515, "tests": ["ib_write_bw", "ib_write_lat"],
                     "peer": "s", "peer_address": "198.18.0.1"}]}


def test_reverse_the_pair_s_client_serves_and_its_server_measures():
    assert _gate.jobs(HAND_PAIRS, "s", 1, "reverse") == {
        "serve": [],
        "measure": [{"rail": 0, "interface": "eth-s0", "port": 18515, "tests": ["ib_write_bw", "ib_write_lat"],
                     "peer": "c", "peer_address": "198.18.0.3"}]}
    assert _gate.jobs(HAND_PAIRS, "c", 1, "reverse") == {
        "serve": [{"rail": 0, "interface": "eth-c0", "port": 18515, "tests": ["ib_write_bw", "ib_write_lat"]}],
        "measure": [{"rail": 2, "interface": "eth-c2", "port": 18535, "tests": ["ib_write_bw", "ib_write_lat"],
                     "peer": "x", "peer_address": "198.18.32.5"}]}
    assert _gate.jobs(HAND_PAIRS, "x", 1, "reverse") == {
        "serve": [{"rail": 2, "interface": "eth-x2", "port": 18535, "tests": ["ib_write_bw", "ib_write_lat"]}],
        "measure": []}
    assert _gate.jobs(HAND_PAIRS, "s", 2, "reverse") == {"serve": [], "measure": []}     # no round 2


@pytest.mark.parametrize("base, ports", [(1024, (1024, 1044)), (28515, (28515, 28535)), (65000, (65000, 65020))])
def test_the_port_base_moves_every_rail_s_servers(base, ports):
    jobs = _gate.jobs(HAND_PAIRS, "c", 1, "forward", port_base=base)
    assert (jobs["measure"][0]["port"], jobs["serve"][0]["port"]) == ports


@pytest.mark.parametrize("base", [1023, 65001, "18515", True, None])
def test_a_port_base_outside_1024_65000_is_refused_naming_the_variable(base):
    with pytest.raises(_gate.GateError) as err:
        _gate.jobs(HAND_PAIRS, "c", 1, "forward", port_base=base)
    assert str(err.value).startswith("gpufabric_validate_port_base: %r is not a TCP port for perftest's first server "
                                     "(allowed: a whole number 1024-65000" % (base,))


def test_both_directions_of_the_real_plan_s_pair(plan):
    pairs = _gate.plan_run(plan, HOSTS, {}, matrix={"name": "m"})["pairs"]
    both = ["ib_write_bw", "ib_write_lat"]
    assert _gate.jobs(pairs, "a2", 1, "forward") == {"serve": [], "measure": [
        {"rail": 0, "interface": "enp24s0np0", "port": 18515, "tests": both, "peer": "a1", "peer_address": "198.18.0.1"},
        {"rail": 1, "interface": "enp64s0np0", "port": 18525, "tests": both, "peer": "a1",
         "peer_address": "198.18.16.1"}]}
    assert _gate.jobs(pairs, "a1", 1, "reverse") == {"serve": [], "measure": [
        {"rail": 0, "interface": "enp24s0np0", "port": 18515, "tests": both, "peer": "a2", "peer_address": "198.18.0.3"},
        {"rail": 1, "interface": "enp64s0np0", "port": 18525, "tests": both, "peer": "a2",
         "peer_address": "198.18.16.3"}]}
    assert [j["rail"] for j in _gate.jobs(pairs, "a2", 1, "reverse")["serve"]] == [0, 1]
    assert _gate.jobs(pairs, "a1", 1, "forward")["measure"] == []


# ------------------------------------------------------------------------------------------------ NCCL version
def version_of(code):
    """What the gate reads of an nccl-tests -J file whose library is NCCL_VERSION_CODE ``code``."""
    return parse("nccl_tests", {"nccl_version": code, "results": []})["nccl_version"]


@pytest.mark.parametrize("code, version", [
    # nccl.h.in (NVIDIA/nccl): NCCL_VERSION(X,Y,Z) is X*1000 + Y*100 + Z while X <= 2 and Y <= 8, else X*10000 + ...
    (2804, "2.8.4"), (2899, "2.8.99"), (2000, "2.0.0"),
    (20900, "2.9.0"), (20906, "2.9.6"), (22303, "2.23.3"), (22304, "2.23.4"), (22305, "2.23.5"), (22400, "2.24.0"),
    (30000, "3.0.0"),
])
def test_the_nccl_version_code_in_either_scheme(code, version):
    assert version_of(code) == version


@pytest.mark.parametrize("code, passes", [(22303, False), (22304, True), (22305, False), (22400, False),
                                          (2234, False)])       # 2.23.4 coded in the old scheme is 2.2.34
def test_the_nccl_version_against_the_matrix_s_2_23_4_1(plan, code, passes):
    versions = {h: {"nccl": version_of(22304)} for h in HOSTS}
    versions["b1"] = {"nccl": version_of(code)}
    result = verdict(plan, versions=versions)
    if passes:
        assert quarantined(result) == []
    else:
        assert quarantined(result) == ["b1"]                 # the library is the host's own: nobody else's
        got = version_of(code)
        assert failures(result, "b1") == [("nccl_version", None, got, "2.23.4-1", None)]
        assert result["hosts"]["b1"]["failures"][0]["message"] == "b1: NCCL %s, the matrix m pins 2.23.4-1" % got


@pytest.mark.parametrize("pin, code, passes", [("2.8.4-1", 2804, True), ("2.8.4-1", 2803, False),
                                               ("2.8.4-1", 2805, False), ("2.9.0-1", 20900, True),
                                               ("2.8.4-1", 20900, False), ("2.23.4", 22304, True)])
def test_an_old_scheme_library_and_a_pin_without_its_package_revision(plan, pin, code, passes):
    versions = {h: {"nccl": version_of(code)} for h in HOSTS}
    result = verdict(plan, versions=versions, nccl_expected=pin)
    assert (quarantined(result) == []) is passes
    if not passes:
        assert quarantined(result) == HOSTS
