"""The pure decision of the mlxconfig module: what to set, what is pending, what is refused."""
import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidParameter, InvalidValue
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mlxconfig import (
    expand_arrays, normalize_desired, pending, plan, set_args)

DEV = "0000:18:00.0"
PARAMS = {
    "SRIOV_EN": {"default": "False(0)", "current": "False(0)", "next": "True(1)", "modified": True},
    "NUM_OF_VFS": {"default": "8", "current": "8", "next": "8", "modified": False},
    "LINK_TYPE_P1": {"default": "IB(1)", "current": "ETH(2)", "next": "ETH(2)", "modified": True},
    "PCI_WR_ORDERING": {"default": "per_mkey(0)", "current": "per_mkey(0)", "next": "per_mkey(0)"},
    "MODULE_SPLIT_M0": {"default": "Array[0..15]", "current": "Array[0..15]", "next": "Array[0..15]"},
    "ROCE_CC_PRIO_MASK_P1": {"default": "255", "current": "255", "next": "255"},
    "CQE_COMPRESSION": {"default": "BALANCED(0)", "current": "N/A", "next": "BALANCED(0)"},
    "DEVICE_ID": {"next": "4129", "read_only": True},
}


def test_nothing_to_do_when_every_spelling_matches():
    desired = normalize_desired({"sriov_en": "true", "num_of_vfs": 8, "LINK_TYPE_P1": "eth",
                                 "pci_wr_ordering": "PER_MKEY(0)"})
    decision = plan(DEV, PARAMS, desired)
    assert decision["set"] == {}
    assert decision["before"] == decision["after"] == {
        "SRIOV_EN": "True(1)", "NUM_OF_VFS": "8", "LINK_TYPE_P1": "ETH(2)", "PCI_WR_ORDERING": "per_mkey(0)"}


def test_only_differences_are_set():
    desired = normalize_desired({"SRIOV_EN": False, "NUM_OF_VFS": 8, "LINK_TYPE_P1": "IB"})
    decision = plan(DEV, PARAMS, desired)
    assert decision["set"] == {"SRIOV_EN": "False", "LINK_TYPE_P1": "IB"}
    assert decision["before"]["SRIOV_EN"] == "True(1)"
    assert decision["after"] == {"SRIOV_EN": "False", "NUM_OF_VFS": "8", "LINK_TYPE_P1": "IB"}
    assert set_args(DEV, decision["set"]) == ["-d", DEV, "-y", "set", "LINK_TYPE_P1=IB", "SRIOV_EN=False"]


def test_unknown_parameter_suggests_close_names_from_the_device():
    with pytest.raises(InvalidParameter) as err:
        plan(DEV, PARAMS, normalize_desired({"SRIOV_ENABLE": True}))
    assert err.value.device == DEV and err.value.parameter == "SRIOV_ENABLE"
    assert "SRIOV_EN" in err.value.allowed and "Did you mean SRIOV_EN" in err.value.msg


@pytest.mark.parametrize("name, value, allowed", [
    ("SRIOV_EN", "maybe", "True, False, 1 or 0"),
    ("SRIOV_EN", 5, "True, False, 1 or 0"),
    ("NUM_OF_VFS", "many", "a whole number"),
])
def test_value_outside_type(name, value, allowed):
    with pytest.raises(InvalidValue) as err:
        plan(DEV, PARAMS, {name: value})
    assert err.value.parameter == name and err.value.allowed == allowed and DEV in err.value.msg


def test_read_only_refused():
    with pytest.raises(InvalidValue, match="DEVICE_ID is read-only"):
        plan(DEV, PARAMS, {"DEVICE_ID": 1})


