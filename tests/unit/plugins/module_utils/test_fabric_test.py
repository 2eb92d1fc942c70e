"""The validation gate's host steps (module_utils/_fabric_test.py): strict jobs (nothing starts on bad input, each
problem named), argv lists, detached servers whose exit code is recorded, clients retried while the server is not
up, the facts of a rail. Tools are the simulator's (tests/sim/bin) or small stand-ins; no shell anywhere."""
import json
import os
import sys

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _fabric_test as ft
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host

REPORT = """---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Device         : mlx5_0
 Mtu             : 4096[B]
 Link type       : Ethernet
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      7355409          0.00               385.64 \t\t     0.735541
---------------------------------------------------------------------------------------
"""


@pytest.mark.parametrize("action,job,message", [
    ("serve", {"interface": "enp24s0np0;reboot", "port": 18515},
     r"jobs\[0\].interface: 'enp24s0np0;reboot' is not allowed \(a network interface name\)"),
    ("serve", {"interface": "enp24s0np0", "port": 80}, r"jobs\[0\].port: 80 is not allowed \(a whole number 1024-"),
    ("serve", {"interface": "enp24s0np0", "port": 18515, "tests": ["ib_write_bw", "rm"]},
     r"jobs\[0\].tests: 'rm' is not one of ib_write_bw"),
    ("measure", {"interface": "enp24s0np0", "port": 18515, "peer_address": "198.18.0.1 -c 1"},
     r"jobs\[0\].peer_address: '198.18.0.1 -c 1' is not allowed \(an IPv4 address\)"),
    ("nccl_start", {"rank": 0, "local_rank": 0, "hca": "mlx5_0 x"}, r"jobs\[0\].hca: 'mlx5_0 x' is not allowed"),
])
def test_a_bad_job_is_refused_before_anything_starts(action, job, message):
    started = []
    host = Host(spawn=lambda argv, env: started.append(argv) or 1)
    with pytest.raises(MlnxError, match=message):
        ft.run(host, {"action": action, "jobs": [job], "run_id": "t"})
    assert started == []


def test_every_bad_job_is_named_at_once():
    with pytest.raises(MlnxError) as err:
        ft.check_jobs("measure", [{"interface": "a b", "port": 18515, "peer_address": "198.18.0.1"},
                                  {"interface": "eth1", "port": 18515, "peer_address": "x"}])
    assert "jobs[0].interface" in str(err.value) and "jobs[1].peer_address" in str(err.value)


@pytest.mark.parametrize("env,message", [
    ({"LD_PRELOAD": "/tmp/x.so"}, r"nccl.env key: 'LD_PRELOAD' is not allowed \(NCCL_\*, OMPI_\* or UCX_\* names\)"),
    ({"NCCL_DEBUG": "INFO$(id)"}, r"nccl.env.NCCL_DEBUG: 'INFO\$\(id\)' is not allowed"),
])
def test_nccl_environment_is_a_strict_grammar(tmp_path, env, message):
    host = Host(spawn=lambda argv, env: 1)
    with pytest.raises(MlnxError, match=message):
        ft.run(host, {"action": "nccl_start", "jobs": [{"rank": 0, "local_rank": 0, "hca": "mlx5_0"}],
                      "run_id": "t", "run_dir": str(tmp_path), "nccl": {"test": "all_reduce_perf", "env": env}})
    with pytest.raises(MlnxError, match=r"run_id: '\.\./x' is not allowed"):
        ft.run(host, {"action": "serve", "jobs": [], "run_id": "../x", "run_dir": str(tmp_path)})


def fake_tool(tmp_path, name, body):
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!%s\n%s" % (sys.executable, body))
    path.chmod(0o755)
    return str(path)


def ibstat_text(layer, lid=0):
    """``ibstat mlx5_0`` of one port (the layout of fixtures/real/ibstat_h100_cx7_cx6dx_1.txt)."""
    return ("CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.1002\n"
            "\tHardware version: 0\n\tNode GUID: 0xa088c20300e3142a\n\tSystem image GUID: 0xa088c20300e3142a\n"
            "\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 400\n\t\tBase lid: %d\n"
            "\t\tLMC: 0\n\t\tSM lid: %d\n\t\tCapability mask: 0x00010000\n\t\tPort GUID: 0xa088c20300e3142a\n"
            "\t\tLink layer: %s\n" % (lid, 1 if lid else 0, layer))


def tools_in(tmp_path, **tools):
    """``which`` over stand-in tools: name -> the text it prints (exit 0)."""
    paths = {name: fake_tool(tmp_path, name, "import sys\nsys.stdout.write(%r)\n" % text)
             for name, text in tools.items()}
    return paths.get


