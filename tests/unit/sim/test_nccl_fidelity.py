"""The simulated nccl-tests (tests/sim/mlxsim/tools/nccl.py) against real reports of each output generation
(tests/fixtures/FORMAT_FACTS.md, nccl-tests): MLXSIM_NCCL_TESTS_VERSION selects the release whose layout is printed.

Each test runs the capture's command on the simulator at the capture's release and compares the lines the real tool
prints the same way whatever the hardware: the start lines, the options line, the shape of the device lines, the
column header character for character (trailing blanks too, where the capture kept them), where each column of a row
ends, the footer; and a failing run's lines (no column header, the failure and its backtrace)."""
import re

import pytest

from _paths import REAL
from sim_helpers import Sim
from test_perf_tools import needs_mpirun, nccl_world, set_mtu

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.nccl_tests import parse_nccl_tests

RANK = re.compile(r"^#  Rank +(\d+) Group +(\d+) Pid +(\d+) on +(\S+) device +(\d+) \[(?P<bus>[^\]]+)\] (.+)$")
BUS_NUMBER = re.compile(r"^0x[0-9a-f]{2}$")
BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}$")
FAILURE = re.compile(r"^(\S+): Test (?:NCCL|CUDA) failure common\.cu:(\d+) '(.+)'$")
BACKTRACE = re.compile(r"^ \.\. (\S+) pid (\d+): Test failure common\.cu:(\d+)$")


def capture(name):
    """The capture's lines after its two comment lines (its own first lines start with "#" too)."""
    lines = (REAL / name).read_text().split("\n")
    assert lines[0].startswith("# source:") and lines[1].startswith("# note:"), name
    return lines[2:]


def ends(line):
    """Where each word of a row ends: the columns' right edges."""
    return [m.end() for m in re.finditer(r"\S+", line)]


def block(lines, start, stop=None):
    """The lines of one run: from the first line that starts with ``start`` up to the next ``stop`` line."""
    first = next(i for i, ln in enumerate(lines) if ln.startswith(start))
    last = next((i for i in range(first + 1, len(lines)) if stop and lines[i].startswith(stop)), len(lines))
    return lines[first:last]


@pytest.fixture
def host(tmp_path, pycache):
    return Sim(tmp_path / "h", pycache).init("dgx-h100", "nccl-tests")


@pytest.fixture
def pair(tmp_path, pycache):
    a = Sim(tmp_path / "a", pycache).init("gpu4-cx7-eth", "fab-r01-01")
    b = Sim(tmp_path / "b", pycache).init("gpu4-cx7-eth", "fab-r01-02")
    return a, b


def sim(host, version, *args, env=None):
    p = host.run("all_reduce_perf", *args, env=dict(env or {}, MLXSIM_NCCL_TESTS_VERSION=version))
    return p.returncode, p.stdout.split("\n"), p.stderr


