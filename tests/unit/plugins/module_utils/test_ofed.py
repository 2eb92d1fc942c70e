"""The pinned NIC driver core (plugins/module_utils/_ofed.py): the matrix entry, the decision table, the
kernel guard, the restart decision, the apt files and argv, the driver's own files on a fake root, and
converge() end to end on a fake host (tests/_fakehost.py) whose apt-get, dpkg-query and ofed_info behave like
the real ones (exact argv asserted). Versions: test_versions.py; the management interface: test_mgmt.py."""
import gzip
import json
import os

import pytest
import yaml

from _fakehost import FakeHost
from _paths import REPO
from ansible_collections.gpufabric.mlnx.plugins.module_utils import _ofed as of
from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import InvalidValue, Refused, ToolFailed
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.ip import parse_ip_addr, parse_ip_route
from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers.packages import (
    apt_errors,
    parse_dkms_status,
    parse_dpkg_query,
    parse_madison,
    parse_packages_index,
    parse_rpm_query,
)

EXAMPLE = yaml.safe_load((REPO / "inventory" / "example-1250" / "group_vars" / "all" / "matrix.yml").read_text())
KERNEL = "6.1.0-28-amd64"
OTHER = "6.1.0-31-amd64"
URL = "http://198.19.30.12:8080/main/"

V1 = {"doca-ofed": "2.9.2-0.0.3", "ofed-scripts": "24.10.OFED.24.10.2.1.8-1",
      "mlnx-ofed-kernel-utils": "24.10.OFED.24.10.2.1.8.1-1", "mlnx-ofed-kernel-modules": "24.10.OFED.24.10.2.1.8.1-1"}
V2 = {"doca-ofed": "2.10.0-0.5.3", "ofed-scripts": "25.01.OFED.25.01.0.6.0-1",
      "mlnx-ofed-kernel-utils": "25.01.OFED.25.01.0.6.0.1-1", "mlnx-ofed-kernel-modules": "25.01.OFED.25.01.0.6.0.1-1"}
RELEASE = {"24.10-2.1.8.0": ("24.10-2.1.8", V1), "25.01-0.6.0.0": ("25.01-0.6.0", V2)}


def driver(version="24.10-2.1.8.0", packages=None, **extra):
    d = {"flavour": "doca-ofed", "version": version,
         "source": {"type": "apt", "url": URL, "suite": "./", "components": [],
                    "packages": dict(packages or RELEASE[version][1])},
         "kernels": [KERNEL, OTHER]}
    d.update(extra)
    return d


# ---------------------------------------------------------------------------------- the matrix entry

def test_spec_of_the_example_matrix():
    spec = of.driver_spec(EXAMPLE["gpufabric_matrix"])
    assert spec["flavour"] == "doca-ofed" and spec["version"] == "24.10-2.1.8.0"
    assert spec["dkms"] is True and spec["allow_downgrade"] is False
    assert spec["source"]["signed_by"] == "/usr/share/keyrings/doca_keyring.gpg"
    assert spec["source"]["packages"]["ofed-scripts"] == "24.10.OFED.24.10.2.1.8-1"
    assert of.driver_spec(EXAMPLE["gpufabric_matrix"]["driver"]) == spec  # the entry itself works too


def test_spec_lists_every_problem_with_its_key():
    with pytest.raises(InvalidValue) as err:
        of.driver_spec({"driver": {"flavour": "ofed", "version": 24.1, "allow_downgrade": "yes",
                                   "source": {"type": "apt", "url": "ftp://x", "suite": "./", "packages": {}}}})
    msg = err.value.msg
    for key in ("driver.flavour:", "driver.version: must be a quoted string", "driver.source.url:",
                "driver.source.packages: must pin at least one", "driver.kernels: required unless",
                "driver.allow_downgrade: must be true or false"):
        assert "gpufabric_matrix." + key in msg, key
    assert err.value.parameter == "gpufabric_matrix.driver"


def test_spec_refuses_a_missing_driver():
    with pytest.raises(InvalidValue, match="gpufabric_matrix.driver must be a mapping"):
        of.driver_spec({"name": "x"})


def test_spec_of_a_tarball():
    spec = of.driver_spec({"flavour": "mlnx-ofed", "version": "24.10-2.1.8.0", "dkms": True,
                           "source": {"type": "tarball", "path": "/srv/ofed/MLNX_OFED_LINUX-24.10-2.1.8.0.tgz",
                                      "sha256": "SHA256:" + "ab" * 32}})
    assert spec["source"] == {"type": "tarball", "path": "/srv/ofed/MLNX_OFED_LINUX-24.10-2.1.8.0.tgz",
                              "sha256": "ab" * 32}
    assert spec["kernels"] == []


# ---------------------------------------------------------------------------------- deciding

def ofed(version, flavour="doca-ofed"):
    prefix = of.FLAVOUR_PREFIX[flavour]
    return {"version": version, "flavour": flavour, "raw": "%s-%s" % (prefix, version)}


@pytest.mark.parametrize("case, want, installed, info, action, refused", [
    ("compliant", "24.10-2.1.8.0", V1, ofed("24.10-2.1.8"), "none", None),
    ("fresh host", "24.10-2.1.8.0", {}, None, "install", None),
    ("inbox MLNX_OFED of the simulator", "24.10-2.1.8.0", {}, ofed("24.10-2.1.8.0", "mlnx-ofed"), "install", None),
    ("bump", "25.01-0.6.0.0", V1, ofed("24.10-2.1.8"), "upgrade", None),
    ("older pinned", "24.10-2.1.8.0", V2, ofed("25.01-0.6.0"), "downgrade", "older than what the host runs"),
    ("one package missing", "24.10-2.1.8.0", {k: v for k, v in V1.items() if k != "doca-ofed"}, ofed("24.10-2.1.8"),
     "repair", None),
    ("ofed_info disagrees", "24.10-2.1.8.0", V1, None, "repair", None),
])
def test_plan(case, want, installed, info, action, refused):
    spec = of.driver_spec(driver(want))
    got = of.plan(spec, info, installed, "apt")
    assert got["action"] == action, (case, got)
    assert got["compliant"] is (action == "none")
    if refused:
        assert refused in got["refused"] and "allow_downgrade: true" in got["refused"]
    else:
        assert got["refused"] is None
    assert got["to_install"] == ({} if action == "none" else RELEASE[want][1])


def test_plan_allows_a_downgrade_the_matrix_allows():
    spec = of.driver_spec(driver("24.10-2.1.8.0", allow_downgrade=True))
    got = of.plan(spec, ofed("25.01-0.6.0"), V2, "apt")
    assert got["action"] == "downgrade" and got["refused"] is None


