"""The validation gate's hand-over report (plugin_utils/_handover_report.py) from a realistic results document:
4 hosts x 4 rails in 2 SUs, one host quarantined with two failures; HTML (and a real browser's screenshot of it),
Markdown, CSV, JSON and JUnit. Every bus bandwidth is per rail, as the gate measures and judges it."""
import builtins
import copy
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _handover_report as report

HOSTS = ("srv-r01-01", "srv-r01-02", "srv-r02-01", "srv-r02-02")
PEERS = {"srv-r01-01": "srv-r01-02", "srv-r01-02": "srv-r01-01", "srv-r02-01": "srv-r02-02", "srv-r02-02": "srv-r02-01"}
BAD = "srv-r02-02"
SIZES = [8 << k for k in range(0, 31)]          # nccl-tests -b 8 -e 8G -f 2 (an SU run)
PAIR_SIZES = [1 << 30, 2 << 30, 4 << 30, 8 << 30]     # -b 1G -e 8G -f 2 (a pair run)


def _nccl_rows(peak, half=1 << 22, sizes=SIZES):
    rows = []
    for size in sizes:
        busbw = round(peak * size / (size + half), 2)
        rows.append({"size": size, "busbw": busbw, "algbw": round(busbw / 1.5, 2),
                     "time_us": round(size / max(busbw, 1e-3) / 1e3 + 30.0, 1)})
    return rows


def _failures():
    return [
        {"measure": "ib_write_bw", "rail": 2, "value": 96.2, "threshold": 360.0, "unit": "Gb/s", "pass_if": ">=",
         "message": "ib_write_bw srv-r02-02 -> srv-r02-01 on rail 2 (enp152s0np0): 96.2 Gb/s < 360.0 Gb/s "
                    "(0.9 x 400 Gb/s port rate)"},
        {"measure": "nccl_busbw", "rail": None, "value": 30.35, "threshold": 42.3, "unit": "GB/s", "pass_if": ">=",
         "message": "NCCL all_reduce_perf of srv-r02-02 with srv-r02-01: average bus bandwidth 30.4 GB/s < 42.3 "
                    "GB/s per rail (0.9 x 47 GB/s per 400G rail)"},
    ]


def results():
    """The gate's document (schema 1) of one run: SU 1 = rack r01, SU 2 = rack r02; srv-r02-02 quarantined."""
    hosts = {}
    interfaces = ("enp24s0np0", "enp64s0np0", "enp152s0np0", "enp192s0np0")
    for number, name in enumerate(HOSTS):
        rack, index = name.split("-")[1], int(name.split("-")[2])
        rails = []
        for rail, interface in enumerate(interfaces):
            bw = 392.1 - 1.3 * rail - 0.4 * number
            if name == BAD and rail == 2:
                bw = 96.2
            rails.append({
                "rail": rail, "interface": interface, "device": "mlx5_%d" % rail,
                "address": "198.18.%d.%d" % (rail, number + 1), "leaf": "%s-leaf-rail%d" % (rack, rail),
                "leaf_port": "swp%d" % index, "peer": PEERS[name], "port_rate_gbps": 400.0,
                "link": {"host_state": "up", "host_speed_gbps": 400, "host_mtu": 9000, "leaf_state": "up",
                         "leaf_speed": "400G", "leaf_mtu": 9216},
                "lldp": {"expected": "%s-leaf-rail%d:swp%d" % (rack, rail, index),
                         "seen": "%s-leaf-rail%d:swp%d" % (rack, rail, index), "ok": True},
                "ping": True, "write_bw_gbps": round(bw, 1), "write_bw_reverse_gbps": round(bw - 0.3, 1),
                "write_lat_usec": round(2.2 + 0.03 * rail + 0.02 * number, 2), "active_mtu": 4096,
                "write_bw_limit_gbps": 360.0,
            })
        delivery = [{"pci": "0000:%02x:00.0" % bus, "serial": "MT2245X0%04d" % (number * 10 + rail),
                     "part_number": "MCX75310AAS-NEAT", "psid": "MT_0000000838", "firmware": "28.43.2566",
                     "firmware_expected": "28.43.2566", "ok": True}
                    for rail, bus in enumerate((0x18, 0x40, 0x98, 0xc0))]
        hosts[name] = {
            "status": "quarantined" if name == BAD else ("not_retested" if name == "srv-r01-02" else "passed"),
            "rack": rack, "su": 1 if rack == "r01" else 2,
            "versions": {"driver": "24.10-2.1.8.0", "driver_expected": "24.10-2.1.8.0", "nccl": "2.23.4"},
            "delivery": delivery, "rails": rails,
            "nccl": {"avg_busbw_gbs": 30.35 if rack == "r02" else 47.72, "threshold_gbs": 42.3,
                     "peers": sorted((name, PEERS[name])),
                     "rows": _nccl_rows(30.4 if rack == "r02" else 47.8, sizes=PAIR_SIZES)},
            "failures": _failures() if name == BAD else [],
        }
    return {
        "schema": 1,
        "run": {"started": "2026-12-04T10:00:00Z", "finished": "2026-12-04T10:05:00Z", "matrix": "fabric-2026.12",
                "nccl_expected": "2.23.4",
                "thresholds": {"write_bw_fraction": 0.9, "write_lat_factor": 1.5, "nccl_busbw_per_rail_gbs": 42.3,
                               "nccl_fraction": 0.9, "nccl_gbs_per_400g": 47.0, "nccl_min_size": 1 << 30,
                               "link_flaps": 0, "symbol_errors": 0}},
        "status": "quarantined",
        "hosts": hosts,
        "su": {"1": {"hosts": ["srv-r01-01", "srv-r01-02"], "avg_busbw_gbs": 47.29, "threshold_gbs": 42.3,
                     "ok": True, "rows": _nccl_rows(47.5)},
               "2": {"hosts": ["srv-r02-01", "srv-r02-02"], "avg_busbw_gbs": 30.92, "threshold_gbs": 42.3,
                     "ok": False, "rows": _nccl_rows(31.0)}},
        "quarantine": [{"host": BAD, "failures": _failures()}],
        "handover": ["srv-r01-01", "srv-r01-02", "srv-r02-01"],
    }


