# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/_drift.py: the rows a changed task result gives (mapping diffs by path, text diffs, no diff), the
report's verdict and its Markdown page."""
import json

import pytest

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _drift


@pytest.mark.parametrize("module, role, task_file, group", [
    ("gpufabric.mlnx.mlxconfig", "gpufabric.mlnx.nic_config", None, "nv_parameters"),
    ("gpufabric.mlnx.nvue_config", "gpufabric.mlnx.leaf", "roles/leaf/tasks/main.yml", "leaf_configuration"),
    ("gpufabric.mlnx.nvue_image", "gpufabric.mlnx.leaf", None, "leaf_release"),
    ("ansible.builtin.debug", "gpufabric.mlnx.platform", "/x/roles/platform/tasks/bios.yml", "bios"),
    ("gpufabric.mlnx.kernel_cmdline", "gpufabric.mlnx.platform", "/x/roles/platform/tasks/kernel.yml",
     "kernel_parameters"),
    ("ansible.builtin.copy", "gpufabric.mlnx.rails", "/x/roles/rails/tasks/apply.yml", "rails"),
    ("ansible.builtin.reboot", "gpufabric.mlnx.activate", None, "activation"),
    ("ansible.builtin.command", None, None, "other"),
])
def test_the_group_of_a_task_by_module_then_task_file_then_role(module, role, task_file, group):
    assert _drift.group_of(module, role, task_file) == group


def test_the_platform_host_task_gives_each_diff_its_own_group():
    result = {"changed": True, "diff": [
        {"before_header": "kernel command line (/boot/grub/grub.cfg)", "before": {"dropin": None},
         "after": {"dropin": "x"}},
        {"before_header": "power policy (sysfs)", "before": {"aspm_policy": "default"},
         "after": {"aspm_policy": "performance"}},
        {"before_header": "/etc/udev/rules.d/90-gpufabric-nic-power.rules", "before": "", "after": "# x\n"}]}
    rows = _drift.settings(result, "Kernel command line, power policy and PCIe links", "gpufabric.mlnx.platform_host",
                           "gpufabric.mlnx.platform", "/x/roles/platform/tasks/main.yml")
    assert [(r["group"], r["setting"]) for r in rows] == [
        ("kernel_parameters", "dropin"), ("power_policy", "aspm_policy"),
        ("power_policy", "/etc/udev/rules.d/90-gpufabric-nic-power.rules")]
    assert _drift.settings({"changed": True, "msg": "m"}, "t", "gpufabric.mlnx.platform_host")[0]["group"] == "platform"


def test_a_mapping_diff_gives_a_row_per_value_that_differs_named_by_its_path():
    result = {"changed": True, "diff": {
        "before": {"0000:3b:00.0": {"NUM_OF_VFS": "4", "SRIOV_EN": "True"}, "interface": {"swp1": {"mtu": 1500}}},
        "after": {"0000:3b:00.0": {"NUM_OF_VFS": "8", "SRIOV_EN": "True"},
                  "interface": {"swp1": {"mtu": 9216}, "swp2": {"mtu": 9216}}}}}
    rows = _drift.settings(result, "One revision", "gpufabric.mlnx.nvue_config")
    assert [(r["setting"], r["actual"], r["expected"]) for r in rows] == [
        ("0000:3b:00.0/NUM_OF_VFS", "4", "8"),
        ("interface/swp1/mtu", 1500, 9216),
        ("interface/swp2/mtu", None, 9216)]  # absent on the host: null
    assert {r["group"] for r in rows} == {"leaf_configuration"} and {r["task"] for r in rows} == {"One revision"}


def test_a_leaf_s_renamed_key_in_either_spelling_is_one_setting():
    result = {"changed": True, "diff": {
        "before": {"qos": {"roce": {"enable": "on", "mode": "lossy"}}, "router": {"bgp": {"enable": "off"}}},
        "after": {"qos": {"roce": {"state": "enabled", "mode": "lossless"}}, "router": {"bgp": {"state": "enabled"}}}}}
    rows = _drift.settings(result, "One revision", "gpufabric.mlnx.nvue_config")
    assert [(r["setting"], r["actual"], r["expected"]) for r in rows] == [
        ("qos/roce/mode", "lossy", "lossless"), ("router/bgp/state", "disabled", "enabled")]
    # a tree the table cannot read is reported as it was said
    odd = {"changed": True, "diff": {"before": {"qos": {"roce": {"enable": "maybe"}}}, "after": {}}}
    assert [r["setting"] for r in _drift.settings(odd, "t", "gpufabric.mlnx.nvue_config")] == ["qos/roce/enable"]
    # another group's keys are not touched
    other = {"changed": True, "diff": {"before": {"enable": "on"}, "after": {"state": "enabled"}}}
    assert len(_drift.settings(other, "t", "gpufabric.mlnx.mlxconfig")) == 2


