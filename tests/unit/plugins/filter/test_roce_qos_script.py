"""The roce_qos_script filter is the module_utils function, errors as AnsibleFilterError."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.mlnx.plugins.filter.roce_qos_script import FilterModule


def test_filter_renders_and_refuses_bad_input():
    script = FilterModule().filters()["roce_qos_script"]
    text = script([{"interface": "enp24s0np0", "rdma_device": None,
                    "replay": [{"argv": ["mlnx_qos", "-i", "enp24s0np0", "--trust", "dscp"]}]}], "/", "/usr/sbin/x")
    assert "        run mlnx_qos -i enp24s0np0 --trust dscp\n" in text and "# interface's name on its" in text
    assert "/usr/sbin/x [INTERFACE|all]" in text
    with pytest.raises(AnsibleFilterError, match="each entry needs interface"):
        script(["enp24s0np0"])


def test_the_file_registers_both_filters():
    assert sorted(FilterModule().filters()) == ["roce_qos_problems", "roce_qos_script"]


def test_roce_qos_problems_filter():
    problems = FilterModule().filters()["roce_qos_problems"]
    assert problems({"cnp_dscp": 64}, "srv-r01-01") == [
        "srv-r01-01: roce_qos: cnp_dscp=64 is outside 0-63 (allowed: an integer 0-63)."]
    assert problems({"cnp_dscp": 64}, "srv-r01-01", ["cnp_dscp"]) == []
