"""Benchmark of the fleet twin (tests/twin) on inventory/example-1250: the whole site's check-mode rehearsal of
playbooks/site.yml on simulated servers and leaves on this controller, as figures measured in one run.

    python3 tests/bench/twin.py          from a plain clone: it makes its environment first (make venv collection:
                                         .venv and .collections), then runs under .venv's Python
    BENCH_TWIN_SUS=40 (default, the whole site: 1,250 servers, 320 leaves); 1 for a quick look (32 servers, 8 leaves)
    BENCH_SMOKE=1 (make test): the rehearsal of rack r01 and its 8 leaves (no converge, no rerun) - it proves that
                                         the benchmark runs

The twin is built for the first BENCH_TWIN_SUS scalable units (32 servers and 8 leaves each; the build is timed
apart), then:

  ping       ansible.builtin.ping three times and six times on the servers of SU 1 (over the twin's connection): the
             marginal CPU cost of one host-task is the difference / (3 x servers) - Ansible's own floor on this
             inventory (1,570 hosts of variables behind every task)
  rehearsal  playbooks/site.yml --check --diff on every machine built - ONE run: wall time (issue 40: at most 60 min
             for the whole site), the planning play (the rail plan and the batches: at most 60 s) and all that comes
             before the first batch (the variable check, the preflight, the plan), each batch's time, CPU, host-tasks (from the
             recap), peak memory of the whole process tree (ansible-playbook, its workers, the leaves' emulator: the
             sum of their proportional set sizes, so pages the forked workers share count once), sampled every 0.5 s;
             its report (reports/twin.md of the twin) predicts each batch's changes and time
  converge   playbooks/site.yml applied to SU 1 (it converges)
  rerun      playbooks/site.yml applied again to the converged SU 1: the host-tasks of the server and of the leaf that
             ran the most (a task skipped counts: it costs its scheduling round), against issue 40's targets (at most
             40 per server, 15 per leaf)

and prints the collection's cost per host-task against ping's (the ratio is the collection's overhead). Nothing is
asserted; all is written to tests/output/bench-twin.json.
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VENV = REPO / ".venv"


def bootstrap():
    """From a plain clone: the development environment made first (make venv collection), then this script again
    under .venv's Python - one command, nothing to run before it."""
    if Path(sys.prefix).resolve() == VENV.resolve():
        return
    if not (VENV / "bin" / "python").exists() or not (REPO / ".collections").exists():
        subprocess.run(["make", "-C", str(REPO), "venv", "collection"], check=True)
    os.execv(str(VENV / "bin" / "python"), [str(VENV / "bin" / "python"), str(Path(__file__).resolve())]
             + sys.argv[1:])


sys.path[:0] = [str(HERE)]
if __name__ == "__main__":
    from _report import command_line  # noqa: E402  (stdlib only: before the venv is made)
    command_line(__doc__)
    bootstrap()
from _report import OUTPUT, SMOKE, at_most, publish  # noqa: E402

SUS = 1 if SMOKE else int(os.environ.get("BENCH_TWIN_SUS", "40"))
SITE = REPO / "inventory" / "example-1250"
TWIN = [sys.executable, str(REPO / "tests" / "twin" / "twin.py")]
VAULT = "example-1250-only-not-a-secret"  # noqa: S105 - published in inventory/example-1250/README.md
PING = """- hosts: all
  gather_facts: false
  tasks:
""" + "".join("    - ansible.builtin.ping:\n" for _round in range(3))
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.M)
FULL_SUS = 40


def limit(sus, leaves=True):
    """The --limit of the first ``sus`` scalable units (8 racks and 8 leaves each) - in a smoke run, rack r01 and the
    leaves of SU 1."""
    racks = ["rack_r%02d" % r for r in range(1, (1 if SMOKE else 8 * sus) + 1)]
    return ":".join(racks + (["leaves_su%02d" % s for s in range(1, sus + 1)] if leaves else []))


def _proc_bytes(pid, name, field):
    """A size in kB that /proc/PID/NAME shows on its ``field:`` line, in bytes (0 when the process is gone)."""
    try:
        with open("/proc/%s/%s" % (pid, name)) as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _pss(pid):
    """The proportional set size of a process (bytes): its private pages and its share of the pages it shares - the
    workers Ansible forks share most of the controller's pages, which their resident sizes would count again and
    again (a tree of forks "using" 18 GB on a machine whose memory in use was 1.6 GB)."""
    return _proc_bytes(pid, "smaps_rollup", "Pss")


