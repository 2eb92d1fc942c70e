# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Power policy of a GPU server, the parts Linux owns: PCIe ASPM, NIC runtime power management,
CPU frequency governor, and the kernel command line the running kernel booted with.

Read (sysfs and procfs through a ``_host.Host``, whose ``root`` tests point at a simulated tree):

- ``/sys/module/pcie_aspm/parameters/policy`` - ``[default] performance powersave powersupersave``,
  the active policy in brackets (drivers/pci/pcie/aspm.c ``pcie_aspm_get_policy``);
- every PCI function of NVIDIA networking (``vendor`` 0x15b3, ``class`` 0x02xxxx: Ethernet 0x020000,
  InfiniBand 0x020700) under ``/sys/bus/pci/devices``, its ``power/control`` (``auto``: runtime PM
  may suspend it; ``on``: never - Documentation/ABI/testing/sysfs-devices-power);
- every CPU's ``cpufreq/scaling_governor`` and ``scaling_available_governors``;
- ``/proc/cmdline``.

Decide (pure): ``desired_state`` checks the options (bad input raises InvalidValue naming the option
and what is allowed); ``plan(current, desired)`` lists each setting that differs with the sysfs writes
that change it. Write only those, read again, fail naming the path when a value did not take.

With ``pcie_aspm=off`` on the running kernel's command line ASPM is off for every link and the
kernel refuses policy writes (EPERM): the policy is then left alone. A write refused otherwise means
the firmware kept ASPM control (ACPI FADT/_OSC): the BIOS setting is the fix - reported, not failed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

from ansible_collections.gpufabric.mlnx.plugins.module_utils import _bootloader
from ansible_collections.gpufabric.mlnx.plugins.module_utils._bootloader import KERNEL_ARG_ALLOWED, KERNEL_ARG_RE, lacking
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, MlnxError, Refused
from ansible_collections.gpufabric.mlnx.plugins.module_utils._devices import discover
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
from ansible_collections.gpufabric.mlnx.plugins.module_utils._info import pcie_status
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.sysfs import parse_aspm_policy
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import kind_of

NVIDIA_VENDOR = "0x15b3"
ASPM_POLICIES = ("default", "performance", "powersave", "powersupersave")
ASPM_POLICY_PATH = "/sys/module/pcie_aspm/parameters/policy"
PCI_DEVICES = "/sys/bus/pci/devices"
CPU_DIR = "/sys/devices/system/cpu"
CMDLINE = "/proc/cmdline"
GOVERNOR_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}\Z", re.ASCII)
CPU_RE = re.compile(r"^cpu(\d+)\Z", re.ASCII)


def _bad(option, value, why, allowed):
    return InvalidValue("platform_power: %s=%r %s; allowed: %s. Nothing was changed." % (option, value, why, allowed),
                        parameter=option, allowed=allowed)


def desired_state(params: Mapping) -> dict:
    """The options -> ``{"aspm_policy", "nic_power_control", "cpu_governor", "kernel_args"}`` (None: leave)."""
    if not isinstance(params, dict):
        raise InvalidValue("platform_power: the options must be a mapping, not %r" % (params,), parameter="options")
    out = {"aspm_policy": None, "nic_power_control": None, "cpu_governor": None, "kernel_args": []}
    policy = params.get("aspm_policy")
    if policy is not None:
        if not isinstance(policy, str) or policy.strip().lower() not in ASPM_POLICIES:
            raise _bad("aspm_policy", policy, "is not a PCIe ASPM policy", ", ".join(ASPM_POLICIES))
        out["aspm_policy"] = policy.strip().lower()
    runtime_pm = params.get("nic_runtime_pm")
    if runtime_pm is not None:
        if not isinstance(runtime_pm, bool):
            raise _bad("nic_runtime_pm", runtime_pm, "is not a boolean", "true (power/control auto), "
                       "false (power/control on: never suspended)")
        out["nic_power_control"] = "auto" if runtime_pm else "on"
    governor = params.get("cpu_governor")
    if governor is not None:
        if not isinstance(governor, str) or not GOVERNOR_RE.match(governor.strip()):
            raise _bad("cpu_governor", governor, "is not a cpufreq governor name", "a governor the CPUs list in "
                       "scaling_available_governors, e.g. performance")
        out["cpu_governor"] = governor.strip()
    args = params.get("kernel_args") or []
    if not isinstance(args, (list, tuple)):
        raise _bad("kernel_args", args, "is not a list", "a list of kernel parameters such as pcie_aspm=off")
    for index, arg in enumerate(args):
        if not isinstance(arg, str) or not KERNEL_ARG_RE.fullmatch(arg):
            raise _bad("kernel_args[%d]" % index, arg, "is not one kernel parameter", KERNEL_ARG_ALLOWED)
    out["kernel_args"] = list(args)
    return out


