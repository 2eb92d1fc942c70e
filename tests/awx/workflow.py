"""The AWX workflow of docs/examples/awx run on this machine as AWX's execution nodes run it: every job through
ansible-runner's remote-job protocol (``ansible-runner transmit | ansible-runner worker | ansible-runner process``),
several at a time, on the fleet twin (tests/twin) - the servers and leaves the twin built, and nothing else.

    .venv/bin/python tests/awx/workflow.py --twin /tmp/twin --work /tmp/wf --vault-password-file /tmp/vault \
        [--parallel 3] [--check]

What AWX does and this does the same way:
- the workflow is the example's (docs/examples/awx/workflow.yml's own variables, templated by Ansible on this
  inventory: the filter gpufabric.mlnx.awx_workflow), its nodes run when AWX would run them (a node after one of its
  parents succeeded; with all_parents_must_converge after all of them), at most ``parallel`` unit jobs at a time;
- the site's inventory is what AWX imports (``ansible-inventory --list --export``) of the site and the twin, limited
  to the machines the twin built; a unit's constructed inventory is the same export with the unit's limit - only its
  servers, its leaves and the spines;
- a node's extra variables are its extra_data and the artifacts of its ancestors (set_stats), merged as AWX merges
  them (awx/main/models/workflow.py: each parent's ancestor artifacts, then its job's artifacts, ``dict.update``);
- each job's private data directory is packed by ``transmit``, run by ``worker`` in a directory of its own (an
  execution node sees only what it was sent), and unpacked with its events by ``process``.

Written to WORK: one directory per node (``WORK/<node>/in`` what was sent, ``WORK/<node>/out`` what came back), and
``WORK/workflow.json``: per node its rc, status, start and end, the hosts of its inventory and of its events, the
artifacts it received and passed on (names), and its task events (time, host, task). The reports node writes the merged reports into ``WORK/merged``.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BIN = Path(sys.executable).parent
EXAMPLE = REPO / "docs" / "examples" / "awx"
sys.path.insert(0, str(REPO / "tests" / "twin"))
import twin  # noqa: E402 - tests/twin/twin.py


def ansible_inventory(env, sources, vault, limit, dest):
    """``ansible-inventory --list --yaml --export`` of ``sources`` limited to ``limit`` -> ``dest`` (what AWX imports of
    an inventory, in the form Ansible reads back); -> its hosts."""
    argv = [str(BIN / "ansible-inventory"), "--list", "--yaml", "--export", "--limit", limit, "--output", str(dest),
            "--vault-password-file", str(vault)]
    for source in sources:
        argv += ["-i", str(source)]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise SystemExit("workflow: ansible-inventory --limit %s failed: %s" % (limit, proc.stderr.strip()[-2000:]))
    return inventory_hosts(dest)


class _Loader(yaml.SafeLoader):
    """YAML with Ansible's !vault and !unsafe tags read as plain text (only the host names are wanted)."""


_Loader.add_constructor("!vault", lambda loader, node: loader.construct_scalar(node))
_Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def inventory_hosts(path):
    """The hosts of a YAML inventory (``all: {children, hosts}``)."""
    found, todo = set(), [(yaml.load(Path(path).read_text(), Loader=_Loader) or {}).get("all") or {}]  # noqa: S506
    while todo:
        group = todo.pop()
        found.update(group.get("hosts") or {})
        todo.extend((group.get("children") or {}).values())
    return found


def example_workflow(env, inventory, vault, parallel, work):
    """The workflow of docs/examples/awx/workflow.yml on ``inventory``: the example play's own variables, templated
    by Ansible (a play with the same vars that writes ``__workflow``)."""
    play = yaml.safe_load((EXAMPLE / "workflow.yml").read_text())[0]
    dump = work / "example-workflow.json"
    probe = [{"name": "The example's workflow", "hosts": "localhost", "gather_facts": False, "connection": "local",
              "vars": dict(play["vars"], awx_parallel=parallel),
              "tasks": [{"name": "Write it", "ansible.builtin.copy": {
                  "dest": str(dump), "content": "{{ __workflow | to_json }}", "mode": "0644"}}]}]
    (work / "example-workflow.yml").write_text(yaml.safe_dump(probe, sort_keys=False))
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inventory), "--vault-password-file", str(vault),
                           str(work / "example-workflow.yml")], env=env, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise SystemExit("workflow: the example's workflow could not be made: %s" % proc.stdout[-3000:])
    return json.loads(dump.read_text())


