"""The one table of value normalisers: every spelling of a value compares equal."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _values as values


@pytest.mark.parametrize("desired, printed", [
    (True, "True(1)"), ("true", "True(1)"), ("TRUE", "True(1)"), (1, "True(1)"), ("1", "True(1)"),
    ("True(1)", "True(1)"), (False, "False(0)"), ("false", "False(0)"), (0, "False(0)"),
    ("ETH", "ETH(2)"), ("eth", "ETH(2)"), (2, "ETH(2)"), ("2", "ETH(2)"), ("ETH(2)", "ETH(2)"),
    ("per_mkey", "per_mkey(0)"), ("PER_MKEY", "per_mkey(0)"), ("_256KB", "_256KB(1)"),
    (8, "8"), ("8", "8"), ("0x10", "16"), (254, "254"),
])
def test_equal_spellings(desired, printed):
    assert values.equal(desired, printed)


@pytest.mark.parametrize("desired, printed", [
    (True, "False(0)"), ("IB", "ETH(2)"), (1, "ETH(2)"), (7, "8"), ("force_relax", "per_mkey(0)"),
    ("N/A", "0"),
])
def test_different(desired, printed):
    assert not values.equal(desired, printed)


@pytest.mark.parametrize("value, token", [
    (True, "True"), (False, "False"), (8, "8"), ("ETH(2)", "ETH"), ("eth", "eth"), ("0x10", "0x10"),
])
def test_cli_token(value, token):
    assert values.cli_token(value) == token


@pytest.mark.parametrize("printed, kind", [
    ("True(1)", "bool"), ("False(0)", "bool"), ("ETH(2)", "enum"), ("8", "number"),
    ("Array[0..7]", "other"), ("N/A", "other"),
])
def test_kind_of(printed, kind):
    assert values.kind_of(printed) == kind


def test_invalid_for_bool_and_number():
    assert values.invalid_for("True(1)", "maybe") == ("is a boolean", "True, False, 1 or 0")
    assert values.invalid_for("True(1)", 2) is not None
    assert values.invalid_for("True(1)", "false") is None
    assert values.invalid_for("8", "lots") == ("is a number", "a whole number")
    assert values.invalid_for("ETH(2)", "IB") is None


def test_normalize_rejects_other_types():
    with pytest.raises(TypeError, match="boolean, a number or a string"):
        values.normalize([1])
