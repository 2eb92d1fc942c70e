"""Host profiles: which cards sit where.

Real part numbers, PSIDs and descriptions, with the public source each was read from:

- MCX75310AAS-NEAT (ConnectX-7, 1x OSFP, NDR IB / 400GbE): PSID MT_0000000838, name
  MCX75310AAS-NEA_Ax, description "NVIDIA ConnectX-7 HHHL Adapter card; 400GbE / NDR IB (default
  mode); Single-port OSFP; PCIe 5.0 x16; Crypto Disabled; Secure Boot Enabled;" - an mlxup query
  in the public notes "How to connect two GPU servers using Infiniband DAC cables" (GitHub-hosted,
  search-index file id 58145501009).
- MCX755106AS-HEAT (ConnectX-7, 2x QSFP112, 200GbE / NDR200): PSID MT_0000000834, name
  MCX755106AS-HEA_Ax and description - fixtures/real/mlxup_query_cx7_1.txt and
  mixed_mlxconfig_mlxlink_flint_grep_cx7_1.txt (github.com/sigitp-git/mellanox-nic-firmware-and-vf-creation).
- MCX623106AN-CDAT (ConnectX-6 Dx, 2x QSFP56 100GbE): PSID MT_0000000359, description
  "ConnectX-6 Dx EN adapter card; 100GbE; Dual-port QSFP56; PCIe 4.0/3.0 x16;" - mlnx-fw-updater
  output in a public GitHub file (search-index file id 27524429566); mstconfig header with the
  same name in search-index file id 40929553731. FW 22.41.1000 with UEFI 14.34.12 / FlexBoot 3.7.400
  is the real image name fw-ConnectX6Dx-rel-22_41_1000-MCX623106AN-CDA_Ax-UEFI-14.34.12-FlexBoot-3.7.400.bin.
- MCX653105A-HDAT (ConnectX-6 VPI, 1x QSFP56 HDR): PSID MT_0000000223 - mlxfwmanager output quoted
  on the linux-rdma mailing list (search-index file id 26898122566); description from mlxconfig
  output in search-index file ids 48281893016 / 35549314653.
- BlueField-3 B3220 900-9D3B6-00CV-AA0: PSID MT_0000000884, name 900-9D3B6-00CV-A_Ax, description,
  FW 32.41.1000 and ROM versions - mlxfwmanager query in search-index file id 52866056169;
  PSID also in search-index file id 10382546111.
- ConnectX-7 FW 28.42.1000 (release date 8.8.2024, UEFI 14.35.15, PXE 3.7.500):
  fixtures/real/flint_query_cx7_1.txt.
- DGX H100 compute NIC PCI buses 18, 40, 4f, 5e, 9a, c0, ce, dc: NVIDIA DGX BasePOD deployment
  guide (docs.nvidia.com/dgx-basepod/deployment-guide-dgx-basepod/latest/sriov.html); netdev names
  ibp24s0 ... ibp220s0 and mlx5_0/3/4/5/6/9/10/11: DGX H100 User Guide, Table 6 "Network Modules".
  The two dual-port storage cards (mlx5_1/2, mlx5_7/8) are placed at 29:00 and aa:00, consistent
  with that RDMA numbering (their exact bus numbers are not in the sources above).
"""

CX7_NEAT = {
    "family": "ConnectX7",
    "part_number": "MCX75310AAS-NEAT",
    "name": "MCX75310AAS-NEA_Ax",
    "description": "NVIDIA ConnectX-7 HHHL Adapter card; 400GbE / NDR IB (default mode); Single-port OSFP; "
                   "PCIe 5.0 x16; Crypto Disabled; Secure Boot Enabled;",
    "product_name": "NVIDIA ConnectX-7 HHHL adapter card, 400GbE / NDR IB (default mode), Single-port OSFP, "
                    "PCIe 5.0 x16, Crypto Disabled, Secure Boot Enabled",
    "psid": "MT_0000000838",
    "v0": "PCIeGen5 x16",
    "ec": "A7",
    "fw": "28.42.1000", "fw_date": "8.8.2024",
    "roms": [["UEFI", "14.35.15", "AMD64,AARCH64"], ["PXE", "3.7.500", "AMD64"]],
    "rate": 400, "ports": 1,
    "defaults": {"LINK_TYPE": 1},
}

