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
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode

from ansible.module_utils.common.text.converters import to_text
from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.urls import Request, make_context

from ansible_collections.ansible.netcommon.plugins.plugin_utils.httpapi_base import HttpApiBase

PREFIX = "/nvue_v1"
HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}


class HttpApi(HttpApiBase):
    def __init__(self, connection):
        super().__init__(connection)
        self._http = None

    def nvue_transport(self):
        """The transport the collection's nvue modules find on this connection (``_nvue_cli.switch_for``)."""
        return "rest"

    def send_request(self, data, **message_kwargs):
        """``(status, body)`` of one request: ``method``, ``path`` (under /nvue_v1), ``params`` (the query).

        Sent with ansible's ``Request`` made once per connection from the connection's own options (address, port,
        TLS, certificates, proxy, timeout, basic authentication - what ``ansible.netcommon.httpapi``'s ``send``
        gives ``open_url``), so that the TLS context - the system's CA store, 0.1-0.2 CPU-second to load - is made
        once per connection, not once per request."""
        method = message_kwargs.get("method") or "GET"
        path = PREFIX + (message_kwargs.get("path") or "/")
        params = message_kwargs.get("params")
        if params:
            path += "?" + urlencode(params)
        body = json.dumps(data) if data is not None else None
        url = self._base_url() + path
        self.connection.queue_message("vvvv", "nvue: %s %s" % (method, url))
        try:
            response = self._request().open(method, url, data=body, headers=dict(HEADERS))
        except HTTPError as exc:  # an answer: the module's core says what the status means
            response = exc
        except URLError as exc:
            raise AnsibleConnectionFailure("Could not connect to %s: %s" % (url, exc.reason)) from exc
        text = to_text(response.read(), errors="surrogate_or_replace")
        try:
            payload = json.loads(text) if text.strip() else None
        except ValueError:
            payload = text
        return getattr(response, "code", None) or response.getcode(), payload

    def _base_url(self):
        option = self.connection.get_option
        protocol = "https" if option("use_ssl") else "http"
        return "%s://%s:%s" % (protocol, option("host"), option("port") or (443 if protocol == "https" else 80))

    def _request(self):
        """ansible's ``Request`` with this connection's options and one TLS context, made on the first request."""
        if self._http is None:
            option = self.connection.get_option
            # Request makes a context for every request it is given none for - over plain HTTP too - so it always
            # gets this one; the certificate options live in it.
            context = make_context(cafile=option("ca_path"), ciphers=option("ciphers"),
                                   validate_certs=option("validate_certs"), client_cert=option("client_cert"),
                                   client_key=option("client_key"))
            self._http = Request(use_proxy=option("use_proxy"), timeout=option("persistent_command_timeout"),
                                 http_agent=option("http_agent"), force_basic_auth=True,
                                 url_username=option("remote_user"), url_password=option("password"),
                                 context=context)
        return self._http

    def handle_httperror(self, exc):
        """Every HTTP error is an answer for the module (which names it), never a silent retry."""
        return exc
