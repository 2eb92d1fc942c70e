"""The filters that replaced the roles' Jinja programs (logic in plugins/plugin_utils/_roles.py): rail_plan_servers
(roles/rail_plan/vars, playbooks/cabling_plan.yml), host_values (preflight, delivery_check), nv_configs (nic_config),
pcie_degraded (platform) and strict_word (the roles' templates). Each through FilterModule().filters(), with
literal expected values; then rail_plan_servers and host_values in a real play, on Ansible's own hostvars (each
variable templated when read, an undefined template counting as unset); then their docs."""
import json
import subprocess

import pytest
import yaml
from ansible.errors import AnsibleFilterError
from jinja2 import StrictUndefined

from _ansible import env, tool
from ansible_collections.gpufabric.mlnx.plugins.filter import host_values as host_values_plugin
from ansible_collections.gpufabric.mlnx.plugins.filter import nv_configs as nv_configs_plugin
from ansible_collections.gpufabric.mlnx.plugins.filter import pcie_degraded as pcie_degraded_plugin
from ansible_collections.gpufabric.mlnx.plugins.filter import rail_plan as rail_plan_plugin
from ansible_collections.gpufabric.mlnx.plugins.filter import strict_word as strict_word_plugin

FILTERS = {}
for _plugin in (host_values_plugin, nv_configs_plugin, pcie_degraded_plugin, rail_plan_plugin, strict_word_plugin):
    FILTERS.update(_plugin.FilterModule().filters())
NEW = ["host_values", "nv_configs", "pcie_degraded", "rail_plan_servers", "strict_word"]


class TemplatedVars(dict):
    """A host's variables as Ansible's hostvars give them: one set to UNDEFINED reads as Jinja's Undefined, as a
    variable whose template is undefined does."""

    def __getitem__(self, key):
        value = dict.__getitem__(self, key)
        return StrictUndefined(name="nowhere") if value == UNDEFINED else value


UNDEFINED = "{{ nowhere }}"


def test_each_file_registers_its_filter():
    for plugin, names in ((host_values_plugin, ["host_values"]), (nv_configs_plugin, ["nv_configs"]),
                          (pcie_degraded_plugin, ["pcie_degraded"]), (strict_word_plugin, ["strict_word"])):
        assert sorted(plugin.FilterModule().filters()) == names
    assert "rail_plan_servers" in rail_plan_plugin.FilterModule().filters()


# ------------------------------------------------------------------------------------------ rail_plan_servers

HOSTVARS = {
    "srv-r01-01": {"rack": "r01", "position": 1, "ansible_host": "192.0.2.11", "gpufabric_ofed_mgmt_interface": "eno1",
                   "gpufabric_nic_devices": [{"address": "0000:18:00.0"}]},
    "srv-r01-02": {"rack": "r01", "position": 2, "su": 3, "ansible_host": "srv-r01-02.example",
                   "gpufabric_ofed_mgmt_interface": ""},
    "srv-r02-01": {"rack": 2, "ansible_host": "2001:db8::21", "gpufabric_nic_devices": []},
    "srv-r02-02": {"position": 4, "ansible_host": "192.0.2.22/24"},
    "srv-r02-03": {"rack": "r02", "position": 3, "ansible_host": 3221225994},
    "srv-r02-04": TemplatedVars(rack="r02", position=UNDEFINED, su=UNDEFINED, ansible_host=UNDEFINED,
                                gpufabric_nic_devices=UNDEFINED),
}


def test_rail_plan_servers_reads_what_the_plan_takes():
    assert FILTERS["rail_plan_servers"](list(HOSTVARS), HOSTVARS) == [
        {"name": "srv-r01-01", "rack": "r01", "position": 1, "mgmt_address": "192.0.2.11", "mgmt_interface": "eno1",
         "devices": [{"address": "0000:18:00.0"}]},
        {"name": "srv-r01-02", "rack": "r01", "position": 2, "su": 3},              # a host name: no mgmt_address
        {"name": "srv-r02-01", "rack": 2, "position": None, "mgmt_address": "2001:db8::21", "devices": []},
        {"name": "srv-r02-02", "rack": None, "position": 4, "mgmt_address": "192.0.2.22/24"},   # the plan refuses it
        {"name": "srv-r02-03", "rack": "r02", "position": 3, "mgmt_address": 3221225994},       # and this one
        {"name": "srv-r02-04", "rack": "r02", "position": None},                    # undefined templates: unset
    ]