CX7_HEAT_DUAL = {
    "family": "ConnectX7",
    "part_number": "MCX755106AS-HEAT",
    "name": "MCX755106AS-HEA_Ax",
    "description": "NVIDIA ConnectX-7 HHHL Adapter Card; 200GbE (default mode) / NDR200 IB; Dual-port QSFP112; "
                   "PCIe 5.0 x16 with x16 PCIe extension option; Crypto Disabled; Secure Boot Enabled",
    "product_name": "NVIDIA ConnectX-7 HHHL Adapter Card, 200GbE (default mode) / NDR200 IB, Dual-port QSFP112, "
                    "PCIe 5.0 x16 with x16 PCIe extension option, Crypto Disabled, Secure Boot Enabled",
    "psid": "MT_0000000834",
    "v0": "PCIeGen5 x16",
    "ec": "A6",
    "fw": "28.42.1000", "fw_date": "8.8.2024",
    "roms": [["UEFI", "14.35.15", "AMD64,AARCH64"], ["PXE", "3.7.500", "AMD64"]],
    "rate": 200, "ports": 2,
    "defaults": {"LINK_TYPE": 2},
}

CX6DX = {
    "family": "ConnectX6DX",
    "part_number": "MCX623106AN-CDAT",
    "name": "MCX623106AN-CDA_Ax",
    "description": "ConnectX-6 Dx EN adapter card; 100GbE; Dual-port QSFP56; PCIe 4.0/3.0 x16;",
    "product_name": "ConnectX-6 Dx EN adapter card, 100GbE, Dual-port QSFP56, PCIe 4.0/3.0 x16",
    "psid": "MT_0000000359",
    "v0": "PCIeGen4 x16",
    "ec": "AC",
    "fw": "22.41.1000", "fw_date": "20.3.2024",
    "roms": [["UEFI", "14.34.12", "AMD64,AARCH64"], ["PXE", "3.7.400", "AMD64"]],
    "rate": 100, "ports": 2,
}

CX6_HDR = {
    "family": "ConnectX6",
    "part_number": "MCX653105A-HDAT",
    "name": "MCX653105A-HDA_Ax",
    "description": "ConnectX-6 VPI adapter card; HDR IB (200Gb/s) and 200GbE; single-port QSFP56; PCIe4.0 x16; "
                   "tall bracket; ROHS R6",
    "product_name": "ConnectX-6 VPI adapter card, HDR IB (200Gb/s) and 200GbE, single-port QSFP56, PCIe4.0 x16, "
                    "tall bracket, ROHS R6",
    "psid": "MT_0000000223",
    "v0": "PCIeGen4 x16",
    "ec": "A9",
    "fw": "20.41.1000", "fw_date": "20.3.2024",
    "roms": [["UEFI", "14.34.12", "AMD64,AARCH64"], ["PXE", "3.7.400", "AMD64"]],
    "rate": 200, "ports": 1,
    "defaults": {"LINK_TYPE": 1},
}

BF3_B3220 = {
    "family": "BlueField3",
    "part_number": "900-9D3B6-00CV-AA0",
    "name": "900-9D3B6-00CV-A_Ax",
    "description": "NVIDIA BlueField-3 B3220 P-Series FHHL DPU; 200GbE (default mode) / NDR200 IB; Dual-port "
                   "QSFP112; PCIe Gen5.0 x16 with x16 PCIe extension option; 16 Arm cores; 32GB on-board DDR; "
                   "integrated BMC; Crypto Enabled",
    "product_name": "NVIDIA BlueField-3 B3220 P-Series FHHL DPU, 200GbE (default mode) / NDR200 IB, Dual-port "
                    "QSFP112, PCIe Gen5.0 x16 with x16 PCIe extension option, 16 Arm cores, 32GB on-board DDR, "
                    "integrated BMC, Crypto Enabled",
    "psid": "MT_0000000884",
    "v0": "PCIeGen5 x16",
    "ec": "A5",
    "modl": "B3220",
    "fw": "32.41.1000", "fw_date": "19.3.2024",
    "roms": [["PXE", "3.7.400", "AMD64"], ["UEFI", "14.34.12", "AMD64,AARCH64"],
             ["UEFI Virtio blk", "22.4.13", "AMD64,AARCH64"], ["UEFI Virtio net", "21.4.13", "AMD64,AARCH64"]],
    "rate": 200, "ports": 2,
    "defaults": {"LINK_TYPE": 2},
}


# ---------------------------------------------------------------- older and newer families (issue 16)
# Sources: the captures in tests/fixtures/real (named per card) and public pages (search-index file ids).
# Descriptions whose wording no source gives are completed in NVIDIA's naming pattern and marked.

