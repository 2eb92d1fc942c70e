# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One switch's state directory: state.json (locked, atomically replaced) and the event log events.jsonl."""
import contextlib
import fcntl
import json
import os
import time

DEFAULT_STATE_DIR = "/var/lib/nvuesim"
STATE_VERSION = 1


class SimError(Exception):
    """A problem with the emulator itself (no state, bad arguments to nvuesim)."""


def state_dir(explicit=None):
    return explicit or os.environ.get("NVUESIM_STATE") or DEFAULT_STATE_DIR


class Store:
    """The state directory of one switch. Every writer holds an exclusive fcntl lock on ``state.lock`` for
    its whole read-modify-write; the event log is appended under the same lock, so ``seq`` is gap-free."""

    def __init__(self, directory):
        self.dir = os.path.abspath(directory)
        self.state_file = os.path.join(self.dir, "state.json")
        self.events_file = os.path.join(self.dir, "events.jsonl")
        self.lock_file = os.path.join(self.dir, "state.lock")
        self.socket = os.path.join(self.dir, "nvued.sock")
        self.cert = os.path.join(self.dir, "cert.pem")
        self.key = os.path.join(self.dir, "key.pem")
        self.images = os.path.join(self.dir, "images")

    def exists(self):
        return os.path.exists(self.state_file)

    @contextlib.contextmanager
    def _flock(self):
        os.makedirs(self.dir, exist_ok=True)
        fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def load(self):
        """A consistent snapshot without the lock (writers rename atomically)."""
        try:
            with open(self.state_file) as fh:
                return json.load(fh)
        except FileNotFoundError:
            raise SimError("nvuesim: no switch state in %s (run 'nvuesim init --state DIR --hostname NAME')"
                           % self.dir) from None

    def _write(self, data):
        tmp = os.path.join(self.dir, ".state.json.%d.%d.tmp" % (os.getpid(), time.monotonic_ns()))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(json.dumps(data, sort_keys=True, separators=(",", ":")))
                fh.write("\n")
                fh.flush()
            os.replace(tmp, self.state_file)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @contextlib.contextmanager
    def transaction(self):
        """Lock, load, yield a Tx (state + event buffer), then write the state and the events (unless the
        body raised)."""
        with self._flock():
            tx = Tx(self.load())
            yield tx
            if tx.events or tx.dirty:
                if tx.events:
                    with open(self.events_file, "a") as fh:
                        for event in tx.events:
                            fh.write(json.dumps(event, sort_keys=True) + "\n")
                self._write(tx.state)

    def create(self, data):
        with self._flock():
            self._write(data)
            with open(self.events_file, "w"):
                pass

    def events(self):
        try:
            with open(self.events_file) as fh:
                return [json.loads(line) for line in fh if line.strip()]
        except FileNotFoundError:
            return []


class Tx:
    """A locked state: ``state`` (mutate it) and ``event(name, client, **details)``."""

    def __init__(self, state):
        self.state = state
        self.events = []
        self.dirty = False

    def touch(self):
        self.dirty = True

    def event(self, name, client, /, **details):
        self.state["seq"] = self.state.get("seq", 0) + 1
        record = {"t": time.time(), "seq": self.state["seq"], "event": name, "client": client}
        record.update(details)
        self.events.append(record)
        self.dirty = True
        return record
