"""Small helpers shared by the tool front-ends."""
import os
import sys

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def out(text=""):
    sys.stdout.write(text)


def outln(text=""):
    sys.stdout.write(text + "\n")


def errln(text=""):
    sys.stdout.flush()
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def read_answer():
    """Read one line from stdin like std::getline (EOF -> empty)."""
    sys.stdout.flush()
    try:
        line = sys.stdin.readline()
    except (OSError, ValueError):
        return ""
    return line.rstrip("\r\n")


def data_file(name):
    with open(os.path.join(DATA, name)) as fh:
        return fh.read()


def jsoncpp_dumps(value):
    """Serialise like jsoncpp's StreamWriterBuilder default (tab indent, " : ", sorted keys,
    nested objects opened on their own line)."""
    import json
    parts = []

    def indent(level):
        parts.append("\n" + "\t" * level)

    def scalar(v):
        if v is True:
            return "true"
        if v is False:
            return "false"
        if v is None:
            return "null"
        if isinstance(v, (int, float)):
            return str(v)
        return json.dumps(str(v))

    def write(v, level, indented):
        if isinstance(v, dict):
            if not v:
                parts.append("{}")
                return
            if not indented:
                indent(level)
            parts.append("{")
            keys = sorted(v)
            for i, k in enumerate(keys):
                indent(level + 1)
                parts.append(json.dumps(str(k)) + " : ")
                write(v[k], level + 1, False)
                if i < len(keys) - 1:
                    parts.append(",")
            indent(level)
            parts.append("}")
        elif isinstance(v, list):
            if not v:
                parts.append("[]")
                return
            parts.append("[ " + ", ".join(scalar(x) for x in v) + " ]")
        else:
            parts.append(scalar(v))

    write(value, 0, True)
    return "".join(parts)