def test_servers_run_detached_and_their_exit_code_and_report_are_collected(tmp_path):
    tool = fake_tool(tmp_path, "ib_write_bw", "import sys\nsys.stdout.write(%r)\nprint(' '.join(sys.argv[1:]), "
                                              "file=sys.stderr)\nsys.exit(0)\n" % REPORT)
    ibstat = tools_in(tmp_path, ibstat=ibstat_text("Ethernet"))
    host = Host(which=lambda name: tool if name == "ib_write_bw" else ibstat(name))
    host.rdma_ports = lambda: {"enp24s0np0": ("mlx5_0", 1)}
    job = {"rail": 0, "interface": "enp24s0np0", "port": 18515, "tests": ["ib_write_bw"]}
    out = ft.run(host, {"action": "serve", "jobs": [job], "run_id": "r1", "run_dir": str(tmp_path / "run"),
                        "options": {"duration": 2, "qps": 2}})
    assert out["servers"][0]["argv"] == ["ib_write_bw", "-d", "mlx5_0", "-x", "3", "-s", "65536", "-p", "18515", "-F",
                                         "-q", "2", "-D", "2", "--report_gbits"]
    assert oct(os.stat(tmp_path / "run" / "r1").st_mode & 0o777) == "0o700"
    done = ft.run(host, {"action": "collect", "jobs": [job], "run_id": "r1", "run_dir": str(tmp_path / "run"),
                         "timeout": 20})["servers"][0]
    assert done["rc"] == 0 and done["stopped"] is False
    assert done["report"]["results"][0]["bw_average"] == 385.64


def test_a_server_that_never_ends_is_stopped(tmp_path):
    tool = fake_tool(tmp_path, "ib_write_lat", "import time\nprint('waiting', flush=True)\ntime.sleep(60)\n")
    ibstat = tools_in(tmp_path, ibstat=ibstat_text("Ethernet"))
    host = Host(which=lambda name: tool if name == "ib_write_lat" else ibstat(name))
    host.rdma_ports = lambda: {"enp24s0np0": ("mlx5_0", 1)}
    job = {"rail": 0, "interface": "enp24s0np0", "port": 18515, "tests": ["ib_write_lat"]}
    ft.run(host, {"action": "serve", "jobs": [job], "run_id": "r2", "run_dir": str(tmp_path)})
    done = ft.run(host, {"action": "collect", "jobs": [job], "run_id": "r2", "run_dir": str(tmp_path),
                         "timeout": 1})["servers"][0]
    assert done["stopped"] is True and done["rc"] is None


def test_a_client_is_retried_while_the_server_is_not_up_and_pings_from_the_rail_address():
    calls = []
    answers = [(1, "", "Couldn't connect to 198.18.0.1:18515\n Unable to init the socket connection\n"),
               (1, "", "Couldn't connect to 198.18.0.1:18515\n"), (0, REPORT, "")]

    def execute(argv, env, timeout, data):
        calls.append(argv)
        name = os.path.basename(argv[0])
        if name == "ping":
            return 0, "3 packets transmitted, 3 received, 0% packet loss\n", ""
        if name == "ip":
            if "addr" in argv:
                return 0, json.dumps([{"addr_info": [{"family": "inet", "local": "198.18.0.3"}]}]), ""
            return 0, json.dumps([{"operstate": "UP", "mtu": 9000}]), ""
        if name == "ib_write_bw":
            return answers.pop(0)
        if name == "ibstat":
            return 0, ibstat_text("Ethernet"), ""
        return 1, "", "no such tool"

    host = Host(execute=execute, which=lambda name: "/usr/bin/" + name if name in ("ping", "ip", "ib_write_bw",
                                                                                   "ibstat") else None)
    host.rdma_ports = lambda: {"enp24s0np0": ("mlx5_0", 1)}
    out = ft.run(host, {"action": "measure", "run_id": "r3", "jobs": [
        {"rail": 0, "interface": "enp24s0np0", "port": 18515, "tests": ["ib_write_bw"], "peer": "s1",
         "peer_address": "198.18.0.1"}], "options": {"retries": 5, "delay": 0}})["rails"][0]
    assert out["ping"] == {"ok": True, "sent": 3, "received": 3}
    assert ["-I", "198.18.0.3", "198.18.0.1"] == [w for w in calls if w[0].endswith("ping")][0][-3:]
    test = out["tests"][0]
    assert test["attempts"] == 3 and test["rc"] == 0 and test["report"]["results"][0]["bw_average"] == 385.64
    assert test["argv"][-1] == "198.18.0.1" and out["facts"]["state"] == "up" and out["facts"]["mtu"] == 9000
    assert out["facts"]["link_layer"] == "Ethernet" and test["argv"][3:5] == ["-x", "3"]


