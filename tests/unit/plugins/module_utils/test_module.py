"""Every int option of every module, given an infinite value ("INF", "-Infinity", 1e999): the module fails through
fail_json naming the option (ansible-core's own int check raises OverflowError there: a traceback before
_module.ansible_module), and a finite value of the same option is not refused for that reason."""
import pytest
import yaml
from _modules import run_module

from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import _ints_as_raw, _infinite_ints
from ansible_collections.gpufabric.mlnx.plugins.modules import (
    kernel_cmdline,
    mlx_firmware,
    mlx_fwreset,
    mlx_info,
    mlxconfig,
    nvue_config,
    nvue_image,
    nvue_info,
    ofed_driver,
    platform_power,
    rail_interfaces,
    roce_qos,
)

MODULES = [kernel_cmdline, mlx_firmware, mlx_fwreset, mlx_info, mlxconfig, nvue_config, nvue_image, nvue_info, ofed_driver,
           platform_power, rail_interfaces, roce_qos]
# The module's required options, with values that pass ansible-core's type checks.
REQUIRED = {"kernel_cmdline": {"args": []}, "mlx_firmware": {"images": []}, "ofed_driver": {"driver": {}},
            "rail_interfaces": {"rails": []}, "roce_qos": {"interfaces": []},
            "nvue_image": {"release": "5.11.0", "url": "http://mirror.example/cumulus-linux-5.11.0-mlx-amd64.bin",
                           "sha256": "09aeb9d4dbbd12cf01f140a20ea851575e23b37c04985d9d79a4a1ff5d8903ec"}}
INFINITE = ["INF", "-Infinity", "inf", 1e999, -1e999]


def name(module):
    return module.__name__.rsplit(".", 1)[-1]


def int_options(module):
    """The top-level options documented as int."""
    return [key for key, option in yaml.safe_load(module.DOCUMENTATION)["options"].items()
            if option.get("type") == "int"]


CASES = [(module, option) for module in MODULES for option in int_options(module)]


def test_the_modules_have_int_options_to_check():
    found = sorted((name(m), o) for m, o in CASES)
    assert found == [("mlx_firmware", "mirror_timeout"), ("mlx_fwreset", "reboot_timeout"),
                     ("nvue_config", "timeout"), ("nvue_image", "action_timeout"), ("nvue_image", "reboot_timeout"),
                     ("ofed_driver", "lock_timeout"), ("ofed_driver", "mirror_timeout"), ("ofed_driver", "timeout"),
                     ("rail_interfaces", "mtu"), ("rail_interfaces", "plan_hosts"), ("roce_qos", "plan_hosts"),
                     ("roce_qos", "timeout")]


@pytest.mark.parametrize("value", INFINITE, ids=repr)
@pytest.mark.parametrize("module,option", CASES, ids=lambda c: c if isinstance(c, str) else name(c))
def test_an_infinite_int_is_the_modules_failure_naming_the_option(module, option, value):
    failed, out = run_module(module, dict(REQUIRED.get(name(module), {}), **{option: value}))
    assert failed
    assert out["msg"] == "argument '%s' is %r, an infinite number (allowed: a whole number)" % (option, value), out


def test_suboptions_and_list_elements_are_named_by_their_path():
    spec = {"a": {"type": "int"}, "b": {"type": "list", "elements": "int"},
            "c": {"type": "dict", "options": {"d": {"type": "int"}}},
            "e": {"type": "list", "elements": "dict", "options": {"f": {"type": "int"}}}}
    raw = _ints_as_raw(spec)
    assert raw["a"]["type"] == "raw" and raw["b"]["elements"] == "raw" and raw["c"]["options"]["d"]["type"] == "raw"
    assert spec["a"]["type"] == "int" and spec["c"]["options"]["d"]["type"] == "int"      # the spec is not changed
    params = {"a": "inf", "b": [1, "-inf", "2"], "c": {"d": 1e999}, "e": [{"f": 3}, {"f": "Infinity"}, "x"]}
    assert list(_infinite_ints(spec, params, "")) == [("a", "inf"), ("b[1]", "-inf"), ("c.d", 1e999),
                                                      ("e[1].f", "Infinity")]
    assert list(_infinite_ints(spec, {"a": 3, "b": ["x"], "c": None, "e": None}, "")) == []
