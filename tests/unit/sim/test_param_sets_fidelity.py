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


def test_cx6lx_lists_its_sibling_s_real_rows(sim):
    """ConnectX-6 Lx: its excerpt is the head of the real ConnectX-6 Dx listing, so the rest is that listing's
    (mstconfig_query_cx6dx_1.txt) - no crypto group on a no-crypto card of that generation."""
    sim.init("legacy-eth")
    got = names(sim.out("mstconfig", "-d", "41:00.0", "q", env={"MLXSIM_MSTFLINT_VERSION": "4.28.0"}).split("\n"))
    assert got == names(real("mstconfig_query_cx6dx_1.txt"))
    assert not [n for n in got if "CRYPTO" in n or "TWEAK" in n]


# Excerpts: the rows a real listing shows must be one contiguous run of the simulator's listing (an excerpt is cut out
# of one listing) - but for the hand-listed exceptions: the ConnectX-7 query whose middle its author elided as `(...)`
# (its rows in order only) and the last name of an issue-thread excerpt cut mid-word (`PF_NUM_`).
EXCERPTS = [
    # capture, profile, tool, tool version, device, command, contiguous, names cut by the excerpt
    ("mlxconfig_query_cx5_1.txt", "refresh-cx5-storage", "mlxconfig", {}, "29:00.0", ["q"], None, []),
    ("mstconfig_query_cx6dx_1.txt", "cx6dx-roce", "mstconfig", {"MLXSIM_MSTFLINT_VERSION": "4.28.0"}, "3b:00.0", ["q"],
     None, []),
    ("mstconfig_query_cx6dx_1.txt", "cx6dx-roce", "mlxconfig", {}, "3b:00.0", ["q"], None, []),
    ("mlxconfig_e_query_cx5_partial_1.txt", "hpc-cx5ex", "mlxconfig", {"MLXSIM_MFT_VERSION": "4.22.0"}, "10:00.0",
     ["-e", "q"], True, []),
    ("mlxconfig_e_query_cx6lx_partial_1.txt", "legacy-eth", "mstconfig", {}, "41:00.0", ["-e", "q"], True, []),
    ("mlxconfig_query_bf2_1.txt", "legacy-eth", "mstconfig", {}, "e2:00.0", ["q"], True, []),
    ("mstconfig_query_bf3_excerpt_1.txt", "mixed", "mstconfig", {"MLXSIM_MSTFLINT_VERSION": "4.25.0"}, "ca:00.0",
     ["q"], True, []),
    ("mlxconfig_query_cx7_partial_1.txt", "mixed", "mlxconfig", {}, "65:00.0", ["q"], True, ["PF_NUM_"]),
    ("mlxconfig_query_cx7_1.txt", "mixed", "mlxconfig", {}, "65:00.0", ["q"], False, []),
]


@pytest.mark.parametrize("capture,profile,tool,env,dev,cmd,contiguous,cut", EXCERPTS)
def test_every_family_s_listing_against_its_captures(sim, capture, profile, tool, env, dev, cmd, contiguous, cut):
    """contiguous None: a full listing, equal name for name; True: an excerpt, one run of the simulator's rows;
    False: rows in the simulator's order."""
    sim.init(profile)
    if tool == "mlxconfig":
        sim.run("mst", "start", check_rc=0)
    mine = names(sim.out(tool, "-d", dev, *cmd, env=env).split("\n"))
    theirs = [n for n in names(real(capture)) if n not in cut]
    assert len(theirs) >= 6
    if contiguous is None:
        assert mine == theirs
        return
    assert all(n in mine for n in theirs), [n for n in theirs if n not in mine]
    at = [mine.index(n) for n in theirs]
    if contiguous:
        assert at == list(range(at[0], at[0] + len(at)))
    else:
        assert at == sorted(at)


