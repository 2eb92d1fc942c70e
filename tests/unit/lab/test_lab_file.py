"""Lab-file validation and the model lab.py builds from it (names, addresses, wiring)."""
import copy

import pytest
import yaml

MINIMAL = {
    "name": "t",
    "mgmt": {"network": "mgmt", "subnet": "198.19.30.0/24"},
    "rails": 2,
    "racks": [{"name": "r1", "servers": [{"name": "s1", "profile": "dgx-h100"}]}],
}


def test_demo_lab_shape(lab, repo):
    """make demo's lab: 2 racks x 2 servers, 4 rails, a leaf per rack per rail (the fabric form), one network per
    cable."""
    demo = lab.read_lab(repo / "tests/lab/labs/demo.yml")
    assert demo.name == "gflab" and demo.fabric is not None
    assert [n.name for n in demo.servers] == ["srv-r01-01", "srv-r01-02", "srv-r02-01", "srv-r02-02"]
    assert [n.name for n in demo.leaves] == ["r0%d-leaf-rail%d" % (rack, rail) for rack in (1, 2) for rail in range(4)]
    first = demo.servers[0]
    assert (first.container, first.rack, first.position, first.mgmt_ip) == (
        "gflab-srv-r01-01", "r01", 1, "198.19.10.11")
    assert first.networks[0] == "gflab-mgmt" and first.networks[1:] == (
        "gflab-r01-r0-swp1", "gflab-r01-r1-swp1", "gflab-r01-r2-swp1", "gflab-r01-r3-swp1")
    assert demo.leaves[3].mgmt_ip == "198.19.10.204"
    assert demo.time_scale == 0.002


def test_molecule_lab_shape(lab, repo):
    mol = lab.read_lab(repo / "tests/lab/labs/molecule.yml")
    assert [(n.name, n.profile) for n in mol.servers] == [("mol-dgx-h100", "dgx-h100"), ("mol-mixed", "mixed")]
    assert mol.leaves == ()
    assert mol.rails == 8


def test_labs_do_not_share_names_or_subnets(lab, repo):
    labs = [lab.read_lab(p) for p in sorted((repo / "tests/lab/labs").glob("*.yml"))]
    assert len({x.name for x in labs}) == len(labs)
    assert len({x.mgmt_subnet for x in labs}) == len(labs)


def test_defaults(lab):
    t = lab.load_lab(copy.deepcopy(MINIMAL))
    assert t.image == "localhost/gpufabric-host:bookworm"
    assert (t.time_scale, t.rail_mtu, t.nic_mtu, t.ipv6, t.leaves) == (0.02, 9000, 1500, False, ())


def test_leaves_true_means_one_per_rail(lab):
    data = copy.deepcopy(MINIMAL) | {"leaves": True}
    assert [n.name for n in lab.load_lab(data).leaves] == ["leaf-rail0", "leaf-rail1"]


def _with(path, value):
    data = copy.deepcopy(MINIMAL)
    target = data
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if key.isdigit() else target[key]
    last = keys[-1]
    if value is KeyError:
        del target[last]
    elif last.isdigit():
        target[int(last)] = value
    else:
        target[last] = value
    return data


@pytest.mark.parametrize("path, value, message", [
    ("name", KeyError, "missing required key 'name'"),
    ("name", "Bad_Name", "name: 'Bad_Name' is not a valid name"),
    ("nam", "x", "unknown key(s) nam"),
    ("mgmt.subnet", "10.0.0.0/24", "must lie inside 198.18.0.0/15"),
    ("mgmt.subnet", "192.168.1.0/24", "must lie inside 198.18.0.0/15"),
    ("mgmt.subnet", "198.19.30.0/28", "too small"),
    ("mgmt.subnet", "198.19.30.1/24", "has host bits set"),
    ("mgmt.gateway", "198.19.30.1", "mgmt: unknown key(s) gateway"),
    ("rails", 0, "rails: must be between 1 and 16"),
    ("rails", "8", "rails: must be an integer"),
    ("rails", True, "rails: must be an integer"),
    ("racks", [], "racks: must be a non-empty list"),
    ("racks.0.servers", [], "racks[0].servers: must be a non-empty list"),
    ("racks.0.servers.0", {"name": "s1"}, "racks[0].servers[0].profile: is required"),
    ("racks.0.servers.0", {"name": "S 1", "profile": "x"}, "racks[0].servers[0].name"),
    ("racks.0.servers.0", {"name": "s1", "profile": "x", "pos": 1}, "unknown key(s) pos"),
    ("nic_mtu", 9500, "nic_mtu: must be between 1280 and 9000"),
    ("time_scale", 0, "time_scale: must be a number > 0"),
    ("ipv6", "no", "ipv6: must be true or false"),
    ("env", {"BAD-NAME": "1"}, "not a valid environment variable name"),
    ("leaves", {"count": 2}, "leaves: unknown key(s) count"),
])
def test_bad_lab_files_name_the_key(lab, path, value, message):
    with pytest.raises(lab.LabError) as err:
        lab.load_lab(_with(path, value), source="x.yml")
    assert message in str(err.value)
    assert str(err.value).startswith("x.yml")


def test_duplicate_server_names_are_refused(lab):
    data = copy.deepcopy(MINIMAL)
    data["racks"].append({"name": "r2", "servers": [{"name": "s1", "profile": "mixed"}]})
    with pytest.raises(lab.LabError, match=r"racks\[1\]\.servers\[0\]\.name: 's1' is already used at .*racks\[0\]"):
        lab.load_lab(data)


def test_too_many_servers_for_the_mgmt_plan(lab):
    data = copy.deepcopy(MINIMAL)
    data["racks"][0]["servers"] = [{"name": f"s{i}", "profile": "x"} for i in range(191)]
    with pytest.raises(lab.LabError, match="do not fit the mgmt addressing"):
        lab.load_lab(data)


def test_unreadable_and_invalid_yaml(lab, tmp_path):
    with pytest.raises(lab.LabError, match="cannot read lab file"):
        lab.read_lab(tmp_path / "missing.yml")
    bad = tmp_path / "bad.yml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(lab.LabError, match="not valid YAML"):
        lab.read_lab(bad)


def test_node_lookup_by_name_or_container(lab, repo):
    demo = lab.read_lab(repo / "tests/lab/labs/demo.yml")
    assert demo.node("srv-r02-02") is demo.node("gflab-srv-r02-02")
    with pytest.raises(lab.LabError, match="has no node 'nope'"):
        demo.node("nope")


def test_lab_files_are_plain_yaml(repo):
    for path in (repo / "tests/lab/labs").glob("*.yml"):
        assert isinstance(yaml.safe_load(path.read_text()), dict), path


def test_molecule_labs_run_the_simulator_fast(lab, repo):
    """No molecule case times the simulator: its labs scale the latency model to 0.2% (issue 11, CI budget)."""
    for name in ("driver_firmware", "molecule", "ofed", "platform", "rails", "roce_qos"):
        assert lab.read_lab(repo / "tests/lab/labs" / (name + ".yml")).time_scale == 0.002, name
