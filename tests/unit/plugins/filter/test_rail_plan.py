"""The rail plan filters (rail_plan, rail_cabling): thin shells over plugin_utils/_rail_plan through
FilterModule().filters(), their YAML docs, and playbooks/cabling_plan.yml run for real on a small
inventory (Ansible's own templating of hostvars, the report filters, the files it writes)."""
import copy
import csv
import io
import subprocess

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from _ansible import env, tool
from _paths import REPO
from ansible_collections.gpufabric.mlnx.plugins.filter import rail_plan as plugin
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _rail_plan as rp

FILTERS = plugin.FilterModule().filters()
PLUGIN_DIR = REPO / "plugins" / "filter"

FABRIC = {
    "rails": 2, "su_prefix": 26, "racks_per_su": 1,
    "pools": {"rail0": "198.18.0.0/24", "rail1": "198.18.1.0/24"},
    "nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]}, "interface_names": ["enp24s0np0", "enp64s0np0"],
    "leaf_name": "su{su:02d}-leaf-rail{rail}",
}
HOSTS = [{"name": "srv-r02-01", "rack": "r02", "position": 1},
         {"name": "srv-r01-02", "rack": "r01", "position": 2},
         {"name": "srv-r01-01", "rack": "r01", "position": 1}]


def test_the_file_registers_its_filters():
    assert sorted(FILTERS) == ["rail_cabling", "rail_plan", "rail_plan_leaves", "rail_plan_problems",
                               "rail_plan_servers", "rail_plan_spines"]


# The plan of HOSTS/FABRIC worked out by hand from docs/rails.md ("How the addresses are chosen"): rack r01 is SU 1,
# r02 SU 2 (racks_per_su 1); SU s takes the s-th /26 of each rail's pool, the leaf its first address, host i of
# the SU (by position) the first + 2 + i, cabled to swp(i + 1); rail k routes through table 100 + k.
# (host, rail, pci, interface, address, network, gateway, table, leaf, leaf port)
PLAN = [
    ("srv-r01-01", 0, "0000:18:00.0", "enp24s0np0", "198.18.0.2", "198.18.0.0/26", "198.18.0.1", 100,
     "su01-leaf-rail0", "swp1"),
    ("srv-r01-01", 1, "0000:40:00.0", "enp64s0np0", "198.18.1.2", "198.18.1.0/26", "198.18.1.1", 101,
     "su01-leaf-rail1", "swp1"),
    ("srv-r01-02", 0, "0000:18:00.0", "enp24s0np0", "198.18.0.3", "198.18.0.0/26", "198.18.0.1", 100,
     "su01-leaf-rail0", "swp2"),
    ("srv-r01-02", 1, "0000:40:00.0", "enp64s0np0", "198.18.1.3", "198.18.1.0/26", "198.18.1.1", 101,
     "su01-leaf-rail1", "swp2"),
    ("srv-r02-01", 0, "0000:18:00.0", "enp24s0np0", "198.18.0.66", "198.18.0.64/26", "198.18.0.65", 100,
     "su02-leaf-rail0", "swp1"),
    ("srv-r02-01", 1, "0000:40:00.0", "enp64s0np0", "198.18.1.66", "198.18.1.64/26", "198.18.1.65", 101,
     "su02-leaf-rail1", "swp1"),
]


def _leaves():
    """Per leaf: its rail, SU, network, the gateway with the SU prefix, its racks, no port template, and a port and
    a cable per host (su_subnet: the cable carries no address)."""
    out = {}
    for host, rail, _pci, interface, _address, network, gateway, _table, leaf, port in PLAN:
        su = int(leaf[2:4])
        entry = out.setdefault(leaf, {"rail": rail, "su": su, "network": network, "address": gateway + "/26",
                                      "racks": ["r%02d" % su], "port_template": None, "ports": {}, "cables": {}})
        entry["ports"][port] = host
        entry["cables"][port] = {"host": host, "interface": interface, "rail": rail, "address": None,
                                 "cable_label": "%s:%s -> %s:%s" % (host, interface, leaf, port)}
    return dict(sorted(out.items()))


LEAVES = _leaves()


