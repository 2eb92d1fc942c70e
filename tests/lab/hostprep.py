"""Host-side helpers for the test lab: the apt mirror to debootstrap from, and containers.conf.

Pure functions (unit-tested in tests/unit/lab) plus a tiny CLI that setup-host.sh and
image.sh call:

    hostprep.py apt-mirror [--suite bookworm] [--root /]
        print the Debian mirror URI the machine's apt sources use for that suite
    hostprep.py containers-conf [--path /etc/containers/containers.conf]
        merge the settings podman needs on these machines into that file, print what changed

Standard library only: it runs with the system python3 before any venv exists.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

# What podman needs here (DESIGN.md, "The test lab"): crun fails on cgroups v1 hybrid mode,
# and the default ulimits podman derives from the host are refused by runc.
CONTAINERS_CONF_SETTINGS: dict[str, dict[str, str]] = {
    "engine": {"runtime": '"runc"'},
    "containers": {"default_ulimits": '["nofile=1024:1024", "nproc=4096:4096"]'},
}


# ---------------------------------------------------------------------------------------------
# apt sources
# ---------------------------------------------------------------------------------------------
def parse_one_line_sources(text: str) -> list[dict]:
    """Entries of a classic sources.list: ``deb [opts] URI SUITE [COMPONENT...]``."""
    entries = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        line = re.sub(r"\[[^\]]*\]", " ", line)  # drop the [arch=... signed-by=...] options
        fields = line.split()
        if len(fields) < 3 or fields[0] not in ("deb", "deb-src"):
            continue
        entries.append({"types": [fields[0]], "uris": [fields[1]], "suites": [fields[2]]})
    return entries


def parse_deb822_sources(text: str) -> list[dict]:
    """Entries of a deb822 ``.sources`` file (stanzas separated by blank lines)."""
    entries = []
    stanza: dict[str, str] = {}
    last_key = None

    def flush():
        if not stanza:
            return
        if stanza.get("enabled", "yes").strip().lower() in ("no", "false", "0"):
            return
        entries.append(
            {
                "types": stanza.get("types", "").split(),
                "uris": stanza.get("uris", "").split(),
                "suites": stanza.get("suites", "").split(),
            }
        )

    for raw in text.splitlines() + [""]:
        if raw.startswith("#"):
            continue
        if not raw.strip():
            flush()
            stanza, last_key = {}, None
            continue
        if raw[0] in " \t" and last_key:  # continuation line
            stanza[last_key] += " " + raw.strip()
            continue
        key, sep, value = raw.partition(":")
        if not sep:
            continue
        last_key = key.strip().lower()
        stanza[last_key] = value.strip()
    return entries


def read_apt_sources(root: str | os.PathLike = "/") -> list[dict]:
    """Every enabled entry apt itself would read (sources.list, sources.list.d/*.list|*.sources)."""
    etc = Path(root) / "etc" / "apt"
    entries: list[dict] = []
    main = etc / "sources.list"
    if main.is_file():
        entries += parse_one_line_sources(main.read_text(errors="replace"))
    parts = etc / "sources.list.d"
    if parts.is_dir():
        for path in sorted(parts.iterdir()):
            if path.suffix == ".list":
                entries += parse_one_line_sources(path.read_text(errors="replace"))
            elif path.suffix == ".sources":
                entries += parse_deb822_sources(path.read_text(errors="replace"))
    return entries


def pick_mirror(entries: list[dict], suite: str) -> str:
    """The URI of the binary (``deb``) archive that serves ``suite``.

    Preference: an entry listing exactly that suite; else an entry with a plain release suite
    (no ``-updates``/``-security`` suffix, not a security archive) — its mirror serves every
    release. Raises LookupError when the sources name no Debian archive at all.
    """
    debs = [e for e in entries if "deb" in e["types"] and e["uris"]]
    for entry in debs:
        if suite in entry["suites"]:
            return entry["uris"][0].rstrip("/")
    for entry in debs:
        uri = entry["uris"][0]
        if "security" in uri:
            continue
        if any(s and "-" not in s and "/" not in s for s in entry["suites"]):
            return uri.rstrip("/")
    raise LookupError(f"no 'deb' entry for suite {suite!r} in the apt sources")


# ---------------------------------------------------------------------------------------------
# containers.conf (TOML) — merged line by line so comments and other settings survive
# ---------------------------------------------------------------------------------------------
_HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\-]+)\s*\]\s*(#.*)?$")


def _bracket_depth(line: str) -> int:
    """Net count of '[' minus ']' outside quoted strings and comments."""
    depth, quote = 0, None
    for ch in line:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            break
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
    return depth


def merge_toml_settings(text: str, settings: dict[str, dict[str, str]]) -> tuple[str, list[str]]:
    """Set ``settings[section][key] = literal`` in TOML ``text``; return (new text, changes).

    Existing keys are replaced in place (a multi-line array value included), missing keys are
    added right under their section header, missing sections are appended. Every other line,
    comments included, is kept as it was. ``changes`` lists ``section.key`` for each value
    that was different or absent.
    """
    lines = text.splitlines()
    changes: list[str] = []
    for section, values in settings.items():
        for key, literal in values.items():
            wanted = f"{key} = {literal}"
            start = next(
                (i for i, text in enumerate(lines) if (m := _HEADER.match(text)) and m.group(1) == section),
                None,
            )
            if start is None:
                if lines and lines[-1].strip():
                    lines.append("")
                lines += [f"[{section}]", wanted]
                changes.append(f"{section}.{key}")
                continue
            end = next((i for i in range(start + 1, len(lines)) if _HEADER.match(lines[i])), len(lines))
            key_re = re.compile(rf"^\s*{re.escape(key)}\s*=")
            at = next((i for i in range(start + 1, end) if key_re.match(lines[i])), None)
            if at is None:
                lines.insert(start + 1, wanted)
                changes.append(f"{section}.{key}")
                continue
            stop = at + 1
            depth = _bracket_depth(lines[at].split("=", 1)[1])
            while depth > 0 and stop < end:
                depth += _bracket_depth(lines[stop])
                stop += 1
            current = "\n".join(lines[at:stop])
            if not _same_assignment(current, wanted):
                lines[at:stop] = [wanted]
                changes.append(f"{section}.{key}")
    return "\n".join(lines) + "\n", changes


def _same_assignment(current: str, wanted: str) -> bool:
    try:
        import tomllib

        return tomllib.loads(current) == tomllib.loads(wanted)
    except Exception:  # no tomllib (Python < 3.11) or a value we cannot parse alone
        return re.sub(r"\s+", "", current) == re.sub(r"\s+", "", wanted)


def merge_containers_conf(path: Path) -> list[str]:
    """Merge CONTAINERS_CONF_SETTINGS into ``path`` (created if absent); return the changes."""
    text = path.read_text() if path.exists() else ""
    new, changes = merge_toml_settings(text, CONTAINERS_CONF_SETTINGS)
    try:
        import tomllib  # Python 3.11+: check we still write valid TOML

        tomllib.loads(new)
    except ModuleNotFoundError:
        pass
    if changes:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".gpufabric-tmp")
        tmp.write_text(new)
        os.replace(tmp, path)
    return changes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_mirror = sub.add_parser("apt-mirror", help="print the Debian mirror of the apt sources")
    p_mirror.add_argument("--suite", default="bookworm")
    p_mirror.add_argument("--root", default="/")
    p_conf = sub.add_parser("containers-conf", help="merge the lab's podman settings")
    p_conf.add_argument("--path", type=Path, default=Path("/etc/containers/containers.conf"))
    args = parser.parse_args(argv)

    if args.cmd == "apt-mirror":
        try:
            print(pick_mirror(read_apt_sources(args.root), args.suite))
        except LookupError as exc:
            print(f"hostprep: {exc}", file=sys.stderr)
            return 1
        return 0
    changes = merge_containers_conf(args.path)
    if changes:
        print(f"{args.path}: set {', '.join(changes)}")
    else:
        print(f"{args.path}: already has the lab settings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
