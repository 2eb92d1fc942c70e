"""A fake host for roce_qos: a temporary directory as the sysfs/configfs root, and fake mlnx_qos, cma_roce_tos and
ibdev2netdev executables answering from the real captures; every argv is recorded.

mlnx_qos output is mlnx_qos_pcp_and_show_gids_1.txt (``mlnx_qos -i ens6``, pcp, buffer rows) with only the changed
values edited: the trust line, the dscp2prio block (taken from the same capture's ``--trust dscp`` output), the
``enabled`` row and the tc blocks. cma_roce_tos prints only the value (mlnx_qos_trust_pfc_cma_roce_tos_1.txt) and,
as the real script does, removes the configfs directory it had to create. traffic_class reads back as
``Global tclass=N`` once written, empty before (the capture).
"""
import collections
import re

from _fakehost import FakeHost
from _paths import REAL


def _section(name, start, stop):
    lines = (REAL / name).read_text().split("\n")
    begin = [i for i, line in enumerate(lines) if line.rstrip().endswith(start)][0] + 1
    end = next(i for i in range(begin, len(lines)) if stop in lines[i])
    return lines[begin:end]


PCP_LINES = _section("mlnx_qos_pcp_and_show_gids_1.txt", "# mlnx_qos -i ens6", "root@")
DSCP_LINES = _section("mlnx_qos_pcp_and_show_gids_1.txt", "# mlnx_qos -i ens6 --trust dscp", "root@")
DSCP2PRIO = DSCP_LINES[DSCP_LINES.index("dscp2prio mapping:"):DSCP_LINES.index("dscp2prio mapping:") + 9]
TOS_ECHO = [line for line in (REAL / "mlnx_qos_trust_pfc_cma_roce_tos_1.txt").read_text().splitlines()
            if line.strip().isdigit()][0]   # "106": what cma_roce_tos -t 106 printed
IBDEV_LINE = [line for line in (REAL / "mlnx_qos_pcp_and_show_gids_1.txt").read_text().splitlines()
              if line.startswith("mlx5_2 port 1 ==>")][0]   # "mlx5_2 port 1 ==> ens6 (Up)"

DEFAULT_PRIO_TC = (1, 0, 2, 3, 4, 5, 6, 7)   # the firmware default: priority 0 in tc1, priority 1 in tc0


def render_qos(trust="pcp", pfc=(0,) * 8, prio_tc=DEFAULT_PRIO_TC, tsa=("vendor",) * 8, tc_bw=(0,) * 8):
    """The real ``mlnx_qos -i ens6`` capture with trust, dscp2prio, the enabled row and the tc blocks edited."""
    out = []
    for line in PCP_LINES:
        if line.startswith("Priority trust state:"):
            out.append("Priority trust state: %s" % trust)
            if trust == "dscp":
                out += DSCP2PRIO[:]
        elif line.strip().startswith("enabled"):
            head = line[:line.index("enabled") + len("enabled")]
            out.append(head + "     " + "".join("%1d   " % v for v in pfc))
        elif line.startswith("tc:") or line.strip().startswith("priority:"):
            continue
        else:
            out.append(line)
    tcs = collections.defaultdict(list)
    for prio, tc in enumerate(prio_tc):
        tcs[tc].append(prio)
    for tc in sorted(tcs):
        algo = "ets, bw: %d%%" % tc_bw[tc] if tsa[tc] == "ets" else tsa[tc]
        out.append("tc: %d ratelimit: unlimited, tsa: %s" % (tc, algo))
        out += ["         priority:  %d" % prio for prio in tcs[tc]]
    return "\n".join(out) + "\n"


class Port:
    """One mlx5 interface and what its tools and files hold."""

    def __init__(self, rdma, trust="pcp", pfc=(0,) * 8, prio_tc=DEFAULT_PRIO_TC, tsa=("vendor",) * 8, tc_bw=(0,) * 8,
                 tos=0, stuck=()):
        self.rdma = rdma
        self.trust, self.pfc, self.prio_tc = trust, list(pfc), list(prio_tc)
        self.tsa, self.tc_bw = list(tsa), list(tc_bw)
        self.tos = tos
        self.stuck = set(stuck)   # settings the fake tools accept but do not change ("trust", "cma_roce_tos", ...)