def test_2_13_4_one_host_as_the_5090_capture(host):
    """nccl_all_reduce_perf_fail_5090_1.txt, its completed run: the 2.13.4-2.14.0 layout - no version or start line,
    Group and "[0x21]", the narrow "#wrong" header with its trailing blanks kept, the time by magnitude, the footer
    and ncclGetLastError's blank line."""
    cap = block(capture("nccl_all_reduce_perf_fail_5090_1.txt"), "# nThread", "user@")
    rc, out, err = sim(host, "2.13.4", "-b", "8", "-e", "128M", "-f", "2", "-g", "1")
    assert rc == 0, err
    assert out[0] == cap[0] == ("# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 "
                                "iters: 20 agg iters: 1 validation: 1 graph: 0")
    assert out[1:3] == cap[1:3] == ["#", "# Using devices"]
    mine, theirs = RANK.match(out[3]), RANK.match(cap[3])
    assert BUS_NUMBER.match(mine.group("bus")) and BUS_NUMBER.match(theirs.group("bus"))
    assert mine.end(3) == theirs.end(3) and mine.group(1, 2, 5) == theirs.group(1, 2, 5) == ("0", "0", "0")
    assert out[4:8] == cap[4:8]                      # "#" and the header, trailing blanks included
    assert out[5].endswith("in-place          ") and out[7].endswith("(GB/s)       ")
    rows = [ln for ln in out if re.match(r"^ +\d+ +\d+ +float", ln)]
    theirs = cap[8:8 + 25]
    assert len(rows) == len(theirs) == 25
    for mine_row, their_row in zip(rows[:14], theirs[:14]):      # the capture's in-place algbw overflows from 128K
        assert ends(mine_row) == ends(their_row), (mine_row, their_row)
        assert mine_row.split()[:5] == their_row.split()[:5]
    tail = out[out.index("# Out of bounds values : 0 OK"):]
    their_tail = cap[cap.index("# Out of bounds values : 0 OK"):]
    assert tail[1].startswith("# Avg bus bandwidth    : ") and tail[1].endswith(" ") and their_tail[1] == \
        "# Avg bus bandwidth    : 0 "
    assert tail[2:4] == their_tail[2:] == ["#", ""]      # "#", then ncclGetLastError's blank line
    assert tail[4:] == [""]                               # (the end of the simulator's text)


def test_2_13_4_bare_nccl_version_line_as_the_h200_capture(host):
    """nccl_all_reduce_perf_bare_version_h200_1.txt: NCCL_DEBUG=WARN - NCCL prints its bare version line after the
    device lines; one 8 GiB row whose time prints without decimals."""
    cap = capture("nccl_all_reduce_perf_bare_version_h200_1.txt")[1:]
    rc, out, err = sim(host, "2.13.4", "-b", "8G", "-e", "8G", "-f", "2", "-g", "8", "-c", "1", "-n", "10",
                       env={"NCCL_DEBUG": "WARN", "MLXSIM_NCCL_VERSION": "2.19.3"})
    assert rc == 0, err
    assert out[0] == cap[0].replace("nGpus 1", "nGpus 8")    # one process driving 8 GPUs, not 8 processes
    assert [bool(RANK.match(ln)) for ln in out[3:11]] == [bool(RANK.match(ln)) for ln in cap[3:11]] == [True] * 8
    assert out[11].startswith("NCCL version 2.19.3+cuda") and cap[11] == "NCCL version 2.19.3+cuda12.2"
    assert [ln.rstrip() for ln in out[12:16]] == cap[12:16]        # the capture lost its trailing blanks (W)
    assert ends(out[16]) == ends(cap[16]) and out[16].split()[:5] == cap[16].split()[:5]
    assert re.match(r"^ +\d+$", out[16][:60].split("-1")[1][:9])   # ~30000 us: "%7.0f", no decimals
    assert out[17] == cap[17] and out[19] == cap[19] == "#"
    assert parse_nccl_tests("\n".join(out))["nccl_version"] == "2.19.3"


def test_2_16_7_start_line_bdf_and_the_bare_version_as_the_a100_excerpt(host):
    """nccl_all_reduce_perf_bare_version_a100_1.txt: the 2.16.7-2.17.2 layout - the start line, no version line, PCI
    BDFs, one process driving 4 GPUs (one Pid); NCCL's bare version line after the devices."""
    cap = capture("nccl_all_reduce_perf_bare_version_a100_1.txt")[1:]
    rc, out, err = sim(host, "2.16.7", "-b", "1024", "-e", "2G", "-f", "2", "-g", "4",
                       env={"NCCL_DEBUG": "VERSION", "MLXSIM_NCCL_VERSION": "2.19.3"})
    assert rc == 0, err
    assert out[:4] == cap[:4]        # starting line, options (warmup 5 before 2.16.8), "#", "# Using devices"
    mine, theirs = [RANK.match(ln) for ln in out[4:8]], [RANK.match(ln) for ln in cap[4:8]]
    assert all(mine) and all(theirs)
    assert all(BDF.match(m.group("bus")) for m in mine + theirs)
    assert [m.group(1) for m in mine] == [t.group(1) for t in theirs] == ["0", "1", "2", "3"]
    assert len({m.group(3) for m in mine}) == len({t.group(3) for t in theirs}) == 1
    assert out[8] == "NCCL version 2.19.3+cuda12.4" and cap[-2:] == ["NCCL version 2.19.3+cuda12.2", ""]
    assert out[-4:] == ["#", "# Collective test concluded: all_reduce_perf", "", ""]


