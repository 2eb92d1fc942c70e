"""The simulator's firmware image format.

A file that starts with the magic line below, followed by one JSON object:
{"psid", "fw_version", "device_id", "part_numbers", "roms": {"PXE": "3.7.500", ...},
 "release_date", "description", "image_type", "security"}; padded with newlines to a multiple
of 4 bytes (real tools reject images whose size is not 4-byte aligned).
"""
import json
import os

MAGIC = "MLXSIM-FW-IMAGE 1"


class ImageError(Exception):
    def __init__(self, kind, message):
        Exception.__init__(self, message)
        self.kind = kind


def write(path, meta):
    body = (MAGIC + "\n" + json.dumps(meta, sort_keys=True, indent=1) + "\n").encode()
    body += b"\n" * ((-len(body)) % 4)
    with open(path, "wb") as fh:
        fh.write(body)


def read(path):
    """Return the image metadata or raise ImageError with the real tools' wording."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise ImageError("missing", 'Can not open file "%s" - No such file or directory' % path)
    except IsADirectoryError:
        raise ImageError("missing", 'Can not open file "%s" - Is a directory' % path)
    except OSError as e:
        raise ImageError("missing", 'Can not open file "%s" - %s' % (path, e.strerror))
    if len(data) % 4:
        raise ImageError("unaligned", "Image size should be 4-bytes aligned. Make sure file %s is in the right "
                                      "format (binary image)" % path)
    if not data or not data.strip(b"\x00"):
        raise ImageError("novalid", "No valid image found")
    head, _sep, rest = data.partition(b"\n")
    if head.decode(errors="replace").strip() != MAGIC:
        raise ImageError("invalid", "Invalid Firmware Format (found FS Gen 1)")
    try:
        meta = json.loads(rest.decode())
    except ValueError:
        raise ImageError("invalid", "Invalid Firmware Format (found FS Gen 1)")
    meta.setdefault("roms", {})
    meta.setdefault("part_numbers", [])
    meta.setdefault("image_type", "FS4")
    meta.setdefault("security", "secure-fw")
    meta.setdefault("release_date", "")
    meta.setdefault("description", "")
    return meta


def exists(path):
    return os.path.exists(path)
