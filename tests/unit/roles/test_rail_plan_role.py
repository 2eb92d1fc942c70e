"""The rail_plan role passes the inventory's leaves group (gpufabric_leaf_group, default leaves) to the plan: a leaf
of the plan missing from the group fails every host of the play naming it; a leaf's gpufabric_leaf_port_template
names its ports; an inventory without the group is not checked (tests/_roleplay.py runs the role for real)."""
import yaml

from _roleplay import run

FABRIC = {"rails": 2, "su_prefix": 26, "racks_per_su": 1,
          "pools": {"rail0": "198.18.0.0/20", "rail1": "198.18.16.0/20"},
          "nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]}, "interface_names": ["enp24s0np0", "enp64s0np0"],
          "port_templates": {"sn5600-2x": {"leaf_port": "swp{cage}s{lane}", "breakout": 2}}}
SERVERS = {"srv-r01-01": {"rack": "r01", "position": 1}, "srv-r01-02": {"rack": "r01", "position": 2}}
SHOW = {"name": "Show the plan's leaves", "hosts": "servers", "gather_facts": False,
        "tasks": [{"name": "Leaves", "ansible.builtin.debug": {"var": "gpufabric_rail_plan.leaves"}}]}
PLAN = "Plan the rails of every server once, on the controller"


def plan(tmp_path, groups, **group_vars):
    text = yaml.safe_dump([{"hosts": "servers", "gather_facts": False, "roles": ["gpufabric.mlnx.rail_plan"]}, SHOW])
    return run(tmp_path, SERVERS, text, group_vars=dict({"gpufabric_fabric": FABRIC}, **group_vars), groups=groups)


def test_a_leaf_missing_from_the_group_fails_the_plan(tmp_path):
    ran = plan(tmp_path, {"leaves": {"su1-leaf-rail0": {}}})
    assert not ran.ok
    msg = ran.task(PLAN, "srv-r01-01", role="rail_plan")["msg"]
    assert "leaves.su1-leaf-rail1: srv-r01-01:enp64s0np0 is cabled to su1-leaf-rail1, which is not in the " \
           "inventory's leaves group (gpufabric_leaf_group; 2 cables go to it)" in msg, msg


def test_the_group_picks_the_port_templates_and_its_name_is_a_variable(tmp_path):
    ran = plan(tmp_path, {"tor": {"su1-leaf-rail0": {"gpufabric_leaf_port_template": "sn5600-2x"},
                                  "su1-leaf-rail1": {}}}, gpufabric_leaf_group="tor")
    assert ran.ok, ran
    leaves = ran.task("Leaves", "srv-r01-01")["gpufabric_rail_plan.leaves"]
    assert leaves["su1-leaf-rail0"]["ports"] == {"swp1s0": "srv-r01-01", "swp1s1": "srv-r01-02"}
    assert leaves["su1-leaf-rail0"]["port_template"] == "sn5600-2x"
    assert leaves["su1-leaf-rail1"]["ports"] == {"swp1": "srv-r01-01", "swp2": "srv-r01-02"}


def test_without_a_leaves_group_the_leaves_are_not_checked(tmp_path):
    ran = plan(tmp_path, None)
    assert ran.ok, ran
    leaves = ran.task("Leaves", "srv-r01-01")["gpufabric_rail_plan.leaves"]
    assert sorted(leaves) == ["su1-leaf-rail0", "su1-leaf-rail1"]
