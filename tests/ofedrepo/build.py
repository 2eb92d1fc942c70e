"""Build the fake DOCA-OFED driver packages and the package repositories the `ofed` role is
tested against (molecule/ofed): real .deb files made with dpkg-deb, apt flat repositories with
a Packages index written here (the format dpkg-scanpackages writes), a Release file, and a
throw-away signing key, so pinning, upgrades and downgrades run through the real apt.

    build.py --out DIR [--kernel KVER ...] [--no-sign]

DIR gets:

    main/            flat repository, signed: both driver releases (24.10-2.1.8.0 and
                     25.01-0.6.0.0) of doca-ofed, ofed-scripts, mlnx-ofed-kernel-utils,
                     mlnx-ofed-kernel-modules; InRelease + Release.gpg
    keyring.gpg      the public key main/ is signed with (binary keyring for Signed-By)
    badkernel/       flat repository, unsigned: release 25.01-0.6.0.0 whose modules package
                     is built for FAKE_KERNEL only (version ...-0nokmod1, older than main's -1)
    tarball/doca-ofed-24.10-2.1.8.0-debian12-offline.tgz
                     offline bundle: <name>/DEBS/ is a flat repository of release 24.10
    manifest.json    what was built: releases, package versions, kernels, the tarball's sha256

The packages look like NVIDIA's (names, version strings) but contain only:
- ofed-scripts: /usr/bin/ofed_info, printing what DOCA-OFED's prints (`OFED-internal-24.10-2.1.8:`
  for -s, with the trailing colon; fixtures/FORMAT_FACTS.md "misc");
- mlnx-ofed-kernel-utils: /etc/init.d/openibd, which only records a restart in
  /var/log/gpufabric-test-openibd.log;
- mlnx-ofed-kernel-modules: a marker file mlx5_core.ko per kernel it is built for, under
  /lib/modules/<kver>/updates/mlnx-ofed-kernel/... (where packaged OFED kmods go);
- doca-ofed: a meta package depending on the exact versions of the three.

Standard library only; needs dpkg-deb (any Debian host) and, unless --no-sign, gpg.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from email.utils import formatdate
from pathlib import Path

FAKE_KERNEL = "6.1.0-28-amd64"  # a Debian 12 kernel release no lab container runs
EPOCH = 1767225600  # 2026-01-01T00:00:00Z: every file and archive member gets this mtime
MAINTAINER = "gpufabric test repository <noreply@gpufabric.invalid>"
KEY_UID = "gpufabric test repository (throw-away, tests only) <noreply@gpufabric.invalid>"

# Two driver releases, as DOCA 2.9.2 LTS and DOCA 2.10.0 ship them. `ofed` is what the matrix
# pins (driver.version); `ofed_info` is what DOCA-OFED's `ofed_info -s` prints (3 numbers after
# the dash, without the trailing .0 the MLNX_OFED_LINUX- names carry).
RELEASES = {
    "24.10-2.1.8.0": {
        "ofed_info": "24.10-2.1.8",
        "packages": {
            "doca-ofed": "2.9.2-0.0.3",
            "ofed-scripts": "24.10.OFED.24.10.2.1.8-1",
            "mlnx-ofed-kernel-utils": "24.10.OFED.24.10.2.1.8.1-1",
            "mlnx-ofed-kernel-modules": "24.10.OFED.24.10.2.1.8.1-1",
        },
    },
    "25.01-0.6.0.0": {
        "ofed_info": "25.01-0.6.0",
        "packages": {
            "doca-ofed": "2.10.0-0.5.3",
            "ofed-scripts": "25.01.OFED.25.01.0.6.0-1",
            "mlnx-ofed-kernel-utils": "25.01.OFED.25.01.0.6.0.1-1",
            "mlnx-ofed-kernel-modules": "25.01.OFED.25.01.0.6.0.1-1",
        },
    },
}
# The badkernel repository: release 25.01 with a modules package built for FAKE_KERNEL only.
BAD_RELEASE = "25.01-0.6.0.0"
BAD_MODULES_VERSION = "25.01.OFED.25.01.0.6.0.1-0nokmod1"
TARBALL_RELEASE = "24.10-2.1.8.0"
TARBALL_NAME = "doca-ofed-24.10-2.1.8.0-debian12-offline"

MODULE_DIR = "lib/modules/{kernel}/updates/mlnx-ofed-kernel/drivers/net/ethernet/mellanox/mlx5/core"

OFED_INFO = """#!/bin/sh
# ofed_info of the gpufabric test repository (fake DOCA-OFED {ofed}, package ofed-scripts {pkg}).
case "$1" in
  -s) echo "OFED-internal-{short}:" ;;
  -n) echo "{short}" ;;
  -h|--help) echo "Usage: ofed_info [-s|-n|-l|-h]" ;;
  *) printf 'OFED-internal-{short} (OFED-internal-{short}):\\n\\nofed-scripts:\\n{pkg}\\n\\n' ;;
