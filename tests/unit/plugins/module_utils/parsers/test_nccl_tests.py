"""nccl-tests reports (_parsers/nccl_tests.py): every generation of the layout in real captures (before 2.13 with
its "error" column; 2.13.4 with Group and "[0x..]" bus numbers; 2.14.1 with PCI BDFs; 2.16.7 with the start and
conclude lines; 2.17.3 with the wide "#wrong"; 2.17.4 with the version line; 2.18.2 with "unalign"), NCCL's own
version line in its forms (INFO, bare), runs that died at start-up or in their first collective, the layouts of newer
builds (NCCL_TESTS_MIN_BW verdict, per-iteration columns, a trace replay without out-of-place values) and the -J
JSON file."""
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


@check("nccl_all_gather_perf_2node_gb10_1.txt")
def _gb10_2_18_3(text):
    """nccl-tests 2.18.3: the version line (NCCL 2.28.9 by its code), ' unalign: 0', the wide #wrong column and times
    printed by width ("27211.0")."""
    out = parse("nccl_tests", text)
    assert (out["nccl_version"], out["avg_busbw"], out["out_of_bounds"], out["errors"]) == ("2.28.9", 21.4033, 0, [])
    assert [(r["rank"], r["host"], r["bus"]) for r in out["ranks"]] == [(0, "spark-fb97", "000f:01:00"),
                                                                        (1, "spark-4440", "000f:01:00")]
    assert [r["size"] for r in out["rows"]] == [1073741824, 2147483648, 4294967296]
    assert out["rows"][0] == {"size": 1073741824, "count": 134217728, "type": "float", "redop": "none", "root": -1,
                              "out_of_place": {"time": 27211.0, "algbw": 39.46, "busbw": 19.73, "wrong": 0},
                              "in_place": {"time": 25806.7, "algbw": 41.61, "busbw": 20.8, "wrong": 0}}


@check("nccl_all_reduce_perf_2node_gh200_1.txt")
def _gh200_wrong_values(text):
    """nccl-tests 2.17.8 over NCCL 2.29.2: wrong values at one size, 'Out of bounds values : 4 FAILED', and each
    rank's backtrace line after the report (the run exits non-zero)."""
    out = parse("nccl_tests", text)
    assert (out["nccl_version"], out["avg_busbw"], out["avg_busbw_check"], out["out_of_bounds"]) == \
        ("2.29.2", 4.79995, None, 4)
    assert [(r["rank"], r["pid"], r["host"]) for r in out["ranks"]] == [(0, 662195, "gpu-1-1"), (1, 2448661, "gpu-1-7")]
    assert len(out["rows"]) == 25
    bad = [r for r in out["rows"] if r["out_of_place"]["wrong"] or r["in_place"]["wrong"]]
    assert [(r["size"], r["out_of_place"]["wrong"], r["in_place"]["wrong"]) for r in bad] == [(1048576, 96, 32)]
    assert out["rows"][-1]["out_of_place"] == {"time": 5869.38, "algbw": 22.87, "busbw": 22.87, "wrong": 0}
    assert out["errors"] == [".. gpu-1-1 pid 662195: Test failure common.cu:1189",
                             ".. gpu-1-7 pid 2448661: Test failure common.cu:1189"]


@check("nccl_all_reduce_perf_fail_2node_gh200_1.txt")
def _gh200_start_up_failure(text):
    """A run that died at start-up on both hosts: no column header, no rows, every rank's failure line kept."""
    out = parse("nccl_tests", text)
    assert (out["nccl_version"], out["rows"], out["avg_busbw"], len(out["ranks"])) == ("2.26.6", [], None, 8)
    assert len(out["errors"]) == 12
    assert out["errors"][:2] == ["gpu-1-1: Test CUDA failure common.cu:1304 'CUDA-capable device(s) is/are busy or "
                                 "unavailable'", ".. gpu-1-1 pid 3617715: Test failure common.cu:1189"]
    assert sorted({e.split(":")[0] for e in out["errors"] if not e.startswith("..")}) == ["gpu-1-1", "gpu-1-7"]


