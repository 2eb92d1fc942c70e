# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl-tests (``all_reduce_perf``, ``all_gather_perf``, ``sendrecv_perf``, ...): the text report, and the ``-J``
JSON file.

The text (NVIDIA/nccl-tests ``src/util.cu``): ``# nccl-tests version 2.19.6 nccl-headers=22907
nccl-library=22907`` (newer builds), ``# nThread ...``, the devices, a two-line header (``size count type redop root``
then ``time algbw busbw #wrong`` out of place and in place, ``cputime`` for ``-C``, per-iteration ``i_min i_max i_p99
i_cv%`` columns, a timestamp column), one row per size (``%12li  %12li  %8s  %6s  %6s`` then ``%7s  %6s  %6s  %6g``
twice; ``#wrong`` is ``N/A`` without ``-c``; a trace replay prints no out-of-place values), and the footer ``# Out of
bounds values : 0 OK``, ``# Avg bus bandwidth    : 66.4834 [OK|FAILED]`` (the verdict only with NCCL_TESTS_MIN_BW).
A run that died leaves its failure lines (``Test NCCL failure common.cu:...``, the `` .. host pid N: Test failure
common.cu:L`` backtrace, ``# error: ...``) in ``errors``. A log of several runs gives each in ``runs``, the last
one's values at the top.

Every generation (tests/fixtures/FORMAT_FACTS.md, nccl-tests): before 2.13 a header per test without ``root`` or
``redop`` and an ``error`` column (the largest difference, kept as ``error``); rank lines without ``Group`` before
2.13.4; ``[0x..]`` bus numbers before 2.14.1, PCI BDFs after; no version line before 2.17.4 - NCCL's own ``NCCL
version 2.19.3+cuda12.2`` line (bare, or after ``NCCL INFO``) gives the library's version then. Open MPI's
``--tag-output`` prefix (``[1,0]<stdout>:``) is read through.

The JSON (``-J FILE``): ``nccl_version`` (the library's version code), ``results[]`` with ``out_of_place`` /
``in_place`` (``time`` or ``cpu_time``, ``alg_bw``, ``bus_bw``, ``nwrong``), ``out_of_bounds{count,okay}``,
``average_bus_bandwidth{bandwidth,okay}``, ``errors[]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import (
    ParseError,
    all_lines,
    is_prompt,
)

# "# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807" (2.17.4 and later; 2.20 adds the git hash:
# "# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102")
_VERSION_RE = re.compile(r"^#\s*nccl-tests version (?P<tests>\S+)(?:.*?nccl-library=(?P<code>\d+))?")
# NCCL's own line, every nccl-tests generation: "host:pid:tid [0] NCCL INFO NCCL version 2.23.4+cuda12.4"
# (NCCL_DEBUG=INFO), or the bare "NCCL version 2.19.3+cuda12.2" the library prints with NCCL_DEBUG=VERSION or WARN
# (tests/fixtures/real/nccl_all_reduce_perf_bare_version_*) at the start of its line, whatever follows the version
# (trailing blanks, a carriage return, text). nccl-tests never prints it after a "#": such a line is a comment
_NCCL_INFO_VERSION_RE = re.compile(r"(?:NCCL INFO |^\s*)NCCL version (?P<version>\d+\.\d+\.\d+)(?:\+\S*)?(?:\s.*)?$")
# Open MPI's --tag-output prefix on every line of a rank ("[1,0]<stdout>:# nThread 1 ...")
_TAG_RE = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")
_START_RE = re.compile(r"^#\s*nThread\s+\d+")
# "#  Rank  0 Group  0 Pid     43 on nccl-allreduce-job0-mpiworker-0 device  0 [0x0f] NVIDIA A100-SXM4-40GB": rank 0
# prints one line per rank of the world (src/util.cu), so their number is the world's size as the launcher made it.
# Before 2.13.4 there is no Group ("#   Rank  0 Pid  14926 on v100-gpu-1 device  0 [0x00] ..."), before 2.0 no Pid;
# 2.14.1 and later print the PCI BDF ("[0000:04:00]") where older releases print the bus number ("[0x04]")
_RANK_RE = re.compile(r"^#\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?(?:\s+Pid\s+(?P<pid>\d+))?"
                      r"\s+on\s+(?P<host>\S+)\s+device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*?)\s*$")
# "#       size         count      type   redop    root     time ..." (2.13 and later); before 2.13 each test printed
# its own: no "root" for a reduction, no "redop" for a rooted one, "error" (the largest difference) for "#wrong"
_HEADER_RE = re.compile(r"^#\s+size\s+count\s+type\s+(?P<head>(?:(?:redop|root)\s+)*)(?P<rest>(?:time|cputime)\b.*)$")
_OOB_RE = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<count>\d+)\s*(?P<verdict>OK|FAILED)?\s*$")
_AVG_RE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<bw>\S+)\s*(?P<verdict>OK|FAILED)?\s*$")
_ERROR_RE = re.compile(r"Test (?:NCCL |CUDA )?failure|^#\s*error:|NCCL WARN|Invalid number of GPUs"
                       r"|Incompatible NCCL versions|Segmentation fault|Aborted|terminated|non-zero exit"
                       r"|(?i:\berror\b)")
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_NUMBER_RE = re.compile(r"^%s$" % _NUMBER)
_SIDE = ("time", "algbw", "busbw", "wrong")


def parse_nccl_tests(text: str | bytes | Sequence[str] | Mapping, *, tool: str = "nccl_tests") -> dict:
    """An nccl-tests report (text, or the ``-J`` file's text or data).

    Returns ``{"nccl_version": "2.19.3" or None, "rows": [{"size": 8, "count": 2, "type": "float", "redop": "sum",
    "root": -1, "out_of_place": {"time": 36.47, "algbw": 0.0, "busbw": 0.0, "wrong": 0}, "in_place": {...}}],
    "avg_busbw": 66.4834, "avg_busbw_check": "OK" | "FAILED" | None, "out_of_bounds": 0, "errors": [...],
    "ranks": [{"rank": 0, "group": 0, "pid": 43, "host": "node-0", "device": 0, "bus": "0x0f", "name": "NVIDIA
    A100-SXM4-40GB"}] (the "Using devices" lines: one per rank of the world; ``group`` / ``pid`` None where the
    release prints none), "runs": [<the same keys, per run>]}`` (``wrong`` None for ``N/A``; ``out_of_place`` None
    when not printed; ``redop`` / ``root`` None when the header has no such column; a side has ``error`` too under a
    pre-2.13 header).
    ParseError when the text is no nccl-tests report at all.
    """
    if isinstance(text, Mapping):
        return _from_json(dict(text), tool)
    if isinstance(text, (str, bytes)) and (text.decode("utf-8", "replace") if isinstance(text, bytes)
                                           else text).lstrip().startswith("{"):
        raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        try:
            data = json.loads(raw)
        except ValueError as err:
            raise ParseError(tool, "the -J file is not JSON: %s" % err) from err
        if not isinstance(data, Mapping):
            raise ParseError(tool, "the -J file holds %s, not an object" % type(data).__name__)
        return _from_json(dict(data), tool)
    return _from_text(all_lines(text, tool), tool)


# ---------------------------------------------------------------- text

def _new_run(version=None):
    return {"nccl_version": version, "rows": [], "avg_busbw": None, "avg_busbw_check": None, "out_of_bounds": None,
            "errors": [], "ranks": []}


def _started(runs, version):
    """A new run, appended to ``runs``."""
    runs.append(_new_run(version))
    return runs[-1]


def _from_text(lines, tool):
    runs, run, columns, version, seen = [], None, None, None, False
    for line in lines:
        text = _TAG_RE.sub("", line.text)
        if not text.strip() or (is_prompt(text) and not text.lstrip().startswith("#")):
            continue  # every line of the report starts with "#" - not a root prompt here
        match = _VERSION_RE.match(text)
        if match:
            version = _version(match.group("code")) if match.group("code") else version
            run, seen = _started(runs, version), True
            continue
        match = _NCCL_INFO_VERSION_RE.search(text)
        if match:
            version = match.group("version")
            if run is not None and run["nccl_version"] is None:
                run["nccl_version"] = version
            continue
        if _START_RE.match(text):
            if run is None or run["rows"] or run["avg_busbw"] is not None:
                run = _started(runs, version)
            seen = True
            continue
        match = _RANK_RE.match(text)
        if match:
            run = run or _started(runs, version)
            run["ranks"].append({"rank": int(match.group("rank")), "group": _int(match.group("group")),
                                 "pid": _int(match.group("pid")), "host": match.group("host"),
                                 "device": int(match.group("device")), "bus": match.group("bus"),
                                 "name": match.group("name")})
            continue
        match = _HEADER_RE.match(text)
        if match:
            columns = (match.group("head").split(), _columns(match.group("rest")))
            run, seen = run or _started(runs, version), True
            continue
        if text.lstrip().startswith("#"):
            _footer(text, run)
            if _ERROR_RE.search(text) and run is not None and text.lstrip().startswith("# error"):
                run["errors"].append(text.strip().lstrip("#").strip())
            continue
        row = _row(text, columns) if columns else None
        if row is not None:
            run["rows"].append(row)
            continue
        words = text.split()
        if columns and len(words) >= 2 and _NUMBER_RE.match(words[0]) and _NUMBER_RE.match(words[1]):
            # a size and a count, but not the columns the header names: a layout this parser does not know
            raise ParseError(tool, "a result row that does not fit the report's column header (%d head columns, "
                             "%d values)" % (3 + len(columns[0]), len(columns[1])), text, line.no)
        if _ERROR_RE.search(text):
            run = run or _started(runs, version)
            run["errors"].append(text.strip())
    if not seen and not any(r["errors"] for r in runs):
        raise ParseError(tool, "no nccl-tests report found (no '# nThread' line, result header or failure line)",
                         lines[0].text if lines else None, lines[0].no if lines else None)
    last = dict(runs[-1]) if runs else _new_run(version)
    last["runs"] = [dict(r) for r in runs]
    return last


def _int(text):
    return int(text) if text is not None else None


def _version(code):
    """NCCL_VERSION_CODE -> ``2.19.3`` (``major*10000 + minor*100 + patch`` since 2.9; ``major*1000 + minor*100 +
    patch`` before)."""
    value = int(code)
    if value >= 20900:
        return "%d.%d.%d" % (value // 10000, value % 10000 // 100, value % 100)
    return "%d.%d.%d" % (value // 1000, value % 1000 // 100, value % 100)


def _columns(rest):
    """The measure columns after ``root``: [(side, key)] - side ``out_of_place`` / ``in_place``, None to skip."""
    names = rest.split()
    out, side = [], "out_of_place"
    seen = set()
    for name in names:
        key = {"time": "time", "cputime": "time", "algbw": "algbw", "busbw": "busbw", "#wrong": "wrong",
               "error": "error"}.get(name)
        if key is not None and key in seen and side == "out_of_place":
            side = "in_place"
            seen = set()
        if key is not None:
            seen.add(key)
        out.append((side, key))
    return out


def _number(key, word):
    """``#wrong`` as an int, the times and bandwidths as floats (a large time prints without decimals)."""
    value = float(word)
    return int(value) if key == "wrong" and value.is_integer() else value


def _row(text, columns):
    """A result row under the header ``columns`` (the head words after ``type``, the measures)."""
    head_names, measures = columns
    width = 3 + len(head_names)
    words = text.split()
    if len(words) < width or not _NUMBER_RE.match(words[0]) or not _NUMBER_RE.match(words[1]):
        return None
    head, values = dict(zip(head_names, words[3:width])), words[width:]
    root = head.get("root")
    row = {"size": int(words[0]), "count": int(words[1]), "type": words[2], "redop": head.get("redop"),
           "root": (int(root) if _NUMBER_RE.match(root) else root) if root is not None else None,
           "out_of_place": None, "in_place": None}
    measures = list(measures)
    if len(values) < len(measures):
        # no out-of-place values (a trace replay): the values are the in-place ones
        measures = [entry for entry in measures if entry[0] == "in_place"] + \
                   [entry for entry in measures if entry[0] is None]
    if len(values) < len([m for m in measures if m[0] == "in_place"]):
        return None
    for (side, key), word in zip(measures, values):
        if key is None:
            continue
        if word == "N/A" and key in ("wrong", "error"):
            value = None
        elif _NUMBER_RE.match(word):
            value = _number(key, word)
        else:
            return None
        row[side] = dict(row[side] or {}, **{key: value})
    for side in ("out_of_place", "in_place"):
        if row[side] is not None:
            row[side] = dict({key: None for key in _SIDE}, **row[side])
    if row["in_place"] is None and row["out_of_place"] is None:
        return None
    return row


def _footer(text, run):
    if run is None:
        return
    match = _OOB_RE.match(text)
    if match:
        run["out_of_bounds"] = int(match.group("count"))
        return
    match = _AVG_RE.match(text)
    if match:
        try:
            run["avg_busbw"] = float(match.group("bw"))
        except ValueError:
            run["avg_busbw"] = None
        run["avg_busbw_check"] = match.group("verdict")


# ---------------------------------------------------------------- JSON

def _float(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _side(data):
    if not isinstance(data, Mapping):
        return None
    wrong = data.get("nwrong")
    return {"time": _float(data.get("time", data.get("cpu_time"))), "algbw": _float(data.get("alg_bw")),
            "busbw": _float(data.get("bus_bw")),
            "wrong": int(wrong) if isinstance(wrong, (int, float)) and not isinstance(wrong, bool) else None}


def _from_json(data, tool):
    results = data.get("results")
    if not isinstance(results, list):
        raise ParseError(tool, "an nccl-tests -J file has a results list; got keys %s" % ", ".join(sorted(map(str, data))))
    rows = []
    for item in results:
        if not isinstance(item, Mapping):
            continue
        root = item.get("root")
        try:
            root = int(str(root).strip())
        except ValueError:
            pass
        rows.append({"size": item.get("size"), "count": item.get("count"), "type": item.get("type"),
                     "redop": item.get("redop"), "root": root, "out_of_place": _side(item.get("out_of_place")),
                     "in_place": _side(item.get("in_place"))})
    oob = data.get("out_of_bounds") if isinstance(data.get("out_of_bounds"), Mapping) else {}
    avg = data.get("average_bus_bandwidth") if isinstance(data.get("average_bus_bandwidth"), Mapping) else {}
    okay = avg.get("okay")
    code = data.get("nccl_version")
    run = {"nccl_version": _version(code) if isinstance(code, int) and not isinstance(code, bool) else None,
           "rows": rows, "avg_busbw": avg.get("bandwidth"),
           "avg_busbw_check": {True: "OK", False: "FAILED"}.get(okay) if isinstance(okay, bool) else None,
           "out_of_bounds": oob.get("count"),
           "errors": [str(error) for error in data.get("errors") or [] if str(error).strip()],
           "ranks": [{"rank": d.get("rank"), "group": d.get("group"), "pid": d.get("pid"), "host": d.get("hostname"),
                      "device": d.get("device"), "bus": d.get("bus_id"), "name": d.get("name")}
                     for d in data.get("devices") or [] if isinstance(d, Mapping)]}
    return dict(run, runs=[dict(run)])