HOSTILE = '<script>alert("x")</script>&$x$_'


def _hostile():
    """The same document with srv-r01-01 renamed to a hostile inventory name."""
    doc = copy.deepcopy(results())
    doc["hosts"][HOSTILE] = doc["hosts"].pop("srv-r01-01")
    doc["handover"][0] = HOSTILE
    doc["su"]["1"]["hosts"][0] = HOSTILE
    for host in doc["hosts"].values():
        for rail in host["rails"]:
            if rail["peer"] == "srv-r01-01":
                rail["peer"] = HOSTILE
    return doc


@pytest.fixture(scope="module")
def rendered():
    return report.render(results())


# ---------------------------------------------------------------- HTML

def test_html_names_every_host_and_the_quarantine_reasons_first(rendered):
    page = rendered["html"]
    assert page.startswith("<!DOCTYPE html>")
    for host in HOSTS:
        assert host in page
    for failure in _failures():
        assert report.html.escape(failure["message"]) in page
    # the quarantine list comes before the plots
    assert page.index('id="quarantine"') < page.index('id="plots-bandwidth"') < page.index("<svg")
    assert "fabric-2026.12" in page and "≥ 42.3" in page and "0.9 x port rate" in page
    assert "169.2" not in page          # no whole-host floor: the gate applies none


def test_html_has_four_inline_svg_plots_and_no_external_reference(rendered):
    page = rendered["html"]
    assert page.count("<svg") == 4
    assert page.count("</svg>") == 4
    for label in ("bandwidth heat map", "latency histogram", "NCCL pair runs: bus bandwidth per rail",
                  "NCCL SU runs: bus bandwidth per rail"):
        assert 'aria-label="%s' % label in page
    assert "http://" not in page and "https://" not in page
    assert "<?xml" not in page and "<!DOCTYPE svg" not in page
    assert not re.search(r"<(script|link|img|iframe)\b", page)
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "duplicate ids across the four plots"
    for ref in re.findall(r'(?:xlink:href="#|url\(#)([^")]+)', page):
        assert ref in ids


