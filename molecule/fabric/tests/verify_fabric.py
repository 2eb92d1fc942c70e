# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric scenario's checks, run by verify.yml on the controller (root, the lab up, after check, converge and
idempotence):

1. the first converge, from the two event logs (the NVUE emulator's in every leaf, the NIC simulator's call log in
   every server): in every batch, every leaf event but a read (the validation gate reads the leaves after the
   servers) came before the first server call of that batch; each leaf applied exactly one revision in it, and
   the leaf behind (5.4.0) was installed and rebooted once, before its apply; the check run applied, installed
   and rebooted nothing (whatever it read), and predicted the converge (the leaves it said would change are those
   that changed); idempotence applied nothing;
2. the validation gate (playbooks/validate.yml, issue 14): nothing is tested again when nothing changed; each
   modelled fault - a degraded PCIe link, an MTU left at 1500, PFC off on the host while its leaf has it, a bad card,
   a flapping link, a marginal cable (raw BER 1e-4 that FEC corrects) - planted on one server quarantines exactly
   that server, named with the measure that failed; every tested rail has its PHY counters read before and after
   and the effective BER its window certifies;
   the next run (the fault gone) retests the quarantined servers - only those and the next faults' - and hands them
   over;
3. site.yml again, as an operator runs it, with the faults of issue 13 section 5 - each case names the servers it
   holds, the leaf and the reason, and that the others went on (the gate off in these runs: part 2 is its test);
4. the drain against the lab's real Slurm; 5. the gate through Slurm's ``srun --mpi=pmix`` (srun): two drained
   servers retested, every world's rank count what the plan says, every node's Slurm state what it was.

    verify_fabric.py --repo DIR --records DIR --inventory SRC [--inventory SRC ...] [--only PART] [--prefix LAB-]
"""
import argparse
import json
import os
import subprocess
import sys
import time

LEAF_STATE = "/var/lib/nvuesim"
# the leaves whose release shows PHY counters (group_vars/leaves.yml fabric_lab_own_release); the others run 5.9.1
PHY_LEAVES = ["r01-leaf-rail1", "r01-leaf-rail2"]
CALLS = "/var/lib/mlxsim/calls.jsonl"
LAB = "tests/lab/labs/fabric.yml"
PREFIX = "gffab-"
# the events that change a leaf (reads are not; a check makes no revision at all)
CHANGES = ("apply", "install", "reboot", "fetch", "boot-next", "save")


class Failed(AssertionError):
    pass


def expect(condition, message):
    if not condition:
        raise Failed(message)


def sh(*argv, check=True, **kw):
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False, **kw)
    if check and proc.returncode != 0:
        command = " ".join(map(str, argv))
        raise Failed("%s: rc %d\n%s\n%s" % (command, proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    return proc


def leaf_events(leaf):
    out = sh("podman", "exec", PREFIX + leaf, "nvuesim", "--state", LEAF_STATE, "events").stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def server_calls(server):
    out = sh("podman", "exec", PREFIX + server, "cat", CALLS, check=False).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def on(host, argv):
    """A fault's plant or clear command: on the server's container, or on the leaf's one for argv "@leaf", ..."""
    if argv[0].startswith("@"):
        return [PREFIX + argv[0][1:], *argv[1:]]
    return [PREFIX + host, *argv]


def fault(leaf, *args):
    sh("podman", "exec", PREFIX + leaf, "nvuesim", "--state", LEAF_STATE, "fault", *args)


def window(entries, start, end, key):
    return [e for e in entries if start <= e[key] <= end]


