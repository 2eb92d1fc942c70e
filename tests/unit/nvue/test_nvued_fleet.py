"""nvued --fleet: one process serving many switches (the fleet twin, tests/twin), each with its own state, port
and revisions; a configuration applied on one is on that one only."""
import json
import subprocess
import sys

from nvue_helpers import BIN, Switch


def test_one_process_serves_each_switch_on_its_own_port_with_its_own_state(tmp_path):
    fleet = tmp_path / "leaves"
    switches = {name: Switch(fleet / name, name, ports="swp1-2") for name in ("leaf-a", "leaf-b")}
    proc = subprocess.Popen([sys.executable, str(BIN / "nvued"), "--fleet", str(fleet), "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "2 switches listening" in proc.stdout.readline()
        ports = json.loads((fleet / "ports.json").read_text())
        assert sorted(ports) == ["leaf-a", "leaf-b"] and len(set(ports.values())) == 2
        for name, sw in switches.items():
            sw.port = ports[name]
            assert sw.get("/system")["hostname"] == name
        a = switches["leaf-a"]
        rid = a.new_rev()
        a.ok("PATCH", "/?rev=%s" % rid, {"interface": {"swp1": {"link": {"mtu": 9000}}}})
        assert a.apply(rid)["state"] in ("applied", "applied_and_saved")
        assert a.get("/interface/swp1/link?rev=applied")["mtu"] == 9000
        assert switches["leaf-b"].get("/interface/swp1/link?rev=applied").get("mtu") == 9216  # its default, untouched
    finally:
        proc.terminate()
        proc.wait(10)
