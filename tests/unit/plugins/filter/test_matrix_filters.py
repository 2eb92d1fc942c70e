"""The matrix filters (matrix_check, fw_targets, matrix_images): thin shells over
module_utils/_matrix, through FilterModule().filters(), their docs, and one real playbook run on
the example inventory (Ansible's own templating, tagged values and all)."""
import copy
import json
import subprocess
import sys

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from _ansible import env, tool
from _paths import REPO
from ansible_collections.gpufabric.mlnx.plugins.filter import fw_targets as fw_targets_plugin
from ansible_collections.gpufabric.mlnx.plugins.filter import matrix_check as matrix_check_plugin
from ansible_collections.gpufabric.mlnx.plugins.filter import matrix_images as matrix_images_plugin
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _matrix as mx
from mlxsim import profiles as sim_profiles

PLUGINS = {"matrix_check": matrix_check_plugin, "fw_targets": fw_targets_plugin, "matrix_images": matrix_images_plugin}
FILTERS = {}
for _plugin in PLUGINS.values():
    FILTERS.update(_plugin.FilterModule().filters())

INVENTORY = REPO / "inventory" / "example-1250"
MATRIX = yaml.safe_load((INVENTORY / "group_vars" / "all" / "matrix.yml").read_text())["gpufabric_matrix"]
CX7 = "MT_0000000838"


def bad_matrix():
    matrix = copy.deepcopy(MATRIX)
    matrix["firmware"][CX7]["sha256"] = "d41d8cd98f00b204e9800998ecf8427e"
    matrix["driver"]["flavour"] = "ofed"
    matrix["nv_profile_assignments"][1]["profile"] = "stroage"
    return matrix


def devices(profile="dgx-h100"):
    """mlx_info-shaped devices of a simulator profile (one per PCI function)."""
    out = []
    for spec in sim_profiles.card_specs(profile):
        for function in spec["functions"]:
            out.append({"address": function["pci"], "card": function["pci"].rsplit(".", 1)[0],
                        "function": int(function["pci"][-1]), "part_number": spec["part_number"],
                        "psid": spec["psid"], "serial_number": "MT2314X00001", "fw_version": spec["fw"],
                        "fw_running": spec["fw"], "fw_pending": False, "device_type": spec["family"], "errors": []})
    return out


def test_each_filter_file_registers_its_own_name():
    for name, plugin in PLUGINS.items():
        assert list(plugin.FilterModule().filters()) == [name]


# ---------------------------------------------------------------- matrix_check

def test_matrix_check_returns_a_good_matrix_unchanged():
    assert FILTERS["matrix_check"](MATRIX) is MATRIX
    assert FILTERS["matrix_check"](MATRIX, fail=False) == []


def test_matrix_check_fails_listing_every_problem():
    matrix = bad_matrix()
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS["matrix_check"](matrix)
    text = str(err.value)
    assert text.startswith("gpufabric_matrix is not consistent (3 problems):\n")
    for where in ("gpufabric_matrix.firmware.MT_0000000838.sha256: ", "gpufabric_matrix.driver.flavour: ",
                  "gpufabric_matrix.nv_profile_assignments[1].profile: "):
        assert "\n- " + where in text, text


def test_matrix_check_without_failing_returns_the_problems():
    problems = FILTERS["matrix_check"](bad_matrix(), fail=False)
    assert problems == mx.matrix_problems(bad_matrix())      # the wiring
    # the oracle: one problem for each of the three places bad_matrix() broke, and no other
    assert sorted(problem.split(": ", 1)[0] for problem in problems) == [
        "gpufabric_matrix.driver.flavour", "gpufabric_matrix.firmware.MT_0000000838.sha256",
        "gpufabric_matrix.nv_profile_assignments[1].profile"]


@pytest.mark.parametrize("value", [None, "text", [MATRIX], 3])
def test_matrix_check_of_not_a_matrix(value):
    with pytest.raises(AnsibleFilterError, match=r"gpufabric_matrix: must be a mapping"):
        FILTERS["matrix_check"](value)
    assert FILTERS["matrix_check"](value, fail=False)[0].startswith("gpufabric_matrix: must be a mapping")


@pytest.mark.parametrize("fail", ["false", 0, None])
def test_matrix_check_fail_is_a_bool(fail):
    with pytest.raises(AnsibleFilterError, match="fail must be true or false"):
        FILTERS["matrix_check"](MATRIX, fail=fail)


# ---------------------------------------------------------------- fw_targets

def test_fw_targets_on_mlx_info_devices():
    targets = FILTERS["fw_targets"](devices(), MATRIX)
    assert len(targets) == 10 and {t["action"] for t in targets} == {"burn"}
    assert targets[0]["address"] == "0000:18:00.0" and targets[0]["target"]["version"] == "28.43.2566"


def test_fw_targets_refusals_are_entries_not_errors():
    targets = {t["card"]: t for t in FILTERS["fw_targets"](devices("mixed"), MATRIX)}
    assert targets["0000:17:00"]["action"] == "refused"
    assert "unknown PSID MT_0000000223" in targets["0000:17:00"]["reason"]
    assert targets["0000:65:00"]["action"] == "burn"


