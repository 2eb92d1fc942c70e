"""The hand-over report never contradicts itself, read as a person reads it: the page is generated from the gate's
own verdict (plugin_utils/_gate.py on a real rail plan) and opened in a real headless browser (Debian's chromium,
``--dump-dom``); the DOM it dumps is parsed - not the renderer's input - and every displayed value is checked
against its displayed limit and its displayed verdict: per row, the values pass against the limit (its sign says
how) exactly when the verdict is "pass".

The run: a1-a2 pass (a1's rail 0 write BW exactly at its limit, its rail 1 latency exactly at its limit, their NCCL
pair run exactly at its floor); b2 is quarantined by its own PCIe fact on rail 0 with its write BW just below the
limit, its latency just above it and its NCCL pair run just below the floor (42.299 against 42.3); b1, its peer,
is handed over; the SU world of b1 and b2 is below its limit, with b1 handed over and b2 quarantined. Over the 300 s
between the facts (1.2e14 bits at 400G) a2's rail 1 counts 1.2e9 bits corrected by FEC - a raw BER of 1e-5, the
limit itself - and b2's rail 1 one more. The leaves' side (what each leaf port received, 1.2e14 bits by its own
counter): a1's rail 0 port counts 1.2e9 corrected bits - the limit - and passes, b2's rail 0 port one more and
fails (b2 is quarantined anyway), b1's rail 1 port is on a switch without PHY counters: not available, never a
pass."""
import html.parser
import operator
import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _gate
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _handover_report as report
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import plan as rail_plan

HOSTS = ["a1", "a2", "b1", "b2"]
FABRIC = {"nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]}, "interface_names": ["enp24s0np0", "enp64s0np0"],
          "rails": 2, "addressing": "p2p31", "su_prefix": 26, "racks_per_su": 1, "leaf_name": "{rack}-leaf-rail{rail}",
          "pools": {"rail0": "198.18.0.0/20", "rail1": "198.18.16.0/20"}}
SIGNS = {"≥": operator.ge, "≤": operator.le, "=": operator.eq}


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _facts(plan, host, change=None, at=1000.0):
    out = {}
    for entry in plan["hosts"][host]:
        fact = {"rdma": "mlx5_%d" % entry["rail"], "port": 1, "rate_gbps": 400.0, "link_layer": "Ethernet",
                "state": "up", "mtu": 9000,
                "address": entry["address"],
                "pcie": {"pci": entry["pci"], "speed": 32.0, "max_speed": 32.0, "width": 16, "max_width": 16},
                "counters": {"link_down_events_phy": 0, "rx_symbol_err_phy": 0}, "qos": {"trust": "dscp", "pfc": [3]},
                "phy": {"source": "ethtool -S", "read_at": at, "effective_errors": 0, "raw_errors": 0, "link_down": 0,
                        "received_bits": None}}
        fact.update((change or {}).get(entry["rail"], {}))
        out[entry["interface"]] = fact
    return out


def _leaves(plan):
    out = {}
    for leaf, entry in plan["leaves"].items():
        ports = {port: {"oper_status": "up", "speed": "400G", "mtu": 9216,
                        "lldp": [{"system_name": cable["host"], "port": cable["interface"]}]}
                 for port, cable in entry["cables"].items()}
        out[leaf] = {"interfaces": ports, "qos": {"roce": {"enable": "on", "mode": "lossless",
                                                           "pfc": {"pfc-priority": "3"}}}}
    return out


