# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every REST call the collection makes, judged against NVIDIA's NVUE OpenAPI document (tests/nvue/spec).

The collection's flows - a change applied, a compliant rerun, check mode, replace and unset, a refused apply, every
nvue_info subset, the auto-save read, an image upgrade - run against the emulator on a 5.9 and a 5.16 leaf with
nvued recording each request and its answer (NVUESIM_REQUEST_LOG). Each distinct call is then checked by
tests/nvue/spec/walk.py: path, method, query parameters, request body and response against the specification, or,
for a path the 5.3 document does not hold, a named source. The table is printed; a refused call fails the test.
The walker itself is shown to refuse what the specification does not allow."""
import hashlib
import json
import sys
from pathlib import Path

import pytest
from nvue_helpers import rest
from nvuesim import schema

from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue import NvueError, configure, gather
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_image import upgrade
from ansible_collections.gpufabric.mlnx.plugins.module_utils._nvue_keys import spell

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "nvue" / "spec"))
import walk  # noqa: E402  pylint: disable=wrong-import-position

FAST = dict(interval=0.02, timeout=20)
PORTS = {"interface": {"swp1": {"link": {"mtu": 9000, "state": {"up": {}}}, "description": "srv-a:enp24s0np0"}},
         "qos": {"roce": {"enable": "on", "mode": "lossless"}}}

CONFORMING = {"POST /revision", "PATCH /", "GET /", "PATCH /revision/{revision-id}", "GET /revision/{revision-id}",
              "GET /revision", "GET /action/{action-job-id}"}
DOCUMENTED = {"GET /system/version", "GET /system/image", "GET /system/image/files", "GET /system/config/auto-save", "GET /qos/roce", "GET /qos",
              "GET /interface", "POST /system/image", "POST /system/image/files/{file}", "PATCH /system/image",
              "POST /system"}


def _flows(sw, release, tmp_path):
    switch = rest(sw)
    config = spell(PORTS, release)
    assert configure(switch, config, **FAST)["changed"]
    assert not configure(switch, config, **FAST)["changed"]
    assert configure(switch, {"interface": {"swp2": {"link": {"mtu": 9100}}}}, check_mode=True, **FAST)["changed"]
    configure(switch, {"interface": {"swp2": {"link": {"mtu": 9100}}}}, replace=["/interface/swp2"],
              unset=["/interface/swp1/description"], **FAST)
    with pytest.raises(NvueError, match=r"interface.swp3.link.mtu: 100 is less than the minimum of 552"):
        configure(switch, {"interface": {"swp3": {"link": {"mtu": 100}}}}, **FAST)   # refused when staged
    with pytest.raises(NvueError, match=r"Config invalid at router\.bgp\.(enable|state)"):   # refused at apply:
        configure(switch, spell({"router": {"bgp": {"enable": "on", "autonomous-system": 65101}}}, release),  # no
                  **FAST)                                                                  # router-id anywhere
    gather(switch, ["system", "image", "interfaces", "qos", "revisions", "config", "phy"])
    switch.auto_save()
    image = tmp_path / "cumulus-linux-5.16.1-mlx-amd64.bin"
    sw.admin("mkimage", "--release", "5.16.1", "-o", str(image))
    upgrade(switch, "5.16.1", image.as_uri(), hashlib.sha256(image.read_bytes()).hexdigest(), interval=0.05,
            reboot_timeout=60, action_timeout=60)


def _in_53_spelling(call, release):
    """A call on the configuration root (PATCH /, GET /) with its trees spelt as 5.3 spells them, by the renames
    documented for later releases - the emulator's own rule (nvuesim.schema.in_53_spelling)."""
    if call["path"].rstrip("/") != "/nvue_v1":
        return call
    return dict(call, **{key: schema.in_53_spelling(call[key], release) for key in ("body", "response")
                         if isinstance(call.get(key), dict)})


