"""fabric_test's srun launcher (gpufabric_validate_launcher: srun): the argv it builds, what it refuses before
anything changes, and its allocation on a live cluster - a maintenance reservation of the world's nodes, the drained
ones resumed into it, srun, then each node drained again with its own reason and the reservation deleted, whatever
srun did - run against fake sinfo/scontrol/srun that answer as Debian 12's Slurm 22.05.8 did in the fabric lab:

    scontrol create reservation ReservationName=R StartTime=now Duration=10 Nodes=A,B Users=root Flags=MAINT
      -> "Reservation created: R" (rc 0)
    sinfo --Node --format=%N|%T|%E of a drained node resumed into it -> "A|maint|none"
    scontrol delete ReservationName=R of a reservation that is gone
      -> "delete_reservation ReservationName=R: Requested reservation is invalid" (rc 1)
    srun on a drained node without the reservation -> "srun: Required node not available (down, drained or reserved)"

The real slurmctld is the lab's (tests/lab/srun_check.sh, molecule/fabric).
"""
import json
import os
import sys
import time

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _fabric_test as ft
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host

# a pair world: 2 servers x 2 rails, each server's own HCAs
PAIR = {"launcher": "srun", "bind_to": "numa", "subnet": "198.19.90.0/24",
        "contexts": [{"host": "fab-r01-01", "address": "198.19.90.11", "slots": 2, "hca": ["mlx5_0", "mlx5_3"]},
                     {"host": "fab-r01-02", "address": "198.19.90.12", "slots": 2, "hca": ["mlx5_0", "mlx5_4"]}]}
ENV = {"NCCL_COMM_ID": "198.19.90.11:29500", "NCCL_TESTS_SPLIT": "MOD 2", "NCCL_IB_GID_INDEX": "3"}


def test_a_pair_world_is_one_heterogeneous_srun_with_each_members_hcas():
    argv = ft.srun_argv("srun", ft.check_launch(PAIR), "/opt/nccl-tests/all_reduce_perf",
                        ["-b", "1G", "-e", "8G", "-f", "2", "-g", "1"], ENV, reservation="gpufabric-gate-1-pairs",
                        minutes=6)
    assert argv == [
        "srun",
        "--mpi=pmix", "--job-name=gpufabric-gate", "--reservation=gpufabric-gate-1-pairs", "--time=6", "--export=ALL",
        "--kill-on-bad-exit=1", "--nodelist=fab-r01-01", "--nodes=1", "--ntasks-per-node=2", "--distribution=block",
        "--cpu-bind=ldoms", "env", "NCCL_IB_HCA=mlx5_0,mlx5_3", "NCCL_COMM_ID=198.19.90.11:29500",
        "NCCL_IB_GID_INDEX=3", "NCCL_TESTS_SPLIT=MOD 2",
        "/opt/nccl-tests/all_reduce_perf", "-b", "1G", "-e", "8G", "-f", "2", "-g", "1",
        ":",
        "--mpi=pmix", "--job-name=gpufabric-gate", "--reservation=gpufabric-gate-1-pairs", "--time=6", "--export=ALL",
        "--kill-on-bad-exit=1", "--nodelist=fab-r01-02", "--nodes=1", "--ntasks-per-node=2", "--distribution=block",
        "--cpu-bind=ldoms", "env", "NCCL_IB_HCA=mlx5_0,mlx5_4", "NCCL_COMM_ID=198.19.90.11:29500",
        "NCCL_IB_GID_INDEX=3", "NCCL_TESTS_SPLIT=MOD 2",
        "/opt/nccl-tests/all_reduce_perf", "-b", "1G", "-e", "8G", "-f", "2", "-g", "1"]


