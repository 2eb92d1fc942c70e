# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument-spec check of hosts' values (plugins/plugin_utils/_role_defaults.py): it checks plain data, never a
deep copy of what hostvars gave (ansible-core's lazy template containers, whose deep copy takes their templating
context along: 10 of the 15 s of the variable check of example-1250)."""
import copy
from collections.abc import Mapping

import pytest

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._role_defaults import plain, spec_check


class Lazy(Mapping):
    """A mapping as hostvars hands them out: not a dict, and a deep copy of it is what must not happen."""

    def __init__(self, data):
        self._data = data

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __deepcopy__(self, memo):
        raise AssertionError("deep-copied a lazy container")


def test_plain_makes_every_mapping_a_dict_and_keeps_lists_tuples_and_scalars():
    value = Lazy({"pools": Lazy({"rail0": "10.0.0.0/16"}), "ports": [Lazy({"name": "swp1"}), 7], "pair": (1, Lazy({}))})
    out = plain(value)
    assert out == {"pools": {"rail0": "10.0.0.0/16"}, "ports": [{"name": "swp1"}, 7], "pair": (1, {})}
    # Lazy is a Mapping, not a dict: each of these is a dict made by plain()
    assert isinstance(out, dict) and isinstance(out["pools"], dict) and isinstance(out["ports"][0], dict)
    assert isinstance(out["pair"], tuple) and isinstance(out["pair"][1], dict)
    copy.deepcopy(out)                                     # plain data: nothing lazy left in it
    assert plain("tcp") == "tcp" and plain(None) is None and plain(3.5) == 3.5


def test_a_lazy_value_is_checked_without_a_deep_copy_of_it():
    spec = {"gpufabric_fabric": {"type": "dict"}, "gpufabric_ports": {"type": "list", "elements": "str"}}
    with pytest.raises(AssertionError, match="deep-copied"):
        copy.deepcopy(Lazy({}))                            # the guard itself works
    validated, problems = spec_check(spec, {"gpufabric_fabric": Lazy({"rails": 8}), "gpufabric_ports": ["swp1"]})
    assert problems == [] and validated["gpufabric_fabric"] == {"rails": 8}


def test_a_lazy_value_of_the_wrong_type_is_still_named():
    _validated, problems = spec_check({"gpufabric_ports": {"type": "list", "elements": "int"}},
                                      {"gpufabric_ports": [Lazy({"a": 1})]})
    assert len(problems) == 1 and "gpufabric_ports" in problems[0]
