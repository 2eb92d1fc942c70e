"""inventory/example-1250 is a complete reference site: management and BMC addresses for every server, the BMC
password as an Ansible Vault value that the example's documented password decrypts (and that is not readable
without it), reboots allowed, batches and the batch gate valid for playbooks/site.yml, and the site's ansible.cfg
(inventory/example-1250-files/ansible.cfg) valid for ansible-core with the forks measured on the fleet twin."""
import configparser
import ipaddress
import json
import re
import subprocess

import pytest
import yaml
from ansible.parsing.vault import VaultLib, VaultSecret

from _ansible import env, tool
from _paths import REPO

SITE = REPO / "inventory" / "example-1250"
SITE_CFG = REPO / "inventory" / "example-1250-files" / "ansible.cfg"
# tests/bench/site_forks.py on the fleet twin; inventory/example-1250/README.md, "ansible.cfg", has the figures
MEASURED_FORKS = 50


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!vault", lambda loader, node: loader.construct_scalar(node))


def load(path):
    return yaml.load((SITE / path).read_text(), Loader=_Loader)  # noqa: S506 - SafeLoader plus !vault as text


def documented_password():
    match = re.search(r"^    (\S+)$", (SITE / "README.md").read_text(), re.M)
    return match.group(1)


@pytest.mark.parametrize("vault_file, name, secret, user_file, variable", [
    ("group_vars/servers/vault.yml", "vault_gpufabric_platform_bmc_password", b"example-bmc-password",
     "group_vars/servers/management.yml", "gpufabric_platform_bmc_password"),
    ("group_vars/leaves/vault.yml", "vault_leaf_password", b"CumulusLinux!example",
     "group_vars/leaves/connection.yml", "ansible_password")])
def test_each_password_is_vaulted_and_the_readme_password_opens_it(vault_file, name, secret, user_file, variable):
    vaulted = load(vault_file)[name]
    assert vaulted.startswith("$ANSIBLE_VAULT;1.1;AES256")
    vault = VaultLib([("default", VaultSecret(documented_password().encode()))])
    assert vault.decrypt(vaulted.encode()) == secret
    assert load(user_file)[variable] == "{{ %s }}" % name


def test_every_server_gets_a_distinct_management_and_bmc_address_in_the_management_network():
    """The patterns of management.yml, computed as Jinja would for every host of hosts.yml."""
    inventory = yaml.safe_load((SITE / "hosts.yml").read_text())
    mgmt = ipaddress.ip_network("198.19.0.0/16")
    rails = yaml.safe_load((SITE / "group_vars/all/rails.yml").read_text())["gpufabric_fabric"]
    assert str(mgmt) in rails["mgmt_subnets"]
    addresses, bmcs = set(), set()
    for group in inventory["all"]["children"]["servers"]["children"].values():
        for host in group["hosts"].values():
            rack, position = int(group["vars"]["rack"][1:]), host["position"]
            index, block = (rack - 1) % 50 * 4 + position, (rack - 1) // 50
            addresses.add(ipaddress.ip_address("198.19.%d.%d" % (10 + block, index)))
            bmcs.add(ipaddress.ip_address("198.19.%d.%d" % (100 + block, index)))
    assert len(addresses) == len(bmcs) == 1250 and not addresses & bmcs
    assert all(a in mgmt and a.packed[-1] not in (0, 255) for a in addresses | bmcs)


def test_each_su_group_holds_its_8_racks_and_gives_them_its_su():
    """One group per SU of racks_per_su racks (servers_su01: r01-r08 ... servers_su40: r313) in group
    scalable_units, its su the number the rail plan would derive from the rack's place: a job of one SU sees the su the
    whole site has. The racks stay children of servers, in order (a group lists its own children's hosts in order,
    its grandchildren's in no order)."""
    children = yaml.safe_load((SITE / "hosts.yml").read_text())["all"]["children"]
    sus = children["scalable_units"]["children"]
    assert list(sus) == ["servers_su%02d" % n for n in range(1, 41)]
    assert [group["vars"] for group in sus.values()] == [{"su": n} for n in range(1, 41)]
    assert list(sus["servers_su02"]["children"]) == ["rack_r%02d" % n for n in range(9, 17)]
    assert list(sus["servers_su40"]["children"]) == ["rack_r313"]
    racks_per_su = load("group_vars/all/rails.yml")["gpufabric_fabric"]["racks_per_su"]
    assert all(len(group["children"]) == racks_per_su for name, group in sus.items() if name != "servers_su40")
    assert [rack for group in sus.values() for rack in group["children"]] == list(children["servers"]["children"])


