"""perftest reports (_parsers/perftest.py): ib_write_bw client and server over RoCE (real captures), the other
layouts perftest prints (latency, duration latency, MiB/sec, dual-port, QoS), its --out_json file, and a run that
died."""
import json

import pytest

from ansible_collections.gpufabric.mlnx.plugins.module_utils._parsers import ParseError, parse

from ._captures import capture_test, checks

CHECKS, check = checks()
RULE = "-" * 87
CUDA_WARNINGS = ["WARNING: BW peak won't be measured in this run.",
                 "Perftest doesn't supports CUDA tests with inline messages: inline size set to 0",
                 "Requested mtu is higher than active mtu", "Changing to active mtu - 3"]


GID_33 = "00:00:00:00:00:00:00:00:00:00:255:255:10:06:145:33"     # the client's GID (10.6.145.33)
GID_32 = "00:00:00:00:00:00:00:00:00:00:255:255:10:06:145:32"     # the server's


@check("ib_write_bw_client_roce_cuda_1.txt")
def _client(text):
    out = parse("perftest", text)
    addresses = out.pop("addresses")
    assert out == {
        "test": "RDMA_Write BW Test", "device": "mlx5_1", "link_type": "Ethernet", "mtu": 1024, "gid_index": 3,
        "unit": "Gb/sec",
        "results": [{"bytes": 65536, "iterations": 10384867, "bw_peak": 0.0, "bw_average": 181.46,
                     "msg_rate": 0.3461}],
        "warnings": CUDA_WARNINGS, "errors": []}
    # -q 16 over rdma_cm: 16 queue pairs a side, RoCE's LID 0000 and a GID line each, no RKey/VAddr
    local, remote = addresses["local"], addresses["remote"]
    assert (len(local), len(remote)) == (16, 16)
    assert local[0] == {"lid": 0, "qpn": 0xc6, "psn": 0x2986aa, "gid": GID_33}
    assert local[-1] == {"lid": 0, "qpn": 0xd5, "psn": 0xbc4d64, "gid": GID_33}
    assert remote[0] == {"lid": 0, "qpn": 0xc6, "psn": 0xb1023e, "gid": GID_32}
    assert remote[-1] == {"lid": 0, "qpn": 0xd6, "psn": 0x722bc8, "gid": GID_32}
    assert {a["gid"] for a in local} == {GID_33} and {a["gid"] for a in remote} == {GID_32}


@check("ib_write_bw_server_roce_cuda_1.txt")
def _server(text):
    out = parse("perftest", text)
    assert out["results"] == [{"bytes": 65536, "iterations": 10384867, "bw_peak": 0.0, "bw_average": 181.46,
                               "msg_rate": 0.3461}]
    assert (out["device"], out["mtu"], out["gid_index"], out["warnings"], out["errors"]) == (
        "mlx5_1", 1024, 3, CUDA_WARNINGS, [])
    local, remote = out["addresses"]["local"], out["addresses"]["remote"]
    assert local[0] == {"lid": 0, "qpn": 0xc6, "psn": 0xb1023e, "gid": GID_32}     # the client's remote[0]
    assert remote[0] == {"lid": 0, "qpn": 0xc6, "psn": 0x2986aa, "gid": GID_33}    # the client's local[0]
    assert (len(local), len(remote)) == (16, 16)


@check("ib_write_bw_roce_oci_1.txt")
def _oci(text):  # an older build: no "ibv_wr* API" line; the report inside a Markdown code fence
    gid_a = "00:00:00:00:00:00:00:00:00:00:255:255:10:224:04:233"
    gid_b = "00:00:00:00:00:00:00:00:00:00:255:255:10:224:05:57"
    assert parse("perftest", text) == {
        "test": "RDMA_Write BW Test", "device": "mlx5_5", "link_type": "Ethernet", "mtu": 4096, "gid_index": 3,
        "unit": "Gb/sec",
        "results": [{"bytes": 65536, "iterations": 20000, "bw_peak": 98.01, "bw_average": 98.01,
                     "msg_rate": 0.186932}],
        "addresses": {
            "local": [{"lid": 0, "qpn": 0x93, "psn": 0xbf9bfe, "gid": gid_a},
                      {"lid": 0, "qpn": 0x94, "psn": 0xab0910, "gid": gid_a},
                      {"lid": 0, "qpn": 0x95, "psn": 0x28bd1a, "gid": gid_a},
                      {"lid": 0, "qpn": 0x96, "psn": 0x5c7f61, "gid": gid_a}],
            "remote": [{"lid": 0, "qpn": 0x93, "psn": 0x62655e, "gid": gid_b},
                       {"lid": 0, "qpn": 0x94, "psn": 0x6706f0, "gid": gid_b},
                       {"lid": 0, "qpn": 0x95, "psn": 0xcb157a, "gid": gid_b},
                       {"lid": 0, "qpn": 0x96, "psn": 0x626041, "gid": gid_b}]},
        "warnings": [], "errors": []}


test_capture = capture_test(CHECKS)