def test_check_mode_measures_nothing():
    host = Host(spawn=lambda argv, env: pytest.fail("started %s" % argv))
    out = ft.run(host, {"action": "serve", "jobs": [{"interface": "eth1", "port": 18515}], "run_id": "t"},
                 check_mode=True)
    assert out["skipped"] is True and "measures nothing" in out["msg"]


# ------------------------------------------------------------------------------------------------ the gate's tools
def _with(*present):
    return Host(which=lambda name: "/usr/bin/" + name if name in present else None)


def test_tools_names_each_missing_tool_with_where_it_comes_from():
    out = ft.run(_with("ping", "ib_write_bw", "ssh"), {"action": "tools", "nccl": {"test": "all_reduce_perf"}})
    assert out == {"changed": False,
                   "tools": {"ib_write_bw": "/usr/bin/ib_write_bw", "ib_write_lat": None, "ping": "/usr/bin/ping",
                             "ethtool": None, "all_reduce_perf": None, "mpirun": None, "ssh": "/usr/bin/ssh",
                             "orted": None, "mlxlink": None},
                   "missing": ["ib_write_lat (perftest)",
                               "ethtool (ethtool: the PHY error counters of an Ethernet rail)",
                               "all_reduce_perf (nccl-tests (built with MPI=1, on the PATH a non-interactive login "
                               "gets))", "mpirun (Open MPI (Debian/Ubuntu openmpi-bin))",
                               "orted (Open MPI (Debian/Ubuntu openmpi-bin; prted in Open MPI 5))",
                               "mlxlink or mstlink (NVIDIA MFT or mstflint: the PHY error counters of an InfiniBand "
                               "rail)"]}
    # the launcher named: mpirun or srun
    with pytest.raises(MlnxError, match="nccl.launcher: 'mpiexec' is not one of mpirun, srun"):
        ft.run(_with(), {"action": "tools", "nccl": {"test": "all_reduce_perf", "launcher": "mpiexec"}})


def test_tools_without_nccl_asks_for_no_nccl_test_and_runs_in_check_mode():
    out = ft.run(_with("ping", "ib_write_bw", "ib_write_lat", "ethtool", "mstlink"), {"action": "tools"},
                 check_mode=True)
    assert out["missing"] == [] and sorted(out["tools"]) == ["ethtool", "ib_write_bw", "ib_write_lat", "mlxlink",
                                                             "ping"]
    assert out["tools"]["mlxlink"] == "/usr/bin/mstlink"        # Debian's mstflint names it so


def test_tools_refuses_an_nccl_test_the_gate_does_not_run():
    with pytest.raises(MlnxError) as err:
        ft.run(_with(), {"action": "tools", "nccl": {"test": "alltoall_perf; reboot"}})
    assert err.value.parameter == "nccl" and "is not one of all_reduce_perf, all_gather_perf, sendrecv_perf" in \
        err.value.msg


# ------------------------------------------------------------------------------------------------ the link layer
OPTS = ft.check_options({"tos": 106})


@pytest.mark.parametrize("test,layer,argv", [
    # RoCE: the GID index (RoCE v2 over IPv4) and the ToS
    ("ib_write_bw", "Ethernet", ["ib_write_bw", "-d", "mlx5_0", "-x", "3", "-s", "65536", "-p", "18515", "-F",
                                 "-q", "4", "-D", "10", "--report_gbits", "-T", "106", "198.18.0.1"]),
    ("ib_write_lat", "Ethernet", ["ib_write_lat", "-d", "mlx5_0", "-x", "3", "-s", "2", "-p", "18515", "-F", "-D", "5",
                                  "-T", "106", "198.18.0.1"]),
    # InfiniBand: perftest addresses by LID - no -x, no -T even when the options name them
    ("ib_write_bw", "InfiniBand", ["ib_write_bw", "-d", "mlx5_0", "-s", "65536", "-p", "18515", "-F", "-q", "4", "-D",
                                   "10", "--report_gbits", "198.18.0.1"]),
    ("ib_write_lat", "InfiniBand", ["ib_write_lat", "-d", "mlx5_0", "-s", "2", "-p", "18515", "-F", "-D", "5",
                                    "198.18.0.1"]),
])
def test_perftest_options_follow_the_link_layer(test, layer, argv):
    assert ft.perftest_argv(test, "mlx5_0", OPTS, 18515, "198.18.0.1", layer) == argv


