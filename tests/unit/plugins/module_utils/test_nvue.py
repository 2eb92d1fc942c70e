"""The NVUE core's own rules, on a scripted switch: what is checked before a revision is made, how each revision
state is judged, check mode, the no-diff path, save and read-back. (The same core against the NVUE emulator over
HTTPS: tests/unit/nvue/test_nvue_core_rest.py.)"""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _nvue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue import NvueError, Switch, configure


class ScriptedSwitch(Switch):
    """An in-memory switch: applied config, revisions, and the states a poll returns (``states``)."""

    name = "leaf1"

    def __init__(self, applied=None, states=("applied_and_saved",), issue=None, auto_save=False):
        self.applied = applied or {}
        self.autosave = auto_save
        self.revs = {}
        self.states = list(states)
        self.issue = issue or {}
        self.calls = []
        self.next = 1

    def new_revision(self):
        rev = str(self.next)
        self.next += 1
        self.revs[rev] = _nvue.merge({}, self.applied)
        self.calls.append(("new", rev))
        return rev

    def stage(self, rev, tree):
        self.revs[rev] = _nvue.merge(self.revs[rev], tree)
        self.calls.append(("stage", rev))

    def clear(self, rev, segments):
        parent = _nvue.at(self.revs[rev], segments[:-1])
        if isinstance(parent, dict):
            parent.pop(segments[-1], None)
        self.calls.append(("clear", rev, "/".join(segments)))

    def get(self, segments, rev="applied", filled=False):
        self.calls.append(("get", rev))
        return _nvue.at(self.applied if rev == "applied" else self.revs[rev], segments)

    def diff(self, rev, base="applied"):
        self.calls.append(("diff", rev))
        have, want = self.applied, self.revs.get(rev, self.applied)
        out = []
        sets = _changed(have, want)
        unsets = _changed(want, have, unset=True)
        if sets:
            out.append({"set": sets})
        if unsets:
            out.append({"unset": unsets})
        return out

    def apply(self, rev, assume_yes):
        self.calls.append(("apply", rev, assume_yes))

    def revision(self, rev):
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        if state in _nvue.APPLIED:
            self.applied = self.revs[rev]
        return {"state": state, "transition": {"issue": self.issue if state in _nvue.FAILED else {}, "progress": ""}}

    def save(self):
        self.calls.append(("save",))

    def auto_save(self):
        self.calls.append(("auto_save",))
        return self.autosave


def _changed(have, want, unset=False):
    out = {}
    for key, value in want.items():
        if key not in have:
            out[key] = None if unset else value
        elif isinstance(value, dict) and isinstance(have[key], dict):
            sub = _changed(have[key], value, unset)
            if sub:
                out[key] = sub
        elif have[key] != value and not unset:
            out[key] = value
    return out


def kinds(switch):
    return [c[0] for c in switch.calls]


MTU = {"interface": {"swp1": {"link": {"mtu": 9216}}}}


def test_a_compliant_switch_is_read_once_and_gets_no_revision():
    switch = ScriptedSwitch(applied={"interface": {"swp1": {"link": {"mtu": 9216}}, "eth0": {}}})
    result = configure(switch, MTU, sleep=lambda s: None)
    assert result["changed"] is False and result["state"] is None and result["revision"] is None
    assert switch.calls == [("get", "applied")]


def test_a_change_is_applied_once_read_back_and_not_saved_again_after_auto_save():
    switch = ScriptedSwitch(applied={"interface": {"swp1": {"link": {"mtu": 1500}}, "eth0": {"ip": {}}}},
                            states=("apply", "applied_and_saved"))
    result = configure(switch, MTU, sleep=lambda s: None)
    assert result["changed"] and result["state"] == "applied_and_saved" and result["saved"]
    assert result["before"] == {"interface": {"swp1": {"link": {"mtu": 1500}}}}
    assert result["after"] == {"interface": {"swp1": {"link": {"mtu": 9216}}}}
    assert kinds(switch).count("apply") == 1 and "save" not in kinds(switch) and kinds(switch).count("new") == 1
    assert switch.applied["interface"]["eth0"] == {"ip": {}}  # what the task does not name stays
    assert switch.calls[-1] == ("get", "applied")  # the read-back


