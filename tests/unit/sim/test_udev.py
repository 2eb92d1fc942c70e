"""mlxsim's udev and boot emulation: ATTR matches and assignments on PCI devices, boot-time oneshot units."""
import os

from mlxsim import udev

RULE = ('ACTION=="add|bind", SUBSYSTEM=="pci", ATTR{vendor}=="0x15b3", ATTR{class}=="0x02*", '
        'ATTR{power/control}="on"\n')


def _device(root, address, vendor, klass):
    devdir = root / "sys/devices/pci0000:00" / address
    (devdir / "power").mkdir(parents=True)
    (devdir / "vendor").write_text(vendor + "\n")
    (devdir / "class").write_text(klass + "\n")
    (devdir / "power/control").write_text("auto\n")
    return str(devdir)


def test_attr_rules_write_only_the_matching_devices(tmp_path, monkeypatch):
    rules = tmp_path / "rules.d"
    rules.mkdir()
    (rules / "90-nic-power.rules").write_text(RULE)
    monkeypatch.setenv("MLXSIM_UDEV_RULES", str(rules))
    monkeypatch.setenv("MLXSIM_STATE", str(tmp_path / "state.json"))
    devices = {"0000:18:00.0": _device(tmp_path, "0000:18:00.0", "0x15b3", "0x020000"),
               "0000:40:00.0": _device(tmp_path, "0000:40:00.0", "0x15b3", "0x020700"),
               "0000:a0:00.0": _device(tmp_path, "0000:a0:00.0", "0x15b3", "0x060400"),     # a bridge
               "0000:01:00.0": _device(tmp_path, "0000:01:00.0", "0x8086", "0x020000")}     # Intel
    done = udev.add_pci(devices)
    assert list(done) == [("0000:18:00.0", "ATTR{power/control}=on", "ok"),
                          ("0000:40:00.0", "ATTR{power/control}=on", "ok")]
    control = {a: open(os.path.join(d, "power/control")).read() for a, d in devices.items()}
    assert control == {"0000:18:00.0": "on\n", "0000:40:00.0": "on\n", "0000:a0:00.0": "auto\n",
                       "0000:01:00.0": "auto\n"}
    assert udev.add_pci(devices, action="remove") == []                            # ACTION does not match
    log = (tmp_path / "uevents.log").read_text().splitlines()
    assert log[0] == 'add 0000:18:00.0: ATTR{power/control}="on" ok'


def test_attr_match_on_a_missing_attribute_never_matches(tmp_path):
    event = {"ACTION": "add", "SUBSYSTEM": "pci", "KERNEL": "x", "DEVDIR": str(tmp_path)}
    assert not udev._matches([("ATTR{vendor}", "==", "0x15b3")], event)
    assert udev._matches([("ATTR{vendor}", "!=", "0x15b3")], event)
    assert not udev._matches([("ATTR{../../etc/passwd}", "==", "*")], event)


def test_boot_runs_the_enabled_oneshot_units(tmp_path, monkeypatch):
    monkeypatch.setenv("MLXSIM_STATE", str(tmp_path / "state.json"))
    system = tmp_path / "etc/systemd/system"
    (system / "multi-user.target.wants").mkdir(parents=True)
    out = tmp_path / "governor"
    (system / "gov.service").write_text(
        "[Unit]\nDescription=x\n\n[Service]\nType=oneshot\n"
        "ExecStart=/bin/sh -c 'for g in %s; do echo performance > \"$g\"; done; exit 0'\n\n"
        "[Install]\nWantedBy=multi-user.target\n" % out)
    (system / "daemon.service").write_text("[Service]\nType=simple\nExecStart=/bin/false\n")
    os.symlink(str(system / "gov.service"), str(system / "multi-user.target.wants/gov.service"))
    os.symlink(str(system / "daemon.service"), str(system / "multi-user.target.wants/daemon.service"))
    (system / "off.service").write_text("[Service]\nType=oneshot\nExecStart=/bin/false\n")      # not enabled
    done = udev.boot_units(str(tmp_path))
    assert [(unit, rc) for unit, _cmd, rc in done] == [("gov.service", 0)]
    assert out.read_text() == "performance\n"


def test_reboot_driver_reload_and_reset_run_the_pci_rule_and_boot_units(sim, tmp_path):
    """The platform role's persistence on the simulator: power/control back to auto on a power cycle and a
    level-3 reset, set to on again by the udev rule; the governor unit run at boot."""
    sim.init("cx6dx-roce", cli=True)
    rules = tmp_path / "rules.d"
    rules.mkdir()
    sim.env["MLXSIM_UDEV_RULES"] = str(rules)
    root = sim.dir / "root"
    sysroot = root                                                 # tests: the sysroot is the tree's root
    devices = sorted(p.name for p in (root / "sys/bus/pci/devices").iterdir())

    def control():
        return {d: (root / "sys/bus/pci/devices" / d / "power/control").read_text().strip() for d in devices}
    sim.run("mlxsim", "reboot", check_rc=0)
    assert set(control().values()) == {"auto"}                     # no rule: the boot default
    (rules / "90-nic-power.rules").write_text(RULE)
    wants = sysroot / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    unit = sysroot / "etc/systemd/system/gov.service"
    unit.write_text("[Service]\nType=oneshot\nExecStart=/bin/sh -c 'for g in %s/sys/devices/system/cpu/cpu*/cpufreq/"
                    "scaling_governor; do echo performance > \"$g\"; done'\n" % root)
    os.symlink(str(unit), str(wants / "gov.service"))
    sim.run("mlxsim", "reboot", check_rc=0)
    assert set(control().values()) == {"on"} and devices
    governors = {p.read_text().strip() for p in root.glob("sys/devices/system/cpu/cpu*/cpufreq/scaling_governor")}
    assert governors == {"performance"}
    (root / "sys/bus/pci/devices" / devices[0] / "power/control").write_text("auto\n")
    sim.run("mlxsim", "driver-reload", check_rc=0)                 # "bind" events: the rule runs again
    assert set(control().values()) == {"on"}
    log = (sim.dir / "uevents.log").read_text()
    assert "bind %s: ATTR{power/control}=\"on\" ok" % devices[0] in log and "boot gov.service:" in log