def test_plan_names_every_difference():
    spec = of.driver_spec(driver("25.01-0.6.0.0"))
    got = of.plan(spec, ofed("24.10-2.1.8"), dict(V1, **{"doca-ofed": V2["doca-ofed"]}), "apt")
    assert got["reasons"][0] == "ofed_info -s reports OFED-internal-24.10-2.1.8, the matrix pins doca-ofed 25.01-0.6.0.0"
    assert "ofed-scripts 24.10.OFED.24.10.2.1.8-1 is installed, the matrix pins 25.01.OFED.25.01.0.6.0-1" in got["reasons"]
    assert got["packages"]["doca-ofed"]["state"] == "equal"


def test_plan_of_a_bundle_not_yet_unpacked():
    spec = of.driver_spec({"flavour": "doca-ofed", "version": "24.10-2.1.8.0", "kernels": [KERNEL],
                           "source": {"type": "tarball", "path": "/srv/b.tgz", "sha256": "12" * 32}})
    got = of.plan(spec, ofed("24.10-2.1.8"), {"doca-ofed": "2.9.2-0.0.3"}, "apt", packages={"doca-ofed": None})
    assert got["action"] == "none" and got["packages"]["doca-ofed"]["state"] == "present"
    got = of.plan(spec, ofed("25.01-0.6.0"), {"doca-ofed": "2.10.0-0.5.3"}, "apt", packages={"doca-ofed": None})
    assert got["action"] == "downgrade" and got["to_install"] == {}


def test_kernel_precheck():
    spec = of.driver_spec(driver())
    assert of.kernel_precheck(spec, KERNEL, OTHER) is None
    msg = of.kernel_precheck(spec, "6.12.0-1-amd64", "6.13.0-1-amd64")
    assert "not for the running kernel 6.12.0-1-amd64 and the default boot kernel 6.13.0-1-amd64" in msg
    assert "Nothing was changed" in msg
    assert of.kernel_precheck(of.driver_spec(driver(dkms=True)), "6.12.0-1-amd64", None) is None


def test_modules_from_the_package_files():
    spec = of.driver_spec(driver())
    files = ["/usr/bin/ofed_info", "/lib/modules/%s/updates/mlnx-ofed-kernel/mlx5_core.ko" % KERNEL]
    assert of.modules_for(KERNEL, files, [], spec, V1, lambda k: None)["how"] == "package"
    # the packages ship mlx5 for another kernel only: no fallback search
    assert of.modules_for(OTHER, files, [], spec, V1, lambda k: "/lib/modules/x/updates/mlx5_core.ko") is None
    # no pinned package ships mlx5 at all (a meta package): the updates/extra search decides
    found = of.modules_for(OTHER, ["/usr/bin/ofed_info"], [], spec, V1, lambda k: "/lib/modules/%s/extra/mlx5_core.ko.xz" % k)
    assert found == {"path": "/lib/modules/%s/extra/mlx5_core.ko.xz" % OTHER, "how": "search"}


DKMS = """mlnx-ofed-kernel/24.10.OFED.24.10.2.1.8.1, 6.1.0-28-amd64, x86_64: installed
mlnx-ofed-kernel/24.10.OFED.24.10.2.1.8.1, 6.1.0-31-amd64, x86_64: built
iser, 24.10.OFED.24.10.2.1.8.1, 6.1.0-28-amd64, x86_64: installed
mlnx-ofed-kernel/24.10.OFED.24.10.2.1.8.1: added
"""


def test_dkms_status_and_the_guard():
    rows = parse_dkms_status(DKMS)
    assert rows[0] == {"module": "mlnx-ofed-kernel", "version": "24.10.OFED.24.10.2.1.8.1", "kernel": KERNEL,
                       "arch": "x86_64", "status": "installed"}
    assert rows[2]["module"] == "iser" and len(rows) == 3
    spec = of.driver_spec(driver(dkms=True, packages={"mlnx-ofed-kernel-dkms": "24.10.OFED.24.10.2.1.8.1-1"}))
    pins = spec["source"]["packages"]
    assert of.modules_for(KERNEL, [], rows, spec, pins, None)["how"] == "dkms"
    assert of.modules_for(OTHER, [], rows, spec, pins, None) is None  # built, not installed
    wrong = {"mlnx-ofed-kernel-dkms": "25.01.OFED.25.01.0.6.0.1-1"}
    assert of.modules_for(KERNEL, [], rows, spec, wrong, None) is None  # an old build
    found = {KERNEL: {"path": "x", "how": "dkms"}, OTHER: None}
    msg = of.kernel_guard(spec, KERNEL, OTHER, found)
    assert "has no mlx5 modules for kernel 6.1.0-31-amd64 (default boot) (looked at dkms status)" in msg
    assert of.kernel_guard(spec, KERNEL, KERNEL, found) is None
    assert "6.1.0-31-amd64 (running and default boot)" in of.kernel_guard(spec, OTHER, OTHER, found)


def test_restart_decision():
    safe = {"interfaces": ["eth0"], "on_mlx5": False, "evidence": {"eth0": "driver none (virtual)"}}
    risky = {"interfaces": ["bond0"], "on_mlx5": True, "evidence": {"enp41s0f0np0": "driver mlx5_core"}}
    unknown = {"interfaces": [], "on_mlx5": False, "evidence": {}}
    assert of.restart_decision(safe, requested=True, reboot_required=True)["allowed"]
    assert not of.restart_decision(safe, requested=False, reboot_required=True)["allowed"]
    assert not of.restart_decision(safe, requested=True, reboot_required=False)["allowed"]
    got = of.restart_decision(risky, requested=True, reboot_required=True)
    assert not got["allowed"] and "bond0 depends on the mlx5 driver (enp41s0f0np0: driver mlx5_core)" in got["reason"]
    assert "set gpufabric_ofed_mgmt_interface" in of.restart_decision(unknown, requested=True, reboot_required=True)["reason"]


def test_pending_decision():
    marker = {"boot_id": "b1", "version": "25.01-0.6.0.0", "installed_at": "t"}
    assert of.pending_decision(marker, "b1", None, "25.01-0.6.0")[0]
    assert not of.pending_decision(marker, "b2", None, "25.01-0.6.0")[0]  # rebooted since
    assert of.pending_decision(None, "b2", "24.10-2.1.8", "25.01-0.6.0")[0]  # an old module is loaded
    assert not of.pending_decision(None, "b2", "25.01-0.6.0", "25.01-0.6.0.0")[0]


# ---------------------------------------------------------------------------------- parsers and files

def test_parse_dpkg_and_rpm():
    out = "doca-ofed\t2.9.2-0.0.3\tii \nofed-scripts\t24.10-1\trc \nmlnx-ofed-kernel-utils:amd64\t1-1\tiU \n"
    assert parse_dpkg_query(out) == {"doca-ofed": "2.9.2-0.0.3", "mlnx-ofed-kernel-utils": "1-1"}
    out = "doca-ofed\t2.9.2-0.0.3.el9\npackage ofed-scripts is not installed\nkernel\t1:5.14.0-427.el9\n"
    assert parse_rpm_query(out) == {"doca-ofed": "2.9.2-0.0.3.el9", "kernel": "1:5.14.0-427.el9"}


