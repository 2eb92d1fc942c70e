# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvue_config and nvue_info as a playbook runs them over SSH: ansible.netcommon.network_cli with paramiko and the
collection's nvue cliconf and terminal plugins, to an sshd on 127.0.0.1 whose login shell runs the emulator's nv -
the same results as over httpapi (test_nvue_modules.py). Skipped only when OpenSSH's sshd is not installed."""
import pytest
from _roleplay import run
from nvue_ssh import ENVIRON, SshLogin
from test_nvue_modules import CONFIG, leaf, playbook


@pytest.fixture
def ssh(tmp_path):
    made = []

    def make(sw):
        login = SshLogin(tmp_path / ("ssh-%d" % len(made)), sw, hostname=sw.hostname)
        made.append(login)
        return login.start()
    yield make
    for login in made:
        login.stop()


def over_ssh(login):
    return {login.sw.hostname: login.vars()}


def test_nvue_config_over_ssh_is_what_httpapi_does(tmp_path, make_switch, ssh):
    """The same check, run and rerun on two identical switches, one over network_cli and one over httpapi."""
    over_cli, over_rest = make_switch("leaf01"), make_switch("leaf01")
    login = ssh(over_cli)
    results = {}
    for name, hosts, sw in (("cli", over_ssh(login), over_cli), ("rest", leaf(over_rest), over_rest)):
        work = tmp_path / name
        work.mkdir()
        mark = sw.mark()
        check = run(work, hosts, playbook("nvue_config", config=CONFIG), check=True, args=["--diff"], group="leaves",
                    environ=ENVIRON)
        assert check.ok, check
        assert sw.since(mark, "apply") == []                        # check mode never applies
        real = run(work, hosts, playbook("nvue_config", config=CONFIG), args=["--diff"], group="leaves",
                   environ=ENVIRON)
        assert real.ok, real
        assert len(sw.since(mark, "apply")) == 1
        mark = sw.mark()
        again = run(work, hosts, playbook("nvue_config", config=CONFIG), group="leaves", environ=ENVIRON)
        assert again.ok, again
        assert sw.since(mark, "apply") == []
        results[name] = [r.task("the task", "leaf01") for r in (check, real, again)]
    for cli, rest in zip(results["cli"], results["rest"]):
        for key in ("changed", "state", "saved", "nvue_diff", "diff"):
            if key == "diff":
                cli_diff, rest_diff = dict(cli.get(key) or {}), dict(rest.get(key) or {})
                cli_diff.pop("after_header", None), rest_diff.pop("after_header", None)   # the revision ids
                assert cli_diff == rest_diff
            else:
                assert cli.get(key) == rest.get(key), key
    check, real, again = results["cli"]
    assert check["changed"] and check["state"] is None
    assert real["changed"] and real["state"] == "applied_and_saved" and real["nvue_diff"] == check["nvue_diff"]
    assert again["changed"] is False
    assert real["revision"] == over_cli.events("apply")[-1]["rev"]  # the id nv named
    assert [e["client"] for e in over_cli.events("apply")] == ["cli"]   # nv on the switch, not REST
    assert over_cli.get("/interface/swp1/link/mtu?rev=applied") == 9000
    assert over_cli.get("/?rev=applied&filled=false") == over_rest.get("/?rev=applied&filled=false")


def test_nvue_config_over_ssh_fails_with_the_switch_s_words(tmp_path, switch, ssh):
    login = ssh(switch)
    bgp = {"router": {"bgp": {"enable": "on", "autonomous-system": 65101}}}   # no router-id: refused at apply
    ran = run(tmp_path, over_ssh(login), playbook("nvue_config", config=bgp), group="leaves", environ=ENVIRON)
    assert not ran.ok
    assert "switch 127.0.0.1 refused revision" in ran.failures()["leaf01"]
    assert "Config invalid at router.bgp.enable" in ran.failures()["leaf01"]


def test_nvue_config_over_ssh_with_nvued_down(tmp_path, switch, ssh):
    login = ssh(switch)
    switch.stop()
    ran = run(tmp_path, over_ssh(login), playbook("nvue_config", config=CONFIG), group="leaves", environ=ENVIRON)
    assert not ran.ok
    assert ("switch 127.0.0.1 `nv config show -o json --applied`: rc 1: the switch says 'Error: Could not connect to "
            "nvued.'") in ran.failures()["leaf01"]


def test_nvue_info_over_ssh_is_what_httpapi_reads(tmp_path, switch, ssh):
    switch.admin("fault", "set", "port_down", "swp3")
    login = ssh(switch)
    over = {}
    for name, hosts in (("cli", over_ssh(login)), ("rest", leaf(switch))):
        work = tmp_path / name
        work.mkdir()
        ran = run(work, hosts, playbook("nvue_info"), group="leaves", environ=ENVIRON)
        assert ran.ok, ran
        over[name] = {k: v for k, v in ran.task("the task", "leaf01").items()
                      if not k.startswith("_") and k not in ("deprecations", "warnings")}
    assert over["cli"]["system"]["release"] == "5.9.1" and over["cli"]["interfaces"]["swp3"]["oper_status"] == "down"
    assert over["cli"] == over["rest"]


def test_nvue_image_over_ssh_upgrades_with_one_reboot(tmp_path, switch, ssh):
    """The emulator's reboot closes nvued's socket (nv: Could not connect to nvued.) and keeps sshd: the task waits
    through it as over REST. A real switch's reboot also closes the SSH session (see the module's notes)."""
    import hashlib
    login = ssh(switch)
    image = tmp_path / "cumulus-linux-5.11.0-mlx-amd64.bin"
    switch.admin("mkimage", "--release", "5.11.0", "-o", str(image))
    args = dict(release="5.11.0", url=image.as_uri(), sha256=hashlib.sha256(image.read_bytes()).hexdigest(),
                poll_interval=0.2, reboot_timeout=60, action_timeout=60)
    ran = run(tmp_path, over_ssh(login), playbook("nvue_image", **args), group="leaves", environ=ENVIRON)
    assert ran.ok, ran
    done = ran.task("the task", "leaf01")
    assert done["changed"] and done["release_before"] == "5.9.1" and done["release"] == "5.11.0"
    assert done["actions"] == ["fetch", "install", "boot-next", "reboot"] and done["reboots"] == 1
    assert [e["event"] for e in switch.events() if e["client"] == "cli" and e["event"] in (
        "fetch", "install", "boot-next", "reboot")] == ["fetch", "install", "boot-next", "reboot"]
    assert switch.get("/system/version")["product-release"] == "5.11.0"


def test_a_connection_without_the_nvue_plugins_is_named(tmp_path):
    ran = run(tmp_path, {"leaf01": {}}, playbook("nvue_info"), group="leaves")      # ansible_connection: local
    assert not ran.ok
    assert ran.failures()["leaf01"].startswith("this module talks to a switch over ansible.netcommon.httpapi (the "
                                               "NVUE REST API) or ansible.netcommon.network_cli (nv over SSH)")