def test_a_scalable_units_world_names_each_members_slurm_node_and_binds_to_cores():
    su = {"launcher": "srun", "bind_to": "core", "subnet": None, "contexts": [
        {"host": "srv-a", "address": "10.0.0.1", "node": "gpu001", "slots": 1, "hca": ["mlx5_0"]},
        {"host": "srv-b", "address": "10.0.0.2", "node": "gpu002", "slots": 1, "hca": ["mlx5_2"]},
        {"host": "srv-c", "address": "10.0.0.3", "node": "gpu003", "slots": 1, "hca": ["mlx5_0"]}]}
    argv = ft.srun_argv("srun", ft.check_launch(su), "/usr/bin/all_reduce_perf", ["-b", "8", "-e", "8G"],
                        {"NCCL_COMM_ID": "10.0.0.1:29600"}, reservation="gpufabric-gate-2-su", minutes=2)
    common = ["--mpi=pmix", "--job-name=gpufabric-gate", "--reservation=gpufabric-gate-2-su", "--time=2",
              "--export=ALL", "--kill-on-bad-exit=1"]
    tail = ["--nodes=1", "--ntasks-per-node=1", "--distribution=block", "--cpu-bind=cores", "env"]
    test = ["NCCL_COMM_ID=10.0.0.1:29600", "/usr/bin/all_reduce_perf", "-b", "8", "-e", "8G"]
    assert argv == (["srun"] + common + ["--nodelist=gpu001"] + tail + ["NCCL_IB_HCA=mlx5_0"] + test + [":"]
                    + common + ["--nodelist=gpu002"] + tail + ["NCCL_IB_HCA=mlx5_2"] + test + [":"]
                    + common + ["--nodelist=gpu003"] + tail + ["NCCL_IB_HCA=mlx5_0"] + test)


@pytest.mark.parametrize("bind_to,cpu_bind", [("none", "none"), ("numa", "ldoms"), ("socket", "sockets"),
                                              ("core", "cores")])
def test_bind_to_is_srun_s_cpu_bind(bind_to, cpu_bind):
    argv = ft.srun_argv("srun", ft.check_launch(dict(PAIR, bind_to=bind_to)), "/x/all_reduce_perf", [], {})
    assert [a for a in argv if a.startswith("--cpu-bind=")] == ["--cpu-bind=" + cpu_bind] * 2
    assert not [a for a in argv if a.startswith(("--reservation", "--time"))]


@pytest.mark.parametrize("node,message", [
    ("fab-r01-[01-02]", r"launch.contexts\[1\].node: 'fab-r01-\[01-02\]' is not allowed \(a Slurm node name"),
    ("fab-r01-01,fab-r02-01", r"launch.contexts\[1\].node: 'fab-r01-01,fab-r02-01' is not allowed"),
    ("fab r01", r"launch.contexts\[1\].node: 'fab r01' is not allowed"),
    ("-w", r"launch.contexts\[1\].node: '-w' is not allowed"),
    ("fab-r01-01", r"launch.contexts: a Slurm node named twice \(fab-r01-01, fab-r01-01\)"),
])
def test_a_bad_slurm_node_is_refused_before_anything_starts(tmp_path, node, message):
    launch = dict(PAIR, contexts=[PAIR["contexts"][0], dict(PAIR["contexts"][1], node=node)])
    host = Host(spawn=lambda argv, env: pytest.fail("started %s" % argv), which=lambda name: "/usr/bin/" + name)
    for check_mode in (False, True):
        with pytest.raises(MlnxError, match=message):
            ft.run(host, {"action": "nccl_start", "launch": launch, "run_id": "t", "run_dir": str(tmp_path),
                          "nccl": {"test": "all_reduce_perf"}}, check_mode=check_mode)


def test_srun_on_a_host_without_slurm_says_what_is_missing(tmp_path):
    test = fake(tmp_path, "all_reduce_perf", "")
    host = Host(which={"all_reduce_perf": test}.get, spawn=lambda argv, env: pytest.fail("started %s" % argv))
    params = {"launch": PAIR, "run_id": "w1", "run_dir": str(tmp_path / "run"),
              "nccl": {"test": "all_reduce_perf", "args": ["-b", "8"], "env": {}}}
    started = ft.run(host, dict(params, action="nccl_start"))["launch"]
    assert started == {"launcher": "srun", "error": "srun is not installed on this host (Slurm's client commands "
                                                    "(Debian/Ubuntu slurm-client))"}
    done = ft.run(host, dict(params, action="nccl_collect"))["launch"]
    assert done["missing"] is True and done["error"] == started["error"]


