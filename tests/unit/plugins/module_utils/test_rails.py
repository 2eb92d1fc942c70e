"""The rails core on real iproute2 JSON output (data/iproute2, captured in a network namespace)."""
import json
import os

import pytest

from _fakehost import FakeHost
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _rails as rl
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, Refused

DATA = os.path.join(os.path.dirname(__file__), "data", "iproute2")
RAIL0 = {"rail": 0, "interface": "enp24s0np0", "address": "198.18.0.2", "prefix": 26, "gateway": "198.18.0.1",
         "table": 100, "network": "198.18.0.0/26"}
RAIL1 = {"rail": 1, "interface": "enp64s0np0", "address": "198.18.16.9", "prefix": 26, "gateway": "198.18.16.1",
         "table": 101, "network": "198.18.16.0/26"}


def _load(name):
    with open(os.path.join(DATA, name)) as fh:
        return json.load(fh)


def captured(sysctls=None):
    return {"links": rl.links(_load("addr.json")), "rules": rl.rules(_load("rule.json")),
            "routes": {100: rl.routes(_load("route_table100.json")), 101: {}},
            "sysctls": sysctls or {"enp24s0np0": {"arp_ignore": 0, "arp_announce": 0, "rp_filter": 0},
                                   "enp64s0np0": {"arp_ignore": 0, "arp_announce": 0, "rp_filter": 0}}}


def test_parsers_on_the_capture():
    links = rl.links(_load("addr.json"))
    assert links["enp24s0np0"] == {"mtu": 9000, "up": True, "inet": ["198.18.0.2/26"]}
    assert links["enp64s0np0"] == {"mtu": 1500, "up": True, "inet": ["198.18.16.9/26", "198.18.99.9/24"]}
    assert links["lo"]["inet"] == []                                     # 127.0.0.1 is scope host; lo is down
    assert {"priority": 1000, "src": "198.18.0.2", "table": "100"} in rl.rules(_load("rule.json"))
    assert rl.routes(_load("route_table100.json")) == {
        "default": {"dev": "enp24s0np0", "gateway": "198.18.0.1", "prefsrc": None},
        "198.18.0.0/26": {"dev": "enp24s0np0", "gateway": None, "prefsrc": "198.18.0.2"}}


def test_plan_on_the_capture():
    desired = rl.desired_state("srv-a", [RAIL0, RAIL1])
    result = rl.plan(captured(), desired)
    assert result["changes"]["enp24s0np0"] == ["arp_announce 0 -> 2", "arp_ignore 0 -> 1", "rp_filter 0 -> 2"]
    assert result["changes"]["enp64s0np0"][:6] == [
        "mtu 1500 -> 9000", "address 198.18.99.9/24 removed", "table 101 route 198.18.16.0/26",
        "table 101 default via 198.18.16.1", "rule 1001 from 198.18.16.9 table 101", "arp_announce 0 -> 2"]
    argvs = [s["argv"] for s in result["steps"] if "argv" in s]
    assert argvs == [
        ["ip", "link", "set", "dev", "enp64s0np0", "mtu", "9000"],
        ["ip", "addr", "del", "198.18.99.9/24", "dev", "enp64s0np0"],
        ["ip", "route", "replace", "198.18.16.0/26", "dev", "enp64s0np0", "src", "198.18.16.9", "table", "101"],
        ["ip", "route", "replace", "default", "via", "198.18.16.1", "dev", "enp64s0np0", "table", "101"],
        ["ip", "rule", "add", "priority", "1001", "from", "198.18.16.9", "table", "101"]]
    assert {"write": "/proc/sys/net/ipv4/conf/enp64s0np0/arp_ignore", "value": "1"} in result["steps"]
    assert all("lo" not in s.get("argv", []) and "p0" not in s.get("argv", []) for s in result["steps"])
    done = captured({"enp24s0np0": dict(rl.SYSCTLS), "enp64s0np0": dict(rl.SYSCTLS)})
    assert rl.plan(done, rl.desired_state("srv-a", [RAIL0]))["steps"] == []


def test_stale_rule_of_the_table_is_replaced():
    state = captured({"enp24s0np0": dict(rl.SYSCTLS)})
    state["rules"].append({"priority": 1000, "src": "198.18.0.7", "table": "100"})
    state["rules"] = [r for r in state["rules"] if r["src"] != "198.18.0.2"]
    steps = rl.plan(state, rl.desired_state("srv-a", [RAIL0]))["steps"]
    assert [s["argv"] for s in steps] == [["ip", "rule", "del", "priority", "1000", "from", "198.18.0.7", "table", "100"],
                                          ["ip", "rule", "add", "priority", "1000", "from", "198.18.0.2", "table", "100"]]


