# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CliSwitch, the core's second transport, against the emulator's real ``nv`` run as a subprocess (what the switch's
shell runs): the same judgement as over REST (a compliant rerun applies nothing, check mode stages, diffs and
detaches, the switch's refusals in its own words), and every value that reaches the shell either quoted or refused."""
import os
import subprocess

import pytest

from nvue_helpers import BIN, rest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue import (
    NvueError, SwitchUnreachable, configure, gather)
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_cli import (
    DELIMITER, CliSwitch, command_text, heredoc)

CONFIG = {"interface": {"swp1": {"link": {"mtu": 9000}, "description": "srv-a:enp24s0np0 -> leaf01:swp1"}},
          "qos": {"roce": {"enable": "on", "mode": "lossless"}}}


def local(sw, commands=None):
    """A CliSwitch whose ``run`` is the emulator's nv (an argv) or bash (a shell text) on this machine, in the
    environment a switch login gives; ``commands`` collects what was run."""
    env = dict(os.environ, NVUESIM_STATE=str(sw.dir), NVUESIM_USER="cumulus",
               PATH="%s:%s" % (BIN, os.environ.get("PATH", "/usr/bin:/bin")))

    def run(command):
        if commands is not None:
            commands.append(command)
        argv = command if isinstance(command, list) else ["bash", "-c", command]
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)
        return proc.returncode, proc.stdout, proc.stderr
    return CliSwitch(run, name="switch %s" % sw.hostname)


def changes(sw, mark):
    return [e["event"] for e in sw.since(mark) if e["event"] != "read"]


def test_configure_applies_once_then_a_rerun_applies_nothing(switch):
    commands = []
    cli = local(switch, commands)
    mark = switch.mark()
    done = configure(cli, CONFIG, interval=0.01)
    assert done["changed"] and done["state"] == "applied_and_saved" and done["saved"]
    applies = switch.since(mark, "apply")
    assert [(e["client"], e["rev"]) for e in applies] == [("cli", done["revision"])]   # the id nv named
    assert switch.get("/interface/swp1/link/mtu?rev=applied") == 9000
    assert ["nv", "config", "apply", "-y"] in commands
    staged = [c for c in commands if isinstance(c, str)]
    assert len(staged) == 1 and "nv config patch /tmp/gpufabric-nvue-" in staged[0]

    mark = switch.mark()
    again = configure(cli, CONFIG, interval=0.01)
    assert again["changed"] is False and again["state"] is None and again["nvue_diff"] == []
    assert switch.since(mark, "apply") == []
    assert again["revision"] is None and switch.since(mark, "revision") == []   # a compliant rerun stages nothing
    assert not any(v["state"] == "pending" for v in switch.get("/revision").values())


def test_the_results_are_those_of_rest(make_switch):
    """One change on two identical switches, one over nv and one over REST: the same result, key by key."""
    over_cli, over_rest = make_switch("leaf01"), make_switch("leaf01")
    cli_result = configure(local(over_cli), CONFIG, interval=0.01)
    rest_result = configure(rest(over_rest), CONFIG, interval=0.01)
    for key in ("changed", "state", "saved", "nvue_diff", "before", "after"):
        assert cli_result[key] == rest_result[key], key
    assert over_cli.get("/?rev=applied&filled=false") == over_rest.get("/?rev=applied&filled=false")
    assert gather(local(over_cli)) == gather(rest(over_rest))
    assert gather(local(over_cli), ["config"]) == gather(rest(over_rest), ["config"])


def test_check_mode_predicts_without_a_revision(switch):
    before = switch.get("/?rev=applied&filled=false")
    mark = switch.mark()
    predicted = configure(local(switch), CONFIG, check_mode=True, interval=0.01)
    assert predicted["changed"] is True and predicted["state"] is None
    assert predicted["nvue_diff"][0]["set"]["interface"]["swp1"]["link"]["mtu"] == 9000
    assert predicted["after"]["interface"]["swp1"]["link"]["mtu"] == 9000
    assert changes(switch, mark) == []      # read only: nothing created, staged or applied
    assert switch.state()["counters"]["applies"] == 0
    assert switch.get("/?rev=applied&filled=false") == before
    done = configure(local(switch), CONFIG, interval=0.01)
    assert done["nvue_diff"] == predicted["nvue_diff"] and done["after"] == predicted["after"]