def test_applied_without_auto_save_is_saved_unless_told_not_to():
    switch = ScriptedSwitch(applied={}, states=("applied",))
    assert configure(switch, MTU, sleep=lambda s: None)["saved"] is True
    assert ("save",) in switch.calls
    switch = ScriptedSwitch(applied={}, states=("applied",))
    assert configure(switch, MTU, save=False, sleep=lambda s: None)["saved"] is False
    assert ("save",) not in switch.calls


def test_check_mode_predicts_from_the_applied_configuration_and_makes_no_revision():
    switch = ScriptedSwitch(applied={"interface": {"swp1": {"link": {"mtu": 1500}}}})
    result = configure(switch, MTU, check_mode=True)
    assert result["changed"] is True and result["state"] is None and result["revision"] is None
    assert result["after"] == MTU and result["before"] == {"interface": {"swp1": {"link": {"mtu": 1500}}}}
    assert result["nvue_diff"] == [{"set": MTU}]
    assert switch.calls == [("get", "applied")]
    assert switch.applied["interface"]["swp1"]["link"]["mtu"] == 1500


def test_check_mode_predicts_replace_and_unset_as_the_switch_would_apply_them():
    switch = ScriptedSwitch(applied={"qos": {"roce": {"mode": "lossy", "extra": 1}}, "interface": {"swp9": {}}})
    result = configure(switch, {"qos": {"roce": {"mode": "lossless"}}}, replace=["/qos/roce"],
                       unset=["/interface/swp9", "/interface/swp10"], check_mode=True)
    assert result["nvue_diff"] == [{"set": {"qos": {"roce": {"mode": "lossless"}}}},
                                   {"unset": {"qos": {"roce": {"extra": None}}, "interface": {"swp9": None}}}]


INVALID = {"0": {"code": "config_invalid", "severity": "error",
                 "data": {"location": "interface.swp1.link.mtu", "reason": "MTU must be between 552 and 9216"},
                 "message": "Config invalid at interface.swp1.link.mtu: MTU must be between 552 and 9216"}}


@pytest.mark.parametrize("state, issue, words", [
    ("invalid", INVALID, ["leaf1 refused revision 1: state invalid", "Config invalid at interface.swp1.link.mtu",
                          "nothing was applied"]),
    ("ays_fail", {"0": {"code": "client_timeout", "message": "Timeout while waiting for client response"}},
     ["state ays_fail", "Timeout while waiting for client response", "yes/no answer"]),
    ("error", {}, ["state error", "no issue given"]),
    ("failed", {"0": {"message": "Internal error: switchd reload failed"}}, ["state failed", "switchd reload failed"]),
])
def test_every_failure_state_fails_with_the_switch_s_own_words(state, issue, words):
    switch = ScriptedSwitch(applied={}, states=("apply", state), issue=issue)
    with pytest.raises(NvueError) as err:
        configure(switch, MTU, sleep=lambda s: None)
    for word in words:
        assert word in err.value.msg
    assert kinds(switch).count("apply") == 1  # an applied-and-refused revision stays for nv config history
    if state == "invalid":
        assert err.value.parameter == "interface.swp1.link.mtu"


def test_the_no_diff_apply_is_no_change_not_a_failure():
    switch = ScriptedSwitch(applied={}, states=("failed",),
                            issue={"0": {"message": "config apply executed with no config diff"}})
    result = configure(switch, MTU, sleep=lambda s: None)
    assert result["changed"] is False and result["state"] == "failed"


def test_a_revision_the_switch_holds_unchanged_is_applied_so_that_it_ends():
    class Normalising(ScriptedSwitch):
        def stage(self, rev, tree):  # the switch keeps its own spelling: the revision holds no change
            self.calls.append(("stage", rev))
    switch = Normalising(applied={"interface": {"swp1": {"link": {"mtu": 9000}}}}, states=("failed",),
                         issue={"0": {"message": "config apply executed with no config diff"}})
    result = configure(switch, MTU, sleep=lambda s: None)
    assert result["changed"] is False and result["revision"] == "1" and kinds(switch).count("apply") == 1