def _envvars(env):
    keep = ("ANSIBLE_", "GPUFABRIC_", "MLXSIM_")
    out = {k: v for k, v in env.items() if k.startswith(keep)}
    out["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    return out


def _events(out_dir):
    """The job's events as ``ansible-runner process`` wrote them (OUT/artifacts/job_events/<counter>-<uuid>.json)."""
    events = []
    for path in sorted((out_dir / "artifacts" / "job_events").glob("*.json"),
                       key=lambda p: int(p.name.split("-")[0])):
        events.append(json.loads(path.read_text()))
    return events


def run_job(node, template, work, env, inventory_file, extra_vars, vault, check):
    """One job through transmit | worker | process -> its record (rc, status, events' hosts, artifacts, ...)."""
    base = work / node["identifier"]
    shutil.rmtree(base, ignore_errors=True)
    pdd, out_dir, worker_dir = base / "in", base / "out", base / "worker"
    for path in (pdd / "env", pdd / "inventory", out_dir, worker_dir):
        path.mkdir(parents=True)
    shutil.copytree(EXAMPLE / "project", pdd / "project")
    shutil.copy(inventory_file, pdd / "inventory" / "hosts.yml")
    (pdd / "env" / "extravars").write_text(json.dumps(extra_vars))
    (pdd / "env" / "envvars").write_text(json.dumps(_envvars(env)))
    cmdline = "--vault-password-file %s%s" % (vault, " --check --diff" if check else "")
    argv = [str(BIN / "ansible-runner"), "transmit", str(pdd), "-p", template["playbook"], "-i", node["identifier"],
            "--cmdline", cmdline]
    if node.get("limit"):
        argv += ["--limit", node["limit"]]
    started = time.time()
    with open(base / "stream", "wb") as stream, open(base / "stderr", "wb") as err:
        transmit = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=env)
        worker = subprocess.Popen([str(BIN / "ansible-runner"), "worker", "--private-data-dir", str(worker_dir)],
                                  stdin=transmit.stdout, stdout=subprocess.PIPE, stderr=err, env=env)
        transmit.stdout.close()
        process = subprocess.Popen([str(BIN / "ansible-runner"), "process", str(out_dir)], stdin=worker.stdout,
                                   stdout=stream, stderr=err, env=env)
        worker.stdout.close()
        rcs = [process.wait(), worker.wait(), transmit.wait()]
    ended = time.time()
    events = _events(out_dir)
    stats = [e for e in events if e.get("event") == "playbook_on_stats"]
    artifacts = (stats[-1].get("event_data") or {}).get("artifact_data") or {} if stats else {}
    rc_file, status_file = out_dir / "artifacts" / "rc", out_dir / "artifacts" / "status"
    record = {"node": node["identifier"], "playbook": template["playbook"], "pipeline_rc": rcs,
              "rc": int(rc_file.read_text()) if rc_file.exists() else None,
              "status": status_file.read_text().strip() if status_file.exists() else None,
              "started": started, "ended": ended, "events": len(events),
              "hosts": sorted({(e.get("event_data") or {}).get("host") for e in events} - {None}),
              "artifacts": sorted(artifacts), "inventory": sorted(inventory_hosts(inventory_file)),
              "task_hosts": [[e.get("created"), (e.get("event_data") or {}).get("host"),
                              (e.get("event_data") or {}).get("task")] for e in events
                             if e.get("event") in ("runner_on_ok", "runner_on_failed", "runner_on_skipped")]}
    return record, artifacts


