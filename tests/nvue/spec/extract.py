"""Extract the parts of NVIDIA's NVUE OpenAPI document that some paths touch.

    extract.py OPENAPI_JSON PATH... [--repository R] [--path P] [--commit C] > out.json

For each PATH (a key of "paths", e.g. "/revision/{revision-id}") the path object is
copied verbatim, and every "#/x-defs/NAME" $ref it contains is followed
transitively; each definition reached is copied verbatim under "x-defs".
A $ref whose target is missing is listed under "unresolved".  "offsets" gives the
character offset in OPENAPI_JSON where each copied path / definition starts.
Standard library only; no network access.
"""
import argparse
import json
import re
import sys

REF = "#/x-defs/"


def refs_in(node):
    """Yield every x-defs name referenced anywhere inside node."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith(REF):
                yield value[len(REF):]
            else:
                yield from refs_in(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs_in(item)


def offset_of(text, key):
    """Offset of the line that opens '"key": {' in the original text (or None)."""
    match = re.search(r'\n\s*' + re.escape(json.dumps(key)) + r': ', text)
    return match.start() + 1 if match else None


def extract(text, paths, source):
    doc = json.loads(text)
    xdefs = doc.get("x-defs", {})
    out = {"source": dict(source, title=doc["info"]["title"], version=doc["info"]["version"]),
           "paths": {}, "x-defs": {}, "unresolved": [], "offsets": {}}
    todo = []
    for path in paths:
        if path not in doc["paths"]:
            sys.exit(f"no such path in the document: {path}")
        out["paths"][path] = doc["paths"][path]
        out["offsets"][path] = offset_of(text, path)
        todo.extend(refs_in(doc["paths"][path]))
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name not in xdefs:
            out["unresolved"].append(REF + name)
            continue
        out["x-defs"][name] = xdefs[name]
        out["offsets"][name] = offset_of(text, name)
        todo.extend(refs_in(xdefs[name]))
    out["x-defs"] = dict(sorted(out["x-defs"].items()))
    out["unresolved"].sort()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("openapi_json")
    ap.add_argument("paths", nargs="+", metavar="PATH")
    ap.add_argument("--repository", default="CumulusNetworks/docs")
    ap.add_argument("--path", default="static/cumulus-linux-53/api/openapi.json")
    ap.add_argument("--commit", default="9fdbe121c69d75e93d4cc2333535fcb7e45c1791")
    args = ap.parse_args()
    with open(args.openapi_json, encoding="utf-8") as f:
        text = f.read()
    source = {"repository": args.repository, "path": args.path, "commit": args.commit}
    json.dump(extract(text, args.paths, source), sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
