"""Version comparison (plugins/module_utils/_versions.py): firmware, the driver release, Debian (checked
against dpkg itself when it is installed) and RPM package versions."""
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _versions as vs


# ---------------------------------------------------------------------------------- firmware

@pytest.mark.parametrize("older, newer", [
    ("28.39.1002", "28.43.1014"),
    ("28.9.1000", "28.10.1000"),      # numeric, not text
    ("22.43.1014", "28.39.1002"),
    ("16.35.2000", "16.35.4030"),
])
def test_version_order(older, newer):
    assert vs.version_key(older) < vs.version_key(newer)


@pytest.mark.parametrize("bad", ["28.43.x", "", "rel-14_14_2320", "N/A", "28..43"])
def test_version_rejects_words(bad):
    with pytest.raises(ValueError):
        vs.version_key(bad)


# ---------------------------------------------------------------------------------- the driver release

@pytest.mark.parametrize("a, b, same, cmp", [
    ("24.10-2.1.8.0", "24.10-2.1.8", True, 0),       # DOCA's ofed_info -s drops the trailing .0
    ("24.10-2.1.8.0", "24.10-2.1.8.1", False, -1),
    ("25.01-0.6.0.0", "24.10-2.1.8.0", False, 1),
    ("5.8-1.1.2.1", "24.10-1.1.4.0", False, -1),
    ("24.10-0.0.0.0", "24.10-0", True, 0),
    ("not-a-version", "24.10-2.1.8", False, None),
])
def test_driver_versions(a, b, same, cmp):
    assert vs.same_driver(a, b) is same
    assert vs.compare_driver(a, b) == cmp


# ---------------------------------------------------------------------------------- Debian and RPM packages

@pytest.mark.parametrize("a, b, want", [
    ("2.9.2-0.0.3", "2.10.0-0.5.3", -1),
    ("25.01.OFED.25.01.0.6.0.1-0nokmod1", "25.01.OFED.25.01.0.6.0.1-1", -1),
    ("1:1.0", "2.0", 1),
    ("1.0~rc1", "1.0", -1),
    ("1.0", "1.0-0", 0),
    ("1.0a", "1.0+", -1),
    ("24.10.OFED.24.10.2.1.8-1", "24.10.OFED.24.10.2.1.8-1", 0),
])
def test_deb_compare_table(a, b, want):
    assert vs.deb_compare(a, b) == want
    first, second = b, a
    assert vs.deb_compare(first, second) == -want


_DEB_VERSION = st.builds(
    lambda epoch, up, rev: ("%d:" % epoch if epoch else "") + up + ("-" + rev if rev else ""),
    st.integers(0, 2),
    st.from_regex(r"\A[0-9][0-9a-z.+~]{0,8}\Z"),
    st.one_of(st.just(""), st.from_regex(r"\A[0-9a-z.+~]{1,6}\Z")))


@pytest.mark.skipif(not shutil.which("dpkg"), reason="dpkg is not installed")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_DEB_VERSION, _DEB_VERSION)
def test_deb_compare_agrees_with_dpkg(a, b):
    def dpkg(op):
        return subprocess.run(["dpkg", "--compare-versions", a, op, b], check=False).returncode == 0
    want = -1 if dpkg("lt") else (0 if dpkg("eq") else 1)
    assert vs.deb_compare(a, b) == want


@pytest.mark.parametrize("a, b, want", [
    ("1.0", "1.0", 0), ("1.0", "2.0", -1), ("2.0.1", "2.0.1a", -1), ("5.5p1", "5.5p2", -1),
    ("5.5p10", "5.5p1", 1), ("10xyz", "10.1xyz", -1), ("xyz10", "xyz10.1", -1), ("1.0aa", "1.0a", 1),
    ("a", "1", -1), ("1.0~rc1", "1.0", -1), ("1.0~rc1", "1.0~rc2", -1), ("1.0^", "1.0", 1),
    ("1.0^git1", "1.01", -1), ("1.0~rc1^git1", "1.0~rc1", 1), ("1.0", "1.0.0", -1), ("1:1.0", "2.0", 1),
    ("2.9.2-0.0.3.el9", "2.9.2-0.0.4.el9", -1), ("2.9.2-1.el9", "2.9.2", 0),
])
def test_rpm_compare_table(a, b, want):
    assert vs.rpm_compare(a, b) == want
    first, second = b, a
    assert vs.rpm_compare(first, second) == -want


def test_upstream_version():
    assert vs.upstream_version("1:24.10.OFED.24.10.2.1.8.1-1") == "24.10.OFED.24.10.2.1.8.1"
    assert vs.upstream_version("5.8") == "5.8"


def test_a_driver_version_is_ascii_digits_only():
    """\\d without re.ASCII took Arabic-Indic and full-width digits, which int() then read as numbers."""
    from ansible_collections.gpufabric.mlnx.plugins.module_utils._versions import driver_key
    assert driver_key("24.10-2.1.8.0") == ((24, 10), (2, 1, 8))
    for text in ("\u0662\u0664.10-2.1.8", "24.10-2.1.\uff18", "24.10-2.1.8\u2028"):
        assert driver_key(text) is None