def test_tools_for_srun_name_slurm_s_commands_and_daemon():
    present = ("ping", "ib_write_bw", "ib_write_lat", "all_reduce_perf", "ethtool", "mlxlink")
    host = Host(which=lambda name: "/usr/bin/" + name if name in present else None)
    nccl = {"test": "all_reduce_perf", "launcher": "srun", "node": "fab-r01-01"}
    out = ft.run(host, {"action": "tools", "nccl": nccl})
    assert out["missing"] == ["srun (Slurm's client commands (Debian/Ubuntu slurm-client))",
                              "sinfo (Slurm's client commands (Debian/Ubuntu slurm-client))",
                              "scontrol (Slurm's client commands (Debian/Ubuntu slurm-client))",
                              "slurmd (Slurm's node daemon (Debian/Ubuntu slurmd))"]
    with pytest.raises(MlnxError, match=r"nccl.node: 'a,b' is not allowed \(a Slurm node name"):
        ft.run(host, {"action": "tools", "nccl": {"test": "all_reduce_perf", "launcher": "srun", "node": "a,b"}})


# ------------------------------------------------------------------------------------------------ a fake Slurm
FAKE = r'''
"""sinfo, scontrol, srun of a fake slurmctld whose state is the JSON file $FAKESLURM: {"nodes": {name: {"state",
"reason"}}, "reservations": {name: [nodes]}, "fail": {...}, "srun_rc": int}; every call is appended to
$FAKESLURM.calls."""
import json, os, sys
path = os.environ["FAKESLURM"]
st = json.load(open(path))
tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]
open(path + ".calls", "a").write(json.dumps([tool] + args) + "\n")
fail = st.get("fail", {})
reserved = {n for nodes in st["reservations"].values() for n in nodes}
def save():
    json.dump(st, open(path, "w"))
if tool == "sinfo":
    names = [a.split("=", 1)[1] for a in args if a.startswith("--nodes=")][0].split(",")
    for name in names:
        node = st["nodes"].get(name)
        if node:
            word = "maint" if node["state"] == "idle" and name in reserved else node["state"]
            print("%s|%s|%s" % (name, word, node["reason"] or "none"))
elif tool == "scontrol" and args[:2] == ["create", "reservation"]:
    fields = dict(a.split("=", 1) for a in args[2:])
    if fail.get("create"):
        print(fail["create"], file=sys.stderr)
        sys.exit(1)
    st["reservations"][fields["ReservationName"]] = fields["Nodes"].split(",")
    save()
    print("Reservation created: %s" % fields["ReservationName"])
elif tool == "scontrol" and args[:1] == ["update"]:
    fields = dict(a.split("=", 1) for a in args[1:])
    for name in fields["NodeName"].split(","):
        if fields["State"] == "RESUME":
            st["nodes"][name].update(state="idle", reason=None)
        elif fields["State"] == "DRAIN" and not fail.get("drain"):
            st["nodes"][name].update(state="drained", reason=fields["Reason"])
    save()
elif tool == "scontrol" and args[:1] == ["delete"]:
    name = args[1].split("=", 1)[1]
    if st["reservations"].pop(name, None) is None:
        print("delete_reservation ReservationName=%s: Requested reservation is invalid" % name, file=sys.stderr)
        sys.exit(1)
    save()
elif tool == "srun":
    ranks = sum(int(a.split("=")[1]) for a in args if a.startswith("--ntasks-per-node="))
    nodes = [a.split("=")[1] for a in args if a.startswith("--nodelist=")]
    if any(st["nodes"][n]["state"] != "idle" for n in nodes):
        print("srun: Required node not available (down, drained or reserved)", file=sys.stderr)
        sys.exit(1)
    print("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20")
    for r in range(ranks):
        print("#  Rank %2d Group  0 Pid %6d on %10s device  0 [0x18] NVIDIA H100 80GB HBM3" % (r, 40 + r, nodes[0]))
    print("# Avg bus bandwidth    : 44.5 ")
    sys.exit(st.get("srun_rc", 0))
'''