def test_rail_plan_is_the_core_plan():
    result = FILTERS["rail_plan"](HOSTS, FABRIC)
    assert result == rp.plan(HOSTS, FABRIC)         # the wiring
    hosts = {}
    for host, rail, pci, interface, address, network, gateway, table, leaf, port in PLAN:
        hosts.setdefault(host, []).append({
            "rail": rail, "pci": pci, "interface": interface, "address": address, "prefix": 26, "network": network,
            "gateway": gateway, "table": table, "leaf": leaf, "leaf_port": port,
            "cable_label": "%s:%s -> %s:%s" % (host, interface, leaf, port)})
    assert result == {"hosts": hosts, "leaves": LEAVES}   # the oracle
    assert result["hosts"]["srv-r02-01"][1]["cable_label"] == "srv-r02-01:enp64s0np0 -> su02-leaf-rail1:swp1"


def test_the_filters_pass_the_leaves_through():
    members = {leaf: {} for leaf in LEAVES if leaf != "su02-leaf-rail1"}
    assert FILTERS["rail_plan_problems"](HOSTS, FABRIC, members) == rp.plan_problems(HOSTS, FABRIC, members) == [
        "leaves.su02-leaf-rail1: srv-r02-01:enp64s0np0 is cabled to su02-leaf-rail1, which is not in the inventory's "
        "leaves group (gpufabric_leaf_group; 1 cable goes to it): add the leaf to the group, or correct "
        "gpufabric_fabric.leaf_name"]
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS["rail_plan"](HOSTS, FABRIC, members)
    assert "leaves.su02-leaf-rail1: srv-r02-01:enp64s0np0 is cabled to su02-leaf-rail1" in err.value.message
    templates = dict(FABRIC, port_templates={"two": {"leaf_port": "swp{cage}s{lane}", "breakout": 2}})
    members = dict.fromkeys(LEAVES, {"gpufabric_leaf_port_template": "two"})
    assert list(FILTERS["rail_plan"](HOSTS, templates, members)["leaves"]["su01-leaf-rail0"]["ports"]) == [
        "swp1s0", "swp1s1"]
    assert FILTERS["rail_plan"](HOSTS, FABRIC) == FILTERS["rail_plan"](HOSTS, FABRIC, None)


def test_rail_plan_leaves_reads_the_port_template_only():
    hostvars = {"su01-leaf-rail0": {"gpufabric_leaf_port_template": "two", "ansible_host": "192.0.2.1"},
                "su01-leaf-rail1": {"rail": 1}, "srv-r01-01": {"rack": "r01"}}
    assert FILTERS["rail_plan_leaves"](["su01-leaf-rail0", "su01-leaf-rail1"], hostvars) == {
        "su01-leaf-rail0": {"gpufabric_leaf_port_template": "two"}, "su01-leaf-rail1": {}}
    assert FILTERS["rail_plan_leaves"](None, hostvars) is None
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS["rail_plan_leaves"](["nowhere"], hostvars)
    assert "rail_plan_leaves: names[0] is the string \"nowhere\", not a host of hostvars" in err.value.message


def test_rail_plan_fails_with_the_cores_words():
    hosts = copy.deepcopy(HOSTS) + [{"name": "srv-r01-03", "rack": "r01", "position": 1}]
    fabric = dict(FABRIC, pools={"rail0": "198.18.0.0/24", "rail1": "198.18.0.128/25"})
    with pytest.raises(rp.RailPlanError) as core:
        rp.plan(hosts, fabric)
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS["rail_plan"](hosts, fabric)
    assert err.value.message == str(core.value)
    assert err.value.message == "\n".join([
        "the rail plan cannot be made (2 problems):",
        "- gpufabric_fabric.pools.rail1: 198.18.0.128/25 overlaps gpufabric_fabric.pools.rail0 (198.18.0.0/24): "
        "they share 198.18.0.128/25",
        "- hosts.srv-r01-03: rack r01 position 1 is also srv-r01-01's"])


def test_rail_plan_problems_are_the_plans_problems_as_a_list():
    hosts = copy.deepcopy(HOSTS) + [{"name": "srv-r01-03", "rack": "r01", "position": 1}]
    fabric = dict(FABRIC, pools={"rail0": "198.18.0.0/24", "rail1": "198.18.0.128/25"})
    with pytest.raises(rp.RailPlanError) as core:
        rp.plan(hosts, fabric)
    assert FILTERS["rail_plan_problems"](hosts, fabric) == core.value.problems == [
        "gpufabric_fabric.pools.rail1: 198.18.0.128/25 overlaps gpufabric_fabric.pools.rail0 (198.18.0.0/24): "
        "they share 198.18.0.128/25",
        "hosts.srv-r01-03: rack r01 position 1 is also srv-r01-01's"]
    assert FILTERS["rail_plan_problems"](HOSTS, FABRIC) == []


