"""The committed inventories are what lab.py generates from the lab files; molecule config."""
import pytest
import yaml

CONNECTION_KEYS = {"ansible_connection", "ansible_python_interpreter"}
SCENARIOS = ["default", "driver_firmware", "ofed", "platform", "rails", "roce_qos", "fabric"]
BASE_CONFIG = ".config/molecule/config.yml"


@pytest.mark.parametrize("lab_file, hosts_file", [
    ("tests/lab/labs/demo.yml", "inventory/lab/hosts.yml"),
    ("tests/lab/labs/molecule.yml", "molecule/default/inventory/hosts.yml"),
    ("tests/lab/labs/ofed.yml", "molecule/ofed/inventory/hosts.yml"),
    ("tests/lab/labs/driver_firmware.yml", "molecule/driver_firmware/inventory/hosts.yml"),
    ("tests/lab/labs/platform.yml", "molecule/platform/inventory/hosts.yml"),
    ("tests/lab/labs/rails.yml", "molecule/rails/inventory/hosts.yml"),
    ("tests/lab/labs/roce_qos.yml", "molecule/roce_qos/inventory/hosts.yml"),
    ("tests/lab/labs/fabric.yml", "molecule/fabric/inventory/hosts.yml"),
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
        "ansible_host": "gflab-srv-r02-02", "rack": "r02", "position": 2, "sim_profile": "gpu4-cx7-eth"}
    leaves = inv["all"]["children"]["leaves"]["hosts"]
    assert leaves["r02-leaf-rail3"]["ansible_host"] == "198.19.10.208"
    assert leaves["r02-leaf-rail3"]["ansible_connection"] == "ansible.netcommon.httpapi"
    assert (leaves["r02-leaf-rail3"]["rack"], leaves["r02-leaf-rail3"]["rail"]) == ("r02", 3)


@pytest.mark.parametrize("path, connection", [
    # the lab_podman connection (ansible.cfg names tests/lab/connection_plugins) for make demo's inventory too
    ("inventory/lab/group_vars/all.yml", "lab_podman"),
    # tests/lab/connection_plugins/lab_podman.py: containers.podman.podman with pipelining
    ("molecule/resources/inventory/group_vars/all.yml", "lab_podman"),
])
def test_group_vars_all_holds_only_connection_settings(repo, path, connection):
    data = yaml.safe_load((repo / path).read_text())
    assert set(data) == CONNECTION_KEYS
    assert data["ansible_connection"] == connection
    assert data["ansible_python_interpreter"] == "/usr/bin/python3"


def test_the_molecule_connection_plugin_is_on_the_path_of_every_scenario(repo):
    base = yaml.safe_load((repo / BASE_CONFIG).read_text())
    path = base["ansible"]["env"]["ANSIBLE_CONNECTION_PLUGINS"].replace("${MOLECULE_PROJECT_DIRECTORY}", str(repo))
    assert (repo / path / "lab_podman.py").is_file(), path


def _scenario_config(repo, scenario):
    """What molecule runs the scenario with: the base configuration, the scenario's molecule.yml merged on top
    (molecule's own merge)."""
    util = pytest.importorskip("molecule.util")
    base = yaml.safe_load((repo / BASE_CONFIG).read_text())
    own = yaml.safe_load((repo / "molecule" / scenario / "molecule.yml").read_text())
    return util.merge_dicts(base, own), own


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_config_matches_the_installed_schema(repo, scenario):
    schema = pytest.importorskip("molecule.model.schema_v3")
    config, _own = _scenario_config(repo, scenario)
    assert schema.validate(config) == []
    assert config["driver"]["name"] == "default"
    assert config["driver"]["options"]["managed"] is False
    sequence = config["scenario"]["test_sequence"]
    # destroy first: a stale molecule state (created: true) from an interrupted run would skip create
    assert sequence == ["destroy", "create", "prepare", "check", "converge", "idempotence", "verify", "destroy"]
    for link in config["provisioner"]["inventory"]["links"].values():
        assert (repo / "molecule" / scenario / link).exists(), link
    for playbook in config["ansible"]["playbooks"].values():
        assert (repo / "molecule" / scenario / playbook).is_file(), playbook
    lab = config["ansible"]["env"]["GPUFABRIC_LAB"].replace("${MOLECULE_PROJECT_DIRECTORY}", str(repo))
    assert (repo / lab.replace("${MOLECULE_SCENARIO_NAME}", scenario)).is_file(), lab
    inventory = [a for a in config["ansible"]["executor"]["args"]["ansible_playbook"] if a.startswith("--inventory=")]
    assert inventory == ["--inventory=${MOLECULE_SCENARIO_DIRECTORY}/inventory"]
    assert (repo / "molecule" / scenario / "inventory" / "hosts.yml").is_file()
    assert (repo / "molecule" / scenario / "inventory" / "group_vars" / "servers.yml").is_file()


def _repeats(base, own, path=""):
    """The keys of ``own`` whose value is the base's already (repeated instead of inherited)."""
    out = []
    for key, value in own.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            out += _repeats(base[key], value, path + key + ".")
        elif key in base and base[key] == value:
            out.append(path + key)
    return out


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_scenario_keeps_only_what_differs_from_the_base(repo, scenario):
    base = yaml.safe_load((repo / BASE_CONFIG).read_text())
    _config, own = _scenario_config(repo, scenario)
    assert _repeats(base, own) == []
    assert not (repo / "molecule" / scenario / "inventory" / "group_vars" / "all.yml").exists()
