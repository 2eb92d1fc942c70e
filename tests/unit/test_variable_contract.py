# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The variable contract (plugins/plugin_utils/_variables.py): every gpufabric_* name the code and the docs use is
declared, every declaration is used, and an inventory's misspelt names are refused with the closest variable."""
import re
from pathlib import Path

import pytest

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _variables

ROOT = Path(__file__).resolve().parents[2]
# The places a variable is read or named: playbooks, roles (tasks, defaults, specs, templates, READMEs), plugins
# (code and documentation), the docs, README, the example inventories and the rehearsal (tests/twin).
WHERE = ("playbooks/**/*.yml", "roles/**/*.yml", "roles/**/*.j2", "roles/**/*.md", "plugins/**/*.py",
         "plugins/**/*.yml", "docs/*.md", "README.md", "inventory/**/*.yml", "examples/**/*.yml", "tests/twin/**/*.py")
# A whole name: a trailing "_" is a prefix the code builds names from (gpufabric_platform_bios_ ~ key).
NAME = re.compile(r"(?<![A-Za-z0-9_])gpufabric_[a-z0-9_]*[a-z0-9](?![A-Za-z0-9_])", re.ASCII)


def _names_used():
    used = {}
    for pattern in WHERE:
        for path in ROOT.glob(pattern):
            if "tests/output" in str(path) or not path.is_file():
                continue
            for name in NAME.findall(path.read_text(encoding="utf-8")):
                used.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return used


def test_every_name_the_collection_uses_is_declared():
    used = _names_used()
    undeclared = {name: sorted(where)[:3] for name, where in used.items()
                  if name not in _variables.declared() and name not in _variables.NOT_VARIABLES}
    assert undeclared == {}
    assert len(used) > 150   # the scan found the code (a broken glob would pass the line above)


def test_every_declaration_is_used():
    used = _names_used()
    assert sorted(set(_variables.declared()) - set(used)) == []
    assert sorted(set(_variables.NOT_VARIABLES) - set(used)) == []


def test_a_name_is_declared_once():
    tables = [set(_variables.PLAYBOOK_VARS), set(_variables.REHEARSAL_VARS), set(_variables.FACTS),
              {name for name in _variables.role_inputs() if name.startswith("gpufabric_")}]
    assert [a & b for i, a in enumerate(tables) for b in tables[i + 1:]] == [set()] * 6


# At least twenty misspellings people make, each refused with the variable meant.
MISSPELT = {
    "gpufabric_batch_sise": "gpufabric_batch_size",
    "gpufabric_max_fail_percentge": "gpufabric_max_fail_percentage",
    "gpufabric_activate_allow_reboots": "gpufabric_activate_allow_reboot",
    "gpufabric_batchby": "gpufabric_batch_by",
    "gpufabric_max_unreachables": "gpufabric_max_unreachable",
    "gpufabric_matix": "gpufabric_matrix",
    "gpufabric_fabirc": "gpufabric_fabric",
    "gpufabric_preflight_image": "gpufabric_preflight_images",
    "gpufabric_firmware_source": "gpufabric_firmware_source_dir",
    "gpufabric_leaf_enable": "gpufabric_leaf_enabled",
    "gpufabric_leaf_ready_timout": "gpufabric_leaf_ready_timeout",
    "gpufabric_platform_bmc_adress": "gpufabric_platform_bmc_address",
    "gpufabric_platform_bmc_pasword": "gpufabric_platform_bmc_password",
    "gpufabric_platform_bios_iomu": "gpufabric_platform_bios_iommu",
    "gpufabric_ofed_mirorr": "gpufabric_ofed_mirror",
    "gpufabric_roce_qos_pfc_priority": "gpufabric_roce_qos_pfc_priorities",
    "gpufabric_rails_mtus": "gpufabric_rails_mtu",
    "gpufabric_nv_profile": "gpufabric_nv_profiles",
    "gpufabric_report_directory": "gpufabric_report_dir",
    "gpufabric_gate_threshold": "gpufabric_gate_thresholds",
    "gpufabric_delivery_check_asset": "gpufabric_delivery_check_assets",
    "gpufabric_activate_reboot_timeot": "gpufabric_activate_reboot_timeout",
}


@pytest.mark.parametrize("wrong, meant", sorted(MISSPELT.items()))
def test_a_misspelt_variable_is_refused_with_the_variable_meant(wrong, meant):
    assert meant in _variables.declared()
    assert _variables.unknown_variables(["srv-01"], {"srv-01": {wrong: 1, meant: 1}}) == [
        "srv-01: %s is not a variable of gpufabric.mlnx: nothing reads it; did you mean %s? (docs/variables.md lists "
        "every variable)" % (wrong, meant)]


def test_hosts_sharing_a_misspelling_are_one_sentence_and_declared_names_pass():
    hostvars = {"srv-%02d" % i: {"gpufabric_batch_sise": 4, "gpufabric_batch_size": 4, "gpufabric_rollout": {},
                                 "gpufabric_zzz_qqq": 1, "ansible_host": "x"} for i in range(1, 8)}
    assert _variables.unknown_variables(sorted(hostvars), hostvars) == [
        "7 hosts (srv-01, srv-02, srv-03, srv-04, srv-05, ...): gpufabric_batch_sise is not a variable of "
        "gpufabric.mlnx: nothing reads it; did you mean gpufabric_batch_size? (docs/variables.md lists every variable)",
        "7 hosts (srv-01, srv-02, srv-03, srv-04, srv-05, ...): gpufabric_zzz_qqq is not a variable of "
        "gpufabric.mlnx: nothing reads it (docs/variables.md lists every variable)"]
    assert _variables.unknown_variables(["srv-01"], {"srv-01": {"gpufabric_batch_size": 4}}) == []


