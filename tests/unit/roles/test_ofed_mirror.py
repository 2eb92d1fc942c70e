"""The ofed role's offline bundle from gpufabric_ofed_mirror (tasks/mirror.yml, included by tasks/main.yml before the
driver is read): <mirror>/<file name of source.path> fetched from python's http.server on 127.0.0.1 to source.path,
verified by the matrix's sha256; a bundle with another sha256 fails naming the bundle, the URL and both checksums and
is not kept; a mirror URL outside the grammar fails naming the variable before anything is fetched or read."""
import hashlib

import yaml

from _mirror import serving
from _roleplay import matrix, play, run

HOST = "srv-r01-01"
BUNDLE = b"DOCA-OFED bundle stand-in\n"


def fetch(tmp_path, mirror, sha256):
    spec = {"flavour": "doca-ofed", "version": "24.10-2.1.8.0",
            "source": {"type": "tarball", "path": str(tmp_path / "host" / "ofed" / "doca-ofed-24.10.tgz"),
                       "sha256": sha256}}
    playbook = yaml.safe_dump([{"hosts": "servers", "gather_facts": False, "tasks": [
        {"name": "The bundle from the mirror", "ansible.builtin.include_role": {
            "name": "gpufabric.mlnx.ofed", "tasks_from": "mirror"},
         "vars": {"__gpufabric_ofed_spec": spec, "gpufabric_ofed_mirror": mirror}}]}])
    return run(tmp_path, {HOST: {}}, playbook), tmp_path / "host" / "ofed" / "doca-ofed-24.10.tgz"


def test_the_bundle_comes_from_the_mirror_verified_by_its_sha256(tmp_path):
    (tmp_path / "mirror" / "ofed").mkdir(parents=True)
    (tmp_path / "mirror" / "ofed" / "doca-ofed-24.10.tgz").write_bytes(BUNDLE)
    good = hashlib.sha256(BUNDLE).hexdigest()
    with serving(tmp_path / "mirror") as mirror:
        ran, bundle = fetch(tmp_path, mirror.url + "/ofed", good)
        assert ran.ok, ran
        assert mirror.asked == ["/ofed/doca-ofed-24.10.tgz"]
        assert bundle.read_bytes() == BUNDLE
        ran, bundle = fetch(tmp_path, mirror.url + "/ofed", good)      # there with that sha256: not fetched again
        assert ran.ok, ran
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
    """tasks/main.yml includes mirror.yml for a tarball source with a mirror, before the driver is read: a bad mirror
    URL stops the role there, naming it - no driver query ran."""
    ran = run(tmp_path, {HOST: {"gpufabric_matrix": matrix("ofed-mirror", {}),
                                "gpufabric_ofed_mirror": "http://mirror.example/ofed?latest"}}, play("ofed"))
    assert not ran.ok
    assert "srv-r01-01: gpufabric_ofed_mirror is \"http://mirror.example/ofed?latest\"" in ran.failures()[HOST], ran
    names = list(ran.results(HOST, "gpufabric.mlnx.ofed : "))
    assert not any(name.startswith("gpufabric.mlnx.ofed : Read the driver and decide") for name in names), names
    assert any("Where the bundle is on the mirror" in name for name in names), names
