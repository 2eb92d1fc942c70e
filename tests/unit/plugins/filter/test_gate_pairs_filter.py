"""The gate_pairs filter (plugins/filter/gate_pairs.py): registered, the pairing plan of plugin_utils/_gate_pairs.py
as it is, and its errors as AnsibleFilterError with the sentence."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.mlnx.plugins.filter import gate_pairs as gate_pairs_plugin
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._gate_pairs import GatePairsError, pairs
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._rail_plan import plan as rail_plan

FILTERS = gate_pairs_plugin.FilterModule().filters()
FABRIC = {"rails": 2, "addressing": "p2p31", "su_prefix": 26, "racks_per_su": 1, "leaf_name": "{rack}-leaf-rail{rail}",
          "pools": {"rail0": "198.18.0.0/20", "rail1": "198.18.16.0/20"},
          "nics": {"pci": ["0000:18:00.0", "0000:40:00.0"]}, "interface_names": ["enp24s0np0", "enp64s0np0"]}
PLAN = rail_plan([{"name": "srv-r01-%02d" % i, "rack": "r01", "position": i} for i in (1, 2, 3)], FABRIC)


def test_the_filter_is_registered_and_returns_the_plan_of_pairs():
    assert list(FILTERS) == ["gate_pairs"]
    out = FILTERS["gate_pairs"](PLAN)
    assert out == pairs(PLAN) and out["rounds_count"] == 2
    assert FILTERS["gate_pairs"](PLAN, ["srv-r01-03"], peers=["srv-r01-01"], cross_leaf="never") == \
        pairs(PLAN, ["srv-r01-03"], ["srv-r01-01"], "never")
    assert out["hosts"]["srv-r01-03"] == [{"round": 2, "rail": rail, "peer": "srv-r01-01", "role": "client"}
                                          for rail in (0, 1)]


@pytest.mark.parametrize("args, words", [
    ((PLAN, ["srv-r01-09"]), 'hosts[0] "srv-r01-09" is not a host of the rail plan'),
    ((PLAN, None, None, "yes"), 'cross_leaf is the string "yes"'),
    (([],), "the rail plan must be the result of gpufabric.mlnx.rail_plan"),
])
def test_errors_are_ansible_filter_errors_with_the_sentence(args, words):
    with pytest.raises(AnsibleFilterError) as err:
        FILTERS["gate_pairs"](*args)
    assert words in err.value.message and isinstance(err.value.orig_exc, GatePairsError)