# ---------------------------------------------------------------------------------- reading

def _listdir(reader, path):
    try:
        return sorted(os.listdir(reader.path(path)))
    except OSError:
        return []


def nic_functions(reader: Host) -> list[dict]:
    """``[{"pci", "class", "power_control"}]`` of every NVIDIA network PCI function, in PCI order."""
    out = []
    for pci in _listdir(reader, PCI_DEVICES):
        base = "%s/%s" % (PCI_DEVICES, pci)
        if (reader.read_sys(base + "/vendor") or "").strip().lower() != NVIDIA_VENDOR:
            continue
        klass = (reader.read_sys(base + "/class") or "").strip().lower()
        if not klass.startswith("0x02"):
            continue
        out.append({"pci": pci, "class": klass, "power_control": reader.read_sys(base + "/power/control")})
    return out


def cpus(reader: Host) -> list[dict]:
    """``[{"cpu", "governor", "available"}]`` of every CPU with cpufreq, in CPU order."""
    out = []
    names = [n for n in _listdir(reader, CPU_DIR) if CPU_RE.match(n)]
    for name in sorted(names, key=lambda n: int(CPU_RE.match(n).group(1))):
        base = "%s/%s/cpufreq" % (CPU_DIR, name)
        governor = reader.read_sys(base + "/scaling_governor")
        if governor is None:
            continue
        out.append({"cpu": name, "governor": governor.strip(),
                    "available": (reader.read_sys(base + "/scaling_available_governors") or "").split()})
    return out


def read_state(reader: Host) -> dict:
    """``{"aspm_policy", "aspm_available", "cmdline", "nics", "cpus"}`` as the host has them now."""
    policy, available = parse_aspm_policy(reader.read_sys(ASPM_POLICY_PATH))
    cmdline = (reader.read_sys(CMDLINE) or "").split()
    return {"aspm_policy": policy, "aspm_available": available, "cmdline": cmdline,
            "nics": nic_functions(reader), "cpus": cpus(reader)}


# ---------------------------------------------------------------------------------- deciding

def aspm_off_by_cmdline(cmdline: Sequence[str] | None) -> bool:
    """``pcie_aspm=off`` is among the words of the running kernel's command line."""
    return "pcie_aspm=off" in (cmdline or [])


def missing_kernel_args(cmdline: Sequence[str], wanted: Sequence[str]) -> list[str]:
    """The wanted kernel parameters the running kernel did not boot with (``name=value`` exact, ``name`` alone
    present in any form) - the same rule as a boot entry's (``_bootloader.lacking``)."""
    return lacking(cmdline, wanted)


def plan(current: Mapping, desired: Mapping) -> dict:
    """Pure: ``{"changes": {setting: {"before", "after"}}, "writes": [{"write", "value"}], "notes": [...]}``.

    Settings: ``aspm_policy``, ``power/control <pci>`` per NIC function, ``scaling_governor <cpuN>`` per CPU.
    Raises Refused (nothing written) for a governor or policy this host does not offer.
    """
    changes, writes, notes = {}, [], []
    policy = desired.get("aspm_policy")
    if policy is not None:
        if current.get("aspm_policy") is None:
            notes.append("%s is not there: the kernel has no PCIe ASPM support (CONFIG_PCIEASPM), nothing to set"
                         % ASPM_POLICY_PATH)
        elif aspm_off_by_cmdline(current.get("cmdline")):
            notes.append("ASPM is off by the kernel command line (pcie_aspm=off); the policy is left as it is")
        elif policy not in current.get("aspm_available", []):
            raise Refused("platform_power: aspm_policy=%s is not offered by this kernel; %s lists: %s. Nothing was "
                          "changed." % (policy, ASPM_POLICY_PATH, ", ".join(current["aspm_available"])),
                          parameter="aspm_policy", allowed=current["aspm_available"])
        elif current["aspm_policy"] != policy:
            changes["aspm_policy"] = {"before": current["aspm_policy"], "after": policy}
            writes.append({"write": ASPM_POLICY_PATH, "value": policy})
    control = desired.get("nic_power_control")
    if control is not None:
        for nic in current.get("nics", []):
            path = "%s/%s/power/control" % (PCI_DEVICES, nic["pci"])
            if nic["power_control"] is None:
                raise Refused("platform_power: %s is not there (no runtime PM control for %s). Nothing was changed."
                              % (path, nic["pci"]), device=nic["pci"], parameter="nic_runtime_pm")
            if nic["power_control"] != control:
                changes["power/control %s" % nic["pci"]] = {"before": nic["power_control"], "after": control}
                writes.append({"write": path, "value": control})
    governor = desired.get("cpu_governor")
    if governor is not None:
        lacking = [c["cpu"] for c in current.get("cpus", []) if governor not in c["available"]]
        if lacking:
            offered = sorted({g for c in current["cpus"] if c["cpu"] in lacking for g in c["available"]})
            raise Refused("platform_power: cpu_governor=%s is not offered by %s (scaling_available_governors: %s). "
                          "Nothing was changed." % (governor, _span(lacking), ", ".join(offered) or "none"),
                          device=lacking, parameter="cpu_governor", allowed=offered)
        if not current.get("cpus"):
            notes.append("no CPU has cpufreq (no scaling_governor): the governor is left to the firmware")
        for cpu in current.get("cpus", []):
            if cpu["governor"] != governor:
                changes["scaling_governor %s" % cpu["cpu"]] = {"before": cpu["governor"], "after": governor}
                writes.append({"write": "%s/%s/cpufreq/scaling_governor" % (CPU_DIR, cpu["cpu"]), "value": governor})
    return {"changes": changes, "writes": writes, "notes": notes}