def run(args):
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    out = Path(args.twin).resolve()
    vault = Path(args.vault_password_file).resolve()
    stop, env = twin.start(out, args.forks)
    try:
        sources = json.loads((out / "sources.json").read_text())["inventory"] + [str(out / "twin-run.yml")]
        built = sorted(p.name for p in (out / "machines").iterdir()) + sorted(
            p.name for p in (out / "leaves").iterdir() if p.is_dir())
        spines = "spines"
        (work / "built").write_text("\n".join(built + [spines]) + "\n")
        # The site's inventory as AWX imports it: the site and the twin, only the machines the twin built (and the
        # spines the plan names)
        site = work / "site.yml"
        ansible_inventory(env, sources, vault, ":".join(built + [spines]), site)
        spec = example_workflow(env, site, vault, args.parallel, work)
        twin_vars = yaml.safe_load((out / "twin-run-vars.yml").read_text())
        records, artifacts, state, lock = {}, {}, {}, threading.Lock()
        nodes = {n["identifier"]: n for n in spec["workflow"]["nodes"]}
        parents = {name: [p for p, n in nodes.items() for s in n["related"]["success_nodes"] if s["identifier"] == name]
                   for name in nodes}
        templates = {t["name"]: t for t in spec["job_templates"]}
        constructed = {i["name"]: i for i in spec["inventories"]}

        def inventory_of(node):
            if not node.get("inventory"):
                return site
            dest = work / ("%s.yml" % node["identifier"])
            ansible_inventory(env, [site], vault, constructed[node["inventory"]["name"]]["limit"], dest)
            return dest

        def ancestors(name):
            merged = {}
            for parent in parents[name]:
                merged.update(state.get(parent, {}).get("ancestor_artifacts", {}))
                merged.update(artifacts.get(parent, {}))
            return merged

        def launch(name):
            node = nodes[name]
            template = templates[node["unified_job_template"]["name"]]
            inherited = ancestors(name)
            with lock:
                state[name] = {"ancestor_artifacts": inherited}
            extra = dict(twin_vars, **node.get("extra_data", {}))
            if template["kind"] == "reports":
                extra["gpufabric_report_dir"] = str(work / "merged")
            if template["kind"] == "validate":
                # the twin switches the gate off for site.yml (it has no rail networks); the validation job runs it:
                # every server is quarantined for its missing links, and the hand-over report says so
                extra["gpufabric_validate_enabled"] = True
                # its perftest servers listen on every address of this machine: away from the ports other tests'
                # simulated servers use (18515 and up), so no client of theirs reaches a server of the twin
                extra["gpufabric_validate_port_base"] = 28515
            extra.update(inherited)
            record, passed = run_job(node, template, work, env, inventory_of(node), extra, vault, args.check)
            record["received"] = sorted(inherited)
            with lock:
                records[name], artifacts[name] = record, passed
                state[name]["done"] = "successful" if record["rc"] == 0 else "failed"

        def ready(name):
            if name in state:
                return False
            done = [state.get(p, {}).get("done") for p in parents[name]]
            if not parents[name]:
                return True
            if nodes[name]["all_parents_must_converge"]:
                return all(d == "successful" for d in done)
            return any(d == "successful" for d in done)

        running = {}
        limit = spec["workflow"]["parallel"]
        while True:
            for name, thread in list(running.items()):
                if not thread.is_alive():
                    thread.join()
                    del running[name]
            with lock:
                startable = [n for n in nodes if ready(n)]
            for name in startable:
                if len(running) >= limit:
                    break
                thread = threading.Thread(target=launch, args=(name,), daemon=True)
                with lock:
                    state[name] = {}
                running[name] = thread
                thread.start()
            if not running and not startable:
                break
            time.sleep(0.2)
        result = {"spec": spec, "nodes": records,
                  "not_run": sorted(set(nodes) - set(records)), "parallel": limit}
        (work / "workflow.json").write_text(json.dumps(result, indent=1, sort_keys=True))
        failed = [n for n, r in records.items() if r["rc"] != 0]
        print("workflow: %d nodes run (%s), %d failed%s, %d not run" % (
            len(records), ", ".join(records), len(failed), " (%s)" % ", ".join(failed) if failed else "",
            len(result["not_run"])))
        return 1 if failed or result["not_run"] else 0
    finally:
        stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--twin", required=True, help="a twin built by tests/twin/twin.py build")
    parser.add_argument("--work", required=True, help="where each node's directories and workflow.json go")
    parser.add_argument("--vault-password-file", required=True)
    parser.add_argument("--parallel", type=int, default=3, help="unit jobs at a time (default 3)")
    parser.add_argument("--forks", type=int, default=50)
    parser.add_argument("--check", action="store_true", help="every job with --check --diff")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