# ConnectX-5 EN MCX515A-CCAT: part number/name MCX515A-CCA_Ax_Bx, PSID MT_0000000011, FW 16.28.2006 with
# PXE 3.6.0102 / UEFI 14.21.0017 - mlxfwmanager_query_and_mlxconfig_e_query_cx5_1.txt (whose description is
# elided after "100GbE single-port": the rest "QSFP28; PCIe3.0 x16; tall bracket; ROHS R6" is [invented]).
# flint's Rom Info of its ROMs (UEFI first, cpu fields) is the ConnectX-4 image's of the same release 16/12.28.2006
# (mstflint_query_cx4_cx4lx_oem_1.txt) [modelled: no capture shows a ConnectX-5 flint query].
CX5_EN = {
    "family": "ConnectX5",
    "part_number": "MCX515A-CCAT",
    "name": "MCX515A-CCA_Ax_Bx",
    "description": "ConnectX-5 EN network interface card; 100GbE single-port QSFP28; PCIe3.0 x16; tall bracket; "
                   "ROHS R6",
    "product_name": "ConnectX-5 EN network interface card, 100GbE single-port QSFP28, PCIe3.0 x16, tall bracket, "
                    "ROHS R6",
    "psid": "MT_0000000011",
    "v0": "PCIeGen3 x16",
    "ec": "B2",
    "fw": "16.28.2006", "fw_date": "15.9.2020",
    "roms": [["UEFI", "14.21.17", "AMD64,AARCH64"], ["PXE", "3.6.102", "AMD64"]],
    "security": "N/A",
    "rate": 100, "ports": 1,
    "defaults": {"LINK_TYPE": 2},
}

# ConnectX-5 Ex VPI MCX556A-EDAT (dual-port EDR IB / 100GbE, PCIe Gen4 x16): PSID MT_0000000009, FW 16.30.1004,
# board revision A3, "MT28800 Family [ConnectX-5 Ex]", CA type MT4121, LnkCap x16 Gen4, ports in InfiniBand, GUID
# OUI ec0d9a - a public lab-report script's sample of NVIDIA's device listing (search-index file id 1235447053);
# PCI id 0x1019 (the kernel's mlx5_core table). Name MCX556A-EDA_Ax, the description's wording, release date and
# ROMs [invented, in NVIDIA's naming pattern].
CX5_EX_VPI = {
    "family": "ConnectX5",
    "silicon": {"dev_id": 4121, "pci_id": "1019", "lspci": "MT28800 Family [ConnectX-5 Ex]", "ca_type": "MT4121",
                "pcie": ("16GT/s", 16)},
    "part_number": "MCX556A-EDAT",
    "name": "MCX556A-EDA_Ax",
    "description": "ConnectX-5 Ex VPI adapter card; EDR IB (100Gb/s) and 100GbE; dual-port QSFP28; PCIe4.0 x16; "
                   "tall bracket; ROHS R6",
    "product_name": "ConnectX-5 Ex VPI adapter card, EDR IB (100Gb/s) and 100GbE, dual-port QSFP28, PCIe4.0 x16, "
                    "tall bracket, ROHS R6",
    "psid": "MT_0000000009",
    "v0": "PCIeGen4 x16",
    "ec": "A3",
    "fw": "16.30.1004", "fw_date": "29.3.2021",
    "roms": [["UEFI", "14.23.17", "AMD64,AARCH64"], ["PXE", "3.6.301", "AMD64"]],
    "security": "N/A",
    "rate": 100, "ports": 2,
    "defaults": {"LINK_TYPE": 1},
}

# ConnectX-4 Lx EN MCX4121A-ACAT: PSID MT_2420110034 and FW 14.32.1900 - ethtool_i_cx4_cx4lx_1.txt and
# mstflint_burn_psid_mismatch_cx4lx_1.txt (the NVIDIA image of the card's retail PSID); release date 25.8.2024,
# UEFI 14.25.17 / PXE 3.6.502 and their cpu fields - mstflint_query_cx4_cx4lx_oem_1.txt; name and description -
# mlxconfig_query_cx4lx_1.txt.
CX4LX = {
    "family": "ConnectX4LX",
    "part_number": "MCX4121A-ACAT",
    "name": "MCX4121A-ACA_Ax",
    "description": "ConnectX-4 Lx EN network interface card; 25GbE dual-port SFP28; PCIe3.0 x8; ROHS R6",
    "product_name": "ConnectX-4 Lx EN network interface card, 25GbE dual-port SFP28, PCIe3.0 x8, ROHS R6",
    "psid": "MT_2420110034",
    "v0": "PCIeGen3 x8",
    "ec": "A1",
    "fw": "14.32.1900", "fw_date": "25.8.2024",
    "roms": [["UEFI", "14.25.17", "AMD64,AARCH64"], ["PXE", "3.6.502", "AMD64"]],
    "security": "N/A",
    "rate": 25, "ports": 2,
}

