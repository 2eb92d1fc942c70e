# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validation gate's hand-over report, rendered from the gate's results document alone (schema 1).

Pure, on the controller:

- ``render(results, formats=FORMATS)``: ``{format: text}`` for ``html`` (one self-contained page: inline CSS,
  the plots inline as SVG, no external reference, every value HTML-escaped), ``md`` (the same content as
  Markdown tables), ``csv`` (one row per host x rail, ``RAIL_COLUMNS``), ``json`` (the document itself, sorted
  keys) and ``junit`` (one testcase per host; a ``<failure>`` naming every failing measure of a quarantined host).
- ``write(results, directory, formats=FORMATS)``: the same written to ``FILENAMES`` in ``directory``;
  returns ``{format: path}``.

Only the HTML page's plots need matplotlib, an optional package (imported when a plot is drawn): without it the page
is rendered all the same, every table and text in it, each plot replaced by a note (``MATPLOTLIB_MISSING``). The document
is the gate's (schema 1); what each part of the report shows, and two keys it reads that are optional, are in
docs/validation.md: ``run.thresholds.write_lat_usec`` (the absolute latency limit the gate applied) and
``hosts.*.delivery[].{serial,part_number,psid}_expected`` (what the asset list or the matrix expected of a NIC).
"""

from __future__ import annotations

import html
import io
import json
import math
import operator
import os
import re
import statistics
import xml.etree.ElementTree as ET
from datetime import datetime
from typing import Any, Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of, natural_key
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._gate import applied_limit as gate_limit
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._gate import nccl_per_rail
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._report import csv_table, markdown_table

SCHEMA = 1
FORMATS = ("html", "md", "csv", "json", "junit")
FILENAMES = {
    "html": "handover.html", "md": "handover.md", "csv": "handover.csv", "json": "handover.json",
    "junit": "handover-junit.xml",
}
STATUSES = ("passed", "quarantined", "not_retested")
# What the page says in place of each plot when matplotlib is not installed (after the plot's name).
MATPLOTLIB_MISSING = ("not drawn: the python library matplotlib, which draws the plots, is not installed on the controller "
                      "(an optional package of gpufabric.mlnx: pip install matplotlib, the version constraints.txt pins, "
                      "then render the report again); the tables hold the numbers")

# How a value passes against its limit (the gate's ``pass_if``) and the sign the report prints before the limit.
RULES = {">=": ("≥", operator.ge), "<=": ("≤", operator.le), "==": ("=", operator.eq)}
# The rule of a failure in a document from before ``pass_if``: the gate's own comparison of each measure.
MEASURE_RULES = {"ib_write_bw": ">=", "ib_write_lat": "<=", "nccl_busbw": ">=", "pcie": ">=", "link_flaps": "<=",
                 "symbol_errors": "<=", "ping": ">=", "effective_errors": "<=", "effective_ber": "<=",
                 "raw_ber": "<="}
PASS = "pass"                  # the verdict of a value that met its limit; every other verdict begins otherwise

# The CSV: one row per host x rail, the numbers as the document has them.
RAIL_COLUMNS = (
    ("host", "host"), ("rack", "rack"), ("rail", "rail"), ("interface", "interface"), ("leaf", "leaf"),
    ("peer", "peer"), ("write_bw_gbps", "write BW Gb/s"), ("write_bw_reverse_gbps", "reverse BW Gb/s"),
    ("port_rate_gbps", "port rate Gb/s"), ("write_bw_limit_gbps", "write BW limit Gb/s"),
    ("write_bw_verdict", "write BW verdict"), ("write_lat_usec", "write latency µs"),
    ("write_lat_limit_usec", "write latency limit µs"), ("write_lat_verdict", "write latency verdict"),
    ("ber_bits", "bits carried"), ("effective_errors", "post-FEC errors"), ("raw_ber", "raw BER"),
    ("certified_ber", "effective BER certified below"), ("leaf_port", "leaf port"),
    ("leaf_ber_bits", "leaf port bits carried"), ("leaf_effective_errors", "leaf port post-FEC errors"),
    ("leaf_raw_ber", "leaf port raw BER"), ("leaf_certified_ber", "leaf port effective BER certified below"),
    ("leaf_ber_unavailable", "leaf port counters not available"), ("status", "status"), ("failures", "failures"),
)
# The same rows in the page and the Markdown: each value beside the limit applied to it and its verdict.
RAIL_TABLE_COLUMNS = (
    ("host", "host"), ("rack", "rack"), ("rail", "rail"), ("interface", "interface"), ("leaf", "leaf"),
    ("peer", "peer"), ("port_rate_gbps", "port rate Gb/s"), ("bw_value", "write BW Gb/s"),
    ("bw_reverse_value", "reverse BW Gb/s"), ("bw_limit", "BW limit Gb/s"), ("bw_verdict", "BW verdict"),
    ("lat_value", "write latency µs"), ("lat_limit", "latency limit µs"), ("lat_verdict", "latency verdict"),
    ("status", "host status"), ("failures", "failures"),
)
SUMMARY_COLUMNS = (("item", "item"), ("value", "value"))
THRESHOLD_COLUMNS = (("measure", "measure"), ("run", "value compared"), ("rule", "passes when"),
                     ("limit", "limit"), ("unit", "unit"), ("consequence", "a failure"))
QUARANTINE_COLUMNS = (
    ("host", "host"), ("rack", "rack"), ("measure", "measure"), ("rail", "rail"), ("q_value", "value"),
    ("q_limit", "limit"), ("unit", "unit"), ("q_verdict", "verdict"), ("message", "reason"),
)
HOST_COLUMNS = (
    ("host", "host"), ("rack", "rack"), ("su", "SU"), ("status", "status"), ("rails", "rails"),
    ("nccl_value", "NCCL pair run GB/s per rail"), ("nccl_limit", "limit GB/s per rail"),
    ("nccl_verdict", "NCCL verdict"), ("failures", "failing measures"),
)
LATENCY_COLUMNS = (("count", "measures"), ("min", "min µs"), ("median", "median µs"), ("max", "max µs"),
                   ("threshold", "limit µs"), ("above", "above the limit"))
SU_COLUMNS = (("su", "SU"), ("hosts", "hosts (status)"), ("handed_over", "handed over"),
              ("su_value", "all-reduce GB/s per rail"), ("su_limit", "limit GB/s per rail"),
              ("su_verdict", "SU verdict"))
# The cells a reader checks against each other, by column key: (role, group). In the page each is a
# <td class="value|limit|verdict" data-check="group">; per row and group, the values pass against the limit (its sign
# says how) exactly when the verdict is "pass".
CHECKS = {
    "bw_value": ("value", "bw"), "bw_reverse_value": ("value", "bw"), "bw_limit": ("limit", "bw"),
    "bw_verdict": ("verdict", "bw"), "lat_value": ("value", "lat"), "lat_limit": ("limit", "lat"),
    "lat_verdict": ("verdict", "lat"), "nccl_value": ("value", "nccl"), "nccl_limit": ("limit", "nccl"),
    "nccl_verdict": ("verdict", "nccl"), "su_value": ("value", "su"), "su_limit": ("limit", "su"),
    "su_verdict": ("verdict", "su"), "q_value": ("value", "failure"), "q_limit": ("limit", "failure"),
    "q_verdict": ("verdict", "failure"), "eff_value": ("value", "effective"), "eff_limit": ("limit", "effective"),
    "eff_verdict": ("verdict", "effective"), "raw_value": ("value", "raw"), "raw_limit": ("limit", "raw"),
    "raw_verdict": ("verdict", "raw"),
}
DELIVERY_COLUMNS = (
    ("host", "host"), ("pci", "PCI"), ("serial", "SN"), ("serial_expected", "SN expected"),
    ("part_number", "PN"), ("part_number_expected", "PN expected"), ("psid", "PSID"),
    ("psid_expected", "PSID expected"), ("firmware", "firmware"), ("firmware_expected", "firmware expected"),
    ("ok", "ok"),
)
# expected SN/PN/PSID: optional keys of the document (the delivery check's asset list), shown when present
OPTIONAL_DELIVERY = ("serial_expected", "part_number_expected", "psid_expected")
VERSION_COLUMNS = (
    ("host", "host"), ("driver", "driver"), ("driver_expected", "driver expected"), ("nccl", "NCCL"),
    ("nccl_expected", "NCCL expected"), ("firmware", "firmware"), ("firmware_expected", "firmware expected"),
    ("ok", "ok"),
)
# The link errors per host x rail: the counters before and after the traffic, the bits the window carried, each
# verdict beside its limit, and the effective BER the window certifies (never a bare "OK").
BER_COLUMNS = (
    ("host", "host"), ("rail", "rail"), ("interface", "interface"), ("direction", "direction"),
    ("source", "counters from"), ("window", "window"), ("bits", "bits carried"),
    ("eff_counts", "post-FEC errors before → after"),
    ("eff_value", "post-FEC errors in the window"), ("eff_limit", "limit"), ("eff_verdict", "verdict"),
    ("raw_counts", "raw errors before → after"), ("raw_value", "raw BER"), ("raw_limit", "raw BER limit"),
    ("raw_verdict", "raw BER verdict"), ("certified", "effective BER certified"), ("moved", "counters moved"),
)
CABLING_COLUMNS = (
    ("host", "host"), ("rail", "rail"), ("interface", "interface"), ("expected", "LLDP expected"),
    ("seen", "LLDP seen"), ("ok", "ok"), ("host_link", "host link"), ("leaf_link", "leaf link"),
)

# The plots: one figure style for the three, colours picked for a white page.
HEATMAP_CMAP = "RdYlGn"
HISTOGRAM_COLOUR = "#4c72b0"
THRESHOLD_COLOUR = "#d62728"
SU_COLOURS = ("#1f77b4", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
SVG_SALT = "gpufabric.mlnx handover"
ANNOTATE_MAX_HOSTS = 64        # heat-map cells carry their value up to this many hosts
LEGEND_MAX_HOSTS = 16          # NCCL plot: one legend entry per host up to this many hosts


# ---------------------------------------------------------------- the document

def _mapping(value, parameter, what):
    if not isinstance(value, dict):
        raise InvalidValue("%s must be %s (a mapping), not %s" % (parameter, what, kind_of(value)), parameter=parameter)
    return value


def _list(value, parameter):
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidValue("%s must be a list, not %s" % (parameter, kind_of(value)), parameter=parameter)
    return value


def _document(results):
    """``results`` checked for what the report relies on (schema 1, hosts a mapping of mappings)."""
    _mapping(results, "results", "the validation gate's results document")
    if results.get("schema") != SCHEMA:
        raise InvalidValue("results.schema must be %d (the gate's results document, docs/validation.md), not %s"
                           % (SCHEMA, kind_of(results.get("schema"))), parameter="results.schema", allowed=[SCHEMA])
    hosts = _mapping(results.get("hosts"), "results.hosts", "the hosts (name -> results)")
    for name, host in hosts.items():
        _mapping(host, "results.hosts.%s" % name, "one host's results")
        for key in ("rails", "delivery", "failures"):
            for index, item in enumerate(_list(host.get(key), "results.hosts.%s.%s" % (name, key))):
                _mapping(item, "results.hosts.%s.%s[%d]" % (name, key, index), "a mapping")
    _mapping(results.get("run") or {}, "results.run", "the run")
    _mapping(results.get("su") or {}, "results.su", "the scalable units (SU -> results)")
    return results


def _get(mapping, key):
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return value if isinstance(value, dict) else {}


def _items(mapping, key):
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return value


def _hosts(results):
    """``[(name, host)]`` sorted by name."""
    return sorted(results["hosts"].items(), key=lambda item: str(item[0]))


def _rails(host):
    return sorted(_items(host, "rails"), key=lambda rail: (str(rail.get("rail")), ))


_natural = natural_key   # the sort key of names (module_utils/_validate.py)


def _thresholds(results):
    return _get(_get(results, "run"), "thresholds")


def _latencies(results):
    return [value for _name, host in _hosts(results) for rail in _rails(host)
            if (value := _number(rail.get("write_lat_usec"))) is not None]


def _latency_limit(results):
    """``(limit, how)``: the absolute ib_write_lat limit in µs and where it comes from, or ``(None, why)``."""
    thresholds = _thresholds(results)
    limit = _number(thresholds.get("write_lat_usec"))
    if limit is not None:
        return limit, "the gate's limit"
    for _name, host in _hosts(results):
        for failure in _items(host, "failures"):
            if failure.get("measure") == "ib_write_lat" and _number(failure.get("threshold")) is not None:
                return failure["threshold"], "the limit of the failing measures"
    factor, values = _number(thresholds.get("write_lat_factor")), _latencies(results)
    if factor is None or not values:
        return None, "no write_lat_factor or no latency measured"
    return gate_limit(factor * statistics.median(values)), "from this run's median"     # as the gate computes it


def _quarantine(results):
    """``[(host, failures)]``: the document's quarantine list, else the hosts whose status is quarantined."""
    entries = _items(results, "quarantine")
    if entries:
        return [(str(entry.get("host")), _items(entry, "failures")) for entry in entries]
    return [(name, _items(host, "failures")) for name, host in _hosts(results) if host.get("status") == "quarantined"]


