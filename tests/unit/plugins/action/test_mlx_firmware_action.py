"""The mlx_firmware action: with src, each image goes to the task's remote temporary folder and the module is told
where; a missing image fails before anything is sent or run; without src the module runs as written."""
import hashlib
from unittest import mock

import pytest
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpufabric.mlnx.plugins.action.mlx_firmware import ActionModule
from _roleplay import matrix

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


# ---------------------------------------------------------------- matrix: decided here, only the images to burn move

CX7, BF3 = "MT_0000000838", "MT_0000000884"
SHA_CX7, SHA_BF3 = hashlib.sha256(b"cx7").hexdigest(), hashlib.sha256(b"bf3").hexdigest()
MATRIX = matrix("unit-action", {
    CX7: {"version": "28.43.1014", "image": "fw-cx7.bin", "sha256": SHA_CX7, "part_numbers": ["MCX75310AAS-NEAT"]},
    BF3: {"version": "32.43.1014", "image": "fw-bf3.bin", "sha256": SHA_BF3, "part_numbers": ["900-9D3B6-00CV-AA0"]}})
HOST = {"inventory_hostname": "srv-r01-01"}


def card(address, psid, part, burned, running=None):
    return {"address": address, "psid": psid, "part_number": part, "fw_version": burned,
            "fw_running": running or burned, "errors": []}


AT_PIN = [card("0000:18:00.0", CX7, "MCX75310AAS-NEAT", "28.43.1014"),
          card("0000:ca:00.0", BF3, "900-9D3B6-00CV-AA0", "32.43.1014", "32.41.1000")]
OLD_CX7 = [card("0000:18:00.0", CX7, "MCX75310AAS-NEAT", "28.42.1000"), AT_PIN[1]]


def test_a_compliant_host_is_decided_from_its_cards_without_any_module_run(tmp_path):
    plugin = action({"matrix": MATRIX, "nic_devices": AT_PIN, "firmware_dir": "/fw", "src": "fw"}, tmp_path)
    result = plugin.run(task_vars=HOST)
    assert not plugin._execute_module.called and not plugin._transfer_file.called
    assert result["changed"] is False and result["devices"] == []
    assert [(t["address"], t["action"]) for t in result["targets"]] == [("0000:18:00.0", "none"),
                                                                        ("0000:ca:00.0", "pending")]
    assert result["ansible_facts"] == {"gpufabric_firmware_pending_devices": ["0000:ca:00.0"],
                                       "gpufabric_firmware_pending_reset": True}
    assert result["msg"] == "nothing to burn: 1 card(s) at the pinned firmware; activation pending on 0000:ca:00.0"


def test_a_refused_card_fails_naming_the_host_before_anything_moves(tmp_path):
    plugin = action({"matrix": MATRIX, "nic_devices": OLD_CX7 + [card("0000:3b:00.0", "MT_0000000999", "X-1", "1.2.3")],
                     "src": "fw"}, tmp_path)
    result = plugin.run(task_vars=HOST)
    assert result["failed"] is True and "ansible_facts" not in result
    assert result["msg"].startswith("srv-r01-01: the matrix refuses 1 card(s), nothing was burned: 0000:3b:00.0: "
                                    "unknown PSID MT_0000000999: gpufabric_matrix.firmware covers ")
    assert not plugin._execute_module.called and not plugin._transfer_file.called


