"""Helpers for the simulator tests: run the real executables in tests/sim/bin in a subprocess."""
import json
import os
import subprocess
import sys

from _paths import REAL, SIM_BIN


def _python_dir(base):
    """A directory holding `python3` -> the system python3 (what the lab containers run) when it is
    recent enough, else the interpreter running the tests."""
    d = os.path.join(str(base), "pybin")
    link = os.path.join(d, "python3")
    if not os.path.exists(link):
        os.makedirs(d, exist_ok=True)
        target = sys.executable
        sys_py = "/usr/bin/python3"
        if os.path.exists(sys_py):
            ok = subprocess.run([sys_py, "-c", "import sys; sys.exit(sys.version_info < (3, 8))"],
                                capture_output=True, check=False).returncode == 0
            if ok:
                target = sys_py
        try:
            os.symlink(target, link)
        except FileExistsError:
            pass
    return d


class Sim:
    def __init__(self, tmp_path, pycache):
        self.dir = tmp_path
        self.state = str(tmp_path / "state.json")
        self.log = str(tmp_path / "calls.jsonl")
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
        # SIM_BIN first, then a dir whose `python3` is a plain interpreter (the shebang is
        # `#!/usr/bin/env python3`; pyenv shims are slow), then the rest
        env["PATH"] = os.pathsep.join([str(SIM_BIN), _python_dir(pycache), env.get("PATH", "")])
        env["MLXSIM_STATE"] = self.state
        env["MLXSIM_TIME_SCALE"] = "0"
        env["LANG"] = "C"
        for k in ("MLXSIM_MFT_VERSION", "MLXSIM_MSTFLINT_VERSION", "MLXSIM_FAULTS", "MLXSIM_LOG", "MLXSIM_UDEV_RULES",
                  "MLXSIM_ROOT", "MLXSIM_SYSROOT", "MLXSIM_NVIDIA_SERVER", "MLXSIM_NCCL_TESTS_VERSION"):
            env.pop(k, None)
        self.env = env

    def run(self, tool, *args, input=None, env=None, check_rc=None, timeout=60):
        e = dict(self.env)
        if env:
            e.update(env)
        # bytes, decoded here: text=True would turn the tools' "\r" progress output into newlines
        p = subprocess.run([tool] + [str(a) for a in args], input=(input or "").encode(),
                           capture_output=True, env=e, timeout=timeout, check=False)
        p.stdout = p.stdout.decode()
        p.stderr = p.stderr.decode()
        if check_rc is not None:
            assert p.returncode == check_rc, (p.returncode, p.stdout, p.stderr)
        return p

    def out(self, tool, *args, **kw):
        kw.setdefault("check_rc", 0)
        return self.run(tool, *args, **kw).stdout

    def init(self, profile, hostname="node01", *extra, cli=False):
        """Create the host state; in-process unless cli=True or extra CLI options are given."""
        if cli or extra:
            self.run("mlxsim", "init", "--profile", profile, "--hostname", hostname, "--force", *extra, check_rc=0)
            return self
        from mlxsim import state as st
        from mlxsim.tools.admin import build_state
        st.save(build_state(profile, hostname), self.state)
        return self

    def state_data(self):
        with open(self.state) as fh:
            return json.load(fh)

    def card(self, pci):
        for c in self.state_data()["cards"]:
            for f in c["functions"]:
                if f["pci"].endswith(pci):
                    return c
        raise KeyError(pci)

    def calls(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as fh:
            return [json.loads(line) for line in fh if line.strip()]


def real(name):
    """Lines of a real capture without its two comment lines (source / note)."""
    text = (REAL / name).read_text()
    lines = text.split("\n")
    while lines and lines[0].startswith("# "):
        lines.pop(0)
    return lines
