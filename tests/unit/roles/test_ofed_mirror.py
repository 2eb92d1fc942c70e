"""The ofed role's offline bundle from gpufabric_ofed_mirror (the action plugin of gpufabric.mlnx.ofed_driver, in the
role's one task, before the module reads the driver): <mirror>/<file name of source.path> fetched from python's
http.server on 127.0.0.1 to source.path, verified by the matrix's sha256; a bundle with another sha256 fails naming the
bundle, the URL and both checksums and is not kept; a mirror URL outside the grammar fails naming the variable before
anything is fetched or read.

The module runs after the fetch on this machine (a local connection): told it is a dnf host, it refuses the tarball
before it runs any command ("not supported on dnf hosts") - its refusal is the sign that it ran after the fetch."""
import hashlib

import yaml

from _mirror import serving
from _roleplay import matrix, play, run

HOST = "srv-r01-01"
BUNDLE = b"DOCA-OFED bundle stand-in\n"


DNF_REFUSAL = "gpufabric_matrix.driver.source.type tarball is not supported on dnf hosts by this role"


def fetch(tmp_path, mirror, sha256):
    spec = {"flavour": "doca-ofed", "version": "24.10-2.1.8.0", "dkms": True,
            "source": {"type": "tarball", "path": str(tmp_path / "host" / "ofed" / "doca-ofed-24.10.tgz"),
                       "sha256": sha256}}
    playbook = yaml.safe_dump([{"hosts": "servers", "gather_facts": False, "tasks": [
        {"name": "The bundle from the mirror", "gpufabric.mlnx.ofed_driver": {
            "driver": {"name": "m", "driver": spec}, "state": "pinned", "package_manager": "dnf",
            "mirror": mirror, "mirror_timeout": 10}}]}])
    return run(tmp_path, {HOST: {}}, playbook), tmp_path / "host" / "ofed" / "doca-ofed-24.10.tgz"


def test_the_bundle_comes_from_the_mirror_verified_by_its_sha256(tmp_path):
    (tmp_path / "mirror" / "ofed").mkdir(parents=True)
    (tmp_path / "mirror" / "ofed" / "doca-ofed-24.10.tgz").write_bytes(BUNDLE)
    good = hashlib.sha256(BUNDLE).hexdigest()
    with serving(tmp_path / "mirror") as mirror:
        ran, bundle = fetch(tmp_path, mirror.url + "/ofed", good)
        assert DNF_REFUSAL in ran.failures()[HOST], ran                 # the module ran after the fetch
        assert mirror.asked == ["/ofed/doca-ofed-24.10.tgz"]
        assert bundle.read_bytes() == BUNDLE
        assert oct(bundle.stat().st_mode & 0o777) == "0o644" and oct(bundle.parent.stat().st_mode & 0o777) == "0o755"
        ran, bundle = fetch(tmp_path, mirror.url + "/ofed", good)      # there with that sha256: not fetched again
        assert DNF_REFUSAL in ran.failures()[HOST], ran
        assert mirror.asked == ["/ofed/doca-ofed-24.10.tgz"]


def test_a_wrong_sha256_fails_naming_bundle_url_and_both_checksums(tmp_path):
    (tmp_path / "mirror" / "ofed").mkdir(parents=True)
    (tmp_path / "mirror" / "ofed" / "doca-ofed-24.10.tgz").write_bytes(BUNDLE)
    wrong = "cd" * 32
    with serving(tmp_path / "mirror") as mirror:
        ran, bundle = fetch(tmp_path, mirror.url + "/ofed", wrong)
        url = mirror.url + "/ofed/doca-ofed-24.10.tgz"
    assert not ran.ok
    msg = ran.failures()[HOST]
    got = hashlib.sha256(BUNDLE).hexdigest()
    assert msg == ("srv-r01-01: nothing was changed - driver bundle doca-ofed-24.10.tgz from %s: sha256 %s received, but "
                   "gpufabric_matrix.driver.source.sha256 is %s (not kept)" % (url, got, wrong)), msg
    assert not bundle.exists()


def test_a_mirror_url_outside_the_grammar_is_refused_by_name(tmp_path):
    ran, bundle = fetch(tmp_path, "http://mirror.example/ofed $(reboot)", "ab" * 32)
    assert not ran.ok
    assert "srv-r01-01: gpufabric_ofed_mirror is \"http://mirror.example/ofed $(reboot)\": allowed is an http:// or " \
           "https:// base URL" in ran.failures()[HOST], ran
    assert not bundle.parent.exists()


def test_the_role_fetches_from_the_mirror_before_it_reads_the_driver(tmp_path):
    """The role's one task passes gpufabric_ofed_mirror to the action plugin, which checks and fetches before the
    module runs: a bad mirror URL stops the role there, naming it - the module never ran (no package manager in the result),
    and the role ran no other task."""
    ran = run(tmp_path, {HOST: {"gpufabric_matrix": matrix("ofed-mirror", {}),
                                "gpufabric_ofed_mirror": "http://mirror.example/ofed?latest"}}, play("ofed"))
    assert not ran.ok
    assert "srv-r01-01: gpufabric_ofed_mirror is \"http://mirror.example/ofed?latest\"" in ran.failures()[HOST], ran
    names = [name for name in ran.results(HOST, "gpufabric.mlnx.ofed : ") if "Validating arguments" not in name]
    assert names == ["gpufabric.mlnx.ofed : Install the pinned NIC driver and hold it there (refused before any change "
                     "when it must not be)"], names
    assert "package_manager" not in ran.results(HOST, "gpufabric.mlnx.ofed : ")[names[0]]
