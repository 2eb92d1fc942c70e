"""The mlx_firmware action: with src, each image goes to the task's remote temporary folder and the module is told
where; a missing image fails before anything is sent or run; without src the module runs as written."""
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpufabric.mlnx.plugins.action.mlx_firmware import ActionModule

TMP = "/root/.ansible/tmp/ansible-tmp-1-2"
IMAGES = [{"psid": "MT_0000000838", "version": "28.43.1014", "sha256": "a" * 64,
           "path": "/var/lib/gpufabric/firmware/fw-cx7.bin"},
          {"psid": "MT_0000000884", "version": "32.43.1014", "sha256": "b" * 64,
           "path": "/var/lib/gpufabric/firmware/fw-bf3.bin"}]


def action(args, tmp_path, check_mode=False):
    task = mock.MagicMock(args=args)
    connection = mock.MagicMock()
    connection._shell.tmpdir = TMP
    connection._shell.join_path.side_effect = lambda *parts: "/".join(parts)
    plugin = ActionModule(task, connection, mock.MagicMock(check_mode=check_mode), loader=mock.MagicMock(),
                          templar=None, shared_loader_obj=None)
    plugin._find_needle = lambda kind, src: str(tmp_path / src)
    plugin._transfer_file = mock.MagicMock(side_effect=lambda local, remote: remote)
    plugin._fixup_perms2 = mock.MagicMock()
    plugin._remove_tmp_path = mock.MagicMock()
    plugin._execute_module = mock.MagicMock(return_value={"changed": True})
    return plugin


@pytest.fixture(autouse=True)
def base_run(monkeypatch):
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})


def test_images_sent_to_the_task_folder_and_named_to_the_module(tmp_path):
    (tmp_path / "fw").mkdir()
    for name in ("fw-cx7.bin", "fw-bf3.bin", "fw-unrelated.bin"):
        (tmp_path / "fw" / name).write_bytes(b"x")
    plugin = action({"images": IMAGES, "src": "fw", "device": ["all"]}, tmp_path)
    assert plugin.run(task_vars={}) == {"changed": True}
    assert plugin._transfer_file.call_args_list == [
        mock.call(str(tmp_path / "fw" / "fw-cx7.bin"), TMP + "/image-0-fw-cx7.bin"),
        mock.call(str(tmp_path / "fw" / "fw-bf3.bin"), TMP + "/image-1-fw-bf3.bin")]
    args = plugin._execute_module.call_args.kwargs["module_args"]
    assert "src" not in args and args["device"] == ["all"]
    assert args["images"] == [dict(IMAGES[0], copy_from=TMP + "/image-0-fw-cx7.bin"),
                              dict(IMAGES[1], copy_from=TMP + "/image-1-fw-bf3.bin")]
    plugin._remove_tmp_path.assert_called_once_with(TMP)


def test_missing_image_fails_naming_it_before_anything_is_sent(tmp_path):
    (tmp_path / "fw").mkdir()
    (tmp_path / "fw" / "fw-cx7.bin").write_bytes(b"x")
    plugin = action({"images": IMAGES, "src": "fw"}, tmp_path)
    with pytest.raises(AnsibleActionFail) as err:
        plugin.run(task_vars={})
    assert "images[1] (PSID MT_0000000884): fw-bf3.bin is not in src" in str(err.value)
    assert "present: fw-cx7.bin" in str(err.value)
    assert not plugin._execute_module.called and not plugin._transfer_file.called
    plugin._remove_tmp_path.assert_called_once_with(TMP)


def test_src_not_a_folder(tmp_path):
    (tmp_path / "fw-cx7.bin").write_bytes(b"x")
    plugin = action({"images": IMAGES, "src": "fw-cx7.bin"}, tmp_path)
    with pytest.raises(AnsibleActionFail, match="src must be a folder of firmware images"):
        plugin.run(task_vars={})
    assert not plugin._execute_module.called and not plugin._transfer_file.called


def test_without_src_the_module_runs_as_written(tmp_path):
    plugin = action({"images": IMAGES}, tmp_path)
    plugin.run(task_vars={})
    assert plugin._execute_module.call_args.kwargs["module_args"] == {"images": IMAGES}
    assert not plugin._transfer_file.called


def test_check_mode_sends_no_image_but_still_finds_each_in_src(tmp_path):
    (tmp_path / "fw").mkdir()
    for name in ("fw-cx7.bin", "fw-bf3.bin"):
        (tmp_path / "fw" / name).write_bytes(b"x")
    plugin = action({"images": IMAGES, "src": "fw"}, tmp_path, check_mode=True)
    assert plugin.run(task_vars={}) == {"changed": True}
    assert not plugin._transfer_file.called and not plugin._fixup_perms2.called   # nothing reached the host
    assert plugin._execute_module.call_args.kwargs["module_args"] == {"images": IMAGES}   # no copy_from

    (tmp_path / "fw" / "fw-bf3.bin").unlink()                                   # a missing one still fails
    plugin = action({"images": IMAGES, "src": "fw"}, tmp_path, check_mode=True)
    with pytest.raises(AnsibleActionFail, match=r"images\[1\] \(PSID MT_0000000884\): fw-bf3.bin is not in src"):
        plugin.run(task_vars={})
