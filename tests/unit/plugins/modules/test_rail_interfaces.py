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
    _run.root = tmp_path
    return _run


def test_check_converge_idempotent(run):
    failed, out = run({"rails": [RAIL0, RAIL1], "host": "srv-a"}, check=True)
    assert not failed and out["changed"] and out["msg"].startswith(
        "srv-a: would change enp24s0np0: mtu 1500 -> 9000, up, address 198.18.0.2/26")
    assert "gpufabric-rail1.nmconnection" in out["nm_keyfiles"]
    failed, out = run({"rails": [RAIL0, RAIL1], "host": "srv-a"})
    assert not failed and out["changed"]
    failed, out = run({"rails": [RAIL0, RAIL1], "host": "srv-a"})
    assert not failed and not out["changed"] and out["files"] == [] and out["diff"] == []
    assert out["msg"] == "srv-a: rails already as planned on enp24s0np0, enp64s0np0; kept at boot by none"


def test_bad_entry_fails_naming_host_and_entry(run):
    failed, out = run({"rails": [RAIL0, dict(RAIL1, table=100)], "host": "srv-a"})
    assert failed and "srv-a: rails[1] repeats table 100 of rails[0]" in out["msg"]


def test_without_host_the_messages_name_the_machine(run, monkeypatch):
    monkeypatch.setattr(rail_interfaces.socket, "gethostname", lambda: "gpu-node-17")
    failed, out = run({"rails": [RAIL0, dict(RAIL1, table=100)]})
    assert failed and "gpu-node-17: rails[1] repeats table 100 of rails[0]" in out["msg"]


def test_the_files_kept_at_boot_are_diffed_in_check_mode_written_once_then_left(run):
    """provider ifupdown and the sysctl.d file: --check shows each file's text diff and writes nothing; the run writes
    both (mode 0644, the ifupdown directory made); a rerun changes nothing."""
    args = {"rails": [RAIL0, RAIL1], "host": "srv-a", "provider": "ifupdown",
            "sysctl_file": "/etc/sysctl.d/90-gpufabric-rails.conf"}
    stanzas = run.root / "etc/network/interfaces.d/gpufabric-rails"
    sysctl = run.root / "etc/sysctl.d/90-gpufabric-rails.conf"
    (run.root / "etc/sysctl.d").mkdir(parents=True)
    failed, out = run(args, check=True)
    assert not failed and out["changed"] and out["provider"] == "ifupdown"
    assert out["files"] == [{"path": "/etc/sysctl.d/90-gpufabric-rails.conf", "changed": True, "reasons": ["created"]},
                            {"path": "/etc/network/interfaces.d/gpufabric-rails", "changed": True, "reasons": ["created"]}]
    texts = [d for d in out["diff"] if "after_header" in d]
    assert [d["after_header"] for d in texts] == [
        "/etc/sysctl.d/90-gpufabric-rails.conf", "/etc/network/interfaces.d/gpufabric-rails"]
    assert texts[0]["before"] == "" and "net.ipv4.conf.enp64s0np0.rp_filter = 2\n" in texts[0]["after"]
    assert "    post-up ip rule add priority 1001 from 198.18.16.9 table 101 || true" in texts[1]["after"]
    assert not stanzas.exists() and not sysctl.exists()
    assert out["msg"].endswith("; kept at boot by ifupdown (would change /etc/sysctl.d/90-gpufabric-rails.conf, "
                               "/etc/network/interfaces.d/gpufabric-rails)")

    failed, out = run(args)
    assert not failed and out["changed"]
    assert stanzas.read_text() == out["ifupdown"] and sysctl.read_text() == out["sysctl_conf"]
    assert oct(stanzas.stat().st_mode & 0o7777) == "0o644" and oct(sysctl.stat().st_mode & 0o7777) == "0o644"
    assert oct(stanzas.parent.stat().st_mode & 0o7777) == "0o755"

    failed, out = run(args)
    assert not failed and not out["changed"] and out["diff"] == []
    assert [f["changed"] for f in out["files"]] == [False, False]
    assert out["msg"] == "srv-a: rails already as planned on enp24s0np0, enp64s0np0; kept at boot by ifupdown"

    stanzas.chmod(0o600)    # a mode changed by hand: put back, shown as a mode diff
    failed, out = run(args, check=True)
    assert not failed and out["changed"] and out["files"][1]["reasons"] == ["mode"]
    assert out["diff"] == [{"before": {"/etc/network/interfaces.d/gpufabric-rails": {"mode": "0600"}},
                            "after": {"/etc/network/interfaces.d/gpufabric-rails": {"mode": "0644"}}}]


def test_a_host_the_plan_does_not_have_fails_naming_the_plan(run):
    failed, out = run({"rails": [], "host": "srv-r09-01", "plan_hosts": 1250, "plan_group": "servers"})
    assert failed and out["msg"] == ("srv-r09-01 is not in the rail plan (it plans the 1250 hosts of group servers): add "
                                     "it to that group with its rack and position.")
    failed, out = run({"rails": [], "host": "srv-a"})      # without the plan's size: the list is refused as before
    assert failed and "srv-a: rails is [], not the host's list of rail plan entries" in out["msg"]


def test_check_mode_waits_for_the_activation_when_a_rail_is_not_there(run):
    """In the fixture's root no rail is in /sys/class/net: with an activation (or a driver change) coming, the check
    run reads nothing and reports every rail it would configure after it; without one, it reads the host."""
    args = {"rails": [RAIL0, RAIL1], "host": "srv-a", "pending_activation": "fwreset", "provider": "ifupdown",
            "sysctl_file": "/etc/sysctl.d/90-gpufabric-rails.conf"}
    failed, out = run(args, check=True)
    assert not failed and out["changed"] and out["steps"] == [] and out["files"] == [] and out["diff"] == []
    assert out["waiting"] == {"for": "activation", "event": "the activation (fwreset)",
                              "absent": ["enp24s0np0", "enp64s0np0"]}
    assert out["msg"] == ("srv-a: enp24s0np0, enp64s0np0 not on the host before the activation (fwreset) of this run: "
                          "the rails enp24s0np0 198.18.0.2/26 table 100, enp64s0np0 198.18.16.9/26 table 101 would be "
                          "configured after it")
    failed, out = run(dict(args, pending_activation="none", driver_action="install"), check=True)
    assert not failed and out["waiting"]["event"] == "the driver change (install)"
    for quiet in ({"pending_activation": "pending"}, {"pending_activation": "none"}):
        failed, out = run(dict(args, **quiet), check=True)
        assert not failed and out["waiting"] is None and out["steps"]     # read: the rails are in the namespace
    failed, out = run(dict(args, driver_action="Install; reboot"), check=True)
    assert failed and out["msg"].startswith("rails: driver_action='Install; reboot' is not a driver action")
