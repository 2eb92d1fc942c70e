"""Benchmarks on the simulated tools (tests/sim), reported as ratios measured in one run.

Nothing here asserts a time: each figure is printed with its target (issue 2: calls within the budget,
wall time <= 1.3 x one query or one burn, net of the simulator's own process start-up) and whether it
is met, and all is written to tests/output/bench.json.

  no-op        mlx_info + mlxconfig on a dgx-h100 host whose NICs already have the profile:
               tool invocations vs the budget (1 discovery + 1 query per device), and wall time
               as a multiple of ONE device query (devices are queried in parallel).
  firmware     8 compute NICs burned by mlx_firmware (one flint per device, in parallel), wall
               time as a multiple of ONE burn; and the same 8 burns by one mlxfwmanager -u call
               (it burns one device after another) for comparison.
"""
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "unit")]
# importing conftest makes ansible_collections.gpufabric.mlnx importable
from conftest import REPO  # noqa: E402,F401  # pylint: disable=unused-import
from _simhost import SimHost  # noqa: E402
from _report import at_most, command_line, publish, smoke_or  # noqa: E402

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _devices, _firmware, _info  # noqa: E402
from ansible_collections.gpufabric.mlnx.plugins.module_utils._mlxconfig import converge  # noqa: E402
from ansible_collections.gpufabric.mlnx.plugins.module_utils._runner import Runner  # noqa: E402

PROFILE = {"LINK_TYPE_P1": "ETH", "SRIOV_EN": False, "ADVANCED_PCI_SETTINGS": True}
COMPUTE_PN = "MCX75310AAS-NEAT"


def timed(func):
    start = time.monotonic()
    result = func()
    return result, time.monotonic() - start


def bench_noop(tmp, scale):
    host = SimHost(tmp, "dgx-h100", time_scale=scale)
    host.apply_env()
    runner = Runner("mft")
    compute = _devices.select([], [COMPUTE_PN], _devices.discover(runner))
    converge(runner, compute, PROFILE)            # bring it to the profile first
    host.mlxsim("reboot")

    _res, one_query = timed(lambda: host.run("mlxconfig", "-d", compute[0], "-e", "q"))
    host.clear_calls()
    info_runner = Runner("mft")
    _res, info_wall = timed(lambda: _info.gather(info_runner, host=info_runner.host))   # as mlx_info does
    info_calls = [c["tool"] for c in host.calls()]
    host.clear_calls()

    def noop():
        found = _devices.discover(runner)
        return converge(runner, _devices.select([], [COMPUTE_PN], found), PROFILE)
    results, cfg_wall = timed(noop)
    cfg_calls = [c["tool"] for c in host.calls()]
    assert not any(r["changed"] for _d, r, _e in results), "the no-op run changed something"
    return {
        "devices": len(compute),
        "one_device_query_s": round(one_query, 3),
        "mlx_info": {"wall_s": round(info_wall, 3), "ratio_to_one_query": round(info_wall / one_query, 2),
                     "calls": {t: info_calls.count(t) for t in sorted(set(info_calls))}},
        "mlxconfig_noop": {"wall_s": round(cfg_wall, 3), "ratio_to_one_query": round(cfg_wall / one_query, 2),
                           "calls": {t: cfg_calls.count(t) for t in sorted(set(cfg_calls))},
                           "budget": "1 discovery + %d queries" % len(compute)},
    }


def bench_firmware(tmp, scale):
    host = SimHost(tmp, "dgx-h100", time_scale=scale)
    host.apply_env()
    runner = Runner("mft")
    compute = _devices.select([], [COMPUTE_PN], _devices.discover(runner))
    image = host.mkimage("MT_0000000838", "28.43.1014", 4129)
    images = _firmware.normalize_images([image])

    # One burn on its own (a different host, same latency model).
    solo = SimHost(Path(tempfile.mkdtemp(dir=tmp)), "dgx-h100", time_scale=scale)
    _res, one_burn = timed(lambda: solo.run("flint", "-d", compute[0], "-i", image["path"], "-y", "burn"))

    host.clear_calls()
    results, wall = timed(lambda: _firmware.converge(runner, compute, images))
    burned = sum(1 for _d, r, e in results if e is None and r["changed"])

    seq = SimHost(Path(tempfile.mkdtemp(dir=tmp)), "dgx-h100", time_scale=scale)
    _res, fwmanager = timed(lambda: seq.run("mlxfwmanager", "-u", "-i", image["path"], "-y"))
    return {
        "devices_burned": burned,
        "one_burn_s": round(one_burn, 3),
        "mlx_firmware": {"wall_s": round(wall, 3), "ratio_to_one_burn": round(wall / one_burn, 2)},
        "mlxfwmanager_sequential": {"wall_s": round(fwmanager, 3),
                                    "ratio_to_one_burn": round(fwmanager / one_burn, 2)},
    }


def _net(measured, baseline, key, unit_key, unit_base_key):
    """The ratio with the simulator's own process start-up (the same run at latency 0) taken out."""
    top = measured[key]["wall_s"] - baseline[key]["wall_s"]
    unit = measured[unit_key] - baseline[unit_base_key]
    return round(top / unit, 2) if unit > 0 else None


def main():
    # Real-life latencies (query 1.5 s, burn 90 s) scaled. Each simulated tool call is also a
    # Python process (~0.2-0.3 s of CPU here, 2 cores): every benchmark runs a second time at
    # latency 0, and the ratio net of that start-up is reported beside the raw one.
    # (a smoke run: a query 0.075 s, a burn 0.9 s)
    query_scale = float(os.environ.get("BENCH_QUERY_SCALE", smoke_or("1.0", "0.05")))   # a query takes 1.5 s
    burn_scale = float(os.environ.get("BENCH_BURN_SCALE", smoke_or("0.1", "0.01")))     # a burn takes 9 s
    out = {"scales": {"query": query_scale, "burn": burn_scale}, "load_average": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        for name, func, scale in (("noop", bench_noop, query_scale), ("firmware", bench_firmware, burn_scale)):
            for label, value in ((name + "_at_latency_0", 0), (name, scale)):
                work = Path(tmp) / label
                work.mkdir()
                out[label] = func(work, value)
    noop, base = out["noop"], out["noop_at_latency_0"]
    for key in ("mlx_info", "mlxconfig_noop"):
        noop[key]["ratio_net_of_simulator_startup"] = _net(noop, base, key, "one_device_query_s", "one_device_query_s")
    fw, base = out["firmware"], out["firmware_at_latency_0"]
    for key in ("mlx_firmware", "mlxfwmanager_sequential"):
        fw[key]["ratio_net_of_simulator_startup"] = _net(fw, base, key, "one_burn_s", "one_burn_s")
    publish("bench", out, targets(out))


def targets(out):
    noop, fw = out["noop"], out["firmware"]
    budget = 1 + noop["devices"]
    return [at_most("no-op mlxconfig: tool calls (1 discovery + 1 query per device)",
                    sum(noop["mlxconfig_noop"]["calls"].values()), budget),
            at_most("no-op mlx_info: wall / one query, net of simulator start-up",
                    noop["mlx_info"]["ratio_net_of_simulator_startup"], 1.3),
            at_most("no-op mlxconfig: wall / one query, net of simulator start-up",
                    noop["mlxconfig_noop"]["ratio_net_of_simulator_startup"], 1.3),
            at_most("firmware on %d devices: wall / one burn, net of simulator start-up" % fw["devices_burned"],
                    fw["mlx_firmware"]["ratio_net_of_simulator_startup"], 1.3)]


if __name__ == "__main__":
    command_line(__doc__)
    main()