def test_only_the_image_of_the_cards_to_burn_is_sent_and_only_they_are_burned(tmp_path):
    (tmp_path / "fw").mkdir()
    for name in ("fw-cx7.bin", "fw-bf3.bin"):
        (tmp_path / "fw" / name).write_bytes(b"x")
    plugin = action({"matrix": MATRIX, "nic_devices": OLD_CX7, "firmware_dir": "/fw", "src": "fw", "tool": "mft"},
                    tmp_path)
    plugin._execute_module.return_value = {"changed": True, "devices": [
        {"device": "0000:18:00.0", "pending_reset": True}]}
    result = plugin.run(task_vars=HOST)
    assert plugin._transfer_file.call_args_list == [
        mock.call(str(tmp_path / "fw" / "fw-cx7.bin"), TMP + "/image-0-fw-cx7.bin")]
    args = plugin._execute_module.call_args.kwargs["module_args"]
    assert args == {"tool": "mft", "device": ["0000:18:00.0"], "allow_downgrade": False, "images": [
        {"psid": CX7, "version": "28.43.1014", "path": "/fw/fw-cx7.bin", "sha256": SHA_CX7,
         "part_numbers": ["MCX75310AAS-NEAT"], "copy_from": TMP + "/image-0-fw-cx7.bin"}]}
    assert result["ansible_facts"] == {"gpufabric_firmware_pending_devices": ["0000:18:00.0", "0000:ca:00.0"],
                                       "gpufabric_firmware_pending_reset": True}


def test_without_nic_devices_the_cards_are_read_first(tmp_path):
    plugin = action({"matrix": MATRIX, "src": "fw", "tool": "mstflint", "timeout": 60}, tmp_path)
    plugin._execute_module.return_value = {"devices": AT_PIN}
    result = plugin.run(task_vars=HOST)
    assert plugin._execute_module.call_args_list == [mock.call(
        module_name="gpufabric.mlnx.mlx_info", task_vars=HOST, module_args={"tool": "mstflint", "timeout": 60})]
    assert result["ansible_facts"]["gpufabric_firmware_pending_devices"] == ["0000:ca:00.0"]


def test_the_mirror_fetches_the_images_to_burn_and_a_wrong_sha256_burns_nothing(tmp_path):
    plugin = action({"matrix": MATRIX, "nic_devices": OLD_CX7, "firmware_dir": "/fw",
                     "mirror": "http://mirror.example/fw/"}, tmp_path)
    fetched = {"failed": True, "msg": "The checksum for /fw/fw-cx7.bin did not match %s; it was %s." % (SHA_CX7, "c" * 64)}
    plugin._execute_module.side_effect = [{"changed": True, "diff": {"before": {"state": "absent"}}}, fetched]
    result = plugin.run(task_vars=HOST)
    assert [c.kwargs["module_name"] for c in plugin._execute_module.call_args_list] == [
        "ansible.builtin.file", "ansible.builtin.get_url"]
    assert plugin._execute_module.call_args.kwargs["module_args"] == {
        "url": "http://mirror.example/fw/fw-cx7.bin", "dest": "/fw/fw-cx7.bin", "checksum": "sha256:" + SHA_CX7,
        "timeout": 60, "owner": "root", "group": "root", "mode": "0644"}
    assert result["failed"] is True and "ansible_facts" not in result
    assert result["msg"] == ("srv-r01-01: nothing was burned - firmware image fw-cx7.bin from "
                             "http://mirror.example/fw/fw-cx7.bin: sha256 %s received, but "
                             "gpufabric_matrix.firmware.MT_0000000838.sha256 is %s (not kept)" % ("c" * 64, SHA_CX7))

    plugin._execute_module.reset_mock()
    plugin._execute_module.side_effect = [{"changed": False}, {"changed": True},
                                          {"changed": True, "devices": [], "diff": {"before": {}, "after": {}}}]
    result = plugin.run(task_vars=HOST)
    assert result["images_fetched"] == ["/fw/fw-cx7.bin"] and result["changed"] is True
    assert plugin._execute_module.call_args.kwargs["module_args"]["device"] == ["0000:18:00.0"]
    assert "copy_from" not in plugin._execute_module.call_args.kwargs["module_args"]["images"][0]


def test_a_mirror_url_outside_the_grammar_fails_before_anything_is_fetched(tmp_path):
    plugin = action({"matrix": MATRIX, "nic_devices": OLD_CX7, "mirror": "http://mirror.example/fw;reboot"}, tmp_path)
    result = plugin.run(task_vars=HOST)
    assert result["failed"] and result["msg"].startswith("srv-r01-01: gpufabric_firmware_mirror is ")
    assert not plugin._execute_module.called
