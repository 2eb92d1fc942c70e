"""ethtool -i (_parsers/ethtool.py): the real captures; plain ``ethtool IFACE`` is not -i output."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import ParseError, parse

from ._captures import capture_test, checks, section

CHECKS, check = checks()


@check("ethtool_i_cx4_cx4lx_1.txt")
def _ethtool_i_cx4_cx4lx(text):
    kube01 = parse("ethtool_i", section(text, "root@kube01", "root@kube02"))
    assert kube01["driver"] == "mlx5_core" and kube01["version"] == "6.8.12-8-pve"
    assert (kube01["firmware_version"], kube01["psid"]) == ("14.32.1900", "MT_2420110034")
    assert kube01["bus_info"] == "0000:01:00.0" and kube01["expansion_rom_version"] == ""
    assert kube01["supports_priv_flags"] == "yes" and kube01["supports_eeprom_access"] == "no"
    kube02 = parse("ethtool_i", section(text, "root@kube02", "root@kube05"))
    assert (kube02["firmware_version"], kube02["psid"], kube02["bus_info"]) == ("12.28.2006", "MT_2150110033",
                                                                                "0000:81:00.0")
    with pytest.raises(ParseError, match="more than one"):
        parse("ethtool_i", text)


@check("ethtool_i_cx4lx_1.txt")
def _ethtool_i_cx4lx(text):
    info = parse("ethtool_i", text)
    assert info["version"] == "3.0-1 (January 2015)"  # parentheses that are not a PSID
    assert (info["firmware_version"], info["psid"]) == ("14.23.1020", None)
    assert info["bus_info"] == "0000:af:00.0" and info["supports_test"] == "no"


@check("ethtool_i_cx6lx_fragment_1.txt")
def _ethtool_i_cx6lx_fragment(text):
    assert parse("ethtool_i", text) == {"driver": "mlx5_core", "version": "6.19.0-061900-generic",
                                        "firmware_version": "26.43.2566", "psid": "MT_0000000531"}


@check("ethtool_mlx5_cx4_1.txt")
def _ethtool_settings(text):
    with pytest.raises(ParseError, match="ethtool_i"):  # plain "ethtool IFACE" is not -i output
        parse("ethtool_i", text)


test_capture = capture_test(CHECKS)