def test_cx4_truncated_listing_rows_exist(sim):
    """mlxconfig_query_cx4_1.txt is an excerpt its author edited (LINK_TYPE_P1, SRIOV_EN, NUM_OF_VFS in an order no
    real listing has - NUM_OF_VFS precedes SRIOV_EN in every full one): only its rows and values are compared."""
    sim.init("legacy-eth")
    sim.out("mlxconfig", "-d", "06:00.0", "-y", "set", "SRIOV_EN=1", "NUM_OF_VFS=8")
    out = sim.out("mlxconfig", "-d", "06:00.0", "q").split("\n")
    rows = {ln.split()[0]: ln.split()[1] for ln in out if ln.startswith("        ") and len(ln.split()) == 2}
    cap = {ln.split()[0]: ln.split()[1] for ln in real("mlxconfig_query_cx4_1.txt") if ln.startswith("        ")}
    assert cap == {"LINK_TYPE_P1": "ETH(2)", "SRIOV_EN": "True(1)", "NUM_OF_VFS": "8"}
    assert {n: rows[n] for n in cap} == cap


def test_cx6dx_listing_byte_for_byte(sim):
    """mstconfig_query_cx6dx_1.txt: the untouched ConnectX-6 Dx's header, column layout (4.26-4.30) and every row's
    value - no crypto group, no MEMIC_ATOMIC, no ROCE_CC_CNP_MODERATION, WOL_MAGIC_EN True(1)."""
    sim.init("cx6dx-roce")
    mine = sim.out("mstconfig", "-d", "3b:00.0", "q", env={"MLXSIM_MSTFLINT_VERSION": "4.28.0"}).rstrip("\n").split("\n")
    cap = real("mstconfig_query_cx6dx_1.txt")
    cap = cap[cap.index("Configurations:                                     Next Boot"):]
    body = mine[mine.index("Configurations:                                     Next Boot"):]
    cap = [ln for ln in cap if ln]
    # the source lost the last row's trailing spaces (the tool pads every value to 20); ROCE_CC_LEGACY_DCQCN is True(1)
    # on this card and False(0) on the profile's MCX623106AN-CDA_Ax (test_mlxconfig_fidelity's real 4.21 session)
    legacy = "        ROCE_CC_LEGACY_DCQCN                        %-20s"
    assert body[:-1] == [legacy % "False(0)" if ln == legacy % "True(1)" else ln for ln in cap[:-1]]
    assert body[-1].rstrip() == cap[-1] and len(body) == len(cap) == 186
    assert "        WOL_MAGIC_EN                                True(1)             " in body
    assert not [ln for ln in body if "CRYPTO" in ln or "MEMIC_ATOMIC" in ln or "CNP_MODERATION" in ln]


@pytest.mark.parametrize("family, part, crypto", [
    ("ConnectX6DX", "MCX623106AN-CDAT", False),   # the profiles' card; no crypto (N)
    ("ConnectX6DX", "MCX623432AN-ADAB", False),   # the real listing's card (mstconfig_query_cx6dx_1.txt)
    ("ConnectX6DX", "MCX623106AS-CDAT", False),   # secure boot, no crypto (S)
    ("ConnectX6DX", "MCX623106AC-CDAT", True),    # crypto (C)
    ("ConnectX6DX", "MCX623106AE-CDAT", True),    # crypto (E)
    ("ConnectX6LX", "MCX631102AS-ADAT", False),   # the profiles' ConnectX-6 Lx
    ("ConnectX6LX", "MCX631102AC-ADAT", True),
    ("ConnectX6LX", "MCX631102AC-ADAT-X", False),  # not an ordering part number
    ("ConnectX7", "MCX75310AAS-NEAT", True),      # the ConnectX-7 lists it whatever its part number (families._layout)
])
def test_the_crypto_group_is_listed_before_port_owner_only_by_cards_ordered_with_crypto(family, part, crypto):
    """Issue 39 item 5: a ConnectX-6 Dx / Lx ordered with crypto lists LARGE_MTU_TWEAK_64, AES_XTS_TWEAK_INC_64 and
    CRYPTO_POLICY right before PORT_OWNER, as the ConnectX-7 does; one without (the real MCX623432AN listing) none."""
    from mlxsim import families
    layout = [n for n in families.of({"family": family, "part_number": part})["layout"] if isinstance(n, str)]
    owner = layout.index("PORT_OWNER")
    group = ["LARGE_MTU_TWEAK_64", "AES_XTS_TWEAK_INC_64", "CRYPTO_POLICY"]
    assert (layout[owner - 3:owner] == group) is crypto
    assert ("CRYPTO_POLICY" in layout) is crypto
