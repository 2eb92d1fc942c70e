# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pull-mode filters (docs in pull_steps.yml, mirror_downloads.yml, mirror_url.yml, mirror_fetch_problem.yml and
pull_units.yml beside;
logic in plugins/plugin_utils/_pull.py)."""

from __future__ import annotations

from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._filters import filter_errors, lazy

_pull = lazy("plugin_utils._pull")


@filter_errors()
def pull_steps(host, host_vars):
    return _pull.pull_steps(host, host_vars)


@filter_errors()
def mirror_downloads(psids, matrix, mirror, firmware_dir, host=None):
    return _pull.mirror_downloads(psids, matrix, mirror, firmware_dir, host)


@filter_errors()
def mirror_url(base, name, parameter, where="the file", host=None):
    return _pull.mirror_url(base, name, parameter, where, host)


@filter_errors()
def mirror_fetch_problem(result, what, url, pin, sha256):
    return _pull.mirror_fetch_problem(result, what, url, pin, sha256)


@filter_errors()
def pull_units(params, host=None):
    return _pull.pull_units(params, host)


class FilterModule:
    def filters(self):
        return {"pull_steps": pull_steps, "mirror_downloads": mirror_downloads, "mirror_url": mirror_url,
                "mirror_fetch_problem": mirror_fetch_problem, "pull_units": pull_units}