@pytest.mark.parametrize("layer", [None, "", "IB", "ethernet", "Unknown"])
def test_perftest_argv_refuses_a_link_layer_it_does_not_know(layer):
    with pytest.raises(MlnxError) as err:
        ft.perftest_argv("ib_write_bw", "mlx5_0", OPTS, 18515, None, layer)
    assert err.value.parameter == "link_layer"
    assert "link_layer: %r is not one of InfiniBand or Ethernet" % (layer,) in err.value.msg


def test_an_infiniband_server_runs_without_roce_options(tmp_path):
    started = []
    host = Host(which=tools_in(tmp_path, ibstat=ibstat_text("InfiniBand", lid=431), ib_write_bw=""),
                spawn=lambda argv, env: started.append(argv) or 4242)
    host.rdma_ports = lambda: {"ibp24s0": ("mlx5_0", 1)}
    out = ft.run(host, {"action": "serve", "run_id": "ib", "run_dir": str(tmp_path / "run"), "jobs": [
        {"rail": 2, "interface": "ibp24s0", "port": 18515, "tests": ["ib_write_bw"]}]})["servers"][0]
    assert out["link_layer"] == "InfiniBand" and out["pid"] == 4242
    assert out["argv"] == ["ib_write_bw", "-d", "mlx5_0", "-s", "65536", "-p", "18515", "-F", "-q", "4", "-D", "10",
                           "--report_gbits"]
    assert started[0][-len(out["argv"]) + 1:] == out["argv"][1:]


@pytest.mark.parametrize("ibstat,value", [
    (None, None),                                   # ibstat missing: the link layer is not known
    (ibstat_text("Unknown"), "Unknown"),            # a value the gate has no perftest options for
])
def test_a_rail_of_an_unknown_link_layer_is_not_measured_and_its_tests_fail(tmp_path, ibstat, value):
    ran = []
    tools = {"ping": "3 packets transmitted, 3 received, 0% packet loss\n", "ib_write_bw": "", "ib_write_lat": ""}
    if ibstat is not None:
        tools["ibstat"] = ibstat
    which = tools_in(tmp_path, **tools)

    def execute(argv, env, timeout, data):
        ran.append(os.path.basename(argv[0]))
        from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import default_execute
        return default_execute(argv, env, timeout, data)

    host = Host(which=which, execute=execute, spawn=lambda argv, env: pytest.fail("started %s" % argv))
    host.rdma_ports = lambda: {"ibp24s0": ("mlx5_0", 1)}
    job = {"rail": 2, "interface": "ibp24s0", "port": 18515, "peer": "s1", "peer_address": "198.18.0.1"}
    served = ft.run(host, {"action": "serve", "run_id": "u", "run_dir": str(tmp_path / "run"), "jobs": [job]})
    measured = ft.run(host, {"action": "measure", "run_id": "u", "jobs": [job]})["rails"][0]
    why = ("%s: rail 2 (ibp24s0, mlx5_0): link layer %r is not one of InfiniBand or Ethernet (ibstat's \"Link layer\"),"
           " so perftest's options are not known and the rail is not measured" % (ft._hostname(), value))
    assert [s["error"] for s in served["servers"]] == [why, why]
    assert measured["error"] == why
    assert [(t["test"], t["rc"], t["report"]["errors"]) for t in measured["tests"]] == [
        ("ib_write_bw", None, [why]), ("ib_write_lat", None, [why])]
    assert "ib_write_bw" not in ran and "ib_write_lat" not in ran


# ------------------------------------------------------------------------------------------------ NCCL's launcher
LAUNCH = {"launcher": "mpirun", "bind_to": "numa", "subnet": "198.19.90.0/24",
          "contexts": [{"host": "srv-r01-01", "address": "198.19.90.11", "slots": 2, "hca": ["mlx5_0", "mlx5_1"]},
                       {"host": "srv-r01-02", "address": "198.19.90.12", "slots": 2, "hca": ["mlx5_0", "mlx5_3"]}]}


