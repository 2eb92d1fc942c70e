"""In-process checks of the simulator's building blocks (no subprocess)."""
import json
import os
import subprocess
import sys

import pytest

from _paths import SIM_BIN
from mlxsim import families, model, paramdb, profiles, versions
from mlxsim.common import jsoncpp_dumps

TOOLS = ["mst", "mlxconfig", "mstconfig", "mlxfwmanager", "mstfwmanager", "flint", "mstflint", "mlxfwreset",
         "mstfwreset", "lspci", "ibdev2netdev", "ibstat", "ofed_info", "mlxsim"]


def test_bin_layout():
    disp = SIM_BIN / "mlxsim-tool"
    assert disp.read_text().startswith("#!/usr/bin/env python3\n")
    assert os.access(disp, os.X_OK)
    for t in TOOLS:
        p = SIM_BIN / t
        assert p.is_symlink() and os.readlink(p) == "mlxsim-tool", t


def _tool_run(tmp_path, **env):
    e = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "MLXSIM_ROOT")}
    e.update(PYTHONDONTWRITEBYTECODE="1", TMPDIR=str(tmp_path), MLXSIM_STATE=str(tmp_path / "none.json"), **env)
    return subprocess.run([sys.executable, str(SIM_BIN / "mlxsim-tool"), "--version"], env=e, capture_output=True,
                          text=True, check=False)


def test_the_simulators_bytecode_is_cached_outside_the_tree_even_with_pythondontwritebytecode(tmp_path):
    """A rehearsal starts the simulator ~40 times per server: its modules are compiled once, into a directory of
    this user under TMPDIR (a lab container mounts tests/sim read-only)."""
    _tool_run(tmp_path)
    cache = tmp_path / ("mlxsim-pycache-%d" % os.getuid())
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    cached = {p.name for p in cache.rglob("*.pyc")}
    assert "cli.cpython-%d%d.pyc" % sys.version_info[:2] in cached
    assert not list(SIM_BIN.parent.rglob("__pycache__"))


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give the directory to another user")
def test_a_cache_directory_of_another_user_is_not_used(tmp_path):
    cache = tmp_path / ("mlxsim-pycache-%d" % os.getuid())
    cache.mkdir()
    os.chown(cache, 65534, 65534)
    _tool_run(tmp_path)
    assert not list(cache.rglob("*.pyc"))


@pytest.mark.parametrize("text,mft,key", [
    ("4.21.0", False, "4.21"), ("4.22.0", False, "4.22"), ("4.24.0", False, "4.22"), ("4.25.0", False, "4.25"),
    ("4.26.0", False, "4.26"), ("4.30.0", True, "4.26"), ("4.30.1-1210", True, "4.31"), ("4.30.1", False, "4.26"),
    ("4.33.0", True, "4.31"), ("4.35.0", True, "4.31"), ("4.36.0", True, "4.36")])
def test_layout_selection(text, mft, key):
    assert versions.ConfigLayout(versions.effective(text, mft)).key == key


def test_layout_headers_follow_format_facts():
    L = versions.ConfigLayout
    c = "Configurations:"
    assert L((4, 21, 0)).header(True, True, False) == "%-16s%36s%16s%18s" % (c, "Default", "Current", "Next Boot")
    assert L((4, 21, 0)).header(False, False, True) == "%-16s%38s" % ("Configurations:", "Next Boot") + "       New"
    assert L((4, 26, 0)).header(True, True, False) == "%-20s%39s%21s%23s" % (c, "Default", "Current", "Next Boot")
    assert L((4, 31, 0)).header(False, False, False) == "%-20s%46s" % ("Configurations:", "Next Boot")
    row = L((4, 21, 0)).row("X", ["0123456789abcdef", "next"])
    assert row == "         X" + " " * 35 + "0123456789abcdefnext            "   # 16 chars: no extra space


def test_value_rules():
    link = paramdb.param("LINK_TYPE")
    assert paramdb.parse_value(link, "eth") == 2 and paramdb.parse_value(link, "1") == 1
    assert paramdb.format_value(link, 2) == "ETH(2)" and paramdb.format_value(link, 3) == "3"
    with pytest.raises(paramdb.ValueError_, match="^Unknown value 3$"):
        paramdb.parse_value(link, "3")
    vfs = paramdb.param("NUM_OF_VFS")
    assert paramdb.parse_value(vfs, "0x10") == 16
    with pytest.raises(paramdb.ValueError_, match="as its size is 16 bits"):
        paramdb.parse_value(vfs, "65536")
    assert paramdb.split_name("LINK_TYPE_P2", 1) == ("LINK_TYPE_P2", 0, -1)
    assert paramdb.split_name("LINK_TYPE_P2", 2) == ("LINK_TYPE", 2, -1)
    assert paramdb.split_name("MODULE_SPLIT_M0", 1) == ("MODULE_SPLIT", 0, 0)


def test_family_layouts_only_use_real_parameters():
    for fam, spec in families.FAMILIES.items():
        for e in spec["layout"]:
            for n in (e[1] if isinstance(e, tuple) else [e]):
                base = n[:-3] if n.endswith("_M0") else n
                p = paramdb.param(base)
                assert p is not None, (fam, n)
                assert (p["cls"] == "port") == isinstance(e, tuple), (fam, n)
        for ro in spec.get("read_only", []):
            assert paramdb.param(ro)


def test_profiles_have_real_identities():
    seen = {}
    for name in profiles.PROFILES:
        for spec in profiles.card_specs(name):
            if not spec.get("vf"):      # a VM's VF reports its cloud's board id (azure-nd-h200-vm: MSF0000000047)
                seen[spec["part_number"]] = (spec["psid"], spec["family"])
            card = model.build_card(spec, "h", 0)
            assert len(card["nv"]) + len(card["functions"][0]["nv"]) >= 60
            assert card["nv"]["SRIOV_EN"]["default"] in (0, 1)
            assert card["vpd"]["SN"].startswith("MT") and len(card["vpd"]["SN"]) == 12
    assert seen["MCX75310AAS-NEAT"] == ("MT_0000000838", "ConnectX7")
    assert seen["MCX755106AS-HEAT"] == ("MT_0000000834", "ConnectX7")
    assert seen["MCX623106AN-CDAT"] == ("MT_0000000359", "ConnectX6DX")
    assert seen["MCX653105A-HDAT"] == ("MT_0000000223", "ConnectX6")
    assert seen["900-9D3B6-00CV-AA0"] == ("MT_0000000884", "BlueField3")
    assert families.FAMILIES["BlueField3"]["dev_id"] == 41692
    vfs = {spec["silicon"]["ca_type"]: (spec["fw"], spec["psid"]) for name in ("azure-nd-a100-vm", "azure-nd-h200-vm")
           for spec in profiles.card_specs(name)}
    assert vfs == {"MT4124": ("20.28.4000", "MT_0000000223"), "MT4126": ("28.40.1702", "MSF0000000047")}


def test_jsoncpp_style():
    text = jsoncpp_dumps({"b": {"y": 1, "x": "s"}, "a": True})
    assert text == '{\n\t"a" : true,\n\t"b" : \n\t{\n\t\t"x" : "s",\n\t\t"y" : 1\n\t}\n}'
    assert json.loads(text) == {"a": True, "b": {"x": "s", "y": 1}}
