"""ofed_info -s / -n (_parsers/ofed_info.py): MLNX_OFED and DOCA-OFED version lines."""
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import parse

from ._captures import capture_test, checks, section

CHECKS, check = checks()


@check("ofed_info_s_1.txt")
def _ofed_info_s(text):
    assert parse("ofed_info", section(text, "ofed_info -s", "ofed_info -n")) == {
        "version": "5.4-3.1.0.0", "flavour": "mlnx-ofed", "raw": "MLNX_OFED_LINUX-5.4-3.1.0.0"}
    assert parse("ofed_info", section(text, "ofed_info -n")) == {
        "version": "5.4-3.1.0.0", "flavour": None, "raw": "5.4-3.1.0.0"}


test_capture = capture_test(CHECKS)


def test_ofed_info_doca_and_plain():
    assert parse("ofed_info", "OFED-internal-24.10-1.1.4:\n") == {
        "version": "24.10-1.1.4", "flavour": "doca-ofed", "raw": "OFED-internal-24.10-1.1.4"}
    assert parse("ofed_info", ["MLNX_OFED_LINUX-5.8-1.1.2.1 (OFED-5.8-1.1.2):", "", "clusterkit:"]) == {
        "version": "5.8-1.1.2.1", "flavour": "mlnx-ofed", "raw": "MLNX_OFED_LINUX-5.8-1.1.2.1"}