def test_mpirun_one_context_per_member_each_with_its_rails_hcas():
    env = {"NCCL_COMM_ID": "198.19.90.11:29500", "NCCL_TESTS_SPLIT": "MOD 2"}
    argv = ft.mpirun_argv("/usr/bin/mpirun", ft.check_launch(LAUNCH), "/opt/nccl-tests/all_reduce_perf",
                          ["-b", "1G", "-e", "8G", "-f", "2", "-g", "1"], env, as_root=True)
    common = ["-x", "NCCL_COMM_ID=198.19.90.11:29500", "-x", "NCCL_TESTS_SPLIT=MOD 2",
              "/opt/nccl-tests/all_reduce_perf", "-b", "1G", "-e", "8G", "-f", "2", "-g", "1"]
    assert argv == ["/usr/bin/mpirun", "--allow-run-as-root", "--bind-to", "numa",
                    "--mca", "plm_rsh_args", "-o BatchMode=yes", "--mca", "pml", "ob1", "--mca", "btl", "self,tcp",
                    "--mca", "btl_tcp_if_include", "198.19.90.0/24", "--mca", "oob_tcp_if_include", "198.19.90.0/24",
                    "-np", "2", "-H", "198.19.90.11:2", "-x", "PATH", "-x", "NCCL_IB_HCA=mlx5_0,mlx5_1", *common, ":",
                    "-np", "2", "-H", "198.19.90.12:2", "-x", "PATH", "-x", "NCCL_IB_HCA=mlx5_0,mlx5_3", *common]
    # not root, no subnet: neither option
    argv = ft.mpirun_argv("mpirun", ft.check_launch(dict(LAUNCH, subnet=None)), "t", [], {})
    assert "--allow-run-as-root" not in argv and "btl_tcp_if_include" not in argv


@pytest.mark.parametrize("change,message", [
    ({"launcher": "mpiexec"}, r"launch.launcher: 'mpiexec' is not one of mpirun, srun"),
    ({"bind_to": "gpu"}, r"launch.bind_to: 'gpu' is not one of none, numa, socket, core"),
    ({"subnet": "198.19.90.0/33"}, r"launch.subnet: '198.19.90.0/33' is not allowed \(an IPv4 network in CIDR"),
    ({"hostfile": "/etc/passwd"}, r"launch: hostfile not known \(allowed: bind_to, contexts, launcher, subnet\)"),
    ({"contexts": LAUNCH["contexts"][:1]}, r"launch.contexts: must be a list of at least 2 member hosts"),
    ({"contexts": [dict(LAUNCH["contexts"][0], address="198.19.90.11 -x LD_PRELOAD=/tmp/x"), LAUNCH["contexts"][1]]},
     r"launch.contexts\[0\].address: '198.19.90.11 -x LD_PRELOAD=/tmp/x' is not allowed \(an IPv4 address or a host"),
    ({"contexts": [dict(LAUNCH["contexts"][0], slots=65), LAUNCH["contexts"][1]]},
     r"launch.contexts\[0\].slots: 65 is not allowed \(a whole number 1-64\)"),
    ({"contexts": [LAUNCH["contexts"][0], dict(LAUNCH["contexts"][1], hca=["mlx5_0"])]},
     r"launch.contexts\[1\].hca: must list one RDMA device per slot \(2\), not \['mlx5_0'\]"),
    ({"contexts": [LAUNCH["contexts"][0], dict(LAUNCH["contexts"][1], hca=["mlx5_0", "mlx5_1,x"])]},
     r"launch.contexts\[1\].hca\[1\]: 'mlx5_1,x' is not allowed \(an RDMA device name"),
])
def test_a_bad_launch_is_refused_before_anything_starts_in_check_mode_too(tmp_path, change, message):
    host = Host(spawn=lambda argv, env: pytest.fail("started %s" % argv), which=lambda name: "/usr/bin/" + name)
    for check_mode in (False, True):
        with pytest.raises(MlnxError, match=message):
            ft.run(host, {"action": "nccl_start", "launch": dict(LAUNCH, **change), "run_id": "t",
                          "run_dir": str(tmp_path), "nccl": {"test": "all_reduce_perf"}}, check_mode=check_mode)


def test_slots_exactly_at_the_limit_are_taken():
    contexts = [dict(c, slots=64, hca=["mlx5_%d" % i for i in range(64)]) for c in LAUNCH["contexts"]]
    assert [c["slots"] for c in ft.check_launch(dict(LAUNCH, contexts=contexts))["contexts"]] == [64, 64]
    contexts = [dict(c, slots=1, hca=["mlx5_0"]) for c in LAUNCH["contexts"]]
    assert [c["slots"] for c in ft.check_launch(dict(LAUNCH, contexts=contexts))["contexts"]] == [1, 1]
    with pytest.raises(MlnxError, match=r"slots: 0 is not allowed"):
        ft.check_launch(dict(LAUNCH, contexts=[dict(c, slots=0, hca=[]) for c in LAUNCH["contexts"]]))


