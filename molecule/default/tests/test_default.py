"""pytest-testinfra checks of the molecule lab after converge and a simulated power cycle.

Run by verify.yml with ``--hosts podman://<container>,...``. The hosts run the simulator of
the NVIDIA tools, so this reads them with the same commands a person would type.
"""
import json
import os
import re

FIRMWARE = {i["psid"]: i["version"] for i in json.loads(os.environ.get("MOLECULE_FIRMWARE", "[]"))}
PROFILE = json.loads(os.environ.get("MOLECULE_PROFILES", "{}")).get("roce_compute", {})


def _cards(host):
    out = host.check_output("lspci -D -d 15b3:")
    return [line.split()[0] for line in out.splitlines() if re.match(r"^\S+\.0 ", line)
            and "Virtual Function" not in line]


def test_every_card_runs_its_target_firmware(host):
    cards = _cards(host)
    assert cards
    for pci in cards:
        out = host.check_output("flint -d %s q", pci)
        psid = re.search(r"^PSID:\s+(\S+)", out, re.M).group(1)
        version = re.search(r"^FW Version:\s+(\S+)", out, re.M).group(1)
        assert version == FIRMWARE[psid], (pci, psid, version)
        assert "FW Version(Running)" not in out, "%s still has a reset pending" % pci


def test_compute_nics_run_the_roce_profile(host):
    found = 0
    for pci in _cards(host):
        out = host.check_output("mlxconfig -d %s -e q LINK_TYPE_P1 SRIOV_EN", pci)
        if "MCX75310AAS-NEA" not in out:
            continue
        found += 1
        rows = {m.group(1): m.group(2, 3, 4) for m in
                re.finditer(r"^\*?\s+(\w+)\s+(\S+)\s+(\S+)\s+(\S+)", out, re.M)}
        assert rows["LINK_TYPE_P1"][1:] == ("ETH(2)", "ETH(2)"), rows
        assert rows["SRIOV_EN"][1:] == ("False(0)", "False(0)"), rows
    assert found, "no ConnectX-7 compute NIC found"


def test_management_interface_untouched(host):
    assert host.interface("eth0").exists
    assert any(a.startswith("198.19.") for a in host.interface("eth0").addresses)


def test_the_modules_imports_were_compiled_once_into_the_tests_bytecode_cache(host):
    """tests/accel, installed by the lab's provisioning: the container's python3 loads the hook, and the modules
    converge ran left their compiled imports in its cache (root's, in the container's /tmp)."""
    hook = host.check_output("python3 -c 'import zipimport; print(zipimport._compile_source.__module__)'")
    assert hook == "gpufabric_bytecode_cache"
    cached = host.check_output("find /tmp/gpufabric-bytecode-0 -type f -name '*-*' | wc -l")
    assert int(cached) > 10, cached
