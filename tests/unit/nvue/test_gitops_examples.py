# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GitOps pipeline examples (docs/examples/gitlab-ci.yml, docs/examples/github-actions.yml; docs/gitops.md) say
the same thing - per event (a pull request, a merge, the schedule) the same ansible-playbook commands in the same
order, the wave's command included, the same variables, the execution environment docs/execution-environment.yml
builds; the merge's jobs each with a timeout, one on the fabric at a time, the first wave after an approval - and
their commands, run as a CI runner runs them (bash, in the site repository, each job stopping at its first failing
command), do what the page says on a simulated fleet (two simulated servers, four emulated leaves): a pull request
checks the inventory and reports what the change would do on the canary rack only, changing nothing; the merge plans
the waves (reports/plan.json, GitLab's child pipeline) and rolls out one batch a wave - a failed wave stops the waves
after it, its retry passes and the next wave follows; the schedule finds nothing, then a leaf changed by hand, by
name, and fails; a pull request with a broken inventory stops at the check. The waves' generators (GitLab's child
pipeline, GitHub's wave and next wave) are also run on a plan written by hand: the first wave manual, START=N."""
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
WAVE = 'ansible-playbook -i "$INVENTORY" gpufabric.mlnx.site -e gpufabric_start_batch="$WAVE" -e gpufabric_end_batch="$WAVE"'


def playbook_commands(lines):
    return [line for line in lines if line.startswith("ansible-playbook ")]


def gitlab_event(rules):
    rule = " ".join(r["if"] for r in rules)
    return ("pull_request" if '"merge_request_event"' in rule else "merge" if '"push"' in rule
            else "schedule" if '"schedule"' in rule else None)


def gitlab(doc):
    """({event: [ansible-playbook commands]}, variables, image) of a .gitlab-ci.yml: the jobs in stage order, each
    job's event from its rules; a trigger job's commands are those of .wave, the job every wave of the child pipeline
    is a copy of."""
    jobs = [(name, job) for name, job in doc.items()
            if isinstance(job, dict) and not name.startswith(".") and ("script" in job or "trigger" in job)]
    jobs.sort(key=lambda item: doc["stages"].index(item[1]["stage"]))
    out = {event: [] for event in EVENTS}
    for name, job in jobs:
        event = gitlab_event(job["rules"])
        assert event, "%s: no event in its rules (%s)" % (name, job["rules"])
        out[event].extend(playbook_commands(job["script"] if "script" in job else doc[".wave"]["script"]))
    return out, doc["variables"], doc["default"]["image"]


def github_events(doc):
    """{job: event} of a workflow: a job's event from its if, else the one of the first job it needs."""
    events = {}
    for name, job in doc["jobs"].items():
        cond = job.get("if", "")
        event = ("pull_request" if "'pull_request'" in cond else "merge" if "'push'" in cond
                 else "schedule" if "'schedule'" in cond else None)
        needs = job.get("needs") or []
        events[name] = event or events.get(needs if isinstance(needs, str) else needs[0])
        assert events[name], "%s: no event in its if (%s) or needs" % (name, cond)
    return events


def github(doc):
    """({event: [ansible-playbook commands]}, env, {images}) of a workflow: the jobs in order, their run steps."""
    out = {event: [] for event in EVENTS}
    images = set()
    for name, event in github_events(doc).items():
        job = doc["jobs"][name]
        out[event].extend(playbook_commands(step["run"] for step in job["steps"] if "run" in step))
        if "container" in job:
            images.add(job["container"])
    return out, doc["env"], images


def documents():
    return (yaml.safe_load((EXAMPLES / "gitlab-ci.yml").read_text()),
            yaml.safe_load((EXAMPLES / "github-actions.yml").read_text()))


def examples():
    lab, hub = documents()
    return gitlab(lab), github(hub)


def test_both_examples_run_the_same_commands_per_event_in_the_execution_environment_the_collection_defines():
    (lab_commands, lab_vars, lab_image), (hub_commands, hub_env, hub_images) = examples()
    assert lab_commands == hub_commands and lab_vars == hub_env
    assert all(lab_commands[event] for event in EVENTS), lab_commands
    # the merge: the offline check (which writes the plan), then one batch a wave - the site's own batching
    assert lab_commands["merge"] == ['ansible-playbook -i "$INVENTORY" gpufabric.mlnx.check_inventory', WAVE]
    # the image is the one docs/execution-environment.yml says to build
    ee = (REPO / "docs" / "execution-environment.yml").read_text()
    assert hub_images == {lab_image} and "--tag %s" % lab_image in ee, (lab_image, hub_images)
    # every command is ansible-playbook of a playbook of the collection, by name
    for command in sum(lab_commands.values(), []):
        named = re.fullmatch(r'ansible-playbook -i "\$INVENTORY" gpufabric\.mlnx\.(\w+)( .*)?', command)
        assert named and (REPO / "playbooks" / ("%s.yml" % named.group(1))).is_file(), command
        assert "gpufabric_batch_by" not in command and "gpufabric_batch_size" not in command, command
    workflow = documents()[1]["on"]
    assert set(workflow) == {"pull_request", "push", "schedule", "workflow_dispatch"}
    assert set(workflow["workflow_dispatch"]["inputs"]) == {"start", "commit", "chained"}


def test_the_merge_jobs_have_a_timeout_one_at_a_time_on_the_fabric_and_the_first_wave_an_approval():
    lab, hub = documents()
    # GitLab: the plan job and every wave (.wave) with a timeout; the waves and the nightly drift take turns on the
    # fabric; the rollout runs the plan job's child pipeline and passes or fails with it
    assert lab["plan"]["timeout"] and lab[".wave"]["timeout"] == "3h"
    assert lab[".wave"]["resource_group"] == lab["drift"]["resource_group"] == "fabric"
    assert "waves.yml" in lab["plan"]["artifacts"]["paths"] and "reports/plan.json" in lab["plan"]["artifacts"]["paths"]
    assert lab["rollout"]["trigger"] == {"include": [{"artifact": "waves.yml", "job": "plan"}], "strategy": "depend"}
    # the child pipeline includes this file: every job of it has rules, none for a child pipeline (parent_pipeline)
    for name, job in lab.items():
        if isinstance(job, dict) and not name.startswith(".") and name not in ("default", "variables"):
            assert job["rules"] and all("parent_pipeline" not in rule["if"] for rule in job["rules"]), name
    # GitHub: every job of the merge with a timeout; the wave on the fabric one at a time; its first wave of a run in
    # the environment whose required reviewers approve it; the next wave dispatched only when this one passed
    jobs, events = hub["jobs"], github_events(hub)
    merge = [name for name, event in events.items() if event == "merge"]
    assert merge == ["plan", "wave", "next"]
    assert all(jobs[name]["timeout-minutes"] for name in merge) and jobs["wave"]["timeout-minutes"] == 180
    assert jobs["wave"]["concurrency"] == jobs["drift"]["concurrency"] == "fabric"
    assert jobs["wave"]["environment"] == "${{ inputs.chained && 'fabric' || 'fabric-approval' }}"
    assert jobs["next"]["if"] == "needs.plan.outputs.next != ''" and jobs["next"]["needs"] == ["plan", "wave"]
    assert jobs["next"]["permissions"] == {"actions": "write"}
    # no matrix: GitHub promises no order for the jobs of a matrix (docs/gitops.md, "Waves")
    assert not any("strategy" in job for job in jobs.values())


def plan_script(doc):
    """The GitLab plan job's generator: the script line that writes waves.yml."""
    (line,) = [line for line in doc["plan"]["script"] if "waves.yml" in line]
    return line


# the GitLab project and commit of the site repository (predefined variables of the plan job)
PROJECT = {"CI_PROJECT_PATH": "infra/site", "CI_COMMIT_SHA": "c0ffee" * 6 + "c0ff"}


def gitlab_child(site, environ, start=None):
    """Run the GitLab plan job's generator in ``site`` (its reports/plan.json) -> (rc, output, the child pipeline or
    None)."""
    lab = yaml.safe_load((site / ".gitlab-ci.yml").read_text())
    environ = dict({key: value for key, value in environ.items() if key != "START"}, **PROJECT)
    if start:
        environ["START"] = str(start)
    proc = subprocess.run(["bash", "-ec", plan_script(lab)], cwd=str(site), env=environ, capture_output=True,
                          text=True, timeout=60, check=False)
    child = yaml.safe_load((site / "waves.yml").read_text()) if proc.returncode == 0 else None
    return proc.returncode, proc.stdout + proc.stderr, child


def child_jobs(site, child):
    """The child pipeline's jobs as GitLab makes them: its include is the site's .gitlab-ci.yml of the same project
    and commit - its default, variables and .wave, which every job extends; none of its jobs comes along (their rules
    match no child pipeline) -> ({job: its keys}, the pipeline's variables)."""
    assert child["include"] == [{"project": PROJECT["CI_PROJECT_PATH"], "ref": PROJECT["CI_COMMIT_SHA"],
                                 "file": ".gitlab-ci.yml"}], child["include"]
    lab = yaml.safe_load((site / ".gitlab-ci.yml").read_text())
    jobs = {}
    for name, job in child.items():
        if name not in ("include", "stages"):
            assert job["extends"] == ".wave", job
            jobs[name] = dict(lab[".wave"], **{key: value for key, value in job.items() if key != "extends"})
    return jobs, lab["variables"]


def github_wave(site, environ, start=None):
    """Run the GitHub plan job's step "This run's wave and the next" (START from the input start) -> (rc, output,
    {output: value})."""
    hub = documents()[1]
    (step,) = [step for step in hub["jobs"]["plan"]["steps"] if step.get("id") == "waves"]
    assert step["env"] == {"START": "${{ inputs.start }}"}
    output = site / "github-output"
    output.write_text("")
    environ = dict(environ, GITHUB_OUTPUT=str(output), START=str(start or ""))
    proc = subprocess.run(["bash", "-ec", step["run"]], cwd=str(site), env=environ, capture_output=True, text=True,
                          timeout=60, check=False)
    values = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return proc.returncode, proc.stdout + proc.stderr, values


def github_dispatch(site, environ, outputs, commit):
    """Run the GitHub next job's command with a gh that writes down its arguments -> the arguments."""
    hub = documents()[1]
    (step,) = hub["jobs"]["next"]["steps"]
    fake = site / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "gh").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$GH_ARGS"\n')
    (fake / "gh").chmod(0o755)
    environ = dict(environ, PATH=os.pathsep.join([str(fake), environ["PATH"]]), GH_ARGS=str(site / "gh-args"),
                   GH_TOKEN="token", NEXT=outputs["next"], COMMIT=commit, GITHUB_WORKFLOW=hub["name"],
                   GITHUB_REPOSITORY="infra/site", GITHUB_REF_NAME="main")
    subprocess.run(["bash", "-ec", step["run"]], cwd=str(site), env=environ, check=True, timeout=60)
    return (site / "gh-args").read_text().splitlines()


