# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitOps pipeline examples (docs/examples/gitlab-ci.yml, docs/examples/github-actions.yml; docs/gitops.md) say
the same thing - per event (a pull request, a merge, the schedule) the same commands in the same order, the same
variables, the execution environment docs/execution-environment.yml builds - and their commands, run as a CI runner
runs them (bash, in the site repository, each event stopping at its first failing command), do what the page says on
a simulated fleet (two simulated servers, four emulated leaves): a pull request checks the inventory and reports what
the change would do on the canary rack only, changing nothing; the merge rolls it out rack by rack; the schedule finds
nothing, then a leaf changed by hand, by name, and fails; a pull request with a broken inventory stops at the
check."""
import hashlib
import json
import os
import re
import subprocess

import pytest
import yaml

from _ansible import env, tool
from _paths import REPO
from _roleplay import CONNECTIONS, matrix
from fleet import FABRIC, SERVERS, leaf_vars, leaves, simulated_servers, simulated_vars

EXAMPLES = REPO / "docs" / "examples"
EVENTS = ("pull_request", "merge", "schedule")
# the site's version matrix: the ConnectX-6 Dx firmware the simulated cards run (the firmware step is off; the offline
# check reads the matrix, not the images: gpufabric_preflight_images false)
PIN = {"version": "22.43.1014", "image": "cx6dx.bin", "sha256": hashlib.sha256(b"cx6dx.bin").hexdigest(),
       "part_numbers": ["MCX623106AN-CDAT"]}
MATRIX = matrix("gitops", {"MT_0000000359": PIN})


def gitlab(doc):
    """({event: [commands]}, variables, image) of a .gitlab-ci.yml: the jobs in stage order, each job's event from
    its rules."""
    jobs = [(name, job) for name, job in doc.items() if isinstance(job, dict) and "script" in job]
    jobs.sort(key=lambda item: doc["stages"].index(item[1]["stage"]))
    out = {event: [] for event in EVENTS}
    for name, job in jobs:
        rule = " ".join(r["if"] for r in job["rules"])
        event = ("pull_request" if '"merge_request_event"' in rule else "merge" if '"push"' in rule
                 else "schedule" if '"schedule"' in rule else None)
        assert event, "%s: no event in its rules (%s)" % (name, rule)
        out[event].extend(job["script"])
    return out, doc["variables"], doc["default"]["image"]


def github(doc):
    """({event: [commands]}, env, {images}) of a workflow: each job's event from its if, its run steps in order."""
    out = {event: [] for event in EVENTS}
    images = set()
    for name, job in doc["jobs"].items():
        cond = job["if"]
        event = ("pull_request" if "'pull_request'" in cond else "merge" if "'push'" in cond
                 else "schedule" if "'schedule'" in cond else None)
        assert event, "%s: no event in its if (%s)" % (name, cond)
        out[event].extend(step["run"] for step in job["steps"] if "run" in step)
        images.add(job["container"])
    return out, doc["env"], images


def examples():
    return (gitlab(yaml.safe_load((EXAMPLES / "gitlab-ci.yml").read_text())),
            github(yaml.safe_load((EXAMPLES / "github-actions.yml").read_text())))


def test_both_examples_run_the_same_commands_per_event_in_the_execution_environment_the_collection_defines():
    (lab_commands, lab_vars, lab_image), (hub_commands, hub_env, hub_images) = examples()
    assert lab_commands == hub_commands and lab_vars == hub_env
    assert all(lab_commands[event] for event in EVENTS), lab_commands
    # the image is the one docs/execution-environment.yml says to build
    ee = (REPO / "docs" / "execution-environment.yml").read_text()
    assert hub_images == {lab_image} and "--tag %s" % lab_image in ee, (lab_image, hub_images)
    # every command is ansible-playbook of a playbook of the collection, by name
    for command in sum(lab_commands.values(), []):
        named = re.fullmatch(r'ansible-playbook -i "\$INVENTORY" gpufabric\.mlnx\.(\w+)( .*)?', command)
        assert named and (REPO / "playbooks" / ("%s.yml" % named.group(1))).is_file(), command
    workflow = yaml.safe_load((EXAMPLES / "github-actions.yml").read_text())["on"]
    assert set(workflow) == {"pull_request", "push", "schedule"}