def test_the_default_release_is_2_17_6_and_later_ones_print_their_additions(host):
    """The default (no setting) is 2.17.6, the release the simulator has always claimed, as it prints it: the wide
    #wrong with the 21 trailing blanks of its empty timestamp column, no "unalign"; 2.18.2 adds " unalign: 0"; a
    release before 2.13 is refused."""
    p = host.run("all_reduce_perf", "-b", "8", "-e", "8", "-g", "1")
    assert p.returncode == 0, p.stderr
    out = p.stdout.split("\n")
    assert out[0] == "# nccl-tests version 2.17.6 nccl-headers=22304 nccl-library=22304"
    assert out[2].endswith("validation: 1 graph: 0") and "warmup iters: 1 " in out[2]
    assert out[8] == "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   " \
                     "algbw   busbw  #wrong" + " " * 21
    assert out[-3:] == ["#", "# Collective test concluded: all_reduce_perf", ""]
    rc, out, _err = sim(host, "2.18.2", "-b", "8", "-e", "8", "-g", "1")
    assert rc == 0 and out[2].endswith("validation: 1 graph: 0 unalign: 0") and out[8].endswith("#wrong ")
    assert out[-3:] == ["# Collective test concluded: all_reduce_perf", "#", ""]
    rc, out, err = sim(host, "2.11.0", "-b", "8", "-e", "8", "-g", "1")
    assert rc == 2 and out == [""] and "nccl-tests 2.11.0 is not simulated" in err
    rc, out, err = sim(host, "2.17.2", "-b", "8", "-e", "8", "-J", "/dev/null")     # -J came with 2.17.3
    assert rc == 1 and err == "all_reduce_perf: invalid option -- 'J'\n"
    rc, out, err = sim(host, "2.13.3", "-b", "8", "-e", "8", "-T", "30")             # -T with 2.13.4
    assert rc == 1 and err == "all_reduce_perf: invalid option -- 'T'\n"
    rc, out, err = sim(host, "2.13.4", "-b", "8", "-e", "8", "-g", "1", "-T", "30")
    assert rc == 0 and out[0].startswith("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 ")


@needs_mpirun
def test_2_17_8_two_hosts_as_the_gh200_capture(pair):
    """nccl_all_reduce_perf_2node_gh200_1.txt: 2.17.8 over two hosts, one rank each - the version line, the wide
    #wrong header with one trailing blank, times by width ("1587.57"), the concluded line and finalizeFooter's "#"."""
    cap = capture("nccl_all_reduce_perf_2node_gh200_1.txt")
    a, b = pair
    for s in pair:
        set_mtu(s, "enp24s0np0", 9000)
    rc, out, err = nccl_world([(a, 0), (b, 0)], "all_reduce_perf", ["-b", "8", "-e", "128M", "-f", "2"],
                              {"MLXSIM_NCCL_TESTS_VERSION": "2.17.8", "NCCL_IB_HCA": "mlx5_0"})
    assert rc == 0, (out, err)
    out = out.split("\n")
    assert re.match(r"^# nccl-tests version 2\.17\.8 nccl-headers=\d+ nccl-library=\d+$", out[0])
    assert out[1:5] == cap[1:5]              # starting line, options line, "#", "# Using devices"
    assert all(RANK.match(ln) and BDF.match(RANK.match(ln).group("bus")) for ln in out[5:7] + cap[5:7])
    assert out[7:11] == cap[7:11]            # the header, its trailing blanks included
    rows, theirs = out[11:36], cap[11:36]
    assert [r.split()[0] for r in rows] == [t.split()[0] for t in theirs]
    for mine_row, their_row in zip(rows, theirs):
        assert ends(mine_row) == ends(their_row), (mine_row, their_row)
    assert out[36] == "# Out of bounds values : 0 OK" and cap[36] == "# Out of bounds values : 4 FAILED"
    assert out[37].endswith(" ") and cap[37].endswith(" ")
    assert out[38:41] == cap[38:41] == ["#", "# Collective test concluded: all_reduce_perf", "#"]


