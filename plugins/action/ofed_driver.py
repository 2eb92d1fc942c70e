# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action of gpufabric.mlnx.ofed_driver: with ``mirror``, fetch the offline bundle first, in the same task.

For a tarball source (``driver.source.type``) and a ``mirror`` (the ofed role's ``gpufabric_ofed_mirror``), the
bundle's URL - ``<mirror>/<file name of source.path>``, both by the strict grammars of ``plugin_utils/_pull.mirror_url``
- is fetched to ``source.path`` on the host by ``ansible.builtin.get_url`` with the matrix's sha256 (its folder made
first with ``ansible.builtin.file``, mode 0755): a bundle already there with that sha256 is not fetched again, one that
arrives with another is not kept, and the task fails naming the bundle, the URL and both checksums
(``_pull.mirror_fetch_problem``, shared with the firmware role) before the module runs - nothing was changed. Then
the module runs with the other options. Check mode passes through (``get_url`` fetches nothing then). Without
``mirror`` (or for apt and dnf sources) the module runs as it is: one module run per host and task.
"""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._ofed import driver_spec
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._module_action import ModuleAction
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._pull import mirror_fetch_problem, mirror_url

MODULE = "gpufabric.mlnx.ofed_driver"
MIRROR_VARIABLE = "gpufabric_ofed_mirror"
PATH_KEY = "gpufabric_matrix.driver.source.path"
SHA_KEY = "gpufabric_matrix.driver.source.sha256"


class ActionModule(ModuleAction):

    def act(self, result, args, task_vars):
        mirror = args.pop("mirror", None) or ""
        timeout = args.pop("mirror_timeout", None) or 60
        host = task_vars.get("inventory_hostname")
        fetched = False
        if mirror:
            try:
                spec = driver_spec(args.get("driver"))
                source = spec["source"]
                url = mirror_url(mirror, source["path"], MIRROR_VARIABLE, PATH_KEY, host) \
                    if source["type"] == "tarball" else None
            except MlnxError as err:
                result.update(failed=True, msg=err.msg)
                return result
            if url is not None:
                problem, fetched = self._fetch(url, source, timeout, task_vars)
                if problem:
                    result.update(failed=True, changed=False, msg="%s: nothing was changed - %s" % (host, problem))
                    return result
        result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
        if fetched:
            result["changed"] = True
        return result

    def _fetch(self, url, source, timeout, task_vars):
        """``(problem or None, changed)`` of making the bundle's folder and fetching it, verified by its sha256."""
        path = source["path"]
        folder, fetched = self.fetch_verified(path.rsplit("/", 1)[0] or "/", [
            {"url": url, "dest": path, "sha256": source["sha256"]}], timeout, task_vars)
        if folder.get("failed"):
            return "the folder of %s: %s" % (path, folder.get("msg")), False
        got = fetched[0][1]
        if got.get("failed"):
            return mirror_fetch_problem(got, "driver bundle " + path.rsplit("/", 1)[-1], url, SHA_KEY,
                                        source["sha256"]), False
        return None, bool(folder.get("changed") or got.get("changed"))
