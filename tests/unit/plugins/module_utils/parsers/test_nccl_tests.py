"""nccl-tests reports (_parsers/nccl_tests.py): all_reduce_perf over 2 nodes and a log of six single-size runs (real
captures), the layouts of newer builds (version line, NCCL_TESTS_MIN_BW verdict, per-iteration columns, a trace
replay without out-of-place values), the -J JSON file, and a run that died."""
import json

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import ParseError, parse

from ._captures import capture_test, checks

CHECKS, check = checks()
HEADER = ["#                                                              out-of-place                       in-place",
          "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
          "busbw #wrong",
          "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
          "(GB/s)"]


@check("nccl_all_reduce_perf_2node_a100_1.txt")
def _two_nodes(text):
    out = parse("nccl_tests", text)
    assert len(out["rows"]) == 31 and [row["size"] for row in out["rows"][:3]] == [8, 16, 32]
    assert out["rows"][0] == {"size": 8, "count": 2, "type": "float", "redop": "sum", "root": -1,
                              "out_of_place": {"time": 36.47, "algbw": 0.0, "busbw": 0.0, "wrong": 0},
                              "in_place": {"time": 34.74, "algbw": 0.0, "busbw": 0.0, "wrong": 0}}
    # large sizes print the time without decimals: still a number of microseconds
    assert out["rows"][-1]["out_of_place"] == {"time": 67689.0, "algbw": 126.9, "busbw": 237.94, "wrong": 0}
    assert (out["avg_busbw"], out["avg_busbw_check"], out["out_of_bounds"], out["errors"]) == (66.4834, None, 0, [])
    assert out["nccl_version"] is None and len(out["runs"]) == 1  # this build prints no version line
    # rank 0 lists every rank of the world: 2 nodes x 8 GPUs, as the MPI operator's launcher made it
    assert len(out["ranks"]) == 16 and [r["rank"] for r in out["ranks"]] == list(range(16))
    assert out["ranks"][8] == {"rank": 8, "group": 0, "pid": 43, "host": "nccl-allreduce-job0-mpiworker-1",
                               "device": 0, "bus": "0x0f", "name": "NVIDIA A100-SXM4-40GB"}


@check("nccl_all_reduce_perf_azure_h200_1.txt")
def _azure_h200(text):
    out = parse("nccl_tests", text)
    assert [r["size"] for r in out["rows"]] == [8589934592]
    assert out["rows"][0]["in_place"] == {"time": 31516.0, "algbw": 272.56, "busbw": 476.98, "wrong": 0}
    assert out["avg_busbw"] == 476.967 and out["out_of_bounds"] == 0 and out["errors"] == []
    # eight processes, one GPU each; the VM shows every GPU at bus 0x00
    assert [(r["rank"], r["pid"], r["bus"]) for r in out["ranks"]] == [(i, 23690 + i, "0x00") for i in range(8)]


@check("nccl_all_reduce_perf_v100_1.txt")
def _six_runs(text):
    out = parse("nccl_tests", text)
    assert [run["avg_busbw"] for run in out["runs"]] == [5.68719, 5.63861, 21.9093, 5.61644, 42.3627, 5.57758]
    assert out["avg_busbw"] == 5.57758 and out["rows"] == out["runs"][-1]["rows"]
    assert out["rows"][0]["out_of_place"] == {"time": 6080.7, "algbw": 5.52, "busbw": 5.52, "wrong": None}  # -c 0: N/A
    # one process driving 2 GPUs (-g 2): two NCCL ranks, one Pid - a rank line is a GPU's, not a process's
    assert [(r["rank"], r["pid"], r["bus"]) for r in out["runs"][0]["ranks"]] == [(0, 154, "0x06"), (1, 154, "0x89")]
    assert [(r["rank"], r["bus"]) for r in out["ranks"]] == [(0, "0x06"), (1, "0x0b")]


test_capture = capture_test(CHECKS)


def test_a_newer_build_with_its_version_and_the_min_bw_verdict():
    lines = ["# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703",
             "# Collective test starting: all_reduce_perf",
             "# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 1073741824 step: 2(factor) warmup iters: 5 "
             "iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0", "#"]
    lines += HEADER + ["  1073741824     268435456     float     sum      -1    21520   49.89   46.77      0    21488"
                       "   49.97   46.84      0",
                       "# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 46.8 FAILED", "#",
                       "# Collective test concluded: all_reduce_perf"]
    text = "\n".join(lines)
    out = parse("nccl_tests", text)
    assert (out["nccl_version"], out["avg_busbw"], out["avg_busbw_check"]) == ("2.27.3", 46.8, "FAILED")
    assert out["rows"][0]["in_place"]["busbw"] == 46.84