def _texts(svg):
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_html_plots_show_the_thresholds(rendered):
    page = rendered["html"]
    heatmap, latency, pairs, su = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    assert "srv-r02-02" in heatmap and "96.2" in heatmap and "rail 3" in heatmap
    # the latency threshold: 1.5 x the median of the 16 measures (no absolute limit in the document): 1.5 x 2.275
    assert "threshold 3.41 µs (from this run's median)" in _texts(latency)
    # one kind of run per plot, each with its own limit line, per rail as the gate applies it
    assert "limit 42.3 GB/s per rail (on the run's average)" in _texts(pairs)
    assert "srv-r02-02 (quarantined)" in _texts(pairs) and "SU 1 (2 hosts)" not in _texts(pairs)
    assert {"1 GiB", "2 GiB", "4 GiB", "8 GiB"} <= set(_texts(pairs)) and "8 B" not in _texts(pairs)
    assert "SU limit 42.3 GB/s per rail (on the average of the sizes &gt;= 1 GiB)" in _texts(su)
    assert "SU 1 (2 hosts)" in _texts(su) and "SU 2 (2 hosts)" in _texts(su)
    assert not any(host in text for host in HOSTS for text in _texts(su))
    assert {"8 B", "8 GiB"} <= set(_texts(su))        # the log2 axis in sizes
    assert not any("169.2" in text or "host floor" in text for text in _texts(pairs) + _texts(su))


def test_html_latency_limit_from_the_document_when_given():
    doc = results()
    doc["run"]["thresholds"]["write_lat_usec"] = 3.5
    latency = re.findall(r"<svg.*?</svg>", report.render(doc, ["html"])["html"], flags=re.S)[1]
    assert "threshold 3.5 µs (the gate&#x27;s limit)" in latency or "threshold 3.5 µs (the gate's limit)" in latency


def test_html_escapes_a_hostile_host_name():
    page = report.render(_hostile(), ["html"])["html"]
    assert "<script" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;$x$_" in page      # the tables
    assert "&lt;script&gt;alert(" in re.findall(r"<svg.*?</svg>", page, flags=re.S)[0]   # the heat map's label
    assert page.count("<svg") == 4


def test_html_is_deterministic():
    assert report.render(results(), ["html"]) == report.render(results(), ["html"])


def _without_matplotlib(monkeypatch):
    """Python as on a controller without matplotlib: importing it (or any of its modules) fails."""
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)


NOTE = ("not drawn: the python library matplotlib, which draws the plots, is not installed on the controller (an "
        "optional package of gpufabric.mlnx: pip install matplotlib, the version constraints.txt pins, then render "
        "the report again); the tables hold the numbers")


def test_html_without_matplotlib_is_the_same_page_with_a_note_for_each_plot(monkeypatch, rendered):
    _without_matplotlib(monkeypatch)
    page = report.render(results(), ["html"])["html"]
    assert "<svg" not in page
    assert re.findall(r'<p class="plot-missing" id="([a-z-]+)-missing">([^<]*)</p>', page) == [
        ("heatmap", "Bandwidth heat map per host and rail: " + NOTE),
        ("latency", "Latency histogram: " + NOTE),
        ("nccl-pairs", "NCCL pair runs: bus bandwidth per rail against message size: " + NOTE),
        ("nccl-su", "NCCL SU runs: bus bandwidth per rail against message size: " + NOTE)]
    # every table and text of the page with the plots is there: only each plot became its note
    plots = iter(re.findall(r"<svg.*?</svg>", rendered["html"], flags=re.S))
    assert re.sub(r'<p class="plot-missing" id="[a-z-]+-missing">[^<]*</p>', lambda _m: next(plots), page) == \
        rendered["html"]
    # the other formats never need it
    assert set(report.render(results(), ["md", "csv", "json", "junit"])) == {"md", "csv", "json", "junit"}


def test_html_with_matplotlib_draws_every_plot_and_no_note(rendered):
    assert rendered["html"].count('<svg class="plot" role="img"') == 4
    assert "plot-missing" not in rendered["html"].replace("p.plot-missing {", "")


# ---------------------------------------------------------------- CSV, JSON, JUnit, Markdown