def _span(names):
    """cpu0, cpu1, cpu2, cpu5 -> 'cpu0-cpu2, cpu5'."""
    nums = sorted(int(CPU_RE.match(n).group(1)) for n in names if CPU_RE.match(n))
    parts, start = [], None
    for index, num in enumerate(nums):
        if start is None:
            start = num
        if index + 1 == len(nums) or nums[index + 1] != num + 1:
            parts.append("cpu%d" % start if start == num else "cpu%d-cpu%d" % (start, num))
            start = None
    return ", ".join(parts)


# ---------------------------------------------------------------------------------- the whole job

def _public(state):
    governors = sorted({c["governor"] for c in state["cpus"]})
    return {"aspm_policy": state["aspm_policy"],
            "nic_power_control": {n["pci"]: n["power_control"] for n in state["nics"]},
            "cpu_governors": governors, "cmdline": " ".join(state["cmdline"])}


def converge(reader: Host, params: Mapping, *, check_mode: bool = False) -> dict:
    """Everything the module does. Returns ``{"changed", "changes", "writes", "before", "after", "nics",
    "kernel_args_missing", "reboot_required", "notes", "warnings"}``."""
    desired = desired_state(params)
    current = read_state(reader)
    decided = plan(current, desired)
    warnings = []
    after = current
    if decided["writes"] and not check_mode:
        for step in decided["writes"]:
            try:
                reader.write_sys(step["write"], step["value"])
            except PermissionError as exc:
                if step["write"] != ASPM_POLICY_PATH:
                    raise MlnxError("platform_power: cannot write %s to %s: %s" % (step["value"], step["write"], exc),
                                    parameter=step["write"]) from exc
                warnings.append("the kernel refuses to change the PCIe ASPM policy (%s): the firmware kept ASPM "
                                "control - disable ASPM in the BIOS (platform role, Redfish) or boot with "
                                "pcie_aspm=off" % exc)
            except OSError as exc:
                raise MlnxError("platform_power: cannot write %s to %s: %s" % (step["value"], step["write"], exc),
                                parameter=step["write"]) from exc
        after = read_state(reader)
        still = plan(after, desired)["changes"]
        if warnings:
            still.pop("aspm_policy", None)
        if still:
            raise MlnxError("platform_power: did not take: %s" % "; ".join(
                "%s is %s, not %s" % (k, v["before"], v["after"]) for k, v in sorted(still.items())),
                parameter=sorted(still)[0])
    elif decided["writes"]:
        after = dict(current)
        after["aspm_policy"] = decided["changes"].get("aspm_policy", {}).get("after", current["aspm_policy"])
        control = desired.get("nic_power_control")
        after["nics"] = [dict(n, power_control=control or n["power_control"]) for n in current["nics"]]
        governor = desired.get("cpu_governor")
        after["cpus"] = [dict(c, governor=governor or c["governor"]) for c in current["cpus"]]
    missing = missing_kernel_args(current["cmdline"], desired["kernel_args"])
    return {"changed": bool(decided["changes"]), "changes": decided["changes"], "writes": decided["writes"],
            "before": _public(current), "after": _public(after), "nics": [n["pci"] for n in current["nics"]],
            "kernel_args_missing": missing, "reboot_required": bool(missing), "notes": decided["notes"],
            "warnings": warnings}


