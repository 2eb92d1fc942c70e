# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/accel/gpufabric_bytecode_cache.py: the compiled code of an Ansible payload is kept and reused, and only
there - the code that runs is the code Python compiles, tracebacks name the payload, and a cache that cannot be
trusted is not read."""
import hashlib
import importlib.util
import json
import marshal
import os
import subprocess
import sys
import textwrap
import zipfile

import pytest

from _ansible import env, tool
from _paths import REPO

ACCEL = REPO / "tests" / "accel"
SOURCE = b"def where():\n    return 'compiled'\n\n\ndef fail():\n    raise RuntimeError('from the payload')\n"


def payload(path, source=SOURCE):
    """A zip as Ansible's payloads are: a package inside, no .pyc."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("pkg/__init__.py", b"")
        z.writestr("pkg/mod.py", source)
    return path


def run(zip_path, cache, hook=True, call="where"):
    """A fresh interpreter importing pkg.mod from ``zip_path``: (stdout, stderr)."""
    code = textwrap.dedent("""
        import sys
        if %r:
            sys.path.insert(0, %r)
            import gpufabric_bytecode_cache
        sys.path.insert(0, %r)
        import pkg.mod
        print(pkg.mod.%s())
    """) % (hook, str(ACCEL), str(zip_path), call)
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=False,
                          env=dict(os.environ, GPUFABRIC_BYTECODE_CACHE=str(cache)))
    return proc.stdout.strip(), proc.stderr


def key(source=SOURCE):
    return hashlib.sha256(source).hexdigest() + "-" + importlib.util.MAGIC_NUMBER.hex()


def plant(cache, text="cached"):
    """A cache entry for SOURCE whose code says ``text``: when it is printed, the cache was read."""
    cache.mkdir(mode=0o700, exist_ok=True)
    (cache / key()).write_bytes(marshal.dumps(compile("def where():\n    return %r\n" % text, "x", "exec")))


def test_a_payload_is_compiled_once_and_the_next_payload_reads_it(tmp_path):
    cache = tmp_path / "cache"
    assert run(payload(tmp_path / "a" / "ansible_x_payload.zip"), cache) == ("compiled", "")
    assert sorted(p.name for p in cache.iterdir()) == sorted([key(), key(b"")])
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    plant(cache)  # the same source in another payload: read from the cache, not compiled
    assert run(payload(tmp_path / "b" / "ansible_y_payload.zip"), cache)[0] == "cached"


def test_a_traceback_names_the_payload_it_ran_from_not_the_one_that_filled_the_cache(tmp_path):
    cache = tmp_path / "cache"
    run(payload(tmp_path / "a" / "ansible_x_payload.zip"), cache)
    second = payload(tmp_path / "b" / "ansible_x_payload.zip")
    _out, err = run(second, cache, call="fail")
    assert 'File "%s/pkg/mod.py", line 6, in fail' % second in err, err
    assert "RuntimeError: from the payload" in err and str(tmp_path / "a") not in err


@pytest.mark.parametrize("spoil", ["garbage", "empty", "not code"])
def test_a_cache_entry_that_does_not_load_is_compiled_again_and_replaced(tmp_path, spoil):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    (cache / key()).write_bytes({"garbage": b"\x00\xffnot marshal", "empty": b"",
                                 "not code": marshal.dumps({"a": 1})}[spoil])
    assert run(payload(tmp_path / "ansible_x_payload.zip"), cache)[0] == "compiled"
    assert isinstance(marshal.loads((cache / key()).read_bytes()), type(key.__code__))


def test_only_ansible_payloads_are_cached(tmp_path):
    cache = tmp_path / "cache"
    plant(cache)
    assert run(payload(tmp_path / "app.zip"), cache)[0] == "compiled"
    assert [p.name for p in cache.iterdir()] == [key()]


@pytest.mark.parametrize("mode", [0o770, 0o757])
def test_a_cache_others_can_write_is_neither_read_nor_written(tmp_path, mode):
    cache = tmp_path / "cache"
    plant(cache)
    cache.chmod(mode)
    assert run(payload(tmp_path / "ansible_x_payload.zip"), cache)[0] == "compiled"
    assert [p.name for p in cache.iterdir()] == [key()]


def test_a_cache_that_is_a_link_is_not_followed(tmp_path):
    plant(tmp_path / "real")
    (tmp_path / "cache").symlink_to(tmp_path / "real")
    assert run(payload(tmp_path / "ansible_x_payload.zip"), tmp_path / "cache")[0] == "compiled"


def test_off_and_without_the_hook_python_compiles_as_always(tmp_path):
    cache = tmp_path / "cache"
    plant(cache)
    zipped = payload(tmp_path / "ansible_x_payload.zip")
    assert run(zipped, "off")[0] == "compiled"
    assert run(zipped, cache, hook=False)[0] == "compiled"