def _leaf_phy(plan):
    """Every leaf port's PHY counters before and after the traffic (nvue_info gather [phy]): 1.2e14 bits received,
    no error, but for the ports the module docstring names."""
    def port(bits, raw=0):
        return {"received_bits": bits, "effective_errors": 0, "symbol_errors": 0, "raw_errors": raw,
                "raw_errors_lanes": [raw], "raw_ber": 0.0, "effective_ber": 0.0, "symbol_ber": 0.0,
                "minutes_since_clear": 1.0}
    special = {("a1", 0): 1200000000, ("b2", 0): 1200000001}
    before, after = {}, {}
    for leaf, entry in plan["leaves"].items():
        before[leaf] = {"phy": {}, "phy_unavailable": {}}
        after[leaf] = {"phy": {}, "phy_unavailable": {}}
        for name, cable in entry["cables"].items():
            rail = int(leaf[-1])
            if (cable["host"], rail) == ("b1", 1):
                for read in (before, after):
                    read[leaf]["phy"][name] = None
                    read[leaf]["phy_unavailable"][name] = ("the switch answered that it has no link phy-detail for "
                                                           "this port (Cumulus Linux 5.12.0): a Spectrum-1 switch "
                                                           "has none")
                continue
            before[leaf]["phy"][name] = port(10 ** 15)
            after[leaf]["phy"][name] = port(10 ** 15 + 12 * 10 ** 13, special.get((cable["host"], rail), 0))
    return {"before": before, "after": after}


def _measured(gate, bw, lat):
    """Every client's results: write BW 385.6 Gb/s and latency 1.7 µs unless ``bw``/``lat`` say otherwise."""
    out = {}
    for rnd in gate["pairs"]["rounds"]:
        for pair in rnd["pairs"]:
            for client, server in ((pair["client"], pair["server"]), (pair["server"], pair["client"])):
                key = (client, pair["rail"])
                bw_rows = [{"bytes": 65536, "bw_average": bw.get(key, 385.6)}]
                lat_rows = [{"bytes": 2, "t_avg": lat.get(key, 1.7)}]
                tests = [{"test": "ib_write_bw", "rc": 0, "report": {"mtu": 4096, "errors": [], "results": bw_rows}},
                         {"test": "ib_write_lat", "rc": 0, "report": {"errors": [], "results": lat_rows}}]
                out.setdefault(client, []).append({"rail": pair["rail"], "peer": server, "tests": tests,
                                                   "ping": {"ok": True, "sent": 3, "received": 3}})
    return out


def _rank0(rows, avg, size):
    """What a world's first member collects from its launcher: rank 0's report, listing the world's ``size`` ranks."""
    return {"launch": {"rc": 0, "stopped": False, "stderr": "", "report": {
        "rows": rows, "avg_busbw": avg, "errors": [], "nccl_version": "2.23.4",
        "ranks": [{"rank": r} for r in range(size)]}}}


def _rows(sizes, busbw):
    return [{"size": size, "out_of_place": {"busbw": busbw(size), "algbw": busbw(size), "time": 100.0}}
            for size in sizes]


