"""flint/mstflint Rom Info per family, OEM images and GPU names, compared with real captures (issue 39 items 4, 6)."""
import json
import re

import pytest

from sim_helpers import real

FLINT_INDENT = " " * 23


def blocks(lines):
    """A capture's command outputs: [(command line, output lines)], split at the prompt lines."""
    out = []
    for ln in lines:
        if re.match(r"^\[?root@[^\s#$]*\]?[#$]", ln):
            out.append((ln, []))
        elif out:
            out[-1][1].append(ln)
    return [(cmd, body[:-1] if body and body[-1] == "" else body) for cmd, body in out]


def set_card(sim, pci, **fields):
    """Give the card at pci another image: fw fields (burned, release_date, product_version, burned_roms), psid, uids."""
    data = sim.state_data()
    card = next(c for c in data["cards"] if any(f["pci"].endswith(pci) for f in c["functions"]))
    for key, value in fields.items():
        if key in ("burned", "release_date", "product_version", "burned_roms"):
            card["fw"][key] = value
            if key == "burned":
                card["fw"]["running"] = value
        else:
            card[key] = value
    with open(sim.state, "w") as fh:
        json.dump(data, fh)


def same_query(mine, theirs):
    """flint query lines equal, but for the GUID/MAC values (the label and GuidsNumber column must match) and the
    indentation of a Rom Info continuation line when the capture's document altered it (the words must match)."""
    assert len(mine) == len(theirs), (mine, theirs)
    for m, t in zip(mine, theirs):
        if t.startswith(("Base GUID:", "Base MAC:")):
            assert m[:23] == t[:23] and m.split()[-1] == t.split()[-1] and len(m) == len(t), (m, t)
        elif t.lstrip().startswith("type="):
            assert m.split() == t.split(), (m, t)
        else:
            assert m == t


# ---------------------------------------------------------------------------- item 4: Rom Info


def test_mstflint_query_cx4_and_cx4lx_rom_info_as_the_real_tool_prints_it(sim):
    """mstflint_query_cx4_cx4lx_oem_1.txt: UEFI first, versions without zero padding, cpu= on each ROM of NVIDIA's
    images; none on the Dell image's old ROMs; Product Version rel-14_14_2320 on the OEM image."""
    caps = blocks(real("mstflint_query_cx4_cx4lx_oem_1.txt"))
    assert len(caps) == 3
    sim.init("legacy-eth")
    cx4 = sim.out("mstflint", "-d", "06:00.0", "q").rstrip("\n").split("\n")
    same_query(cx4, caps[0][1])
    assert cx4[4:6] == ["Rom Info:              type=UEFI version=14.21.17 cpu=AMD64,AARCH64",
                        FLINT_INDENT + "type=PXE version=3.6.102 cpu=AMD64"]
    sim.init("oem-cx4lx-v100")
    dell = sim.out("mstflint", "-d", "01:00.0", "q").rstrip("\n").split("\n")
    same_query(dell, caps[1][1])
    assert dell[3:6] == ["Product Version:       rel-14_14_2320", "Rom Info:              type=UEFI version=14.9.50",
                         FLINT_INDENT + "type=PXE version=3.4.729"]
    sim.init("refresh-cx5-storage")
    cx4lx = sim.out("mstflint", "-d", "03:00.0", "q").rstrip("\n").split("\n")
    same_query(cx4lx, caps[2][1])
    # flint (MFT) prints the same block; mlxfwmanager keeps its own zero-padded, PXE-first rows
    assert sim.out("flint", "-d", "03:00.0", "q").rstrip("\n").split("\n") == cx4lx
    rows = [ln.split() for ln in sim.out("mlxfwmanager", "-d", "03:00.0").split("\n") if ln.startswith("     ")]
    assert rows == [["FW", "14.32.1900", "N/A"], ["PXE", "3.6.0502", "N/A"], ["UEFI", "14.25.0017", "N/A"]]


def test_flint_query_lenovo_cx4_byte_for_byte(sim):
    """flint_query_cx4_lenovo_1.txt (verbatim): the Lenovo image's ROMs carry cpu=AMD64 only; given that image the
    simulator's query equals the capture but for the GUID/MAC values."""
    cap = blocks(real("flint_query_cx4_lenovo_1.txt"))[0][1]
    sim.init("legacy-eth")
    set_card(sim, "06:00.0", psid="LNV2180110032", burned_roms=[["UEFI", "14.21.17", "AMD64"], ["PXE", "3.6.102", "AMD64"]])
    mine = sim.out("flint", "-d", "06:00.0", "query").rstrip("\n").split("\n")
    assert mine[5] == cap[5] == FLINT_INDENT + "type=PXE version=3.6.102 cpu=AMD64"     # the real indentation
    same_query(mine, cap)


