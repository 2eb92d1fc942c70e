"""Regenerate ``data/paramdb.json`` from the condensed real parameter table.

Developer tool, not used at run time (the simulator only reads the JSON):

    python3 tests/sim/mlxsim/gen_paramdb.py [path/to/mlxconfig_params_all.tsv] [path/to/mlxconfig_host.db]

Inputs are facts only: ``tests/fixtures/mlxconfig_params_all.tsv`` (condensed from the
mstflint ``mlxconfig_host.db`` at HEAD) and, when present, Debian's
``/usr/share/mstflint/mlxconfig_dbs/mlxconfig_host.db`` (4.21) for TLV names, TLV
descriptions and the database's TLV order (used by ``show_confs``).
"""
import csv
import json
import os
import re
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TSV = os.path.join(HERE, "..", "..", "fixtures", "mlxconfig_params_all.tsv")
DEFAULT_DB = "/usr/share/mstflint/mlxconfig_dbs/mlxconfig_host.db"

CLASS_MAP = {
    "global": "global",
    "per_host": "per_host",
    "per_host_per_func": "per_func",
    "port(_P<n>)": "port",
    "module(_M<n>)": "module",
}


def parse_values(text):
    out = []
    for item in text.split("|"):
        m = re.match(r"^(.*)\((\d+)\)$", item.strip())
        if m:
            out.append([m.group(1), int(m.group(2))])
    return out


def main(argv):
    tsv = argv[1] if len(argv) > 1 else DEFAULT_TSV
    dbpath = argv[2] if len(argv) > 2 else DEFAULT_DB
    tlv_info = {}
    tlv_order = []
    if os.path.exists(dbpath):
        con = sqlite3.connect(dbpath)
        for name, mname, desc, cap in con.execute(
                "select name, mlxconfig_name, description, cap from tlvs order by rowid"):
            if not mname or cap:
                continue
            tlv_info[mname] = {"name": name, "description": desc or ""}
            tlv_order.append(mname)
    params = {}
    with open(tsv) as fh:
        rows = list(csv.reader((line for line in fh if not line.startswith("#")), delimiter="\t"))
    header, rows = rows[0], rows[1:]
    idx = {h: i for i, h in enumerate(header)}
    for r in rows:
        name = r[idx["name"]]
        typ = r[idx["type"]]
        bits = int(r[idx["bits"]] or 0)
        arr = int(r[idx["array_len"]] or 0)
        tlv = r[idx["tlv"]]
        if tlv not in tlv_info:
            tlv_info[tlv] = {"name": "nv_" + re.sub(r"[^a-z0-9]+", "_", tlv.lower()).strip("_"),
                             "description": ""}
            tlv_order.append(tlv)
        entry = {
            "type": typ,
            "bits": bits,
            "tlv": tlv,
            "cls": CLASS_MAP[r[idx["tlv_class"]]],
            "target": r[idx["target"]],
        }
        if typ in ("ENUM", "BOOL"):
            entry["values"] = parse_values(r[idx["allowed_values"]])
        if arr:
            entry["array_len"] = arr
        if r[idx["min"]]:
            entry["min"] = r[idx["min"]]
        if r[idx["max"]]:
            entry["max"] = r[idx["max"]]
        desc = [s.strip() for s in r[idx["meaning"]].split(" | ")]
        entry["desc"] = [s for s in desc if s]
        params[name] = entry
    used = {p["tlv"] for p in params.values()}
    tlvs = [{"mlxconfig_name": t, "name": tlv_info[t]["name"], "description": tlv_info[t]["description"]}
            for t in tlv_order if t in used]
    out = {"source": "condensed from Mellanox/mstflint mlxconfig_host.db (facts only)",
           "tlvs": tlvs, "params": params}
    target = os.path.join(HERE, "data", "paramdb.json")
    with open(target, "w") as fh:
        json.dump(out, fh, indent=0, sort_keys=True)
        fh.write("\n")
    print("wrote %s: %d params, %d tlvs" % (target, len(params), len(tlvs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