def test_csv_one_row_per_host_and_rail(rendered):
    rows = list(csv.DictReader(io.StringIO(rendered["csv"])))
    assert list(rows[0]) == ["host", "rack", "rail", "interface", "leaf", "peer", "write_bw_gbps",
                             "write_bw_reverse_gbps", "port_rate_gbps", "write_bw_limit_gbps", "write_bw_verdict",
                             "write_lat_usec", "write_lat_limit_usec", "write_lat_verdict", "ber_bits",
                             "effective_errors", "raw_ber", "certified_ber", "leaf_port", "leaf_ber_bits",
                             "leaf_effective_errors", "leaf_raw_ber", "leaf_certified_ber", "leaf_ber_unavailable",
                             "status", "failures"]
    assert len(rows) == 16
    assert [(r["host"], r["rail"]) for r in rows] == [(h, str(rail)) for h in HOSTS for rail in range(4)]
    bad = [r for r in rows if r["failures"]]
    assert {r["host"] for r in bad} == {BAD}
    rail2 = next(r for r in rows if r["host"] == BAD and r["rail"] == "2")
    assert rail2["write_bw_gbps"] == "96.2" and rail2["status"] == "quarantined" and rail2["leaf"] == "r02-leaf-rail2"
    assert "96.2 Gb/s < 360.0 Gb/s" in rail2["failures"] and "30.4 GB/s" in rail2["failures"]
    assert (rail2["write_bw_limit_gbps"], rail2["write_bw_verdict"]) == ("360.0", "fail")
    assert (rail2["write_lat_usec"], rail2["write_lat_limit_usec"]) == ("2.32", "3.4125")   # 1.5 x 2.275, unrounded
    assert rail2["write_lat_verdict"] == "pass"
    rail0 = next(r for r in rows if r["host"] == BAD and r["rail"] == "0")
    assert "ib_write_bw" not in rail0["failures"] and "NCCL" in rail0["failures"]   # host-wide failure only


