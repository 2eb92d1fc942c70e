"""ibstat (_parsers/ibstat.py): the real captures; ibstatus and grep-cut text are not ibstat output."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import ParseError, parse

from ._captures import capture_test, checks, only, section

CHECKS, check = checks()


@check("ibstat_h100_cx7_cx6dx_1.txt")
def _ibstat_h100(text):
    cas = parse("ibstat", text)
    assert [ca["name"] for ca in cas] == ["mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11", "mlx5_2", "mlx5_3",
                                          "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
    assert sorted(ca["name"] for ca in cas if ca["ca_type"] == "MT4125") == ["mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"]
    first = cas[0]
    assert first == {
        "name": "mlx5_0", "ca_type": "MT4129", "num_ports": "1", "firmware_version": "28.39.1002",
        "hardware_version": "0", "node_guid": "0xa088c20300e3142a", "system_image_guid": "0xa088c20300e3142a",
        "ports": [{"port": 1, "state": "Active", "physical_state": "LinkUp", "rate": "400", "base_lid": "0",
                   "lmc": "0", "sm_lid": "0", "capability_mask": "0x00010000",
                   "port_guid": "0xa288c2fffee3142a", "link_layer": "Ethernet"}],
    }
    assert cas[1]["ports"][0]["port_guid"] == "0x0000000000000000"
    assert cas[-1]["ports"][0]["link_layer"] == "Ethernet"  # last line has no newline


@check("ibstat_a100_cx6_1.txt")
def _ibstat_a100(text):
    cas = parse("ibstat", text)
    assert len(cas) == 9 and {ca["ca_type"] for ca in cas} == {"MT4126"}
    assert cas[0]["firmware_version"] == "22.35.2302"
    assert cas[0]["ports"][0]["link_layer"] == "Ethernet"
    assert cas[1]["ports"][0] == {"port": 1, "state": "Active", "physical_state": "LinkUp", "rate": "200",
                                  "base_lid": "1369", "lmc": "0", "sm_lid": "83",
                                  "capability_mask": "0xa651ec48", "port_guid": "0x6b9d7f2c99902a63",
                                  "link_layer": "InfiniBand"}
    assert cas[8]["ports"][0]["base_lid"] == "1396"


@check("ibstat_cx6dx_1.txt")
def _ibstat_cx6dx(text):
    cas = parse("ibstat", text)  # TABs converted to spaces
    assert [(ca["name"], ca["node_guid"]) for ca in cas] == [("mlx5_0", "0x0c42a103001dd12a"),
                                                             ("mlx5_1", "0x0c42a103001dd12b")]
    assert cas[1]["system_image_guid"] == "0x0c42a103001dd12a"
    assert cas[0]["firmware_version"] == "22.32.2004"
    assert cas[1]["ports"][0]["port_guid"] == "0x0e42a1fffe1dd12b"
    assert cas[1]["ports"][0]["rate"] == "100"


@check("ibstat_cx3_debug_1.txt")
def _ibstat_cx3_debug(text):
    ca = only(parse("ibstat", text))  # "+ ibstat" trace and ibwarn lines skipped
    assert (ca["name"], ca["ca_type"], ca["num_ports"], ca["firmware_version"]) == ("mlx4_0", "MT4099", "2", "2.42.5000")
    assert [p["port"] for p in ca["ports"]] == [1, 2]
    assert ca["ports"][0]["state"] == "Down" and ca["ports"][0]["physical_state"] == "Disabled"
    assert ca["ports"][0]["sm_lid"] == "13" and ca["ports"][0]["capability_mask"] == "0x02594868"
    assert ca["ports"][1]["rate"] == "56"
    assert ca["ports"][1]["base_lid"] == ""  # the excerpt ends after "Base lid:"
    assert ca["ports"][1]["link_layer"] is None


@check("ibstatus_a100_1.txt")
def _ibstatus_a100(text):
    with pytest.raises(ParseError, match="ibstat"):  # ibstatus is another tool
        parse("ibstat", text)


@check("rdma_link_ibstat_lspci_cx5_1.txt")
def _rdma_link_ibstat_lspci_cx5(text):
    # "ibstat mlx5_0 | grep 'Link layer'" keeps no CA line: not ibstat output.
    with pytest.raises(ParseError):
        parse("ibstat", section(text, 'ibstat mlx5_0 | grep "Link layer"', "```"))


@check("ibstat_down_polling_cx3_1.txt")
def _ibstat_down_polling_cx3(text):
    ca = only(parse("ibstat", text))
    assert (ca["name"], ca["num_ports"]) == ("mlx4_0", "2")
    ib, eth = ca["ports"]
    assert ib == {"port": 1, "state": "Down", "physical_state": "Polling", "rate": "10", "base_lid": "0", "lmc": "0",
                  "sm_lid": "0", "capability_mask": "0x02594868", "port_guid": "0xe41d2d03007b4081",
                  "link_layer": "InfiniBand"}
    assert (eth["state"], eth["physical_state"], eth["rate"], eth["link_layer"]) == (
        "Down", "Disabled", "40", "Ethernet")
    assert eth["port_guid"] == "0xe61d2dfffe7b4082"      # a down RoCE port keeps its MAC-derived GUID


@check("ibstat_ibpanic_partial_1.txt")
def _ibstat_ibpanic_partial(text):
    # ibstat stopped partway (rdma-core before v54): the CAs before mlx5_8 printed, then the panic - an error naming
    # the device, never the CAs printed so far
    with pytest.raises(ParseError, match=r"RDMA device 'mlx5_8' could not be read \(No such file or directory\): "
                                         r"ibstat stopped there, after mlx5_7, so the listing is not the host's"):
        parse("ibstat", text)
    ca = only(parse("ibstat", text.split("ibpanic:")[0]))     # what came before the panic is a CA block
    assert ca["name"] == "mlx5_7" and ca["ports"][0]["base_lid"] == "13305" and ca["ports"][0]["rate"] == "200"
    # rdma-core v54 on: an ibwarn line, the device left out, the rest printed - refused as well
    warned = text.replace("ibpanic: [1323906] main: stat of IB device 'mlx5_8' failed: No such file or directory",
                          "ibwarn: [1323906] main: stat of IB device 'mlx5_8' failed")
    with pytest.raises(ParseError, match=r"RDMA device 'mlx5_8' could not be read \(stat failed\): ibstat left it out"):
        parse("ibstat", warned)


@check("ibstat_ibpanic_vf_azure_1.txt")
def _ibstat_ibpanic_vf_azure(text):
    # the panic on the first device (the Azure AccelNet VF): nothing printed before it
    with pytest.raises(ParseError, match=r"'mlx5_an0' could not be read .*ibstat stopped there, before any device"):
        parse("ibstat", section(text, "~$ ibstat", "~$ ibstat mlx5_ib0"))
    # `ibstat mlx5_ib0`: a ConnectX-6 VF (MT4124) of the VM, the text without indentation
    ca = only(parse("ibstat", section(text, "~$ ibstat mlx5_ib0")))
    assert (ca["name"], ca["ca_type"], ca["firmware_version"]) == ("mlx5_ib0", "MT4124", "20.28.4000")
    assert (ca["node_guid"], ca["system_image_guid"]) == ("0x00155dfffe34072b", "0x0c42a10300a58684")
    assert ca["ports"] == [{"port": 1, "state": "Initializing", "physical_state": "LinkUp", "rate": "200",
                            "base_lid": "65535", "lmc": "0", "sm_lid": "361", "capability_mask": "0x2651ec48",
                            "port_guid": "0x00155dfffd34072b", "link_layer": "InfiniBand"}]


def test_ibpanic_of_another_kind_is_refused():
    with pytest.raises(ParseError, match=r"ibstat stopped: 'mlx5_9' IB device can't be found: No such file"):
        parse("ibstat", "ibpanic: [77] main: 'mlx5_9' IB device can't be found: No such file or directory\n")


test_capture = capture_test(CHECKS)
