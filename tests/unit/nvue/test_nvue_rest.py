# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVUE emulator's REST API: auth, revisions, reads, diffs, every apply state, save, discard, conflicts."""
import threading

import pytest

from nvue_helpers import PASSWORD


# ------------------------------------------------------------------ auth

def test_missing_and_bad_credentials_get_401_with_the_basic_challenge(switch):
    for kwargs in ({"auth": False}, {"password": "wrong"}, {"user": "admin"}):
        status, body, headers = switch.call("GET", "/system", **kwargs)
        assert status == 401, kwargs
        assert headers["WWW-Authenticate"] == 'Basic realm="nvue"'
    assert [e["status"] for e in switch.events("auth_fail")] == [401, 401, 401]
    assert switch.events("read") == []


def test_default_password_persona_answers_403_naming_the_password_change(make_switch):
    sw = make_switch("leaf02", password=None, extra=("--persona", "cl56-default-password"))
    sw.password = "cumulus"
    status, body, _h = sw.call("GET", "/system")
    assert status == 403
    assert "password of the cumulus user must be changed" in body["message"]
    assert sw.call("GET", "/system", password="bad")[0] == 401
    sw.admin("passwd", "New-Pass-1")
    sw.password = "New-Pass-1"
    assert sw.get("/system")["hostname"] == "leaf02"
    assert [e["status"] for e in sw.events("auth_fail")] == [403, 401]


def test_default_password_persona_needs_5_6(make_switch):
    sw = make_switch("leaf03", release="5.5.1", password=None, extra=("--persona", "cl56-default-password"))
    sw.password = "cumulus"
    assert sw.get("/system/version")["product-release"] == "5.5.1"


# ------------------------------------------------------------------ revisions and staging

def test_revision_create_patch_deep_merge_and_null_unset(switch):
    created = switch.ok("POST", "/revision", {})
    (rid, rev), = created.items()
    assert rid == "1" and rev == {"state": "pending", "transition": {"issue": {}, "progress": ""}}
    out = switch.ok("PATCH", "/interface/swp1/link?rev=1", {"mtu": 9000, "state": {"up": {}}})
    assert out == {"speed": "400G", "mtu": 9000, "state": {"up": {}}}
    out = switch.ok("PATCH", "/?rev=1", {"interface": {"swp1": {"link": {"mtu": 4000}, "description": "A1"}}})
    assert out["interface"]["swp1"] == {"type": "swp", "description": "A1",
                                        "link": {"speed": "400G", "mtu": 4000, "state": {"up": {}}}}
    switch.ok("PATCH", "/interface/swp1?rev=1", {"description": None, "link": {"state": None}})
    got = switch.get("/interface/swp1?rev=1&filled=false")
    assert got == {"type": "swp", "link": {"speed": "400G", "mtu": 4000}}
    switch.ok("DELETE", "/interface/swp1/link/mtu?rev=1")
    assert switch.get("/interface/swp1/link?rev=1&filled=false") == {"speed": "400G"}
    assert switch.new_rev() == "2"


def test_root_delete_starts_from_empty(switch):
    rid = switch.new_rev()
    assert switch.ok("DELETE", "/?rev=%s" % rid) == {}
    assert switch.get("/?rev=%s&filled=false" % rid) == {}
    assert switch.get("/system/hostname?rev=applied") == "leaf01"


def test_percent_quoted_revision_ids_are_accepted(switch):
    rid = switch.new_rev()
    assert switch.get("/revision/%s" % rid.replace("1", "%31"))["state"] == "pending"
    switch.ok("PATCH", "/interface/lo/ip/address/10.0.0.1%2F32?rev=" + rid, {})
    assert switch.get("/interface/lo/ip/address?rev=%s&filled=false" % rid) == {"10.0.0.1/32": {}}