def test_rail_plan_servers_in_the_order_given_and_without_management_or_devices():
    names = ["srv-r02-01", "srv-r01-01"]
    assert FILTERS["rail_plan_servers"](names, HOSTVARS, management=False, devices=False) == [
        {"name": "srv-r02-01", "rack": 2, "position": None},
        {"name": "srv-r01-01", "rack": "r01", "position": 1}]
    assert FILTERS["rail_plan_servers"](names, HOSTVARS, devices=False)[1] == {
        "name": "srv-r01-01", "rack": "r01", "position": 1, "mgmt_address": "192.0.2.11", "mgmt_interface": "eno1"}
    assert FILTERS["rail_plan_servers"]([], HOSTVARS) == []


@pytest.mark.parametrize("address", ["", "srv-01", " 192.0.2.1", "192.0.2.256", "10.0.0", "fe80::1%eth0", True, None])
def test_rail_plan_servers_leaves_out_what_is_no_address(address):
    assert FILTERS["rail_plan_servers"](["h"], {"h": {"ansible_host": address}}) == [
        {"name": "h", "rack": None, "position": None}]


# ------------------------------------------------------------------------------------------ host_values

RESULTS = {
    "srv-r01-01": {"__info": {"devices": [{"address": "0000:18:00.0"}], "changed": False}},
    "srv-r01-02": {"__info": {"failed": True, "msg": "mlx_info: no tool"}},        # failed: no devices
    "srv-r01-03": {},                                                                # unreachable: nothing registered
    "srv-r01-04": {"__info": {"devices": None}},
    "srv-r01-05": TemplatedVars(__info=UNDEFINED),
    "srv-r01-06": {"__info": "not a mapping"},
}


def test_host_values_follows_the_keys_with_none_where_a_host_has_nothing():
    names = list(RESULTS)
    assert FILTERS["host_values"](names, RESULTS, ["__info", "devices"]) == {
        "srv-r01-01": [{"address": "0000:18:00.0"}], "srv-r01-02": None, "srv-r01-03": None, "srv-r01-04": None,
        "srv-r01-05": None, "srv-r01-06": None}
    assert FILTERS["host_values"](names[:3], RESULTS, "__info") == {
        "srv-r01-01": {"devices": [{"address": "0000:18:00.0"}], "changed": False},
        "srv-r01-02": {"failed": True, "msg": "mlx_info: no tool"}, "srv-r01-03": None}
    assert FILTERS["host_values"](["srv-r01-03", "srv-r01-01"], RESULTS, ["__info", "changed"], default="?") == {
        "srv-r01-03": "?", "srv-r01-01": False}
    assert list(FILTERS["host_values"](["srv-r01-03", "srv-r01-01"], RESULTS, "__info")) == ["srv-r01-03", "srv-r01-01"]


@pytest.mark.parametrize("keys", [[], 3, ["__info", 1]])
def test_host_values_refuses_keys_that_are_no_variable_names(keys):
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS["host_values"](["srv-r01-01"], RESULTS, keys)
    assert err.value.message == ("host_values: keys must be a variable name or a non-empty list of names, not %r"
                                 % (keys,))


# ------------------------------------------------------------------------------------------ nv_configs

DEVICES = [
    {"address": "0000:18:00.0", "part_number": "MCX75310AAS-NEAT", "device_type": "ConnectX7"},
    {"address": "0000:29:00.0", "part_number": "MCX755106AS-HEAT", "device_type": "ConnectX7"},
    {"address": "0000:29:00.1", "part_number": "MCX755106AS-HEAT", "device_type": "ConnectX7"},   # function 1
    {"address": "40:00.0", "part_number": "MCX75310AAS-NEAT", "device_type": "ConnectX7"},
    {"address": "0000:aa:00.0", "part_number": "900-9D3B6-00CV-AA0", "device_type": "BlueField3"},
    {"address": "0000:bb:00.0", "part_number": "MCX623106AN-CDAT", "device_type": "ConnectX6DX"},  # no profile
]
PROFILES = {"roce_compute": {"LINK_TYPE_P1": "ETH", "SRIOV_EN": False}, "storage": {"LINK_TYPE_P2": "ETH"},
            "dpu": {"INTERNAL_CPU_MODEL": "EMBEDDED_CPU"}, "unused": {"NUM_OF_VFS": 0}}