def _grouped(changes):
    """Change keys grouped: ``aspm_policy``, ``power/control of 0000:18:00.0, ...``, ``scaling_governor of cpu0-cpu7``."""
    groups = {}
    for key in sorted(changes):
        kind, _sep, what = key.partition(" ")
        groups.setdefault(kind, []).append(what)
    out = []
    for kind, whats in sorted(groups.items()):
        if not whats[0]:
            out.append(kind)
        elif kind == "scaling_governor":
            out.append("%s of %s" % (kind, _span(whats)))
        else:
            out.append("%s of %s" % (kind, ", ".join(whats)))
    return out


def summary(result: Mapping, *, check_mode: bool) -> str:
    """One line for the task's ``msg``: what was (would be) changed, what needs a reboot, notes and warnings."""
    parts = []
    if result["changes"]:
        parts.append("%s %s" % ("would change" if check_mode else "changed", "; ".join(_grouped(result["changes"]))))
    else:
        parts.append("power policy already as wanted")
    if result["kernel_args_missing"]:
        parts.append("the running kernel lacks %s: a reboot is needed" % " ".join(result["kernel_args_missing"]))
    return "; ".join(parts + result["notes"] + result["warnings"])


# ---------------------------------------------------------------------------------- deciding: PCIe links

def pcie_degraded(devices: Sequence[Mapping] | None) -> list[str]:
    """One sentence per device whose PCIe link trained below its capability (``pcie.degraded``), in order:
    ``ADDRESS (slot SLOT, PART): expected SPEED xWIDTH, running SPEED xWIDTH`` (``?`` for an unknown slot or part)."""
    out = []
    if devices is not None and not isinstance(devices, list):
        raise InvalidValue("pcie_degraded: devices must be the devices list of gpufabric.mlnx.mlx_info, not %s"
                           % kind_of(devices), parameter="devices", allowed="a list of devices")
    for dev in devices or []:
        pcie = dev.get("pcie") if isinstance(dev, dict) else None
        if not isinstance(pcie, dict) or not pcie.get("degraded"):
            continue
        cap, sta = pcie.get("lnkcap"), pcie.get("lnksta")
        cap, sta = cap if isinstance(cap, dict) else {}, sta if isinstance(sta, dict) else {}
        out.append("%s (slot %s, %s): expected %s x%s, running %s x%s" % (
            dev.get("address"), dev.get("physical_slot") or "?", dev.get("part_number") or "?",
            cap.get("speed"), cap.get("width"), sta.get("speed"), sta.get("width")))
    return out


def pcie_links(runner) -> list[dict]:
    """``[{"address", "physical_slot", "part_number", "pcie"}]`` of every NVIDIA NIC function, from one lspci call
    (what gpufabric.mlnx.mlx_info reports of each device's link)."""
    return [{"address": dev["address"], "physical_slot": dev.get("physical_slot"), "part_number": dev.get("part_number"),
             "pcie": pcie_status(dev.get("lnkcap"), dev.get("lnksta"))} for dev in discover(runner)]


def pcie_check(host: str, devices: Sequence[Mapping]) -> str:
    """The check's line for ``devices`` at full speed and width; Refused naming every degraded link otherwise."""
    slow = pcie_degraded(list(devices))
    if slow:
        raise Refused("%s: %d PCIe link(s) trained below the card's capability - %s. Reseat the card or move it to a "
                      "slot of its generation and width (a 400G card needs PCIe 5.0 x16); check the BIOS slot settings."
                      % (host, len(slow), "; ".join(slow)), device=[s.split(" ", 1)[0] for s in slow],
                      parameter="pcie_check")
    return "%s: %d NVIDIA PCIe links at full speed and width" % (host, len(devices))


# ---------------------------------------------------------------------------------- writing: files kept at boot

# What may go into the files written below (a udev rule, a systemd unit's shell command line): nothing a shell, udev
# or systemd substitutes - no space, quote, backslash, '$', '%', glob character or newline.
SAFE_PATH_RE = re.compile(r"/[A-Za-z0-9_.+/-]*", re.ASCII)
SAFE_PATH_ALLOWED = "an absolute path of ASCII letters, digits and _ . + - /"
GOVERNOR_ALLOWED = "a cpufreq governor name (lower-case ASCII letters, digits, _ and -, e.g. performance)"
FILE_HEAD = "# gpufabric.mlnx platform - managed by Ansible, local changes are overwritten.\n"
WANTS_DIR = "/etc/systemd/system/multi-user.target.wants"