def test_the_launcher_runs_detached_and_its_report_and_words_are_collected(tmp_path):
    body = ("import sys\nargs = sys.argv[1:]\n"
            "print('#  Rank  0 Group  0 Pid     43 on srv-r01-01 device  0 [0x18] NVIDIA H100 80GB HBM3')\n"
            "print('#  Rank  1 Group  1 Pid     44 on srv-r01-01 device  1 [0x40] NVIDIA H100 80GB HBM3')\n"
            "print('# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20')\n"
            "print('# Avg bus bandwidth    : 44.5 ')\n"
            "print(' '.join(args), file=sys.stderr)\nsys.exit(0)\n")
    mpirun = fake_tool(tmp_path, "mpirun", body)
    test = fake_tool(tmp_path, "all_reduce_perf", "")
    host = Host(which={"mpirun": mpirun, "all_reduce_perf": test}.get)
    params = {"launch": LAUNCH, "run_id": "w0", "run_dir": str(tmp_path / "run"),
              "nccl": {"test": "all_reduce_perf", "args": ["-b", "8", "-e", "8"], "env": {"NCCL_TESTS_SPLIT": "MOD 2"}}}
    started = ft.run(host, dict(params, action="nccl_start"))["launch"]
    assert started["ranks"] == 4 and started["argv"][0] == "mpirun"
    assert started["argv"][-5:] == [test, "-b", "8", "-e", "8"]
    done = ft.run(host, dict(params, action="nccl_collect", timeout=20))["launch"]
    assert done["rc"] == 0 and done["report"]["avg_busbw"] == 44.5
    assert [r["rank"] for r in done["report"]["ranks"]] == [0, 1]
    assert "-np 2 -H 198.19.90.12:2 -x PATH -x NCCL_IB_HCA=mlx5_0,mlx5_3" in done["stderr"]
    # no mpirun on the host: the start says why and the collect carries it
    host = Host(which={"all_reduce_perf": test}.get)
    started = ft.run(host, dict(params, action="nccl_start", run_id="w1"))["launch"]
    assert started == {"launcher": "mpirun", "error": "mpirun is not installed on this host (Open MPI (Debian/Ubuntu "
                                                      "openmpi-bin))"}
    done = ft.run(host, dict(params, action="nccl_collect", run_id="w1"))["launch"]
    assert done["missing"] is True and done["error"] == started["error"] and done["report"] is None


# ------------------------------------------------------------------------------------------------ gpufabric_validate_paths
def test_tools_outside_the_path_are_found_in_the_sites_directories(tmp_path):
    hpcx = tmp_path / "opt" / "hpcx" / "ompi" / "bin"
    hpcx.mkdir(parents=True)
    for name in ("mpirun", "orted"):
        (hpcx / name).write_text("#!/bin/sh\n")
        (hpcx / name).chmod(0o755)
    (hpcx / "ssh").write_text("not executable")
    out = ft.run(_with("ping", "ssh"), {"action": "tools", "nccl": {"test": "all_reduce_perf"}, "paths": [str(hpcx)]})
    assert out["tools"]["mpirun"] == str(hpcx / "mpirun") and out["tools"]["orted"] == str(hpcx / "orted")
    assert out["tools"]["ssh"] == "/usr/bin/ssh"        # a file there that is not executable does not count
    assert "mpirun (Open MPI (Debian/Ubuntu openmpi-bin))" not in out["missing"]


@pytest.mark.parametrize("paths,message", [
    ("/opt/hpcx/bin", r"paths: must be a list of absolute directories, not '/opt/hpcx/bin'"),
    (["opt/hpcx/bin"], r"paths\[0\]: 'opt/hpcx/bin' is not allowed \(an absolute directory"),
    (["/opt/../etc"], r"paths\[0\]: '/opt/../etc' is not allowed"),
    (["/opt/hpcx bin"], r"paths\[0\]: '/opt/hpcx bin' is not allowed"),
    (["/opt/x;reboot"], r"paths\[0\]: '/opt/x;reboot' is not allowed"),
])
def test_a_bad_directory_is_refused_before_anything_runs(paths, message):
    host = Host(spawn=lambda argv, env: pytest.fail("started %s" % argv), which=lambda name: None)
    with pytest.raises(MlnxError, match=message):
        ft.run(host, {"action": "tools", "paths": paths})