def test_rail_plan_problems_of_no_fabric_at_all():
    problems = FILTERS["rail_plan_problems"](HOSTS, None)
    assert problems and problems[0].startswith("gpufabric_fabric: ")


def test_rail_cabling_rows():
    rows = FILTERS["rail_cabling"](FILTERS["rail_plan"](HOSTS, FABRIC))
    assert rows == rp.cabling(rp.plan(HOSTS, FABRIC))
    assert [(r["leaf"], r["leaf_port"], r["host"]) for r in rows] == [
        ("su01-leaf-rail0", "swp1", "srv-r01-01"), ("su01-leaf-rail0", "swp2", "srv-r01-02"),
        ("su01-leaf-rail1", "swp1", "srv-r01-01"), ("su01-leaf-rail1", "swp2", "srv-r01-02"),
        ("su02-leaf-rail0", "swp1", "srv-r02-01"), ("su02-leaf-rail1", "swp1", "srv-r02-01")]
    assert sorted((r["host"], r["rail"], r["interface"], r["address"], r["pci"]) for r in rows) == sorted(
        (host, rail, interface, address, pci) for host, rail, pci, interface, address, *_rest in PLAN)


@pytest.mark.parametrize("bad, words", [
    (None, "rail_cabling: the input must be the result of gpufabric.mlnx.rail_plan"),
    ("plan", "rail_cabling: the input must be the result of gpufabric.mlnx.rail_plan"),
    ({"hosts": []}, "rail_cabling: plan.hosts must be a mapping (host -> its rail entries of gpufabric.mlnx.rail_plan's "
                    "result), not a list")])
def test_rail_cabling_of_something_else(bad, words):
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS["rail_cabling"](bad)
    assert words in err.value.message


@pytest.mark.parametrize("name", ["rail_plan", "rail_plan_problems", "rail_cabling", "rail_plan_servers"])
def test_docs(name):
    doc = yaml.safe_load((PLUGIN_DIR / (name + ".yml")).read_text())
    assert doc["DOCUMENTATION"]["name"] == name and doc["DOCUMENTATION"]["short_description"]
    assert doc["DOCUMENTATION"]["options"]["_input"]["required"] is True
    assert "gpufabric.mlnx.%s" % name in doc["EXAMPLES"]
    assert "_value" in doc["RETURN"]


def test_the_documented_return_samples_are_real():
    """The samples in the docs are what the example inventory's first server gets."""
    fabric = yaml.safe_load((REPO / "inventory/example-1250/group_vars/all/rails.yml").read_text())["gpufabric_fabric"]
    hosts = [{"name": "srv-r01-01", "rack": "r01", "position": 1}, {"name": "srv-r01-02", "rack": "r01", "position": 2}]
    result = FILTERS["rail_plan"](hosts, fabric)
    plan_doc = yaml.safe_load((PLUGIN_DIR / "rail_plan.yml").read_text())["RETURN"]["_value"]["contains"]
    assert plan_doc["hosts"]["sample"]["srv-r01-01"][0] == result["hosts"]["srv-r01-01"][0]
    assert plan_doc["leaves"]["sample"]["su01-leaf-rail0"] == result["leaves"]["su01-leaf-rail0"]
    cabling_doc = yaml.safe_load((PLUGIN_DIR / "rail_cabling.yml").read_text())["RETURN"]["_value"]
    assert cabling_doc["sample"][0] == FILTERS["rail_cabling"](result)[0]


@pytest.mark.parametrize("name", ["rail_plan", "rail_plan_problems", "rail_cabling", "rail_plan_leaves",
                                  "rail_plan_spines"])
def test_ansible_doc_renders(name, tmp_path):
    out = subprocess.run([str(tool("ansible-doc")), "-t", "filter", "gpufabric.mlnx." + name], env=env(tmp_path),
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0].endswith("/plugins/filter/%s.yml)" % name)
    assert "RETURN VALUES" in out.stdout and "EXAMPLES" in out.stdout


INVENTORY = """
all:
  children:
    servers:
      children:
        rack_r01:
          vars: {rack: r01}
          hosts:
            srv-r01-01: {position: 1}
            srv-r01-02: {position: 2}
        rack_r02:
          vars: {rack: r02}
          hosts:
            srv-r02-01: {position: 1, su: 7}
"""