def test_base_rev_startup_and_a_revision_id(switch):
    rid, rev = switch.change("/system", {"hostname": "leaf01b"})
    assert rev["state"] == "applied_and_saved"
    switch.admin("set", "apply_seconds", "0.01")
    other = switch.new_rev()
    switch.ok("PATCH", "/system?rev=%s" % other, {"timezone": "Europe/Paris"})
    child = switch.new_rev(base=other)
    assert switch.get("/system/timezone?rev=%s" % child) == "Europe/Paris"
    assert switch.get("/system/hostname?rev=%s" % switch.new_rev(base="startup")) == "leaf01b"
    assert switch.call("POST", "/revision?base_rev=99", {})[0] == 400


def test_only_pending_revisions_take_changes(switch):
    rid, rev = switch.change("/system", {"hostname": "x1"})
    status, body, _h = switch.call("PATCH", "/system?rev=%s" % rid, {"hostname": "x2"})
    assert status == 400 and "only a pending revision takes changes" in body["message"]
    assert switch.call("PATCH", "/system?rev=77", {"hostname": "x2"})[0] == 404
    assert switch.call("PATCH", "/system", {"hostname": "x2"})[0] == 400


# ------------------------------------------------------------------ reads

def test_get_revs_filled_and_unknown_paths(switch):
    rid = switch.new_rev()
    switch.ok("PATCH", "/?rev=%s" % rid, {"qos": {"roce": {}}, "interface": {"swp2": {"link": {"mtu": 9000}}}})
    assert switch.get("/qos?rev=%s&filled=false" % rid) == {"roce": {}}
    assert switch.get("/qos/roce?rev=%s" % rid) == {"enable": "off", "mode": "lossless"}  # the spec: enable off
    assert switch.get("/qos/roce?rev=applied") == {"enable": "off", "mode": "lossless"}  # on a factory switch too
    assert switch.call("GET", "/qos/roce?rev=applied&filled=false")[0] == 404  # nothing set
    assert switch.get("/interface/swp1/link?rev=applied") == {"speed": "400G", "mtu": 9216, "state": {"up": {}}}
    assert switch.get("/interface/swp1/link?rev=applied&filled=false") == {"speed": "400G"}
    assert switch.get("/interface/swp2/link/mtu?rev=pending") == 9000
    assert switch.get("/interface/swp2/link/mtu?rev=startup") == 9216
    assert switch.get("/interface/swp2/link/oper-status") == "up"         # no rev = operational
    status, body, _h = switch.call("GET", "/interface/swp99?rev=applied")
    assert status == 404 and "swp99" in body["message"]
    assert switch.call("GET", "/revision/42")[0] == 404
    assert switch.call("GET", "/system?rev=nope")[0] == 404


def test_diff_both_ways(switch):
    rid = switch.new_rev()
    switch.ok("PATCH", "/?rev=%s" % rid, {"system": {"hostname": "leaf-x"}, "interface": {"swp1": None}})
    forward = switch.get("/?rev=applied&diff=%s" % rid)   # REST: the root schema, a removed leaf null
    assert forward == {"system": {"hostname": "leaf-x"}, "interface": {"swp1": {"type": None, "link": {"speed": None}}}}
    backward = switch.get("/?rev=%s&diff=applied" % rid)
    assert backward == {"system": {"hostname": "leaf01"}, "interface": {"swp1": {"type": "swp", "link": {"speed": "400G"}}}}
    assert switch.get("/system?rev=applied&diff=%s" % rid) == {"hostname": "leaf-x"}
    assert switch.get("/?rev=applied&diff=startup") == {}


# ------------------------------------------------------------------ apply states

def test_applied_and_saved_with_auto_save(switch):
    mark = switch.mark()
    rid, rev = switch.change("/interface/swp1/link", {"mtu": 9000})
    assert rev == {"state": "applied_and_saved", "transition": {"issue": {}, "progress": ""}}
    state = switch.state()
    assert state["applied"] == state["startup"]
    assert state["applied"]["interface"]["swp1"]["link"]["mtu"] == 9000
    assert switch.get("/interface/swp1/link/mtu") == 9000
    names = [e["event"] for e in switch.since(mark) if e["event"] != "read"]
    assert names == ["revision", "stage", "apply", "applied_and_saved"]