def test_an_apply_that_never_ends_is_named_with_the_timeout():
    switch = ScriptedSwitch(applied={}, states=("apply",))
    ticks = iter(range(1000))
    with pytest.raises(NvueError, match=r"revision 1 is still in state 'apply' after 5 s") as err:
        configure(switch, MTU, timeout=5, interval=1, sleep=lambda s: None, clock=lambda: next(ticks))
    assert err.value.parameter == "timeout"


def test_a_read_back_that_still_differs_fails():
    class Stubborn(ScriptedSwitch):
        def revision(self, rev):
            return {"state": "applied_and_saved"}  # says applied, applies nothing
    switch = Stubborn(applied={})
    with pytest.raises(NvueError, match="still differs"):
        configure(switch, MTU, sleep=lambda s: None)


def test_replace_clears_the_subtree_first_and_unset_clears_paths():
    switch = ScriptedSwitch(applied={"qos": {"roce": {"mode": "lossy", "extra": 1}}, "interface": {"swp9": {}}},
                            states=("applied_and_saved",))
    configure(switch, {"qos": {"roce": {"mode": "lossless"}}}, replace=["/qos/roce"], unset=["/interface/swp9"],
              sleep=lambda s: None)
    assert switch.applied == {"qos": {"roce": {"mode": "lossless"}}, "interface": {}}
    assert ("clear", "1", "qos/roce") in switch.calls and ("clear", "1", "interface/swp9") in switch.calls


@pytest.mark.parametrize("config, kwargs, words", [
    ([], {}, "config: must be an NVUE tree"),
    ({}, {}, "nothing to configure"),
    ({"interface": [{"id": "swp1"}]}, {}, "config.interface: is a list; NVUE collections are objects keyed by id"),
    ({"interface": {"swp1; reboot": {}}}, {}, "key 'swp1; reboot' is not an NVUE key"),
    ({"@reboot": {}}, {}, "key '@reboot' is not an NVUE key"),
    ({"system": {"message": {"pre-login": "a\nb"}}}, {}, "characters NVUE values may not hold"),
    ({"qos": {"roce": None}}, {}, "config.qos.roce: is null"),
    ({"qos": {}}, {"replace": ["/"]}, "would replace the whole configuration"),
    ({"qos": {}}, {"replace": ["/qos/roce"]}, "replace: /qos/roce is not in config"),
    ({"qos": {}}, {"unset": ["qos"]}, "unset: 'qos' is not an NVUE path"),
    ({"qos": {}}, {"unset": ["/interface/198.18.0.0/31"]}, None),  # "31" is a segment: allowed grammar
    ({"qos": {"roce": {}}}, {"unset": ["/qos/roce"]}, "unset: /qos/roce is also set in config"),
    ({"qos": {}}, {"unset": ["/interface/swp1?rev=1"]}, "segment 'swp1?rev=1'"),
])
def test_bad_input_is_refused_before_a_revision_is_made(config, kwargs, words):
    switch = ScriptedSwitch(applied={})
    if words is None:
        configure(switch, config, sleep=lambda s: None, **kwargs)
        return
    with pytest.raises(NvueError) as err:
        configure(switch, config, sleep=lambda s: None, **kwargs)
    assert words in err.value.msg
    assert switch.calls == []


def test_a_refused_stage_names_the_revision_left_pending():
    class Refusing(ScriptedSwitch):
        def stage(self, rev, tree):
            raise NvueError("leaf1 PATCH /nvue_v1/?rev=1: answered HTTP 400 (the switch says: unknown key)")
    switch = Refusing(applied={})
    with pytest.raises(NvueError, match=r"unknown key\) \(revision 1 is left pending and is not applied\)"):
        configure(switch, MTU)
    assert "apply" not in kinds(switch)


def test_a_switch_diff_that_disagrees_with_the_revision_fails_before_the_apply():
    class Silent(ScriptedSwitch):
        def diff(self, rev, base="applied"):
            return []
    switch = Silent(applied={})
    with pytest.raises(NvueError, match="but the switch's diff of them says no difference"):
        configure(switch, MTU)
    assert "apply" not in kinds(switch)