def test_flint_query_hpe_oem_image(sim):
    """flint_query_hpe_cx4lx_1.txt (verbatim): an HPE image rel-14_18_2030 whose UEFI ROM has a cpu field and whose
    PXE ROM has none - stored zero-padded as mlxfwmanager shows them, printed as flint does."""
    cap = blocks(real("flint_query_hpe_cx4lx_1.txt"))[0][1]
    sim.init("refresh-cx5-storage")
    set_card(sim, "03:00.0", psid="HP_2420110034", uids=16, burned="14.18.2030", release_date="20.4.2017",
             product_version="rel-14_18_2030", burned_roms=[["PXE", "3.5.0110", ""], ["UEFI", "14.12.0027", "AMD64"]])
    mine = sim.out("flint", "-d", "03:00.0", "q").rstrip("\n").split("\n")
    same_query(mine, cap)
    assert mine[4:6] == cap[4:6]


def test_image_query_as_the_real_fs3_image(sim, tmp_path):
    """mstflint_query_image_cx4lx_1.txt (verbatim): an image file's Product Version is its release name, its GUIDs
    N/A with the image's count, an FS3 image's query ends at Security Attributes (no Security Ver); the simulator's
    mkimage of a ConnectX-4 Lx image (device id 4117) is FS3 with Security Attributes N/A."""
    cap = blocks(real("mstflint_query_image_cx4lx_1.txt"))[0][1]
    sim.init("refresh-cx5-storage")
    img = tmp_path / "firmware.bin"
    sim.out("mlxsim", "mkimage", "--psid", "MT_0000000267", "--version", "14.32.1912", "--device-id", "4117",
            "--uefi", "14.25.17", "--pxe", "3.6.502", "--release-date", "21.1.2026", "--guids", "4", "-o", img)
    mine = sim.out("mstflint", "-i", img, "q").rstrip("\n").split("\n")
    assert mine == cap
    # an FS4 image keeps its Security Ver line and prints its own release name
    img4 = tmp_path / "cx7.bin"
    sim.out("mlxsim", "mkimage", "--psid", "MT_0000000838", "--version", "28.43.2566", "--device-id", "4129",
            "-o", img4)
    out4 = sim.out("flint", "-i", img4, "q").split("\n")
    assert "Product Version:       rel-28_43_2566" in out4 and "Security Ver:          0" in out4
    assert "Image type:            FS4" in out4


def test_orig_psid_of_a_board_that_keeps_its_manufacturing_psid(sim):
    """flint_query_orig_psid_cx4lx_1.txt: a Huawei board on NVIDIA's image prints Orig PSID after PSID; an older
    image's device query prints its rel- Product Version too."""
    cap = blocks(real("flint_query_orig_psid_cx4lx_1.txt"))[0][1]
    sim.init("refresh-cx5-storage")
    set_card(sim, "03:00.0", board_psid="HUA0000000001", uids=4, burned="14.22.1002", release_date="23.2.2018",
             product_version="rel-14_22_1002",
             burned_roms=[["UEFI", "14.15.19", "AMD64,AARCH64"], ["PXE", "3.5.403", "AMD64"]])
    mine = sim.out("flint", "-d", "03:00.0", "q").rstrip("\n").split("\n")
    same_query(mine, cap)
    assert mine[-3:] == ["PSID:                  MT_2420110034", "Orig PSID:             HUA0000000001",
                         "Security Attributes:   N/A"]


def test_dell_card_cross_flashed_to_nvidia_s_image(sim, tmp_path):
    """mstflint_query_cx4_cx4lx_oem_1.txt's third query: the Dell card after mstflint --allow_psid_change burned
    NVIDIA's 14.32.1900 image (and a reboot) - NVIDIA's PSID, FW, date, ROMs and Product Version, no Orig PSID."""
    cap = blocks(real("mstflint_query_cx4_cx4lx_oem_1.txt"))[2][1]
    sim.init("oem-cx4lx-v100")
    img = tmp_path / "fw-ConnectX4Lx-rel-14_32_1900-MCX4121A-ACA_Ax-UEFI-14.25.17-FlexBoot-3.6.502.bin"
    sim.out("mlxsim", "mkimage", "--psid", "MT_2420110034", "--version", "14.32.1900", "--device-id", "4117",
            "--uefi", "14.25.17", "--pxe", "3.6.502", "--release-date", "25.8.2024", "-o", img)
    p = sim.run("mstflint", "--allow_psid_change", "-d", "01:00.0", "-i", img, "-y", "burn")
    assert p.returncode == 0, p.stdout
    sim.out("mlxsim", "reboot")
    mine = sim.out("mstflint", "-d", "01:00.0", "q").rstrip("\n").split("\n")
    same_query(mine, cap)
    assert not any(ln.startswith("Orig PSID:") for ln in mine)


