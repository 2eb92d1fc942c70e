# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Config tree operations: JSON objects, id-keyed collections as objects, scalar leaves, ``{}`` = present."""
import copy
from urllib.parse import unquote

_MISSING = object()


def split_path(raw):
    """'/interface/swp1/link' -> ['interface', 'swp1', 'link']; each segment is URL-unquoted after the split
    (an id with a '/' arrives as %2F)."""
    return [unquote(part) for part in raw.strip("/").split("/") if part != ""]


def get(tree, keys, default=_MISSING):
    node = tree
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            if default is _MISSING:
                raise KeyError(".".join(keys))
            return default
        node = node[key]
    return node


def merge(target, patch):
    """Deep merge ``patch`` into ``target`` (in place): dicts merge, ``None`` unsets, anything else replaces."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        elif isinstance(value, dict):
            target[key] = strip_nulls(value)
        else:
            target[key] = copy.deepcopy(value)
    return target


def strip_nulls(value):
    if isinstance(value, dict):
        return {k: strip_nulls(v) for k, v in value.items() if v is not None}
    return copy.deepcopy(value)


def patch_at(tree, keys, body):
    """PATCH ``body`` at ``keys``; returns the merged subtree. A non-dict body replaces the leaf."""
    if not keys:
        if not isinstance(body, dict):
            raise ValueError("a PATCH of the root needs a JSON object")
        merge(tree, body)
        return tree
    node = tree
    for key in keys[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    last = keys[-1]
    if body is None:
        node.pop(last, None)
        return None
    if isinstance(body, dict):
        if not isinstance(node.get(last), dict):
            node[last] = {}
        merge(node[last], body)
    else:
        node[last] = copy.deepcopy(body)
    return node[last]


def delete_at(tree, keys):
    """Unset the subtree at ``keys`` (the root: the whole config). Returns True when something was removed."""
    if not keys:
        had = bool(tree)
        tree.clear()
        return had
    parent = get(tree, keys[:-1], None)
    if isinstance(parent, dict) and keys[-1] in parent:
        del parent[keys[-1]]
        return True
    return False


def diff(old, new):
    """The changes that turn ``old`` into ``new``: (set, unset). ``set`` holds new/changed values, ``unset`` the
    removed keys (leaves as None, a removed subtree as the subtree with None leaves)."""
    sets, unsets = {}, {}
    old = old if isinstance(old, dict) else {}
    new = new if isinstance(new, dict) else {}
    for key, value in new.items():
        if key not in old:
            sets[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(old[key], dict):
            s, u = diff(old[key], value)
            if s:
                sets[key] = s
            if u:
                unsets[key] = u
        elif value != old[key]:
            sets[key] = copy.deepcopy(value)
    for key, value in old.items():
        if key not in new:
            unsets[key] = _nulled(value)
    return sets, unsets


def _nulled(value):
    if isinstance(value, dict) and value:
        return {k: _nulled(v) for k, v in value.items()}
    return None


def diff_list(old, new):
    """The REST/CLI diff shape (invented): [{"set": {...}}, {"unset": {...}}], each only if non-empty."""
    sets, unsets = diff(old, new)
    out = []
    if sets:
        out.append({"set": sets})
    if unsets:
        out.append({"unset": unsets})
    return out


def diff_tree(old, new):
    """The REST diff (``GET /?rev=A&diff=B``): the specification answers it with the root configuration schema, a
    tree of what differs. What changes or is added appears with its new value; how a deletion appears is not
    documented - here a removed key is ``null`` (the schema's values are nullable) [invented]."""
    sets, unsets = diff(old, new)
    out = copy.deepcopy(sets)
    _nulls(out, unsets)
    return out


def _nulls(out, unsets):
    for key, value in unsets.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            _nulls(out[key], value)
        elif isinstance(value, dict):
            out[key] = {}
            _nulls(out[key], value)
        else:
            out[key] = None


def replay(base, changes_from, changes_to):
    """Apply the changes that turn ``changes_from`` into ``changes_to`` onto a copy of ``base``."""
    out = copy.deepcopy(base)
    sets, unsets = diff(changes_from, changes_to)
    _unset(out, unsets)
    merge(out, sets)
    return out


def _unset(tree, unsets):
    for key, value in unsets.items():
        if key not in tree:
            continue
        if isinstance(value, dict) and isinstance(tree[key], dict):
            _unset(tree[key], value)
        else:
            del tree[key]


def flatten(tree, prefix=()):
    """Dotted leaves: {'a': {'b': 1}} -> {'a.b': 1}; an empty object is a leaf ``{}``."""
    out = {}
    for key, value in tree.items():
        here = prefix + (key,)
        if isinstance(value, dict) and value:
            out.update(flatten(value, here))
        else:
            out[".".join(here)] = value
    return out
