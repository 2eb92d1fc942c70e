"""A fake of Slurm's client commands for the role tests: sinfo, squeue and scontrol answering as Debian 12's slurm
22.05.8 did when tried by hand (tests/unit/plugins/module_utils/test_slurm.py models the same), from a JSON state;
the real slurmctld is molecule/fabric's."""
import json
import os
import sys

FAKE = r'''#!%(python)s
"""sinfo, squeue and scontrol of a fake slurmctld whose state is the JSON file $FAKESLURM: {node: {"drain", "reason",
"jobs": {id: reads left before it ends, -1 never}}}; every call is appended to $FAKESLURM.calls."""
import json, os, sys
path = os.environ["FAKESLURM"]
state = json.load(open(path))
tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]
open(path + ".calls", "a").write(json.dumps([tool] + args) + "\n")
def tick():
    for node in state.values():
        node["jobs"] = {j: (n - 1 if n > 0 else n) for j, n in node["jobs"].items() if n != 0}
def word(node):
    busy = bool(node["jobs"])
    if node["drain"]:
        return "draining" if busy else "drained"
    return "allocated" if busy else "idle"
if tool == "sinfo":
    tick()
    names = [a.split("=", 1)[1] for a in args if a.startswith("--nodes=")][0].split(",")
    for name in names:
        if name in state:
            print("%%s|%%s|%%s" %% (name, word(state[name]), state[name]["reason"] or "none"))
elif tool == "squeue":
    name = [a.split("=", 1)[1] for a in args if a.startswith("--nodelist=")][0]
    for job in state[name]["jobs"]:
        print(job)
elif tool == "scontrol" and args[:1] == ["update"]:
    fields = dict(a.split("=", 1) for a in args[1:])
    for name in fields["NodeName"].split(","):
        if fields["State"] == "DRAIN":
            state[name].update(drain=True, reason=fields["Reason"])
        elif fields["State"] == "RESUME":
            if not state[name]["drain"]:
                sys.exit("slurm_update error: Invalid node state specified")
            state[name].update(drain=False, reason=None)
else:
    sys.exit("fake slurm: %%s %%s not modelled" %% (tool, args))
json.dump(state, open(path, "w"))
'''


def fake_slurm(tmp_path, nodes, path=None):
    """The fake's commands in ``tmp_path/slurm-bin`` and its state ``nodes`` -> (the environment that puts them first
    on PATH - before ``path``, the environment's PATH by default - the state file)."""
    bin_dir = tmp_path / "slurm-bin"
    bin_dir.mkdir()
    script = bin_dir / "fakeslurm"
    script.write_text(FAKE % {"python": sys.executable})
    script.chmod(0o755)
    for tool in ("sinfo", "squeue", "scontrol"):
        (bin_dir / tool).symlink_to(script)
    state = tmp_path / "slurm.json"
    state.write_text(json.dumps(nodes))
    return {"PATH": "%s:%s" % (bin_dir, path or os.environ["PATH"]), "FAKESLURM": str(state)}, state


def calls(state):
    """Every command the fake answered, as argv lists."""
    return [json.loads(line) for line in (state.parent / "slurm.json.calls").read_text().splitlines()]