def _unsafe(host, option, value, allowed):
    return InvalidValue("%s: %s=%r cannot be written into a udev rule, systemd unit or script: allowed is %s"
                        % (host, option, value, allowed), parameter=option, allowed=allowed)


def render_nic_rule(runtime_pm: bool) -> str:
    """The udev rule that keeps every NVIDIA networking PCI function's runtime PM (``on``: never suspended)."""
    return (FILE_HEAD + "# NVIDIA networking PCI functions are never runtime-suspended (no wake-up latency on the "
            "rails).\n"
            'ACTION=="add|bind", SUBSYSTEM=="pci", ATTR{vendor}=="0x15b3", ATTR{class}=="0x02*", '
            'ATTR{power/control}="%s"\n' % ("auto" if runtime_pm else "on"))


def render_governor_unit(governor: str, root: str, *, host: str = "this host") -> str:
    """The systemd unit that sets ``governor`` on every CPU at boot; both values reach a shell command line, so each
    must match its strict grammar (InvalidValue naming the host and the option otherwise)."""
    if not isinstance(governor, str) or not GOVERNOR_RE.match(governor.strip()):
        raise _unsafe(host, "cpu_governor", governor, GOVERNOR_ALLOWED)
    if not isinstance(root, str) or not SAFE_PATH_RE.fullmatch(root):
        raise _unsafe(host, "root", root, SAFE_PATH_ALLOWED)
    governor, root = governor.strip(), root.rstrip("/")
    return (FILE_HEAD + "[Unit]\n"
            "Description=cpufreq governor %(g)s on every CPU (gpufabric.mlnx)\n"
            "After=systemd-modules-load.service\n\n"
            "[Service]\nType=oneshot\n"
            "ExecStart=/bin/sh -c 'for g in %(root)s/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; "
            "do echo %(g)s > \"$g\"; done; exit 0'\n\n"
            "[Install]\nWantedBy=multi-user.target\n") % {"g": governor, "root": root}


# ---------------------------------------------------------------------------------- the whole job: the platform role's host side

PARTS = ("kernel_cmdline", "power", "pcie")
UDEV_CONTROL = "/run/udev/control"        # udevd runs (what the common role's handler looks at)
SYSTEMD_RUNNING = "/run/systemd/system"   # systemd runs (sd_booted)


def _reload(host_obj, files_changed, check_mode):
    """Make udevd and systemd read what changed - only where the daemon runs, as the common role's handlers do."""
    done = []
    if check_mode:
        return done
    if "udev" in files_changed and os.path.exists(UDEV_CONTROL):
        host_obj.run(["udevadm", "control", "--reload"])
        done.append("udev")
    if "systemd" in files_changed and os.path.isdir(SYSTEMD_RUNNING):
        host_obj.run(["systemctl", "daemon-reload"])
        done.append("systemd")
    return done


def check_host_options(params: Mapping, *, host: str) -> dict:
    """Every input of ``converge_host`` checked before anything is written: ``{"parts", "kernel_args", "power" (the
    platform_power options), "files" ([(kind, path, text)])}``; InvalidValue naming the option and what is allowed.
    The boot loader options are checked only when there are kernel parameters to set (nothing else uses them)."""
    parts = list(params.get("parts") or [])
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise InvalidValue("platform_host: parts %s unknown; allowed: %s. Nothing was changed."
                           % (", ".join(map(str, unknown)), ", ".join(PARTS)), parameter="parts", allowed=list(PARTS))
    kernel_args = _bootloader.check_kernel_args(params.get("kernel_args") or [], option="kernel_args")
    power = {key: params.get(key) for key in ("aspm_policy", "nic_runtime_pm", "cpu_governor")}
    power.update((key, None) for key in params.get("leave") or [])
    power["kernel_args"] = kernel_args
    if "power" in parts:
        desired_state(power)
    if "kernel_cmdline" in parts and kernel_args:
        _bootloader.check_options({"args": kernel_args, "bootloader": params.get("bootloader") or "auto",
                                   "grub_dropin": params.get("grub_dropin")})
    files = []
    if "power" in parts and params.get("nic_udev_rule"):
        files.append(("udev", "nic_udev_rule", params["nic_udev_rule"],
                      render_nic_rule(bool(params.get("nic_runtime_pm")))))
    if "power" in parts and params.get("governor_unit") and power.get("cpu_governor"):
        files.append(("systemd", "governor_unit", params["governor_unit"],
                      render_governor_unit(power["cpu_governor"], params.get("root") or "/", host=host)))
    for _kind, option, path, _text in files:
        if not isinstance(path, str) or not SAFE_PATH_RE.fullmatch(path):
            raise _unsafe(host, option, path, SAFE_PATH_ALLOWED)
    return {"parts": parts, "kernel_args": kernel_args, "power": power,
            "files": [(kind, path, text) for kind, _option, path, text in files]}