# A Dell-branded ConnectX-4 Lx on its OEM image (issue 39 item 6): part number 020NJD, name 020NJD_0MRT0D_Ax,
# description "Mellanox 25GBE 2P ConnectX-4 Lx Adapter", PSID DEL2420110034, FW 14.14.2320 of 10.5.2016 with the
# Product Version rel-14_14_2320, UEFI 14.9.50 / PXE 3.4.729 with no cpu field (mlxfwmanager: PXE 3.4.0729,
# UEFI 14.9.0050), 8 GUIDs - mstflint_query_cx4_cx4lx_oem_1.txt and mlxfwmanager_query_dell_cx4lx_1.txt; VPD product
# name and EC A02 - the same author's lspci -vvvvv of the card. Its PCIe link and V0 are the ConnectX-4 Lx's.
CX4LX_DELL = {
    "family": "ConnectX4LX",
    "part_number": "020NJD",
    "name": "020NJD_0MRT0D_Ax",
    "description": "Mellanox 25GBE 2P ConnectX-4 Lx Adapter",
    "product_name": "Mellanox ConnectX-4 LX Dual Port 25 GbE SFP Network Adapter",
    "psid": "DEL2420110034",
    "v0": "PCIeGen3 x8",
    "ec": "A02",
    "fw": "14.14.2320", "fw_date": "10.5.2016", "product_version": "rel-14_14_2320",
    "roms": [["UEFI", "14.9.50", ""], ["PXE", "3.4.729", ""]],
    "uids": 8,
    "security": "N/A",
    "rate": 25, "ports": 2,
}

# ConnectX-4 EN MCX416A-CCAT (dual-port QSFP28 100GbE): VPD product name "CX416A - ConnectX-4 QSFP28", EC AG,
# V0 PCIeGen3 x16, LnkCap 8GT/s x16 - lspci_vvvvv_vpd_cx4_1.txt; FW 12.28.2006 and PSID MT_2150110033 -
# ethtool_i_cx4_cx4lx_1.txt; FS3 burn of 12.28.x - mstflint_burn_cx4_fs3_1.txt; release date, UEFI 14.21.17
# cpu=AMD64,AARCH64 / PXE 3.6.102 cpu=AMD64 and 4 GUIDs - mstflint_query_cx4_cx4lx_oem_1.txt (the same PSID and FW);
# name and description - mlxfwmanager_query_dell_cx4lx_1.txt.
CX4_EN = {
    "family": "ConnectX4",
    "part_number": "MCX416A-CCAT",
    "name": "MCX416A-CCA_Ax",
    "description": "ConnectX-4 EN network interface card; 100GbE dual-port QSFP28; PCIe3.0 x16; ROHS R6",
    "product_name": "CX416A - ConnectX-4 QSFP28",
    "psid": "MT_2150110033",
    "v0": "PCIeGen3 x16",
    "ec": "AG",
    "fw": "12.28.2006", "fw_date": "15.9.2020",
    "roms": [["UEFI", "14.21.17", "AMD64,AARCH64"], ["PXE", "3.6.102", "AMD64"]],
    "uids": 4,
    "security": "N/A",
    "rate": 100, "ports": 2,
    "defaults": {"LINK_TYPE": 2},
}

# ConnectX-6 Lx MCX631102AS-ADAT: name, description, PSID MT_0000000575, FW 26.33.1048 with PXE 3.6.0502 / UEFI
# 14.26.0017 - mlxup_query_cx6lx_1.txt; release date 29.4.2022 and flint's "type=UEFI version=14.26.17
# cpu=AMD64,AARCH64" - mstflint_query_cx6lx_1.txt.
CX6LX = {
    "family": "ConnectX6LX",
    "part_number": "MCX631102AS-ADAT",
    "name": "MCX631102AS-ADA_Ax",
    "description": "ConnectX-6 Lx EN adapter card; 25GbE; Dual-port SFP28; PCIe 4.0 x8; Secure Boot; No Crypto;",
    "product_name": "ConnectX-6 Lx EN adapter card, 25GbE, Dual-port SFP28, PCIe 4.0 x8, Secure Boot, No Crypto",
    "psid": "MT_0000000575",
    "v0": "PCIeGen4 x8",
    "ec": "A8",
    "fw": "26.33.1048", "fw_date": "29.4.2022",
    "roms": [["UEFI", "14.26.17", "AMD64,AARCH64"], ["PXE", "3.6.502", "AMD64"]],
    "rate": 25, "ports": 2,
}

