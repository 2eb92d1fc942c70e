"""Dispatcher: every executable in bin/ is a symlink to bin/mlxsim-tool, which calls main()."""
import importlib
import json
import os
import sys
import time

from . import faults
from . import state as st

TOOLS = {
    "mst": ("mst", "mst"),
    "mlxconfig": ("mlxconfig", "mlxconfig"),
    "mstconfig": ("mlxconfig", "mstconfig"),
    "mlxfwmanager": ("fwmanager", "mlxfwmanager"),
    "mstfwmanager": ("fwmanager", "mstfwmanager"),
    "mlxup": ("fwmanager", "mlxup"),
    "flint": ("flint", "flint"),
    "mstflint": ("flint", "mstflint"),
    "mlxfwreset": ("fwreset", "mlxfwreset"),
    "mstfwreset": ("fwreset", "mstfwreset"),
    "mlxlink": ("mlxlink", "mlxlink"),
    "mlxprivhost": ("privhost", "mlxprivhost"),
    "lspci": ("lspci", "lspci"),
    "ibdev2netdev": ("netinfo", "ibdev2netdev"),
    "ibstat": ("netinfo", "ibstat"),
    "ofed_info": ("netinfo", "ofed_info"),
    "ibstatus": ("rdmaviews", "ibstatus"),
    "rdma": ("rdmaviews", "rdma"),
    "ibv_devinfo": ("rdmaviews", "ibv_devinfo"),
    "mlnx_qos": ("qos", "mlnx_qos"),
    "cma_roce_tos": ("qos", "cma_roce_tos"),
    "update-grub": ("boot", "update-grub"),
    "update-grub2": ("boot", "update-grub2"),
    "grub-mkconfig": ("boot", "grub-mkconfig"),
    "grubby": ("boot", "grubby"),
    "ib_write_bw": ("perftest", "ib_write_bw"),
    "ib_read_bw": ("perftest", "ib_read_bw"),
    "ib_send_bw": ("perftest", "ib_send_bw"),
    "ib_write_lat": ("perftest", "ib_write_lat"),
    "ib_read_lat": ("perftest", "ib_read_lat"),
    "ib_send_lat": ("perftest", "ib_send_lat"),
    "all_reduce_perf": ("nccl", "all_reduce_perf"),
    "all_gather_perf": ("nccl", "all_gather_perf"),
    "sendrecv_perf": ("nccl", "sendrecv_perf"),
    "ethtool": ("ethtool", "ethtool"),
    "mlxsim": ("admin", "mlxsim"),
}


# What a launcher gives a rank (Open MPI's mpirun, Slurm's srun --mpi=pmix), logged with each NCCL test's call.
LAUNCHER_ENV = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_RANK",
                "PMIX_NAMESPACE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")


def _log(entry):
    try:
        path = st.log_path()
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        line = (json.dumps(entry, sort_keys=True) + "\n").encode()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError:
        pass


def _hang(tool):
    try:
        state = st.load() if st.exists() else {}
    except (st.SimError, ValueError):
        state = {}
    for f in faults.find(state, "hang", tool=tool):
        try:
            secs = float(f.get("seconds", 30))
        except (TypeError, ValueError):
            secs = 30.0
        time.sleep(max(0.0, secs))
        break


def main(name, args):
    if name in ("mlxsim-tool", "mlxsim_tool") and args and args[0] in TOOLS:
        name, args = args[0], args[1:]
    if name not in TOOLS:
        sys.stderr.write("mlxsim: unknown tool name %r (known: %s)\n" % (name, ", ".join(sorted(TOOLS))))
        return 127
    modname, tool = TOOLS[name]
    start = time.time()
    rc = 1
    try:
        if tool != "mlxsim":
            _hang(tool)
        mod = importlib.import_module("mlxsim.tools." + modname)
        rc = mod.run(tool, list(args))
    except st.SimError as e:
        sys.stdout.flush()
        sys.stderr.write(str(e) + "\n")
        rc = 1
    except KeyboardInterrupt:
        rc = 130
    except BrokenPipeError:
        rc = 141
    finally:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            pass
        if tool != "mlxsim":
            entry = {"tool": tool, "argv": [name] + list(args), "start": start, "end": time.time(), "rc": rc,
                     "pid": os.getpid()}
            if modname == "nccl":   # the world its launcher gave this rank (none: started alone)
                entry["launcher"] = {k: os.environ[k] for k in LAUNCHER_ENV if k in os.environ}
            _log(entry)
    return rc