class QosHost(FakeHost):
    """The tools and the file tree of one host. ``ports``: {interface: Port}; ``other``: {interface: driver}."""

    bindir = "/usr/sbin"

    def __init__(self, root, ports, other=None, compliant=False, ibdev2netdev=True, configfs=()):
        tools = {"mlnx_qos": self._mlnx_qos, "cma_roce_tos": self._cma_roce_tos}
        if ibdev2netdev:
            tools["ibdev2netdev"] = self._ibdev2netdev
        super().__init__(root, tools)
        self.ports = ports
        for name, port in ports.items():
            self.netdev(name, "mlx5_core", rdma=port.rdma)
            good = compliant
            for point in ("roce_np", "roce_rp"):
                for prio in range(8):
                    self.put("/sys/class/net/%s/ecn/%s/enable/%d" % (name, point, prio), "1" if good and prio == 3 else "0")
            self.put("/sys/class/net/%s/ecn/roce_np/cnp_dscp" % name, "48" if good else "0")
            self.put("/sys/class/net/%s/ecn/roce_np/cnp_802p_prio" % name, "6" if good else "0")
            self.put("/sys/class/infiniband/%s/tc/1/traffic_class" % port.rdma, "Global tclass=106" if good else "")
            self.mkdir("/sys/class/infiniband/%s/ports/1" % port.rdma)
            if name in configfs:
                self.put("/sys/kernel/config/rdma_cm/%s/ports/1/default_roce_tos" % port.rdma, str(port.tos))
        for name, driver in (other or {}).items():
            self.netdev(name, driver)

    def shown(self, path, value):
        if path.endswith("/traffic_class"):   # the kernel prints it back as "Global tclass=N"
            return "Global tclass=%s" % value
        return value

    # -- the tools
    def _ibdev2netdev(self, args):
        assert args == []
        lines = [re.sub(r"mlx5_2 port 1 ==> ens6", "%s port 1 ==> %s" % (p.rdma, n), IBDEV_LINE)
                 for n, p in sorted(self.ports.items())]
        return 0, "\n".join(lines) + "\n", ""

    def _mlnx_qos(self, args):
        assert args[0] == "-i", args
        port = self.ports.get(args[1])
        if port is None:
            return 1, "", "Interface %s not found\n" % args[1]
        opts = dict(zip(args[2::2], args[3::2]))
        assert set(opts) <= {"--trust", "--pfc", "--prio_tc", "--tsa", "--tcbw"}, opts
        if "--trust" in opts and "trust" not in port.stuck:
            port.trust = opts["--trust"]
        if "--pfc" in opts and "pfc" not in port.stuck:
            port.pfc = [int(v) for v in opts["--pfc"].split(",")]
        if "--prio_tc" in opts:
            port.prio_tc = [int(v) for v in opts["--prio_tc"].split(",")]
        if "--tsa" in opts:
            port.tsa = opts["--tsa"].split(",")
        if "--tcbw" in opts:
            port.tc_bw = [int(v) for v in opts["--tcbw"].split(",")]
        return 0, render_qos(port.trust, port.pfc, port.prio_tc, port.tsa, port.tc_bw), ""

    def _cma_roce_tos(self, args):
        opts = dict(zip(args[::2], args[1::2]))
        port = next((p for p in self.ports.values() if p.rdma == opts.get("-d")), None)
        if port is None or opts.get("-p", "1") != "1":
            return 1, "Device %s port %s does not exist\n" % (opts.get("-d"), opts.get("-p", "1")), ""
        if "-t" in opts and "cma_roce_tos" not in port.stuck:
            port.tos = int(opts["-t"])
        text = TOS_ECHO.replace("106", str(port.tos))
        return 0, text + "\n", ""

    def reader(self, execute=None):
        """The collection's Host on this fake (``execute``: a wrapper of the fake's answers)."""
        return self.host(execute=execute, timeout=30)


def compliant_port(rdma):
    return Port(rdma, trust="dscp", pfc=(0, 0, 0, 1, 0, 0, 0, 0), tos=106)
