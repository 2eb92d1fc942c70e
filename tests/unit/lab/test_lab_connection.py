"""tests/lab/connection_plugins/lab_podman.py, the connection of the molecule labs: the podman command lines it
runs (no podman needed - the podman calls are recorded), and its nsenter path into a real process's namespaces."""
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ansible.playbook.play_context import PlayContext
from ansible.plugins.loader import connection_loader

# Not `from conftest import LAB_DIR`: under pytest-xdist another directory's conftest (tests/unit/nvue) may be
# the module named conftest in this worker.
LAB_DIR = Path(__file__).resolve().parents[3] / "tests" / "lab"

CMD = "/bin/sh -c '/usr/bin/python3 && sleep 0'"


@pytest.fixture()
def conn(tmp_path):
    connection_loader.add_directory(str(LAB_DIR / "connection_plugins"))
    play_context = PlayContext()
    play_context.remote_addr = "gfx-srv-a"
    c = connection_loader.get("lab_podman", play_context, None)
    no_podman = tmp_path / "no-podman"          # `podman inspect` finds no such container: podman exec is used
    no_podman.write_text("#!/bin/sh\nexit 125\n")
    no_podman.chmod(0o755)
    c.set_options(var_options={"ansible_host": "gfx-srv-a", "ansible_podman_executable": str(no_podman)})
    mount = tmp_path / "mnt"
    (mount / "tmp").mkdir(parents=True)
    c.calls = []

    def podman(cmd, cmd_args=None, in_data=None, use_container_id=True):
        c.calls.append((cmd, list(cmd_args or []), in_data, use_container_id))
        if cmd == "mount":
            return 0, str(mount).encode() + b"\n", b""
        return 0, b"out", b""

    c._podman = podman
    c.mount = mount
    return c


def test_it_pipelines(conn):
    assert conn.has_pipelining is True
    assert conn.get_option("pipelining") is True


def test_a_module_piped_in_is_one_podman_exec_with_stdin_attached(conn):
    assert conn.exec_command(CMD, in_data=b"<module>") == (0, b"out", b"")
    assert conn.calls == [(["exec", "-i"], ["/bin/sh", "-c", "/usr/bin/python3 && sleep 0"], b"<module>", True)]


def test_a_command_without_input_has_no_stdin_and_mounts_nothing(conn):
    conn.exec_command("echo hi")
    conn.exec_command("echo again")
    assert conn.calls == [(["exec"], ["echo", "hi"], None, True), (["exec"], ["echo", "again"], None, True)]


def test_a_remote_user_runs_the_command(conn):
    conn.user = "nobody"
    conn.exec_command("id", in_data=b"")
    assert conn.calls == [(["exec", "-i", "--user", "nobody"], ["id"], b"", True)]


def test_a_file_copy_mounts_the_container_once(conn, tmp_path):
    src = tmp_path / "src"
    src.write_text("hello\n")
    conn.put_file(str(src), "/tmp/a")
    conn.put_file(str(src), "/tmp/b")
    conn.fetch_file("/tmp/a", str(tmp_path / "back"))
    assert [c[0] for c in conn.calls] == ["mount"]
    assert (conn.mount / "tmp" / "b").read_text() == "hello\n"
    assert (tmp_path / "back").read_text() == "hello\n"


# ---------------------------------------------------------------------------- nsenter


needs_nsenter = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("nsenter") or not shutil.which("setpriv"),
                                   reason="nsenter into a process needs root, nsenter and setpriv")


