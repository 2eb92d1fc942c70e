# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's NVUE core (plugins/module_utils/_nvue.py) against the NVUE emulator over HTTPS: what the switch's
event log shows a configure or a gather did - revisions made and deleted, applies, reads - and every refusal named."""
import threading

import pytest
from nvue_helpers import rest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _nvue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue import NvueError, configure, gather

PORTS = {"interface": {"swp1": {"link": {"mtu": 9000}, "description": "srv-a:enp24s0np0 -> leaf01:swp1"},
                       "swp2": {"link": {"mtu": 9000}}},
         "qos": {"roce": {"enable": "on", "mode": "lossless"}}}
FAST = dict(interval=0.02, timeout=20)


def applies(sw, mark):
    return len(sw.since(mark, "apply"))


def test_first_run_applies_once_a_rerun_applies_nothing_and_leaves_no_revision(switch):
    mark = switch.mark()
    first = configure(rest(switch), PORTS, **FAST)
    assert first["changed"] and first["state"] == "applied_and_saved" and first["saved"]
    assert applies(switch, mark) == 1
    applied = switch.get("/interface/swp1/link?rev=applied&filled=false")
    assert applied["mtu"] == 9000
    mark = switch.mark()
    again = configure(rest(switch), PORTS, **FAST)
    assert again["changed"] is False and again["state"] is None
    assert applies(switch, mark) == 0
    assert len(switch.since(mark, "read")) == 1  # the compliant rerun reads the applied configuration, once
    assert again["revision"] is None and switch.since(mark, "revision") == []   # and makes no revision
    pending = [r for r, v in switch.get("/revision").items() if v["state"] == "pending"]
    assert pending == []


def test_check_mode_predicts_and_applies_nothing(switch):
    mark = switch.mark()
    predicted = configure(rest(switch), PORTS, check_mode=True, **FAST)
    assert predicted["changed"] and applies(switch, mark) == 0
    assert switch.since(mark, "revision") == [] and switch.since(mark, "stage") == []  # no revision left behind
    assert switch.get("/interface/swp1/link?rev=applied&filled=false").get("mtu") != 9000
    assert predicted["after"]["interface"]["swp1"]["link"]["mtu"] == 9000
    real = configure(rest(switch), PORTS, **FAST)
    assert real["nvue_diff"] == predicted["nvue_diff"]
    assert real["before"] == predicted["before"] and real["after"] == predicted["after"]


def test_what_the_task_does_not_name_stays(switch):
    configure(rest(switch), {"system": {"message": {"pre-login": "hands off"}}}, **FAST)
    configure(rest(switch), PORTS, **FAST)
    assert switch.get("/system/message?rev=applied&filled=false") == {"pre-login": "hands off"}


def test_an_invalid_revision_fails_with_the_switch_s_location_and_applies_nothing(switch):
    bad = {"router": {"bgp": {"enable": "on", "autonomous-system": 65101}}}   # no router-id: refused at apply
    with pytest.raises(NvueError) as err:
        configure(rest(switch), bad, **FAST)
    assert "leaf01 refused revision" in err.value.msg and "state invalid" in err.value.msg
    assert "router.bgp.enable" in err.value.msg and err.value.parameter == "router.bgp.enable"
    assert "router" not in switch.get("/?rev=applied&filled=false")


def test_a_value_refused_when_staged_fails_naming_switch_request_and_key_and_applies_nothing(switch):
    mark = switch.mark()
    with pytest.raises(NvueError) as err:
        configure(rest(switch), {"interface": {"swp3": {"link": {"mtu": 9300}}}}, **FAST)
    assert "leaf01" in err.value.msg and "PATCH /nvue_v1/?rev=" in err.value.msg, err.value.msg
    assert "interface.swp3.link.mtu: 9300 is greater than the maximum of 9216" in err.value.msg, err.value.msg
    assert [e["event"] for e in switch.since(mark) if e["event"].startswith("applied")] == []
    assert switch.get("/interface/swp3/link?rev=applied&filled=false").get("mtu") != 9300


def test_without_auto_save_the_core_saves(make_switch):
    sw = make_switch(extra=("--auto-save", "off"))
    mark = sw.mark()
    result = configure(rest(sw), PORTS, **FAST)
    assert result["state"] == "applied" and result["saved"] and len(sw.since(mark, "save")) == 1
    assert sw.get("/?rev=startup&diff=applied") == {}


def test_the_403_persona_is_named(make_switch):
    sw = make_switch(extra=("--persona", "cl56-default-password"), password=None)
    with pytest.raises(NvueError, match="default password - change it on the switch"):
        configure(rest(sw, password="cumulus"), PORTS, **FAST)


def test_bad_credentials_are_named(switch):
    with pytest.raises(NvueError, match="refused the credentials"):
        configure(rest(switch, password="wrong"), PORTS, **FAST)


def test_nvued_down_is_named(switch):
    switch.admin("fault", "set", "nvued_down")
    with pytest.raises(NvueError, match="nvued, the NVUE daemon behind the REST API, is not running"):
        configure(rest(switch), PORTS, **FAST)


def test_a_slow_apply_is_a_timeout_naming_the_revision(switch):
    switch.admin("fault", "set", "slow_apply", "30")
    with pytest.raises(NvueError, match=r"is still in state 'apply' after 1 s") as err:
        configure(rest(switch), PORTS, interval=0.05, timeout=1)
    assert err.value.parameter == "timeout"


def test_two_clients_at_once_one_waits_for_nothing_the_other_is_told_busy(switch):
    switch.admin("fault", "set", "slow_apply", "1")
    results, errors = [], []

    def run(tree):
        try:
            results.append(configure(rest(switch), tree, **FAST))
        except NvueError as exc:
            errors.append(exc)
    threads = [threading.Thread(target=run, args=({"interface": {"swp%d" % i: {"link": {"mtu": 9000}}}},))
               for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 2 and errors == [], errors   # the one told busy (409) applied when the other had finished
    assert sorted(r["state"] for r in results) == ["applied_and_saved", "applied_and_saved"]
    assert len(switch.events("apply")) == 2
    pending = [r for r, v in switch.get("/revision").items() if v["state"] == "pending"]
    assert pending == []  # nothing left pending


def test_gather_reads_release_ports_qos_and_revisions(switch):
    switch.admin("fault", "set", "protodown", "swp2")
    info = gather(rest(switch))
    assert info["system"]["release"] == "5.9.1"
    assert info["image"]["current"] in ("1", "2") and info["image"]["partitions"]
    assert info["interfaces"]["swp2"]["protodown"] is True
    assert info["interfaces"]["swp2"]["protodown_reason"] == "linkflap"
    assert info["interfaces"]["swp1"]["oper_status"] == "up" and info["interfaces"]["swp1"]["speed"] == "400G"
    assert info["revisions"] == {"pending": [], "unsaved": False, "unsaved_diff": []}
    assert isinstance(info["qos"]["applied"], dict)


def test_gather_sees_an_unsaved_change_and_a_pending_revision(make_switch):
    sw = make_switch(extra=("--auto-save", "off"))
    configure(rest(sw), PORTS, save=False, **FAST)
    rid = sw.new_rev()
    info = gather(rest(sw), ["revisions"])
    assert info["revisions"]["unsaved"] is True and info["revisions"]["pending"] == [rid]


def test_gather_config_is_the_applied_and_startup_configuration_as_set_and_only_when_asked(make_switch):
    sw = make_switch(extra=("--auto-save", "off"))
    configure(rest(sw), PORTS, save=False, **FAST)          # applied, not saved: startup stays the factory's
    assert "config" not in gather(rest(sw))
    mark = sw.mark()
    info = gather(rest(sw), ["config"])
    assert [(e["path"], e["rev"]) for e in sw.since(mark, "read")] == [("/", "applied"), ("/", "startup")]
    assert info["config"]["applied"] == sw.get("/?rev=applied&filled=false")
    assert info["config"]["applied"]["interface"]["swp1"]["link"] == {"mtu": 9000, "speed": "400G"}
    assert info["config"]["startup"] == sw.get("/?rev=startup&filled=false")
    assert "mtu" not in info["config"]["startup"]["interface"]["swp1"]["link"]
    assert "qos" not in info["config"]["startup"]


def test_gather_refuses_an_unknown_part():
    with pytest.raises(NvueError, match="gather: bogus not known"):
        gather(_nvue.RestSwitch(lambda *a: (200, {})), ["bogus"])