esac
"""

OPENIBD = """#!/bin/sh
# openibd of the gpufabric test repository (fake DOCA-OFED {ofed}): records what it was asked
# to do, loads and unloads nothing.
LOG=/var/log/gpufabric-test-openibd.log
case "$1" in
  start|stop|restart|force-reload)
    echo "$1 {ofed} $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$LOG"
    echo "Unloading HCA driver:                                      [  OK  ]"
    echo "Loading HCA driver and Access Layer:                       [  OK  ]" ;;
  status) echo "  HCA driver loaded (fake {ofed})" ;;
  *) echo "Usage: $0 {{start|stop|restart|force-reload|status}}" >&2; exit 1 ;;
esac
"""


class BuildError(Exception):
    pass


def run(argv, **kw):
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, **kw)
    if proc.returncode != 0:
        raise BuildError("%s failed (rc=%d): %s" % (" ".join(argv[:3]), proc.returncode,
                                                    (proc.stderr or proc.stdout).strip()))
    return proc.stdout


# ------------------------------------------------------------------------------ packages
def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def package_files(name: str, version: str, release: str, kernels: list[str]) -> dict[str, tuple[str, int]]:
    """Relative path -> (content, mode) of one fake package."""
    info = RELEASES[release]
    short = info["ofed_info"]
    if name == "ofed-scripts":
        return {"usr/bin/ofed_info": (OFED_INFO.format(ofed=release, pkg=version, short=short), 0o755)}
    if name == "mlnx-ofed-kernel-utils":
        return {"etc/init.d/openibd": (OPENIBD.format(ofed=release), 0o755)}
    if name == "mlnx-ofed-kernel-modules":
        return {
            MODULE_DIR.format(kernel=k) + "/mlx5_core.ko":
                ("gpufabric test marker, not a kernel module: mlx5_core of fake DOCA-OFED %s (%s) for %s\n"
                 % (release, version, k), 0o644)
            for k in kernels
        }
    if name == "doca-ofed":
        return {"usr/share/doc/doca-ofed/README.gpufabric-test":
                ("Meta package of the fake DOCA-OFED %s (gpufabric test repository).\n" % release, 0o644)}
    raise BuildError("unknown package %s" % name)


def package_control(name: str, version: str, release: str, versions: dict[str, str], kernels: list[str]) -> str:
    fields = [
        ("Package", name),
        ("Version", version),
        ("Architecture", "all"),
        ("Maintainer", MAINTAINER),
        ("Section", "net" if name != "mlnx-ofed-kernel-modules" else "kernel"),
        ("Priority", "optional"),
    ]
    if name == "doca-ofed":
        deps = ", ".join("%s (= %s)" % (dep, versions[dep]) for dep in
                         ("ofed-scripts", "mlnx-ofed-kernel-utils", "mlnx-ofed-kernel-modules"))
        fields.append(("Depends", deps))
    what = {
        "doca-ofed": "DOCA-OFED %s meta package" % release,
        "ofed-scripts": "ofed_info of DOCA-OFED %s" % release,
        "mlnx-ofed-kernel-utils": "openibd of DOCA-OFED %s" % release,
        "mlnx-ofed-kernel-modules": "mlx5 modules of DOCA-OFED %s for %s" % (release, ", ".join(kernels)),
    }[name]
    fields.append(("Description", "FAKE %s (gpufabric tests)\n This package is a test double: it only "
                                  "looks like NVIDIA's. Never install it on a real host." % what))
    return "".join("%s: %s\n" % kv for kv in fields)


def build_deb(workdir: Path, outdir: Path, name: str, version: str, release: str,
              versions: dict[str, str], kernels: list[str]) -> Path:
    root = workdir / ("%s_%s" % (name, version))
    if root.exists():
        shutil.rmtree(root)
    for rel, (content, mode) in package_files(name, version, release, kernels).items():
        _write(root / rel, content, mode)
    _write(root / "DEBIAN" / "control", package_control(name, version, release, versions, kernels))
    for path in [root, *root.rglob("*")]:
        os.utime(path, (EPOCH, EPOCH), follow_symlinks=False)
    outdir.mkdir(parents=True, exist_ok=True)
    deb = outdir / ("%s_%s_all.deb" % (name, version.split(":")[-1]))
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(EPOCH), LANG="C", LC_ALL="C")
    run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root), str(deb)], env=env)
    return deb


# ------------------------------------------------------------------------------ repository index
def _hashes(data: bytes) -> dict[str, str]:
    return {"MD5sum": hashlib.md5(data).hexdigest(), "SHA1": hashlib.sha1(data).hexdigest(),  # noqa: S324
            "SHA256": hashlib.sha256(data).hexdigest()}


def packages_stanza(deb: Path, repo: Path) -> str:
    """One Packages entry: the control fields, then Filename, Size and the checksums."""
    control = run(["dpkg-deb", "--field", str(deb)], env=dict(os.environ, LANG="C", LC_ALL="C"))
    data = deb.read_bytes()
    sums = _hashes(data)
    extra = [("Filename", "./" + deb.relative_to(repo).as_posix()), ("Size", str(len(data))),
             ("MD5sum", sums["MD5sum"]), ("SHA1", sums["SHA1"]), ("SHA256", sums["SHA256"])]
    body = control.rstrip("\n").split("\n")
    # Description goes last in the files dpkg-scanpackages writes; keep control order otherwise.
    desc_at = next(i for i, line in enumerate(body) if line.startswith("Description:"))
    head, desc = body[:desc_at], body[desc_at:]
    return "\n".join(head + ["%s: %s" % kv for kv in extra] + desc) + "\n"


def write_index(repo: Path) -> None:
    """Packages, Packages.gz and Release of a flat repository (`deb URL ./`)."""
    debs = sorted(repo.glob("*.deb"))
    text = "\n".join(packages_stanza(d, repo) for d in debs)
    (repo / "Packages").write_text(text)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="Packages", mode="wb", fileobj=buf, mtime=EPOCH) as gz:
        gz.write(text.encode())
    (repo / "Packages.gz").write_bytes(buf.getvalue())
    files = [(name, (repo / name).read_bytes()) for name in ("Packages", "Packages.gz")]
    lines = [
        "Origin: gpufabric-test",
        "Label: gpufabric test repository (fake DOCA-OFED)",
        "Architectures: all amd64 arm64",
        "Date: " + formatdate(time.time(), usegmt=True),
        "Description: FAKE driver packages for the gpufabric.mlnx ofed role tests",
    ]
    for field, algo in (("MD5Sum", "md5"), ("SHA1", "sha1"), ("SHA256", "sha256")):
        lines.append(field + ":")
        for name, data in files:
            lines.append(" %s %8d %s" % (hashlib.new(algo, data).hexdigest(), len(data), name))
    (repo / "Release").write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------------------ signing
class Signer:
    """A throw-away gpg home with one signing key (ed25519, no passphrase)."""

    def __init__(self):
        if not shutil.which("gpg"):
            raise BuildError("gpg is missing (apt-get install gpg), or build with --no-sign")
        self.home = Path(tempfile.mkdtemp(prefix="gpufabric-ofedrepo-gpg-"))
        self.home.chmod(0o700)
        self.gpg = ["gpg", "--batch", "--quiet", "--homedir", str(self.home), "--pinentry-mode", "loopback",
                    "--passphrase", ""]
        run(self.gpg + ["--quick-gen-key", KEY_UID, "ed25519", "sign", "2y"])

    def export(self, dest: Path) -> None:
        dest.write_bytes(subprocess.run(self.gpg + ["--export"], capture_output=True, check=True).stdout)

    def sign(self, repo: Path) -> None:
        for name in ("InRelease", "Release.gpg"):
            (repo / name).unlink(missing_ok=True)
        run(self.gpg + ["--clearsign", "--digest-algo", "SHA256", "-o", str(repo / "InRelease"), str(repo / "Release")])
        run(self.gpg + ["--detach-sign", "--armor", "--digest-algo", "SHA256", "-o", str(repo / "Release.gpg"),
                        str(repo / "Release")])

    def close(self) -> None:
        subprocess.run(["gpgconf", "--homedir", str(self.home), "--kill", "gpg-agent"], capture_output=True, check=False)
        shutil.rmtree(self.home, ignore_errors=True)


# ------------------------------------------------------------------------------ tarball
def build_tarball(src_repo: Path, dest: Path) -> str:
    """A reproducible .tgz whose <name>/DEBS/ is the flat repository src_repo; returns its sha256."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        def add_dir(arcname):
            info = tarfile.TarInfo(arcname)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, EPOCH
            tar.addfile(info)
        add_dir(TARBALL_NAME)
        add_dir(TARBALL_NAME + "/DEBS")
        for path in sorted(src_repo.iterdir()):
            data = path.read_bytes()
            info = tarfile.TarInfo("%s/DEBS/%s" % (TARBALL_NAME, path.name))
            info.size, info.mode, info.mtime = len(data), 0o644, EPOCH
            tar.addfile(info, io.BytesIO(data))
        readme = ("Offline bundle of the fake DOCA-OFED %s (gpufabric tests).\n"
                  "DEBS/ is a flat apt repository: deb [trusted=yes] file:/<dir>/DEBS ./\n" % TARBALL_RELEASE).encode()
        info = tarfile.TarInfo(TARBALL_NAME + "/README")
        info.size, info.mode, info.mtime = len(readme), 0o644, EPOCH
        tar.addfile(info, io.BytesIO(readme))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=EPOCH) as gz:
        gz.write(raw.getvalue())
    dest.write_bytes(out.getvalue())
    return hashlib.sha256(out.getvalue()).hexdigest()


