"""The committed inventories are what lab.py generates from the lab files; molecule config."""
import pytest
import yaml

CONNECTION_KEYS = {"ansible_connection", "ansible_python_interpreter"}


@pytest.mark.parametrize("lab_file, hosts_file", [
    ("tests/lab/labs/demo.yml", "inventory/lab/hosts.yml"),
    ("tests/lab/labs/molecule.yml", "molecule/default/inventory/hosts.yml"),
    ("tests/lab/labs/ofed.yml", "molecule/ofed/inventory/hosts.yml"),
])
def test_committed_inventory_is_generated(lab, repo, lab_file, hosts_file):
    expected = lab.render_inventory(lab.read_lab(repo / lab_file), lab_file)
    assert (repo / hosts_file).read_text() == expected, (
        f"{hosts_file} is stale: run .venv/bin/python tests/lab/lab.py inventory --lab {lab_file} > {hosts_file}")


def test_demo_inventory_groups_and_vars(lab, repo):
    inv = lab.inventory(lab.read_lab(repo / "tests/lab/labs/demo.yml"))
    servers = inv["all"]["children"]["servers"]["children"]
    assert list(servers) == ["rack_r01", "rack_r02"]
    assert servers["rack_r02"]["hosts"]["srv-r02-02"] == {
        "ansible_host": "gflab-srv-r02-02", "rack": "r02", "position": 2, "sim_profile": "mixed"}
    leaves = inv["all"]["children"]["leaves"]["hosts"]
    assert leaves["leaf-rail7"] == {"ansible_host": "gflab-leaf-rail7", "rail": 7}


@pytest.mark.parametrize("path", [
    "inventory/lab/group_vars/all.yml",
    "molecule/default/inventory/group_vars/all.yml",
])
def test_group_vars_all_holds_only_connection_settings(repo, path):
    data = yaml.safe_load((repo / path).read_text())
    assert set(data) == CONNECTION_KEYS
    assert data["ansible_connection"] == "containers.podman.podman"
    assert data["ansible_python_interpreter"] == "/usr/bin/python3"


def test_molecule_config_matches_the_installed_schema(repo):
    schema = pytest.importorskip("molecule.model.schema_v3")
    config = yaml.safe_load((repo / "molecule/default/molecule.yml").read_text())
    assert schema.validate(config) == []
    assert config["driver"]["name"] == "default"
    assert config["scenario"]["test_sequence"] == [
        "create", "prepare", "check", "converge", "idempotence", "verify", "destroy"]
    for link in config["provisioner"]["inventory"]["links"].values():
        assert (repo / "molecule/default" / link).exists(), link