def test_parse_ip():
    addr = ("1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n"
            "3: eth0    inet 198.19.30.11/24 brd 198.19.30.255 scope global eth0\\       valid_lft forever\n"
            "7: bond0.100@bond0    inet 10.0.0.5/24 scope global bond0.100\n")
    assert parse_ip_addr(addr) == [("lo", "127.0.0.1"), ("eth0", "198.19.30.11"), ("bond0.100", "10.0.0.5")]
    assert parse_ip_route("default via 10.0.0.1 dev eno1 proto dhcp metric 100\n") == ["eno1"]


APT_UNREACHABLE = """Err:1 http://198.19.30.250:8080/main ./ InRelease
  Could not connect to 198.19.30.250:8080 (198.19.30.250). - connect (113: No route to host)
Reading package lists...
W: Failed to fetch http://198.19.30.250:8080/main/./InRelease  Could not connect to 198.19.30.250:8080 (198.19.30.250). - connect (113: No route to host)
W: Some index files failed to download. They have been ignored, or old ones used instead.
"""
APT_OK = """Get:1 http://198.19.30.12:8080/main ./ InRelease [913 B]
Get:2 http://198.19.30.12:8080/main ./ Packages [1354 B]
Fetched 2267 B in 0s (4989 B/s)
Reading package lists...
"""


def test_apt_errors():
    assert apt_errors(APT_OK) == []
    errors = apt_errors(APT_UNREACHABLE)
    assert errors[0] == "Err:1 http://198.19.30.250:8080/main ./ InRelease"
    assert errors[1].startswith("Could not connect to 198.19.30.250:8080")
    assert errors[2].startswith("W: Failed to fetch")
    assert apt_errors("E: The repository 'http://x ./ Release' is not signed.\n")


def test_parse_madison():
    out = (" doca-ofed | 2.10.0-0.5.3 | http://198.19.30.12:8080/main ./ Packages\n"
           " doca-ofed | 2.9.2-0.0.3 | http://198.19.30.12:8080/main ./ Packages\n"
           "ofed-scripts | 25.01.OFED.25.01.0.6.0-1 | http://198.19.30.12:8080/main ./ Packages\n")
    assert parse_madison(out) == {"doca-ofed": ["2.10.0-0.5.3", "2.9.2-0.0.3"],
                                  "ofed-scripts": ["25.01.OFED.25.01.0.6.0-1"]}


def test_apt_files():
    repo = {"url": URL, "suite": "./", "components": [], "signed_by": "/etc/apt/keyrings/t.gpg"}
    text = of.apt_sources(repo, comment="c")
    assert text == "# c\nTypes: deb\nURIs: %s\nSuites: ./\nSigned-By: /etc/apt/keyrings/t.gpg\n" % URL
    assert of.apt_sources(dict(repo, trusted=True, suite="jammy", components=["main"]), fmt="list", comment="c") == \
        "# c\ndeb [signed-by=/etc/apt/keyrings/t.gpg trusted=yes] %s jammy main\n" % URL
    assert "Trusted: yes" in of.apt_sources(dict(repo, trusted=True))
    with pytest.raises(InvalidValue):
        of.apt_sources(repo, fmt="yaml")
    prefs = of.apt_preferences({"b": "2", "a": "1:1.0"}, comment="c")
    assert prefs == "# c\n\nPackage: a\nPin: version 1:1.0\nPin-Priority: 1001\n\nPackage: b\nPin: version 2\nPin-Priority: 1001\n"


def test_apt_argv():
    assert of.apt_update_argv("/etc/apt/sources.list.d/gpufabric-ofed.sources", timeout=30) == [
        "apt-get", "update", "-q", "-o", "Dir::Etc::SourceList=/etc/apt/sources.list.d/gpufabric-ofed.sources",
        "-o", "Dir::Etc::SourceParts=-", "-o", "APT::Get::List-Cleanup=0", "-o", "Acquire::Retries=1",
        "-o", "Acquire::http::Timeout=30", "-o", "Acquire::https::Timeout=30"]
    assert of.apt_install_argv({"b": "2", "a": "1"}, allow_downgrade=True, lock_timeout=300) == [
        "apt-get", "install", "-y", "-q", "--no-install-recommends", "-o", "Dpkg::Options::=--force-confdef",
        "-o", "Dpkg::Options::=--force-confold", "-o", "DPkg::Lock::Timeout=300", "--allow-downgrades", "a=1", "b=2"]
    assert "--allow-downgrades" not in of.apt_install_argv({"a": "1"}, allow_downgrade=False, lock_timeout=300)
    probe = of.apt_probe_argv("/tmp/p", timeout=10)
    assert "Dir::State::Lists=/tmp/p/lists" in probe and "Dir::Etc::SourceList=/tmp/p/probe.sources" in probe
    assert of.dnf_probe_argv({"url": URL}, ["b", "a"])[-2:] == ["a", "b"]


def test_bundle_closure():
    index = ("Package: doca-ofed\nVersion: 2.9.2-0.0.3\nDepends: ofed-scripts (= 24.10-1), mlnx-tools | python3,"
             " libc6 (>= 2.36)\n\nPackage: ofed-scripts\nVersion: 24.10-1\nPre-Depends: dpkg (>= 1.19)\n\n"
             "Package: unrelated\nVersion: 1\n")
    rows = parse_packages_index(index)
    assert rows[0]["depends"] == [("ofed-scripts", "=", "24.10-1"), ("mlnx-tools", None, None), ("libc6", ">=", "2.36")]
    pins, missing, available = of.bundle_closure(rows, ["doca-ofed"])
    assert pins == {"doca-ofed": "2.9.2-0.0.3", "ofed-scripts": "24.10-1"} and missing == []
    assert available == ["doca-ofed", "ofed-scripts", "unrelated"]
    assert of.bundle_closure(rows, ["mlnx-ofed-all"])[1] == ["mlnx-ofed-all (not in it)"]


# ---------------------------------------------------------------------------------- a fake host