def test_the_roles_that_declare_one_name_agree_on_its_type():
    import glob
    import yaml
    kinds = {}
    for path in glob.glob(str(ROOT / "roles" / "*" / "meta" / "argument_specs.yml")):
        for entry in yaml.safe_load(Path(path).read_text())["argument_specs"].values():
            for name, option in (entry.get("options") or {}).items():
                kinds.setdefault(name, set()).add((option.get("type", "str"), tuple(option.get("choices") or ()),
                                                   option.get("elements")))
    assert {name: kind for name, kind in kinds.items() if len(kind) > 1} == {}
    assert _variables.input_specs()["gpufabric_batch_by"] == {"type": "str", "choices": ["count", "rack", "su"]}


@pytest.mark.parametrize("name, value, words", [
    ("gpufabric_batch_by", "racks", "value of gpufabric_batch_by must be one of: count, rack, su, got: racks"),
    ("gpufabric_batch_by", "rack", None),
    ("gpufabric_ofed_timeout", "10m", "argument 'gpufabric_ofed_timeout' is of type str and we were unable to "
                                      "convert to int"),
    ("gpufabric_ofed_timeout", "600", None),       # a number in a string is what the role takes too
    ("gpufabric_ofed_timeout", 600, None),
    ("gpufabric_rails_enabled", "maybe", "argument 'gpufabric_rails_enabled' is of type str and we were unable to "
                                         "convert to bool"),
    ("gpufabric_rails_enabled", "no", None),
    ("gpufabric_max_unreachable", "INF", "gpufabric_max_unreachable"),   # ansible-core raises on this one
])
def test_a_value_its_role_would_refuse_is_refused_before_any_host_is_contacted(name, value, words):
    found = _variables.value_problems(["srv-01", "srv-02"], {"srv-01": {name: value}, "srv-02": {name: value}})
    if words is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith("2 hosts (srv-01, srv-02): ") and words in found[0], found


def test_a_variable_left_to_another_check_is_skipped():
    hostvars = {"srv-01": {"gpufabric_rails_mtu": "jumbo"}}
    assert _variables.value_problems(["srv-01"], hostvars, skip=["gpufabric_rails_mtu"]) == []
    assert len(_variables.value_problems(["srv-01"], hostvars)) == 1


# ------------------------------------------------------------------------------------------ switches' connections

HTTPAPI = {"ansible_connection": "ansible.netcommon.httpapi", "ansible_network_os": "gpufabric.mlnx.nvue",
           "ansible_user": "cumulus", "ansible_password": "x"}


@pytest.mark.parametrize("changes, problems", [
    ({}, []),
    ({"ansible_connection": "httpapi"}, []),                               # the short name is the same plugin
    ({"ansible_connection": "network_cli", "ansible_password": None, "ansible_ssh_private_key_file": "/k"}, []),
    ({"ansible_password": None, "ansible_httpapi_password": "x"}, []),
    ({"ansible_connection": "ssh"}, ['ansible_connection is "ssh": a leaf is reached with ansible.netcommon.httpapi '
                                     'or ansible.netcommon.network_cli (docs/leaves.md, "Inventory")']),
    ({"ansible_network_os": "nvidia.nvue.nvue"}, ['ansible_network_os is "nvidia.nvue.nvue" (allowed: '
                                                  'gpufabric.mlnx.nvue)']),
    ({"ansible_user": ""}, ["ansible_user is not set (the switch's NVUE user, e.g. cumulus)"]),
    ({"ansible_password": ""}, ["no credential: set one of ansible_httpapi_password, ansible_password (from "
                                "Ansible Vault)"]),
    ({"ansible_connection": "network_cli", "ansible_password": None},
     ["no credential: set one of ansible_password, ansible_ssh_pass, ansible_ssh_private_key_file, "
      "ansible_private_key_file (from Ansible Vault)"]),
])
def test_a_leaf_s_connection_settings_are_checked_on_the_controller(changes, problems):
    from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._prerequisites import switch_problems
    leaf = {k: v for k, v in dict(HTTPAPI, **changes).items() if v is not None}
    assert switch_problems(["leaf1"], {"leaf1": leaf}) == ["leaf1: " + p for p in problems]


def test_leaves_sharing_a_problem_are_one_sentence():
    from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._prerequisites import switch_problems
    hostvars = {"leaf%d" % i: {k: v for k, v in HTTPAPI.items() if k != "ansible_user"} for i in range(7)}
    assert switch_problems(sorted(hostvars), hostvars) == [
        "7 leaves (leaf0, leaf1, leaf2, leaf3, leaf4, ...): ansible_user is not set (the switch's NVUE user, e.g. "
        "cumulus)"]
    assert switch_problems(None, hostvars) == []