class Scenario:
    def __init__(self, args):
        self.repo = args.repo
        self.records = args.records
        self.inventory = args.inventory
        self.leaves = ["r0%d-leaf-rail%d" % (rack, rail) for rack in (1, 2) for rail in range(4)]
        self.servers = ["fab-r0%d-0%d" % (rack, pos) for rack in (1, 2) for pos in (1, 2)]

    def record(self, kind):
        with open(os.path.join(self.records, "fabric-%s.json" % kind)) as fh:
            record = json.load(fh)
        with open(os.path.join(self.records, "fabric-%s-start" % kind)) as fh:
            record["start"] = float(fh.read())
        return record

    # ------------------------------------------------------------------ 1. the first rollout
    def first_rollout(self):
        check, converge = self.record("check"), self.record("converge")
        events = {leaf: leaf_events(leaf) for leaf in self.leaves}
        calls = {server: server_calls(server) for server in self.servers}
        for leaf, log in events.items():
            in_check = [e["event"] for e in window(log, check["start"], check["end"], "t")]
            expect(not set(in_check) & set(CHANGES), "%s: the check run changed the leaf: %s" % (leaf, in_check))
            expect(not {"revision", "stage", "discard"} & set(in_check),
                   "%s: the check run made a revision (the API cannot discard one): %s" % (leaf, in_check))
            done = [e["event"] for e in window(log, converge["start"], converge["end"], "t")]
            expect(done.count("apply") == 1, "%s: %d applies in the first converge" % (leaf, done.count("apply")))
            behind = leaf == "r02-leaf-rail3"
            expect(done.count("install") == int(behind) and done.count("reboot") == int(behind),
                   "%s: installs/reboots in the first converge: %s" % (leaf, done))
            if behind:
                expect(done.index("booted") < done.index("apply"), "%s: applied before its reboot: %s" % (leaf, done))
            after = [e["event"] for e in log if e["t"] > converge["end"]]
            expect(not set(after) & set(CHANGES), "%s: the idempotence run changed the leaf: %s" % (leaf, after))
            predicted = check["leaves"][leaf]["changed"]
            expect(predicted == converge["leaves"][leaf]["changed"],
                   "%s: check said changed=%s, converge changed=%s" % (leaf, predicted, converge["leaves"][leaf]))
        # each leaf's RoCE in the spelling of its release (docs/leaves.md, release-aware keys)
        for leaf, (key, value) in {"r01-leaf-rail1": ("state", "enabled"), "r01-leaf-rail2": ("enable", "on"),
                                   "r01-leaf-rail0": ("enable", "on")}.items():
            out = sh("podman", "exec", PREFIX + leaf, "nv", "--state", LEAF_STATE, "config", "show", "-o", "json",
                     "--applied").stdout
            doc = json.loads(out)
            tree = doc[0]["set"] if isinstance(doc, list) else doc
            roce = tree.get("qos", {}).get("roce", {})
            expect(roce.get(key) == value and len({"enable", "state"} & set(roce)) == 1,
                   "%s: qos roce applied as %s, not %s %s" % (leaf, roce, key, value))
        order = []
        for batch in converge["batches"]:
            # every leaf event but a read: the validation gate reads the leaves again after the batch's servers
            last_leaf = max(e["t"] for leaf in batch["leaves"]
                            for e in window(events[leaf], converge["start"], converge["end"], "t")
                            if e["event"] != "read")
            first_server = min(c["start"] for server in batch["servers"]
                               for c in window(calls[server], converge["start"], converge["end"], "start"))
            expect(last_leaf < first_server, "%s: a leaf event at %.3f after the first server call at %.3f"
                   % (batch["name"], last_leaf, first_server))
            order.append("%s: leaves done %.2f s before its first server call" % (batch["name"],
                                                                                  first_server - last_leaf))
        expect(converge["held"] == dict.fromkeys(self.servers, []), "held in the first converge: %s" % converge["held"])
        return order

    # ------------------------------------------------------------------ 2. the validation gate
    def validate(self, *args):
        """playbooks/validate.yml -> (rc, the results document, the run's plan)."""
        rc, data = self.site(*args, playbook="validate.yml")
        plan_task = "Plan the run - who is tested and why, the pairs, the NCCL worlds"
        facts = [r.get("ansible_facts", {}) for r in self.results(data, plan_task).values()]
        found = [r.get("ansible_facts", {}) for r in self.results(
            data, "The verdict - every measure against its threshold, failures attributed, quarantine").values()]
        results = (found[0] if found else {}).get("gpufabric_gate_results") or {}
        return rc, results, (facts[0] if facts else {}).get("gpufabric_gate") or {}

    def gate(self):
        lines = []
        rc, results, plan = self.validate()
        expect(rc == 0 and plan.get("tested") == [] and sorted(plan.get("not_retested", [])) == self.servers,
               "an unchanged fabric was tested again: rc %d, tested %s" % (rc, plan.get("tested")))
        expect(results.get("handover") == self.servers, "handed over: %s" % results.get("handover"))
        lines.append("gate, nothing changed: 0 servers tested, 4 handed over")
        sim = ["podman", "exec"]
        # (name, host, measure, plant, clear); the faults of one run sit in different racks (different leaves,
        # different pairs), so each run shows that a fault quarantines exactly its own server and not its peer
        runs = [
            [("degraded PCIe link", "fab-r01-02", "pcie",
              ["mlxsim", "fault", "add", "pcie_degraded", "--device", "mlx5_0"], ["mlxsim", "fault", "clear", "pcie_degraded"]),
             ("PFC off on the host, on on its leaf", "fab-r02-02", "qos",
              ["mlnx_qos", "-i", "enp154s0np0", "--pfc", "0,0,0,0,0,0,0,0"],
              ["mlnx_qos", "-i", "enp154s0np0", "--pfc", "0,0,0,1,0,0,0,0"])],
            [("bad card", "fab-r01-01", "symbol_errors",
              ["mlxsim", "fault", "add", "bad_card", "--device", "mlx5_4"], ["mlxsim", "fault", "clear", "bad_card"]),
             ("MTU 1500 on the host", "fab-r02-01", "mtu", ["ip", "link", "set", "enp64s0np0", "mtu", "1500"],
              ["ip", "link", "set", "enp64s0np0", "mtu", "9000"])],
            [("flapping link", "fab-r02-01", "link_flaps",
              ["mlxsim", "fault", "add", "link_flap", "--device", "mlx5_5"], ["mlxsim", "fault", "clear", "link_flap"]),
             ("marginal cable (raw BER 1e-4, every error corrected by FEC)", "fab-r01-02", "raw_ber",
              ["mlxsim", "fault", "add", "raw_ber", "--device", "mlx5_0", "ber=1e-4"],
              ["mlxsim", "fault", "clear", "raw_ber"]),
             # the other direction: what r01-leaf-rail2 (Cumulus Linux 5.11, link phy-detail) receives on
             # fab-r01-01's rail 2 port - the host's own counters are clean; planted on the leaf's container
             ("marginal cable seen by the leaf (raw BER 1e-4 at r01-leaf-rail2 swp1)", "fab-r01-01", "raw_ber",
              ["@r01-leaf-rail2", "nvuesim", "--state", LEAF_STATE, "fault", "set", "raw_ber", "swp1", "1e-4"],
              ["@r01-leaf-rail2", "nvuesim", "--state", LEAF_STATE, "fault", "clear", "raw_ber", "swp1"])],
            # a launch that makes worlds of one: nccl-tests built without MPI=1 on both servers of the r02 pair -
            # mpirun starts every rank, each runs alone; the gate fails the pair's world naming the cause
            [("nccl-tests without MPI=1 (worlds of one)", host, "nccl_busbw",
              ["mlxsim", "fault", "add", "nccl_no_mpi"], ["mlxsim", "fault", "clear", "nccl_no_mpi"])
             for host in ("fab-r02-01", "fab-r02-02")],
        ]
        # each run also retests the servers the run before quarantined (its faults cleared): they pass and are
        # handed over, while this run's faults quarantine exactly their own servers; a last run retests the last.
        # The first run's NCCL worlds were started by a real mpirun: the simulated ranks' log shows the rank and
        # size it gave them (lines.append in launched())
        quarantined, tested_runs, leaf_sides = [], 0, set()
        for cases in runs + [[]]:
            hosts = [case[1] for case in cases]
            for _name, host, _measure, plant, _clear in cases:
                sh(*sim, *on(host, plant))
            try:
                started = time.time()
                rc, results, plan = self.validate(*(["-e", json.dumps({"gpufabric_gate_retest": hosts})]
                                                    if hosts else []))
            finally:
                for _name, host, _measure, _plant, clear in cases:
                    sh(*sim, *on(host, clear))
            took, tested_runs = time.time() - started, tested_runs + 1
            if tested_runs == 1:
                lines.append(self.launched(started, plan))
            expect(sorted(plan.get("tested", [])) == sorted(set(hosts) | set(quarantined)),
                   "after %s, with %s planted: tested %s" % (quarantined, hosts, plan.get("tested")))
            healed = [h for h in quarantined if h not in hosts]
            expect(all(results["hosts"][h]["status"] == "passed" for h in healed),
                   "the rerun of %s: %s" % (healed, {h: results["hosts"][h]["status"] for h in healed}))
            quarantined = sorted(q["host"] for q in results.get("quarantine", []))
            expect(rc == 0 and quarantined == sorted(hosts), "%s: rc %d, quarantined %s" % (
                " + ".join(c[0] for c in cases) or "no fault", rc, quarantined))
            expect(results.get("handover") == [h for h in self.servers if h not in hosts],
                   "%s planted: handed over %s" % (hosts, results.get("handover")))
            # every tested server's every rail: its PHY counters read before and after, the bits the window
            # carried and the effective BER it certifies (never a bare OK)
            for host in plan.get("tested", []):
                for row in results["hosts"][host]["rails"]:
                    ber = row.get("ber") or {}
                    expect(ber.get("error") is None and ber.get("bits", 0) > 0 and ber.get("certified_ber"),
                           "%s rail %s: no BER certified: %s" % (host, row.get("rail"), ber))
                    # the leaf's side: certified by the port's own received-bits counter on the leaves that have
                    # PHY counters (5.11: link phy-detail, 5.16: link phy health), not available on the 5.9.1 ones
                    leaf = row.get("leaf_ber") or {}
                    if row["leaf"] in PHY_LEAVES:
                        expect(leaf.get("error") is None and leaf.get("bits_from") == "received bits counter"
                               and leaf.get("bits", 0) > 0 and leaf.get("certified_ber"),
                               "%s rail %s, leaf %s: no BER certified: %s" % (host, row["rail"], row["leaf"], leaf))
                        leaf_sides.add(row["leaf"])
                    else:
                        expect(leaf.get("unavailable") == "leaf %s %s has no PHY counters: Cumulus Linux 5.9.1 has "
                               "no link phy-detail (NVUE shows PHY counters from 5.10): the switch answered that it "
                               "has none" % (row["leaf"], row["leaf_port"]),
                               "%s rail %s, leaf %s (5.9.1): %s" % (host, row["rail"], row["leaf"], leaf))
            for name, host, measure, _plant, _clear in cases:
                measures = sorted({f["measure"] for f in results["hosts"][host]["failures"]})
                expect(measure in measures, "%s on %s: the failures name %s, not %s" % (name, host, measures, measure))
                if measure == "nccl_busbw":
                    words = [f["message"] for f in results["hosts"][host]["failures"] if f["measure"] == measure]
                    expect(any("where the plan has 8 (2 hosts x 4 GPUs): each rank ran alone, a world of one" in w
                               and "nccl-tests built without MPI=1" in w for w in words),
                           "worlds of one on %s: %s" % (host, words))
                    if host == "fab-r02-01":
                        lines.append("gate, worlds of one: %s" % words[0][:160])
                elif measure == "raw_ber" and "seen by the leaf" in name:
                    mine = [f for f in results["hosts"][host]["failures"] if f.get("side") == "leaf"]
                    expect([(f["measure"], f["rail"]) for f in mine] == [("raw_ber", 2)]
                           and "received by leaf r01-leaf-rail2 swp1" in mine[0]["message"],
                           "the leaf's raw BER fault: %s" % mine)
                    ber = results["hosts"][host]["rails"][2]["leaf_ber"]
                    expect(1e-5 < ber["raw_ber"] < 1.01e-4 and ber["effective_errors"] == 0
                           and results["hosts"][host]["rails"][2]["ber"]["raw_ber"] == 0,
                           "the leaf's raw BER fault's rail: %s" % results["hosts"][host]["rails"][2])
                    lines.append("gate, raw BER fault at the leaf: %.2e over %.2e bits (%s), host side clean"
                                 % (ber["raw_ber"], ber["bits"], ber["bits_from"]))
                elif measure == "raw_ber":
                    ber = [r["ber"] for r in results["hosts"][host]["rails"] if r["ber"].get("raw_ber")][0]
                    # 1e-4 within 1 %: the window is timed by the reads (port rate x seconds between them), the
                    # errors by the simulator at each read - a few milliseconds apart
                    expect(1e-5 < ber["raw_ber"] < 1.01e-4 and ber["effective_errors"] == 0 and ber["moved"],
                           "the raw BER fault's rail: %s" % ber)
                    lines.append("gate, raw BER fault: %.2e over %.2e bits in %.0f s (%s), effective BER certified "
                                 "< %.2e" % (ber["raw_ber"], ber["bits"], ber["seconds"], ber["bits_from"],
                                             ber["certified_ber"]))
                text = "gate, %s on %s: quarantined alone (%s); run %.0f s" % (name, host, ", ".join(measures), took)
                lines.append(text)
        lines.append("gate, every run after a fault: the quarantined servers retested and handed over (%d runs)"
                     % tested_runs)
        expect(leaf_sides == set(PHY_LEAVES), "leaf sides certified on %s, not on every leaf with PHY counters %s"
               % (sorted(leaf_sides), PHY_LEAVES))
        lines.append("gate, leaf side of the BER: certified on %s (link phy-detail, link phy health), not available "
                     "on the 5.9.1 leaves" % ", ".join(PHY_LEAVES))
        return lines

    def launched(self, since, plan):
        """Every NCCL world of a gate run was started by Open MPI's mpirun: each multi-rank world of the plan shows,
        in the simulated ranks' call log on its members, one rank per GPU with the rank, size and PMIx namespace
        mpirun gave it (ranks 0..size-1, each on the member the plan puts it on)."""
        ranks = {}
        for server in self.servers:
            for call in server_calls(server):
                launcher = call.get("launcher") or {}
                if call.get("tool") == "all_reduce_perf" and call["start"] >= since and "PMIX_NAMESPACE" in launcher:
                    ranks.setdefault(launcher["PMIX_NAMESPACE"], []).append(
                        (int(launcher["OMPI_COMM_WORLD_RANK"]), int(launcher["OMPI_COMM_WORLD_SIZE"]), server))
        worlds = [w for key in ("nccl_pairs", "nccl_su") for w in (plan.get(key) or {}).get("worlds", [])]
        expect(worlds and len(ranks) == len(worlds), "%d NCCL worlds planned, %d started by mpirun (PMIx namespaces "
               "in the ranks' log: %s)" % (len(worlds), len(ranks), sorted(ranks)))
        expected = sorted(sorted((m * w["rails"] + g, w["size"], host) for m, host in enumerate(w["hosts"])
                                 for g in range(w["rails"])) for w in worlds)
        expect(sorted(sorted(r) for r in ranks.values()) == expected,
               "the ranks mpirun started (rank, size, host): %s; the plan's: %s" % (sorted(ranks.values()), expected))
        return "gate, NCCL through a real mpirun: %d worlds, %s ranks, each with the rank and size mpirun gave it" % (
            len(worlds), "+".join(str(w["size"]) for w in worlds))

    # ------------------------------------------------------------------ 3. the faults
    def site(self, *args, playbook="site.yml", gate=False, during=None):
        """One run of ``playbook``; ``during()`` is called every half second while it runs (until it returns
        true)."""
        argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook")]
        argv += ["--inventory=%s" % src for src in self.inventory]
        # a fault does not go away by waiting: the gate reads a leaf for 4 s, not the inventory's 20
        argv += [os.path.join(self.repo, "playbooks", playbook), "-e", "gpufabric_leaf_ready_timeout=4", *args]
        if playbook == "site.yml" and not gate:  # the switch faults' runs: the gate has its own part
            argv += ["-e", "gpufabric_validate_enabled=false"]
        env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_FORCE_COLOR="0",
                   ANSIBLE_NOCOLOR="1")
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                              cwd=self.repo) as run:
            done = during is None
            while not done and run.poll() is None:
                done = during()
                time.sleep(0.5)
            stdout, stderr = run.communicate()
        proc = subprocess.CompletedProcess(argv, run.returncode, stdout, stderr)
        try:
            data = json.loads(proc.stdout)
        except ValueError:
            raise Failed("site.yml %s: no JSON (rc %d)\n%s\n%s" % (" ".join(args), proc.returncode, proc.stdout[-3000:],
                                                                   proc.stderr[-3000:])) from None
        return proc.returncode, data

    @staticmethod
    def results(data, name):
        """{host: result} of every task whose name ends with ``name`` (the last result of each host)."""
        out = {}
        for play in data["plays"]:
            for task in play["tasks"]:
                if task["task"]["name"].split(" : ")[-1] == name:
                    out.update(task["hosts"])
        return out

    def held(self, data):
        return {host: r["ansible_facts"]["gpufabric_held"]
                for host, r in self.results(data, "Why this server's leaves hold it").items()
                if r.get("ansible_facts", {}).get("gpufabric_held")}

    def touched(self, data):
        """The servers that reached the end of their batch (a held server ends its play before)."""
        gate = "Batch gate - stop before the next batch when too many servers of this one failed or were held"
        return sorted(h for h in self.results(data, gate) if h in self.servers)

    @staticmethod
    def wait_applied(leaf, timeout=90):
        """Until no revision of ``leaf`` is in state apply (nv config history: the emulator's state)."""
        for _attempt in range(int(timeout / 2)):
            state = json.loads(sh("podman", "exec", PREFIX + leaf, "nvuesim", "--state", LEAF_STATE,
                                  "show-state").stdout)
            if not any(r.get("state") == "apply" for r in state.get("revisions", {}).values()):
                return
            time.sleep(2)
        raise Failed("%s: a revision is still applying after %d s" % (leaf, timeout))

    @staticmethod
    def applies(leaf):
        return sum(1 for e in leaf_events(leaf) if e["event"] == "apply")

    def case(self, name, *args, faults=(), fails=True, held=None, touched=None, reasons=None, setup=None,
             cleanup=None):
        """One run of site.yml: ``faults`` [(leaf, fault, args...)] set before and cleared after; ``held`` the
        servers held ({server: leaf}); ``reasons`` {server: [words in its reasons]}."""
        for leaf, *spec in faults:
            fault(leaf, "set", *spec)
        if setup:
            setup()
        started = time.time()
        try:
            rc, data = self.site(*args)
        finally:
            for leaf, *spec in faults:
                if spec[0] != "roce_lossy":  # a one-shot hand change, not kept as a fault
                    fault(leaf, "clear", spec[0])
            if cleanup:
                cleanup()
        got = self.held(data)
        expect((rc != 0) == fails, "%s: rc %d (expected %s)" % (name, rc, "a failure" if fails else "0"))
        if held is not None:
            expect({h: sorted({e["leaf"] for e in v}) for h, v in got.items()} ==
                   {h: sorted(v) for h, v in held.items()}, "%s: held %s, expected %s" % (name, got, held))
        for host, words in (reasons or {}).items():
            text = "; ".join(e["reason"] for e in got.get(host, []))
            for word in words:
                expect(word in text, "%s: %s's reasons do not say %r: %s" % (name, host, word, text))
        if touched is not None:
            expect(self.touched(data) == sorted(touched), "%s: went on %s, expected %s" % (name, self.touched(data),
                                                                                           touched))
        return "%s: rc %d in %.0f s, held %s" % (name, rc, time.time() - started, sorted(got))

    def faults(self):
        lines = []
        # an apply the switch refuses holds its rack; a port in protodown holds only its server; the other goes on
        lines.append(self.case(
            "invalid apply on r01-leaf-rail2, protodown on r02-leaf-rail1 swp2",
            "-e", "gpufabric_max_fail_percentage=100",
            faults=[("r01-leaf-rail2", "roce_lossy"),
                    ("r01-leaf-rail2", "invalid_apply", "interface.swp1.link.mtu", "lab fault: refused"),
                    ("r02-leaf-rail1", "protodown", "swp2")],
            held={"fab-r01-01": ["r01-leaf-rail2"], "fab-r01-02": ["r01-leaf-rail2"], "fab-r02-02": ["r02-leaf-rail1"]},
            reasons={"fab-r01-01": ["could not be configured", "lab fault: refused"],
                     "fab-r02-02": ["protodown"]},
            touched=["fab-r02-01"]))
        # RoCE set to lossy by hand: --check finds it and applies nothing; the run fixes it
        before = self.applies("r02-leaf-rail0")
        fault("r02-leaf-rail0", "set", "roce_lossy")
        rc, data = self.site("--check", "--diff", "--limit", "rack_r02:r02-leaf-*")
        found = self.results(data, "The pinned switch OS, then one revision - ports, addresses, RoCE QoS; applied "
                                   "only when it changes something")
        expect(rc == 0 and found["r02-leaf-rail0"]["changed"] and not found["r02-leaf-rail1"]["changed"],
               "--check did not find the lossy leaf: rc %d %s" % (rc, {k: v.get("changed") for k, v in found.items()}))
        expect("lossy" in json.dumps(found["r02-leaf-rail0"].get("diff")), "the diff does not show lossy")
        expect(self.applies("r02-leaf-rail0") == before, "--check applied on r02-leaf-rail0")
        lines.append("lossy by hand on r02-leaf-rail0: found by --check, 0 applies")

        # swapped cables: both servers held, each naming both cable labels; the lossy leaf fixed in the same run
        def swap():
            sh(sys.executable, os.path.join(self.repo, "tests/lab/lab.py"), "swap-cables", "--lab",
               os.path.join(self.repo, LAB), "fab-r02-01:enp154s0np0", "fab-r02-02:enp154s0np0")
            time.sleep(5)  # the LLDP TTL: the leaves see the new neighbours
        lines.append(self.case(
            "swapped cables fab-r02-01/fab-r02-02 on rail 2", "--limit", "rack_r02:r02-leaf-*", setup=swap,
            cleanup=swap, held={"fab-r02-01": ["r02-leaf-rail2"], "fab-r02-02": ["r02-leaf-rail2"]},
            reasons={"fab-r02-01": ["fab-r02-01:", "fab-r02-02:"]}, touched=[]))
        lossless = sh("podman", "exec", PREFIX + "r02-leaf-rail0", "nv", "show", "qos", "roce", "-o", "json").stdout
        expect(self.applies("r02-leaf-rail0") == before + 1 and "lossless" in lossless,
               "r02-leaf-rail0 was not fixed: %s" % lossless)
        lines.append("r02-leaf-rail0 fixed by the run: 1 apply, lossless")

        return lines

    def refusals(self):
        lines = []

        # the switch refuses to talk: the 403 persona, nvued down, an apply that times out, two clients at once
        def other_client():
            """Another client's apply (the nv CLI in the leaf), running - in state apply - when the run starts."""
            seen = len(leaf_events("r01-leaf-rail0"))
            sh("podman", "exec", "--detach", PREFIX + "r01-leaf-rail0", "sh", "-c",
               "nv set system message pre-login 'another client' && nv config apply -y")
            for _attempt in range(60):
                if any(e["event"] == "apply" and e["client"] != "rest" for e in leaf_events("r01-leaf-rail0")[seen:]):
                    return
                time.sleep(0.5)
            raise Failed("the other client's apply on r01-leaf-rail0 did not start within 30 s")
        lines.append(self.case(
            "403 persona, nvued down, a slow apply, two clients", "--limit", "rack_r01:r01-leaf-*",
            "-e", "gpufabric_leaf_apply_timeout=5", "-e", "gpufabric_max_fail_percentage=100",
            # the two leaves that cannot be read are named by the preflight before batch 1 and counted as unreachable
            # hosts: allowed here, so the rollout goes on and holds their servers with each leaf's own words
            "-e", "gpufabric_max_unreachable=2",
            faults=[("r01-leaf-rail3", "default_password"), ("r01-leaf-rail2", "nvued_down"),
                    ("r01-leaf-rail1", "roce_lossy"), ("r01-leaf-rail1", "slow_apply", "15"),
                    ("r01-leaf-rail0", "roce_lossy"), ("r01-leaf-rail0", "slow_apply", "3600")],
            setup=other_client,
            held={"fab-r01-01": self.leaves[:4], "fab-r01-02": self.leaves[:4]},
            reasons={"fab-r01-01": ["403", "password", "502", "nvued", "timeout", "409"]}, touched=[]))
        # the other client's apply on rail0 is held in flight for the whole run (a guess of how long the run takes to
        # reach the leaves - 30 s, then 60 s - was not enough beside make test's other streams: the run's apply came
        # after it ended) and ends when its slow_apply fault is cleared after the run; it and the run's own on rail1
        # (15 s, past the run's 5 s timeout) end before the next run
        for leaf in ("r01-leaf-rail0", "r01-leaf-rail1"):
            self.wait_applied(leaf)
        # all faults gone: the run converges everything back, nothing held
        lines.append(self.case("all faults cleared", fails=False, held={}, touched=self.servers))
        return lines


