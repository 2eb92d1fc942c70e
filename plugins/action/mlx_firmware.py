# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gpufabric.mlnx.mlx_firmware: with ``src``, send the images from the controller in the same task.

Each image named in ``images`` is looked up as ``src/<file name of images[].path>`` on the
controller (``src`` relative to a role's or playbook's ``files/``, like ansible.builtin.copy),
sent into the task's remote temporary folder, and the module is told where (``images[].copy_from``). The
module verifies the sent copy (sha256, ``flint -i FILE q``) and puts it at ``images[].path`` only
when that file is missing or differs, only for images some device is burned with. One task and one
module run, however many images: no separate copy task per image. In check mode nothing is sent:
the images are looked up in ``src`` (a missing one fails the task, naming it) and the module
reports an image that is not on the host yet as not staged (the preflight checks the controller's
copies once, see the firmware role's ``images`` tasks).
Without ``src`` the module runs as it is (the images are already on the host).
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.plugins.action import ActionBase

MODULE = "gpufabric.mlnx.mlx_firmware"


class ActionModule(ActionBase):
    TRANSFERS_FILES = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        src = args.pop("src", None)
        try:
            if src is not None:
                args["images"] = self._send(src, args.get("images"), transfer=not self._play_context.check_mode)
            result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _send(self, src, images, transfer=True):
        """``images`` with ``copy_from`` set to each one's copy on the host; fails naming the image before any is sent.
        Without ``transfer`` (check mode) the images are only looked up and ``images`` is returned as it is."""
        try:
            folder = self._find_needle("files", src)
        except AnsibleError as err:
            raise AnsibleActionFail("src %s: %s" % (src, err))
        if not os.path.isdir(folder):
            raise AnsibleActionFail("src must be a folder of firmware images on the controller, %s is not" % folder)
        if not isinstance(images, list):
            raise AnsibleActionFail("images must be a list of images (psid, version, path, sha256), not %r" % (images,))
        found = []
        for index, image in enumerate(images):
            path = str(image.get("path") or "") if isinstance(image, dict) else ""
            name = os.path.basename(path)
            local = os.path.join(folder, name)
            if not name or not os.path.isfile(local):
                raise AnsibleActionFail("images[%d] (PSID %s): %s is not in src %s on the controller; present: %s" % (
                    index, image.get("psid") if isinstance(image, dict) else None, name or "(no path)",
                    folder, ", ".join(sorted(os.listdir(folder))) or "nothing"))
            found.append((path, local, "image-%d-%s" % (index, name)))
        if not transfer:
            return images
        sent = []
        for _path, local, name in found:
            sent.append(self._transfer_file(local, self._connection._shell.join_path(
                self._connection._shell.tmpdir, name)))
        if sent:
            self._fixup_perms2([self._connection._shell.tmpdir] + sent)
        return [dict(image, copy_from=copy) for image, copy in zip(images, sent)]
