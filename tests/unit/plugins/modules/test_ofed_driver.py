"""The ofed_driver module: arguments, results, check mode and failures on the fake host of
tests/unit/plugins/module_utils/test_ofed.py (AptHost, on tests/_fakehost.py)."""
import pytest
from _modules import run_module

from ansible_collections.gpufabric.mlnx.plugins.modules import ofed_driver
from unit.plugins.module_utils.test_ofed import URL, V1, V2, AptHost, driver


@pytest.fixture
def run(monkeypatch, tmp_path):
    def _run(args, check=False, **host):
        fake = AptHost(tmp_path / "root", **host)
        monkeypatch.setattr(ofed_driver, "Host", fake.host)
        monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
        failed, out = run_module(ofed_driver, args, check=check)
        return failed, out, fake
    return _run


REPO = {"url": URL, "trusted": True, "sources_file": "/etc/apt/sources.list.d/gpufabric-ofed.sources"}


def test_query_changes_nothing(run):
    failed, out, fake = run({"driver": driver("25.01-0.6.0.0"), "repository": REPO},
                            installed=V1, release="24.10-2.1.8")
    assert not failed and out["changed"] is False and out["action"] == "upgrade"
    assert out["msg"].startswith("would upgrade doca-ofed 25.01-0.6.0.0: doca-ofed=2.10.0-0.5.3")
    assert out["repository"]["probed"] and out["repository"]["available"]["doca-ofed"] == ["2.9.2-0.0.3", "2.10.0-0.5.3"]
    assert fake.installed == V1


def test_present_installs_and_reports_the_reboot(run):
    failed, out, fake = run({"driver": driver(), "state": "present", "repository": REPO})
    assert not failed and out["changed"] and out["action"] == "install" and fake.installed == V1
    assert out["reboot_required"] and out["msg"].endswith("; reboot (or driver restart) required")
    assert out["msg"].startswith("installed doca-ofed 24.10-2.1.8.0: ")


def test_check_mode_predicts(run):
    failed, out, fake = run({"driver": driver(), "state": "present", "repository": REPO}, check=True)
    assert not failed and out["changed"] and out["installed"] == [] and len(out["would_install"]) == 4
    assert fake.installed == {} and out["msg"].startswith("would install doca-ofed")


def test_refusal_is_one_clear_failure(run):
    failed, out, fake = run({"driver": driver(), "state": "present", "repository": REPO},
                            installed=V2, release="25.01-0.6.0")
    assert failed and "refusing to downgrade" in out["msg"]
    assert out["parameter"] == "gpufabric_matrix.driver.version" and fake.commands("apt-get") == []


def test_bad_matrix_entry(run):
    failed, out, _fake = run({"driver": {"flavour": "doca-ofed"}})
    assert failed and out["parameter"] == "gpufabric_matrix.driver"
    assert "gpufabric_matrix.driver.version: required" in out["msg"]


@pytest.mark.parametrize("change, option, words", [
    ({"url": "mirror.example/doca/ubuntu22.04"}, "repository.url", "is not a URL (allowed: https://, http:// or file://"),
    ({"url": "ftp://mirror.example/doca"}, "repository.url", "is not a URL"),
    ({"url": "https://mirror.example/doca repo"}, "repository.url", "is not a URL"),
    ({"suite": "jammy"}, "repository.components", 'required when the suite "jammy" is a distribution name'),
    ({"suite": "./", "components": ["main"]}, "repository.components", "a flat repository"),
    ({"signed_by": "keys/doca.pub"}, "repository.signed_by", "is not an absolute path"),
    ({"key_url": "mirror.example/doca.pub"}, "repository.key_url", "is not a URL"),
    ({"sources_file": "sources.list.d/x.sources"}, "repository.sources_file", "is not an absolute path"),
])
def test_the_modules_own_repository_is_checked_before_anything_runs(run, change, option, words):
    # the role checks these too; a task that calls the module directly gets the same refusal, with no command run
    failed, out, fake = run({"driver": driver(), "state": "present", "repository": dict(REPO, **change)})
    assert failed and out["parameter"] == option, out
    assert "%s: " % option in out["msg"] and words in out["msg"], out["msg"]
    assert fake.installed == {} and fake.calls == []


@pytest.mark.parametrize("state_dir, words", [("var/lib/gpufabric", "is not an absolute path"),
                                              ("/var/lib/../../etc", "has a .. component")])