def test_a_leaf_s_one_task_gives_its_release_and_its_configuration_each_in_its_group():
    """nvue_leaf (the leaf role's one task): the upgrade under ``image`` is the leaf_release setting ``release``, the
    configuration's diff the leaf_configuration rows."""
    image = {"changed": True, "release_before": "5.9.1", "release": "5.11.0", "actions": ["fetch", "install",
                                                                                          "boot-next", "reboot"]}
    config = {"nvue_diff": [{"set": {"interface": {"swp1": {"link": {"mtu": 9216}}}}}],
              "diff": {"before": {"interface": {"swp1": {"link": {"mtu": 1500}}}},
                       "after": {"interface": {"swp1": {"link": {"mtu": 9216}}}}}}
    both = dict(config, changed=True, image=image)
    rows = _drift.settings(both, "The leaf", "gpufabric.mlnx.nvue_leaf", "gpufabric.mlnx.leaf")
    assert [(r["group"], r["setting"], r["actual"], r["expected"]) for r in rows] == [
        ("leaf_release", "release", "5.9.1", "5.11.0"), ("leaf_configuration", "interface/swp1/link/mtu", 1500, 9216)]
    only_release = {"changed": True, "image": image, "nvue_diff": [], "diff": {"before": {}, "after": {}}}
    assert [(r["group"], r["setting"]) for r in _drift.settings(only_release, "t", "gpufabric.mlnx.nvue_leaf")] == [
        ("leaf_release", "release")]
    only_config = dict(config, changed=True, image=None)
    assert [(r["group"], r["setting"]) for r in _drift.settings(only_config, "t", "gpufabric.mlnx.nvue_leaf")] == [
        ("leaf_configuration", "interface/swp1/link/mtu")]
    assert _drift.group_of("gpufabric.mlnx.nvue_leaf", "gpufabric.mlnx.leaf") == "leaf_configuration"


def test_a_key_only_the_host_has_and_a_list_value_are_rows_too():
    result = {"changed": True, "diff": [{"before": {"a": {"x": 1}, "l": [1, 2]}, "after": {"l": [1, 3]}}]}
    rows = _drift.settings(result, "t")
    assert [(r["setting"], r["actual"], r["expected"]) for r in rows] == [("a/x", 1, None), ("l", [1, 2], [1, 3])]


def test_a_text_diff_is_one_row_with_its_unified_diff_cut_to_a_bound():
    before = "".join("line %d\n" % n for n in range(100))
    after = before.replace("line 5\n", "line five\n").replace("line 90\n", "")
    result = {"changed": True, "diff": {"before": before, "after": after, "before_header": "/etc/sysctl.d/90-x.conf",
                                        "after_header": "/etc/sysctl.d/90-x.conf"}}
    (row,) = _drift.settings(result, "Persist the sysctls", "ansible.builtin.copy", "gpufabric.mlnx.rails")
    assert row["setting"] == "/etc/sysctl.d/90-x.conf" and row["group"] == "rails"
    assert "-line 5" in row["diff"] and "+line five" in row["diff"] and "-line 90" in row["diff"]
    long = {"changed": True, "diff": {"before": "", "after": before}}
    (row,) = _drift.settings(long, "t")
    assert len(row["diff"]) == _drift.TEXT_LINES + 1 and row["diff"][-1].startswith("... ")


def test_a_changed_result_without_a_diff_is_one_row_named_by_the_task_with_its_message():
    (row,) = _drift.settings({"changed": True, "msg": "would install 24.10-2.1.8.0"}, "Install the driver",
                             "gpufabric.mlnx.ofed_driver")
    assert row == {"group": "driver", "task": "Install the driver", "setting": "Install the driver", "actual": None,
                   "expected": "would install 24.10-2.1.8.0"}
    (row,) = _drift.settings({"changed": True, "diff": {"before": {}, "after": {}}}, "t")
    assert row["expected"] == "changed"


