"""module_utils/_files: the files a module keeps on the host - planned with the diff --check --diff shows, written
atomically with mode and owner, a validation that refuses leaving the old file, paths by a strict grammar."""
import os

import pytest

from _fakehost import FakeHost
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _files
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, MlnxError


def test_plan_then_write_then_nothing_to_do(tmp_path):
    fake = FakeHost(tmp_path)
    host = fake.host()
    fake.mkdir("/etc/x")
    new = _files.plan_file(host, "/etc/x/a.conf", "a = 1\n", mode=0o644)
    assert new == {"path": "/etc/x/a.conf", "changed": True, "reasons": ["created"],
                   "diff": [{"before_header": "/etc/x/a.conf", "after_header": "/etc/x/a.conf", "before": "",
                             "after": "a = 1\n"}]}
    assert not os.path.exists(fake.path("/etc/x/a.conf"))
    _files.write_file(host, "/etc/x/a.conf", "a = 1\n", mode=0o644)
    assert fake.get("/etc/x/a.conf") == "a = 1\n"
    assert os.stat(fake.path("/etc/x/a.conf")).st_mode & 0o7777 == 0o644
    assert _files.plan_file(host, "/etc/x/a.conf", "a = 1\n", mode=0o644)["changed"] is False
    changed = _files.plan_file(host, "/etc/x/a.conf", "a = 2\n", mode=0o600)
    assert changed["reasons"] == ["content", "mode"]
    assert changed["diff"] == [
        {"before_header": "/etc/x/a.conf", "after_header": "/etc/x/a.conf", "before": "a = 1\n", "after": "a = 2\n"},
        {"before": {"/etc/x/a.conf": {"mode": "0644"}}, "after": {"/etc/x/a.conf": {"mode": "0600"}}}]
    assert os.listdir(fake.path("/etc/x")) == ["a.conf"]        # no temporary file left


def test_converge_files_writes_only_outside_check_mode_and_makes_a_parent_when_asked(tmp_path):
    fake = FakeHost(tmp_path)
    host = fake.host()
    files = [{"path": "/etc/new/dir/b", "content": "b\n", "mode": 0o755, "make_parent": True}]
    assert [p["changed"] for p in _files.converge_files(host, files, check_mode=True)] == [True]
    assert not os.path.exists(fake.path("/etc/new"))
    _files.converge_files(host, files, check_mode=False)
    assert os.stat(fake.path("/etc/new/dir/b")).st_mode & 0o7777 == 0o755
    assert os.stat(fake.path("/etc/new/dir")).st_mode & 0o7777 == 0o755
    with pytest.raises(MlnxError, match="cannot write /etc/missing/c: "):
        _files.converge_files(host, [{"path": "/etc/missing/c", "content": "", "mode": 0o644}], check_mode=False)


def test_a_validation_that_refuses_leaves_the_old_file(tmp_path):
    fake = FakeHost(tmp_path, {"check": lambda args: (2, "", "line 1: bad\n")})
    fake.put("/etc/c.yaml", "old")
    with pytest.raises(MlnxError, match=r"^/etc/c.yaml was not written: check %s refused it \(rc=2\): line 1: bad$"):
        _files.write_file(fake.host(), "/etc/c.yaml", "new\n", mode=0o600, validate=["check", "%s"])
    assert fake.get("/etc/c.yaml") == "old\n" and os.listdir(tmp_path / "etc") == ["c.yaml"]
    assert fake.calls[0][1].startswith(fake.path("/etc/.gpufabric."))     # the temporary file, in the same directory


def test_a_directory_in_the_way_is_not_a_file(tmp_path):
    fake = FakeHost(tmp_path)
    fake.mkdir("/etc/d")
    with pytest.raises(MlnxError, match="^/etc/d is not a regular file; nothing was written$"):
        _files.plan_file(fake.host(), "/etc/d", "", mode=0o644)


@pytest.mark.parametrize("path", ["/usr/local/sbin/roce qos", "relative/x", "/a/../etc/passwd", "/a/", "/", "/a$b", "/a\nb",
                                  "/a'b", "/a*", "", None, 7])
def test_paths_outside_the_grammar_are_refused_naming_host_and_parameter(path):
    with pytest.raises(InvalidValue) as err:
        _files.check_path(path, "gpufabric_x_file", "srv-a")
    assert err.value.msg == ("srv-a: gpufabric_x_file=%r cannot be written into a udev rule, systemd unit or script: "
                             "allowed is an absolute path of ASCII letters, digits and _ . + - /" % (path,))


