# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A bytecode cache for the modules Ansible runs in the tests: loaded by a ``.pth`` file in the interpreters that
run them (the development venv, ``make venv``; the lab containers' python3, tests/lab/lab.py).

Every module run is an AnsiballZ payload: a zip of the module and the module_utils it imports, put first on
``sys.path``. Python imports from a zip with ``zipimport``, which finds no ``.pyc`` in Ansible's zips and compiles
every source file on every run - ansible.module_utils.basic and its imports, again for each task on each host
(~0.1 CPU-s a module run here). This hook keeps what ``zipimport`` compiles from a payload, keyed by the
source's sha256 and the interpreter's bytecode magic, in a private directory, and gives the next run the same code
object, its file names set to the new payload's paths: the code that runs is the same, byte for byte, as the code
``compile`` makes; only the compiling is done once.

The same cache serves Ansible's collection loader, which compiles a collection's Python files without a ``.pyc``
in every worker process it forks: once a program imports that loader, its ``compile`` is ``collection_compile``.

Nothing outside an Ansible payload (``*_payload.zip``) or a collection is touched; the cache is used only in a
directory this user owns and no one else can write (else the hook compiles, as Python does); a cache file that
does not load is compiled again. ``GPUFABRIC_BYTECODE_CACHE``: the directory (default
``<tmp>/gpufabric-bytecode-<uid>``); ``off`` switches the hook off."""
import os
import stat
import sys
import types
import zipimport

# Every Python start in the venv imports this module (the .pth file): what only a compile needs (hashlib, marshal,
# tempfile, ...) is imported there, not here - importing tempfile at start-up cost 15 ms of each of the thousands of
# module and simulator runs of a rehearsal.

PAYLOAD = "_payload.zip"
COLLECTION_LOADER = "ansible.utils.collection_loader._collection_finder"
_TAG = "<gpufabric-bytecode-cache>"
_compile = getattr(zipimport, "_compile_source", None)


def cache_dir():
    """The cache directory, or None when the hook is off."""
    setting = os.environ.get("GPUFABRIC_BYTECODE_CACHE", "")
    if setting == "off":
        return None
    import tempfile
    return setting or os.path.join(tempfile.gettempdir(), "gpufabric-bytecode-%d" % os.getuid())


_PRIVATE = {}


def _private(path):
    """Make ``path`` (0700) if needed; True when it is a directory of this user that no one else can write. Once
    per directory and process: a module run compiles dozens of files."""
    if path not in _PRIVATE:
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            st = os.lstat(path)
        except OSError:
            _PRIVATE[path] = False
        else:
            _PRIVATE[path] = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022
    return _PRIVATE[path]


def _restamp(code, filename):
    """``code`` and every code object inside it with ``co_filename`` = ``filename`` (tracebacks name the payload)."""
    consts = tuple(_restamp(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _cached(source, filename, compile_it):
    """The code of ``source`` from the cache (``filename`` stamped in), else ``compile_it()`` - kept for the next
    time; None when the cache is off or cannot be trusted."""
    where = cache_dir()
    if where is None or not _private(where):
        return None
    import hashlib
    import importlib.util
    import marshal
    import tempfile
    data = source.encode("utf-8", "surrogateescape") if isinstance(source, str) else bytes(source)
    key = hashlib.sha256(data).hexdigest() + "-" + importlib.util.MAGIC_NUMBER.hex()
    path = os.path.join(where, key)
    try:
        with open(path, "rb") as cached:
            code = marshal.load(cached)
        if not isinstance(code, types.CodeType):
            raise ValueError(path)
    except (OSError, EOFError, ValueError, TypeError):
        code = compile_it()
        try:
            fd, tmp = tempfile.mkstemp(dir=where, prefix=key + ".")
            with os.fdopen(fd, "wb") as out:
                marshal.dump(code, out)
            os.replace(tmp, path)
        except OSError:
            pass
    return _restamp(code, filename)


def compile_source(pathname, source):
    """zipimport's ``_compile_source``, with the cache for Ansible's payloads."""
    if PAYLOAD in pathname:
        code = _cached(source, pathname, lambda: _compile(_TAG, source))
        if code is not None:
            return code
    return _compile(pathname, source)


def collection_compile(source, filename, mode, flags=0, dont_inherit=False, optimize=-1):
    """``compile`` as Ansible's collection loader calls it for a collection's Python file, with the cache: that loader
    writes no ``.pyc``, so every worker process compiled the plugins and plugin_utils a task imports again."""
    if mode == "exec" and not flags and optimize == -1 and isinstance(source, (str, bytes)):
        code = _cached(source, filename, lambda: compile(source, _TAG, mode, flags, dont_inherit))
        if code is not None:
            return code
    return compile(source, filename, mode, flags, dont_inherit, optimize)


class _CollectionLoaderHook:
    """A meta path finder for one module, Ansible's collection loader: once it is executed, its ``compile`` is
    ``collection_compile``. Nothing of Ansible is imported before a program imports it itself."""

    def find_spec(self, fullname, path, target=None):
        if fullname != COLLECTION_LOADER:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        run = getattr(spec.loader, "exec_module", None)
        if run is None:
            return spec

        def exec_module(module):
            run(module)
            module.compile = collection_compile  # the module's global shadows the builtin it calls

        spec.loader.exec_module = exec_module
        return spec


def install():
    """Put the hooks in place (the ``.pth`` file imports this module); a Python without zipimport's hook point is
    left as it is."""
    if _compile is not None:
        zipimport._compile_source = compile_source
    if not any(isinstance(f, _CollectionLoaderHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _CollectionLoaderHook())


def write_pth(site=None):
    """Write ``gpufabric_bytecode_cache.pth`` into ``site`` (default: this interpreter's purelib): this module's
    directory on ``sys.path``, then its import. Returns the file's path."""
    import sysconfig
    site = site or sysconfig.get_paths()["purelib"]
    os.makedirs(site, exist_ok=True)
    pth = os.path.join(site, "gpufabric_bytecode_cache.pth")
    here = os.path.abspath(__file__)
    with open(pth, "w", encoding="utf-8") as out:
        # a directory line, then an import line that is skipped when the checkout is gone (no error at each start)
        out.write("%s\nimport os; os.path.isfile(%r) and __import__('gpufabric_bytecode_cache')\n"
                  % (os.path.dirname(here), here))
    return pth


install()

if __name__ == "__main__":
    # python3 gpufabric_bytecode_cache.py [SITE-DIR]: install the .pth file for that interpreter
    print(write_pth(sys.argv[1] if len(sys.argv) > 1 else None))
