"""The files a module keeps on the host (plugins/module_utils/_files.py): written atomically only when content, mode
(or, as root, owner) differ, nothing written in check mode but the change and the diff reported, folders made."""
import os

from _fakehost import FakeHost
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _files as files


def mode(path):
    return oct(os.stat(path).st_mode & 0o777)


def test_a_new_file_is_written_with_its_folder_and_a_diff(tmp_path):
    host = FakeHost(tmp_path).host()
    got = files.write_file(host, "/etc/apt/preferences.d/x.pref", "Package: a\n")
    assert got == {"changed": True, "diff": {"before": "", "after": "Package: a\n",
                                             "before_header": "/etc/apt/preferences.d/x.pref (absent)",
                                             "after_header": "/etc/apt/preferences.d/x.pref"}}
    assert (tmp_path / "etc/apt/preferences.d/x.pref").read_text() == "Package: a\n"
    assert mode(tmp_path / "etc/apt/preferences.d/x.pref") == "0o644"
    assert mode(tmp_path / "etc/apt/preferences.d") == "0o755"
    assert os.listdir(tmp_path / "etc/apt/preferences.d") == ["x.pref"]     # no temporary file left


def test_the_same_content_is_not_written_again(tmp_path):
    host = FakeHost(tmp_path).host()
    files.write_file(host, "/f", "same\n")
    before = os.stat(tmp_path / "f").st_ino
    assert files.write_file(host, "/f", "same\n") == {"changed": False, "diff": None}
    assert os.stat(tmp_path / "f").st_ino == before


def test_another_content_replaces_the_file_and_shows_both(tmp_path):
    host = FakeHost(tmp_path).host()
    files.write_file(host, "/f", "old\n")
    got = files.write_file(host, "/f", "new\n")
    assert got["changed"] and got["diff"]["before"] == "old\n" and got["diff"]["after"] == "new\n"
    assert got["diff"]["before_header"] == "/f" and (tmp_path / "f").read_text() == "new\n"


def test_a_wrong_mode_alone_is_fixed_without_a_diff(tmp_path):
    host = FakeHost(tmp_path).host()
    files.write_file(host, "/f", "x\n")
    os.chmod(tmp_path / "f", 0o600)
    assert files.write_file(host, "/f", "x\n", check_mode=True) == {"changed": True, "diff": None}
    assert mode(tmp_path / "f") == "0o600"                                  # check mode: untouched
    assert files.write_file(host, "/f", "x\n") == {"changed": True, "diff": None}
    assert mode(tmp_path / "f") == "0o644"


def test_check_mode_writes_nothing_but_reports_the_diff(tmp_path):
    host = FakeHost(tmp_path).host()
    got = files.write_file(host, "/etc/x/f", "new\n", check_mode=True)
    assert got["changed"] and got["diff"]["after"] == "new\n" and not (tmp_path / "etc").exists()
    assert files.ensure_dir(host, "/etc/x", check_mode=True) is True and not (tmp_path / "etc").exists()
    assert files.ensure_dir(host, "/etc/x", mode=0o750) is True and mode(tmp_path / "etc/x") == "0o750"
    assert files.ensure_dir(host, "/etc/x") is False


def test_remove(tmp_path):
    host = FakeHost(tmp_path).host()
    assert files.remove_file(host, "/f") is False
    files.write_file(host, "/f", "x\n")
    assert files.remove_file(host, "/f", check_mode=True) is True and (tmp_path / "f").exists()
    assert files.remove_file(host, "/f") is True and not (tmp_path / "f").exists()
