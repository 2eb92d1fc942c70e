"""flint / mstflint query and burn (_parsers/flint.py): the real captures and a synthetic FS4/FS2 query."""
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse

from ._captures import capture_test, checks, section

CHECKS, check = checks()


# ---------------------------------------------------------------- flint captures

@check("flint_query_cx7_1.txt")
def _flint_query_cx7(text):
    assert parse("flint", text) == {
        "image_type": "FS4", "fw_version": "28.42.1000", "fw_release_date": "8.8.2024",
        "product_version": "28.42.1000",
        "rom_info": [{"type": "UEFI", "version": "14.35.15", "cpu": "AMD64,AARCH64"},
                     {"type": "PXE", "version": "3.7.500", "cpu": "AMD64"}],
        "base_guid": "e09d730300126474", "guids_number": "16",
        "base_mac": "e09d73126474", "macs_number": "16",
        "image_vsd": "N/A", "device_vsd": "N/A", "psid": "MT_0000001244",
        "security_attributes": "secure-fw", "errors": [],
    }


@check("mstflint_query_cx6lx_1.txt")
def _mstflint_query_cx6lx(text):
    info = parse("mstflint", section(text, "mstflint -d 0002:01:00.0 q"))
    assert info["fw_version"] == "26.33.1048"
    assert info["fw_release_date"] == "29.4.2022"
    assert info["rom_info"] == [{"type": "UEFI", "version": "14.26.17", "cpu": "AMD64,AARCH64"},
                                {"type": "PXE", "version": "3.6.502", "cpu": "AMD64"}]
    assert (info["base_guid"], info["guids_number"]) == ("e8ebd3030070cf12", "4")
    assert (info["base_mac"], info["macs_number"]) == ("e8ebd370cf12", "4")
    assert info["psid"] == "MT_0000000575"
    assert "fw_version_running" not in info


@check("flint_query_cx4_lenovo_1.txt")
def _flint_query_cx4_lenovo(text):
    info = parse("flint", section(text, "flint -d /dev/mst/mt4115_pciconf0 query"))
    assert info["rom_info"] == [{"type": "UEFI", "version": "14.21.17", "cpu": "AMD64"},
                                {"type": "PXE", "version": "3.6.102", "cpu": "AMD64"}]
    assert (info["fw_version"], info["product_version"], info["psid"]) == ("12.28.2006", "12.28.2006",
                                                                           "LNV2180110032")
    assert info["security_attributes"] == "N/A" and info["guids_number"] == "4"


@check("flint_query_hpe_cx4lx_1.txt")
def _flint_query_hpe_cx4lx(text):
    # an HPE OEM image: Product Version rel-14_18_2030, a PXE ROM without a cpu field
    info = parse("flint", section(text, "flint -d /dev/mst/mt4117_pciconf0 q"))
    assert info["rom_info"] == [{"type": "UEFI", "version": "14.12.27", "cpu": "AMD64"},
                                {"type": "PXE", "version": "3.5.110"}]
    assert (info["fw_version"], info["product_version"]) == ("14.18.2030", "rel-14_18_2030")
    assert (info["psid"], info["guids_number"]) == ("HP_2420110034", "16")


@check("mstflint_query_cx4_cx4lx_oem_1.txt")
def _mstflint_query_cx4_cx4lx_oem(text):
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._firmware import state_from_query

    cx4 = parse("mstflint", section(text, "root@kube02", "root@kube01"))
    assert cx4["rom_info"] == [{"type": "UEFI", "version": "14.21.17", "cpu": "AMD64,AARCH64"},
                               {"type": "PXE", "version": "3.6.102", "cpu": "AMD64"}]
    dell = parse("mstflint", section(text, "root@kube01:/etc", "root@kube01:~#"))
    # the Dell image's old ROMs print no cpu field; its Product Version is the image's rel- string
    assert dell["rom_info"] == [{"type": "UEFI", "version": "14.9.50"}, {"type": "PXE", "version": "3.4.729"}]
    assert (dell["fw_version"], dell["product_version"], dell["psid"]) == ("14.14.2320", "rel-14_14_2320",
                                                                           "DEL2420110034")
    # the firmware state takes FW Version, never the OEM Product Version
    assert state_from_query("01:00.0", dell) == {"psid": "DEL2420110034", "part_number": None,
                                                 "burned": "14.14.2320", "running": "14.14.2320"}
    after = parse("mstflint", section(text, "root@kube01:~#"))
    assert (after["fw_version"], after["product_version"], after["psid"]) == ("14.32.1900", "14.32.1900",
                                                                              "MT_2420110034")
    assert after["rom_info"][0] == {"type": "UEFI", "version": "14.25.17", "cpu": "AMD64,AARCH64"}


@check("mstflint_query_image_cx4lx_1.txt")
def _mstflint_query_image_cx4lx(text):
    info = parse("mstflint", section(text, "mstflint -i firmware.bin q"))
    assert (info["fw_version"], info["product_version"], info["psid"]) == ("14.32.1912", "rel-14_32_1912",
                                                                           "MT_0000000267")
    assert (info["base_guid"], info["guids_number"]) == ("N/A", "4")
    assert "security_ver" not in info and info["security_attributes"] == "N/A"


@check("flint_query_orig_psid_cx4lx_1.txt")
def _flint_query_orig_psid_cx4lx(text):
    info = parse("flint", section(text, "flint -d 0000:18:00.0 q"))
    assert (info["psid"], info["orig_psid"]) == ("MT_2420110034", "HUA0000000001")
    assert (info["fw_version"], info["product_version"]) == ("14.22.1002", "rel-14_22_1002")
    assert info["rom_info"][1] == {"type": "PXE", "version": "3.5.403", "cpu": "AMD64"}