# BlueField-2 MBF2M516A-EEEOT: name MBF2M516A-EEEO_Ax, description, PSID MT_0000000559, FW 24.29.2008, PXE
# 3.6.0205 / UEFI 14.22.0019 - mlxfwmanager_query_bf2_1.txt; VPD (product name, EC A4, V0 PCIeGen4 x16,
# MODL BF2M516A) - lspci_vv_vpd_bf2_1.txt; LINK_TYPE ETH(2) on both ports - NVIDIA's bf2_facts mlxconfig sample.
# Release date and the ROMs' cpu field [invented]; the synthetic 'UEFI Virtio x' row is not modelled.
BF2 = {
    "family": "BlueField2",
    "part_number": "MBF2M516A-EEEOT",
    "name": "MBF2M516A-EEEO_Ax",
    "description": "BlueField-2 E-Series SmartNIC 100GbE/EDR VPI Dual-Port QSFP56; PCIe Gen4 x16; Crypto Enabled; "
                   "16GB on-board DDR; 1GbE OOB management; FHHL",
    "product_name": "BlueField-2 DPU 100GbE/EDR/HDR100 VPI Dual-Port QSFP56, Crypto Enabled, 16GB on-board DDR, "
                    "1GbE OOB management, Tall Bracket",
    "psid": "MT_0000000559",
    "v0": "PCIeGen4 x16",
    "ec": "A4",
    "modl": "BF2M516A",
    "fw": "24.29.2008", "fw_date": "21.12.2020",
    "roms": [["UEFI", "14.22.19", "AMD64,AARCH64"], ["PXE", "3.6.205", "AMD64"]],
    "rate": 100, "ports": 2,
    "defaults": {"LINK_TYPE": 2},
}

# ConnectX-8 C8240 SuperNIC 900-9X81Q-00CN-ST0: PSID MT_0000001222, FW 40.48.1000, two Ethernet functions
# "CX8 Family [ConnectX-8]", 400 Gb/s links - a public GitHub issue (search-index file id 71194711694).
# Name, description, VPD, ROMs, release date [invented]; no public capture of its flint/mlxconfig output.
CX8_C8240 = {
    "family": "ConnectX8",
    "part_number": "900-9X81Q-00CN-ST0",
    "name": "900-9X81Q-00CN-S_Ax",
    "description": "NVIDIA ConnectX-8 C8240 HHHL SuperNIC; 400GbE (default mode) / NDR IB; Dual-port QSFP112; "
                   "PCIe 6.0 x16; Crypto Disabled; Secure Boot Enabled",
    "product_name": "NVIDIA ConnectX-8 C8240 HHHL SuperNIC, 400GbE (default mode) / NDR IB, Dual-port QSFP112, "
                    "PCIe 6.0 x16, Crypto Disabled, Secure Boot Enabled",
    "psid": "MT_0000001222",
    "v0": "PCIeGen6 x16",
    "ec": "A3",
    "modl": "C8240",
    "fw": "40.48.1000", "fw_date": "14.1.2026",
    "roms": [["UEFI", "14.41.14", "AMD64,AARCH64"], ["PXE", "3.8.100", "AMD64"]],
    "rate": 400, "ports": 2,
    "defaults": {"LINK_TYPE": 2},
}


# The modelled cards, in the order a snapshot's card is matched against them (mlxsim init --snapshot, snapshot.py):
# by part number, else by PSID, else the first of its device type (family).
MODELS = (CX7_NEAT, CX7_HEAT_DUAL, CX6DX, CX6_HDR, BF3_B3220, CX5_EN, CX4LX, CX4_EN, CX6LX, BF2, CX8_C8240,
          CX5_EX_VPI, CX4LX_DELL)


def _card(base, cid, pcis, numa, rdma, slot=None, **extra):
    spec = dict(base)
    spec.update(extra)
    spec["id"] = cid
    spec["numa"] = numa
    if slot is not None:
        spec["slot"] = slot
    spec["functions"] = [{"pci": p, "rdma": r} for p, r in zip(pcis, rdma)]
    return spec


def _dgx_h100():
    cards = []
    compute = [("18", 0, 0), ("40", 0, 3), ("4f", 0, 4), ("5e", 0, 5),
               ("9a", 1, 6), ("c0", 1, 9), ("ce", 1, 10), ("dc", 1, 11)]
    for i, (bus, numa, mlx) in enumerate(compute):
        cards.append(_card(CX7_NEAT, "cx7-compute%d" % i, ["0000:%s:00.0" % bus], numa, ["mlx5_%d" % mlx],
                           slot=str(i + 1)))
    cards.append(_card(CX7_HEAT_DUAL, "cx7-storage0", ["0000:29:00.0", "0000:29:00.1"], 0,
                       ["mlx5_1", "mlx5_2"], slot="9"))
    cards.append(_card(CX7_HEAT_DUAL, "cx7-storage1", ["0000:aa:00.0", "0000:aa:00.1"], 1,
                       ["mlx5_7", "mlx5_8"], slot="10"))
    return cards


def _cx6dx_roce():
    return [
        _card(CX6DX, "cx6dx0", ["0000:3b:00.0", "0000:3b:00.1"], 0, ["mlx5_0", "mlx5_1"], slot="2"),
        _card(CX6DX, "cx6dx1", ["0000:d8:00.0", "0000:d8:00.1"], 1, ["mlx5_2", "mlx5_3"], slot="5"),
    ]


