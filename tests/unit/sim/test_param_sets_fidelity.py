"""mlxconfig parameter sets and order per family and tool generation, compared with the full real listings
(issue 39 item 5)."""
import re

import pytest

from sim_helpers import real


# ---------------------------------------------------------------------------- item 5: parameter sets and order


def names(lines):
    """The parameter names of a query listing, in order (Go-template placeholder rows skipped)."""
    out = []
    for ln in lines:
        if not ln.startswith((" ", "*")) or "%" in ln:
            continue
        parts = ln.split()
        if not parts:
            continue
        name = parts[1] if parts[0] == "*" else parts[0]
        if re.match(r"^[A-Z][A-Za-z0-9_]+$", name):
            out.append(name)
    return out


FULL_LISTINGS = [
    # capture, profile, tool and its version, device, rows the capture lacks (its placeholders)
    ("mlxconfig_query_cx4lx_1.txt", "refresh-cx5-storage", "mlxconfig", {}, "03:00.0", []),
    ("mstconfig_e_query_cx4lx_1.txt", "refresh-cx5-storage", "mstconfig", {"MLXSIM_MSTFLINT_VERSION": "4.28.0"},
     "03:00.0", ["NUM_OF_VFS", "SRIOV_EN"]),
]


@pytest.mark.parametrize("capture,profile,tool,env,dev,placeholders", FULL_LISTINGS)
def test_cx4lx_parameter_names_and_order_per_tool_generation(sim, capture, profile, tool, env, dev, placeholders):
    sim.init(profile)
    args = ["-d", dev, "-e", "q"] if "_e_" in capture else ["-d", dev, "q"]
    mine = names(sim.out(tool, *args, env=env).split("\n"))
    theirs = names(real(capture))
    assert [n for n in mine if n not in placeholders] == theirs


def test_cx4lx_set_follows_the_listing_of_its_tool_generation(sim):
    """A parameter the listing shows is accepted, one it does not show refused as the device's: IP_VER on the MFT
    4.30.1 (4.31) tool, WOL_MAGIC_EN on the 4.26-4.30 one."""
    sim.init("refresh-cx5-storage")
    ok = sim.run("mlxconfig", "-d", "03:00.0", "-y", "set", "IP_VER=1")
    assert ok.returncode == 0 and "Applying... Done!" in ok.stdout
    no = sim.run("mlxconfig", "-d", "03:00.0", "-y", "set", "WOL_MAGIC_EN=1")
    assert no.returncode != 0 and "-E- The Device doesn't support WOL_MAGIC_EN parameter" in no.stdout
    old = {"MLXSIM_MSTFLINT_VERSION": "4.28.0"}
    ok = sim.run("mstconfig", "-d", "03:00.0", "-y", "set", "WOL_MAGIC_EN=1", env=old)
    assert ok.returncode == 0 and "Applying... Done!" in ok.stdout
    no = sim.run("mstconfig", "-d", "03:00.0", "-y", "set", "NUM_OF_PLANES_P1=1", env=old)
    assert no.returncode != 0 and "-E- The Device doesn't support NUM_OF_PLANES_P1 parameter" in no.stdout


def test_cx4lx_rows_with_equal_values_are_byte_identical_to_the_4_31_capture(sim):
    """mlxconfig_query_cx4lx_1.txt's rows (trailing spaces stripped by its document) against the simulator's."""
    sim.init("refresh-cx5-storage")
    mine = {ln.split()[0]: ln.rstrip() for ln in sim.out("mlxconfig", "-d", "03:00.0", "q").split("\n")
            if ln.startswith("        ")}
    theirs = {ln.split()[0]: ln for ln in real("mlxconfig_query_cx4lx_1.txt") if ln.startswith("        ")}
    same = [n for n in theirs if mine.get(n, "").split() == theirs[n].split()]
    assert len(same) >= 150
    for n in same:
        assert mine[n] == theirs[n]
    assert "Configurations:                                          Next Boot" in real("mlxconfig_query_cx4lx_1.txt")


def test_cx6lx_crypto_group_before_port_owner(sim):
    """ConnectX-6 Lx as the rest of its generation (no ConnectX-6 Lx capture lists it; issue 39 item 5):
    LARGE_MTU_TWEAK_64, AES_XTS_TWEAK_INC_64, CRYPTO_POLICY right before PORT_OWNER."""
    sim.init("legacy-eth")
    got = names(sim.out("mlxconfig", "-d", "41:00.0", "q").split("\n"))
    i = got.index("PORT_OWNER")
    assert got[i - 3:i] == ["LARGE_MTU_TWEAK_64", "AES_XTS_TWEAK_INC_64", "CRYPTO_POLICY"]
    assert got.count("CRYPTO_POLICY") == 1