@pytest.mark.parametrize("release, auto_save", [("5.9.1", "off"), ("5.16.0", "on")])
def test_every_call_the_collection_makes_conforms_or_has_a_named_source(make_switch, tmp_path, monkeypatch,
                                                                        release, auto_save):
    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv("NVUESIM_REQUEST_LOG", str(log))
    sw = make_switch(release=release, extra=("--auto-save", auto_save))
    _flows(sw, release, tmp_path)
    spec = walk.Spec()
    verdicts = {}
    staged_refusals = []
    for line in log.read_text().splitlines():
        call = json.loads(line)
        if call["status"] >= 400 and call["method"] == "GET":
            continue  # a read of an absent object (404) is an answer, not a call shape
        found = spec.verdict(_in_53_spelling(call, release))
        if call["status"] == 400 and call["method"] == "PATCH":   # the flows' deliberate mtu 100, refused by
            staged_refusals.append((call["response"]["message"], sorted(found["problems"])))   # both
            continue
        seen = verdicts.setdefault(found["call"], dict(found, count=0))
        seen["count"] += 1
        if found["problems"]:
            seen["problems"] = sorted(set(seen["problems"]) | set(found["problems"]))
            seen["verdict"] = "refused"
    print("\n%-40s %-11s %5s  %s" % ("call", "verdict", "count", "source / problems"))
    for name, found in sorted(verdicts.items()):
        print("%-40s %-11s %5d  %s" % (name, found["verdict"], found["count"],
                                       "; ".join(found["problems"]) or found["source"]))
    refused = {name: found["problems"] for name, found in verdicts.items() if found["verdict"] == "refused"}
    assert refused == {}
    assert {n for n, f in verdicts.items() if f["verdict"] == "conforming"} == CONFORMING
    # the PHY counters: 5.9 has none (404s, an answer, not a call shape), 5.15+ has them as link phy health
    phy = {"GET /interface/{interface-id}/link/phy/health"} if release == "5.16.0" else set()
    assert {n for n, f in verdicts.items() if f["verdict"] == "documented"} == DOCUMENTED | phy
    assert "DELETE /revision/{revision-id}" not in verdicts  # no undocumented discard
    assert staged_refusals == [(
        "Invalid config: interface.swp3.link.mtu: 100 is less than the minimum of 552; interface.swp3.link: "
        "Unevaluated properties are not allowed ('mtu' was unexpected); interface.swp3: Unevaluated properties are "
        "not allowed ('link' was unexpected)",
        ["request body (body): Unevaluated properties are not allowed ('interface' was unexpected)",
         "request body interface/swp3/link/mtu: 100 is less than the minimum of 552",
         "request body interface/swp3/link: Unevaluated properties are not allowed ('mtu' was unexpected)",
         "request body interface/swp3: Unevaluated properties are not allowed ('link' was unexpected)"])]
    saves = [json.loads(line) for line in log.read_text().splitlines() if '"/nvue_v1/revision/applied"' in line]
    assert [c["body"]["state"] for c in saves] == (["save"] * 2 if auto_save == "off" else [])  # the two applies


def test_the_phy_counters_of_5_10_to_5_14_have_a_named_source(make_switch, tmp_path, monkeypatch):
    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv("NVUESIM_REQUEST_LOG", str(log))
    sw = make_switch(release="5.12.0", ports="swp1-2")
    assert gather(rest(sw), ["phy"])["phy_unavailable"] == {}
    spec = walk.Spec()
    found = {}
    for line in log.read_text().splitlines():
        verdict = spec.verdict(json.loads(line))
        found.setdefault(verdict["call"], verdict)
    assert sorted(found) == ["GET /interface", "GET /interface/{interface-id}/link/phy-detail", "GET /system/version"]
    assert {v["verdict"] for v in found.values()} == {"documented"}
    assert "invented" in found["GET /interface/{interface-id}/link/phy-detail"]["source"]


@pytest.fixture(scope="module")
def spec():
    return walk.Spec()


APPLY = {"state": "apply", "auto-prompt": {"ays": "ays_yes"}}
STATE = {"state": "apply", "transition": {"issue": {}, "progress": ""}}


@pytest.mark.parametrize("call, words", [
    ({"method": "DELETE", "path": "/nvue_v1/revision/3", "query": "", "status": 200, "response": {}},
     "DELETE is not an operation of /revision/{revision-id}"),
    ({"method": "POST", "path": "/nvue_v1/revision", "query": "base_rev=applied", "body": {}, "status": 201,
      "response": {"3": {"state": "pending"}}}, "query parameter 'base_rev' is not declared"),
    ({"method": "POST", "path": "/nvue_v1/revision", "query": "", "body": {}, "status": 200,
      "response": {"3": {"state": "pending"}}}, "status 200 is not a declared response"),
    ({"method": "PATCH", "path": "/nvue_v1/revision/3", "query": "", "status": 200, "response": STATE,
      "body": {"state": "apply", "auto-prompt": {"ays": "yes"}}}, "request body auto-prompt/ays"),
    ({"method": "PATCH", "path": "/nvue_v1/revision/3", "query": "", "status": 200, "response": STATE,
      "body": {"state": "apply", "force": True}}, "request body (body): Unevaluated properties are not allowed"),
    ({"method": "PATCH", "path": "/nvue_v1/", "query": "", "body": {}, "status": 200, "response": {}},
     "required query parameter 'rev' is missing"),
    ({"method": "GET", "path": "/nvue_v1/", "query": "rev=applied&filled=no", "status": 200, "response": {}},
     "query parameter filled='no' is not a boolean"),
    ({"method": "GET", "path": "/nvue_v1/revision/3", "query": "", "status": 200, "response": {"state": 3}},
     "response state"),
    ({"method": "GET", "path": "/nvue_v1/unheard/of", "query": "", "status": 200, "response": {}},
     "the path is not in the specification extract"),
])
def test_the_walker_refuses_what_the_specification_does_not_allow(spec, call, words):
    found = spec.verdict(call)
    assert found["verdict"] == "refused" and any(words in p for p in found["problems"]), found


def test_the_walker_passes_the_documented_apply(spec):
    call = {"method": "PATCH", "path": "/nvue_v1/revision/3", "query": "", "body": APPLY, "status": 200,
            "response": STATE}
    assert spec.verdict(call) == {"call": "PATCH /revision/{revision-id}", "path": "/revision/{revision-id}",
                                  "verdict": "conforming", "problems": [],
                                  "source": "static/cumulus-linux-53/api/openapi.json 9fdbe12"}