@pytest.fixture()
def init(tmp_path, monkeypatch):
    """A stand-in for a container's init: a process with its own environment and a narrower capability bounding
    set, and a `podman` that answers `inspect` with its PID (and logs each call)."""
    connection_loader.add_directory(str(LAB_DIR / "connection_plugins"))
    plugin = sys.modules[connection_loader.get("lab_podman", class_only=True).__module__]
    procs = []

    def start():
        proc = subprocess.Popen(["setpriv", "--bounding-set", "-all,+chown,+net_admin,+net_raw", "--",
                                 "env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LAB_MARK=inside", "sleep", "60"])
        procs.append(proc)
        deadline = time.monotonic() + 5
        # until env has exec'd sleep with its environment (setpriv's own command line names sleep too)
        while Path("/proc/%d/cmdline" % proc.pid).read_text().split("\0")[0] != "sleep" \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        (tmp_path / "pid").write_text(str(proc.pid))
        return proc

    podman = tmp_path / "podman"
    podman.write_text('#!/bin/sh\necho "$*" >> %s\ncat %s\n' % (tmp_path / "podman.log", tmp_path / "pid"))
    podman.chmod(0o755)
    start()
    monkeypatch.setattr(plugin, "CACHE", str(tmp_path / "cache"))
    c = connection_loader.get("lab_podman", PlayContext(), None)
    c.set_options(var_options={"ansible_host": "gfx-srv-a", "ansible_podman_executable": str(podman)})
    c._container_id = "gfx-srv-a"
    c.start, c.log, c.procs = start, tmp_path / "podman.log", procs
    yield c
    for proc in procs:
        proc.kill()
        proc.wait()


@needs_nsenter
def test_a_command_runs_in_the_inits_namespaces_with_its_environment_and_capabilities(init):
    rc, out, err = init.exec_command("/bin/sh -c 'env; grep CapBnd /proc/self/status'")
    assert rc == 0, err
    lines = out.decode().split("\n")
    env = dict(ln.split("=", 1) for ln in lines if "=" in ln)
    assert env.pop("PWD") == os.getcwd()                           # sh's own, in the init's working directory
    assert env == {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LAB_MARK": "inside", "HOME": "/root"}   # nothing else
    with open("/proc/%d/status" % init.procs[0].pid) as fh:
        bnd = [ln for ln in fh.read().split("\n") if ln.startswith("CapBnd:")]
    assert [ln for ln in lines if ln.startswith("CapBnd:")] == bnd == ["CapBnd:\t0000000000003001"]
    # the module piped in; the exit code and stderr come back
    assert init.exec_command("/bin/sh -c 'cat; echo oops >&2; exit 3'", in_data=b"<module>") == (3, b"<module>",
                                                                                                 b"oops\n")


@needs_nsenter
def test_the_pid_is_asked_once_and_asked_again_for_a_restarted_container(init):
    for attempt in range(3):
        assert init.exec_command("true")[0] == 0, attempt
    assert init.log.read_text().count("inspect") == 1
    init.procs[0].kill()
    init.procs[0].wait()
    init.start()                                                    # the container restarted: another init
    assert init.exec_command("/bin/sh -c 'echo $LAB_MARK'") == (0, b"inside\n", b"")
    assert init.log.read_text().count("inspect") == 2


@needs_nsenter
def test_files_are_copied_in_and_out_through_the_namespaces(init, tmp_path):
    src = tmp_path / "src"
    src.write_bytes(b"hello\x00world\n")
    init.put_file(str(src), str(tmp_path / "in-the-container"))
    assert (tmp_path / "in-the-container").read_bytes() == b"hello\x00world\n"
    init.fetch_file(str(tmp_path / "in-the-container"), str(tmp_path / "back"))
    assert (tmp_path / "back").read_bytes() == b"hello\x00world\n"
    with pytest.raises(Exception, match="Failed to fetch"):
        init.fetch_file(str(tmp_path / "missing"), str(tmp_path / "x"))


def test_podman_exec_when_the_container_is_not_running_or_the_user_is_not_root(conn):
    conn.exec_command("true")                                      # `podman inspect` found nothing
    conn.user = "nobody"
    conn.exec_command("id")
    assert [c[0] for c in conn.calls] == [["exec"], ["exec", "--user", "nobody"]]
