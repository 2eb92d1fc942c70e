"""One fake host for the unit tests of the core (importable like _simhost; tests/ is on sys.path).

A ``FakeHost`` fakes the two doors of the host layer (``_host.Host``): ``execute`` and ``which``. Its files
live in a directory (``root``, a temporary one: sysfs, configfs, procfs, /boot as plain files), its tools
are Python functions, ``tools = {name: answer(args) -> (rc, stdout, stderr)}``; ``which`` finds exactly
those, in ``bindir``. Every command is recorded in ``calls`` (argv tuples, as the host layer ran them),
must carry the environment the host layer gives every command (``LANG=C``), and a command no fake answers
fails the test. ``host()`` is the collection's own ``Host`` on all this, so the tests run the real host
layer; its sysfs writes are recorded in ``writes`` and ``shown(path, value)`` says what the kernel shows
after one (a subclass may refuse a write with OSError, as the kernel does). ``runner(family)`` is a
``Runner`` on that host.

A test's own fake tools are a subclass that adds its tools and the state they answer from (see
fake_fwreset.py, fake_roce_qos.py, test_ofed.py).
"""
import collections
import os
import threading

from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner


class FakeHost:
    """Files under ``root`` (None: a host with no files of interest) and fake ``tools``."""

    bindir = "/usr/bin"

    def __init__(self, root=None, tools=None, bindir=None):
        self.root = str(root) if root is not None else None
        self.tools = dict(tools or {})
        if bindir:
            self.bindir = bindir
        self.calls = []
        self.writes = []
        self.lock = threading.Lock()
        if self.root is not None:
            os.makedirs(self.root, exist_ok=True)

    # -- the two doors of the host layer
    def which(self, name):
        return "%s/%s" % (self.bindir, name) if name in self.tools else None

    def __call__(self, argv, env, timeout, data):
        with self.lock:
            self.calls.append(tuple(argv))
        assert env["LANG"] == "C" and env["LC_ALL"] == "C", "the host layer runs every command with LANG=C"
        tool = os.path.basename(argv[0])
        if tool not in self.tools:
            raise AssertionError("unexpected command %r" % (argv,))
        return self.tools[tool](list(argv[1:]))

    def host(self, execute=None, installed=None, timeout=None):
        """The collection's Host on this fake; ``installed``: the only tool names ``which`` finds."""
        which = self.which if installed is None else (
            lambda name: "%s/%s" % (self.bindir, name) if name in installed else None)
        kwargs = {"timeout": timeout} if timeout is not None else {}
        return _RecordingHost(self, root=self.root or "/nonexistent-fake-root", execute=execute or self,
                              which=which, **kwargs)

    def runner(self, family="auto", installed=None, execute=None, **kwargs):
        """A Runner of ``family`` on ``host(execute, installed)`` that never sleeps between retries."""
        kwargs.setdefault("sleep", lambda _seconds: None)
        return Runner(family, host=self.host(execute=execute, installed=installed), **kwargs)

    def shown(self, path, value):
        """What the file at ``path`` shows after ``value`` is written to it (override to be the kernel)."""
        return value

    # -- what happened
    def commands(self, tool):
        """The argument lists of every call of ``tool``."""
        return [list(c[1:]) for c in self.calls if os.path.basename(c[0]) == tool]

    def count(self):
        return collections.Counter(self.calls)

    # -- the file tree
    def path(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def put(self, path, text):
        """A file with ``text`` and a newline (an empty file for empty text), its directories made."""
        os.makedirs(os.path.dirname(self.path(path)), exist_ok=True)
        with open(self.path(path), "w") as stream:
            stream.write(text + "\n" if text else "")

    def get(self, path):
        with open(self.path(path)) as stream:
            return stream.read()

    def mkdir(self, path):
        os.makedirs(self.path(path), exist_ok=True)

    def link(self, path, target):
        """A symbolic link at ``path`` to ``target`` (a path on the fake host)."""
        os.makedirs(os.path.dirname(self.path(path)), exist_ok=True)
        os.symlink(self.path(target), self.path(path))

    def netdev(self, name, driver=None, pci=None, rdma=None):
        """/sys/class/net/NAME; with ``driver`` a device whose driver link names it - at /sys/bus/pci/devices/PCI
        when ``pci`` is given (so the interface has a PCI function), else a device directory of its own;
        ``rdma``: an RDMA device under it."""
        base = "/sys/class/net/%s" % name
        self.mkdir(base)
        if driver or pci:
            device = "/sys/bus/pci/devices/%s" % pci if pci else base + "/device"
            self.mkdir(device)
            if pci:
                self.link(base + "/device", device)
            if driver:
                self.mkdir("/sys/bus/pci/drivers/%s" % driver)
                self.link(device + "/driver", "/sys/bus/pci/drivers/%s" % driver)
            if rdma:
                self.mkdir(device + "/infiniband/%s" % rdma)


class _RecordingHost(Host):
    """The collection's Host, its sysfs writes recorded by the fake and shown as the fake's kernel shows them."""

    def __init__(self, fake, **kwargs):
        super().__init__(**kwargs)
        self.fake = fake

    def write_sys(self, path, value):
        with self.fake.lock:
            self.fake.writes.append((path, value))
        super().write_sys(path, self.fake.shown(path, value))