class AptHost(FakeHost):
    """apt-get, apt-cache, dpkg-query, ofed_info, uname, ip, ibdev2netdev of one host, in memory; its files under
    ``root``."""

    def __init__(self, root, installed=None, release=None, repo=None, kernel=KERNEL, update=APT_OK,
                 module_kernels=(KERNEL, OTHER)):
        super().__init__(root, {"uname": self.uname, "ofed_info": self.ofed_info, "dpkg-query": self.dpkg_query,
                                "apt-get": self.apt_get, "apt-cache": self.apt_cache, "ip": self.ip,
                                "ibdev2netdev": self.ibdev2netdev})
        self.installed = dict(installed or {})
        self.release = release  # the ofed_info short version on disk
        self.repo = repo if repo is not None else {n: [V1[n], V2[n]] for n in V1}
        self.kernel = kernel
        self.update = update
        self.module_kernels = module_kernels
        for d in ("/proc", "/sys/class/net", "/boot"):
            self.mkdir(d)
        self.put("/proc/stat", "cpu 1 2 3\nbtime 1795995176")

    def uname(self, _args):
        return 0, self.kernel + "\n", ""

    def ofed_info(self, _args):
        return (0, "OFED-internal-%s:\n" % self.release, "") if self.release else (127, "", "not found")

    def dpkg_query(self, args):
        if args[0] == "-W":
            names = args[3:]
            return 0, "".join("%s\t%s\tii \n" % (n, self.installed[n]) for n in names if n in self.installed), ""
        assert args[0] == "-L", args
        files = []
        if "mlnx-ofed-kernel-modules" in args and "mlnx-ofed-kernel-modules" in self.installed:
            files = ["/lib/modules/%s/updates/mlnx-ofed-kernel/mlx5_core.ko" % k for k in self.module_kernels]
        return 0, "\n".join(["/usr/bin/ofed_info"] + files) + "\n", ""

    def apt_get(self, args):
        if args[0] == "update":
            return 0, self.update, ""
        assert args[0] == "install", args
        for pin in [a for a in args if "=" in a and not a.startswith(("-", "Dpkg", "DPkg"))]:
            name, version = pin.split("=", 1)
            self.installed[name] = version
        self.release = "25.01-0.6.0" if self.installed.get("ofed-scripts") == V2["ofed-scripts"] else "24.10-2.1.8"
        return 0, "Setting up ...\n", ""

    def apt_cache(self, args):
        names = args[args.index("madison") + 1:]
        return 0, "".join(" %s | %s | %s ./ Packages\n" % (n, v, URL) for n in names for v in self.repo.get(n, [])), ""

    def ip(self, args):
        if "addr" in args:
            return 0, "3: eth0    inet 198.19.30.11/24 brd 198.19.30.255 scope global eth0\n", ""
        return 0, "", ""

    def ibdev2netdev(self, _args):
        return 0, "mlx5_0 port 1 ==> ibp24s0 (Up)\n", ""


def params(**kw):
    base = {"state": "present", "package_manager": "apt", "probe": True, "timeout": 30, "lock_timeout": 300,
            "state_dir": "/var/lib/gpufabric/ofed", "mgmt_address": "198.19.30.11",
            "repository": {"url": URL, "suite": "./", "components": [], "trusted": True,
                           "sources_file": "/etc/apt/sources.list.d/gpufabric-ofed.sources"}}
    base.update(kw)
    return base


@pytest.fixture
def probe_dir(monkeypatch, tmp_path):
    """The probe's private apt directory lands under tmp_path/probe (checked to be removed)."""
    made = []
    real = of.tempfile.mkdtemp

    def mkdtemp(prefix=""):
        path = real(prefix=prefix, dir=str(tmp_path))
        made.append(path)
        return path
    monkeypatch.setattr(of.tempfile, "mkdtemp", mkdtemp)
    return made


def test_converge_installs_once_and_records_the_pending_reboot(tmp_path, probe_dir):
    host = AptHost(tmp_path / "root")
    result = of.converge(host.host(), of.driver_spec(driver()), params(), check_mode=False)
    assert result["changed"] and result["action"] == "install"
    assert result["installed"] == sorted("%s=%s" % kv for kv in V1.items())
    updates = host.commands("apt-get")
    assert updates[0][:2] == ["update", "-q"] and "Dir::State::Lists=%s/lists" % probe_dir[0] in updates[0]
    assert updates[1] == of.apt_update_argv("/etc/apt/sources.list.d/gpufabric-ofed.sources", timeout=30)[1:]
    assert updates[2] == of.apt_install_argv(V1, allow_downgrade=False, lock_timeout=300)[1:]
    assert len(updates) == 3 and not os.path.exists(probe_dir[0])
    assert result["driver"]["after"]["raw"] == "OFED-internal-24.10-2.1.8"
    assert result["kernels"]["modules"][KERNEL]["how"] == "package"
    assert result["reboot_required"] and "was installed in this run" in result["pending_reason"]
    marker = json.loads((tmp_path / "root/var/lib/gpufabric/ofed/pending.json").read_text())
    assert marker["version"] == "24.10-2.1.8.0" and marker["boot_id"] == "btime 1795995176"
    assert result["mgmt"]["interfaces"] == ["eth0"] and not result["restart"]["allowed"]

    # the second run: nothing installed, still waiting for the reboot of this boot
    host.calls.clear()
    again = of.converge(host.host(), of.driver_spec(driver()), params(restart_driver=True), check_mode=False)
    assert not again["changed"] and again["action"] == "none" and host.commands("apt-get") == []
    assert again["reboot_required"] and "installed 24.10-2.1.8.0 in this boot" in again["pending_reason"]
    assert again["restart"]["allowed"]  # eth0 is a veth: no mlx5 under the management connection


def test_check_mode_installs_nothing(tmp_path, probe_dir):
    host = AptHost(tmp_path / "root", installed=V1, release="24.10-2.1.8")
    result = of.converge(host.host(), of.driver_spec(driver("25.01-0.6.0.0")), params(), check_mode=True)
    assert result["changed"] and result["action"] == "upgrade" and result["installed"] == []
    assert result["would_install"] == sorted("%s=%s" % kv for kv in V2.items())
    assert [c[0] for c in host.commands("apt-get")] == ["update"]  # the private probe only
    assert host.installed == V1 and not (tmp_path / "root/var/lib/gpufabric/ofed/pending.json").exists()


def test_unreachable_repository_changes_nothing(tmp_path, probe_dir):
    host = AptHost(tmp_path / "root", installed=V1, release="24.10-2.1.8", update=APT_UNREACHABLE)
    bad = "http://198.19.30.250:8080/main/"
    with pytest.raises(ToolFailed) as err:
        of.converge(host.host(), of.driver_spec(driver("25.01-0.6.0.0")),
                    params(repository={"url": bad, "trusted": True}), check_mode=False)
    assert err.value.msg.startswith("the driver repository %s is unreachable or unusable: Err:1" % bad)
    assert err.value.msg.endswith("Nothing was changed.") and err.value.parameter == "gpufabric_matrix.driver.source.url"
    assert [c[0] for c in host.commands("apt-get")] == ["update"] and host.installed == V1


def test_missing_version_in_the_repository(tmp_path, probe_dir):
    host = AptHost(tmp_path / "root", repo={n: [V1[n]] for n in V1})
    with pytest.raises(Refused, match=r"does not have the pinned doca-ofed 2\.10\.0-0\.5\.3 \(it has: 2\.9\.2-0\.0\.3\)"):
        of.converge(host.host(), of.driver_spec(driver("25.01-0.6.0.0")), params(), check_mode=False)
    assert host.installed == {}


def test_downgrade_refused_before_anything_runs(tmp_path):
    host = AptHost(tmp_path / "root", installed=V2, release="25.01-0.6.0")
    with pytest.raises(Refused, match="older than what the host runs"):
        of.converge(host.host(), of.driver_spec(driver()), params(), check_mode=False)
    assert host.commands("apt-get") == []