def gate_results():
    """The gate's results document of the run the module docstring describes."""
    plan = rail_plan([{"name": n, "rack": "r0" + n[0], "position": int(n[1])} for n in HOSTS], FABRIC)
    facts = {h: _facts(plan, h) for h in HOSTS}
    gate = _gate.plan_run(plan, HOSTS, facts, None, None, {"name": "fabric-2026.12"}, None, 106,
                          mgmt={h: "198.19.90.%d" % (11 + i) for i, h in enumerate(HOSTS)})
    after = {h: _facts(plan, h, at=1300.0) for h in HOSTS}      # read 300 s later: 1.2e14 bits at 400G

    def raw(errors):
        return {"phy": {"source": "ethtool -S", "read_at": 1300.0, "effective_errors": 0, "raw_errors": errors,
                        "link_down": 0, "received_bits": None}}
    after["a2"] = _facts(plan, "a2", {1: raw(1200000000)}, at=1300.0)     # raw BER 1e-5 exactly: passes
    after["b2"] = _facts(plan, "b2", {0: {"pcie": {"pci": "0000:18:00.0", "speed": 16.0, "max_speed": 32.0,
                                                   "width": 16, "max_width": 16}}, 1: raw(1200000001)}, at=1300.0)
    measured = _measured(gate, bw={("a1", 0): 360.0, ("b2", 0): 359.99},
                         lat={("a1", 1): 2.55, ("b2", 0): 2.56})          # the limit: 1.5 x the median 1.7 = 2.55
    pair_sizes = [1 << 30, 2 << 30, 4 << 30, 8 << 30]
    su_sizes = [8 << (2 * k) for k in range(16)]                           # -b 8 -e 8G -f 4
    raw = {"pairs": {}, "su": {}}
    for world in gate["nccl_pairs"]["worlds"]:
        avg = 42.3 if "a1" in world["hosts"] else 42.299
        raw["pairs"][world["hosts"][0]] = _rank0(_rows(pair_sizes, lambda _s, a=avg: a), avg, world["size"])
    for world in gate["nccl_su"]["worlds"]:
        peak = 47.0 if "a1" in world["hosts"] else 30.0
        raw["su"][world["hosts"][0]] = _rank0(_rows(su_sizes, lambda s, p=peak: round(p * s / (s + (1 << 22)), 2)),
                                              None, world["size"])
    nccl = _gate.nccl_reports(gate, raw)
    return _gate.evaluate(plan, gate["pairs"], gate["tested"], gate["not_retested"], measured, facts, after,
                          _leaves(plan), nccl, {}, gate["limits"],
                          {"started": "2026-12-04T10:00:00Z", "finished": "2026-12-04T10:05:00Z",
                           "matrix": "fabric-2026.12"}, 9000, None, gate["fingerprints"], leaf_phy=_leaf_phy(plan))


def test_the_run_is_the_one_described():
    """The gate's own verdict, before any report: who is handed over, the boundaries on each side."""
    doc = gate_results()
    assert doc["handover"] == ["a1", "a2", "b1"] and doc["status"] == "quarantined"
    assert sorted((f["measure"], f["rail"], f["value"], f["limit"]) for f in doc["failures"]) == [
        ("ib_write_bw", 0, 359.99, 360.0), ("ib_write_lat", 0, 2.56, 2.55), ("nccl_busbw", None, 42.299, 42.3),
        ("pcie", 0, 16.0, 32.0), ("raw_ber", 0, 1200000001 / 1.2e14, 1e-5), ("raw_ber", 1, 1200000001 / 1.2e14, 1e-5)]
    assert doc["hosts"]["b1"]["rails"][1]["leaf_ber"]["unavailable"].startswith("leaf r0b-leaf-rail1 swp1 has no PHY")
    assert (doc["hosts"]["a1"]["rails"][0]["leaf_ber"]["raw_ber"], doc["hosts"]["a1"]["status"]) == (1e-5, "passed")
    assert {f["host"] for f in doc["failures"]} == {"b2"}
    assert (doc["hosts"]["a1"]["rails"][0]["write_bw_gbps"], doc["hosts"]["a1"]["rails"][1]["write_lat_usec"]) == \
        (360.0, 2.55)
    su_b = [entry for entry in doc["su"].values() if "b1" in entry["hosts"]][0]
    assert su_b["hosts"] == ["b1", "b2"] and su_b["ok"] is False and su_b["threshold_gbs"] == 42.3