def test_nv_configs_one_config_per_assigned_profile_where_its_first_device_is():
    assignments = [{"profile": "storage", "pci": ["0000:29:00.0"]},
                   {"profile": "roce_compute", "part_numbers": ["MCX75310AAS-NEAT", "MCX755106AS-HEAT"]},
                   {"profile": "dpu", "device_types": ["BlueField3"]},
                   {"profile": "unused", "device_types": ["ConnectX4"]}]
    assert FILTERS["nv_configs"](DEVICES, PROFILES, assignments) == [       # 0000:29:00.0 is storage's, not roce's
        {"name": "roce_compute", "device": ["0000:18:00.0", "0000:40:00.0"],
         "params": {"LINK_TYPE_P1": "ETH", "SRIOV_EN": False}},
        {"name": "storage", "device": ["0000:29:00.0"], "params": {"LINK_TYPE_P2": "ETH"}},
        {"name": "dpu", "device": ["0000:aa:00.0"], "params": {"INTERNAL_CPU_MODEL": "EMBEDDED_CPU"}}]
    assert FILTERS["nv_configs"](DEVICES, PROFILES, []) == []
    assert FILTERS["nv_configs"]([], PROFILES, assignments) == []


def test_nv_configs_names_every_bad_assignment():
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS["nv_configs"](DEVICES, PROFILES, [{"profile": "nope", "pci": ["0000:18:00.0"]}, {"profile": "dpu"}])
    assert err.value.message == (
        "gpufabric_nv_profile_assignments: assignment #1 names profile 'nope', which is not one of: dpu, roce_compute, "
        "storage, unused; assignment #2 (profile dpu) has none of part_numbers, pci, device_types")


# ------------------------------------------------------------------------------------------ pcie_degraded

def _link(speed, width):
    return {"speed": speed, "width": width}


def test_pcie_degraded_one_sentence_per_slow_or_narrow_link():
    devices = [
        {"address": "0000:18:00.0", "physical_slot": "3", "part_number": "MCX75310AAS-NEAT",
         "pcie": {"degraded": True, "lnkcap": _link("32GT/s", 16), "lnksta": _link("16GT/s", 8)}},
        {"address": "0000:29:00.0", "pcie": {"degraded": False, "lnkcap": _link("32GT/s", 16),
                                             "lnksta": _link("32GT/s", 16)}},
        {"address": "0000:40:00.0", "physical_slot": "", "part_number": None,
         "pcie": {"degraded": True, "lnkcap": _link("32GT/s", 16), "lnksta": _link("32GT/s", 4)}},
        {"address": "0000:aa:00.0", "pcie": {"degraded": None, "lnkcap": {}, "lnksta": {}}},     # not read
        {"address": "0000:bb:00.0"},                                                             # no pcie at all
    ]
    assert FILTERS["pcie_degraded"](devices) == [
        "0000:18:00.0 (slot 3, MCX75310AAS-NEAT): expected 32GT/s x16, running 16GT/s x8",
        "0000:40:00.0 (slot ?, ?): expected 32GT/s x16, running 32GT/s x4"]
    assert FILTERS["pcie_degraded"]([]) == []


# ------------------------------------------------------------------------------------------ strict_word

@pytest.mark.parametrize("grammar, value", [
    ("path", "/"), ("path", "/usr/local/sbin/gpufabric-roce-qos"), ("path", "/var/lib/mlxsim/root/"),
    ("path", "/opt/a_b/c.d+e"), ("ifname", "enp24s0np0"), ("ifname", "rail0.100"), ("ifname", "a"),
    ("ifname", "enP1p24s0f0np0"), ("ifname", "..."), ("governor", "performance"), ("governor", "schedutil"),
    ("governor", "conservative_2-x"),
])
def test_strict_word_passes_what_its_grammar_allows(grammar, value):
    assert FILTERS["strict_word"](value, grammar, "p", "h") == value


@pytest.mark.parametrize("grammar, value", [
    ("path", ""), ("path", "usr/sbin/x"), ("path", "/usr/sbin/a b"), ("path", "/x'"), ("path", '/x"'),
    ("path", "/x$y"), ("path", "/x%n"), ("path", "/x\\y"), ("path", "/x\n"), ("path", "/x;reboot"),
    ("path", "/x\u00e9"), ("path", 3), ("path", None),
    ("ifname", ""), ("ifname", "."), ("ifname", ".."), ("ifname", "enp24s0np0abcdef"), ("ifname", "a|b"),
    ("ifname", "en*"), ("ifname", "en?"), ("ifname", "en[0]"), ("ifname", 'a"b'), ("ifname", "a b"),
    ("ifname", "a/b"), ("ifname", "a:b"), ("ifname", "eth0\n"), ("ifname", "\u0435th0"), ("ifname", ["eth0"]),
    ("governor", "Performance"), ("governor", "performance\n"), ("governor", "1x"), ("governor", "a" * 33),
    ("governor", "perf ormance"), ("governor", ""),
])
def test_strict_word_refuses_the_rest_naming_host_parameter_and_grammar(grammar, value):
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS["strict_word"](value, grammar, "gpufabric_x", "srv-r01-01")
    assert err.value.message.startswith("srv-r01-01: gpufabric_x=%r cannot be written into a udev rule, systemd unit "
                                        "or script: allowed is " % (value,)), err.value.message