@pytest.mark.parametrize("status, words", [
    (401, "refused the credentials"), (403, "default password"), (409, "another client is applying"),
    (502, "nvued, the NVUE daemon"), (500, "answered HTTP 500")])
def test_http_answers_are_named(status, words):
    switch = _nvue.RestSwitch(lambda m, p, q, b: (status, {"title": "x", "detail": "because"}), name="leaf7")
    with pytest.raises(NvueError) as err:
        switch.new_revision()
    assert err.value.msg.startswith("leaf7 POST /nvue_v1/revision: ") and words in err.value.msg
    assert "the switch says: because" in err.value.msg and err.value.rc == status


def test_rest_paths_quote_ids_and_unset_by_null():
    sent = []
    switch = _nvue.RestSwitch(lambda m, p, q, b: (sent.append((m, p, q, b)) or (200, {})))
    switch.clear("changeset/cumulus/2021", ["interface", "swp9", "link", "mtu"])
    switch.get(["revision", "changeset/cumulus/2021"])
    assert sent == [("PATCH", "/", {"rev": "changeset/cumulus/2021"}, {"interface": {"swp9": {"link": {"mtu": None}}}}),
                    ("GET", "/revision/changeset%2Fcumulus%2F2021", {"rev": "applied", "filled": "false"}, None)]


def test_revision_state_is_read_flat_or_id_keyed():
    flat = _nvue.RestSwitch(lambda m, p, q, b: (200, {"state": "applied"}))
    keyed = _nvue.RestSwitch(lambda m, p, q, b: (200, {"6": {"state": "ays_fail"}}))
    assert flat.revision("6")["state"] == "applied" and keyed.revision("6")["state"] == "ays_fail"


def test_covers_and_merge():
    assert _nvue.merge({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": {}}}) == {"a": {"c": 2, "d": {}}}
    assert _nvue.covers({"a": {"b": 9216, "c": 1}}, {"a": {"b": 9216}}) == []
    assert _nvue.covers({"a": {"b": 1500}}, {"a": {"b": 9216, "x": None, "y": 1}}) == ["a.b", "a.y"]
    assert _nvue.covers({"a": {"x": 1}}, {"a": {"x": None}}) == ["a.x"]


class Busy(ScriptedSwitch):
    """Answers 409 to the first ``busy`` applies (another client's revision is applying)."""
    busy = 2

    def apply(self, rev, assume_yes):
        self.calls.append(("apply", rev, assume_yes))
        if self.busy:
            self.busy -= 1
            raise NvueError("leaf1 PATCH /nvue_v1/revision/1: is busy (HTTP 409 Conflict)", rc=409)


def test_an_apply_told_busy_is_asked_again_until_the_switch_takes_it():
    switch = Busy(applied={})
    result = configure(switch, MTU, sleep=lambda s: None)
    assert result["state"] == "applied_and_saved" and kinds(switch).count("apply") == 3


def test_an_apply_still_busy_at_the_timeout_names_the_revision_left_pending():
    switch = Busy(applied={})
    switch.busy = 1000
    ticks = iter(range(1000))
    with pytest.raises(NvueError, match=r"409 Conflict\) \(revision 1 is left pending and is not applied\)"):
        configure(switch, MTU, timeout=5, interval=1, sleep=lambda s: None, clock=lambda: next(ticks))
    assert kinds(switch).count("apply") == 5 and "save" not in kinds(switch)


def test_an_apply_the_switch_refuses_outright_is_not_asked_again():
    class Refusing(ScriptedSwitch):
        def apply(self, rev, assume_yes):
            self.calls.append(("apply", rev, assume_yes))
            raise NvueError("leaf1 PATCH /nvue_v1/revision/1: answered HTTP 400", rc=400)
    switch = Refusing(applied={})
    with pytest.raises(NvueError, match="HTTP 400"):
        configure(switch, MTU)
    assert kinds(switch).count("apply") == 1 and "save" not in kinds(switch)