def _counts(results):
    counts = {status: 0 for status in STATUSES}
    for _name, host in _hosts(results):
        counts[host.get("status")] = counts.get(host.get("status"), 0) + 1
    return counts


# ---------------------------------------------------------------- words

def _text(value):
    """A value as a person reads it: ``""`` for null, yes/no, numbers without trailing zeros."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        text = "%.2f" % value
        return text.rstrip("0").rstrip(".") if "." in text else text
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(item) for item in value)
    return str(value)


def _ok(value):
    return {True: "ok", False: "MISMATCH"}.get(value, "") if isinstance(value, bool) or value is None else str(value)


def _size(size):
    """A message size in bytes as ``8 B``, ``64 KiB``, ``1 GiB``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return "%s %s" % (_text(size / scale if size % scale else size // scale), unit)
    return "%s B" % _text(size)


def _failure_text(failure):
    message = failure.get("message")
    if message:
        return str(message)
    rail = failure.get("rail")
    return "%s%s: %s (threshold %s %s)" % (failure.get("measure"), "" if rail is None else " on rail %s" % rail,
                                           _text(failure.get("value")), _text(failure.get("threshold")),
                                           failure.get("unit") or "")


def _measures(failures):
    names = []
    for failure in failures:
        if str(failure.get("measure")) not in names:
            names.append(str(failure.get("measure")))
    return names


def _exact(value):
    """A limit as the gate holds it, every digit of it: ``42.3``, ``360``, ``2.345``."""
    if isinstance(value, float) and math.isfinite(value):
        return str(int(value)) if value.is_integer() else repr(value)
    return _text(value)


def _limit(limit, rule):
    """The limit as the page shows it: its sign (how a value passes) and the limit, ``≥ 42.3``."""
    if limit is None:
        return ""
    if rule not in RULES:
        return _text(limit)
    return "%s %s" % (RULES[rule][0], _exact(limit) if _number(limit) is not None else _text(limit))


def _passes(value, limit, rule):
    """True/False: the value against the limit by the rule; None when they cannot be compared."""
    if value is None or limit is None or rule not in RULES:
        return None
    if (_number(value) is None) != (_number(limit) is None):
        return None
    try:
        return bool(RULES[rule][1](value, limit))
    except TypeError:
        return None


def _shown(value, limit=None, rule=None):
    """A measured value with the decimals it needs for the value shown to compare with the limit shown as the value
    itself does: 42.2999 against 42.3 is shown 42.2999, never 42.3 (two decimals when that is enough)."""
    if _number(value) is None or isinstance(value, int):
        return _text(value)
    truth = _passes(value, limit, rule) if _number(limit) is not None else None
    for digits in range(2, 13):
        text = ("%.*f" % (digits, value)).rstrip("0").rstrip(".")
        if truth is None or RULES[rule][1](float(text), limit) == truth:
            return text
    return repr(value)


def _sci(value, limit=None, rule=None):
    """A BER (or a bit count) in scientific notation with the digits it needs for the value shown to compare with
    the limit shown as the value itself does (1.000000003e-05 against 1e-05, never 1.00e-05)."""
    if _number(value) is None:
        return _text(value)
    truth = _passes(value, limit, rule) if _number(limit) is not None and rule in RULES else None
    for digits in range(2, 16):
        text = "%.*e" % (digits, value)
        if truth is None or RULES[rule][1](float(text), limit) == truth:
            return text
    return repr(float(value))


def _ber_rows(results):
    """Two rows per host x rail with the link's error counters over the gate's window: what the host's NIC received
    (``rails[].ber``, leaf -> host) and what its leaf's port received (``rails[].leaf_ber``, host -> leaf) - or why
    the leaf's side was not measured (never a pass)."""
    thresholds, rows = _thresholds(results), []
    limits = {"effective": _number(thresholds.get("effective_errors")), "raw": _number(thresholds.get("raw_ber")),
              "ber": _number(thresholds.get("effective_ber")),
              "confidence": _number(thresholds.get("ber_confidence"))}
    for name, host in _hosts(results):
        for rail in _rails(host):
            for key, side, direction in (("ber", None, "leaf → host"), ("leaf_ber", "leaf", "host → leaf")):
                ber = rail.get(key)
                if isinstance(ber, dict):
                    rows.append(_ber_row(results, name, host, rail, ber, side, direction, limits))
    return rows


def _ber_row(results, name, host, rail, ber, side, direction, limits):
    """One direction of one rail's link in the "Link errors and BER" table."""
    before, after = _get(ber, "before"), _get(ber, "after")
    counters_failed = [f for f in _rail_failures(host, "phy_counters", rail.get("rail")) if f.get("side") == side]
    row = {"host": name, "rail": rail.get("rail"), "interface": rail.get("interface"), "direction": direction,
           "source": ber.get("source"), "_bad": bool(counters_failed or ber.get("moved"))}
    if ber.get("unavailable"):
        return dict(row, window="", bits="", eff_verdict="not available", raw_verdict="not available",
                    eff_limit=_limit(limits["effective"], "<="), raw_limit=_limit(limits["raw"], "<="),
                    certified="not available: %s" % _text(ber["unavailable"]), moved="unknown")
    if ber.get("error"):
        return dict(row, window="", bits="", eff_verdict="fail: no value", raw_verdict="fail: no value",
                    certified="none: %s" % _text(ber["error"]), moved="unknown")

    def counts(key):
        return "%s → %s" % (_text(before.get(key)), _text(after.get(key)))

    def verdict(measure, value, limit):
        return _verdict(results, name, measure, [value], limit, "<=", [], rail.get("rail"))
    certified, ber_limit = ber.get("certified_ber"), limits["ber"]
    if _number(certified) is not None:
        meets = "" if ber_limit is None else (
            "; meets the %s limit" % _exact(ber_limit) if certified <= ber_limit
            else "; the window is too short to certify %s" % _exact(ber_limit))
        certified_text = "< %s at %s %%%s" % (_sci(certified), _text((limits["confidence"] or 0.95) * 100), meets)
    else:
        certified_text = ""
    row.update({
        "window": ("%s s (%s)" % (_text(ber.get("seconds")), _text(ber.get("bits_from"))) if ber.get("seconds")
                   is not None else _text(ber.get("bits_from"))),
        "bits": _sci(ber.get("bits")), "eff_counts": counts("effective_errors"),
        "eff_value": _text(ber.get("effective_errors")), "eff_limit": _limit(limits["effective"], "<="),
        "eff_verdict": verdict("effective_errors", ber.get("effective_errors"), limits["effective"]),
        "raw_counts": counts("raw_errors"), "raw_value": _sci(ber.get("raw_ber"), limits["raw"], "<="),
        "raw_limit": _limit(limits["raw"], "<="),
        "raw_verdict": verdict("raw_ber", ber.get("raw_ber"), limits["raw"]),
        "certified": certified_text,
        "moved": "yes: %s" % ", ".join(k for k in ("effective_errors", "raw_errors", "link_down")
                                       if ber.get(k)) if ber.get("moved") else "no"})
    return row


def _status(results, name):
    return _get(results["hosts"], name).get("status")


def _handed_over(status):
    return status in ("passed", "not_retested")


def _rail_failures(host, measure=None, rail=None):
    return [f for f in _items(host, "failures") if (measure is None or f.get("measure") == measure)
            and (rail is None or (f.get("rail") is not None and str(f.get("rail")) == str(rail)))]


def _against(results, name, measure, others, rail=None):
    """The verdict of a pair measure of host ``name`` that missed its limit: whom the gate counted it against - the
    host itself when it has that failure, else the other host(s) of the run whose own failures explain it (the
    gate's attribution, docs/validation.md)."""
    host = _get(results["hosts"], name)
    if _rail_failures(host, measure, rail):
        return "fail"
    explained = [str(o) for o in others if o != name and _rail_failures(_get(results["hosts"], o), None, rail)]
    if explained:
        return "fail, counted against %s (%s own facts explain it)" % (
            ", ".join(explained), "its" if len(explained) == 1 else "their")
    return "fail, not counted against %s" % name


def _verdict(results, name, measure, values, limit, rule, others, rail=None):
    """The verdict of a group of values (a rail's two directions, one NCCL run) against one limit: ``pass`` when
    each value passes; else whom the gate counted it against."""
    host = _get(results["hosts"], name)
    failed_run = any(f.get("value") is None for f in _rail_failures(host, measure, rail))
    values = [v for v in values if v is not None]
    if failed_run and not values:
        return "fail: the run failed, no value"
    if not values:
        return "not measured"
    if limit is None or rule not in RULES:
        return "no limit applied"
    if failed_run:
        return "fail: a run failed, no value"
    if all(_passes(v, limit, rule) for v in values):
        return PASS
    return _against(results, name, measure, others, rail)


# ---------------------------------------------------------------- the rows (one set for every format)

def _bw_limit(results, rail):
    """The ib_write_bw limit the gate applied to a rail (Gb/s): the rail's own, else fraction x its port rate."""
    limit = _number(rail.get("write_bw_limit_gbps"))
    if limit is not None:
        return limit
    fraction, rate = _number(_thresholds(results).get("write_bw_fraction")), _number(rail.get("port_rate_gbps"))
    return gate_limit(fraction * rate) if fraction is not None and rate else None


def _lat_limit(results, rail):
    limit = _number(rail.get("write_lat_limit_usec"))
    return limit if limit is not None else _latency_limit(results)[0]


def rail_rows(results) -> list[dict]:
    """One row per host x rail (``RAIL_COLUMNS``; a host without rails has one row without a rail). ``failures``:
    the messages of the failures on that rail, then those of the host that name no rail, joined by ``; ``. Each
    measure has the limit the gate applied to it and its verdict (``PASS``, or whom the gate counted it against)."""
    results = _document(results)
    rows = []
    for name, host in _hosts(results):
        failures = _items(host, "failures")
        host_wide = [_failure_text(f) for f in failures if f.get("rail") is None]
        for rail in _rails(host) or [{}]:
            on_rail = [_failure_text(f) for f in failures if rail and f.get("rail") is not None
                       and str(f.get("rail")) == str(rail.get("rail"))]
            bw_limit, lat_limit = _bw_limit(results, rail), _lat_limit(results, rail)
            bw = [_number(rail.get("write_bw_gbps")), _number(rail.get("write_bw_reverse_gbps"))]
            lat = _number(rail.get("write_lat_usec"))
            others = [rail.get("peer")]
            ber = rail.get("ber") if isinstance(rail.get("ber"), dict) else {}
            leaf_ber = rail.get("leaf_ber") if isinstance(rail.get("leaf_ber"), dict) else {}
            rows.append({
                "host": name, "rack": host.get("rack"), "rail": rail.get("rail"), "interface": rail.get("interface"),
                "leaf": rail.get("leaf"), "peer": rail.get("peer"), "write_bw_gbps": rail.get("write_bw_gbps"),
                "write_bw_reverse_gbps": rail.get("write_bw_reverse_gbps"), "port_rate_gbps": rail.get("port_rate_gbps"),
                "write_bw_limit_gbps": bw_limit,
                "write_bw_verdict": _verdict(results, name, "ib_write_bw", bw, bw_limit, ">=", others,
                                             rail.get("rail")) if rail else "",
                "write_lat_usec": rail.get("write_lat_usec"), "write_lat_limit_usec": lat_limit,
                "write_lat_verdict": _verdict(results, name, "ib_write_lat", [lat], lat_limit, "<=", others,
                                              rail.get("rail")) if rail else "",
                "ber_bits": ber.get("bits"), "effective_errors": ber.get("effective_errors"),
                "raw_ber": ber.get("raw_ber"), "certified_ber": ber.get("certified_ber"),
                "leaf_port": rail.get("leaf_port"), "leaf_ber_bits": leaf_ber.get("bits"),
                "leaf_effective_errors": leaf_ber.get("effective_errors"), "leaf_raw_ber": leaf_ber.get("raw_ber"),
                "leaf_certified_ber": leaf_ber.get("certified_ber"),
                "leaf_ber_unavailable": leaf_ber.get("unavailable"), "status": host.get("status"), "failures": "; ".join(on_rail + host_wide),
                "_bad": bool(on_rail or host_wide),
            })
            rows[-1].update({
                "bw_value": _shown(bw[0], bw_limit, ">="), "bw_reverse_value": _shown(bw[1], bw_limit, ">="),
                "bw_limit": _limit(bw_limit, ">="), "bw_verdict": rows[-1]["write_bw_verdict"],
                "lat_value": _shown(lat, lat_limit, "<="), "lat_limit": _limit(lat_limit, "<="),
                "lat_verdict": rows[-1]["write_lat_verdict"]})
    return rows


def _summary_rows(results):
    run, counts = _get(results, "run"), _counts(results)
    handover = [str(name) for name in _list(results.get("handover"), "results.handover")]
    rows = [
        {"item": "matrix", "value": run.get("matrix")},
        {"item": "NCCL expected", "value": run.get("nccl_expected")},
        {"item": "run started", "value": run.get("started")},
        {"item": "run finished", "value": run.get("finished")},
        {"item": "verdict", "value": {"handed_over": "every host handed over",
                                      "quarantined": "some hosts quarantined"}.get(results.get("status"),
                                                                                   results.get("status")),
         "_bad": results.get("status") == "quarantined"},
        {"item": "hosts", "value": len(results["hosts"])},
        {"item": "passed", "value": counts.get("passed", 0)},
        {"item": "quarantined", "value": counts.get("quarantined", 0), "_bad": counts.get("quarantined", 0) > 0},
        {"item": "not retested (passed before, nothing changed)", "value": counts.get("not_retested", 0)},
        {"item": "handed over", "value": "%d: %s" % (len(handover), ", ".join(handover)) if handover else "0"},
    ]
    for status in sorted(set(counts) - set(STATUSES), key=str):
        rows.append({"item": "status %s" % _text(status), "value": counts[status], "_bad": True})
    return rows


def _rates(results):
    """The port rates (Gb/s) of the document's rails, slowest first."""
    return sorted({rail["port_rate_gbps"] for _n, host in _hosts(results) for rail in _rails(host)
                   if _number(rail.get("port_rate_gbps")) is not None})


def _nccl_floor(thresholds, rate):
    """The gate's per-rail NCCL floor at a port rate (``_gate.nccl_per_rail``): fraction x GB/s per 400G x rate/400."""
    fraction, per_400g = _number(thresholds.get("nccl_fraction")), _number(thresholds.get("nccl_gbs_per_400g"))
    if fraction is None or per_400g is None:
        return _number(thresholds.get("nccl_busbw_per_rail_gbs")) if rate == 400 else None
    return nccl_per_rail(rate, {"nccl_fraction": fraction, "nccl_gbs_per_400g": per_400g})


def _at_rates(limit_of, rates, rule):
    """``≥ 360 (400G)``, one per port rate of the document (``≥ 360`` alone for 400G only)."""
    parts = [(rate, limit_of(rate)) for rate in rates or [400]]
    parts = [(rate, limit) for rate, limit in parts if limit is not None]
    if len(parts) == 1 and parts[0][0] == 400:
        return _limit(parts[0][1], rule)
    return "; ".join("%s (%sG)" % (_limit(limit, rule), _exact(float(rate))) for rate, limit in parts)


def _threshold_rows(results):
    """Every limit as the gate applied it (``run.thresholds``), in the unit of the value it was applied to."""
    thresholds = _thresholds(results)
    limit, how = _latency_limit(results)
    fraction = _number(thresholds.get("write_bw_fraction"))
    rates = _rates(results)
    min_size = _number(thresholds.get("nccl_min_size"))
    nccl_rule = "the per-rail floor"
    if thresholds.get("nccl_fraction") is not None:
        nccl_rule = "%s x %s GB/s x port rate / 400G" % (_text(thresholds.get("nccl_fraction")),
                                                         _text(thresholds.get("nccl_gbs_per_400g")))
    rows = [
        {"measure": "ib_write_bw", "run": "each rail, each direction: BW average (its pair's perftest)",
         "rule": ">= %s x port rate" % _text(fraction) if fraction is not None else "",
         "limit": _at_rates(lambda rate: gate_limit(fraction * rate), rates, ">=") if fraction is not None else "",
         "unit": "Gb/s", "consequence": "quarantines the host whose own facts explain it (both when neither's do)"},
        {"measure": "ib_write_lat", "run": "each rail: t_avg",
         "rule": _latency_rule(results),
         "limit": "" if limit is None else "%s (%s)" % (_limit(limit, "<="), how), "unit": "µs",
         "consequence": "quarantines the host whose own facts explain it (both when neither's do)"},
        {"measure": "nccl_busbw (pair run)", "run": "each host's pair world, sizes 1 GiB to 8 GiB: the average bus "
         "bandwidth per rail", "rule": ">= " + nccl_rule,
         "limit": _at_rates(lambda rate: _nccl_floor(thresholds, rate), rates, ">="), "unit": "GB/s per rail",
         "consequence": "quarantines the host whose own facts explain it (both when neither's do)"},
        {"measure": "nccl_busbw (SU run)", "run": "each SU's world (its hosts tested in this run): the average bus "
         "bandwidth per rail of %s" % ("its large sizes" if min_size is None
                                       else "the sizes >= %s" % _size(int(min_size))),
         "rule": ">= " + nccl_rule + " (the slowest port of the world)",
         "limit": _at_rates(lambda rate: _nccl_floor(thresholds, rate), rates, ">="), "unit": "GB/s per rail",
         "consequence": "the SU verdict only: quarantines no host"},
    ]
    for key, unit in (("link_flaps", "link-down events during the run"),
                      ("symbol_errors", "symbol errors during the run"),
                      ("effective_errors", "errors FEC could not correct during the run")):
        if thresholds.get(key) is not None:
            rows.append({"measure": key, "run": "each rail: the growth of its PHY counter", "rule": "<= the limit",
                         "limit": _limit(thresholds[key], "<="), "unit": unit,
                         "consequence": "quarantines the host"})
    for key, run in (("effective_ber", "each rail: post-FEC errors / bits carried in the window"),
                     ("raw_ber", "each rail: bits FEC corrected / bits carried in the window")):
        if thresholds.get(key) is not None:
            rows.append({"measure": key, "run": run, "rule": "<= the limit", "limit": _limit(thresholds[key], "<="),
                         "unit": "errors per bit", "consequence": "quarantines the host"})
    return rows


def _latency_rule(results):
    """How the latency limit came about: factor x the run's median, or an absolute limit the inventory set."""
    thresholds, run = _thresholds(results), _get(results, "run")
    factor, median = _number(thresholds.get("write_lat_factor")), _number(run.get("lat_median_usec"))
    limit = _number(thresholds.get("write_lat_usec"))
    if limit is not None and factor is not None and median is not None and limit != gate_limit(factor * median):
        return "<= the absolute limit (write_lat_usec)"
    if factor is None:
        return "<= the limit"
    return "<= %s x the run's median%s" % (_text(factor), "" if median is None else " (%s µs)" % _text(float(median)))


def _failure_rule(failure):
    rule = failure.get("pass_if")
    return rule if rule in RULES else MEASURE_RULES.get(str(failure.get("measure")))


def _quarantine_rows(results):
    rows = []
    for name, failures in _quarantine(results):
        host = _get(results["hosts"], name)
        for failure in failures or [{"measure": "", "message": "quarantined (no failure recorded)"}]:
            rule, limit = _failure_rule(failure), failure.get("threshold")
            rows.append({"host": name, "rack": host.get("rack"), "measure": failure.get("measure"),
                         "rail": failure.get("rail"), "value": failure.get("value"),
                         "threshold": limit, "unit": failure.get("unit"),
                         "q_value": _shown(failure.get("value"), limit, rule), "q_limit": _limit(limit, rule),
                         "q_verdict": "fail" if failure.get("value") is not None else "fail: no value",
                         "message": _failure_text(failure), "_bad": True})
    return rows


def _nccl_verdict(results, name, nccl):
    value, limit = _number(nccl.get("avg_busbw_gbs")), _number(nccl.get("threshold_gbs"))
    peers = [p for p in _list(nccl.get("peers"), "results.hosts.%s.nccl.peers" % name) if p != name]
    if nccl.get("errors"):
        return "fail: the run failed"
    return _verdict(results, name, "nccl_busbw", [value], limit, ">=", peers)


def _host_rows(results):
    rows = []
    for name, host in _hosts(results):
        nccl = _get(host, "nccl")
        value, limit = _number(nccl.get("avg_busbw_gbs")), _number(nccl.get("threshold_gbs"))
        rows.append({"host": name, "rack": host.get("rack"), "su": host.get("su"), "status": host.get("status"),
                     "rails": len(_rails(host)), "avg_busbw_gbs": nccl.get("avg_busbw_gbs"),
                     "nccl_value": _shown(value, limit, ">="), "nccl_limit": _limit(limit, ">="),
                     "nccl_verdict": _nccl_verdict(results, name, nccl) if nccl else "",
                     "failures": ", ".join(_measures(_items(host, "failures"))),
                     "_bad": host.get("status") not in ("passed", "not_retested")})
    return rows


def _latency_rows(results):
    values = _latencies(results)
    limit, _how = _latency_limit(results)
    if not values:
        return [{"count": 0}]
    above = sum(1 for value in values if limit is not None and value > limit)
    return [{"count": len(values), "min": float(min(values)), "median": float(statistics.median(values)),
             "max": float(max(values)), "threshold": None if limit is None else float(limit), "above": above,
             "_bad": above > 0}]


def _sus(results):
    return sorted(((str(su), entry) for su, entry in (results.get("su") or {}).items() if isinstance(entry, dict)),
                  key=lambda item: _natural(item[0]))


def _su_verdict(results, entry, members):
    """What an SU verdict means: whether the SU's own all-reduce world (its hosts tested in this run, together) met
    the limit - ``PASS``, or why not. It is a verdict on the world: it hands over and quarantines no host (each host
    is judged by its pair runs and its own facts); a world runs at its slowest member's pace, so a quarantined
    member explains a low result and the verdict names it."""
    value, limit = _number(entry.get("avg_busbw_gbs")), _number(entry.get("threshold_gbs"))
    errors = _list(entry.get("errors"), "results.su.errors")
    quarantined = [h for h in members if _status(results, h) == "quarantined"]
    if errors:
        return "fail: the run failed (%s)" % "; ".join(_text(e) for e in errors[:2])
    if value is None:
        return "not measured"
    if limit is None:
        return "no limit applied"
    if _passes(value, limit, ">="):
        return PASS
    if quarantined:
        return "below the limit, explained by its quarantined host%s %s (the world runs at its slowest member's " \
               "pace)" % ("" if len(quarantined) == 1 else "s", ", ".join(quarantined))
    return "below the limit, and no host of the world is quarantined: each passed its own pair runs and facts " \
           "(an SU run quarantines no host)"


def _su_rows(results):
    rows = []
    for su, entry in _sus(results):
        members = [str(h) for h in _list(entry.get("hosts"), "results.su.%s.hosts" % su)]
        value, limit = _number(entry.get("avg_busbw_gbs")), _number(entry.get("threshold_gbs"))
        handed = [h for h in members if _handed_over(_status(results, h))]
        verdict = _su_verdict(results, entry, members)
        statuses = [(h, _text(_status(results, h) or "not in the report").replace("_", " ")) for h in members]
        rows.append({"su": su, "hosts": ", ".join("%s (%s)" % pair for pair in statuses),
                     "handed_over": "%d of %d" % (len(handed), len(members)),
                     "avg_busbw_gbs": entry.get("avg_busbw_gbs"), "threshold_gbs": entry.get("threshold_gbs"),
                     "su_value": _shown(value, limit, ">="), "su_limit": _limit(limit, ">="), "su_verdict": verdict,
                     "_bad": verdict != PASS})
    return rows


def _nccl_size_rows(results):
    """Bus bandwidth by message size, one column per SU (``su:<name>``): the NCCL plot's SU lines as a table."""
    sus = _sus(results)
    table = {}
    for su, entry in sus:
        for row in _items(entry, "rows"):
            if _number(row.get("size")) is not None:
                table.setdefault(row["size"], {})["su:%s" % su] = row.get("busbw")
    rows = [dict({"size": _size(size)}, **by_su) for size, by_su in sorted(table.items())]
    return rows, [("size", "size")] + [("su:%s" % su, "SU %s bus BW GB/s per rail" % su) for su, _e in sus]


def _present(columns, rows, optional):
    """``columns`` without those of ``optional`` that no row has a value for."""
    return [(key, title) for key, title in columns
            if key not in optional or any(row.get(key) is not None for row in rows)]


def _delivery_rows(results):
    rows = []
    for name, host in _hosts(results):
        for nic in _items(host, "delivery"):
            row = {key: nic.get(key) for key, _title in DELIVERY_COLUMNS if key not in ("host", "ok")}
            # other firmware than the matrix's pin: flagged, not a delivery verdict (the firmware step's to burn)
            other_firmware = nic.get("firmware_ok") is False
            rows.append(dict(row, host=name, ok=_ok(nic.get("ok")) or ("firmware differs" if other_firmware else ""),
                             _bad=nic.get("ok") is False or other_firmware))
    return rows


def _version_rows(results):
    nccl_expected = _get(results, "run").get("nccl_expected")
    rows = []
    for name, host in _hosts(results):
        versions = _get(host, "versions")
        nics = _items(host, "delivery")
        firmware = sorted({str(n.get("firmware")) for n in nics if n.get("firmware") is not None})
        expected = sorted({str(n.get("firmware_expected")) for n in nics if n.get("firmware_expected") is not None})
        problems = [
            versions.get("driver_expected") is not None and versions.get("driver") != versions.get("driver_expected"),
            nccl_expected is not None and versions.get("nccl") != nccl_expected,
            any(n.get("firmware_expected") is not None and n.get("firmware") != n.get("firmware_expected")
                for n in nics),
        ]
        rows.append({"host": name, "driver": versions.get("driver"), "driver_expected": versions.get("driver_expected"),
                     "nccl": versions.get("nccl"), "nccl_expected": nccl_expected, "firmware": ", ".join(firmware),
                     "firmware_expected": ", ".join(expected), "ok": _ok(not any(problems)), "_bad": any(problems)})
    return rows


def _link_text(state, speed, mtu):
    return " ".join(_text(v) for v in (state, speed, "MTU %s" % _text(mtu) if mtu is not None else None) if v is not None)


def _cabling_rows(results):
    rows = []
    for name, host in _hosts(results):
        for rail in _rails(host):
            lldp, link = _get(rail, "lldp"), _get(rail, "link")
            speed = link.get("host_speed_gbps")
            rows.append({"host": name, "rail": rail.get("rail"), "interface": rail.get("interface"),
                         "expected": lldp.get("expected"), "seen": lldp.get("seen"), "ok": _ok(lldp.get("ok")),
                         "host_link": _link_text(link.get("host_state"), None if speed is None else "%sG" % _text(speed),
                                                 link.get("host_mtu")),
                         "leaf_link": _link_text(link.get("leaf_state"), link.get("leaf_speed"), link.get("leaf_mtu")),
                         "_bad": lldp.get("ok") is False})
    return rows


THRESHOLDS_INTRO = ("Every limit as the gate applied it, in the unit of the value it was applied to. Every bus "
                    "bandwidth in this report is per rail (NCCL_TESTS_SPLIT: one communicator per rail, whose "
                    "bandwidth nccl-tests reports), never per host.")
BER_INTRO = ("Each rail's PHY error counters read before and after the traffic, at both ends of its cable: what the "
             "host's NIC received (leaf → host: ethtool -S on Ethernet, mlxlink on InfiniBand) and what the leaf's "
             "port received (host → leaf: NVUE's link phy counters) - the errors FEC could not correct (post-FEC) and "
             "the bits it corrected (raw), over the bits the window carried. A port counts every bit it could "
             "receive, idle ones too, so without a bit counter the window carries port rate x its seconds. No error "
             "in N bits bounds the effective BER below about 3/N at 95 % confidence: the bound the window certifies, "
             "which a longer window lowers. A leaf port without PHY counters (Spectrum-1, Cumulus Linux before 5.10) "
             "is shown not available: that direction is not certified.")
PAIRS_INTRO = ("Each host's pair run: the world of the host and its peer, one communicator per rail, sizes 1 GiB to 8 "
               "GiB; its verdict compares the run's average bus bandwidth per rail with the limit (dashed) - the "
               "hosts table has each value, limit and verdict.")
SU_INTRO = ("Each scalable unit's own all-reduce world: its hosts tested in this run together, one communicator per "
            "rail. The SU verdict says whether that world met the limit per rail; it hands over and quarantines no "
            "host - each host is judged by its pair runs and its own facts - and a world runs at its slowest "
            "member's pace, so a quarantined member explains a low result (the verdict names it).")


def _sections(results):
    """``[(anchor, title, intro, columns, rows)]``: the tables of the report, in their order."""
    nccl_rows, nccl_columns = _nccl_size_rows(results)
    delivery = _delivery_rows(results)
    return [
        ("summary", "Summary", "", SUMMARY_COLUMNS, _summary_rows(results)),
        ("thresholds", "Thresholds", THRESHOLDS_INTRO, THRESHOLD_COLUMNS, _threshold_rows(results)),
        ("quarantine", "Quarantine", "Hosts NOT handed over, with every failing measure: its value beside the limit "
         "the gate applied to it (the sign says how a value passes).", QUARANTINE_COLUMNS, _quarantine_rows(results)),
        ("hosts", "Hosts", "Each host's status and its NCCL pair run (the world of the host and its peer, one "
         "communicator per rail): the average bus bandwidth per rail against the limit per rail at its port rate. A "
         "verdict other than pass names the host the gate counted it against.", HOST_COLUMNS, _host_rows(results)),
        ("bandwidth", "Bandwidth per host x rail", "ib_write_bw of each host as client to its peer (write BW) and of "
         "the peer to it (reverse BW), and ib_write_lat, each beside the limit the gate applied to it; the heat "
         "map's colour is write BW / port rate.", RAIL_TABLE_COLUMNS, rail_rows(results)),
        ("latency", "Latency", "ib_write_lat of every host x rail.", LATENCY_COLUMNS, _latency_rows(results)),
        ("nccl", "NCCL SU runs", SU_INTRO, SU_COLUMNS, _su_rows(results)),
        ("nccl-sizes", "NCCL SU runs by message size", "Out-of-place bus bandwidth per rail of each SU's world.",
         nccl_columns, nccl_rows),
        ("delivery", "Delivery check", "Each NIC against what was expected (SN/PN/PSID/firmware).",
         _present(DELIVERY_COLUMNS, delivery, OPTIONAL_DELIVERY), delivery),
        ("versions", "Driver and firmware against the matrix", "", VERSION_COLUMNS, _version_rows(results)),
        ("cabling", "Cabling", "LLDP neighbour of each rail: expected (the cabling plan) against seen.",
         CABLING_COLUMNS, _cabling_rows(results)),
        ("link-errors", "Link errors and BER", BER_INTRO, BER_COLUMNS, _ber_rows(results)),
    ]


# ---------------------------------------------------------------- Markdown, CSV, JSON

def _md_text(value):
    """A cell for Markdown: the value as text, with ``&``, ``<``, ``>`` as entities (an inventory's host name is
    shown, never interpreted as HTML by a Markdown viewer)."""
    return html.escape(_text(value), quote=False)


def render_markdown(results) -> str:
    results = _document(results)
    run = _get(results, "run")
    out = ["# Hand-over report%s" % (" - matrix %s" % _md_text(run.get("matrix")) if run.get("matrix") else ""), "",
           "The plots (bandwidth heat map, latency histogram, NCCL pair runs and SU runs by message size) are in "
           "handover.html; the same numbers are in the tables below. Every bus bandwidth is per rail.", ""]
    for _anchor, title, intro, columns, rows in _sections(results):
        out += ["## %s" % title, ""]
        if intro:
            out += [intro, ""]
        if not rows:
            out += ["(none)", ""]
            continue
        cells = [{key: _md_text(row.get(key)) for key, _title in columns} for row in rows]
        out += [markdown_table(cells, columns=[(key, _md_text(t)) for key, t in columns])]
    return "\n".join(out).rstrip("\n") + "\n"


def render_csv(results) -> str:
    return csv_table(rail_rows(results), columns=RAIL_COLUMNS)


def render_json(results) -> str:
    return json.dumps(_document(results), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------- JUnit

_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(value):
    """Text XML 1.0 can carry (a tool's output line may hold control characters)."""
    return _XML_BAD.sub("?", _text(value))


def _seconds(run):
    try:
        started, finished = (datetime.fromisoformat(str(run.get(k)).replace("Z", "+00:00")) for k in ("started", "finished"))
        return max((finished - started).total_seconds(), 0.0)
    except (TypeError, ValueError):
        return 0.0


def render_junit(results) -> str:
    """JUnit XML: ``<testsuites>`` with one ``<testsuite>`` (the gate run) holding one ``<testcase>`` per host
    (classname ``gpufabric.mlnx.handover.<rack>``); a quarantined host has a ``<failure>`` whose text lists every
    failing measure, a host not retested is ``<skipped>``; an unknown status is an ``<error>``."""
    results = _document(results)
    run = _get(results, "run")
    quarantined = dict(_quarantine(results))
    suite = ET.Element("testsuite", name=_xml("gpufabric.mlnx validation gate%s"
                                              % (" (%s)" % run.get("matrix") if run.get("matrix") else "")))
    named = [key for key in ("matrix", "nccl_expected", "started", "finished") if run.get(key) is not None]
    if named:
        properties = ET.SubElement(suite, "properties")
        for key in named:
            ET.SubElement(properties, "property", name=key, value=_xml(run.get(key)))
    tallies = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for name, host in _hosts(results):
        status = host.get("status")
        case = ET.SubElement(suite, "testcase", name=_xml(name), time="0",
                             classname=_xml("gpufabric.mlnx.handover.%s" % (host.get("rack") or "unracked")))
        tallies["tests"] += 1
        if status == "quarantined" or name in quarantined:
            failures = quarantined.get(name) or _items(host, "failures")
            summary = "quarantined: %d failing measure%s (%s)" % (
                len(failures), "" if len(failures) == 1 else "s", ", ".join(_measures(failures)) or "none recorded")
            failure = ET.SubElement(case, "failure", type="quarantined", message=_xml(summary))
            failure.text = _xml("\n".join(_failure_text(f) for f in failures) or "quarantined (no failure recorded)")
            tallies["failures"] += 1
        elif status == "not_retested":
            ET.SubElement(case, "skipped", message="not retested: passed on an earlier run, nothing changed")
            tallies["skipped"] += 1
        elif status != "passed":
            ET.SubElement(case, "error", type="status", message=_xml("unknown status %r" % (status,)))
            tallies["errors"] += 1
    seconds = "%.3f" % _seconds(run)
    for key, value in tallies.items():
        suite.set(key, str(value))
    suite.set("time", seconds)
    if run.get("started"):
        suite.set("timestamp", _xml(str(run["started"]).replace("Z", "")))
    root = ET.Element("testsuites", name="gpufabric.mlnx hand-over", time=seconds,
                      **{key: str(value) for key, value in tallies.items()})
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# ---------------------------------------------------------------- plots (matplotlib, SVG)

def _matplotlib():
    """``(matplotlib, Figure, FigureCanvasAgg)``, imported now (only the HTML page's plots need it); None when
    matplotlib is not installed (an optional package: the page then has a note in place of each plot)."""
    try:
        import matplotlib  # pylint: disable=import-outside-toplevel
        from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    return matplotlib, Figure, FigureCanvasAgg


_RC = {
    "svg.fonttype": "none",          # text stays text: selectable, and the page's fonts draw it
    "svg.hashsalt": SVG_SALT,        # the ids matplotlib derives are the same on every run
    "text.parse_math": False,        # a "$" in a host name is a dollar sign, not mathtext
    "text.usetex": False,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
_SVG_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}


def _figure(width, height, loaded):
    _mpl, figure_class, canvas_class = loaded
    figure = figure_class(figsize=(width, height), layout="constrained")
    canvas_class(figure)     # the Agg canvas: no display, no pyplot, no global figure manager
    return figure


def _svg(figure, prefix, label):
    """The figure as an ``<svg>`` element for an HTML page: no XML prolog or DOCTYPE, no namespace URLs (the
    HTML parser knows SVG's), ids prefixed with ``prefix`` (four plots on one page), an accessible label."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata=_SVG_METADATA)
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg"):]

    def tag(match):
        text = match.group(0)
        text = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", text)
        text = re.sub(r'(\sid=")', r"\g<1>%s-" % prefix, text)
        text = text.replace('xlink:href="#', 'xlink:href="#%s-' % prefix).replace("url(#", "url(#%s-" % prefix)
        return text

    svg = re.sub(r"<[^>]+>", tag, svg)
    return svg.replace("<svg ", '<svg class="plot" role="img" aria-label="%s" ' % html.escape(label), 1).strip()


def _label(name):
    """A legend label: matplotlib leaves out labels that begin with ``_``."""
    name = str(name)
    return " " + name if name.startswith("_") else name


def _plot(draw, results, width, height, prefix, label):
    """The plot as an ``<svg>`` element; without matplotlib a note naming the plot and how to get it drawn."""
    loaded = _matplotlib()
    if loaded is None:
        return '<p class="plot-missing" id="%s-missing">%s %s</p>' % (
            prefix, html.escape(label[:1].upper() + label[1:] + ":"), html.escape(MATPLOTLIB_MISSING))
    with loaded[0].rc_context(_RC):
        figure = _figure(width, height, loaded)
        draw(figure, results)
        return _svg(figure, prefix, label)


def _draw_heatmap(figure, results):
    hosts = _hosts(results)
    rails = sorted({str(rail.get("rail")) for _n, host in hosts for rail in _rails(host)}, key=_natural)
    fraction = _number(_thresholds(results).get("write_bw_fraction"))
    ratios, labels, below = [], [], []
    for name, host in hosts:
        by_rail = {str(rail.get("rail")): rail for rail in _rails(host)}
        row, text = [], []
        for rail_name in rails:
            rail = by_rail.get(rail_name, {})
            bw, rate = _number(rail.get("write_bw_gbps")), _number(rail.get("port_rate_gbps"))
            ratio = bw / rate if bw is not None and rate else math.nan
            row.append(ratio)
            text.append("" if bw is None else _text(float(bw)))
            if fraction is not None and not math.isnan(ratio) and ratio < fraction:
                below.append((len(ratios), len(row) - 1))
        ratios.append(row)
        labels.append(text)
    axes = figure.add_subplot()
    if not hosts or not rails:
        axes.set_axis_off()
        axes.text(0.5, 0.5, "no rail measured", ha="center", va="center", transform=axes.transAxes)
        return
    import matplotlib as mpl  # pylint: disable=import-outside-toplevel
    from matplotlib.patches import Rectangle  # pylint: disable=import-outside-toplevel
    cmap = mpl.colormaps[HEATMAP_CMAP].with_extremes(bad="#d9d9d9")
    image = axes.imshow(ratios, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
    axes.set_xticks(range(len(rails)), ["rail %s" % r for r in rails])
    axes.set_yticks(range(len(hosts)), [_label(name) for name, _h in hosts])
    axes.tick_params(length=0)
    for spine in axes.spines.values():
        spine.set_visible(False)
    if len(hosts) <= ANNOTATE_MAX_HOSTS:
        for y, text in enumerate(labels):
            for x, value in enumerate(text):
                axes.text(x, y, value or "n/a", ha="center", va="center", fontsize=8,
                          color="#000000" if value else "#555555")
    for y, x in below:
        axes.add_patch(Rectangle((x - 0.46, y - 0.44), 0.92, 0.88, fill=False, edgecolor="#000000",
                                 linewidth=2.0, linestyle="--"))
    axes.set_title("ib_write_bw (Gb/s) per host x rail; colour = write BW / port rate"
                   + ("; dashed box: below %s x port rate" % _text(fraction) if fraction is not None else ""))
    colorbar = figure.colorbar(image, ax=axes, fraction=0.05, pad=0.02)
    colorbar.set_label("write BW / port rate")
    if fraction is not None:
        colorbar.ax.axhline(fraction, color="#000000", linewidth=1.5)


def _draw_latency(figure, results):
    values = _latencies(results)
    limit, how = _latency_limit(results)
    axes = figure.add_subplot()
    if not values:
        axes.set_axis_off()
        axes.text(0.5, 0.5, "no ib_write_lat measured", ha="center", va="center", transform=axes.transAxes)
        return
    low, high = min(values), max(values)
    span = (high - low) or max(abs(high) * 0.05, 0.01)
    axes.hist(values, bins=max(10, min(60, len(values) // 2)), range=(low - 0.05 * span, high + 0.05 * span),
              color=HISTOGRAM_COLOUR, edgecolor="#ffffff", linewidth=0.5, label="host x rail (%d)" % len(values))
    top = max(high, limit if limit is not None else high)
    axes.set_xlim(low - 0.1 * (top - low or span), top + 0.1 * (top - low or span))
    axes.axvline(statistics.median(values), color="#555555", linestyle=":", linewidth=1.2,
                 label="median %s µs" % _text(float(statistics.median(values))))
    if limit is not None:
        axes.axvline(limit, color=THRESHOLD_COLOUR, linestyle="--", linewidth=1.5,
                     label="threshold %s µs (%s)" % (_text(float(limit)), how))
    axes.set_xlabel("ib_write_lat (µs)")
    axes.set_ylabel("host x rail")
    axes.set_title("Latency distribution")
    axes.yaxis.get_major_locator().set_params(integer=True)
    axes.legend(loc="upper right", frameon=False)


def _curve(rows, sizes):
    points = sorted((row["size"], row["busbw"]) for row in rows if _number(row.get("size")) is not None
                    and row["size"] > 0 and _number(row.get("busbw")) is not None)
    sizes.extend(size for size, _bw in points)
    return [size for size, _bw in points], [bw for _size, bw in points]


def _size_axis(axes, sizes, nothing):
    """The message-size axis (log2, sizes as ``8 B``, ``1 GiB``), the bus bandwidth axis, the legend."""
    from matplotlib.ticker import FuncFormatter, NullFormatter  # pylint: disable=import-outside-toplevel
    if not sizes:
        axes.text(0.5, 0.5, nothing, ha="center", va="center", transform=axes.transAxes)
    else:
        axes.set_xscale("log", base=2)
        low, high = int(math.floor(math.log2(min(sizes)))), int(math.ceil(math.log2(max(sizes))))
        if low == high:
            low, high = low - 1, high + 1
            axes.set_xlim(2.0 ** low, 2.0 ** high)
        step = max(1, int(math.ceil((high - low + 1) / 12.0)))
        axes.set_xticks([2.0 ** k for k in range(low, high + 1, step)])
        axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: _size(int(round(value)))))
        axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_xlabel("message size (log2)")
    axes.set_ylabel("bus bandwidth per rail (GB/s)")
    axes.set_ylim(bottom=0)           # from zero: a run beside its limit as it is, no offset axis
    axes.grid(True, which="major", color="#e5e5e5", linewidth=0.6)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="upper left", frameon=False, fontsize=8)


def _draw_nccl_pairs(figure, results):
    """The pair runs alone: one line per host (its pair's world), and the limit of each host's run (per rail)."""
    axes, sizes = figure.add_subplot(), []
    hosts = [(name, host) for name, host in _hosts(results) if _items(_get(host, "nccl"), "rows")]
    many, grey_labelled = len(hosts) > LEGEND_MAX_HOSTS, False
    for name, host in hosts:
        x, y = _curve(_items(_get(host, "nccl"), "rows"), sizes)
        if not x:
            continue
        bad = host.get("status") == "quarantined"
        label = _label(name) + (" (quarantined)" if bad else "")
        if many and not bad:
            label = "_nolegend_" if grey_labelled else "hosts (%d)" % len(hosts)
            grey_labelled = True
        axes.plot(x, y, linewidth=1.0, linestyle="--" if bad else "-", alpha=0.9 if not many else 0.4,
                  color=THRESHOLD_COLOUR if bad else ("#9a9a9a" if many else None), label=label, marker=".",
                  markersize=3)
    limits = sorted({_get(host, "nccl")["threshold_gbs"] for _n, host in hosts
                     if _number(_get(host, "nccl").get("threshold_gbs")) is not None})
    for value in limits:
        axes.axhline(value, color=THRESHOLD_COLOUR, linestyle="--", linewidth=1.3,
                     label="limit %s GB/s per rail (on the run's average)" % _exact(float(value)))
    axes.set_title("NCCL pair runs: bus bandwidth per rail against message size")
    _size_axis(axes, sizes, "no NCCL pair run measured")


def _draw_nccl_su(figure, results):
    """The SU worlds alone: one line per SU, each SU's limit (per rail) over the sizes its verdict averages."""
    axes, sizes = figure.add_subplot(), []
    drawn = []
    for index, (su, entry) in enumerate(_sus(results)):
        x, y = _curve(_items(entry, "rows"), sizes)
        if x:
            colour = SU_COLOURS[index % len(SU_COLOURS)]
            axes.plot(x, y, linewidth=2.2, color=colour, marker=".", markersize=3,
                      label=_label("SU %s (%d hosts)" % (su, len(_list(entry.get("hosts"), "su.hosts")))))
            drawn.append((su, entry, x))
    min_size = _number(_thresholds(results).get("nccl_min_size"))
    seen = set()
    for su, entry, x in drawn:
        value = _number(entry.get("threshold_gbs"))
        if value is None:
            continue
        start = min_size if min_size is not None else min(x)
        first = value not in seen
        seen.add(value)
        axes.hlines(value, start, max(*x, start), color=THRESHOLD_COLOUR, linestyle="--", linewidth=1.3,
                    label=("SU limit %s GB/s per rail (on the average of the sizes >= %s)"
                           % (_exact(float(value)), _size(int(start)))) if first else "_nolegend_")
    axes.set_title("NCCL SU runs: bus bandwidth per rail against message size")
    _size_axis(axes, sizes, "no NCCL SU run measured")


def plots(results) -> dict:
    """``{"heatmap", "latency", "nccl_pairs", "nccl_su": <svg>...</svg>}``: the report's four plots as inline SVG
    (each a ``<p class="plot-missing">`` note instead when matplotlib is not installed)."""
    results = _document(results)
    hosts = len(results["hosts"])
    return {
        "heatmap": _plot(_draw_heatmap, results, 9.0, min(2.0 + 0.32 * max(hosts, 1), 60.0), "heatmap",
                         "bandwidth heat map per host and rail"),
        "latency": _plot(_draw_latency, results, 9.0, 3.6, "latency", "latency histogram"),
        "nccl_pairs": _plot(_draw_nccl_pairs, results, 9.0, 4.2, "nccl-pairs",
                            "NCCL pair runs: bus bandwidth per rail against message size"),
        "nccl_su": _plot(_draw_nccl_su, results, 9.0, 4.2, "nccl-su",
                         "NCCL SU runs: bus bandwidth per rail against message size"),
    }


# ---------------------------------------------------------------- HTML

_CSS = """
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; font-size: 14px; color: #1a1a1a;
       margin: 0 auto; max-width: 1200px; padding: 16px 24px; background: #ffffff; }
h1 { font-size: 22px; margin: 4px 0 12px 0; }
h2 { font-size: 17px; margin: 28px 0 8px 0; border-bottom: 1px solid #cccccc; padding-bottom: 4px; }
p.intro { margin: 4px 0 8px 0; color: #444444; }
table { border-collapse: collapse; margin: 6px 0 10px 0; font-size: 13px; }
th, td { border: 1px solid #cccccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td:first-child { white-space: nowrap; }
tr.bad td { background: #fde2e1; }
.cards { display: flex; gap: 12px; flex-wrap: wrap; margin: 8px 0 12px 0; }
.card { border: 1px solid #cccccc; border-radius: 6px; padding: 8px 14px; min-width: 150px; }
.card .n { font-size: 26px; font-weight: bold; }
.card.passed { border-color: #2ca02c; } .card.quarantined { border-color: #d62728; background: #fde2e1; }
.card.not_retested { border-color: #7f7f7f; }
section.quarantine { border: 2px solid #d62728; border-radius: 6px; padding: 4px 12px 8px 12px; }
section.quarantine h2 { border-bottom-color: #d62728; color: #b01c1c; }
svg.plot { max-width: 100%; height: auto; display: block; }
p.plot-missing { border: 1px dashed #999999; padding: 8px 12px; color: #444444; background: #fafafa; }
details summary { cursor: pointer; margin: 6px 0; }
"""


def _esc(value):
    return html.escape(_text(value), quote=True)


def _html_table(columns, rows):
    if not rows:
        return "<p>(none)</p>"
    out = ["<table>", "<thead><tr>" + "".join("<th>%s</th>" % _esc(title) for _key, title in columns) + "</tr></thead>",
           "<tbody>"]
    for row in rows:
        cells = []
        for key, _title in columns:
            check = CHECKS.get(key)
            cells.append("<td%s>%s</td>" % (' class="%s" data-check="%s"' % check if check else "", _esc(row.get(key))))
        out.append('<tr%s>' % (' class="bad"' if row.get("_bad") else "") + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def render_html(results) -> str:
    results = _document(results)
    run, counts = _get(results, "run"), _counts(results)
    svgs = plots(results)
    sections = {anchor: (title, intro, columns, rows) for anchor, title, intro, columns, rows in _sections(results)}
    title = "Hand-over report%s" % (" - matrix %s" % _text(run.get("matrix")) if run.get("matrix") else "")
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           "<title>%s</title>" % html.escape(title), "<style>%s</style>" % _CSS, "</head>", "<body>",
           "<h1>%s</h1>" % html.escape(title)]

    def section(anchor, extra="", css=""):
        head, intro, columns, rows = sections[anchor]
        out.append('<section id="%s"%s>' % (anchor, ' class="%s"' % css if css else ""))
        out.append("<h2>%s</h2>" % html.escape(head))
        if intro:
            out.append('<p class="intro">%s</p>' % html.escape(intro))
        out.append(extra)
        out.append(_html_table(columns, rows))
        out.append("</section>")

    cards = "".join('<div class="card %s"><div class="n">%d</div>%s</div>' % (status, counts.get(status, 0), word)
                    for status, word in (("passed", "passed"), ("quarantined", "quarantined"),
                                         ("not_retested", "not retested")))
    section("summary", '<div class="cards">%s</div>' % cards)
    section("thresholds")
    section("quarantine", css="quarantine")
    out.append('<section id="plots-bandwidth"><h2>%s</h2><p class="intro">%s</p>%s</section>'
               % (html.escape(sections["bandwidth"][0]), html.escape(sections["bandwidth"][1]), svgs["heatmap"]))
    out.append('<section id="plots-latency"><h2>Latency distribution</h2>%s</section>' % svgs["latency"])
    section("latency")
    out.append('<section id="plots-nccl-pairs"><h2>NCCL pair runs</h2><p class="intro">%s</p>%s</section>' % (
        html.escape(PAIRS_INTRO), svgs["nccl_pairs"]))
    section("hosts")
    section("nccl", svgs["nccl_su"])
    section("delivery")
    section("versions")
    section("cabling")
    section("link-errors")
    _head, _intro, columns, rows = sections["bandwidth"]
    out.append('<section id="rails"><h2>Every host x rail</h2><details><summary>%d rows (the CSV, handover.csv)'
               "</summary>%s</details></section>" % (len(rows), _html_table(columns, rows)))
    head, intro, columns, rows = sections["nccl-sizes"]
    out.append('<section id="nccl-sizes"><h2>%s</h2><details><summary>%s</summary>%s</details></section>'
               % (html.escape(head), html.escape(intro), _html_table(columns, rows)))
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- the API

_RENDERERS = {"html": render_html, "md": render_markdown, "csv": render_csv, "json": render_json,
              "junit": render_junit}


def _formats(formats):
    if isinstance(formats, str) or not isinstance(formats, (list, tuple)):
        raise InvalidValue("formats must be a list of %s, not %s" % (", ".join(FORMATS), kind_of(formats)),
                           parameter="formats", allowed=list(FORMATS))
    for index, name in enumerate(formats):
        if name not in _RENDERERS:
            raise InvalidValue("formats[%d] must be one of %s, not %s" % (index, ", ".join(FORMATS), kind_of(name)),
                               parameter="formats[%d]" % index, allowed=list(FORMATS))
    return list(dict.fromkeys(formats))


def render(results: dict[str, Any], formats: Sequence[str] = FORMATS) -> dict[str, str]:
    """``{format: text}`` of the hand-over report for each of ``formats`` (``FORMATS``)."""
    formats = _formats(formats)
    results = _document(results)
    return {name: _RENDERERS[name](results) for name in formats}


def write(results: dict[str, Any], directory: str, formats: Sequence[str] = FORMATS) -> dict[str, str]:
    """Render ``formats`` and write each to ``directory``/``FILENAMES[format]`` (UTF-8; the directory is made
    when missing); ``{format: path}``. Every format is rendered before any file is written."""
    texts = render(results, formats)
    os.makedirs(directory, exist_ok=True)
    paths = {}
    for name, text in texts.items():
        path = os.path.join(directory, FILENAMES[name])
        temporary = path + ".tmp"
        with open(temporary, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(temporary, path)
        paths[name] = path
    return paths