def site_repository(tmp_path, made, sims, fabric=None):
    """A site repository as the examples expect it: inventory/site (servers in rack groups with their leaves, the
    leaves in group leaves), ansible-playbook run from its top."""
    site = tmp_path / "site"
    servers, switches = simulated_vars(sims), leaf_vars(made)
    racks = {}
    for name, values in SERVERS.items():
        racks.setdefault("rack_" + values["rack"], {})[name] = None
    for name in made:
        racks["rack_" + name.split("-")[0]][name] = None
    inventory = {"all": {"vars": {"gpufabric_fabric": fabric or FABRIC, "gpufabric_matrix": MATRIX,
                                  "gpufabric_preflight_images": False},
                         "children": dict({"servers": {"hosts": servers}, "leaves": {"hosts": switches}},
                                          **{rack: {"hosts": members} for rack, members in racks.items()})}}
    (site / "inventory" / "site").mkdir(parents=True, exist_ok=True)
    (site / "inventory" / "site" / "hosts.yml").write_text(yaml.safe_dump(inventory))
    return site


def event(tmp_path, site, name):
    """The event's commands as a runner runs them: bash in the site repository with the example's variables, the
    first failing command ends the event -> [(command, rc, output)]."""
    (commands, variables, _image), _hub = examples()
    # the runner's PATH: ansible-playbook of this python's environment first (the EE's, in a real pipeline)
    path = os.pathsep.join([str(tool("ansible-playbook").parent), os.environ.get("PATH", "")])
    environ = env(tmp_path, ANSIBLE_CONNECTION_PLUGINS=CONNECTIONS, PATH=path, **variables)
    done = []
    for command in commands[name]:
        proc = subprocess.run(["bash", "-ec", command], cwd=str(site), env=environ, capture_output=True, text=True,
                              timeout=900, check=False)
        done.append((command, proc.returncode, proc.stdout[-4000:] + proc.stderr[-2000:]))
        if proc.returncode:
            break
    return done


def drift(site):
    return json.loads((site / "reports" / "drift.json").read_text())


@pytest.mark.heavy(135)
def test_the_examples_pipeline_on_a_simulated_fleet(tmp_path, make_switch):
    made, sims = leaves(make_switch), simulated_servers(tmp_path)
    site = site_repository(tmp_path, made, sims)

    # a pull request on a fleet not rolled out yet: the check passes, the canary rack's drift is reported, nothing
    # is changed and nothing of the other rack is read
    ran = event(tmp_path, site, "pull_request")
    assert [rc for _c, rc, _o in ran] == [0, 0], ran
    doc = drift(site)
    assert doc["result"] == "drift" and sorted(doc["hosts"]) == ["r01-leaf-rail0", "r01-leaf-rail1", "srv-r01-01"]
    assert doc["summary"]["drifted"] == ["r01-leaf-rail0", "r01-leaf-rail1", "srv-r01-01"], doc["summary"]
    assert "leaf_configuration" in doc["hosts"]["r01-leaf-rail0"]["groups"]
    assert "nv_parameters" in doc["hosts"]["srv-r01-01"]["groups"]
    assert not any(sw.events("apply") for sw in made.values())

    # the merge: the rollout, rack by rack, each leaf applied once
    ran = event(tmp_path, site, "merge")
    assert [rc for _c, rc, _o in ran] == [0, 0], ran
    assert {name: len(sw.events("apply")) for name, sw in made.items()} == dict.fromkeys(made, 1)
    assert (site / "reports" / "rollout.md").is_file()

    # the schedule: nothing drifted; then a leaf changed by hand is found by name, and the job fails
    ran = event(tmp_path, site, "schedule")
    assert [rc for _c, rc, _o in ran] == [0], ran
    assert drift(site)["result"] == "compliant"
    made["r02-leaf-rail0"].change("/interface/swp1/link", {"mtu": 1500})
    ran = event(tmp_path, site, "schedule")
    assert [rc for _c, rc, _o in ran] == [2], ran
    doc = drift(site)
    assert doc["summary"]["drifted"] == ["r02-leaf-rail0"], doc["summary"]
    assert ("interface/swp1/link/mtu", 1500, 9216) in [
        (r["setting"], r["actual"], r["expected"]) for r in doc["hosts"]["r02-leaf-rail0"]["settings"]]
    assert "r02-leaf-rail0: leaf_configuration" in ran[-1][2]

    # a pull request whose inventory is broken (two rails' pools overlap) stops at the check, nothing is read
    before = os.path.getmtime(site / "reports" / "drift.json")
    broken = dict(FABRIC, pools={"rail0": "198.18.0.0/20", "rail1": "198.18.8.0/21"})
    site_repository(tmp_path, made, sims, fabric=broken)
    ran = event(tmp_path, site, "pull_request")
    assert len(ran) == 1 and ran[0][1] != 0, ran
    assert "overlap" in ran[0][2], ran[0][2]
    assert os.path.getmtime(site / "reports" / "drift.json") == before
