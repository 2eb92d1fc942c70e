# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The emulator's PHY counters (GET /interface/<swp>/link/phy-detail, /link/phy/health; tests/nvue/README.md) and
nvue_info's gather phy against them, over REST, over the CLI and as a playbook runs the module.

Counters move with real time: every bound below is computed from the times taken around each request and the times
the emulator recorded (its boot, a plant) - the same clock on the same host - never from a sleep's length."""
import math
import time

import pytest
import yaml
from _roleplay import run
from test_cli_transport import local

from nvue_helpers import PASSWORD, rest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue import gather
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_phy import parse_phy

SPEED = 400 * 10 ** 9     # the emulator's ports are 400G unless told
FIELDS = (["time-since-last-clear-min", "phy-received-bits", "symbol-errors", "effective-errors"]
          + ["phy-raw-errors-lane%d" % n for n in range(8)] + ["raw-ber", "symbol-ber", "effective-ber"]
          + ["raw-ber-lane%d" % n for n in range(8)] + ["rs-num-corr-err-bin%d" % n for n in range(16)])


def timed(sw, path):
    """(status, body, t0, t1): the answer and the wall times just before the request and just after the answer."""
    t0 = time.time()
    status, body, _headers = sw.call("GET", path)
    return status, body, t0, time.time()


def window(rate, start, t0, t1):
    """The counts a counter growing at ``rate`` per second from ``start`` may show for a read made between t0 and
    t1 (a bit of slack for float rounding on each side)."""
    return max(0, math.floor(rate * (t0 - start)) - 1), math.ceil(rate * (t1 - start)) + 1


@pytest.mark.parametrize("release, detail, health", [("5.9.1", 404, 404), ("5.10.0", 200, 404), ("5.14.1", 200, 404),
                                                     ("5.15.0", 404, 200), ("5.16.0", 404, 200)])
def test_the_release_decides_the_path(make_switch, release, detail, health):
    sw = make_switch(release=release, ports="swp1-2")
    assert sw.call("GET", "/interface/swp1/link/phy-detail")[0] == detail
    assert sw.call("GET", "/interface/swp1/link/phy/health")[0] == health
    assert sw.call("GET", "/interface/swp9/link/phy-detail")[0] == 404    # no such port
    link = sw.get("/interface/swp1/link")
    assert "phy-detail" not in link and "phy" not in link                # answered alone, not in the tree