def test_the_wave_generators_on_a_plan_the_first_wave_manual_and_start_n(tmp_path):
    """Without a fleet: the GitLab child pipeline and GitHub's wave and next wave from a plan.json written here."""
    site = tmp_path / "site"
    (site / "reports").mkdir(parents=True)
    (site / ".gitlab-ci.yml").write_text((EXAMPLES / "gitlab-ci.yml").read_text())
    batches = [{"number": 1, "name": "SU 1", "servers": ["a"], "leaves": []},
               {"number": 2, "name": "SU 2", "servers": ["b"], "leaves": []},
               {"number": 3, "name": "SUs 3-6", "servers": ["c", "d"], "leaves": []}]
    (site / "reports" / "plan.json").write_text(json.dumps({"schema": 1, "batches": batches}))
    path = os.pathsep.join([str(tool("ansible-playbook").parent), os.environ.get("PATH", "")])
    environ = dict(os.environ, PATH=path)
    lab = yaml.safe_load((EXAMPLES / "gitlab-ci.yml").read_text())

    rc, out, child = gitlab_child(site, environ)
    assert rc == 0, out
    assert child["stages"] == ["wave-1", "wave-2", "wave-3"]
    jobs, variables = child_jobs(site, child)
    assert variables == lab["variables"] and list(jobs) == ["wave-1 SU 1", "wave-2 SU 2", "wave-3 SUs 3-6"]
    for number, job in enumerate(jobs.values(), start=1):
        assert job["stage"] == "wave-%d" % number and job["variables"] == {"WAVE": str(number)}
        assert job["script"] == [WAVE] and job["timeout"] == "3h" and job["resource_group"] == "fabric"
    # the approval: the first wave waits for a person, and blocks the ones after it
    assert jobs["wave-1 SU 1"]["when"] == "manual" and jobs["wave-1 SU 1"]["allow_failure"] is False
    assert all("when" not in job for job in list(jobs.values())[1:])
    assert "waves 1-3 of 3: SU 1, SU 2, SUs 3-6" in out

    rc, out, child = gitlab_child(site, environ, start=2)              # resume: START=2
    assert rc == 0 and child["stages"] == ["wave-2", "wave-3"], out
    jobs, _variables = child_jobs(site, child)
    assert jobs["wave-2 SU 2"]["when"] == "manual" and "when" not in jobs["wave-3 SUs 3-6"]
    rc, out, _child = gitlab_child(site, environ, start=4)
    assert rc != 0 and "START=4: the plan has batches 1-3" in out

    rc, out, values = github_wave(site, environ)
    assert rc == 0 and values == {"wave": "1", "name": "SU 1", "next": "2"}, out
    rc, out, values = github_wave(site, environ, start=3)
    assert rc == 0 and values == {"wave": "3", "name": "SUs 3-6", "next": ""}, out
    rc, out, values = github_wave(site, environ, start=4)
    assert rc != 0 and "START=4: the plan has batches 1-3" in out
    # the next wave: the same workflow, branch and commit, chained (no approval)
    assert github_dispatch(site, environ, {"next": "2"}, "c0ffee") == [
        "workflow", "run", "fabric", "--repo", "infra/site", "--ref", "main", "-f", "start=2", "-f", "commit=c0ffee",
        "-f", "chained=true"]


