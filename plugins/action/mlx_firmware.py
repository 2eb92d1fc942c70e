# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gpufabric.mlnx.mlx_firmware: with ``src``, send the images from the controller in the same task; with
``matrix``, decide per card on the controller and fetch or send only the images to burn, in the same task.

``src``: each image named in ``images`` is looked up as ``src/<file name of images[].path>`` on the
controller (``src`` relative to a role's or playbook's ``files/``, like ansible.builtin.copy),
sent into the task's remote temporary folder, and the module is told where (``images[].copy_from``). The
module verifies the sent copy (sha256, ``flint -i FILE q``) and puts it at ``images[].path`` only
when that file is missing or differs, only for images some device is burned with. One task and one
module run, however many images: no separate copy task per image. In check mode nothing is sent:
the images are looked up in ``src`` (a missing one fails the task, naming it) and the module
reports an image that is not on the host yet as not staged (the preflight checks the controller's
copies once, see the firmware role's ``images`` tasks).
Without ``src`` the module runs as it is (the images are already on the host).

``matrix`` with ``nic_devices``, ``src`` or ``mirror``: the cards (``nic_devices``, else read first with
gpufabric.mlnx.mlx_info) are decided here (``_matrix.firmware_plan``, the fw_targets decision): a refused card fails
the task naming the host and each card before anything moves; with nothing to burn no module runs (the facts come
from the decision); else the images of the PSIDs to burn are fetched on the host from ``mirror`` (ansible.builtin.get_url
with the matrix's sha256, into ``firmware_dir``; every failure named, nothing burned) or sent from ``src``, and the
module burns exactly the cards to burn. The facts (which cards wait for an activation) are returned as
``ansible_facts``. ``matrix`` alone is decided by the module itself on the host.
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail, AnsibleError

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _matrix
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils import _pull
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._module_action import ModuleAction

MODULE = "gpufabric.mlnx.mlx_firmware"
FIRMWARE_DIR = "/var/lib/gpufabric/firmware"
# Decided from the matrix per card: never given with it.
DECIDED = ("images", "device", "devices", "allow_downgrade")


class ActionModule(ModuleAction):
    TRANSFERS_FILES = True

    def act(self, result, args, task_vars):
        try:
            if args.get("matrix") is not None and (args.get("nic_devices") is not None or args.get("src") is not None
                                                   or args.get("mirror")):
                result.update(self._from_matrix(args, task_vars))
                return result
            src = args.pop("src", None)
            if src is not None:
                args["images"] = self._send(src, args.get("images"), transfer=not self._play_context.check_mode)
            result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _from_matrix(self, args, task_vars):
        """The task with ``matrix`` decided on the controller (see the module's docstring above)."""
        host = task_vars.get("inventory_hostname", "this host")
        matrix = args.pop("matrix")
        firmware_dir = args.pop("firmware_dir", None) or FIRMWARE_DIR
        devices = args.pop("nic_devices", None)
        mirror = args.pop("mirror", None) or ""
        mirror_timeout = args.pop("mirror_timeout", None) or 60
        src = args.pop("src", None)
        given = [name for name in DECIDED if name in args]
        if given:
            return {"failed": True, "msg": "%s: %s: decided from matrix per card, leave it out" % (
                host, ", ".join(given))}
        if devices is None:
            info = self._execute_module(module_name="gpufabric.mlnx.mlx_info", task_vars=task_vars,
                                        module_args={k: args[k] for k in ("tool", "timeout") if k in args})
            if info.get("failed"):
                return dict(info, msg="%s: the NVIDIA devices could not be read: %s" % (host, info.get("msg")))
            devices = info.get("devices")
        try:
            plan = _matrix.firmware_plan(devices, matrix, firmware_dir)
        except MlnxError as err:
            return {"failed": True, "msg": "%s: %s" % (host, err)}
        if plan["refused"]:
            return {"failed": True, "changed": False, "targets": plan["targets"],
                    "msg": "%s: %s" % (host, plan["refused"])}
        if not plan["burn"]:
            return {"changed": False, "devices": [], "pending_reset": bool(plan["pending"]), "images_installed": [],
                    "targets": plan["targets"], "msg": _matrix.firmware_summary(plan),
                    "ansible_facts": _matrix.firmware_pending(plan)}

        images, fetched = plan["images"], None
        if mirror:
            fetched = self._fetch(host, plan, matrix, mirror, firmware_dir, mirror_timeout, task_vars)
            if fetched.get("failed"):
                return dict(fetched, targets=plan["targets"])
        elif src is not None:
            images = self._send(src, images, transfer=not self._play_context.check_mode)
        out = self._execute_module(module_name=MODULE, task_vars=task_vars, module_args=dict(
            args, images=images, device=plan["burn"], allow_downgrade=plan["allow_downgrade"]))
        out["targets"] = plan["targets"]
        if fetched is not None:
            out["images_fetched"] = fetched["fetched"]
            out["changed"] = bool(out.get("changed")) or fetched["changed"]
            if fetched["diff"]:
                out["diff"] = fetched["diff"] + ([out["diff"]] if out.get("diff") else [])
        if not out.get("failed"):
            out["ansible_facts"] = _matrix.firmware_pending(plan, out.get("devices") or [])
        return out

    def _fetch(self, host, plan, matrix, mirror, firmware_dir, timeout, task_vars):
        """The images of the PSIDs to burn from the mirror into ``firmware_dir`` (get_url with the matrix's sha256: one
        already there with it is not fetched again, one that arrives with another is not kept) ->
        ``{changed, fetched, diff}``, or a failure naming every image that did not arrive, with the URL and both
        checksums."""
        psids = []
        for target in plan["targets"]:
            if target["action"] == _matrix.BURN and target["psid"] not in psids:
                psids.append(target["psid"])
        try:
            downloads = _pull.mirror_downloads(psids, matrix, mirror, firmware_dir, host)
        except MlnxError as err:
            return {"failed": True, "changed": False, "msg": str(err)}
        folder, fetched_each = self.fetch_verified(firmware_dir, downloads, timeout, task_vars)
        if folder.get("failed"):
            return {"failed": True, "changed": False, "msg": "%s: nothing was burned - the folder %s: %s" % (
                host, firmware_dir, folder.get("msg"))}
        changed, fetched, problems = bool(folder.get("changed")), [], []
        diff = [folder["diff"]] if folder.get("changed") and folder.get("diff") else []
        for item, got in fetched_each:
            if got.get("failed"):
                problems.append(_pull.mirror_fetch_problem(got, "firmware image " + item["image"], item["url"],
                                                           item["pin"], item["sha256"]))
            elif got.get("changed"):
                changed = True
                fetched.append(item["dest"])
        if problems:
            return {"failed": True, "changed": changed, "msg": "%s: nothing was burned - %s" % (host, "; ".join(problems))}
        return {"changed": changed, "fetched": fetched, "diff": diff}

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
        if not self._connection._shell.tmpdir:
            self._make_tmp_path()
        sent = []
        for _path, local, name in found:
            sent.append(self._transfer_file(local, self._connection._shell.join_path(
                self._connection._shell.tmpdir, name)))
        if sent:
            self._fixup_perms2([self._connection._shell.tmpdir] + sent)
        return [dict(image, copy_from=copy) for image, copy in zip(images, sent)]