def run_cabling_plan(tmp_path, fabric, leaves=""):
    inventory = tmp_path / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text(INVENTORY + leaves)
    (inventory / "group_vars" / "all.yml").write_text(yaml.safe_dump({"gpufabric_fabric": fabric}))
    out = subprocess.run([str(tool("ansible-playbook")), "-i", str(inventory), str(REPO / "playbooks/cabling_plan.yml"),
                          "-e", "gpufabric_report_dir=%s" % (tmp_path / "reports")],
                         env=env(tmp_path), capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path))
    return out, tmp_path / "reports"


def test_cabling_plan_playbook_writes_csv_and_markdown(tmp_path):
    fabric = dict(FABRIC, pools={"rail0": "198.18.0.0/22", "rail1": "198.18.4.0/22"})
    out, reports = run_cabling_plan(tmp_path, fabric)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = list(csv.DictReader(io.StringIO((reports / "cabling.csv").read_text())))
    assert list(rows[0]) == list(rp.CABLE_COLUMNS)
    assert [(r["leaf"], r["leaf_port"], r["host"], r["interface"], r["address"]) for r in rows] == [
        ("su01-leaf-rail0", "swp1", "srv-r01-01", "enp24s0np0", "198.18.0.2"),
        ("su01-leaf-rail0", "swp2", "srv-r01-02", "enp24s0np0", "198.18.0.3"),
        ("su01-leaf-rail1", "swp1", "srv-r01-01", "enp64s0np0", "198.18.4.2"),
        ("su01-leaf-rail1", "swp2", "srv-r01-02", "enp64s0np0", "198.18.4.3"),
        ("su07-leaf-rail0", "swp1", "srv-r02-01", "enp24s0np0", "198.18.1.130"),   # su: 7 from the inventory
        ("su07-leaf-rail1", "swp1", "srv-r02-01", "enp64s0np0", "198.18.5.130")]
    assert rows[4]["pci"] == "0000:18:00.0" and rows[4]["su"] == "7"
    markdown = (reports / "cabling.md").read_text()
    assert "6 cables from 3 servers to 4 leaves (2 rails)" in markdown
    assert "| leaf | leaf port | server | interface | rail | SU | PCI | address | cable label |" in markdown
    assert "| su07-leaf-rail1 | swp1 | srv-r02-01 | enp64s0np0 | 1 | 7 | 0000:40:00.0 | 198.18.5.130 | " \
           "srv-r02-01:enp64s0np0 -> su07-leaf-rail1:swp1 |" in markdown


def test_cabling_plan_playbook_fails_listing_the_problems(tmp_path):
    fabric = dict(FABRIC, pools={"rail0": "198.18.0.0/22"}, interface_names=None)
    out, reports = run_cabling_plan(tmp_path, fabric)
    text = out.stdout + out.stderr
    assert out.returncode == 2, text
    assert "the rail plan cannot be made (2 problems)" in text, text
    assert "gpufabric_fabric.pools.rail1: required: the pool of rail 1" in text
    assert "gpufabric_fabric.interface_names: required: 3 hosts carry no devices facts (srv-r01-01, srv-r01-02, " \
           "srv-r02-01)" in text
    assert not (reports / "cabling.csv").exists()


def test_cabling_plan_playbook_checks_the_leaves_group(tmp_path):
    fabric = dict(FABRIC, pools={"rail0": "198.18.0.0/22", "rail1": "198.18.4.0/22"},
                  port_templates={"two": {"leaf_port": "swp{cage}s{lane}", "breakout": 2}})
    leaves = """
    leaves:
      hosts:
        su01-leaf-rail0: {gpufabric_leaf_port_template: two}
        su01-leaf-rail1: {}
        su07-leaf-rail0: {}
"""
    out, reports = run_cabling_plan(tmp_path, fabric, leaves)
    text = out.stdout + out.stderr
    assert out.returncode == 2, text
    assert "leaves.su07-leaf-rail1: srv-r02-01:enp64s0np0 is cabled to su07-leaf-rail1, which is not in the " \
           "inventory's leaves group" in text, text
    assert not (reports / "cabling.csv").exists()
    out, reports = run_cabling_plan(tmp_path / "again", fabric, leaves + "        su07-leaf-rail1: {}\n")
    assert out.returncode == 0, out.stdout + out.stderr
    rows = list(csv.DictReader(io.StringIO((reports / "cabling.csv").read_text())))
    assert [(r["leaf"], r["leaf_port"]) for r in rows[:3]] == [
        ("su01-leaf-rail0", "swp1s0"), ("su01-leaf-rail0", "swp1s1"), ("su01-leaf-rail1", "swp1")]
