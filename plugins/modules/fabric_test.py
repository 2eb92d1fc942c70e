#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.mlnx contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: fabric_test
short_description: One step of the validation gate on a GPU server - rail facts, perftest servers and clients, NCCL ranks
version_added: 0.1.0
description:
  - The host side of the gpufabric.mlnx.validate role. A measurement spans two hosts (a perftest server and its
    client, the ranks of an NCCL run), so the role runs it in steps on every host of a round at once; this module is
    one step (O(action)).
  - V(facts) reads, per rail interface, its RDMA device and port rate (C(ibdev2netdev), C(ibstat)), link state, MTU
    and carrier changes (C(ip -j -s link)), IPv4 address (C(ip -j addr)), the PCIe link of its device (sysfs), the
    PHY counters (C(ethtool -S)) and the QoS trust and PFC priorities (C(mlnx_qos -i)).
  - V(serve) starts this host's perftest servers (one per test and rail, test I(i) of a job on its C(port) + I(i))
    detached in the background, each recording its output and exit code under O(run_dir)/O(run_id).
  - V(measure) runs, per rail at once, a ping from the rail's address to the peer and then each test's client against
    the peer's server (retried while the server does not listen yet), and returns the parsed reports
    (P(gpufabric.mlnx.mlx_parse#filter) C(perftest)).
  - V(collect) waits for this host's servers (up to O(timeout)), returns their parsed reports and stops what still
    runs. V(nccl_start) and V(nccl_collect) do the same for NCCL - with O(launch), on the world's first member, they
    start the world's launcher - Open MPI's C(mpirun) (one rank per GPU on every member, started over SSH) or
    Slurm's C(srun --mpi=pmix) (in a maintenance reservation of the world's nodes, undone after the run) - and
    collect its output (rank 0's report); without it, the ranks of O(jobs) on this host alone - each a world of one, as the
    real binary makes it (the gate does that only for the library's version, one rank).
  - perftest's options follow the rail's link layer (C(ibstat)'s C(Link layer)) - on C(Ethernet) (RoCE) with the GID
    index (C(-x)) and the ToS (C(-T), when set), on C(InfiniBand) without them (perftest addresses by LID). A rail
    whose link layer is neither is not measured; its tests fail with an error naming the host, the rail, the device
    and the value.
  - Every value reaches a tool as one argv element, never through a shell; a job that is not allowed fails the task
    before anything starts, naming the job and the parameter.
  - V(tools) reads which of the gate's tools are on this host's PATH - C(ib_write_bw) and C(ib_write_lat)
    (perftest), C(ping), and with O(nccl) C(test) the NCCL test (nccl-tests) - each named with where it comes from
    when missing; the preflight runs it before batch 1.
  - V(ssh_check) logs in to each of O(peers) as mpirun does (C(ssh -o BatchMode=yes ... true)) and names each it
    cannot reach with ssh's own words; the preflight runs it from every server to the next of its scalable unit.
  - In check mode only V(facts), V(tools) and V(ssh_check) run (they read only); the other steps measure nothing
    and say so.
author:
  - gpufabric.mlnx contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.mlnx._attributes
  - gpufabric.mlnx._attributes.info_module
options:
  action:
    description: The step.
    type: str
    required: true
    choices: [facts, serve, measure, collect, nccl_start, nccl_collect, tools, ssh_check]
  jobs:
    description:
      - V(facts), V(serve), V(measure), V(collect) - one per rail, C(interface) (the rail's netdev), C(rail), C(port)
        (the first test's TCP port), C(tests) (default C(ib_write_bw), C(ib_write_lat)); V(measure) also
        C(peer_address) (the peer's rail address) and C(peer) (its name, reported back).
      - V(nccl_start), V(nccl_collect) - one per rank on this host, C(rank), C(local_rank) (the GPU) and C(hca) (its
        RDMA device).
    type: list
    elements: dict
    default: []
  options:
    description:
      - perftest settings, each optional - C(duration) (s, default 10), C(qps) (4), C(size) (65536), C(lat_size) (2),
        C(gid_index) (3, RoCE v2 over IPv4; RoCE only), C(tos) (none; RoCE only), C(retries) (20) and C(delay)
        (0.5 s) of a client whose server does not listen yet, C(ping_count) (3).
    type: dict
    default: {}
  nccl:
    description:
      - V(nccl_start) - C(test) (C(all_reduce_perf), C(all_gather_perf) or C(sendrecv_perf)), C(args) (its options, e.g.
        C([-b, 1G, -e, 8G, -f, "2", -g, "1"])) and C(env) (C(NCCL_*), C(OMPI_*) and C(UCX_*) variables, e.g.
        C(NCCL_COMM_ID), C(NCCL_TESTS_SPLIT), C(NCCL_TESTS_MIN_BW)).
    type: dict
    default: {}
  launch:
    description:
      - V(nccl_start), V(nccl_collect) - the launch of one NCCL world from this host (its first member).
      - C(launcher) - V(mpirun) (Open MPI) or V(srun) (Slurm, C(--mpi=pmix)).
      - C(contexts) - one per member host, in rank order (at least 2) - C(host) (its name), C(address) (what SSH
        reaches it by - the management address - an IPv4 address or a host name), C(node) (its Slurm node name, for
        V(srun); default C(host)), C(slots) (its ranks, one per GPU, 1-64) and C(hca) (its ranks' RDMA devices in
        local-rank order, one per slot; NCCL_IB_HCA of that context).
      - C(bind_to) - V(numa) (default), V(socket), V(core) or V(none) (mpirun's C(--bind-to); srun's C(--cpu-bind)
        V(ldoms), V(sockets), V(cores), V(none)).
      - C(subnet) - the management network (CIDR) that mpirun's and MPI's own TCP keep to, or null.
      - 'The argv: C(mpirun [--allow-run-as-root] --bind-to numa --mca plm_rsh_args "-o BatchMode=yes" --mca pml ob1
        --mca btl self,tcp [--mca btl_tcp_if_include SUBNET --mca oob_tcp_if_include SUBNET] -np 8 -H ADDR:8 -x PATH
        -x NCCL_IB_HCA=mlx5_0,... -x NCCL_... all_reduce_perf ARGS : -np 8 -H ADDR2:8 ...), each option''s reason in
        docs/validation.md.'
      - Needs on this host C(mpirun) and C(ssh), on every member Open MPI's daemon (C(orted)), nccl-tests at the same
        path, and SSH from this host to every member without a password or a host-key prompt (C(BatchMode=yes)).
      - 'V(srun) - one heterogeneous job component per member: C(srun --mpi=pmix --job-name=gpufabric-gate
        --reservation=gpufabric-RUN_ID-NODE --time=MINUTES --export=ALL --kill-on-bad-exit=1 --nodelist=NODE --nodes=1
        --ntasks-per-node=GPUS --distribution=block --cpu-bind=ldoms env NCCL_IB_HCA=mlx5_0,... NCCL_...=...
        all_reduce_perf ARGS : --mpi=pmix ... --nodelist=NODE2 ...).'
      - V(srun) takes only nodes that are idle or drained and run no job (read with C(sinfo); any other state is
        refused, nothing changed). A runner detached on this host then creates a maintenance reservation of the
        world's nodes for the gate's user (C(scontrol create reservation ... Flags=MAINT)), resumes the drained ones
        into it, runs srun, and afterwards - whatever happens to the play - drains them again with their own reason,
        deletes the reservation and reads the nodes again; V(nccl_collect) reports each Slurm command that failed
        and each node not left as it was, with Slurm's own words.
      - V(srun) needs on this host C(srun), C(sinfo), C(scontrol) (as root or Slurm's operator), on every member
        C(slurmd), Slurm's mpi/pmix plugin and the members' names resolving on every member.
    type: dict
  paths:
    description:
      - Directories searched before the PATH for the gate's tools (perftest, nccl-tests, Open MPI) - a site whose tools
        live outside the PATH a non-interactive login gets (C(/usr/local/cuda/bin), an HPC-X installation). Each an
        absolute directory (letters, digits, C(_ . + - /), no C(..)).
      - An C(mpirun) found there is started with C(--prefix) its installation (so Open MPI finds its daemon on every
        member there) and the ranks get these directories first on their PATH.
    type: list
    elements: str
    default: []
  run_id:
    description: The run's name (1-64 of C(A-Z a-z 0-9 _ . -)); its files are under O(run_dir)/O(run_id).
    type: str
    default: gate
  run_dir:
    description: Where the runs' files live (made 0700).
    type: path
    default: /run/gpufabric/gate
  timeout:
    description:
      - How long V(collect) and V(nccl_collect) wait for a process before stopping it, in seconds - one deadline for
        all the processes of the call (V(collect) of four servers whose clients never came stops them after O(timeout),
        not four times O(timeout)).
      - V(nccl_start) with O(launch) V(srun) - srun's C(--time) (rounded up to minutes, plus one) and its runner's
        bound; V(nccl_collect) waits that long and 240 s more for the runner, which is never stopped from there.
    type: int
    default: 300
  mgmt_interface:
    description:
      - V(facts), and V(tools) with O(with_mgmt) - the management interface whose address RV(mgmt) returns (NCCL's
        bootstrap listens there, mpirun reaches the host by it); default the interface of the default route.
    type: str
  with_mgmt:
    description:
      - V(tools) - return RV(mgmt) too (the preflight's SSH check needs every server's management address).
    type: bool
    default: false
  peers:
    description:
      - "V(ssh_check) - the hosts to log in to as mpirun does, each C(name) (its inventory name) and C(address) (its
        management address, or a host name) - C(ssh -o BatchMode=yes -o ConnectTimeout=10 <address> true), no
        password or host-key prompt. A peer that cannot be reached is in RV(problems) with ssh's own words."
    type: list
    elements: dict
    default: []
  root:
    description: Where sysfs is read (the PCIe link files); V(/) on a real host, the simulator's tree in the lab.
    type: path
    default: /
"""

EXAMPLES = r"""
- name: Start the perftest servers of this round
  gpufabric.mlnx.fabric_test:
    action: serve
    run_id: gate-1
    jobs:
      - {rail: 0, interface: enp24s0np0, port: 18515}

- name: Measure against the peers' servers
  gpufabric.mlnx.fabric_test:
    action: measure
    run_id: gate-1
    jobs:
      - {rail: 0, interface: enp24s0np0, port: 18515, peer: srv-r01-02, peer_address: 198.18.0.3}
  register: measured
"""

RETURN = r"""
rails:
  description:
    - V(facts) - per interface C(rdma), C(port), C(rate_gbps), C(link_layer), C(state), C(mtu), C(address),
      C(carrier_changes), C(pcie) (C(pci), C(speed) and C(max_speed) in GT/s, C(width), C(max_width)), C(counters)
      (C(ethtool -S) PHY counters such as C(link_down_events_phy), C(rx_symbol_err_phy)), C(qos) (C(trust), and
      C(pfc), the priorities with PFC on) and C(phy), the link's PHY error counters and when they were read -
      C(source) (C(ethtool -S <netdev>) on Ethernet, C(mlxlink -d <rdma> -p <port> -c) or C(mstlink) on InfiniBand),
      C(read_at) (seconds since the epoch), C(effective_errors) (not corrected by FEC), C(raw_errors) (corrected by
      FEC), C(link_down), C(received_bits) (null where the driver counts none) - or C(source), C(read_at) and
      C(error) when they cannot be read (the gate then certifies no BER for the link).
    - V(measure) - per job C(rail), C(interface), C(peer), C(peer_address), C(facts), C(ping) (C(ok), C(sent),
      C(received)) and C(tests), each C(test), C(argv), C(rc), C(attempts), C(stderr), C(report) (the parsed report).
  returned: action is facts or measure
  type: raw
mgmt:
  description:
    - V(facts), and V(tools) with O(with_mgmt) - C(interface), C(address) and C(network) of the management interface
      (see O(mgmt_interface)).
  returned: action is facts, or tools with with_mgmt
  type: dict
servers:
  description: V(serve) - the servers started (C(test), C(port), C(pid)); V(collect) - their C(rc) and C(report).
  returned: action is serve or collect
  type: list
  elements: dict
ranks:
  description: V(nccl_start) - the ranks started; V(nccl_collect) - their C(rc), C(stdout) and, for rank 0 and every
    rank that failed, C(report) (P(gpufabric.mlnx.mlx_parse#filter) C(nccl_tests)).
  returned: action is nccl_start or nccl_collect, without launch
  type: list
  elements: dict
launch:
  description:
    - V(nccl_start) with O(launch) - C(launcher), C(argv), C(pid), C(ranks) (the world's size as planned), or
      C(error) (the launcher or the test is not installed; with srun a node Slurm cannot give, named with its state);
      with srun also C(reservation) and C(nodes) (each node's Slurm state and reason before).
    - V(nccl_collect) with O(launch) - the launcher's C(rc), C(stopped), C(stdout), C(stderr) (its last 4000
      characters, where mpirun says why a daemon or a rank failed) and C(report) (rank 0's, with C(ranks) - one per
      rank of the world the launcher made); with srun also C(slurm) (C(reservation), each node's C(before) and
      C(after), the Slurm commands run and their C(rc)) and C(errors) (each Slurm command that failed and each node
      not left as it was, named, with Slurm's own words).
  returned: action is nccl_start or nccl_collect, with launch
  type: dict
tools:
  description: V(tools) - each tool of the gate and its path on this host (null when it is not on the PATH).
  returned: action is tools
  type: dict
  sample: {"ib_write_bw": "/usr/bin/ib_write_bw", "ib_write_lat": "/usr/bin/ib_write_lat", "ping": "/usr/bin/ping",
           "all_reduce_perf": null}
ssh:
  description: V(ssh_check) - per peer C(peer), C(address), C(ok), C(rc) (ssh's; null when it was stopped) and C(error).
  returned: action is ssh_check
  type: list
  elements: dict
problems:
  description: V(ssh_check) - one sentence per peer mpirun could not reach, naming it, its address and ssh's words.
  returned: action is ssh_check
  type: list
  elements: str
  sample: ["mpirun cannot reach srv-r01-02 (198.19.90.12) over SSH as it starts Open MPI's daemon there (ssh -o
           BatchMode=yes 198.19.90.12 true): root@198.19.90.12: Permission denied (publickey)."]
missing:
  description: V(tools) - the tools not found, each with where it comes from.
  returned: action is tools
  type: list
  elements: str
  sample: ["all_reduce_perf (nccl-tests (built with MPI=1, on the PATH a non-interactive login gets))"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.mlnx.plugins.module_utils._errors import MlnxError
from ansible_collections.gpufabric.mlnx.plugins.module_utils._fabric_test import ACTIONS, run
from ansible_collections.gpufabric.mlnx.plugins.module_utils._host import Host
from ansible_collections.gpufabric.mlnx.plugins.module_utils._module import ansible_module

ARGUMENT_SPEC = dict(
    action=dict(type="str", required=True, choices=list(ACTIONS)),
    jobs=dict(type="list", elements="dict", default=[]),
    options=dict(type="dict", default={}),
    nccl=dict(type="dict", default={}),
    launch=dict(type="dict"),
    paths=dict(type="list", elements="str", default=[]),
    run_id=dict(type="str", default="gate"),
    run_dir=dict(type="path", default="/run/gpufabric/gate"),
    timeout=dict(type="int", default=300),
    mgmt_interface=dict(type="str"),
    with_mgmt=dict(type="bool", default=False),
    peers=dict(type="list", elements="dict", default=[]),
    root=dict(type="path", default="/"),
)


def main():
    module = ansible_module(AnsibleModule, argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = run(Host(root=module.params["root"], timeout=max(60, module.params["timeout"])), module.params, check_mode=module.check_mode)
    except MlnxError as err:
        module.fail_json(**err.fail_kwargs())
    module.exit_json(**result)


if __name__ == "__main__":
    main()