def _mixed():
    return [
        _card(CX6_HDR, "cx6-0", ["0000:17:00.0"], 0, ["mlx5_0"], slot="1"),
        _card(CX7_NEAT, "cx7-0", ["0000:65:00.0"], 0, ["mlx5_1"], slot="3"),
        _card(BF3_B3220, "bf3-0", ["0000:ca:00.0", "0000:ca:00.1"], 1, ["mlx5_2", "mlx5_3"], slot="6"),
    ]


def _gpu4_cx7_eth():
    """A 4-GPU server with 4 ConnectX-7 MCX75310AAS-NEAT compute NICs set to Ethernet (400GbE) and one dual-port
    MCX755106AS-HEAT for storage. The layout is [invented] (the DGX H100's buses 18/40 and 9a/c0, one per
    PCIe switch pair; RDMA names in PCI order); the cards' data is the DGX H100 profile's."""
    cards = []
    compute = [("18", 0, 0), ("40", 0, 3), ("9a", 1, 4), ("c0", 1, 5)]
    for i, (bus, numa, mlx) in enumerate(compute):
        cards.append(_card(CX7_NEAT, "cx7-compute%d" % i, ["0000:%s:00.0" % bus], numa, ["mlx5_%d" % mlx],
                           slot=str(i + 1), defaults={"LINK_TYPE": 2}))
    cards.append(_card(CX7_HEAT_DUAL, "cx7-storage0", ["0000:29:00.0", "0000:29:00.1"], 0,
                       ["mlx5_1", "mlx5_2"], slot="5"))
    return cards


def _dgx_h100_eth():
    """The DGX H100 of a RoCE fabric: its 8 compute NICs set to Ethernet (LINK_TYPE_P1=ETH, interfaces
    enp24s0np0 ...) - how a site's integrator delivers them for an Ethernet fabric (the fleet twin's default)."""
    cards = _dgx_h100()
    for c in cards[:8]:
        c["defaults"] = dict(c.get("defaults") or {}, LINK_TYPE=2)
    return cards


def _dgx_h100_noreset():
    cards = _dgx_h100()
    for c in cards:
        c["reset_levels"] = [4]
    return cards


def _refresh_cx5_storage():
    """A refreshed GPU server: 4 ConnectX-7 compute NICs (IB) in place of the old ones, the ConnectX-5 storage
    cards and the ConnectX-4 Lx management card it kept. Buses, slots and NUMA nodes [invented]."""
    cards = []
    compute = [("18", 0, 0), ("40", 0, 2), ("9a", 1, 5), ("c0", 1, 6)]
    for i, (bus, numa, mlx) in enumerate(compute):
        cards.append(_card(CX7_NEAT, "cx7-compute%d" % i, ["0000:%s:00.0" % bus], numa, ["mlx5_%d" % mlx],
                           slot=str(i + 1)))
    cards.append(_card(CX5_EN, "cx5-storage0", ["0000:29:00.0"], 0, ["mlx5_1"], slot="5"))
    cards.append(_card(CX5_EN, "cx5-storage1", ["0000:aa:00.0"], 1, ["mlx5_7"], slot="6"))
    cards.append(_card(CX4LX, "cx4lx-mgmt", ["0000:03:00.0", "0000:03:00.1"], 0, ["mlx5_3", "mlx5_4"], slot="7"))
    cards.sort(key=lambda c: c["functions"][0]["pci"])
    return cards


def _legacy_eth():
    """An older Ethernet host: ConnectX-4 100GbE, ConnectX-6 Lx 25GbE and a BlueField-2 in NIC mode.
    Buses and slots [invented]."""
    return [
        _card(CX4_EN, "cx4-0", ["0000:06:00.0", "0000:06:00.1"], 0, ["mlx5_0", "mlx5_1"], slot="1"),
        _card(CX6LX, "cx6lx-0", ["0000:41:00.0", "0000:41:00.1"], 0, ["mlx5_2", "mlx5_3"], slot="2"),
        _card(BF2, "bf2-0", ["0000:e2:00.0", "0000:e2:00.1"], 1, ["mlx5_4", "mlx5_5"], slot="7"),
    ]


def _spectrum_x_cx8():
    """A Spectrum-X server: 4 ConnectX-8 C8240 SuperNICs (Ethernet, two functions each) and a BlueField-3
    B3220 for the north-south network. Buses, slots and NUMA nodes [invented]."""
    cards = []
    for i, (bus, numa) in enumerate([("18", 0), ("40", 0), ("9a", 1), ("c0", 1)]):
        cards.append(_card(CX8_C8240, "cx8-%d" % i, ["0000:%s:00.0" % bus, "0000:%s:00.1" % bus], numa,
                           ["mlx5_%d" % (2 * i), "mlx5_%d" % (2 * i + 1)], slot=str(i + 1)))
    cards.append(_card(BF3_B3220, "bf3-0", ["0000:ca:00.0", "0000:ca:00.1"], 1, ["mlx5_8", "mlx5_9"], slot="6"))
    return cards