def test_array_summary_needs_expansion():
    desired = normalize_desired({"MODULE_SPLIT_M0[0..1]": 1})
    assert desired == {"MODULE_SPLIT_M0[0]": 1, "MODULE_SPLIT_M0[1]": 1}
    assert expand_arrays(PARAMS, desired) == ["MODULE_SPLIT_M0[0..15]"]
    with pytest.raises(InvalidParameter):
        plan(DEV, PARAMS, desired)
    expanded = dict(PARAMS, **{"MODULE_SPLIT_M0[0]": {"next": "1"}, "MODULE_SPLIT_M0[1]": {"next": "0"}})
    assert plan(DEV, expanded, desired)["set"] == {"MODULE_SPLIT_M0[1]": "1"}


def test_pending_lists_every_parameter_next_differs_from_current():
    assert pending(PARAMS) == {"SRIOV_EN": {"current": "False(0)", "next": "True(1)"}}


# An Ethernet-only card (ConnectX-6 Dx EN): its query has no LINK_TYPE parameter at all.
ETH_ONLY = {name: entry for name, entry in PARAMS.items() if not name.startswith("LINK_TYPE")}


def test_link_type_eth_on_an_ethernet_only_card_is_not_applicable_and_not_written():
    """One profile for ConnectX-7 (VPI) and ConnectX-6 Dx EN cards: LINK_TYPE_P1=ETH holds on the Ethernet-only card."""
    decision = plan(DEV, ETH_ONLY, normalize_desired({"LINK_TYPE_P1": "ETH", "SRIOV_EN": False}))
    assert decision["set"] == {"SRIOV_EN": "False"}
    assert decision["not_applicable"] == {"LINK_TYPE_P1": "n/a: Ethernet-only card has no LINK_TYPE (its ports are Ethernet)"}
    assert "LINK_TYPE_P1" not in decision["before"] and "LINK_TYPE_P1" not in decision["after"]


@pytest.mark.parametrize("params, desired", [
    (ETH_ONLY, {"LINK_TYPE_P1": "IB"}),        # an Ethernet-only card cannot run InfiniBand
    (PARAMS, {"LINK_TYPE_P2": "ETH"}),         # a VPI card without a second port
    (ETH_ONLY, {"LINK_TYPE_X": "ETH"}),        # not a port's LINK_TYPE
])
def test_other_missing_parameters_still_fail(params, desired):
    with pytest.raises(InvalidParameter) as err:
        plan(DEV, params, normalize_desired(desired))
    assert err.value.parameter == list(desired)[0]


def test_a_parameter_the_card_has_is_never_not_applicable():
    assert plan(DEV, PARAMS, normalize_desired({"LINK_TYPE_P1": "ETH"}))["not_applicable"] == {}


def test_null_resets_a_parameter_to_the_firmware_default():
    """A parameter taken out of a profile is given back by naming it with null (docs/operations.md, roll back)."""
    decision = plan(DEV, PARAMS, normalize_desired({"SRIOV_EN": None, "LINK_TYPE_P1": None, "NUM_OF_VFS": None}))
    assert decision["set"] == {"SRIOV_EN": "False", "LINK_TYPE_P1": "IB"}      # NUM_OF_VFS is at its default (8)
    assert decision["after"] == {"SRIOV_EN": "False", "LINK_TYPE_P1": "IB", "NUM_OF_VFS": "8"}


@pytest.mark.parametrize("name", ["MODULE_SPLIT_M0", "DEVICE_ID"])
def test_null_without_a_reported_default_is_refused_naming_the_device(name):
    with pytest.raises(InvalidValue) as err:
        plan(DEV, PARAMS, {name: None})
    assert err.value.device == DEV and err.value.parameter == name


def test_the_drift_of_a_null_is_against_the_default():
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._mlxconfig import drift
    out = drift(PARAMS, {"SRIOV_EN": None, "NUM_OF_VFS": None, "MODULE_SPLIT_M0": None})
    assert {name: (entry["desired"], entry["state"]) for name, entry in out.items()} == {
        "SRIOV_EN": ("False(0)", "drift"), "NUM_OF_VFS": ("8", "ok"), "MODULE_SPLIT_M0": ("Array[0..15]", "unknown")}
