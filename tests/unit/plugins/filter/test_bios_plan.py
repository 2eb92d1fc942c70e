"""The bios_plan filter: a thin shell over plugin_utils/_bios.py (tests/unit/plugins/module_utils/test_bios.py
tests the plan itself), its documentation matches its arguments and result, and ansible-doc renders it and the
platform role that uses it."""
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from _paths import REPO
from ansible_collections.gpufabric.mlnx.plugins.filter import bios_plan as plugin
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _bios as bios

MODELS = json.loads((REPO / "tests" / "redfish" / "bios_models.json").read_text())
DELL = "PowerEdge XE9680"
HOST = "srv-r01-01"
SPEC = {"models": {DELL: {"SysProfile": "PerfOptimized", "ProcCStates": "Disabled"}}}


def factory(model):
    return {entry["name"]: entry["value"] for entry in MODELS[model]["attributes"]}


def registry(model):
    return {"RegistryEntries": {"Attributes": [
        dict({"AttributeName": entry["name"], "Type": entry["type"], "ReadOnly": bool(entry.get("read_only"))},
             **({"Value": [{"ValueName": value} for value in entry["values"]]} if "values" in entry else {}))
        for entry in MODELS[model]["attributes"]]}}


def plan_of():
    return bios.plan(SPEC, HOST, DELL, factory(DELL), registry=registry(DELL))


def test_the_filter_is_the_core():
    filters = plugin.FilterModule().filters()
    assert sorted(filters) == ["bios_plan"]
    args = dict(host=HOST, model=DELL, current=factory(DELL), pending={"SysProfile": "PerfOptimized"},
                registry=registry(DELL), sriov=True, iommu=False, overrides={"LogicalProc": "Disabled"})
    result = filters["bios_plan"](SPEC, **args)
    assert result == bios.plan(SPEC, **args)         # the wiring
    # the oracle, worked out by hand from the factory values of tests/redfish/bios_models.json: SysProfile is
    # pending already, ProcCStates / SR-IOV (SriovGlobalEnable on a Dell) / the override differ from the factory,
    # IOMMU off is the Dell's ProcVirtualization=Disabled, its factory value
    assert result["wanted"] == {"SysProfile": "PerfOptimized", "ProcCStates": "Disabled",
                                "SriovGlobalEnable": "Enabled", "ProcVirtualization": "Disabled",
                                "LogicalProc": "Disabled"}
    assert [(row["attribute"], row["action"]) for row in result["attributes"]] == [
        ("LogicalProc", "set"), ("ProcCStates", "set"), ("ProcVirtualization", "ok"),
        ("SriovGlobalEnable", "set"), ("SysProfile", "pending")]
    assert result["set"] == {"LogicalProc": "Disabled", "ProcCStates": "Disabled", "SriovGlobalEnable": "Enabled"}
    assert result["pending"] == dict(result["set"], SysProfile="PerfOptimized") and result["pending_other"] == {}
    assert result["pending_reset"] is True and result["problems"] == [] and result["host"] == HOST


def test_the_filter_documents_every_argument():
    documented = set(yaml.safe_load(plugin.DOCUMENTATION)["options"])
    arguments = set(inspect.signature(plugin.bios_plan).parameters) - {"spec"}
    assert documented == arguments | {"_input"}
    assert set(yaml.safe_load(plugin.RETURN)["_value"]["contains"]) == set(plan_of())


@pytest.mark.parametrize("kind, name", [("filter", "gpufabric.mlnx.bios_plan"), ("role", "gpufabric.mlnx.platform")])
def test_ansible_doc_renders(kind, name, tmp_path):
    tool = Path(sys.executable).with_name("ansible-doc")
    if not tool.exists():
        pytest.skip("ansible-doc not beside this python")
    collections = Path(os.path.abspath(plugin.__file__)).parents[5]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_HOME=str(tmp_path), NO_COLOR="1",
               ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    out = subprocess.run([str(tool), "-t", kind, name], env=env, capture_output=True, text=True, timeout=120,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert "gpufabric_platform_bios" in out.stdout
