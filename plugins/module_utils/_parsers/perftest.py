# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest (``ib_write_bw``, ``ib_read_bw``, ``ib_send_bw``, ``ib_write_lat``, ``ib_read_lat``, ``ib_send_lat``, ...):
the text report of a client or a server, and the ``--out_json`` file.

The text (linux-rdma/perftest ``src/perftest_parameters.[ch]``): banner lines and warnings, a rule of dashes, the
title (``RDMA_Write BW Test``), the parameter lines (``Device         : mlx5_1``, two per line, tab-separated),
the addresses, and the result block between two rules - a header naming the columns (``#bytes``, ``#iterations``,
``BW peak[Gb/sec]``, ``BW average[Gb/sec]``, ``MsgRate[Mpps]``; or ``t_min[usec]`` ... ``99.9% percentile[usec]``;
duration mode ``t_avg[usec]`` / ``tps average``; dual-port and QoS columns), then one row per message size. The unit
is the one printed in the header (``Gb/sec`` with ``--report_gbits``, else ``MiB/sec``, or ``MB/sec`` in older
builds; ``usec`` for latency). A run that died leaves its reason (``Couldn't connect to ...``, ``Unable to init the
socket connection``, ...) in ``errors``.

The connection lines (``ctx_print_pingpong_data``, BASIC_ADDR_FMT / READ_FMT / RDMA_FMT / PERF_GID_FMT) are kept per
side and queue pair: ``local address: LID 0x1af QPN 0x00c6 PSN 0x2986aa RKey 0x1fff23 VAddr 0x007f00e1501c24`` on
InfiniBand (the port's LID), ``LID 0000`` and a ``GID: 00:00:...:255:255:10:06:145:33`` line (bytes in decimal) on
RoCE.

The JSON (``--out_json``): ``{"test_info": {"test": "RDMA_Write_BW_Test", "Device": ..., "Mtu": 4096, ...},
"results": {"MsgSize": ..., "n_iterations": ..., "BW_peak": ..., ...}}`` - one message size, no unit (the JSON does
not say it: ``unit`` is None).
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

# The verbs a perftest title starts with (testsStr), and the atomic types after "Atomic".
VERBS = ("RDMA_Write_imm", "RDMA_Write", "RDMA_Read", "Send_imm", "Send", "Atomic")
ATOMIC_TYPES = ("CMP_AND_SWAP", "FETCH_AND_ADD")

BW_KEYS = ("bytes", "iterations", "bw_peak", "bw_average", "msg_rate")
LAT_KEYS = ("bytes", "iterations", "t_min", "t_max", "t_typical", "t_avg", "t_stdev", "p99", "p99_9")

# Result header columns, in the order perftest may print them -> (key, int?).
_COLUMNS = (
    (re.compile(r"#bytes"), "bytes", True),
    (re.compile(r"#sl"), "sl", True),
    (re.compile(r"#iterations"), "iterations", True),
    (re.compile(r"BW peak\[(?P<unit>[^\]]+)\]"), "bw_peak", False),
    (re.compile(r"BW average\[(?P<unit>[^\]]+)\]"), "bw_average", False),
    (re.compile(r"MsgRate\[Mpps\]"), "msg_rate", False),
    (re.compile(r"BW Port1\[[^\]]+\]"), "bw_port1", False),
    (re.compile(r"MsgRate Port1\[Mpps\]"), "msg_rate_port1", False),
    (re.compile(r"BW Port2\[[^\]]+\]"), "bw_port2", False),
    (re.compile(r"MsgRate Port2\[Mpps\]"), "msg_rate_port2", False),
    (re.compile(r"t_min\[(?P<unit>[^\]]+)\]"), "t_min", False),
    (re.compile(r"t_max\[[^\]]+\]"), "t_max", False),
    (re.compile(r"t_typical\[[^\]]+\]"), "t_typical", False),
    (re.compile(r"t_avg\[(?P<unit>[^\]]+)\]"), "t_avg", False),
    (re.compile(r"t_stdev\[[^\]]+\]"), "t_stdev", False),
    (re.compile(r"99\.9% percentile\[[^\]]+\]"), "p99_9", False),
    (re.compile(r"99% percentile\[[^\]]+\]"), "p99", False),
    (re.compile(r"tps average"), "tps_average", False),
    (re.compile(r"CPU_Util\[%\]"), "cpu_util", False),
)
_HEADER_RE = re.compile(r"^\s*#bytes\s")
_RULE_RE = re.compile(r"^-{20,}\s*$")
_TITLE_RE = re.compile(r"^\s{2,}(?P<title>(?:%s)\b[\w ]*? Test)\s*$" % "|".join(VERBS))
_PARAM_RE = re.compile(r"(?P<key>[A-Za-z][^:\t]*?)\s*:\s*(?P<value>[^\t]*?)\s*(?=\t|$)")
_NUMBER_RE = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
_WARNING_RE = re.compile(r"(?i)^\s*warning\b|Requested mtu is higher than active mtu|Changing to active mtu"
                         r"|Conflicting CPU frequency|inline size set to|CPU is not PCIe relaxed ordering"
                         # set_mtu: an -m that is no IB MTU - the run goes on at the port's active MTU
                         r"|Invalid MTU - |Please choose mtu from|Will run with the port active mtu")
_ERROR_RE = re.compile(r"Couldn't|Unable to|Failed to|No IB devices found|IB device \S+ not found|Error:|error:"
                       r"|\bERROR\b|Segmentation fault|Connection refused"
                       # NOTIFY_COMP_ERROR_SEND / _RECV (src/perftest_resources.h): a work completion with an error
                       r"|Completion with error|Failed status|Parser function exited with Error")
_MTU_RE = re.compile(r"^(?P<bytes>\d+)\s*\[B\]$")
# BASIC_ADDR_FMT " %s address: LID %#04x QPN %#06x PSN %#06x" [+ READ_FMT " OUT %#04x"] [+ RDMA_FMT " RKey %#08x
# VAddr %#016llx"] [+ " SRQn %#08x"]; PERF_GID_FMT " %s: %02d:...:%02d" (16 bytes; "MGID" for multicast)
_HEX = r"(?:0x[0-9a-fA-F]+|[0-9a-fA-F]+)"
_ADDRESS_RE = re.compile(r"^\s*(?P<side>local|remote) address: LID (?P<lid>%s) QPN (?P<qpn>%s) PSN (?P<psn>%s)"
                         r"(?: OUT (?P<out>%s))?(?: RKey (?P<rkey>%s) VAddr (?P<vaddr>%s))?(?: SRQn (?P<srqn>%s))?\s*$"
                         % ((_HEX,) * 7))
_GID_RE = re.compile(r"^\s*M?GID: (?P<gid>\d{1,3}(?::\d{1,3}){15})\s*$")


def parse_perftest(text: str | bytes | Sequence[str] | Mapping, *, tool: str = "perftest") -> dict:
    """A perftest report (text, or the ``--out_json`` file's text or data).

    Returns ``{"test": "RDMA_Write BW Test", "device": "mlx5_1", "link_type": "Ethernet", "mtu": 1024,
    "gid_index": 3, "unit": "Gb/sec", "results": [{"bytes": 65536, "iterations": 10384867, "bw_peak": 0.0,
    "bw_average": 181.46, "msg_rate": 0.3461}], "addresses": {"local": [{"lid": 0, "qpn": 198, "psn": 2721450,
    "gid": "00:00:00:00:00:00:00:00:00:00:255:255:10:06:145:33"}, ...], "remote": [...]}, "warnings": [...],
    "errors": [...]}``; an address also holds ``out_reads``, ``rkey``, ``vaddr`` and ``srqn`` when printed
    (``gid`` None without a GID line; ``gid_index`` None when the banner names none - InfiniBand by LID); latency
    rows hold ``t_min``, ``t_max``,
    ``t_typical``, ``t_avg``, ``t_stdev``, ``p99``, ``p99_9`` (None for a column the build did not print). Other
    columns perftest may print (``sl``, ``tps_average``, ``bw_port1`` ..., ``cpu_util``) are kept when printed.
    ParseError when the text is no perftest report at all.
    """
    if isinstance(text, Mapping):
        return _from_json(dict(text), tool)
    if isinstance(text, (str, bytes)) and (text.decode("utf-8", "replace") if isinstance(text, bytes)
                                           else text).lstrip().startswith("{"):
        return _from_json(_load_json(text, tool), tool)
    return _from_text(all_lines(text, tool), tool)


# ---------------------------------------------------------------- text

def _from_text(lines, tool):
    out = {"test": None, "device": None, "link_type": None, "mtu": None, "gid_index": None, "unit": None,
           "results": [], "addresses": {"local": [], "remote": []}, "warnings": [], "errors": []}
    columns, in_params, in_results, seen = None, False, False, False
    last = None
    for line in lines:
        text = line.text
        if not text.strip() or is_prompt(text):
            continue
        address = _ADDRESS_RE.match(text)
        if address:
            last = _address(address)
            out["addresses"][address.group("side")].append(last)
            continue
        gid = _GID_RE.match(text)
        if gid and last is not None and last["gid"] is None:
            last["gid"] = gid.group("gid")
            continue
        if _RULE_RE.match(text.strip()):
            seen, in_params = True, False  # a rule ends the parameters, and the result rows once there are some
            if in_results and out["results"]:
                in_results = False
            continue
        title = _TITLE_RE.match(text)
        if title:
            out["test"], in_params, seen = title.group("title"), True, True
            continue
        if _HEADER_RE.match(text):
            columns, unit = _columns(text)
            out["unit"] = out["unit"] or unit
            in_results, seen = True, True
            continue
        if in_results and columns:
            row = _row(text, columns)
            if row is not None:
                out["results"].append(_completed(row, columns))
                continue
            words = text.split()
            if words and all(_NUMBER_RE.match(word) for word in words):
                raise ParseError(tool, "a result row of %d values under a header of %d columns (%s)"
                                 % (len(words), len(columns), ", ".join(key for key, _int in columns)), text, line.no)
        if _WARNING_RE.search(text):
            out["warnings"].append(text.strip())
            continue
        if in_params:
            _params(text, out)
            continue
        if _ERROR_RE.search(text):
            out["errors"].append(text.strip())
    if not seen and not out["errors"]:
        raise ParseError(tool, "no perftest report found (no title, result header or error line)",
                         lines[0].text if lines else None, lines[0].no if lines else None)
    return out


def _params(text, out):
    for match in _PARAM_RE.finditer(text.strip()):
        key, value = match.group("key").strip(), match.group("value").strip()
        if key == "Device":
            out["device"] = value
        elif key == "Link type":
            out["link_type"] = value
        elif key == "Mtu":
            mtu = _MTU_RE.match(value)
            out["mtu"] = int(mtu.group("bytes")) if mtu else None
        elif key == "GID index" and value.isdigit():
            out["gid_index"] = int(value)


def _address(match):
    """One connection line: numbers from perftest's %#x fields (``0000``/``0x00c6``), the GID after it."""
    entry = {"lid": int(match.group("lid"), 16), "qpn": int(match.group("qpn"), 16),
             "psn": int(match.group("psn"), 16), "gid": None}
    for key, group in (("out_reads", "out"), ("rkey", "rkey"), ("vaddr", "vaddr"), ("srqn", "srqn")):
        if match.group(group) is not None:
            entry[key] = int(match.group(group), 16)
    return entry


def _columns(text):
    found, unit = [], None
    for pattern, key, is_int in _COLUMNS:
        for match in pattern.finditer(text):
            found.append((match.start(), key, is_int))
            if unit is None and "unit" in pattern.groupindex:
                unit = match.group("unit")
    found.sort()
    return [(key, is_int) for _pos, key, is_int in found], unit


def _row(text, columns):
    """The values of a result row (None when the line is no row of these columns)."""
    words = text.split()
    if len(words) != len(columns) or not all(_NUMBER_RE.match(word) for word in words):
        return None
    row = {}
    for (key, is_int), word in zip(columns, words):
        row[key] = int(float(word)) if is_int else float(word)
    return row


def _completed(row, columns):
    keys = LAT_KEYS if any(key.startswith("t_") for key, _int in columns) else BW_KEYS
    return dict({key: None for key in keys}, **row)


# ---------------------------------------------------------------- JSON

_JSON_KEYS = {"MsgSize": "bytes", "n_iterations": "iterations", "sl": "sl", "BW_peak": "bw_peak",
              "BW_average": "bw_average", "MsgRate": "msg_rate", "bw_avg": "bw_average", "msgRate_avg": "msg_rate",
              "t_min": "t_min", "t_max": "t_max", "t_typical": "t_typical", "t_avg": "t_avg", "avg_lat": "t_avg",
              "t_stdev": "t_stdev", "percentile_99": "p99", "percentile_99.9": "p99_9", "tps_average": "tps_average",
              "CPU_util": "cpu_util"}
_UNQUOTED_SL_RE = re.compile(r"^(\s*)sl:", re.M)  # the QoS report writes `sl: N` unquoted


def _load_json(text, tool):
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    try:
        return json.loads(_UNQUOTED_SL_RE.sub(r'\1"sl":', raw))
    except ValueError as err:
        raise ParseError(tool, "the --out_json file is not JSON: %s" % err) from err


def _from_json(data, tool):
    info, results = data.get("test_info"), data.get("results")
    if not isinstance(info, Mapping) or not isinstance(results, Mapping):
        raise ParseError(tool, "a perftest --out_json file has test_info and results objects; got keys %s"
                         % ", ".join(sorted(map(str, data))))
    row = {}
    for key, value in results.items():
        name = _JSON_KEYS.get(key)
        if name is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
            row[name] = int(value) if name in ("bytes", "iterations", "sl") else float(value)
    latency = any(name.startswith("t_") for name in row)
    mtu, gid_index = info.get("Mtu"), info.get("GID_index")
    return {"test": _json_title(info.get("test")), "device": info.get("Device"), "link_type": info.get("Link_type"),
            "mtu": mtu if isinstance(mtu, int) and not isinstance(mtu, bool) else None,
            "gid_index": gid_index if isinstance(gid_index, int) and not isinstance(gid_index, bool) else None,
            "unit": None,
            "results": [dict({key: None for key in (LAT_KEYS if latency else BW_KEYS)}, **row)] if row else [],
            # the file has no connection lines
            "addresses": {"local": [], "remote": []},
            "warnings": [str(value) for key, value in sorted(info.items()) if str(key).startswith("WARNING")],
            "errors": []}


def _json_title(name):
    """``RDMA_Write_BW_Test`` -> ``RDMA_Write BW Test`` (the verb and atomic type keep their underscores)."""
    if not isinstance(name, str):
        return None
    words = []
    rest = name
    for verb in VERBS:
        if rest.startswith(verb + "_"):
            words.append(verb)
            rest = rest[len(verb) + 1:]
            break
    for kind in ATOMIC_TYPES:
        if rest.startswith(kind + "_"):
            words.append(kind)
            rest = rest[len(kind) + 1:]
            break
    words.extend(word for word in rest.split("_") if word)
    return " ".join(words)