def fake(tmp_path, name, body):
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!%s\n%s" % (sys.executable, body))
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    """The fake Slurm's tools in tmp/bin (given as gpufabric_validate_paths) and its state."""
    for tool in ("sinfo", "scontrol", "srun"):
        fake(tmp_path, tool, FAKE)
    fake(tmp_path, "all_reduce_perf", "")
    state = tmp_path / "slurm.json"
    monkeypatch.setenv("FAKESLURM", str(state))

    class Fake:
        bin = str(tmp_path / "bin")

        def set(self, **nodes):
            data = {"nodes": {n.replace("_", "-"): {"state": s, "reason": r} for n, (s, r) in nodes.items()},
                    "reservations": {}}
            data.update(self.extra)
            state.write_text(json.dumps(data))

        extra = {}

        def calls(self):
            path = str(state) + ".calls"
            return [json.loads(ln) for ln in open(path)] if os.path.exists(path) else []

        def nodes(self):
            return json.loads(state.read_text())["nodes"]

        def reservations(self):
            return json.loads(state.read_text())["reservations"]
    return Fake()


def run_world(tmp_path, slurm, run_id="gate-1-pairs", timeout=30):
    host = Host()
    params = {"launch": PAIR, "run_id": run_id, "run_dir": str(tmp_path / "run"), "paths": [slurm.bin],
              "nccl": {"test": "all_reduce_perf", "args": ["-b", "8"], "env": {"NCCL_TESTS_SPLIT": "MOD 2"}},
              "timeout": timeout}
    started = ft.run(host, dict(params, action="nccl_start"))["launch"]
    done = ft.run(Host(), dict(params, action="nccl_collect"))["launch"] if "error" not in started else None
    return started, done


DRAINED = ("drained", "gpufabric: rollout batch r01")


def test_drained_nodes_are_lent_to_srun_in_a_reservation_and_drained_again(tmp_path, slurm):
    slurm.set(fab_r01_01=DRAINED, fab_r01_02=("drained", "admin: bad dimm, ticket 4711"))
    started, done = run_world(tmp_path, slurm)
    assert started["reservation"] == "gpufabric-gate-1-pairs-fab-r01-01" and started["ranks"] == 4
    assert started["nodes"] == {"fab-r01-01": {"state": "drained", "reason": "gpufabric: rollout batch r01"},
                                "fab-r01-02": {"state": "drained", "reason": "admin: bad dimm, ticket 4711"}}
    assert done["rc"] == 0 and done["errors"] == [] and len(done["report"]["ranks"]) == 4
    # every node as it was, each with its own reason, and no reservation left
    assert slurm.nodes() == {"fab-r01-01": {"state": "drained", "reason": "gpufabric: rollout batch r01"},
                             "fab-r01-02": {"state": "drained", "reason": "admin: bad dimm, ticket 4711"}}
    assert slurm.reservations() == {}
    user = __import__("pwd").getpwuid(os.geteuid()).pw_name
    calls = [c for c in slurm.calls() if c[0] != "sinfo"]
    assert calls[0] == ["scontrol", "create", "reservation", "ReservationName=gpufabric-gate-1-pairs-fab-r01-01",
                        "StartTime=now", "Duration=7", "Nodes=fab-r01-01,fab-r01-02", "Users=" + user, "Flags=MAINT"]
    assert calls[1] == ["scontrol", "update", "NodeName=fab-r01-01,fab-r01-02", "State=RESUME"]
    assert calls[2][0] == "srun" and "--reservation=gpufabric-gate-1-pairs-fab-r01-01" in calls[2]
    assert "--time=2" in calls[2]
    assert calls[3:] == [
        ["scontrol", "update", "NodeName=fab-r01-01", "State=DRAIN", "Reason=gpufabric: rollout batch r01"],
        ["scontrol", "update", "NodeName=fab-r01-02", "State=DRAIN", "Reason=admin: bad dimm, ticket 4711"],
        ["scontrol", "delete", "ReservationName=gpufabric-gate-1-pairs-fab-r01-01"]]
    assert done["slurm"]["after"] == started["nodes"]
    assert [s["step"] for s in done["slurm"]["steps"]] == ["reserve", "resume", "drain", "drain", "release"]


