"""The mlx_parse filter: a thin shell over module_utils/_parse."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from _paths import REAL

from ansible_collections.gpufabric.mlnx.plugins.filter import mlx_parse as plugin
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import PARSERS

FILTER = plugin.FilterModule().filters()["mlx_parse"]


def capture(name):
    return "\n".join((REAL / name).read_text(encoding="utf-8").split("\n")[2:])


def test_stdout_and_stdout_lines_give_the_same_devices():
    text = capture("mlxup_query_cx7_1.txt")
    devices = FILTER(text, "mlxup")
    assert [(d["pci_device"], d["psid"], d["versions"]["FW"]["available"]) for d in devices] == [
        ("/dev/mst/mt4129_pciconf1", "MT_0000000834", "28.43.1014"),
        ("/dev/mst/mt4129_pciconf0", "MT_0000000834", "28.43.1014")]
    assert FILTER(text.split("\n"), "mlxup") == devices


def test_mlxconfig_capture():
    dev = FILTER(capture("mlxconfig_query_cx7_1.txt"), "mlxconfig")[0]
    assert dev["name"] == "MCX715105AS-WEAT_Ax"
    assert dev["params"]["SAFE_MODE_ENABLE"] == {"next": "True(1)"}


def test_json_dict_input():
    doc = {"Device #1": {"device_type": "ConnectX7", "tlv_configuration": {"SRIOV_EN": {"next_value": "True(1)"}}}}
    assert FILTER(doc, "mlxconfig_json")[0]["params"] == {"SRIOV_EN": {"next": "True(1)"}}


def test_parse_error_becomes_filter_error_naming_tool_and_line():
    with pytest.raises(AnsibleFilterError, match=r"mlx_parse: ibstat: .*first unrecognised line.*Infiniband device"):
        FILTER(capture("ibstatus_a100_1.txt"), "ibstat")
    with pytest.raises(AnsibleFilterError, match="unknown tool"):
        FILTER("x", "nvidia-smi")


@pytest.mark.parametrize("data", [None, 42, {"stdout": "x"}])
def test_wrong_input_types(data):
    with pytest.raises(AnsibleFilterError, match="mlx_parse"):
        FILTER(data, "mlxconfig")


def test_documentation_covers_every_tool():
    doc = yaml.safe_load(plugin.DOCUMENTATION)
    assert doc["name"] == "mlx_parse" and doc["positional"] == "tool"
    assert sorted(doc["options"]["tool"]["choices"]) == sorted(PARSERS)
    returned = " ".join(yaml.safe_load(plugin.RETURN)["_value"]["description"])
    for func in set(PARSERS.values()):  # every parser's shape is described under one of its names
        names = [tool for tool, parser in PARSERS.items() if parser is func]
        assert any(re.search(r"B\([^)]*\b%s\b" % name, returned) for name in names), names
    yaml.safe_load(plugin.EXAMPLES)


def test_ansible_doc_renders(tmp_path):
    """``ansible-doc -t filter gpufabric.mlnx.mlx_parse`` must render the docs."""
    ansible_doc = Path(sys.executable).with_name("ansible-doc")
    if not ansible_doc.exists():
        pytest.skip("ansible-doc not beside this python")
    collections = Path(os.path.abspath(plugin.__file__)).parents[5]  # holds ansible_collections/gpufabric/mlnx
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_LOCAL_TEMP=str(tmp_path),
               ANSIBLE_HOME=str(tmp_path), NO_COLOR="1")
    out = subprocess.run([str(ansible_doc), "-t", "filter", "gpufabric.mlnx.mlx_parse"], env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert "RETURN VALUES" in out.stdout and "mlnx_qos" in out.stdout