def test_a_clean_port_counts_every_bit_its_speed_carries_and_no_error(make_switch):
    sw = make_switch(release="5.12.0", ports="swp1-2")
    boot = sw.state()["boot"]["booted_at"]
    status, body, t0, t1 = timed(sw, "/interface/swp2/link/phy-detail")
    assert status == 200 and list(body) == FIELDS
    low, high = window(SPEED, boot, t0, t1)
    assert low <= body["phy-received-bits"] <= high
    assert body["time-since-last-clear-min"] in (int((t0 - boot) // 60), int((t1 - boot) // 60))
    errors = [body[f] for f in FIELDS if f.startswith(("phy-raw-errors", "symbol-errors", "effective-errors"))]
    assert errors == [0] * 10
    assert (body["raw-ber"], body["symbol-ber"], body["effective-ber"]) == ("15E-255", "15E-255", "15E-255")
    assert [body["raw-ber-lane%d" % n] for n in range(8)] == ["0"] * 8          # sample A's lane "no error"
    assert body["rs-num-corr-err-bin0"] == body["phy-received-bits"] // 5440
    assert parse_phy(body, switch="leaf01", port="swp2")["raw_ber"] == 0.0


def test_a_planted_raw_ber_makes_raw_errors_grow_at_ber_times_speed_and_leaves_effective_errors_alone(make_switch):
    sw = make_switch(release="5.12.0", ports="swp1-2")
    sw.admin("fault", "set", "raw_ber", "swp1", "1e-6")                   # 400G x 1e-6 = 400000 errors a second
    planted = sw.state()["faults"]["raw_ber"]["swp1"]
    assert planted["ber"] == 1e-6
    rate = 1e-6 * SPEED
    _s, first, a0, a1 = timed(sw, "/interface/swp1/link/phy-detail")
    time.sleep(0.2)
    _s, second, b0, b1 = timed(sw, "/interface/swp1/link/phy-detail")
    counts = []
    for body, t0, t1 in ((first, a0, a1), (second, b0, b1)):
        raw = sum(body["phy-raw-errors-lane%d" % n] for n in range(8))
        low, high = window(rate, planted["since"], t0, t1)
        assert low <= raw <= high, (low, raw, high)
        lanes = [body["phy-raw-errors-lane%d" % n] for n in range(8)]
        assert max(lanes) - min(lanes) <= 1 and lanes == sorted(lanes, reverse=True)   # spread, lane 0 first
        assert (body["effective-errors"], body["symbol-errors"], body["effective-ber"]) == (0, 0, "15E-255")
        parsed = parse_phy(body, switch="leaf01", port="swp1")
        exact = raw / body["phy-received-bits"]
        assert parsed["raw_errors"] == raw and 0 < exact < 1e-6   # the plant came after the boot
        assert exact / 2 < parsed["raw_ber"] < exact * 2          # one significant digit of raw / bits
        assert body["rs-num-corr-err-bin1"] == raw
        counts.append(raw)
    assert counts[1] - counts[0] >= math.floor(rate * (b0 - a1)) - 2 > 0   # it grew between the reads
    clean = sw.get("/interface/swp2/link/phy-detail")
    assert clean["raw-ber"] == "15E-255" and clean["phy-raw-errors-lane0"] == 0   # only the planted port


def test_planted_effective_errors(make_switch):
    sw = make_switch(release="5.16.0", ports="swp1-2")
    sw.admin("fault", "set", "effective_errors", "swp2", "7")
    body = sw.get("/interface/swp2/link/phy/health")
    assert (body["effective-errors"], body["symbol-errors"], body["phy-raw-errors-lane0"]) == (7, 7, 0)
    parsed = parse_phy(body, switch="leaf01", port="swp2")
    exact = 7 / body["phy-received-bits"]
    assert exact / 2 < parsed["effective_ber"] < exact * 2 and parsed["effective_ber"] == parsed["symbol_ber"]
    sw.admin("fault", "clear", "effective_errors", "swp2")
    assert sw.get("/interface/swp2/link/phy/health")["effective-errors"] == 0


@pytest.mark.parametrize("args, words", [
    (["raw_ber", "swp1", "1.2x"], "fault raw_ber: ber '1.2x' must be a rate above 0 and below 1"),
    (["raw_ber", "swp1", "0"], "must be a rate above 0"), (["raw_ber", "swp1", "2"], "below 1"),
    (["raw_ber", "swp9", "1e-7"], "port 'swp9' does not exist"),
    (["effective_errors", "swp1", "-1"], "fault effective_errors: count '-1' must be an integer 0 or more"),
    (["raw_ber", "swp1"], "fault raw_ber takes <port> <ber>"),
])
def test_plants_refuse_what_they_cannot_mean(make_switch, args, words):
    sw = make_switch(release="5.12.0", ports="swp1-2", start=False)
    res = sw.admin("fault", "set", *args, check=False)
    assert res.returncode == 1 and words in res.stderr, res.stderr


def test_spectrum1_has_no_counters_and_a_port_that_comes_up_again_starts_counting_anew(make_switch):
    sw = make_switch(release="5.12.0", ports="swp1-2")
    sw.admin("fault", "set", "spectrum1")
    assert sw.call("GET", "/interface/swp1/link/phy-detail")[0] == 404
    sw.admin("fault", "clear", "spectrum1")
    sw.admin("fault", "set", "port_down", "swp1")
    down = sw.get("/interface/swp1/link/phy-detail")
    assert (down["phy-received-bits"], down["raw-ber"]) == (0, "15E-255")   # a down port counted nothing
    sw.admin("fault", "clear", "port_down", "swp1")
    restarted = sw.state()["phy_since"]["swp1"]
    _s, body, t0, t1 = timed(sw, "/interface/swp1/link/phy-detail")
    low, high = window(SPEED, restarted, t0, t1)
    assert low <= body["phy-received-bits"] <= high and body["time-since-last-clear-min"] == 0
    assert "swp2" not in sw.state()["phy_since"]


def test_gather_phy_over_rest_and_over_the_cli_agree(make_switch):
    sw = make_switch(release="5.12.0", ports="swp1-3")
    sw.admin("fault", "set", "raw_ber", "swp1", "1e-7")
    sw.admin("fault", "set", "effective_errors", "swp3", "4")
    sw.admin("fault", "set", "protodown", "swp2")
    outs = [gather(rest(sw), ["phy"]), gather(local(sw), ["phy"])]
    for out in outs:
        assert list(out["phy"]) == ["swp1", "swp2", "swp3"] and out["phy_unavailable"] == {}
        assert out["phy"]["swp1"]["raw_errors"] > 0 and out["phy"]["swp1"]["effective_errors"] == 0
        assert out["phy"]["swp2"]["received_bits"] == 0                     # in protodown: down
        assert out["phy"]["swp3"]["effective_errors"] == 4 and out["phy"]["swp3"]["raw_errors_lanes"] == [0] * 8
    assert outs[0]["phy"]["swp1"]["raw_errors"] <= outs[1]["phy"]["swp1"]["raw_errors"]   # read later, counted more
    sw.admin("fault", "set", "spectrum1")
    for switch in (rest(sw), local(sw)):
        found = gather(switch, ["phy"], ports=["swp3"])
        assert found["phy"] == {"swp3": None}
        assert found["phy_unavailable"]["swp3"].startswith("the switch answered that it has no link phy-detail")


def playbook(**args):
    return yaml.safe_dump([{"hosts": "leaves", "gather_facts": False,
                            "tasks": [{"name": "the task", "gpufabric.mlnx.nvue_info": args, "register": "out"}]}])


def test_nvue_info_gather_phy_in_a_playbook(tmp_path, make_switch):
    sw = make_switch(release="5.16.0", ports="swp1-4")
    sw.admin("fault", "set", "raw_ber", "swp2", "1e-7")
    hosts = {sw.hostname: sw.httpapi_vars(PASSWORD)}
    mark = sw.mark()
    ran = run(tmp_path, hosts, playbook(gather=["phy"], ports=["swp2", "swp4"]), group="leaves")
    assert ran.ok, ran
    out = ran.task("the task", "leaf01")
    assert sorted(out["phy"]) == ["swp2", "swp4"] and out["phy_unavailable"] == {}
    assert out["phy"]["swp2"]["raw_errors"] > 0 and out["phy"]["swp4"]["raw_errors"] == 0
    assert sorted(k for k in out["phy"]["swp2"]) == sorted([
        "received_bits", "effective_errors", "symbol_errors", "raw_errors", "raw_errors_lanes", "raw_ber",
        "effective_ber", "symbol_ber", "minutes_since_clear"])
    reads = [e["path"] for e in sw.since(mark, "read")]
    assert reads == ["/system/version", "/interface", "/interface/swp2/link/phy/health",
                     "/interface/swp4/link/phy/health"]   # one request per port, inside the module

    bad = run(tmp_path, hosts, playbook(gather=["phy"], ports=["swp1;reboot"]), group="leaves")
    assert not bad.ok and "ports: 'swp1;reboot' is not a switch port (allowed: swpN" in bad.failures()["leaf01"]