def test_reboots_batches_and_gate_are_set():
    rollout = load("group_vars/all/rollout.yml")
    assert rollout["gpufabric_activate_allow_reboot"] is True
    assert (rollout["gpufabric_batch_by"], rollout["gpufabric_batch_size"]) == ("su", [1, 1, 4])
    assert 0 <= rollout["gpufabric_max_fail_percentage"] <= 100


def adhoc_msgs(tmp_path, hosts, msg, *args):
    """{host: msg} of ``ansible -m debug -a msg=...`` on example-1250 (nothing is contacted)."""
    proc = subprocess.run([str(tool("ansible")), "-i", str(SITE), hosts, "-c", "local", "-m", "ansible.builtin.debug",
                           "-a", json.dumps({"msg": msg})] + list(args), env=env(tmp_path, ANSIBLE_LOAD_CALLBACK_PLUGINS="1"),
                          capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path))
    found = dict(re.findall(r'^(\S+) \| SUCCESS =>\s*\n\s+msg: (.*)$', proc.stdout, re.M))
    return proc, found


def test_ansible_reads_the_addresses_and_the_vaulted_password_of_the_example(tmp_path):
    proc, found = adhoc_msgs(tmp_path, "srv-r01-01:srv-r51-01:srv-r313-02",
                             "{{ ansible_host }} {{ gpufabric_platform_bmc_address }}")
    assert found == {"srv-r01-01": "198.19.10.1 198.19.100.1", "srv-r51-01": "198.19.11.1 198.19.101.1",
                     "srv-r313-02": "198.19.16.50 198.19.106.50"}, proc.stdout + proc.stderr
    (tmp_path / "pw").write_text(documented_password() + "\n")
    proc, found = adhoc_msgs(tmp_path, "srv-r01-01", "{{ gpufabric_platform_bmc_password }}",
                             "--vault-password-file", str(tmp_path / "pw"))
    assert found == {"srv-r01-01": "example-bmc-password"}, proc.stdout + proc.stderr


def test_the_leaves_reach_nvue_over_httpapi():
    connection = load("group_vars/leaves/connection.yml")
    assert (connection["ansible_connection"], connection["ansible_network_os"]) == (
        "ansible.netcommon.httpapi", "gpufabric.mlnx.nvue")


def test_the_site_ansible_cfg_is_valid_and_holds_the_measured_forks(tmp_path):
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#",))
    parser.read_string(SITE_CFG.read_text())
    assert parser.getint("defaults", "forks") == MEASURED_FORKS
    assert "forks = %d" % MEASURED_FORKS in (SITE / "README.md").read_text()   # the measurement says the same
    # as ansible-core reads it in a site: no ANSIBLE_* of this test run, the file as the configuration
    environ = {key: value for key, value in env(tmp_path).items() if not key.startswith("ANSIBLE_")}
    environ.update(ANSIBLE_CONFIG=str(SITE_CFG), ANSIBLE_HOME=str(tmp_path / "home"),
                   ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    valid = subprocess.run([str(tool("ansible-config")), "validate", "-t", "all"], env=environ, capture_output=True,
                           text=True, timeout=300, check=False, cwd=str(tmp_path))
    assert valid.returncode == 0, valid.stdout + valid.stderr
    dump = subprocess.run([str(tool("ansible-config")), "dump", "--only-changed", "-t", "all"], env=environ,
                          capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path))
    lines = {line.strip() for line in dump.stdout.splitlines()}
    expected = {"CONFIG_FILE() = %s" % SITE_CFG, "DEFAULT_FORKS(%s) = %d" % (SITE_CFG, MEASURED_FORKS),
                "COLLECTIONS_PATHS(%s) = ['%s']" % (SITE_CFG, SITE_CFG.parent / "collections"),
                "CALLBACKS_ENABLED(%s) = ['gpufabric.mlnx.progress']" % SITE_CFG,
                "DEFAULT_GATHERING(%s) = explicit" % SITE_CFG, "INTERPRETER_PYTHON(%s) = auto_silent" % SITE_CFG,
                "RETRY_FILES_ENABLED(%s) = False" % SITE_CFG, "DEFAULT_TIMEOUT(%s) = 30" % SITE_CFG,
                "PERSISTENT_CONNECT_TIMEOUT(%s) = 30" % SITE_CFG, "PERSISTENT_COMMAND_TIMEOUT(%s) = 60" % SITE_CFG,
                "pipelining(%s) = True" % SITE_CFG}
    assert expected <= lines, (sorted(expected - lines), dump.stdout + dump.stderr)
    assert not [line for line in lines if line.startswith("HOST_KEY_CHECKING(")], "host key checking stays on"