@needs_mpirun
def test_2_18_3_all_gather_as_the_gb10_capture(pair):
    """nccl_all_gather_perf_2node_gb10_1.txt: 2.18.3's options line with " unalign: 0" (the capture's -n 50 -w 10),
    the header, the time column of 1-4 GiB rows ("27211.0": one decimal where two do not fit)."""
    cap = capture("nccl_all_gather_perf_2node_gb10_1.txt")
    a, b = pair
    for s in pair:
        set_mtu(s, "enp24s0np0", 9000)
    args = ["-b", "1G", "-e", "4G", "-f", "2", "-n", "50", "-w", "10", "-g", "1"]
    rc, out, err = nccl_world([(a, 0), (b, 0)], "all_gather_perf", args,
                              {"MLXSIM_NCCL_TESTS_VERSION": "2.18.3", "NCCL_IB_HCA": "mlx5_0"})
    assert rc == 0, (out, err)
    out = out.split("\n")
    assert out[0].startswith("# nccl-tests version 2.18.3 nccl-headers=")
    assert out[1:5] == cap[1:5]
    assert out[7:11] == cap[7:11]
    for mine_row, their_row in zip(out[11:14], cap[11:14]):
        assert ends(mine_row) == ends(their_row), (mine_row, their_row)
        assert re.match(r"^\d+\.\d$", mine_row.split()[5]), mine_row      # "%7.1f": 5 digits before the point
    assert out[14:20] == ["# Out of bounds values : 0 OK", out[15], "#", "# Collective test concluded: all_gather_perf",
                          "#", ""]
    assert cap[16:19] == ["#", "# Collective test concluded: all_gather_perf", "#"]


@needs_mpirun
def test_one_host_s_rank_fails_at_init_as_the_gh200_failure(pair):
    """nccl_all_reduce_perf_fail_2node_gh200_1.txt: a run that dies at start-up - rank 0's device lines, then only
    the failing host's lines: its failure and the backtrace to main's check (common.cu:1189 in 2.17.8, as the
    capture), no column header, no footer; the run exits non-zero. The nccl_rank_fail fault on one host."""
    cap = capture("nccl_all_reduce_perf_fail_2node_gh200_1.txt")
    a, b = pair
    b.run("mlxsim", "fault", "add", "nccl_rank_fail", check_rc=0)
    rc, out, err = nccl_world([(a, 0), (b, 0)], "all_reduce_perf", ["-b", "8", "-e", "128M", "-f", "2"],
                              {"MLXSIM_NCCL_TESTS_VERSION": "2.17.8", "NCCL_IB_HCA": "mlx5_0"})
    assert rc != 0
    # mpirun forwards each process's output on its own: the failing host's lines may come before or among rank 0's
    # (they did under load). Each process's lines are compared in their order, not their interleaving.
    every = [ln for ln in out.split("\n") if ln]
    failed = [ln for ln in every if FAILURE.match(ln) or BACKTRACE.match(ln)]
    lines = [ln for ln in every if ln not in failed]
    assert lines[1:5] == cap[1:5]
    assert [bool(RANK.match(ln)) for ln in lines[5:7]] == [True, True] and len(lines) == 7
    theirs = cap[13:15]                      # one failing process's pair of lines
    assert FAILURE.match(theirs[0]) and BACKTRACE.match(theirs[1])
    assert [FAILURE.match(failed[0]).group(1)] + [BACKTRACE.match(ln).group(1) for ln in failed[1:]] == \
        ["fab-r01-02"] * 3                   # only the host with the fault
    assert FAILURE.match(failed[0]).group(2, 3) == ("209", "unhandled system error (run with NCCL_DEBUG=INFO for "
                                                           "details) / ")
    assert [BACKTRACE.match(ln).group(3) for ln in failed[1:]] == ["1357", "1189"]
    assert BACKTRACE.match(failed[-1]).group(3) == BACKTRACE.match(theirs[1]).group(3) == "1189"
    assert not any("#       size" in ln or ln.startswith("# Out of bounds") for ln in every + cap)
    report = parse_nccl_tests(out)
    assert report["rows"] == [] and report["errors"][0] == failed[0]


