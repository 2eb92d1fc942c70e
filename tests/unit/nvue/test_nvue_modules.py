# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvue_config and nvue_info as a playbook runs them: ansible.netcommon.httpapi with the collection's nvue httpapi
plugin, against the NVUE emulator on 127.0.0.1 - check mode applies nothing and predicts the run, a rerun applies
nothing, the diff is Ansible's, the switch's refusals reach the task."""
import json

import yaml
from _roleplay import run
from nvue_helpers import PASSWORD

CONFIG = {"interface": {"swp1": {"link": {"mtu": 9000}, "description": "srv-a:enp24s0np0 -> leaf01:swp1"}},
          "qos": {"roce": {"enable": "on", "mode": "lossless"}}}


def leaf(sw, password=PASSWORD):
    return {sw.hostname: sw.httpapi_vars(password)}


def playbook(module, **args):
    return yaml.safe_dump([{"hosts": "leaves", "gather_facts": False,
                            "tasks": [{"name": "the task", "gpufabric.mlnx." + module: args, "register": "out"}]}])


def test_check_run_rerun(tmp_path, switch):
    hosts = leaf(switch)
    mark = switch.mark()
    check = run(tmp_path, hosts, playbook("nvue_config", config=CONFIG), check=True, args=["--diff"], group="leaves")
    assert check.ok, check
    predicted = check.task("the task", "leaf01")
    assert predicted["changed"] is True and predicted["state"] is None
    assert switch.since(mark, "apply") == []  # check mode never applies
    assert predicted["diff"]["after"]["interface"]["swp1"]["link"]["mtu"] == 9000
    assert predicted["diff"]["after_header"] == "predicted" and predicted["revision"] is None  # no revision made

    real = run(tmp_path, hosts, playbook("nvue_config", config=CONFIG), args=["--diff"], group="leaves")
    assert real.ok, real
    done = real.task("the task", "leaf01")
    assert done["changed"] and done["state"] == "applied_and_saved" and done["nvue_diff"] == predicted["nvue_diff"]
    assert len(switch.since(mark, "apply")) == 1

    mark = switch.mark()
    again = run(tmp_path, hosts, playbook("nvue_config", config=CONFIG), group="leaves")
    assert again.ok and again.task("the task", "leaf01")["changed"] is False
    assert switch.since(mark, "apply") == []


def test_an_invalid_value_fails_the_task_with_the_switch_s_words(tmp_path, switch):
    ran = run(tmp_path, leaf(switch), playbook("nvue_config", config={"interface": {"swp2": {"link": {"mtu": 100}}}}),
              group="leaves")
    assert not ran.ok
    assert "interface.swp2.link.mtu: 100 is less than the minimum of 552" in ran.failures()["leaf01"]   # staged


def test_bad_input_fails_before_anything_is_sent(tmp_path, switch):
    mark = switch.mark()
    ran = run(tmp_path, leaf(switch), playbook("nvue_config", config={"interface": [{"id": "swp1"}]}), group="leaves")
    assert not ran.ok and "NVUE collections are objects keyed by id" in ran.failures()["leaf01"]
    assert switch.since(mark, "revision") == []


def test_the_403_persona_reaches_the_task(tmp_path, make_switch):
    sw = make_switch(extra=("--persona", "cl56-default-password"), password=None)
    ran = run(tmp_path, leaf(sw, password="cumulus"), playbook("nvue_info"), group="leaves")
    assert not ran.ok and "default password" in ran.failures()["leaf01"]


def test_nvue_info(tmp_path, switch):
    switch.admin("fault", "set", "port_down", "swp3")
    ran = run(tmp_path, leaf(switch), playbook("nvue_info", gather=["system", "interfaces"]), group="leaves")
    assert ran.ok, ran
    out = ran.task("the task", "leaf01")
    assert out["system"]["release"] == "5.9.1" and out["interfaces"]["swp3"]["oper_status"] == "down"
    assert "revisions" not in out
    json.dumps(out)  # plain data


def test_nvue_image_check_then_a_real_upgrade_with_one_reboot_then_a_rerun(tmp_path, switch):
    import hashlib
    name = "cumulus-linux-5.11.0-mlx-amd64.bin"
    image = tmp_path / "www" / name
    image.parent.mkdir()
    switch.admin("mkimage", "--release", "5.11.0", "-o", str(image))
    args = dict(release="5.11.0", url=image.as_uri(), sha256=hashlib.sha256(image.read_bytes()).hexdigest(),
                poll_interval=0.1, reboot_timeout=60, action_timeout=60)
    hosts = leaf(switch)
    mark = switch.mark()
    check = run(tmp_path, hosts, playbook("nvue_image", **args), check=True, group="leaves")
    assert check.ok, check
    predicted = check.task("the task", "leaf01")
    assert predicted["changed"] is True and predicted["actions"] == ["fetch", "install", "boot-next", "reboot"]
    assert [e["event"] for e in switch.since(mark) if e["event"] != "read"] == []      # check mode sends no change

    real = run(tmp_path, hosts, playbook("nvue_image", **args), group="leaves")
    assert real.ok, real
    done = real.task("the task", "leaf01")
    assert done["changed"] and done["release_before"] == "5.9.1" and done["release"] == "5.11.0"
    assert done["actions"] == predicted["actions"] and done["reboots"] == 1 and done["sha256_verified"] is True
    assert len(switch.since(mark, "install")) == 1 and len(switch.since(mark, "reboot")) == 1
    assert switch.get("/system/version")["product-release"] == "5.11.0"

    mark = switch.mark()
    again = run(tmp_path, hosts, playbook("nvue_image", **args), group="leaves")
    assert again.ok and again.task("the task", "leaf01")["changed"] is False
    assert [e["event"] for e in switch.since(mark) if e["event"] != "read"] == []


def test_nvue_image_refusal_reaches_the_task(tmp_path, make_switch):
    sw = make_switch(release="5.12.0")
    ran = run(tmp_path, leaf(sw), playbook("nvue_image", release="5.11.0", sha256="ab" * 32,
                                           url="http://mirror.example/cumulus-linux-5.11.0-mlx-amd64.bin"),
              group="leaves")
    assert not ran.ok
    assert "switch 127.0.0.1: downgrade from 5.12.0 to 5.11.0 refused" in ran.failures()["leaf01"]


def test_nvue_image_a_switch_that_does_not_come_back_is_named_with_the_seconds(tmp_path, switch):
    """The refused connections of a rebooting switch reach the core as SwitchUnreachable through the httpapi
    connection: the task fails on reboot_timeout, not on a connection error."""
    import hashlib
    image = tmp_path / "cumulus-linux-5.11.0-mlx-amd64.bin"
    switch.admin("mkimage", "--release", "5.11.0", "-o", str(image))
    switch.admin("fault", "set", "reboot_slow", "60")
    ran = run(tmp_path, leaf(switch), playbook("nvue_image", release="5.11.0", url=image.as_uri(),
                                               sha256=hashlib.sha256(image.read_bytes()).hexdigest(),
                                               poll_interval=0.2, reboot_timeout=3), group="leaves")
    assert not ran.ok
    assert "switch 127.0.0.1 did not come back within reboot_timeout 3 s after the reboot (it stopped answering" \
        in ran.failures()["leaf01"]


# ---------------------------------------------------------------- the action: the module in the worker

def test_the_module_runs_in_the_worker_and_no_persistent_connection_is_started(tmp_path, switch):
    # ansible-core would start ansible-connection for an httpapi host and leave its socket in the control path dir
    sockets = tmp_path / "pc"
    sockets.mkdir()
    mark = switch.mark()
    ran = run(tmp_path, leaf(switch), playbook("nvue_info", gather=["system"]), group="leaves",
              environ={"ANSIBLE_PERSISTENT_CONTROL_PATH_DIR": str(sockets)})
    assert ran.ok, ran
    assert ran.task("the task", "leaf01")["system"]["release"] == "5.9.1"
    assert list(sockets.iterdir()) == []
    assert [e["path"] for e in switch.since(mark, "read")] == ["/system/version"]  # it did talk to the switch


def test_another_connection_or_async_is_refused_naming_what_it_needs(tmp_path, switch):
    local = {"leaf01": dict(leaf(switch)["leaf01"], ansible_connection="local")}
    ran = run(tmp_path, local, playbook("nvue_info", gather=["system"]), group="leaves")
    assert "ansible.netcommon.httpapi (the NVUE REST API) or ansible.netcommon.network_cli" in ran.failures()["leaf01"]
    play = yaml.safe_load(playbook("nvue_info", gather=["system"]))
    play[0]["tasks"][0].update({"async": 30, "poll": 1})
    mark = switch.mark()
    ran = run(tmp_path, leaf(switch), yaml.safe_dump(play), group="leaves")
    assert "does not support async" in ran.failures()["leaf01"]  # ansible-core refuses it for this action
    assert switch.since(mark) == []


def test_a_secret_in_the_config_never_reaches_the_output_even_at_vvv(tmp_path, switch):
    """A planted password hash and SNMP community: applied on the switch, but in no line of a -vvv --diff run's
    output (check mode and the real run), where Ansible's no_log mask stands instead."""
    import subprocess

    from _ansible import env, tool
    from _roleplay import CONNECTIONS, LOCAL
    hashed, community = "$6$rounds=5000$Planted-7731-hash", "planted-community-4409"
    config = {"system": {"aaa": {"user": {"ops": {"hashed-password": hashed, "role": "system-admin"}}}},
              "service": {"snmp-server": {"readonly-community": {community: {"access": {"any": {}}}}}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"leaves": {"hosts": {
        name: dict(LOCAL, **host_vars) for name, host_vars in leaf(switch).items()}}}}}))
    (tmp_path / "play.yml").write_text(playbook("nvue_config", config=config))
    outputs = []
    for extra in (["--check"], []):
        proc = subprocess.run([str(tool("ansible-playbook")), "-i", str(tmp_path / "hosts.yml"),
                               str(tmp_path / "play.yml"), "-vvv", "--diff"] + extra,
                              env=env(tmp_path, ANSIBLE_CONNECTION_PLUGINS=CONNECTIONS), capture_output=True,
                              text=True, timeout=600, check=False, cwd=str(tmp_path))
        assert proc.returncode == 0, proc.stdout[-3000:]
        outputs.append(proc.stdout + proc.stderr)
    for text in outputs:
        assert hashed not in text and "Planted-7731" not in text and community not in text
        assert "********" in text and "hashed-password" in text   # the key shows, its value is masked
    applied = switch.get("/?rev=applied&filled=false")
    assert applied["system"]["aaa"]["user"]["ops"]["hashed-password"] == hashed   # it was really sent
    assert community in applied["service"]["snmp-server"]["readonly-community"]
