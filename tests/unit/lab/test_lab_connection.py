"""tests/lab/connection_plugins/lab_podman.py, the connection of the molecule labs: the podman command lines it
runs (no podman needed - the podman calls are recorded)."""
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
    c.set_options(var_options={"ansible_host": "gfx-srv-a"})
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