def test_a_world_of_one_fails_at_init_without_a_column_header(host):
    """The fault on a host whose process is the whole world: the devices, the failure and the backtrace of the
    release (2.13.4: ncclGroupEnd at 958, main's check of run() at 842), the fault's own error text."""
    host.run("mlxsim", "fault", "add", "nccl_rank_fail", "error=unhandled cuda error (run with NCCL_DEBUG=INFO for "
             "details) / ", check_rc=0)
    rc, out, err = sim(host, "2.13.4", "-b", "8", "-e", "128M", "-f", "2", "-g", "2")
    assert rc == 1, err
    assert [bool(RANK.match(ln)) for ln in out[3:5]] == [True, True]
    pid = RANK.match(out[3]).group(3)
    assert out[5:] == ["nccl-tests: Test NCCL failure common.cu:958 'unhandled cuda error (run with NCCL_DEBUG=INFO "
                       "for details) / '", " .. nccl-tests pid %s: Test failure common.cu:842" % pid, ""]
    cap = capture("nccl_all_reduce_perf_fail_5090_1.txt")
    failure = [ln for ln in cap if FAILURE.match(ln)][0]
    assert FAILURE.match(failure).group(3) == FAILURE.match(out[5]).group(3)      # the same error, the same quoting


@needs_mpirun
def test_a_ring_that_does_not_connect_fails_like_a_real_init_failure(pair):
    """A rail that flaps (link_flap): the ranks' NCCL WARN lines, then rank 0's failure and backtrace at 2.17.6
    (ncclGroupEnd in run() at 1279, main's check at 1100), the failing member's own pair of lines, no column header,
    no footer - the shape of nccl_all_reduce_perf_fail_2node_gh200_1.txt."""
    a, b = pair
    b.run("mlxsim", "fault", "add", "link_flap", "--device", "mlx5_0", check_rc=0)
    rc, out, err = nccl_world([(a, 0), (b, 0)], "all_reduce_perf", ["-b", "8", "-e", "8"], {"NCCL_IB_HCA": "mlx5_0"})
    assert rc != 0, (out, err)
    lines = [ln for ln in out.split("\n") if ln]
    assert not any("#       size" in ln or ln.startswith("# Out of bounds") for ln in lines)
    failures = [FAILURE.match(ln) for ln in lines if FAILURE.match(ln)]
    assert {f.group(1) for f in failures} == {"fab-r01-01", "fab-r01-02"}
    assert {f.group(2) for f in failures} == {"1279"}
    traces = [BACKTRACE.match(ln) for ln in lines if BACKTRACE.match(ln)]
    assert sorted((t.group(1), t.group(3)) for t in traces) == [("fab-r01-01", "1100"), ("fab-r01-02", "1100")]
    for f in failures:       # each process's backtrace follows its failure line
        at = lines.index(f.group(0))
        assert BACKTRACE.match(lines[at + 1]).group(1) == f.group(1)
    report = parse_nccl_tests(out)
    assert report["rows"] == [] and any("status=12" in e for e in report["errors"])
