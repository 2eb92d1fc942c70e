# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge recorded NVUE REST calls against the OpenAPI extract (cl53.json): the path, the method, the query
parameters, the request body and the response, each by what the specification declares.

``verdict(call)`` -> ``{"call", "path", "verdict", "problems", "source"}`` where ``call`` is one line of nvued's
request log (NVUESIM_REQUEST_LOG: method, path, query, body, status, response) and ``verdict`` is

- ``conforming``: the path template and the method are in the specification, every query parameter is declared
  for the operation (with its type), the required ones are given, the request body and the response validate
  against the declared schemas (definitions the extract left unresolved validate anything);
- ``documented``: the path is not in the 5.3 extract, but the collection's reliance on it has a named source
  (OTHER_SOURCES: a later release's documentation) - reported with that source, not checked;
- ``refused``: anything else, with the problems.

Schemas: OpenAPI 3.0's ``nullable`` becomes "or null"; the NVUE keyword ``x-unevaluatedProperties: false`` becomes
JSON Schema's ``unevaluatedProperties: false`` (an unknown key is refused); ``#/x-defs/`` references resolve in the
extract. Validation uses the jsonschema library (requirements-dev.txt).
"""
from __future__ import annotations

import copy
import ipaddress
import json
import re
from pathlib import Path
from urllib.parse import parse_qs, unquote

import jsonschema

EXTRACT = Path(__file__).resolve().parent / "cl53.json"
REF = "#/x-defs/"
OPEN = {"additionalProperties": {}}   # an unresolved definition: anything (and its keys count as evaluated)

# The ``format``s the extract uses that have a grammar: JSON Schema's ipv4/ipv6 (the library's checks) and the NVUE
# ones whose name says it (a prefix as ``ip address`` takes it, host bits allowed; an integer written as a string, the
# ids of maps such as issue ids). NVUE's own names (interface-name, vrf-name, item-name, generic-name, bridge-name,
# profile-name, route-distinguisher, json-pointer) have no grammar in the document: not checked (README).
FORMATS = jsonschema.FormatChecker(("ipv4", "ipv6"))


def _network(version):
    def check(value):
        if not isinstance(value, str) or "/" not in value:
            return False
        return ipaddress.ip_network(value, strict=False).version == version
    return check


FORMATS.checks("ipv4-prefix", raises=ValueError)(_network(4))
FORMATS.checks("ipv6-prefix", raises=ValueError)(_network(6))
FORMATS.checks("integer")(lambda value: not isinstance(value, str) or re.fullmatch(r"-?[0-9]+", value, re.ASCII)
                          is not None)

# Calls the collection makes whose paths the 5.3 document does not hold (they came later, or the extract does not
# cover them), each with the source the collection relies on. tests/nvue/spec/README.md, docs/leaves.md.
OTHER_SOURCES = {
    ("GET", "/system/version"): "nvue-reference Show-Commands System (nv show system version, 5.10+); the 5.16 "
                                "output has product-release and image build-id",
    ("GET", "/system/image"): "nv-rms system.rs (written for NVOS); NVOS 25.02 spec /system/image",
    ("GET", "/system/image/files"): "nv-rms system.rs; NVOS 25.02 spec /system/image/files (the fetched images)",
    ("POST", "/system/image"): "nv-rms system.rs @fetch; NVOS 25.02 spec @fetch (remote-url)",
    ("POST", "/system/image/files/{file}"): "nv-rms system.rs @install; NVOS 25.02 spec @install (force)",
    ("PATCH", "/system/image"): "boot-next: invented shape (NVOS 25.02 uses POST @boot-next instead)",
    ("POST", "/system"): "NVUE-API.md Action Operations; NVOS 25.02 spec @reboot",
    ("GET", "/system/config/auto-save"): "NVUE-CLI.md (auto-save, 5.4+; state from 5.10)",
    ("GET", "/qos/roce"): "the 5.3 spec has /qos/roce (cue-show-schema-roce-roce, not in the extract)",
    ("GET", "/qos"): "the 5.3 spec has /qos (cue-show-schema-qos-qos, not in the extract)",
    ("GET", "/interface"): "the 5.3 spec has /interface; NVUE-API.md sample GET /nvue_v1/interface",
    ("GET", "/interface/{interface-id}/link/phy-detail"):
        "nv show interface <swp> link phy-detail, 5.10-5.14 (cumulus-linux-510/512/514 Monitoring-Interfaces-and-"
        "Transceivers-with-NVUE.md); the REST path and body are invented (README: PHY counters)",
    ("GET", "/interface/{interface-id}/link/phy/health"):
        "nv show interface <swp> link phy health, 5.15+ (nvue-reference Interface.md, cumulus-linux-515 "
        "Monitoring-Interfaces-and-Transceivers-with-NVUE.md); the REST path and body are invented (README)",
}
TEMPLATES = {  # path templates of OTHER_SOURCES with a variable segment
    re.compile(r"/system/image/files/[^/]+"): "/system/image/files/{file}",
    re.compile(r"/interface/[^/]+/link/phy-detail"): "/interface/{interface-id}/link/phy-detail",
    re.compile(r"/interface/[^/]+/link/phy/health"): "/interface/{interface-id}/link/phy/health",
}


def load(path: Path = EXTRACT) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _openapi_to_jsonschema(node):
    """nullable -> or null; x-unevaluatedProperties false -> unevaluatedProperties false; refs kept."""
    if isinstance(node, list):
        return [_openapi_to_jsonschema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _openapi_to_jsonschema(v) for k, v in node.items() if not k.startswith("x-") or
           k == "x-unevaluatedProperties"}
    if out.pop("x-unevaluatedProperties", None) is False:
        out["unevaluatedProperties"] = False
    if out.pop("nullable", False):
        if "enum" in out and None not in out["enum"]:
            out["enum"] = list(out["enum"]) + [None]
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
    return out


class Spec:
    def __init__(self, extract: dict | None = None):
        self.doc = extract if extract is not None else load()
        self.source = self.doc["source"]
        defs = {name: _openapi_to_jsonschema(value) for name, value in self.doc["x-defs"].items()}
        for ref in self.doc.get("unresolved", []):
            defs.setdefault(ref[len(REF):], copy.deepcopy(OPEN))
        self.defs = defs
        self.root = {"$schema": "https://json-schema.org/draft/2020-12/schema", "x-defs": defs}
        self.templates = [(self._pattern(p), p) for p in self.doc["paths"]]

    @staticmethod
    def _pattern(template):
        return re.compile("^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$")

    def template_of(self, path: str) -> str | None:
        for pattern, template in self.templates:
            if pattern.match(path):
                return template
        return None

    def _deref(self, node):
        while isinstance(node, dict) and "$ref" in node and node["$ref"].startswith(REF):
            name = node["$ref"][len(REF):]
            node = self.doc["x-defs"].get(name)
            if node is None:
                return None
        return node

    def parameters(self, template: str, method: str) -> dict:
        """name -> parameter object, the path's and the operation's."""
        item = self.doc["paths"][template]
        out = {}
        for raw in list(item.get("parameters", [])) + list(item[method.lower()].get("parameters", [])):
            param = self._deref(raw)
            if param is not None:
                out[param["name"]] = param
        return out

    def _schema_of(self, ref_or_response):
        """The JSON schema of a requestBody / response object (by $ref or inline); None when unresolved."""
        response = self._deref(ref_or_response)
        if response is None:
            return None
        content = (response.get("content") or {}).get("application/json") or {}
        schema = content.get("schema")
        if schema is None:
            return None
        return _openapi_to_jsonschema(schema)

    def validate(self, schema, instance) -> list[str]:
        doc = dict(self.root, **schema)
        validator = jsonschema.Draft202012Validator(doc, format_checker=FORMATS)
        return ["%s: %s" % ("/".join(map(str, e.absolute_path)) or "(body)", e.message.splitlines()[0][:200])
                for e in validator.iter_errors(instance)]

    def check(self, call: dict) -> tuple[str | None, list[str]]:
        """(template, problems) of one recorded call; template None when the path is not in the extract."""
        method, path = call["method"].upper(), unquote(call["path"])
        rest = path[len("/nvue_v1"):] if path.startswith("/nvue_v1") else path
        rest = rest.rstrip("/") or "/"
        template = self.template_of(rest)
        if template is None:
            return None, ["the path is not in the specification extract"]
        item = self.doc["paths"][template]
        operation = item.get(method.lower())
        if operation is None:
            methods = [k.upper() for k in item if k in ("get", "put", "post", "patch", "delete")]
            return template, ["%s is not an operation of %s (the specification has %s)" % (
                method, template, ", ".join(methods))]
        problems = []
        params = self.parameters(template, method)
        query = {k: v[-1] for k, v in parse_qs(call.get("query") or "", keep_blank_values=True).items()}
        for name, value in query.items():
            param = params.get(name)
            if param is None or param.get("in") != "query":
                problems.append("query parameter %r is not declared for %s %s (declared: %s)" % (
                    name, method, template, ", ".join(sorted(p for p, v in params.items() if v.get("in") == "query"))))
                continue
            kind = (param.get("schema") or {}).get("type")
            if kind == "boolean" and value not in ("true", "false"):
                problems.append("query parameter %s=%r is not a boolean" % (name, value))
        for name, param in params.items():
            if param.get("in") == "query" and param.get("required") and name not in query:
                problems.append("required query parameter %r is missing" % name)
        if call.get("body") is not None and method in ("PATCH", "POST", "PUT"):
            if "requestBody" not in operation:
                if call["body"] not in ({}, None):
                    problems.append("%s %s takes no request body" % (method, template))
            else:
                schema = self._schema_of(operation["requestBody"])
                if schema is not None:
                    problems.extend("request body %s" % p for p in self.validate(schema, call["body"]))
        status = str(call.get("status"))
        responses = operation.get("responses") or {}
        declared = responses.get(status) or (responses.get("default") if not status.startswith("2") else None)
        if declared is None:
            problems.append("status %s is not a declared response of %s %s (declared: %s)" % (
                status, method, template, ", ".join(sorted(responses))))
        else:
            schema = self._schema_of(declared)
            if schema is not None and "response" in call:
                problems.extend("response %s" % p for p in self.validate(schema, call["response"]))
        return template, problems

    def verdict(self, call: dict) -> dict:
        template, problems = self.check(call)
        method = call["method"].upper()
        name = "%s %s" % (method, template or call["path"])
        if template is not None:
            return {"call": name, "path": template, "verdict": "refused" if problems else "conforming",
                    "problems": problems, "source": "%s %s" % (self.source["path"], self.source["commit"][:7])}
        rest = unquote(call["path"])[len("/nvue_v1"):].rstrip("/") or "/"
        for pattern, other in TEMPLATES.items():
            if pattern.fullmatch(rest):
                rest = other
        source = OTHER_SOURCES.get((method, rest))
        if source is not None:
            return {"call": "%s %s" % (method, rest), "path": rest, "verdict": "documented", "problems": [],
                    "source": source}
        return {"call": name, "path": rest, "verdict": "refused", "problems": problems, "source": None}
