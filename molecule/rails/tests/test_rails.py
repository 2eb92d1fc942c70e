"""pytest-testinfra checks of the rails lab after verify.yml: what a person would type on the host.

Run by verify.yml with ``--hosts podman://<container>,...``; MOLECULE_RAIL_PLAN maps each container to its
entries of the rail plan (rail, interface, address, prefix, network, gateway, table).
"""
import ipaddress
import json
import os

PLAN = json.loads(os.environ.get("MOLECULE_RAIL_PLAN", "{}"))
SYSCTLS = {"arp_ignore": 1, "arp_announce": 2, "rp_filter": 2}
RULE_PRIORITY = 1000  # rail k's "from <address>" rule: priority 1000 + k (_rails.RULE_PRIORITY_BASE)


def rails(host):
    entries = PLAN[host.backend.hostname]
    assert len(entries) == 8
    return entries


def test_every_rail_has_its_address_mtu_9000_and_is_up(host):
    for rail in rails(host):
        link = json.loads(host.check_output("ip -j addr show dev %s", rail["interface"]))[0]
        addresses = [(a["local"], a["prefixlen"]) for a in link["addr_info"] if a["family"] == "inet"]
        assert addresses == [(rail["address"], rail["prefix"])], (rail["interface"], addresses)
        assert link["mtu"] == 9000 and "UP" in link["flags"], (rail["interface"], link["mtu"], link["flags"])


def test_each_rail_address_routes_through_its_own_table(host):
    rules = json.loads(host.check_output("ip -j -4 rule show"))
    for rail in rails(host):
        mine = [r for r in rules if r.get("src") == rail["address"]]
        assert [(r["priority"], r["table"]) for r in mine] == [(RULE_PRIORITY + rail["rail"], str(rail["table"]))], mine
        routes = json.loads(host.check_output("ip -j -4 route show table %s", str(rail["table"])))
        assert any(r.get("dst") == "default" and r.get("gateway") == rail["gateway"] and r.get("dev") == rail["interface"]
                   for r in routes), routes
        assert any(r.get("dst") == rail["network"] and r.get("dev") == rail["interface"] for r in routes), routes


def test_a_packet_from_a_rail_address_leaves_on_that_rail(host):
    """The kernel's own answer: `ip route get <another address of the rail's subnet> from <rail address>`."""
    for rail in rails(host):
        other = str(ipaddress.ip_network(rail["network"])[-2])
        route = json.loads(host.check_output("ip -j route get %s from %s", other, rail["address"]))[0]
        assert route["dev"] == rail["interface"], (rail["interface"], route)


def test_arp_and_reverse_path_sysctls_on_every_rail_now_and_at_boot(host):
    conf = host.file("/etc/sysctl.d/90-gpufabric-rails.conf").content_string
    for rail in rails(host):
        for key, value in SYSCTLS.items():
            now = host.file("/proc/sys/net/ipv4/conf/%s/%s" % (rail["interface"], key)).content_string.strip()
            assert now == str(value), (rail["interface"], key, now)
            assert "net.ipv4.conf.%s.%s = %d" % (rail["interface"], key, value) in conf.splitlines()


def test_ifupdown_brings_the_rails_back_at_boot(host):
    stanzas = host.file("/etc/network/interfaces.d/gpufabric-rails").content_string
    for rail in rails(host):
        assert "iface %s inet static" % rail["interface"] in stanzas
        assert "    address %s/%s" % (rail["address"], rail["prefix"]) in stanzas
        assert "    post-up ip rule add priority %d from %s table %s || true" % (
            RULE_PRIORITY + rail["rail"], rail["address"], rail["table"]) in stanzas


def test_the_management_interface_is_untouched(host):
    link = json.loads(host.check_output("ip -j addr show dev eth0"))[0]
    inet = [a for a in link["addr_info"] if a["family"] == "inet"]
    assert len(inet) == 1 and inet[0]["local"].startswith("198.19.80."), inet
    assert not any(r.get("iif") == "eth0" or r.get("src", "").startswith("198.19.80.")
                   for r in json.loads(host.check_output("ip -j -4 rule show")))