def test_allowed_downgrade_passes_allow_downgrades(tmp_path, probe_dir):
    host = AptHost(tmp_path / "root", installed=V2, release="25.01-0.6.0")
    result = of.converge(host.host(), of.driver_spec(driver(allow_downgrade=True)), params(), check_mode=False)
    assert result["action"] == "downgrade" and "--allow-downgrades" in host.commands("apt-get")[-1]
    assert host.installed == V1


def test_kernel_guard_after_install(tmp_path, probe_dir):
    host = AptHost(tmp_path / "root", module_kernels=(OTHER,))
    with pytest.raises(Refused) as err:
        of.converge(host.host(), of.driver_spec(driver()), params(), check_mode=False)
    assert "has no mlx5 modules for kernel %s (running)" % KERNEL in err.value.msg
    assert host.installed == V1  # installed, but the role does not finish
    assert (tmp_path / "root/var/lib/gpufabric/ofed/pending.json").exists()


def test_kernel_precheck_refuses_before_install(tmp_path):
    host = AptHost(tmp_path / "root", kernel="6.12.0-1-amd64")
    with pytest.raises(Refused, match="not for the running kernel 6.12.0-1-amd64"):
        of.converge(host.host(), of.driver_spec(driver()), params(), check_mode=False)
    assert host.commands("apt-get") == []


def test_default_boot_kernel_without_modules(tmp_path):
    host = AptHost(tmp_path / "root", installed=V1, release="24.10-2.1.8")
    for k in (KERNEL, "7.0.0-1-amd64"):
        (tmp_path / "root/boot" / ("vmlinuz-" + k)).write_text("")
    with pytest.raises(Refused, match=r"no mlx5 modules for kernel 7\.0\.0-1-amd64 \(default boot\)"):
        of.converge(host.host(), of.driver_spec(driver()), params(), check_mode=False)


def test_source_type_must_fit_the_host(tmp_path):
    host = AptHost(tmp_path / "root")
    spec = of.driver_spec({"flavour": "doca-ofed", "version": "24.10-2.1.8.0", "kernels": [KERNEL],
                           "source": {"type": "dnf", "url": URL, "packages": {"doca-ofed": "2.9.2-0.0.3.el9"}}})
    with pytest.raises(Refused, match="source.type is dnf, but this host installs packages with apt"):
        of.converge(host.host(), spec, params(), check_mode=False)


def test_tarball_checksum(tmp_path):
    host = AptHost(tmp_path / "root", installed=V2, release="25.01-0.6.0")
    bundle = tmp_path / "root/srv/ofed/b.tgz"
    bundle.parent.mkdir(parents=True)
    bundle.write_bytes(b"not the bundle")
    spec = of.driver_spec({"flavour": "doca-ofed", "version": "24.10-2.1.8.0", "kernels": [KERNEL],
                           "allow_downgrade": True,
                           "source": {"type": "tarball", "path": "/srv/ofed/b.tgz", "sha256": "ab" * 32}})
    with pytest.raises(Refused) as err:
        of.converge(host.host(), spec, params(state="query", repository=None), check_mode=False)
    assert err.value.msg.startswith("the sha256 of /srv/ofed/b.tgz is ")
    assert "but gpufabric_matrix.driver.source.sha256 is %s: refusing" % ("ab" * 32) in err.value.msg
    assert err.value.parameter == "gpufabric_matrix.driver.source.sha256"
    bundle.unlink()
    with pytest.raises(Refused, match="does not exist on the host"):
        of.converge(host.host(), spec, params(state="query", repository=None), check_mode=False)


def test_bundle_pins_from_the_unpacked_index(tmp_path):
    root = tmp_path / "root"
    debs = root / "var/lib/b/DEBS"
    debs.mkdir(parents=True)
    with gzip.open(str(debs / "Packages.gz"), "wt") as stream:
        stream.write("Package: doca-ofed\nVersion: 2.9.2-0.0.3\nDepends: ofed-scripts (= %s)\n\n"
                     "Package: ofed-scripts\nVersion: %s\n" % (V1["ofed-scripts"], V1["ofed-scripts"]))
    reader = FakeHost(root).host()
    assert of.bundle_pins(reader, "file:///var/lib/b/DEBS", ["doca-ofed"]) == {
        "doca-ofed": "2.9.2-0.0.3", "ofed-scripts": V1["ofed-scripts"]}
    with pytest.raises(Refused, match="no apt repository index"):
        of.bundle_pins(reader, "file:///nowhere", ["doca-ofed"])


# ---------------------------------------------------------------------------------- the driver's own files

def test_module_search_and_marker(tmp_path):
    reader = FakeHost(tmp_path).host()
    assert of.search_modules(reader, KERNEL) is None
    deep = tmp_path / "lib/modules" / KERNEL / "extra/mlnx-ofa_kernel/drivers/net/ethernet/mellanox/mlx5/core"
    deep.mkdir(parents=True)
    (deep / "mlx5_core.ko.xz").write_text("")
    assert of.search_modules(reader, KERNEL) == "/lib/modules/%s/extra/mlnx-ofa_kernel/drivers/net/ethernet/" \
                                                "mellanox/mlx5/core/mlx5_core.ko.xz" % KERNEL
    of.write_marker(reader, "/var/lib/gpufabric/ofed", {"boot_id": "x"})
    assert of.read_marker(reader, "/var/lib/gpufabric/ofed") == {"boot_id": "x"}
    assert of.read_marker(reader, "/nowhere") is None


# ---------------------------------------------------------------------------------- the dnf path (RHEL family)

EL = {"doca-ofed": "2.9.2-0.0.3.el9", "mlnx-ofed-kernel-modules": "24.10-OFED.24.10.2.1.8.1.rhel9u4"}
EL_KERNEL = "5.14.0-427.13.1.el9_4.x86_64"


class RpmHost(FakeHost):
    """rpm, dnf, ofed_info, uname of a RHEL-family host; its files under ``root``."""

    def __init__(self, root, installed, release, repoquery=""):
        super().__init__(root, {"rpm": self.rpm, "dnf": self.dnf, "ofed_info": self.ofed_info, "uname": self.uname})
        self.installed, self.release, self.repoquery = dict(installed), release, repoquery

    def uname(self, _args):
        return 0, EL_KERNEL + "\n", ""

    def ofed_info(self, _args):
        return 0, "OFED-internal-%s:\n" % self.release, ""

    def rpm(self, args):
        if args[0] == "-q":
            names = args[3:]
            return 0, "".join("%s\t%s\n" % (n, self.installed[n]) if n in self.installed
                              else "package %s is not installed\n" % n for n in names), ""
        assert args[0] == "-ql", args
        return 0, "/lib/modules/%s/extra/mlnx-ofa_kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko\n" \
            % EL_KERNEL, ""

    def dnf(self, _args):
        return 0, self.repoquery, ""


