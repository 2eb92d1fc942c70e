"""The fleet twin's connection: a simulated machine on the controller whose modules run in the task's worker.

Every module Ansible sends with pipelining (an AnsiballZ payload on stdin of ``python``) runs in a fork of the
worker - no interpreter start, no imports (the worker has them) - with the machine's environment (its simulator
state, its PATH); the simulated NVIDIA tools a module runs (``subprocess.run`` of a program in tests/sim/bin)
run in that fork too, as ``mlxsim``'s own entry point runs them. Any other command (the action plugins' temporary
directories, a reboot command) runs as the local connection runs it, with the machine's environment. The
module, its arguments and its result are Ansible's own: only where the module runs changes."""
import io
import os
import subprocess
import sys
import tempfile
import threading

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.connection.local import Connection as LocalConnection

DOCUMENTATION = """
    name: twin
    short_description: a simulated machine of the fleet twin, its modules run in the task's worker
    description:
        - Runs pipelined modules in a fork of the worker with the machine's environment; other commands locally.
    author: gpufabric.mlnx contributors
    options:
        twin_env:
            type: dict
            default: {}
            description: The machine's environment (its simulator state, PATH).
            vars:
                - name: gpufabric_twin_env
        twin_sim:
            type: str
            default: ''
            description: The simulator's bin directory; its tools run in the module's process.
            vars:
                - name: gpufabric_twin_sim
        become_success_timeout:
            type: int
            default: 10
            description: As the local connection's option.
            vars:
                - name: ansible_local_become_success_timeout
        become_strip_preamble:
            type: bool
            default: true
            description: As the local connection's option.
            vars:
                - name: ansible_local_become_strip_preamble
    extends_documentation_fragment:
        - connection_pipelining
"""

MARK = b"_ansiballz_main("


class _Streams(threading.local):
    """sys.stdout/sys.stderr/sys.stdin of a thread: the tools run in threads of the module (one per card) at once."""
    out = err = inp = None


class _ThreadStream(io.TextIOBase):
    """A stream that writes to (reads from) the calling thread's own capture, else to ``default``."""

    def __init__(self, streams, which, default):
        super().__init__()
        self._streams, self._which, self._default = streams, which, default

    def _target(self):
        return getattr(self._streams, self._which) or self._default

    def write(self, text):
        return self._target().write(text)

    def read(self, *args):
        return self._target().read(*args)

    def readline(self, *args):
        return self._target().readline(*args)

    def flush(self):
        return self._target().flush()

    def fileno(self):
        return self._target().fileno()


def _sim_run(sim_bin, real_run):
    """subprocess.run that runs a tool of ``sim_bin`` in this process (mlxsim.cli.main), anything else as usual."""
    sys.path.insert(0, os.path.dirname(sim_bin))
    from mlxsim import cli  # noqa: E402 - the simulator beside its bin directory
    streams = _Streams()
    sys.stdout = _ThreadStream(streams, "out", sys.stdout)
    sys.stderr = _ThreadStream(streams, "err", sys.stderr)
    sys.stdin = _ThreadStream(streams, "inp", sys.stdin)
    lock = threading.Lock()

    def run(args, *a, **kw):
        argv = [str(word) for word in args] if isinstance(args, (list, tuple)) else None
        if not argv or os.path.dirname(argv[0]) != sim_bin or a:
            return real_run(args, *a, **kw)
        if kw.get("env") is not None:
            with lock:  # the same environment in every thread of the module (its own and LANG=C)
                os.environ.update(kw["env"])
        data = kw.get("input")
        done = {}

        def tool():  # in its own thread, so that a tool that hangs is left behind after the timeout, as a stopped one
            streams.out, streams.err = io.StringIO(), io.StringIO()
            streams.inp = io.StringIO(data if isinstance(data, str) else (data or b"").decode())
            try:
                done["rc"] = cli.main(os.path.basename(argv[0]), argv[1:])
            except SystemExit as exc:
                done["rc"] = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            finally:
                done["out"], done["err"] = streams.out.getvalue(), streams.err.getvalue()
                streams.out = streams.err = streams.inp = None
        worker = threading.Thread(target=tool, daemon=True)
        worker.start()
        worker.join(kw.get("timeout"))
        if worker.is_alive():
            raise subprocess.TimeoutExpired(argv, kw.get("timeout"))
        rc, stdout, stderr = done.get("rc", 1), done.get("out", ""), done.get("err", "")
        if not kw.get("text") and not kw.get("universal_newlines") and not kw.get("encoding"):
            stdout, stderr = stdout.encode(), stderr.encode()
        if kw.get("check") and rc:
            raise subprocess.CalledProcessError(rc, argv, stdout, stderr)
        return subprocess.CompletedProcess(argv, rc, stdout, stderr)
    return run


class Connection(LocalConnection):
    transport = "twin"

    def exec_command(self, cmd, in_data=None, sudoable=True):
        env = {str(k): str(v) for k, v in (self.get_option("twin_env") or {}).items()}
        state = env.get("MLXSIM_STATE")
        if state and os.path.exists(os.path.join(os.path.dirname(state), "DOWN")):
            # a machine that is powered off (the simulator's no_boot fault): as ssh finds a host that is down
            raise AnsibleConnectionFailure("Failed to connect to the host via twin: %s is down (powered off and not "
                                           "back after its reboot)" % self._play_context.remote_addr)
        if not in_data or MARK not in in_data:
            saved = dict(os.environ)
            os.environ.update(env)
            try:
                return super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
            finally:
                os.environ.clear()
                os.environ.update(saved)
        return self._in_fork(in_data, env, self.get_option("twin_sim"))

    @staticmethod
    def _in_fork(payload, env, sim_bin):
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            pid = os.fork()
            if pid == 0:  # the module's process
                rc = 1
                try:
                    os.dup2(out.fileno(), 1)
                    os.dup2(err.fileno(), 2)
                    null = os.open(os.devnull, os.O_RDONLY)
                    os.dup2(null, 0)
                    # the worker's own sys.stdout is not fd 1 (ansible-core hides the workers' output)
                    sys.stdin = open(0, "r", closefd=False)  # noqa: SIM115
                    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
                    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                    os.environ.update(env)
                    from ansible.module_utils import _internal
                    _internal.is_controller = False
                    if sim_bin:
                        subprocess.run = _sim_run(os.path.abspath(sim_bin), subprocess.run)
                    sys.argv = ["AnsiballZ"]
                    code = compile(payload, "<AnsiballZ>", "exec")
                    exec(code, {"__name__": "__main__", "__builtins__": __builtins__})  # noqa: S102
                    rc = 0
                except SystemExit as exc:
                    rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                except BaseException:  # noqa: BLE001 - reported as the module's failure
                    import traceback
                    traceback.print_exc()
                finally:
                    try:
                        sys.stdout.flush()
                        sys.stderr.flush()
                    finally:
                        os._exit(rc)
            _pid, status = os.waitpid(pid, 0)
            out.seek(0)
            err.seek(0)
            return os.waitstatus_to_exitcode(status), out.read(), err.read()