def test_strict_word_messages_and_unknown_grammars():
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS["strict_word"]("/a b", "path", "gpufabric_roce_qos_script")
    assert err.value.message == ("gpufabric_roce_qos_script='/a b' cannot be written into a udev rule, systemd unit or "
                                 "script: allowed is an absolute path of ASCII letters, digits and _ . + - /")
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS["strict_word"]("x", "word", "p", "h")
    assert err.value.message == "strict_word: grammar 'word' is not one of governor, ifname, path"


# ------------------------------------------------------------------------------------------ on Ansible's hostvars

INVENTORY = {"all": {"children": {"servers": {
    "vars": {"rack": "r{{ '%02d' % rack_number }}"},
    "hosts": {
        "srv-r01-01": {"rack_number": 1, "position": "{{ 1 + 1 }}", "su": 2, "ansible_host": "192.0.2.11",
                       "gpufabric_ofed_mgmt_interface": "eno1"},
        "srv-r03-07": {"rack_number": 3, "ansible_host": "srv-r03-07.example", "gpufabric_nic_devices": []},
        "srv-r09-01": {"position": 1}}}}}}     # rack's template is undefined there: counts as unset
PLAY = [{"hosts": "servers", "gather_facts": False, "tasks": [
    {"name": "Register something on two hosts",
     "ansible.builtin.set_fact": {"__info": {"devices": ["{{ inventory_hostname }}-card"]}},
     "when": "inventory_hostname != 'srv-r09-01'"},
    {"name": "The filters on the controller", "run_once": True, "delegate_to": "localhost",
     "ansible.builtin.set_fact": {
         "servers": "{{ groups['servers'] | gpufabric.mlnx.rail_plan_servers(hostvars) }}",
         "placement": "{{ groups['servers'] | gpufabric.mlnx.rail_plan_servers(hostvars, management=false,"
                      " devices=false) }}",
         "devices": "{{ ansible_play_hosts_all | gpufabric.mlnx.host_values(hostvars, ['__info', 'devices']) }}"}}]}]


def test_on_ansibles_hostvars(tmp_path):
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(INVENTORY))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(PLAY))
    proc = subprocess.run([str(tool("ansible-playbook")), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                           "-e", "ansible_connection=local"],
                          env=env(tmp_path, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json"), capture_output=True, text=True,
                          timeout=300, check=False, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    task = [t for t in json.loads(proc.stdout)["plays"][0]["tasks"] if t["task"]["name"] == "The filters on the controller"]
    facts = task[0]["hosts"]["srv-r01-01"]["ansible_facts"]
    assert facts["servers"] == [
        {"name": "srv-r01-01", "rack": "r01", "position": 2, "su": 2, "mgmt_address": "192.0.2.11",
         "mgmt_interface": "eno1"},
        {"name": "srv-r03-07", "rack": "r03", "position": None, "devices": []},
        {"name": "srv-r09-01", "rack": None, "position": 1}]
    assert facts["placement"] == [{"name": "srv-r01-01", "rack": "r01", "position": 2, "su": 2},
                                  {"name": "srv-r03-07", "rack": "r03", "position": None},
                                  {"name": "srv-r09-01", "rack": None, "position": 1}]
    assert facts["devices"] == {"srv-r01-01": ["srv-r01-01-card"], "srv-r03-07": ["srv-r03-07-card"], "srv-r09-01": None}
    assert "ipaddr" not in proc.stderr     # the Jinja loop warned once per host without ansible_host


# ------------------------------------------------------------------------------------------ docs

def test_ansible_doc_renders_every_new_filter(tmp_path):
    out = subprocess.run([str(tool("ansible-doc")), "-t", "filter", "--json"] + ["gpufabric.mlnx." + n for n in NEW],
                         env=env(tmp_path), capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    docs = json.loads(out.stdout)
    assert sorted(docs) == ["gpufabric.mlnx." + n for n in NEW]
    for name in NEW:
        assert docs["gpufabric.mlnx." + name]["doc"]["name"] == name
        assert docs["gpufabric.mlnx." + name]["examples"]
