"""module_utils/_files.py: the files a module persists itself - written atomically only when they differ, mode and
owner set, a diff of the text, nothing written in check mode; a link replaced as ``file: state=link force=true``."""
import os

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _files
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError

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