# ------------------------------------------------------------------------------ main
def build(out: Path, kernels: list[str], sign: bool = True) -> dict:
    if not shutil.which("dpkg-deb"):
        raise BuildError("dpkg-deb is missing: build the repository on a Debian/Ubuntu host")
    if not kernels:
        raise BuildError("at least one --kernel is needed")
    out.mkdir(parents=True, exist_ok=True)
    for sub in ("main", "badkernel", "tarball", "work", "tarball-repo"):
        shutil.rmtree(out / sub, ignore_errors=True)
    work = out / "work"
    manifest = {"kernels": kernels, "fake_kernel": FAKE_KERNEL, "releases": {}, "signed": sign,
                "repositories": {"main": "main/", "badkernel": "badkernel/"}}
    for release, info in RELEASES.items():
        versions = info["packages"]
        for name, version in versions.items():
            build_deb(work, out / "main", name, version, release, versions, kernels)
        manifest["releases"][release] = {"ofed_info_s": "OFED-internal-%s:" % info["ofed_info"],
                                         "packages": dict(versions)}
    write_index(out / "main")
    # badkernel: the same release, its modules package built for FAKE_KERNEL only.
    bad = dict(RELEASES[BAD_RELEASE]["packages"], **{"mlnx-ofed-kernel-modules": BAD_MODULES_VERSION})
    for name, version in bad.items():
        build_deb(work, out / "badkernel", name, version, BAD_RELEASE, bad, [FAKE_KERNEL])
    write_index(out / "badkernel")
    manifest["badkernel"] = {"release": BAD_RELEASE, "packages": bad, "kernels": [FAKE_KERNEL]}
    # The offline bundle: release 24.10 only, unsigned (its sha256 in the matrix is the trust).
    versions = RELEASES[TARBALL_RELEASE]["packages"]
    for name, version in versions.items():
        build_deb(work, out / "tarball-repo", name, version, TARBALL_RELEASE, versions, kernels)
    write_index(out / "tarball-repo")
    tgz = out / "tarball" / (TARBALL_NAME + ".tgz")
    manifest["tarball"] = {"file": "tarball/" + tgz.name, "release": TARBALL_RELEASE,
                           "sha256": build_tarball(out / "tarball-repo", tgz), "packages": dict(versions)}
    shutil.rmtree(out / "tarball-repo")
    shutil.rmtree(work)
    if sign:
        signer = Signer()
        try:
            signer.export(out / "keyring.gpg")
            signer.sign(out / "main")
        finally:
            signer.close()
        manifest["keyring"] = "keyring.gpg"
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path, help="output directory (recreated)")
    parser.add_argument("--kernel", action="append", default=[],
                        help="kernel release to build the mlx5 marker for (repeatable; default: this "
                             "machine's `uname -r` and %s)" % FAKE_KERNEL)
    parser.add_argument("--no-sign", action="store_true", help="leave main/ unsigned (no gpg needed)")
    args = parser.parse_args(argv)
    kernels = args.kernel or [os.uname().release, FAKE_KERNEL]
    try:
        manifest = build(args.out.resolve(), list(dict.fromkeys(kernels)), sign=not args.no_sign)
    except BuildError as exc:
        print("ofedrepo: error: %s" % exc, file=sys.stderr)
        return 1
    print("ofedrepo: built %s (releases %s; kernels %s; tarball sha256 %s)" % (
        args.out, ", ".join(manifest["releases"]), ", ".join(manifest["kernels"]), manifest["tarball"]["sha256"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