def _hpc_cx5ex():
    """An older HPC node on EDR InfiniBand: 2 dual-port ConnectX-5 Ex VPI MCX556A-EDAT, one per socket (the first at
    0000:10:00 as the source's). The second card's bus, slots and NUMA nodes [invented]."""
    return [
        _card(CX5_EX_VPI, "cx5ex-0", ["0000:10:00.0", "0000:10:00.1"], 0, ["mlx5_0", "mlx5_1"], slot="1"),
        _card(CX5_EX_VPI, "cx5ex-1", ["0000:af:00.0", "0000:af:00.1"], 1, ["mlx5_2", "mlx5_3"], slot="4"),
    ]


# SR-IOV virtual functions given to a cloud VM (Azure ND A100 v4 / ND H200 v5 class): every "card" is one VF; its PF
# and the physical card stay the hypervisor's. The VF's identity as the VM's tools show it:
# - ConnectX-6 VF: PCI id 0x101c, CA type MT4124, "MT28908 Family [ConnectX-6 Virtual Function]" (pci.ids),
#   FW 20.28.4000, Hyper-V node GUID 00155d ff fe ..., port GUID the same with fffd, capability mask 0x2651ec48 -
#   fixtures/real/ibstat_ibpanic_vf_azure_1.txt (github.com/Azure/azhpc-diagnostics/issues/59).
# - ConnectX-7 VF: PCI id 0x101e, CA type / vendor_part_id 4126 ("ConnectX Family mlx5Gen Virtual Function",
#   pci.ids), FW 28.40.1702, board_id MSF0000000047 - fixtures/real/ibv_devinfo_azure_h200_cx7vf_1.txt.
# RDMA names mlx5_ib0 ... mlx5_ib7 (Azure's udev rule renames them; both captures) and IPoIB netdevs ib0 ... ib7.
# The PCI addresses (Hyper-V vPCI domains 0001 ... 0008, bus 00), NUMA nodes and the A100 VF's board_id (the
# physical card's PSID) are [invented]. Only the RDMA views (ibstat, ibstatus, rdma, ibv_devinfo, ibdev2netdev) and
# `mst status` know a VF; lspci, flint and mlxconfig print a VF as a PF.
CX6_VF = dict(CX6_HDR, fw="20.28.4000", fw_date="4.9.2020", vf=True,
              silicon={"dev_id": 4124, "pci_id": "101c", "lspci": "MT28908 Family [ConnectX-6 Virtual Function]",
                       "ca_type": "MT4124"})
CX7_VF = dict(CX7_NEAT, fw="28.40.1702", fw_date="2.2.2024", vf=True, psid="MSF0000000047", rate=400,
              silicon={"dev_id": 4126, "pci_id": "101e", "lspci": "ConnectX Family mlx5Gen Virtual Function",
                       "ca_type": "MT4126"})


def _vm_vfs(base):
    cards = []
    for i in range(8):
        c = _card(base, "vf%d" % i, ["%04x:00:00.0" % (i + 1)], i // 4, ["mlx5_ib%d" % i], slot=str(i + 1),
                  defaults={"LINK_TYPE": 1})
        c["functions"][0]["netdev"] = "ib%d" % i
        cards.append(c)
    return cards


def _azure_nd_a100_vm():
    """A cloud VM (Azure ND A100 v4 class) whose 8 HDR InfiniBand HCAs are ConnectX-6 VFs (MT4124)."""
    return _vm_vfs(CX6_VF)


def _azure_nd_h200_vm():
    """A cloud VM (Azure ND H200 v5 class) whose 8 NDR InfiniBand HCAs are ConnectX-7 VFs (MT4126)."""
    return _vm_vfs(CX7_VF)


def _oem_cx4lx_v100():
    """An older GPU node (Tesla V100-SXM2-32GB, profiles.HOSTS) whose NIC is a Dell-branded ConnectX-4 Lx on its OEM
    image at 0000:01:00.0 as the source's (mstflint_query_cx4_cx4lx_oem_1.txt). NUMA node and slot [invented]."""
    return [_card(CX4LX_DELL, "cx4lx-dell0", ["0000:01:00.0", "0000:01:00.1"], 0, ["mlx5_0", "mlx5_1"], slot="1")]