@check("mlxfwreset_reset_cx7_1.txt")
def _mlxfwreset_reset_cx7(text):
    after = parse("flint", section(text, "flint -d /dev/mst/mt4129_pciconf0 query"))
    assert (after["fw_version"], after["fw_release_date"]) == ("28.43.1014", "7.11.2024")
    assert after["rom_info"][0]["version"] == "14.36.16"


@check("mixed_mlxconfig_mlxlink_flint_grep_cx7_1.txt")
def _mixed_cx7(text):
    flint = parse("flint", section(text, "Firmware Info:", "Temperature"))
    assert flint["fw_version"] == "28.40.1000"
    assert flint["product_version"] == "28.40.1000"
    assert flint["psid"] == "MT_0000000834"


@check("mstflint_burn_cx4_fs3_1.txt")
def _mstflint_burn_cx4(text):
    assert parse("mstflint_burn", text) == {
        "current_version": "12.28.2006", "new_version": "12.28.2302",
        "stages": [{"stage": "FSMST_INITIALIZE", "status": "OK"},
                   {"stage": "Writing Boot image component", "status": "OK"}],
        "ok": True, "errors": [], "warnings": [],
        "info": ["To load new FW run mstfwreset or reboot machine."], "psid_mismatch": None,
    }


@check("mstflint_burn_psid_mismatch_cx4lx_1.txt")
def _mstflint_burn_psid_mismatch(text):
    refused = parse("flint_burn", section(text, "-i $FW_FILE_NAME burn", "```"))
    assert (refused["current_version"], refused["new_version"]) == ("14.14.2320", "14.32.1900")
    assert refused["ok"] is False and refused["stages"] == []
    assert refused["psid_mismatch"] == {"flash": "DEL2420110034", "image": "MT_2420110034"}
    assert refused["errors"][0].startswith("PSID mismatch.")

    forced = parse("flint_burn", section(text, "--allow_psid_change -d", "```"))
    assert forced["psid_mismatch"] is None and forced["errors"] == []
    # the "  1%" progress line and the final OK are one stage
    assert forced["stages"] == [{"stage": "Burning FW image without signatures", "status": "OK"}]
    assert forced["ok"] is True


test_capture = capture_test(CHECKS)


def test_flint_running_version_and_fs2():
    text = ("Image type:            FS4\nFW Version:            28.43.1014\nFW Version(Running):   28.39.1002\n"
            "FW Release Date:       7.11.2024\nPart Number:           MCX755106AS-HEA_Ax\n"
            "Description:           NVIDIA ConnectX-7 HHHL Adapter Card\nRom Info:              N/A\n"
            "Orig PSID:             MT_0000000834\nSecurity Attributes:   secure-fw, dev\n"
            "Life cycle:            GA SECURED\n")
    info = parse("flint", text)
    assert info["fw_version_running"] == "28.39.1002" and info["fw_version"] == "28.43.1014"
    assert info["description"] == "NVIDIA ConnectX-7 HHHL Adapter Card"
    assert info["rom_info"] == [] and info["orig_psid"] == "MT_0000000834"
    assert info["security_attributes"] == "secure-fw, dev" and info["life_cycle"] == "GA SECURED"
    fs2 = parse("flint", "Image type:      FS2\nFW Version:      2.42.5000\n"
                         "Description:     Node             Port1            Port2            Sys image\n"
                         "GUIDs:           e41d2d0300b0c5f0 e41d2d0300b0c5f1 e41d2d0300b0c5f2 e41d2d0300b0c5f3\n"
                         "PSID:            MT_1090111023\n")
    assert "description" not in fs2 and fs2["guids"].split()[3] == "e41d2d0300b0c5f3"


def test_an_oem_version_string_is_no_firmware_version():
    """A query whose FW Version had the OEM Product Version's shape (rel-14_14_2320) is refused naming the device,
    not read as a ConnectX xx.yy.zzzz version (mstflint_query_cx4_cx4lx_oem_1.txt prints it only as Product
    Version); the pin grammar refuses it too."""
    import pytest

    from ansible_collections.gpufabric.mlnx.plugins.module_utils._firmware import state_from_query
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._versions import FIRMWARE_PIN_RE

    info = parse("mstflint", "Image type:            FS3\nFW Version:            rel-14_14_2320\n"
                             "PSID:                  DEL2420110034\n")
    with pytest.raises(Exception) as err:
        state_from_query("0000:01:00.0", info)
    assert "0000:01:00.0: flint query printed no usable PSID / FW Version" in str(err.value)
    assert "'rel-14_14_2320'" in str(err.value)
    assert not FIRMWARE_PIN_RE.match("rel-14_14_2320") and FIRMWARE_PIN_RE.match("14.14.2320")


def test_rom_info_of_an_unknown_shape_is_refused_naming_the_line():
    """Rom Info is N/A or type=... version=... entries (with or without cpu=, as the real OEM images print them);
    any other text fails closed naming the line, never an empty ROM list."""
    import pytest

    from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.common import ParseError

    head = "Image type:            FS3\nFW Version:            14.14.2320\n"
    assert parse("flint", head + "Rom Info:              N/A\nPSID:                  DEL2420110034\n")["rom_info"] == []
    with pytest.raises(ParseError) as err:
        parse("flint", head + "Rom Info:              version_id=3.4.729\nPSID:                  DEL2420110034\n")
    assert "Rom Info is neither N/A nor type=... version=..." in str(err.value)
    assert "(line 3: 'Rom Info:              version_id=3.4.729')" in str(err.value)
    with pytest.raises(ParseError) as err:
        parse("flint", head + "Rom Info:              type=UEFI version=14.9.50\n                       type=PXE\n")
    assert "a Rom Info entry is not type=... version=..." in str(err.value) and "line 4" in str(err.value)