@check("nccl_all_reduce_perf_fail_5090_1.txt")
def _one_host_two_runs(text):
    """Two runs on one host (2.13.4-2.14.0 layout): one that completes (an algbw wider than its column,
    "1807.89"), then one that fails after its column header, with its backtrace."""
    out = parse("nccl_tests", text)
    first, second = out["runs"]
    assert (first["nccl_version"], first["avg_busbw"], first["out_of_bounds"], len(first["rows"])) == (None, 0.0, 0, 25)
    row = [r for r in first["rows"] if r["size"] == 131072][0]
    assert row["in_place"] == {"time": 0.07, "algbw": 1807.89, "busbw": 0.0, "wrong": 0}
    assert [(r["rank"], r["bus"]) for r in first["ranks"]] == [(0, "0x21")]
    assert (second["rows"], second["avg_busbw"], [(r["rank"], r["pid"]) for r in second["ranks"]]) == \
        ([], None, [(0, 5068), (1, 5068)])
    assert second["errors"][0] == ("GENOA-06: Test NCCL failure common.cu:392 'unhandled cuda error (run with "
                                   "NCCL_DEBUG=INFO for details) / '")
    assert second["errors"][1:] == [".. GENOA-06 pid 5068: Test failure %s" % where for where in (
        "common.cu:590", "all_reduce.cu:90", "common.cu:623", "common.cu:1078", "common.cu:891")]
    assert out["errors"] == second["errors"]


@check("nccl_all_reduce_perf_bare_version_h200_1.txt")
def _bare_version_h200(text):
    """No nccl-tests version line: NCCL's bare 'NCCL version 2.19.3+cuda12.2' (NCCL_DEBUG=WARN) gives it."""
    out = parse("nccl_tests", text)
    assert (out["nccl_version"], out["avg_busbw"], out["out_of_bounds"]) == ("2.19.3", 477.416, 0)
    assert [(r["rank"], r["pid"], r["device"], r["bus"]) for r in out["ranks"]] == \
        [(i, 39280 + i, i, "0x00") for i in range(8)]
    assert out["rows"] == [{"size": 8589934592, "count": 2147483648, "type": "float", "redop": "sum", "root": -1,
                            "out_of_place": {"time": 31533.0, "algbw": 272.41, "busbw": 476.72, "wrong": 0},
                            "in_place": {"time": 31441.0, "algbw": 273.2, "busbw": 478.11, "wrong": 0}}]


@check("nccl_all_reduce_perf_bare_version_a100_1.txt")
def _bare_version_among_info_lines(text):
    """The bare version line among NCCL's INFO lines (an excerpt: the report is cut before its header)."""
    out = parse("nccl_tests", text)
    assert out["nccl_version"] == "2.19.3"
    assert [(r["rank"], r["pid"], r["device"], r["bus"]) for r in out["ranks"]] == [
        (0, 749452, 0, "0000:01:00"), (1, 749452, 1, "0000:02:00"), (2, 749452, 2, "0000:81:00"),
        (3, 749452, 3, "0000:82:00")]
    assert out["ranks"][0]["host"] == "paraai-n32-h-01-agent-18" and out["rows"] == []


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
    ("NCCL version 2.19.3+cuda12.2 ", "2.19.3"),                                    # trailing blank
    ("NCCL version 2.19.3+cuda12.2\r", "2.19.3"),                                   # a CRLF log
    ("NCCL version 2.19.3", "2.19.3"),                                              # no +cuda suffix
    ("[1,0]<stdout>:NCCL version 2.28.9+cuda13.0", "2.28.9"),                       # mpirun --tag-output
    ("  NCCL version 2.19.3+cuda12.2", "2.19.3"),                                   # a log indented by its writer
    ("NCCL version 2.19.3+cuda12.2 (from a container)", "2.19.3"),                  # text after the version
    ("xNCCL version 2.19.3", None),                                                 # not the line's start
    ("NCCL versions differ", None),
])
def test_the_library_version_from_nccls_own_line(line, version):
    """An nccl-tests too old to print nccl-library= (the capture's build): NCCL's own version line gives it."""
    lines = ["# Collective test starting: all_reduce_perf", line] + HEADER + [
        "           8             2     float     sum      -1    20.09    0.00    0.00      0    19.82    0.00"
        "    0.00      0", "# Avg bus bandwidth    : 0 ", "#"]
    assert parse("nccl_tests", "\n".join(lines))["nccl_version"] == version


def test_the_nccl_tests_version_line_with_its_git_hash():
    """nccl-tests 2.20 prints its git hash in the version line (NVIDIA/dgx-spark-playbooks pull request 103)."""
    lines = ["# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102",
             "# Collective test starting: all_reduce_perf"] + HEADER + [
        "        8192          2048     float     sum      -1    35.15    0.23    0.23       0    30.33    0.27    0.27"
        "       0"]
    out = parse("nccl_tests", "\n".join(lines))
    assert out["nccl_version"] == "2.31.2" and out["rows"][0]["in_place"]["busbw"] == 0.27