def test_missing_interface_refused_listing_what_is_there():
    with pytest.raises(Refused, match=r"enp99s0np0 not on this host \(interfaces: enp24s0np0, enp64s0np0, lo, p0, p1\)"):
        rl.plan(captured(), rl.desired_state("srv-a", [dict(RAIL0, interface="enp99s0np0")]))


@pytest.mark.parametrize("entries, kwargs, words", [
    ([], {}, ["srv-a: rails", "gpufabric_rail_plan.hosts"]),
    ([dict(RAIL0, gateway=None)], {}, ["rails[0]", "lacks gateway"]),
    ([dict(RAIL0, gateway="198.18.1.1")], {}, ["gateway 198.18.1.1 is outside 198.18.0.0/26"]),
    ([RAIL0, dict(RAIL1, table=100)], {}, ["rails[1]", "repeats table 100 of rails[0]"]),
    ([RAIL0], {"mtu": 9500}, ["mtu", "68-9216"]),
    ([RAIL0], {"sysctls": {"arp_ignore": 9}}, ["sysctls.arp_ignore", "0-8"]),
    ([RAIL0], {"sysctls": {"forwarding": 1}}, ["sysctls.forwarding", "is not managed"]),
])
def test_bad_input_names_host_entry_and_allowed(entries, kwargs, words):
    with pytest.raises(InvalidValue) as err:
        rl.desired_state("srv-a", entries, **kwargs)
    for word in words:
        assert word in str(err.value)


def test_a_rail_on_the_management_interface_is_refused():
    with pytest.raises(Refused, match="rail 0 on enp24s0np0, the management interface"):
        rl.desired_state("srv-a", [RAIL0], mgmt_interfaces=["enp24s0np0"])


def test_renderers():
    desired = rl.desired_state("srv-a", [RAIL0, RAIL1])
    plan = rl.netplan(desired)["network"]["ethernets"]["enp64s0np0"]
    assert plan["addresses"] == ["198.18.16.9/26"] and plan["mtu"] == 9000
    assert plan["routing-policy"] == [{"from": "198.18.16.9", "table": 101, "priority": 1001}]
    assert {"to": "default", "via": "198.18.16.1", "table": 101} in plan["routes"]
    key = rl.nm_keyfile(desired, desired["rails"][0])
    assert "interface-name=enp24s0np0\n" in key and "routing-rule1=priority 1000 from 198.18.0.2 table 100\n" in key
    assert "route2=0.0.0.0/0,198.18.0.1\nroute2_options=table=100\n" in key
    text = rl.ifupdown(desired)
    assert "iface enp64s0np0 inet static\n    address 198.18.16.9/26\n    mtu 9000\n" in text
    assert "net.ipv4.conf.enp24s0np0.arp_ignore = 1\n" in rl.sysctl_conf(desired)