def test_idle_nodes_are_only_reserved_and_released(tmp_path, slurm):
    slurm.set(fab_r01_01=("idle", None), fab_r01_02=("idle", None))
    _started, done = run_world(tmp_path, slurm)
    assert done["rc"] == 0 and done["errors"] == []
    assert [c[:2] for c in slurm.calls() if c[0] != "sinfo"] == [["scontrol", "create"], ["srun", "--mpi=pmix"],
                                                                 ["scontrol", "delete"]]
    assert slurm.nodes() == {"fab-r01-01": {"state": "idle", "reason": None},
                             "fab-r01-02": {"state": "idle", "reason": None}}


def test_a_failed_srun_still_drains_the_nodes_again_and_deletes_the_reservation(tmp_path, slurm):
    slurm.extra = {"srun_rc": 1}
    slurm.set(fab_r01_01=DRAINED, fab_r01_02=DRAINED)
    _started, done = run_world(tmp_path, slurm)
    assert done["rc"] == 1 and done["errors"] == []
    assert slurm.nodes()["fab-r01-02"] == {"state": "drained", "reason": "gpufabric: rollout batch r01"}
    assert slurm.reservations() == {}


def test_a_reservation_slurm_refuses_changes_nothing_and_is_named_with_slurm_s_words(tmp_path, slurm):
    slurm.extra = {"fail": {"create": "Error creating the reservation: Requested nodes are busy"}}
    slurm.set(fab_r01_01=DRAINED, fab_r01_02=DRAINED)
    _started, done = run_world(tmp_path, slurm)
    assert [c[:2] for c in slurm.calls() if c[0] != "sinfo"] == [["scontrol", "create"]]   # no resume, no srun
    assert done["rc"] == 255 and done["errors"] == [
        "Slurm: scontrol create reservation for fab-r01-01, fab-r01-02 failed (rc=1): Error creating the "
        "reservation: Requested nodes are busy"]
    assert slurm.nodes()["fab-r01-01"] == {"state": "drained", "reason": "gpufabric: rollout batch r01"}


def test_a_node_not_left_as_it_was_is_named_with_both_states(tmp_path, slurm):
    slurm.extra = {"fail": {"drain": True}}     # scontrol says nothing, the node stays resumed
    slurm.set(fab_r01_01=DRAINED, fab_r01_02=("idle", None))
    _started, done = run_world(tmp_path, slurm)
    assert done["errors"] == ["Slurm: node fab-r01-01 is idle after the run, it was drained (reason: gpufabric: "
                              "rollout batch r01)"]


@pytest.mark.parametrize("state,reason,words", [
    ("allocated", None, "fab-r01-02 is allocated"),
    ("draining", "gpufabric: rollout batch r01", "fab-r01-02 is draining (reason: gpufabric: rollout batch r01)"),
    ("down*", "Not responding", "fab-r01-02 is down* (reason: Not responding)"),
    ("drained$", "admin: other maintenance", "fab-r01-02 is drained$ (reason: admin: other maintenance)"),
    ("maint", None, "fab-r01-02 is maint"),
])
def test_a_node_slurm_cannot_lend_is_refused_by_name_before_anything_changes(tmp_path, slurm, state, reason, words):
    slurm.set(fab_r01_01=DRAINED, fab_r01_02=(state, reason))
    started, _done = run_world(tmp_path, slurm)
    assert started == {"launcher": "srun", "error": "the srun launcher takes only idle or drained nodes that run no "
                                                    "job (nothing was changed): " + words}
    assert [c[0] for c in slurm.calls()] == ["sinfo"]


