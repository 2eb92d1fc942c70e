# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fake Cumulus Linux images: one header line the install parses, then filler text."""
import hashlib
import json
import os
import re
import urllib.parse
import urllib.request

from . import model

MAGIC = "#!nvuesim-image "
FILE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,200}\Z", re.ASCII)


class ImageError(Exception):
    pass


def mkimage(path, release, build_id=None, build_date=None):
    model.check_release(release)
    build_id = build_id or model.build_id_for(release)
    if not model.BUILD_ID_RE.match(build_id) or not build_id.startswith(release + "."):
        raise ImageError("build-id %r: expected %s.NNNN" % (build_id, release))
    header = {"product": "cumulus-linux", "release": release, "build-id": build_id,
              "build-date": build_date or "Thu Feb 19 20:27:27 UTC 2026", "arch": "amd64", "platform": "mlx"}
    body = "".join("payload %04d %s\n" % (n, hashlib.sha256(("%s-%d" % (build_id, n)).encode()).hexdigest())
                   for n in range(64))
    with open(path, "w") as fh:
        fh.write(MAGIC + json.dumps(header, sort_keys=True) + "\n" + body)
    return header


def parse(path):
    """The header of an image file, or ImageError naming the file and what is wrong."""
    name = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            first = fh.readline(4096).decode("utf-8", "replace")
    except OSError as exc:
        raise ImageError("image %s: cannot be read (%s)" % (name, exc.strerror)) from None
    if not first.startswith(MAGIC):
        raise ImageError("image %s: not a Cumulus Linux image (no image header)" % name)
    try:
        header = json.loads(first[len(MAGIC):])
        model.check_release(header["release"])
        if not model.BUILD_ID_RE.match(header["build-id"]):
            raise ValueError(header["build-id"])
    except (ValueError, KeyError, TypeError):
        raise ImageError("image %s: corrupt image header" % name) from None
    return header


def sha256_of(path):
    """The sha256 of a fetched file, as sha256sum prints it (listed in GET /system/image/files: [invented])."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(65536), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_name(url):
    name = os.path.basename(urllib.parse.urlsplit(url).path)
    if not FILE_RE.match(name or ""):
        raise ImageError("remote-url %r: the URL must end in an image file name" % url)
    return name


def download(url, directory, timeout=30):
    """Download an http(s):// or file:// URL into ``directory``; returns (name, path, size)."""
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("http", "https", "file"):
        raise ImageError("remote-url %r: only http://, https:// and file:// are supported" % url)
    name = file_name(url)
    os.makedirs(directory, exist_ok=True)
    dest = os.path.join(directory, name)
    tmp = dest + ".part"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(tmp, "wb") as out:  # noqa: S310
            size = 0
            while True:
                chunk = resp.read(65536)
                if not chunk:
                    break
                out.write(chunk)
                size += len(chunk)
        os.replace(tmp, dest)
    except (OSError, ValueError) as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise ImageError("fetch %s failed: %s" % (url, getattr(exc, "reason", None) or exc)) from None
    return name, dest, size