@pytest.mark.parametrize("line, version", [
    ("NCCL version 2.23.4+cuda12.4", "2.23.4"),                                     # NCCL_DEBUG=VERSION
    ("gpu01:1234:1234 [0] NCCL INFO NCCL version 2.18.3+cuda12.2", "2.18.3"),       # NCCL_DEBUG=INFO
    ("# NCCL version 2.23.4+cuda12.4", None),                                     # a comment, not NCCL's line
    ("NCCL version 2.23", None),
])
def test_the_library_version_from_nccls_own_line(line, version):
    """An nccl-tests too old to print nccl-library= (the capture's build): NCCL's own version line gives it."""
    lines = ["# Collective test starting: all_reduce_perf", line] + HEADER + [
        "           8             2     float     sum      -1    20.09    0.00    0.00      0    19.82    0.00"
        "    0.00      0", "# Avg bus bandwidth    : 0 ", "#"]
    assert parse("nccl_tests", "\n".join(lines))["nccl_version"] == version


def test_per_iteration_columns_and_a_trace_replay_without_out_of_place_values():
    per_iter = ["#       size         count      type   redop    root     time   algbw   busbw #wrong    i_min    i_max"
                "    i_p99    i_cv%     time   algbw   busbw #wrong    i_min    i_max    i_p99    i_cv%",
                "     1048576        262144     float     sum      -1    85.58   12.25   22.97      0    80.10    99.20"
                "    98.00     3.10    84.50   12.41   23.27      0    80.00    98.10    97.50     2.90"]
    row = parse("nccl_tests", "\n".join(["# nThread 1 nGpus 8"] + per_iter))["rows"][0]
    assert row["out_of_place"] == {"time": 85.58, "algbw": 12.25, "busbw": 22.97, "wrong": 0}
    assert row["in_place"] == {"time": 84.5, "algbw": 12.41, "busbw": 23.27, "wrong": 0}
    replay = "\n".join(["# nThread 1 nGpus 8"] + HEADER + [
        "     1048576        262144     float     sum      -1                                     84.50   12.41   "
        "23.27      0"])
    row = parse("nccl_tests", replay)["rows"][0]
    assert row["out_of_place"] is None and row["in_place"]["busbw"] == 23.27


def test_a_run_that_died_keeps_its_failure_lines():
    text = "\n".join(["# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592", "#",
                      "node-b: Test NCCL failure common.cu:1005 'unhandled system error (run with NCCL_DEBUG=INFO for "
                      "details) / '", " .. node-b pid 4242: Test failure common.cu:892"])
    out = parse("nccl_tests", text)
    assert out["rows"] == [] and out["avg_busbw"] is None and len(out["errors"]) == 2
    assert out["errors"][0].startswith("node-b: Test NCCL failure common.cu:1005")


def test_the_json_file_of_dash_j():
    data = {"version": 1, "nccl_version": 22703, "results": [
        {"size": 1073741824, "count": 268435456, "type": "float", "redop": "sum", "root": "    -1",
         "out_of_place": {"time": 21520.0, "alg_bw": 49.89, "bus_bw": 46.77, "nwrong": 0.0},
         "in_place": {"time": 21488.0, "alg_bw": 49.97, "bus_bw": 46.84, "nwrong": None}}],
        "out_of_bounds": {"count": 0, "okay": True}, "average_bus_bandwidth": {"bandwidth": 46.8, "okay": "unchecked"},
        "errors": []}
    out = parse("nccl_tests", json.dumps(data))
    assert out["nccl_version"] == "2.27.3" and out["avg_busbw_check"] is None and out["out_of_bounds"] == 0
    assert out["rows"][0]["root"] == -1 and out["rows"][0]["out_of_place"]["wrong"] == 0
    assert out["rows"][0]["in_place"] == {"time": 21488.0, "algbw": 49.97, "busbw": 46.84, "wrong": None}
    assert parse("nccl_tests", data) == out


def test_text_that_is_no_nccl_tests_report_names_its_first_line():
    with pytest.raises(ParseError, match=r"no nccl-tests report found .*line 1: 'hello'"):
        parse("nccl_tests", "hello\n")
    with pytest.raises(ParseError, match="has a results list"):
        parse("nccl_tests", {"results": {}})
