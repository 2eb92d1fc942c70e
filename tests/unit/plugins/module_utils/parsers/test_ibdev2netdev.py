"""ibdev2netdev, plain and -v (_parsers/ibdev2netdev.py): the real captures and a synthetic verbose text."""
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse

from ._captures import capture_test, checks, section

CHECKS, check = checks()


@check("ibdev2netdev_cx7_cx6_1.txt")
def _ibdev2netdev_cx7_cx6(text):
    rows = parse("ibdev2netdev", text)  # column -t spacing and "# ..." comments
    assert len(rows) == 12
    assert rows[0] == {"rdma": "mlx5_0", "port": 1, "netdev": "ibp26s0", "state": "Down"}
    assert [r["netdev"] for r in rows if r["state"] == "Up"] == ["enp27s0f0np0", "enp157s0f0np0"]
    assert rows[2]["rdma"] == "mlx5_10" and rows[11] == {"rdma": "mlx5_9", "port": 1, "netdev": "ibp188s0",
                                                         "state": "Down"}


@check("mlnx_qos_pcp_and_show_gids_1.txt")
def _mlnx_qos_pcp(text):
    rows = parse("ibdev2netdev", section(text, "# ibdev2netdev", "mlnx_qos"))
    assert [(r["rdma"], r["netdev"], r["state"]) for r in rows][4:6] == [("mlx5_4", "ens14f1", "Down"),
                                                                         ("mlx5_5", "ib0", "Up")]
    assert len(rows) == 8


test_capture = capture_test(CHECKS)


def test_ibdev2netdev_verbose():
    text = ("0000:04:00.0 mlx5_0 (MT4115 - MT1545X03221) CX414A - ConnectX-4 QSFP28 fw 12.14.2036 port 1 (DOWN  ) "
            "==> enp4s0f0 (Down)\n"
            "0000:37:00.0 mlx5_1 (MT4129 - MT_0000000834) NVIDIA ConnectX-7 HHHL Adapter Card fw 28.43.1014 port 1 "
            "(ACTIVE) ==> ens1np0 (Up)\n")
    rows = parse("ibdev2netdev", text)
    assert rows[0] == {"rdma": "mlx5_0", "port": 1, "netdev": "enp4s0f0", "state": "Down", "pci": "0000:04:00.0",
                       "hca_type": "MT4115", "board_id": "MT1545X03221", "description": "CX414A - ConnectX-4 QSFP28",
                       "fw_version": "12.14.2036", "port_state": "DOWN"}
    assert rows[1]["board_id"] == "MT_0000000834" and rows[1]["port_state"] == "ACTIVE"
    assert parse("ibdev2netdev", "") == []