@pytest.mark.parametrize("path", ["/etc/udev/rules.d/90-x.rules", "/usr/local/sbin/gpufabric-roce-qos", "/a/.b"])
def test_paths_in_the_grammar(path):
    assert _files.check_path(path, "p") == path


@pytest.mark.parametrize("path, good", [("/etc/netplan/90 rails.yaml", True), ("/etc/x$y", True),
                                        ("/etc/a\nb", False), ("/etc/../x", False), ("/etc/", False),
                                        ("etc/x", False), ("/etc/\x00", False)])
def test_a_path_only_written_needs_to_be_an_absolute_file_path(path, good):
    """A file the module only writes (named in no rule or script): any absolute path of one line without '..'."""
    if good:
        assert _files.check_path(path, "netplan_file", named=False) == path
    else:
        with pytest.raises(InvalidValue, match="^netplan_file=.* is not a file the module can write: allowed is an "
                                               "absolute path of a file"):
            _files.check_path(path, "netplan_file", named=False)


# keep_file, remove_file (the ofed driver's repository files, pins and records)
files = _files


def mode(path):
    return oct(os.stat(path).st_mode & 0o777)


def test_keep_a_new_file_is_written_with_its_folder_and_a_diff(tmp_path):
    host = FakeHost(tmp_path).host()
    got = files.keep_file(host, "/etc/apt/preferences.d/x.pref", "Package: a\n")
    assert got == {"changed": True, "diff": {"before": "", "after": "Package: a\n",
                                             "before_header": "/etc/apt/preferences.d/x.pref",
                                             "after_header": "/etc/apt/preferences.d/x.pref"}}
    assert (tmp_path / "etc/apt/preferences.d/x.pref").read_text() == "Package: a\n"
    assert mode(tmp_path / "etc/apt/preferences.d/x.pref") == "0o644"
    assert mode(tmp_path / "etc/apt/preferences.d") == "0o755"
    assert os.listdir(tmp_path / "etc/apt/preferences.d") == ["x.pref"]     # no temporary file left


def test_keep_the_same_content_is_not_written_again(tmp_path):
    host = FakeHost(tmp_path).host()
    files.keep_file(host, "/f", "same\n")
    before = os.stat(tmp_path / "f").st_ino
    assert files.keep_file(host, "/f", "same\n") == {"changed": False, "diff": None}
    assert os.stat(tmp_path / "f").st_ino == before


def test_keep_another_content_replaces_the_file_and_shows_both(tmp_path):
    host = FakeHost(tmp_path).host()
    files.keep_file(host, "/f", "old\n")
    got = files.keep_file(host, "/f", "new\n")
    assert got["changed"] and got["diff"]["before"] == "old\n" and got["diff"]["after"] == "new\n"
    assert got["diff"]["before_header"] == "/f" and (tmp_path / "f").read_text() == "new\n"


def test_keep_a_wrong_mode_alone_is_fixed_without_a_diff(tmp_path):
    host = FakeHost(tmp_path).host()
    files.keep_file(host, "/f", "x\n")
    os.chmod(tmp_path / "f", 0o600)
    assert files.keep_file(host, "/f", "x\n", check_mode=True) == {"changed": True, "diff": None}
    assert mode(tmp_path / "f") == "0o600"                                  # check mode: untouched
    assert files.keep_file(host, "/f", "x\n") == {"changed": True, "diff": None}
    assert mode(tmp_path / "f") == "0o644"


def test_keep_check_mode_writes_nothing_but_reports_the_diff(tmp_path):
    host = FakeHost(tmp_path).host()
    got = files.keep_file(host, "/etc/x/f", "new\n", check_mode=True)
    assert got["changed"] and got["diff"]["after"] == "new\n" and not (tmp_path / "etc").exists()
    assert files.ensure_dir(host.path("/etc/x"), check_mode=True)["changed"] and not (tmp_path / "etc").exists()
    assert files.ensure_dir(host.path("/etc/x"), mode=0o750)["changed"] and mode(tmp_path / "etc/x") == "0o750"
    assert files.ensure_dir(host.path("/etc/x")) == {"changed": False, "diff": []}


def test_keep_remove(tmp_path):
    host = FakeHost(tmp_path).host()
    assert files.remove_file(host, "/f") is False
    files.keep_file(host, "/f", "x\n")
    assert files.remove_file(host, "/f", check_mode=True) is True and (tmp_path / "f").exists()
    assert files.remove_file(host, "/f") is True and not (tmp_path / "f").exists()


# ensure_file, ensure_dir, ensure_link on full paths (the platform module's udev rule and systemd unit)
ME = os.getuid()
OWNER = {"owner": None, "group": None}   # the test user owns what it writes: leave owner and group