def test_applied_without_auto_save_then_save(make_switch):
    sw = make_switch("leaf05", release="5.8.0")
    rid, rev = sw.change("/interface/swp1/link", {"mtu": 9000})
    assert rev["state"] == "applied"
    assert sw.get("/interface/swp1/link/mtu?rev=startup") == 9216
    assert sw.get("/?rev=startup&diff=applied") == {"interface": {"swp1": {"link": {"mtu": 9000}}}}
    out = sw.ok("PATCH", "/revision/applied", {"state": "save", "auto-prompt": {"ays": "ays_yes"}})
    assert out["state"] == "save"
    assert sw.get("/interface/swp1/link/mtu?rev=startup") == 9000
    assert len(sw.events("save")) == 1


def test_auto_save_off_by_init_and_by_config(make_switch):
    sw = make_switch("leaf06", extra=("--auto-save", "off"))
    assert sw.change("/system", {"timezone": "UTC"})[1]["state"] == "applied"
    assert sw.change("/system/config/auto-save", {"enable": "on"})[1]["state"] == "applied_and_saved"  # 5.9: enable


@pytest.mark.parametrize("patch, location, reason", [   # what the schema takes but the apply refuses (an MTU
    ("/qos", {"roce": {"enable": "on", "mode": "lossless"}, "pfc": {"default-global": {"switch-priority": {"4": {}}}}},
     "not in the RoCE lossless pool"),
    ("/router", {"bgp": {"enable": "on", "autonomous-system": 65101}}, "BGP requires router-id"),
])
def test_invalid_per_rule_with_location(switch, patch, location, reason):
    rid, rev = switch.change(patch, location)
    assert rev["state"] == "invalid"
    assert rev["transition"]["progress"] == "Invalid config"
    issue = rev["transition"]["issue"]["0"]
    assert issue["code"] == "config_invalid" and issue["severity"] == "error"
    want = {"/qos": "qos.pfc.default-global.switch-priority", "/router": "router.bgp.enable"}[patch]
    assert issue["data"]["location"] == want
    assert reason in issue["data"]["reason"]
    assert issue["message"] == "Config invalid at %s: %s" % (want, issue["data"]["reason"])
    assert switch.get("/?rev=applied&diff=startup") == {}
    assert switch.get("/?rev=applied&filled=false").get(patch.strip("/")) is None
    assert switch.events("invalid")[-1]["location"] == want


def test_invalid_rules_accept_the_valid_neighbours(switch):
    rid = switch.new_rev()
    switch.ok("PATCH", "/?rev=%s" % rid, {
        "interface": {"swp3": {"link": {"mtu": 552}}, "swp4": {"link": {"mtu": 9216}}},
        "qos": {"roce": {"mode": "lossless"}, "pfc": {"default-global": {"switch-priority": {"3": {}}}}},
        "router": {"bgp": {"enable": "on", "router-id": "10.0.0.1"}}})
    assert switch.apply(rid)["state"] == "applied_and_saved"
    rid = switch.new_rev()
    switch.ok("PATCH", "/qos?rev=%s" % rid, {"roce": {"mode": "lossy"}, "pfc": {"default-global": {
        "switch-priority": {"5": {}}}}})
    assert switch.apply(rid)["state"] == "applied_and_saved"       # the pool rule is for lossless only


def test_pfc_priority_allowed_when_the_lossless_pool_moves(switch):
    rid = switch.new_rev()
    switch.ok("PATCH", "/qos?rev=%s" % rid, {"roce": {}, "pfc": {"default-global": {"switch-priority": {"4": {}}}},
                                             "traffic-pool": {"roce-lossless": {"switch-priority": {"4": {}}}}})
    assert switch.apply(rid)["state"] == "applied_and_saved"