def test_fw_targets_of_a_bad_matrix_fails_listing_its_problems():
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS["fw_targets"](devices(), bad_matrix())
    assert str(err.value).startswith("fw_targets: gpufabric_matrix is not consistent (3 problems)")


def test_fw_targets_of_bad_devices():
    with pytest.raises(AnsibleFilterError, match=r"fw_targets: devices\[1\] is not a device of gpufabric.mlnx.mlx_info"):
        FILTERS["fw_targets"]([devices()[0], "0000:40:00.0"], MATRIX)


# ---------------------------------------------------------------- matrix_images

def test_matrix_images():
    images = FILTERS["matrix_images"](MATRIX, "/var/cache/gpufabric/firmware")
    assert [(i["psid"], i["version"]) for i in images] == [(CX7, "28.43.2566"), ("MT_0000000834", "28.43.2566")]
    assert images[0]["path"] == "/var/cache/gpufabric/firmware/" + MATRIX["firmware"][CX7]["image"]
    assert set(images[0]) == {"psid", "version", "path", "sha256", "part_numbers"}


def test_matrix_images_errors():
    with pytest.raises(AnsibleFilterError, match="matrix_images: firmware_dir must be"):
        FILTERS["matrix_images"](MATRIX, "")
    with pytest.raises(AnsibleFilterError, match="matrix_images: gpufabric_matrix is not consistent"):
        FILTERS["matrix_images"](bad_matrix(), "/fw")


def test_matrix_images_keys_are_mlx_firmware_suboptions():
    """Every key matrix_images gives is a suboption of mlx_firmware's images option."""
    from ansible_collections.gpufabric.mlnx.plugins.modules import mlx_firmware
    suboptions = yaml.safe_load(mlx_firmware.DOCUMENTATION)["options"]["images"]["suboptions"]
    for image in FILTERS["matrix_images"](MATRIX, "/fw"):
        assert set(image) <= set(suboptions)
        assert all(image[k] for k, spec in suboptions.items() if spec.get("required"))


# ---------------------------------------------------------------- docs

@pytest.mark.parametrize("name", sorted(PLUGINS))
def test_docs_parse(name):
    plugin = PLUGINS[name]
    doc = yaml.safe_load(plugin.DOCUMENTATION)
    assert doc["name"] == name and doc["short_description"] and doc["options"]["_input"]
    examples = yaml.safe_load(plugin.EXAMPLES)
    assert any("gpufabric.mlnx.%s" % name in json.dumps(task) for task in examples)
    assert "_value" in yaml.safe_load(plugin.RETURN)


@pytest.mark.parametrize("name", sorted(PLUGINS))
def test_ansible_doc_renders(name, tmp_path):
    out = subprocess.run([str(tool("ansible-doc")), "-t", "filter", "gpufabric.mlnx." + name], env=env(tmp_path),
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert "RETURN VALUES" in out.stdout and "EXAMPLES" in out.stdout


PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  vars:
    devices: {devices}
  tasks:
    - name: The example matrix passes and feeds mlx_firmware's images and fw_targets
      ansible.builtin.assert:
        that:
          - (gpufabric_matrix | gpufabric.mlnx.matrix_check) == gpufabric_matrix
          - (gpufabric_matrix | gpufabric.mlnx.matrix_check(fail=false)) == []
          - (gpufabric_matrix | gpufabric.mlnx.matrix_images('/fw') | map(attribute='psid') | list)
            == ['MT_0000000838', 'MT_0000000834']
          - (devices | gpufabric.mlnx.fw_targets(gpufabric_matrix) | map(attribute='action') | unique | list)
            == ['burn']
    - name: A broken copy fails listing its problems
      ansible.builtin.debug:
        msg: "{{{{ gpufabric_matrix | combine(broken, recursive=true) | gpufabric.mlnx.matrix_check }}}}"
      vars:
        broken: {{name: 2026.11, firmware: {{MT_0000000838: {{sha256: "abc"}}}}}}
"""


def test_real_playbook_on_the_example_inventory(tmp_path):
    """Ansible's own templating (2.19 tagged values, lazy containers) through the filters."""
    play = tmp_path / "play.yml"
    play.write_text(PLAYBOOK.format(devices=json.dumps(devices())))
    out = subprocess.run([str(tool("ansible-playbook")), "-i", str(INVENTORY), "-c", "local",
                          "-e", "ansible_python_interpreter=%s" % sys.executable, str(play)],
                         env=env(tmp_path), capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path))
    text = out.stdout + out.stderr
    assert out.returncode == 2, text
    assert "ok=1" in text and "failed=1" in text, text
    assert "gpufabric_matrix is not consistent (2 problems)" in text, text
    assert "gpufabric_matrix.name: must be a quoted string" in text
    assert "gpufabric_matrix.firmware.MT_0000000838.sha256: must be the sha256" in text