def test_a_report_of_before_2_13_its_own_header_without_root_and_the_error_column():
    """nccl-tests before 2.13 (the output of https://github.com/NVIDIA/nccl-tests/issues/82, broadcast_perf with NCCL
    2.9.6): no Group in the rank lines, a header per test ("root", no "redop"), "error" (the largest difference, N/A
    without -c) where later releases print "#wrong", and NCCL's bare version line among its WARN lines. The second
    row (a checked size, "0e+00" as nccl-tests issue 44 shows it) is written here, not copied."""
    text = "\n".join([
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 2147483648 step: 2(factor) warmup iters: 10 iters: 100 validation: 0 ",
        "#", "# Using devices",
        "#   Rank  0 Pid  14926 on v100-gpu-1 device  0 [0x00] Tesla V100-PCIE-16GB",
        "#   Rank  1 Pid   9210 on v100-gpu-5 device  0 [0x00] Tesla V100-PCIE-16GB", "",
        "v100-gpu-1:14926:14926 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]",
        "NCCL version 2.9.6+cuda11.2", "",
        "v100-gpu-5:9210:9210 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]", "#",
        "#                                                     out-of-place                       in-place          ",
        "#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error",
        "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
        "           8             2   float       0    45.82    0.00    0.00    N/A    38.17    0.00    0.00    N/A",
        "     1048576        262144   float       0    101.3   10.35   10.35  0e+00    99.80   10.51   10.51  0e+00"])
    out = parse("nccl_tests", text)
    assert out["nccl_version"] == "2.9.6"
    assert [(r["rank"], r["group"], r["pid"], r["host"], r["bus"]) for r in out["ranks"]] == [
        (0, None, 14926, "v100-gpu-1", "0x00"), (1, None, 9210, "v100-gpu-5", "0x00")]
    assert out["rows"][0] == {"size": 8, "count": 2, "type": "float", "redop": None, "root": 0,
                              "out_of_place": {"time": 45.82, "algbw": 0.0, "busbw": 0.0, "wrong": None, "error": None},
                              "in_place": {"time": 38.17, "algbw": 0.0, "busbw": 0.0, "wrong": None, "error": None}}
    assert out["rows"][1]["out_of_place"]["error"] == 0.0 and out["rows"][1]["in_place"]["time"] == 99.8


def test_mpirun_tag_output_prefixes():
    """``mpirun --tag-output``: every line of rank 0 starts with ``[1,0]<stdout>:``."""
    lines = ["# nccl-tests version 2.18.0 nccl-headers=22907 nccl-library=22907",
             "# Collective test starting: all_reduce_perf_mpi",
             "#  Rank  0 Group  0 Pid 2994447 on        lab device  0 [0000:02:00] NVIDIA GeForce RTX 5090"] + HEADER + [
        "     1048576        262144     float     sum      -1    85.58   12.25   22.97      0    84.50   12.41   23.27"
        "      0", "# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 23.12 "]
    out = parse("nccl_tests", "\n".join("[1,0]<stdout>:" + line for line in lines))
    assert (out["nccl_version"], out["avg_busbw"], out["ranks"][0]["pid"]) == ("2.29.7", 23.12, 2994447)
    assert out["rows"][0]["in_place"]["busbw"] == 23.27


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


def test_a_row_that_does_not_fit_its_header_is_refused_naming_it():
    """A row of a layout the parser does not know (here: the measures of one side only, and a word where a number
    belongs) is an error naming the line, not a report with a row less."""
    lines = ["# nThread 1 nGpus 1 minBytes 8 maxBytes 8"] + HEADER
    for row in ("           8             2     float     sum      -1    20.09    0.00",
                "           8             2     float     sum      -1    20.09    fast    0.00      0    19.82    0.00"
                "    0.00      0"):
        with pytest.raises(ParseError, match=r"does not fit the report's column header .*line 5: '  +8 +2 +float"):
            parse("nccl_tests", "\n".join(lines + [row]))


def test_text_that_is_no_nccl_tests_report_names_its_first_line():
    with pytest.raises(ParseError, match=r"no nccl-tests report found .*line 1: 'hello'"):
        parse("nccl_tests", "hello\n")
    with pytest.raises(ParseError, match="has a results list"):
        parse("nccl_tests", {"results": {}})
