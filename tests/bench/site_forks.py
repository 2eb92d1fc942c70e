"""Benchmark of the site's `forks` (inventory/example-1250-files/ansible.cfg): playbooks/site.yml --check --diff on the
fleet twin (tests/twin) of a slice of inventory/example-1250, run with the site's own ansible.cfg at several forks,
as figures measured in one run.

    .venv/bin/python tests/bench/site_forks.py    (BENCH_FORKS=5,25,50 and BENCH_SITE_SUS=1 by default; a smoke
                                                   run, BENCH_SMOKE=1: forks 5 on rack r01 and its leaves)

The twin is built once for the first BENCH_SITE_SUS scalable units (32 servers and 8 leaves each), then site.yml runs
on it once per forks value with ANSIBLE_CONFIG the example's ansible.cfg (pipelining, gathering, callbacks, timeouts
as a site has them; the twin's connection and callback on top, ANSIBLE_FORKS the value measured) and
`-e gpufabric_batch_by=su`: one batch per scalable unit, so the rollout play has the slice's 40 hosts in one batch, as
a real batch of the example (10 %: 125 servers and their leaves) has more hosts than any forks measured here - with
the example's canary sizes (1, 4, then 10 % of the slice) no batch of the slice would have more than 4 servers and
forks would not matter past the planning plays. For each run: wall time, CPU (the children's user + system), the
peak memory of the whole process tree (the sum of the proportional set sizes: the workers' shared pages counted once,
tests/bench/twin.py), host-tasks from the recap, rc.

The twin's tools answer at once (no latency model in a run): every run is CPU on this controller, so past a few
forks per core more forks cannot shorten it here - on a real cluster a worker mostly waits for its host (a burn,
a reboot, an NVUE apply), which is what more forks buy. The figures give what a fork costs the controller (CPU per
host-task, memory per fork) and where this machine saturates; inventory/example-1250/README.md ("ansible.cfg") turns
them into the example's forks. Targets: every run without a failure; each step up in forks costs no more than 10 %
more wall time (wall(25) / wall(5), wall(50) / wall(25) <= 1.1) and a host-task no more than 10 % more controller CPU
(forks 50 against 5) - past saturation more workers should cost only memory; at most 64 MB per worker running at
once (the tree's peak against min(forks, hosts): 50 forks within about 3 GB) and 4 GB in all at forks 50. Nothing
is asserted; all is written to tests/output/site-forks.json.
"""
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE)]
import twin as bench_twin  # noqa: E402  (tests/bench/twin.py: timed, host_tasks, limit)
from _report import OUTPUT, at_most, command_line, equal, publish, smoke_or  # noqa: E402

FORKS = [int(n) for n in os.environ.get("BENCH_FORKS", smoke_or("5,25,50", "5")).split(",")]   # smoke: rack r01
SUS = int(os.environ.get("BENCH_SITE_SUS", "1"))
SITE = REPO / "inventory" / "example-1250"
SITE_CFG = REPO / "inventory" / "example-1250-files" / "ansible.cfg"
TWIN = [sys.executable, str(REPO / "tests" / "twin" / "twin.py")]
VAULT = "example-1250-only-not-a-secret"  # noqa: S105 - published in inventory/example-1250/README.md


def site_forks():
    """The forks the example's ansible.cfg sets."""
    import configparser
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#", ";"))
    parser.read(SITE_CFG)
    return parser.getint("defaults", "forks")