class Slurm:
    """The lab's Slurm (tests/lab/labs/fabric.yml: slurmctld on fab-r01-01, slurmd on every server)."""

    def run(self, *argv, check=True):
        return sh("podman", "exec", PREFIX + "fab-r01-01", *argv, check=check).stdout

    def node(self, name):
        """(state, reason) as sinfo says them."""
        line = self.run("sinfo", "--noheader", "--Node", "--nodes=" + name, "--format=%T|%E").splitlines()[0]
        state, reason = line.split("|", 1)
        return state, reason

    def job(self, job):
        """scontrol's fields of a job: JobState, EndTime, ..."""
        text = self.run("scontrol", "show", "job", "--oneliner", job)
        return dict(word.split("=", 1) for word in text.split() if "=" in word)

    def submit(self, node, release):
        """A job on ``node`` that runs until the file ``release`` exists in the node's container."""
        out = self.run("sbatch", "--parsable", "--nodelist=" + node, "--output=/dev/null", "--job-name=lab-work",
                       "--wrap", "while [ ! -e %s ]; do sleep 1; done" % release)
        return out.strip().split(";")[0]


# fab-r01-01's job is released 5 s after its node is seen draining, by a watcher that polls Slurm through podman
# exec: 20 s left too little room beside make test's other streams
DRAIN_TIMEOUT = 30