def test_unset_and_replace_are_nv_unset(switch):
    configure(local(switch), CONFIG, interval=0.01)
    commands = []
    done = configure(local(switch, commands), {"qos": {"roce": {"enable": "on"}}}, replace=["/qos/roce"],
                     unset=["/interface/swp1/description"], interval=0.01)
    assert ["nv", "unset", "qos", "roce"] in commands and ["nv", "unset", "interface", "swp1", "description"] in commands
    assert done["changed"] and switch.get("/qos/roce?rev=applied&filled=false") == {"enable": "on"}
    assert "description" not in switch.get("/interface/swp1?rev=applied&filled=false")


def test_an_invalid_value_is_refused_in_the_switch_s_words(switch):
    mark = switch.mark()
    with pytest.raises(NvueError) as err:    # refused at apply: the schema takes it, the switch's rule does not
        configure(local(switch), {"router": {"bgp": {"enable": "on", "autonomous-system": 65101}}}, interval=0.01)
    assert "switch leaf01 refused revision " in err.value.msg
    assert "state invalid (Invalid config): Config invalid at router.bgp.enable: BGP requires router-id to be set " \
        "globally or in the VRF." in err.value.msg and "nothing was applied" in err.value.msg
    assert err.value.parameter == "router.bgp.enable"
    assert [e["event"] for e in switch.since(mark) if e["event"] in ("applied", "applied_and_saved")] == []


def test_a_value_outside_the_schema_is_refused_when_staged_in_the_switch_s_words(switch):
    mark = switch.mark()
    with pytest.raises(NvueError) as err:
        configure(local(switch), {"interface": {"swp2": {"link": {"mtu": 100}}}}, interval=0.01)
    assert "interface.swp2.link.mtu: 100 is less than the minimum of 552" in err.value.msg, err.value.msg
    assert [e["event"] for e in switch.since(mark) if e["event"] in ("applied", "applied_and_saved")] == []
    assert "mtu" not in switch.get("/interface/swp2/link?rev=applied&filled=false")


def test_a_warning_without_assume_yes_is_ays_fail_and_applies_nothing(make_switch):
    sw = make_switch()          # the factory "first NVUE apply" warning is still pending
    with pytest.raises(NvueError) as err:
        configure(local(sw), CONFIG, assume_yes=False, interval=0.01)
    assert "state ays_fail" in err.value.msg and "needed a yes/no answer" in err.value.msg
    assert sw.events("apply") == []


@pytest.mark.parametrize("how", ["stopped", "fault"])
def test_nvued_down_is_unreachable_naming_the_switch_s_words(switch, how):
    if how == "stopped":
        switch.stop()
    else:
        switch.admin("fault", "set", "nvued_down")
    with pytest.raises(SwitchUnreachable) as err:
        configure(local(switch), CONFIG, interval=0.01)
    assert err.value.msg.startswith("switch leaf01 `nv config show -o json --applied`: rc 1: the switch says ")
    assert "Error: Could not connect to nvued." in err.value.msg and "systemctl status nvued" in err.value.msg