def test_json_round_trip(rendered):
    assert json.loads(rendered["json"]) == results()
    assert rendered["json"] == json.dumps(results(), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def test_junit_has_a_failure_for_the_quarantined_host_only(rendered):
    root = ET.fromstring(rendered["junit"].encode("utf-8"))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("4", "1", "0", "1")
    suites = root.findall("testsuite")
    assert len(suites) == 1 and suites[0].get("time") == "300.000"
    cases = {case.get("name"): case for case in suites[0].findall("testcase")}
    assert sorted(cases) == sorted(HOSTS)
    failing = [name for name, case in cases.items() if case.find("failure") is not None]
    assert failing == [BAD]
    failure = cases[BAD].find("failure")
    assert "ib_write_bw" in failure.get("message") and "nccl_busbw" in failure.get("message")
    assert all(f["message"] in failure.text for f in _failures())
    assert cases["srv-r01-02"].find("skipped") is not None
    assert cases[BAD].get("classname") == "gpufabric.mlnx.handover.r02"


def test_junit_escapes_and_survives_control_characters():
    doc = _hostile()
    doc["hosts"][BAD]["failures"][0]["message"] = "ib_write_bw: tool said \x1b[31mERROR\x00"
    doc["quarantine"][0]["failures"] = doc["hosts"][BAD]["failures"]
    root = ET.fromstring(report.render(doc, ["junit"])["junit"].encode("utf-8"))
    assert HOSTILE in [case.get("name") for case in root.iter("testcase")]


def test_markdown_tables(rendered):
    text = rendered["md"]
    for title in ("Summary", "Thresholds", "Quarantine", "Hosts", "Bandwidth per host x rail", "Latency",
                  "NCCL SU runs", "Delivery check", "Driver and firmware against the matrix", "Cabling"):
        assert "\n## %s\n" % title in text
    assert "| host | rack | measure | rail | value | limit | unit | verdict | reason |\n" \
           "|---|---|---|---|---|---|---|---|---|\n" in text
    quarantine = text.split("## Quarantine")[1].split("## Hosts")[0]
    assert quarantine.count("| srv-r02-02 | r02 |") == 2
    assert "| srv-r02-02 | r02 | 2 | enp152s0np0 | r02-leaf-rail2 | srv-r02-01 | 400 | 96.2 | 95.9 | ≥ 360 | fail |" \
        in text
    # the peer's rail: below the limit, counted against the host whose own failure it is
    assert "| srv-r02-01 | r02 | 2 | passed | 4 | 30.35 | ≥ 42.3 | fail, counted against srv-r02-02 (its own facts " \
           "explain it) |  |" in text
    assert "| 2 | srv-r02-01 (passed), srv-r02-02 (quarantined) | 1 of 2 | 30.92 | ≥ 42.3 | below the limit, " \
           "explained by its quarantined host srv-r02-02 (the world runs at its slowest member's pace) |" in text
    assert "| 1 | srv-r01-01 (passed), srv-r01-02 (not retested) | 2 of 2 | 47.29 | ≥ 42.3 | pass |" in text
    assert "| 8 GiB | 47.48 | 30.98 |" in text        # NCCL by size, one column per SU


def test_markdown_escapes_html():
    text = report.render(_hostile(), ["md"])["md"]
    assert "<script" not in text and "&lt;script&gt;" in text


# ---------------------------------------------------------------- the API

def test_write_files(tmp_path):
    paths = report.write(results(), str(tmp_path / "out"))
    assert {name: os.path.basename(path) for name, path in paths.items()} == {
        "html": "handover.html", "md": "handover.md", "csv": "handover.csv", "json": "handover.json",
        "junit": "handover-junit.xml"}
    assert sorted(os.listdir(tmp_path / "out")) == sorted(report.FILENAMES.values())
    assert json.loads((tmp_path / "out" / "handover.json").read_text(encoding="utf-8")) == results()
    only = report.write(results(), str(tmp_path / "csv"), formats=["csv"])
    assert list(only) == ["csv"] and os.listdir(tmp_path / "csv") == ["handover.csv"]


def test_bad_input_is_named():
    with pytest.raises(InvalidValue, match="formats\\[1\\] must be one of"):
        report.render(results(), ["md", "pdf"])
    with pytest.raises(InvalidValue, match="results.schema must be 1"):
        report.render(dict(results(), schema=2), ["md"])
    with pytest.raises(InvalidValue, match="results.hosts must be"):
        report.render({"schema": 1, "hosts": []}, ["md"])


def test_empty_and_null_measures_still_render():
    doc = results()
    for host in doc["hosts"].values():
        for rail in host["rails"]:
            rail["write_lat_usec"] = None
        host["nccl"] = None
    doc["su"] = {}
    doc["hosts"]["srv-r01-01"]["rails"][1]["write_bw_gbps"] = None
    out = report.render(doc)
    assert out["html"].count("<svg") == 4 and "no ib_write_lat measured" in out["html"]
    assert "no NCCL pair run measured" in out["html"] and "no NCCL SU run measured" in out["html"]


# ---------------------------------------------------------------- a real browser

def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _pixels_near(image, rgb, tolerance=0.03):
    import numpy   # pylint: disable=import-outside-toplevel
    return int(numpy.all(numpy.abs(image[:, :, :3] - numpy.array(rgb)) <= tolerance, axis=2).sum())


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (make tools installs Debian's chromium)")
def test_chromium_renders_the_plots(tmp_path):
    """Debian's chromium, headless, screenshots the written page; the plots' own colours are on it."""
    import numpy  # pylint: disable=import-outside-toplevel
    from matplotlib import colormaps, image as mpimage  # pylint: disable=import-outside-toplevel
    from matplotlib.colors import to_rgb  # pylint: disable=import-outside-toplevel
    page = report.write(results(), str(tmp_path / "report"), formats=["html"])["html"]
    png = tmp_path / "handover.png"
    env = dict(os.environ, HOME=str(tmp_path))
    proc = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--disable-dev-shm-usage",
         "--no-first-run", "--user-data-dir=%s" % (tmp_path / "profile"), "--screenshot=%s" % png,
         "--window-size=1280,4400", "file://" + os.path.abspath(page)],
        capture_output=True, text=True, timeout=180, env=env, check=False)
    assert proc.returncode == 0 and png.exists(), proc.stderr[-2000:]
    if os.environ.get("HANDOVER_SCREENSHOT"):
        shutil.copy(png, os.environ["HANDOVER_SCREENSHOT"])
    image = mpimage.imread(str(png))
    assert image.shape[:2] == (4400, 1280)
    white = numpy.all(image[:, :, :3] > 0.97, axis=2)
    assert white.mean() < 0.97, "the page is (almost) blank"
    cmap = colormaps[report.HEATMAP_CMAP]
    good = _pixels_near(image, cmap(392.1 / 400.0)[:3])          # the heat map's cells near the port rate
    quarantined = _pixels_near(image, cmap(96.2 / 400.0)[:3])     # the one cell at 96.2 Gb/s
    assert good > 5000, good
    assert quarantined > 500, quarantined
    rows = numpy.nonzero(numpy.any(numpy.all(numpy.abs(image[:, :, :3] - cmap(96.2 / 400.0)[:3]) <= 0.03, axis=2),
                                   axis=1))[0]
    region = image[rows.min() - 200:rows.max() + 200]
    colours = {tuple(p) for p in (region[:, :, :3] * 255).astype(int).reshape(-1, 3)[::7].tolist()}
    assert len(colours) > 50, len(colours)                        # a heat map, not a flat block
    assert _pixels_near(image, to_rgb(report.HISTOGRAM_COLOUR)) > 1500     # the latency histogram's bars
    assert _pixels_near(image, to_rgb(report.SU_COLOURS[0])) > 150        # the NCCL plot's SU 1 line
    assert _pixels_near(image, to_rgb(report.THRESHOLD_COLOUR)) > 150     # threshold lines