def el_spec():
    return of.driver_spec({"flavour": "doca-ofed", "version": "24.10-2.1.8.0", "kernels": [EL_KERNEL],
                           "source": {"type": "dnf", "url": "https://linux.mellanox.com/public/repo/doca/2.9.2/rhel9.4/x86_64/",
                                      "packages": EL}})


def test_dnf_query_probes_with_repoquery(tmp_path):
    available = "doca-ofed\t2.9.2-0.0.3.el9\nmlnx-ofed-kernel-modules\t24.10-OFED.24.10.2.1.8.1.rhel9u4\n"
    host = RpmHost(tmp_path, {}, "24.04-0.6.6", repoquery=available)
    reader = host.host()
    result = of.converge(reader, el_spec(), {"state": "query", "repository": {"url": el_spec()["source"]["url"]}},
                         check_mode=False)
    assert result["package_manager"] == "dnf" and result["action"] == "install" and result["repository"]["probed"]
    dnf = host.commands("dnf")[0]
    assert dnf[0:5] == ["-q", "--disablerepo=*", "--repofrompath=gpufabric-ofed-probe,%s" % el_spec()["source"]["url"],
                        "--setopt=gpufabric-ofed-probe.gpgcheck=0", "repoquery"]


def test_dnf_present_is_refused_and_verified_checks(tmp_path):
    host = RpmHost(tmp_path, EL, "24.10-2.1.8")
    reader = host.host()
    result = of.converge(reader, el_spec(), {"state": "verified", "mark_pending": True,
                                             "state_dir": "/var/lib/gpufabric/ofed"}, check_mode=False)
    assert result["action"] == "none" and result["kernels"]["modules"][EL_KERNEL]["how"] == "package"
    assert result["reboot_required"] and (tmp_path / "var/lib/gpufabric/ofed/pending.json").exists()
    host.installed = {}
    with pytest.raises(InvalidValue, match="state=present installs with apt only"):
        of.converge(reader, el_spec(), {"state": "present", "probe": False}, check_mode=False)


@pytest.mark.parametrize("bad", [{"timeout": 0}, {"timeout": -3}, {"lock_timeout": 0}, {"mgmt_interface": "eno1,eno2"}])
def test_a_bad_timeout_or_management_interface_is_refused_before_anything_runs(tmp_path, bad):
    """The management guard runs at the end, after the install: its interface is checked first, with the timeouts."""
    host = AptHost(tmp_path / "root")
    with pytest.raises(InvalidValue) as err:
        of.converge(host.host(), of.driver_spec(driver()), params(**bad), check_mode=False)
    assert err.value.parameter == next(iter(bad)) and host.calls == []


# ---------------------------------------------------------------------------------- state pinned: the role's one call

SOURCES_V1 = """# Managed by gpufabric.mlnx (ofed role): gpufabric_matrix lab-1, doca-ofed 24.10-2.1.8.0. The pinned NIC driver repository.
Types: deb
URIs: http://198.19.30.12:8080/main/
Suites: ./
Signed-By: /etc/apt/keyrings/gpufabric-ofed.gpg
"""
PREFS_V1 = """# Managed by gpufabric.mlnx (ofed role): gpufabric_matrix lab-1, doca-ofed 24.10-2.1.8.0. The driver packages stay at these versions.

Package: doca-ofed
Pin: version 2.9.2-0.0.3
Pin-Priority: 1001

Package: mlnx-ofed-kernel-modules
Pin: version 24.10.OFED.24.10.2.1.8.1-1
Pin-Priority: 1001

Package: mlnx-ofed-kernel-utils
Pin: version 24.10.OFED.24.10.2.1.8.1-1
Pin-Priority: 1001

Package: ofed-scripts
Pin: version 24.10.OFED.24.10.2.1.8-1
Pin-Priority: 1001
"""
KEY_URL = "http://198.19.30.12:8080/keyring.gpg"


def pinned_params(**kw):
    """What roles/ofed/tasks/main.yml passes (its defaults), the repository described by the module."""
    base = {"state": "pinned", "package_manager": "auto", "probe": True, "timeout": 30, "lock_timeout": 300,
            "state_dir": "/var/lib/gpufabric/ofed", "mgmt_address": "198.19.30.11", "repo_name": "gpufabric-ofed",
            "apt_format": "deb822", "keyring_dir": "/etc/apt/keyrings", "apt_trusted": False,
            "bundle_dir": "/var/lib/gpufabric/ofed/bundles", "restart_command": ["/etc/init.d/openibd", "restart"],
            "restart_driver": False, "matrix_name": "lab-1"}
    base.update(kw)
    return base


def keyed(version="24.10-2.1.8.0", **extra):
    d = driver(version, **extra)
    d["source"]["key_url"] = KEY_URL
    return d


class KeyFetch:
    def __init__(self):
        self.urls = []

    def __call__(self, url, dest):
        self.urls.append(url)
        with open(dest, "w") as stream:
            stream.write("KEY\n")


class PkgHost(AptHost):
    """AptHost with dpkg-query's package manager detection, tar and the driver restart command."""

    def __init__(self, root, *args, **kwargs):
        super().__init__(root, *args, **kwargs)
        self.tools.update({"tar": self.tar, "openibd": self.openibd})
        self.bundle = {}   # path in the bundle -> text, unpacked by tar
        self.restarts = 0

    def tar(self, args):
        assert args[:2] == ["-x", "-f"] and args[3] == "-C", args
        for name, text in self.bundle.items():
            self.put(os.path.join(args[4], name), text)
        return 0, "", ""

    def openibd(self, args):
        assert args == ["restart"], args
        self.restarts += 1
        return 0, "", ""


def test_pinned_installs_keeps_the_files_and_the_key_then_a_rerun_does_nothing(tmp_path, probe_dir):
    host = PkgHost(tmp_path / "root")
    fetch = KeyFetch()
    result = of.converge(host.host(), of.driver_spec(keyed()), pinned_params(), check_mode=False, key_fetch=fetch)
    assert result["driver_changed"] and result["changed"] and result["action"] == "install"
    assert host.installed == V1 and result["installed"] == sorted("%s=%s" % kv for kv in V1.items())
    # the probe used a private copy of the key, the role's copy went to keyring_dir/repo_name.gpg, mode 0644
    assert fetch.urls == [KEY_URL, KEY_URL]
    key = tmp_path / "root/etc/apt/keyrings/gpufabric-ofed.gpg"
    assert key.read_text() == "KEY\n" and oct(key.stat().st_mode & 0o777) == "0o644"
    assert (tmp_path / "root/etc/apt/sources.list.d/gpufabric-ofed.sources").read_text() == SOURCES_V1
    assert (tmp_path / "root/etc/apt/preferences.d/gpufabric-ofed.pref").read_text() == PREFS_V1
    diffs = [c for c in result["changes"] if isinstance(c, dict)]
    assert [d["after_header"] for d in diffs] == ["/etc/apt/sources.list.d/gpufabric-ofed.sources",
                                                  "/etc/apt/preferences.d/gpufabric-ofed.pref"]
    assert diffs[0]["before"] == "" and diffs[0]["after"] == SOURCES_V1
    assert "fetched the repository key /etc/apt/keyrings/gpufabric-ofed.gpg from %s" % KEY_URL in result["changes"]
    # the files were there before the install: the update reads the repository's own sources file
    assert host.commands("apt-get")[1] == of.apt_update_argv("/etc/apt/sources.list.d/gpufabric-ofed.sources",
                                                             timeout=30)[1:]
    facts = of.role_facts(result, "msg")
    assert facts["gpufabric_ofed_changed"] is True and facts["gpufabric_ofed_reboot_required"] is True
    assert facts["gpufabric_ofed_result"]["restart"] == {
        "requested": False, "allowed": False, "reason": "gpufabric_ofed_restart_driver is false", "done": False}
    assert host.restarts == 0

    host.calls.clear()
    again = of.converge(host.host(), of.driver_spec(keyed()), pinned_params(), check_mode=False, key_fetch=fetch)
    assert not again["changed"] and not again["driver_changed"] and again["changes"] == []
    assert again["action"] == "none" and host.commands("apt-get") == [] and fetch.urls == [KEY_URL, KEY_URL]
    assert again["kernels"]["modules"][KERNEL]["how"] == "package"   # verified and guarded on the rerun too


