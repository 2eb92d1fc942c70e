"""mlxsim - a simulator of NVIDIA/Mellanox NIC command-line tools (test double).

Stdlib only. One JSON state file per simulated host (env ``MLXSIM_STATE``). Every tool
(``mlxconfig``, ``flint``, ``mst`` ...) is a symlink to ``bin/mlxsim-tool`` which dispatches on
the name it was called by. See ``tests/sim/README.md``.
"""

__version__ = "1.0"
