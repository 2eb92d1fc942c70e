# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The leaf and leaf_ready roles for real: two leaves of the NVUE emulator on 127.0.0.1 (httpapi), two servers (local
connection) in one play, the leaves first - the leaves are configured from the rail plan, gated, and a server whose
leaf is not ready for it is held (recorded, its play ended, never failed) while the other goes on."""
import pytest
import yaml
from _roleplay import matrix as roleplay_matrix
from _roleplay import run


FABRIC = {"rails": 2, "su_prefix": 26, "racks_per_su": 1, "addressing": "p2p31",
          "pools": {"rail0": "198.18.0.0/20", "rail1": "198.18.16.0/20"},
          "nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]}, "interface_names": ["enp24s0np0", "enp64s0np0"]}
SERVERS = {"srv-r01-01": {"rack": "r01", "position": 1}, "srv-r01-02": {"rack": "r01", "position": 2}}
LEAVES = ("su1-leaf-rail0", "su1-leaf-rail1")
PLAY = yaml.safe_dump([{
    "hosts": "su1-leaf-rail0,su1-leaf-rail1,srv-r01-01,srv-r01-02", "gather_facts": False,
    "roles": [{"role": "gpufabric.mlnx.leaf", "when": "inventory_hostname in groups.leaves"},
              "gpufabric.mlnx.leaf_ready"],
    "tasks": [{"name": "Past the gate", "ansible.builtin.debug": {"msg": "touched"}}]}])


def leaves(make_switch, releases=None, **faults):
    made = {}
    for rail, name in enumerate(LEAVES):
        sw = make_switch(name, ports="swp1-2", release=(releases or {}).get(name, "5.9.1"))
        for index, host in enumerate(SERVERS, 1):
            sw.admin("port", "swp%d" % index, "--neighbor", "%s:%s" % (host, FABRIC["interface_names"][rail]))
        for fault in faults.get(name, ()):
            sw.admin("fault", "set", *fault)
        made[name] = sw
    return made


def inventory(made, **extra):
    return {name: sw.httpapi_vars(**dict({"gpufabric_leaf_ready_interval": 1, "gpufabric_leaf_ready_timeout": 3,
                                          "gpufabric_fabric": FABRIC}, **extra.get(name, {})))
            for name, sw in made.items()}


def rollout(tmp_path, made, check=False, **extra):
    return run(tmp_path, SERVERS, PLAY, check=check, group_vars={"gpufabric_fabric": FABRIC},
               groups={"leaves": inventory(made, **extra)}, args=["--diff"] if check else [])


CONFIGURED = ("The pinned switch OS, then one revision - ports, addresses, RoCE QoS; applied only when it "
              "changes something")


def held(ran, host):
    try:
        return ran.task("Why this server's leaves hold it", host, role="leaf_ready")["ansible_facts"]["gpufabric_held"]
    except AssertionError:
        return None


def touched(ran, host):
    try:
        ran.task("Past the gate", host)
        return True
    except AssertionError:
        return False


def test_leaves_are_configured_gated_and_their_servers_go_on_and_a_rerun_applies_nothing(tmp_path, make_switch):
    made = leaves(make_switch)
    marks = {name: sw.mark() for name, sw in made.items()}
    ran = rollout(tmp_path, made)
    assert ran.ok, ran
    for name, sw in made.items():
        assert len(sw.since(marks[name], "apply")) == 1
        swp1 = sw.get("/interface/swp1?rev=applied&filled=false")
        assert swp1["link"]["mtu"] == 9216 and swp1["description"].startswith("srv-r01-01:")
        assert list(swp1["ip"]["address"]) == ["198.18.%d.0/31" % (0 if name.endswith("0") else 16)]
        assert sw.get("/qos/roce?rev=applied&filled=false") == {"enable": "on", "mode": "lossless"}
    for host in SERVERS:
        assert held(ran, host) == [] and touched(ran, host)
    marks = {name: sw.mark() for name, sw in made.items()}
    again = rollout(tmp_path, made)
    assert again.ok and all(sw.since(marks[n], "apply") == [] for n, sw in made.items())


def test_a_play_of_its_own_holds_the_server_of_a_leaf_outside_the_limit(tmp_path, make_switch):
    """Without site.yml's planning play (no gpufabric_rollout.in_limit) the role asks the inventory for the hosts of
    --limit itself: a server whose leaf is left out is held by it, one whose leaves are both in goes on."""
    made = leaves(make_switch)
    ran = run(tmp_path, SERVERS, PLAY, group_vars={"gpufabric_fabric": FABRIC}, groups={"leaves": inventory(made)},
              args=["--limit", "su1-leaf-rail0,srv-r01-01"])
    hold = held(ran, "srv-r01-01")
    assert [(h["leaf"], h["reason"]) for h in hold] == [
        ("su1-leaf-rail1", "its leaf su1-leaf-rail1 is not in this run (--limit): a leaf is configured and checked "
                           "before its servers")]
    assert not touched(ran, "srv-r01-01")
    ran = run(tmp_path, SERVERS, PLAY, group_vars={"gpufabric_fabric": FABRIC}, groups={"leaves": inventory(made)},
              args=["--limit", "su1-leaf-rail0,su1-leaf-rail1,srv-r01-01"])
    assert ran.ok, ran
    assert held(ran, "srv-r01-01") == [] and touched(ran, "srv-r01-01")


# What each release calls RoCE on and auto-save (docs/leaves.md, release-aware keys).
SPELLING = {"5.4.0": ("enable", "on"), "5.11.0": ("enable", "on"), "5.14.0": ("enable", "on"),
            "5.16.0": ("state", "enabled")}


@pytest.mark.parametrize("releases", [("5.4.0", "5.16.0"), ("5.11.0", "5.14.0")])
def test_leaves_of_releases_that_spell_the_keys_otherwise_are_configured_and_gated(tmp_path, make_switch, releases):
    made = leaves(make_switch, releases=dict(zip(LEAVES, releases)))
    ran = rollout(tmp_path, made)
    assert ran.ok, ran
    for name, release in zip(LEAVES, releases):
        key, on = SPELLING[release]
        assert made[name].get("/qos/roce?rev=applied&filled=false") == {key: on, "mode": "lossless"}, release
    for host in SERVERS:
        assert held(ran, host) == [] and touched(ran, host)   # the gate read each leaf's RoCE in its spelling
    marks = {name: sw.mark() for name, sw in made.items()}
    again = rollout(tmp_path, made)
    assert again.ok and all(sw.since(marks[n], "apply") == [] for n, sw in made.items())


def test_a_port_in_protodown_holds_only_the_server_on_it(tmp_path, make_switch):
    made = leaves(make_switch, **{"su1-leaf-rail1": [("protodown", "swp2")]})
    ran = rollout(tmp_path, made)
    assert ran.ok, ran  # held is not failed
    assert held(ran, "srv-r01-01") == [] and touched(ran, "srv-r01-01")
    hold = held(ran, "srv-r01-02")
    assert [(h["leaf"], h["port"]) for h in hold] == [("su1-leaf-rail1", "swp2")]
    assert "is in protodown (linkflap)" in hold[0]["reason"]
    assert not touched(ran, "srv-r01-02")


def test_a_leaf_that_refuses_its_configuration_holds_all_its_servers_and_is_not_failed(tmp_path, make_switch):
    made = leaves(make_switch, **{"su1-leaf-rail0": [("invalid_apply", "interface.swp1.link.mtu", "not today")]})
    ran = rollout(tmp_path, made)
    assert ran.ok, ran
    for host in SERVERS:
        hold = held(ran, host)
        assert [h["leaf"] for h in hold] == ["su1-leaf-rail0"]
        assert "its leaf su1-leaf-rail0 could not be configured" in hold[0]["reason"]
        assert "not today" in hold[0]["reason"]
        assert not touched(ran, host)


def test_a_leaf_whose_qos_differs_from_its_servers_holds_them(tmp_path, make_switch):
    made = leaves(make_switch)
    ran = rollout(tmp_path, made, **{"su1-leaf-rail0": {"gpufabric_roce_qos_pfc_priorities": [4]}})
    assert ran.ok, ran
    hold = held(ran, "srv-r01-01")
    assert hold and "PFC priorities: the host has [3], the leaf [4]" in hold[0]["reason"]


def test_check_mode_applies_nothing_and_still_holds_for_what_a_change_cannot_fix(tmp_path, make_switch):
    made = leaves(make_switch, **{"su1-leaf-rail0": [("port_down", "swp1")]})
    marks = {name: sw.mark() for name, sw in made.items()}
    ran = rollout(tmp_path, made, check=True)
    assert ran.ok, ran
    assert all(sw.since(marks[n], "apply") == [] for n, sw in made.items())
    assert ran.task(CONFIGURED, "su1-leaf-rail1", role="leaf")["changed"] is True
    assert held(ran, "srv-r01-02") == [] and touched(ran, "srv-r01-02")  # MTU/QoS not applied yet: not held
    assert "is down" in held(ran, "srv-r01-01")[0]["reason"]


def test_a_leaf_behind_the_pinned_release_is_upgraded_with_one_reboot_before_its_configuration(tmp_path, make_switch):
    import functools
    import hashlib
    import http.server
    import threading
    made = leaves(make_switch)
    old = make_switch("su1-leaf-rail1", ports="swp1-2", release="5.4.0")
    for index, host in enumerate(SERVERS, 1):
        old.admin("port", "swp%d" % index, "--neighbor", "%s:%s" % (host, FABRIC["interface_names"][1]))
    made["su1-leaf-rail1"] = old
    (tmp_path / "images").mkdir()
    image = tmp_path / "images" / "cumulus-linux-5.9.1-mlx-amd64.bin"
    old.admin("mkimage", "--release", "5.9.1", "-o", str(image))
    mirror = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(image.parent)))
    threading.Thread(target=mirror.serve_forever, daemon=True).start()
    pin = {"release": "5.9.1", "image": image.name, "sha256": hashlib.sha256(image.read_bytes()).hexdigest(),
           "url": "http://127.0.0.1:%d/%s" % (mirror.server_address[1], image.name)}
    firmware = {"MT_0000000838": {"version": "28.43.2566", "image": "fw.bin", "sha256": hashlib.sha256(b"fw").hexdigest(),
                                  "part_numbers": ["MCX75310AAS-NEAT"]}}
    matrix = {"gpufabric_matrix": dict(roleplay_matrix("2026.12-a", firmware), switch_os={"cumulus-linux": pin})}
    mark = old.mark()
    ran = rollout(tmp_path, made, **{name: matrix for name in made})
    assert ran.ok, ran
    events = [e["event"] for e in old.since(mark)]
    assert events.count("reboot") == 1 and events.count("install") == 1
    assert events.index("booted") < events.index("apply")  # the configuration went to the new release
    assert old.get("/system/version")["product-release"] == "5.9.1"
    assert all(held(ran, host) == [] for host in SERVERS)
    mark = old.mark()
    again = rollout(tmp_path, made, **{name: matrix for name in made})
    assert again.ok and [e for e in old.since(mark) if e["event"] in ("fetch", "install", "reboot", "apply")] == []
    mirror.shutdown()


# ---------------------------------------------------------------- uplinks to the spines (the inventory names spines)

UPLINKED = dict(FABRIC, leaf_ports=2, uplinks={"loopbacks": "198.18.128.0/24"})   # uplinks on swp3, swp4
SPINES = {"spine1": {}, "spine2": {}}


def uplinked_leaves(make_switch, wrong=None):
    made = {}
    for rail, name in enumerate(LEAVES):
        sw = make_switch(name, ports="swp1-4")
        for index, host in enumerate(SERVERS, 1):
            sw.admin("port", "swp%d" % index, "--neighbor", "%s:%s" % (host, FABRIC["interface_names"][rail]))
        for port, spine in (("swp3", "spine1"), ("swp4", "spine2")):
            seen = wrong[2] if wrong and (name, port) == wrong[:2] else "%s:swp%d" % (spine, rail + 1)
            sw.admin("port", port, "--neighbor", seen)
        made[name] = sw
    return made


def uplinked_rollout(tmp_path, made):
    return run(tmp_path, SERVERS, PLAY, group_vars={"gpufabric_fabric": UPLINKED},
               groups={"leaves": inventory(made, **{n: {"gpufabric_fabric": UPLINKED} for n in made}),
                       "spines": SPINES})


def test_with_spines_each_leaf_gets_bgp_unnumbered_to_both_and_a_rerun_applies_nothing(tmp_path, make_switch):
    made = uplinked_leaves(make_switch)
    ran = uplinked_rollout(tmp_path, made)
    assert ran.ok, ran
    for rail, (name, sw) in enumerate(made.items()):
        assert sw.get("/router/bgp?rev=applied&filled=false") == {
            "enable": "on", "autonomous-system": 4200000000 + rail, "router-id": "198.18.128.%d" % rail}
        bgp = sw.get("/vrf/default/router/bgp?rev=applied&filled=false")
        assert bgp["neighbor"] == {"swp3": {"remote-as": "external", "type": "unnumbered"},
                                   "swp4": {"remote-as": "external", "type": "unnumbered"}}
        assert "198.18.128.%d/32" % rail in bgp["address-family"]["ipv4-unicast"]["network"]
        assert sw.get("/interface/swp4?rev=applied&filled=false")["description"] == \
            "%s:swp4 -> spine2:swp%d" % (name, rail + 1)
        assert list(sw.get("/interface/lo?rev=applied&filled=false")["ip"]["address"]) == ["198.18.128.%d/32" % rail]
    for host in SERVERS:
        assert held(ran, host) == [] and touched(ran, host)
    marks = {name: sw.mark() for name, sw in made.items()}
    again = uplinked_rollout(tmp_path, made)
    assert again.ok and all(sw.since(marks[n], "apply") == [] for n, sw in made.items())


def test_an_uplink_to_the_wrong_spine_port_holds_every_server_of_its_leaf_only(tmp_path, make_switch):
    made = uplinked_leaves(make_switch, wrong=("su1-leaf-rail1", "swp3", "spine1:swp7"))
    ran = uplinked_rollout(tmp_path, made)
    assert ran.ok, ran   # held is not failed
    for host in SERVERS:
        hold = held(ran, host)
        assert [h["leaf"] for h in hold] == ["su1-leaf-rail1"], hold
        assert "sees spine1:swp7 as LLDP neighbour, expected spine1:swp2" in hold[0]["reason"]
        assert not touched(ran, host)


def test_the_emulator_applies_the_uplink_tree_and_refuses_it_without_the_router_id(make_switch):
    from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._leaf import leaf_config
    from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import plan
    hosts = [{"name": name, **values} for name, values in SERVERS.items()]
    entry = plan(hosts, UPLINKED, None, SPINES)["leaves"]["su1-leaf-rail0"]
    tree = leaf_config("su1-leaf-rail0", entry, {})
    sw = make_switch("su1-leaf-rail0", ports="swp1-4")
    assert sw.change("/", tree)[1]["state"].startswith("applied")
    assert sw.get("/vrf/default/router/bgp/neighbor/swp3?rev=applied&filled=false") == {
        "remote-as": "external", "type": "unnumbered"}
    del tree["router"]["bgp"]["router-id"]
    other = make_switch("su1-leaf-rail1", ports="swp1-4")
    rev = other.change("/", tree)[1]
    assert rev["state"] == "invalid" and rev["transition"]["issue"]["0"]["data"]["location"] == "router.bgp.enable"