def test_a_state_dir_that_is_not_an_absolute_directory_is_refused(run, state_dir, words):
    failed, out, fake = run({"driver": driver(), "state": "present", "repository": REPO, "state_dir": state_dir})
    assert failed and out["parameter"] == "state_dir" and words in out["msg"], out
    assert fake.calls == []


def test_pinned_returns_the_role_facts_and_the_diffs(run):
    matrix = {"name": "lab-1", "driver": driver()}
    failed, out, fake = run({"driver": matrix, "state": "pinned", "apt_trusted": True, "restart_driver": True,
                             "restart_command": ["/etc/init.d/openibd", "restart"], "mgmt_interface": "ibp24s0"})
    assert not failed, out
    assert fake.installed == V1 and out["changed"]
    facts = out["ansible_facts"]
    assert facts["gpufabric_ofed_changed"] is True and facts["gpufabric_ofed_reboot_required"] is True
    result = facts["gpufabric_ofed_result"]
    assert result["action"] == "install" and result["installed"] == sorted("%s=%s" % kv for kv in V1.items())
    assert result["msg"] == "installed doca-ofed 24.10-2.1.8.0: %s; reboot (or driver restart) required" % (
        ", ".join(result["installed"]))
    assert result["restart"]["done"] is False and "ibp24s0 depends on the mlx5 driver" in result["restart"]["reason"]
    assert out["msg"] == result["msg"] + "; driver not restarted: " + result["restart"]["reason"]
    assert out["diff"][0] == {
        "before": {"driver": "no driver (doca-ofed=(not installed), mlnx-ofed-kernel-modules=(not installed), "
                             "mlnx-ofed-kernel-utils=(not installed), ofed-scripts=(not installed))"},
        "after": {"driver": "doca-ofed 24.10-2.1.8.0 (%s)" % ", ".join(result["installed"])}}
    files = ["/etc/apt/sources.list.d/gpufabric-ofed.sources", "/etc/apt/preferences.d/gpufabric-ofed.pref"]
    assert [d["after_header"] for d in out["diff"][1:]] == files
    assert "# Managed by gpufabric.mlnx (ofed role): gpufabric_matrix lab-1, doca-ofed 24.10-2.1.8.0." in \
        out["diff"][1]["after"]
    assert "changes" not in out and "driver_changed" not in out


def test_other_states_return_no_facts(run):
    failed, out, _fake = run({"driver": driver(), "repository": REPO}, installed=V1, release="24.10-2.1.8")
    assert not failed and "ansible_facts" not in out and "diff" not in out


def test_pinned_check_mode_shows_the_driver_change_and_a_rerun_no_diff(run):
    args = {"driver": driver("25.01-0.6.0.0"), "state": "pinned", "apt_trusted": True}
    failed, out, fake = run(args, check=True, installed=V1, release="24.10-2.1.8")
    assert not failed and out["changed"] and fake.installed == V1
    assert out["diff"][0] == {
        "before": {"driver": "OFED-internal-24.10-2.1.8 (doca-ofed=2.9.2-0.0.3, "
                             "mlnx-ofed-kernel-modules=24.10.OFED.24.10.2.1.8.1-1, "
                             "mlnx-ofed-kernel-utils=24.10.OFED.24.10.2.1.8.1-1, ofed-scripts=24.10.OFED.24.10.2.1.8-1)"},
        "after": {"driver": "doca-ofed 25.01-0.6.0.0 (%s)" % ", ".join("%s=%s" % kv for kv in sorted(V2.items()))}}
    assert out["ansible_facts"]["gpufabric_ofed_changed"] is True
    assert out["msg"].startswith("would upgrade doca-ofed 25.01-0.6.0.0: ")


def test_pinned_on_a_compliant_host_shows_the_files_it_writes_and_no_driver_change(run):
    failed, out, _fake = run({"driver": driver(), "state": "pinned", "apt_trusted": True}, installed=V1,
                             release="24.10-2.1.8")
    assert not failed and out["changed"]        # the files were not there yet: written, with their diffs
    files = ["/etc/apt/sources.list.d/gpufabric-ofed.sources", "/etc/apt/preferences.d/gpufabric-ofed.pref"]
    assert [d["after_header"] for d in out["diff"]] == files
    assert out["ansible_facts"]["gpufabric_ofed_changed"] is False