def drain(scenario):
    """site.yml with gpufabric_drain=slurm against the lab's real slurmctld, the gate on, one run:
    fab-r01-01 runs a job when the rollout starts - drained, waited for (the job ends while its node is draining,
    released by this test), then touched, then resumed; fab-r01-02 quarantined by the gate (a bad card; tested with
    its rack's peer) - left drained, the reason says why; fab-r02-01 was drained by an administrator - touched, left
    drained with the administrator's reason; fab-r02-02 runs a job that outlasts gpufabric_drain_timeout - held,
    never touched, the job still running after the run, the node still draining. Then the causes fixed and the
    rollout run again: both given back, the administrator's drain kept."""
    slurm, lines = Slurm(), []
    release = "/tmp/lab-job-release"
    for server in scenario.servers:
        sh("podman", "exec", PREFIX + server, "rm", "-f", release)
    slurm.run("scontrol", "update", "NodeName=fab-r02-01", "State=DRAIN", "Reason=admin: bad dimm, ticket 4711")
    waited = slurm.submit("fab-r01-01", release)
    kept = slurm.submit("fab-r02-02", release)
    for _attempt in range(60):
        if slurm.node("fab-r01-01")[0] == "allocated" and slurm.node("fab-r02-02")[0] == "allocated":
            break
        time.sleep(0.5)
    sh("podman", "exec", PREFIX + "fab-r01-02", "mlxsim", "fault", "add", "bad_card", "--device", "mlx5_4")
    seen = {}

    def watch():
        """fab-r01-01's job ends 5 s after the rollout drained its node; note when fab-r02-02 is drained."""
        now = time.time()
        if "r01" not in seen and slurm.node("fab-r01-01")[0] == "draining":
            seen["r01"] = now
        if "r01" in seen and "released" not in seen and now - seen["r01"] >= 5:
            sh("podman", "exec", PREFIX + "fab-r01-01", "touch", release)
            seen["released"] = now
        if "r02" not in seen and slurm.node("fab-r02-02")[0] == "draining":
            seen["r02"] = now
        return "released" in seen and "r02" in seen
    settings = {"gpufabric_drain": "slurm", "gpufabric_drain_slurm_host": "fab-r01-01",
                "gpufabric_drain_timeout": DRAIN_TIMEOUT,
                "gpufabric_drain_poll": 2, "gpufabric_max_fail_percentage": 100}
    started = time.time()
    try:
        rc, data = scenario.site("-e", json.dumps(dict(settings, gpufabric_gate_retest=["fab-r01-02"])), gate=True,
                                 during=watch)
        states = {server: slurm.node(server) for server in scenario.servers}
        jobs = {"waited": slurm.job(waited), "kept": slurm.job(kept)}
        took = time.time() - started
        lines += drain_checks(scenario, data, rc, seen, states, jobs, waited, kept, took)
        # the causes fixed - the card replaced, the long job ended on its own - and the rollout run again
        # (docs/operations.md, "Replace a quarantined card"): the quarantined server is retested and the held one
        # worked on, and both are given back; the administrator's drain of fab-r02-01 is still kept
        sh("podman", "exec", PREFIX + "fab-r01-02", "mlxsim", "fault", "clear", "bad_card")
        sh("podman", "exec", PREFIX + "fab-r02-02", "touch", release)
        for _attempt in range(60):
            if slurm.job(kept).get("JobState") == "COMPLETED":
                break
            time.sleep(0.5)
        started = time.time()
        rc, data = scenario.site("-e", json.dumps(settings), gate=True)
        again = {server: slurm.node(server) for server in scenario.servers}
        expect(rc == 0, "drain, the causes fixed: the run failed (rc %d): %s" % (rc, scenario.results(
            data, "No server was held")))
        expect(again["fab-r01-02"] == ("idle", "none") and again["fab-r02-02"] == ("idle", "none"),
               "drain, the causes fixed: the servers were not given back: %s" % again)
        expect(again["fab-r02-01"] == ("drained", "admin: bad dimm, ticket 4711"),
               "drain, the causes fixed: the administrator's drain of fab-r02-01 was lost: %s" % (again["fab-r02-01"],))
        lines.append("drain, the causes fixed (card replaced, job ended): the rollout again - fab-r01-02 retested "
                     "and fab-r02-02 worked on, both given back; fab-r02-01's own drain kept; run %.0f s"
                     % (time.time() - started))
    finally:
        sh("podman", "exec", PREFIX + "fab-r01-02", "mlxsim", "fault", "clear", "bad_card")
        slurm.run("scancel", kept, check=False)
        for server in scenario.servers:
            sh("podman", "exec", PREFIX + server, "touch", release)
        slurm.run("scontrol", "update", "NodeName=fab-r01-02,fab-r02-01,fab-r02-02", "State=RESUME", check=False)
    return lines