def main():
    os.environ.update(ANSIBLE_CONFIG=str(SITE_CFG), ANSIBLE_CALLBACKS_ENABLED="gpufabric.mlnx.progress")
    runs = {}
    with tempfile.TemporaryDirectory(prefix="bench-site-forks-") as tmp:
        tmp = Path(tmp)
        (tmp / "vault").write_text(VAULT + "\n")
        vault = ["--vault-password-file", str(tmp / "vault")]
        where = bench_twin.limit(SUS)
        build = bench_twin.timed(TWIN + ["build", "-i", str(SITE), "--out", str(tmp / "twin"), "--groups", where]
                                 + vault, tmp / "build.log")
        if build["rc"]:
            raise SystemExit(build["output"][-3000:])
        for forks in FORKS:
            ran = bench_twin.timed(TWIN + ["run", "--out", str(tmp / "twin"), "--limit", where, "--forks", str(forks)]
                                   + vault + ["--", "-e", "gpufabric_batch_by=su"], tmp / ("site-%d.log" % forks))
            per_host = bench_twin.host_tasks(ran["output"])   # the recap: {host: host-tasks}
            tasks, hosts = sum(per_host.values()), len(per_host)
            runs[forks] = {"wall": ran["wall"], "cpu": ran["cpu"], "peak_pss_mb": ran["peak_pss_mb"], "rc": ran["rc"],
                           "host_tasks": tasks, "cpu_per_host_task": round(ran["cpu"] / tasks, 4) if tasks else None,
                           "progress_lines": ran["output"].count("[progress] batch")}
            OUTPUT.mkdir(parents=True, exist_ok=True)
            (OUTPUT / ("site-forks-%d.log" % forks)).write_text(ran["output"])
    low, mid, high = (FORKS + [None, None, None])[:3]

    def ratio(a, b, key="wall"):
        return round(runs[a][key] / runs[b][key], 2) if a in runs and b in runs and runs[b][key] else None

    # the workers that can run at once: no more than the slice's hosts, whatever the forks
    workers = {f: min(f, hosts) for f in FORKS}
    per_worker = (round((runs[FORKS[-1]]["peak_pss_mb"] - runs[FORKS[0]]["peak_pss_mb"])
                        / (workers[FORKS[-1]] - workers[FORKS[0]]), 1)
                  if len(FORKS) > 1 and workers[FORKS[-1]] != workers[FORKS[0]] else None)
    numbers = {
        "scalable_units": SUS, "hosts": hosts, "cores": os.cpu_count(), "site_cfg": str(SITE_CFG.relative_to(REPO)),
        "site_cfg_forks": site_forks(), "build": {k: build[k] for k in ("wall", "cpu", "peak_pss_mb")},
        "runs": {str(f): r for f, r in runs.items()},
        "wall_%s_over_%s" % (mid, low): ratio(mid, low), "wall_%s_over_%s" % (high, mid): ratio(high, mid),
        "cpu_per_host_task_%s_over_%s" % (high, low): ratio(high, low, "cpu_per_host_task"),
        "memory_mb_per_worker": per_worker,
    }
    publish("site-forks", numbers, [
        equal("every run ends without a failure (rc of each forks)", {str(f): r["rc"] for f, r in runs.items()},
              {str(f): 0 for f in runs}),
        at_most("forks %s costs no more wall time than forks %s (wall(%s) / wall(%s))" % (mid, low, mid, low),
                ratio(mid, low), 1.1),
        at_most("forks %s costs no more wall time than forks %s (wall(%s) / wall(%s))" % (high, mid, high, mid),
                ratio(high, mid), 1.1),
        at_most("a host-task costs the controller no more CPU at forks %s than at %s (CPU-s per host-task, ratio)"
                % (high, low), ratio(high, low, "cpu_per_host_task"), 1.1),
        at_most("memory per worker running at once (MB; the tree's peak PSS against min(forks, hosts))", per_worker, 64),
        at_most("peak memory of the process tree at forks %s (MB)" % FORKS[-1], runs[FORKS[-1]]["peak_pss_mb"], 4096),
        equal("the site's ansible.cfg was the configuration: the progress callback printed batch lines at every forks",
              all(r["progress_lines"] > 0 for r in runs.values()), True),
    ], ["site.yml at forks %d: rc %d" % (f, r["rc"]) for f, r in runs.items() if r["rc"]])


if __name__ == "__main__":
    command_line(__doc__)
    main()