def test_an_mpirun_from_the_sites_directories_is_started_with_its_prefix(tmp_path):
    ompi = tmp_path / "hpcx" / "ompi"
    (ompi / "bin").mkdir(parents=True)
    mpirun = fake_tool(ompi, "mpirun", "import os, sys\nprint(os.environ['PATH'].split(':')[0], file=sys.stderr)\n")
    mpirun_in_bin = ompi / "bin" / "mpirun"
    os.rename(mpirun, mpirun_in_bin)
    test = fake_tool(tmp_path, "all_reduce_perf", "")
    host = Host(which={"all_reduce_perf": test}.get)
    params = {"launch": LAUNCH, "run_id": "w9", "run_dir": str(tmp_path / "run"), "paths": [str(ompi / "bin")],
              "nccl": {"test": "all_reduce_perf", "args": ["-b", "8"], "env": {}}}
    started = ft.run(host, dict(params, action="nccl_start"))["launch"]
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    assert started["argv"][:3 + len(root)] == ["mpirun", *root, "--prefix", str(ompi)]
    done = ft.run(host, dict(params, action="nccl_collect", timeout=20))["launch"]
    assert done["rc"] == 0 and done["stderr"] == str(ompi / "bin")      # the ranks' PATH starts there


# ------------------------------------------------------------------------------------------------ PHY counters
MLXLINK_C = ("\nPhysical Counters and BER Info\n------------------------------\n"
             "Time Since Last Clear [Min]        : 12.5\nEffective Physical Errors          : %s\n"
             "Effective Physical BER             : 15E-255\nRaw Physical Errors Per Lane       : 7,0,3,0\n"
             "Link Down Counter                  : 1\nRaw Physical BER                   : 15E-255\n")


def _mlxlink_host(answer, tools=("mstlink",)):
    calls = []

    def execute(argv, env, timeout, data):
        calls.append(argv)
        return answer
    return Host(execute=execute, which=lambda name: "/usr/bin/" + name if name in tools else None), calls


def test_phy_counters_of_an_infiniband_rail_from_mstlink_where_mlxlink_is_absent():
    host, calls = _mlxlink_host((0, MLXLINK_C % "2", ""))
    got = ft.phy_counters(host, "ibp24s0", "mlx5_0", 1, "InfiniBand", {}, None)
    assert calls == [["/usr/bin/mstlink", "-d", "mlx5_0", "-p", "1", "-c"]]
    assert {k: v for k, v in got.items() if k != "read_at"} == {
        "source": "mstlink -d mlx5_0 -p 1 -c", "effective_errors": 2, "raw_errors": 10, "link_down": 1,
        "received_bits": None}


@pytest.mark.parametrize("answer, tools, error", [
    ((0, "", ""), ("mlxlink",), None),
    ((1, "", "-E- Failed to open device: \"mlx5_0\", No such file or directory"), ("mlxlink",),
     "rc 1: -E- Failed to open device: \"mlx5_0\", No such file or directory"),
    ((0, MLXLINK_C % "N/A", ""), ("mlxlink",), "Effective Physical Errors: 'N/A' is not a count"),
    ((0, MLXLINK_C % "0", ""), (), "neither mlxlink (NVIDIA MFT) nor mstlink (mstflint) is installed"),
])
def test_phy_counters_an_infiniband_rail_cannot_be_read_fail_closed(answer, tools, error):
    host, _calls = _mlxlink_host(answer, tools)
    got = ft.phy_counters(host, "ibp24s0", "mlx5_0", 1, "InfiniBand", {}, None)
    assert "effective_errors" not in got and got["source"].endswith("-d mlx5_0 -p 1 -c")
    if error is None:      # an empty answer: no counters section - never read as no errors
        assert "no 'Physical Counters and BER Info' section" in got["error"]
    else:
        assert error in got["error"]


def test_phy_counters_of_an_ethernet_rail_and_a_driver_without_them():
    counters = {"link_down_events_phy": 0, "rx_pcs_symbol_err_phy": 3, "rx_corrected_bits_phy": 900,
                "rx_bits_phy": 10 ** 15}
    got = ft.phy_counters(Host(), "enp24s0np0", "mlx5_0", 1, "Ethernet", counters, 1000.0)
    assert got == {"source": "ethtool -S enp24s0np0", "read_at": 1000.0, "effective_errors": 3, "raw_errors": 900,
                   "link_down": 0, "received_bits": 10 ** 15}
    older = {"link_down_events_phy": 0, "rx_symbol_err_phy": 0}      # no PHY statistical group
    assert ft.phy_counters(Host(), "enp24s0np0", "mlx5_0", 1, "Ethernet", older, 1000.0) == {
        "source": "ethtool -S enp24s0np0", "read_at": 1000.0,
        "error": "no rx_pcs_symbol_err_phy, rx_corrected_bits_phy (the mlx5 PHY statistical counters)"}


