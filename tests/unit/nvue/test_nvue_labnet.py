# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The emulator's lab provider: the LLDP parser and table, link state from a fake /sys tree, and the applied
config carried to the interfaces as the ip argv lists it would run (all pure, no root, no sockets)."""
# pylint: disable=implicit-str-concat  # the LLDP frames are written field by field
import json

import pytest

# nvue_helpers puts tests/nvue on sys.path
from nvue_helpers import NVUE  # noqa: F401  pylint: disable=unused-import
from nvuesim import labnet, model, operational
from nvuesim.store import Store

MAC = "0a:00:00:00:00:01"
# An LLDPDU as lldpd sends it with `portidsubtype ifname` (chassis = MAC, port = ifname, TTL 4 = tx-interval 1
# x tx-hold 4, port description, system name), written out byte by byte.
LLDPD_FRAME = bytes.fromhex(
    "0180c200000e" "0a0000000001" "88cc"
    "0207" "04" "0a0000000001"          # chassis id, subtype 4 (MAC)
    "040b" "05" "656e70323473306e7030"  # port id, subtype 5 (ifname) "enp24s0np0"
    "0602" "0004"                       # TTL 4
    "080a" "656e70323473306e7030"       # port description "enp24s0np0"
    "0a0a" "6661622d7230312d3031"       # system name "fab-r01-01"
    "0000")


def test_parse_a_literal_lldpd_frame():
    assert labnet.parse_lldp(LLDPD_FRAME) == {
        "chassis-id": MAC, "chassis-subtype": "mac", "port": "enp24s0np0", "port-subtype": "ifname", "ttl": 4,
        "description": "enp24s0np0", "system-name": "fab-r01-01"}


def test_build_lldp_round_trips_and_matches_the_literal():
    frame = labnet.build_lldp(MAC, "enp24s0np0", ttl=4, system_name="fab-r01-01", description="enp24s0np0")
    assert frame == LLDPD_FRAME


def test_vlan_tagged_and_local_port_subtype():
    body = LLDPD_FRAME[14:].replace(bytes.fromhex("040b05"), bytes.fromhex("040b07"))
    frame = LLDPD_FRAME[:12] + bytes.fromhex("8100" "0064") + bytes.fromhex("88cc") + body
    got = labnet.parse_lldp(frame)
    assert (got["port"], got["port-subtype"]) == ("enp24s0np0", "local")


def test_every_truncation_is_refused_without_raising():
    for cut in range(len(LLDPD_FRAME)):
        assert labnet.parse_lldp(LLDPD_FRAME[:cut]) is None, cut


@pytest.mark.parametrize("frame", [
    LLDPD_FRAME.replace(bytes.fromhex("0602" "0004"), bytes.fromhex("0603" "000400")),  # TTL length 3
    LLDPD_FRAME.replace(bytes.fromhex("0207"), bytes.fromhex("0201"), 1),              # chassis length 1
    LLDPD_FRAME[:-2] + bytes.fromhex("0001" "00"),                                   # End TLV with a length
    LLDPD_FRAME.replace(bytes.fromhex("040b"), bytes.fromhex("04ff"), 1),             # port TLV runs past the end
    LLDPD_FRAME[:14] + LLDPD_FRAME[23:36] + LLDPD_FRAME[14:23] + LLDPD_FRAME[36:],   # port before chassis
    LLDPD_FRAME[:12] + bytes.fromhex("0800") + LLDPD_FRAME[14:],                     # IPv4, not LLDP
    b"\xff" * 3000,
    b"",
    "not bytes",
])
def test_malformed_frames_are_refused(frame):
    assert labnet.parse_lldp(frame) is None


def test_control_characters_are_dropped_from_strings():
    frame = labnet.build_lldp(MAC, "enp24s0np0", system_name="evil\nname\x1b[0m")
    assert labnet.parse_lldp(frame)["system-name"] == "evilname[0m"


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_table_entries_expire_after_their_ttl_and_ttl_zero_removes():
    clock = Clock()
    table = labnet.LldpTable(clock)
    table.heard("swp1", labnet.parse_lldp(LLDPD_FRAME))
    clock.now += 4
    assert [n["system-name"] for n in table.neighbors("swp1")] == ["fab-r01-01"]
    clock.now += 0.5
    assert table.neighbors("swp1") == []
    table.heard("swp1", labnet.parse_lldp(LLDPD_FRAME))
    table.heard("swp1", labnet.parse_lldp(labnet.build_lldp(MAC, "enp24s0np0", ttl=0)))
    assert table.neighbors("swp1") == []
    assert table.neighbors("swp9") == []


def _sys(tmp_path, port, operstate, carrier, mtu):
    d = tmp_path / "net" / port
    d.mkdir(parents=True)
    (d / "operstate").write_text(operstate + "\n")
    if carrier is not None:
        (d / "carrier").write_text(carrier + "\n")
    (d / "mtu").write_text("%d\n" % mtu)


@pytest.fixture
def lab_state(tmp_path):
    _sys(tmp_path, "swp1", "up", "1", 9000)
    _sys(tmp_path, "swp2", "down", "0", 1500)
    _sys(tmp_path, "swp3", "down", None, 9216)       # admin down: carrier is unreadable
    ports = {p: {"speed": "400G"} for p in ("swp1", "swp2", "swp3", "swp4")}   # swp4: not cabled
    state = model.factory_state("leaf01", ports=ports, password="Nvue-Test-1")
    state["provider"] = "lab"
    table = labnet.LldpTable(Clock())
    table.heard("swp1", labnet.parse_lldp(LLDPD_FRAME))
    table.heard("swp2", labnet.parse_lldp(LLDPD_FRAME))      # heard before the link went down
    return state, labnet.LabProvider(str(tmp_path / "net"), table)


def test_provider_reads_sys_and_the_table(lab_state):
    state, provider = lab_state
    ports = provider.ports(state)
    assert {p: (d["carrier"], d["mtu"], d["present"]) for p, d in ports.items()} == {
        "swp1": (True, 9000, True), "swp2": (False, 1500, True), "swp3": (False, 9216, True),
        "swp4": (False, None, False)}
    assert ports["swp1"]["speed"] == "400G"       # a veth has no speed: the state's
    nb = ports["swp1"]["neighbors"][0]
    assert (nb["system-name"], nb["chassis-id"], nb["port"], nb["description"]) == (
        "fab-r01-01", MAC, "enp24s0np0", "enp24s0np0")


def test_operational_view_with_the_lab_provider(lab_state, monkeypatch):
    state, provider = lab_state
    monkeypatch.setitem(operational.PROVIDERS, "lab", lambda: provider)
    view = operational.view(state)["interface"]
    assert view["swp1"]["link"]["oper-status"] == "up" and view["swp1"]["link"]["mtu"] == 9000
    assert view["swp1"]["lldp"]["neighbor"]["fab-r01-01"]["port"]["name"] == "enp24s0np0"
    assert view["swp2"]["link"]["oper-status"] == "down" and view["swp2"]["lldp"] == {"neighbor": {}}
    # the emulator's own faults stay on top: swap the two ports' neighbours, port_down
    state["faults"] = {"swap": {"swp1": "swp2"}, "port_down": {"swp1": True}}
    _sys_up = provider.table
    _sys_up.heard("swp2", labnet.parse_lldp(labnet.build_lldp("0a:00:00:00:00:02", "enp24s0np0",
                                                              system_name="fab-r01-02")))
    view = operational.view(state)["interface"]
    assert view["swp1"]["link"]["oper-status"] == "down"
    state["faults"] = {"swap": {"swp1": "swp2"}}
    view = operational.view(state)["interface"]
    assert sorted(view["swp1"]["lldp"]["neighbor"]) == ["fab-r01-01", "fab-r01-02"]


def test_the_lab_provider_is_registered():
    assert isinstance(operational.provider_for({"provider": "lab"}), labnet.LabProvider)


IP_JSON = json.dumps([
    {"ifname": "lo", "flags": ["LOOPBACK", "UP"], "mtu": 65536, "addr_info": [
        {"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "scope": "host"}]},
    {"ifname": "eth0", "flags": ["UP"], "mtu": 1500, "addr_info": [
        {"family": "inet", "local": "198.19.90.201", "prefixlen": 24, "scope": "global"}]},
    {"ifname": "swp1", "flags": ["BROADCAST", "UP", "LOWER_UP"], "mtu": 9216, "addr_info": [
        {"family": "inet", "local": "192.0.2.9", "prefixlen": 31, "scope": "global"},
        {"family": "inet6", "local": "fe80::1", "prefixlen": 64, "scope": "link"}]},
    {"ifname": "swp2", "flags": ["BROADCAST"], "mtu": 1500, "addr_info": []},
])


def test_parse_ip_json():
    live = labnet.parse_ip_json(IP_JSON)
    assert live["swp1"] == {"mtu": 9216, "up": True, "master": None, "kind": None, "addrs": ["192.0.2.9/31"]}
    assert live["swp2"]["up"] is False


def _applied(**interfaces):
    return {"system": {"hostname": "leaf01"}, "interface": interfaces}


def test_plan_address_mtu_and_admin_state():
    live = labnet.parse_ip_json(IP_JSON)
    applied = _applied(swp1={"ip": {"address": {"198.18.0.0/31": {}}}},
                       swp2={"link": {"mtu": 9000, "state": {"up": {}}}},
                       eth0={"ip": {"address": {"10.0.0.1/24": {}}}, "link": {"mtu": 9000}})
    argvs, owned = labnet.link_plan(applied, ["eth0", "swp1", "swp2"], live, {})
    assert argvs == [["ip", "address", "add", "198.18.0.0/31", "dev", "swp1"],
                     ["ip", "link", "set", "dev", "swp2", "mtu", "9000"],
                     ["ip", "link", "set", "dev", "swp2", "up"]]
    assert owned == {"addrs": {"swp1": ["198.18.0.0/31"]}, "bridges": []}
    # 192.0.2.9/31 was not put there by the emulator: left alone. eth0 is never touched.


def test_plan_is_empty_when_the_interfaces_match():
    live = labnet.parse_ip_json(IP_JSON)
    live["swp1"]["addrs"].append("198.18.0.0/31")
    applied = _applied(swp1={"ip": {"address": {"198.18.0.0/31": {}}}},
                       swp2={"link": {"state": {"down": {}}, "mtu": 1500}})
    assert labnet.link_plan(applied, ["swp1", "swp2"], live, {"addrs": {"swp1": ["198.18.0.0/31"]}})[0] == []


def test_plan_removes_only_what_the_emulator_added():
    live = labnet.parse_ip_json(IP_JSON)
    live["swp1"]["addrs"].append("198.18.0.0/31")
    applied = _applied(swp1={"ip": {"address": {"198.18.0.2/31": {}}}})
    argvs, owned = labnet.link_plan(applied, ["swp1"], live, {"addrs": {"swp1": ["198.18.0.0/31"]}})
    assert argvs == [["ip", "address", "add", "198.18.0.2/31", "dev", "swp1"],
                     ["ip", "address", "del", "198.18.0.0/31", "dev", "swp1"]]
    assert owned["addrs"] == {"swp1": ["198.18.0.2/31"]}


def test_plan_access_vlan_bridge_with_its_svi_and_back():
    live = labnet.parse_ip_json(IP_JSON)
    access = {"bridge": {"domain": {"br_default": {"access": 10}}}}
    applied = _applied(swp1=access, swp2=dict(access, link={"mtu": 1500}),
                       vlan10={"type": "svi", "ip": {"address": {"198.18.10.1/24": {}}}})
    argvs, owned = labnet.link_plan(applied, ["swp1", "swp2"], live, {})
    assert argvs == [["ip", "link", "add", "name", "vlan10", "type", "bridge"],
                     ["ip", "link", "set", "dev", "vlan10", "up"],
                     ["ip", "link", "set", "dev", "swp1", "master", "vlan10"],
                     ["ip", "link", "set", "dev", "swp2", "master", "vlan10"],
                     ["ip", "link", "set", "dev", "swp2", "up"],
                     ["ip", "address", "add", "198.18.10.1/24", "dev", "vlan10"]]
    assert owned == {"addrs": {"vlan10": ["198.18.10.1/24"]}, "bridges": ["vlan10"]}
    # the bridge exists now; the config drops it: ports leave it, the bridge goes
    live["vlan10"] = {"mtu": 1500, "up": True, "master": None, "kind": "bridge", "addrs": ["198.18.10.1/24"]}
    live["swp1"]["master"] = live["swp2"]["master"] = "vlan10"
    live["swp2"]["up"] = True
    argvs, owned = labnet.link_plan(_applied(swp2={"link": {"mtu": 1500}}), ["swp1", "swp2"], live, owned)
    assert argvs == [["ip", "link", "set", "dev", "swp1", "nomaster"],
                     ["ip", "link", "set", "dev", "swp2", "nomaster"],
                     ["ip", "link", "del", "dev", "vlan10"]]
    assert owned == {"addrs": {}, "bridges": []}


def test_plan_skips_ports_that_are_not_there_and_bad_values():
    applied = _applied(swp4={"ip": {"address": {"198.18.0.4/31": {}}}},
                       swp2={"ip": {"address": {"not-an-address": {}}}, "link": {"mtu": 99999}})
    argvs, _owned = labnet.link_plan(applied, ["swp2", "swp4"], labnet.parse_ip_json(IP_JSON), {})
    assert argvs == [["ip", "link", "set", "dev", "swp2", "mtu", "9216"], ["ip", "link", "set", "dev", "swp2", "up"]]


def test_sync_links_runs_the_plan_and_remembers(tmp_path):
    store = Store(tmp_path / "leaf")
    state = model.factory_state("leaf01", ports={"swp1": {"speed": "400G"}}, password="Nvue-Test-1")
    state["provider"] = "lab"
    state["applied"]["interface"]["swp1"]["ip"] = {"address": {"198.18.0.0/31": {}}}
    store.create(state)
    ran = []

    class Done:
        def __init__(self, stdout="", returncode=0):
            self.stdout, self.returncode, self.stderr = stdout, returncode, ""

    def runner(argv, **_kw):
        ran.append(argv)
        return Done(IP_JSON) if argv[:2] == ["ip", "-j"] else Done()
    assert labnet.sync_links(store, runner) == [["ip", "address", "add", "198.18.0.0/31", "dev", "swp1"]]
    assert ran[0] == ["ip", "-j", "-d", "address", "show"] and len(ran) == 2
    assert json.loads((tmp_path / "leaf" / "links.json").read_text())["addrs"] == {"swp1": ["198.18.0.0/31"]}
    assert [e["event"] for e in store.events()] == ["links"]


def test_sync_links_does_nothing_for_the_static_provider(tmp_path):
    store = Store(tmp_path / "leaf")
    store.create(model.factory_state("leaf01", password="Nvue-Test-1"))
    assert labnet.sync_links(store, runner=None) == []


def test_init_provider(tmp_path, capsys):
    from nvuesim import admin
    assert admin.main(["init", "--state", str(tmp_path / "a"), "--hostname", "leaf01", "--ports", "swp1-2",
                       "--password", "Nvue-Test-1", "--provider", "lab", "--cert", __file__, "--key", __file__]) == 0
    assert Store(tmp_path / "a").load()["provider"] == "lab"
    assert admin.main(["init", "--state", str(tmp_path / "b"), "--hostname", "leaf01", "--provider", "sysfs",
                       "--cert", __file__, "--key", __file__]) == 1
    assert "--provider 'sysfs': one of lab, static" in capsys.readouterr().err