def report(title, params, header, rows, before=()):
    return "\n".join(list(before) + [RULE, "                    " + title] + params + [RULE, header] + rows + [RULE])


PARAMS = [" Dual-port       : OFF\t\tDevice         : mlx5_0", " Number of qps   : 1\t\tTransport type : IB",
          " Mtu             : 4096[B]", " Link type       : IB", " rdma_cm QPs\t : OFF",
          " Data ex. method : Ethernet"]


def test_latency_rows_have_every_percentile_as_numbers():
    text = report("RDMA_Write Latency Test", PARAMS,
                  " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
                  "   99% percentile[usec]   99.9% percentile[usec] ",
                  [" 2       1000          1.59           4.21         1.63     \t       1.65        \t0.08   \t\t"
                   "1.94    \t\t4.21   "])
    out = parse("perftest", text)
    assert (out["test"], out["link_type"], out["unit"]) == ("RDMA_Write Latency Test", "IB", "usec")
    assert out["results"] == [{"bytes": 2, "iterations": 1000, "t_min": 1.59, "t_max": 4.21, "t_typical": 1.63,
                               "t_avg": 1.65, "t_stdev": 0.08, "p99": 1.94, "p99_9": 4.21}]


def test_duration_latency_and_an_all_sizes_bandwidth_sweep_in_mib():
    lat = parse("perftest", report("Send Latency Test", PARAMS, " #bytes        #iterations       t_avg[usec]    tps average",
                                   [" 2       2465087            1.62          615412.88"]))
    assert lat["results"] == [{"bytes": 2, "iterations": 2465087, "t_min": None, "t_max": None, "t_typical": None,
                               "t_avg": 1.62, "t_stdev": None, "p99": None, "p99_9": None, "tps_average": 615412.88}]
    bw = parse("perftest", report("RDMA_Read BW Test", PARAMS,
                                  " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]",
                                  [" 2          1000             9.73               9.66   \t\t     5.064570",
                                   " 8388608    1000             11634.92            11634.73\t\t     0.001455"]))
    assert bw["unit"] == "MiB/sec" and [r["bytes"] for r in bw["results"]] == [2, 8388608]
    assert bw["results"][1]["bw_average"] == 11634.73


def test_bidirectional_dual_port_and_qos_columns():
    dual = parse("perftest", report(
        "RDMA_Write Bidirectional BW Test", PARAMS,
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]   BW Port1[Gb/sec]   "
        "MsgRate Port1[Mpps]   BW Port2[Gb/sec]   MsgRate Port2[Mpps]",
        [" 65536      5000           190.11             190.02\t\t   0.362434        95.01            0.181217"
         "              95.01            0.181217"]))
    assert dual["test"] == "RDMA_Write Bidirectional BW Test"
    assert dual["results"][0]["bw_port2"] == 95.01 and dual["results"][0]["msg_rate_port1"] == 0.181217
    qos = parse("perftest", report("Send BW Test", PARAMS,
                                   " #bytes    #sl      #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
                                   [" 65536      3           1000           96.12              96.02                  0.183152"]))
    assert qos["results"][0]["sl"] == 3 and qos["results"][0]["iterations"] == 1000


def test_a_run_that_died_names_why_and_has_no_rows():
    out = parse("perftest", "Couldn't connect to 198.18.0.3:18515\nUnable to init the socket connection\n")
    assert out["results"] == [] and out["errors"] == ["Couldn't connect to 198.18.0.3:18515",
                                                      "Unable to init the socket connection"]


def test_a_completion_error_after_the_banner_is_an_error():
    # NOTIFY_COMP_ERROR_SEND (src/perftest_resources.h): the traffic itself failed (e.g. retry exceeded on a bad link)
    banner = "\n".join(["-" * 87, "                    RDMA_Write BW Test", " Device         : mlx5_0", "-" * 87])
    text = banner + ("\n Completion with error at client\n"
                     " Failed status-transport retry counter exceeded (12): wr_id 0 syndrom 0x81\n"
                     " scnt=128, ccnt=0\n")
    out = parse("perftest", text)
    assert out["results"] == []
    assert out["errors"] == ["Completion with error at client",
                             "Failed status-transport retry counter exceeded (12): wr_id 0 syndrom 0x81"]


def test_text_that_is_no_perftest_report_names_its_first_line():
    with pytest.raises(ParseError, match=r"perftest: no perftest report found .*line 1: 'hello'"):
        parse("perftest", "hello\nworld\n")
    cut = report("Send BW Test", PARAMS, " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
                 [" 65536      1000           96.12"])
    with pytest.raises(ParseError, match=r"a result row of 3 values under a header of 5 columns \(bytes, iterations, "
                                         r"bw_peak, bw_average, msg_rate\)"):
        parse("perftest", cut)


