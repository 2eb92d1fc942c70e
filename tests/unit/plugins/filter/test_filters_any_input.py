"""Every public filter, any JSON-like input (what an inventory or a module result can hold): a value, or the
documented error (AnsibleFilterError with a sentence), never another Python exception."""
import importlib
import inspect
import json

import pytest
from ansible.errors import AnsibleFilterError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _paths import REPO

# Keys the filters read, so generated mappings reach past the first check.
VOCABULARY = ["address", "card", "devices", "psid", "part_number", "serial_number", "fw_version", "fw_running",
              "netdevs", "pcie", "degraded", "lnkcap", "lnksta", "name", "rack", "position", "su", "rails", "pools",
              "nics", "pci", "part_numbers", "interface", "replay", "argv", "write", "value", "rdma_device",
              "firmware", "driver", "version", "image", "models", "default", "Attributes", "RegistryEntries",
              "hosts", "table", "leaf", "url", "suite", "components", "source", "type", "profile", "match",
              "trust", "cnp_dscp", "leave", "interfaces", "ansible_host", "gpufabric_nics"]
KEYS = st.one_of(st.sampled_from(VOCABULARY), st.text(max_size=5))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 40, 2 ** 70), st.floats(allow_nan=True),
                    st.text(max_size=10), st.sampled_from(["0000:18:00.0", "MT_0000000838", "28.43.2566", "all",
                                                           "enp24s0np0", "mlx5_0", "/x", "$(touch CANARY)"]))
JSONISH = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
                       max_leaves=16)


def public_filters():
    out = []
    for path in sorted((REPO / "plugins" / "filter").glob("*.py")):
        if path.name.startswith("_"):
            continue
        module = importlib.import_module("ansible_collections.gpufabric.mlnx.plugins.filter." + path.stem)
        for name, func in sorted(module.FilterModule().filters().items()):
            out.append(pytest.param(func, id=name))
    return out


def arity(func):
    params = [p for p in inspect.signature(func).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(1 for p in params if p.default is p.empty)
    return required, len(params)


@pytest.mark.parametrize("func", public_filters())
def test_any_input_is_a_value_or_the_documented_error(func):
    required, most = arity(func)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(JSONISH, min_size=required, max_size=most))
    def check(args):
        try:
            value = func(*args)
        except AnsibleFilterError as err:
            assert str(err.message).strip() and "Traceback" not in str(err.message)
            return
        json.dumps(value, default=str)   # what a filter returns is data
    check()