def drain_checks(scenario, data, rc, seen, states, jobs, waited, kept, took):
    """The first drain run of drain(), as it left Slurm and the servers."""
    lines = []
    expect(rc != 0, "drain: the run passed with a held server (rc 0)")
    expect("released" in seen and "r02" in seen, "drain: the nodes were not seen draining: %s" % seen)
    expect(jobs["waited"].get("JobState") == "COMPLETED", "drain: the waited-for job %s ended %s, not COMPLETED"
           % (waited, jobs["waited"].get("JobState")))
    expect(jobs["kept"].get("JobState") == "RUNNING", "drain: the long job %s is %s after the run, not RUNNING "
           "(never cancelled)" % (kept, jobs["kept"].get("JobState")))
    calls = [c["start"] for c in server_calls("fab-r01-01") if c["start"] >= seen["r01"]]
    expect(calls and min(calls) > seen["released"],
           "drain: fab-r01-01 was touched while its job ran (a call at %s, the job released at %.1f)"
           % (min(calls) if calls else None, seen["released"]))
    expect(not [c for c in server_calls("fab-r02-02") if c["start"] >= seen["r02"]],
           "drain: fab-r02-02 (its job still running) was touched after its drain")
    expect(states["fab-r01-01"] == ("idle", "none"), "drain: fab-r01-01 was not resumed: %s" % (states["fab-r01-01"],))
    expect(states["fab-r02-01"] == ("drained", "admin: bad dimm, ticket 4711"),
           "drain: the administrator's drain of fab-r02-01 was not kept: %s" % (states["fab-r02-01"],))
    expect(states["fab-r01-02"][0] == "drained"
           and states["fab-r01-02"][1].startswith("gpufabric: quarantined by the validation gate: "),
           "drain: the quarantined fab-r01-02 is %s" % (states["fab-r01-02"],))
    expect(states["fab-r02-02"][0] == "draining" and ("still runs job %s" % kept) in states["fab-r02-02"][1],
           "drain: the held fab-r02-02 is %s" % (states["fab-r02-02"],))
    held = {h: r["ansible_facts"]["gpufabric_held"] for h, r in scenario.results(
        data, "Held - the workload did not leave the server in time (it stays out of service; nothing on it is "
              "touched)").items() if r.get("ansible_facts")}
    expect(list(held) == ["fab-r02-02"] and "still runs job %s after gpufabric_drain_timeout=%d s" % (
        kept, DRAIN_TIMEOUT) in held["fab-r02-02"][0]["reason"], "drain: held %s" % held)
    lines.append("drain (Slurm): fab-r01-01's job %s waited for, then the server touched and resumed; quarantined "
                 "fab-r01-02 left drained (%s); the administrator's drain of fab-r02-01 kept; fab-r02-02 held, its "
                 "job %s still running; run %.0f s" % (waited, states["fab-r01-02"][1][:60], kept, took))
    return lines