def _rss(pid):
    """The resident set size of a process (bytes)."""
    return _proc_bytes(pid, "status", "VmRSS")


def _is_playbook(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as fh:
            return b"ansible-playbook" in fh.read()
    except OSError:
        return False


def tree_memory(root_pid):
    """(the memory (bytes) of a process and all its descendants - the sum of their proportional set sizes -, the
    resident size of the first ansible-playbook among them: the controller's main process, which every host-task's
    worker is forked from - a fork costs in proportion to it)."""
    children = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(pid))
        except (OSError, IndexError, ValueError):
            continue
    total, main, todo = 0, 0, [root_pid]
    while todo:
        pid = todo.pop(0)
        total += _pss(pid)
        if not main and _is_playbook(pid):
            main = _rss(pid)
        todo += children.get(pid, [])
    return total, main


FIGURES = ("wall", "cpu", "cpu_sys", "peak_pss_mb", "main_rss_mb", "rc")  # what timed() measures of a run


def timed(argv, log):
    """Run ``argv`` -> {wall, cpu (children's user+sys), cpu_sys (of it the kernel's: forks and exits), peak_pss_mb,
    main_rss_mb (the peak resident size of ansible-playbook's main process), rc, output}."""
    before = os.times()
    started = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        peak = [0, 0]

        def sample():
            while proc.poll() is None:
                tree, main = tree_memory(proc.pid)
                peak[0], peak[1] = max(peak[0], tree), max(peak[1], main)
                time.sleep(0.5)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        proc.wait()
        sampler.join()
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return {"wall": round(time.monotonic() - started, 1), "cpu": round(cpu, 1),
            "cpu_sys": round(after.children_system - before.children_system, 1), "peak_pss_mb": peak[0] // 2**20,
            "main_rss_mb": peak[1] // 2**20, "rc": proc.returncode, "output": Path(log).read_text()}


def host_tasks(output):
    """{host: tasks it ran or skipped} from the play recap."""
    return {m.group(1): int(m.group(2)) + int(m.group(5)) + int(m.group(6)) + int(m.group(4))
            for m in RECAP.finditer(output)}


def by_kind(tasks):
    """{host: host-tasks} -> (the servers' counts, the leaves' counts) by the twin's host names."""
    return ([n for h, n in tasks.items() if h.startswith("srv-")],
            [n for h, n in tasks.items() if "-leaf-" in h])


def _twin_tool():
    """tests/twin/twin.py as a module (its report of a rehearsal)."""
    spec = importlib.util.spec_from_file_location("twin_tool", REPO / "tests" / "twin" / "twin.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def batch_seconds(plays, total):
    """[seconds of each batch]: the rollout play starts once per batch (serial); a batch lasts until the next play."""
    starts = [(p["name"], p["started"]) for p in plays]
    out = []
    for index, (name, started) in enumerate(starts):
        if name.startswith("The rollout, batch by batch"):
            end = starts[index + 1][1] if index + 1 < len(starts) else total
            out.append(round(end - started, 1))
    return out


def main():
    with tempfile.TemporaryDirectory(prefix="bench-twin-") as tmp:
        tmp = Path(tmp)
        (tmp / "vault").write_text(VAULT + "\n")
        vault = ["--vault-password-file", str(tmp / "vault")]
        where, first = limit(SUS), limit(1)
        build = timed(TWIN + ["build", "-i", str(SITE), "--out", str(tmp / "twin"), "--groups", where] + vault,
                      tmp / "build.log")
        if build["rc"]:
            raise SystemExit(build["output"][-3000:])
        (tmp / "ping3.yml").write_text(PING)
        (tmp / "ping6.yml").write_text(PING + PING.split("tasks:\n")[1])
        pings = [timed(TWIN + ["run", "--out", str(tmp / "twin"), "--limit", limit(1, leaves=False), "--apply",
                               "--playbook", str(tmp / name)] + vault, tmp / (name + ".log"))
                 for name in ("ping3.yml", "ping6.yml")]
        site = timed(TWIN + ["run", "--out", str(tmp / "twin"), "--limit", where] + vault, tmp / "site.log")
        tasks = host_tasks(site["output"])
        rehearsal = _twin_tool().report(tmp / "twin") if (tmp / "twin" / "reports" / "rehearsal.json").exists() \
            else {}
        plays = json.loads((tmp / "twin" / "reports" / "rehearsal.json").read_text()).get("plays", []) \
            if rehearsal else []
        # SU 1 converged (site.yml applied), then site.yml again on it: what every later run of a converged site costs
        # (not in a smoke run: the rehearsal proves the benchmark runs; the role tests converge the twin)
        converge = rerun = dict(dict.fromkeys(FIGURES), output="")
        if not SMOKE:
            converge = timed(TWIN + ["run", "--out", str(tmp / "twin"), "--limit", first, "--apply"] + vault,
                             tmp / "converge.log")
            rerun = timed(TWIN + ["run", "--out", str(tmp / "twin"), "--limit", first, "--apply"] + vault,
                          tmp / "rerun.log")
        rerun_tasks = host_tasks(rerun["output"])
        OUTPUT.mkdir(parents=True, exist_ok=True)
        (OUTPUT / "bench-twin-site.log").write_text(site["output"])
        if rehearsal:
            (OUTPUT / "bench-twin-rehearsal.md").write_text(
                (tmp / "twin" / "reports" / "twin.md").read_text())
    hosts = len(host_tasks(pings[0]["output"]))
    ping_cost = (pings[1]["cpu"] - pings[0]["cpu"]) / (3 * hosts) if hosts else None
    servers, leaves = by_kind(tasks)
    total_tasks = sum(servers) + sum(leaves)
    site_cost = site["cpu"] / total_tasks if total_tasks else None
    rerun_servers, rerun_leaves = by_kind(rerun_tasks)
    batches = batch_seconds(plays, rehearsal.get("rehearsal_seconds") or site["wall"])
    numbers = {
        "scalable_units": SUS, "servers": len(servers), "leaves": len(leaves), "cores": os.cpu_count(),
        "build": {k: build[k] for k in ("wall", "cpu", "cpu_sys", "peak_pss_mb", "main_rss_mb")},
        "ping": {"hosts": hosts, "cpu_3": pings[0]["cpu"], "cpu_6": pings[1]["cpu"],
                 "cpu_per_host_task": round(ping_cost, 4) if ping_cost else None},
        "rehearsal": dict({k: site[k] for k in FIGURES},
                          planning_s=rehearsal.get("planning_seconds"),
                          before_first_batch_s=rehearsal.get("before_first_batch_seconds"), batches=len(batches),
                          batch_s_max=max(batches, default=None), batch_s=batches,
                          predicted_rollout_s=rehearsal.get("rollout_seconds")),
        "host_tasks": {"total": total_tasks, "per_server": round(sum(servers) / len(servers), 1) if servers else None,
                       "per_leaf": round(sum(leaves) / len(leaves), 1) if leaves else None},
        "converge_su1": {k: converge[k] for k in FIGURES},
        "compliant_rerun_su1": dict({k: rerun[k] for k in FIGURES},
                                    host_tasks_per_server=round(sum(rerun_servers) / len(rerun_servers), 1)
                                    if rerun_servers else None,
                                    host_tasks_per_leaf=round(sum(rerun_leaves) / len(rerun_leaves), 1)
                                    if rerun_leaves else None,
                                    host_tasks_max_server=max(rerun_servers, default=None),
                                    host_tasks_max_leaf=max(rerun_leaves, default=None)),
        "site_cpu_per_host_task": round(site_cost, 4) if site_cost else None,
        "overhead_vs_ping": round(site_cost / ping_cost, 2) if site_cost and ping_cost else None,
    }
    whole = "the whole site" if SUS == FULL_SUS and not SMOKE else "%s of %d SUs" % (
        "rack r01" if SMOKE else SUS, FULL_SUS)
    publish("bench-twin", numbers, [
        at_most("the rehearsal ends without a failure (rc)", site["rc"], 0),
        at_most("the rehearsal of %s, one run (s; issue 40)" % whole, site["wall"], 3600),
        at_most("the planning play - the rail plan and the batches (s; issue 40)", numbers["rehearsal"]["planning_s"],
                60),
        at_most("SU 1 converged by site.yml (rc)", converge["rc"], 0),
        at_most("site.yml rerun on the converged SU 1 (rc)", rerun["rc"], 0),
        at_most("host-tasks per server of a compliant rerun (the most of any server; issue 40)",
                numbers["compliant_rerun_su1"]["host_tasks_max_server"], 40),
        at_most("host-tasks per leaf of a compliant rerun (the most of any leaf; issue 40)",
                numbers["compliant_rerun_su1"]["host_tasks_max_leaf"], 15),
    ], ["%s: rc %d" % (what, run["rc"]) for what, run in (("the rehearsal", site), ("the converge", converge),
                                                          ("the rerun", rerun), ("ping", pings[0])) if run["rc"]])


if __name__ == "__main__":
    main()
