"""The mlxconfig parameter database (condensed from the real mstflint DB) and value rules."""
import json
import os
import re

_DB = None


def db():
    global _DB
    if _DB is None:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "paramdb.json")) as fh:
            _DB = json.load(fh)
    return _DB


def param(base):
    return db()["params"].get(base)


def tlv_name(tlv_mlxconfig_name):
    for t in db()["tlvs"]:
        if t["mlxconfig_name"] == tlv_mlxconfig_name:
            return t["name"]
    return "nv_" + re.sub(r"[^a-z0-9]+", "_", tlv_mlxconfig_name.lower()).strip("_")


class ValueError_(Exception):
    """A value the real tool refuses; str() is the tool's message without '-E- '."""


def elem_bits(p):
    bits = p.get("bits", 32) or 32
    n = p.get("array_len")
    if n:
        bits = max(1, bits // n)
    return bits


def str_to_num(text):
    """C strtoul(base 0)-like parse; None when the text is not a number."""
    s = text.strip() if isinstance(text, str) else str(text)
    if not s:
        return None
    try:
        if s[:2].lower() == "0x":
            return int(s[2:], 16)
        if len(s) > 1 and s[0] == "0":
            return int(s[1:], 8)
        if not s.isdigit():
            return None
        return int(s, 10)
    except ValueError:
        return None


def parse_value(p, text):
    """Return the int value for ``text`` or raise ValueError_ with the real error text."""
    typ = p["type"]
    if typ in ("ENUM", "BOOL"):
        num = str_to_num(text)
        if num is not None:
            for name, val in p.get("values", []):
                if val == num:
                    return val
        else:
            for name, val in p.get("values", []):
                if name.lower() == text.lower():
                    return val
        raise ValueError_("Unknown value %s" % text)
    num = str_to_num(text)
    if num is None:
        raise ValueError_("Cannot parse the value")
    bits = elem_bits(p)
    if bits == 32:
        if num == 0xFFFFFFFF:
            raise ValueError_("The value %s is reserved and cannot be used" % text)
        if num > 0xFFFFFFFF:
            raise ValueError_("The value %s is not valid,  as its size is %d bits" % (text, bits))
    elif num > (1 << bits) - 1:
        raise ValueError_("The value %s is not valid,  as its size is %d bits" % (text, bits))
    return num


def format_value(p, val):
    """How the tool prints a value: bare number, NAME(num) for enums, N/A when unknown."""
    if val is None:
        return "N/A"
    if p["type"] in ("ENUM", "BOOL"):
        for name, v in p.get("values", []):
            if v == val:
                return "%s(%d)" % (name, val)
        return str(val)
    return str(val)


def json_value(p, val):
    if val is None:
        return "N/A"
    if p["type"] in ("ENUM", "BOOL"):
        for name, v in p.get("values", []):
            if v == val:
                return "%s(%d)" % (name, val)
    return val


_PORT_RE = re.compile(r"^(.*)_P(\d+)$")
_MOD_RE = re.compile(r"^(.*)_M(\d+)$")
_IDX_RE = re.compile(r"^(.*)\[(\d+)(?:\.\.(\d+))?\]$")


def split_index(name):
    """'NAME[3]' -> ('NAME', [3]); 'NAME[0..7]' -> ('NAME', [0..7]); else (name, None)."""
    m = _IDX_RE.match(name)
    if not m:
        return name, None
    lo = int(m.group(2))
    hi = int(m.group(3)) if m.group(3) is not None else lo
    return m.group(1), list(range(lo, hi + 1))


def split_name(name, num_ports):
    """Return (base, port, module) the way the tool splits a CLI name.

    A `_P<n>` suffix counts only when 0 < n <= number of ports of the device (MGIR);
    a `_M<n>` suffix only for n in 0..1. Otherwise the whole name is looked up."""
    m = _PORT_RE.match(name)
    if m and 0 < int(m.group(2)) <= num_ports:
        return m.group(1), int(m.group(2)), -1
    m = _MOD_RE.match(name)
    if m and -1 < int(m.group(2)) <= 1:
        return m.group(1), 0, int(m.group(2))
    return name, 0, -1


def lookup(name, num_ports):
    """Resolve a CLI name (no index) against the DB.

    Returns (base, port, module, paramdef) or (None, port, module, None) when unknown."""
    base, port, module = split_name(name, num_ports)
    p = param(base)
    if p is None:
        return None, port, module, None
    cls = p["cls"]
    if cls == "port" and port == 0:
        return None, port, module, None
    if cls != "port" and port:
        return None, port, module, None
    if cls == "module" and module < 0:
        return None, port, module, None
    if cls != "module" and module >= 0:
        return None, port, module, None
    return base, port, module, p


def unknown_text(name, layout, num_ports):
    if layout.new_unknown_text:
        _b, port, module = split_name(name, num_ports)
        return "Failed to find Param / TLV with name '%s' port %d module %d" % (name, port, module)
    return "Unknown Parameter: %s" % name