# ------------------------------------------------------------------------------------------------ mpirun's SSH
SSH_STANDIN = """import json, os, sys
with open(os.environ["SSH_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
address = sys.argv[-2]
if address == "198.19.90.12":
    sys.exit(0)
if address == "198.19.90.13":
    sys.stderr.write("root@198.19.90.13: Permission denied (publickey).\\n")
    sys.exit(255)
sys.stderr.write("Host key verification failed.\\n")
sys.exit(255)
"""


def test_ssh_check_logs_in_as_mpirun_does_and_names_each_peer_it_cannot_reach(tmp_path, monkeypatch):
    monkeypatch.setenv("SSH_LOG", str(tmp_path / "ssh.log"))
    ssh = fake_tool(tmp_path, "ssh", SSH_STANDIN)
    host = Host(which={"ssh": ssh}.get)
    peers = [{"name": "srv-b", "address": "198.19.90.12"}, {"name": "srv-c", "address": "198.19.90.13"},
             {"name": "srv-d", "address": "srv-d.mgmt"}]
    out = ft.run(host, {"action": "ssh_check", "peers": peers}, check_mode=True)   # reads only: runs in check mode
    assert [(e["peer"], e["ok"], e["rc"], e["error"]) for e in out["ssh"]] == [
        ("srv-b", True, 0, None), ("srv-c", False, 255, "root@198.19.90.13: Permission denied (publickey)."),
        ("srv-d", False, 255, "Host key verification failed.")]
    assert out["problems"] == [
        "mpirun cannot reach srv-c (198.19.90.13) over SSH as it starts Open MPI's daemon there (ssh -o BatchMode=yes "
        "198.19.90.13 true): root@198.19.90.13: Permission denied (publickey).",
        "mpirun cannot reach srv-d (srv-d.mgmt) over SSH as it starts Open MPI's daemon there (ssh -o BatchMode=yes "
        "srv-d.mgmt true): Host key verification failed."]
    # the argv: no prompt (BatchMode, as mpirun's plm_rsh_args), a bounded connect, the address alone, `true`
    calls = [json.loads(line) for line in (tmp_path / "ssh.log").read_text().splitlines()]
    assert calls[0] == ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "198.19.90.12", "true"]
    assert len(calls) == 3 and out["changed"] is False


def test_ssh_check_without_ssh_names_the_package():
    out = ft.run(_with(), {"action": "ssh_check", "peers": [{"name": "srv-b", "address": "198.19.90.12"}]})
    assert out["problems"] == ["mpirun cannot reach srv-b (198.19.90.12) over SSH as it starts Open MPI's daemon "
                               "there (ssh -o BatchMode=yes 198.19.90.12 true): ssh (openssh-client) is not on the PATH"]


@pytest.mark.parametrize("peers, words", [
    ([{"name": "srv-b", "address": "-oProxyCommand=id"}],
     r"peers\[0\]\.address: '-oProxyCommand=id' is not allowed \(a host name or an IPv4 address\)"),
    ([{"name": "srv b", "address": "198.19.90.12"}], r"peers\[0\]\.name: 'srv b' is not allowed"),
    ([{"name": "srv-b", "address": "198.19.90.12", "user": "root"}], r"peers\[0\]: .* is not \{name, address\}"),
    ("srv-b", r"peers: must be a list of \{name, address\}"),
])
def test_ssh_check_refuses_a_peer_outside_its_grammar_before_any_login(tmp_path, peers, words):
    started = []
    host = Host(which=lambda name: "/usr/bin/" + name, spawn=lambda argv, env: started.append(argv) or 1)
    with pytest.raises(MlnxError, match=words) as err:
        ft.run(host, {"action": "ssh_check", "peers": peers})
    assert err.value.parameter == "peers" and started == []


@pytest.mark.parametrize("collect, jobs", [
    (ft.collect, [{"rail": 0, "interface": "enp24s0np0"}, {"rail": 1, "interface": "enp64s0np0"}]),
    (ft.nccl_collect, [{"rank": 0}, {"rank": 1}, {"rank": 2}, {"rank": 3}]),
])
def test_collect_waits_for_all_its_processes_until_one_deadline(monkeypatch, tmp_path, collect, jobs):
    # four processes that never end (the clients of a rail that is down never came): the first is waited for the
    # whole timeout, the others only what is left of it (nothing) - not four times the timeout
    clock, waits = [100.0], []

    def never_ends(_base, timeout, kill=True):
        waits.append(timeout)
        clock[0] += timeout
        return {"rc": None, "stdout": "", "stderr": "", "stopped": kill}
    monkeypatch.setattr(ft.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(ft, "_finish", never_ends)
    out = collect(jobs, str(tmp_path), 15)
    assert waits == [15, 0, 0, 0]
    assert [entry["stopped"] for entry in out] == [True] * 4
