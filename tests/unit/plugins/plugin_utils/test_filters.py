"""The filter-error wrapper: the collection's errors reach Ansible as AnsibleFilterError, others pass."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import ParseError
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors


def test_named_filter_prefixes_the_sentence():
    @filter_errors("fw_targets")
    def broken(value):
        raise InvalidValue("host gpu-01: firmware must be a mapping, not %r" % (value,))

    with pytest.raises(AnsibleFilterError) as err:
        broken(3)
    assert err.value.message == "fw_targets: host gpu-01: firmware must be a mapping, not 3"
    assert isinstance(err.value.orig_exc, InvalidValue)
    # raised "from" the core error: orig_exc alone makes ansible-core 2.19 warn on every failed filter
    assert err.value.__cause__ is err.value.orig_exc


def test_unnamed_filter_keeps_the_sentence_and_parse_errors_are_caught():
    @filter_errors()
    def broken():
        raise ParseError("mlxconfig_q", "not mlxconfig output", line="x", lineno=3)

    with pytest.raises(AnsibleFilterError) as err:
        broken()
    assert err.value.message == "mlxconfig_q: not mlxconfig output (line 3: 'x')"


def test_results_and_foreign_errors_pass_through():
    @filter_errors("x")
    def ok(a, b=1):
        return a + b

    @filter_errors("x")
    def bug():
        raise KeyError("k")

    assert ok(1, b=2) == 3
    assert ok.__name__ == "ok"
    with pytest.raises(KeyError):
        bug()