def test_out_json_bandwidth_latency_and_the_qos_file_perftest_writes_unquoted():
    bw = {"test_info": {"test": "RDMA_Write_Bidirectional_BW_Test", "Device": "mlx5_1", "Mtu": 4096,
                        "Link_type": "Ethernet", "WARNING1": "CPU is not PCIe relaxed ordering compliant"},
          "results": {"MsgSize": 65536, "n_iterations": 5000, "BW_peak": 190.11, "BW_average": 190.02,
                      "MsgRate": 0.362434}}
    assert parse("perftest", json.dumps(bw, indent=0)) == {
        "test": "RDMA_Write Bidirectional BW Test", "device": "mlx5_1", "link_type": "Ethernet", "mtu": 4096,
        "gid_index": None, "unit": None,
        "results": [{"bytes": 65536, "iterations": 5000, "bw_peak": 190.11, "bw_average": 190.02,
                     "msg_rate": 0.362434}],
        "addresses": {"local": [], "remote": []},
        "warnings": ["CPU is not PCIe relaxed ordering compliant"], "errors": []}
    lat = {"test_info": {"test": "Atomic_FETCH_AND_ADD_Latency_Test", "Device": "mlx5_0", "Mtu": 1024},
           "results": {"MsgSize": 8, "n_iterations": 1000, "t_min": 1.1, "t_max": 3.2, "t_typical": 1.2,
                       "t_avg": 1.25, "t_stdev": 0.05, "percentile_99": 1.9, "percentile_99.9": 3.1}}
    out = parse("perftest", lat)
    assert out["test"] == "Atomic FETCH_AND_ADD Latency Test" and out["results"][0]["p99_9"] == 3.1
    qos_file = '{\n"test_info": {\n"test": "Send_BW_Test"\n},\n"results": {\n"MsgSize": 65536,\nsl: 3,\n' \
               '"n_iterations": 1000,\n"BW_peak": 96.12,\n"BW_average": 96.02,\n "MsgRate": 0.183152\n}\n}\n'
    assert parse("perftest", qos_file)["results"][0]["sl"] == 3
    with pytest.raises(ParseError, match="has test_info and results"):
        parse("perftest", {"results": []})


def test_infiniband_connection_lines_name_the_lids_and_no_gid():
    # no InfiniBand capture exists: the lines as perftest 25.01 prints them (BASIC_ADDR_FMT "LID %#04x", RDMA_FMT),
    # ib_write_bw -d mlx5_0 -q 2 over NDR - no "GID index" in the banner, no GID lines (addressed by LID)
    params = [p for p in PARAMS if "Number of qps" not in p] + [" Number of qps   : 2\t\tTransport type : IB"]
    text = report("RDMA_Write BW Test", params,
                  " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
                  [" 65536      5000             386.79             385.64 \t\t     0.735541"], before=())
    rows = text.split("\n")
    cut = rows.index(RULE, 1) + 1
    rows[cut:cut] = [" local address: LID 0xa4 QPN 0x016a PSN 0xc4f855 RKey 0x1fff23 VAddr 0x007f00e1501c24",
                     " local address: LID 0xa4 QPN 0x016b PSN 0xa76bed RKey 0x1fff76 VAddr 0x007f00e1501c24",
                     " remote address: LID 0x3a3 QPN 0x01b6 PSN 0xd6fe71 RKey 0x1fff68 VAddr 0x007f004d7929cf",
                     " remote address: LID 0x3a3 QPN 0x01b7 PSN 0x8787b2 RKey 0x1fff42 VAddr 0x007f004d7929cf", RULE]
    out = parse("perftest", "\n".join(rows))
    assert (out["link_type"], out["mtu"], out["gid_index"]) == ("IB", 4096, None)
    assert out["addresses"] == {
        "local": [{"lid": 164, "qpn": 362, "psn": 0xc4f855, "rkey": 0x1fff23, "vaddr": 0x7f00e1501c24, "gid": None},
                  {"lid": 164, "qpn": 363, "psn": 0xa76bed, "rkey": 0x1fff76, "vaddr": 0x7f00e1501c24, "gid": None}],
        "remote": [{"lid": 931, "qpn": 438, "psn": 0xd6fe71, "rkey": 0x1fff68, "vaddr": 0x7f004d7929cf, "gid": None},
                   {"lid": 931, "qpn": 439, "psn": 0x8787b2, "rkey": 0x1fff42, "vaddr": 0x7f004d7929cf, "gid": None}]}
    assert out["results"][0]["bw_average"] == 385.64


def test_an_mtu_that_is_no_ib_mtu_is_a_warning_and_the_run_goes_on():
    # set_mtu (src/perftest_parameters.c): stderr, then the port's active MTU (its ibv_mtu number, 5 = 4096)
    before = [" Invalid MTU - 9000 ", " Please choose mtu from {256,512,1024,2048,4096}",
              " Will run with the port active mtu - 5"]
    out = parse("perftest", report("RDMA_Write BW Test", PARAMS,
                                   " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
                                   [" 65536      5000             386.79             385.64 \t\t     0.735541"],
                                   before=before))
    assert out["warnings"] == ["Invalid MTU - 9000", "Please choose mtu from {256,512,1024,2048,4096}",
                               "Will run with the port active mtu - 5"]
    assert out["errors"] == [] and out["mtu"] == 4096