def test_invalid_apply_fault_sets_location_and_reason(switch):
    switch.admin("fault", "set", "invalid_apply", "interface.swp2.link.speed", "Speed 7G is not supported")
    rid, rev = switch.change("/system", {"timezone": "UTC"})
    issue = rev["transition"]["issue"]["0"]
    assert rev["state"] == "invalid"
    assert issue["data"] == {"location": "interface.swp2.link.speed", "reason": "Speed 7G is not supported\n"}
    switch.admin("fault", "clear", "invalid_apply")
    assert switch.change("/system", {"timezone": "UTC"})[1]["state"] == "applied_and_saved"


def test_ays_fail_first_apply_and_hostname_without_auto_prompt(switch):
    rid, rev = switch.change("/system", {"timezone": "UTC"}, ays=False)
    assert rev["state"] == "ays_fail"
    assert rev["transition"] == {"issue": {"0": {"code": "client_timeout", "data": {},
                                                 "message": "Timeout while waiting for client response",
                                                 "severity": "error"}},
                                 "progress": "Aborted apply after warnings"}
    assert switch.change("/system", {"timezone": "UTC"}, ays=True)[1]["state"] == "applied_and_saved"
    # the first apply was accepted: a plain change needs no answer now, a hostname change does
    assert switch.change("/system", {"timezone": "Europe/Paris"}, ays=False)[1]["state"] == "applied_and_saved"
    assert switch.change("/system", {"hostname": "Leaf-1"}, ays=False)[1]["state"] == "ays_fail"
    assert switch.get("/system/hostname") == "leaf01"
    assert switch.change("/system", {"hostname": "Leaf-1"}, ays=True)[1]["state"] == "applied_and_saved"
    assert switch.get("/system/hostname") == "Leaf-1"


def test_failed_on_a_no_diff_apply(switch):
    rid = switch.new_rev()
    rev = switch.apply(rid)
    assert rev["state"] == "failed"
    assert rev["transition"]["issue"]["0"]["message"] == "config apply executed with no config diff"
    assert switch.state()["counters"]["applied"] == 0


def test_no_rest_call_discards_a_revision(switch):
    rid = switch.new_rev()   # the specification: /revision/{revision-id} has GET and PATCH only
    status, body, _h = switch.call("DELETE", "/revision/%s" % rid)
    assert status == 405 and body == {"message": "method DELETE is not supported on /revision/%s" % rid}
    assert switch.get("/revision/%s" % rid)["state"] == "pending" and switch.events("discard") == []


@pytest.mark.parametrize("release, body, words", [
    ("5.9.1", {"qos": {"roce": {"state": "enabled"}}}, "qos.roce: unknown property 'state' on Cumulus Linux 5.9.1"),
    ("5.16.0", {"qos": {"roce": {"enable": "on"}}}, "qos.roce: unknown property 'enable' on Cumulus Linux 5.16.0"),
    ("5.16.0", {"router": {"bgp": {"state": "on"}}}, "router.bgp.state: 'on' is not one of enabled, disabled"),
    ("5.14.0", {"vrf": {"default": {"router": {"bgp": {"enable": "enabled"}}}}},
     "vrf.default.router.bgp.enable: 'enabled' is not one of on, off"),
    ("5.9.1", {"system": {"config": {"auto-save": {"state": "enabled"}}}}, "system.config.auto-save: unknown property"),
    ("5.11.0", {"system": {"config": {"auto-save": {"enable": "on"}}}}, "system.config.auto-save: unknown property"),
    ("5.11.0", {"qos": {"roce": {"mode": "lossy-multi-tc"}}}, "qos.roce.mode: 'lossy-multi-tc' is not one of"),
])
def test_a_key_the_release_does_not_spell_is_refused_when_staged(make_switch, release, body, words):
    sw = make_switch(release=release)
    rid = sw.new_rev()
    status, answer, _h = sw.call("PATCH", "/?rev=%s" % rid, body)
    assert status == 400 and words in answer["message"]
    assert sw.get("/?rev=%s&filled=false" % rid) == sw.get("/?rev=applied&filled=false")  # nothing staged