def test_delivery_expected_columns_only_when_the_document_has_them():
    assert "SN expected" not in report.render(results(), ["md"])["md"]
    doc = results()
    doc["hosts"][BAD]["delivery"][1].update(serial_expected="MT2245X09999", ok=False)
    text = report.render(doc, ["md"])["md"]
    assert "| SN | SN expected |" in text
    assert "| srv-r02-02 | 0000:40:00.0 | MT2245X00031 | MT2245X09999 | MCX75310AAS-NEAT |" in text
    assert "| MISMATCH |" in text.split("## Delivery check")[1].split("## Driver")[0]


def test_other_firmware_than_the_pin_is_flagged_in_delivery_and_versions():
    doc = results()
    doc["hosts"][BAD]["delivery"][0].update(firmware="28.42.1000", firmware_ok=False, ok=None)
    text = report.render(doc, ["md"])["md"]
    delivery = text.split("## Delivery check")[1].split("## Driver")[0]
    assert "| srv-r02-02 | 0000:18:00.0 | MT2245X00030 | MCX75310AAS-NEAT | MT_0000000838 | 28.42.1000 | " \
        "28.43.2566 | firmware differs |" in delivery
    versions = text.split("## Driver and firmware against the matrix")[1].split("## Cabling")[0]
    bad = [line for line in versions.splitlines() if line.startswith("| srv-r02-02 ")]
    assert len(bad) == 1 and "28.42.1000, 28.43.2566" in bad[0] and bad[0].endswith("| MISMATCH |"), bad
    assert all(line.endswith("| ok |") for line in versions.splitlines() if line.startswith("| srv-r01-"))


def test_nccl_legend_of_many_hosts():
    """Beyond LEGEND_MAX_HOSTS, the hosts are one legend entry; a quarantined host keeps its own."""
    doc = results()
    template = doc["hosts"]["srv-r01-01"]
    for index in range(report.LEGEND_MAX_HOSTS + 4):
        doc["hosts"]["srv-r09-%02d" % index] = copy.deepcopy(template)
    nccl = re.findall(r"<svg.*?</svg>", report.render(doc, ["html"])["html"], flags=re.S)[2]    # the pair runs
    legend = re.findall(r"<text[^>]*>([^<]*)</text>", nccl)
    assert "hosts (24)" in legend and "srv-r02-02 (quarantined)" in legend and "srv-r09-01" not in legend


def test_importing_the_module_and_the_other_formats_do_not_import_matplotlib():
    code = ("import sys\n"
            "from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _handover_report as r\n"
            "r.render({'schema': 1, 'hosts': {}}, ['md', 'csv', 'json', 'junit'])\n"
            "print('matplotlib' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)))
    assert out.stdout.strip() == "False"


def test_a_document_without_hosts_renders_without_warnings():
    import warnings  # pylint: disable=import-outside-toplevel
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = report.render({"schema": 1, "hosts": {}})
    assert out["html"].count("<svg") == 4 and "no rail measured" in out["html"]
    assert out["csv"] == ",".join(k for k, _t in report.RAIL_COLUMNS) + "\n"
    root = ET.fromstring(out["junit"])
    assert root.get("tests") == "0" and root.find("testsuite/properties") is None
