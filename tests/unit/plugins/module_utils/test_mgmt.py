"""The management-interface guard (plugins/module_utils/_mgmt.py): the decision table, and mgmt_state reading a
fake host (addresses, default routes, bonds, drivers, ibdev2netdev) through the host layer."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _mgmt as mgmt
from unit.plugins.module_utils.fake_fwreset import mgmt_host


def lower_of(table):
    return lambda name: table.get(name, [name])


@pytest.mark.parametrize("case, explicit, addresses, addr, defaults, lower, drivers, rdma, ifs, mlx5", [
    ("veth found by address", None, ["198.19.30.12"], [("eth0", "198.19.30.12"), ("eth1", "10.0.0.1")], [], {},
     {"eth0": None}, {}, ["eth0"], False),
    ("default route on an Intel NIC", None, ["gfofed-ofed-a"], [("eno1", "10.1.1.1")], ["eno1"], {},
     {"eno1": "igb"}, {}, ["eno1"], False),
    ("bond over two ConnectX ports", None, ["10.2.2.2"], [("bond0", "10.2.2.2")], ["bond0"],
     {"bond0": ["enp41s0f0np0", "enp41s0f1np1"]}, {"enp41s0f0np0": "mlx5_core", "enp41s0f1np1": "mlx5_core"}, {},
     ["bond0"], True),
    ("explicit IPoIB interface", "ibp24s0", [], [], [], {}, {}, {"ibp24s0": "mlx5_0"}, ["ibp24s0"], True),
    ("nothing known", None, ["gfofed-ofed-a"], [("eth0", "198.19.30.11")], [], {}, {}, {}, [], False),
])
def test_mgmt_decision(case, explicit, addresses, addr, defaults, lower, drivers, rdma, ifs, mlx5):
    got = mgmt.mgmt_decision(explicit=explicit, addresses=addresses, addr_table=addr, default_ifs=defaults,
                             lower=lower_of(lower), drivers=drivers, rdma_netdevs=rdma)
    assert got["interfaces"] == ifs and got["on_mlx5"] is mlx5, case


def test_mgmt_state_follows_the_address_and_the_default_route(tmp_path, monkeypatch):
    monkeypatch.delenv("SSH_CONNECTION", raising=False)
    fake = mgmt_host(tmp_path, default_route="eth9")
    got = mgmt.mgmt_state(fake.host(), {"mgmt_address": "198.18.0.10"})
    assert got["interfaces"] == ["bond0", "eth9"] and got["on_mlx5"]
    assert got["source"] == "the interface holding 198.18.0.10 and the default route"
    assert got["evidence"] == {"enp24s0np0": "RDMA device mlx5_0 (ibdev2netdev)",
                               "enp64s0np0": "RDMA device mlx5_1 (ibdev2netdev)", "eth9": "driver none (virtual)"}
    got = mgmt.mgmt_state(fake.host(), {})
    assert got["interfaces"] == ["eth9"] and not got["on_mlx5"] and got["source"] == "the default route"


def test_mgmt_state_of_a_named_interface_reads_no_addresses(tmp_path):
    fake = mgmt_host(tmp_path)
    got = mgmt.mgmt_state(fake.host(), {"mgmt_interface": "bond0", "mgmt_address": "10.0.0.1"})
    assert got["interfaces"] == ["bond0"] and got["source"] == "gpufabric_ofed_mgmt_interface" and got["on_mlx5"]
    assert fake.commands("ip") == []


def test_the_ssh_connection_names_the_address(tmp_path, monkeypatch):
    monkeypatch.setenv("SSH_CONNECTION", "198.19.0.5 50022 10.0.0.1 22")
    assert mgmt.ssh_server_address() == "10.0.0.1"
    got = mgmt.mgmt_state(mgmt_host(tmp_path).host(), {})
    assert got["interfaces"] == ["eth9", "bond0"] and got["source"] == "the interface holding 10.0.0.1 and the default route"
    monkeypatch.setenv("SSH_CONNECTION", "")
    assert mgmt.ssh_server_address() is None