PROFILES = {
    "dgx-h100": (_dgx_h100, "DGX H100: 8x ConnectX-7 MCX75310AAS-NEAT (IB) + 2x dual-port MCX755106AS-HEAT"),
    "dgx-h100-eth": (_dgx_h100_eth, "dgx-h100 with the 8 compute NICs in Ethernet mode (RoCE fabric)"),
    "dgx-h100-noreset": (_dgx_h100_noreset, "dgx-h100 whose NICs only support reset level 4 (reboot)"),
    "gpu4-cx7-eth": (_gpu4_cx7_eth, "4-GPU server: 4x ConnectX-7 MCX75310AAS-NEAT in Ethernet mode (400GbE) "
                                    "+ 1x dual-port MCX755106AS-HEAT"),
    "cx6dx-roce": (_cx6dx_roce, "2x ConnectX-6 Dx MCX623106AN-CDAT dual-port 100GbE (RoCE)"),
    "mixed": (_mixed, "ConnectX-6 MCX653105A-HDAT + ConnectX-7 MCX75310AAS-NEAT + BlueField-3 B3220"),
    "refresh-cx5-storage": (_refresh_cx5_storage, "refreshed GPU server: 4x ConnectX-7 MCX75310AAS-NEAT (IB) + 2x "
                                                  "ConnectX-5 MCX515A-CCAT storage + ConnectX-4 Lx MCX4121A-ACAT"),
    "legacy-eth": (_legacy_eth, "ConnectX-4 MCX416A-CCAT + ConnectX-6 Lx MCX631102AS-ADAT + BlueField-2 "
                                "MBF2M516A-EEEOT (Ethernet)"),
    "hpc-cx5ex": (_hpc_cx5ex, "older HPC node: 2x dual-port ConnectX-5 Ex VPI MCX556A-EDAT (EDR InfiniBand)"),
    "azure-nd-a100-vm": (_azure_nd_a100_vm, "cloud VM: 8x ConnectX-6 SR-IOV VF (MT4124, HDR InfiniBand), "
                                            "mlx5_ib0..7 (Azure ND A100 v4 class)"),
    "azure-nd-h200-vm": (_azure_nd_h200_vm, "cloud VM: 8x ConnectX-7 SR-IOV VF (MT4126, NDR InfiniBand), "
                                            "mlx5_ib0..7 (Azure ND H200 v5 class)"),
    "oem-cx4lx-v100": (_oem_cx4lx_v100, "older GPU node (Tesla V100): Dell ConnectX-4 Lx 020NJD on its OEM image "
                                        "(PSID DEL2420110034, FW 14.14.2320, Product Version rel-14_14_2320)"),
    "spectrum-x-cx8": (_spectrum_x_cx8, "Spectrum-X server: 4x ConnectX-8 C8240 900-9X81Q-00CN-ST0 (Ethernet) + "
                                        "BlueField-3 B3220"),
}


# The host around the cards (optional keys, defaults in HOST_DEFAULTS): logical CPUs and the cpufreq
# driver. A DGX H100 has 2 x Intel Xeon Platinum 8480C (56 cores, 2 threads each: 224 logical CPUs;
# DGX H100 User Guide, "Hardware Overview"), run by intel_pstate (Intel CPUs since Sandy Bridge with
# HWP; Documentation/admin-guide/pm/intel_pstate.rst). ``mixed`` stands for an AMD host whose kernel
# uses acpi-cpufreq (the second driver the platform role must handle).
HOST_DEFAULTS = {"cpus": 8, "cpufreq_driver": "intel_pstate"}
# GPU names as CUDA gives them to nccl-tests ("# Rank ... device N [0x..] NAME"): H100 - the simulator's default
# [no nccl-tests capture of an H100 is in the fixtures; the DGX H100 User Guide's GPU]; A100 and V100 - the real
# runs nccl_all_reduce_perf_2node_a100_1.txt ("NVIDIA A100-SXM4-40GB") and nccl_all_reduce_perf_v100_1.txt
# ("Tesla V100-SXM2-32GB"); H200 - the Azure ND H200 v5 run nccl_all_reduce_perf_azure_h200_1.txt ("NVIDIA H200").
GPUS = {"h100": "NVIDIA H100 80GB HBM3", "h200": "NVIDIA H200", "a100": "NVIDIA A100-SXM4-40GB",
        "v100": "Tesla V100-SXM2-32GB"}
HOSTS = {
    "dgx-h100": {"cpus": 224, "cpufreq_driver": "intel_pstate"},
    "dgx-h100-noreset": {"cpus": 224, "cpufreq_driver": "intel_pstate"},
    "dgx-h100-eth": {"cpus": 224, "cpufreq_driver": "intel_pstate"},
    "mixed": {"cpus": 16, "cpufreq_driver": "acpi-cpufreq"},
    "oem-cx4lx-v100": {"gpu": GPUS["v100"]},
}


def host_spec(name):
    """The host keys of a profile, defaults filled in (unknown profile: the defaults)."""
    spec = dict(HOST_DEFAULTS)
    spec.update(HOSTS.get(name, {}))
    return spec


def card_specs(name):
    if name not in PROFILES:
        raise KeyError(name)
    return PROFILES[name][0]()