def site_repository(tmp_path, made, sims, fabric=None):
    """A site repository as the examples expect it: inventory/site (servers in rack groups with their leaves, the
    leaves in group leaves; the site's batching: a rack a batch), .gitlab-ci.yml (the GitLab example: its plan job
    reads it), ansible-playbook run from its top."""
    site = tmp_path / "site"
    servers, switches = simulated_vars(sims), leaf_vars(made)
    racks = {}
    for name, values in SERVERS.items():
        racks.setdefault("rack_" + values["rack"], {})[name] = None
    for name in made:
        racks["rack_" + name.split("-")[0]][name] = None
    inventory = {"all": {"vars": {"gpufabric_fabric": fabric or FABRIC, "gpufabric_matrix": MATRIX,
                                  "gpufabric_preflight_images": False, "gpufabric_batch_by": "rack"},
                         "children": dict({"servers": {"hosts": servers}, "leaves": {"hosts": switches}},
                                          **{rack: {"hosts": members} for rack, members in racks.items()})}}
    (site / "inventory" / "site").mkdir(parents=True, exist_ok=True)
    (site / "inventory" / "site" / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (site / ".gitlab-ci.yml").write_text((EXAMPLES / "gitlab-ci.yml").read_text())
    return site


def script(site, environ, lines):
    """A job's script as a runner runs it: each line by bash in the site repository, the first failing line ends the
    job -> [(line, rc, output)]."""
    done = []
    for line in lines:
        proc = subprocess.run(["bash", "-ec", line], cwd=str(site), env=environ, capture_output=True, text=True,
                              timeout=900, check=False)
        done.append((line, proc.returncode, proc.stdout + proc.stderr))
        if proc.returncode:
            break
    return done


def runner(tmp_path, variables):
    """A runner's environment: the example's variables; ansible-playbook and python3 of this python's environment
    first on PATH (the EE's, in a real pipeline)."""
    path = os.pathsep.join([str(tool("ansible-playbook").parent), os.environ.get("PATH", "")])
    return env(tmp_path, ANSIBLE_CONNECTION_PLUGINS=CONNECTIONS, PATH=path, **variables)


def event(tmp_path, site, name):
    """The event's commands as a runner runs them (a pull request, the schedule: only ansible-playbook commands),
    the first failing command ends the event -> [(command, rc, the output's end)]."""
    (commands, variables, _image), _hub = examples()
    done = script(site, runner(tmp_path, variables), commands[name])
    return [(line, rc, out[-4000:]) for line, rc, out in done]


def pipeline(site, environ, child, retry=None):
    """GitLab's run of the child pipeline ``child``: its jobs in stage order - a manual one when a person starts it
    (here: at once) -, each with the pipeline's and its own variables; the first failing job ends it. ``retry``: the
    failed job to begin with, as GitLab's Retry does (the jobs after it follow). Yields (job, rc, output) after each
    job."""
    resolved, variables = child_jobs(site, child)
    jobs = sorted(resolved.items(), key=lambda item: child["stages"].index(item[1]["stage"]))
    names = [name for name, _job in jobs]
    for name, job in jobs[names.index(retry) if retry else 0:]:
        (*_before, (_line, rc, out)) = script(site, dict(environ, **variables, **job["variables"]), job["script"])
        yield name, rc, out
        if rc:
            return


def drift(site):
    return json.loads((site / "reports" / "drift.json").read_text())


def applies(made):
    return {name: len(sw.events("apply")) for name, sw in made.items()}


@pytest.mark.heavy(190)
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

    # the merge (GitLab): the plan job checks the inventory, which writes the plan - the site's own batching, a rack
    # a batch - and makes the child pipeline of the waves from it
    lab = yaml.safe_load((site / ".gitlab-ci.yml").read_text())
    environ = runner(tmp_path, lab["variables"])
    ran = script(site, dict(environ, **PROJECT), lab["plan"]["script"])
    assert [rc for _c, rc, _o in ran] == [0, 0], ran[-1][2][-3000:]
    plan = json.loads((site / "reports" / "plan.json").read_text())
    assert [(b["number"], b["name"], b["servers"], b["leaves"]) for b in plan["batches"]] == [
        (1, "rack r01", ["srv-r01-01"], ["r01-leaf-rail0", "r01-leaf-rail1"]),
        (2, "rack r02", ["srv-r02-01"], ["r02-leaf-rail0", "r02-leaf-rail1"])], plan
    child = yaml.safe_load((site / "waves.yml").read_text())
    assert child["stages"] == ["wave-1", "wave-2"] and child_jobs(site, child)[0]["wave-1 rack r01"]["when"] == "manual"

    # wave 1, the canary rack, once approved: a card of srv-r01-01 keeps its old NV value (a fault), the wave fails
    # after its leaves were configured - and the wave after it does not run: rack r02 is untouched
    sims["srv-r01-01"].mlxsim("fault", "add", "set_ignored", "param=NUM_OF_VFS")
    waves = pipeline(site, environ, child)
    name, rc, out = next(waves)
    assert name == "wave-1 rack r01" and rc != 0 and "NUM_OF_VFS" in out, out[-3000:]
    assert list(waves) == []
    assert applies(made) == {"r01-leaf-rail0": 1, "r01-leaf-rail1": 1, "r02-leaf-rail0": 0, "r02-leaf-rail1": 0}

    # the cause cleared, the failed wave retried - the same job, nothing done again (no new revision on r01's
    # leaves) - passes; its report names the next wave; then wave 2 runs and rack r02's leaves apply theirs
    sims["srv-r01-01"].mlxsim("fault", "clear")
    waves = pipeline(site, environ, child, retry="wave-1 rack r01")
    name, rc, out = next(waves)
    assert name == "wave-1 rack r01" and rc == 0, out[-3000:]
    assert applies(made) == {"r01-leaf-rail0": 1, "r01-leaf-rail1": 1, "r02-leaf-rail0": 0, "r02-leaf-rail1": 0}
    assert "-e gpufabric_start_batch=2" in (site / "reports" / "rollout.md").read_text()
    name, rc, out = next(waves)
    assert name == "wave-2 rack r02" and rc == 0, out[-3000:]
    assert list(waves) == []
    assert applies(made) == dict.fromkeys(made, 1)

    # GitHub's chain on the same plan: wave 1 names wave 2 next, which names none
    assert github_wave(site, environ)[2] == {"wave": "1", "name": "rack r01", "next": "2"}
    assert github_wave(site, environ, start=2)[2] == {"wave": "2", "name": "rack r02", "next": ""}

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
