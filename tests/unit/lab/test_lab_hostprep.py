"""hostprep.py: the apt mirror image.sh debootstraps from, and the containers.conf merge."""
import pytest

DEB822 = """\
Types: deb
# http://snapshot.mirror.example/archive/debian/20250520T000000Z
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""


def test_deb822(hostprep):
    entries = hostprep.parse_deb822_sources(DEB822)
    assert entries[0] == {"types": ["deb"], "uris": ["http://mirror.example/debian"],
                          "suites": ["bookworm", "bookworm-updates"]}
    assert hostprep.pick_mirror(entries, "bookworm") == "http://mirror.example/debian"


def test_deb822_disabled_stanza_and_continuation(hostprep):
    text = ("Types: deb\nURIs: http://a.example/debian\nSuites: bookworm\nEnabled: no\n\n"
            "Types: deb deb-src\nURIs:\n http://b.example/debian/\nSuites: bookworm\n")
    entries = hostprep.parse_deb822_sources(text)
    assert len(entries) == 1
    assert hostprep.pick_mirror(entries, "bookworm") == "http://b.example/debian"


def test_one_line_sources(hostprep):
    text = ("# comment\n"
            "deb-src http://src.example/debian bookworm main\n"
            "deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian/ bookworm main contrib\n"
            "deb http://security.example/debian-security bookworm-security main\n")
    entries = hostprep.parse_one_line_sources(text)
    assert len(entries) == 3
    assert hostprep.pick_mirror(entries, "bookworm") == "http://mirror.example/debian"


def test_other_release_falls_back_to_its_main_archive(hostprep):
    entries = hostprep.parse_deb822_sources(
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: trixie-security\n\n"
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: trixie trixie-updates\n")
    assert hostprep.pick_mirror(entries, "bookworm") == "http://mirror.example/debian"


def test_no_debian_archive(hostprep):
    with pytest.raises(LookupError, match="no 'deb' entry"):
        hostprep.pick_mirror(hostprep.parse_one_line_sources("deb-src http://x/ bookworm main\n"), "bookworm")


def test_read_apt_sources_ignores_disabled_files(hostprep, tmp_path):
    parts = tmp_path / "etc/apt/sources.list.d"
    parts.mkdir(parents=True)
    (parts / "debian.sources").write_text(DEB822)
    (parts / "other.list.disabled-by-farm").write_text("deb http://nope/ bookworm main\n")
    (tmp_path / "etc/apt/sources.list").write_text("# empty\n")
    uris = [e["uris"][0] for e in hostprep.read_apt_sources(tmp_path)]
    assert uris == ["http://mirror.example/debian", "http://mirror.example/debian-security"]


SETTINGS = {"engine": {"runtime": '"runc"'},
            "containers": {"default_ulimits": '["nofile=1024:1024", "nproc=4096:4096"]'}}


def test_merge_into_empty_file(hostprep):
    text, changes = hostprep.merge_toml_settings("", SETTINGS)
    assert changes == ["engine.runtime", "containers.default_ulimits"]
    assert text == ('[engine]\nruntime = "runc"\n\n'
                    '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n')
    assert hostprep.merge_toml_settings(text, SETTINGS) == (text, [])


def test_merge_keeps_other_settings_and_comments(hostprep):
    before = ('# site settings\n[containers]\nlog_size_max = 1000  # keep\n'
              'default_ulimits = [\n  "nofile=65535:65535",\n]\n\n'
              '[engine]\n# runtime = "crun"\nruntime = "crun"\nevents_logger = "file"\n')
    text, changes = hostprep.merge_toml_settings(before, SETTINGS)
    assert sorted(changes) == ["containers.default_ulimits", "engine.runtime"]
    assert "log_size_max = 1000  # keep" in text
    assert '# runtime = "crun"' in text and 'events_logger = "file"' in text
    assert "nofile=65535" not in text
    import tomllib

    parsed = tomllib.loads(text)
    assert parsed["engine"] == {"runtime": "runc", "events_logger": "file"}
    assert parsed["containers"]["default_ulimits"] == ["nofile=1024:1024", "nproc=4096:4096"]
    assert hostprep.merge_toml_settings(text, SETTINGS)[1] == []


def test_equal_value_written_differently_is_left_alone(hostprep):
    before = "[engine]\nruntime='runc'\n[containers]\ndefault_ulimits=['nofile=1024:1024','nproc=4096:4096']\n"
    assert hostprep.merge_toml_settings(before, SETTINGS) == (before, [])


def test_merge_containers_conf_file(hostprep, tmp_path):
    path = tmp_path / "containers" / "containers.conf"
    assert hostprep.merge_containers_conf(path) == ["engine.runtime", "containers.default_ulimits"]
    assert hostprep.merge_containers_conf(path) == []