def test_pinned_puts_back_a_changed_pin_file(tmp_path):
    host = PkgHost(tmp_path / "root", installed=V1, release="24.10-2.1.8")
    host.put("/etc/apt/sources.list.d/gpufabric-ofed.sources", SOURCES_V1.rstrip("\n"))
    host.put("/etc/apt/preferences.d/gpufabric-ofed.pref", "Package: doca-ofed\nPin: version 9\nPin-Priority: 1001")
    host.put("/etc/apt/keyrings/gpufabric-ofed.gpg", "KEY")
    result = of.converge(host.host(), of.driver_spec(keyed()), pinned_params(), check_mode=False)
    assert result["changed"] and not result["driver_changed"] and result["action"] == "none"
    assert [c["after_header"] for c in result["changes"]] == ["/etc/apt/preferences.d/gpufabric-ofed.pref"]
    assert host.get("/etc/apt/preferences.d/gpufabric-ofed.pref") == PREFS_V1
    assert host.commands("apt-get") == []


def test_pinned_check_mode_shows_the_diffs_and_writes_nothing(tmp_path, probe_dir):
    host = PkgHost(tmp_path / "root", installed=V1, release="24.10-2.1.8")
    result = of.converge(host.host(), of.driver_spec(keyed("25.01-0.6.0.0")), pinned_params(), check_mode=True,
                         key_fetch=KeyFetch())
    assert result["changed"] and result["driver_changed"] and result["action"] == "upgrade"
    assert result["reboot_required"] and "would be installed" in result["pending_reason"]
    diffs = [c for c in result["changes"] if isinstance(c, dict)]
    assert len(diffs) == 2 and "Pin: version 2.10.0-0.5.3" in diffs[1]["after"]
    assert "made the folder /etc/apt/keyrings" in result["changes"]
    assert not (tmp_path / "root/etc/apt").exists() and host.installed == V1
    assert [c[0] for c in host.commands("apt-get")] == ["update"]   # the private probe only


def test_pinned_refuses_before_it_writes_anything(tmp_path):
    host = PkgHost(tmp_path / "root", installed=V2, release="25.01-0.6.0")
    with pytest.raises(Refused, match="refusing to downgrade"):
        of.converge(host.host(), of.driver_spec(keyed()), pinned_params(), check_mode=False, key_fetch=KeyFetch())
    assert not (tmp_path / "root/etc/apt").exists() and host.commands("apt-get") == []


@pytest.mark.parametrize("mgmt, restarted", [("", True), ("ibp24s0", False)])
def test_pinned_restarts_only_when_asked_and_safe(tmp_path, mgmt, restarted):
    host = PkgHost(tmp_path / "root", installed=V1, release="24.10-2.1.8")
    host.put("/etc/apt/keyrings/gpufabric-ofed.gpg", "KEY")
    host.netdev("ibp24s0", driver="mlx5_core", rdma="mlx5_0")
    reader = host.host()
    of.write_marker(reader, "/var/lib/gpufabric/ofed", {"version": "24.10-2.1.8.0", "boot_id": "btime 1795995176"})
    result = of.converge(reader, of.driver_spec(keyed()), pinned_params(restart_driver=True, mgmt_interface=mgmt or None),
                         check_mode=False)
    facts = of.role_facts(result, "msg")
    assert host.restarts == (1 if restarted else 0)
    assert facts["gpufabric_ofed_result"]["restart"]["done"] is restarted
    assert facts["gpufabric_ofed_reboot_required"] is (not restarted)
    assert (tmp_path / "root/var/lib/gpufabric/ofed/pending.json").exists() is (not restarted)
    assert ("restarted the driver (/etc/init.d/openibd restart)" in result["changes"]) is restarted
    assert not facts["gpufabric_ofed_changed"]   # the driver itself did not change in this run
    if not restarted:
        assert "ibp24s0 depends on the mlx5 driver" in result["restart"]["reason"]


def test_pinned_restart_in_check_mode_is_predicted_not_run(tmp_path):
    host = PkgHost(tmp_path / "root", installed=V1, release="24.10-2.1.8")
    host.put("/etc/apt/keyrings/gpufabric-ofed.gpg", "KEY")
    host.put("/etc/apt/sources.list.d/gpufabric-ofed.sources", SOURCES_V1.rstrip("\n"))
    host.put("/etc/apt/preferences.d/gpufabric-ofed.pref", PREFS_V1.rstrip("\n"))
    reader = host.host()
    of.write_marker(reader, "/var/lib/gpufabric/ofed", {"version": "24.10-2.1.8.0", "boot_id": "btime 1795995176"})
    result = of.converge(reader, of.driver_spec(keyed()), pinned_params(restart_driver=True), check_mode=True)
    assert result["changed"] and result["changes"] == ["restarted the driver (/etc/init.d/openibd restart)"]
    assert host.restarts == 0 and result["reboot_required"] and not result["restart"]["done"]


BUNDLE_SHA = "ab" * 32


def bundle_host(tmp_path, **kw):
    host = PkgHost(tmp_path / "root", **kw)
    host.put("/srv/ofed/doca.tgz", "bundle")
    index = "Package: doca-ofed\nVersion: 2.9.2-0.0.3\nDepends: ofed-scripts (= %s)\n\nPackage: ofed-scripts\nVersion: %s" % (
        V1["ofed-scripts"], V1["ofed-scripts"])
    host.bundle = {"doca-ofed-24.10/DEBS/Packages": index, "doca-ofed-24.10/install.sh": "#!/bin/sh"}
    host.put("/lib/modules/%s/updates/mlnx-ofed-kernel/mlx5_core.ko" % KERNEL, "")   # the meta package ships none
    return host


