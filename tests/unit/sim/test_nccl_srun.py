"""The simulated nccl-tests (tests/sim/mlxsim/tools/nccl.py) started by Slurm's srun, as Open MPI 4.1.4's libmpi
(Debian 12) behaves there - measured in the fabric lab with Slurm 22.05.8 (a Python probe calling the real libmpi's
MPI_Init / MPI_Comm_rank / MPI_Comm_size under srun):

- ``srun --mpi=pmix``: every rank has ``PMIX_RANK``, ``PMIX_NAMESPACE`` (``slurm.pmix.<job>.<step>``),
  ``PMIX_SERVER_URI*`` (``pmix-server.<pid>;tcp4://127.0.0.1:<port>``, the step daemon's PMIx server) and
  ``SLURM_PROCID`` / ``SLURM_NTASKS`` / ``SLURM_LOCALID``, no ``OMPI_COMM_WORLD_*``; MPI's rank and size equal
  SLURM_PROCID and SLURM_NTASKS;
- ``srun --mpi=none``: every rank's MPI_Init fails ("direct launched using srun"), exit 1.

The real srun runs only where Slurm is (its client answers and knows this host as a node); elsewhere that test is
skipped with the reason.
"""
import re
import shutil
import socket
import subprocess

import pytest

from sim_helpers import Sim

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.nccl_tests import parse_nccl_tests


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def host(tmp_path, pycache):
    return Sim(tmp_path / "a", pycache).init("gpu4-cx7-eth", "fab-r01-01")


def slurm_here():
    """Why the real srun cannot run here, or None."""
    if not shutil.which("srun") or not shutil.which("sinfo"):
        return "Slurm's srun is not installed (Debian slurm-client; the lab's servers have it: tests/lab)"
    p = subprocess.run(["sinfo", "--noheader", "--Node", "--nodes=" + socket.gethostname(), "--format=%N|%T"],
                       capture_output=True, text=True, timeout=30, check=False)
    if p.returncode != 0 or not p.stdout.strip():
        return "Slurm does not answer or does not know this host as a node: %s" % (p.stderr.strip() or p.stdout)
    return None


def test_srun_without_pmix_fails_in_mpi_init_as_open_mpi_does(host):
    """srun --mpi=none (Slurm's default when MpiDefault=none): Slurm's variables, no PMIx server - each rank fails
    with Open MPI's own words, exit 1 (not a world of one)."""
    env = {"SLURM_JOB_ID": "8", "SLURM_STEP_ID": "0", "SLURM_PROCID": "1", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1",
           "NCCL_COMM_ID": "127.0.0.1:%d" % free_port()}
    p = host.run("all_reduce_perf", "-b", "8", "-e", "8", "-g", "1", env=env)
    assert p.returncode == 1 and p.stdout == ""
    lines = p.stderr.splitlines()
    assert lines[0].endswith("] OPAL ERROR: Unreachable in file ext3x_client.c at line 112")
    assert lines[2:4] == ['The application appears to have been direct launched using "srun",',
                          "but OMPI was not built with SLURM's PMI support and therefore cannot"]
    assert "*** An error occurred in MPI_Init" in lines


def test_srun_with_pmix_takes_the_rank_and_size_slurm_gives(host):
    """srun --mpi=pmix: the PMIx server answers (here a listening socket stands for the step daemon's), rank and
    size are SLURM_PROCID / SLURM_NTASKS - rank 0 of 2 waits at the bootstrap for the other rank and says so."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    uri = "pmix-server.541;tcp4://127.0.0.1:%d" % server.getsockname()[1]
    env = {"SLURM_JOB_ID": "5", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0",
           "PMIX_RANK": "0", "PMIX_NAMESPACE": "slurm.pmix.5.0", "PMIX_SERVER_URI4": uri, "PMIX_SERVER_URI41": uri,
           "NCCL_COMM_ID": "127.0.0.1:%d" % free_port(), "MLXSIM_NCCL_TIMEOUT": "1"}
    try:
        p = host.run("all_reduce_perf", "-b", "8", "-e", "8", "-g", "1", env=env)
    finally:
        server.close()
    # not a world of one (which would pass alone): rank 0 of a world of 2 fails at the bootstrap without rank 1
    assert p.returncode == 1, p.stdout + p.stderr
    lines = p.stdout.strip().split("\n")
    assert len(lines) == 2 and lines[0].endswith("Bootstrap : 1 of 2 ranks joined'"), p.stdout + p.stderr
    # its backtrace at the default release, 2.17.6: main's TESTCHECK(run())
    assert re.match(r"^ \.\. \S+ pid \d+: Test failure common\.cu:1100$", lines[1]), lines


@pytest.mark.skipif(slurm_here() is not None, reason=slurm_here() or "")
def test_a_real_srun_with_pmix_makes_one_world(host):
    """Where Slurm runs (a lab server): srun --mpi=pmix starts 2 ranks on this node, one world of 2."""
    p = subprocess.run(["srun", "--mpi=pmix", "--nodes=1", "--nodelist=" + socket.gethostname(), "--ntasks=2",
                        "env", "NCCL_COMM_ID=127.0.0.1:%d" % free_port(), "MLXSIM_TIME_SCALE=0",
                        "all_reduce_perf", "-b", "8", "-e", "8", "-g", "1"],
                       capture_output=True, text=True, timeout=300, env=dict(host.env), check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert [r["rank"] for r in parse_nccl_tests(p.stdout)["ranks"]] == [0, 1]