class _Tables(html.parser.HTMLParser):
    """Every table row of the page: its section, its cells' text and the cells to check (class value/limit/verdict
    and data-check); the plots' texts by aria-label."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows, self.plots, self.section, self.row, self.cell, self.plot = [], {}, None, None, None, None
        self.text = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.section = attrs.get("id")
        elif tag == "tr":
            self.row = {"section": self.section, "cells": [], "checks": []}
        elif tag == "td" and self.row is not None:
            self.cell = {"class": attrs.get("class"), "check": attrs.get("data-check"), "text": ""}
        elif tag == "svg" and attrs.get("aria-label"):
            self.plot = attrs["aria-label"]
            self.plots[self.plot] = []
        elif tag == "text" and self.plot:
            self.plots[self.plot].append("")
            self.text = True

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.cell["text"] = " ".join(self.cell["text"].split())
            self.row["cells"].append(self.cell["text"])
            if self.cell["check"]:
                self.row["checks"].append(self.cell)
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if self.row["cells"]:
                self.rows.append(self.row)
            self.row = None
        elif tag == "svg":
            self.plot = None
        elif tag == "text":
            self.text = False

    def handle_data(self, data):
        if self.cell is not None:
            self.cell["text"] += data
        elif self.plot and self.text:
            self.plots[self.plot][-1] += data


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    if _chromium() is None:
        pytest.skip("chromium is not installed (make tools installs Debian's chromium)")
    tmp = tmp_path_factory.mktemp("browser")
    path = report.write(gate_results(), str(tmp / "report"), formats=["html"])["html"]
    proc = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--user-data-dir=%s" % (tmp / "profile"), "--dump-dom", "file://" + os.path.abspath(path)],
        capture_output=True, text=True, timeout=180, env=dict(os.environ, HOME=str(tmp)), check=False)
    assert proc.returncode == 0 and "</html>" in proc.stdout, proc.stderr[-2000:]
    parsed = _Tables()
    parsed.feed(proc.stdout)
    return parsed


def _limit(text):
    """``≥ 42.3`` -> (operator.ge, 42.3); None for a limit that is not a number."""
    match = re.fullmatch(r"([≥≤=]) (-?[0-9.]+(?:e[-+]?[0-9]+)?)(?: \(.*\))?", text)
    return (SIGNS[match.group(1)], float(match.group(2))) if match else None


def _groups(row):
    groups = {}
    for cell in row["checks"]:
        groups.setdefault(cell["check"], {"value": [], "limit": [], "verdict": []})[cell["class"]].append(cell["text"])
    return groups


def test_every_displayed_value_passes_its_displayed_limit_exactly_when_its_verdict_says_pass(page):
    checked = {}
    for row in page.rows:
        for group, cells in _groups(row).items():
            assert len(cells["limit"]) == 1 and len(cells["verdict"]) == 1, (row, group)
            limit, verdict = _limit(cells["limit"][0]), cells["verdict"][0]
            values = [v for v in cells["value"] if v != ""]
            if limit is None or not values or not all(re.fullmatch(r"-?[0-9.]+(?:e[-+]?[0-9]+)?", v) for v in values):
                assert verdict != "pass" or limit is None and not values, (row, group)
                continue
            compare, bound = limit
            passes = all(compare(float(v), bound) for v in values)
            assert passes == (verdict == "pass"), (row["section"], row["cells"], group)
            checked.setdefault((row["section"], group), []).append((values, cells["limit"][0], verdict))
    # every kind of value was checked, and the boundaries on both sides are among them
    assert {key: len(value) for key, value in checked.items()} == {
        ("rails", "bw"): 8, ("rails", "lat"): 8, ("hosts", "nccl"): 4, ("nccl", "su"): 2,
        ("quarantine", "failure"): 6, ("link-errors", "effective"): 15, ("link-errors", "raw"): 15}
    bw = checked[("rails", "bw")]
    assert (["360", "385.6"], "≥ 360", "pass") in bw                     # a1 rail 0: at the limit, passes
    assert (["359.99", "385.6"], "≥ 360", "fail") in bw                  # b2 rail 0: just below, b2's own
    assert (["385.6", "359.99"], "≥ 360", "fail, counted against b2 (its own facts explain it)") in bw   # b1's
    lat = checked[("rails", "lat")]
    assert (["2.55"], "≤ 2.55", "pass") in lat and (["2.56"], "≤ 2.55", "fail") in lat
    nccl = checked[("hosts", "nccl")]
    assert nccl.count((["42.3"], "≥ 42.3", "pass")) == 2
    assert (["42.299"], "≥ 42.3", "fail") in nccl                        # shown with the digits that fail it
    assert (["42.299"], "≥ 42.3", "fail, counted against b2 (its own facts explain it)") in nccl
    assert (["16"], "≥ 32", "fail") in checked[("quarantine", "failure")]
    raw = checked[("link-errors", "raw")]
    assert (["1.00e-05"], "≤ 1e-05", "pass") in raw                      # a2 rail 1: at the limit, passes
    assert (["1.000000001e-05"], "≤ 1e-05", "fail") in raw               # b2 rail 1: one error more, fails
    assert raw.count((["1.00e-05"], "≤ 1e-05", "pass")) == 2               # and a1's rail 0 leaf port
    assert raw.count((["1.000000001e-05"], "≤ 1e-05", "fail")) == 2       # and b2's rail 0 leaf port
    assert checked[("link-errors", "effective")].count((["0"], "≤ 0", "pass")) == 15
    # the leaf port without counters: a row that says so, with no verdict of pass
    rows = [row["cells"] for row in page.rows if row["section"] == "link-errors"]
    assert len(rows) == 16
    spectrum1 = [cells for cells in rows if cells[:4] == ["b1", "1", "enp64s0np0", "host → leaf"]]
    assert len(spectrum1) == 1 and "pass" not in spectrum1[0]
    assert spectrum1[0].count("not available") == 2 and any(
        cell.startswith("not available: leaf r0b-leaf-rail1 swp1 has no PHY counters") for cell in spectrum1[0])


def test_the_su_verdict_agrees_with_its_hosts(page):
    status = {row["cells"][0]: row["cells"][3] for row in page.rows if row["section"] == "hosts"}
    assert status == {"a1": "passed", "a2": "passed", "b1": "passed", "b2": "quarantined"}
    sus = [row for row in page.rows if row["section"] == "nccl"]
    assert len(sus) == 2
    for row in sus:
        _su, members, handed, value, limit, verdict = row["cells"]
        listed = dict(re.findall(r"(\w+) \(([a-z ]+)\)", members))
        assert listed == {host: status[host] for host in listed}          # the hosts table's status, word for word
        assert handed == "%d of %d" % (sum(s == "passed" for s in listed.values()), len(listed))
        quarantined = sorted(h for h, s in listed.items() if s == "quarantined")
        if verdict != "pass":
            assert verdict == ("below the limit, explained by its quarantined host %s (the world runs at its slowest "
                               "member's pace)" % ", ".join(quarantined))
    b = [row for row in sus if "b1" in row["cells"][1]][0]["cells"]
    assert b[1:3] == ["b1 (passed), b2 (quarantined)", "1 of 2"] and float(b[3]) < 42.3 and b[4] == "≥ 42.3"


def test_thresholds_are_the_applied_ones_per_rail_and_each_plot_is_one_kind_of_run(page):
    thresholds = {row["cells"][0]: row["cells"] for row in page.rows if row["section"] == "thresholds"}
    assert thresholds["nccl_busbw (pair run)"][3:5] == ["≥ 42.3", "GB/s per rail"]
    assert thresholds["nccl_busbw (SU run)"][3:5] == ["≥ 42.3", "GB/s per rail"]
    assert thresholds["ib_write_bw"][3:5] == ["≥ 360", "Gb/s"]
    assert thresholds["ib_write_lat"][3:5] == ["≤ 2.55 (the gate's limit)", "µs"]
    assert not any("host" in name for name in thresholds if name.startswith("nccl"))
    pairs = page.plots["NCCL pair runs: bus bandwidth per rail against message size"]
    su = page.plots["NCCL SU runs: bus bandwidth per rail against message size"]
    assert "limit 42.3 GB/s per rail (on the run's average)" in pairs and not any(t.startswith("SU") for t in pairs)
    assert "SU limit 42.3 GB/s per rail (on the average of the sizes >= 1 GiB)" in su
    assert not any(t in HOSTS or t.endswith("(quarantined)") for t in su)
    assert "8 B" in su and "8 B" not in pairs and "1 GiB" in pairs
