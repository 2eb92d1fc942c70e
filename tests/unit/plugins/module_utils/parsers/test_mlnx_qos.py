"""mlnx_qos (_parsers/mlnx_qos.py): the real captures (pcp and dscp trust, PFC) and synthetic ETS/buffers."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import ParseError, parse

from ._captures import capture_test, checks, section

CHECKS, check = checks()


@check("mlnx_qos_pcp_and_show_gids_1.txt")
def _mlnx_qos_pcp(text):
    pcp = parse("mlnx_qos", section(text, "mlnx_qos -i ens6", "root@", nth=1))
    assert pcp["dcbx_mode"] == "OS controlled" and pcp["trust"] == "pcp"
    assert pcp["dscp2prio"] == {}
    assert pcp["buffer_sizes"] == [524160, 0, 0, 0, 0, 0, 0, 0]
    assert pcp["cable_len"] == 7
    assert pcp["pfc"] == {"enabled": [0] * 8, "buffer": [0] * 8}
    assert [(tc["tc"], tc["priorities"]) for tc in pcp["tcs"][:3]] == [(0, [1]), (1, [0]), (2, [2])]
    assert {(tc["ratelimit"], tc["tsa"], tc["bw"]) for tc in pcp["tcs"]} == {("unlimited", "vendor", None)}

    dscp = parse("mlnx_qos", section(text, "mlnx_qos -i ens6 --trust dscp", "root@"))
    assert dscp["trust"] == "dscp"
    assert len(dscp["dscp2prio"]) == 64
    assert (dscp["dscp2prio"][0], dscp["dscp2prio"][26], dscp["dscp2prio"][46], dscp["dscp2prio"][63]) == (0, 3, 5, 7)


@check("mlnx_qos_trust_pfc_cma_roce_tos_1.txt")
def _mlnx_qos_trust_pfc(text):
    trust = parse("mlnx_qos", section(text, "+ mlnx_qos -i eth4 --trust dscp", "+ sudo"))
    assert trust["trust"] == "dscp" and trust["dcbx_mode"] == "OS controlled"
    assert trust["buffer_sizes"] is None  # this MLNX_OFED prints no buffer lines
    assert trust["pfc"] == {"enabled": [0, 0, 0, 1, 0, 0, 0, 0], "buffer": None}
    assert trust["dscp2prio"][24] == 3 and trust["dscp2prio"][48] == 6
    assert len(trust["tcs"]) == 8 and trust["tcs"][1]["priorities"] == [0]

    pfc = parse("mlnx_qos", section(text, "+ mlnx_qos -i eth4 --pfc 0,0,0,1,0,0,0,0"))
    assert pfc["pfc"]["enabled"][3] == 1 and sum(pfc["pfc"]["enabled"]) == 1
    with pytest.raises(ParseError, match="more than one mlnx_qos output"):
        parse("mlnx_qos", text)


test_capture = capture_test(CHECKS)


def test_mlnx_qos_ets_and_buffers():
    text = ("DCBX mode: OS controlled\nPriority trust state: dscp\ndscp2prio mapping:\n"
            "\tprio:3 dscp:31,30,29,28,27,26,25,24,\n\tprio:3 dscp:23,\ndefault priority:\n"
            "Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=262016\n"
            "Cable len: 7\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n"
            "\tenabled     0   0   0   1   0   0   0   0   \n\tbuffer      0   0   0   1   0   0   0   0   \n"
            "tc: 0 ratelimit: unlimited, tsa: ets, bw: 50%\n\t priority:  0\n\t priority:  1\n"
            "tc: 3 ratelimit: 25.0 Gbps, tsa: strict\n\t priority:  3\n")
    qos = parse("mlnx_qos", text)
    assert qos["dscp2prio"] == {24: 3, 25: 3, 26: 3, 27: 3, 28: 3, 29: 3, 30: 3, 31: 3, 23: 3}
    assert qos["buffer_sizes"] == [130944, 130944, 0, 0, 0, 0, 0, 0] and qos["max_buffer_size"] == 262016
    assert qos["pfc"]["buffer"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert qos["tcs"] == [{"tc": 0, "ratelimit": "unlimited", "tsa": "ets", "bw": "50%", "priorities": [0, 1]},
                          {"tc": 3, "ratelimit": "25.0 Gbps", "tsa": "strict", "bw": None, "priorities": [3]}]
