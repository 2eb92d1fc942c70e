"""inventory/example-1250 read from its files, without Ansible, for the rail plan tests."""
import yaml

from _paths import REPO

SITE = REPO / "inventory" / "example-1250"


def example_1250():
    """``(servers, leaves, leaf addresses, spines, fabric)``: the servers as the rail plan takes them (with the su of
    their rack's SU group), the leaves
    and spines as ``{name: its variables}`` (a leaf's group variables; a spine's plane), the leaves' ansible_host
    and gpufabric_fabric."""
    inventory = yaml.safe_load((SITE / "hosts.yml").read_text())["all"]["children"]
    su_of = {rack: unit["vars"]["su"] for unit in inventory["scalable_units"]["children"].values()
             for rack in unit["children"]}
    servers = [{"name": name, "rack": group["vars"]["rack"], "position": host["position"], "su": su_of[rack]}
               for rack, group in inventory["servers"]["children"].items() for name, host in group["hosts"].items()]
    leaves = {name: dict(group.get("vars") or {}) for group in inventory["leaves"]["children"].values()
              for name in group["hosts"]}
    addresses = [host["ansible_host"] for group in inventory["leaves"]["children"].values()
                 for host in group["hosts"].values()]
    spines = {name: {"gpufabric_spine_plane": host["gpufabric_spine_plane"]}
              for name, host in inventory["spines"]["hosts"].items()}
    fab = yaml.safe_load((SITE / "group_vars" / "all" / "rails.yml").read_text())["gpufabric_fabric"]
    return servers, leaves, addresses, spines, fab