HOSTILE = ["it's \"quoted\"", "$(touch CANARY)", "`touch CANARY`", "a; touch CANARY #", "\\' ; touch CANARY ; '",
           DELIMITER, DELIMITER + " ) ; touch CANARY", "$HOME ${PATH} !! !$ <(touch CANARY)"]


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_value_arrives_as_it_is_and_runs_nothing(switch, tmp_path, value, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = configure(local(switch), {"interface": {"swp3": {"description": value}}}, interval=0.01)
    assert done["changed"]
    assert switch.get("/interface/swp3/description?rev=applied") == value
    assert not (tmp_path / "CANARY").exists()


@pytest.mark.parametrize("value", HOSTILE + ["http://mirror.example/a b;c|d&e>f<g*?[h]~i{j}'k\"l#m"])
def test_an_argv_reaches_the_switch_s_shell_word_for_word(tmp_path, value, monkeypatch):
    """What the cliconf plugin hands to bash for an argv (a URL of nv action fetch, say): each word quoted."""
    monkeypatch.chdir(tmp_path)
    proc = subprocess.run(["bash", "-c", command_text(["printf", "%s\\n", "nv", value])], capture_output=True,
                          text=True, check=True)
    assert proc.stdout == "nv\n%s\n" % value
    assert not (tmp_path / "CANARY").exists()


def test_a_newline_or_a_shell_word_is_refused_before_anything_runs(switch):
    commands = []
    cli = local(switch, commands)
    with pytest.raises(NvueError) as err:
        configure(cli, {"interface": {"swp3": {"description": "one\ntouch CANARY"}}})
    assert "has characters NVUE values may not hold" in err.value.msg
    with pytest.raises(NvueError) as err:
        configure(cli, {"interface": {"swp3;touch CANARY": {"description": "x"}}})
    assert "is not an NVUE key" in err.value.msg
    assert commands == []
    with pytest.raises(NvueError) as err:
        cli.clear("pending", ["interface", "$(touch CANARY)"])
    assert err.value.parameter == "path" and commands == []


def test_the_heredoc_delimiter_never_occurs_in_the_data():
    text = heredoc("/tmp/gpufabric-nvue-0123456789abcdef.json", '[{"set": {"d": "%s %s_1"}}]' % (DELIMITER, DELIMITER))
    first = text.splitlines()[0]
    assert first.endswith("<<'%s_2'" % DELIMITER)
    assert text.splitlines()[2] == "%s_2" % DELIMITER
    with pytest.raises(NvueError):
        heredoc("/tmp/elsewhere.json", "{}")
    with pytest.raises(NvueError):
        heredoc("/tmp/gpufabric-nvue-0123456789abcdef.json", "{\"d\": \"\x1b\"}")


def test_an_output_nv_does_not_print_is_an_error_quoting_it(switch):
    inner = local(switch)

    def run(command):
        if command == ["nv", "config", "apply", "-y"]:
            return 0, "applied, probably\n", ""
        return inner._run(command)  # pylint: disable=protected-access
    with pytest.raises(NvueError) as err:
        configure(CliSwitch(run, name="switch leaf01"), CONFIG, interval=0.01)
    assert err.value.msg == ("switch leaf01 `nv config apply -y` printed 'applied, probably', not applied [rev_id: N], "
                             "applied_and_saved [rev_id: N] or Error: ...")


def test_the_image_upgrade_over_nv(switch, tmp_path):
    """The one image core over the CLI: fetch, install, boot-next, reboot (nv cannot reach nvued meanwhile), then
    the new release."""
    import hashlib
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_image import upgrade
    image = tmp_path / "cumulus-linux-5.11.0-mlx-amd64.bin"
    switch.admin("mkimage", "--release", "5.11.0", "-o", str(image))
    done = upgrade(local(switch), "5.11.0", image.as_uri(), hashlib.sha256(image.read_bytes()).hexdigest(),
                   interval=0.1, reboot_timeout=60, action_timeout=60)
    assert done["changed"] and done["release"] == "5.11.0" and done["reboots"] == 1
    assert done["actions"] == ["fetch", "install", "boot-next", "reboot"]
    assert [e["event"] for e in switch.events() if e["client"] == "cli" and e["event"] in (
        "fetch", "install", "boot-next", "reboot")] == ["fetch", "install", "boot-next", "reboot"]
    assert switch.get("/system/version")["product-release"] == "5.11.0"


@pytest.mark.parametrize("printed", ["", "\n", "{}\n", "null\n"])
def test_an_empty_diff_in_any_of_its_spellings_applies_nothing(switch, printed):
    configure(local(switch), CONFIG, interval=0.01)
    inner = local(switch)

    def run(command):
        if command[:3] == ["nv", "config", "diff"]:
            return 0, printed, ""
        return inner._run(command)  # pylint: disable=protected-access
    mark = switch.mark()
    again = configure(CliSwitch(run, name="switch leaf01"), CONFIG, interval=0.01)
    assert again["changed"] is False and again["nvue_diff"] == [] and switch.since(mark, "apply") == []
