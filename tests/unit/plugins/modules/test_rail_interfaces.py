"""The rail_interfaces module in a network namespace with real iproute2 (test_rails' netns fixture)."""
import pytest
from _modules import run_module

from ansible_collections.gpufabric.mlnx.plugins.modules import rail_interfaces
from unit.plugins.module_utils.test_rails import RAIL0, RAIL1, netns, netns_host  # noqa: F401  pylint: disable=unused-import


@pytest.fixture
def run(monkeypatch, netns, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    fake = netns_host(netns, tmp_path)
    monkeypatch.setattr(rail_interfaces, "Host", lambda root="/": fake.host())

    def _run(args, check=False):
        return run_module(rail_interfaces, dict(args, mgmt_interface="eth-mgmt"), check=check)
    return _run


def test_check_converge_idempotent(run):
    failed, out = run({"rails": [RAIL0, RAIL1], "host": "srv-a"}, check=True)
    assert not failed and out["changed"] and out["msg"].startswith("would change enp24s0np0: mtu 1500 -> 9000, up, address 198.18.0.2/26")
    assert "gpufabric-rail1.nmconnection" in out["nm_keyfiles"]
    failed, out = run({"rails": [RAIL0, RAIL1], "host": "srv-a"})
    assert not failed and out["changed"]
    failed, out = run({"rails": [RAIL0, RAIL1], "host": "srv-a"})
    assert not failed and not out["changed"] and out["msg"] == "rails already as planned on enp24s0np0, enp64s0np0"


def test_bad_entry_fails_naming_host_and_entry(run):
    failed, out = run({"rails": [RAIL0, dict(RAIL1, table=100)], "host": "srv-a"})
    assert failed and "srv-a: rails[1] repeats table 100 of rails[0]" in out["msg"]


def test_without_host_the_messages_name_the_machine(run, monkeypatch):
    monkeypatch.setattr(rail_interfaces.socket, "gethostname", lambda: "gpu-node-17")
    failed, out = run({"rails": [RAIL0, dict(RAIL1, table=100)]})
    assert failed and "gpu-node-17: rails[1] repeats table 100 of rails[0]" in out["msg"]
