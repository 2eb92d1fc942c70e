"""One simulated host on this machine (tests/sim): a state file, a call log, the environment
that puts the simulated tools first on PATH. Shared by unit tests and benchmarks."""
import hashlib
import json
import os
import subprocess
import sys

from _paths import SIM_BIN


def sim_ready():
    return (SIM_BIN / "mlxsim").exists()


def device_id(family):
    """The PCI device id (e.g. 4129 for ConnectX7) of a family named as ``mlxsim show`` names it."""
    from mlxsim import families  # tests/sim, put on sys.path by tests/unit/conftest.py
    return families.FAMILIES[family]["dev_id"]


class SimHost:
    def __init__(self, tmp_path, profile="dgx-h100", hostname="gpu-node-01", time_scale="0", mft_version=None,
                 init_args=()):
        """``init_args``: more words for ``mlxsim init`` (e.g. ``--mst-started``)."""
        self.tmp = tmp_path
        self.log = tmp_path / "calls.jsonl"
        # The simulated tools are `#!/usr/bin/env python3` scripts: let python3 be the running
        # interpreter (a venv's), not a pyenv shim that doubles every call's start-up.
        here = os.path.dirname(sys.executable)
        path = [str(SIM_BIN)] + ([here] if os.path.exists(os.path.join(here, "python3")) else [])
        self.env = {"PATH": os.pathsep.join(path + [os.environ.get("PATH", "")]),
                    "MLXSIM_STATE": str(tmp_path / "state.json"), "MLXSIM_TIME_SCALE": str(time_scale),
                    "MLXSIM_LOG": str(self.log)}
        args = ["init", "--profile", profile, "--hostname", hostname]
        if mft_version:
            args += ["--mft-version", mft_version]
        self.mlxsim(*args, *init_args)

    def apply_env(self, monkeypatch=None):
        """Put the simulator's environment in place (for in-process Runner calls)."""
        for key, value in self.env.items():
            if monkeypatch is not None:
                monkeypatch.setenv(key, value)
            else:
                os.environ[key] = value

    def mlxsim(self, *args):
        return subprocess.run([str(SIM_BIN / "mlxsim")] + [str(a) for a in args], env=dict(os.environ, **self.env),
                              check=True, capture_output=True, text=True).stdout

    def run(self, *argv):
        """Run a simulated tool as a person would; returns CompletedProcess."""
        return subprocess.run([str(a) for a in argv], env=dict(os.environ, **self.env), check=False,
                              capture_output=True, text=True)

    def cards(self):
        return json.loads(self.mlxsim("show"))["cards"]

    def mkimage(self, psid, version, device_id):
        path = self.tmp / ("fw-%s-%s.bin" % (psid, version))
        self.mlxsim("mkimage", "--psid", psid, "--version", version, "--device-id", device_id, "-o", path)
        return {"psid": psid, "version": version, "path": str(path),
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}

    def newer_images(self, **extra_by_psid):
        """One image per PSID on this host, ``<major>.43.1014`` (newer than every profile's firmware);
        ``extra_by_psid``: more keys for that PSID's entry (e.g. ``from_psids``)."""
        specs, seen = [], set()
        for card in self.cards():
            if card["psid"] not in seen:
                seen.add(card["psid"])
                version = "%s.43.1014" % card["fw"]["burned"].split(".")[0]
                spec = self.mkimage(card["psid"], version, device_id(card["family"]))
                spec.update(extra_by_psid.get(card["psid"], {}))
                specs.append(spec)
        return specs

    def calls(self, tool=None):
        """The logged invocations (dicts with tool, argv, start, end, rc)."""
        if not self.log.exists():
            return []
        entries = [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]
        return [e for e in entries if tool is None or e["tool"] == tool]

    def argvs(self, tool=None):
        """The argv lists of the logged invocations (of ``tool`` only, when given)."""
        return [e["argv"] for e in self.calls(tool)]

    def burns(self, tool):
        """The logged ``<tool> ... burn`` argv lists, sorted."""
        return sorted(argv for argv in self.argvs(tool) if argv[-1] == "burn")

    def clear_calls(self):
        self.log.write_text("")
