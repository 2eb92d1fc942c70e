"""The ofed_spec and ofed_apt_files filters."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.mlnx.plugins.filter.ofed_apt_files import FilterModule as AptFiles
from ansible_collections.gpufabric.mlnx.plugins.filter.ofed_spec import FilterModule as Spec
from unit.plugins.module_utils.test_ofed import URL, V1, driver

ofed_spec = Spec().filters()["ofed_spec"]
ofed_apt_files = AptFiles().filters()["ofed_apt_files"]


def test_ofed_spec():
    assert ofed_spec({"name": "r1", "driver": driver()})["source"]["packages"] == V1
    with pytest.raises(AnsibleFilterError, match="gpufabric_matrix.driver.source.type: must be one of apt, dnf, tarball"):
        ofed_spec({"driver": driver(source={"type": "zypper"})})


def test_ofed_apt_files():
    files = ofed_apt_files({"url": URL, "signed_by": "/etc/apt/keyrings/k.gpg"}, {"doca-ofed": "2.9.2-0.0.3"},
                           comment="gpufabric_matrix r1")
    assert files["sources"]["path"] == "/etc/apt/sources.list.d/gpufabric-ofed.sources"
    assert files["sources"]["content"].startswith("# Managed by gpufabric.mlnx (ofed role): gpufabric_matrix r1.")
    assert "Signed-By: /etc/apt/keyrings/k.gpg\n" in files["sources"]["content"]
    assert files["preferences"]["path"] == "/etc/apt/preferences.d/gpufabric-ofed.pref"
    assert files["preferences"]["content"].endswith("Package: doca-ofed\nPin: version 2.9.2-0.0.3\nPin-Priority: 1001\n")
    listed = ofed_apt_files({"url": URL}, {"a": "1"}, name="nic", format="list")
    assert listed["sources"]["path"] == "/etc/apt/sources.list.d/nic.list"


@pytest.mark.parametrize("args, match", [
    (({"suite": "./"}, {"a": "1"}), "must be the repository"),
    (({"url": URL}, {}), "packages must map"),
    (({"url": URL}, {"a": "1"}, "bad/name"), "name 'bad/name'"),
    (({"url": URL}, {"a": "1"}, "n", "yaml"), "format must be deb822 or list"),
    (({"url": URL}, {"a": "1"}, "n", "list", "lab-1\nURIs: http://evil/"), "must be one line without control"),
    (({"url": URL}, {"a": "1"}, "n", "list", "x\x1b[2J"), "must be one line without control"),
    (({"url": URL}, {"a": "1"}, "n", "list", "x" * 401), "must be one line without control"),
])
def test_ofed_apt_files_refuses(args, match):
    with pytest.raises(AnsibleFilterError, match=match):
        ofed_apt_files(*args)


def test_ofed_apt_files_takes_a_comment_of_one_line_up_to_400_characters():
    files = ofed_apt_files({"url": URL}, {"a": "1"}, "n", "list", "é" + "x" * 399)
    assert files["sources"]["content"].startswith("# Managed by gpufabric.mlnx (ofed role): é" + "x" * 399 + ". ")