def test_a_node_slurm_does_not_know_is_named(tmp_path, slurm):
    slurm.set(fab_r01_01=DRAINED)
    started, _done = run_world(tmp_path, slurm)
    assert started["error"].startswith("Slurm cannot say the state of the world's nodes (nothing was changed): "
                                       "Slurm does not know node fab-r01-02")
    assert [c[0] for c in slurm.calls()] == ["sinfo"]


def test_tools_check_the_pmix_plugin_and_the_node(tmp_path, slurm, monkeypatch):
    slurm.set(fab_r01_01=DRAINED)
    fake(tmp_path, "srun", "print('MPI plugin types are...\\n\\tnone\\n\\tpmi2\\n\\tcray_shasta')\n")
    fake(tmp_path, "slurmd", "")
    host = Host(which=lambda name: os.path.join(slurm.bin, name) if os.path.exists(os.path.join(slurm.bin, name))
                else ("/usr/bin/" + name if name in ("ping", "ib_write_bw", "ib_write_lat", "ethtool", "mlxlink")
                      else None))
    nccl = {"test": "all_reduce_perf", "launcher": "srun"}
    out = ft.run(host, {"action": "tools", "nccl": dict(nccl, node="fab-r01-02")})
    assert out["missing"] == [
        "Slurm's mpi/pmix plugin (srun --mpi=list lists no pmix: Debian/Ubuntu slurm-wlm-basic-plugins, and "
        "libpmix-dev for the libpmix.so it loads) (srun --mpi=list lists: none, pmi2, cray_shasta)",
        "Slurm node fab-r01-02 (set gpufabric_drain_slurm_node to this server's Slurm node name): Slurm does not "
        "know node fab-r01-02 (sinfo --nodes printed nothing for it): set gpufabric_drain_slurm_node to the "
        "server's Slurm node name"]
    fake(tmp_path, "srun", "print('MPI plugin types are...\\n\\tpmix\\n\\tnone\\nspecific pmix plugin versions "
                           "available: pmix_v4')\n")
    assert ft.run(host, {"action": "tools", "nccl": dict(nccl, node="fab-r01-01")})["missing"] == []


def test_sigterm_to_the_runner_still_gives_the_nodes_back(tmp_path, slurm):
    """The runner stopped from outside (SIGTERM to its process group, as a host's shutdown does) while srun runs:
    srun is stopped, each node drained again with its own reason, the reservation deleted."""
    slurm.set(fab_r01_01=DRAINED, fab_r01_02=DRAINED)
    fake(tmp_path, "srun", "import time\ntime.sleep(60)\n")
    host = Host()
    params = {"launch": PAIR, "run_id": "gate-2-pairs", "run_dir": str(tmp_path / "run"), "paths": [slurm.bin],
              "nccl": {"test": "all_reduce_perf", "args": [], "env": {}}, "timeout": 30}
    started = ft.run(host, dict(params, action="nccl_start"))["launch"]
    deadline = time.monotonic() + 20
    while slurm.nodes()["fab-r01-01"]["state"] != "idle" and time.monotonic() < deadline:
        time.sleep(0.1)       # resumed into the reservation: srun is starting
    time.sleep(0.5)
    os.killpg(started["pid"], 15)
    done = ft.run(Host(), dict(params, action="nccl_collect"))["launch"]
    assert done["rc"] == 255 and done["errors"] == []
    assert slurm.nodes() == {"fab-r01-01": {"state": "drained", "reason": "gpufabric: rollout batch r01"},
                             "fab-r01-02": {"state": "drained", "reason": "gpufabric: rollout batch r01"}}
    assert slurm.reservations() == {}
