# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the actions that prepare a host module's run on the controller share (mlx_firmware, mlx_fwreset,
ofed_driver): the prologue of ``ActionBase.run`` and the verified fetch of files from a mirror onto the host.

An action subclasses ``ModuleAction`` and implements ``act(result, args, task_vars)``: ``result`` is what
``ActionBase.run`` returned, ``args`` a copy of the task's arguments (the action pops its own options from it),
``task_vars`` never None."""

from __future__ import annotations

from ansible.plugins.action import ActionBase


class ModuleAction(ActionBase):

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        return self.act(result, dict(self._task.args), task_vars or {})

    def act(self, result, args, task_vars):
        raise NotImplementedError

    def fetch_verified(self, folder, downloads, timeout, task_vars):
        """``folder`` made on the host (root's, 0755), then each download fetched into it by ansible.builtin.get_url
        with its sha256 (a file already there with that sha256 is not fetched again; one that arrives with another is
        not kept). ``downloads``: ``[{"url", "dest", "sha256", ...}]`` -> ``(folder's result, [(download, get_url's
        result)])``; nothing is fetched when the folder failed."""
        made = self._execute_module(module_name="ansible.builtin.file", task_vars=task_vars, module_args={
            "path": folder, "state": "directory", "owner": "root", "group": "root", "mode": "0755"})
        if made.get("failed"):
            return made, []
        return made, [(item, self._execute_module(module_name="ansible.builtin.get_url", task_vars=task_vars,
                                                  module_args={"url": item["url"], "dest": item["dest"],
                                                               "checksum": "sha256:" + item["sha256"],
                                                               "timeout": timeout, "owner": "root", "group": "root",
                                                               "mode": "0644"}))
                      for item in downloads]