def bundle_spec(tmp_path):
    import hashlib
    sha = hashlib.sha256((tmp_path / "root/srv/ofed/doca.tgz").read_bytes()).hexdigest()
    return of.driver_spec({"flavour": "doca-ofed", "version": "24.10-2.1.8.0", "kernels": [KERNEL, OTHER],
                           "allow_downgrade": True, "source": {"type": "tarball", "path": "/srv/ofed/doca.tgz",
                                                               "sha256": sha}})


def test_pinned_unpacks_a_needed_bundle_once_and_installs_from_it(tmp_path, probe_dir):
    host = bundle_host(tmp_path)
    spec = bundle_spec(tmp_path)
    result = of.converge(host.host(), spec, pinned_params(), check_mode=False)
    folder = "/var/lib/gpufabric/ofed/bundles/24.10-2.1.8.0"
    assert host.commands("tar") == [["-x", "-f", "/srv/ofed/doca.tgz", "-C", folder]]
    assert host.get(folder + "/.sha256") == "%s  doca.tgz\n" % spec["source"]["sha256"]
    assert result["repository"]["url"] == "file://%s/doca-ofed-24.10/DEBS" % folder
    assert result["pins"] == {"doca-ofed": "2.9.2-0.0.3", "ofed-scripts": V1["ofed-scripts"]}
    assert host.installed == result["pins"] and result["driver_changed"]
    sources = host.get("/etc/apt/sources.list.d/gpufabric-ofed.sources")
    assert "URIs: file://%s/doca-ofed-24.10/DEBS\n" % folder in sources and "Trusted: yes\n" in sources
    assert "Pin: version 2.9.2-0.0.3" in host.get("/etc/apt/preferences.d/gpufabric-ofed.pref")

    host.calls.clear()
    again = of.converge(host.host(), spec, pinned_params(), check_mode=False)
    assert again["action"] == "none" and not again["changed"] and host.commands("tar") == []


def test_pinned_check_mode_of_a_bundle_not_unpacked_predicts_it(tmp_path):
    host = bundle_host(tmp_path)
    result = of.converge(host.host(), bundle_spec(tmp_path), pinned_params(), check_mode=True)
    assert result["driver_changed"] and result["action"] == "install"
    assert "unpacked /srv/ofed/doca.tgz into /var/lib/gpufabric/ofed/bundles/24.10-2.1.8.0" in result["changes"]
    assert host.commands("tar") == [] and not (tmp_path / "root/var/lib/gpufabric/ofed/bundles").exists()


def test_pinned_refuses_an_iso_and_a_bundle_without_a_repository(tmp_path):
    host = bundle_host(tmp_path)
    host.put("/srv/ofed/doca.iso", "iso")
    spec = bundle_spec(tmp_path)
    iso = dict(spec, source=dict(spec["source"], path="/srv/ofed/doca.ISO"))
    with pytest.raises(Refused, match=r"doca\.ISO is an ISO image, which this role does not mount"):
        of.unpack_bundle(host.host(), iso, pinned_params(), check_mode=False)
    host.bundle = {"doca-ofed-24.10/README": "no index"}
    with pytest.raises(Refused, match="has no apt repository"):
        of.converge(host.host(), spec, pinned_params(), check_mode=False)
    assert host.installed == {}


def test_bundle_index_looks_4_levels_deep_like_find(tmp_path):
    reader = FakeHost(tmp_path).host()
    (tmp_path / "b/1/2/3/4").mkdir(parents=True)
    (tmp_path / "b/1/2/3/4/Packages").write_text("")        # level 5: not seen
    assert of.bundle_index(reader, "/b") is None
    (tmp_path / "b/1/2/3/Packages.gz").write_text("")       # level 4
    assert of.bundle_index(reader, "/b") == "/b/1/2/3"
    (tmp_path / "b/1/Packages").write_text("")              # after b/1/2/3/Packages.gz by path ("2" < "P")
    assert of.bundle_index(reader, "/b") == "/b/1/2/3"
    (tmp_path / "b/0").mkdir()
    (tmp_path / "b/0/Packages").write_text("")              # the first by path
    assert of.bundle_index(reader, "/b") == "/b/0"
    (tmp_path / "c").mkdir()
    (tmp_path / "c/Packages").write_text("")                # level 1: the folder itself
    assert of.bundle_index(reader, "/c/") == "/c"


def test_pinned_on_dnf_decides_and_leaves_the_install_to_the_role(tmp_path):
    host = RpmHost(tmp_path, {}, "24.04-0.6.6")
    base = {"state": "pinned", "probe": False, "state_dir": "/var/lib/gpufabric/ofed", "restart_driver": True,
            "restart_command": ["openibd", "restart"]}
    result = of.converge(host.host(), el_spec(), base, check_mode=False)
    assert result["action"] == "install" and not result["changed"] and result["changes"] == []
    assert result["pins"] == EL and not result["restart"].get("done")
    predicted = of.converge(host.host(), el_spec(), base, check_mode=True)
    assert predicted["changed"] and predicted["driver_changed"] and predicted["reboot_required"]
    host.installed, host.release = dict(EL), "24.10-2.1.8"      # the role's dnf tasks installed it
    after = of.converge(host.host(), el_spec(), dict(base, mark_pending=True, restart_driver=False), check_mode=False)
    assert after["action"] == "none" and after["driver_changed"] and after["reboot_required"]
    assert after["kernels"]["modules"][EL_KERNEL]["how"] == "package"


def test_pinned_refuses_a_bundle_on_dnf(tmp_path):
    host = RpmHost(tmp_path, {}, "24.04-0.6.6")
    spec = of.driver_spec({"flavour": "doca-ofed", "version": "24.10-2.1.8.0", "kernels": [EL_KERNEL],
                           "source": {"type": "tarball", "path": "/srv/b.tgz", "sha256": BUNDLE_SHA}})
    with pytest.raises(Refused, match="source.type tarball is not supported on dnf hosts by this role"):
        of.converge(host.host(), spec, {"state": "pinned", "package_manager": "dnf"}, check_mode=False)
    assert host.calls == []


def test_role_repository():
    spec = of.driver_spec(keyed())
    assert of.role_repository(spec, pinned_params()) == {
        "url": URL, "suite": "./", "components": [], "signed_by": "/etc/apt/keyrings/gpufabric-ofed.gpg",
        "key_url": KEY_URL, "trusted": False, "sources_file": "/etc/apt/sources.list.d/gpufabric-ofed.sources"}
    spec["source"]["signed_by"] = "/usr/share/keyrings/doca.gpg"
    listed = of.role_repository(spec, pinned_params(apt_format="list", repo_name="doca", apt_trusted=True))
    assert listed["signed_by"] == "/usr/share/keyrings/doca.gpg" and listed["trusted"] is True
    assert listed["sources_file"] == "/etc/apt/sources.list.d/doca.list"
    assert of.role_repository(of.driver_spec(driver()), pinned_params())["signed_by"] is None   # no key at all