def srun(scenario):
    """playbooks/validate.yml with gpufabric_validate_launcher=srun against the lab's real slurmctld and slurmd: two
    servers retested, each drained before (fab-r01-01 by the rollout's reason, fab-r01-02 by an administrator's) -
    every NCCL world of the run (the pair's, the scalable unit's) started by Slurm's srun --mpi=pmix (the simulated
    ranks' log: one rank per GPU with the rank and size Slurm gave it, in a PMIx namespace slurm.pmix.JOB.STEP), the
    servers handed over, and every server's Slurm state and reason afterwards what it was before, no reservation
    left."""
    slurm, pair = Slurm(), ["fab-r01-01", "fab-r01-02"]
    reasons = {"fab-r01-01": "gpufabric: rollout batch r01", "fab-r01-02": "admin: srun check, ticket 4712"}
    for node, reason in reasons.items():
        slurm.run("scontrol", "update", "NodeName=" + node, "State=DRAIN", "Reason=" + reason)
    try:
        before = {server: slurm.node(server) for server in scenario.servers}
        expect(all(before[n] == ("drained", reasons[n]) for n in pair), "srun: the nodes were not drained: %s" % before)
        started = time.time()
        rc, results, plan = scenario.validate("-e", json.dumps({"gpufabric_validate_launcher": "srun",
                                                                "gpufabric_gate_retest": pair,
                                                                "gpufabric_validate_nccl_su": True}))
        took = time.time() - started
        after = {server: slurm.node(server) for server in scenario.servers}

        # "planned": idle, for up to a backfill cycle after a heterogeneous job ended there (Slurm 22.05). A server
        # outside the world is compared without sinfo's "*" (slurmctld did not hear its slurmd in time: seen once on
        # a loaded machine, "idle*" before and "idle" after) - the gate touches no such server; the world's servers
        # are compared exactly
        def seen(states):
            return {s: (state if s in pair else state.rstrip("*"), reason) for s, (state, reason) in states.items()}
        same = seen({s: ("idle" if state == "planned" else state, reason) for s, (state, reason) in after.items()})
        expect(same == seen(before), "srun: the nodes' Slurm states changed: before %s, after %s" % (before, after))
        left = slurm.run("scontrol", "show", "reservation", check=False).strip()
        expect(left.startswith("No reservations"), "srun: a reservation was left: %s" % left[:300])
        expect(rc == 0 and set(pair) <= set(plan.get("tested", [])), "srun: rc %d, tested %s" % (
            rc, plan.get("tested")))
        expect(all(results["hosts"][h]["status"] == "passed" for h in pair),
               "srun: %s" % {h: (results["hosts"][h]["status"], results["hosts"][h]["failures"]) for h in pair})
        ranks = {}
        for server in scenario.servers:
            for call in server_calls(server):
                env = call.get("launcher") or {}
                if call.get("tool") == "all_reduce_perf" and call["start"] >= started and \
                        env.get("PMIX_NAMESPACE", "").startswith("slurm.pmix."):
                    ranks.setdefault(env["PMIX_NAMESPACE"], []).append(
                        (int(env["SLURM_PROCID"]), int(env["SLURM_NTASKS"]), server))
        worlds = [w for key in ("nccl_pairs", "nccl_su") for w in (plan.get(key) or {}).get("worlds", [])]
        expect(len(worlds) >= 2 and len(ranks) == len(worlds), "srun: %d NCCL worlds planned, %d started by srun "
               "(PMIx namespaces in the ranks' log: %s)" % (len(worlds), len(ranks), sorted(ranks)))
        expected = sorted(sorted((m * w["rails"] + g, w["size"], host) for m, host in enumerate(w["hosts"])
                                 for g in range(w["rails"])) for w in worlds)
        expect(sorted(sorted(r) for r in ranks.values()) == expected,
               "srun: the ranks srun started (rank, size, host): %s; the plan's: %s" % (
                   sorted(ranks.values()), expected))
    finally:
        slurm.run("scontrol", "update", "NodeName=" + ",".join(pair), "State=RESUME", check=False)
    return ["gate through Slurm's srun --mpi=pmix: %d worlds (%s ranks), each rank with the rank and size Slurm gave "
            "it; %s drained before and after, each with its own reason; no reservation left; run %.0f s"
            % (len(worlds), "+".join(str(w["size"]) for w in worlds), " and ".join(pair), took)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--records", required=True)
    parser.add_argument("--inventory", action="append", required=True)
    parser.add_argument("--only", choices=["first", "gate", "faults", "refusals", "drain", "srun"], action="append",
                        help="run only these parts (default: all, in order)")
    parser.add_argument("--prefix", default=PREFIX,
                        help="the lab's container prefix (its name and '-'; default %(default)s) - another lab of "
                             "the same servers, e.g. for --only srun (tests/lab/srun_check.sh)")
    args = parser.parse_args()
    globals()["PREFIX"] = args.prefix
    scenario = Scenario(args)
    parts = {"first": scenario.first_rollout, "gate": scenario.gate, "faults": scenario.faults,
             "refusals": scenario.refusals, "drain": lambda: drain(scenario), "srun": lambda: srun(scenario)}
    try:
        lines = []
        for part in args.only or list(parts):
            lines += parts[part]()
    except Failed as exc:
        print("FAILED: %s" % exc)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