def test_flint_query_rom_info_parsed_from_the_real_forms():
    """The collection's flint parser reads every real Rom Info form: cpu lists, no cpu field, document-altered
    indentation of the continuation line; an OEM Product Version is kept as printed, apart from FW Version."""
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.flint import parse_flint

    dell = parse_flint("\n".join(blocks(real("mstflint_query_cx4_cx4lx_oem_1.txt"))[1][1]), tool="mstflint")
    assert dell["rom_info"] == [{"type": "UEFI", "version": "14.9.50"}, {"type": "PXE", "version": "3.4.729"}]
    assert (dell["fw_version"], dell["product_version"], dell["psid"]) == ("14.14.2320", "rel-14_14_2320",
                                                                           "DEL2420110034")
    hpe = parse_flint("\n".join(blocks(real("flint_query_hpe_cx4lx_1.txt"))[0][1]))
    assert hpe["rom_info"] == [{"type": "UEFI", "version": "14.12.27", "cpu": "AMD64"},
                               {"type": "PXE", "version": "3.5.110"}]
    assert hpe["guids_number"] == "16"


# ---------------------------------------------------------------------------- item 6: OEM image in mlxfwmanager


def test_mlxfwmanager_dell_oem_image_and_base_mac_only(sim):
    """mlxfwmanager_query_dell_cx4lx_1.txt: the Dell card's fields and zero-padded ROM rows; a ConnectX-4 Lx prints
    the Base MAC only (on either image), a ConnectX-4 in Ethernet mode the Base GUID and the Base MAC."""
    caps = blocks(real("mlxfwmanager_query_dell_cx4lx_1.txt"))
    assert len(caps) == 3

    def fields(lines):
        return [ln.strip() for ln in lines if ln.strip() and not ln.startswith(("Base GUID", "Base MAC"))
                and not ln.strip().startswith(("Base GUID", "Base MAC", "PCI Device Name"))]

    def labels(lines):
        return [ln.split(":")[0].strip() for ln in lines if ln.strip().startswith(("Base GUID", "Base MAC"))]

    for profile, dev, (_cmd, cap) in (("legacy-eth", "06:00.0", caps[0]), ("oem-cx4lx-v100", "01:00.0", caps[1]),
                                      ("refresh-cx5-storage", "03:00.0", caps[2])):
        sim.init(profile)
        mine = sim.out("mlxfwmanager", "-d", dev).rstrip("\n").split("\n")
        # the simulator prints one device: compare up to the Status line
        mine = mine[:next(i for i, ln in enumerate(mine) if "Status:" in ln) + 1]
        assert [" ".join(ln.split()) for ln in fields(mine)] == [" ".join(ln.split()) for ln in fields(cap)]
        assert labels(mine) == labels(cap)
    assert labels(caps[1][1]) == ["Base MAC"] and labels(caps[0][1]) == ["Base GUID", "Base MAC"]


# ---------------------------------------------------------------------------- item 6: GPUs other than H100


@pytest.mark.parametrize("capture,gpu", [("nccl_all_reduce_perf_v100_1.txt", "Tesla V100-SXM2-32GB"),
                                         ("nccl_all_reduce_perf_2node_a100_1.txt", "NVIDIA A100-SXM4-40GB"),
                                         ("nccl_all_reduce_perf_azure_h200_1.txt", "NVIDIA H200")])
def test_nccl_ranks_print_the_host_s_gpu_as_the_captures(sim, capture, gpu):
    rank = [ln for ln in real(capture) if ln.startswith("#  Rank")][0]
    assert rank.endswith("] " + gpu)
    sim.init("dgx-h100", "nccl-tests", "--gpu", gpu)
    out = sim.out("all_reduce_perf", "-b", "8", "-e", "8", "-g", "1").split("\n")
    mine = [ln for ln in out if ln.startswith("#  Rank")]
    assert len(mine) == 1 and mine[0].endswith("] " + gpu)


def test_profile_gpus(sim):
    """The oem-cx4lx-v100 profile carries V100s; the other profiles the H100 default; `--gpu` names an H200."""
    sim.init("oem-cx4lx-v100", "node01", cli=True)
    out = sim.out("all_reduce_perf", "-b", "8", "-e", "8", "-g", "2").split("\n")
    assert [ln.rsplit("] ", 1)[1] for ln in out if ln.startswith("#  Rank")] == ["Tesla V100-SXM2-32GB"] * 2
    sim.init("legacy-eth", "node01", cli=True)
    out = sim.out("all_reduce_perf", "-b", "8", "-e", "8", "-g", "1").split("\n")
    assert [ln.rsplit("] ", 1)[1] for ln in out if ln.startswith("#  Rank")] == ["NVIDIA H100 80GB HBM3"]
    sim.init("legacy-eth", "node01", "--gpu", "NVIDIA H200")
    out = sim.out("all_reduce_perf", "-b", "8", "-e", "8", "-g", "1").split("\n")
    assert [ln.rsplit("] ", 1)[1] for ln in out if ln.startswith("#  Rank")] == ["NVIDIA H200"]
