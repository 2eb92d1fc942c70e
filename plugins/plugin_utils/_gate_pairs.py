# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validation gate's pairing plan: which server tests which peer on which rail (perftest, ib_write_bw and
ib_write_lat, measured in both directions by the caller), in rounds whose number does not grow with the cluster.

- ``pairs(plan, hosts, peers, cross_leaf)``: the rounds (every rail of a round runs at once), the hosts left
  without a peer on a rail with the reason, and per host its pairs.

Reachability. On rail k, two hosts can test each other when they are on the same leaf of rail k, or on two leaves
that both have uplinks to the spines (``plan.leaves[leaf].uplinks``). So the hosts of a rail fall into groups in
which every host reaches every other: all the hosts on leaves with uplinks, and each leaf without uplinks on its
own (with ``cross_leaf="never"``: each leaf on its own). ``"always"`` forbids pairs on one leaf (a leaf without
uplinks then leaves its hosts unpaired); ``"auto"`` prefers pairs through two leaves and takes one leaf when that
is all there is.

Pairing a group. Its hosts under test are put in leaf order (the leaves in the order the plan first names one of
their hosts, each leaf's hosts in plan order) and the first half is paired with the second, position p with
p + n/2: with m leaves of equal size, host i of leaf j meets host i of leaf j + m/2 - the leaves rotated by half,
so every leaf sends its traffic through the spines to another leaf, and no pair is on one leaf unless one leaf
holds more than half the group (then as few as can be). In a round:

1. the hosts that need a peer are paired by halves; a pair through two leaves is kept;
2. (``auto``, ``always``) each host left - the pair was on one leaf, or the count was odd - takes a free helper
   on another leaf, the next leaf after its own that has one: in round 1 the reference peers (``peers``: hosts not
   under test, e.g. those that passed an earlier run), from round 2 on any host of the group that already has a
   peer (a helper is in one pair per round and rail; it may be reused in the next round);
3. (``auto``, ``never``) the hosts still left are paired by halves whatever their leaves, and an odd one takes a
   free helper on its own leaf;
4. who is still left needs another round; a round that pairs nobody ends the group, its hosts unpaired.

So an even number of hosts under test in every group is one round, an odd one two (the odd host meets, in round
2, a host that was paired in round 1 - or a reference peer in round 1 when there is one), whatever the size; only
``always`` with one leaf holding more than half a group needs more (that leaf's hosts a share at a time).

A group's pairing depends only on its hosts, their leaves' order and which hosts are under test, and is made once
per such group: a server whose rails are cabled alike (a leaf per SU or per rack on every rail) meets the same
peer on every rail, as NCCL's rail groups would have it. In a pair the first of the halves (or the helper) is the
``server``, the other the ``client``. Everything is in plan order; the same inputs give the same plan. Linear in
the hosts times the rails.

Pure: no I/O.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Mapping

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._validate import close_names, kind_of, quoted
from ansible_collections.gpufabric.mlnx.plugins.plugin_utils._roles import host_names

CROSS_LEAF = ("auto", "never", "always")
WHAT = "gate_pairs"
SPINES = None        # the group key of the leaves with uplinks (a leaf's key is its name)
ALONE, NO_OTHER_LEAF, NO_UPLINKS = "alone", "no_other_leaf", "no_uplinks"


class GatePairsError(MlnxError):
    """Inputs of the gate's pairing plan that cannot be used, naming the parameter."""


def _not_a_plan(words):
    return GatePairsError("%s: the rail plan must be the result of gpufabric.mlnx.rail_plan: %s" % (WHAT, words),
                          parameter="plan")


def _names(value, parameter, known):
    """The names of ``value`` (a list of host names of the plan), without repeats; the error names the first
    unknown one, what is allowed and the closest names."""
    out = []
    for index, name in enumerate(host_names(value, WHAT, parameter)):
        if name not in known:
            close = close_names(name, known)
            raise GatePairsError("%s: %s[%d] %s is not a host of the rail plan (allowed: the plan's %d hosts%s)" % (
                WHAT, parameter, index, quoted(name), len(known),
                "; closest: %s" % ", ".join(close) if close else ""),
                parameter="%s[%d]" % (parameter, index), allowed="a host of the rail plan")
        out.append(name)
    return list(dict.fromkeys(out))


def _rails_of(host, entries, leaves):
    """``[(rail, entry, leaf has uplinks)]`` of one host of the plan, checked."""
    if not isinstance(entries, list):
        raise _not_a_plan("plan.hosts[%s] is %s, not a list of rails" % (quoted(host), kind_of(entries)))
    out, seen = [], set()
    for index, entry in enumerate(entries):
        where = "plan.hosts[%s][%d]" % (quoted(host), index)
        if not isinstance(entry, Mapping):
            raise _not_a_plan("%s is %s, not a rail" % (where, kind_of(entry)))
        rail, leaf = entry.get("rail"), entry.get("leaf")
        if not isinstance(rail, int) or isinstance(rail, bool) or rail < 0 or rail in seen:
            raise _not_a_plan("%s.rail is %s, not a rail number of its own" % (where, kind_of(rail)))
        if not isinstance(leaf, str):
            raise _not_a_plan("%s.leaf is %s, not a leaf name" % (where, kind_of(leaf)))
        leaf_entry = leaves.get(leaf)
        if not isinstance(leaf_entry, Mapping):
            raise _not_a_plan("%s.leaf %s is not in plan.leaves" % (where, quoted(leaf)))
        uplinks = leaf_entry.get("uplinks")
        seen.add(rail)
        out.append((rail, entry, isinstance(uplinks, Mapping) and len(uplinks) > 0))
    return out


class _Pool:
    """The free helpers of one round, by leaf (leaf ordinals, each leaf's helpers in order)."""

    def __init__(self, members, leaf):
        self.by_leaf: dict[int, deque] = {}
        for pos in members:
            self.by_leaf.setdefault(leaf[pos], deque()).append(pos)
        self.order = sorted(self.by_leaf)

    def other(self, own):
        """A free helper on the next leaf after ``own`` that has one (None: none on another leaf)."""
        count = len(self.order)
        start = bisect.bisect_right(self.order, own)
        for step in range(count):
            key = self.order[(start + step) % count]
            if key != own and self.by_leaf[key]:
                return self.by_leaf[key].popleft()
        return None

    def same(self, own):
        helpers = self.by_leaf.get(own)
        return helpers.popleft() if helpers else None


def _halves(need, pairs, keep_same, leaf):
    """Pair ``need`` (in leaf order) by halves, position p with p + n/2, into ``pairs``; the hosts not paired (a
    pair on one leaf unless ``keep_same``, the odd last one) are returned."""
    half = len(need) // 2
    left = []
    for pos in range(half):
        first, second = need[pos], need[pos + half]
        if keep_same or leaf[first] != leaf[second]:
            pairs.append((first, second))
        else:
            left += (first, second)
    if len(need) % 2:
        left.append(need[-1])
    return left


def _solve(leaf, tested, mode):
    """One group: ``leaf`` the leaf ordinal of each position, ``tested`` whether it is under test. Returns
    ``(rounds, left)``: per round the pairs ``(server, client)`` of positions, and the positions left unpaired."""
    size = len(leaf)
    need = sorted((pos for pos in range(size) if tested[pos]), key=lambda pos: leaf[pos])
    helpers = [pos for pos in range(size) if not tested[pos]]
    rounds = []
    while need:
        pairs: list[tuple[int, int]] = []
        left = _halves(need, pairs, mode == "never", leaf)
        pool = _Pool(helpers, leaf)
        if mode != "never":
            rest = []
            for pos in left:
                helper = pool.other(leaf[pos])
                if helper is None:
                    rest.append(pos)
                else:
                    pairs.append((helper, pos))
            left = rest
        if mode != "always" and left:
            left = _halves(sorted(left, key=lambda pos: leaf[pos]), pairs, True, leaf)
            rest = []
            for pos in left:
                helper = pool.same(leaf[pos])
                if helper is None:
                    rest.append(pos)
                else:
                    pairs.append((helper, pos))
            left = rest
        if not pairs:
            break
        rounds.append(pairs)
        waiting = set(left)
        need = sorted(left, key=lambda pos: leaf[pos])
        helpers = [pos for pos in range(size) if pos not in waiting]
    return rounds, need


def _reason(code, rail, leaf, mode, spines):
    if code == NO_UPLINKS:
        return ("rail %d: its leaf %s has no uplinks to the spines, and cross_leaf=always pairs only through the "
                "spines" % (rail, leaf))
    if code == NO_OTHER_LEAF:
        return ("rail %d: no host under test or reference peer on another leaf with uplinks to reach through the "
                "spines (cross_leaf=always)" % rail)
    if spines:
        return "rail %d: no other host under test or reference peer on the rail, on any leaf" % rail
    if mode == "never":
        return "rail %d: no other host under test or reference peer on its leaf %s (cross_leaf=never)" % (rail, leaf)
    return ("rail %d: no other host under test or reference peer on its leaf %s, which has no uplinks to the spines"
            % (rail, leaf))


def _group_key(rail, has_uplinks, leaf, mode):
    if mode != "never" and has_uplinks:
        return (rail, SPINES)
    return (rail, leaf)


def pairs(plan: Mapping, hosts=None, peers=None, cross_leaf: str = "auto") -> dict:
    """The gate's pairing plan of the rail plan ``plan`` (gpufabric.mlnx.rail_plan): ``hosts`` the hosts under test
    (None: every host of the plan), ``peers`` hosts that may serve as reference peers but are not tested (None:
    none), ``cross_leaf`` V(auto), V(never) or V(always). Returns ``{"rounds": [{"round", "pairs"}], "unpaired":
    [{"host", "rail", "reason"}], "hosts": {host: [{"round", "rail", "peer", "role"}]}, "rounds_count"}``."""
    if not isinstance(plan, Mapping) or not isinstance(plan.get("hosts"), Mapping):
        raise _not_a_plan("not %s" % kind_of(plan))
    leaves = plan.get("leaves")
    if not isinstance(leaves, Mapping):
        raise _not_a_plan("plan.leaves is %s, not a mapping of the leaves" % kind_of(leaves))
    if not isinstance(cross_leaf, str) or cross_leaf not in CROSS_LEAF:
        raise GatePairsError("%s: cross_leaf is %s (allowed: %s)" % (WHAT, kind_of(cross_leaf), ", ".join(CROSS_LEAF)),
                             parameter="cross_leaf", allowed=list(CROSS_LEAF))
    plan_hosts = plan["hosts"]
    if not all(isinstance(name, str) for name in plan_hosts):
        raise _not_a_plan("plan.hosts must map host names to their rails")
    tested = set(plan_hosts) if hosts is None else set(_names(hosts, "hosts", plan_hosts))
    reference = set(_names(peers, "peers", plan_hosts)) - tested
    members = [name for name in plan_hosts if name in tested or name in reference]
    place = {name: index for index, name in enumerate(members)}

    groups: dict[tuple, list] = {}
    for name in members:
        for rail, entry, has_uplinks in _rails_of(name, plan_hosts[name], leaves):
            key = _group_key(rail, has_uplinks, entry["leaf"], cross_leaf)
            groups.setdefault(key, []).append((name, entry))

    solved: dict[tuple, tuple] = {}
    by_round: dict[int, list] = {}
    unpaired = []
    for key in sorted(groups, key=lambda k: (k[0], k[1] is not SPINES, k[1] or "")):
        rail, members_of = key[0], groups[key]
        names = tuple(name for name, _entry in members_of)
        ordinals: dict[str, int] = {}
        leaf = tuple(ordinals.setdefault(entry["leaf"], len(ordinals)) for _name, entry in members_of)
        if cross_leaf == "always" and key[1] is not SPINES:
            left = [pos for pos, name in enumerate(names) if name in tested]
            rounds, code = [], NO_UPLINKS
        else:
            signature = (names, leaf)
            if signature not in solved:
                solved[signature] = _solve(leaf, [name in tested for name in names], cross_leaf)
            rounds, left = solved[signature]
            code = NO_OTHER_LEAF if cross_leaf == "always" else ALONE
        for number, round_pairs in enumerate(rounds, 1):
            by_round.setdefault(number, []).extend((rail, members_of[a], members_of[b]) for a, b in round_pairs)
        for pos in left:
            name, entry = members_of[pos]
            reason = _reason(code, rail, entry["leaf"], cross_leaf, key[1] is SPINES)
            unpaired.append((place[name], rail, {"host": name, "rail": rail, "reason": reason}))

    per_host: dict[str, list] = {name: [] for name in members if name in tested}
    out_rounds = []
    for number in sorted(by_round):
        round_pairs = sorted(by_round[number], key=lambda p: (p[0], place[p[1][0]]))
        listed = []
        for rail, (server, s_entry), (client, c_entry) in round_pairs:
            listed.append({
                "rail": rail, "server": server, "client": client,
                "server_address": s_entry.get("address"), "client_address": c_entry.get("address"),
                "server_interface": s_entry.get("interface"), "client_interface": c_entry.get("interface"),
                "server_leaf": s_entry["leaf"], "client_leaf": c_entry["leaf"],
                "cross_leaf": s_entry["leaf"] != c_entry["leaf"]})
            per_host.setdefault(server, []).append({"round": number, "rail": rail, "peer": client, "role": "server"})
            per_host.setdefault(client, []).append({"round": number, "rail": rail, "peer": server, "role": "client"})
        out_rounds.append({"round": number, "pairs": listed})
    return {"rounds": out_rounds,
            "unpaired": [entry for _place, _rail, entry in sorted(unpaired, key=lambda u: u[:2])],
            "hosts": {name: per_host[name] for name in sorted(per_host, key=place.__getitem__)},
            "rounds_count": len(out_rounds)}