def test_a_new_file_is_written_with_its_mode_and_a_diff_from_nothing(tmp_path):
    path = str(tmp_path / "rules.d" / "90-x.rules")
    done = _files.ensure_file(path, "# x\n", mode=0o644, **OWNER)
    assert done == {"changed": True, "diff": [{"before_header": path, "after_header": path, "before": "",
                                               "after": "# x\n"}]}
    assert open(path).read() == "# x\n" and oct(os.stat(path).st_mode & 0o777) == "0o644"
    assert os.listdir(tmp_path / "rules.d") == ["90-x.rules"]   # no temporary file left
    assert _files.ensure_file(path, "# x\n", mode=0o644, **OWNER) == {"changed": False, "diff": []}


def test_check_mode_reports_the_change_and_writes_nothing(tmp_path):
    path = tmp_path / "unit.service"
    path.write_text("old\n")
    done = _files.ensure_file(str(path), "new\n", check_mode=True, **OWNER)
    assert done["changed"] and done["diff"][0]["before"] == "old\n" and done["diff"][0]["after"] == "new\n"
    assert path.read_text() == "old\n"
    missing = tmp_path / "absent" / "x"
    assert _files.ensure_file(str(missing), "x\n", check_mode=True, **OWNER)["changed"]
    assert not (tmp_path / "absent").exists()


def test_a_wrong_mode_alone_is_a_change_with_its_own_diff(tmp_path):
    path = tmp_path / "x.rules"
    path.write_text("same\n")
    os.chmod(path, 0o600)
    done = _files.ensure_file(str(path), "same\n", mode=0o644, **OWNER)
    assert done["changed"] and [d["before_header"] for d in done["diff"]] == [str(path) + " (mode, owner)"]
    assert done["diff"][0]["before"] == "mode 0600, owner %d:%d\n" % (ME, os.getgid())
    assert done["diff"][0]["after"] == "mode 0644, owner %d:%d\n" % (ME, os.getgid())
    assert oct(path.stat().st_mode & 0o777) == "0o644" and path.read_text() == "same\n"


@pytest.mark.skipif(ME != 0, reason="chown to root needs root")
def test_owner_root_is_set(tmp_path):
    path = tmp_path / "x"
    path.write_text("a\n")
    os.chown(path, 1, 1)
    done = _files.ensure_file(str(path), "a\n")
    assert done["changed"] and (path.stat().st_uid, path.stat().st_gid) == (0, 0)


def test_bad_targets_fail_naming_the_path(tmp_path):
    with pytest.raises(MlnxError, match="relative is not an absolute path"):
        _files.ensure_file("relative", "x", **OWNER)
    with pytest.raises(MlnxError, match="is a directory"):
        _files.ensure_file(str(tmp_path), "x", **OWNER)
    with pytest.raises(MlnxError, match="owner nobody-here or group root is not on this host"):
        _files.ensure_file(str(tmp_path / "x"), "x", owner="nobody-here", group="root")


def test_a_link_is_made_replaced_and_left(tmp_path):
    link = str(tmp_path / "wants" / "u.service")
    os.makedirs(tmp_path / "wants")
    assert _files.ensure_link(link, "/etc/u.service", check_mode=True)["changed"] and not os.path.lexists(link)
    done = _files.ensure_link(link, "/etc/u.service")
    assert done["diff"][0]["before"] == "(absent)\n" and os.readlink(link) == "/etc/u.service"
    assert _files.ensure_link(link, "/etc/u.service") == {"changed": False, "diff": []}
    done = _files.ensure_link(link, "/etc/v.service")
    assert done["diff"][0]["before"] == "-> /etc/u.service\n" and os.readlink(link) == "/etc/v.service"
    os.unlink(link)
    open(link, "w").close()   # a file where the link goes: replaced (force)
    assert _files.ensure_link(link, "/etc/u.service")["diff"][0]["before"] == "a file\n"
    assert os.readlink(link) == "/etc/u.service"


def test_a_directory_is_made_once(tmp_path):
    path = str(tmp_path / "a" / "b")
    assert _files.ensure_dir(path, check_mode=True)["changed"] and not os.path.exists(path)
    assert _files.ensure_dir(path)["changed"] and os.path.isdir(path)
    assert oct(os.stat(path).st_mode & 0o777) == "0o755"
    assert _files.ensure_dir(path) == {"changed": False, "diff": []}
    open(tmp_path / "f", "w").close()
    with pytest.raises(MlnxError, match="is there but is not a directory"):
        _files.ensure_dir(str(tmp_path / "f"))
