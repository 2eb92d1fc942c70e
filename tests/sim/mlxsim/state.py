"""The per-host state file: loading, locking, atomic saving, environment knobs."""
import contextlib
import fcntl
import json
import os
import time

DEFAULT_STATE = "/var/lib/mlxsim/state.json"
STATE_VERSION = 1


class SimError(Exception):
    """A problem with the simulator itself (no state, bad arguments to mlxsim)."""


def state_path():
    return os.environ.get("MLXSIM_STATE") or DEFAULT_STATE


def log_path():
    env = os.environ.get("MLXSIM_LOG")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(state_path())), "calls.jsonl")


def down_path(path=None):
    """The marker of a host that is powered off and not back (the no_boot fault): beside its state."""
    return os.path.join(os.path.dirname(os.path.abspath(path or state_path())), "DOWN")


def time_scale():
    try:
        return float(os.environ.get("MLXSIM_TIME_SCALE", "1.0"))
    except ValueError:
        return 1.0


def sim_sleep(seconds):
    """Sleep ``seconds`` of simulated time (scaled by MLXSIM_TIME_SCALE)."""
    delay = seconds * time_scale()
    if delay > 0:
        time.sleep(delay)


def _lock_path(path):
    return path + ".lock"


@contextlib.contextmanager
def _flock(path, exclusive):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd = os.open(_lock_path(path), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _read(path):
    with open(path) as fh:
        return json.load(fh)


def exists(path=None):
    return os.path.exists(path or state_path())


def load(path=None):
    """Read a consistent snapshot (writers rename atomically, so no lock is needed)."""
    path = path or state_path()
    try:
        return _read(path)
    except FileNotFoundError:
        raise SimError("mlxsim: no simulator state at %s (run 'mlxsim init --profile NAME --hostname H')" % path)


def _write(path, data):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, ".%s.%d.%d.tmp" % (os.path.basename(path), os.getpid(), time.monotonic_ns()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "w") as fh:
            # one-shot dumps without indent uses the C encoder (much faster than json.dump)
            fh.write(json.dumps(data, sort_keys=True, separators=(",", ":")))
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def save(data, path=None):
    path = path or state_path()
    with _flock(path, True):
        _write(path, data)


@contextlib.contextmanager
def transaction(path=None):
    """Exclusive read-modify-write of the state. Yields the fresh state dict; it is written
    back atomically when the block ends without an exception."""
    path = path or state_path()
    with _flock(path, True):
        data = load(path)
        yield data
        _write(path, data)