@pytest.mark.parametrize("release, body", [
    ("5.14.0", {"qos": {"roce": {"enable": "on", "mode": "lossy-multi-tc"}}}),
    ("5.15.0", {"qos": {"roce": {"state": "enabled", "mode": "lossless"}}}),
    ("5.10.0", {"system": {"config": {"auto-save": {"state": "disabled"}}}}),
])
def test_the_release_s_own_spelling_is_staged(make_switch, release, body):
    sw = make_switch(release=release)
    rid = sw.new_rev()
    assert sw.call("PATCH", "/?rev=%s" % rid, body)[0] == 200


def test_revision_list(switch):
    a = switch.new_rev()
    b, _rev = switch.change("/system", {"timezone": "UTC"})
    revs = switch.get("/revision")
    assert revs[a]["state"] == "pending" and revs[b]["state"] == "applied_and_saved"


def test_two_applies_at_once_one_gets_409_naming_the_other(switch):
    switch.admin("fault", "set", "slow_apply", "0.6")
    a, b = switch.new_rev(), switch.new_rev()
    switch.ok("PATCH", "/system?rev=%s" % a, {"timezone": "UTC"})
    switch.ok("PATCH", "/system?rev=%s" % b, {"timezone": "Europe/Paris"})
    results = {}
    barrier = threading.Barrier(2)

    def go(rid):
        barrier.wait()
        results[rid] = switch.call("PATCH", "/revision/%s" % rid,
                                   {"state": "apply", "auto-prompt": {"ays": "ays_yes"}})
    threads = [threading.Thread(target=go, args=(r,)) for r in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    statuses = sorted(r[0] for r in results.values())
    assert statuses == [200, 409]
    winner = next(r for r, v in results.items() if v[0] == 200)
    loser = next(r for r, v in results.items() if v[0] == 409)
    assert results[loser][1]["applying"] == winner
    assert switch.wait_rev(winner)["state"] == "applied_and_saved"
    assert switch.get("/revision/%s" % loser)["state"] == "pending"
    assert switch.apply(loser)["state"] == "applied_and_saved"      # it may go after


def test_stale_base_replays_the_revisions_own_changes(switch):
    stale = switch.new_rev()
    switch.ok("PATCH", "/interface/swp2/link?rev=%s" % stale, {"mtu": 9000})
    switch.change("/system", {"timezone": "UTC"})                     # applied moves on
    assert switch.apply(stale)["state"] == "applied_and_saved"
    applied = switch.get("/?rev=applied&filled=false")
    assert applied["system"]["timezone"] == "UTC"                    # not lost by the stale revision
    assert applied["interface"]["swp2"]["link"]["mtu"] == 9000


# ------------------------------------------------------------------ events, system, lock

def test_each_get_is_one_read_event_and_a_compliant_rerun_is_countable(switch):
    switch.change("/interface/swp1/link", {"mtu": 9000})
    mark = switch.mark()
    switch.get("/interface/swp1/link?rev=applied")
    switch.get("/system/version")
    switch.get("/interface")
    new = switch.since(mark)
    assert [e["event"] for e in new] == ["read", "read", "read"]
    assert [(e["path"], e["rev"], e["client"]) for e in new] == [
        ("/interface/swp1/link", "applied", "rest"), ("/system/version", "operational", "rest"),
        ("/interface", "operational", "rest")]
    assert switch.since(mark, "apply") == []
    assert [e["seq"] for e in switch.events()] == list(range(1, len(switch.events()) + 1))


def test_system_and_version(switch):
    system = switch.get("/system")
    assert system["hostname"] == "leaf01" and system["build"] == "Cumulus Linux 5.9.1"
    assert system["product-name"] == "Cumulus Linux" and isinstance(system["uptime"], int)
    version = switch.get("/system/version")
    assert version["product-release"] == "5.9.1"
    assert version["image"]["build-id"].startswith("5.9.1.")
    assert version["base-os"].startswith("Debian GNU/Linux 12") and version["onie"] == "N/A"


def test_two_nvued_on_one_state_lose_no_change(switch):
    _proc, port2 = switch.start("--no-socket", port=0)
    rid = switch.new_rev()
    errors = []

    def writer(port, prefix):
        for n in range(15):
            status, body, _h = switch.call("PATCH", "/interface/swp1/ip/address?rev=%s" % rid,
                                           {"10.%d.0.%d/32" % (prefix, n): {}}, port=port)
            if status != 200:
                errors.append(body)
    ports = (switch.port, port2, switch.port)
    threads = [threading.Thread(target=writer, args=(p, i)) for i, p in enumerate(ports)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _proc.terminate()
    _proc.wait(10)
    _proc.stdout.close()
    _proc.stderr.close()
    assert errors == []
    got = switch.get("/interface/swp1/ip/address?rev=%s&filled=false" % rid)
    assert len(got) == 45
    assert len(switch.events("stage")) == 45


def test_password_is_not_in_any_response(switch):
    assert PASSWORD not in repr(switch.get("/?rev=applied")) + repr(switch.get("/system"))


# The collection's own leaf tree (the leaf role's ports, SVI, uplinks and RoCE QoS): the specification takes it.
LEAF_TREE = {
    "interface": {"swp1": {"type": "swp", "description": "srv-a:enp24s0np0",
                           "link": {"state": {"up": {}}, "mtu": 9000, "speed": "400G"},
                           "ip": {"address": {"198.18.0.1/31": {}}},
                           "bridge": {"domain": {"br_default": {"access": 10}}}},
                  "vlan10": {"type": "svi", "vlan": 10, "ip": {"address": {"198.18.1.1/24": {}}},
                             "link": {"mtu": 9000}},
                  "lo": {"type": "loopback", "ip": {"address": {"198.19.255.1/32": {}}}}},
    "bridge": {"domain": {"br_default": {"vlan": {"10": {}}}}},
    "qos": {"roce": {"enable": "on", "mode": "lossless"},
            "mapping": {"default-global": {"trust": "l3", "dscp": {"26": {"switch-priority": 3}}}},
            "pfc": {"default-global": {"switch-priority": {"3": {}}}},
            "congestion-control": {"default-global": {"traffic-class": {"3": {"ecn": "enable"}}}}},
    "router": {"bgp": {"enable": "on", "autonomous-system": 65101, "router-id": "198.19.255.1"}},
    "vrf": {"default": {"router": {"bgp": {
        "enable": "on", "neighbor": {"swp31": {"remote-as": "external", "type": "unnumbered"}},
        "address-family": {"ipv4-unicast": {"enable": "on", "network": {"198.18.1.0/24": {}}}}}}}},
}


def test_the_collection_s_leaf_tree_is_staged_as_the_specification_takes_it(switch):
    rid = switch.new_rev()
    status, answer, _h = switch.call("PATCH", "/?rev=%s" % rid, LEAF_TREE)
    assert status == 200, answer
    assert switch.get("/interface/swp1/link?rev=%s&filled=false" % rid)["mtu"] == 9000


@pytest.mark.parametrize("path, body, words", [
    ("/", {"qoss": {}}, "Invalid config: /: Unevaluated properties are not allowed ('qoss' was unexpected)"),
    ("/", {"interface": {"swp1": {"link": {"mtuu": 9000}}}},
     "interface.swp1.link: Unevaluated properties are not allowed ('mtuu' was unexpected)"),
    ("/interface/swp1/link", {"mtuu": 9000},   # a PATCH below the root is judged at its path
     "interface.swp1.link: Unevaluated properties are not allowed ('mtuu' was unexpected)"),
    ("/", {"interface": {"swp1": {"link": {"mtu": 551}}}}, "interface.swp1.link.mtu: 551 is less than the minimum"),
    ("/", {"interface": {"swp1": {"link": {"mtu": 9217}}}}, "interface.swp1.link.mtu: 9217 is greater than the max"),
    ("/", {"interface": {"swp1": {"type": "ethernet"}}}, "interface.swp1.type: 'ethernet' is not one of"),
    ("/", {"interface": {"swp1": {"bridge": {"domain": {"br_default": {"access": 4095}}}}}},
     "interface.swp1.bridge.domain.br_default.access: 4095 is not valid under any of the given schemas"),
    ("/", {"qos": {"roce": {"mode": "lossy-multi-tc"}}}, None),   # the release's check (5.9.1: not yet) speaks first
    ("/", {"qos": {"mapping": {"default-global": {"dscp": {"26": {"switch-priority": 8}}}}}},
     "qos.mapping.default-global.dscp.26.switch-priority: 8 is greater than the maximum of 7"),
    ("/", {"router": {"bgp": {"enable": "yes"}}}, "router.bgp.enable: 'yes' is not one of"),
    ("/", {"router": {"bgp": {"router-id": "198.19.255.256"}}},
     "router.bgp.router-id: '198.19.255.256' is not valid under any of the given schemas"),
    ("/", {"vrf": {"default": {"router": {"bgp": {"neighbor": {"swp31": {"remote-as": "externall"}}}}}}},
     "vrf.default.router.bgp.neighbor.swp31.remote-as: 'externall' is not valid under any of the given schemas"),
])
def test_a_body_outside_the_specification_s_schema_is_refused_when_staged(switch, path, body, words):
    rid = switch.new_rev()
    before = switch.get("/?rev=%s&filled=false" % rid)
    status, answer, _h = switch.call("PATCH", "%s?rev=%s" % (path, rid), body)
    assert status == 400 and set(answer) == {"message"}
    if words is not None:
        assert words in answer["message"], answer
    assert switch.get("/?rev=%s&filled=false" % rid) == before   # nothing staged


@pytest.mark.parametrize("body", [
    {"interface": {"swp1": {"link": {"mtu": 552}}}},    # the range's ends
    {"interface": {"swp1": {"link": {"mtu": 9216}}}},
    {"interface": {"swp1": {"bridge": {"domain": {"br_default": {"access": 4094}}}}}},
    {"interface": {"swp1": {"description": None}}},     # an unset
    {"qos": {"mapping": {"default-global": {"dscp": {"26": {"switch-priority": 7}}}}}},
])
def test_a_body_at_the_schema_s_limits_is_staged(switch, body):
    rid = switch.new_rev()
    status, answer, _h = switch.call("PATCH", "/?rev=%s" % rid, body)
    assert status == 200, answer


def test_the_later_release_s_spelling_and_modes_are_judged_as_the_renames_document(make_switch):
    sw = make_switch(release="5.16.0")
    rid = sw.new_rev()
    body = {"qos": {"roce": {"state": "enabled", "mode": "lossy-multi-tc"}},
            "vrf": {"default": {"router": {"bgp": {"state": "enabled", "neighbor": {
                "swp31": {"state": "enabled", "remote-as": "external"}}}}}}}
    assert sw.call("PATCH", "/?rev=%s" % rid, body)[0] == 200
    status, answer, _h = sw.call("PATCH", "/?rev=%s" % rid, {"qos": {"roce": {"mode": "lossy-multi-tcc"}}})
    assert status == 400 and "qos.roce.mode: 'lossy-multi-tcc' is not one of" in answer["message"]