def converge_host(params: Mapping, *, host: str, check_mode: bool = False, reader: Host | None = None,
                  boot: Host | None = None, runner=None, files=None) -> dict:
    """The host side of the platform role in one call (the module platform_host): every input checked before
    anything is written, then the kernel command line (``_bootloader.converge``), the power policy (``converge``),
    the files that keep it at boot (udev rule, governor unit and its wants link; ``files`` is ``_files``), the
    PCIe link check; ``parts`` says which run. Returns ``{"changed", "msg", "diff", "kernel", "power", "files",
    "reloaded", "pcie", "facts", "warnings", "lines"}`` and ``error`` (a degraded PCIe link: the module fails with it,
    after the other parts); ``facts`` (the role's) only when the power part ran."""
    checked = check_host_options(params, host=host)
    parts, kernel_args = checked["parts"], checked["kernel_args"]
    power_params, wanted_files = checked["power"], checked["files"]
    reader = reader or Host(root=params.get("root") or "/")
    boot = boot or Host(root=params.get("boot_root") or "/")
    out = {"changed": False, "diff": [], "kernel": None, "power": None, "files": [], "reloaded": [], "pcie": None,
           "facts": {}, "warnings": [], "lines": []}
    if "kernel_cmdline" in parts and kernel_args:
        kernel = _bootloader.converge(boot, {"args": kernel_args, "bootloader": params.get("bootloader") or "auto",
                                             "grub_dropin": params.get("grub_dropin")}, host=host,
                                      check_mode=check_mode)
        out["kernel"] = kernel
        out["changed"] |= kernel["changed"]
        if kernel["changed"]:
            out["diff"].append({"before_header": "kernel command line (%s)" % kernel["config"],
                                "after_header": "kernel command line (%s)" % kernel["config"],
                                "before": kernel["before"], "after": kernel["after"]})
        out["lines"].append(_bootloader.summary(kernel, check_mode=check_mode))
    if "power" in parts:
        power = converge(reader, power_params, check_mode=check_mode)
        out["power"] = power
        out["changed"] |= power["changed"]
        out["warnings"].extend(power["warnings"])
        if power["changed"]:
            out["diff"].append({"before_header": "power policy (sysfs)", "after_header": "power policy (sysfs)",
                                "before": power["before"], "after": power["after"]})
        out["lines"].append(summary(power, check_mode=check_mode))
        changed_kinds = set()
        for kind, path, text in wanted_files:
            steps = [files.ensure_file(path, text, mode=0o644, owner="root", group="root", check_mode=check_mode)]
            if kind == "systemd":
                link = "%s/%s" % (WANTS_DIR, os.path.basename(path))
                steps.append(files.ensure_dir(WANTS_DIR, mode=0o755, check_mode=check_mode))
                steps.append(files.ensure_link(link, path, check_mode=check_mode))
            for step in steps:
                if step["changed"]:
                    changed_kinds.add(kind)
                    out["diff"].extend(step["diff"])
            if kind in changed_kinds:
                out["files"].append(path)
        out["changed"] |= bool(changed_kinds)
        if out["files"]:
            out["lines"].append("%s %s" % ("would write" if check_mode else "wrote", ", ".join(out["files"])))
        out["reloaded"] = _reload(boot, changed_kinds, check_mode)
        out["facts"] = {"gpufabric_platform_kernel_args_missing": power["kernel_args_missing"],
                        "gpufabric_platform_power_drift": list(power["changes"]),
                        "gpufabric_platform_reboot_required": bool(params.get("bios_pending_reset"))
                        or bool(power["kernel_args_missing"])}
    if "pcie" in parts:
        links = pcie_links(runner)
        out["pcie"] = links
        try:
            out["lines"].append(pcie_check(host, links))
        except Refused as err:  # what was written stays reported: the module fails with it
            out["error"] = err
    return out
