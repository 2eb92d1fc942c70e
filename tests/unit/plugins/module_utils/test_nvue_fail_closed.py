"""The NVUE core fails closed: every answer of a switch it does not recognise - a diff, a revision state, the answer
to an apply, a save, a new revision, the auto-save setting, the configuration - fails the task naming the switch and
the request, never ``changed: false``. And an apply ends honestly: a poll without an answer is read again a bounded
number of times, a timeout names the revision to watch and its last state, ``applied`` on an auto-save switch is a
step (waited out, never saved a second time).

The switch here is the REST transport (``RestSwitch``) over a scripted HTTP exchange, so the checks under test are the
ones a real switch's answers go through. Expected values are written by hand."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _nvue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue import (
    ApplyUnfinished, NvueError, RestSwitch, SwitchUnreachable, configure)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_cli import CliSwitch
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_image import wait_action

MTU = {"interface": {"swp1": {"link": {"mtu": 9216}}}}
DIFF = [{"set": MTU}]
NAME = "switch leaf07"


class Exchange:
    """A scripted NVUE REST API holding an applied configuration and revision 1 (the applied one with MTU merged
    in once staged); ``states`` are the answers of successive ``GET /revision/1`` (an int for an HTTP status,
    ``"down"`` for no answer); an applied state makes revision 1 the applied configuration. ``override`` fixes the
    answer to one request."""

    def __init__(self, states=("applied_and_saved",), auto_save="enabled"):
        self.sent = []
        self.overridden = {}
        self.states = list(states)
        self.applied = {"interface": {"swp1": {"link": {"mtu": 1500}}}}
        self.revision = None
        self.answers = {
            ("POST", "/revision", ()): {"1": {"state": "pending", "transition": {"issue": {}, "progress": ""}}},
            ("GET", "/system/config/auto-save", (("rev", "applied"),)): {"state": auto_save},
            ("PATCH", "/revision/1", ()): {"state": "apply", "transition": {"issue": {}, "progress": ""}},
            ("PATCH", "/revision/applied", ()): {"state": "save", "transition": {"issue": {}, "progress": ""}},
        }

    def override(self, key, answer):
        self.overridden[key] = answer
        return self

    def __call__(self, method, path, params, body):
        key = (method, path, tuple(sorted((params or {}).items())))
        self.sent.append(key)
        if key in self.overridden:
            if key == REV_KEY and method == "GET":
                self.applied = self.revision  # the scripted state is the switch's word: the read-back agrees
            return 200, self.overridden[key]
        if key == ("POST", "/revision", ()):
            self.revision = _nvue.merge({}, self.applied)
        if key == ("PATCH", "/", (("rev", "1"),)):
            self.revision = _nvue.merge(self.revision, body)
            return 200, body
        if key == ("GET", "/", (("filled", "false"), ("rev", "applied"))):
            return 200, self.applied
        if key == ("GET", "/", (("filled", "false"), ("rev", "1"))):
            return 200, self.revision
        if key == DIFF_KEY:
            return 200, _nvue.tree_diff(self.applied, self.revision)
        if key == REV_KEY:
            state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
            if state == "down":
                raise SwitchUnreachable("the switch could not be reached over the NVUE REST API (GET "
                                        "/nvue_v1/revision/1): Could not connect: [Errno 111] Connection refused")
            if isinstance(state, int):
                return state, "<html><body><h1>502 Bad Gateway</h1></body></html>"
            if state in ("applied", "applied_and_saved"):
                self.applied = self.revision
            return 200, {"state": state, "transition": {"issue": {}, "progress": ""}}
        return 200, self.answers[key]

    def count(self, method, path):
        return sum(1 for m, p, _q in self.sent if (m, p) == (method, path))


DIFF_KEY = ("GET", "/", (("diff", "1"), ("rev", "applied")))
REV_KEY = ("GET", "/revision/1", ())
APPLIED_KEY = ("GET", "/", (("filled", "false"), ("rev", "applied")))


def run(exchange, **kwargs):
    kwargs.setdefault("sleep", lambda s: None)
    return configure(RestSwitch(exchange, name=NAME), MTU, **kwargs)


def test_the_scripted_exchange_applies_a_change_when_every_answer_is_known():
    exchange = Exchange(states=("apply", "applying", "applied_and_saved"))
    result = run(exchange)
    assert result["changed"] is True and result["state"] == "applied_and_saved" and result["saved"] is True
    assert exchange.count("PATCH", "/revision/applied") == 0  # auto-save saved it: no second save


@pytest.mark.parametrize("answer", [
    [{"change": MTU}],                                           # an element of another kind
    [{"set": MTU, "note": "x"}],                                 # set beside another key
    [{"set": "interface swp1 link mtu 9216"}],                  # a set that is not a tree
    [{}],                                                        # an empty element
    ["set"],                                                     # not objects
    "no changes",
    0,
    True,
])
def test_a_diff_of_an_unknown_shape_fails_naming_switch_and_request(answer):
    exchange = Exchange().override(DIFF_KEY, answer)
    with pytest.raises(NvueError) as err:
        run(exchange)
    assert err.value.msg.startswith("switch leaf07 GET /nvue_v1/?rev=applied&diff=1 answered ")
    assert "not a diff the collection knows" in err.value.msg
    assert exchange.count("PATCH", "/revision/1") == 0  # nothing applied


@pytest.mark.parametrize("answer", [[], {}, None])
def test_a_diff_that_says_no_change_while_the_revision_differs_fails(answer):
    exchange = Exchange().override(DIFF_KEY, answer)
    with pytest.raises(NvueError) as err:
        run(exchange)
    assert "switch leaf07: revision 1 and the applied configuration differ in" in err.value.msg
    assert "the switch's diff of them says no difference" in err.value.msg
    assert exchange.count("PATCH", "/revision/1") == 0


def test_a_diff_in_the_specification_s_shape_a_changed_tree_is_a_change():
    exchange = Exchange().override(DIFF_KEY, {"interface": {"swp1": {"link": {"mtu": 9216}}}})
    result = run(exchange)
    assert result["changed"] is True and result["state"] == "applied_and_saved"
    assert result["nvue_diff"] == [{"set": MTU}] and exchange.count("PATCH", "/revision/1") == 1


def test_a_diff_that_says_a_change_while_the_revision_holds_none_fails():
    exchange = Exchange().override(("GET", "/", (("filled", "false"), ("rev", "1"))),
                                   {"interface": {"swp1": {"link": {"mtu": 1500}}}})
    exchange.override(DIFF_KEY, [{"set": MTU}])
    with pytest.raises(NvueError, match="differ in nothing, but the switch's diff of them says"):
        run(exchange)


@pytest.mark.parametrize("states, words", [
    (("apply", "applied_pending_reboot"), "answered state 'applied_pending_reboot' for revision 1: not a state"),
    (("rebooting",), "answered state 'rebooting' for revision 1"),
])
def test_a_revision_state_the_core_does_not_know_fails_at_once(states, words):
    exchange = Exchange(states=states)
    ticks = iter(range(1000))
    with pytest.raises(NvueError) as err:
        run(exchange, timeout=50, clock=lambda: next(ticks))
    assert not isinstance(err.value, ApplyUnfinished)
    assert err.value.msg.startswith("switch leaf07 GET /nvue_v1/revision/1 ") and words in err.value.msg
    assert exchange.count("GET", "/revision/1") == len(states)  # not polled until the timeout


@pytest.mark.parametrize("answer", [
    {"transition": {"issue": {}}},          # no state
    {"state": 3},                           # not a word
    {"7": {"state": "applied"}},            # keyed by another revision
    [{"state": "applied"}],
    "applied",
    {"state": "applied", "transition": "done"},
])
def test_a_revision_answer_without_a_readable_state_fails(answer):
    exchange = Exchange().override(REV_KEY, answer)
    with pytest.raises(NvueError) as err:
        run(exchange)
    assert err.value.msg.startswith("switch leaf07 GET /nvue_v1/revision/1 answered ")


def test_a_revision_keyed_by_its_own_id_is_read():
    exchange = Exchange().override(REV_KEY, {"1": {"state": "applied_and_saved"}})
    assert run(exchange)["state"] == "applied_and_saved"


APPLY_KEY = ("PATCH", "/revision/1", ())


@pytest.mark.parametrize("answer, words", [
    ({"state": "pending"}, "answered state pending: the switch did not take the apply"),
    ({}, "answered {}: not a revision state"),
    ("ok", "answered \"ok\": not a revision state"),
    ({"state": "queued"}, "answered state 'queued' for revision 1"),
])
def test_an_answer_to_the_apply_that_is_not_an_apply_fails(answer, words):
    exchange = Exchange().override(APPLY_KEY, answer)
    with pytest.raises(NvueError) as err:
        run(exchange)
    assert err.value.msg.startswith("switch leaf07 PATCH /nvue_v1/revision/1") and words in err.value.msg
    assert exchange.count("GET", "/revision/1") == 0


@pytest.mark.parametrize("answer", [
    {}, [], "1", {"1": {"state": "applied"}}, {"1": {"state": "pending"}, "2": {"state": "pending"}},
    {"rev 1; reboot": {"state": "pending"}}, {"1": "pending"}])
def test_a_new_revision_answer_that_is_not_one_pending_revision_fails(answer):
    exchange = Exchange().override(("POST", "/revision", ()), answer)
    with pytest.raises(NvueError) as err:
        run(exchange)
    assert err.value.msg.startswith("switch leaf07 POST /nvue_v1/revision answered ")
    assert exchange.sent == [APPLIED_KEY, ("POST", "/revision", ())]  # nothing staged


@pytest.mark.parametrize("answer", [{}, {"state": "apply"}, "saved", None])
def test_a_save_answer_that_is_not_a_save_fails(answer):
    exchange = Exchange(states=("applied",), auto_save="disabled")
    exchange.override(("PATCH", "/revision/applied", ()), answer)
    with pytest.raises(NvueError) as err:
        run(exchange)
    assert err.value.msg.startswith("switch leaf07 PATCH /nvue_v1/revision/applied (state save) answered ")


@pytest.mark.parametrize("answer", [{"state": "maybe"}, {"enable": "yes"}, "enabled", [], {"state": True},
                                    {"state": "enabled", "enable": "off"}, {"auto": "on"}])
def test_an_auto_save_setting_the_core_does_not_know_fails_before_the_apply(answer):
    exchange = Exchange().override(("GET", "/system/config/auto-save", (("rev", "applied"),)), answer)
    with pytest.raises(NvueError) as err:
        run(exchange)
    assert err.value.msg.startswith("switch leaf07 GET /nvue_v1/system/config/auto-save?rev=applied answered ")
    assert exchange.count("PATCH", "/revision/1") == 0


@pytest.mark.parametrize("answer", [[], "interface swp1", 42])
@pytest.mark.parametrize("check_mode", [False, True])
def test_a_configuration_that_is_not_a_tree_fails(answer, check_mode):
    exchange = Exchange().override(APPLIED_KEY, answer)
    with pytest.raises(NvueError) as err:
        run(exchange, check_mode=check_mode)
    assert err.value.msg.startswith("switch leaf07 answered ") and "not an NVUE tree" in err.value.msg
    assert exchange.sent == [APPLIED_KEY]


# ---------------------------------------------------------------- applies that end honestly

def test_a_poll_that_meets_a_502_or_no_answer_reads_the_state_again():
    exchange = Exchange(states=("apply", 502, "down", "applying", "applied_and_saved"))
    result = run(exchange)
    assert result["state"] == "applied_and_saved" and result["saved"] is True
    assert exchange.count("GET", "/revision/1") == 5


def test_exactly_the_retries_without_an_answer_still_end_in_success():
    exchange = Exchange(states=("apply", "down", 502, "down", "applied_and_saved"))
    assert run(exchange)["state"] == "applied_and_saved"  # 3 in a row = UNANSWERED_RETRIES


def test_one_poll_more_without_an_answer_names_the_revision_to_watch():
    exchange = Exchange(states=("applying", "down", 502, "down", 502, "applied_and_saved"))
    with pytest.raises(ApplyUnfinished) as err:
        run(exchange)
    assert "switch leaf07 stopped answering while applying revision 1 (4 polls in a row" in err.value.msg
    assert "last state read: applying" in err.value.msg and "watch revision 1" in err.value.msg
    assert err.value.fail_kwargs()["revision"] == "1" and err.value.fail_kwargs()["state"] == "applying"
    assert exchange.count("PATCH", "/revision/applied") == 0


def test_a_timeout_names_the_revision_still_applying():
    ticks = iter(range(1000))
    exchange = Exchange(states=("applying",))
    with pytest.raises(ApplyUnfinished) as err:
        run(exchange, timeout=5, interval=1, clock=lambda: next(ticks))
    assert "revision 1 is still in state 'applying' after 5 s" in err.value.msg
    assert "may still complete it - watch revision 1" in err.value.msg
    assert err.value.revision == "1" and err.value.state == "applying" and err.value.parameter == "timeout"


def test_applied_on_an_auto_save_switch_is_waited_out_and_not_saved_again():
    exchange = Exchange(states=("apply", "applied", "applied", "applied_and_saved"), auto_save="enabled")
    result = run(exchange)
    assert result["state"] == "applied_and_saved" and result["saved"] is True
    assert exchange.count("GET", "/revision/1") == 4 and exchange.count("PATCH", "/revision/applied") == 0


def test_applied_on_an_auto_save_switch_that_never_saves_fails_without_a_second_save():
    ticks = iter(range(1000))
    exchange = Exchange(states=("applied",), auto_save="enabled")
    with pytest.raises(ApplyUnfinished) as err:
        run(exchange, timeout=3, interval=1, clock=lambda: next(ticks))
    assert "auto-save had not saved it after 3 s" in err.value.msg and err.value.state == "applied"
    assert exchange.count("PATCH", "/revision/applied") == 0


@pytest.mark.parametrize("answer", [{"state": "disabled"}, {}])
def test_applied_without_auto_save_is_the_end_and_saved_once(answer):
    exchange = Exchange(states=("applied", "applied_and_saved")).override(
        ("GET", "/system/config/auto-save", (("rev", "applied"),)), answer)
    result = run(exchange)
    assert result["state"] == "applied" and result["saved"] is True
    assert exchange.count("PATCH", "/revision/applied") == 1 and exchange.count("GET", "/revision/1") == 1


@pytest.mark.parametrize("answer, on", [({"state": "enabled"}, True), ({"state": "disabled"}, False),
                                        ({"enable": "on"}, True), ({"enable": "off"}, False),
                                        ({"state": "enabled", "enable": "on"}, True)])
def test_auto_save_is_read_in_the_spelling_of_either_release(answer, on):
    switch = RestSwitch(lambda m, p, q, b: (200, answer), name=NAME)
    assert switch.auto_save() is on


def test_a_404_for_auto_save_is_a_release_without_it():
    switch = RestSwitch(lambda m, p, q, b: (404, {"message": "not found"}), name=NAME)
    assert switch.auto_save() is False


# ---------------------------------------------------------------- secrets

SECRET_TREE = {
    "system": {"aaa": {"user": {"ops": {"hashed-password": "$6$rounds=5000$planted", "role": "system-admin"}},
                       "tacacs": {"server": {"1": {"secret": "tacacs-planted", "host": "198.18.9.9"}}}}},
    "service": {"snmp-server": {"readonly-community": {"community-planted": {"access": {"any": {}}}}}}}


def test_secrets_are_masked_in_trees_and_diffs_and_found_for_no_log():
    masked = _nvue.mask([{"set": SECRET_TREE}, {"unset": {"system": {"aaa": {"user": {"old": {"password": None}}}}}}])
    text = repr(masked)
    assert "planted" not in text and text.count("********") == 3
    assert masked[0]["set"]["system"]["aaa"]["user"]["ops"]["role"] == "system-admin"
    assert masked[0]["set"]["system"]["aaa"]["tacacs"]["server"]["1"]["host"] == "198.18.9.9"
    assert masked[1] == {"unset": {"system": {"aaa": {"user": {"old": {"password": None}}}}}}
    assert _nvue.secrets_in(SECRET_TREE) == {"$6$rounds=5000$planted", "tacacs-planted", "community-planted"}
    assert _nvue.secrets_in(MTU) == set()


@pytest.mark.parametrize("check_mode", [False, True])
def test_a_secret_in_the_config_is_masked_in_every_part_of_the_result(check_mode):
    config = {"system": {"aaa": {"user": {"ops": {"hashed-password": "$6$planted"}}}}}
    exchange = Exchange(states=("applied_and_saved",))
    exchange.applied = {"system": {"aaa": {"user": {"ops": {"hashed-password": "$6$old-planted"}}}}}
    result = configure(RestSwitch(exchange, name=NAME), config, check_mode=check_mode, sleep=lambda s: None)
    assert "planted" not in repr(result) and result["changed"] is True
    assert result["after"] == {"system": {"aaa": {"user": {"ops": {"hashed-password": "********"}}}}}
    assert result["before"] == result["after"]
    assert result["nvue_diff"] == [{"set": result["after"]}]


# ---------------------------------------------------------------- the CLI transport reads the same way

@pytest.mark.parametrize("printed", ['[{"change": {}}]', '"x"', '[{"set": 5}]'])
def test_the_cli_transport_fails_on_a_diff_of_an_unknown_shape(printed):
    def run_nv(command):
        if isinstance(command, list) and command[:3] == ["nv", "config", "diff"]:
            return 0, printed, ""
        if isinstance(command, list) and command[:3] == ["nv", "config", "show"]:
            return 0, '[{"set": {"interface": {"swp1": {"link": {"mtu": %d}}}}}]' % (
                9216 if "--rev" in command else 1500), ""
        if isinstance(command, list) and command[:3] == ["nv", "config", "detach"]:
            return 0, "", ""
        return 0, "created [rev_id: 4]", ""
    with pytest.raises(NvueError) as err:
        configure(CliSwitch(run_nv, name=NAME), MTU)
    assert err.value.msg.startswith("switch leaf07 `nv config diff applied 4 -o json` answered ")


@pytest.mark.parametrize("doc", [[{"set": MTU}, {"unset": {}}], [{"header": {}}, "set"], 7])
def test_the_cli_transport_fails_on_a_configuration_of_an_unknown_shape(doc):
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_cli import config_tree
    with pytest.raises(NvueError, match="printed"):
        config_tree(doc)
    assert config_tree([{"header": {"model": "x"}}, {"set": MTU}]) == MTU


class Actions:
    """A switch whose action ``7`` answers the given states, one per poll."""
    name = "leaf9"

    def __init__(self, states):
        self.states = list(states)

    def action(self, aid):
        assert aid == "7"
        return {"state": self.states.pop(0), "status": "fetching"}


@pytest.mark.parametrize("states", [
    ["start", "running", "action_success"],                        # the specification's spelling
    ["inactive", "action_running", "action_running", "action_success"],   # nv-rms' spelling
])
def test_an_action_on_its_way_in_either_spelling_is_waited_for(states):
    switch = Actions(states)
    assert wait_action(switch, "7", "the fetch", timeout=60, interval=0, sleep=lambda s: None)["state"] == \
        "action_success"
    assert switch.states == []


@pytest.mark.parametrize("state", ["queued", "", None, "Running", "action_succeeded"])
def test_an_action_state_the_wait_does_not_know_fails_at_once(state):
    switch = Actions(["start", state, "action_success"])
    with pytest.raises(NvueError, match=r"leaf9: the fetch: GET /nvue_v1/action/7 answered state .* which is none of "
                                        r"inactive, start, running, action_running, action_success, action_error, "
                                        r"action_failed: not understood"):
        wait_action(switch, "7", "the fetch", timeout=60, interval=0, sleep=lambda s: None)
    assert switch.states == ["action_success"]   # not polled again