def test_the_verdict_drift_before_incomplete_before_compliant():
    seen = {"srv-1": {"settings": [], "failures": []}, "leaf-1": {"settings": [], "failures": []}}
    doc = _drift.document(seen, leaves=["leaf-1"], playbook="drift.yml", started="t0", finished="t1")
    assert doc["result"] == "compliant" and doc["summary"]["hosts"] == 2 and doc["schema"] == 1
    assert doc["hosts"]["leaf-1"]["kind"] == "leaf" and doc["hosts"]["srv-1"]["kind"] == "server"
    seen["srv-2"] = {"settings": [], "failures": [{"task": "Read the cards", "msg": "mst: not found"}]}
    seen["srv-3"] = {"settings": [], "failures": [{"task": "Gathering", "msg": "ssh: timed out"}], "unreachable": True}
    doc = _drift.document(seen)
    assert doc["result"] == "incomplete"
    assert doc["summary"]["failed"] == ["srv-2"] and doc["summary"]["unreachable"] == ["srv-3"]
    assert doc["hosts"]["srv-3"]["status"] == "unreachable"
    seen["srv-1"]["settings"] = _drift.settings({"changed": True, "diff": {"before": {"mtu": 1500},
                                                                           "after": {"mtu": 9000}}}, "Rails",
                                                "gpufabric.mlnx.rail_interfaces")
    doc = _drift.document(seen)
    assert doc["result"] == "drift" and doc["summary"]["drifted"] == ["srv-1"] and doc["summary"]["settings"] == 1
    assert doc["hosts"]["srv-1"]["groups"] == ["rails"] and doc["hosts"]["srv-1"]["status"] == "drift"
    json.dumps(doc)  # JSON all the way down


def test_the_page_names_each_drifted_host_and_setting_and_the_hosts_not_known():
    seen = {"srv-1": {"settings": _drift.settings({"changed": True, "diff": {
        "before": {"0000:3b:00.0": {"NUM_OF_VFS": "4"}}, "after": {"0000:3b:00.0": {"NUM_OF_VFS": "8"}}}},
        "NV | profile", "gpufabric.mlnx.mlxconfig") + _drift.settings(
        {"changed": True, "diff": {"before": "a\n", "after": "b\n", "after_header": "/etc/x"}}, "Persist",
        "ansible.builtin.copy", "gpufabric.mlnx.rails"), "failures": []},
        "srv-2": {"settings": [], "failures": [{"task": "Read", "msg": "boom | bang"}]},
        "srv-3": {"settings": [], "failures": []}}
    page = _drift.markdown(_drift.document(seen, finished="t1"))
    assert "**drift**: 1 of 3 hosts and leaves would change (2 settings); 1 failed, 0 unreachable." in page
    assert "## srv-1 (server): NV parameters, rails" in page
    assert "| NV parameters | 0000:3b:00.0/NUM_OF_VFS | 4 | 8 | NV \\| profile |" in page
    assert "```diff\n--- actual\n+++ /etc/x" in page and "\n-a\n+b\n```" in page
    assert "| srv-2 | failed | Read | boom \\| bang |" in page
    assert "srv-3" not in page  # compliant: not listed
    unfinished = _drift.markdown(_drift.document({"srv-3": {"settings": [], "failures": []}}))
    assert unfinished.startswith("# Drift report\n\nNo drift: the 1 hosts and leaves are as the inventory says "
                                 "(the run had not ended when this was written).")


def test_write_puts_both_files_whole_in_a_directory_it_makes(tmp_path):
    doc = _drift.document({"srv-1": {"settings": [], "failures": []}}, finished="t1")
    paths = _drift.write(doc, str(tmp_path / "a" / "b"))
    assert json.loads((tmp_path / "a" / "b" / "drift.json").read_text()) == doc
    assert paths == {"json": str(tmp_path / "a" / "b" / "drift.json"), "md": str(tmp_path / "a" / "b" / "drift.md")}
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["drift.json", "drift.md"]