@pytest.fixture
def netns():
    """A network namespace with two veth rails, as the capture was made (needs root and iproute2)."""
    import shutil
    import subprocess
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("needs root and iproute2")
    name = "gfrails%d" % os.getpid()
    if subprocess.run(["ip", "netns", "add", name], capture_output=True, check=False).returncode != 0:
        pytest.skip("cannot create a network namespace here")
    try:
        for iface, peer in (("enp24s0np0", "p0"), ("enp64s0np0", "p1")):
            subprocess.run(["ip", "-n", name, "link", "add", iface, "type", "veth", "peer", "name", peer], check=True)
            subprocess.run(["ip", "-n", name, "link", "set", peer, "up"], check=True)
        subprocess.run(["ip", "-n", name, "addr", "add", "198.18.99.9/24", "dev", "enp64s0np0"], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def netns_host(netns, root):
    """A fake host whose ``ip`` is the real iproute2 inside ``netns``; the rails' sysctls are files under ``root``,
    all 0."""
    import subprocess

    def ip(args):
        proc = subprocess.run(["ip", "netns", "exec", netns, "ip"] + args, capture_output=True, text=True,
                              timeout=60, check=False)
        return proc.returncode, proc.stdout, proc.stderr
    fake = FakeHost(root, {"ip": ip})
    for rail in (RAIL0, RAIL1):
        for key in rl.SYSCTLS:
            fake.put(rl.SYSCTL_PATH % (rail["interface"], key), "0")
    return fake


def test_converge_with_real_iproute2_then_idempotent(netns, tmp_path):
    import subprocess
    fake = netns_host(netns, tmp_path)
    reader = fake.host()
    check = rl.converge(reader, "srv-a", [RAIL0, RAIL1], check_mode=True)
    first = rl.converge(reader, "srv-a", [RAIL0, RAIL1])
    assert check["steps"] == first["steps"] and first["changed"]
    assert "address 198.18.99.9/24 removed" in first["changes"]["enp64s0np0"]
    again = rl.converge(reader, "srv-a", [RAIL0, RAIL1])
    assert not again["changed"] and again["steps"] == []
    out = subprocess.run(["ip", "-n", netns, "route", "get", "198.18.50.1", "from", "198.18.16.9"],
                         capture_output=True, text=True, check=True).stdout
    assert "via 198.18.16.1 dev enp64s0np0 table 101" in out


def test_the_plan_says_per_interface_each_setting_that_differs_as_the_host_has_it_and_as_planned():
    """The module's --diff (and the drift report): before/after per rail interface, only what differs."""
    result = rl.plan(captured(), rl.desired_state("srv-a", [RAIL0, RAIL1]))
    assert sorted(result["before"]) == sorted(result["after"]) == sorted(result["changes"])
    assert result["before"]["enp24s0np0"] == {"arp_announce": 0, "arp_ignore": 0, "rp_filter": 0}
    assert result["after"]["enp24s0np0"] == {"arp_announce": 2, "arp_ignore": 1, "rp_filter": 2}
    before, after = result["before"]["enp64s0np0"], result["after"]["enp64s0np0"]
    assert (before["mtu"], after["mtu"]) == (1500, 9000)
    assert (before["addresses"], after["addresses"]) == (["198.18.16.9/26", "198.18.99.9/24"], ["198.18.16.9/26"])
    assert before["table 101 route 198.18.16.0/26"] is None
    assert after["table 101 route 198.18.16.0/26"] == {"dev": "enp64s0np0", "gateway": None, "prefsrc": "198.18.16.9"}
    assert (before["table 101 default"], after["table 101 default"]) == (
        None, {"dev": "enp64s0np0", "gateway": "198.18.16.1", "prefsrc": None})
    assert (before["rules"], after["rules"]) == ([], [{"priority": 1001, "src": "198.18.16.9", "table": "101"}])
    assert "up" not in before and "table 100 default" not in before  # only what differs
    done = rl.plan(captured({"enp24s0np0": dict(rl.SYSCTLS), "enp64s0np0": dict(rl.SYSCTLS)}),
                   rl.desired_state("srv-a", [RAIL0]))
    assert done["before"] == done["after"] == done["changes"] == {}


# ------------------------------------------------------------------------------------------ kept at boot

ODD_NAMES = ["enp24s0np0", "yes", "on", "No", "y", "null", "1.5", ".5", "1e5", "123", "0777", "0x1f", "1_000",
             "2024-01-02", "rail0.100", "e-1", "-a", "_x", "a+b"]


@pytest.mark.parametrize("name", ODD_NAMES)
def test_the_netplan_text_is_what_to_nice_yaml_made(name):
    """The module has no PyYAML: its YAML text must be the byte-for-byte text the role wrote with to_nice_yaml(indent=2)
    before (a changed text would rewrite every host's file), names a YAML reader would take for something else
    quoted as it quotes them."""
    from ansible.plugins.filter.core import to_nice_yaml
    entries = [dict(RAIL0, interface=name), dict(RAIL1, table=4000000000)]
    data = rl.netplan(rl.desired_state("srv-a", entries))
    assert rl.netplan_yaml(data) == to_nice_yaml(data, indent=2)


def test_the_netplan_text_of_one_rail():
    assert rl.netplan_yaml(rl.netplan(rl.desired_state("srv-a", [dict(RAIL0, interface="on")]))) == (
        "network:\n"
        "  ethernets:\n"
        "    'on':\n"
        "      addresses:\n"
        "      - 198.18.0.2/26\n"
        "      dhcp4: false\n"
        "      dhcp6: false\n"
        "      link-local: []\n"
        "      mtu: 9000\n"
        "      optional: true\n"
        "      routes:\n"
        "      - from: 198.18.0.2\n"
        "        scope: link\n"
        "        table: 100\n"
        "        to: 198.18.0.0/26\n"
        "      - table: 100\n"
        "        to: default\n"
        "        via: 198.18.0.1\n"
        "      routing-policy:\n"
        "      - from: 198.18.0.2\n"
        "        priority: 1000\n"
        "        table: 100\n"
        "  version: 2\n")


@pytest.mark.parametrize("tools, provider", [
    ([], "none"), (["/sbin/ifup"], "ifupdown"), (["/usr/bin/nmcli", "/sbin/ifup"], "networkmanager"),
    (["/usr/sbin/netplan", "/usr/bin/nmcli", "/sbin/ifup"], "netplan")])
def test_provider_auto_is_the_first_network_stack_the_host_has(tmp_path, tools, provider):
    fake = FakeHost(tmp_path)
    for tool in tools:
        fake.put(tool, "")
    assert rl.provider_of(fake.host(), "auto") == provider
    assert rl.provider_of(fake.host(), "ifupdown") == "ifupdown"
    with pytest.raises(InvalidValue, match="provider='wicked' is not one of auto, netplan"):
        rl.provider_of(fake.host(), "wicked")


def test_boot_files_per_provider():
    desired = rl.desired_state("srv-a", [RAIL0, RAIL1])
    paths = dict(rl.BOOT_FILES, nm_dir="/etc/NetworkManager/system-connections/")
    assert [(f["path"], oct(f["mode"])) for f in rl.boot_files(desired, "networkmanager", paths)] == [
        ("/etc/sysctl.d/90-gpufabric-rails.conf", "0o644"),
        ("/etc/NetworkManager/system-connections/gpufabric-rail0.nmconnection", "0o600"),
        ("/etc/NetworkManager/system-connections/gpufabric-rail1.nmconnection", "0o600")]
    netplan = rl.boot_files(desired, "netplan", dict(paths, sysctl_file=None))
    assert [f["path"] for f in netplan] == ["/etc/netplan/90-gpufabric-rails.yaml"]
    assert netplan[0]["content"].startswith("# gpufabric.mlnx rails - managed by Ansible\nnetwork:\n  ethernets:\n")
    assert netplan[0]["validate"] == ["netplan", "generate", "--root-dir", "/", "%s"]
    assert rl.boot_files(desired, "none", dict(paths, sysctl_file=None)) == []


def _plain(tmp_path, tools):
    """A fake host with the rails' interfaces in /sys/class/net and their sysctls, ``ip`` answering from the captures
    of a host already as planned (data/iproute2) - not needed here: the forecast and the files only."""
    fake = FakeHost(tmp_path, tools)
    for rail in (RAIL0, RAIL1):
        fake.mkdir("/sys/class/net/%s" % rail["interface"])
    return fake


def _params(**extra):
    return dict({"rails": [RAIL0, RAIL1], "mtu": 9000, "sysctls": None, "plan_hosts": None, "plan_group": "servers",
                 "provider": "none", "sysctl_file": None, "driver_action": "none", "pending_activation": "none"},
                **extra)


def test_a_netplan_file_netplan_refuses_is_not_put_in_place(tmp_path, monkeypatch):
    answers = {"rc": 1}
    fake = _plain(tmp_path, {"netplan": lambda args: (answers["rc"], "", "Error in network definition: bad")})
    fake.put("/usr/sbin/netplan", "")
    fake.put("/etc/netplan/90-gpufabric-rails.yaml", "# old")
    monkeypatch.setattr(rl, "converge", lambda *a, **k: {"changed": False, "changes": {}, "steps": [],
                                                         "desired": None, "before": {}, "after": {}})
    host = fake.host()
    with pytest.raises(Exception, match=r"/etc/netplan/90-gpufabric-rails.yaml was not written: netplan generate "
                                        r"--root-dir / %s refused it \(rc=1\): Error in network definition: bad"):
        rl.run(host, host, "srv-a", _params(provider="auto"), mgmt=set)
    assert fake.get("/etc/netplan/90-gpufabric-rails.yaml") == "# old\n"
    assert [c[1:4] for c in fake.calls] == [("generate", "--root-dir", "/")]
    assert os.listdir(tmp_path / "etc/netplan") == ["90-gpufabric-rails.yaml"]   # no temporary left
    answers["rc"] = 0
    out = rl.run(host, host, "srv-a", _params(provider="auto"), mgmt=set)
    assert out["changed"] and fake.get("/etc/netplan/90-gpufabric-rails.yaml").startswith("# gpufabric.mlnx rails")


def test_a_changed_keyfile_is_loaded_by_networkmanager_and_only_then(tmp_path, monkeypatch):
    fake = _plain(tmp_path, {"nmcli": lambda args: (0, "", "")})
    monkeypatch.setattr(rl, "converge", lambda *a, **k: {"changed": False, "changes": {}, "steps": [],
                                                         "desired": None, "before": {}, "after": {}})
    fake.mkdir("/etc/NetworkManager/system-connections")
    host = fake.host()
    params = _params(provider="networkmanager")
    out = rl.run(host, host, "srv-a", params, mgmt=set, check_mode=True)
    assert out["changed"] and fake.calls == []
    rl.run(host, host, "srv-a", params, mgmt=set)
    keyfiles = ["/etc/NetworkManager/system-connections/gpufabric-rail%d.nmconnection" % k for k in (0, 1)]
    assert [c[1:] for c in fake.calls] == [("connection", "load", fake.path(k)) for k in keyfiles]
    assert oct(os.stat(fake.path(keyfiles[0])).st_mode & 0o7777) == "0o600"
    fake.put(keyfiles[1], "[connection]\nid=by-hand")
    out = rl.run(host, host, "srv-a", params, mgmt=set)
    assert out["changed"] and [c[-1] for c in fake.calls[2:]] == [fake.path(keyfiles[1])]
    out = rl.run(host, host, "srv-a", params, mgmt=set)
    assert not out["changed"] and len(fake.calls) == 3