def test_the_pth_file_loads_the_hook_and_is_quiet_when_the_checkout_is_gone(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    proc = subprocess.run([sys.executable, str(ACCEL / "gpufabric_bytecode_cache.py"), str(site)],
                          capture_output=True, text=True, check=True)
    pth = site / "gpufabric_bytecode_cache.pth"
    assert proc.stdout.strip() == str(pth)
    check = ("import site, sys, zipimport; site.addsitedir(%r); "
             "print(zipimport._compile_source.__module__)" % str(site))
    loaded = subprocess.run([sys.executable, "-S", "-c", check], capture_output=True, text=True, check=True)
    assert (loaded.stdout.strip(), loaded.stderr) == ("gpufabric_bytecode_cache", "")
    pth.write_text(pth.read_text().replace(str(ACCEL), str(tmp_path / "gone")))
    gone = subprocess.run([sys.executable, "-S", "-c", check], capture_output=True, text=True, check=True)
    assert (gone.stdout.strip(), gone.stderr) == ("zipimport", "")


def test_loading_the_hook_imports_only_what_start_up_needs():
    """Every Python start in the venv loads the hook: the modules only a compile needs are imported by the first
    compile (tempfile alone cost 15 ms of each start, thousands of starts in a rehearsal)."""
    check = ("import sys; sys.path.insert(0, %r); import gpufabric_bytecode_cache; "
             "print(sorted(m for m in ('tempfile', 'hashlib', 'sysconfig', 'functools', 'importlib.util')"
             " if m in sys.modules))" % str(ACCEL))
    loaded = subprocess.run([sys.executable, "-S", "-c", check], capture_output=True, text=True, check=True)
    assert (loaded.stdout.strip(), loaded.stderr) == ("[]", "")


def test_a_real_module_run_fills_the_cache_and_the_next_run_reuses_it(tmp_path):
    """ansible.builtin.ping through the local connection: its payload's sources are cached on the first run, the
    second run adds nothing (every source it compiles was found)."""
    startup = tmp_path / "startup"
    startup.mkdir()
    (startup / "sitecustomize.py").write_text("import sys\nsys.path.insert(0, %r)\nimport gpufabric_bytecode_cache\n"
                                              % str(ACCEL))
    cache = tmp_path / "cache"
    argv = [str(tool("ansible")), "localhost", "-m", "ansible.builtin.ping", "-o",
            "-e", json.dumps({"ansible_python_interpreter": sys.executable})]
    environ = env(tmp_path, GPUFABRIC_BYTECODE_CACHE=str(cache), PYTHONPATH=str(startup))
    first = subprocess.run(argv, capture_output=True, text=True, env=environ, check=False)
    assert first.returncode == 0 and '"ping": "pong"' in first.stdout, first
    entries = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    assert len(entries) > 10  # ansible.module_utils.basic and what it imports
    second = subprocess.run(argv, capture_output=True, text=True, env=environ, check=False)
    assert second.returncode == 0 and '"ping": "pong"' in second.stdout, second
    assert {p.name: p.stat().st_mtime_ns for p in cache.iterdir()} == entries


def test_the_collection_loader_compiles_through_the_cache_once_ansible_imports_it(tmp_path):
    """Ansible's collection loader writes no .pyc: once a program imports it, its ``compile`` is the cache's - and
    nothing of Ansible is imported before the program does."""
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, %r)
        import gpufabric_bytecode_cache as accel
        before = "ansible" in sys.modules
        from ansible.utils.collection_loader import _collection_finder as finder
        print(before, finder.compile is accel.collection_compile)
        first = finder.compile(source=b"def where():\\n    return 'compiled'\\n", filename="/c/plugins/filter/f.py",
                               mode="exec", flags=0, dont_inherit=True)
        print(first.co_filename, first.co_consts[0].co_filename)
        ns = {}
        exec(finder.compile(source=%r, filename="/d/f.py", mode="exec", flags=0, dont_inherit=True), ns)
        print(ns["where"]())
    """) % (str(ACCEL), SOURCE)
    cache = tmp_path / "cache"
    plant(cache)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                          env=dict(os.environ, GPUFABRIC_BYTECODE_CACHE=str(cache)))
    assert proc.stdout.splitlines() == ["False True", "/c/plugins/filter/f.py /c/plugins/filter/f.py", "cached"], proc


def test_a_playbook_run_caches_the_collections_plugins_it_loads(tmp_path):
    """A filter of this collection in a real ansible-playbook run: the plugin_utils it imports (through the collection
    loader) are in the cache afterwards."""
    startup = tmp_path / "startup"
    startup.mkdir()
    (startup / "sitecustomize.py").write_text("import sys\nsys.path.insert(0, %r)\nimport gpufabric_bytecode_cache\n"
                                              % str(ACCEL))
    playbook = tmp_path / "play.yml"
    playbook.write_text(textwrap.dedent("""
        - hosts: localhost
          gather_facts: false
          tasks:
            - ansible.builtin.debug:
                msg: "{{ [] | gpufabric.mlnx.markdown_table([]) }}"
    """))
    cache = tmp_path / "cache"
    proc = subprocess.run([str(tool("ansible-playbook")), str(playbook)], capture_output=True, text=True,
                          env=env(tmp_path, GPUFABRIC_BYTECODE_CACHE=str(cache), PYTHONPATH=str(startup)),
                          check=False)
    assert proc.returncode == 0, proc
    plugin = (REPO / "plugins" / "plugin_utils" / "_filters.py").read_bytes()
    assert (cache / key(plugin)).is_file(), sorted(p.name for p in cache.iterdir())
