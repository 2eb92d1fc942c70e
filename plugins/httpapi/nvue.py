# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: nvue
short_description: HttpApi plugin for the NVUE REST API of NVIDIA Cumulus Linux 5.x
version_added: 0.2.0
description:
  - Carries the requests of the collection's switch modules (M(gpufabric.mlnx.nvue_config),
    M(gpufabric.mlnx.nvue_info)) to the NVUE REST API under C(/nvue_v1) with HTTP basic authentication, as
    C(ansible.netcommon.httpapi) sends it (O(ansible.netcommon.httpapi#connection:remote_user),
    O(ansible.netcommon.httpapi#connection:password)).
  - It only carries. Every answer goes back to the module with its HTTP status, and the module's core says what a
    401, 403 (Cumulus Linux 5.6 and later while the default password is unchanged), 409 or 502 (nvued down)
    means. No request is retried behind the module's back.
  - "Use it with C(ansible_connection: ansible.netcommon.httpapi), C(ansible_network_os: gpufabric.mlnx.nvue),
    C(ansible_httpapi_port: 8765), C(ansible_httpapi_use_ssl: true) (NVUE listens on HTTPS with a self-signed
    certificate - C(ansible_httpapi_validate_certs: false), or the switch's certificate in a CA path)."
  - Ansible keys a persistent connection by address, C(ansible_port) and user, not by C(ansible_httpapi_port) - switches
    that share one address (emulators on 127.0.0.1) need their port as C(ansible_port) too, or they share one
    connection.
author:
  - gpufabric.mlnx contributors (@gpufabric)
"""

import json
from urllib.parse import urlencode

from ansible.module_utils.common.text.converters import to_text

from ansible_collections.ansible.netcommon.plugins.plugin_utils.httpapi_base import HttpApiBase

PREFIX = "/nvue_v1"
HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}


class HttpApi(HttpApiBase):
    def nvue_transport(self):
        """The transport the collection's nvue modules find on this connection (``_nvue_cli.switch_for``)."""
        return "rest"

    def send_request(self, data, **message_kwargs):
        """``(status, body)`` of one request: ``method``, ``path`` (under /nvue_v1), ``params`` (the query)."""
        method = message_kwargs.get("method") or "GET"
        path = PREFIX + (message_kwargs.get("path") or "/")
        params = message_kwargs.get("params")
        if params:
            path += "?" + urlencode(params)
        body = json.dumps(data) if data is not None else None
        response, buffer = self.connection.send(path, body, method=method, headers=dict(HEADERS))
        text = to_text(buffer.read(), errors="surrogate_or_replace")
        try:
            payload = json.loads(text) if text.strip() else None
        except ValueError:
            payload = text
        return getattr(response, "code", None) or response.getcode(), payload

    def handle_httperror(self, exc):
        """Every HTTP error is an answer for the module (which names it), never a silent retry."""
        return exc
